"""The one-round noisy release (mpcdp.mpc.release): value, cost, and bad input named before anything leaks."""

import math

import pytest
import torch

from mpcdp.errors import PartyFailed
from mpcdp.jobs.aggregate import error_bound
from mpcdp.runtime.harness import run_parties
from party_jobs import release_steps


def _inputs(parties: int, steps: int, d: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    return [[torch.randn(d, generator=g, dtype=torch.float64) for _ in range(steps)] for _ in range(parties)]


def test_release_is_sum_plus_noise_in_one_opening_per_step(config_for):
    parties, steps, d = 3, 4, 123
    inputs = _inputs(parties, steps, d, seed=3)
    noise = [torch.randn(d, dtype=torch.float64) * 5 for _ in range(steps)]
    results = run_parties(release_steps, config_for(parties), party_args=[(inp, noise) for inp in inputs])
    bound = error_bound(parties, 16) + 2.0**-17  # the noise is encoded once more by party 0
    for t in range(steps):
        exact = sum(inputs[j][t] for j in range(parties)) + noise[t]
        assert (results[0]["opened"][t] - exact).abs().max().item() <= bound
        assert all(torch.equal(results[0]["opened"][t], r["opened"][t]) for r in results)
    # the validation rides along: one opening per release, through party 0 (2 rounds) for 3 parties
    assert results[0]["labels"] == [f"release{t}" for t in range(steps)]
    assert results[0]["rounds"] == 2 * steps
    assert results[0]["labels"] == [f"release{t}" for t in range(steps)]


@pytest.mark.parametrize("bad", ["nan", "shape"])
def test_bad_input_raises_on_every_party_naming_it(config_for, bad):
    parties, steps, d = 3, 2, 10
    inputs = _inputs(parties, steps, d, seed=4)
    if bad == "nan":
        inputs[1][1][3] = math.nan
    else:
        inputs[1][1] = torch.zeros(d + 1, dtype=torch.float64)
    with pytest.raises(PartyFailed) as caught:
        run_parties(release_steps, config_for(parties), party_args=[(inp, None) for inp in inputs])
    assert caught.value.party == 1
    text = str(caught.value)
    assert "party 1" in text and "`terms`" in text
    assert ("NaN/Inf" in text) if bad == "nan" else ("shape (11,)" in text)
