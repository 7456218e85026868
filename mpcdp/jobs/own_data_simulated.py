"""A dry run on the parties' own files: the secure run of :mod:`mpcdp.jobs.own_data` with the noise simulated
in plaintext, every party's file read by this one process — to see what a protocol gives on one's own data
before paying for the MPC.

What is the same as the secure run: the protocol (algorithm, ε, δ, clipping, batches, steps), the local
checks (each party's labels against the model's classes, the parties' schema, record shape and class count,
NaN/Inf), each party's records kept as its own shard (each party draws its own batch of the protocol's
per-party size; nothing is pooled), the calibration and the certificate — computed from the same public
inputs, the parties' record counts n_j and the model's size, by :func:`mpcdp.jobs.train.plan_noise` — and
the noise: the same integer distribution on the same release grid, drawn in plaintext by the noise mode's
own simulated sampler (:func:`mpcdp.learning.backends.train_simulated`). What differs: the batches follow
the protocol's seed (a secure run draws them from each party's secret key, so the two models differ by the
batches and the noise drawn, as two secure runs do), the sum is rounded once instead of per party, and
nothing is secret.

Security model: none — this process reads every party's file, and the noise is known to it. Run it where
one may hold every file (copies, samples or synthetic stand-ins of the parties' data); the certificate it
prints is the one the secure run on files of the same record counts prints.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import Any, Sequence

import numpy as np
import torch

from mpcdp.errors import ConfigError, ConfigMismatchError, InputError, MpcdpError, PartyRefused
from mpcdp.jobs.own_data_results import most_exposed_party, own_metrics, plaintext_curves
from mpcdp.jobs.own_data import PartySource, local_checks
from mpcdp.jobs.train import SIMULATED, plan_noise, unit_rows
from mpcdp.learning.backends import NoiseLevels, shard_problem, train_simulated
from mpcdp.learning.dpsrm import Shard
from mpcdp.learning.logreg import warm_up
from mpcdp.mpc.data_agreement import differences
from mpcdp.runtime import progress


def _party_local(j: int, source: PartySource, model):
    """Party ``j``'s local steps, as its process does them before it connects
    (:func:`~mpcdp.jobs.own_data.local_checks`). Returns (train, test, model, its description); an error names
    party ``j``."""
    try:
        checked = local_checks(source, model)
    except MpcdpError as exc:
        refusal = getattr(exc, "refusal", None)
        if refusal is None:
            raise type(exc)(f"party {j}: {exc}", party=j) from None
        raise PartyRefused(refusal.text(j), party=j, refusal=refusal) from exc  # the secure run's line
    return checked.train, checked.test, checked.model, checked.description()


def _shards(plan, loaded: list[tuple], model) -> list[Shard]:
    """Every party's shard, checked as the secure run checks them (the parties agree on schema, record shape
    and classes; no empty file, no NaN/Inf)."""
    descriptions = [description for *_, description in loaded]
    text, odd = differences(descriptions)
    if text:
        raise ConfigMismatchError(f"the parties' data differ (party {odd} first): {text}", party=odd)
    shards = []
    for j, (train, *_) in enumerate(loaded):
        x, y = torch.tensor(train.x, dtype=torch.float64), model.labels(np.array(train.y))
        shard = Shard(j, unit_rows(x) if plan.normalize_rows else x, y)
        problem = shard_problem(shard)
        if problem is not None:
            raise InputError(f"party {j}: {problem}", party=j)
        shards.append(shard)
    model.check_inputs(tuple(shards[0].x.shape[1:]), "party 0's file")
    return shards


def _held_out(model, theta: torch.Tensor, tests: list, normalize_rows: bool) -> list[dict[str, Any]]:
    """Every party's metrics on its own held-out file and the count-weighted mean (what the secure run opens)."""
    owns = [None if t is None else own_metrics(model, [theta], t, normalize_rows)[0] for t in tests]
    counts = [0 if t is None else len(t.y) for t in tests]
    mean = None
    if sum(counts):
        total = sum((n * o for n, o in zip(counts, owns) if o is not None),
                    torch.zeros((), dtype=torch.float64)) / sum(counts)
        mean = {"test_loss": float(total[0]), "test_error": float(total[1])}
    return [{"own": None if o is None else {"test_loss": float(o[0]), "test_error": float(o[1]), "test_records": n},
             "mean": mean} for o, n in zip(owns, counts)]


