"""The ε that :func:`mpcdp.accounting.certify.certify_rdp` returns for trees of Gaussians on batches sampled without
replacement, computed several times faster — the RDP ε printed beside every PLD certificate (``epsilon_rdp``), and
the calibration of RDP-certified events.

dp-accounting's replace-one bound (Wang, Balle, Kasiviswanathan 2019, Thm 27) needs, at each integer order
α, the forward differences of exp(cgf) up to order α; the library recomputes that table for every order
(Σ α² work over the orders, ≈ 0.14 s per noise level on :data:`~mpcdp.accounting.certify.RDP_ORDERS`).
The difference of order i at 0 depends on cgf(0..i+1) only and is computed by the same operations whatever
the table's length, so one table up to the largest order gives every order's entries bit for bit. The rest
is the library's own per-order sum and its own conversion to (ε, δ), so the result equals ``certify_rdp``'s
exactly (tested on a grid of rates and noise multipliers).

Security model: none — public arithmetic. No certificate comes from here: it is a comparison value, or a search
step whose result ``certify_rdp`` certifies itself.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    import dp_accounting
import numpy as np

try:  # the library's private building blocks; without them calibration uses certify itself
    from dp_accounting.rdp.rdp_privacy_accountant import (_get_forward_diffs, _log_add, _log_comb,
                                                          compute_epsilon)
except ImportError:  # pragma: no cover - another dp-accounting layout
    _get_forward_diffs = None

# the library's cut-off: at larger orders it switches to a Stirling bound (not reproduced here)
_EXACT_UP_TO = 256


def wor_gaussian_rdp(q: float, noise_multiplier: float, orders: Sequence[int]) -> np.ndarray:
    """RDP of the Gaussian with ``noise_multiplier`` on a batch of rate ``q`` sampled without replacement, at
    integer ``orders`` (2..256) — dp-accounting's values, with one table of forward differences."""
    sigma = noise_multiplier
    if not 0 < q < 1:  # the library's special cases
        return np.array([0.0 if q == 0 else a / (2 * sigma**2) for a in orders])

    def cgf(x):
        return x * 1.0 * (x + 1) / (2.0 * sigma**2)

    def func(x):
        return 1.0 * x / (2.0 * sigma**2)

    deltas, _ = _get_forward_diffs(cgf, max(orders))
    log_f2m1 = func(2.0) + math.log1p(-np.exp(-func(2.0)))
    values = []
    for alpha in orders:
        log_a = 0
        for i in range(2, alpha + 1):
            if i == 2:
                s = 2 * np.log(q) + _log_comb(alpha, 2) + np.minimum(np.log(4) + log_f2m1, func(2.0) + np.log(2))
            else:
                delta_lo = deltas[int(2 * np.floor(i / 2.0)) - 1]
                delta_hi = deltas[int(2 * np.ceil(i / 2.0)) - 1]
                s = np.log(4) + 0.5 * (delta_lo + delta_hi)
                s = np.minimum(s, np.log(2) + cgf(i - 1))
                s += i * np.log(q) + _log_comb(alpha, i)
            log_a = _log_add(log_a, s)
        values.append(float(log_a) / (alpha - 1))
    return np.array(values)


def _leaves(event: dp_accounting.DpEvent, count: int, out: list) -> bool:
    """(rate, noise multiplier, count) of each leaf, in the accountant's order of composition; False if the
    tree holds anything but Composed / SelfComposed / sampled-without-replacement Gaussians."""
    import dp_accounting

    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        return _leaves(event.event, event.count * count, out)
    if isinstance(event, dp_accounting.ComposedDpEvent):
        return all(_leaves(e, count, out) for e in event.events)
    if (isinstance(event, dp_accounting.SampledWithoutReplacementDpEvent)
            and isinstance(event.event, dp_accounting.GaussianDpEvent)):
        out.append((event.sample_size / event.source_dataset_size, event.event.noise_multiplier, count))
        return True
    return False


def calibration_epsilon(event: dp_accounting.DpEvent, delta: float, orders: Sequence[int]) -> float | None:
    """``certify_rdp(event, delta).epsilon`` with the RDP accountant at ``orders``, bit for bit, or None when
    the event is not a tree of sampled-without-replacement Gaussians (the caller then uses ``certify_rdp``)."""
    leaves: list = []
    if (_get_forward_diffs is None or not _leaves(event, 1, leaves)
            or any(a != int(a) or not 2 <= a <= _EXACT_UP_TO for a in orders)):
        return None
    total = np.zeros_like(orders, dtype=np.float64)
    for q, z, count in leaves:
        total += count * wor_gaussian_rdp(q, z, orders)
    epsilon, _ = compute_epsilon(np.array(orders), total, delta)
    return float(epsilon)
