"""A tight accountant for what mpcdp runs: a fresh fixed-size batch drawn uniformly without replacement at every
step, replace-one adjacency, Gaussian noise — composed as a privacy-loss distribution (PLD).

Security model: none — public arithmetic on public parameters. It is the certificate of every Gaussian release on
batches sampled without replacement (:func:`mpcdp.accounting.certify.certify` dispatches here).

**One step.** A step draws b of the n records uniformly without replacement (rate γ = b/n) and releases
f(batch) + N(0, σ²·I), where replacing one record moves f by at most Δ in L2; z = σ/Δ is the event's noise
multiplier (:mod:`mpcdp.accounting.events`). For datasets x, x' that differ in record i, the batch holds i with
probability γ, so M(x) = (1−γ)·μ0 + γ·μ1 and M(x') = (1−γ)·μ0 + γ·μ1', where μ0 is the output on batches without
i (the same for both) and μ1, μ1' are the outputs on batches with i, coupled batch by batch so that each pair
differs in one record. Balle, Barthe and Gaboardi ("Privacy amplification by subsampling: tight analyses via
couplings and divergences", NeurIPS 2018; advanced joint convexity, and their bound for sampling without
replacement under substitution) give, with α' = 1 + γ(α − 1) and every α >= 1,
    H_α'(M(x) ‖ M(x')) <= γ·H_α(N(Δ, σ²) ‖ N(0, σ²)),
where H_α(P‖Q) = sup_E P(E) − α·Q(E) is the hockey-stick divergence (δ at ε = log α). The right side is
exactly H_α'(A‖B) for A = (1−γ)·N(0, σ²) + γ·N(Δ, σ²) and B = N(0, σ²) (expand A − α'B = γ·(N(Δ, σ²) − α·B)),
and it is attained: every other record at −C, record i at +C in x and −C in x' (Δ = 2C) gives M(x) = A and
M(x') = B up to a common shift. As replace-one is symmetric, the same bound holds for (x', x).

**A dominating pair in both directions.** Composition (Zhu, Dong, Wang, "Optimal accounting of differential
privacy via characteristic function", AISTATS 2022, Def. of dominating pairs and their adaptive composition)
needs one pair (P*, Q*) with H_α(M(x)‖M(x')) <= H_α(P*‖Q*) for EVERY α >= 0 and every ordered neighbouring pair.
For α < 1, H_α(P‖Q) = 1 − α + α·H_{1/α}(Q‖P), so the mechanism's curve there is bounded by the reverse
direction, 1 − α + α·H_{1/α}(A‖B) = H_α(B‖A). The per-step curve is therefore
    g(ε) = H_{e^ε}(A‖B) for ε >= 0,      g(ε) = 1 − e^ε + e^ε·g(−ε) for ε < 0,
and it is the curve of a genuine, symmetric pair: P* has the privacy loss ℓ = log(A/B) of A where ℓ > 0, its
mirror image −ℓ with the mass B puts there (e^−ℓ·A = B), and an atom at loss 0 of mass 1 − A(ℓ > 0) − B(ℓ > 0)
= (1−γ)·(1 − 2Φ(−Δ/2σ)) >= 0 (so the two halves join convexly at ε = 0). Its reverse pair has the same loss
distribution, so P* dominates the mechanism in both directions; (A, B) alone would not: below ε = 0 the reverse
order B‖A has the larger curve. In f-DP terms this is Dong, Roth and Su's subsampling operator (Gaussian
differential privacy, JRSS-B 2022: C_γ(f) = min{f_γ, f_γ⁻¹}** with f_γ = γ·f + (1−γ)·Id). It is the least pair
valid for both orders — the explicit pair attains g above ε = 0 in one order and below it in the other — so no
accountant that composes per-step dominating pairs can certify less; composing the explicit pair itself in one
order (the floor of :mod:`mpcdp.accounting.wor_bounds`) is 1–25% lower on the shipped protocols.

**Composition and discretisation.** Each step's pair is discretised with dp-accounting's pessimistic
connect-the-dots (Doroshenko, Ghazi, Kamath, Kumar, Manurangsi 2022, Alg. 1) on the loss grid of interval h =
:data:`INTERVAL`: given g at the grid points in [−E, E] (E the loss above which g <= :data:`STEP_TAIL`, that mass
going to +∞), it builds a discrete pair whose curve lies on or above g everywhere, so the composition is an upper
bound for any h; h decides only how tight. Steps are composed by dp-accounting (FFT; repeated self-composition,
pessimistic tail truncation of 1e-15 added to the infinite loss); release 0 and the later releases are separate
pairs. The discretisation error is measured, not assumed (:mod:`mpcdp.accounting.wor_bounds`): the certificate
converges in h at second order (ε(h) − ε(h/2) ≈ ¾ of its error at h), and a rigorous lower bound on the same
pair's exact composition sits beside it (benchmarks/results/accounting-pld.md). Floating point: FFT round-off is
of order 1e-16 per probability, far below the δ's that matter.

**Several parties.** When each party j draws b_j of its n_j records, a record of party j is in the batch with
probability b_j/n_j and the rest of the batch is independent of it, so the same argument holds with γ = b_j/n_j
and Δ the sensitivity of the combined sum; the event carries the most exposed party's rate (max_j b_j/n_j), and
g grows with γ.

**Grid.** On the release grid (:mod:`mpcdp.accounting.released`) the opened value is round(s + σ_u·Z) for an
integer sum s of L2 sensitivity Δ_int: post-processing of the Gaussian mechanism, so this accountant applies with
z = σ_u/Δ_int, and the sampler's residual is added on top exactly as for RDP. It does NOT apply where only the RDP
curve of the noise is known (distributed noise, a sum of discrete Gaussians: :mod:`.distributed_noise`).

Not Poisson: Poisson-sampling accountants do not cover fixed-size batches (Lebeda, Regehr, Kamath, Steinke 2024),
and shuffled epochs are a third scheme again; mpcdp draws a fresh batch per step.
"""

