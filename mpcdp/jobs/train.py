"""`mpcdp train PROTOCOL.toml`: any algorithm of the registry (:mod:`mpcdp.learning.algorithms`) on a shipped
dataset, with any model of :mod:`mpcdp.learning.models` and any noise mode of :mod:`mpcdp.learning.mechanisms`,
secure (party processes) or simulated, with noise calibrated and ε certified for the released bits.

This module is protocol parsing plus one generic run path; it names no algorithm. Protocol fields beyond the
algorithm's hyper-parameters: ``[training] size_ratio`` (paper 000's level of non-average u = n_max/n_min: two
groups of parties, the larger u times the smaller), ``normalize_rows`` (scale every feature row to unit L2 norm,
train and test alike; paper 000's G = 1 Lipschitz setting), ``steps`` (full-batch algorithms; ``passes`` means
the same there), ``[privacy] calibration`` ('certified' or the paper's formula, certified anyway), ``model``
('logreg', the default, or one of paper 002's CNNs), ``[noise] mode`` and ``colluders``."""

from __future__ import annotations

import dataclasses
import functools
import threading
import time
from typing import Any, Callable

import torch

from mpcdp import providers
from mpcdp.config import MpcSettings, resolve_mpc
from mpcdp.accounting.distributed import CALIBRATIONS
from mpcdp.data.registry import load
from mpcdp.data.split import split_indices
from mpcdp.errors import ConfigError
from mpcdp.execution import MPC, SIMULATED, backend_for
from mpcdp.learning import algorithms, models
from mpcdp.learning.algorithms import ALGORITHMS, PlanNoise, Setting, srm_releases
from mpcdp.learning.backends import NoiseLevels, mpc_party, train_simulated
from mpcdp.learning.dpsrm import OUTPUT_RULES, Shard
from mpcdp.learning.logreg import warm_up
from mpcdp.learning.mechanisms import NoiseChoice
from mpcdp.accounting.released import calibrate_on_grid
from mpcdp.jobs.keeping import Keeping
from mpcdp.jobs.secure_run import Job, Launcher, secure_run
from mpcdp.jobs.secure_run import config_for, host_launcher  # noqa: F401 - re-exported for callers of this module
from mpcdp.jobs.train_report import (beyond_target, plan_report as _report, training_optimum,
                                     uncertified as _uncertified, unit_rows)
from mpcdp.validation import check_bool, check_choice, check_integer, check_number, check_string, read_protocol

OWN_FILES = ""  # a protocol without `dataset`: every party brings its own file (mpcdp.jobs.own_data)
FULL_BATCH = tuple(name for name, a in ALGORITHMS.items() if a.full_batch)  # as registered at import


@dataclasses.dataclass(frozen=True)
class TrainPlan:
    """A protocol file resolved against the command line."""

    name: str
    algorithm: str
    dataset: str
    parties: int
    backend: str
    epsilon: float
    delta: float
    params: Any  # the algorithm record's parameters type
    passes: float
    mpc: MpcSettings  # resolved once (:func:`mpcdp.config.resolve_mpc`); the launcher adds the party count
    output: str = "paper"
    size_ratio: float = 1.0
    normalize_rows: bool = False
    calibration: str = "certified"
    model: str = "logreg"
    noise: NoiseChoice = NoiseChoice()
    eval_every: int | None = None  # own data: held-out metrics of every k-th released iterate (None: none)

    @property
    def record(self) -> algorithms.Algorithm:
        return algorithms.lookup(self.algorithm)

    @property
    def trained_model(self):
        """The model object (:mod:`mpcdp.learning.models`) this plan trains."""
        return models.lookup(self.model)

    def with_mpc(self, **changes: Any) -> TrainPlan:
        """This plan with [mpc] settings changed (each checked: :meth:`mpcdp.config.MpcSettings.replaced`)."""
        return dataclasses.replace(self, mpc=self.mpc.replaced(**changes))


