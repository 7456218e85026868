"""Jayaraman-style and WD-DP aggregation (paper 000): weights, sensitivities, noise, both backends, the sweep."""

import json
import math

import pytest
import torch

from mpcdp.accounting.certify import gdp_epsilon
from mpcdp.accounting.distributed import (aggregate_noise_for, aggregation_sensitivity, jayaraman_code_sigma,
                                          local_noise_for, party_weights, wddp_theorem1_sigma)
from mpcdp.data.registry import load
from mpcdp.data.split import party_sizes, split_indices
from mpcdp.errors import ConfigError
from mpcdp.learning.backends import NoiseLevels, train_simulated
from mpcdp.learning.baselines import SgdParameters, run_sgd
from mpcdp.learning.clipping import clip_rows
from mpcdp.learning.dpsrm import Shard
from mpcdp.learning.local_noise import run_local_then_average
from mpcdp.learning.logreg import per_example_gradients
from mpcdp.runtime.harness import run_parties
from party_jobs import srm_party

PRECISION_BITS = 16


def _shards(parties: int, ratio: float, seed: int = 0):
    data = load("breast-cancer")
    x, y = torch.from_numpy(data.x_train).double(), torch.from_numpy(data.y_train).double()
    x = x / x.norm(dim=1, keepdim=True)
    parts = split_indices(len(y), parties, ratio=ratio, seed=seed)
    return [Shard(j, x[i], y[i]) for j, i in enumerate(parts)]


def _params(weighting: str, n: int, **kwargs) -> SgdParameters:
    kwargs.setdefault("steps", 20)
    return SgdParameters(full_batch=True, n_total=n, weighting=weighting, learning_rate=1.0, **kwargs)


def test_uneven_sizes_follow_the_level_of_non_average():
    sizes = party_sizes(455, 16, ratio=9)
    small, large = sizes[:8], sizes[8:]
    assert sum(sizes) == 455 and len(sizes) == 16
    assert max(large) / min(small) == pytest.approx(9, rel=0.25)  # integer sizes: 5 vs 51
    assert party_sizes(160, 16, ratio=1) == [10] * 16


def test_equal_splits_make_wd_dp_and_jayaraman_coincide():
    sizes = (25,) * 8
    assert party_weights("wd-dp", sizes) == party_weights("jayaraman", sizes)
    wd = aggregate_noise_for("wd-dp", sizes, 100, 1.0, 0.5, 1e-3)
    jay = aggregate_noise_for("jayaraman", sizes, 100, 1.0, 0.5, 1e-3)
    assert wd.sensitivity == pytest.approx(jay.sensitivity, rel=1e-15) == pytest.approx(2 / 200)
    assert wd.sigma == pytest.approx(jay.sigma, rel=1e-12)
    equal = [Shard(s.party, s.x[:113], s.y[:113]) for s in _shards(4, 1.0)]  # 455 rows: 113 each
    noise = NoiseLevels.for_sigmas(0.01, 0.01, dim=30)
    runs = [train_simulated(equal, _params(w, 4 * 113), noise, dim=30, runner=run_sgd, noise_seed=5)
            for w in ("records", "parties")]
    for a, b in zip(runs[0].iterates, runs[1].iterates):
        assert torch.allclose(a, b, rtol=0, atol=1e-12)


def test_uneven_splits_change_sensitivity_and_sigma_exactly_as_derived():
    sizes = (10, 10, 30, 30)  # n = 80, m = 4, n_min = 10, u = 3
    g, steps, eps, delta = 0.5, 50, 0.3, 1e-4
    assert party_weights("wd-dp", sizes) == (0.125, 0.125, 0.375, 0.375)
    assert party_weights("jayaraman", sizes) == (0.25,) * 4
    assert aggregation_sensitivity("wd-dp", sizes, g) == pytest.approx(2 * g / 80)
    assert aggregation_sensitivity("jayaraman", sizes, g) == pytest.approx(2 * g / (4 * 10))
    wd = aggregate_noise_for("wd-dp", sizes, steps, g, eps, delta)
    jay = aggregate_noise_for("jayaraman", sizes, steps, g, eps, delta)
    # exact calibration: σ is proportional to the sensitivity, so σ_J/σ_WD = n/(m·n_min) = 2
    assert jay.sigma / wd.sigma == pytest.approx(80 / 40, rel=1e-5)
    for noise in (wd, jay):
        mu = math.sqrt(steps) * noise.sensitivity / noise.sigma
        assert noise.certificate.epsilon == pytest.approx(gdp_epsilon(mu, delta))
        assert eps - 1e-5 < noise.certificate.epsilon <= eps