from __future__ import annotations

import dataclasses
import fractions
import functools
import importlib.metadata
import math
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    import dp_accounting
    from dp_accounting.pld import pld_pmf
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution
    from scipy import optimize, special
import numpy as np

from mpcdp.accounting.basics import RDP_ORDERS, Certificate, calibrate, certify_rdp, check_delta, leaves
from mpcdp.errors import ConfigError
from mpcdp.validation import check_integer, check_number

INTERVAL = 1e-4  # h: the loss grid of the certificate
STEP_TAIL = 1e-18  # g(E): the mass per step sent to an infinite loss (T steps add at most T·1e-18 to δ)
COMPOSITION_TAIL = 1e-15  # dp-accounting's tail truncation per composition, added to the infinite loss
MAX_GRID = 2_000_001  # grid points of one step's pair; beyond, ask for a coarser interval

ACCOUNTANT = (f"mpcdp-wor-pld/1 (fixed-size sampling without replacement, replace-one: BBG 2018 amplification of "
              f"the Gaussian as a dominating pair symmetrised in both directions (ZDW 2022), pessimistic "
              f"connect-the-dots, interval {INTERVAL:g}, step tail {STEP_TAIL:g}); dp-accounting "
              f"{importlib.metadata.version('dp-accounting')}")


@dataclasses.dataclass(frozen=True)
class Step:
    """``count`` identical steps: a batch at ``rate`` γ = b/n (1: no sampling), noise multiplier ``z`` = σ/Δ."""

    rate: fractions.Fraction
    z: float
    count: int

    def __post_init__(self) -> None:
        check_number(self.rate, "rate", low=0, high=1, high_open=False, where=" (batch / records)")
        check_number(self.z, "noise_multiplier", low=0)
        check_integer(self.count, "count")


def steps_of(event: dp_accounting.DpEvent) -> tuple[Step, ...]:
    """The steps of a tree of Composed / SelfComposed events over sampled-without-replacement Gaussians (and
    plain Gaussians, rate 1).

    Raises:
        dp_accounting.UnsupportedEventError: any other event.
    """
    out = _collect(event)
    merged: dict[tuple, int] = {}
    for step in out:
        merged[step.rate, step.z] = merged.get((step.rate, step.z), 0) + step.count
    return tuple(Step(rate, z, count) for (rate, z), count in merged.items())


