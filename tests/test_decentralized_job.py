"""`mpcdp decentralized`: protocol checks, nodes as separate processes, the sweep's ordering verdicts."""

from __future__ import annotations

import dataclasses
import pathlib

import numpy as np
import pytest

from mpcdp.errors import ConfigError
from mpcdp.jobs import decentralized as job
from mpcdp.jobs import decentralized_sweep as sweep

ROOT = pathlib.Path(__file__).resolve().parents[1]

SMALL = """
name = "small"
dataset = "mnist-5k"
[run]
nodes = 3
per_node = 60
batch_size = 20
eta = 0.1
epsilon = 2.0
visits = 2
seed = 3
[mpc]
timeout_s = 120
"""


def _protocol(tmp_path, text=SMALL, extra=""):
    path = tmp_path / "p.toml"
    path.write_text(text + extra)
    return str(path)


@pytest.mark.parametrize("method", ["algorithm1", "algorithm2", "dpsgd5"])
def test_nodes_as_processes_hand_the_model_on_and_match_the_simulation(tmp_path, method):
    plan = job.plan_from(_protocol(tmp_path))
    plan = dataclasses.replace(plan, mpc=plan.mpc.replaced(reproducible=True))  # the nodes' noise from the seed
    apart = job.run_method(plan, method, backend="processes")
    together = job.run_method(plan, method, backend="simulated")
    assert apart["updates"] == together["updates"] == (3 if method != "dpsgd5" else 6) * 3
    np.testing.assert_array_equal(apart["w"], together["w"])
    if method == "algorithm2":
        for a, b in zip(apart["local_models"], together["local_models"]):
            np.testing.assert_array_equal(a, b)
        assert apart["global_updates"] == together["global_updates"]
    # a node sends the model (50 × 10 float64 = 4,000 B) at most once per turn it holds it
    assert 0 < apart["bytes_per_node"] <= 4000 * apart["updates"]
    assert np.any(apart["w"] != 0)


def test_turn_order_is_round_robin_and_the_walk_is_public():
    assert job.turn_order("algorithm1", [2, 3, 1], visits=1, seed=0) == [0, 1, 2, 0, 1, 1]
    walk = job.turn_order("dpsgd5", [2, 2], visits=5, seed=9)
    assert walk == job.turn_order("dpsgd5", [2, 2], visits=5, seed=9) and sorted(walk) == [0] * 10 + [1] * 10


@pytest.mark.parametrize("extra,field", [
    ('\n[deepq]\nminibatch = 50\n', "deepq.minibatch"),
])
def test_bad_deepq_settings_are_named(tmp_path, extra, field):
    with pytest.raises(ConfigError, match=field):
        job.plan_from(_protocol(tmp_path, extra=extra))


@pytest.mark.parametrize("old,new,field", [
    ('dataset = "mnist-5k"', 'dataset = "covtype"', "dataset"),
    ("epsilon = 2.0", "epsilon = 0.0", "epsilon"),
    ("epsilon = 2.0", "epsilon = 2.0\ndelta = 1.0", "delta"),
    ("nodes = 3", "nodes = 3\nmethods = ['algorithm3']", "methods"),
    ("nodes = 3", "nodes = 3\nlearning_rate = 0.1", "learning_rate"),
    ("batch_size = 20", "batch_size = 0", "batch_size"),
])
def test_bad_protocols_are_named(tmp_path, old, new, field):
    with pytest.raises(ConfigError, match=field):
        job.plan_from(_protocol(tmp_path, SMALL.replace(old, new)))


def test_node_processes_draw_their_noise_from_the_csprng_by_default(tmp_path):
    """Without ``reproducible`` each node keys its batch order and noise by the OS CSPRNG: same turns and
    traffic as the seeded simulation, a different model."""
    plan = job.plan_from(_protocol(tmp_path))
    apart = job.run_method(plan, "algorithm1", backend="processes")
    together = job.run_method(plan, "algorithm1", backend="simulated")
    assert apart["updates"] == together["updates"]
    assert float(np.max(np.abs(apart["w"] - together["w"]))) > 1e-3


def test_malformed_toml_and_one_node_processes_are_refused(tmp_path):
    with pytest.raises(ConfigError, match="not valid TOML"):
        job.plan_from(_protocol(tmp_path, SMALL + "\n[run\n"))
    with pytest.raises(ConfigError, match="nodes"):
        job.plan_from(_protocol(tmp_path, SMALL.replace("nodes = 3", "nodes = 1")), backend="processes")


def test_batch_larger_than_a_node_is_refused_before_training(tmp_path):
    plan = job.plan_from(_protocol(tmp_path, SMALL.replace("batch_size = 20", "batch_size = 61")))
    with pytest.raises(ConfigError, match="batch_size"):
        job.run_method(plan, "algorithm1")