def test_the_papers_formulas_are_certified_and_over_noise():
    sizes = (100, 100, 300, 300)
    for eps in (0.05, 0.5, 2.0):
        log_inv = math.log(1e3)
        assert jayaraman_code_sigma(sizes, 1000, 1.0, eps, 1e-3) == pytest.approx(
            math.sqrt(2000) / (4 * 100 * (math.sqrt(log_inv + eps) - math.sqrt(log_inv))))
        assert wddp_theorem1_sigma(800, 1000, 1.0, eps, 1e-3) == pytest.approx(
            math.sqrt(16 * 1000 * log_inv) / (800 * eps))
        for scheme in ("jayaraman", "wd-dp"):
            paper = aggregate_noise_for(scheme, sizes, 1000, 1.0, eps, 1e-3, calibration="paper")
            exact = aggregate_noise_for(scheme, sizes, 1000, 1.0, eps, 1e-3)
            assert paper.sigma > exact.sigma and paper.certificate.epsilon < eps


def test_local_noise_as_written_misses_its_target_and_the_calibrated_one_meets_it():
    sizes = (50, 50, 450, 450)
    paper = local_noise_for(sizes, 200, 1.0, 0.5, 1e-3, calibration="paper")
    epsilons = [c.epsilon for c in paper.certificates]
    # the smallest parties are worst off and miss the target (Theorem 1's c = 16 over-noises the largest enough)
    assert epsilons[0] == epsilons[1] > 1.0 and epsilons[0] > 4 * epsilons[2] and epsilons[2] == epsilons[3]
    assert paper.certificate.epsilon == max(epsilons)
    certified = local_noise_for(sizes, 200, 1.0, 0.5, 1e-3, calibration="certified")
    assert all(0.5 - 1e-5 < c.epsilon <= 0.5 for c in certified.certificates)
    assert certified.sigmas[0] / certified.sigmas[2] == pytest.approx(9, rel=1e-5)
    # as released (d = 30): each party's gradients on its grid, Δ_int and the residual in its certificate
    released = local_noise_for(sizes, 200, 1.0, 0.5, 1e-3, calibration="certified", dim=30)
    for c, r, n_j in zip(released.certificates, released.releases, sizes):
        assert c.epsilon <= 0.5 and c.delta <= 1e-3 and c.pieces["epsilon_residual"] > 0
        assert r.sensitivity == 2 / n_j and r.sensitivity_units >= r.sensitivity * 2**r.precision + 30**0.5
    assert released.sigmas[0] / released.sigmas[2] == pytest.approx(9, rel=2**-8)
    as_written = local_noise_for(sizes, 200, 1.0, 0.5, 1e-3, calibration="paper", dim=30)
    assert as_written.certificate.epsilon > 1.0 and as_written.certificate.pieces["delta_residual"] > 0


def test_local_training_without_noise_is_each_partys_gd_then_the_weighted_average():
    shards = _shards(3, 3.0)
    n = sum(len(s.y) for s in shards)
    params = _params("records", n, steps=15)
    result = run_local_then_average(shards, params, [None] * 3, dim=30)
    expected = torch.zeros(30, dtype=torch.float64)
    for s in shards:
        alone = train_simulated([Shard(0, s.x, s.y)], _params("records", len(s.y), steps=15), NoiseLevels.none(),
                                dim=30, runner=run_sgd)
        expected += len(s.y) / n * alone.theta_last
    assert torch.allclose(result.theta_last, expected, atol=1e-12)


def test_weighted_sum_inside_mpc_equals_the_plaintext_weighted_sum(config_for):
    """The secure DP-GD step on uneven parties: the first release (σ = 0) equals Σ_j w_j·g_j(0) within the
    fixed-point bound m·2^-(bits+1) per element, for both weightings; later iterates track simulation."""
    parties = 3
    shards = _shards(parties, 5.0, seed=2)
    n = sum(len(s.y) for s in shards)
    noiseless = NoiseLevels.none()
    for weighting, scheme in (("records", "wd-dp"), ("parties", "jayaraman")):
        params = _params(weighting, n, steps=4)
        results = run_parties(srm_party, config_for(parties, reproducible=True),
                              party_args=[(s, params, noiseless, 30, run_sgd) for s in shards])
        weights = party_weights(scheme, tuple(len(s.y) for s in shards))
        theta = torch.zeros(30, dtype=torch.float64)
        plaintext = sum(w * clip_rows(per_example_gradients(theta, s.x, s.y), 1.0).mean(0)
                        for w, s in zip(weights, shards))
        released = results[0]["result"].released[0]
        assert (released - plaintext).abs().max().item() <= parties * 2.0 ** -(PRECISION_BITS + 1)
        simulated = train_simulated(shards, params, noiseless, dim=30, runner=run_sgd)
        assert (results[0]["result"].theta_last - simulated.theta_last).abs().max().item() < 1e-3
        assert all(torch.equal(r["result"].theta_last, results[0]["result"].theta_last) for r in results)