def _collect(event: dp_accounting.DpEvent) -> list[Step]:
    import dp_accounting

    out = []
    for leaf, count in leaves(event):
        if (isinstance(leaf, dp_accounting.SampledWithoutReplacementDpEvent)
                and isinstance(leaf.event, dp_accounting.GaussianDpEvent)):
            rate = fractions.Fraction(leaf.sample_size, leaf.source_dataset_size)
            out.append(Step(rate, float(leaf.event.noise_multiplier), count))
        elif isinstance(leaf, dp_accounting.GaussianDpEvent):
            out.append(Step(fractions.Fraction(1), float(leaf.noise_multiplier), count))
        else:
            raise dp_accounting.UnsupportedEventError(
                f"the without-replacement PLD accountant covers Gaussians on batches sampled without replacement; "
                f"found {leaf!r}")
    return out


# -- one step: the dominating pair's curve ------------------------------------------------------------------

def gaussian_delta(epsilon: np.ndarray, z: float) -> np.ndarray:
    """H_{e^ε}(N(Δ, σ²) ‖ N(0, σ²)) for σ/Δ = z: Φ(−εz + 1/2z) − e^ε·Φ(−εz − 1/2z), in log space."""
    from scipy import special

    epsilon = np.asarray(epsilon, dtype=np.float64)
    first = special.log_ndtr(-epsilon * z + 0.5 / z)
    second = epsilon + special.log_ndtr(-epsilon * z - 0.5 / z)
    return np.exp(first) * -np.expm1(np.minimum(second - first, 0.0))


def _amplified(epsilon: np.ndarray, rate: float, z: float) -> np.ndarray:
    """H_{e^ε}(A‖B) at ε >= 0: γ·H_{e^ε0}(N(Δ)‖N(0)) with e^ε0 = 1 + (e^ε − 1)/γ (in log space)."""
    epsilon = np.asarray(epsilon, dtype=np.float64)
    return rate * gaussian_delta(epsilon + np.log1p(-(1 - rate) * np.exp(-epsilon)) - math.log(rate), z)


def step_curve(epsilon, rate: float, z: float) -> np.ndarray:
    """g(ε): the hockey-stick curve of one step's symmetrised dominating pair, at every real ε."""
    epsilon = np.atleast_1d(np.asarray(epsilon, dtype=np.float64))
    out = np.empty_like(epsilon)
    positive = epsilon >= 0
    out[positive] = _amplified(epsilon[positive], rate, z)
    e = epsilon[~positive]
    out[~positive] = -np.expm1(e) + np.exp(e) * _amplified(-e, rate, z)
    return out


def _loss_edge(rate: float, z: float, tail: float) -> float:
    """The smallest E >= 0 (to 1e-9 relative) with g(E) <= tail."""
    if _amplified(np.array([0.0]), rate, z)[0] <= tail:
        return 0.0
    high = 1.0
    while _amplified(np.array([high]), rate, z)[0] > tail:
        high *= 2
    low = 0.0
    while high - low > 1e-9 * high:
        mid = (low + high) / 2
        low, high = (mid, high) if _amplified(np.array([mid]), rate, z)[0] > tail else (low, mid)
    return high


def _grid_size(rate: float, z: float, interval: float) -> int:
    edge = math.ceil(_loss_edge(rate, z, STEP_TAIL) / interval)
    if 2 * edge + 1 > MAX_GRID:
        raise ConfigError(f"noise multiplier {z:g} at rate {rate:g} needs {2 * edge + 1} loss points at interval "
                          f"{interval:g} (at most {MAX_GRID}): use a coarser `interval`")
    return max(edge, 1)


