"""Empirical lower bounds on ε from canary scores: the statistics of a privacy audit, each with its confidence.

Two methods, each computed as its paper states:

* **One run** (Steinke, Nasr, Jagielski 2023, "Privacy auditing with one (1) training run", Theorem 3.1 and
  its (ε, δ) extension): m canaries, each given sign S_i = ±1 by a fair coin; the auditor guesses the sign of
  the k highest-scoring canaries as +1 and of the k lowest as −1 and abstains on the rest. If the run is
  (ε, δ)-DP with respect to each canary, the number of correct guesses W among r = 2k satisfies
  P[W ≥ v] ≤ P[Binomial(r, e^ε/(1+e^ε)) ≥ v] + 2m·δ·max_{i ≤ v} (P[Binomial(r, ·) ≥ v − i] − P[· ≥ v]) / i.
  The lower bound is the largest ε that this p-value rejects at significance 1 − confidence. Several k are
  tried with a Bonferroni split of the significance, so the reported bound keeps its confidence.
* **Many runs** (the hypothesis-testing audit of Jagielski, Ullman, Oprea 2020 and Nasr et al. 2023, "Tight
  auditing of differentially private machine learning"): one canary per run, its sign a fair coin; a
  threshold on the score is chosen on half the runs, and on the other half the false-positive and
  false-negative rates get one-sided Clopper–Pearson upper bounds (significance split in two). (ε, δ)-DP
  implies FPR + e^ε·FNR ≥ 1 − δ and FNR + e^ε·FPR ≥ 1 − δ, so
  ε ≥ max(log((1 − δ − FNR⁺) / FPR⁺), log((1 − δ − FPR⁺) / FNR⁺)).

Both bounds hold for any scoring rule; a better score only makes them tighter.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Sequence

import numpy as np
import numpy.typing as npt
if TYPE_CHECKING:
    from scipy import optimize, special, stats

from mpcdp.errors import ConfigError
from mpcdp.validation import check_number


@dataclasses.dataclass(frozen=True)
class AuditBound:
    """An empirical lower bound on ε and the evidence for it.

    Attributes:
        epsilon: the lower bound (0 when nothing is rejected), at ``confidence``.
        method: "one run" or "many runs".
        guesses / correct: the one-run audit's r and v at the chosen k (many runs: the test half's counts).
        detail: the method's other numbers (k tried, rates and their upper bounds).
    """

    epsilon: float
    method: str
    confidence: float
    delta: float
    guesses: int
    correct: int
    detail: dict


def one_run_p_value(m: int, guesses: int, correct: int, epsilon: float, delta: float) -> float:
    """P-value of ``correct`` right guesses out of ``guesses`` among ``m`` canaries if the run is (ε, δ)-DP."""
    from scipy import special, stats

    if not 0 <= correct <= guesses <= m:
        raise ConfigError(f"need 0 <= correct <= guesses <= m. Found correct={correct}, guesses={guesses}, m={m}.")
    q = special.expit(epsilon)
    beta = stats.binom.sf(correct - 1, guesses, q)
    if delta == 0 or correct == 0:
        return float(beta)
    i = np.arange(1, correct + 1)
    alpha = np.max((stats.binom.sf(correct - i - 1, guesses, q) - beta) / i, initial=0.0)
    return float(min(1.0, beta + 2 * m * delta * alpha))


def _largest_rejected(p_value, significance: float) -> float:
    """The largest ε whose p-value is ≤ ``significance`` (p-values rise with ε); 0 if none."""
    from scipy import optimize

    if p_value(0.0) > significance:
        return 0.0
    high = 1.0
    while p_value(high) <= significance:
        high *= 2
        if high > 1e3:
            return math.inf
    return float(optimize.brentq(lambda e: p_value(e) - significance, 0.0, high, xtol=1e-6))


def one_run(scores: npt.ArrayLike, signs: npt.ArrayLike, *, delta: float, confidence: float = 0.95,
            guess_counts: Sequence[int] | None = None) -> AuditBound:
    """The one-run lower bound from canary ``scores`` (high: guess +1) and their true ``signs`` (±1).

    ``guess_counts``: the numbers k of guesses on each side to try (default: 1%, 2%, 5%, 10%, 20% and 50% of
    the canaries, at least 1); the significance is split evenly among them (Bonferroni).
    """
    score_arr, sign_arr = np.asarray(scores, dtype=np.float64), np.asarray(signs)
    m = len(score_arr)
    if m < 2 or len(sign_arr) != m or not set(np.unique(sign_arr)) <= {-1, 1}:
        raise ConfigError(f"`scores` and `signs` (±1) must have the same length >= 2. "
                          f"Found {m} and {len(sign_arr)}.")
    check_number(confidence, "confidence", low=0, high=1)
    if guess_counts is None:
        guess_counts = sorted({max(1, int(f * m / 2)) for f in (0.01, 0.02, 0.05, 0.1, 0.2, 1.0)})
    order = np.argsort(score_arr, kind="stable")
    significance = (1 - confidence) / len(guess_counts)
    best: tuple[float, int, int] | None = None
    for k in guess_counts:
        k = min(int(k), m // 2)
        correct = int((sign_arr[order[-k:]] == 1).sum() + (sign_arr[order[:k]] == -1).sum())
        eps = _largest_rejected(lambda e: one_run_p_value(m, 2 * k, correct, e, delta), significance)
        if best is None or eps > best[0]:
            best = (eps, k, correct)
    assert best is not None  # guess_counts is not empty: the division above
    eps, k, correct = best
    return AuditBound(eps, "one run", confidence, delta, 2 * k, correct,
                      {"canaries": m, "k_tried": [int(k) for k in guess_counts], "k": int(k),
                       "accuracy": correct / (2 * k)})


def clopper_pearson_upper(successes: int, trials: int, significance: float) -> float:
    """One-sided upper confidence bound on a binomial rate (exact)."""
    from scipy import stats

    if trials == 0:
        return 1.0
    return 1.0 if successes >= trials else float(stats.beta.ppf(1 - significance, successes + 1, trials - successes))


def many_runs(scores: npt.ArrayLike, signs: npt.ArrayLike, *, delta: float, confidence: float = 0.95,
              seed: int = 0) -> AuditBound:
    """The many-run lower bound from one canary score per run and its true sign (±1)."""
    score_arr, sign_arr = np.asarray(scores, dtype=np.float64), np.asarray(signs)
    runs = len(score_arr)
    if runs < 4 or len(sign_arr) != runs:
        raise ConfigError(f"the many-run audit needs at least 4 runs with a score and a sign each. Found {runs}.")
    order = np.random.default_rng(seed).permutation(runs)
    pick, test = order[: runs // 2], order[runs // 2:]
    significance = (1 - confidence) / 2
    threshold = _best_threshold(score_arr[pick], sign_arr[pick], delta, significance)
    positives, negatives = sign_arr[test] == 1, sign_arr[test] == -1
    guessed = score_arr[test] > threshold
    false_neg, false_pos = int((~guessed & positives).sum()), int((guessed & negatives).sum())
    fnr = clopper_pearson_upper(false_neg, int(positives.sum()), significance)
    fpr = clopper_pearson_upper(false_pos, int(negatives.sum()), significance)
    eps = max(_log_ratio(1 - delta - fnr, fpr), _log_ratio(1 - delta - fpr, fnr), 0.0)
    correct = int((guessed & positives).sum() + (~guessed & negatives).sum())
    return AuditBound(eps, "many runs", confidence, delta, len(test), correct,
                      {"runs": runs, "threshold": float(threshold), "fnr_upper": fnr, "fpr_upper": fpr,
                       "false_negatives": false_neg, "false_positives": false_pos})


def _log_ratio(a: float, b: float) -> float:
    return math.log(a / b) if a > 0 and b > 0 else 0.0


def _best_threshold(scores: np.ndarray, signs: np.ndarray, delta: float, significance: float) -> float:
    """The threshold whose bound, computed on these runs as on the test half (Clopper–Pearson upper bounds on
    both rates), is highest: chosen here, tested on the other half."""
    positives, negatives = int((signs == 1).sum()), int((signs == -1).sum())
    best, best_value = float(np.median(scores)), -math.inf
    for threshold in np.unique(scores):
        guessed = scores > threshold
        fnr = clopper_pearson_upper(int(((~guessed) & (signs == 1)).sum()), positives, significance)
        fpr = clopper_pearson_upper(int((guessed & (signs == -1)).sum()), negatives, significance)
        value = max(_log_ratio(1 - delta - fnr, fpr), _log_ratio(1 - delta - fpr, fnr))
        if value > best_value:
            best, best_value = float(threshold), value
    return best
