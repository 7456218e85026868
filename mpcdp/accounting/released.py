"""The certificate of a training run as its bits are opened: every release kind on its grid, calibrated and
certified with its integer sensitivity, plus the sampler's residual.

A run opens rows of one or more *release kinds* (DP-SRM: release 0 with sensitivity 2·C1/B0, then T releases
with 2·C_eff/B; DP-SGD and the full-batch algorithms: T releases of one kind). Each kind is a
:class:`~mpcdp.accounting.grid.GridRelease`: the sum rounded to a 2^-p grid, integer sensitivity Δ_int, and
discrete Gaussian noise from :mod:`mpcdp.noise.discrete_gaussian`. Calibration (:func:`calibrate_on_grid`):
1. reserve the sampler's residual over the D noise coordinates the run opens (:func:`~mpcdp.accounting.grid.reserve`);
2. calibrate the continuous accountant to what is left, giving a noise multiplier z per kind;
3. sample with σ_units >= z·Δ_int, so the released noise multiplier σ_units/Δ_int is at least z;
4. certify again with the released noise multipliers (:func:`certify_on_grid`), and add the residual.
The same path certifies every training mechanism: what differs (the per-party sampler plan, the residual, the
noise multiplier the accountant certifies, the accountant itself, a common scale-up of the calibrated σs) is a
:class:`GridAccounting` parameter — :data:`DGAUSS` here, ``DISTRIBUTED`` in :mod:`mpcdp.accounting.distributed_noise`.
The printed (ε, δ) is the sum, and :attr:`~mpcdp.accounting.certify.Certificate.pieces` holds every term, the
grid of each kind, and the versions of the mechanism and the accountant.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import math
from typing import TYPE_CHECKING, Callable, Sequence

if TYPE_CHECKING:
    import dp_accounting

from mpcdp.accounting.certify import Certificate, certify
from mpcdp.accounting.grid import GridPlan, GridRelease, GridSampler, Residual, eta_bound, reserve, residual
from mpcdp.errors import ConfigError
from mpcdp.validation import check_integer
from mpcdp.noise import discrete_gaussian as dg
from mpcdp.noise.fixed_point import SIGMA_UNITS

# What produced a certificate; a recorded result carries both. Change MECHANISM whenever the released
# distribution changes (grid, rounding, sampler constants) and ACCOUNTANT whenever the certification does.
MECHANISM = ("dgauss-grid/3: nearest rounding to 2^-p per party, Δ_int = ceil(Δ·2^p + √d), discrete Gaussian "
             "sampler (9 pieces, 6 bit groups (the first factor on t's bits 8..1/4), cut t >= 48, thresholds "
             "multiples of 2^d within 2^-42 (the first factor's nearest integers, 2^-40.5), the low factor "
             "without T's bits below 2^-42; dgauss-grid/1: 5 doubling pieces, thresholds to 2^-62, the low factor on "
             "every bit)")
ACCOUNTANT = (f"mpcdp-certify/3 (without-replacement Gaussians by the PLD accountant; round(σZ) reference, residual ε + 2Dη, e^(Dη)(δ + e^ε·D·tail)); "
              f"dp-accounting {importlib.metadata.version('dp-accounting')}")


@dataclasses.dataclass(frozen=True)
class ReleaseKind:
    """Rows of one kind that a run opens: ``rows`` noisy vectors, each with L2 sensitivity ``sensitivity``."""

    name: str
    sensitivity: float
    rows: int


@dataclasses.dataclass(frozen=True)
class GridNoise:
    """The calibrated releases (one :class:`GridRelease` per kind, in the kinds' order) and their certificate."""

    kinds: tuple[ReleaseKind, ...]
    releases: tuple[GridRelease, ...]
    certificate: Certificate

    def release(self, name: str) -> GridRelease:
        return self.releases[[k.name for k in self.kinds].index(name)]


@dataclasses.dataclass(frozen=True)
class Parties:
    """Who adds noise: ``parties`` m, of whom up to ``colluders`` t may pool what they know (0 <= t < m)."""

    parties: int
    colluders: int

    def __post_init__(self) -> None:
        check_integer(self.parties, "parties")
        check_integer(self.colluders, "colluders", minimum=0, maximum=self.parties - 1, maximum_name="parties − 1")

    @property
    def honest(self) -> int:
        return self.parties - self.colluders


ONE_PARTY = Parties(1, 0)


@dataclasses.dataclass(frozen=True)
class GridAccounting:
    """What the one calibrate/certify path needs from a mechanism (its sampler plan and residual as parameters).

    Attributes:
        name: the mechanism's noise mode (in error messages).
        id: the mechanism's version string, stamped into every certificate (``pieces['mechanism']``).
        plan: (release, parties) -> the sampler plan one party runs for ``release`` (its own type; what the
            grid and the reports read of it is :class:`~mpcdp.accounting.grid.GridPlan`).
        residual: ([(release, rows)], parties) -> the sampler's :class:`~mpcdp.accounting.grid.Residual`.
        noise_multiplier: (release, parties) -> the noise multiplier the accountant certifies for it.
        accountant: (event, δ) -> the continuous accountant's certificate.
        reserve_bounds: parties -> (η, tail) at the smallest σ a grid gives, for the reserve before calibrating.
        per_party: every party's noise coordinates count (m·D) rather than D.
        method: (accountant's certificate, parties) -> the certificate's method text.
        pieces: (accountant's certificate, parties) -> the mechanism's own certificate pieces.
        release_pieces: (release, z, parties) -> the noise terms of one release kind in ``pieces['releases']``.
        scale: (σs, event_of, ε', δ') -> one factor for every calibrated σ (None: 1, the calibrator's σ).
        remedy: what to change when the final certificate misses the target.
        sampler: the integer sampler of the calibrated releases (:class:`~mpcdp.accounting.grid.GridSampler`;
            each :class:`~mpcdp.accounting.grid.GridRelease` of :func:`calibrate_on_grid` carries it).
    """

    name: str
    id: str
    plan: Callable[[GridRelease, Parties], GridPlan]
    residual: Callable[[Sequence[tuple[GridRelease, int]], Parties], Residual]
    noise_multiplier: Callable[[GridRelease, Parties], float]
    accountant: Callable[[dp_accounting.DpEvent, float], Certificate]
    reserve_bounds: Callable[[Parties], tuple[float, float]]
    per_party: bool
    method: Callable[[Certificate, Parties], str]
    pieces: Callable[[Certificate, Parties], dict]
    release_pieces: Callable[[GridRelease, float, Parties], dict]
    scale: Callable | None = None
    remedy: str = "raise `delta`"
    sampler: GridSampler = dg.DISCRETE_GAUSSIAN


def check_kinds(kinds: Sequence[ReleaseKind]) -> tuple[ReleaseKind, ...]:
    """The release kinds of a run, refused unless every one has rows >= 1 and a sensitivity > 0."""
    kinds = tuple(kinds)
    if not kinds or any(k.rows < 1 or not k.sensitivity > 0 for k in kinds):
        raise ConfigError(f"every release kind needs rows >= 1 and a sensitivity > 0. Found {kinds!r}.")
    return kinds


def certify_on_grid(kinds: Sequence[ReleaseKind], releases: Sequence[GridRelease], delta: float,
                    event_of: Callable[[tuple[float, ...]], dp_accounting.DpEvent],
                    mechanism: GridAccounting | None = None, parties: Parties = ONE_PARTY) -> Certificate:
    """The certificate of releases on their grids: the mechanism's accountant at ``delta`` with the noise
    multipliers it certifies (``event_of`` takes one σ per kind, in the units of the kinds' sensitivities),
    plus the sampler's residual over every opened noise coordinate. ``mechanism``: :data:`DGAUSS` by default."""
    mech = mechanism or DGAUSS
    z = [mech.noise_multiplier(r, parties) for r in releases]
    accountant = mech.accountant(event_of(tuple(zi * r.sensitivity for zi, r in zip(z, releases))), delta)
    extra = mech.residual([(r, k.rows) for r, k in zip(releases, kinds)], parties)
    pieces = extra.delta_pieces(accountant.epsilon, accountant.delta)
    return Certificate(
        epsilon=accountant.epsilon + extra.epsilon,
        delta=accountant.delta + pieces["delta_truncation"] + pieces["delta_residual"],
        method=mech.method(accountant, parties),
        order=accountant.order,
        pieces={"mechanism": mech.id, "accountant": ACCOUNTANT, **mech.pieces(accountant, parties),
                "epsilon_accountant": accountant.epsilon, "epsilon_residual": extra.epsilon,
                "delta_gaussian": accountant.delta, **pieces, "noise_coordinates": extra.coordinates,
                "releases": [{"kind": k.name, "rows": k.rows, "dim": r.dim, "precision": r.precision,
                              "sensitivity": r.sensitivity, "sensitivity_units": r.sensitivity_units,
                              **mech.release_pieces(r, zi, parties), "rounding_overhead": r.rounding_overhead}
                             for k, r, zi in zip(kinds, releases, z)]})


def core_pieces(accountant: Certificate) -> dict:
    """What the continuous accountant adds to a grid certificate: its method, its own version (the PLD
    accountant's) and the RDP ε of the same event where it printed one."""
    extra = accountant.pieces or {}
    out = {"accountant_method": accountant.method}
    if "accountant" in extra:
        out["accountant_core"] = extra["accountant"]
    if "epsilon_rdp" in extra:
        out["epsilon_rdp"] = extra["epsilon_rdp"]
    return out


def calibrate_on_grid(kinds: Sequence[ReleaseKind], dim: int, epsilon: float, delta: float, *,
                      calibrate: Callable[[float, float], Sequence[float]],
                      event_of: Callable[[tuple[float, ...]], dp_accounting.DpEvent],
                      mechanism: GridAccounting | None = None, parties: Parties = ONE_PARTY) -> GridNoise:
    """Noise for every release kind so that the released bits are (ε, δ)-DP (for ``mechanism``, default
    :data:`DGAUSS`, against the coalitions ``parties`` allows).

    Args:
        kinds: the release kinds of the run.
        dim: d, the coordinates of every release.
        epsilon, delta: the target.
        calibrate: (ε', δ') -> one σ per kind (real units) whose continuous mechanism the accountant certifies
            at (ε', δ'); the algorithm's own calibrator.
        event_of: one σ per kind -> the run's dp-accounting event.

    Raises:
        ConfigError: the target leaves nothing after the residual, or a σ is outside the grid's range.
    """
    mech = mechanism or DGAUSS
    kinds = check_kinds(kinds)
    coordinates = (parties.parties if mech.per_party else 1) * dim * sum(k.rows for k in kinds)
    epsilon_left, delta_left = reserve(epsilon, delta, coordinates, *mech.reserve_bounds(parties))
    sigmas = tuple(calibrate(epsilon_left, delta_left))
    scale = 1.0 if mech.scale is None else mech.scale(sigmas, event_of, epsilon_left, delta_left)
    releases = tuple(GridRelease(k.sensitivity, dim, scale * s / k.sensitivity, mech.sampler)
                     for k, s in zip(kinds, sigmas))
    certificate = certify_on_grid(kinds, releases, delta_left, event_of, mech, parties)
    if certificate.epsilon > epsilon or certificate.delta > delta:
        raise ConfigError(f"{mech.name} noise certifies ({certificate.epsilon:.6g}, "
                          f"{certificate.delta:.3g}), above the target ({epsilon}, {delta}): {mech.remedy}")
    return GridNoise(kinds, releases, certificate)


def _dgauss_bounds(parties: Parties) -> tuple[float, float]:
    return eta_bound(), dg.plan_for(SIGMA_UNITS / math.sqrt(2)).truncated_mass * 1.01


DGAUSS = GridAccounting(
    name="dgauss", id=MECHANISM,
    plan=lambda release, parties: release.plan,
    residual=lambda releases, parties: residual(list(releases)),
    noise_multiplier=lambda release, parties: release.released_noise_multiplier,
    accountant=certify,
    reserve_bounds=_dgauss_bounds,
    per_party=False,
    method=lambda accountant, parties: (f"{accountant.method}, on the release grid with integer sensitivity, plus "
                                        f"the sampler's residual"),
    pieces=lambda accountant, parties: core_pieces(accountant),
    release_pieces=lambda r, z, parties: {"sigma_units": r.plan.sigma, "noise_multiplier": z, "sigma": r.sigma},
    sampler=dg.DISCRETE_GAUSSIAN)
"""The in-MPC discrete Gaussian on the release grid (noise mode ``dgauss``)."""
