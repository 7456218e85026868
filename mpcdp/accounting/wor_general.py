"""RDP of sampling without replacement from the base mechanism's RDP curve alone — for mechanisms that are only
known to have *at most* a Gaussian's RDP curve, such as the honest parties' sum of discrete Gaussians of
:mod:`mpcdp.accounting.distributed_noise`.

dp-accounting's replace-one bound for a sampled Gaussian (Wang, Balle, Kasiviswanathan 2019, Thm 27) tightens
the terms of order j >= 3 with forward differences of the Gaussian's own cumulant generating function: it holds
for an exact Gaussian base only. The general bound of the same paper (Thm 9) needs only the base's RDP ε(·) at
the integer orders: for a batch of size b drawn uniformly without replacement from n records (γ = b/n), replace-one
adjacency, and every integer α >= 2,

    ε'(α) <= 1/(α−1) · log(1 + γ²·C(α,2)·min{4(e^{ε(2)} − 1), e^{ε(2)}·min{2, (e^{ε(∞)} − 1)²}}
                              + Σ_{j=3..α} γ^j·C(α,j)·e^{(j−1)ε(j)}·min{2, (e^{ε(∞)} − 1)^j}).

A Gaussian-dominated base has ε(∞) = ∞, so both min{2, ·} are 2. γ = 1 is the base itself. Steps compose by
adding RDP at each order; the (ε, δ) conversion is dp-accounting's own (``compute_epsilon``, the same one
:func:`mpcdp.accounting.certify.certify_rdp` uses).

Security model: none — public arithmetic over public parameters. The terms are summed in log space (numpy's
logaddexp), exact up to float rounding of a few ulps relative; the curve it feeds is a bound, not an estimate.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable, Sequence

if TYPE_CHECKING:
    import dp_accounting
    from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon
    from scipy import special
import numpy as np

from mpcdp.accounting.basics import RDP_ORDERS, Certificate, check_delta, leaves
from mpcdp.errors import ConfigError
from mpcdp.validation import check_number

METHOD = ("RDP, replace-one, sampling without replacement by the general bound (Wang, Balle, Kasiviswanathan "
          "2019, Thm 9) from the base's RDP curve only")


def _log_binomial(alpha: int, j: np.ndarray) -> np.ndarray:
    from scipy import special

    return special.gammaln(alpha + 1) - special.gammaln(j + 1) - special.gammaln(alpha - j + 1)


def subsampled_rdp(rate: float, base_rdp: Callable[[np.ndarray], np.ndarray], orders: Sequence[int]) -> np.ndarray:
    """ε'(α) at each integer order (>= 2) of any mechanism with RDP curve ``base_rdp`` (and ε(∞) = ∞) run on a
    batch of rate ``rate`` = b/n sampled without replacement (Thm 9; ``rate`` 1: the base itself)."""
    check_number(rate, "rate", low=0, high=1, high_open=False)
    if any(a != int(a) or a < 2 for a in orders):
        raise ConfigError(f"`orders` must be integers >= 2. Found {list(orders)!r}.")
    if rate == 1:
        return np.asarray(base_rdp(np.asarray(orders, dtype=np.float64)), dtype=np.float64)
    log_rate = math.log(rate)
    values = []
    for alpha in (int(a) for a in orders):
        eps2 = float(base_rdp(np.array([2.0]))[0])
        second = min(math.log(4) + eps2 + math.log(-math.expm1(-eps2)), math.log(2) + eps2)  # log min{4(e^ε−1), 2e^ε}
        terms = [0.0, 2 * log_rate + float(_log_binomial(alpha, np.array([2.0]))[0]) + second]
        if alpha >= 3:
            j = np.arange(3, alpha + 1, dtype=np.float64)
            higher = j * log_rate + _log_binomial(alpha, j) + (j - 1) * base_rdp(j) + math.log(2)
            terms.extend(higher.tolist())
        values.append(float(np.logaddexp.reduce(np.array(terms))) / (alpha - 1))
    return np.array(values)


def gaussian_curve(noise_multiplier: float) -> Callable[[np.ndarray], np.ndarray]:
    """The RDP curve α/(2z²) of a Gaussian with ``noise_multiplier`` z (an upper bound for the mechanisms above)."""
    return lambda orders: np.asarray(orders, dtype=np.float64) / (2.0 * noise_multiplier**2)


def _leaves(event: dp_accounting.DpEvent) -> list[tuple[float, float, int]]:
    """(rate, noise multiplier, count) of each Gaussian-dominated leaf of a Composed / SelfComposed tree."""
    import dp_accounting

    out = []
    for leaf, count in leaves(event):
        if (isinstance(leaf, dp_accounting.SampledWithoutReplacementDpEvent)
                and isinstance(leaf.event, dp_accounting.GaussianDpEvent)):
            out.append((leaf.sample_size / leaf.source_dataset_size, leaf.event.noise_multiplier, count))
        elif isinstance(leaf, dp_accounting.GaussianDpEvent):
            out.append((1.0, leaf.noise_multiplier, count))
        else:
            raise dp_accounting.UnsupportedEventError(
                f"the general without-replacement bound covers Gaussian-dominated releases on batches sampled "
                f"without replacement (or full batches) only; found {leaf!r}")
    return out


def composed_rdp(event: dp_accounting.DpEvent, orders: Sequence[int] = RDP_ORDERS) -> np.ndarray:
    """The RDP curve at ``orders`` of ``event``, every Gaussian in it read as "at most this Gaussian's RDP"."""
    total = np.zeros(len(orders), dtype=np.float64)
    for rate, z, count in _leaves(event):
        total += count * subsampled_rdp(rate, gaussian_curve(z), orders)
    return total


def certify_general(event: dp_accounting.DpEvent, delta: float, orders: Sequence[int] = RDP_ORDERS) -> Certificate:
    """The certified ε at ``delta`` of ``event`` by the general bound (see the module docstring)."""
    from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon

    check_delta(delta)
    epsilon, order = compute_epsilon(np.asarray(orders, dtype=np.float64), composed_rdp(event, orders), delta)
    return Certificate(float(epsilon), delta, METHOD, float(order))
