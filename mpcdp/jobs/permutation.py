"""The view audits' tests of a role's view against the noise (:mod:`mpcdp.jobs.views`, :mod:`mpcdp.jobs.auth_views`):
a statistic is Σ_i scores[i, i] for a score matrix s(view_i, x_j), tested against its distribution over
permutations of the columns (the calls' values shuffled against the views).

:func:`permutation_test` gives the standardised statistic z (exact permutation mean and variance, Hoeffding)
and the normal tail's p; :func:`match_test` the Poisson tail's p for a rare match. Neither tail is exact: a
count that is constant in most calls (the dealer's request sizes: an extra pass in one call of 40) makes the
statistic one product of an outlier with a χ²-like value, and the normal tail then alarms far above its level
(at 40 calls: 45 times as often at a role's level 5·10^-5 in 20,000 simulated independent data sets, 7 times at
10^-3 in ``tests/test_permutation.py``; the dg-auth/7 views run read p = 9.3·10^-5 there). So the p a verdict
reads is :func:`confirmed`'s: the permutation distribution sampled, with Besag and Clifford's sequential
stopping (Biometrika 1991) — stop at the h-th permutation at least as extreme as the observed one, p = h/L, or
after B permutations, p = (g + 1)/(B + 1) — a valid p at every level (P(p ≤ u) ≤ u under independence),
whatever the scores' shape. B = ⌈2/level⌉ resolves the role's Bonferroni level: a view that matches the
noise in every permutation-extreme way reports p = 1/(B + 1) ≈ level/2. Cost: about h/p permutations of n
gathered scores for a statistic of p-value p (tens for an independent view), B·n for an extreme one.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

EXCEEDANCES = 20
"""h of the sequential stopping rule: the p of a statistic with h extreme permutations is h/L (relative
standard error about 1/√h)."""
MIN_ALPHA = 1e-7
"""The smallest audit α (``--alpha``): a role of k statistics samples up to 2k/α permutations for an extreme one
(k ≈ 20, n = 400 calls: about 3·10^9 gathered scores, a few minutes); below it the audit refuses rather than
run for hours."""
_BATCH = 4096  # permutations drawn at a time
_SEED = 20261130  # fixed, independent of the data: the permutations do not depend on the views or the noise


@dataclasses.dataclass(frozen=True)
class Statistic:
    """A role's statistic: its name, z and p (the reported p: :func:`confirmed`'s for a permutation test).
    ``scores`` and ``two_sided`` keep what :func:`confirmed` samples (None for a match statistic, whose Poisson
    p stands)."""

    name: str
    z: float
    p: float
    scores: np.ndarray | None = dataclasses.field(default=None, repr=False, compare=False)
    two_sided: bool = True

    def report(self) -> dict:
        return {"name": self.name, "z": self.z, "p": self.p}


def permutation_test(scores: np.ndarray, *, two_sided: bool) -> tuple[float, float]:
    """(z, p) of Σ_i scores[i, i] against its distribution over permutations of the columns: exact mean and
    variance (Hoeffding), normal tail (approximate: :func:`confirmed` gives the p a verdict reads)."""
    from scipy import stats

    n, mean, variance = _moments(scores)
    if variance <= 0:
        return 0.0, 1.0
    z = (float(np.trace(scores)) - mean) / math.sqrt(variance)
    p = 2 * stats.norm.sf(abs(z)) if two_sided else stats.norm.sf(z)
    return z, float(min(1.0, p))


def permutation_statistic(name: str, scores: np.ndarray, *, two_sided: bool) -> Statistic:
    """:func:`permutation_test`'s statistic, keeping its scores for :func:`confirmed`."""
    return Statistic(name, *permutation_test(scores, two_sided=two_sided), scores=scores, two_sided=two_sided)


def match_test(scores: np.ndarray) -> tuple[float, float]:
    """(z, p) of a match statistic (0/1 scores that are rarely 1, e.g. "the role's guess equals x"): z from
    :func:`permutation_test`, p from the Poisson tail at the permutation mean. Under a random permutation the
    number of matches is close to Poisson when matches are rare; the normal tail would overstate one or two
    chance matches (at 60 calls it alarmed about 60 times as often as its stated level)."""
    from scipy import stats

    z, _ = permutation_test(scores, two_sided=False)
    total, mean = float(np.trace(scores)), float(scores.mean()) * scores.shape[0]
    p = float(stats.poisson.sf(total - 1, mean)) if mean > 0 else float(total == 0)
    return z, p


def confirmed(statistic: Statistic, level: float) -> Statistic:
    """``statistic`` with the p of its sampled permutation distribution (module docstring), resolved to
    ``level`` (the role's α over its number of statistics); a match statistic (no scores) as it is."""
    if statistic.scores is None:
        return statistic
    p = sampled_p(statistic.scores, two_sided=statistic.two_sided, permutations=math.ceil(2 / level))
    return dataclasses.replace(statistic, p=p)


def role_verdict_p(found: list[Statistic], alpha: float) -> tuple[list[Statistic], float]:
    """A role's statistics with their sampled p (:func:`confirmed`, each at α over their number) and the role's
    Bonferroni p, min p × their number (capped at 1): the view audits report ``dependent`` when it is below α."""
    found = [confirmed(s, alpha / len(found)) for s in found]
    return found, min(1.0, min(s.p for s in found) * len(found))


def sampled_p(scores: np.ndarray, *, two_sided: bool, permutations: int) -> float:
    """The sequential Monte Carlo permutation p of Σ_i scores[i, i] (module docstring): at most ``permutations``
    uniform permutations of the columns from a fixed seed, stopped at the :data:`EXCEEDANCES`-th at least as
    extreme as the observed statistic (two-sided: as far from the permutation mean)."""
    n, mean, _ = _moments(scores)
    observed = float(np.trace(scores)) - mean
    slack = 1e-9 * float(np.abs(scores).sum())  # float sums in another order: a tie counts as extreme
    rows, rng = np.arange(n), np.random.default_rng(_SEED)
    drawn = extreme = 0
    while drawn < permutations:
        batch = min(_BATCH, max(64, drawn), permutations - drawn)  # doubling: an independent view stops early
        order = rng.permuted(np.broadcast_to(rows, (batch, n)), axis=1)
        totals = scores[rows, order].sum(1) - mean
        hits = (np.abs(totals) >= abs(observed) - slack) if two_sided else (totals >= observed - slack)
        seen = np.cumsum(hits)
        if extreme + int(seen[-1]) >= EXCEEDANCES:
            stop = int(np.searchsorted(seen, EXCEEDANCES - extreme)) + 1
            return EXCEEDANCES / (drawn + stop)
        drawn, extreme = drawn + batch, extreme + int(seen[-1])
    return (extreme + 1) / (drawn + 1)


def _moments(scores: np.ndarray) -> tuple[int, float, float]:
    """(n, mean, variance) of Σ_i scores[i, π(i)] over uniform permutations π (Hoeffding's combinatorial CLT)."""
    n = scores.shape[0]
    grand = scores.mean()
    centred = scores - scores.mean(1, keepdims=True) - scores.mean(0, keepdims=True) + grand
    return n, n * float(grand), float((centred ** 2).sum()) / (n - 1)
