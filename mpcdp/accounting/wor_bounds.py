"""Lower bounds beside the without-replacement PLD certificate (:mod:`mpcdp.accounting.wor_pld`): how far it is from
the best any accountant can do, and how much its discretisation costs.

Both are exact hockey sticks of one event each, so they are rigorous lower bounds (up to floating point):
for pairs P, Q and any event E, H_{e^ε}(P‖Q) >= P(E) − e^ε·Q(E). Each step's output is reduced to the bucket
of its privacy loss (buckets of width h centred on the multiples of h) — a post-processing, with the exact
masses of every bucket under both distributions from normal CDFs. The bucket indices of the T steps add up to
S; its distribution under the product of the P's and under the product of the Q's is an exact convolution (one
FFT each), and the events {S >= c} give, for every c with P(S >= c) > δ,
    ε(δ) >= log((P(S >= c) − δ) / Q(S >= c)),
(and {S <= c} with the roles swapped for the reverse direction). Bucketing loses only second-order information,
unlike rounding every loss to the grid, whose bias of up to h per step adds up over T steps.

* :func:`floor_epsilon`: the explicit neighbouring pair — every other record at −C, the changed record +C vs −C —
  whose per-step outputs are A = (1−γ)·N(0, σ²) + γ·N(Δ, σ²) and B = N(0, σ²), in both orders. No valid
  accountant that sees only the event's parameters can certify less.
* :func:`dominating_lower_epsilon`: the same computation for the symmetrised dominating pair the certificate
  composes: the certificate minus this bounds its discretisation error.

Security model: none — public arithmetic, for tests and benchmarks.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import dp_accounting
    from scipy import fft, special
import numpy as np

from mpcdp.accounting.basics import check_delta
from mpcdp.accounting.wor_pld import STEP_TAIL, _loss_edge, steps_of

BUCKET = 2.5e-5  # the loss buckets' width


def _output_threshold(loss: np.ndarray, rate: float, z: float) -> np.ndarray:
    """x(ℓ) in units of Δ: log(A/B) at output x exceeds ℓ exactly when x > x(ℓ) (−∞ below A/B's range)."""
    inner = np.expm1(loss) + rate
    out = np.full_like(loss, -np.inf)
    ok = inner > 0
    out[ok] = 0.5 + z * z * (np.log(inner[ok]) - math.log(rate))
    return out


def _explicit_cdfs(bounds: np.ndarray, rate: float, z: float) -> tuple[np.ndarray, np.ndarray]:
    """(A, B) masses of {log(A/B) <= bound} for each bound."""
    from scipy import special

    x = _output_threshold(bounds, rate, z)
    return (1 - rate) * special.ndtr(x / z) + rate * special.ndtr((x - 1) / z), special.ndtr(x / z)


def _dominating_cdf(bounds: np.ndarray, rate: float, z: float) -> np.ndarray:
    """P*(L* <= bound) for the symmetrised pair (bounds never 0): A's mass above ℓ = bound > 0, B's mass above
    ℓ = −bound mirrored below 0."""
    from scipy import special

    out = np.empty_like(bounds)
    up = bounds > 0
    x = _output_threshold(bounds[up], rate, z)
    out[up] = 1 - ((1 - rate) * special.ndtr(-x / z) + rate * special.ndtr((1 - x) / z))
    out[~up] = special.ndtr(-_output_threshold(-bounds[~up], rate, z) / z)
    return out


def _bucket_masses(rate: float, z: float, width: float, pair: str) -> tuple[np.ndarray, np.ndarray]:
    """Masses of buckets k = −K..K (loss in ((k−½)w, (k+½)w], the outer ones open-ended) under (P, Q)."""
    edge = max(math.ceil(_loss_edge(rate, z, STEP_TAIL) / width), 1)
    bounds = (np.arange(-edge, edge) + 0.5) * width
    if pair == "explicit":
        p_cdf, q_cdf = _explicit_cdfs(bounds, rate, z)
    else:
        p_cdf = _dominating_cdf(bounds, rate, z)
        q_cdf = 1 - _dominating_cdf(-bounds, rate, z)
    p = np.diff(np.concatenate(([0.0], p_cdf, [1.0])))
    q = np.diff(np.concatenate(([0.0], q_cdf, [1.0])))
    return p, q


def _compose(parts: list[tuple[np.ndarray, int]]) -> np.ndarray:
    """The distribution of the sum of independent bucket indices (each array ``count`` times), by one FFT."""
    from scipy import fft

    length = sum(count * (len(p) - 1) for p, count in parts) + 1
    size = fft.next_fast_len(length, real=True)
    spectrum = np.ones(size // 2 + 1, dtype=complex)
    for p, count in parts:
        spectrum *= fft.rfft(p, size) ** count
    return fft.irfft(spectrum, size)[:length]


def _epsilon_from_events(p: np.ndarray, q: np.ndarray, delta: float) -> float:
    """max over c of log((P(S >= c) − δ)/Q(S >= c)), over c with P(S >= c) > δ (0 if none)."""
    p_tail, q_tail = np.cumsum(p[::-1])[::-1], np.cumsum(q[::-1])[::-1]
    usable = (p_tail > delta) & (q_tail > 0)
    if not usable.any():
        return 0.0
    return max(0.0, float(np.max(np.log(p_tail[usable] - delta) - np.log(q_tail[usable]))))


def _lower_epsilon(event: dp_accounting.DpEvent, delta: float, width: float, pair: str) -> float:
    check_delta(delta)
    masses = [(_bucket_masses(float(s.rate), s.z, width, pair), s.count) for s in steps_of(event)]
    p = _compose([(pq[0], count) for pq, count in masses])
    q = _compose([(pq[1], count) for pq, count in masses])
    forward = _epsilon_from_events(p, q, delta)  # events {S >= c}
    backward = _epsilon_from_events(q[::-1], p[::-1], delta)  # the reverse order: events {S <= c}
    return max(forward, backward)


def floor_epsilon(event: dp_accounting.DpEvent, delta: float, width: float = BUCKET) -> float:
    """A lower bound on the ε(δ) of the explicit pair (others at −C, the changed record +C vs −C), both orders:
    below what any accountant of ``event`` may certify."""
    return _lower_epsilon(event, delta, width, "explicit")


def dominating_lower_epsilon(event: dp_accounting.DpEvent, delta: float, width: float = BUCKET) -> float:
    """A lower bound on the exact composition of the symmetrised dominating pairs that
    :func:`~mpcdp.accounting.wor_pld.pld_epsilon` bounds from above."""
    return _lower_epsilon(event, delta, width, "dominating")