def plan_from(path: str, *, backend: str | None = None, parties: int | None = None, epsilon: float | None = None,
              seed: int | None = None, algorithm: str | None = None, size_ratio: float | None = None,
              calibration: str | None = None, training_overrides: dict[str, Any] | None = None,
              mpc: dict[str, Any] | None = None) -> TrainPlan:
    """Read a protocol file; the keyword arguments override what it says (sweeps and the command line);
    ``mpc``: the [mpc] settings given explicitly (:func:`mpcdp.config.resolve_mpc`; None values are not given)."""
    protocol = read_protocol(path)
    settings = resolve_mpc(protocol.get("mpc", {}), f" in {path!r}", mpc)  # a misspelt setting, before anything else
    try:
        training, privacy = dict(protocol["training"]), dict(protocol["privacy"])
    except KeyError as missing:
        raise ConfigError(f"protocol {path!r} lacks the [{missing.args[0]}] table") from None
    except (TypeError, ValueError):
        raise ConfigError(f"protocol {path!r}: [training] and [privacy] must be tables") from None
    check_string(protocol.get("dataset", OWN_FILES), "dataset", note="a dataset name")
    check_number(epsilon if epsilon is not None else privacy.get("epsilon"), "epsilon", low=0)
    check_number(privacy.get("delta"), "delta", low=0, high=1)
    if "seed" in training:
        check_integer(training["seed"], "seed", minimum=0)
    if seed is not None:
        check_integer(seed, "seed", minimum=0)
    training.update(training_overrides or {})
    if size_ratio is not None:
        training["size_ratio"] = size_ratio
    ratio = check_number(training.pop("size_ratio", 1.0), "size_ratio", low=1, low_open=False,
                         where=" (n_max/n_min)")
    normalize_rows = check_bool(training.pop("normalize_rows", False), "normalize_rows")
    calibration = check_choice(calibration or privacy.get("calibration", "certified"), "calibration", CALIBRATIONS)
    m = check_integer(parties if parties is not None else training.pop("parties", 1), "parties")
    training.pop("parties", None)
    backend = backend_for(backend or protocol.get("backend", MPC if m > 1 else SIMULATED), (MPC, SIMULATED),
                          "`mpcdp train`")
    if backend == "mpc" and m < 2:
        raise ConfigError(f"the mpc backend needs `parties` >= 2. Found {m}.")
    output = check_choice(protocol.get("output", "paper"), "output", OUTPUT_RULES)
    record = algorithms.lookup(algorithm or protocol.get("algorithm", "srm"))
    if record.central_only and backend != "simulated":
        raise ConfigError(f"`algorithm` {record.name!r} is {record.central_only}: run it with `--backend simulated`.")
    if calibration not in record.calibrations:
        raise ConfigError(f"`calibration` {calibration!r} is not available for {record.name!r}, which takes "
                          f"{list(record.calibrations)}.")
    model_name = protocol.get("model", "logreg")
    model = models.lookup(model_name)
    if model.kind not in record.models:
        raise ConfigError(f"`algorithm` {record.name!r} trains {sorted(record.models)} models; `model` "
                          f"{model_name!r} is a {model.kind}.")
    if normalize_rows and not model.feature_rows:
        raise ConfigError("`normalize_rows` applies to feature rows, not to images: leave it out for a CNN.")
    noise = _noise_choice(protocol, record, m, path)
    if backend != MPC:  # nothing runs among parties to authenticate
        settings.refuse_uncovered(f"the {backend} backend")
    if not getattr(noise.record, "authenticated", False):  # its draw's openings are not MAC-checked
        settings.refuse_uncovered(f"training with noise mode {noise.mode!r}")
    passes = training.pop("passes", None)
    if record.full_batch:
        passes = training.pop("steps", passes)
    if passes is None and record.passes_required:
        raise ConfigError(f"protocol {path!r} gives no `passes` (or `steps` for full-batch algorithms) in [training]")
    passes = 0.0 if passes is None else check_number(passes, "passes", low=0)
    if seed is not None:
        training["seed"] = seed
    unknown = sorted(set(training) - record.fields)
    if unknown:
        raise ConfigError(f"[training] {', '.join(f'`{k}`' for k in unknown)} in {path!r} is not a parameter of "
                          f"{record.name!r}; it takes {sorted(record.fields)}.")
    params = record.parse(training, m, passes)
    return TrainPlan(protocol.get("name", path), record.name, protocol.get("dataset", OWN_FILES), m, backend,
                     float(epsilon if epsilon is not None else privacy["epsilon"]), float(privacy["delta"]),
                     params, passes, settings, output, float(ratio), normalize_rows,
                     calibration, model_name, noise)


