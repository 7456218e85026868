"""Exact discrete Laplace noise on a grid, for paper 003's owner responses (pure ε-DP, no residual).

A response of owner ℓ is released as r = round(2^p·Q) + L in units of 2^-p, L ~ DLap(t) i.i.d. per coordinate:
P(L = k) = (1 − e^(−1/t))/(1 + e^(−1/t))·e^(−|k|/t), t a positive integer. For integer vectors a, b with
‖a − b‖₁ <= Δ₁ the pmf ratio is at most e^(Δ₁/t) at every output, so with
* Δ₁,int = ⌈Δ₁·2^p + d⌉ (nearest rounding moves each of the d coordinates by at most one unit more) and
* t = ⌈Δ₁,int·T/ε⌉,
each of T responses is exactly (Δ₁,int/t <= ε/T)-DP and the T responses compose to ε-DP, δ = 0 — for the bits
released, with no tail and no approximation, because the sampler below is exact.

Sampler (Canonne, Kamath, Steinke 2020, Algorithm 2, with t integer so every probability is rational): U uniform
on {0..t−1}, kept with probability e^(−U/t); V counts successes of Bernoulli(e^(−1)) before the first failure;
X = U + t·V; a fair sign, rejecting (−, 0). Bernoulli(e^(−γ)) for rational γ ∈ [0, 1] is exact: draw
Bernoulli(γ/k) for k = 1, 2, … until the first failure and return whether k is odd. Every uniform integer is
drawn by rejection from 63-bit words, so the output distribution is DLap(t) exactly (the words are uniform).
Vectorized: all samples advance together, each loop over the samples still running.

Words: a :class:`~mpcdp.randomness.KeyedStream` under an OS-CSPRNG key (the default), or a seeded NumPy generator
(reproducible, insecure; tests and seeded experiments).

Declared cost: ≈ 11 words per sample for t >= 16 (measured in tests/test_discrete_laplace.py), no communication.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from mpcdp.validation import check_integer, check_number
from mpcdp.randomness import word_source as words_from  # noqa: F401 - the word sources this sampler takes

Words = Callable[[int], np.ndarray]  # n -> n uniform words in [0, 2^63) as int64


def uniform_below(bound: np.ndarray, words: Words) -> np.ndarray:
    """Exactly uniform integers in [0, bound) for each bound (1 <= bound < 2^62): rejection from 63-bit words."""
    bound = np.asarray(bound, dtype=np.int64)
    out = np.empty(bound.shape, dtype=np.int64)
    todo = np.arange(bound.size)
    flat = bound.reshape(-1)
    limit = (np.int64(2**63 - 1) // flat) * flat  # accept w < limit: a whole number of copies of [0, bound)
    result = out.reshape(-1)
    while todo.size:
        w = words(todo.size)
        ok = w < limit[todo]
        result[todo[ok]] = w[ok] % flat[todo[ok]]
        todo = todo[~ok]
    return out


def bernoulli_exp(numerator: np.ndarray, denominator: np.ndarray | np.integer, words: Words) -> np.ndarray:
    """Exact Bernoulli(exp(−γ)) for γ = numerator/denominator ∈ [0, 1] (elementwise)."""
    numerator = np.asarray(numerator, dtype=np.int64)
    denominator = np.broadcast_to(np.asarray(denominator, dtype=np.int64), numerator.shape)
    result = np.zeros(numerator.shape, dtype=bool)
    running = np.arange(numerator.size)
    num, den = numerator.reshape(-1), denominator.reshape(-1)
    flat = result.reshape(-1)
    k = 1
    while running.size:
        success = uniform_below(den[running] * k, words) < num[running]  # Bernoulli(γ/k)
        stopped = running[~success]
        flat[stopped] = k % 2 == 1
        running = running[success]
        k += 1
    return result


def sample(scale: int, count: int, words: Words) -> np.ndarray:
    """``count`` exact DLap(``scale``) draws (int64), ``scale`` a positive integer."""
    check_integer(scale, "scale", maximum=2**40 - 1, where=" of the discrete Laplace")
    out, have = [], 0
    while have < count:
        n = max(16, int((count - have) * 2.5))
        u = uniform_below(np.full(n, scale), words)
        keep = bernoulli_exp(u, np.int64(scale), words)
        u = u[keep]
        v = np.zeros(u.size, dtype=np.int64)
        going = np.arange(u.size)
        while going.size:  # V: successes of Bernoulli(e^-1) before the first failure
            more = bernoulli_exp(np.ones(going.size, dtype=np.int64), np.int64(1), words)
            v[going[more]] += 1
            going = going[more]
        x = u + scale * v
        negative = (words(x.size) & 1).astype(bool)
        valid = ~(negative & (x == 0))
        values = np.where(negative, -x, x)[valid][:count - have]
        out.append(values)
        have += values.size
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def log_pmf(k: np.ndarray, scale: int) -> np.ndarray:
    """log P(L = k) for L ~ DLap(scale)."""
    q = -1.0 / scale
    return math.log(-math.expm1(q)) - math.log1p(math.exp(q)) + q * np.abs(np.asarray(k, dtype=np.float64))


def l1_sensitivity_units(sensitivity: float, dim: int, precision: int) -> int:
    """Δ₁,int = ⌈Δ₁·2^p + d⌉: the L1 distance, in grid units, between neighbours' rounded responses."""
    check_number(sensitivity, "sensitivity", low=0)
    return math.ceil((sensitivity * 2.0**precision + dim) * (1 + 1e-12))
