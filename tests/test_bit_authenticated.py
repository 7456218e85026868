"""Authenticated bits with SPDZ2k's k = 1 (mpcdp.mpc.bit_authenticated, the bit domain of dg-auth/9), run by m
simulated parties in one process with the deviation harness (tests/deviation_harness.py: mpcdp's own protocol
code and the dealer's own formulas for the bit material), and the check's soundness in a vectorised model at a
reduced λ and s (mpcdp/README.md, "Authenticated bits")."""

import collections
import random

import pytest
import torch
from scipy.stats import binom

import deviation_harness as H
from mpcdp.mpc import authenticated, bit_authenticated as B
from mpcdp.mpc.auth_circuits import COMBINE_ROWS, BitArith, PlainArith, combine_words, one_hot


def _job(n: int):
    """Two vectors of dealt bits x, y (one XORed with a public pattern): opens x, y, x AND y, x XOR y, NOT x, the
    one-hot of (x, y) by the circuits' own code, and x crossed into Z_2^128 by daBits; then both checks."""
    def job(ctx):
        pattern = torch.arange(n) % 3 == 0
        x = B.add_public(ctx, B.dealt_bits(ctx, n), pattern.to(torch.int64))
        y = B.dealt_bits(ctx, n)
        A = BitArith(ctx, "t")
        both = A.mul(x, y)
        hot = one_hot(A, A.cat([A.reshape(x, n, 1), A.reshape(y, n, 1)], 1))
        arith = B.to_arithmetic(ctx, x, label="cross")
        opened = {name: B.open_bits(ctx, v, label=name, kind="release", reason="test")
                  for name, v in [("x", x), ("y", y), ("and", both), ("xor", x + y),
                                  ("not", B.add_public(ctx, x, torch.tensor(1))), ("hot", hot)]}
        B.bit_check(ctx, label="test")
        opened["arith"] = authenticated.reveal_checked(ctx, arith, label="cross", reason="test").to(torch.int64)
        return opened
    return job


def test_bit_gates_a_daBit_crossing_and_the_check_give_the_plaintext_results_at_m_3_and_5():
    for m in (3, 5):
        outcomes = H.SimParties(m, seed=m).run(_job(70))
        assert [what for what, _ in outcomes] == ["output"] * m, outcomes
        got = outcomes[0][1]
        for _, other in outcomes[1:]:
            assert all(torch.equal(got[k], other[k]) for k in got)
        x, y = got["x"], got["y"]
        assert 10 < int(x.sum()) < 60 and 10 < int(y.sum()) < 60  # dealt bits: uniform
        assert torch.equal(got["and"], x & y) and torch.equal(got["xor"], x ^ y)
        assert torch.equal(got["not"], 1 - x) and torch.equal(got["arith"], x)
        plain = one_hot(PlainArith(), torch.stack([x, y], 1))
        assert torch.equal(got["hot"], plain) and torch.equal(plain.argmax(1), x + 2 * y)


def test_every_deviation_at_every_send_or_fetch_of_the_bit_domain_stops_every_honest_party():
    """Every kind of deviation at each of the job's sends (openings of packed bits, the daBit crossing, the check's
    parities, commitments and σ) and other material at each fetch, at m = 3 with a random cheater: every honest
    party stops on a failed check, or the deviation changed nothing any party opened (a flipped padding bit)."""
    m, seed, rng = 3, 7, random.Random(7)
    job = _job(40)
    honest, sends, fetches = H.events(m, job, seed)
    assert any("bit-check parities" in label for label in sends)
    seen: collections.Counter = collections.Counter()
    for kind in H.KINDS:
        events = range(len(fetches)) if kind == "material" else range(len(sends))
        for event in events:
            deviation = H.random_deviation(rng, m, len(sends), len(fetches), kind=kind)
            deviation.event = event
            outcomes = H.SimParties(m, seed, deviation).run(job)
            verdicts = []
            for rank, (what, value) in enumerate(outcomes):
                if rank == deviation.cheater:
                    continue
                if what == "output":
                    assert all(torch.equal(value[k], honest[k]) for k in honest), deviation
                    verdicts.append("same")
                else:
                    assert isinstance(value, (H.PeerStopped, authenticated.MacCheckFailed)), (deviation, value)
                    assert getattr(value, "party", None) in (None, deviation.cheater)
                    verdicts.append("peer" if isinstance(value, H.PeerStopped) else "mac")
            assert verdicts.count("peer") < len(verdicts), deviation
            seen[kind, "mac" if "mac" in verdicts else "same"] += 1
    for kind in H.KINDS:
        assert seen[kind, "mac"] > 0, seen


def test_each_partys_sigma_share_stays_in_the_check_ring_z_2_48():
    """Every σ_i a party opens in the bit check lies in [0, 2^48), SPDZ2k's Z_2^(k+s): its bits above 2^48 would be
    carries of party 0's dealt MAC shares (integers in [0, 2^48)), which depend on α_b·x̂ and which no proof of the
    check covers. Parties 1..m−1's MAC shares are uniform 64-bit words, so an unreduced σ_i exceeds 2^48 with
    probability 1 − 2^-16 per party."""
    sent: list[torch.Tensor] = []

    class Recording(H.SimParties):
        def exchange(self, rank, messages, label):
            if label.endswith("bit-check σ"):
                sent.extend(message[:1].clone() for message in messages.values())
            return super().exchange(rank, messages, label)

    for m in (3, 5):
        sent.clear()
        outcomes = Recording(m, seed=11 + m).run(_job(50))
        assert [what for what, _ in outcomes] == ["output"] * m, outcomes
        assert len(sent) == m * m
        words = torch.cat(sent)
        assert bool(((words >= 0) & (words < 1 << 48)).all()), words


