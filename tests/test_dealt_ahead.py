"""Releases whose dealt masks are asked for ahead (mpcdp/mpc/dealt_ahead.py): a training run's releases under
``security = "malicious"`` fetch their input masks, bit masks and opening masks for every release left at once.
Run by the deviation harness's simulated parties (tests/deviation_harness.py: mpcdp's own protocol code and the
dealer's own formulas, one thread per party): the releases are the plaintext sums, exactly; each kind is fetched
once for all of them instead of once per release; and other material than dealt, or an altered send, in any of
the releases after the first (their material from the batch) stops every honest party or changes nothing."""

import collections
import random

import pytest
import torch

import deviation_harness as H
from mpcdp.mpc import dealt_ahead

RELEASES, D, SEED = 3, 3, 5


def _releases(ahead: bool):
    """RELEASES bounded releases of each party's term (its term times t + 1 at release t), each told the releases
    left (``ahead``) or not."""
    from mpcdp.mpc.release import noisy_release

    def job(ctx):
        ctx.config.precision_bits = H.PRECISION
        local = H.local_vector(ctx.rank, D, SEED) / RELEASES
        return torch.stack([noisy_release(ctx, local * (t + 1), None, shape=(D,), label=f"v_p[{t}]", bound=1.0,
                                          ahead=RELEASES - t if ahead else 1) for t in range(RELEASES)])

    return job


def _expected(m: int) -> torch.Tensor:
    base = sum(H.local_vector(rank, D, SEED) / RELEASES for rank in range(m))
    return torch.stack([base * (t + 1) for t in range(RELEASES)])


@pytest.mark.parametrize("m", [3, 5])
def test_releases_dealt_ahead_are_the_plaintext_sums_from_one_fetch_per_kind(m):
    """Σ_j local_j at every release (within the grid's rounding of each term), and exactly what the same releases
    release when each fetches its own material; each mask kind fetched once for the three releases instead of
    three times."""
    alone, _, fetched_alone = H.events(m, _releases(False), SEED)
    together, _, fetched_together = H.events(m, _releases(True), SEED)
    grid = 2.0 ** -H.PRECISION
    assert torch.allclose(together, _expected(m), rtol=0, atol=m * grid)
    assert torch.equal(together, alone)
    counts_alone, counts_together = collections.Counter(fetched_alone), collections.Counter(fetched_together)
    for kind in ("AuthMaskSquares", "AuthBitMasks", "AuthRandoms"):
        assert counts_alone[kind] == RELEASES and counts_together[kind] == 1, (counts_alone, counts_together)


def test_a_deviation_in_a_release_whose_material_was_dealt_ahead_changes_nothing_it_should_not():
    """Every kind of deviation at every send of the second and third releases (material from the first's batch)
    and other material than dealt at every fetch, with a random cheater: each honest party stops on a check, or
    as another stopped, or releases the honest output (or the cheater's own input substituted, as the sum's
    verdict allows); the MACs catch every kind somewhere."""
    m, rng, seen = 3, random.Random(SEED), collections.Counter()
    job = _releases(True)
    honest, sends, fetches = H.events(m, job, SEED)
    later = [i for i, label in enumerate(sends) if not label.startswith("v_p[0]")]
    assert later and len(later) < len(sends)
    combos = [(kind, event) for kind in H.KINDS if kind != "material" for event in later] + \
        [("material", event) for event in range(len(fetches))]
    for kind, event in combos:
        deviation = H.random_deviation(rng, m, len(sends), len(fetches), kind)
        deviation.event = event
        for outcome in H.trial(m, job, SEED, deviation, honest):
            seen[kind, outcome] += 1
    for kind in H.KINDS:
        assert seen[kind, "mac"] > 0, seen


def test_uses_must_be_positive_and_a_batch_holds_only_flat_tensors():
    with pytest.raises(ValueError, match="`uses` must be >= 1"):
        with dealt_ahead.ahead(object(), 0):
            pass
    with pytest.raises(TypeError, match="1-D"):
        dealt_ahead._slice(torch.zeros(2, 2), 1, 0)


def test_each_fetch_in_a_block_gets_its_own_slice_of_one_draw_and_none_twice():
    """Within ``ahead(ctx, 3)`` three fetches of a kind take elements 0..n, n..2n and 2n..3n of ONE draw of 3n,
    every tensor of the kind's layout (plain and :class:`Wide`) sliced alike; a fourth, after the block, draws
    anew. A slice handed out twice would mask two releases' inputs with the same r, so that their opened
    x_t − r and x_t' − r give away the party's input difference x_t − x_t' (the sums would still be right). The
    draw is a stand-in for a kind's ``fetch`` whose elements are their own indices, so each slice's origin shows."""
    from mpcdp.adapter.limbs import Wide

    class Context:  # any object a weak reference can point at keys the stock
        pass

    draws = []

    def draw(k):
        draws.append(k)
        start = sum(draws[:-1])
        index = torch.arange(start, start + k, dtype=torch.int64)
        return (index, [Wide(index + 1000, index + 2000)])

    ctx, n = Context(), 4
    with dealt_ahead.ahead(ctx, 3):
        got = [dealt_ahead.fetch(ctx, draw, n) for _ in range(3)]
    after = dealt_ahead.fetch(ctx, draw, n)
    assert draws == [3 * n, n]
    for i, (plain, (wide,)) in enumerate(got + [after]):
        expected = torch.arange(i * n, (i + 1) * n)
        assert torch.equal(plain, expected) and torch.equal(wide.lo, expected + 1000)
        assert torch.equal(wide.hi, expected + 2000)
