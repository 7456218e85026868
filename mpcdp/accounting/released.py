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
The printed (ε, δ) is the sum, and :attr:`~mpcdp.accounting.certify.Certificate.pieces` holds every term, the
grid of each kind, and the versions of the mechanism and the accountant.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
from typing import Callable, Sequence

import dp_accounting

from mpcdp.accounting.certify import Certificate, certify
from mpcdp.accounting.grid import GridRelease, reserve, residual
from mpcdp.errors import ConfigError

# What produced a certificate; a recorded result carries both. Change MECHANISM whenever the released
# distribution changes (grid, rounding, sampler constants) and ACCOUNTANT whenever the certification does.
MECHANISM = ("dgauss-grid/1: nearest rounding to 2^-p per party, Δ_int = ceil(Δ·2^p + √d), discrete Gaussian "
             "sampler (5 pieces, 7 bit groups, cut t >= 48)")
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


def certify_on_grid(kinds: Sequence[ReleaseKind], releases: Sequence[GridRelease], delta: float,
                    event_of: Callable[[tuple[float, ...]], dp_accounting.DpEvent]) -> Certificate:
    """The certificate of releases on their grids: the accountant at ``delta`` with the released noise
    multipliers (``event_of`` takes one σ per kind, in the units of the kinds' sensitivities), plus the
    sampler's residual over every opened coordinate."""
    accountant = certify(event_of(tuple(r.sigma_equivalent for r in releases)), delta)
    extra = residual([(r, k.rows) for r, k in zip(releases, kinds)])
    pieces = extra.delta_pieces(accountant.epsilon, accountant.delta)
    return Certificate(
        epsilon=accountant.epsilon + extra.epsilon,
        delta=accountant.delta + pieces["delta_truncation"] + pieces["delta_residual"],
        method=f"{accountant.method}, on the release grid with integer sensitivity, plus the sampler's residual",
        order=accountant.order,
        pieces={"mechanism": MECHANISM, "accountant": ACCOUNTANT, **core_pieces(accountant),
                "epsilon_accountant": accountant.epsilon, "epsilon_residual": extra.epsilon,
                "delta_gaussian": accountant.delta, **pieces, "noise_coordinates": extra.coordinates,
                "releases": [{"kind": k.name, "rows": k.rows, "dim": r.dim, "precision": r.precision,
                              "sensitivity": r.sensitivity, "sensitivity_units": r.sensitivity_units,
                              "sigma_units": r.plan.sigma, "noise_multiplier": r.released_noise_multiplier,
                              "sigma": r.sigma, "rounding_overhead": r.rounding_overhead}
                             for k, r in zip(kinds, releases)]})


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
                      event_of: Callable[[tuple[float, ...]], dp_accounting.DpEvent]) -> GridNoise:
    """Noise for every release kind so that the released bits are (ε, δ)-DP.

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
    kinds = tuple(kinds)
    if not kinds or any(k.rows < 1 or not k.sensitivity > 0 for k in kinds):
        raise ConfigError(f"every release kind needs rows >= 1 and a sensitivity > 0. Found {kinds!r}.")
    coordinates = dim * sum(k.rows for k in kinds)
    epsilon_left, delta_left = reserve(epsilon, delta, coordinates)
    sigmas = tuple(calibrate(epsilon_left, delta_left))
    releases = tuple(GridRelease(k.sensitivity, dim, s / k.sensitivity) for k, s in zip(kinds, sigmas))
    return GridNoise(kinds, releases, certify_on_grid(kinds, releases, delta_left, event_of))
