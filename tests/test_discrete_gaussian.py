"""The noise sampler's output distribution, enumerated exactly, and the in-MPC sampler checked against it.

The pmf tests enumerate every candidate value (no sampling), so they see the tails and the lattice: every
cell inside the support has positive mass, the ratio to the rounded continuous Gaussian round(σ·Z) stays
inside the stated bound, and the hockey-stick divergence for integer shifts is the reference's up to that
bound. The secure sampler is then shown to make exactly the plaintext rule's decisions on the same
randomness, so the enumerated pmf is the pmf of what the MPC outputs.
"""

import math

import numpy as np
import pytest

from mpcdp.errors import ConfigError
from mpcdp.noise import discrete_gaussian as dg

# σ in grid units: the smallest accepted, two small ones (sub-2^10, where the rounded-Gaussian term dominates),
# and σ = 8.2e-4, 0.0068 and 0.0217 (Table 2, the MNIST CNN, the quick start) at their release precision.
SMALL = (16.0, 53.7, 445.3)


def enumerate_pmf(plan):
    n, log_p = zip(*dg.exact_log_pmf(plan))
    return np.concatenate(n), np.concatenate(log_p)


@pytest.mark.parametrize("sigma", SMALL)
def test_no_hole_inside_the_support_and_the_ratio_bounds_hold(sigma):
    plan = dg.plan_for(sigma)
    n, log_p = enumerate_pmf(plan)
    inside = np.isfinite(log_p)
    lo, hi = n[inside].min(), n[inside].max()
    assert inside[(n >= lo) & (n <= hi)].all()  # no unreachable cell between the support's ends
    assert -lo == hi + 0 or -lo == hi + 1 or -lo + 1 == hi  # symmetric up to the one cell of piece 0
    assert hi >= 9.8 * plan.sigma - 1 and plan.support_edge >= hi
    ratio_dg = log_p[inside] - dg.log_discrete_gaussian(n[inside], plan.sigma)
    ratio_rg = log_p[inside] - dg.log_rounded_gaussian(n[inside], plan.sigma)
    # the stated bound, not only a self-computed one: 4e-12 since the thresholds are multiples of 2^d within 2^-42
    # (five groups and the low factor's dropped bits at up to 2^-42 each, twice for the normalisation: η_dg 2.2e-12)
    assert np.abs(ratio_dg).max() <= plan.eta_dg <= 4e-12
    assert np.abs(ratio_rg).max() <= plan.eta_rounded
    assert np.abs(ratio_dg).max() <= 0.01  # against its own reference D_σ (releases use the rounded Gaussian
    # only at σ >= 2^20.5 units, test_release_points_have_no_hole_and_a_tiny_ratio)
    # the reference's mass outside the support is what the certificate calls the truncation
    outside = 1 - np.exp(dg.log_rounded_gaussian(n[inside], plan.sigma)).sum()
    assert outside <= plan.truncated_mass + 1e-12


def hockey_stick(log_p, shift, epsilon):
    p = np.exp(log_p)
    q = np.concatenate([np.zeros(shift), p[:-shift]])  # P(n − shift)
    return float(np.maximum(0.0, p - math.exp(epsilon) * q).sum())


@pytest.mark.parametrize("sigma", SMALL)
def test_hockey_stick_matches_the_rounded_gaussian(sigma):
    plan = dg.plan_for(sigma)
    n, log_p = enumerate_pmf(plan)
    log_ref = dg.log_rounded_gaussian(n, plan.sigma)
    residual = math.exp(plan.eta_rounded) - 1
    for shift in sorted({1, 2, 3, max(1, int(plan.sigma / 4)), max(1, int(plan.sigma / 2)), int(plan.sigma)}):
        for epsilon in (0.5, 1.0, 3.0):
            ours, ref = hockey_stick(log_p, shift, epsilon), hockey_stick(log_ref, shift, epsilon)
            # a pointwise ratio within e^±η moves δ(ε) to at most e^η·δ_ref(ε − 2η) <= 1.01·δ_ref + residual
            assert ours <= 1.01 * hockey_stick(log_ref, shift, epsilon - 2 * plan.eta_rounded) + residual, (shift, epsilon)
            assert ours >= ref / 1.01 - residual


