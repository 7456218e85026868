"""The view audits' permutation tests (mpcdp.jobs.permutation): the sampled p is valid where the normal tail is
not (a count constant in most calls, the dealer's request sizes under dg-auth/7), agrees with the exact
permutation distribution, and resolves a role's Bonferroni level."""

import itertools
import math

import numpy as np
from scipy import stats

from mpcdp.jobs import permutation as P


def _null_count(rng: np.random.Generator, calls: int = 40) -> np.ndarray:
    """A count that is 5 in most calls and 6 in about one of 40 (an extra pass), against x²/σ² − 1 for
    independent x ~ N(0, 16²) rounded: the shape the dealer's request sizes take, under independence."""
    count = 5 + (rng.random(calls) < 1 / 40)
    x = np.round(rng.normal(0, 16, calls))
    return np.outer(count - count.mean(), (x / 16) ** 2 - 1)


def test_the_sampled_p_keeps_its_level_on_a_mostly_constant_count_where_the_normal_tail_does_not():
    """4,000 independent data sets at level 10^-3: the sampled p alarms at most k times, k the binomial bound
    at α = 10^-6 for a valid test (P(Binomial(4000, 10^-3) > k) < 10^-6); the normal tail alarms more often
    than that on the same data (the false 'dependent' of the dealer's request sizes, z = 4.07 at 40 calls)."""
    rng, level, trials = np.random.default_rng(5), 1e-3, 4000
    bound = int(stats.binom.isf(1e-6, trials, level))
    normal = sampled = 0
    for _ in range(trials):
        scores = _null_count(rng)
        if not scores.any():
            continue
        normal += P.permutation_test(scores, two_sided=True)[1] < level
        sampled += P.sampled_p(scores, two_sided=True, permutations=math.ceil(2 / level)) < level
    assert sampled <= bound, (sampled, bound)
    assert normal > bound, (normal, bound)


def _exact_p(scores: np.ndarray, two_sided: bool) -> float:
    n, mean, _ = P._moments(scores)
    observed = float(np.trace(scores)) - mean
    totals = np.array([scores[np.arange(n), list(order)].sum() - mean for order in itertools.permutations(range(n))])
    hits = np.abs(totals) >= abs(observed) - 1e-9 if two_sided else totals >= observed - 1e-9
    return float(hits.mean())


def test_the_sampled_p_agrees_with_the_enumerated_permutation_distribution(monkeypatch):
    """At 7 calls (5,040 permutations, enumerated), with 4,000 exceedances before stopping (relative standard
    error 1.6%): the sampled p lies within 5 standard errors of the exact p (α ≈ 10^-6 per case), for
    two-sided counts with ties and a one-sided general score matrix."""
    monkeypatch.setattr(P, "EXCEEDANCES", 4000)
    rng = np.random.default_rng(7)
    cases = [(np.outer(rng.integers(0, 3, 7) - 1.0, rng.normal(size=7) ** 2 - 1), True),
             (np.outer([0, 0, 0, 0, 0, 0, 1.0], rng.normal(size=7) ** 2 - 1), True),
             (rng.normal(size=(7, 7)) + np.eye(7), False)]
    for scores, two_sided in cases:
        exact = _exact_p(scores, two_sided)
        got = P.sampled_p(scores, two_sided=two_sided, permutations=10 ** 6)
        assert abs(got - exact) <= 5 * exact / math.sqrt(4000) + 1e-12, (got, exact)


def test_a_view_equal_to_the_noise_reaches_half_the_roles_level_and_a_match_statistic_keeps_its_poisson_p():
    """A count that is x²/σ² itself: every permutation is less extreme, so the sampled p is 1/(B + 1) with
    B = ⌈2/level⌉, below the level by half; a match statistic (no scores) is returned as it is."""
    rng = np.random.default_rng(3)
    y = rng.normal(size=60) ** 2
    scores = np.outer(y - y.mean(), y - 1)
    level = 1e-4 / 7
    got = P.confirmed(P.permutation_statistic("request sizes", scores, two_sided=True), level)
    assert got.p == 1 / (math.ceil(2 / level) + 1) and got.p < level / 2 + 1e-12
    match = P.Statistic("own fields", 3.0, 0.02)
    assert P.confirmed(match, level) is match


def test_an_alpha_the_sampled_p_cannot_resolve_in_bounded_time_is_refused_naming_the_field():
    """Both view audits refuse α below MIN_ALPHA before any process starts (the sampled p of an extreme
    statistic would take 2k/α permutations), naming --alpha; α = MIN_ALPHA itself passes this check."""
    import pytest

    from mpcdp.errors import ConfigError
    from mpcdp.jobs import auth_views, views

    with pytest.raises(ConfigError, match="--alpha"):
        views.run_views(parties=3, provider="dealer", calls=20, alpha=P.MIN_ALPHA / 2, plant=None, releases=0)
    with pytest.raises(ConfigError, match="--alpha"):
        auth_views.run_auth_views(parties=3, calls=10, sigma=16.0, alpha=P.MIN_ALPHA / 2, plant=None, releases=0)
    with pytest.raises(ConfigError, match="--plant-leak under --security malicious"):  # past the α check
        auth_views.run_auth_views(parties=3, calls=10, sigma=16.0, alpha=P.MIN_ALPHA, plant="party 1", releases=10)


def _one_outlier_count(calls: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """A count that is 5 in every call but one, 6 in call 0, whose sample is the largest |x| (4σ): the shape of
    the dg-auth/7 views run's false alarm, made extreme. The normal tail says p ≈ 6·10^-9; under the permutation
    distribution the statistic is that large whenever the largest x lands on call 0: p = 1/40."""
    rng = np.random.default_rng(11)
    x = np.clip(np.round(rng.normal(0, 16, calls)), -40, 40)
    x[0] = 64
    count = np.full(calls, 5.0)
    count[0] = 6
    return count, x


def test_both_audits_report_a_roles_p_from_the_sampled_distribution_not_the_normal_tail():
    """The role entry of each audit (views._entry, auth_views._entry) with the one-outlier count as its only
    statistic: the normal tail's p is below 10^-7, the entry's p is the sampled one (about 1/40) and its
    verdict 'independent' at α = 1e-4."""
    from mpcdp.jobs import auth_views, views

    count, x = _one_outlier_count()
    scores = np.outer(count - count.mean(), (x / 16) ** 2 - 1)
    assert P.permutation_test(scores, two_sided=True)[1] < 1e-7
    found = [P.permutation_statistic("request sizes", scores, two_sided=True)]
    plain = views._entry("dealer", "dealer", found, [], {}, sigma=16.0, calls=40, releases=0, alpha=1e-4)
    malicious = auth_views._entry("dealer", "dealer", [("request sizes", scores, True)], [], {}, sigma=16.0,
                                  calls=40, releases=0, alpha=1e-4)
    for entry in (plain, malicious):
        assert entry["verdict"] == "independent" and 0.01 < entry["p"] < 0.06, entry
