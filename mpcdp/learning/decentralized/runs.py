"""Paper 004's Algorithm 1 (the model handed from node to node, one pass) and the DP-SGD-5 baseline (a public
random walk, five passes), on :mod:`.nodes`; noise and certificate from :mod:`mpcdp.accounting.decentralized`."""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, Sequence

import numpy as np

from mpcdp.accounting.decentralized import PrivacyCertificate, lipschitz_constant, noise_and_certificate
from mpcdp.errors import ConfigError, InputError
from mpcdp.learning.decentralized.nodes import NodeState, loss, node_update
from mpcdp.validation import check_integer

DEFAULT_VISITS = 5


@dataclasses.dataclass
class RunResult:
    w: np.ndarray
    updates: int
    grad_noise_std: float
    certificate: PrivacyCertificate | None
    losses: list = dataclasses.field(default_factory=list)
    local_models: list = dataclasses.field(default_factory=list)
    global_updates: list = dataclasses.field(default_factory=list)


def _step_size(eta, k: int) -> float:
    return float(eta(k) if callable(eta) else eta)






def run_coordinates(nodes: Sequence[NodeState], *, visits: int, classes: int) -> int:
    """Noise values a run opens at most: one d × K update per mini-batch of every node, ``visits`` passes."""
    return sum(node.batches_per_pass for node in nodes) * visits * nodes[0].x.shape[1] * classes




def _check_nodes(nodes: Sequence[NodeState]) -> None:
    if len(nodes) == 0:
        raise InputError("`nodes` is empty: at least one node is needed.")
    sizes = {n.batch_size for n in nodes}
    if len(sizes) != 1:
        raise ConfigError(f"`batch_size` must be the same on every node. Found {sorted(sizes)}.")


def run_algorithm1(nodes: Sequence[NodeState], *, epsilon: float | None, delta: float, classes: int = 10,
                   eta: float | Callable[[int], float] = 0.1, lam: float = 0.0, radius: float | None = None,
                   budget: str = "model", w0: np.ndarray | None = None, rng: np.random.Generator | None = None,
                   track: tuple[np.ndarray, np.ndarray] | None = None, calibration: str = "paper") -> RunResult:
    """Algorithm 1, one pass: each round every node (in order) applies :func:`node_update` to the global model.

    ``epsilon=None`` runs without noise (the paper's "Noiseless"). ``eta`` is a constant (convex case, §VI: 0.1) or
    a function of the global update count k = 1, 2, … (strongly convex, Theorem 4: 2/(γk)). ``track=(x, y)``
    records the loss on those rows after every update.
    """
    fresh_nodes(nodes, 1)
    lipschitz = lipschitz_constant(lam, radius)
    std, cert = noise_and_certificate(epsilon, delta, uses=1, lipschitz=lipschitz, batch_size=nodes[0].batch_size,
                                      classes=classes, budget=budget, private=epsilon is not None,
                                      calibration=calibration,
                                      coordinates=run_coordinates(nodes, visits=1, classes=classes))
    z = None if cert is None else cert.noise_multiplier
    w = initial_model(nodes, classes, w0)
    result = RunResult(w, 0, std, cert)
    k = 0
    while any(node.active for node in nodes):
        for node in nodes:
            if node.active:  # "else: do nothing"
                k += 1
                w = node_update(w, node, eta=_step_size(eta, k), grad_noise_std=std, lam=lam, radius=radius, rng=rng,
                                noise_multiplier=z)
                if track is not None:
                    result.losses.append(loss(w, *track, lam=lam))
    result.w, result.updates = w, k
    return result


def walk_schedule(batches_per_pass: Sequence[int], *, visits: int, rng: np.random.Generator) -> list[int]:
    """DP-SGD-5's public random walk: the node index of every global iteration, each drawn uniformly from the nodes
    that still have passes left (node m is active for ``visits``·batches_per_pass[m] updates). The walk uses public
    randomness only, so every node can compute it and knows when the model comes to it and from whom."""
    check_integer(visits, "visits")
    left = [visits * int(k) for k in batches_per_pass]
    schedule = []
    while any(left):
        active = [m for m, k in enumerate(left) if k > 0]
        m = active[rng.integers(len(active))]
        left[m] -= 1
        schedule.append(m)
    return schedule


def run_dpsgd5(nodes: Sequence[NodeState], *, epsilon: float | None, delta: float, classes: int = 10,
               visits: int = DEFAULT_VISITS, eta: float | Callable[[int], float] = lambda t: 1.0 / math.sqrt(t),
               lam: float = 0.0, radius: float | None = None, budget: str = "model", w0: np.ndarray | None = None,
               rng: np.random.Generator | None = None, track: tuple[np.ndarray, np.ndarray] | None = None,
               calibration: str = "paper") -> RunResult:
    """The DP-SGD-5 baseline: a uniform random walk (:func:`walk_schedule`, drawn from ``rng``) over the
    still-active nodes, each update (ε/visits, δ/visits)-DP with noise from the updating node's own generator, a
    node stops after ``visits`` passes over its data, η_t = 1/√t (t the global iteration)."""
    check_integer(visits, "visits")
    walk = np.random.default_rng() if rng is None else rng
    fresh_nodes(nodes, visits)
    lipschitz = lipschitz_constant(lam, radius)
    std, cert = noise_and_certificate(epsilon, delta, uses=visits, lipschitz=lipschitz,
                                      batch_size=nodes[0].batch_size, classes=classes, budget=budget,
                                      private=epsilon is not None, calibration=calibration,
                                      coordinates=run_coordinates(nodes, visits=visits, classes=classes))
    z = None if cert is None else cert.noise_multiplier
    w = initial_model(nodes, classes, w0)
    result = RunResult(w, 0, std, cert)
    schedule = walk_schedule([node.batches_per_pass for node in nodes], visits=visits, rng=walk)
    for t, m in enumerate(schedule, start=1):
        w = node_update(w, nodes[m], eta=_step_size(eta, t), grad_noise_std=std, lam=lam, radius=radius,
                        noise_multiplier=z)
        if track is not None:
            result.losses.append(loss(w, *track, lam=lam))
    result.w, result.updates = w, len(schedule)
    return result


def fresh_nodes(nodes: Sequence[NodeState], passes: int) -> None:
    """Refuse nodes whose sampler was already used (a run must start every node afresh); allow ``passes``."""
    _check_nodes(nodes)
    for node in nodes:
        if node.passes_done or node.history:
            raise ConfigError(f"{node.name}: `nodes` must be fresh (its sampler was already used).")
        node.max_passes = passes


def initial_model(nodes: Sequence[NodeState], classes: int, w0: np.ndarray | None) -> np.ndarray:
    """W⁰: zeros (d × K), or a copy of ``w0``."""
    return np.zeros((nodes[0].x.shape[1], classes)) if w0 is None else np.array(w0, dtype=np.float64)
