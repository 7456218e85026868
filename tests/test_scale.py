"""Many parties and long vectors: the chunked aggregation equals the one-piece one bit for bit; 16 parties work."""

import torch

from mpcdp.jobs.aggregate import local_vector
from mpcdp.runtime.harness import run_parties


def chunked_and_whole(ctx, dim: int, chunk: int):
    from mpcdp.mpc.secure_sum import reveal_sum

    vector = local_vector(dim, ctx.rank, 3)
    return {"chunked": reveal_sum(ctx, vector.reshape(5, -1), chunk=chunk),
            "whole": reveal_sum(ctx, vector.reshape(5, -1), chunk=dim),
            "labels": [o.label for o in ctx.openings if o.kind == "release"]}


def test_chunked_aggregation_equals_one_piece_bit_for_bit(config_for):
    dim, chunk = 50, 7  # 8 chunks, the last one short
    results = run_parties(chunked_and_whole, config_for(3), args=(dim, chunk))
    exact = sum(local_vector(dim, r, 3) for r in range(3)).reshape(5, -1)
    for r in results:
        assert torch.equal(r["chunked"], r["whole"]) and r["chunked"].shape == (5, 10)
        assert (r["chunked"] - exact).abs().max().item() <= 3 * 2.0 ** -17
        assert r["labels"] == [f"aggregate [{k}/8]" for k in range(1, 9)] + ["aggregate"]


def sixteen(ctx, dim: int):
    from mpcdp.mpc.secure_sum import reveal_sum

    return reveal_sum(ctx, local_vector(dim, ctx.rank, 5))


def test_sixteen_parties_aggregate_exactly(config_for):
    results = run_parties(sixteen, config_for(16, timeout_s=240.0), args=(300,))
    exact = sum(local_vector(300, r, 5) for r in range(16))
    assert all(torch.equal(r, results[0]) for r in results)
    assert (results[0] - exact).abs().max().item() <= 16 * 2.0 ** -17
