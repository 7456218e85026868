"""Training releases bound-checked under ``security = "malicious"`` (issue 48, "Bounded inputs";
mpcdp/learning/term_bounds.py): the bound each honest party's term satisfies, derived from the clipping norm,
its public batch share and the scaling before the release, is what the certificate's sensitivity assumes; an
honest DDP-SRM run whose gradients sit at the clip norm passes the in-MPC check on the release grid, and a party
whose term is 1% over it is refused naming it (in-process, the deviation harness's simulated parties; the real
four-process run is in tests/test_malicious_processes.py)."""

import dataclasses

import pytest
import torch

import deviation_harness as H
from mpcdp.accounting.events import DpSrmSetting
from mpcdp.errors import ConfigError
from mpcdp.learning.algorithms import srm_releases
from mpcdp.learning.backends import NoiseLevels, block_row, release_bounds
from mpcdp.learning.baselines import SgdParameters
from mpcdp.learning.dpsrm import Shard, SrmParameters, run_srm
from mpcdp.learning.term_bounds import FLOAT_ALLOWANCE, release_bound
from mpcdp.mpc.bounded import OutOfBound
from mpcdp.mpc.release import noisy_release

M, D = 3, 4
PARAMS = SrmParameters(steps=2, batch=2, batch0=4, c1=2.0, c2=0.5, gamma=0.5, zeta=0.5)


def test_each_algorithms_bound_is_its_clipping_norm_times_its_batch_share_and_the_certificates_per_record_bound():
    """DDP-SRM: C1·b0/B0 at release 0, (γC1 + (1 − γ)C2)·b/B after — b times half the certificate's replace-one
    sensitivity of each kind; DP-SGD: C1·b/B, or C1/m under plain averaging; full batch: C1 (the party's share
    of the records is its own count), C1/m under plain averaging. Each with the float allowance."""
    up = 1 + FLOAT_ALLOWANCE
    batch, batch0 = [50] * M, [100] * M
    srm = SrmParameters(steps=5, batch=50, batch0=100, c1=2.0, c2=0.5, gamma=0.5)
    assert release_bound(srm, 0, batch, batch0) == pytest.approx(2.0 / 3 * up, rel=1e-15)
    assert release_bound(srm, 4, batch, batch0) == pytest.approx(1.25 / 3 * up, rel=1e-15)
    kinds, _, _ = srm_releases(DpSrmSetting(n=(1000,) * M, batch=tuple(batch), batch0=tuple(batch0), steps=5, c1=2.0,
                                            c2=0.5, gamma=0.5))
    assert release_bound(srm, 0, batch, batch0) == pytest.approx(100 * kinds[0].sensitivity / 2 * up, rel=1e-15)
    assert release_bound(srm, 1, batch, batch0) == pytest.approx(50 * kinds[1].sensitivity / 2 * up, rel=1e-15)
    sgd = SgdParameters(steps=3, batch=50, c1=2.0)
    assert release_bound(sgd, 1, batch, [0] * M) == pytest.approx(2.0 / 3 * up, rel=1e-15)
    assert release_bound(dataclasses.replace(sgd, weighting="parties"), 1, batch, [0] * M) == \
        pytest.approx(2.0 / 3 * up, rel=1e-15)
    full = SgdParameters(steps=3, c1=2.0, full_batch=True, n_total=300)
    assert release_bound(full, 1, [1] * M, [0] * M) == pytest.approx(2.0 * up, rel=1e-15)
    assert release_bound(dataclasses.replace(full, weighting="parties"), 1, [1] * M, [0] * M) == \
        pytest.approx(2.0 / 3 * up, rel=1e-15)


