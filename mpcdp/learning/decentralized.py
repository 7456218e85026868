"""Decentralized DP without-replacement SGD (paper 004: Jin, He, Dai, "Decentralized Differentially Private
Without-Replacement Stochastic Gradient Descent", §III–IV, Algorithm 1, and the "DP-SGD-5" baseline of §VI).

Problem (§III): M nodes each hold n/M private examples; together they minimise F(w) = (1/n)·Σ f(w, (x_i, y_i)) with
the L2-regularised logistic loss (2), f(w, (x, y)) = ln(1 + exp(−y⟨w, x⟩)) + (λ/2)‖w‖², y ∈ {±1}, ‖x‖ <= 1. The
multi-class task is "one vs. all" (footnote 7): K binary models, the columns of W (d × K); prediction = argmax of
the K scores.

Lipschitz constant (§II, Example): λ = 0 → L = 1 (‖∇f‖ = ‖x‖·σ(−y⟨w,x⟩) <= ‖x‖ <= 1 for unit-norm rows);
λ > 0 with ‖w‖ <= R → L = 1 + λR (the paper's choice R = 1/λ gives L = 2). With λ > 0 every column of W is
projected onto the ball ‖w‖ <= R after each step, so the bound on ‖w‖ that L relies on holds (a projection after
the noisy step is post-processing).

Algorithm 1 (fully collaborative): the global model is handed from node to node; at every round each node in turn
takes its next mini-batch D_m(t) (without replacement: a random permutation of its own data, consecutive blocks of
b) and applies eq. (5):

    w_{t+1}^G = w_t^G − η_t·(∇f_{D_m(t)}(w_t^G) + N_t),   ∇f_{D_m(t)} = (1/b)·Σ_{i ∈ D_m(t)} ∇f_i.     (5)

Noise (Lemma 4, eq. (6); Theorem 1, eq. (4); Theorem 2): one replacement inside D_m(t) moves w_{t+1} by at most
Δ = 2η_t·L/b, and the released step noise η_t·N_t ~ N(0, σ²I) with σ = c·Δ/ε, c = √(2 ln(1.25/δ)), so N_t has
per-coordinate std 2·L·c/(b·ε) (independent of η_t). Each example of a node sits in exactly one mini-batch of the
pass (parallel composition, Remark 2), so per example the whole run is ONE Gaussian mechanism with noise multiplier
z = σ/Δ = c/ε. ``certify`` checks this with dp-accounting's PLD accountant (and reports RDP too); the certified ε
is the guarantee — Theorem 1 is only proven for ε < 1, and a run whose σ does not certify at the target is refused.

Unit of privacy across the K classifiers: every example enters all K binary models. The paper calibrates each
binary model to (ε, δ) (footnote 1 treats them as independent tasks), so the K-model release is a K-fold
composition. ``budget="model"`` (default) calibrates the whole one-vs-all model instead: the joint sensitivity of the
d × K step is √K·2η_t·L/b (each column moves by at most 2η_t·L/b), so the released W is (ε, δ)-DP.
``budget="per-classifier"`` reproduces the paper's setting; its certificate also reports ε of the K-model release.

Last mini-batch: if b does not divide a node's count, its last mini-batch is shorter and is still divided by b
(sum/b), which keeps the sensitivity at 2η_t·L/b and uses every example exactly once.

DP-SGD-5 (§VI, footnote 8, after the paper's [17]): a random walk picks one still-active node uniformly per
iteration; that node updates the global model with its next mini-batch; each update is (ε/5, δ/5)-DP (Gaussian,
c = √(2 ln(6.25/δ)), σ_grad = 2·L·c/(b·ε/5)); a node whose examples have each been visited 5 times (5 passes, a
fresh permutation per pass) stops; η_t = 1/√t with t the global iteration. Per example: 5 Gaussian mechanisms,
composed by the accountant.

Algorithm 2 (Deep-Q, §V): every node also keeps a private local model w^L and, at each turn, its Deep-Q controller
(:mod:`mpcdp.learning.deepq`, Algorithm 3) picks Local (w^L ← w^L − 2η∇f_D(w^L), nothing released) or Global (eqs.
(9)–(10): W ← (W + w^L)/2 − η(∇f_D(W) + N), w^L ← W). Lemma 5 bounds a global release's sensitivity by 2ηL/b when
η <= 1/(2μ) (μ = ¼ + λ here): an example used in a local step moves w^L by at most 4ηL/b (non-expansive gradient
steps), halved by the averaging. Each example reaches exactly one global release (the node's first global update
after its mini-batch; afterwards w^L = W is public), so the per-example certificate is Algorithm 1's (Theorem 5).
Not covered, by the paper or here: *when* a node updates the global model is public and depends on its private
losses (see :mod:`mpcdp.learning.deepq`). A node's final w^L is its own model (it contains its own data without
noise, the other nodes' data only through the noisy W).

Features (§VI): images flattened, PCA to 50 dimensions, rows normalised to the unit sphere. The PCA is fitted on
the *test* split (its images only, never labels): that split is public here, whereas fitting on the nodes' private
training images would leak them outside the DP accounting. Accuracy is then measured on the same test images, which
is mildly optimistic for the projection (unsupervised, 50 directions) but leaks nothing about training data.

Security model: honest nodes (footnote 3) that see the global model after every step, as does anyone; each node's
examples are protected by the noise it adds itself (no trusted party, no MPC in this module). ``node_update`` is
the whole of one node's step, so nodes can run as separate processes handing the model on.

Declared cost (per node update): b·d·K multiply-adds for the gradient, d·K discrete Gaussian draws (≈ 1.6 candidates
of 12 words each per draw), one d×K float model
received and sent. Algorithm 1: ⌈n_m/b⌉ updates per node; DP-SGD-5: 5·⌈n_m/b⌉ updates per node.

Released bits (:func:`release_on_grid`). A noisy update releases W_new = (round(2^p·(W − η·∇f)) + N)·2^-p: the
update rounded to a grid 2^-p with η·σ·2^p ≈ 2^21 units (:func:`~mpcdp.accounting.grid.release_precision`), N the
exact discrete Gaussian sampler of :mod:`mpcdp.noise.discrete_gaussian` with σ_units >= z·Δ_int, Δ_int =
⌈η·Δ·2^p + √(d·K)⌉ (W is public, so only the rounding of the gradient step moves with the data). The released
noise multiplier σ_units/Δ_int is at least the calibrated z, and the certificate adds the sampler's residual over
every noise coordinate the run opens (:func:`noise_and_certificate` with ``coordinates``; the theorem in
:mod:`mpcdp.accounting.grid`). With λ > 0 the projection comes after the release (post-processing).

Noise source: each node's ``noise_source``, a :class:`~mpcdp.randomness.KeyedStream` under an OS-CSPRNG key by
default; :func:`make_nodes` with a ``seed`` gives every node a seeded NumPy generator instead (reproducible
experiments, predictable noise).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Callable, Sequence

import dp_accounting
import numpy as np
from dp_accounting import pld, rdp

from mpcdp.accounting.grid import GridRelease, reserve
from mpcdp.errors import ConfigError, InputError
from mpcdp.learning.deepq import LOCAL, DeepQController, DeepQSettings
from mpcdp.noise.discrete_gaussian import sample_plain
from mpcdp.randomness import KeyedStream, secure_key, word_source

__all__ = ["PCA_DIMS", "fit_pca", "prepare_features", "lipschitz_constant", "update_sensitivity", "gaussian_c",
           "step_noise_std", "gradient_noise_std", "PrivacyCertificate", "certify", "NodeState", "make_nodes",
           "one_vs_all_labels", "loss", "gradient", "node_update", "RunResult", "run_algorithm1", "run_dpsgd5",
           "accuracy", "predict", "walk_schedule", "smoothness", "DeepQNode", "make_deepq_nodes",
           "algorithm2_turn", "algorithm2_noise", "run_algorithm2", "noise_and_certificate",
           "calibrated_noise_multiplier", "CALIBRATIONS"]

PCA_DIMS = 50
DEFAULT_VISITS = 5
_BUDGETS = ("model", "per-classifier")
CALIBRATIONS = ("paper", "accountant")


# --------------------------------------------------------------------------------------------------- checks
def _check_epsilon(epsilon) -> None:
    if not (isinstance(epsilon, (int, float)) and not isinstance(epsilon, bool) and math.isfinite(epsilon)
            and epsilon > 0):
        raise ConfigError(f"`epsilon` must be a finite number > 0. Found {epsilon!r}.")


def _check_delta(delta) -> None:
    if not (isinstance(delta, (int, float)) and not isinstance(delta, bool) and 0 < delta < 1):
        raise ConfigError(f"`delta` must be in (0, 1). Found {delta!r}.")


def _check_positive(value, field: str) -> None:
    if not (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0):
        raise ConfigError(f"`{field}` must be a finite number > 0. Found {value!r}.")


def _check_int(value, field: str, minimum: int = 1) -> None:
    if not (isinstance(value, int) and not isinstance(value, bool) and value >= minimum):
        raise ConfigError(f"`{field}` must be an integer >= {minimum}. Found {value!r}.")


def _check_budget(budget) -> None:
    if budget not in _BUDGETS:
        raise ConfigError(f"`budget` must be one of {_BUDGETS}. Found {budget!r}.")


# ------------------------------------------------------------------------------------------------- features
def fit_pca(x_public: np.ndarray, dims: int = PCA_DIMS) -> tuple[np.ndarray, np.ndarray]:
    """(mean, components (D × dims)) of a PCA fitted on *public* rows (here: the test split's images)."""
    _check_int(dims, "dims")
    x = np.asarray(x_public, dtype=np.float64).reshape(len(x_public), -1)
    if x.shape[0] == 0:
        raise InputError("`x_public` (the PCA's public rows) is empty.")
    if dims > min(x.shape):
        raise ConfigError(f"`dims` must be <= min(rows, columns) = {min(x.shape)} of the public data. Found {dims}.")
    mean = x.mean(axis=0)
    _, _, vt = np.linalg.svd(x - mean, full_matrices=False)
    return mean, vt[:dims].T


def _to_unit_sphere(z: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(z, axis=1, keepdims=True)
    return z / np.where(norms > 0, norms, 1.0)


def prepare_features(x_train, x_test, *, dims: int = PCA_DIMS) -> tuple[np.ndarray, np.ndarray]:
    """§VI features: flatten, PCA (fitted on ``x_test`` only, see the module docstring) to ``dims``, unit-norm rows.

    Returns float64 arrays (n_train, dims) and (n_test, dims) with every row of norm 1 (0 for a row at the mean).
    """
    mean, components = fit_pca(x_test, dims)
    project = lambda a: _to_unit_sphere(  # noqa: E731
        (np.asarray(a, dtype=np.float64).reshape(len(a), -1) - mean) @ components)
    return project(x_train), project(x_test)


# ---------------------------------------------------------------------------------------------------- noise
def lipschitz_constant(lam: float = 0.0, radius: float | None = None) -> float:
    """L of the loss (2) on unit-norm rows (§II, Example): 1 if λ = 0, else 1 + λR (R = 1/λ when not given)."""
    if not (isinstance(lam, (int, float)) and math.isfinite(lam) and lam >= 0):
        raise ConfigError(f"`lam` (λ) must be a finite number >= 0. Found {lam!r}.")
    if lam == 0:
        return 1.0
    radius = 1.0 / lam if radius is None else radius
    _check_positive(radius, "radius")
    return 1.0 + lam * radius


def update_sensitivity(*, eta: float, lipschitz: float, batch_size: int, classes: int = 1) -> float:
    """Δ = √classes·2ηL/b: L2 distance between the steps on two neighbouring mini-batches (Lemma 4, eq. (6));
    ``classes`` > 1 for a joint budget over that many one-vs-all columns."""
    _check_positive(eta, "eta")
    _check_positive(lipschitz, "lipschitz")
    _check_int(batch_size, "batch_size")
    _check_int(classes, "classes")
    return math.sqrt(classes) * 2.0 * eta * lipschitz / batch_size


def gaussian_c(delta: float) -> float:
    """c = √(2 ln(1.25/δ)) of Theorem 1."""
    _check_delta(delta)
    return math.sqrt(2.0 * math.log(1.25 / delta))


def step_noise_std(*, epsilon: float, delta: float, eta: float, lipschitz: float, batch_size: int,
                   classes: int = 1) -> float:
    """σ = c·Δ/ε (eq. (4) with Δ of eq. (6)): the per-coordinate std of the released step noise η_t·N_t."""
    _check_epsilon(epsilon)
    return gaussian_c(delta) * update_sensitivity(eta=eta, lipschitz=lipschitz, batch_size=batch_size,
                                                  classes=classes) / epsilon


def gradient_noise_std(*, epsilon: float, delta: float, lipschitz: float, batch_size: int, classes: int = 1) -> float:
    """Per-coordinate std of N_t in eq. (5): σ/η_t = √classes·2·L·c/(b·ε)."""
    return step_noise_std(epsilon=epsilon, delta=delta, eta=1.0, lipschitz=lipschitz, batch_size=batch_size,
                          classes=classes)


@dataclasses.dataclass(frozen=True)
class PrivacyCertificate:
    """dp-accounting's certificate for one example: ``uses`` Gaussian releases with ``noise_multiplier`` = σ/Δ.

    ``epsilon`` (PLD accountant, pessimistic discretisation) is the guarantee; ``epsilon_rdp`` is the looser RDP
    figure. ``epsilon_all_classes`` is ε of the K-model release when the budget is per classifier (else = epsilon).
    """

    epsilon: float
    epsilon_rdp: float
    delta: float
    noise_multiplier: float
    uses: int
    target_epsilon: float
    epsilon_all_classes: float
    epsilon_residual: float = 0.0
    delta_truncation: float = 0.0
    delta_residual: float = 0.0
    noise_coordinates: int = 0

    @property
    def epsilon_released(self) -> float:
        """The guarantee of the released bits: the accountant's ε plus the sampler's residual."""
        return self.epsilon + self.epsilon_residual

    @property
    def delta_released(self) -> float:
        return self.delta + self.delta_truncation + self.delta_residual

    @property
    def certified(self) -> bool:
        return self.epsilon_released <= self.target_epsilon


def _pld_epsilon(noise_multiplier: float, uses: int, delta: float) -> float:
    # Noise multiplier σ/Δ with Δ the *replace-one* distance: the pair analysed, N(0, σ²) vs N(Δ, σ²), is exactly
    # the replace-one pair of Lemma 4; the relation label only tells the accountant to take Δ as given.
    accountant = pld.PLDAccountant(dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE)
    accountant.compose(dp_accounting.GaussianDpEvent(noise_multiplier), uses)
    return float(accountant.get_epsilon(delta))


@functools.lru_cache(maxsize=1024)
def certify(noise_multiplier: float, *, uses: int, delta: float, target_epsilon: float,
            classes: int = 1) -> PrivacyCertificate:
    """Certify ``uses`` composed Gaussian releases of one example at total ``delta`` (PLD and RDP accountants).

    ``classes`` > 1 (per-classifier budget): the K-model release composes K·uses releases, reported separately.
    """
    _check_positive(noise_multiplier, "noise_multiplier")
    _check_int(uses, "uses")
    _check_int(classes, "classes")
    _check_delta(delta)
    _check_epsilon(target_epsilon)
    eps = _pld_epsilon(noise_multiplier, uses, delta)
    rdp_accountant = rdp.RdpAccountant()
    rdp_accountant.compose(dp_accounting.GaussianDpEvent(noise_multiplier), uses)
    eps_all = eps if classes == 1 else _pld_epsilon(noise_multiplier, uses * classes, delta)
    return PrivacyCertificate(eps, float(rdp_accountant.get_epsilon(delta)), delta, noise_multiplier, uses,
                              target_epsilon, eps_all)


# ---------------------------------------------------------------------------------------------------- nodes
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
    rng: np.random.Generator = dataclasses.field(default_factory=np.random.default_rng)
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
        _check_int(self.batch_size, "batch_size")
        _check_int(self.max_passes, "max_passes")
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
            self._order = self.rng.permutation(self.size)
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
    _check_int(num_nodes, "num_nodes")
    n = len(x)
    per_node = n // num_nodes if per_node is None else per_node
    _check_int(per_node, "per_node")
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


def _project_columns(w: np.ndarray, radius: float) -> np.ndarray:
    norms = np.linalg.norm(w, axis=0, keepdims=True)
    return w * np.minimum(1.0, radius / np.maximum(norms, 1e-300))


def node_update(w_global: np.ndarray, node: NodeState, *, eta: float, grad_noise_std: float, lam: float = 0.0,
                radius: float | None = None, rng: np.random.Generator | None = None,
                noise_multiplier: float | None = None) -> np.ndarray:
    """One node's step, eq. (5): W ← W − η·(∇f_{D_m(t)}(W) + N), released on its grid (:func:`release_on_grid`:
    η·N is discrete Gaussian of std ≈ η·grad_noise_std, with the rounding in the sensitivity; ``noise_multiplier``
    z = grad_noise_std/Δ says which Δ). With λ > 0 every column is then projected onto ‖w‖ <= R. Takes the node's
    next mini-batch; returns the new W. ``rng``: a seeded generator for this step's noise instead of the node's."""
    _check_positive(eta, "eta")
    if not (math.isfinite(grad_noise_std) and grad_noise_std >= 0):
        raise ConfigError(f"`grad_noise_std` must be a finite number >= 0. Found {grad_noise_std!r}.")
    rows = node.next_batch()
    g = gradient(w_global, node.x[rows], node.y[rows], lam, node.batch_size)
    w_new = w_global - eta * g
    if grad_noise_std > 0:
        words = node.noise_words if rng is None else word_source(rng)
        w_new = _noisy(w_new, eta, grad_noise_std, noise_multiplier, words)
    if lam > 0:
        w_new = _project_columns(w_new, 1.0 / lam if radius is None else radius)
    return w_new


# ----------------------------------------------------------------------------------------------------- runs
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


@functools.lru_cache(maxsize=256)
def calibrated_noise_multiplier(epsilon: float, delta: float, *, uses: int) -> float:
    """The smallest z = σ/Δ whose ``uses``-fold composed Gaussian certifies (ε, δ) with dp-accounting's PLD
    accountant (its calibrate_dp_mechanism bisection)."""
    _check_epsilon(epsilon)
    _check_delta(delta)
    _check_int(uses, "uses")

    def accountant():
        return pld.PLDAccountant(dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE)

    event = lambda z: dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(z), uses)  # noqa: E731
    lowest, highest = 0.3, 500.0  # below 0.3 the PLD grid explodes; no (ε, δ) here needs either end
    if _pld_epsilon(lowest, uses, delta) <= epsilon or _pld_epsilon(highest, uses, delta) > epsilon:
        raise ConfigError(f"`epsilon` = {epsilon!r} at δ = {delta:g} needs a noise multiplier outside "
                          f"[{lowest}, {highest}]; calibration='accountant' does not cover it.")
    return float(dp_accounting.calibrate_dp_mechanism(
        accountant, event, epsilon, delta, dp_accounting.ExplicitBracketInterval(lowest, highest), tol=1e-4))


def noise_and_certificate(epsilon, delta, *, uses: int, lipschitz: float, batch_size: int, classes: int,
                          budget: str, private: bool = True, calibration: str = "paper", coordinates: int = 1):
    """(per-coordinate std of N_t, certificate) for ``uses`` noisy updates per example, the run opening
    ``coordinates`` noise values in all (updates × d × K; the sampler's residual is over all of them).

    ``calibration="paper"``: each update (ε/uses, δ/uses)-DP by eq. (4), c = √(2 ln(1.25·uses/δ)) (Theorem 1 and
    basic composition; refused where that σ and the residual do not certify ε). ``"accountant"``: the smallest noise
    multiplier whose composition dp-accounting certifies at what is left of (ε, δ) after the residual.
    """
    if not private:
        return 0.0, None
    _check_epsilon(epsilon)
    _check_delta(delta)
    _check_budget(budget)
    if calibration not in CALIBRATIONS:
        raise ConfigError(f"`calibration` must be one of {CALIBRATIONS}. Found {calibration!r}.")
    joint = classes if budget == "model" else 1
    _check_int(coordinates, "coordinates")
    epsilon_left, delta_left = reserve(epsilon, delta, coordinates)
    if calibration == "paper":
        per_eps, per_delta = epsilon / uses, delta / uses
        z = gaussian_c(per_delta) / per_eps  # σ/Δ, the same for every step
    else:
        z = calibrated_noise_multiplier(epsilon_left, delta_left, uses=uses)
    std = z * update_sensitivity(eta=1.0, lipschitz=lipschitz, batch_size=batch_size, classes=joint)
    cert = with_residual(certify(z, uses=uses, delta=delta_left, target_epsilon=epsilon,
                                 classes=1 if budget == "model" else classes), coordinates)
    if not cert.certified:
        raise ConfigError(f"`epsilon` = {epsilon!r} is outside Theorem 1's range: the paper's σ certifies only "
                          f"ε = {cert.epsilon:.4g} (dp-accounting PLD). Lower `epsilon` or use "
                          f"calibration='accountant'.")
    return std, cert


def with_residual(cert: PrivacyCertificate, coordinates: int) -> PrivacyCertificate:
    """``cert`` plus the sampler's residual over ``coordinates`` opened noise values, at the largest η any release
    grid can have (:func:`~mpcdp.accounting.grid.eta_bound`: every step's σ is ≈ 2^21 units)."""
    from mpcdp.accounting.grid import SIGMA_UNITS, Residual, eta_bound
    from mpcdp.noise.discrete_gaussian import plan_for

    extra = Residual(coordinates, eta_bound(), plan_for(SIGMA_UNITS / math.sqrt(2)).truncated_mass * 1.01)
    pieces = extra.delta_pieces(cert.epsilon, cert.delta)
    return dataclasses.replace(cert, epsilon_residual=extra.epsilon, noise_coordinates=coordinates, **pieces)


def _noisy(w_moved: np.ndarray, eta: float, grad_noise_std: float, noise_multiplier: float | None, words):
    if noise_multiplier is None:
        raise ConfigError("`noise_multiplier` (σ/Δ of the certificate) is needed to release a noisy update on its grid")
    _check_positive(noise_multiplier, "noise_multiplier")
    return release_on_grid(w_moved, sigma=eta * grad_noise_std, sensitivity=eta * grad_noise_std / noise_multiplier,
                           words=words)


def run_coordinates(nodes: Sequence[NodeState], *, visits: int, classes: int) -> int:
    """Noise values a run opens at most: one d × K update per mini-batch of every node, ``visits`` passes."""
    return sum(node.batches_per_pass for node in nodes) * visits * nodes[0].x.shape[1] * classes


def release_on_grid(w_moved: np.ndarray, *, sigma: float, sensitivity: float, words) -> np.ndarray:
    """The released update (round(2^p·w_moved) + N)·2^-p, N the exact discrete Gaussian with σ_units >= z·Δ_int
    (z = σ/Δ), Δ_int = ⌈Δ·2^p + √size⌉ on the grid of σ (:class:`~mpcdp.accounting.grid.GridRelease`)."""
    release = GridRelease(sensitivity, int(w_moved.size), sigma / sensitivity)
    p = release.precision
    noise, _ = sample_plain(release.plan, int(w_moved.size), words=words)
    units = np.rint(np.asarray(w_moved, dtype=np.float64) * 2.0**p).astype(np.int64) + noise.reshape(w_moved.shape)
    return units * 2.0**-p


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
    _check_nodes(nodes)
    for node in nodes:
        if node.passes_done or node.history:
            raise ConfigError(f"{node.name}: `nodes` must be fresh (its sampler was already used).")
        node.max_passes = 1
    lipschitz = lipschitz_constant(lam, radius)
    std, cert = noise_and_certificate(epsilon, delta, uses=1, lipschitz=lipschitz, batch_size=nodes[0].batch_size,
                                      classes=classes, budget=budget, private=epsilon is not None,
                                      calibration=calibration,
                                      coordinates=run_coordinates(nodes, visits=1, classes=classes))
    z = None if cert is None else cert.noise_multiplier
    w = np.zeros((nodes[0].x.shape[1], classes)) if w0 is None else np.array(w0, dtype=np.float64)
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
    _check_int(visits, "visits")
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
    _check_nodes(nodes)
    _check_int(visits, "visits")
    walk = np.random.default_rng() if rng is None else rng
    for node in nodes:
        if node.passes_done or node.history:
            raise ConfigError(f"{node.name}: `nodes` must be fresh (its sampler was already used).")
        node.max_passes = visits
    lipschitz = lipschitz_constant(lam, radius)
    std, cert = noise_and_certificate(epsilon, delta, uses=visits, lipschitz=lipschitz,
                                      batch_size=nodes[0].batch_size, classes=classes, budget=budget,
                                      private=epsilon is not None, calibration=calibration,
                                      coordinates=run_coordinates(nodes, visits=visits, classes=classes))
    z = None if cert is None else cert.noise_multiplier
    w = np.zeros((nodes[0].x.shape[1], classes)) if w0 is None else np.array(w0, dtype=np.float64)
    result = RunResult(w, 0, std, cert)
    schedule = walk_schedule([node.batches_per_pass for node in nodes], visits=visits, rng=walk)
    for t, m in enumerate(schedule, start=1):
        w = node_update(w, nodes[m], eta=_step_size(eta, t), grad_noise_std=std, lam=lam, radius=radius,
                        noise_multiplier=z)
        if track is not None:
            result.losses.append(loss(w, *track, lam=lam))
    result.w, result.updates = w, len(schedule)
    return result


# ------------------------------------------------------------------------------------------- Algorithm 2
def smoothness(lam: float = 0.0) -> float:
    """μ of the loss (2) on unit-norm rows: the logistic term's Hessian is at most ¼·xxᵀ, plus λ."""
    return 0.25 + lam


@dataclasses.dataclass(eq=False)
class DeepQNode:
    """Algorithm 2's state at one node: its sampler, its private local model w^L, its Deep-Q controller and the
    transition waiting for its next state."""

    node: NodeState
    controller: DeepQController
    w_local: np.ndarray
    pending: tuple | None = None
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
        w = np.zeros((d, classes)) if w0 is None else np.array(w0, dtype=np.float64)
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
    _check_positive(eta, "eta")
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
        dq.w_local = w_local if radius is None else _project_columns(w_local, radius)
        dq.local_updates += 1
    else:
        g = gradient(w_global, x, y, lam, node.batch_size)
        w_global = 0.5 * (w_global + dq.w_local) - eta * g
        if grad_noise_std > 0:  # released on its grid, as in node_update
            w_global = _noisy(w_global, eta, grad_noise_std, noise_multiplier, node.noise_words)
        if radius is not None:
            w_global = _project_columns(w_global, radius)
        dq.w_local = w_global.copy()
        dq.global_updates += 1
    reward = -loss(dq.w_local, x, y, lam)
    if node.active:
        dq.pending = (state, action, reward)
    else:  # the pass is over: terminal transition
        controller.learn(state, action, reward, state, True)
    return w_global


def algorithm2_noise(epsilon: float | None, delta: float, *, eta: float, lam: float, radius: float | None,
                     batch_size: int, classes: int, budget: str, calibration: str = "paper", coordinates: int = 1):
    """(grad noise std, certificate) of Algorithm 2: Lemma 5 bounds one global release's sensitivity by
    max_k 2η_k·L/b — the same Δ as Algorithm 1 — provided η <= 1/(2μ); each example then reaches exactly one
    global release (the first global update after its mini-batch), so the certificate is Algorithm 1's."""
    _check_positive(eta, "eta")
    limit = 1.0 / (2.0 * smoothness(lam))
    if eta > limit:
        raise ConfigError(f"`eta` must be <= 1/(2μ) = {limit:.4g} for Lemma 5's sensitivity bound. Found {eta!r}.")
    return noise_and_certificate(epsilon, delta, uses=1, lipschitz=lipschitz_constant(lam, radius),
                                 batch_size=batch_size, classes=classes, budget=budget, private=epsilon is not None,
                                 calibration=calibration, coordinates=coordinates)


def run_algorithm2(nodes: Sequence[NodeState], *, epsilon: float | None, delta: float, classes: int = 10,
                   eta: float = 0.1, lam: float = 0.0, radius: float | None = None, budget: str = "model",
                   settings: DeepQSettings = DeepQSettings(), seeds: Sequence[int | None] | None = None,
                   w0: np.ndarray | None = None, calibration: str = "paper") -> RunResult:
    """Algorithm 2, one pass: each round every active node in order takes :func:`algorithm2_turn`.

    ``result.w`` is the global model; ``result.local_models`` each node's final private model (Theorems 6–7 are
    about these); ``result.global_updates`` how many turns went to the global model, per node."""
    _check_nodes(nodes)
    for node in nodes:
        if node.passes_done or node.history:
            raise ConfigError(f"{node.name}: `nodes` must be fresh (its sampler was already used).")
        node.max_passes = 1
    std, cert = algorithm2_noise(epsilon, delta, eta=eta, lam=lam, radius=radius, batch_size=nodes[0].batch_size,
                                 classes=classes, budget=budget, calibration=calibration,
                                 coordinates=run_coordinates(nodes, visits=1, classes=classes))
    z = None if cert is None else cert.noise_multiplier
    dq_nodes = make_deepq_nodes(nodes, classes=classes, settings=settings, seeds=seeds, w0=w0)
    w = np.zeros((nodes[0].x.shape[1], classes)) if w0 is None else np.array(w0, dtype=np.float64)
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


def predict(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """argmax over the K one-vs-all scores (footnote 7)."""
    return np.argmax(np.asarray(x, dtype=np.float64) @ w, axis=1)


def accuracy(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(predict(w, x) == np.asarray(y).astype(np.int64)))
