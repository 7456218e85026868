"""The certificate of distributed noise: every party adds its own discrete Gaussian to its share, and the
noise no coalition of at most t parties knows protects the sum.

Mechanism (noise mode ``distributed``, :mod:`mpcdp.learning.noise_modes`). A release kind of noise multiplier
z, integer sensitivity Δ_int and σ_units = z·Δ_int (:class:`~mpcdp.accounting.grid.GridRelease`) is opened as
r = Σ_j (enc_p(term_j) + N_j), where each of the m parties draws N_j, d coordinates, from the sampler of
:mod:`mpcdp.noise.discrete_gaussian` with σ_p >= σ_units/√(m − t), in plaintext from its own CSPRNG. Nothing
is communicated for the noise (it rides on the masked input), and no dealer is involved.

Threat: any coalition C of at most t parties, which knows its own N_j and may subtract them. What protects
the sum from C is the noise of the k' = m − |C| >= k = m − t other parties.

Certificate, for every such C:
1. Reference: each honest N_j exactly D_{σ_p}, the discrete Gaussian. For a sum of k i.i.d. D_{σ_p} and
   integer inputs at L2 distance at most Δ_int, Kairouz, Liu and Steinke 2021 (Proposition 14) bound the
   Rényi divergence of every order α >= 1 by α·Δ_int²/(2kσ_p²) + τ·d, τ = 10·Σ_{i=1}^{k−1} e^(−2π²σ_p²·i/(i+1)).
   With r = 2τ·d·kσ_p²/Δ_int² that is at most the RDP curve α·Δ_int²/(2σ_eff²) of a Gaussian with
   σ_eff² = kσ_p²/(1 + r) (α >= 1). More honest parties only add independent noise (post-processing), so the
   k = m − t case covers every smaller coalition. The run is then certified from that RDP curve alone, with
   noise multiplier z_eff = σ_eff/Δ_int for each kind (:func:`honest_noise_multiplier`): sampling without
   replacement by the general bound of Wang, Balle and Kasiviswanathan 2019 (Thm 9,
   :mod:`mpcdp.accounting.wor_general`), which needs only the base's RDP curve. dp-accounting's sampled-Gaussian
   formula (their Thm 27) is not used — its higher-order terms hold for an exact Gaussian base only — nor is the
   exact μ-GDP conversion: the sum of discrete Gaussians is not a Gaussian.
2. Sampler: on its support S the sampler's pmf is within e^(±η_dg) of D_{σ_p}(·|S) (enumerated,
   :attr:`~mpcdp.noise.discrete_gaussian.DiscreteGaussianPlan.eta_dg`), so within e^(±(η_dg + 2·tail)) of D_{σ_p},
   where tail >= D_{σ_p}'s mass off S. By Poisson summation Σ_n e^(−n²/2σ²) >= √(2π)·σ, so
   tail <= erfc((edge − 1)/(σ_p·√2)), edge the support's first excluded |n|. Over the at most m·D honest
   noise coordinates of a run that opens D coordinates, the chain of :mod:`mpcdp.accounting.grid` gives
   (ε + 2·mD·η, e^(mD·η)·(δ + e^ε·mD·tail)) (:func:`residual`).

Compared with the in-MPC sampler (``dgauss``): no sampling cost inside the MPC, no dealer trusted with the
noise, but more noise in total, σ_units·√(m/(m − t)) when nobody colludes, and a guarantee that holds only
against coalitions of at most t parties.

Calibration and certification run the one path of :mod:`mpcdp.accounting.released`
(:func:`~mpcdp.accounting.released.calibrate_on_grid`, :func:`~mpcdp.accounting.released.certify_on_grid`)
with :data:`DISTRIBUTED`, this mechanism's plan, residual, noise multiplier and accountant, as parameters; the
one difference in calibration is :func:`_scale`: the algorithm's σs scaled up by one common factor until the
RDP general bound certifies them (the algorithm's calibrator may use a tighter, Gaussian-only accountant).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable, Sequence

if TYPE_CHECKING:
    import dp_accounting

from mpcdp.accounting.certify import Certificate, calibrate as calibrate_scale
from mpcdp.accounting.grid import GridRelease, Residual
from mpcdp.accounting.released import (GridAccounting, GridNoise, Parties, ReleaseKind, calibrate_on_grid,
                                       certify_on_grid)
from mpcdp.accounting.wor_general import certify_general
from mpcdp.noise import discrete_gaussian as dg
from mpcdp.noise.fixed_point import SIGMA_UNITS

__all__ = ["DISTRIBUTED", "MECHANISM", "Parties", "calibrate_distributed", "certify_distributed",
           "honest_noise_multiplier", "party_plan", "residual"]

MECHANISM = ("ddgauss-grid/3: nearest rounding to 2^-p per party, Δ_int = ceil(Δ·2^p + √d), every party adds "
             "its own discrete Gaussian sample (9 pieces, 6 bit groups, cut t >= 48, thresholds within 2^-42, the first "
             "factor's 2^-40.5) of "
             "σ_units/√(m − t); "
             "KLS 2021 Prop. 14 for the honest parties' sum")


def party_plan(release: GridRelease, parties: Parties) -> dg.DiscreteGaussianPlan:
    """The sampler each party runs for ``release``: σ_p >= σ_units/√(m − t) grid units."""
    return dg.plan_for(release.noise_multiplier * release.sensitivity_units / math.sqrt(parties.honest))


def _tail(plan: dg.DiscreteGaussianPlan) -> float:
    """An upper bound on D_σ's mass off the sampler's support."""
    return math.erfc((plan.support_edge - 1) / (plan.sigma * math.sqrt(2)))


def honest_noise_multiplier(release: GridRelease, parties: Parties) -> float:
    """z_eff: the Gaussian noise multiplier whose RDP curve bounds the honest parties' summed noise."""
    plan = party_plan(release, parties)
    k, sigma, delta_int = parties.honest, plan.sigma, release.sensitivity_units
    # log τ <= log(10·(k − 1)) − π²σ²  (every term e^(−2π²σ²·i/(i+1)) <= e^(−π²σ²))
    if k == 1:
        ratio = 0.0
    else:
        log_r = math.log(20 * (k - 1) * release.dim * k * sigma * sigma / delta_int**2) - (math.pi * sigma) ** 2
        ratio = math.exp(log_r) if log_r > -700 else 0.0
    shrink = 1 / math.sqrt(1 + ratio) if ratio > 0 else 1.0
    return math.sqrt(k) * sigma / delta_int * shrink * (1 - 2.0**-40)  # the last factor: float rounding