def _noise_choice(protocol: dict, record: algorithms.Algorithm, parties: int, path: str) -> NoiseChoice:
    """The protocol's ``[noise]`` table (mode, colluders), checked against the run."""
    table = protocol.get("noise", {})
    if not isinstance(table, dict):
        raise ConfigError(f"protocol {path!r}: [noise] must be a table")
    unknown = sorted(set(table) - {"mode", "colluders"})
    if unknown:
        raise ConfigError(f"[noise] {', '.join(f'`{k}`' for k in unknown)} in {path!r} is not a noise setting; "
                          f"it takes `mode` and `colluders`.")
    choice = NoiseChoice(table.get("mode", NoiseChoice.mode), table.get("colluders", NoiseChoice.colluders))
    if choice.colluders >= parties:
        raise ConfigError(f"[noise] `colluders` must be < parties ({parties}). Found {choice.colluders}.")
    if choice != NoiseChoice() and record.central_only:
        raise ConfigError(f"[noise] applies to algorithms whose releases go through the MPC; {record.name!r} is "
                          f"{record.central_only}.")
    return choice


@functools.lru_cache(maxsize=32)
def srm_noise(setting, dim: int, epsilon: float, delta: float):
    """DP-SRM's two release kinds on their grids with the in-MPC sampler (``mpcdp privacy``)."""
    kinds, calibrate, event_of = srm_releases(setting)
    return calibrate_on_grid(kinds, dim, epsilon, delta, calibrate=calibrate, event_of=event_of)


def public_batches(plan: TrainPlan) -> bool:
    """Whether ``plan``'s batches are public: a secure run that is ``reproducible`` draws them from the
    protocol's seed, which every party (and anyone with the protocol file) knows."""
    return plan.backend != "simulated" and plan.mpc.reproducible


def plan_noise(plan: TrainPlan, sizes: tuple[int, ...], dim: int) -> PlanNoise:
    """Calibrate and certify ``plan``'s releases for parties of ``sizes`` records and models of ``dim``
    parameters (every algorithm whose releases go through the MPC). A reproducible secure run keeps the
    calibrated noise and is certified without amplification by subsampling (:func:`public_batches`)."""
    return algorithms.plan_noise(plan.record, plan.params, plan_setting(plan, sizes, dim),
                                 public_batches=public_batches(plan))


def plan_setting(plan: TrainPlan, sizes: tuple[int, ...], dim: int) -> Setting:
    """What calibration knows of a run of ``plan`` over parties of ``sizes`` records, ``dim`` parameters."""
    return Setting(tuple(sizes), dim, plan.epsilon, plan.delta, plan.passes, plan.calibration, plan.noise)


def checkpoint_description(plan: TrainPlan, levels: NoiseLevels, steps: int) -> dict[str, Any]:
    """What a checkpoint must match to be resumed: everything that shapes the run (not the time-outs)."""
    mpc = {k: v for k, v in plan.mpc.settings().items() if k not in ("timeout_s", "link_delay_ms")}
    return {"protocol": plan.name, "algorithm": plan.algorithm, "dataset": plan.dataset, "parties": plan.parties,
            "backend": plan.backend, "epsilon": plan.epsilon, "delta": plan.delta,
            "params": dataclasses.asdict(plan.params), "steps": steps, "output": plan.output,
            "size_ratio": plan.size_ratio, "normalize_rows": plan.normalize_rows, "model": plan.model,
            "sigma0": levels.sigma0, "sigma": levels.sigma, "mpc": mpc,
            **({} if plan.noise == NoiseChoice() else {"noise": dataclasses.asdict(plan.noise)})}