def _write(tmp_path, text: str) -> str:
    path = tmp_path / "uneven.toml"
    path.write_text(text)
    return str(path)


SMALL = """
name = "uneven-small"
dataset = "breast-cancer"
algorithm = "wd-dp"
backend = "mpc"
output = "last"
[privacy]
epsilon = 1.0
delta = 1e-3
[training]
parties = 4
size_ratio = 3
normalize_rows = true
steps = 30
c1 = 1.0
learning_rate = 1.0
[sweep]
size_ratios = [1, 3]
variants = ["wd-dp", "jayaraman", "dp-gd", "wd-dp-local:paper"]
seeds = 2
mpc_seeds = 1
[sweep.learning_rate]
"jayaraman" = [0.5, 1.0]
"""


@pytest.mark.parametrize("field, value, message", [
    ("size_ratio", "0.5", "`size_ratio`"), ("normalize_rows", '"yes"', "`normalize_rows`"),
    ("steps", "2.5", "`steps`")])
def test_uneven_protocol_fields_are_validated(tmp_path, field, value, message):
    from mpcdp.jobs.train import plan_from

    text = SMALL.replace(f"\n{field} = ", f"\n{field} = {value}\n#", 1)
    with pytest.raises(ConfigError, match=message):
        plan_from(_write(tmp_path, text))


def test_local_noise_and_paper_calibration_are_refused_where_they_do_not_apply(tmp_path):
    from mpcdp.jobs.train import plan_from

    path = _write(tmp_path, SMALL)
    with pytest.raises(ConfigError, match="wd-dp-local.*--backend simulated"):
        plan_from(path, algorithm="wd-dp-local")
    with pytest.raises(ConfigError, match=r"`calibration` 'paper' is not available for 'dp-sgd', which takes \['certified'\]"):
        plan_from(path, algorithm="dp-sgd", backend="simulated", calibration="paper")
    with pytest.raises(ConfigError, match="`calibration` must be one of"):
        plan_from(path, calibration="tight")


def test_sweep_runs_secure_and_simulated_and_writes_table_json_and_plot(tmp_path):
    from mpcdp.jobs.sweep import rerender, run_sweep

    path = _write(tmp_path, SMALL)
    result = run_sweep(path, out=str(tmp_path / "out" / "uneven"))
    runs = result["runs"]
    # 2 ratios × (3 simulated variants + central) × 2 seeds + 2 ratios × 2 secure variants × 1 seed
    assert len(runs) == 2 * 4 * 2 + 2 * 2 * 1
    by = {(r["variant"], r["backend"], r["u"], r["seed"]): r for r in runs}
    assert by[("jayaraman", "simulated", 3.0, 0)]["learning_rate"] == 1.0
    assert by[("jayaraman", "simulated", 1.0, 0)]["learning_rate"] == 0.5
    # u = 3: Jayaraman's σ is n/(m·n_min) times WD-DP's (each rounded up to its sampler's σ grid, steps < 2^-9);
    # the central baseline ignores u
    wd, jay = by[("wd-dp", "simulated", 3.0, 0)], by[("jayaraman", "simulated", 3.0, 0)]
    sizes = wd["party_sizes"]
    assert jay["sigma"] / wd["sigma"] == pytest.approx(sum(sizes) / (len(sizes) * min(sizes)), rel=2**-9)
    assert by[("dp-gd", "simulated", 3.0, 0)]["party_sizes"] == [sum(sizes)]
    assert by[("wd-dp-local:paper", "simulated", 3.0, 0)]["epsilon"] > 1.0  # as written: above its target
    assert all(r["epsilon"] <= 1.0 for r in runs if not r["variant"].startswith("wd-dp-local"))
    assert all(r["optimal_gap"] > -1e-9 for r in runs)
    assert {(r["variant"], r["u"]) for r in runs if r["backend"] == "mpc"} == {
        (v, u) for v in ("wd-dp", "jayaraman") for u in (1.0, 3.0)}
    assert all(r["bytes_per_party"] > 0 for r in runs if r["backend"] == "mpc")
    markdown = (tmp_path / "out" / "uneven.md").read_text()
    assert "| wd-dp | mpc |" in markdown and "u = 3" in markdown and "Acceptance" in markdown
    assert json.loads((tmp_path / "out" / "uneven.json").read_text())["agreement"]
    assert (tmp_path / "out" / "uneven.png").stat().st_size > 10_000
    assert result["pooled_agreement"]["pairs"] == 4
    assert rerender(str(tmp_path / "out" / "uneven"))["markdown"] == markdown  # the JSON holds everything