@pytest.mark.parametrize("name", ["decentralized-mnist5k", "decentralized-fashion"])
def test_shipped_protocols_certify_every_swept_epsilon(name):
    plan = job.plan_from(str(ROOT / "protocols" / f"{name}.toml"))
    n = 4000 if plan.dataset == "mnist-5k" else 60000
    # calibration "paper" only: "accountant" certifies by construction (tests/test_decentralized.py)
    per_node = plan.per_node or n // plan.nodes
    nodes = [job.dec.NodeState(np.zeros((per_node, 50)), np.zeros(per_node), plan.batch_size, name=f"node {m}",
                               noise_source=np.random.default_rng(m)) for m in range(plan.nodes)]
    for budget in plan.sweep["budgets"]:
        p = job.dataclasses.replace(plan, budget=budget, calibration="paper")
        for eps in plan.sweep["epsilons"]:
            for method in sweep.PRIVATE:
                _, cert = job._method_hyper(p, method, eps, 1.0 / n ** 2, nodes, 10)
                assert cert.epsilon_released <= eps and cert.epsilon_residual > 0
                assert cert.delta_released <= 1.0 / n ** 2


def _fake(method, seed, eps, acc):
    return {"method": method, "seed": seed, "budget": "model", "calibration": "paper", "epsilon": eps, "accuracy": acc,
            "epsilon_certified": eps, "accuracy_global": acc, "global_fraction": 0.5}


def test_ordering_verdicts_use_seed_paired_differences():
    results = []
    for s in range(4):
        results += [_fake("algorithm2", s, 1.0, 0.50 + 0.1 * s), _fake("algorithm1", s, 1.0, 0.45 + 0.1 * s),
                    _fake("dpsgd5", s, 1.0, 0.46 + 0.1 * s + (0.01 if s % 2 else -0.01))]
    (row,) = sweep.ordering(results, [("model", "paper")], [1.0])
    # Deep-Q − Alg. 1 = +0.05 at every seed (SE 0): holds, although the unpaired spreads overlap
    assert row["deepq_vs_alg1"] == "holds" and row["deepq_minus_alg1"] == pytest.approx(0.05)
    # Alg. 1 − DP-SGD-5 = −0.02, 0.00, −0.02, 0.00: mean −0.01, SE 0.0058 → within 2 SE
    assert row["alg1_vs_dpsgd5"] == "tie"
    results = [r if r["method"] != "algorithm1" else {**r, "accuracy": r["accuracy"] - 0.2} for r in results]
    (row,) = sweep.ordering(results, [("model", "paper")], [1.0])
    assert row["alg1_vs_dpsgd5"] == "reversed"


def test_deepq_prints_no_certified_epsilon_and_says_why(tmp_path):
    """Algorithm 2's local/global decisions follow private losses and are public: its report has no
    ``epsilon_certified``; it states the reason and gives the gradient releases' ε under a name that excludes
    the decisions. Algorithm 1 (no decisions) keeps its certificate; the sweep's summary follows both."""
    plan = job.plan_from(_protocol(tmp_path))
    deepq = job.run_method(plan, "algorithm2", backend="simulated")
    alg1 = job.run_method(plan, "algorithm1", backend="simulated")
    assert "epsilon_certified" not in deepq and "epsilon_all_classes" not in deepq
    assert "decisions" in deepq["epsilon_not_certified_because"]
    assert 0 < deepq["epsilon_gradient_releases_only"] <= plan.epsilon
    assert deepq["epsilon_all_classes_gradient_releases_only"] >= deepq["epsilon_gradient_releases_only"]
    assert alg1["epsilon_certified"] == deepq["epsilon_gradient_releases_only"]  # the same releases' accounting
    assert "epsilon_not_certified_because" not in alg1
    kept = [{**r, "accuracy_global": r.get("accuracy_global", 0.5), "global_fraction": 0.5}
            for r in (deepq, alg1, job.run_method(plan, "dpsgd5", backend="simulated"))]
    (row,) = sweep.summarise([{**r, "accuracy": r["accuracy"]} for r in kept] +
                             [{**alg1, "method": "noiseless"}], [(plan.budget, plan.calibration)], [plan.epsilon])
    assert "algorithm2_certified" not in row and row["algorithm2_gradient_releases_only"] > 0


def test_a_reports_mechanism_is_the_id_of_the_mechanism_record_the_nodes_use(tmp_path, monkeypatch):
    """The stamp comes from the run's mechanism record (:mod:`mpcdp.learning.mechanisms`), as training's does: a
    new version of the record's id shows in the report, and a run without noise stamps nothing."""
    from mpcdp.learning import mechanisms

    plan = job.plan_from(_protocol(tmp_path))
    record = mechanisms.lookup(job.NOISE)
    assert job.run_method(plan, "algorithm1", backend="simulated")["mechanism"] == record.id
    monkeypatch.setitem(mechanisms.MECHANISMS, job.NOISE, dataclasses.replace(record, id="dgauss-grid/next"))
    assert job.run_method(plan, "algorithm1", backend="simulated")["mechanism"] == "dgauss-grid/next"
    assert "mechanism" not in job.run_method(plan, "noiseless", backend="simulated")