def protocol_provider(path: str) -> providers.Provider:
    """The provider a protocol's ``[mpc] provider`` names (the default if none), read first: is a dealer a process?"""
    return providers.lookup(protocol_mpc(path).provider)


def protocol_mpc(path: str) -> MpcSettings:
    """A protocol's resolved ``[mpc]`` settings, read before its plan (a party's place is claimed with them)."""
    return resolve_mpc(read_protocol(path).get("mpc", {}), f" in {path!r}")


def training_split(plan: TrainPlan):
    """``plan``'s shipped dataset, its training rows as the model takes them (rows at unit norm if the plan
    says so) and every party's row indices: (data, x, y, parts)."""
    if plan.dataset == OWN_FILES:
        raise ConfigError(f"protocol {plan.name!r} names no `dataset`: every party brings its own file "
                          f"(`mpcdp train P --data A.csv B.csv ...` on one host, `mpcdp party --job train --data FILE` on "
                          f"each, or `mpcdp.train`).")
    model = plan.trained_model
    data = load(plan.dataset)
    model.check_inputs(tuple(data.x_train.shape[1:]), plan.dataset)
    x, y = torch.from_numpy(data.x_train).double(), model.labels(data.y_train)
    if plan.normalize_rows:
        x = unit_rows(x)
    return data, x, y, split_indices(len(y), plan.parties, ratio=plan.size_ratio, seed=plan.params.seed)


def run_plan(plan: TrainPlan, progress: Callable[[int, int], None] | None = None, *,
             curve: bool = True, launch: Launcher | None = None, checkpoint_dir: str | None = None,
             checkpoint_every: int | None = None, resume: bool = False) -> dict[str, Any]:
    """Train as ``plan`` says and report (the JSON line of `mpcdp train`). ``curve``: also the test error of
    every iterate (for plots; sweeps skip it). ``launch``: how the secure run's parties start
    (:class:`~mpcdp.jobs.secure_run.Launcher`): :func:`~mpcdp.runtime.harness.run_job` (all here, the default)
    or :func:`~mpcdp.jobs.secure_run.host_launcher` (this host's party only). ``checkpoint_dir``/
    ``checkpoint_every``: save every party's state every so many releases (checkpointable algorithms); ``resume``: continue from the newest release every party saved under
    ``checkpoint_dir`` (:mod:`mpcdp.learning.checkpoint`)."""
    prepare_start = time.perf_counter()
    record, model = plan.record, plan.trained_model
    _check_checkpoint_request(plan, checkpoint_dir, resume)
    if plan.backend == "mpc" and launch is None:
        from mpcdp.runtime.process_server import start_process_server

        start_process_server()  # its imports overlap the data loading and calibration below
    data, x, y, parts = training_split(plan)
    x_test, y_test = _test_rows(plan, data)
    dim = model.dimension(x)
    shards = [Shard(j, x[idx], y[idx]) for j, idx in enumerate(parts)]
    sizes = tuple(len(p) for p in parts)
    common = _common_fields(plan, sizes)
    if record.run_central is not None:
        return _central_report(plan, data, shards, sizes, dim, (x, y, x_test, y_test), curve=curve, common=common)
    noise = plan_noise(plan, sizes, dim)
    common.update(noise.report)
    checkpoint = _checkpoint_spec(plan, noise, checkpoint_dir, checkpoint_every, resume)
    assert record.runner is not None  # (not central-only: Algorithm.__post_init__)
    runner = functools.partial(record.runner, model=model)
    if plan.backend == "simulated":
        warm_up()  # as every mpc party does before its clocks start
    start = time.perf_counter()
    prepare_s = start - prepare_start  # data, calibration and certification, in this process
    reference = None if plan.backend == "simulated" else _reference_while_training(plan)
    if plan.backend == "simulated":
        cpu = time.process_time()
        result = train_simulated(shards, noise.params, noise.levels, dim=dim, runner=runner, checkpoint=checkpoint)
        bytes_per_party, timing = 0, {"cpu_s": round(time.process_time() - cpu, 3)}
    else:
        result, bytes_per_party, fields, timing = _train_secure(plan, noise, shards, sizes, dim, runner, checkpoint,
                                                                launch=launch, progress=progress, start=start)
        common.update(fields)
    wall = time.perf_counter() - start
    common["releases"] = len(result.released)  # the privacy ledger: v_p⁰..v_pᵀ, each counted once
    evaluate_start = time.perf_counter()
    if reference is not None:
        reference.join()
    report = _report(plan, data, result, x, y, x_test, y_test, certificate=noise.certificate, levels=noise.levels,
                     steps=noise.steps, passes=noise.passes, curve=curve,
                     extra={"wall_s": round(wall, 3), "bytes_per_party": bytes_per_party, **common, **timing,
                            "prepare_s": round(prepare_s, 3)})
    report["evaluate_s"] = round(time.perf_counter() - evaluate_start, 3)
    return beyond_target(report, plan.delta)