def connect_dots(rate: float, z: float, interval: float, edge: int) -> tuple[np.ndarray, float]:
    """Pessimistic connect-the-dots masses at the losses k·h, k = −edge..edge, and the mass at +∞.

    The masses are dp-accounting's (``create_pmf_pessimistic_connect_dots_fixed_gap``) for g at these points,
    computed without its cancellation: g = (1 − e^ε)·[ε < 0] + r with r(ε) = e^min(ε, 0)·H_{e^|ε|}(A‖B). The
    first part is linear in e^ε on either side of 0 and contributes exactly one unit of mass at loss 0, so only
    the small, smooth r is differenced (the masses at very negative losses stay accurate relative to e^ε, which
    keeps the reverse distribution's mass at 1)."""
    eps = np.arange(-edge, edge + 1) * interval
    r = np.exp(np.minimum(eps, 0.0)) * _amplified(np.abs(eps), rate, z)
    step = math.expm1(interval)
    probs = np.empty_like(r)
    probs[0] = -r[0] + (r[1] - r[0]) / step
    probs[1:-1] = ((r[2:] - r[1:-1]) - math.exp(interval) * (r[1:-1] - r[:-2])) / step
    probs[-1] = (r[-1] - r[-2]) / math.expm1(-interval)
    probs[edge] += 1.0  # the (1 − e^ε)·[ε < 0] part: its whole mass at loss 0
    return np.maximum(probs, 0.0), float(r[-1])


@functools.lru_cache(maxsize=256)
def step_pld(rate: float, z: float, interval: float = INTERVAL, version: str = ACCOUNTANT
             ) -> PrivacyLossDistribution:
    """One step's pair, discretised with pessimistic connect-the-dots on [−E, E] (see the module docstring).
    ``version`` keys the cache: a cached value is never reused by another accountant version."""
    from dp_accounting.pld import pld_pmf
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

    edge = _grid_size(rate, z, interval)
    probs, infinity = connect_dots(rate, z, interval, edge)
    return PrivacyLossDistribution(pld_pmf.DensePLDPmf(interval, -edge, probs, infinity, True))


@functools.lru_cache(maxsize=64)
def _composed(steps: tuple[Step, ...], interval: float, version: str) -> PrivacyLossDistribution:
    total = None
    for step in steps:
        pld = step_pld(float(step.rate), step.z, interval, version)
        if step.count > 1:
            pld = pld.self_compose(step.count, tail_mass_truncation=COMPOSITION_TAIL)
        total = pld if total is None else total.compose(pld, tail_mass_truncation=COMPOSITION_TAIL)
    return total


def composed_pld(event: dp_accounting.DpEvent, interval: float = INTERVAL) -> PrivacyLossDistribution:
    """The pessimistic PLD of every step of ``event`` composed (cached by every parameter and the version)."""
    return _composed(steps_of(event), interval, ACCOUNTANT)


def pld_epsilon(event: dp_accounting.DpEvent, delta: float, interval: float = INTERVAL) -> float:
    """ε(δ): the smallest ε with δ(ε) <= ``delta`` for the composed dominating pair (an upper bound)."""
    check_delta(delta)
    return _epsilon(steps_of(event), delta, interval, ACCOUNTANT)


@functools.lru_cache(maxsize=1024)
def _epsilon(steps: tuple[Step, ...], delta: float, interval: float, version: str) -> float:
    return epsilon_for_delta(_composed(steps, interval, version), delta)


def epsilon_for_delta(pld: PrivacyLossDistribution, delta: float) -> float:
    """dp-accounting's ``get_epsilon_for_delta`` for a symmetric dense PLD, vectorised: δ(ε) is the largest of
    U_i − e^ε·V_i over the cuts i (U_i: the mass of the losses >= ℓ_i and of +∞, V_i: Σ_{j>=i} p_j·e^−ℓ_j), so
    the least ε >= 0 with δ(ε) <= δ is the largest log((U_i − δ)/V_i)."""
    try:
        pmf = pld._pmf_remove.to_dense_pmf()  # noqa: SLF001 - the library's own representation
        probs, lowest, step, infinity = pmf._probs, pmf._lower_loss, pmf._discretization, pmf._infinity_mass
    except AttributeError:  # pragma: no cover - another dp-accounting layout
        return float(pld.get_epsilon_for_delta(delta))
    if infinity > delta:
        return math.inf
    losses = (np.arange(len(probs)) + lowest) * step
    probs = np.maximum(probs, 0.0)  # FFT round-off, of order 1e-17
    upper = infinity + np.cumsum(probs[::-1])[::-1]
    with np.errstate(divide="ignore"):
        log_lower = np.logaddexp.accumulate((np.log(probs) - losses)[::-1])[::-1]  # log V_i, no underflow
        binding = upper > delta
        if not binding.any():
            return 0.0
        return max(0.0, float(np.max(np.log(upper[binding] - delta) - log_lower[binding])))


