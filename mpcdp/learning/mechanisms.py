"""Every way of making noise, as records of one registry, :data:`MECHANISMS` (``[noise] mode`` of a protocol,
``mpcdp noise --mode``, ``mpcdp cost --noise``, ``mpcdp party --noise``).

A :class:`Mechanism` is what training certifies and draws and what the cost harness measures, in one record,
so ``mpcdp cost --noise distributed`` draws exactly what a ``distributed`` training run draws. Training
mechanisms (``training`` True): ``dgauss`` (the default; the exact discrete Gaussian inside the MPC) and
``distributed`` (every party's own discrete Gaussian of σ/√(m − t)), whose members are in
:mod:`mpcdp.learning.noise_modes` and whose accounting is the one path of :mod:`mpcdp.accounting.released`.
Comparison-only samplers (``training`` False: not certified for training; their training members refuse):
``rou``, ``boxmuller`` and ``plaintext`` of :mod:`mpcdp.noise.modes`. Security model and declared cost: as each
member's module states them (semi-honest parties, non-colluding dealer; ``distributed``: at most t colluders).

Why here: a record needs the accountants (``calibrate``, ``certify``: :mod:`mpcdp.accounting`) and the
learning layer's noise rows, and the layering (tests/test_layers.py) lets only ``learning`` and above see
both; the samplers of :mod:`mpcdp.noise` stay below it as plain draw functions, registered here.

How to add a mechanism: write an object with every member of :class:`Mechanism` — a name, a version ``id``
(change it whenever the released distribution changes), the per-party sampler ``plan`` and its ``residual``,
``calibrate`` and ``certify`` (usually :func:`~mpcdp.learning.noise_modes.grid_calibrate` and
:func:`~mpcdp.learning.noise_modes.grid_certify` of a :class:`~mpcdp.accounting.released.GridAccounting` that
states its plan, residual and accountant), ``secure_rows`` and ``simulated_rows`` (the same distribution, in
the MPC and in plaintext), ``draw`` for ``mpcdp noise``/``cost``, and what the rest of mpcdp asks of it:
``drawn_by`` (who draws the noise: the run's ``noise_known_to``), ``circuit`` (its in-MPC protocol's version,
stamped in every record), ``sampler_passes`` and ``declared_cost`` (its sampling cost inside the MPC: the
estimate and the default time-out) — usually a :class:`MechanismRecord`, whose defaults say "drawn by every
party, nothing sampled inside the MPC" — and :func:`register` it (in a plugin: ``mpcdp --plugin MODULE``). Its docstring states its security model and
declared cost. A sampler that no accountant certifies registers with ``training=False``. Two complete examples,
one file each: tests/toy_sampler.py (a comparison-only sampler, named by ``mpcdp noise --mode`` and ``mpcdp cost
--noise``) and the ``every-party`` record of tests/toy_algorithm.py (a training mechanism, certified and run by
``mpcdp train``); tests/test_registry.py runs both through the command line.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any, Callable, Protocol, runtime_checkable

import numpy as np

from mpcdp import registry
from mpcdp.accounting.distributed_noise import DISTRIBUTED
from mpcdp.accounting.released import DGAUSS
from mpcdp.errors import ConfigError, InsecureSettingWarning
from mpcdp.learning import noise_modes as nm
from mpcdp.learning.release_noise import samples_per_pass
from mpcdp.noise import discrete_gaussian, secure_gaussian, who_knows
from mpcdp.noise.modes import NoiseBlock, draw_boxmuller, draw_plaintext, draw_rou
from mpcdp.noise.rou import ACCEPTANCE as ROU_ACCEPTANCE
from mpcdp.transport import costs
from mpcdp.validation import check_choice, check_integer, require_positive


@runtime_checkable
class Mechanism(Protocol):
    """A way to make noise (every record of :data:`MECHANISMS` has these members; checked at registration).

    Attributes:
        name: the protocol value and the command-line choice.
        id: the version string stamped into every certificate and report of a run with this noise.
        summary: one line for the help and the docs.
        training: certified for training (False: comparison only; the training members refuse).
        in_mpc: it runs among the parties (``draw`` needs a context).
        takes_colluders: it has a collusion threshold t (``[noise] colluders``).
        circuit: the version of the in-MPC protocol its secure draws run, stamped next to ``id`` in every record
            (empty: no protocol of its own inside the MPC).
        drawn_by: who draws its noise, one of :data:`mpcdp.noise.who_knows.DRAWN_BY` (what the run's
            ``noise_known_to`` says follows from it and the provider).
    """

    name: str
    id: str
    summary: str
    training: bool
    in_mpc: bool
    takes_colluders: bool
    circuit: str
    drawn_by: str

    def plan(self, release: Any, parties: Any) -> Any:
        """The sampler plan one party runs for a GridRelease, for a :class:`~mpcdp.accounting.released.Parties`
        (the mechanism's own type; what code outside the mechanism reads of it is
        :class:`~mpcdp.accounting.grid.GridPlan`)."""

    def residual(self, releases: Any, parties: Any) -> Any:
        """The sampler's Residual over [(release, rows)]."""

    def calibrate(self, kinds, dim, epsilon, delta, *, calibrate, event_of, parties, choice) -> Any:
        """The releases and their certificate (GridNoise) for the target (ε, δ); ``parties`` an int."""

    def certify(self, kinds, releases, delta, event_of, parties, choice) -> Any:
        """The certificate of releases already on their grids, for another event."""

    def secure_rows(self, ctx, release, rows, choice) -> Any:
        """This party's share (Shared, grid units) of ``rows`` × d noise values; every party calls it."""

    def simulated_rows(self, release, rows, choice, parties, seed, stream) -> Any:
        """The summed noise of ``rows`` × d values drawn in plaintext (int64 grid units)."""

    def draw(self, ctx, spec, count, shape) -> Any:
        """A NoiseBlock of ``shape`` for a :class:`NoiseSpec` (``mpcdp noise``, ``mpcdp cost``)."""

    def sampler_passes(self, release, values: int) -> list[int]:
        """The candidates of each sampling pass inside the MPC that draws ``values`` noise values of
        ``release`` (a GridRelease) for training (empty: nothing is sampled inside the MPC)."""

    def declared_cost(self, release, passes: list[int], *, replicated: bool) -> Any:
        """The declared cost (:class:`mpcdp.transport.costs.DeclaredCost`) of ``passes`` (from
        :meth:`sampler_passes`) on the noise committee; ``replicated``: multiplications by replicated resharing."""