def _reference_while_training(plan: TrainPlan) -> threading.Thread:
    """The optimal gap's reference (:func:`~mpcdp.jobs.train_report.training_optimum`, kept in its cache),
    computed in a thread of this process while the parties train — the launcher only waits for them then, at
    first for the fork server's imports. Join it before the report; a failure there is left to the report's
    own call, which raises it."""
    def compute() -> None:
        try:
            training_optimum(plan.dataset, plan.normalize_rows, plan.model)
        except Exception:  # noqa: BLE001 - the report computes it again and says why
            pass

    thread = threading.Thread(target=compute, name="mpcdp-reference", daemon=True)
    thread.start()
    return thread


def _check_checkpoint_request(plan: TrainPlan, checkpoint_dir: str | None, resume: bool) -> None:
    """Refuse checkpoints for an algorithm that cannot take them, and a resume without a directory."""
    if (checkpoint_dir or resume) and not plan.record.checkpointable:
        raise ConfigError(f"checkpoints exist for {sorted(n for n, a in ALGORITHMS.items() if a.checkpointable)} only. "
                          f"Found `algorithm` {plan.algorithm!r}.")
    if resume and not checkpoint_dir:
        raise ConfigError("`resume` needs the checkpoint directory.")


def _test_rows(plan: TrainPlan, data) -> tuple[torch.Tensor, torch.Tensor]:
    """``data``'s held-out rows and labels as ``plan``'s model takes them (rows at unit norm if the plan says
    so, as the training rows)."""
    x_test, y_test = torch.from_numpy(data.x_test).double(), plan.trained_model.labels(data.y_test)
    if plan.normalize_rows:
        x_test = unit_rows(x_test)
    return x_test, y_test


def _common_fields(plan: TrainPlan, sizes: tuple[int, ...]) -> dict[str, Any]:
    """The report fields every run of ``plan`` has, central or distributed: the split, the calibration, the
    features' scaling and the noise mode."""
    return {"party_sizes": list(sizes), "size_ratio": plan.size_ratio, "calibration": plan.calibration,
            "features": "rows scaled to unit L2 norm" if plan.normalize_rows else "as shipped",
            "noise_mode": plan.noise.mode, **({"colluders": plan.noise.colluders} if plan.noise.colluders else {}),
            "noise_known_to": plan_noise_known_to(plan), "security": plan.mpc.security}


def plan_noise_known_to(plan: TrainPlan) -> str:
    """Who could learn the noise of a run of ``plan`` (:func:`mpcdp.noise.who_knows.noise_known_to`)."""
    from mpcdp.noise.who_knows import noise_known_to

    malicious = plan.mpc.security == "malicious"  # every data party samples (mpcdp.noise.auth_gaussian)
    return noise_known_to(drawn_by=plan.noise.record.drawn_by, provider=plan.mpc.provider,
                          parties=plan.parties, committee=plan.parties if malicious else plan.mpc.noise_committee,
                          colluders=plan.noise.colluders or 0, backend=plan.backend)