@pytest.mark.parametrize("sigma_real", (8.2e-4, 0.0068, 0.0217))
def test_release_points_have_no_hole_and_a_tiny_ratio(sigma_real):
    from mpcdp.accounting.grid import release_precision

    p = release_precision(sigma_real)
    plan = dg.plan_for(sigma_real * 2**p)
    assert 2**20.5 <= plan.sigma <= 2**21.5
    worst, total, lo, hi = 0.0, 0.0, None, None
    for n, log_p in dg.exact_log_pmf(plan, chunk=1 << 22):
        inside = np.isfinite(log_p)
        if inside.any():
            cells = n[inside]
            assert inside[(n >= cells.min()) & (n <= cells.max())].all()
            lo = cells.min() if lo is None else lo
            assert hi is None or cells.min() == hi + 1  # contiguous across chunks
            hi = cells.max()
            worst = max(worst, float(np.abs(log_p[inside] - dg.log_rounded_gaussian(cells, plan.sigma)).max()))
            total += float(np.exp(log_p[inside]).sum())
    assert total == pytest.approx(1.0, abs=1e-9)
    assert worst <= plan.eta_rounded <= 1e-11
    assert plan.truncated_mass < 1e-20


def per_cell_log_weights(plan):
    """The oracle: every candidate value's ln(proposal · P(accept)) by the per-cell rule (its piece from
    dg.piece_of, no support shortcut), in one array over [−radius, radius)."""
    n = np.arange(-plan.radius, plan.radius, dtype=np.int64)
    piece = dg.piece_of(plan, n)
    T = dg.exponent(plan, n, piece)
    log_c = np.log(np.array(plan.Q, dtype=np.float64) / (64 * np.array(plan.piece_sizes(), dtype=np.float64)))
    log_w = log_c[piece].copy()
    with np.errstate(divide="ignore"):
        for (low, width, _), table in zip(dg.GROUPS, dg.group_thresholds()):
            log_w += np.log(table.astype(np.float64) / 2.0**dg.WORD)[(T >> low) & ((1 << width) - 1)]
    log_w += np.log1p(-(T & dg.LOW_MASK).astype(np.float64) / 2.0**dg.F)
    log_w[T >= (1 << (dg.F + 6))] = -np.inf
    return n, log_w


@pytest.mark.parametrize("sigma", (16.0, 17.3, *SMALL[1:], 5000.0, 70001.0))
def test_the_enumeration_is_the_per_cell_rule(sigma):
    """exact_log_pmf's shortcuts (only the support's stretches computed; the normaliser over |n| once for both
    signs) give the per-cell rule's numbers: the weights bit for bit, in chunks that split pieces anywhere,
    the normaliser within 1e-13 (float summation order), the acceptance alike."""
    plan = dg.plan_for(sigma)
    n, log_w = per_cell_log_weights(plan)
    chunks = list(dg._log_weights(plan, chunk=4099))
    assert np.array_equal(np.concatenate([c[0] for c in chunks]), n)
    assert np.array_equal(np.concatenate([c[1] for c in chunks]), log_w)
    finite = log_w[np.isfinite(log_w)]
    log_z = finite.max() + math.log(np.exp(finite - finite.max()).sum())
    assert abs(dg._log_sum(plan, chunk=4099) - log_z) <= 1e-13
    assert abs(dg._log_sum(plan) - log_z) <= 1e-13
    assert dg.exact_acceptance(plan) == pytest.approx(math.exp(log_z), rel=1e-13)
    _, log_p = enumerate_pmf(plan)
    assert np.array_equal(np.isfinite(log_p), np.isfinite(log_w))
    assert np.abs(log_p[np.isfinite(log_p)] - (finite - log_z)).max() <= 1e-13


