"""``mpcdp.train``: a party trains a model on its own data with the other parties, secure and certified.

In the idiom of Opacus' ``PrivacyEngine`` and Flower's client: a user passes a model (any ``nn.Module``, or
an mpcdp model name), their data file and a protocol, and gets back the trained model and its privacy
certificate. Every party reads only its own file (:mod:`mpcdp.jobs.own_data`).

* ``data`` one file: this host's party of a run across hosts. Where the run is comes from the environment, as
  with ``torchrun``: ``RANK`` (this party), ``WORLD_SIZE`` (the number m of data parties),
  ``MASTER_ADDR``/``MASTER_PORT`` (party 0's host) or ``RENDEZVOUS``; the dealer is one more process with
  ``RANK`` = m, on a host of its own: the same script (``train`` then serves as the dealer and returns None)
  or ``mpcdp party``. Started by ``torchrun`` itself, ``WORLD_SIZE`` counts the dealer too (m + 1) and the
  last rank is the dealer (:mod:`mpcdp.runtime.endpoint`). ``MPCDP_CREDENTIALS`` gives the deployment's TLS
  credentials.
* ``data`` a list of files: every party on this host, each in its own process reading only its file (to
  try a deployment out before spreading it over hosts); with ``backend="simulated"``, a dry run of the same
  protocol in this process, the noise simulated in plaintext (:mod:`mpcdp.jobs.own_data_simulated`).

``result.save(path)`` writes the released parameters and their certificate side by side, and
:func:`load_model` reads them back (:mod:`mpcdp.jobs.model_file`); ``eval_every=k`` keeps per-round held-out
metrics, which ``result.plot(path)`` draws (:mod:`mpcdp.jobs.own_data_results`).
"""

from __future__ import annotations

import dataclasses
import pathlib
import sys
from typing import Any, Sequence

import torch

from mpcdp.runtime import progress


@dataclasses.dataclass
class TrainResult:
    """The trained model (the caller's ``nn.Module`` with the released parameters loaded, or θ for an mpcdp
    model), its certificate (ε at δ, None without noise) and the held-out metrics: this party's own
    (``held_out["own"]``) and the parties' count-weighted mean (``held_out["mean"]``).

    ``most_exposed_party``: the party whose records are sampled most often (the smallest, with a fixed
    per-party batch), whose sampling rate decides ε — ``{"party", "records", "batch", "sampling_rate", ...}``
    (None for a full-batch algorithm). ``metrics``: with ``eval_every=k``, the test loss and error of every
    k-th released iterate on this party's held-out file (``metrics["own"]``) and the parties' mean
    (``metrics["mean"]``), at the iterates ``metrics["iterates"]`` (:mod:`mpcdp.jobs.own_data_results`).
    ``run``: the run's public description (protocol, algorithm, model, backend, noise mode, output rule).
    ``costs``: the estimate printed before the run, the time breakdown and every party's and the dealer's
    bytes (:func:`run_costs`)."""

    model: Any
    theta: torch.Tensor
    epsilon: float | None
    delta: float | None
    held_out: dict
    parties_records: list[int]
    certificate: dict | None
    reports: list[dict]
    most_exposed_party: dict | None = None
    metrics: dict | None = None
    run: dict = dataclasses.field(default_factory=dict)
    costs: dict | None = None  # the estimate printed before the run, the time breakdown, every party's bytes

    def save(self, path: str | pathlib.Path) -> tuple[str, str]:
        """Write the released parameters (``NAME.pt``) and their certificate (``NAME.json``) side by side
        (format: :mod:`mpcdp.jobs.model_file`; read back with :func:`mpcdp.load_model`). Returns both paths."""
        from torch import nn

        from mpcdp.jobs import model_file

        module = self.model if isinstance(self.model, nn.Module) else None
        return model_file.save(path, self.theta, describe(self), module=module)

    def plot(self, path: str | pathlib.Path) -> str:
        """A PNG of :attr:`metrics` (test error and loss against the iterate, this party's and the mean).

        Raises:
            ConfigError: the run kept no per-round metrics (train with ``eval_every=k``)."""
        from mpcdp.errors import ConfigError
        from mpcdp.jobs.own_data_results import plot_curve

        if not self.metrics:
            raise ConfigError("the run kept no per-round metrics: train with `eval_every=k` (`--eval-every K`)")
        return plot_curve(self.metrics, path, f"{self.run.get('protocol', '')} [{self.run.get('backend', '')}]")


