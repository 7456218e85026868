"""Secure aggregation against torch.sum, within the bound derived from the fixed-point encoding."""

import pytest
import torch

from mpcdp.jobs.aggregate import error_bound
from mpcdp.runtime.harness import run_parties
from party_jobs import sum_several

SHAPES = [(1,), (123,), (7, 5), (2, 3, 4)]


def _locals(parties: int, seed: int, scale: float):
    g = torch.Generator().manual_seed(seed)
    return [[torch.randn(s, generator=g, dtype=torch.float64) * scale for s in SHAPES] for _ in range(parties)]


@pytest.mark.parametrize("parties", [2, 3, 5])
def test_sum_matches_torch_within_fixed_point_bound(parties, config_for):
    inputs = _locals(parties, seed=parties, scale=1000.0)
    results = run_parties(sum_several, config_for(parties), party_args=[(inp,) for inp in inputs])
    bound = error_bound(parties, 16)  # m · 2^-17: round-to-nearest encoding at each party
    for k, shape in enumerate(SHAPES):
        exact = torch.stack([inputs[j][k] for j in range(parties)]).sum(0)
        for j in range(parties):
            opened = results[j]["opened"][k]
            assert opened.shape == exact.shape
            assert (opened - exact).abs().max().item() <= bound
        # every party opened the same value
        assert all(torch.equal(results[0]["opened"][k], results[j]["opened"][k]) for j in range(parties))
    # only the aggregates were opened, one opening per aggregation
    assert results[0]["openings"] == [(f"sum{k}", int(torch.Size(s).numel())) for k, s in enumerate(SHAPES)]


@pytest.mark.smoke
def test_public_weights_give_the_weighted_sum(config_for):
    parties, sizes = 3, [10, 30, 60]
    g = torch.Generator().manual_seed(7)
    inputs = [torch.randn(50, generator=g, dtype=torch.float64) for _ in range(parties)]
    weights = [n / sum(sizes) for n in sizes]
    results = run_parties(sum_several, config_for(parties),
                          party_args=[([inputs[j]], weights[j]) for j in range(parties)])
    exact = sum(w * x for w, x in zip(weights, inputs))
    assert (results[1]["opened"][0] - exact).abs().max().item() <= error_bound(parties, 16)


def test_higher_precision_tightens_the_error(config_for):
    inputs = [[torch.full((64,), 1 / 3, dtype=torch.float64)] for _ in range(2)]
    coarse = run_parties(sum_several, config_for(2, precision_bits=8), party_args=[(i,) for i in inputs])
    fine = run_parties(sum_several, config_for(2, precision_bits=20), party_args=[(i,) for i in inputs])
    err = lambda r, bits: (r[0]["opened"][0] - 2 / 3).abs().max().item()  # noqa: E731
    assert 0 < err(coarse, 8) <= error_bound(2, 8)
    assert err(fine, 20) <= error_bound(2, 20)
    assert err(fine, 20) < err(coarse, 8) / 1000