def _not_for_training(name: str) -> Callable:
    def refuse(*args, **kwargs):
        raise ConfigError(f"noise mode {name!r} is for comparison only: it is not certified for training "
                          f"(training modes: {training_modes()})")
    return refuse


@dataclasses.dataclass(frozen=True, kw_only=True)
class MechanismRecord:
    """The shipped records' form of :class:`Mechanism`: its members as fields (see there)."""

    name: str
    id: str
    summary: str
    draw: Callable
    plan: Callable | None = None
    residual: Callable | None = None
    calibrate: Callable | None = None
    certify: Callable | None = None
    secure_rows: Callable | None = None
    simulated_rows: Callable | None = None
    training: bool = True
    in_mpc: bool = True
    takes_colluders: bool = False
    circuit: str = ""
    drawn_by: str = who_knows.EVERY_PARTY
    sampler_passes: Callable = dataclasses.field(default=lambda release, values: [])
    declared_cost: Callable = dataclasses.field(default=lambda release, passes, *, replicated: costs.DeclaredCost())
    acceptance: float | None = None  # optional: the analytic acceptance rate `mpcdp noise` checks (rou)
    authenticated: bool = False  # optional: `draw` MAC-checks every opening under security = "malicious"

    def __post_init__(self) -> None:
        who_knows.check_drawn_by(self.drawn_by, self.name)
        for member in ("plan", "residual", "calibrate", "certify", "secure_rows", "simulated_rows"):
            if getattr(self, member) is None:
                if self.training:
                    raise ConfigError(f"training mechanism {self.name!r} needs `{member}`")
                object.__setattr__(self, member, _not_for_training(self.name))