def describe(result: TrainResult) -> dict[str, Any]:
    """What a saved model's JSON says of it (:mod:`mpcdp.jobs.model_file`): only what every party learned."""
    certificate = result.certificate or {}
    pieces = certificate.get("pieces") or {}
    mine = result.reports[0] if result.reports else {}
    metrics = result.metrics or {}
    return {**result.run, "epsilon": result.epsilon, "delta": result.delta, "certificate": result.certificate,
            "mechanism": pieces.get("mechanism"), "accountant": pieces.get("accountant"),
            "sigma0": mine.get("sigma0"), "sigma": mine.get("sigma"), "parties_records": result.parties_records,
            "most_exposed_party": result.most_exposed_party, "held_out_mean": result.held_out.get("mean"),
            "metrics_mean": None if not metrics else {"every": metrics["every"], "iterates": metrics["iterates"],
                                                      **(metrics.get("mean") or {})}}


def load_model(path: str | pathlib.Path, module=None):
    """Read a model written by :meth:`TrainResult.save` (or ``--model-out``): θ, the module's state and the
    certificate (:class:`mpcdp.jobs.model_file.SavedModel`); with ``module``, θ is loaded into it."""
    from mpcdp.jobs import model_file

    return model_file.load(path, module)


def train(model, data, *, protocol: str,
          label: str | None = None, features: Sequence[str] | int | None = None,
          test=None, loss=None, classes: int | None = None,
          epsilon: float | None = None, seed: int | None = None, noise: bool = True,
          backend: str = "mpc", eval_every: int | None = None, checkpoint: str | None = None,
          checkpoint_every: int | None = None, resume: bool = False,
          fresh_budget: bool = False, security: str | None = None, debug: bool = False) -> TrainResult | None:
    """Train ``model`` on the parties' own data as ``protocol`` says (algorithm, ε, δ, steps; its dataset is
    not read).

    Args:
        model: an ``nn.Module`` (trained through ``torch.func.functional_call``; cross-entropy unless ``loss``
            is given; labels the class indices 0..C−1) or the name of an mpcdp model (``"logreg"``: labels
            −1/+1).
        data: this party's file or ``torch.utils.data.Dataset`` of (features, label) pairs, or a list of one per
            party (see the module docstring).
        protocol: the protocol file (TOML) — the same on every party.
        label, features: how to read the files (:func:`mpcdp.data.party_file.load_party_file`).
        test: this party's held-out file (or one per party).
        loss: (outputs, labels) → mean loss, for an ``nn.Module``.
        classes: C, the number of classes of an ``nn.Module`` (default: the width of its output for one record;
            a single output counts as 2). Every party checks its own labels against 0..C−1 and refuses a file
            with another label locally, without showing it; the parties agree on C alone, never on label values
            (:mod:`mpcdp.jobs.own_data`).
        epsilon, seed: override the protocol's.
        noise: False trains without noise (nothing certified; for comparisons).
        backend: ``"mpc"`` (secure) or ``"simulated"``: a dry run in this process on a list of every party's
            files — the same protocol, calibration and certificate, each party's records its own shard, the
            noise drawn in plaintext by the same sampler; nothing is secret
            (:mod:`mpcdp.jobs.own_data_simulated`).
        eval_every: k: evaluate every k-th released iterate (and the last) on each party's held-out file
            (:attr:`TrainResult.metrics`). The iterates are computed from the releases alone, so this is
            post-processing and costs no privacy: ε is unchanged. The parties' mean per round is opened as the
            final held-out mean is.
        checkpoint: a folder on this party's own disk for its checkpoints (each party of a local run its own
            ``party-j``), every ``checkpoint_every`` releases (default a tenth of the run); ``resume=True``
            continues the run saved there after a party was lost, re-serving the releases already opened, so no
            release is opened twice and the certified ε is the uninterrupted run's.
        fresh_budget: start a run over records that an earlier run already spent privacy budget on (every
            party keeps a ledger of its records' runs: :mod:`mpcdp.jobs.budget`); without it such a run is
            refused in one line that says what was spent.
        security: ``"semi-honest"`` or ``"malicious"``, over the protocol's ``[mpc] security`` (as
            ``--security`` is for ``mpcdp train``; :func:`mpcdp.config.resolve_mpc`). Under ``"malicious"``
            the in-MPC discrete Gaussian is authenticated and every release MAC-checked (security with abort);
            another noise mode, the simulated backend or checkpoints are refused in one line before anything
            runs (see the guide's threat model).
        debug: show where an error came from: the whole chain of tracebacks, and a failed local run's report of
            every process (status, the cause's traceback and log tail) in its message. By default an error is
            one line.

    Returns:
        :class:`TrainResult` (None on the dealer's process).

    Raises:
        MpcdpError: every refusal and failure, whose message is its one line (``str(error)``), raised here without
            the tracebacks of the library's frames or of the party processes unless ``debug``:
            :class:`~mpcdp.errors.PartyRefused` where a party refused its input (the same line on every process),
            :class:`~mpcdp.errors.PartyFailed` where a party failed, was lost or went silent (its ``reports`` and
            ``details`` say more), :class:`~mpcdp.errors.ConfigError` for a setting, or the error a party's
            own process raised (a mismatch in the handshake, a lost peer, the rendezvous's refusal).
    """
    from mpcdp.errors import MpcdpError

    try:
        return _train(model, data, protocol, label, features, test, loss, classes, epsilon, seed, noise, backend,
                      eval_every, checkpoint, checkpoint_every, resume, fresh_budget, security)
    except MpcdpError as error:
        if debug:
            raise
        raise one_line(error) from None