def test_limits_are_refused_naming_the_field():
    for bad in (15.9, 2.0**22 * 1.01, float("nan"), -1.0):
        with pytest.raises(ConfigError, match="`sigma`"):
            dg.plan_for(bad)


def test_sigma_is_never_below_the_request():
    for sigma in (16.0, 17.3, 1000.1, 2**20 * 1.37, 2.0**22):
        plan = dg.plan_for(sigma)
        assert sigma <= plan.sigma <= sigma * (1 + 2e-3)


def test_plaintext_samples_follow_the_exact_pmf():
    """χ² of 2·10⁵ plaintext draws against the enumerated pmf, in 40 equal-mass bins (α = 1e-3)."""
    from scipy import stats

    plan = dg.plan_for(53.7)
    n, log_p = enumerate_pmf(plan)
    p = np.exp(log_p)
    cdf = np.cumsum(p)
    edges = np.searchsorted(cdf, np.linspace(0, 1, 41)[1:-1])
    x, counts = dg.sample_plain(plan, 200_000, seed=2026)
    observed = np.bincount(np.searchsorted(n[edges], x, side="left"), minlength=40)  # bin b: (n_{b−1}, n_b]
    expected = np.diff(np.concatenate([[0.0], cdf[edges], [1.0]])) * x.size
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    assert abs(counts["candidates"] * plan.acceptance - x.size) < 0.05 * x.size


def test_a_pass_whose_candidates_all_fail_the_first_factor_skips_the_rest():
    """One candidate per pass, 40 passes (the first factor fails with probability ≈ 0.31, so some pass has no
    survivor with probability 1 − 0.69^40 > 1 − 1e-6, and some has one with probability > 1 − 1e-20): with no
    survivor the pass opens nothing after the first factor's bits and accepts nothing; either way its
    openings are what :func:`declared_cost` says for its survivors, on every party alike."""
    from mpcdp.config import MpcConfig
    from mpcdp.noise.secure_gaussian import declared_cost
    from mpcdp.runtime.harness import run_parties
    from party_jobs import single_candidate_passes

    sigma = 445.3
    results = run_parties(single_candidate_passes, MpcConfig(parties=3, timeout_s=120), args=(sigma, 40))
    passes = results[0]
    assert all(r == passes for r in results)
    assert {p["survivors"] for p in passes} == {0, 1}
    for p in passes:
        assert p["steps"] == declared_cost([1], dg.plan_for(sigma), survivors=[p["survivors"]]).openings
        assert p["survivors"] or not p["accepted"]
    empty = next(p for p in passes if p["survivors"] == 0)
    full = next(p for p in passes if p["survivors"] == 1)
    # the other factors' circuit: their windows' opening, bernoulli_bits' 5 steps, 4 AND levels over the 11
    # factor bits, the accept bits
    assert len(full["steps"]) - len(empty["steps"]) == 1 + 5 + 4 + 1


def _secure_pass(provider: str, *, planted: bool = False):
    from mpcdp.config import MpcConfig
    from mpcdp.runtime.harness import run_parties
    from party_jobs import discrete_gaussian_pass

    sigma, n, seed = 445.3, 3000, 11
    config = MpcConfig(parties=3, provider=provider, timeout_s=300)
    return sigma, n, seed, run_parties(discrete_gaussian_pass, config, args=(sigma, n, seed, planted))


@pytest.fixture(scope="module")
def dealer_pass():
    """One pass at 3 parties with the dealer: Beaver multiplication with its material, the factors a circuit
    on dealt words XOR the committee's coin."""
    return _secure_pass("dealer")


@pytest.fixture(scope="module")
def planted_pass():
    """One pass at 3 parties with the dealer's own-word tables: the view audit's planted leak (dg-mpc/5)."""
    return _secure_pass("dealer", planted=True)


@pytest.fixture(scope="module")
def majority_pass():
    """One pass at 3 parties under honest-majority: the committee of parties 0–2 multiplies by replicated
    resharing and evaluates the factors as a circuit."""
    return _secure_pass("honest-majority")