def _central_report(plan: TrainPlan, data, shards: list[Shard], sizes: tuple[int, ...], dim: int, rows: tuple, *,
                    curve: bool, common: dict[str, Any]) -> dict[str, Any]:
    """Run a central-only algorithm (no secure run: the record's own ``run_central`` takes every shard and
    returns the result and its certificate) and report it; ``rows``: (x, y, x_test, y_test)."""
    x, y, x_test, y_test = rows
    start, cpu = time.perf_counter(), time.process_time()
    assert plan.record.run_central is not None  # (a central-only algorithm)
    central = plan.record.run_central(shards, plan.params, plan_setting(plan, sizes, dim))
    timing = {"wall_s": round(time.perf_counter() - start, 3), "cpu_s": round(time.process_time() - cpu, 3)}
    report = _report(plan, data, central.result, x, y, x_test, y_test, certificate=central.certificate,
                     levels=None, steps=central.steps, passes=central.passes, curve=curve,
                     extra={**timing, **common, **central.report})
    return _uncertified(report, central.not_certified_because)


def _checkpoint_spec(plan: TrainPlan, noise: PlanNoise, checkpoint_dir: str | None, checkpoint_every: int | None,
                     resume: bool) -> dict[str, Any] | None:
    """Where and how often the parties save their state (None: no checkpoints), checked as every run's
    :class:`~mpcdp.jobs.keeping.Keeping` (a fresh run refuses a folder that is not empty)."""
    keeping = Keeping(checkpoint_dir, checkpoint_every, resume)
    if not keeping.checkpoint_dir:
        return None
    return {"dir": str(keeping.checkpoint_dir), "every": keeping.every_of(noise.steps), "resume": resume,
            "description": checkpoint_description(plan, noise.levels, noise.steps)}


def _train_secure(plan: TrainPlan, noise: PlanNoise, shards: list[Shard], sizes: tuple[int, ...], dim: int,
                  runner: Callable[..., Any], checkpoint: dict[str, Any] | None, *, launch: Launcher | None,
                  progress: Callable[[int, int], None] | None, start: float) -> tuple[Any, int, dict, dict]:
    """Train with the secure backend: one party process per shard of ``sizes`` records (``launch``, by default
    all on this host), after a handshake on the plan (:func:`~mpcdp.jobs.secure_run.secure_run`). Returns
    (party 0's result, the most bytes a party sent, the run's report fields, its timing since ``start``)."""
    from mpcdp.jobs.estimate import estimate_plan
    from mpcdp.runtime.progress import launcher_line

    estimate = estimate_plan(plan, noise, dim)  # shown before any party starts; never used to stop the run
    launcher_line(f"mpcdp: {plan.name}: {estimate.describe()}")
    job = Job(plan.record.display_name(plan.parties), noise=noise, dim=dim, party_sizes=sizes)
    run = secure_run(plan, mpc_party, [(s, noise.params, noise.levels, dim, runner, checkpoint) for s in shards],
                     job=job, launch=launch, progress=progress)
    first = run.values[0]
    fields: dict[str, Any] = {"resumed_after_release": first.get("resumed_after")}
    if fields["resumed_after_release"] is not None:  # what this run opened and what it re-served
        fields["re_served_releases"] = first["re_served"]
        fields["opened_releases"] = first["opened_releases"]
    fields["provider"] = plan.mpc.provider  # as the run's MpcConfig names it
    fields["mpc"] = plan.mpc.settings()  # every setting the parties ran with (command line, protocol, default)
    if "link_wire_bytes" in first:  # what the kernel sent on mpcdp's links (TLS records included)
        fields["link_wire_bytes_per_party"] = max(r["link_wire_bytes"] for r in run.values)
        fields["links"] = first["links"]
    timing = {"setup_s": round(time.perf_counter() - start - max(r["presample_s"] + r["online_s"]
                                                               for r in run.values), 3),
              "presample_s": max(r["presample_s"] for r in run.values),
              "online_s": max(r["online_s"] for r in run.values),
              "dealer_bytes": (run.dealer or {}).get("bytes_sent"),
              "party_bytes": [r["bytes_sent"] for r in run.values], "estimate": estimate.to_dict()}
    return first["result"], max(r["bytes_sent"] or 0 for r in run.values), fields, timing
