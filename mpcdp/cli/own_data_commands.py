"""The own-data side of ``mpcdp train`` and ``mpcdp party --data``: each party's files as sources, the options
that apply to them, the secure run or the dry run, and what it writes (the saved model, the metrics plot)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

from mpcdp.errors import ConfigError


def _features(text: str | None) -> tuple[str, ...] | int | None:
    """``--features``: a dimension (svmlight) or comma-separated column names."""
    if text is None:
        return None
    return int(text) if text.isdigit() else tuple(name.strip() for name in text.split(",") if name.strip())


def _own_sources(ns: argparse.Namespace) -> list:
    """``--data``/``--test``/``--label``/``--features`` as every party's :class:`~mpcdp.jobs.own_data.PartySource`."""
    from mpcdp.jobs.own_data import PartySource

    tests = ns.test or [None] * len(ns.data)
    if len(tests) != len(ns.data):
        raise ConfigError(f"`--test` must give one file per `--data` file ({len(ns.data)}). Found {len(tests)}.")
    if ns.parties is not None and ns.parties != len(ns.data):
        raise ConfigError(f"`--parties` {ns.parties} and the {len(ns.data)} `--data` files differ: one file per party")
    return [PartySource(f, t, ns.label, _features(ns.features)) for f, t in zip(ns.data, tests)]


def own_model(ns: argparse.Namespace, plan) -> Any:
    """The model the parties train: the user's ``--model FILE.py:Class`` (an ``nn.Module`` recipe, as
    :func:`mpcdp.train` makes one), else the protocol's (:attr:`~mpcdp.jobs.train.TrainPlan.trained_model`;
    None without a ``plan``)."""
    from mpcdp.cli.user_module import user_module
    from mpcdp.jobs.own_data import ModuleRecipe

    if getattr(ns, "model", None):
        return ModuleRecipe(user_module(ns.model, ns.model_arg), None, ns.classes)
    if getattr(ns, "model_arg", None) or getattr(ns, "classes", None) is not None:
        raise ConfigError("`--model-arg` and `--classes` are for your own module: give it with "
                          "`--model FILE.py:Class`.")
    return plan.trained_model if plan is not None else None


def keeping_of(ns: argparse.Namespace) -> Any:
    """``--checkpoint DIR`` / ``--checkpoint-every K`` / ``--resume DIR`` / ``--fresh-budget`` as a run's
    :class:`~mpcdp.jobs.keeping.Keeping`."""
    from mpcdp.jobs.keeping import Keeping

    return Keeping.from_flags(getattr(ns, "checkpoint", None), getattr(ns, "resume", None),
                              getattr(ns, "checkpoint_every", None), bool(getattr(ns, "fresh_budget", False)))


def _check_own_data_options(ns: argparse.Namespace) -> None:
    """Refuse the own-data options without ``--data``, and the shipped-data options with it."""
    own = [flag for flag, value in (("--test", ns.test), ("--label", ns.label), ("--features", ns.features),
                                    ("--model-out", getattr(ns, "model_out", None)),
                                    ("--model", getattr(ns, "model", None)),
                                    ("--eval-every", getattr(ns, "eval_every", None))) if value is not None]
    if own and not ns.data:
        raise ConfigError(f"`{own[0]}` is for the parties' own files: give them with `--data`.")
    shipped = [flag for flag, value in (("--size-ratio", ns.size_ratio),) if value is not None]
    if getattr(ns, "fresh_budget", False) and not ns.data:
        raise ConfigError("`--fresh-budget` is for the parties' own files (their privacy ledger): give them with "
                          "`--data`.")
    if ns.data and shipped:
        raise ConfigError(f"`{shipped[0]}` applies to a shipped dataset's split, not to the parties' own files.")
    if getattr(ns, "plot", None) and getattr(ns, "eval_every", None) is None:
        raise ConfigError("`--plot` draws the per-round metrics: give `--eval-every K` too.")


def _own_data_outputs(ns: argparse.Namespace, plan, values: list, report: dict, model: Any = None) -> None:
    """``--model-out`` and ``--plot`` of a run on own data (party ``values[0]``'s view); their paths go into
    ``report``. ``model``: what was trained (a module recipe gets the released parameters; None: the plan's)."""
    from mpcdp.api import train_result

    module = getattr(model, "module", None)
    result = train_result(plan, values, values[0], module if module is not None else plan.model)
    if ns.model_out:
        report["model_files"] = list(result.save(ns.model_out))
    if ns.plot:
        report["plot"] = result.plot(ns.plot)


def _cmd_train_own_data(ns: argparse.Namespace) -> int:
    """``mpcdp train P --data A B C``: every party's own file on this host, secure (a process per file) or the
    simulated dry run; prints party 0's report with every party's held-out metrics."""
    from mpcdp.errors import PartyFailed
    from mpcdp.jobs.own_data import as_refusal, report, run_own_data
    from mpcdp.runtime import progress
    from mpcdp.jobs.own_data_results import check_every
    from mpcdp.jobs.own_data_simulated import simulate_own_data
    from mpcdp.jobs.train import OWN_FILES, plan_from

    sources = _own_sources(ns)
    plan = plan_from(ns.protocol, backend=ns.backend, parties=len(sources), epsilon=ns.epsilon, seed=ns.seed,
                     algorithm=ns.algorithm, mpc={"reproducible": ns.reproducible or None, "provider": ns.provider,
                          "security": ns.security, "malicious_sampler": ns.malicious_sampler,
                          "openings": ns.openings})
    if plan.dataset != OWN_FILES:
        raise ConfigError(f"`--data` is for a protocol without `dataset`; {ns.protocol!r} trains on "
                          f"`dataset` {plan.dataset!r}.")
    plan = dataclasses.replace(plan, eval_every=check_every(ns.eval_every))
    model = own_model(ns, plan)
    with progress.lines_to(sys.stderr):  # the estimate and every party's progress (the dry run's too)
        if plan.backend == "simulated":
            if ns.checkpoint or ns.resume:
                raise ConfigError("`--checkpoint`/`--resume` keep a secure run: the dry run has none.")
            values = simulate_own_data(plan, sources, model)
        else:
            try:
                values = run_own_data(plan, sources, model, keeping=keeping_of(ns))
            except PartyFailed as failure:  # a party that refused its own input: its one line, on every process
                raise as_refusal(failure) from None
    result = {"protocol": plan.name, "backend": plan.backend, "parties": plan.parties, **report(values[0])}
    result["model"] = ns.model or plan.model
    result["held_out_by_party"] = [v["held_out"]["own"] for v in values]
    _own_data_outputs(ns, plan, values, result, model)
    print(json.dumps(result))
    return 0
