"""The training algorithms ``mpcdp train`` runs, as records in one registry.

A record says everything the generic run path (:mod:`mpcdp.jobs.train`) needs: how to read the algorithm's
hyper-parameters from the protocol's ``[training]`` table, what it releases (its release kinds, their
calibrator and their dp-accounting event, certified on the grid by the run's noise mode,
:mod:`mpcdp.learning.noise_modes`), the training loop that runs on every party and in simulation, and its flags
(full batch, central only, the model kinds it trains, checkpointable).

Algorithms whose releases go through the MPC (paper 002's DP-SRM/DDP-SRM and its baselines, Jayaraman et al.
2018 and WD-DP of paper 000) share one path: calibrate the release kinds, pre-sample the noise, release one
noisy sum per step. Central-only algorithms (DP-AGD, WD-DP's local-noise Algorithm 1) bring their own
``run_central``.

To extend: write an :class:`Algorithm` record (a parameters type, ``parse``, ``releases`` and a ``runner``
with the interface of :class:`Runner`, as :func:`~mpcdp.learning.dpsrm.run_srm` has) and :func:`register` it
(the runner is checked then; a missing argument is refused by name). ``mpcdp train`` then
accepts its name in a protocol's ``algorithm`` field (tests/toy_algorithm.py is a complete example).
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence, runtime_checkable

if TYPE_CHECKING:
    import dp_accounting

from mpcdp.accounting.baselines import dpsgd_event, dpsgd_noise_for
from mpcdp.accounting.certify import Certificate, zcdp_budget_for
from mpcdp.accounting.distributed import aggregate_noise_for, local_noise_for
from mpcdp.accounting.dpsrm import noise_for
from mpcdp.accounting.events import DpSrmSetting, dpsrm_event, full_batch_gaussian_event, without_amplification
from mpcdp.accounting.released import ReleaseKind
from mpcdp.errors import ConfigError
from mpcdp import registry
from mpcdp.learning import calibration_cache
from mpcdp.learning.backends import NoiseLevels
from mpcdp.learning.baselines import SgdParameters, run_sgd
from mpcdp.learning.dpagd import AgdParameters, run_dpagd
from mpcdp.learning.dpsrm import Aggregate, Shard, SrmParameters, SrmResult, run_srm
from mpcdp.learning.local_noise import run_local_then_average
from mpcdp.learning.logreg import warm_up
from mpcdp.learning.mechanisms import NoiseChoice
from mpcdp.learning.models import Model
from mpcdp.validation import check_integer


@dataclasses.dataclass(frozen=True)
class Setting:
    """What calibration needs to know about a run: party sizes n_j, model dimension d, the target (ε, δ),
    the calibration rule, the fraction of the data to pass over, and the noise mode."""

    sizes: tuple[int, ...]
    dim: int
    epsilon: float
    delta: float
    passes: float
    calibration: str = "certified"
    noise: NoiseChoice = NoiseChoice()

    @property
    def parties(self) -> int:
        return len(self.sizes)

    @property
    def records(self) -> int:
        return sum(self.sizes)


@dataclasses.dataclass(frozen=True)
class Releases:
    """What an algorithm opens: its steps, its resolved parameters, the data passes they make, and its release
    kinds (the first kind is release 0's, the last is that of releases 1..T; none: not private) with the
    algorithm's own calibrator (ε, δ) -> one σ per kind and the dp-accounting event of one σ per kind."""

    steps: int
    params: Any
    passes: float
    kinds: tuple[ReleaseKind, ...] = ()
    calibrate: Callable[[float, float], Sequence[float]] | None = None
    event_of: Callable[[tuple[float, ...]], dp_accounting.DpEvent] | None = None
    report: dict = dataclasses.field(default_factory=dict)  # extra report fields, e.g. the sensitivity


@dataclasses.dataclass(frozen=True)
class PlanNoise:
    """A plan's releases on their grids: steps, parameters, passes, the noise of each release kind and the
    certificate (None: not private)."""

    steps: int
    params: Any
    passes: float
    levels: NoiseLevels
    certificate: Certificate | None
    report: dict


@dataclasses.dataclass(frozen=True)
class CentralRun:
    """What a central-only algorithm's own run returns. ``not_certified_because``: set when ``certificate``
    does not cover the bits the run releases (it is then printed under another name, with this reason)."""

    result: Any
    certificate: Certificate
    steps: int
    passes: float
    report: dict
    not_certified_because: str | None = None


@runtime_checkable
class Runner(Protocol):
    """The training loop of an algorithm whose releases go through the MPC (``Algorithm.runner``): the same
    function runs on every party process (``shards``: its own one) and in simulation (every shard).

    ``aggregate(t, local)`` returns release t: the sum over every party of ``local`` with the release's noise
    (through the MPC, or simulated); the runner calls it once per release, in order, and opens nothing else.
    ``dim``: θ's length; ``model``: a :class:`~mpcdp.learning.models.Model`; ``batch_sizes``/``batch0_sizes``:
    every party's per-step batch (public; 0 for full-batch parameters); ``batch_key``: this party's secret key
    for its batch draws (None: batches follow the parameters' seed). A checkpointable algorithm's runner also
    takes ``resume`` (a saved state to continue from) and ``on_release`` (called with the state after each
    release) — :data:`CHECKPOINT_ARGUMENTS`. Returns the run's :class:`~mpcdp.learning.dpsrm.SrmResult` (its
    ``released`` values, in order, and ``output(rule)``)."""

    def __call__(self, shards: Sequence[Shard], params: Any, aggregate: Aggregate, *, dim: int, model: Model,
                 batch_sizes: Sequence[int], batch0_sizes: Sequence[int], batch_key: int | None = None) -> SrmResult:
        ...


CHECKPOINT_ARGUMENTS = ("resume", "on_release")


def check_runner(runner: Any, name: str, *, checkpointable: bool = False) -> None:
    """Refuse a ``runner`` (of algorithm ``name``) that cannot be called as :class:`Runner` says: not callable,
    lacking an argument the training paths pass (named), or requiring one they do not always pass."""
    if not callable(runner):
        raise ConfigError(f"algorithm {name!r}'s `runner` must be callable. Found {runner!r}.")
    try:
        signature = inspect.signature(runner)
    except (TypeError, ValueError):  # a callable whose signature Python cannot read: trusted as it is
        return
    interface = list(inspect.signature(Runner.__call__).parameters.values())[1:]  # after self
    positional = [p.name for p in interface if p.kind is p.POSITIONAL_OR_KEYWORD]
    keywords = [p.name for p in interface if p.kind is p.KEYWORD_ONLY] + list(CHECKPOINT_ARGUMENTS * checkpointable)
    missing = _missing_arguments(signature, positional, keywords)
    if missing:
        raise ConfigError(f"a runner must take every argument of {Runner.__module__}.Runner: algorithm {name!r}'s "
                          f"runner lacks {', '.join(f'`{m}`' for m in missing)}")
    always = {p.name for p in interface if p.kind is p.KEYWORD_ONLY and p.default is p.empty}
    slots = _positional(signature)[:len(positional)]
    required = [p.name for p in signature.parameters.values() if p.default is p.empty and p.name not in always
                and p.name not in slots and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if required:
        raise ConfigError(f"algorithm {name!r}'s runner requires {', '.join(f'`{r}`' for r in required)}, which "
                          f"the training paths do not always pass (give it a default)")


def _positional(signature: inspect.Signature) -> list[str]:
    return [p.name for p in signature.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _missing_arguments(signature: inspect.Signature, positional: list[str], keywords: list[str]) -> list[str]:
    """The arguments of ``positional`` (passed by position) and ``keywords`` (by name) ``signature`` cannot take."""
    kinds = {p.kind for p in signature.parameters.values()}
    takes_any_keyword = inspect.Parameter.VAR_KEYWORD in kinds
    missing = [] if inspect.Parameter.VAR_POSITIONAL in kinds else positional[len(_positional(signature)):]
    by_name = {p.name for p in signature.parameters.values() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return missing + [k for k in keywords if not takes_any_keyword and k not in by_name]


@dataclasses.dataclass(frozen=True)
class Algorithm:
    """One training algorithm.

    Attributes:
        name: the protocol's ``algorithm`` value.
        summary: one line for the docs and the help.
        parameters: its hyper-parameters type (a dataclass).
        parse: ([training] fields left after the common ones, parties m, passes or steps) -> parameters;
            raises ConfigError naming the field.
        fields: the ``[training]`` keys it takes (anything else is refused, naming the key).
        releases: (parameters, Setting) -> Releases, for an algorithm whose releases go through the MPC.
        runner: the training loop (:class:`Runner`), e.g. :func:`~mpcdp.learning.dpsrm.run_srm`.
        run_central: (shards, parameters, Setting) -> CentralRun, for a central-only algorithm.
        central_only: why it has no secure run (None: it has one).
        full_batch: ``passes`` means full-batch steps (``steps`` in the protocol).
        models: the model kinds it trains ('logreg', 'cnn').
        checkpointable: its runner can save and resume every party's state.
        calibrations: the ``[privacy] calibration`` values it accepts.
        display: its name in reports for m parties (DP-SRM is DDP-SRM with m > 1).
        passes_required: the protocol must give ``passes`` (or ``steps``).
    """

    name: str
    summary: str
    parameters: type
    parse: Callable[[dict, int, float], Any]
    fields: frozenset[str]
    releases: Callable[[Any, Setting], Releases] | None = None
    runner: Runner | None = None
    run_central: Callable[[Sequence, Any, Setting], CentralRun] | None = None
    central_only: str | None = None
    full_batch: bool = False
    models: frozenset[str] = frozenset({"logreg"})
    checkpointable: bool = False
    calibrations: tuple[str, ...] = ("certified",)
    display: Callable[[int], str] | None = None
    passes_required: bool = True

    def __post_init__(self) -> None:
        if (self.releases is None) == (self.run_central is None):
            raise ConfigError(f"algorithm {self.name!r} needs exactly one of `releases` (a secure run) and "
                              f"`run_central`")
        if self.releases is not None and self.runner is None:
            raise ConfigError(f"algorithm {self.name!r} releases through the MPC and needs a `runner`")

    def display_name(self, parties: int) -> str:
        return self.display(parties) if self.display else self.name


ALGORITHMS: dict[str, Algorithm] = {}


def register(algorithm: Algorithm) -> Algorithm:
    """Add ``algorithm`` to the registry (its name must be new), after checking its ``runner`` against
    :class:`Runner` (a ConfigError naming the argument it lacks)."""
    if algorithm.runner is not None:
        check_runner(algorithm.runner, algorithm.name, checkpointable=algorithm.checkpointable)
    return registry.add(ALGORITHMS, algorithm.name, algorithm, "algorithm")


def lookup(name: str) -> Algorithm:
    return registry.find(ALGORITHMS, name, "algorithm")


UNAMPLIFIED = ("batches public (a reproducible run's follow the protocol's seed): certified without amplification "
               "by subsampling (sampling rate 1)")


def plan_noise(algorithm: Algorithm, params: Any, setting: Setting, *, public_batches: bool = False,
               cached: bool = True) -> PlanNoise:
    """Calibrate and certify ``algorithm``'s releases for ``setting`` with the setting's noise mode.

    ``public_batches``: the run's batches are known to others (``reproducible`` secure runs draw them from the
    protocol's seed). The noise stays what the protocol calibrates (so the run equals its simulation), and the
    certificate is that of the same releases on their whole batches: no ε amplified by subsampling is printed.

    ``cached``: take the releases and the certificate from the shipped calibrations
    (:mod:`mpcdp.learning.calibration_cache`) where an entry's key is that of every input here; the report's
    ``certificate_from`` says which (the cache and its key, or computed)."""
    assert algorithm.releases is not None, f"algorithm {algorithm.name!r} has no secure run"
    releases = algorithm.releases(params, setting)
    if not releases.kinds:
        return PlanNoise(releases.steps, releases.params, releases.passes, NoiseLevels.none(), None, releases.report)
    report = dict(releases.report)
    if public_batches:
        report["subsampling_amplification"] = "none: " + UNAMPLIFIED
    found = None
    if cached:
        inputs = calibration_cache.inputs_of(algorithm.name, params, setting, releases.kinds,
                                             public_batches=public_batches, mechanism=setting.noise.record.id)
        found = calibration_cache.lookup(inputs)
    if found is None:
        grid, certificate = _calibrate(releases, setting, public_batches=public_batches)
        report["certificate_from"] = "computed"
    else:
        key, grid, certificate = found
        report["certificate_from"] = f"the shipped calibrations (mpcdp/learning/calibrations.json), key {key}"
    levels = NoiseLevels(grid, setting.noise, tuple(k.rows for k in releases.kinds))
    return PlanNoise(releases.steps, releases.params, releases.passes, levels, certificate, report)


def _calibrate(releases: Releases, setting: Setting, *, public_batches: bool) -> tuple[tuple, Certificate]:
    """The releases on their grids and their certificate, calibrated and certified now (dp-accounting)."""
    event_of = releases.event_of
    assert event_of is not None, "private releases without their dp-accounting event"
    mode = setting.noise.record
    noise = mode.calibrate(releases.kinds, setting.dim, setting.epsilon, setting.delta,
                           calibrate=releases.calibrate, event_of=releases.event_of,
                           parties=setting.parties, choice=setting.noise)
    certificate = noise.certificate
    if public_batches:
        if mode.certify is None:
            raise ConfigError(f"[noise] `mode` = {mode.name!r} cannot certify a run whose batches are public: set "
                              f"[mpc] `reproducible` = false, or use a mode that registers `certify`")
        certificate = mode.certify(releases.kinds, noise.releases, certificate.pieces["delta_gaussian"],
                                   lambda sigmas: without_amplification(event_of(sigmas)),
                                   setting.parties, setting.noise)
        certificate = dataclasses.replace(certificate, method=f"{UNAMPLIFIED}; {certificate.method}")
    return tuple(noise.releases), certificate


# -- parameter readers ------------------------------------------------------------------------------------

def _fields(parameters: type, *, plus: Sequence[str] = (), minus: Sequence[str] = ()) -> frozenset[str]:
    return frozenset({f.name for f in dataclasses.fields(parameters)} | set(plus)) - set(minus)


def split_batches(training: dict, parties: int) -> tuple[int, int]:
    """``batch`` and ``batch0`` (combined over the parties) as per-party sizes."""
    if "batch" not in training:
        raise ConfigError("the protocol gives no `batch` in [training]")
    batch = check_integer(training.pop("batch"), "batch")
    batch0 = check_integer(training.pop("batch0", batch), "batch0")
    if batch % parties or batch0 % parties:
        raise ConfigError(f"`batch` ({batch}) and `batch0` ({batch0}) must split evenly over {parties} parties")
    return batch // parties, batch0 // parties


def _minibatch_steps(params, setting: Setting) -> int:
    return max(1, round(setting.passes * setting.records / (params.batch * setting.parties)))


def _full_batch_steps(training: dict, passes: float) -> int:
    if passes < 1 or passes != int(passes):
        raise ConfigError(f"`steps` (full-batch passes) must be an integer >= 1. Found {passes!r}.")
    return int(passes)


# -- DP-SRM / DDP-SRM and STORM (paper 002) -----------------------------------------------------------------

def srm_releases(setting_srm: DpSrmSetting) -> tuple[tuple[ReleaseKind, ...], Callable, Callable]:
    """DP-SRM's two release kinds: release 0 with sensitivity 2·C1/B0, releases 1..T with 2·C_eff/B (B0, B
    the combined batches), their calibrator and event."""
    kinds = (ReleaseKind("release 0", 2 * setting_srm.c1 / sum(setting_srm.batch0), 1),
             ReleaseKind("releases 1..T", 2 * setting_srm.c_eff / sum(setting_srm.batch), setting_srm.steps))

    def calibrate(eps: float, dlt: float) -> tuple[float, float]:
        noise = noise_for(setting_srm, eps, dlt, with_rdp=False)  # σ only: the grid's certificate has its own
        return noise.sigma0, noise.sigma

    return kinds, calibrate, lambda sigmas: dpsrm_event(setting_srm, *sigmas)


def _parse_srm(training: dict, parties: int, passes: float) -> SrmParameters:
    batch, batch0 = split_batches(training, parties)
    return SrmParameters(steps=1, batch=batch, batch0=batch0, **training)


def _srm(private: bool):
    def releases(params: SrmParameters, setting: Setting) -> Releases:
        steps = _minibatch_steps(params, setting)
        params = dataclasses.replace(params, steps=steps)
        passes = (params.batch0 + steps * params.batch) * setting.parties / setting.records
        if not private:
            return Releases(steps, params, passes)
        srm = DpSrmSetting(n=setting.sizes, batch=(params.batch,) * setting.parties,
                           batch0=(params.batch0,) * setting.parties, steps=steps, c1=params.c1, c2=params.c2,
                           gamma=params.gamma)
        kinds, calibrate, event_of = srm_releases(srm)
        return Releases(steps, params, passes, kinds, calibrate, event_of)
    return releases


_SRM_FIELDS = _fields(SrmParameters, minus=("steps",))

register(Algorithm(
    "srm", "DP-SRM (one party) or DDP-SRM (parties): paper 002's variance-reduced recursive momentum",
    SrmParameters, _parse_srm, _SRM_FIELDS, releases=_srm(True), runner=run_srm,
    models=frozenset({"logreg", "cnn"}), checkpointable=True,
    display=lambda m: "ddp-srm" if m > 1 else "dp-srm"))
register(Algorithm(
    "storm", "STORM, DP-SRM without noise or clipping-based privacy (not private; paper 002's reference)",
    SrmParameters, _parse_srm, _SRM_FIELDS, releases=_srm(False), runner=run_srm,
    models=frozenset({"logreg", "cnn"}), checkpointable=True))


# -- DP-SGD and RRPSGD (paper 002's Table 2 baselines) ---------------------------------------------------------

def _parse_sgd(random_round: bool):
    def parse(training: dict, parties: int, passes: float) -> SgdParameters:
        batch, _ = split_batches(training, parties)
        return SgdParameters(steps=1, batch=batch, random_round=random_round, **training)
    return parse


def _sgd_releases(params: SgdParameters, setting: Setting) -> Releases:
    steps = _minibatch_steps(params, setting)
    params = dataclasses.replace(params, steps=steps)
    batches = (params.batch,) * setting.parties
    kinds = (ReleaseKind("releases 1..T", 2 * params.c1 / sum(batches), steps),)
    return Releases(steps, params, steps * params.batch * setting.parties / setting.records, kinds,
                    lambda eps, dlt: (dpsgd_noise_for(setting.sizes, batches, steps, params.c1, eps, dlt)[0],),
                    lambda sigmas: dpsgd_event(setting.sizes, batches, steps, params.c1, sigmas[0]))


_SGD_FIELDS = _fields(SgdParameters, plus=("batch0",), minus=("full_batch", "n_total", "random_round", "weighting",
                                                             "steps"))
register(Algorithm("dp-sgd", "DP-SGD, mini-batches sampled without replacement", SgdParameters, _parse_sgd(False),
                   _SGD_FIELDS, releases=_sgd_releases, runner=run_sgd, models=frozenset({"logreg", "cnn"})))
register(Algorithm("rrpsgd", "DP-SGD whose output is θ_R, R uniform (random-round private SGD)", SgdParameters,
                   _parse_sgd(True), _SGD_FIELDS, releases=_sgd_releases, runner=run_sgd))


# -- full-batch gradient perturbation: DP-GD, Jayaraman et al. 2018, WD-DP (paper 000) -------------------------

def _parse_full_batch(weighting: str):
    def parse(training: dict, parties: int, passes: float) -> SgdParameters:
        return SgdParameters(steps=_full_batch_steps(training, passes), full_batch=True, n_total=1,
                             weighting=weighting, **training)
    return parse


def _full_batch_releases(scheme: str):
    def releases(params: SgdParameters, setting: Setting) -> Releases:
        steps = params.steps
        params = dataclasses.replace(params, n_total=setting.records)
        sensitivity = aggregate_noise_for(scheme, setting.sizes, steps, params.c1, setting.epsilon, setting.delta,
                                          calibration=setting.calibration).sensitivity

        def calibrate(eps: float, dlt: float) -> tuple[float]:
            if setting.calibration != "certified":  # the paper's formula at the target, certified anyway
                eps, dlt = setting.epsilon, setting.delta
            return (aggregate_noise_for(scheme, setting.sizes, steps, params.c1, eps, dlt,
                                        calibration=setting.calibration).sigma,)

        return Releases(steps, params, float(steps), (ReleaseKind("releases 1..T", sensitivity, steps),), calibrate,
                        lambda sigmas: full_batch_gaussian_event(sigmas[0], sensitivity, steps),
                        {"sensitivity": sensitivity})
    return releases


_FULL_BATCH_FIELDS = _SGD_FIELDS - {"batch", "batch0"}
for _name, _scheme, _weighting, _summary, _calibrations in (
        ("dp-gd", "wd-dp", "records", "DP-GD: full-batch gradient descent, every record weighs 1/n", ("certified",)),
        ("jayaraman", "jayaraman", "parties", "Jayaraman et al. 2018: full batch, every party weighs 1/m",
         ("certified", "paper")),
        ("wd-dp", "wd-dp", "records", "WD-DP (paper 000): full batch, parties weighted n_j/n inside the MPC",
         ("certified", "paper"))):
    register(Algorithm(_name, _summary, SgdParameters, _parse_full_batch(_weighting), _FULL_BATCH_FIELDS,
                       releases=_full_batch_releases(_scheme), runner=run_sgd, full_batch=True,
                       calibrations=_calibrations))


# -- central-only algorithms ----------------------------------------------------------------------------------

def _run_dpagd(shards: Sequence, params: AgdParameters, setting: Setting) -> CentralRun:
    rho, certificate = zcdp_budget_for(setting.epsilon, setting.delta)
    result = run_dpagd(shards, dataclasses.replace(params, rho_total=rho), dim=setting.dim)
    return CentralRun(result, certificate, len(result.iterates) - 1, result.data_passes,
                      {"bytes_per_party": 0, "rho_zcdp": rho}, not_certified_because=DPAGD_NOT_CERTIFIED)


DPAGD_NOT_CERTIFIED = (
    "DP-AGD's zCDP accounting holds for exact real-valued Gaussian noise and an exact exponential mechanism; the run "
    "releases float64 Box–Muller Gaussians and float Gumbel-max selections, whose rounding no certificate here "
    "covers, so its ε (for idealised noise, epsilon_idealised_noise) is not certified")


register(Algorithm(
    "dp-agd", "DP-AGD (Lee and Kifer 2018), adaptive step sizes under zCDP", AgdParameters,
    lambda training, parties, passes: AgdParameters(**training), _fields(AgdParameters, minus=("rho_total",)),
    run_central=_run_dpagd, passes_required=False,
    central_only="a central baseline (its step-size selection has no MPC counterpart here)"))


def _run_local(shards: Sequence, params: SgdParameters, setting: Setting) -> CentralRun:
    steps = params.steps
    params = dataclasses.replace(params, n_total=setting.records)
    noise = local_noise_for(setting.sizes, steps, params.c1, setting.epsilon, setting.delta,
                            calibration=setting.calibration, dim=setting.dim)
    warm_up()
    assert noise.releases is not None  # (dim given: the releases on their grids)
    result = run_local_then_average(shards, params, noise.releases, dim=setting.dim)
    return CentralRun(result, noise.certificate, steps, float(steps),
                      {"bytes_per_party": 0, "sigma_by_party": list(noise.sigmas),
                       "epsilon_by_party": [c.epsilon for c in noise.certificates]})


register(Algorithm(
    "wd-dp-local", "WD-DP's Algorithm 1 as written (paper 000): parties train alone with local noise, then average",
    SgdParameters, _parse_full_batch("records"), _FULL_BATCH_FIELDS, run_central=_run_local, full_batch=True,
    calibrations=("certified", "paper"),
    central_only="paper 000's Algorithm 1 as written: parties train alone and release local models, so there is "
                 "no secure step to run"))