def one_line(error):
    """``error`` as :func:`train` raises it by default: a failed local run's :meth:`~mpcdp.errors.PartyFailed.
    one_line`, any other mpcdp error itself without the traceback of the frames below the caller's."""
    from mpcdp.errors import PartyFailed

    return error.one_line() if isinstance(error, PartyFailed) else error.with_traceback(None)


def _train(model, data, protocol, label, features, test, loss, classes, epsilon, seed, noise, backend, eval_every,
           checkpoint, checkpoint_every, resume, fresh_budget, security) -> TrainResult | None:
    """:func:`train`, whose errors it raises as they come."""
    from mpcdp.errors import ConfigError
    from mpcdp.execution import MPC, SIMULATED
    from mpcdp.jobs.own_data_results import check_every

    if backend not in (MPC, SIMULATED):
        raise ConfigError(f"`backend` must be one of {[MPC, SIMULATED]}. Found {backend!r}.")
    trained = _trained_model(model, loss, classes)
    options = dict(epsilon=epsilon, seed=seed, mpc={"security": security})
    from mpcdp.jobs.keeping import Keeping

    keeping = Keeping(checkpoint, checkpoint_every, resume, fresh_budget)
    if backend == SIMULATED and checkpoint:
        raise ConfigError("`checkpoint` keeps a secure run: the dry run (`backend` 'simulated') has none.")
    eval_every = check_every(eval_every)
    features = tuple(features) if features is not None and not isinstance(features, int) else features
    if isinstance(data, (list, tuple)):
        plan, values = _run_here(trained, data, test, label, features, protocol, options, noise, backend, eval_every,
                                 keeping)
        mine = values[0]
    else:
        if backend == SIMULATED:
            raise ConfigError("`backend` 'simulated' runs every party's file in this process: give `data` as a list "
                              "of one file per party")
        ran = _run_this_party(trained, data, test, label, features, protocol, options, noise, eval_every, keeping)
        if ran is None:
            return None
        plan, mine = ran
        values = [mine]
    return train_result(plan, values, mine, model)


def _trained_model(model, loss, classes):
    """The model as the parties train it: a recipe for an ``nn.Module``, or an mpcdp model looked up by name."""
    from torch import nn

    from mpcdp.errors import ConfigError
    from mpcdp.jobs.own_data import ModuleRecipe
    from mpcdp.learning import models

    if isinstance(model, nn.Module):
        return ModuleRecipe(model, loss, classes)
    if isinstance(model, str):
        if classes is not None:
            raise ConfigError(f"`classes` is for an nn.Module; the mpcdp model {model!r} has its own. Found "
                              f"{classes!r}.")
        return models.lookup(model)
    raise ConfigError(f"`model` must be an nn.Module or an mpcdp model name. Found {type(model).__name__}.")


def _run_here(trained, data, test, label, features, protocol, options, noise, backend, eval_every, keeping):
    """Every party on this host, one process per file (``mpc``), or the dry run in this process
    (``simulated``): (the plan, every party's values)."""
    from mpcdp.errors import ConfigError, PartyFailed
    from mpcdp.jobs.own_data import PartySource, as_refusal, run_own_data
    from mpcdp.jobs.own_data_simulated import simulate_own_data
    from mpcdp.jobs.train import plan_from

    files = [_records(f) for f in data]
    tests = [None] * len(files) if test is None else [_records(t) for t in test]
    if len(tests) != len(files):
        raise ConfigError(f"`test` must give one file per party ({len(files)}). Found {len(tests)}.")
    plan = plan_from(protocol, backend=backend, parties=len(files), **options)
    plan = dataclasses.replace(plan, eval_every=eval_every)
    sources = [PartySource(f, t, label, features) for f, t in zip(files, tests)]
    with progress.lines_to(sys.stderr):  # every party's estimate and progress lines, as they come
        try:
            if plan.backend == "simulated":
                return plan, simulate_own_data(plan, sources, trained, noise=noise)
            return plan, run_own_data(plan, sources, trained, noise=noise, keeping=keeping)
        except PartyFailed as failure:  # a party that refused its own input: its one line, on every process
            raise as_refusal(failure) from None


