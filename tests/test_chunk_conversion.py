"""The conversion of additive shares to XOR shares by rotated one-hots of 4-bit chunks
(:func:`mpcdp.mpc.binary.to_binary_by_chunks`, the sampler's T to binary) and its material
(:class:`mpcdp.adapter.ChunkOneHots`).

Real party processes, under both providers (the dealer; the three generators without one). Checked: the XOR of
the parties' bits is the integer itself on every element — random values, 0, 2^62 − 1, and values whose
conversion carries through many chunks (x = c + r, so x = 0 or a multiple of 16^k makes every chunk above r's
lowest nonzero one a propagating 15 with a carry in); every value the conversion opens is a uniform word; the
dealer refuses a request of another width naming party 0. The material's correlation and its cost without a
dealer are in tests/test_honest_majority.py, its reply shapes in tests/test_dealer_replies.py.
"""

import pytest
import torch
from scipy import stats

from mpcdp.config import MpcConfig
from mpcdp.runtime.harness import run_parties
from party_jobs import chunk_conversions

TOP = 1 << 62


def _narrow() -> torch.Tensor:
    """Values in [0, 2^62): edge cases, long carry chains, then random ones."""
    powers = [1 << k for k in range(62)]
    edges = [0, 1, 15, 16, TOP - 1, TOP - 2, TOP - 16, TOP >> 1, (TOP >> 1) - 1]
    chains = powers + [TOP - p for p in powers] + [(TOP - 1) ^ p for p in powers] + [16**k - 1 for k in range(1, 16)]
    random = torch.randint(0, TOP, (1500,), generator=torch.Generator().manual_seed(35))
    return torch.cat([torch.tensor(edges + chains + [0] * 40, dtype=torch.int64), random])


def _wide() -> torch.Tensor:
    """Any int64: the edges of the ring, then random words."""
    edges = [0, 1, -1, -(1 << 63), (1 << 63) - 1, TOP, -TOP, 1 << 60, -16]
    random = torch.randint(-(1 << 63), (1 << 63) - 1, (1000,), generator=torch.Generator().manual_seed(36))
    return torch.cat([torch.tensor(edges, dtype=torch.int64), random])


@pytest.fixture(scope="module", params=["dealer", "honest-majority"])
def conversions(request):
    narrow, wide = _narrow(), _wide()
    results = run_parties(chunk_conversions, MpcConfig(parties=3, provider=request.param, timeout_s=120.0),
                          args=(narrow, wide))
    return narrow, wide, results


def test_the_bits_are_the_integer_on_every_element(conversions):
    narrow, wide, results = conversions
    for r in results:
        assert torch.equal(r[64]["opened"], wide)
        for bits in (62, 40, 8, 3):
            assert torch.equal(r[bits]["opened"], narrow & ((1 << bits) - 1)), bits


def test_each_conversion_costs_what_it_declares(conversions):
    """Openings (elements of each, in order), dealt material and dealer requests, against
    :func:`~mpcdp.mpc.binary.declared_cost_by_chunks`: 16 chunks (62 and 64 bits), 10 (40 bits: four prefix
    levels), 2 (8 bits: no prefix) and 1 (3 bits: no AND)."""
    from mpcdp.mpc.binary import declared_cost_by_chunks

    narrow, wide, results = conversions
    dealer = results[0][62]["dealer_requests"] > 0  # else honest-majority: its ANDs are resharings
    for bits, conversion in results[0].items():
        openings, ops, requests = declared_cost_by_chunks((wide if bits == 64 else narrow).numel(), bits)
        assert [elements for _, _, elements, _ in conversion["openings"]] == openings, bits
        kinds = [kind for _, kind, _, _ in conversion["openings"]]
        assert kinds == ["masked"] * len(openings) if dealer else ["masked"] + ["share"] * (len(openings) - 1), bits
        assert {kind: conversion["ops"].get(kind, 0) for kind in ops} == ops, bits
        resharing = set() if dealer else {"reshares", "reshared_elements"}
        assert set(conversion["ops"]) <= set(ops) | {"openings", "opened_elements"} | resharing, bits
        assert conversion["dealer_requests"] == (requests if dealer else 0), bits


def test_every_opened_value_is_a_uniform_word(conversions):
    """α = 1e-5 each: c = x − r (ring elements) and the masked words of the carry prefix and of the carries' AND
    (under honest-majority: the re-randomised shares a member receives for them),
    as 64-bit words scaled to [0, 1), against the uniform distribution. Unmasked, c would be x itself (below 2^62,
    or many zeros) and the prefix words would hold a few set bits."""
    _, _, results = conversions
    assert [label for label, _, _, _ in results[0][62]["openings"]] == ["a2b-mask", *["a2b-carry"] * 4, "a2b-add"]
    by_label: dict[str, list[torch.Tensor]] = {}
    for conversion in results[0].values():
        for label, kind, _, values in conversion["openings"]:
            assert kind in ("masked", "share")  # an opened masked word, or a member's re-randomised share
            by_label.setdefault(label, []).append(values.reshape(-1))
    assert set(by_label) == {"a2b-mask", "a2b-carry", "a2b-add"}
    for label, parts in by_label.items():
        words = torch.cat(parts).double() / 2.0**64 + 0.5
        assert stats.kstest(words.numpy(), "uniform").pvalue > 1e-5, label


@pytest.mark.parametrize("bits", [0, 65, "62", True, None, 2.5])
def test_the_dealer_refuses_chunks_of_another_width_naming_party_0(bits):
    """A request for chunk one-hots reaches the dealer from party 0 as JSON: its width is checked before anything
    is drawn."""
    from mpcdp.adapter.dealer import Dealer
    from mpcdp.adapter.material import ChunkOneHots
    from mpcdp.errors import ProtocolViolation

    with pytest.raises(ProtocolViolation, match=r"`bits` of a chunk one-hot request must be an integer in \[1, 64\]"
                                                r"\. Found ") as info:
        ChunkOneHots.serve(Dealer(2), 4, bits)
    assert info.value.party == 0


@pytest.mark.parametrize("width", range(1, 10))
def test_the_sklansky_plan_gives_every_carry_for_every_chunk_state(width):
    """:func:`~mpcdp.mpc.carry_prefix.sklansky_levels` run in plaintext, its P updates only where it keeps them,
    gives the carry recurrence c_i = g_i ∨ (p_i ∧ c_(i−1)) at every position, for every assignment of
    kill / generate / propagate to ``width`` positions (3^width of them; generate and propagate never both, as
    for a chunk sum); and each level opens each column it multiplies once (:func:`prefix_variables`)."""
    import itertools

    from mpcdp.mpc.carry_prefix import prefix_variables, sklansky_levels

    levels = sklansky_levels(width)
    for states in itertools.product((0, 1, 2), repeat=width):  # 0 kill, 1 generate, 2 propagate
        G, P = [int(s == 1) for s in states], [int(s == 2) for s in states]
        for steps in levels:
            before_g, before_p = G[:], P[:]
            for u, top, update in steps:
                G[u] = before_g[u] ^ (before_p[u] & before_g[top])
                if update:
                    P[u] = before_p[u] & before_p[top]
        carry, expected = 0, []
        for s in states:
            carry = int(s == 1 or (s == 2 and carry))
            expected.append(carry)
        assert G == expected, states
    for steps, opened in zip(levels, prefix_variables(width), strict=True):
        assert len(set(opened)) == len(opened)
        assert {("P", u) for u, _, _ in steps} | {("G", top) for _, top, _ in steps} <= set(opened)
