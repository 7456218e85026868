"""Statistical validation of noise samples against the analytic N(0, σ²), with a stated α.

Every check compares with the analytic distribution (never with another sampler); the family-wise α is
split over the checks (Bonferroni). The bounds are derived from n, so the test has power: with
2·10⁵ samples a standard deviation off by 1% is rejected.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

import numpy as np
if TYPE_CHECKING:
    from scipy import stats

TAIL_POINTS = (2.0, 3.0, 4.0)


@dataclasses.dataclass
class Validation:
    """Outcome of :func:`validate_normal`: the measured values and the list of failed checks."""

    samples: int
    mean: float
    std: float
    ks_statistic: float
    ks_pvalue: float
    max_abs: float
    tail_counts: dict[float, int]
    failures: list[str]

    @property
    def passed(self) -> bool:
        return not self.failures


def validate_normal(x: np.ndarray, *, sigma: float = 1.0, alpha: float = 1e-3, support: float | None = None,
                    accepted: int | None = None, candidates: int | None = None,
                    acceptance: float | None = None) -> Validation:
    """Check that ``x`` looks like i.i.d. N(0, σ²) draws at family-wise level ``alpha``.

    Checks (each at α / number of checks): KS against the normal CDF; |mean| <= z·σ/√n;
    |std − σ| <= z·σ/√(2n); for t in 2, 3, 4: the count beyond tσ inside its exact binomial interval;
    optionally the acceptance count (binomial, p = ``acceptance``); and — not statistical — no |x| above
    ``support``·σ.
    """
    from scipy import stats

    x = np.asarray(x, dtype=np.float64)
    n = x.size
    checks = 4 + len(TAIL_POINTS) - 1 + (1 if acceptance is not None else 0)
    a = alpha / checks
    z = stats.norm.isf(a / 2)
    failures = []
    ks = stats.kstest(x / sigma, "norm")
    if ks.pvalue < a:
        failures.append(f"KS statistic {ks.statistic:.5f} (p = {ks.pvalue:.2e} < {a:.1e})")
    mean, std = float(x.mean()), float(x.std(ddof=1))
    if abs(mean) > z * sigma / math.sqrt(n):
        failures.append(f"mean {mean:.5f} beyond ±{z * sigma / math.sqrt(n):.5f}")
    if abs(std - sigma) > z * sigma / math.sqrt(2 * n):
        failures.append(f"std {std:.5f} beyond {sigma} ± {z * sigma / math.sqrt(2 * n):.5f}")
    tails = {}
    for t in TAIL_POINTS:
        count = int((np.abs(x) > t * sigma).sum())
        tails[t] = count
        p = 2 * stats.norm.sf(t)
        low, high = stats.binom.ppf(a / 2, n, p), stats.binom.isf(a / 2, n, p)
        if not low <= count <= high:
            failures.append(f"{count} samples beyond {t}σ, outside [{low:.0f}, {high:.0f}]")
    if acceptance is not None and accepted is not None and candidates:
        low, high = stats.binom.ppf(a / 2, candidates, acceptance), stats.binom.isf(a / 2, candidates, acceptance)
        if not low <= accepted <= high:
            failures.append(f"{accepted} of {candidates} candidates accepted, outside [{low:.0f}, {high:.0f}] "
                            f"for p = {acceptance:.4f}")
    max_abs = float(np.abs(x).max())
    if support is not None and max_abs > support * sigma:
        failures.append(f"max |x| = {max_abs:.4g} outside the declared support {support * sigma:.4g}")
    return Validation(samples=n, mean=mean, std=std, ks_statistic=float(ks.statistic), ks_pvalue=float(ks.pvalue),
                      max_abs=max_abs, tail_counts=tails, failures=failures)
