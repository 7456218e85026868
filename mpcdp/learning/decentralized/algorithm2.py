"""Paper 004's Algorithm 2: every node keeps a private local model and its Deep-Q controller
(:mod:`mpcdp.learning.deepq`, Algorithm 3) chooses a local step or a noisy global one (eqs. (9)–(10)).

Security model: the gradient releases are accounted as Algorithm 1's (Lemma 5, Theorem 5;
:func:`mpcdp.accounting.decentralized.algorithm2_noise`), but the controller's decisions — which node updated the
public global model at which turn — are functions of each node's private losses, visible to every node, and not
made private. That ε therefore covers the gradient releases only and is never printed as certified
(:data:`mpcdp.jobs.decentralized.DECISIONS_NOT_COVERED`)."""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from mpcdp.accounting.decentralized import algorithm2_noise
from mpcdp.errors import ConfigError
from mpcdp.learning.deepq import LOCAL, DeepQController, DeepQSettings
from mpcdp.learning.decentralized.nodes import NodeState, gradient, loss, noisy_step, project_columns
from mpcdp.learning.decentralized.runs import RunResult, fresh_nodes, initial_model, run_coordinates
from mpcdp.validation import check_number




@dataclasses.dataclass(eq=False)
class DeepQNode:
    """Algorithm 2's state at one node: its sampler, its private local model w^L, its Deep-Q controller and the
    transition waiting for its next state."""

    node: NodeState
    controller: DeepQController
    w_local: np.ndarray
    pending: tuple[np.ndarray, int, float] | None = None  # (state, action, reward)
    global_updates: int = 0
    local_updates: int = 0

    @property
    def active(self) -> bool:
        return self.node.active


def make_deepq_nodes(nodes: Sequence[NodeState], *, classes: int, settings: DeepQSettings = DeepQSettings(),
                     seeds: Sequence[int | None] | None = None, w0: np.ndarray | None = None) -> list[DeepQNode]:
    """One controller per node; p_explr anneals over half a pass (n/(2Mb) decisions, §VI)."""
    seeds = [None] * len(nodes) if seeds is None else list(seeds)
    if len(seeds) != len(nodes):
        raise ConfigError(f"`seeds` must have one entry per node ({len(nodes)}). Found {len(seeds)}.")
    out = []
    for node, seed in zip(nodes, seeds):
        d = node.x.shape[1]
        w = initial_model([node], classes, w0)
        controller = DeepQController(d * classes + 2, explore_steps=max(1, node.batches_per_pass // 2),
                                     settings=settings, seed=seed)
        out.append(DeepQNode(node, controller, w))
    return out


def _deepq_state(w_local: np.ndarray, batch_loss: float, previous_action: int) -> np.ndarray:
    return np.concatenate([w_local.ravel(), [batch_loss, float(previous_action)]])


def algorithm2_turn(w_global: np.ndarray, dq: DeepQNode, *, eta: float, grad_noise_std: float, lam: float = 0.0,
                    radius: float | None = None, noise_multiplier: float | None = None) -> np.ndarray:
    """One node's turn of Algorithm 2 (with Algorithm 3 inside); returns the (possibly unchanged) global model.

    The node takes its next mini-batch D, forms s_t = [w^L, f(w^L, D), a_{t−1}], completes its previous
    transition with s_t, and lets its controller choose. Local: w^L ← w^L − 2η·∇f_D(w^L) (no noise, nothing
    released). Global, eqs. (9)–(10): W ← (W + w^L)/2 − η·(∇f_D(W) + N), then w^L ← W. With λ > 0 every column is
    projected onto ‖w‖ <= R. Reward: −f(w^L after the action, D).
    """
    check_number(eta, "eta", low=0)
    node, controller = dq.node, dq.controller
    rows = node.next_batch()
    x, y = node.x[rows], node.y[rows]
    previous_action = controller.actions[-1] if controller.actions else LOCAL
    state = _deepq_state(dq.w_local, loss(dq.w_local, x, y, lam), previous_action)
    if dq.pending is not None:
        controller.learn(*dq.pending, state, False)
        dq.pending = None
    action = controller.choose(state)
    radius = None if lam == 0 else (1.0 / lam if radius is None else radius)
    if action == LOCAL:
        w_local = dq.w_local - 2.0 * eta * gradient(dq.w_local, x, y, lam, node.batch_size)
        dq.w_local = w_local if radius is None else project_columns(w_local, radius)
        dq.local_updates += 1
    else:
        g = gradient(w_global, x, y, lam, node.batch_size)
        w_global = 0.5 * (w_global + dq.w_local) - eta * g
        if grad_noise_std > 0:  # released on its grid, as in node_update
            w_global = noisy_step(w_global, eta, grad_noise_std, noise_multiplier, node.noise_words)
        if radius is not None:
            w_global = project_columns(w_global, radius)
        dq.w_local = w_global.copy()
        dq.global_updates += 1
    reward = -loss(dq.w_local, x, y, lam)
    if node.active:
        dq.pending = (state, action, reward)
    else:  # the pass is over: terminal transition
        controller.learn(state, action, reward, state, True)
    return w_global




def run_algorithm2(nodes: Sequence[NodeState], *, epsilon: float | None, delta: float, classes: int = 10,
                   eta: float = 0.1, lam: float = 0.0, radius: float | None = None, budget: str = "model",
                   settings: DeepQSettings = DeepQSettings(), seeds: Sequence[int | None] | None = None,
                   w0: np.ndarray | None = None, calibration: str = "paper") -> RunResult:
    """Algorithm 2, one pass: each round every active node in order takes :func:`algorithm2_turn`.

    ``result.w`` is the global model; ``result.local_models`` each node's final private model (Theorems 6–7 are
    about these); ``result.global_updates`` how many turns went to the global model, per node."""
    fresh_nodes(nodes, 1)
    std, cert = algorithm2_noise(epsilon, delta, eta=eta, lam=lam, radius=radius, batch_size=nodes[0].batch_size,
                                 classes=classes, budget=budget, calibration=calibration,
                                 coordinates=run_coordinates(nodes, visits=1, classes=classes))
    z = None if cert is None else cert.noise_multiplier
    dq_nodes = make_deepq_nodes(nodes, classes=classes, settings=settings, seeds=seeds, w0=w0)
    w = initial_model(nodes, classes, w0)
    turns = 0
    while any(dq.active for dq in dq_nodes):
        for dq in dq_nodes:
            if dq.active:
                turns += 1
                w = algorithm2_turn(w, dq, eta=eta, grad_noise_std=std, lam=lam, radius=radius, noise_multiplier=z)
    result = RunResult(w, turns, std, cert)
    result.local_models = [dq.w_local for dq in dq_nodes]
    result.global_updates = [dq.global_updates for dq in dq_nodes]
    return result
