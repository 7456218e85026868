"""DDP-SRM: the mpc and simulated backends run the same algorithm; a short secure run learns."""

import pytest
import torch

from mpcdp.data.adult import load_a9a
from mpcdp.data.split import split_indices
from mpcdp.learning.backends import NoiseLevels, train_simulated
from mpcdp.learning.dpsrm import Shard, SrmParameters
from mpcdp.learning.logreg import loss
from mpcdp.runtime.harness import run_parties
from party_jobs import srm_party

PARTIES = 3


@pytest.fixture(scope="module")
def a9a_shards():
    data = load_a9a()
    x, y = torch.from_numpy(data.x_train).double(), torch.from_numpy(data.y_train).double()
    parts = split_indices(len(y), PARTIES, seed=0)
    shards = [Shard(j, x[idx], y[idx]) for j, idx in enumerate(parts)]
    return shards, torch.from_numpy(data.x_test).double(), torch.from_numpy(data.y_test).double()


def test_noiseless_mpc_and_simulated_give_the_same_iterates(a9a_shards, config_for):
    shards, _, _ = a9a_shards
    params = SrmParameters(steps=6, batch=50, batch0=100, c2=0.5, gamma=0.5, seed=3)
    noise = NoiseLevels(0.0, 0.0)
    simulated = train_simulated(shards, params, noise, dim=123)
    results = run_parties(srm_party, config_for(PARTIES), party_args=[(s, params, noise, 123) for s in shards])
    secure = results[0]["result"]
    # each release differs by the fixed-point encoding only (m · 2^-17 per coordinate), compounded over steps
    for a, b in zip(secure.released, simulated.released):
        assert (a - b).abs().max().item() < 1e-3
    assert (secure.theta_last - simulated.theta_last).abs().max().item() < 1e-3
    assert all(torch.equal(r["result"].theta_last, secure.theta_last) for r in results)


def test_a_short_secure_run_beats_the_untrained_model(a9a_shards, config_for):
    shards, x_test, y_test = a9a_shards
    params = SrmParameters(steps=15, batch=100, batch0=200, c2=0.5, gamma=0.5, zeta=0.5, seed=1)
    noise = NoiseLevels(0.02, 0.01)
    results = run_parties(srm_party, config_for(PARTIES), party_args=[(s, params, noise, 123) for s in shards])
    theta = results[0]["result"].theta_last
    untrained = loss(torch.zeros(123, dtype=torch.float64), x_test, y_test).item()
    assert loss(theta, x_test, y_test).item() < untrained - 0.05
    assert results[0]["presample_s"] > 0 and results[0]["bytes_sent"] > 0
