"""The pieces every accountant of :mod:`mpcdp.accounting` shares: the certificate record, the δ check, the walk
over composed events, the exact μ-GDP conversion, dp-accounting's RDP certificate and the noise search.

Security model: none — public arithmetic on public parameters.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import dp_accounting
    from dp_accounting import rdp
    from scipy import optimize, stats

from mpcdp.errors import ConfigError
from mpcdp.validation import check_number


# Integer orders only: the without-replacement bound is exact for integer α (fractional orders would be
# interpolated). Fewer orders can only raise the reported ε, never lower it.
RDP_ORDERS = [*range(2, 33), 36, 40, 44, 48, 56, 64, 80, 96, 128, 192, 256]


@dataclasses.dataclass(frozen=True)
class Certificate:
    """A certified (ε, δ) and how it was obtained.

    ``pieces``: for a release on the grid (:mod:`mpcdp.accounting.released`), the terms that make up ε and δ
    (the accountant's, the sampler's truncation and residual), the grid and the versions that produced them.
    """

    epsilon: float
    delta: float
    method: str
    order: float | None = None
    pieces: dict | None = None


def check_delta(delta: float) -> None:
    check_number(delta, "delta", low=0, high=1)


def leaves(event: dp_accounting.DpEvent) -> list[tuple[dp_accounting.DpEvent, int]]:
    """(leaf event, multiplicity) pairs of a tree of Composed / SelfComposed events."""
    import dp_accounting

    if isinstance(event, dp_accounting.ComposedDpEvent):
        return [pair for child in event.events for pair in leaves(child)]
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        return [(leaf, count * event.count) for leaf, count in leaves(event.event)]
    return [(event, 1)]


def gdp_epsilon(mu: float, delta: float) -> float:
    """Smallest ε with δ(ε) <= δ for μ-GDP (exact; bisection, safe end)."""
    from scipy import stats

    def excess(eps: float) -> float:
        return stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2) - delta

    if excess(0.0) <= 0:
        return 0.0
    high = 1.0
    while excess(high) > 0:
        high *= 2
    low = 0.0
    for _ in range(200):
        mid = (low + high) / 2
        low, high = (mid, high) if excess(mid) > 0 else (low, mid)
        if high - low < 1e-12 * max(1.0, high):
            break
    return high


def certify_rdp(event: dp_accounting.DpEvent, delta: float) -> Certificate:
    """dp-accounting's RDP certificate (replace-one, :data:`RDP_ORDERS`)."""
    from dp_accounting import rdp
    import dp_accounting

    check_delta(delta)
    accountant = rdp.RdpAccountant(orders=RDP_ORDERS, neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    if not accountant.supports(event):
        raise dp_accounting.UnsupportedEventError(
            f"no certifying accountant for {event!r} (replace-one RDP does not support it)")
    accountant.compose(event)
    epsilon, order = accountant.get_epsilon_and_optimal_order(delta)
    return Certificate(float(epsilon), delta, "RDP, replace-one, sampling without replacement", float(order))


def calibrate(epsilon_of, target: float, *, guess: float = 1.0, rtol: float = 1e-6) -> float:
    """Smallest noise parameter ν (to ``rtol``) with epsilon_of(ν) <= target; returns the safe end.

    ``epsilon_of`` must decrease in ν. Brent's method on log ν, then a step to the safe side.
    """
    from scipy import optimize

    check_number(target, "epsilon", low=0)
    low, high = guess, guess
    while epsilon_of(high) > target:
        high *= 4
        if high > 1e15:
            raise ConfigError(f"no noise level reaches ε = {target}")
    while epsilon_of(low) <= target:
        low /= 4
        if low < 1e-15:
            return low
    log_nu = optimize.brentq(lambda x: math.log(epsilon_of(math.exp(x)) / target), math.log(low), math.log(high),
                             xtol=rtol / 4, rtol=rtol / 4)
    result = math.exp(log_nu)
    while epsilon_of(result) > target:  # the root may sit a hair on the unsafe side
        result *= 1 + rtol
    return result