def test_one_parity_row_lets_a_flipped_bit_pass_half_the_time_and_lambda_rows_bound_it_by_2_to_the_minus_lambda():
    """The vectorised model (:func:`deviation_harness.bit_model_check`, the check's combination and σ formulas):
    party 1 flips opened bits, fixes each row's bit 0 after seeing the coin and corrects its σ with a guess of
    the key. With the bit domain's s (47): one row passes about half the flips (why SPDZ2k's single combination
    is not enough at k = 1), four rows about 1/16 (two-sided binomial tests at α = 1e-6), λ = 48 rows none of
    4,000. With λ = 48 and s = 6 the MAC term shows: passes occur, at most the SPDZ2k bound (s+1)·2^-s = 7/64
    (one-sided)."""
    trials = 4000
    assert B.S_BITS == 47
    for rows, rate in ((1, 0.5), (4, 1 / 16)):
        passed, changed = H.bit_model_check(rows, B.S_BITS, trials, seed=rows)
        assert bool(changed.all())
        wins = int(passed.sum())
        assert binom.sf(wins - 1, trials, rate) >= 1e-6 and binom.cdf(wins, trials, rate) >= 1e-6, (rows, wins)
    passed, _ = H.bit_model_check(B.PARITY_CHECKS, B.S_BITS, trials, seed=5)
    assert not bool(passed.any())
    passed, _ = H.bit_model_check(B.PARITY_CHECKS, 6, trials, seed=6)
    wins = int(passed.sum())
    assert 0 < wins and binom.sf(wins - 1, trials, 7 / 64) >= 1e-6, wins


@pytest.mark.parametrize("n", [1, 3, 4, 130])
def test_the_dealers_packed_mac_shares_keep_every_share_mod_2_48(n):
    """Party 0's bit-domain MAC shares travel as 6 bytes each (auth_bits.pack_macs): unpacked, each equals the
    dealer's word mod 2^48 (extremes included), in ⌈6n/8⌉ words."""
    from mpcdp.adapter import auth_bits

    macs = torch.randint(-(1 << 63), (1 << 63) - 1, (n,), generator=torch.Generator().manual_seed(n))
    macs[0] = -1
    words = auth_bits.pack_macs(macs)
    assert words.numel() == -(-6 * n // 8) == auth_bits.mac_words(n)
    assert torch.equal(auth_bits.unpack_macs(words, n), macs & ((1 << 48) - 1))


@pytest.mark.parametrize("n", [1, 63, 64, 130])
def test_packing_keeps_every_bit(n):
    bits = torch.randint(0, 2, (n,), generator=torch.Generator().manual_seed(n))
    words = B.pack(bits)
    assert words.numel() == -(-n // 64) and torch.equal(B.unpack(words, n), bits)


def test_the_checks_parity_combinations_are_exact_mod_2_64_across_a_chunk_boundary():
    """bit_check's Σ_j b_tj·v_j (float32 products on 8-bit limbs) equals the int64 sum, for words at the extremes
    and columns past one chunk of 2^16, the vectors given whole or as openings of uneven lengths (pieces starting
    at bit offsets that are not byte boundaries, short ones joined by ``_runs``)."""
    g = torch.Generator().manual_seed(64)
    n = (1 << 16) + 77
    rows = torch.randint(-(1 << 63), (1 << 63) - 1, (B.PARITY_CHECKS, -(-n // 64)), generator=g)
    vectors = torch.randint(-(1 << 63), (1 << 63) - 1, (2, n), generator=g)
    vectors[0, :1000], vectors[1, :1000] = -1, -(1 << 63)
    bits = B.unpack(rows.reshape(-1), rows.numel() * 64).reshape(B.PARITY_CHECKS, -1)[:, :n]
    expected = torch.stack([(bits * v).sum(1) for v in vectors], 1)
    assert torch.equal(B._combinations(rows, [vectors.T]), expected)
    cuts = [0, 5, 12, 1000, 1001, 70_000, n]
    pieces = [tuple(vectors[:, a:b]) for a, b in zip(cuts, cuts[1:])]
    assert torch.equal(B._combinations(rows, [torch.stack(run, 1) for run in B._runs(pieces)]), expected)


@pytest.mark.parametrize("L", [64, 300])
def test_combine_words_is_exact_mod_2_64_on_the_words_own_limbs(L):
    """auth_circuits.combine_words (a float matrix product on the words' 16-bit limbs, read as their little-endian
    bytes) equals the int64 sum of products for words at the extremes, a batch dimension, a transposed (not
    contiguous) input, L = 300 rows of ones (partial sums past float32's exact range: the float64 path), and more
    rows than one block of COMBINE_ROWS (three whole blocks and a partial one)."""
    g = torch.Generator().manual_seed(L)
    x = torch.randint(-(1 << 63), (1 << 63) - 1, (2, 33, L), generator=g)
    x[0, :5], x[1, :5] = -1, -(1 << 63)
    for matrix in (torch.randint(0, 2, (L, 7), generator=g), torch.ones(L, 3, dtype=torch.int64)):
        expected = (x.unsqueeze(-1) * matrix).sum(-2)
        assert torch.equal(combine_words(x, matrix), expected)
        assert torch.equal(combine_words(x.transpose(0, 1).contiguous().transpose(0, 1), matrix), expected)
    many = torch.randint(-(1 << 63), (1 << 63) - 1, (3, COMBINE_ROWS + 5, L), generator=g)  # 3 blocks and a part
    matrix = torch.randint(0, 2, (L, 5), generator=g)
    assert torch.equal(combine_words(many, matrix), (many.unsqueeze(-1) * matrix).sum(-2))
