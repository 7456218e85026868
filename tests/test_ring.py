"""mpcdp's exact integer protocols against plaintext integer arithmetic, at 2, 3 and 5 parties."""

import pytest
import torch

from mpcdp.runtime.harness import run_parties
from party_jobs import ring_ops


@pytest.mark.parametrize("parties", [2, 3, 5])
def test_integer_protocols_are_exact(parties, config_for):
    results = run_parties(ring_ops, config_for(parties), args=(4000, parties))
    r = results[parties - 1]
    assert torch.equal(r["prod"], r["x"] * r["y"])
    assert torch.equal(r["and"], r["w1"] & r["w2"])
    expected_bits = (r["w1"].unsqueeze(1) >> torch.arange(16)) & 1
    assert torch.equal(r["bits"], expected_bits)
    assert torch.equal(r["value"], r["w1"] & 0xFFFF)
    # the ripple-carry B2A: exact in Z_2^64 (not only mod 2^21), its dealt bits right mod their widths
    assert torch.equal(r["lifted"], r["narrow"])
    extra = (r["w1"].unsqueeze(1) >> (40 + torch.arange(4))) & 1
    for j, width in enumerate([64, 1, 30, 64]):
        mask = -1 if width == 64 else (1 << width) - 1
        assert torch.equal(r["extra"][:, j] & mask, extra[:, j]), j
    # with the dealt squares (the ripple's step 5): the same x and extra bits, and x² right mod 2^62 (2^64 alone)
    assert torch.equal(r["sq_lifted"], r["narrow"]) and torch.equal(r["sq0_lifted"], r["narrow"])
    for j, width in enumerate([64, 1, 30, 64]):
        mask = -1 if width == 64 else (1 << width) - 1
        assert torch.equal(r["sq_extra"][:, j] & mask, extra[:, j]), j
    squares = r["narrow"] * r["narrow"]  # < 2^42: every carry pattern, the extremes at both ends
    assert torch.equal(r["sq_square"] & ((1 << 62) - 1), squares) and torch.equal(r["sq0_square"], squares)
    assert r["sq0_bits"] == (4000, 0)
    floor = torch.div(r["big"], 2**20, rounding_mode="floor")
    for key in ("trunc", "trunc_redrawn"):
        assert ((r[key] - floor) >= 0).all() and ((r[key] - floor) <= 1).all(), key
    assert torch.equal(r["ge_big"], r["big"] >= 0)
    assert torch.equal(r["ge_small"], r["small"] >= 0)
    assert torch.equal(r["ge_huge"], r["huge"] >= 0)
    # every party got the same public comparison results
    assert all(torch.equal(results[j]["ge_big"], r["ge_big"]) for j in range(parties))