def _run_this_party(trained, data, test, label, features, protocol, options, noise, eval_every, keeping):
    """This host's party of a run across hosts (or the dealer's process: None); (the plan, its values)."""
    from mpcdp import providers
    from mpcdp.jobs.own_data import PartySource, run_own_data_here
    from mpcdp.jobs.train import plan_from, protocol_mpc
    from mpcdp.runtime.endpoint import resolve
    from mpcdp.runtime.party import take_place

    mpc = protocol_mpc(protocol)
    endpoint = resolve(rank=None, parties=None, rendezvous=None, dealer=providers.lookup(mpc.provider).has_dealer,
                       ranged=False)
    take_place(endpoint, mpc.for_parties(endpoint.parties))  # RANK and WORLD_SIZE compared first, on every process
    plan = plan_from(protocol, backend="mpc", parties=endpoint.parties, **options)
    plan = dataclasses.replace(plan, eval_every=eval_every)
    if endpoint.rank == endpoint.parties:  # this host is the dealer's: it serves, and trains nothing
        from mpcdp.jobs.train import config_for
        from mpcdp.runtime.party import run_dealer

        run_dealer(config=config_for(plan), rendezvous=endpoint.rendezvous)
        return None
    source = PartySource(_records(data), _records(test), label, features)
    return plan, run_own_data_here(plan, source, trained, rank=endpoint.rank, rendezvous=endpoint.rendezvous,
                                   noise=noise, keeping=keeping)


def train_result(plan, values: list[dict], mine: dict, model) -> TrainResult:
    """The :class:`TrainResult` of a run on own data: ``mine`` this party's values (``values``: every party's
    held here), ``model`` the caller's (an ``nn.Module`` gets the released parameters)."""
    from torch import nn

    from mpcdp.jobs.model_file import load_into
    from mpcdp.jobs.train import plan_noise_known_to

    theta = mine["theta"]
    if isinstance(model, nn.Module):
        load_into(model, theta)
    run = {"protocol": plan.name, "algorithm": plan.record.display_name(plan.parties),
           "model": type(model).__name__ if isinstance(model, nn.Module) else str(model), "backend": plan.backend,
           "noise_mode": plan.noise.mode, "noise_known_to": plan_noise_known_to(plan), "output": plan.output}
    return TrainResult(model if isinstance(model, nn.Module) else theta, theta, mine["epsilon"], mine["delta"],
                       mine["held_out"], mine["sizes"], mine["certificate"], values,
                       most_exposed_party=mine.get("most_exposed_party"), metrics=mine.get("curve"), run=run,
                       costs=run_costs(values))


def run_costs(values: list[dict]) -> dict:
    """What a run cost, from the parties' results (:func:`mpcdp.jobs.own_data.own_data_party`): the estimate
    printed before it, the time of each part (the slowest party's; ``setup_s``: the local run's wall time
    less the slowest party's own parts, None across hosts) and every party's bytes and the dealer's (None
    where the dealer ran on another host)."""
    parts = ("prepare_s", "presample_s", "online_s", "evaluate_s")
    times = {key: max(v.get(key) or 0.0 for v in values) for key in parts}
    wall = values[0].get("wall_s")
    busy = max(sum(v.get(key) or 0.0 for key in parts) for v in values)
    return {"estimate": values[0].get("estimate"), "wall_s": wall,
            "setup_s": None if wall is None else max(0.0, wall - busy), **times,
            "party_bytes": values[0].get("party_bytes") or [v.get("bytes_sent") for v in values],
            "dealer_bytes": values[0].get("dealer_bytes")}


def _records(data):
    """A file's path as a string, or the records of a Dataset held here
    (:func:`~mpcdp.data.party_file.from_dataset`)."""
    from mpcdp.data.party_file import from_dataset

    if data is None or isinstance(data, str):
        return data
    if isinstance(data, pathlib.Path):
        return str(data)
    return from_dataset(data)