def _levels() -> NoiseLevels:
    """DDP-SRM's two release kinds on their grids (noise multiplier 1: grids 2^-24 and 2^-25)."""
    kinds, _, _ = srm_releases(DpSrmSetting(n=(20,) * M, batch=(PARAMS.batch,) * M, batch0=(PARAMS.batch0,) * M,
                                            steps=PARAMS.steps, c1=PARAMS.c1, c2=PARAMS.c2, gamma=PARAMS.gamma))
    return NoiseLevels.for_sigmas(kinds[0].sensitivity, kinds[1].sensitivity, dim=D,
                                  sensitivity0=kinds[0].sensitivity, sensitivity=kinds[1].sensitivity)


def _shard(rank: int) -> Shard:
    """20 identical records with a large feature: every per-example gradient (and the first step's gradient
    difference) is beyond its clip norm, all in one direction, so each term sits at its bound."""
    x = torch.zeros(20, D, dtype=torch.float64)
    x[:, 0] = 60.0
    return Shard(rank, x, torch.ones(20, dtype=torch.float64))


def _training(levels: NoiseLevels, rogue: int | None):
    """Party function of the simulated run: DDP-SRM's own loop (run_srm), each release through noisy_release
    on its kind's grid with the bound mpc_party passes (release_bounds); party ``rogue`` scales its term by 1.01."""
    def job(ctx):
        bound_of = release_bounds(ctx, PARAMS, levels, D)
        norms = []

        def aggregate(t, local):
            release = levels.blocks(PARAMS.steps)[block_row(levels, PARAMS.steps, t)[0]][0]
            ctx.config.precision_bits = release.precision
            local = local * 1.01 if ctx.rank == rogue else local
            norms.append(float(local.norm()))
            return noisy_release(ctx, local, None, shape=(D,), label=f"v_p[{t}]", bound=bound_of(t))

        run_srm([_shard(ctx.rank)], PARAMS, aggregate, dim=D, batch_sizes=[PARAMS.batch] * M,
                batch0_sizes=[PARAMS.batch0] * M)
        # one more release t >= 1 with a term exactly at (γC1 + (1 − γ)C2)·b/B, the exact norm, a skew direction
        direction = torch.tensor([3.0, -1.0, 2.0, 0.5], dtype=torch.float64)
        exact = (PARAMS.gamma * PARAMS.c1 + (1 - PARAMS.gamma) * PARAMS.c2) / M
        aggregate(PARAMS.steps + 1, direction / direction.norm() * exact)
        return norms

    return job


def test_an_honest_run_with_gradients_at_the_clip_norm_passes_and_a_term_one_percent_over_is_refused_naming_it():
    levels = _levels()
    outcomes = H.SimParties(M, 3).run(_training(levels, None))
    assert [what for what, _ in outcomes] == ["output"] * M, outcomes
    for _, norms in outcomes:  # release 0's term at C1·b0/B0 = C1/m; the extra release's at (γC1 + (1 − γ)C2)/m
        assert norms[0] == pytest.approx(PARAMS.c1 / M, rel=1e-12)
        assert norms[-1] == pytest.approx((0.5 * PARAMS.c1 + 0.5 * PARAMS.c2) / M, rel=1e-12)
    outcomes = H.SimParties(M, 3).run(_training(levels, 1))
    for rank, (what, error) in enumerate(outcomes):
        assert what == "raised" and isinstance(error, OutOfBound) and error.party == 1, (rank, error)
        assert str(error) == ("party 1's contribution to release 'v_p[0]' is outside its clipping bound "
                              "(security = 'malicious')")


def test_a_bound_too_large_for_the_in_mpc_check_is_refused_before_the_noise_is_sampled():
    """d·2^(2L) must stay below 2^63: a model of 2^20 coordinates at the quick start's grids is refused in one line."""
    kinds = _levels().releases
    wide = NoiseLevels.for_sigmas(kinds[0].sigma, kinds[1].sigma, dim=1 << 20, sensitivity0=kinds[0].sensitivity,
                                  sensitivity=kinds[1].sensitivity)
    ctx = H.SimContext(H.SimParties(M, 1), 0)
    with pytest.raises(ConfigError, match=r"`input_bound` is too large for 1048576 coordinates"):
        release_bounds(ctx, PARAMS, wide, 1 << 20)
