"""Paper 004's Algorithm 2: the Deep-Q controller (Algorithm 3) and the local/global turns (eqs. (9)–(10), Lemma 5)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from toy_data import blobs
from mpcdp.errors import ConfigError
from mpcdp.learning import decentralized as dec
from mpcdp.learning.deepq import GLOBAL, LOCAL, DeepQController, DeepQSettings

from mpcdp.randomness import word_source

_blobs = blobs


# ------------------------------------------------------------------------------------------------ controller
def test_network_shape_is_the_papers_three_layers_with_linear_activations():
    c = DeepQController(12, explore_steps=5, seed=0)
    linear = [m for m in c.q if isinstance(m, torch.nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linear] == [(12, 128), (128, 2)]
    assert len(list(c.q)) == 2  # no activation modules: linear throughout
    bound = math.sqrt(6 / (12 + 128))  # Xavier-uniform
    assert float(linear[0].weight.detach().abs().max()) <= bound


def test_exploration_anneals_linearly_from_one_to_a_tenth():
    c = DeepQController(3, explore_steps=10, seed=0)
    seen = []
    for _ in range(15):
        seen.append(c.exploration)
        c.choose(np.zeros(3))
    assert seen[0] == 1.0
    assert seen[5] == pytest.approx(1.0 - 0.9 * 0.5)
    assert seen[10:] == [pytest.approx(0.1)] * 5


def test_replay_memory_keeps_the_newest_twenty_and_target_copies_every_c_updates():
    c = DeepQController(3, explore_steps=1, settings=DeepQSettings(target_every=3), seed=1)
    for k in range(25):
        c.learn(np.full(3, k, dtype=float), k % 2, -1.0, np.zeros(3), False)
    assert len(c.memory) == 20
    assert float(c.memory[0][0][0]) == 5.0  # transitions 0–4 dropped
    assert c.updates == 25 - 9  # learning starts when the memory holds a mini-batch of 10
    # 16 updates: the target was last copied at update 15, so it differs from θ by exactly one Adam step
    c.learn(np.zeros(3), 0, -1.0, np.zeros(3), False)
    c.learn(np.zeros(3), 0, -1.0, np.zeros(3), False)  # update 18: copy
    assert all(torch.equal(a, b) for a, b in zip(c.q.state_dict().values(), c.target.state_dict().values()))
    c.learn(np.zeros(3), 0, -1.0, np.zeros(3), False)
    assert not all(torch.equal(a, b) for a, b in zip(c.q.state_dict().values(), c.target.state_dict().values()))


def test_controller_learns_the_better_action_of_a_two_armed_bandit():
    """Reward 0 for Global, −1 for Local, every transition terminal: Q(s, ·) → (−1, 0), greedy picks Global."""
    rng = np.random.default_rng(0)
    c = DeepQController(4, explore_steps=50, seed=3)
    for _ in range(300):
        s = rng.normal(size=4)
        a = c.choose(s)
        c.learn(s, a, 0.0 if a == GLOBAL else -1.0, s, True)
    greedy = [int(torch.argmax(c.q_values(rng.normal(size=4)))) for _ in range(50)]
    assert greedy.count(GLOBAL) == 50
    q = c.q_values(np.zeros(4)).numpy()
    assert q[GLOBAL] == pytest.approx(0.0, abs=0.15) and q[LOCAL] == pytest.approx(-1.0, abs=0.15)


def test_discount_enters_the_target_for_non_terminal_transitions():
    """Reward −1 for either action, never terminal, one state: both Q values converge to r/(1 − γ) = −2
    (eq. (11) iterated; without the discounted future term they would stay at −1)."""
    c = DeepQController(1, explore_steps=1, settings=DeepQSettings(discount=0.5, target_every=1), seed=4)
    for k in range(800):
        c.learn(np.ones(1), k % 2, -1.0, np.ones(1), False)
    assert c.q_values(np.ones(1)).numpy() == pytest.approx([-2.0, -2.0], abs=0.1)


@pytest.mark.parametrize("field,value", [("minibatch", 30), ("discount", 1.5), ("learning_rate", 0.0),
                                         ("hidden", 0), ("explore_end", 2.0)])
def test_bad_settings_are_named(field, value):
    with pytest.raises(ConfigError, match=f"deepq.{field}"):
        DeepQSettings(**{field: value})


# ---------------------------------------------------------------------------------------------- Algorithm 2
class _Forced:
    """Stands in for a controller's decision (the rest of Algorithm 3 still runs)."""

    def __init__(self, controller, actions):
        self.controller, self.actions = controller, list(actions)

    def __call__(self, state):
        action = self.actions.pop(0)
        self.controller.decisions += 1
        self.controller.actions.append(action)
        return action


def _one_node(x, y, *, b, seed, classes=3):
    node = dec.NodeState(x, y, batch_size=b, max_passes=1, rng=np.random.default_rng(seed))
    return dec.make_deepq_nodes([node], classes=classes, seeds=[seed])[0]


