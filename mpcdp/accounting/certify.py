"""Certified (ε, δ) for the events mpcdp emits — the only ε mpcdp prints as a guarantee.

* Gaussian releases on fixed-size batches sampled without replacement (DP-SRM, DDP-SRM, DP-SGD, RRPSGD, the
  CNNs): the PLD accountant of :mod:`mpcdp.accounting.wor_pld` (replace-one; the amplification bound of Balle,
  Barthe, Gaboardi 2018 as a dominating pair in both directions, pessimistic discretisation). dp-accounting's
  RDP bound for the same event (Wang, Balle, Kasiviswanathan 2019, Thm 27) is printed beside it as
  ``pieces["epsilon_rdp"]``; it is about twice as loose in noise variance.
* Anything else the RDP accountant supports, or a Gaussian event known only by its RDP curve (``rdp_only``):
  dp-accounting's RDP accountant, replace-one, integer orders up to 256.
* Full-batch Gaussian releases (Jayaraman et al., WD-DP): exact — T-fold composition of Gaussians with
  noise multipliers z_i is μ-GDP with μ = √(Σ 1/z_i²) (Dong, Roth, Su 2019, Cor. 3.3), converted to the
  smallest ε with δ(ε) = Φ(−ε/μ + μ/2) − e^ε·Φ(−ε/μ − μ/2) <= δ (ibid., Cor. 2.13), bisection returning the
  safe end.
* Laplace releases (paper 003): pure ε-DP composes additively: ε = Σ Δ₁/b_i, δ = 0.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import dp_accounting
    from dp_accounting import rdp

from mpcdp.accounting import wor_pld
from mpcdp.accounting.basics import (RDP_ORDERS, Certificate, calibrate, certify_rdp, check_delta, gdp_epsilon,
                                     leaves)
from mpcdp.validation import check_number

__all__ = ["RDP_ORDERS", "Certificate", "calibrate", "calibrate_event", "certify", "certify_rdp", "check_delta",
           "gdp_epsilon", "leaves", "without_replacement_gaussians", "zcdp_budget_for", "zcdp_certificate"]


def certify(event: dp_accounting.DpEvent, delta: float, *, rdp_only: bool = False) -> Certificate:
    """The certified ε at ``delta`` for an mpcdp event (see the module docstring for the method used).

    ``rdp_only``: use the RDP accountant for Gaussian compositions too. Needed when a Gaussian event stands
    for a mechanism that is only known to have (at most) the Gaussian's RDP curve, such as a sum of discrete
    Gaussians (:mod:`mpcdp.accounting.distributed_noise`): the exact μ-GDP conversion holds for Gaussians
    only."""
    import dp_accounting

    check_delta(delta)
    flat = leaves(event)
    kinds = {type(leaf) for leaf, _ in flat}
    if kinds == {dp_accounting.GaussianDpEvent} and not rdp_only:
        inverse_sq = sum(count / leaf.noise_multiplier**2 for leaf, count in flat)
        mu = math.sqrt(inverse_sq)
        return Certificate(gdp_epsilon(mu, delta), delta, f"exact Gaussian composition (μ-GDP, μ = {mu:.6g})")
    if kinds == {dp_accounting.LaplaceDpEvent}:
        epsilon = sum(count / leaf.noise_multiplier for leaf, count in flat)
        return Certificate(epsilon, 0.0, "pure-ε composition of Laplace releases")
    if not rdp_only and without_replacement_gaussians(flat):
        return wor_pld.certify_pld(event, delta)
    return certify_rdp(event, delta)


def without_replacement_gaussians(flat: list[tuple[dp_accounting.DpEvent, int]]) -> bool:
    """Whether the leaves are Gaussians, at least one on batches sampled without replacement: what the PLD
    accountant of :mod:`mpcdp.accounting.wor_pld` certifies."""
    import dp_accounting

    def swr(leaf):
        return (isinstance(leaf, dp_accounting.SampledWithoutReplacementDpEvent)
                and isinstance(leaf.event, dp_accounting.GaussianDpEvent))

    return (any(swr(leaf) for leaf, _ in flat)
            and all(swr(leaf) or isinstance(leaf, dp_accounting.GaussianDpEvent) for leaf, _ in flat))


def calibrate_event(event_of, target: float, delta: float, *, guess: float, rtol: float, with_rdp: bool = True
                    ) -> tuple[float, Certificate]:
    """Smallest noise parameter ν (to ``rtol``) whose event ``event_of(ν)`` certifies at most ``target`` at
    ``delta``, and that certificate (:func:`certify`'s own).

    Events that :func:`certify` certifies with the PLD accountant are calibrated by
    :func:`mpcdp.accounting.wor_pld.calibrate_event_pld` (a search on a coarser nested grid first); others by
    a search on :func:`certify` itself. ``with_rdp`` (False: leave out the PLD certificate's RDP ε, printed
    for comparison only) applies to the former."""
    if without_replacement_gaussians(leaves(event_of(guess))):
        return wor_pld.calibrate_event_pld(event_of, target, delta, guess=guess, rtol=rtol, with_rdp=with_rdp)
    nu = calibrate(lambda v: certify(event_of(v), delta).epsilon, target, guess=guess, rtol=rtol)
    return nu, certify(event_of(nu), delta)


# zCDP's RDP curve α·ρ holds at every real order, so a dense grid only tightens the conversion.
ZCDP_ORDERS = [1 + k / 20 for k in range(1, 180)] + [float(a) for a in range(10, 257)]


def zcdp_certificate(rho: float, delta: float) -> Certificate:
    """Certified (ε, δ) of any ρ-zCDP mechanism, adaptively composed under a privacy filter included.

    A ρ-zCDP mechanism has RDP α·ρ at every order α > 1 — the curve of one Gaussian release with noise
    multiplier 1/√(2ρ) — so dp-accounting's RDP accountant converts exactly that curve. (The exact μ-GDP
    conversion would be wrong here: it holds for Gaussian releases only, and a ρ-zCDP budget may be spent
    on other mechanisms, e.g. the exponential mechanism, ε²/8-zCDP.)
    """
    from dp_accounting import rdp
    import dp_accounting

    check_delta(delta)
    check_number(rho, "rho", low=0)
    accountant = rdp.RdpAccountant(orders=ZCDP_ORDERS)
    accountant.compose(dp_accounting.GaussianDpEvent(1 / math.sqrt(2 * rho)))
    epsilon, order = accountant.get_epsilon_and_optimal_order(delta)
    return Certificate(float(epsilon), delta, f"ρ-zCDP (ρ = {rho:.6g}) via its RDP curve", float(order))


def zcdp_budget_for(epsilon: float, delta: float) -> tuple[float, Certificate]:
    """The largest ρ whose certified ε (:func:`zcdp_certificate`) is at most ``epsilon``."""
    check_delta(delta)
    z = calibrate(lambda nu: zcdp_certificate(1 / (2 * nu * nu), delta).epsilon, epsilon, guess=10.0, rtol=1e-7)
    rho = 1 / (2 * z * z)
    return rho, zcdp_certificate(rho, delta)
