"""`mpcdp train PROTOCOL.toml`: DP-SRM (central) or DDP-SRM (parties, secure or simulated), one of paper 002's
Table 2 baselines, or full-batch distributed gradient perturbation — Jayaraman et al. 2018 (plain averaging)
and WD-DP (paper 000: weights n_j/n, inside the MPC, or its Algorithm 1 as written with local noise) — on a
shipped dataset, with noise calibrated and ε certified by :mod:`mpcdp.accounting`.

Protocol fields beyond the algorithm's hyper-parameters: ``[training] size_ratio`` (paper 000's level of
non-average u = n_max/n_min: two groups of parties, the larger u times the smaller), ``normalize_rows`` (scale
every feature row to unit L2 norm, train and test alike — paper 000's G = 1 Lipschitz setting), ``steps`` (full-
batch algorithms; ``passes`` means the same there), ``[privacy] calibration`` ('certified' or the paper's
formula, certified anyway), ``model`` ('logreg', the default, or one of paper 002's CNNs, 'mnist-cnn' /
'cifar-cnn5', trained by DDP-SRM, DP-SRM or DP-SGD on an image dataset such as 'mnist-5k')."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import pathlib
import sys
import time
from typing import Any, Callable

import torch

from mpcdp.accounting.baselines import dpsgd_event, dpsgd_noise_for
from mpcdp.accounting.certify import zcdp_budget_for
from mpcdp.accounting.distributed import CALIBRATIONS, aggregate_noise_for, local_noise_for
from mpcdp.accounting.dpsrm import noise_for
from mpcdp.accounting.events import DpSrmSetting, dpsrm_event, full_batch_gaussian_event
from mpcdp.accounting.released import ReleaseKind, calibrate_on_grid
from mpcdp.config import MpcConfig
from mpcdp.data.registry import load
from mpcdp.data.split import split_indices
from mpcdp.errors import ConfigError
from mpcdp.learning.backends import NoiseLevels, mpc_party, train_simulated
from mpcdp.learning.baselines import SgdParameters, run_sgd
from mpcdp.learning.dpagd import AgdParameters, run_dpagd
from mpcdp.learning.dpsrm import OUTPUT_RULES, Shard, SrmParameters, run_srm
from mpcdp.learning.local_noise import run_local_then_average
from mpcdp.learning.cnn import NETWORKS
from mpcdp.learning.logreg import error_rate, loss, optimum, warm_up
from mpcdp.randomness import warn_reproducible
from mpcdp.validation import check_integer, check_number, read_protocol

ALGORITHMS = ("srm", "storm", "dp-sgd", "dp-gd", "rrpsgd", "dp-agd", "jayaraman", "wd-dp", "wd-dp-local")
CNN_ALGORITHMS = ("srm", "storm", "dp-sgd")
FULL_BATCH = ("dp-gd", "jayaraman", "wd-dp", "wd-dp-local")
CENTRAL_ONLY = {
    "dp-agd": "a central baseline (its step-size selection has no MPC counterpart here)",
    "wd-dp-local": "paper 000's Algorithm 1 as written: parties train alone and release local models, so there "
                   "is no secure step to run",
}


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
    params: SrmParameters | SgdParameters | AgdParameters
    passes: float
    mpc: dict
    output: str = "paper"
    size_ratio: float = 1.0
    normalize_rows: bool = False
    calibration: str = "certified"
    model: str = "logreg"

    @property
    def network(self):
        """The CNN (:mod:`mpcdp.learning.cnn`) this plan trains, or None for logistic regression."""
        return NETWORKS.get(self.model)


def plan_from(path: str, *, backend: str | None = None, parties: int | None = None, epsilon: float | None = None,
              seed: int | None = None, algorithm: str | None = None, size_ratio: float | None = None,
              calibration: str | None = None, training_overrides: dict[str, Any] | None = None) -> TrainPlan:
    """Read a protocol file; the keyword arguments override what it says (sweeps and the command line)."""
    protocol = read_protocol(path)
    try:
        training, privacy = dict(protocol["training"]), dict(protocol["privacy"])
    except KeyError as missing:
        raise ConfigError(f"protocol {path!r} lacks the [{missing.args[0]}] table") from None
    except (TypeError, ValueError):
        raise ConfigError(f"protocol {path!r}: [training] and [privacy] must be tables") from None
    if not isinstance(protocol.get("dataset"), str):
        raise ConfigError(f"`dataset` must be a dataset name (a string). Found {protocol.get('dataset')!r}.")
    check_number(epsilon if epsilon is not None else privacy.get("epsilon"), "epsilon", low=0)
    check_number(privacy.get("delta"), "delta", low=0, high=1)
    if "seed" in training:
        check_integer(training["seed"], "seed", minimum=0)
    if seed is not None:
        check_integer(seed, "seed", minimum=0)
    training.update(training_overrides or {})
    if size_ratio is not None:
        training["size_ratio"] = size_ratio
    ratio = training.pop("size_ratio", 1.0)
    if not (isinstance(ratio, (int, float)) and not isinstance(ratio, bool) and ratio >= 1):
        raise ConfigError(f"`size_ratio` (n_max/n_min) must be a number >= 1. Found {ratio!r}.")
    normalize_rows = training.pop("normalize_rows", False)
    if not isinstance(normalize_rows, bool):
        raise ConfigError(f"`normalize_rows` must be true or false. Found {normalize_rows!r}.")
    calibration = calibration or privacy.get("calibration", "certified")
    if calibration not in CALIBRATIONS:
        raise ConfigError(f"`calibration` must be one of {list(CALIBRATIONS)}. Found {calibration!r}.")
    m = check_integer(parties if parties is not None else training.pop("parties", 1), "parties")
    training.pop("parties", None)
    backend = backend or protocol.get("backend", "mpc" if m > 1 else "simulated")
    if backend not in ("mpc", "simulated"):
        raise ConfigError(f"`backend` must be 'mpc' or 'simulated'. Found {backend!r}.")
    if backend == "mpc" and m < 2:
        raise ConfigError(f"the mpc backend needs `parties` >= 2. Found {m}.")
    output = protocol.get("output", "paper")
    if output not in OUTPUT_RULES:
        raise ConfigError(f"`output` must be one of {list(OUTPUT_RULES)}. Found {output!r}.")
    algorithm = algorithm or protocol.get("algorithm", "srm")
    if algorithm not in ALGORITHMS:
        raise ConfigError(f"`algorithm` must be one of {list(ALGORITHMS)}. Found {algorithm!r}.")
    if algorithm in CENTRAL_ONLY and backend != "simulated":
        raise ConfigError(f"`algorithm` {algorithm!r} is {CENTRAL_ONLY[algorithm]}: run it with "
                          f"`--backend simulated`.")
    if calibration != "certified" and algorithm not in ("jayaraman", "wd-dp", "wd-dp-local"):
        raise ConfigError(f"`calibration` {calibration!r} exists for 'jayaraman', 'wd-dp' and 'wd-dp-local' only; "
                          f"{algorithm!r} is calibrated by the certifying accountant.")
    model = protocol.get("model", "logreg")
    if model != "logreg" and model not in NETWORKS:
        raise ConfigError(f"`model` must be 'logreg' or one of {sorted(NETWORKS)}. Found {model!r}.")
    if model != "logreg" and algorithm not in CNN_ALGORITHMS:
        raise ConfigError(f"`algorithm` {algorithm!r} is implemented for logistic regression only; with `model` "
                          f"{model!r} use one of {list(CNN_ALGORITHMS)}.")
    if model != "logreg" and normalize_rows:
        raise ConfigError("`normalize_rows` applies to feature rows, not to images: leave it out for a CNN.")
    passes = training.pop("passes", None)
    if algorithm in FULL_BATCH:
        passes = training.pop("steps", passes)
    if passes is None and algorithm != "dp-agd":
        raise ConfigError(f"protocol {path!r} gives no `passes` (or `steps` for full-batch algorithms) in [training]")
    passes = 0.0 if passes is None else check_number(passes, "passes", low=0)
    if seed is not None:
        training["seed"] = seed
    _refuse_unknown_fields(training, algorithm, path)
    if algorithm == "dp-agd":
        params = AgdParameters(**training)
    elif algorithm in FULL_BATCH:
        if passes < 1 or passes != int(passes):
            raise ConfigError(f"`steps` (full-batch passes) must be an integer >= 1. Found {passes!r}.")
        params = SgdParameters(steps=int(passes), full_batch=True, n_total=1,
                               weighting="parties" if algorithm == "jayaraman" else "records", **training)
    else:
        if "batch" not in training:
            raise ConfigError(f"protocol {path!r} gives no `batch` in [training]")
        batch = check_integer(training.pop("batch"), "batch")
        batch0 = check_integer(training.pop("batch0", batch), "batch0")
        if batch % m or batch0 % m:
            raise ConfigError(f"`batch` ({batch}) and `batch0` ({batch0}) must split evenly over {m} parties")
        if algorithm in ("dp-sgd", "rrpsgd"):
            params = SgdParameters(steps=1, batch=batch // m, random_round=algorithm == "rrpsgd", **training)
        else:
            params = SrmParameters(steps=1, batch=batch // m, batch0=batch0 // m, **training)
    return TrainPlan(protocol.get("name", path), algorithm, protocol["dataset"], m, backend,
                     float(epsilon if epsilon is not None else privacy["epsilon"]), float(privacy["delta"]),
                     params, passes, dict(protocol.get("mpc", {})), output, float(ratio), normalize_rows,
                     calibration, model)


def _refuse_unknown_fields(training: dict[str, Any], algorithm: str, path: str) -> None:
    """A [training] key the algorithm does not take is an error naming it (a typo must not be ignored)."""
    if algorithm == "dp-agd":
        known = {f.name for f in dataclasses.fields(AgdParameters)}
    elif algorithm in FULL_BATCH or algorithm in ("dp-sgd", "rrpsgd"):
        known = {f.name for f in dataclasses.fields(SgdParameters)} | {"batch", "batch0"}
        known -= {"full_batch", "n_total", "random_round", "weighting", "steps"}
        if algorithm in FULL_BATCH:
            known -= {"batch", "batch0"}
    else:
        known = {f.name for f in dataclasses.fields(SrmParameters)} - {"steps"}
    unknown = sorted(set(training) - known)
    if unknown:
        raise ConfigError(f"[training] {', '.join(f'`{k}`' for k in unknown)} in {path!r} is not a parameter of "
                          f"{algorithm!r}; it takes {sorted(known)}.")


def _display_name(plan: TrainPlan) -> str:
    if plan.algorithm == "srm":
        return "ddp-srm" if plan.parties > 1 else "dp-srm"
    return plan.algorithm


def _unit_rows(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=1, keepdim=True).clamp(min=1e-12)


@functools.lru_cache(maxsize=8)
def _training_optimum(dataset: str, normalize_rows: bool) -> tuple[torch.Tensor, float]:
    """θ* and F(θ*) on the whole training set (the optimal gap's reference; cached for sweeps)."""
    data = load(dataset)
    x, y = torch.from_numpy(data.x_train).double(), torch.from_numpy(data.y_train).double()
    if normalize_rows:
        x = _unit_rows(x)
    theta = optimum(x, y)
    return theta, loss(theta, x, y).item()


@functools.lru_cache(maxsize=32)
def srm_noise(setting: DpSrmSetting, dim: int, epsilon: float, delta: float):
    """DP-SRM's two release kinds on their grids (:mod:`mpcdp.accounting.released`): release 0 with
    sensitivity 2·C1/B0, releases 1..T with 2·C_eff/B (B0, B the combined batches)."""
    kinds = (ReleaseKind("release 0", 2 * setting.c1 / sum(setting.batch0), 1),
             ReleaseKind("releases 1..T", 2 * setting.c_eff / sum(setting.batch), setting.steps))

    def calibrate(eps: float, dlt: float) -> tuple[float, float]:
        noise = noise_for(setting, eps, dlt)
        return noise.sigma0, noise.sigma

    return calibrate_on_grid(kinds, dim, epsilon, delta, calibrate=calibrate,
                             event_of=lambda sigmas: dpsrm_event(setting, *sigmas))


def dpsgd_noise(sizes: tuple[int, ...], batch: tuple[int, ...], steps: int, c: float, dim: int, epsilon: float,
                delta: float):
    """DP-SGD's one release kind on its grid: T releases with sensitivity 2C/B."""
    kinds = (ReleaseKind("releases 1..T", 2 * c / sum(batch), steps),)
    return calibrate_on_grid(kinds, dim, epsilon, delta,
                             calibrate=lambda eps, dlt: (dpsgd_noise_for(sizes, batch, steps, c, eps, dlt)[0],),
                             event_of=lambda sigmas: dpsgd_event(sizes, batch, steps, c, sigmas[0]))


def full_batch_noise(scheme: str, sizes: tuple[int, ...], steps: int, bound: float, dim: int, epsilon: float,
                     delta: float, calibration: str):
    """The full-batch algorithms' one release kind on its grid: T releases with the scheme's sensitivity. With
    the paper's ``calibration`` σ follows the paper's formula at the target (ε, δ) and is certified anyway."""
    sensitivity = aggregate_noise_for(scheme, sizes, steps, bound, epsilon, delta, calibration=calibration).sensitivity
    kinds = (ReleaseKind("releases 1..T", sensitivity, steps),)

    def calibrate(eps: float, dlt: float) -> tuple[float]:
        if calibration != "certified":
            eps, dlt = epsilon, delta
        return (aggregate_noise_for(scheme, sizes, steps, bound, eps, dlt, calibration=calibration).sigma,)

    return calibrate_on_grid(kinds, dim, epsilon, delta, calibrate=calibrate,
                             event_of=lambda sigmas: full_batch_gaussian_event(sigmas[0], sensitivity, steps))


def host_launcher(rank: int, rendezvous: str) -> Callable[..., Any]:
    """A launcher for :func:`run_plan` that runs only data party ``rank`` of a secure run, in this process, on
    this host (the other parties and the dealer run the same command on theirs: `mpcdp party --job train`).

    Every party holds the whole shipped dataset only because the demo splits it the same way on every host;
    each party trains on its own part and sends nothing but masked shares."""
    from mpcdp.runtime.harness import RunResult
    from mpcdp.runtime.party import run_party

    def joined(step: int, label: str) -> None:
        if step == 1:  # the handshake is done: every party is in and the run has started
            print(f"mpcdp party {rank}: joined; training", file=sys.stderr, flush=True)

    def launch(fn, config, *, party_args, job, progress=None):
        start = time.perf_counter()
        value = run_party(rank=rank, config=config, rendezvous=rendezvous, fn=fn, args=party_args[rank], job=job,
                          on_step=joined)
        return RunResult(values=[value], dealer=None, wall_s=time.perf_counter() - start)

    return launch


@dataclasses.dataclass(frozen=True)
class PlanNoise:
    """What a training plan releases: its steps and parameters, the release kinds on their grids, and the
    certificate (None for STORM, which is not private)."""

    steps: int
    params: Any
    passes: float
    levels: NoiseLevels
    certificate: Any
    runner: Callable
    sensitivity: float | None = None


def plan_noise(plan: TrainPlan, sizes: tuple[int, ...], dim: int) -> PlanNoise:
    """Calibrate and certify ``plan``'s noise for parties of ``sizes`` records and models of ``dim``
    parameters (every algorithm whose releases go through the MPC: DP-SRM/DDP-SRM, STORM, DP-SGD, RRPSGD,
    DP-GD, Jayaraman, WD-DP)."""
    n = sum(sizes)
    if plan.algorithm in FULL_BATCH:
        steps = plan.params.steps
        params = dataclasses.replace(plan.params, n_total=n)
        noise = full_batch_noise("jayaraman" if plan.algorithm == "jayaraman" else "wd-dp", sizes, steps,
                                 params.c1, dim, plan.epsilon, plan.delta, plan.calibration)
        return PlanNoise(steps, params, float(steps), NoiseLevels(noise.releases[0], noise.releases[0]),
                         noise.certificate, run_sgd, noise.kinds[0].sensitivity)
    steps = max(1, round(plan.passes * n / (plan.params.batch * plan.parties)))
    params = dataclasses.replace(plan.params, steps=steps)
    if plan.algorithm in ("dp-sgd", "rrpsgd"):
        noise = dpsgd_noise(sizes, (params.batch,) * plan.parties, steps, params.c1, dim, plan.epsilon, plan.delta)
        return PlanNoise(steps, params, steps * params.batch * plan.parties / n,
                         NoiseLevels(noise.releases[0], noise.releases[0]), noise.certificate, run_sgd)
    setting = DpSrmSetting(n=sizes, batch=(params.batch,) * plan.parties, batch0=(params.batch0,) * plan.parties,
                           steps=steps, c1=params.c1, c2=params.c2, gamma=params.gamma)
    passes = (params.batch0 + steps * params.batch) * plan.parties / n
    if plan.algorithm == "storm":
        return PlanNoise(steps, params, passes, NoiseLevels.none(), None, run_srm)
    noise = srm_noise(setting, dim, plan.epsilon, plan.delta)
    return PlanNoise(steps, params, passes, NoiseLevels(*noise.releases), noise.certificate, run_srm)


def checkpoint_description(plan: TrainPlan, levels: NoiseLevels, steps: int) -> dict[str, Any]:
    """What a checkpoint must match to be resumed: everything that shapes the run (not the time-outs)."""
    mpc = {k: v for k, v in plan.mpc.items() if k not in ("timeout_s", "link_delay_ms")}
    return {"protocol": plan.name, "algorithm": plan.algorithm, "dataset": plan.dataset, "parties": plan.parties,
            "backend": plan.backend, "epsilon": plan.epsilon, "delta": plan.delta,
            "params": dataclasses.asdict(plan.params), "steps": steps, "output": plan.output,
            "size_ratio": plan.size_ratio, "normalize_rows": plan.normalize_rows, "model": plan.model,
            "sigma0": levels.sigma0, "sigma": levels.sigma, "mpc": mpc}


def run_plan(plan: TrainPlan, progress: Callable[[int, int], None] | None = None, *,
             curve: bool = True, launch: Callable[..., Any] | None = None, checkpoint_dir: str | None = None,
             checkpoint_every: int | None = None, resume: bool = False) -> dict[str, Any]:
    """Train as ``plan`` says and report (the JSON line of `mpcdp train`). ``curve``: also the test error of
    every iterate (for plots; sweeps skip it). ``launch``: how the secure run's parties start —
    :func:`~mpcdp.runtime.harness.run_job` (all here, the default) or :func:`host_launcher` (this host's
    party only). ``checkpoint_dir``/``checkpoint_every``: save every party's state every so many releases
    (DP-SRM and STORM); ``resume``: continue from the newest release every party saved under
    ``checkpoint_dir`` (:mod:`mpcdp.learning.checkpoint`)."""
    if (checkpoint_dir or resume) and plan.algorithm not in ("srm", "storm"):
        raise ConfigError(f"checkpoints exist for DP-SRM/DDP-SRM and STORM only. Found `algorithm` "
                          f"{plan.algorithm!r}.")
    if resume and not checkpoint_dir:
        raise ConfigError("`resume` needs the checkpoint directory.")
    data = load(plan.dataset)
    network = plan.network
    if network is not None:
        if tuple(data.x_train.shape[1:]) != network.input_shape:
            raise ConfigError(f"`model` {plan.model!r} takes inputs of shape {network.input_shape}; dataset "
                              f"{plan.dataset!r} has {tuple(data.x_train.shape[1:])}.")
        labels = lambda a: torch.from_numpy(a).long()  # noqa: E731 - class indices
    else:
        if data.x_train.ndim != 2:
            raise ConfigError(f"dataset {plan.dataset!r} holds images of shape {tuple(data.x_train.shape[1:])}: set "
                              f"`model` to one of {sorted(NETWORKS)} (logistic regression takes feature rows).")
        labels = lambda a: torch.from_numpy(a).double()  # noqa: E731 - ±1
    x, y = torch.from_numpy(data.x_train).double(), labels(data.y_train)
    x_test, y_test = torch.from_numpy(data.x_test).double(), labels(data.y_test)
    if plan.normalize_rows:
        x, x_test = _unit_rows(x), _unit_rows(x_test)
    n, dim = len(y), (network.dim if network is not None else x.shape[1])
    parts = split_indices(n, plan.parties, ratio=plan.size_ratio, seed=plan.params.seed)
    shards = [Shard(j, x[idx], y[idx]) for j, idx in enumerate(parts)]
    sizes = tuple(len(p) for p in parts)
    common = {"party_sizes": list(sizes), "size_ratio": plan.size_ratio, "calibration": plan.calibration,
              "features": "rows scaled to unit L2 norm" if plan.normalize_rows else "as shipped"}
    if plan.algorithm == "dp-agd":
        rho, certificate = zcdp_budget_for(plan.epsilon, plan.delta)
        params = dataclasses.replace(plan.params, rho_total=rho)
        start = time.perf_counter()
        cpu = time.process_time()
        result = run_dpagd(shards, params, dim=dim)
        report = {"wall_s": round(time.perf_counter() - start, 3), "cpu_s": round(time.process_time() - cpu, 3)}
        return _report(plan, data, result, x, y, x_test, y_test, certificate=certificate, levels=None,
                       steps=len(result.iterates) - 1, passes=result.data_passes, curve=curve,
                       extra={**report, **common, "bytes_per_party": 0, "rho_zcdp": rho})
    if plan.algorithm == "wd-dp-local":
        steps = plan.params.steps
        params = dataclasses.replace(plan.params, n_total=n)
        noise = local_noise_for(sizes, steps, params.c1, plan.epsilon, plan.delta, calibration=plan.calibration,
                                dim=dim)
        warm_up()
        start, cpu = time.perf_counter(), time.process_time()
        result = run_local_then_average(shards, params, noise.releases, dim=dim)
        report = {"wall_s": round(time.perf_counter() - start, 3), "cpu_s": round(time.process_time() - cpu, 3)}
        return _report(plan, data, result, x, y, x_test, y_test, certificate=noise.certificate, levels=None,
                       steps=steps, passes=float(steps), curve=curve,
                       extra={**report, **common, "bytes_per_party": 0, "sigma_by_party": list(noise.sigmas),
                              "epsilon_by_party": [c.epsilon for c in noise.certificates]})
    noise = plan_noise(plan, sizes, dim)
    steps, params, levels, certificate = noise.steps, noise.params, noise.levels, noise.certificate
    runner, passes_done = noise.runner, noise.passes
    if noise.sensitivity is not None:
        common["sensitivity"] = noise.sensitivity
    bytes_per_party = 0
    checkpoint = None
    if checkpoint_dir:
        every = checkpoint_every if checkpoint_every is not None else max(1, steps // 10)
        if not resume and pathlib.Path(checkpoint_dir).exists() and any(pathlib.Path(checkpoint_dir).iterdir()):
            raise ConfigError(f"checkpoint directory {checkpoint_dir!r} is not empty: resume from it (`--resume`) "
                              f"or choose a new one")
        checkpoint = {"dir": str(checkpoint_dir), "every": every, "resume": resume,
                      "description": checkpoint_description(plan, levels, steps)}
    if network is not None:
        runner = functools.partial(runner, model=network)
    if plan.backend == "simulated":
        warm_up()  # as every mpc party does before its clocks start
    start = time.perf_counter()
    if plan.backend == "simulated":
        cpu = time.process_time()
        result = train_simulated(shards, params, levels, dim=dim, runner=runner, checkpoint=checkpoint)
        timing = {"cpu_s": round(time.process_time() - cpu, 3)}
    else:
        from mpcdp.runtime.harness import run_job

        config = MpcConfig(parties=plan.parties, **plan.mpc)
        if config.reproducible:
            warn_reproducible("every party's mini-batches")
        run = (launch or run_job)(mpc_party, config,
                                  party_args=[(s, params, levels, dim, runner, checkpoint) for s in shards],
                      job={"name": _display_name(plan), "protocol": plan.name, "steps": steps, "dim": dim,
                           "party_sizes": list(sizes)},
                      progress=progress)
        result = run.values[0]["result"]
        common["resumed_after_release"] = run.values[0].get("resumed_after")
        bytes_per_party = max(r["bytes_sent"] or 0 for r in run.values)
        timing = {"setup_s": round(time.perf_counter() - start - max(r["presample_s"] + r["online_s"]
                                                                   for r in run.values), 3),
                  "presample_s": max(r["presample_s"] for r in run.values),
                  "online_s": max(r["online_s"] for r in run.values),
                  "dealer_bytes": (run.dealer or {}).get("bytes_sent")}
    wall = time.perf_counter() - start
    common["releases"] = len(result.released)  # the privacy ledger: v_p⁰..v_pᵀ, each counted once
    return _report(plan, data, result, x, y, x_test, y_test, certificate=certificate, levels=levels, steps=steps,
                   passes=passes_done, curve=curve,
                   extra={"wall_s": round(wall, 3), "bytes_per_party": bytes_per_party, **common, **timing})


def _privacy_pieces(certificate) -> dict[str, Any]:
    """The certificate's terms (mechanism and accountant versions, ε and δ pieces, the grid of each release
    kind), for a report; empty for a certificate without a grid."""
    pieces = getattr(certificate, "pieces", None) or {}
    return {key: pieces[key] for key in ("mechanism", "accountant", "epsilon_accountant", "epsilon_residual",
                                         "delta_gaussian", "delta_truncation", "delta_residual",
                                         "noise_coordinates") if key in pieces} | (
        {"release_grid": pieces["releases"]} if "releases" in pieces else {})


def _report(plan: TrainPlan, data, result, x, y, x_test, y_test, *, certificate, levels: NoiseLevels | None,
            steps: int, passes: float, curve: bool, extra: dict[str, Any]) -> dict[str, Any]:
    theta = result.output(plan.output)
    by_rule = {rule: result.output(rule) for rule in OUTPUT_RULES}
    network = plan.network
    if network is not None:  # a CNN: cross-entropy and misclassification; no convex optimum to compare with
        loss_of = lambda t, a, b: network.loss(t, a, b)  # noqa: E731
        error_of, gap, grad_norm = network.error_rate, None, None
    else:
        loss_of, error_of = loss, error_rate
        gap = loss(theta, x, y).item() - _training_optimum(plan.dataset, plan.normalize_rows)[1]
        grad_norm = float(torch.func.grad(loss)(theta, x, y).norm())
    return {
        "protocol": plan.name, "algorithm": _display_name(plan), "backend": plan.backend,
        "dataset": data.name, "model": plan.model, "parties": plan.parties,
        "epsilon": None if certificate is None else certificate.epsilon,  # storm: not private
        "epsilon_target": None if certificate is None else plan.epsilon, "delta": plan.delta,
        "delta_certified": None if certificate is None else certificate.delta,
        "accounting": None if certificate is None else certificate.method,
        **_privacy_pieces(certificate),
        "sigma0": None if levels is None else levels.sigma0, "sigma": None if levels is None else levels.sigma,
        "iterations": steps, "data_passes": passes, "output": plan.output,
        "model_sha256": hashlib.sha256(theta.detach().to(torch.float64).contiguous().numpy().tobytes()).hexdigest(),
        "test_loss": loss_of(theta, x_test, y_test).item(), "test_error": error_of(theta, x_test, y_test),
        **{f"test_loss_{rule}": loss_of(t, x_test, y_test).item() for rule, t in by_rule.items()},
        **{f"test_error_{rule}": error_of(t, x_test, y_test) for rule, t in by_rule.items()},
        "train_loss": loss_of(theta, x, y).item(),
        "optimal_gap": gap,
        "grad_norm": grad_norm,
        **extra,
        "test_error_curve": [error_of(t, x_test, y_test) for t in result.iterates] if curve else None,
    }
