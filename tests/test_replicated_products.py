"""Replicated multiplication among parties 0–2 under the honest-majority provider: real party processes.

Checked: shifted ANDs and ring products by resharing equal the plaintext (and Beaver's) results on every
element; what a party receives is one share per variable, uniform words (KS at α = 1e-6) even of a victim's
input that is not properly shared, so one party's view does not depend on the secrets, while two parties
hold all three shares and recover it; every party's output share is uniform (the fresh α); the resharing is
audited as kind ``share``; and outside a committee of exactly parties 0–2 (a dealer, or m > 3 without a
committee) the multiplication stays Beaver's.
"""

import numpy as np
import pytest
import torch
from scipy import stats

from mpcdp.config import MpcConfig
from mpcdp.runtime.harness import run_parties
from party_jobs import replicated_products

N, SEED = 800, 35
AND_PAIRS, MUL_PAIRS = [(0, 1, 3), (1, 0, -5), (0, 0, 7), (2, 1, 0)], [(0, 1), (1, 1), (2, 2)]
VICTIM = torch.arange(N, dtype=torch.int64) * 1000 + 7  # far from uniform


def _inputs(parties: int):
    """Every party's seeded shares (a, b), as the party job draws them."""
    out = []
    for rank in range(parties):
        rng = np.random.default_rng([SEED, rank])
        out.append([torch.from_numpy(rng.integers(-(2**63), 2**63 - 1, size=N, dtype=np.int64, endpoint=True))
                    for _ in range(2)])
    return out


def _shift(x, s):
    return x << s if s >= 0 else x >> (-s)


def _xor(tensors):
    total = torch.zeros_like(tensors[0])
    for t in tensors:
        total ^= t
    return total


def _uniform(words) -> float:
    return stats.kstest((words.reshape(-1).double() / 2.0**64 + 0.5).numpy(), "uniform").pvalue


@pytest.fixture(scope="module")
def replicated():
    return run_parties(replicated_products, MpcConfig(parties=3, provider="honest-majority", timeout_s=90.0),
                       party_args=[(None, N, SEED), (None, N, SEED), (VICTIM, N, SEED)])


def test_replicated_ands_and_products_equal_the_plaintext_and_beavers(replicated):
    assert replicated[0]["kind"] == {"ands": "ReplicatedShiftedAnds", "beaver_ands": "BeaverShiftedAnds",
                                     "products": "ReplicatedProducts", "beaver_products": "BeaverProducts"}
    shares = _inputs(3)
    a, b = _xor([s[0] for s in shares]), _xor([s[1] for s in shares])
    variables = {0: a, 1: b, 2: VICTIM}
    for i, (u, v, s) in enumerate(AND_PAIRS):
        want = variables[u] & _shift(variables[v], s)
        assert torch.equal(_xor([r["ands"][i] for r in replicated]), want), (u, v, s)
        assert torch.equal(_xor([r["beaver_ands"][i] for r in replicated]), want), (u, v, s)
    a, b = sum(s[0] for s in shares), sum(s[1] for s in shares)
    variables = {0: a, 1: b, 2: VICTIM}
    for i, (u, v) in enumerate(MUL_PAIRS):
        want = variables[u] * variables[v]
        assert torch.equal(sum(r["products"][i] for r in replicated), want), (u, v)
        assert torch.equal(sum(r["beaver_products"][i] for r in replicated), want), (u, v)


def test_each_party_receives_one_uniform_share_per_variable_and_two_parties_recover_it(replicated):
    """Party i receives party i + 1's shares, once per variable (3 variables of N), in one message recorded as
    kind ``share``: uniform words (KS at α = 1e-6 each), also party 2's share of its own input x (it holds x, the
    others 0), which without re-randomisation party 1 would see as x itself. Parties 0 and 1 together hold all
    three shares and recover x exactly: the threshold is two of parties 0–2."""
    for rank, party in enumerate(replicated):
        assert [(label, n, to) for label, n, to, _ in party["received"]] == \
            [("test-ands", 3 * N, (rank,)), ("test-products", 3 * N, (rank,))]
        for _, _, _, words in party["received"]:
            assert _uniform(words) > 1e-6
    seen_by_1 = replicated[1]["received"][0][3][2 * N:]  # party 2's share of x, as party 1 received it
    assert not torch.equal(seen_by_1, VICTIM) and _uniform(seen_by_1) > 1e-6
    (x0, x1), (_, x2) = replicated[0]["ands_held"], replicated[1]["ands_held"]
    assert torch.equal(x0 ^ x1 ^ x2, VICTIM)
    (x0, x1), (_, x2) = replicated[0]["products_held"], replicated[1]["products_held"]
    assert torch.equal(x0 + x1 + x2, VICTIM)


def test_every_partys_output_share_is_uniform(replicated):
    """α re-randomises each product: every party's share of every AND has its bits set with probability 1/2
    (binomial test, α = 1e-6; without α the cross terms of uniform shares give 3/8: z = 20 on 64·800 bits, p <
    1e-80), and its share of every ring product is a uniform word (KS, α = 1e-6). The shares are re-randomised
    by fresh keys every run: 28 tests in this file at 1e-6, <= 2.8e-5 false alarms (2.8e-4 at 1e-5 before)."""
    for party in replicated:
        for share in party["ands"]:
            ones = int(((share.unsqueeze(1) >> torch.arange(64)) & 1).sum())
            assert stats.binomtest(ones, 64 * N).pvalue > 1e-6
        for share in party["products"]:
            assert _uniform(share) > 1e-6


@pytest.mark.parametrize("provider, parties", [("dealer", 3), ("honest-majority", 4)])
def test_elsewhere_the_multiplication_stays_beavers(provider, parties):
    """With the dealer (whose trust statement needs Beaver: a member alone learns nothing) and under
    honest-majority among more than parties 0–2, the same calls run Beaver's protocol and reshare nothing."""
    args = [(VICTIM if rank == 2 else None, N, SEED) for rank in range(parties)]
    results = run_parties(replicated_products, MpcConfig(parties=parties, provider=provider, timeout_s=90.0),
                          party_args=args)
    assert results[0]["kind"]["ands"] == "BeaverShiftedAnds" and results[0]["kind"]["products"] == "BeaverProducts"
    assert all(r["received"] == [] for r in results)
    assert torch.equal(_xor([r["ands"][3] for r in results]), VICTIM & _xor([s[1] for s in _inputs(parties)]))


def test_a_resharing_message_of_the_wrong_size_stops_the_run_naming_its_sender():
    """The resharing is a framed int64 message whose size the receiver fixes in advance: party 2 sending party
    1 one word more than declared is refused before its payload is read, naming party 2."""
    from mpcdp.errors import PartyFailed
    from party_jobs import oversized_reshare

    with pytest.raises(PartyFailed) as info:
        run_parties(oversized_reshare, MpcConfig(parties=3, provider="honest-majority", timeout_s=30.0),
                    args=(2, 64))
    reports = {r.rank: r for r in info.value.reports}
    assert info.value.party == 2, str(info.value)
    assert "party 2 sent" in reports[1].message and reports[1].blamed_party == 2, reports[1].message
