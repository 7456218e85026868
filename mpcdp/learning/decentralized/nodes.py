"""A node of paper 004: its private examples, its without-replacement sampler, the one-vs-all logistic loss
(2), and its step (eq. (5)) released on its grid with the exact discrete Gaussian (see the package docstring)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from mpcdp.accounting.grid import GridRelease
from mpcdp.errors import ConfigError, InputError
from mpcdp.noise.discrete_gaussian import plan_of, sample_plain
from mpcdp.randomness import KeyedStream, permutation, secure_key, word_source
from mpcdp.validation import check_integer, check_number


@dataclasses.dataclass(eq=False)
class NodeState:
    """One node's private examples and its without-replacement sampler.

    Each pass draws a fresh permutation of the node's rows and yields consecutive blocks of ``batch_size``
    (the last one may be shorter). ``history`` records the row indices of every mini-batch drawn, per pass.
    """

    x: np.ndarray
    y: np.ndarray
    batch_size: int
    max_passes: int = 1
    rng: object = dataclasses.field(default_factory=np.random.default_rng)  # KeyedStream or seeded NumPy generator
    name: str = "node"
    noise_source: object = None  # KeyedStream (default: a fresh OS-CSPRNG key) or a seeded NumPy generator
    passes_done: int = 0
    history: list = dataclasses.field(default_factory=list)
    _order: np.ndarray | None = None
    _position: int = 0

    def __post_init__(self):
        x = np.asarray(self.x, dtype=np.float64)
        y = np.asarray(self.y)
        if x.ndim != 2 or x.shape[0] == 0:
            raise InputError(f"{self.name}: `x` must be a non-empty 2-D array of examples. Found shape {x.shape}.")
        if y.shape != (x.shape[0],):
            raise InputError(f"{self.name}: `y` must have shape ({x.shape[0]},). Found {y.shape}.")
        if not np.isfinite(x).all():
            raise InputError(f"{self.name}: `x` contains NaN or Inf.")
        check_integer(self.batch_size, "batch_size")
        check_integer(self.max_passes, "max_passes")
        if self.batch_size > x.shape[0]:
            raise ConfigError(f"`batch_size` must be <= the node's example count ({self.name} holds {x.shape[0]}). "
                              f"Found {self.batch_size}.")
        self.x, self.y = x, y
        if self.noise_source is None:
            self.noise_source = KeyedStream(secure_key(), b"mpcdp/node-noise")

    @property
    def noise_words(self):
        return word_source(self.noise_source)

    @property
    def size(self) -> int:
        return self.x.shape[0]

    @property
    def batches_per_pass(self) -> int:
        return math.ceil(self.size / self.batch_size)

    @property
    def active(self) -> bool:
        return self.passes_done < self.max_passes

    def next_batch(self) -> np.ndarray:
        """Row indices of the next mini-batch; starts a new pass (new permutation) when the last one ended."""
        if not self.active:
            raise InputError(f"{self.name}: all {self.max_passes} pass(es) over its data are used up.")
        if self._order is None:
            self._order = permutation(self.rng, self.size)
            self._position = 0
            self.history.append([])
        batch = self._order[self._position:self._position + self.batch_size]
        self._position += len(batch)
        self.history[-1].append(batch.copy())
        if self._position >= self.size:
            self._order = None
            self.passes_done += 1
        return batch


def make_nodes(x: np.ndarray, y: np.ndarray, *, num_nodes: int, batch_size: int, per_node: int | None = None,
               max_passes: int = 1, seed: int | None = None) -> list[NodeState]:
    """§VI: each node draws ``per_node`` (default n // M) distinct training rows at random (disjoint nodes)."""
    check_integer(num_nodes, "num_nodes")
    n = len(x)
    per_node = n // num_nodes if per_node is None else per_node
    check_integer(per_node, "per_node")
    if per_node * num_nodes > n:
        raise ConfigError(f"`per_node`·`num_nodes` must be <= the training count {n}. Found {per_node}·{num_nodes}.")
    rng = np.random.default_rng(seed)
    rows = rng.permutation(n)[:per_node * num_nodes].reshape(num_nodes, per_node)
    nodes = []
    for m, r in enumerate(rows):
        batches = np.random.default_rng(rng.integers(2**63))
        noise = None if seed is None else np.random.default_rng([seed, 4004, m])  # seeded: reproducible noise
        nodes.append(NodeState(x[r], y[r], batch_size, max_passes, batches, f"node {m}", noise))
    return nodes


# -------------------------------------------------------------------------------------------------- the loss
def one_vs_all_labels(y: np.ndarray, classes: int) -> np.ndarray:
    """(n, K) matrix of ±1: +1 in the column of the example's class."""
    y = np.asarray(y).astype(np.int64)
    return np.where(y[:, None] == np.arange(classes)[None, :], 1.0, -1.0)


def loss(w: np.ndarray, x: np.ndarray, y: np.ndarray, lam: float = 0.0) -> float:
    """Mean over rows of Σ_k f(w_k, (x, y_k)), f of eq. (2)."""
    margins = one_vs_all_labels(y, w.shape[1]) * (x @ w)
    return float(np.logaddexp(0.0, -margins).sum(axis=1).mean() + 0.5 * lam * (w * w).sum())


def gradient(w: np.ndarray, x: np.ndarray, y: np.ndarray, lam: float, divisor: int) -> np.ndarray:
    """(1/divisor)·Σ_rows ∇f_i(W) + λW, column k the gradient of binary model k (divisor = b, see docstring)."""
    signs = one_vs_all_labels(y, w.shape[1])
    weights = -signs * 0.5 * (1.0 - np.tanh(0.5 * signs * (x @ w)))  # −y·σ(−y⟨w,x⟩), numerically stable
    return x.T @ weights / divisor + lam * w * (len(x) / divisor)


def project_columns(w: np.ndarray, radius: float) -> np.ndarray:
    norms = np.linalg.norm(w, axis=0, keepdims=True)
    return w * np.minimum(1.0, radius / np.maximum(norms, 1e-300))


def node_update(w_global: np.ndarray, node: NodeState, *, eta: float, grad_noise_std: float, lam: float = 0.0,
                radius: float | None = None, rng: np.random.Generator | None = None,
                noise_multiplier: float | None = None) -> np.ndarray:
    """One node's step, eq. (5): W ← W − η·(∇f_{D_m(t)}(W) + N), released on its grid (:func:`release_on_grid`:
    η·N is discrete Gaussian of std ≈ η·grad_noise_std, with the rounding in the sensitivity; ``noise_multiplier``
    z = grad_noise_std/Δ says which Δ). With λ > 0 every column is then projected onto ‖w‖ <= R. Takes the node's
    next mini-batch; returns the new W. ``rng``: a seeded generator for this step's noise instead of the node's."""
    check_number(eta, "eta", low=0)
    check_number(grad_noise_std, "grad_noise_std", low=0, low_open=False)
    rows = node.next_batch()
    g = gradient(w_global, node.x[rows], node.y[rows], lam, node.batch_size)
    w_new = w_global - eta * g
    if grad_noise_std > 0:
        words = node.noise_words if rng is None else word_source(rng)
        w_new = noisy_step(w_new, eta, grad_noise_std, noise_multiplier, words)
    if lam > 0:
        w_new = project_columns(w_new, 1.0 / lam if radius is None else radius)
    return w_new


def release_on_grid(w_moved: np.ndarray, *, sigma: float, sensitivity: float, words) -> np.ndarray:
    """The released update (round(2^p·w_moved) + N)·2^-p, N the exact discrete Gaussian with σ_units >= z·Δ_int
    (z = σ/Δ), Δ_int = ⌈Δ·2^p + √size⌉ on the grid of σ (:class:`~mpcdp.accounting.grid.GridRelease`)."""
    release = GridRelease(sensitivity, int(w_moved.size), sigma / sensitivity)
    p = release.precision
    noise, _ = sample_plain(plan_of(release), int(w_moved.size), words=words)
    units = np.rint(np.asarray(w_moved, dtype=np.float64) * 2.0**p).astype(np.int64) + noise.reshape(w_moved.shape)
    return units * 2.0**-p


def noisy_step(w_moved: np.ndarray, eta: float, grad_noise_std: float, noise_multiplier: float | None, words):
    if noise_multiplier is None:
        raise ConfigError("`noise_multiplier` (σ/Δ of the certificate) is needed to release a noisy update on its grid")
    check_number(noise_multiplier, "noise_multiplier", low=0)
    return release_on_grid(w_moved, sigma=eta * grad_noise_std, sensitivity=eta * grad_noise_std / noise_multiplier,
                           words=words)


def predict(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """argmax over the K one-vs-all scores (footnote 7)."""
    return np.argmax(np.asarray(x, dtype=np.float64) @ w, axis=1)


def accuracy(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(predict(w, x) == np.asarray(y).astype(np.int64)))