def simulate_own_data(plan, sources: Sequence[PartySource], model, *, noise: bool = True) -> list[dict[str, Any]]:
    """The dry run of :func:`mpcdp.jobs.own_data.run_own_data` (see the module docstring): every party's
    values, in the form :func:`~mpcdp.jobs.own_data.own_data_party` returns them (``bytes_sent`` 0).

    Raises:
        ConfigError: ``sources`` does not give one file per party, or the algorithm has no secure run.
        ConfigMismatchError, InputError: as the secure run's parties would refuse their data, naming the party.
    """
    if len(sources) != plan.parties:
        raise ConfigError(f"`sources` must give one file per party ({plan.parties}). Found {len(sources)}.")
    if plan.record.run_central is not None:
        raise ConfigError(f"`algorithm` {plan.algorithm!r} is {plan.record.central_only}: the parties' own data "
                          f"trains algorithms whose releases go through the MPC")
    plan = dataclasses.replace(plan, backend=SIMULATED)  # secret batches: the secure run's certificate
    loaded = [_party_local(j, source, model) for j, source in enumerate(sources)]
    trained = loaded[0][2]
    shards = _shards(plan, loaded, trained)
    sizes = [len(s.y) for s in shards]
    dim = trained.dimension(shards[0].x)
    planned = plan_noise(plan, tuple(sizes), dim)
    levels = planned.levels if noise else NoiseLevels.none()
    certificate = planned.certificate if noise else None
    runner = functools.partial(plan.record.runner, model=trained)
    warm_up()
    start = time.perf_counter()
    progress.launcher_line(f"mpcdp dry run: {plan.name}: {len(shards)} parties' files read, {planned.steps + 1:,} "
                           f"releases; the noise is drawn here, in plaintext")
    with progress.reporting(progress.PhaseLines("mpcdp dry run", progress.launcher_line)):
        result = train_simulated(shards, planned.params, levels, dim=dim, runner=runner)
    online_s = time.perf_counter() - start
    theta = result.output(plan.output)
    tests = [test for _, test, *_ in loaded]
    common = {"theta": theta, "sizes": sizes, "epsilon": None if certificate is None else certificate.epsilon,
              "delta": plan.delta if noise else None,
              "certificate": None if certificate is None else dataclasses.asdict(certificate),
              "most_exposed_party": most_exposed_party(planned.params, sizes),
              "releases": len(result.released), "online_s": online_s, "presample_s": 0.0, "bytes_sent": 0,
              "sigma0": levels.sigma0, "sigma": levels.sigma, "steps": planned.steps}
    curves = plaintext_curves(trained, result, tests, plan)
    return [{**common, "held_out": held, "curve": curve}
            for held, curve in zip(_held_out(trained, theta, tests, plan.normalize_rows), curves)]


@dataclasses.dataclass(frozen=True)
class OwnFiles:
    """Every party's files for ``mpcdp compare`` on a protocol without ``dataset``: each seed runs the secure
    run (:func:`~mpcdp.jobs.own_data.run_own_data`) and this dry run on the same files, with the protocol's
    model. The metrics compared are the parties' count-weighted mean on their held-out files (so every party
    needs one), and the curve that of every released iterate (``eval_every`` = 1)."""

    sources: tuple[PartySource, ...]
    metrics: tuple[str, ...] = ("test_error", "test_loss", "wall_s")
    model: Any = None  # what the parties train (a module recipe); None: the protocol's model
    fresh_budget: bool = False  # the first secure seed may run over records an earlier run spent budget on
    secure_runs: list = dataclasses.field(default_factory=list, compare=False, repr=False)  # ε of each so far

    def __post_init__(self) -> None:
        missing = [j for j, source in enumerate(self.sources) if source.test is None]
        if missing:
            raise ConfigError(f"`mpcdp compare` on the parties' own data compares held-out metrics: give every "
                              f"party's held-out file (`--test`, one per `--data` file). Parties without one: "
                              f"{missing}.")

    def run(self, plan) -> dict[str, Any]:
        """One run of ``plan`` (its backend decides secure or simulated), as ``mpcdp compare`` reads it."""
        from mpcdp.jobs.keeping import Keeping
        from mpcdp.jobs.own_data import run_own_data

        plan = dataclasses.replace(plan, eval_every=1)
        start = time.perf_counter()
        model = self.model if self.model is not None else plan.trained_model
        if plan.backend == SIMULATED:
            first = simulate_own_data(plan, list(self.sources), model)[0]
        else:  # every secure seed is a run over the records, in each party's ledger: seeds × ε, said before
            # the first (:func:`ledger_line`); the first is refused where earlier runs spent budget, as `mpcdp train`
            keeping = Keeping(fresh_budget=self.fresh_budget or bool(self.secure_runs))
            first = run_own_data(plan, list(self.sources), model, keeping=keeping)[0]
            self.secure_runs.append(first["epsilon"])
        mean = first["held_out"]["mean"]
        return {"backend": plan.backend, "epsilon": first["epsilon"], "parties": plan.parties,
                "parties_records": first["sizes"], "most_exposed_party": first["most_exposed_party"],
                "test_error": mean["test_error"], "test_loss": mean["test_loss"],
                "wall_s": time.perf_counter() - start, "test_error_curve": first["curve"]["mean"]["test_error"]}


def ledger_line(seeds: int) -> str:
    """What ``mpcdp compare`` on the parties' own files spends, said before it starts: each secure seed is a
    run over every party's records, recorded in its privacy ledger (:mod:`mpcdp.jobs.budget`)."""
    return (f"mpcdp compare: {seeds} secure run(s) over the parties' own records, each recorded in every party's "
            f"privacy ledger ({seeds} × the run's ε in all); the simulated runs spend nothing")