MECHANISMS: dict[str, Mechanism] = {}

_TYPES = {"name": str, "id": str, "summary": str, "training": bool, "in_mpc": bool, "takes_colluders": bool,
          "circuit": str, "drawn_by": str}


def register(record: Mechanism | MechanismRecord) -> Mechanism:
    """Add ``record`` under its name (a new name only), after checking it has every member of :class:`Mechanism`."""
    registry.check_members(record, Mechanism, _TYPES, "mechanism")
    who_knows.check_drawn_by(record.drawn_by, record.name)
    return registry.add(MECHANISMS, record.name, record, "mechanism")


def lookup(name: Any, field: str = "mode") -> Mechanism:
    return registry.find(MECHANISMS, name, field)


def by_id(mechanism_id: str) -> Mechanism | None:
    """The registered mechanism whose version is ``mechanism_id`` (None: none is, e.g. an older version)."""
    return next((m for m in MECHANISMS.values() if m.id == mechanism_id), None)


def training_modes() -> list[str]:
    return sorted(name for name, m in MECHANISMS.items() if m.training)


def in_mpc_modes() -> list[str]:
    """The names of the mechanisms that run among the parties (choices of `mpcdp cost` and `mpcdp party`)."""
    return [name for name, m in MECHANISMS.items() if m.in_mpc]


@dataclasses.dataclass(frozen=True)
class NoiseChoice:
    """A run's noise mode and its parameters, as the protocol's ``[noise]`` table gives them."""

    mode: str = "dgauss"
    colluders: int = 0

    def __post_init__(self) -> None:
        check_choice(self.mode, "mode", training_modes(), where=" in [noise]")
        check_integer(self.colluders, "colluders", minimum=0)
        if self.colluders and not MECHANISMS[self.mode].takes_colluders:
            raise ConfigError(f"[noise] `colluders` applies to {sorted(k for k, v in MECHANISMS.items() if v.takes_colluders)}"
                              f" only; mode {self.mode!r} draws its noise inside the MPC. Found {self.colluders}.")

    @property
    def record(self) -> Mechanism:
        return MECHANISMS[self.mode]


@dataclasses.dataclass(frozen=True, kw_only=True)
class NoiseSpec:
    """What noise to draw: ``sigma`` = noise_multiplier · ``sensitivity`` (both public).

    Attributes:
        sigma: standard deviation per coordinate, > 0.
        sensitivity: the L2 sensitivity of one row's release (for the event's noise multiplier), > 0.
        mode: a name in :data:`MECHANISMS`.
        colluders: t, the colluding parties ``distributed`` mode tolerates (0 <= t < m).
        uniform_bits: bits per uniform for ``rou`` (16..18).
        seed: reproducible (insecure) randomness for tests and simulation; None = OS CSPRNG.
    """

    sigma: float
    sensitivity: float = 1.0
    mode: str = "rou"
    colluders: int = 0
    uniform_bits: int = 16
    seed: int | None = None

    def __post_init__(self) -> None:
        check_choice(self.mode, "mode", MECHANISMS)
        require_positive(self, ("sigma", "sensitivity"))
        check_integer(self.colluders, "colluders", minimum=0)
        check_integer(self.uniform_bits, "uniform_bits", minimum=16, maximum=18)
        if self.seed is not None:
            warnings.warn("reproducible noise seed set: the noise is predictable — for tests and simulation only",
                          InsecureSettingWarning, stacklevel=3)


