"""The released mechanism as bits: a noisy sum on a 2^-p grid, its integer sensitivity, and what the certificate
adds for the sampler.

A noisy release opens r = Σ_j enc_p(term_j) + N, an integer vector read at resolution 2^-p:
* enc_p rounds each coordinate to the nearest multiple of 2^-p, deterministically on each party. Replacing one
  record changes one party's term by at most Δ in L2. Each coordinate of the encoded term then moves by at
  most |change|·2^p + 1 units, so by Minkowski the encoded sum moves by at most
  **Δ_int = ⌈Δ·2^p + √d⌉** units. Deterministic rounding is used rather than randomized rounding with a
  conditional norm bound (Kairouz, Liu, Steinke 2021). The √d term is then a fixed, public overhead, and
  :func:`release_precision` makes it small by choosing p so that the noise is about 2^21 units.
  The overhead is √d·z/σ_units, below 1e-3 for every shipped protocol. Randomized rounding would need a
  re-drawn rounding whose bound still grows with √d and a δ for its failure.
* N is drawn by the release's sampler (:class:`GridSampler`, the mechanism's) with σ_units = z·Δ_int (z the
  calibrated noise multiplier). For every shipped mechanism that is the sampler of
  :mod:`mpcdp.noise.discrete_gaussian`: on its support S its pmf is within e^(±η) of R = round(σ·Z), the rounded
  continuous Gaussian, and it is 0 off S.

The grid is mechanism-neutral: :class:`GridRelease` is the grid, Δ_int and the noise scale, plus the sampler that
draws it, whose plan (of the mechanism's own type) the grid and every consumer outside the mechanism read only
through :class:`GridPlan`. A mechanism's accounting (``GridAccounting`` of :mod:`mpcdp.accounting.released`)
names its sampler, its plan and its residual. :func:`residual`, :func:`eta_bound` and :func:`reserve`'s
defaults below are the discrete Gaussian's.

Certificate (the discrete Gaussian's). With R in place of the sampler, r is a post-processing of the continuous
Gaussian mechanism with sensitivity Δ_int (the rounding of s + σZ to integers, s integer), so the continuous
accountants (:mod:`mpcdp.accounting.certify`) certify it with noise multiplier σ_units/Δ_int: (ε, δ). For the
sampler, over the D noise coordinates a run opens (any adaptivity: the noise is independent of everything
before it), and every event E:
  M̃_x(E) <= e^(Dη)·M_x(E)   and   M_x(E) <= e^(Dη)·M̃_x(E) + D·tail,
tail = R's mass off S. Chaining the two, the released mechanism is
  (ε + 2Dη, e^(Dη)·(δ + e^ε·D·tail))-DP.
That is :func:`residual`, printed as separate pieces next to the accountant's δ. η is about 1e-11 and the tail
about 1e-24, so the pieces are of order 1e-5 in ε and 1e-11 in δ for a million coordinates.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Protocol, runtime_checkable

from mpcdp.errors import ConfigError
from mpcdp.validation import check_integer, check_number
from mpcdp.noise import discrete_gaussian as dg
from mpcdp.noise.fixed_point import PRECISION_MAX, SIGMA_UNITS, encode, release_precision  # noqa: F401 - re-exported

def integer_sensitivity(sensitivity: float, dim: int, precision: int) -> int:
    """Δ_int = ⌈Δ·2^p + √d⌉: the L2 distance, in grid units, between the encoded sums of neighbouring inputs."""
    check_number(sensitivity, "sensitivity", low=0)
    check_integer(dim, "dim")
    exact = sensitivity * 2.0**precision + math.sqrt(dim)
    return math.ceil(exact * (1 + 1e-12))  # float rounding of the product may only raise it


@runtime_checkable
class GridPlan(Protocol):
    """What the release grid and every mechanism-neutral consumer (reports, the estimate, the accountant's call)
    read of a sampler plan: the public constants of one mechanism's integer sampler for one noise scale. The
    rest of a plan (pieces, bit groups, rates, ...) is its mechanism's own: only code that runs that sampler
    (its record's members, its circuit) reads it."""

    @property
    def sigma(self) -> float:
        """The standard deviation of the integer noise this plan draws, in grid units (>= the scale asked for)."""
        ...


@runtime_checkable
class GridSampler(Protocol):
    """A mechanism's integer sampler on the release grid: one :class:`GridPlan` per noise scale. A frozen
    dataclass: its fields are public, and a secure run's handshake compares them with the rest of the releases."""

    @property
    def name(self) -> str:
        """What it is, in words (in error messages and a handshake's description of the releases)."""
        ...

    def plan_for(self, sigma_units: float) -> GridPlan:
        """The plan for noise of (at least) ``sigma_units`` grid units."""
        ...


@dataclasses.dataclass(frozen=True)
class GridRelease:
    """One kind of noisy release as opened: its grid, its integer sensitivity and noise scale, and the sampler
    that draws its noise. Mechanism-neutral: what the noise is comes from ``sampler`` (its :class:`GridPlan`).

    Attributes:
        sensitivity: Δ, the L2 sensitivity of the real-valued sum (the algorithm's, e.g. 2C/B).
        dim: d, the coordinates of one release.
        noise_multiplier: z, the noise the accountant was calibrated for (σ = z·Δ in real units).
        sampler: the mechanism's integer sampler (:class:`GridSampler`; its ``GridAccounting.sampler``); the
            default, the discrete Gaussian of :mod:`mpcdp.noise.discrete_gaussian`, is every shipped mechanism's.
    """

    sensitivity: float
    dim: int
    noise_multiplier: float
    sampler: GridSampler = dg.DISCRETE_GAUSSIAN

    def __post_init__(self) -> None:
        check_number(self.noise_multiplier, "noise_multiplier", low=0)
        if not (isinstance(self.sampler, GridSampler) and dataclasses.is_dataclass(self.sampler)):
            raise ConfigError(f"`sampler` must be a dataclass with a `name` and `plan_for(sigma_units)` (its fields "
                              f"enter the run's handshake). Found {type(self.sampler).__name__}.")

    @property
    def precision(self) -> int:
        return release_precision(self.noise_multiplier * self.sensitivity)

    @property
    def sensitivity_units(self) -> int:
        return integer_sensitivity(self.sensitivity, self.dim, self.precision)

    @property
    def sigma_units(self) -> float:
        """z·Δ_int: the integer noise scale asked of the sampler, in grid units."""
        return self.noise_multiplier * self.sensitivity_units

    @property
    def plan(self) -> GridPlan:
        """The sampler's plan for :attr:`sigma_units` (its own type; read through :class:`GridPlan`)."""
        return self.sampler.plan_for(self.sigma_units)

    @property
    def released_noise_multiplier(self) -> float:
        """σ_units / Δ_int of the noise really sampled (>= z)."""
        return self.plan.sigma / self.sensitivity_units

    @property
    def sigma(self) -> float:
        """The noise's standard deviation in real units, σ_units·2^-p."""
        return self.plan.sigma * 2.0**-self.precision

    @property
    def sigma_equivalent(self) -> float:
        """The σ to give an accountant that takes Δ (real): released noise multiplier × Δ."""
        return self.released_noise_multiplier * self.sensitivity

    @property
    def rounding_overhead(self) -> float:
        """Δ_int / (Δ·2^p) − 1: the relative cost of the rounding in noise."""
        return self.sensitivity_units / (self.sensitivity * 2.0**self.precision) - 1


def eta_bound() -> float:
    """The largest per-coordinate η of any plan :func:`release_precision` can produce (σ >= 2^20.5 units,
    and up to √d·z above it)."""
    plan = dg.plan_for(SIGMA_UNITS / math.sqrt(2))
    return plan.eta_rounded + 2 * plan.truncated_mass


@dataclasses.dataclass(frozen=True)
class Residual:
    """What the sampler adds to an accountant's (ε, δ) over ``coordinates`` opened noise coordinates."""

    coordinates: int
    eta: float
    tail: float

    @property
    def epsilon(self) -> float:
        return 2 * self.coordinates * self.eta

    def delta_pieces(self, epsilon: float, delta: float) -> dict[str, float]:
        """The δ terms beyond the accountant's: the truncation and the ratio's effect on δ."""
        grow = math.expm1(self.coordinates * self.eta)
        return {"delta_truncation": (1 + grow) * math.exp(epsilon) * self.coordinates * self.tail,
                "delta_residual": grow * delta}


def residual(releases: list[tuple[GridRelease, int]]) -> Residual:
    """The discrete Gaussian's residual (the in-MPC sampler's, against round(σZ)) of a run that opens ``count``
    rows of each release kind (pairs of (release, count))."""
    coordinates = sum(r.dim * count for r, count in releases)
    plans = [dg.plan_of(r) for r, _ in releases]
    eta = max(p.eta_rounded + 2 * p.truncated_mass for p in plans)
    tail = max(p.truncated_mass for p in plans)
    return Residual(coordinates, eta, tail)


def reserve(epsilon: float, delta: float, coordinates: int, eta: float | None = None,
            tail: float | None = None) -> tuple[float, float]:
    """(ε, δ) to calibrate the accountant for, so that adding the residual of ``coordinates`` noise coordinates
    stays within the target (η at its bound, the truncation at ε's e^ε). ``eta``, ``tail``: a mechanism's bounds
    at the smallest σ a release grid gives (default: the in-MPC sampler's, :func:`eta_bound`)."""
    eta = eta_bound() if eta is None else eta
    tail = dg.plan_for(SIGMA_UNITS / math.sqrt(2)).truncated_mass * 1.01 if tail is None else tail
    eps = epsilon - 2 * coordinates * eta
    grow = math.exp(coordinates * eta)
    dlt = delta / grow - math.exp(epsilon) * coordinates * tail
    if eps <= 0 or dlt <= 0:
        raise ConfigError(f"`epsilon` = {epsilon} and `delta` = {delta} leave nothing for the accountant after the "
                          f"sampler's residual over {coordinates} noise coordinates (ε residual {2 * coordinates * eta:.3g}, "
                          f"truncation e^ε·D·tail = {math.exp(epsilon) * coordinates * tail:.3g}): lower `epsilon` or "
                          f"raise `delta`")
    return eps, dlt