def test_local_then_global_turns_follow_eqs_9_and_10():
    x, y = _blobs(n=40)
    dq = _one_node(x, y, b=10, seed=7)
    dq.node.noise_source = np.random.default_rng(11)
    dq.controller.choose = _Forced(dq.controller, [LOCAL, GLOBAL])
    twin = dec.NodeState(x, y, batch_size=10, max_passes=1, rng=np.random.default_rng(7))
    w_g = np.random.default_rng(1).normal(size=(8, 3)) * 0.1
    eta, std, z = 0.3, 0.05, 2.0
    after_local = dec.algorithm2_turn(w_g, dq, eta=eta, grad_noise_std=std, noise_multiplier=z)
    assert np.array_equal(after_local, w_g)  # a local turn leaves the global model alone
    rows = twin.next_batch()
    w_l = np.zeros((8, 3)) - 2 * eta * dec.gradient(np.zeros((8, 3)), x[rows], y[rows], 0.0, 10)
    assert np.allclose(dq.w_local, w_l)
    after_global = dec.algorithm2_turn(w_g, dq, eta=eta, grad_noise_std=std, noise_multiplier=z)
    rows = twin.next_batch()
    moved = 0.5 * (w_g + w_l) - eta * dec.gradient(w_g, x[rows], y[rows], 0.0, 10)
    expected = dec.release_on_grid(moved, sigma=eta * std, sensitivity=eta * std / z,
                                   words=word_source(np.random.default_rng(11)))
    assert np.array_equal(after_global, expected)  # eq. (9), released on its grid with the node's noise
    assert np.array_equal(dq.w_local, after_global)  # eq. (10)
    assert (dq.local_updates, dq.global_updates) == (1, 1)


def test_lemma5_sensitivity_of_a_global_release_after_local_steps():
    """Neighbouring node data differing in one example of a *local* mini-batch: the next global release moves by
    at most 2ηL/b (noise off), whatever the example."""
    x, y = _blobs(n=30, seed=2)
    eta, b = 0.5, 10
    worst = 0.0
    for replaced in range(10):
        releases = []
        for flip in (False, True):
            xs = x.copy()
            if flip:
                xs[replaced] = -x[replaced]  # another unit-norm example, same label
            node = dec.NodeState(xs, y, batch_size=b, max_passes=1, rng=np.random.default_rng(0))
            node.rng = np.random.default_rng(0)
            node._order = np.arange(30)  # fixed batches: the replaced example sits in the first (local) one
            node.history.append([])
            dq = dec.make_deepq_nodes([node], classes=3, seeds=[0])[0]
            dq.controller.choose = _Forced(dq.controller, [LOCAL, LOCAL, GLOBAL])
            w = np.full((8, 3), 0.05)
            for _ in range(3):
                w = dec.algorithm2_turn(w, dq, eta=eta, grad_noise_std=0.0)
            releases.append(w)
        worst = max(worst, float(np.linalg.norm(releases[0][:, 0] - releases[1][:, 0])))
        assert worst <= 2 * eta * 1.0 / b + 1e-12
    assert worst > 0.2 * 2 * eta / b  # the bound is not vacuous here


def test_algorithm2_uses_each_example_once_and_reduces_the_loss():
    x, y = _blobs(n=900, seed=3)
    nodes = dec.make_nodes(x, y, num_nodes=3, batch_size=10, seed=4)
    before = dec.loss(np.zeros((8, 3)), x, y)
    run = dec.run_algorithm2(nodes, epsilon=None, delta=1e-5, classes=3, eta=0.5, seeds=[1, 2, 3])
    for node in nodes:
        assert sorted(np.concatenate(node.history[0]).tolist()) == list(range(node.size))
    assert run.updates == sum(n.batches_per_pass for n in nodes)
    assert sum(run.global_updates) > 0
    assert dec.loss(run.w, x, y) < 0.7 * before
    assert all(dec.loss(w, x, y) < 0.7 * before for w in run.local_models)


def test_algorithm2_certificate_matches_algorithm1_and_refuses_large_steps():
    std2, cert2 = dec.algorithm2_noise(1.0, 1e-5, eta=0.1, lam=0.0, radius=None, batch_size=50, classes=10,
                                       budget="model")
    std1 = dec.gradient_noise_std(epsilon=1.0, delta=1e-5, lipschitz=1.0, batch_size=50, classes=10)
    assert std2 == pytest.approx(std1) and cert2.certified and cert2.uses == 1
    with pytest.raises(ConfigError, match="eta"):
        dec.algorithm2_noise(1.0, 1e-5, eta=2.5, lam=0.0, radius=None, batch_size=50, classes=10, budget="model")


def test_walk_schedule_visits_each_node_its_share_and_is_uniform_over_active_nodes():
    rng = np.random.default_rng(0)
    schedule = dec.walk_schedule([4, 4, 4, 4], visits=5, rng=rng)
    assert [schedule.count(m) for m in range(4)] == [20, 20, 20, 20]
    firsts = [dec.walk_schedule([50] * 4, visits=1, rng=np.random.default_rng(s))[0] for s in range(400)]
    from scipy import stats

    # α = 0.001: the first holder is uniform over the 4 nodes
    assert stats.chisquare(np.bincount(firsts, minlength=4)).pvalue > 0.001
