"""One registry of ways to make noise (mpcdp.learning.mechanisms): the cost harness and `mpcdp noise` draw what
training draws, a run's certificate is stamped with its mechanism's id, records are checked against the
Mechanism interface, and a run may have any number of release kinds."""

from __future__ import annotations

import types

import pytest
import torch

from mpcdp.accounting.distributed import full_batch_noise_for
from mpcdp.accounting.events import full_batch_gaussian_event
from mpcdp.accounting.grid import GridRelease
from mpcdp.accounting.released import ReleaseKind
from mpcdp.errors import ConfigError
from mpcdp.learning import mechanisms, noise_modes, release_noise
from mpcdp.learning.backends import NoiseLevels, train_simulated
from mpcdp.learning.dpsrm import Shard, SrmResult
from mpcdp.learning.mechanisms import MECHANISMS, NoiseChoice, NoiseSpec, sample_noise


def _capture(monkeypatch) -> list:
    """Record the sampler plan of every draw (both samplers), returning zeros instead of noise."""
    plans: list = []

    def secure(ctx, count, plan, rng=None, stats=None):
        plans.append(plan)
        if stats is not None:
            stats.update(accepted=1, candidates=1)
        return torch.zeros(count, dtype=torch.int64)

    def plain(plan, count, seed=None, stream=0):
        plans.append(plan)
        import numpy as np
        return np.zeros(count, dtype=np.int64), None

    monkeypatch.setattr(release_noise.secure_gaussian, "sample_discrete_gaussian", secure)
    monkeypatch.setattr(noise_modes.discrete_gaussian, "sample_plain", plain)
    return plans


@pytest.mark.parametrize("mode, colluders", [("dgauss", 0), ("distributed", 0), ("distributed", 1)])
def test_cost_and_noise_draw_the_training_mechanism_and_its_plan(monkeypatch, mode, colluders):
    """`mpcdp cost --noise MODE` / `mpcdp noise --mode MODE` (sample_noise with a NoiseSpec) and a training run
    (its NoiseChoice's secure_rows for a GridRelease) resolve to the same record and run the same sampler plan."""
    plans = _capture(monkeypatch)
    ctx = types.SimpleNamespace(parties=3, rank=0, config=types.SimpleNamespace(security="semi-honest"))
    sigma, d = 0.37, 123
    assert MECHANISMS[NoiseSpec(sigma=sigma, mode=mode).mode] is NoiseChoice(mode, colluders).record
    block = sample_noise(ctx, NoiseSpec(sigma=sigma, mode=mode, colluders=colluders), (d,))
    release = GridRelease(1.0, d, sigma)
    NoiseChoice(mode, colluders).record.secure_rows(ctx, release, 4, NoiseChoice(mode, colluders))
    assert len(plans) == 2 and plans[0] == plans[1]
    record = MECHANISMS[mode]
    from mpcdp.accounting.released import Parties
    assert plans[0] == record.plan(release, Parties(3, colluders))
    assert block.values.precision_bits == release.precision


def test_each_mechanisms_certificate_is_stamped_with_its_id():
    kinds = (ReleaseKind("releases", 0.02, 6),)
    for mode in ("dgauss", "distributed"):
        record = MECHANISMS[mode]
        noise = record.calibrate(kinds, 30, 3.0, 1e-5, calibrate=lambda e, d: (full_batch_noise_for(0.02, 6, e, d)[0],),
                                 event_of=lambda s: full_batch_gaussian_event(s[0], 0.02, 6),
                                 parties=3, choice=NoiseChoice(mode))
        assert noise.certificate.pieces["mechanism"] == record.id
        assert noise.certificate.epsilon <= 3.0
    assert MECHANISMS["distributed"].id.startswith("ddgauss-grid/3") and MECHANISMS["dgauss"].id.startswith("dgauss-grid/3")


def test_comparison_samplers_are_not_for_training():
    for mode in ("rou", "boxmuller", "plaintext"):
        assert not MECHANISMS[mode].training
        with pytest.raises(ConfigError, match="must be one of"):
            NoiseChoice(mode)
        with pytest.raises(ConfigError, match="not certified for training"):
            MECHANISMS[mode].calibrate((), 1, 1.0, 1e-5, calibrate=None, event_of=None, parties=2, choice=None)


def test_a_record_missing_a_member_is_refused_by_name():
    class Partial:
        name, id, summary, training, in_mpc, takes_colluders = "partial", "partial/1", "x", True, True, False

        def draw(self, ctx, spec, count, shape):
            return None

    with pytest.raises(ConfigError, match="lacks `circuit`, `drawn_by`, `plan`, `residual`, `calibrate`, `certify`, "
                                          "`secure_rows`, `simulated_rows`, `sampler_passes`, `declared_cost`"):
        mechanisms.register(Partial())
    assert "partial" not in MECHANISMS
    with pytest.raises(ConfigError, match="needs `plan`"):
        mechanisms.MechanismRecord(name="half", id="half/1", summary="x", draw=print)


def test_three_release_kinds_each_noise_their_own_releases():
    """Kinds of σ 1e-3, 1, 1e3 cover releases 0, 1..2 and 3..5: every release gets its own kind's noise."""
    kinds = tuple(GridRelease(1.0, 4, s) for s in (1e-3, 1.0, 1e3))
    levels = NoiseLevels(kinds, NoiseChoice(), rows=(1, 2, 3))
    assert levels.first is kinds[0] and levels.later is kinds[2] and len(levels.sigmas) == 3
    seen: dict[int, float] = {}

    def runner(shards, params, aggregate, *, dim, **_):
        for t in range(params.steps + 1):
            seen[t] = float(aggregate(t, torch.zeros(dim, dtype=torch.float64)).abs().max())
        return SrmResult(theta_output=None, theta_last=None, released=[], grad_norms=[], iterates=[])

    shard = Shard(0, torch.zeros(2, 4), torch.zeros(2))
    train_simulated([shard], types.SimpleNamespace(steps=5), levels, dim=4, noise_seed=1, runner=runner)
    assert seen[0] < 0.05 and all(0.01 < seen[t] < 20 for t in (1, 2)) and all(seen[t] > 50 for t in (3, 4, 5))
    two = NoiseLevels(kinds[:2])
    assert two.blocks(5) == [(kinds[0], 1, 0), (kinds[1], 5, 1)]  # one or two kinds: as before