@pytest.fixture(params=["dealer", "honest-majority"])
def secure_pass(request):
    """The pass under each provider."""
    return request.getfixturevalue("dealer_pass" if request.param == "dealer" else "majority_pass")


def _candidates_of(plan, n, seed):
    """The candidates' values, pieces and T from the members' seeded fields (what each member drew, combined)."""
    from mpcdp.noise.secure_gaussian import MEMBER_FIELDS

    streams = [np.random.default_rng([seed, rank]) for rank in range(3)]
    shares = [dg.draw_fields(plan, n, lambda c, g=g: g.integers(-(2**63), 2**63 - 1, size=c, dtype=np.int64,
                                                                 endpoint=True), MEMBER_FIELDS) for g in streams]
    fields = {name: np.bitwise_xor.reduce([s[name] for s in shares]) for name in shares[0]}
    values, piece = dg.candidate_values(plan, fields)
    return fields, values, piece, dg.exponent(plan, values, piece)


def test_the_mpc_sampler_makes_exactly_the_plaintext_decisions(secure_pass):
    """The candidates' values come from the members' seeded fields, and every accept decision is the plaintext
    rule's, under either provider. The factors are a circuit: the test opens their uniform words (dealt words
    XOR the committee's coin) and runs the rule on them, the first factor's for every candidate, the others'
    for its survivors. The planted leak's tables: the next test."""
    from mpcdp.noise.gaussian_factors import FIRST_GROUP

    sigma, n, seed, results = secure_pass
    plan = dg.plan_for(sigma)
    fields, values, piece, T = _candidates_of(plan, n, seed)
    r = results[0]
    kept = r["kept"].numpy()
    fields[f"v{FIRST_GROUP}"] = r["uniform"][f"v{FIRST_GROUP}"].numpy()
    for name in dg.RANDOM_FIELDS:
        if name.startswith("v") and name != f"v{FIRST_GROUP}":
            words = r["uniform"][name].numpy()
            if name == "v_low":  # 62-bit words; the plaintext rule's F-bit v_low is their top F bits
                words = (words >> (dg.WORD - dg.F)) & ((1 << dg.F) - 1)
            fields[name] = np.zeros(n, dtype=np.int64)
            fields[name][kept] = words
    first = dg.below(fields[f"v{FIRST_GROUP}"], dg.group_thresholds()[FIRST_GROUP][
        (T >> dg.GROUPS[FIRST_GROUP][0]) & ((1 << dg.GROUPS[FIRST_GROUP][1]) - 1)], dg.WORD)
    assert np.array_equal(np.nonzero(first)[0], kept)
    decisions = dg.accept(plan, T, fields)
    for r in results:
        assert np.array_equal(r["values"].numpy(), values)
        assert np.array_equal(r["accepted"].numpy(), decisions)
    assert abs(decisions.mean() - plan.acceptance) < 5 * np.sqrt(0.25 / decisions.size)  # 5 standard errors: α < 1e-6
    uniform = np.concatenate([w.numpy() for w in results[0]["uniform"].values()])
    assert 0 <= uniform.min() and uniform.max() < 2**dg.WORD and uniform.max() >= 2**(dg.WORD - 4)


def _rule_tables(reads: list, width: int) -> dict[bytes, float]:
    """Every table a window's factors can make, with its probability. ``reads`` lists (sub_low, sub_width,
    thresholds) of the window's factors; bit a of a table is the AND over them of the plaintext rule
    dg.below(W, TH[(a >> sub_low) mod 2^sub_width]) for independent uniform 62-bit words W. Only the top set bit
    of W matters: none (W = 0) with probability 2^-62, bit p with probability 2^(p−62). Tables as the bytes of
    their 0/1 entries."""
    tops = [(0, 2.0**-dg.WORD)] + [(1 << p, 2.0 ** (p - dg.WORD)) for p in range(dg.WORD)]
    values = np.arange(1 << width)
    tables = {np.ones(1 << width, dtype=np.uint8).tobytes(): 1.0}
    for lo, w, thresholds in reads:
        th = np.asarray(thresholds, dtype=np.int64)[(values >> lo) & ((1 << w) - 1)]
        column: dict[bytes, float] = {}
        for word, prob in tops:
            key = dg.below(np.full(1 << width, word, dtype=np.int64), th, dg.WORD).astype(np.uint8).tobytes()
            column[key] = column.get(key, 0.0) + prob
        combined: dict[bytes, float] = {}
        for x, px in tables.items():
            for y, py in column.items():
                key = (np.frombuffer(x, np.uint8) & np.frombuffer(y, np.uint8)).tobytes()
                combined[key] = combined.get(key, 0.0) + px * py
        tables = combined
    return tables