def residual(releases: Sequence[tuple[GridRelease, int]], parties: Parties) -> Residual:
    """The sampler's residual over every party's noise coordinates (m·D)."""
    plans = [party_plan(r, parties) for r, _ in releases]
    coordinates = parties.parties * sum(r.dim * count for r, count in releases)
    eta = max(p.eta_dg + 2 * _tail(p) for p in plans)
    return Residual(coordinates, eta, max(_tail(p) for p in plans))


def _reserve_bounds(parties: Parties) -> tuple[float, float]:
    """(η, tail), twice those expected at the smallest per-party σ a release grid gives (σ_units >= 2^20.5, so
    σ_p >= 2^20.5/√(m − t)); the final certificate is checked."""
    plan = dg.plan_for(SIGMA_UNITS / math.sqrt(2 * parties.honest))
    return 2 * (plan.eta_dg + 2 * _tail(plan)), 2 * _tail(plan)


def _scale(sigmas: tuple[float, ...], event_of, epsilon: float, delta: float) -> float:
    """One common factor for the algorithm's σs so that the RDP general bound certifies ε at δ."""
    def rdp_epsilon(scale: float) -> float:
        return certify_general(event_of(tuple(scale * s for s in sigmas)), delta).epsilon

    return 1.0 if rdp_epsilon(1.0) <= epsilon else calibrate_scale(rdp_epsilon, epsilon, guess=1.0)


def _method(accountant: Certificate, parties: Parties) -> str:
    return (f"RDP of the honest parties' summed discrete Gaussians (KLS 2021 Prop. 14; m = {parties.parties}, "
            f"up to t = {parties.colluders} colluding), sampling without replacement by the general bound "
            f"(Wang, Balle, Kasiviswanathan 2019, Thm 9), plus the sampler's residual")


DISTRIBUTED = GridAccounting(
    name="distributed", id=MECHANISM, plan=party_plan, residual=residual, noise_multiplier=honest_noise_multiplier,
    accountant=certify_general, reserve_bounds=_reserve_bounds, per_party=True, method=_method,
    pieces=lambda accountant, parties: {"sampling_bound": "wang-balle-kasiviswanathan-2019-thm9",
                                        "parties": parties.parties, "colluders": parties.colluders},
    release_pieces=lambda r, z, parties: {"sigma_units_per_party": party_plan(r, parties).sigma,
                                          "noise_multiplier": z, "sigma": z * r.sensitivity},
    scale=_scale, remedy="lower `colluders` or raise `delta`", sampler=dg.DISCRETE_GAUSSIAN)
"""Every party's own discrete Gaussian (noise mode ``distributed``)."""


def certify_distributed(kinds: Sequence[ReleaseKind], releases: Sequence[GridRelease], delta: float,
                        event_of: Callable[[tuple[float, ...]], dp_accounting.DpEvent],
                        parties: Parties) -> Certificate:
    """:func:`~mpcdp.accounting.released.certify_on_grid` with :data:`DISTRIBUTED` (kept for plugins)."""
    return certify_on_grid(kinds, releases, delta, event_of, DISTRIBUTED, parties)


def calibrate_distributed(kinds: Sequence[ReleaseKind], dim: int, epsilon: float, delta: float, *,
                          calibrate: Callable[[float, float], Sequence[float]],
                          event_of: Callable[[tuple[float, ...]], dp_accounting.DpEvent],
                          parties: Parties) -> GridNoise:
    """:func:`~mpcdp.accounting.released.calibrate_on_grid` with :data:`DISTRIBUTED` (kept for plugins)."""
    return calibrate_on_grid(kinds, dim, epsilon, delta, calibrate=calibrate, event_of=event_of,
                             mechanism=DISTRIBUTED, parties=parties)