def pld_delta(event: dp_accounting.DpEvent, epsilon: float, interval: float = INTERVAL) -> float:
    """δ(ε) of the composed dominating pair (an upper bound on every neighbouring pair's hockey stick)."""
    check_number(epsilon, "epsilon")
    return float(composed_pld(event, interval).get_delta_for_epsilon(epsilon))


def epsilon_rdp(event: dp_accounting.DpEvent, delta: float) -> float:
    """dp-accounting's RDP ε for the same event (the bound this accountant replaced, printed beside it)."""
    from mpcdp.accounting.wor_rdp import calibration_epsilon

    value = calibration_epsilon(event, delta, RDP_ORDERS)
    return value if value is not None else certify_rdp(event, delta).epsilon


def certify_pld(event: dp_accounting.DpEvent, delta: float, *, interval: float = INTERVAL,
                with_rdp: bool = True) -> Certificate:
    """The PLD certificate of ``event`` at ``delta``; ``pieces`` name the accountant's version and interval and
    (``with_rdp``) the RDP ε of the same event for comparison (``epsilon_rdp``)."""
    epsilon = pld_epsilon(event, delta, interval)
    pieces = {"accountant": ACCOUNTANT, "interval": interval}
    if with_rdp:
        pieces["epsilon_rdp"] = epsilon_rdp(event, delta)
    return Certificate(epsilon, delta, "PLD, replace-one, fixed-size sampling without replacement "
                       "(symmetrised dominating pair, pessimistic connect-the-dots)", None, pieces)


COARSE = 10  # the calibration's first search runs on a grid this many times coarser (nested in the fine one)


def calibrate_event_pld(event_of: Callable[[float], dp_accounting.DpEvent], target: float, delta: float, *,
                        guess: float, rtol: float = 1e-5, interval: float = INTERVAL, with_rdp: bool = True
                        ) -> tuple[float, Certificate]:
    """The smallest noise parameter ν (to ``rtol``, the safe end) whose event ``event_of(ν)`` the PLD accountant
    certifies at most ``target`` at ``delta``, and that certificate — the PLD counterpart of
    :func:`mpcdp.accounting.certify.calibrate_event` (same arguments; ``event_of`` must grow less private as ν
    falls).

    First a search on a grid :data:`COARSE` times coarser: its points are a subset of the fine grid's, so its
    curves lie on or above the fine ones and its ν is safe at the fine interval too. Then Brent's method at the
    fine interval between that ν and a little below it. ``with_rdp``: the certificate's RDP ε for comparison
    (:func:`certify_pld`; about 0.25 s, which a caller that keeps only ν need not spend)."""
    from scipy import optimize

    check_delta(delta)

    def fine(v: float) -> float:
        return pld_epsilon(event_of(v), delta, interval)

    def coarse(v: float) -> float:
        try:
            return pld_epsilon(event_of(v), delta, interval * COARSE)
        except ConfigError:  # a noise level too low for the grid: far above any target the search can meet
            return math.inf

    high = calibrate(coarse, target, guess=guess, rtol=max(rtol, 1e-3))
    if fine(high) > target:  # not nested after all (the tails): search at the fine interval alone
        nu = calibrate(fine, target, guess=high, rtol=rtol)
        return nu, certify_pld(event_of(nu), delta, interval=interval, with_rdp=with_rdp)
    low, gap = high, 1e-3
    while fine(low) <= target:
        low, gap = high * (1 - gap), min(4 * gap, 0.5)
        if low < 1e-15:
            return low, certify_pld(event_of(low), delta, interval=interval, with_rdp=with_rdp)
    nu = math.exp(optimize.brentq(lambda x: math.log(fine(math.exp(x)) / target), math.log(low), math.log(high),
                                  xtol=rtol / 4, rtol=rtol / 4))
    while fine(nu) > target:  # the root may sit a hair on the unsafe side
        nu *= 1 + rtol
    return nu, certify_pld(event_of(nu), delta, interval=interval, with_rdp=with_rdp)