def _table_bits(words: np.ndarray, width: int) -> np.ndarray:
    """(n, 2^width) entries of tables packed 64 to a word, entry a at word a // 64, bit a % 64."""
    a = np.arange(1 << width)
    return ((words[:, a // 64] >> (a % 64)) & 1).astype(np.uint8)


def _table_frequencies_p(expected: list[tuple[float, int]], n: int) -> float:
    """p-value that n tables' counts follow their (expected, observed) pairs: χ² over the tables expected at
    least 5 times, the rare ones (the rest) pooled into the smallest of those when the rest is expected under
    5 times (a χ² cell expected 0.03 times made one rare table's draw read p ~ 1e-7: a false alarm in one run
    of 30), and the rest's count by its exact binomial upper tail (too many rare tables); the smaller of the
    two p-values, doubled (Bonferroni: the window's α stays the α of the test)."""
    from scipy import stats

    big = [(e, o) for e, o in expected if e >= 5]
    rest = (sum(e for e, _ in expected) - sum(e for e, _ in big), n - sum(o for _, o in big))
    tail = float(stats.binom.sf(rest[1] - 1, n, min(1.0, rest[0] / n)))
    if rest[0] >= 5 or not big:
        cells = big + [rest]
    else:  # pooled into the smallest cell expected at least 5 times
        cells = big[:-1] + [(big[-1][0] + rest[0], big[-1][1] + rest[1])]
    chi = stats.chisquare([o for _, o in cells], [e for e, _ in cells]).pvalue if len(cells) > 1 else 1.0
    return min(1.0, 2 * min(float(chi), tail))


def _looked_up(tables: np.ndarray, mask: np.ndarray, T: np.ndarray, spec, pvalues: list) -> np.ndarray:
    """The AND of the factors the dealt ``tables`` give for words T, after checking that each table, moved back
    by its window of ``mask``, is one the plaintext rule makes (appending the p-value of their frequencies,
    :func:`_table_frequencies_p`) and that each bit factor's one-hot and parity are consistent; a bit factor
    passes when NOT [V < TH]."""
    windows, factors, bit_factors = spec
    rows, passed, column = np.arange(T.size), np.ones(T.size, dtype=bool), 0
    for i, (lo, width) in enumerate(windows):
        size, words = 1 << width, -(-(1 << width) // 64)
        dealt = _table_bits(tables[:, column:column + words], width)
        column += words
        r = (mask >> lo) & (size - 1)
        table = dealt[rows[:, None], np.arange(size)[None, :] ^ r[:, None]]  # entry a: the dealt entry at a ⊕ r
        allowed = _rule_tables([(f[1], f[2], f[3]) for f in factors if f[0] == i], width)
        keys = [row.tobytes() for row in table]
        assert all(key in allowed for key in keys), f"window {(lo, width)}: a table the rule cannot make"
        counts = {key: keys.count(key) for key in set(keys)}
        expected = sorted(((p * T.size, counts.get(key, 0)) for key, p in allowed.items()), reverse=True)
        pvalues.append(_table_frequencies_p(expected, T.size))
        passed &= table[rows, (T >> lo) & (size - 1)] == 1
    for j, (lo, bits, _) in enumerate(bit_factors):
        entry = tables[:, column + j]
        q, beta = entry & ((1 << bits) - 1), (entry >> 63) & 1
        assert np.all((q & (q - 1)) == 0) and np.all(((entry >> bits) & ((1 << (63 - bits)) - 1)) == 0)
        parity = lambda x: np.array([bin(int(v)).count("1") & 1 for v in x], dtype=np.int64)  # noqa: E731
        assert np.array_equal(beta, parity(q & ((mask >> lo) & ((1 << bits) - 1))))
        passed &= parity(q & ((T >> lo) & ((1 << bits) - 1))) == 0
    return passed


def test_the_planted_leaks_tables_are_the_plaintext_rule(planted_pass):
    """Under the view audit's planted leak (circuit dg-mpc/5, :func:`mpcdp.mpc.bernoulli.planted_dealer_tables`)
    each Bernoulli factor is read from a table the dealer made from its own uniform words: the leak the audit
    must find is the real dg-mpc/5 sampler. Opened here for the test: every table and mask. Each table, moved
    back by its mask's window, is one that the plaintext rule dg.below makes for some uniform words (every such
    table is enumerated with its probability), the tables' frequencies match those probabilities (per window,
    five windows, each at α = 2e-6, :func:`_table_frequencies_p`: χ² with the rare tables pooled, and their
    count's binomial tail; the dealer's words are fresh every run, so family-wise 1e-5. A χ² cell for the rare
    tables expected 0.03 times failed one correct run in about 30 (seen on main and on plan44b: p = 2e-8,
    1.5e-7), the low bits' one-hot and parity agree with the
    mask, and the accept decisions are the tables' AND at each candidate's T (from the members' seeded fields):
    the first factor for every candidate, the others for its survivors. Power at 1e-6 each (noncentral χ²):
    tables from words with 61 random bits (the top one lost) give the first window λ = 3000 on 3,000 rows (9
    df: power 1 to double precision), the (43, 6) window λ = 143 (5 df: 1 − 3e-10), the (55, 7) one λ = 40
    (0.93); any departure with λ >= 84 is found with power 0.998. The (32, 5) and (37, 6) windows are one table
    bar rare ones (expected 0.03 and 2.1 times): only an excess of rare tables shows there."""
    from mpcdp.noise.gaussian_factors import FIRST_GROUP, OTHER_GROUPS, table_spec

    sigma, n, seed, results = planted_pass
    plan = dg.plan_for(sigma)
    _, values, _, T = _candidates_of(plan, n, seed)
    r = results[0]
    u = {name: v.numpy() for name, v in r["uniform"].items()}
    kept, pvalues = r["kept"].numpy(), []
    first = _looked_up(u["first-tables"], u["first-mask"], T, table_spec((FIRST_GROUP,), low=False, above=False),
                       pvalues)
    assert np.array_equal(np.nonzero(first)[0], kept)
    decisions = np.zeros(n, dtype=bool)
    decisions[kept] = _looked_up(u["rest-tables"], u["rest-mask"], T[kept],
                                 table_spec(OTHER_GROUPS, low=True, above=True), pvalues)
    for party in results:
        assert np.array_equal(party["values"].numpy(), values)
        assert np.array_equal(party["accepted"].numpy(), decisions)
    assert abs(decisions.mean() - plan.acceptance) < 5 * np.sqrt(0.25 / decisions.size)  # 5 standard errors: α < 1e-6
    assert len(pvalues) == 5 and min(pvalues) > 2e-6, pvalues


def test_both_providers_draw_the_same_candidates_from_the_same_party_randomness(dealer_pass, majority_pass):
    """The material only masks: with the members' random fields seeded alike, the in-MPC discrete Gaussian
    draws the same candidate values under both providers (the dealer's run and the dealer-free one above).
    The Bernoulli factors' uniform words are dealt words XOR the committee's coin, so the accept decisions
    differ between runs; that each follows the plaintext rule on its own words is the test above's."""
    dealer, free = dealer_pass[3][0], majority_pass[3][0]
    assert dealer_pass[:3] == majority_pass[:3]  # the same σ, candidates and seed
    assert np.array_equal(dealer["values"].numpy(), free["values"].numpy())
    assert min(dealer["accepted"].float().mean().item(), free["accepted"].float().mean().item()) > 0.3
    assert free["dealer_requests"] == 0 and dealer["dealer_requests"] > 0


def test_the_mpc_sampler_costs_what_it_declares(secure_pass):
    """Openings and resharings in order, operations, rounds, requests for material and every party's bytes of
    them, as :func:`declared_cost` states for the provider (replicated multiplication under honest-majority)."""
    from mpcdp.noise.secure_gaussian import declared_cost

    sigma, n, _, results = secure_pass
    replicated = results[0]["dealer_requests"] == 0  # the honest-majority run
    r = results[0]
    declared = declared_cost([n], dg.plan_for(sigma), survivors=[r["survivors"]], replicated=replicated)
    assert [e for label, e in r["openings"] if label.startswith("dg-")] == declared.openings
    assert [e for _, e in r["reshares"]] == declared.reshares and bool(declared.reshares) == replicated
    for kind, count in declared.op_counts().items():
        assert r["ops"].get(kind, 0) == count, kind
    # the rest's coin and its flags' rotation: a request per run of first chunks (4, 5) each (two fewer than the
    # plan with t's bits 8, 4 a group of their own: (4, 1, 5))
    assert r["material_requests"] == declared.dealer_requests == (14 if replicated else 28)
    # the committed coin: two public exchanges among the members (commitments, then parts with nonces)
    assert [(label, n) for label, n, _ in r["coin"]] == [("dg-coin (commitments)", 4), ("dg-coin", 8)]
    assert declared.exchanges == [32, 64]
    assert r["rounds"] == declared.rounds(3)
    for rank, party in enumerate(results):
        assert party["step_bytes"] == declared.bytes(3, rank)[0], rank
    # opened: masked values and the accept bits only
    assert {label for label, _ in r["openings"]} <= {"dg-coin", "dg-piece", "dg-point", "dg-b2a-carry", "dg-b2a", "dg-square", "dg-a2b-mask",
                                                     "dg-a2b-carry", "dg-a2b-add", *[f"dg-{stage}-{step}" for stage in ("first", "rest") for step in
                                                       ("group", "bern-flags", "bern-supers",
                                                        "bern-and", "bern-pick", "bern-last", "window")],
                                                     "dg-first-bits", "dg-accept", "dg-accept-bits"}


@pytest.mark.parametrize("sigma", [40.0, 445.3, 5000.0])
def test_the_first_factor_rejects_most_and_survival_over_acceptance_is_as_estimated(sigma):
    """Exact, by enumerating every candidate value: the first factor's pass probability over the acceptance is
    within 2% of :data:`SURVIVAL_OVER_ACCEPTANCE` (what cost estimates use), and it makes most rejections (over
    55%)."""
    from mpcdp.noise.gaussian_factors import FIRST_GROUP
    from mpcdp.noise.secure_gaussian import SURVIVAL_OVER_ACCEPTANCE

    plan = dg.plan_for(sigma)
    n = np.arange(-plan.radius, plan.radius, dtype=np.int64)
    piece = dg.piece_of(plan, n)
    proposal = np.array(plan.Q, dtype=np.float64)[piece] / (64 * np.array(plan.piece_sizes(), dtype=np.float64)[piece])
    low, width, _ = dg.GROUPS[FIRST_GROUP]
    table = dg.group_thresholds()[FIRST_GROUP].astype(np.float64) / 2.0**dg.WORD
    first = float((proposal * table[(dg.exponent(plan, n, piece) >> low) & ((1 << width) - 1)]).sum())
    acceptance = dg.exact_acceptance(plan)
    assert abs(first / acceptance / SURVIVAL_OVER_ACCEPTANCE - 1) < 0.02
    assert (1 - first) > 0.55 * (1 - acceptance)  # 58–70% of the rejections at σ = 16..7e4 (t's bits 8..1/4;
    # 83–87% when it read bits 2..1/16)
