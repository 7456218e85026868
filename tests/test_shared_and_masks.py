"""Shared values refuse implicit disclosure; pairwise masks sum to zero and hide each party's input."""

import pickle

import numpy as np
import pytest
import torch
from scipy import stats

from mpcdp.errors import SecretDisclosureError
from mpcdp.mpc.masks import PairwiseMasks
from mpcdp.mpc.shared import Shared


def _shared():
    return Shared(torch.arange(6, dtype=torch.int64).reshape(2, 3), precision_bits=16)


@pytest.mark.parametrize("use", [bool, int, float, list, iter, np.asarray, lambda x: x[0], lambda x: x == x,
                                 lambda x: x < 1, pickle.dumps, max])
def test_implicit_disclosure_is_refused(use):
    with pytest.raises(SecretDisclosureError, match="ctx.reveal"):
        use(_shared())


def test_repr_shows_shape_not_shares():
    assert repr(_shared()) == "Shared(shape=(2, 3), precision_bits=16)"


def test_local_linear_ops():
    x = _shared()
    assert torch.equal((x + x).scale_by_int(3)._share, x._share * 6)
    assert torch.equal(sum([x, x, x])._share, x._share * 3)
    assert torch.equal((x - x)._share, torch.zeros(2, 3, dtype=torch.int64))


def _masks(parties: int) -> list[PairwiseMasks]:
    rng = np.random.default_rng(5)
    seeds = {}
    for i in range(parties):
        for j in range(i + 1, parties):
            seeds[i, j] = seeds[j, i] = rng.bytes(32)
    return [PairwiseMasks(r, parties, {j: seeds[r, j] for j in range(parties) if j != r}) for r in range(parties)]


@pytest.mark.parametrize("parties", [2, 3, 5])
def test_masks_sum_to_zero_and_change_every_use(parties):
    masks = _masks(parties)
    first = [m.zero_share((4, 25)) for m in masks]
    second = [m.zero_share((4, 25)) for m in masks]
    assert torch.equal(sum(first), torch.zeros(4, 25, dtype=torch.int64))
    assert torch.equal(sum(second), torch.zeros(4, 25, dtype=torch.int64))
    assert not torch.equal(first[0], second[0])


def test_a_mask_looks_uniform_on_the_ring():
    # α = 1e-3: a party's mask, mapped to [0, 1), is uniform (KS against the analytic CDF).
    share = _masks(4)[2].zero_share((20000,))
    unit = share.to(torch.float64).numpy() / 2.0**64 + 0.5
    assert stats.kstest(unit, "uniform").pvalue > 1e-3


def test_non_adjacent_coalition_cannot_unmask():
    # With ring-neighbour seeds (CrypTen's PRZS) parties 1 and 3 of 4 would know party 0's whole mask.
    # With pairwise seeds they miss seed (0, 2), so party 0's mask stays unknown to them.
    masks = _masks(4)
    known = {j: masks[1]._seeds.get(j) for j in range(4)} | {j: masks[3]._seeds.get(j) for j in range(4)}
    assert masks[0]._seeds[2] not in [s for s in known.values() if s is not None]