def sample_noise(ctx, spec: NoiseSpec, shape: tuple[int, ...]) -> NoiseBlock:
    """Noise of ``shape`` for ``spec`` (every party calls it together; ``ctx`` may be None for plaintext)."""
    mechanism = MECHANISMS[spec.mode]
    if mechanism.in_mpc and ctx is None:
        raise ValueError(f"mode {spec.mode!r} runs inside the MPC and needs a context")
    return mechanism.draw(ctx, spec, int(np.prod(shape)), shape)


def _dgauss_passes(release: Any, values: int) -> list[int]:
    """The in-MPC sampler's passes for ``values`` samples, in chunks of one pass (as
    :func:`~mpcdp.learning.release_noise.secure_rows` draws them; the rare shortfall pass left out)."""
    plan = discrete_gaussian.plan_of(release)
    chunk, passes = samples_per_pass(plan), []
    while values > 0:
        count = min(values, chunk)
        passes.append(min(int(secure_gaussian.candidates_wanted(plan, count)), secure_gaussian.MAX_PASS))
        values -= count
    return passes


def _dgauss_cost(release: Any, passes: list[int], *, replicated: bool) -> costs.DeclaredCost:
    """Each pass of :func:`_dgauss_passes` is one sampler call (a chunk of ``secure_rows``), its own committee
    scope: their costs are added, so the star kings' count restarts at each (``DeclaredCost.king_resets``)."""
    plan = discrete_gaussian.plan_of(release)
    return sum((secure_gaussian.declared_cost([n], plan, replicated=replicated) for n in passes), costs.DeclaredCost())


register(MechanismRecord(
    name="dgauss", id=DGAUSS.id, draw=nm.draw_dgauss, circuit=secure_gaussian.CIRCUIT, authenticated=True,
    drawn_by=who_knows.COMMITTEE, sampler_passes=_dgauss_passes, declared_cost=_dgauss_cost,
    summary="the exact discrete Gaussian sampled inside the MPC by the noise committee, parties 0..c-1 (known only "
            "to the dealer with one member or to every member together; under honest-majority to any two of parties "
            "0-2: the run's `noise_known_to`); what training releases",
    plan=DGAUSS.plan, residual=DGAUSS.residual, calibrate=nm.grid_calibrate(DGAUSS), certify=nm.grid_certify(DGAUSS),
    secure_rows=nm.dgauss_secure, simulated_rows=nm.dgauss_simulated))
register(MechanismRecord(
    name="rou", id="rou/1: ratio-of-uniforms inside the MPC (not certified)", draw=draw_rou, training=False,
    acceptance=ROU_ACCEPTANCE,
    summary="ratio-of-uniforms inside the MPC (holes in its tails: for cost comparison only)"))
register(MechanismRecord(
    name="distributed", id=DISTRIBUTED.id, draw=nm.draw_distributed, takes_colluders=True,
    drawn_by=who_knows.EACH_PARTY,
    summary="every party adds its own discrete Gaussian of σ/√(m − t) to its share (private against any "
            "t = `colluders` parties; no sampling inside the MPC)",
    plan=DISTRIBUTED.plan, residual=DISTRIBUTED.residual, calibrate=nm.grid_calibrate(DISTRIBUTED),
    certify=nm.grid_certify(DISTRIBUTED), secure_rows=nm.distributed_secure,
    simulated_rows=nm.distributed_simulated))
register(MechanismRecord(
    name="boxmuller", id="boxmuller/1: CrypTen's randn (not certified)", draw=draw_boxmuller, training=False,
    summary="CrypTen's Box–Muller (measurably not N(0, σ²): comparison only)"))
register(MechanismRecord(
    name="plaintext", id="plaintext/1: float64 Gaussian in plaintext (not certified)", draw=draw_plaintext,
    training=False, in_mpc=False, drawn_by=who_knows.THIS_PROCESS,
    summary="float64 Gaussian in plaintext (the simulated equivalent; protects nothing)"))
