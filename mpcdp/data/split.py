"""Splitting a training set among m parties: equal shares, or two groups with n_max/n_min = u."""

from __future__ import annotations

import numpy as np

from mpcdp.errors import ConfigError
from mpcdp.validation import check_integer


def party_sizes(n: int, parties: int, *, ratio: float = 1.0) -> list[int]:
    """Sizes of m parties summing to n: with ``ratio`` u > 1, the first ⌈m/2⌉ parties are small and the rest
    u times larger (paper 000's two groups; level of non-average u = n_max / n_min)."""
    check_integer(parties, "parties", minimum=1)
    if not ratio >= 1:
        raise ConfigError(f"`ratio` (n_max/n_min) must be >= 1. Found {ratio!r}.")
    small = (parties + 1) // 2 if ratio > 1 else parties
    weights = np.array([1.0] * small + [ratio] * (parties - small))
    sizes = np.floor(weights / weights.sum() * n).astype(int)
    sizes[np.argsort(-weights, kind="stable")[: n - sizes.sum()]] += 1
    if sizes.min() < 1:
        raise ConfigError(f"{n} records cannot give every one of {parties} parties a record at ratio {ratio}.")
    return sizes.tolist()


def split_indices(n: int, parties: int, *, ratio: float = 1.0, seed: int = 0) -> list[np.ndarray]:
    """A random partition of range(n) into parties of :func:`party_sizes`."""
    order = np.random.default_rng(seed).permutation(n)
    bounds = np.cumsum([0] + party_sizes(n, parties, ratio=ratio))
    return [np.sort(order[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
