"""Paper 002's own accountant, implemented faithfully — for comparison and reproduction, never as the
sole certificate of an ε (use :mod:`mpcdp.accounting.certify`).

* Lemma 3.7: the Gaussian mechanism on a batch sampled without replacement at rate τ, with noise
  multiplier σ′ (σ over the replace-one sensitivity), is (α, 3.5·τ²·α/σ′²)-RDP — *only* if σ′² >= 0.7 and
  α <= 2σ′²·log(1/(τα(1 + σ′²)))/3 + 1. Outside that range the bound is invalid (the true RDP is orders of
  magnitude larger), so this module returns ∞ there.
* Composition (Lemma B.1) adds the RDP of release 0 and of the T later releases at the same α.
* Lemma 3.9: (α, ρ)-RDP gives (ρ + log(1/δ)/(α − 1), δ)-DP; the best integer α in [2, 256] is taken.
* Theorem 4.1: σ0² = 14·T·G²·α/(β·n²·ε), σ² = 14·T·((1−γ)ζ + γG)²·α/(β·n²·ε), α = log(1/δ)/((1−β)ε) + 1,
  with G → C1 and ζ → C2 (Remark 4.3). The algorithm boxes print ε² — a typo; the theorem and its proof use
  ε, as here. Its side conditions use σ′² = min(b²σ²/(4C_eff²), b0²σ0²/(4C1²)) (the theorem prints b0σ0²,
  a dropped square: the noise multiplier of release 0 is b0·σ0/(2C1)).
"""

from __future__ import annotations

import dataclasses
import math

from mpcdp.accounting.events import DpSrmSetting

ORDERS = range(2, 257)


def lemma37_rdp(alpha: int, tau: float, z: float) -> float:
    """RDP of one subsampled-without-replacement Gaussian release by Lemma 3.7, or ∞ outside its range."""
    z2 = z * z
    if z2 < 0.7:
        return math.inf
    argument = 1.0 / (tau * alpha * (1 + z2))
    if argument <= 1.0 or alpha > 2 * z2 * math.log(argument) / 3 + 1:
        return math.inf
    return 3.5 * tau**2 * alpha / z2


def paper_epsilon(setting: DpSrmSetting, sigma0: float, sigma: float, delta: float) -> tuple[float, int | None]:
    """(ε, α) by Lemma 3.7 + composition + Lemma 3.9 for the noise (σ0, σ); (∞, None) if no α is valid."""
    z0, z = setting.noise_multipliers(sigma0, sigma)
    n0, b0, _ = setting.sampling(True)
    n1, b1, _ = setting.sampling(False)
    best, best_alpha = math.inf, None
    for alpha in ORDERS:
        rho = lemma37_rdp(alpha, b0 / n0, z0) + setting.steps * lemma37_rdp(alpha, b1 / n1, z)
        epsilon = rho + math.log(1 / delta) / (alpha - 1)
        if epsilon < best:
            best, best_alpha = epsilon, alpha
    return best, best_alpha


@dataclasses.dataclass(frozen=True)
class Theorem41:
    """Theorem 4.1's noise for a target ε, with the β used and whether its side conditions hold."""

    sigma0: float
    sigma: float
    beta: float
    alpha: float
    conditions_hold: bool


def theorem41_sigmas(setting: DpSrmSetting, epsilon: float, delta: float, *,
                     respect_conditions: bool = True) -> Theorem41:
    """σ0 and σ of Theorem 4.1 (ε, not ε²) for the β in (0, 1) that needs the least noise — among the β that
    meet the theorem's side conditions when ``respect_conditions`` (falling back to all β, flagged, when none
    does), or among all β otherwise."""
    n = sum(setting.n)
    candidates = []
    for i in range(1, 1000):
        beta = i / 1000
        alpha = math.log(1 / delta) / ((1 - beta) * epsilon) + 1
        factor = 14 * setting.steps * alpha / (beta * n**2 * epsilon)
        sigma0, sigma = setting.c1 * math.sqrt(factor), setting.c_eff * math.sqrt(factor)
        z0, z = setting.noise_multipliers(sigma0, sigma)
        z2 = min(z0, z) ** 2
        tau = max(b / m for b, m in zip(setting.batch + setting.batch0, setting.n + setting.n))
        argument = 1.0 / (tau * alpha * (1 + z2))
        holds = z2 >= 0.7 and argument > 1 and alpha - 1 <= 2 * z2 * math.log(argument) / 3
        candidates.append((not holds, sigma, Theorem41(sigma0, sigma, beta, alpha, holds)))
    return min(candidates, key=lambda c: (c[0], c[1]) if respect_conditions else c[1])[2]
