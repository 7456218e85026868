"""DP-SRM and DDP-SRM (paper 002, Algorithms 1 and 2), one code path for every backend.

The algorithm runs over the data shards held *here*: in the ``mpc`` backend each party process holds its own
shard and :class:`Aggregator` sums the parties' local terms inside the MPC and adds the pre-sampled secret
noise row before anything is revealed; in the ``simulated`` backend one process holds every shard, the sum
is plaintext and the noise is plaintext of the same σ. Batches come from a per-party generator seeded by
(seed, party), so the same seed gives the same batches in both backends.

Estimator (Algorithm 1, lines 2 and 7, with the clipping of Remark 4.3): with B the combined batch size,
  v⁰ = (1/B0)·Σ_i clip_C1(∇f_i(θ⁰)) + u⁰,                        u⁰ ~ N(0, σ0²)
  vᵗ⁺¹ = (1/B)·Σ_i [γ·clip_C1(∇f_i(θᵗ⁺¹)) + (1−γ)·clip_C2(∇f_i(θᵗ⁺¹) − ∇f_i(θᵗ))] + (1−γ)·v_pᵗ + uᵗ⁺¹,
so one example moves the sum by at most 2((1−γ)C2 + γC1)/B (replace-one). Step: θᵗ⁺¹ = θᵗ − ηₜ·v_pᵗ with
ηₜ = min{ζ/(L‖v_pᵗ‖), 1/(2L)} (§6.1), or the constant step size of §6.2's CNN experiments when
``learning_rate`` is set. Output: θ̃ drawn uniformly from θ⁰..θ^{T−1} (the paper's), the last iterate, and
the tail average of the last half of the iterates.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

import numpy as np
import torch

from mpcdp.errors import ConfigError
from mpcdp.learning.clipping import clip_rows, clipped_differences
from mpcdp.learning.logreg import LOGISTIC
from mpcdp.randomness import batch_source, sample_without_replacement
from mpcdp.validation import check_choice, check_number, require_integers, require_positive


@dataclasses.dataclass(frozen=True, kw_only=True)
class SrmParameters:
    """Hyper-parameters of DP-SRM (paper 002 §6.1 defaults: C1 = 1, C2 = γ = 0.01)."""

    steps: int
    batch: int
    batch0: int
    c1: float = 1.0
    c2: float = 0.01
    gamma: float = 0.01
    lipschitz: float = 1.0
    zeta: float = 0.1
    learning_rate: float | None = None  # §6.2 (CNNs): a constant step size instead of ζ and L
    seed: int = 0

    def __post_init__(self) -> None:
        require_integers(self, ("steps", "batch", "batch0"))
        require_positive(self, ("c1", "c2", "lipschitz", "zeta"))
        if self.learning_rate is not None:
            require_positive(self, ("learning_rate",))
        check_number(self.gamma, "gamma", low=0, high=1, high_open=False)

    def term_bound(self, release: int, batch_sizes: Sequence[int], batch0_sizes: Sequence[int]) -> float:
        """The L2 norm one party's term at ``release`` has at most (:mod:`mpcdp.learning.term_bounds`): release 0
        C1·b0/B0, releases t >= 1 (γ·C1 + (1 − γ)·C2)·b/B, with b the largest party batch (all are equal) and B
        the combined batch, every party's public."""
        if release == 0:
            return self.c1 * max(batch0_sizes) / sum(batch0_sizes)
        return (self.gamma * self.c1 + (1 - self.gamma) * self.c2) * max(batch_sizes) / sum(batch_sizes)


@dataclasses.dataclass
class Shard:
    """One party's training data (features float64, labels ±1) and its party index."""

    party: int
    x: torch.Tensor
    y: torch.Tensor


# aggregate(t, local_sum over the shards held here) -> the released v_p^t (noise included, public)
Aggregate = Callable[[int, torch.Tensor], torch.Tensor]


@dataclasses.dataclass
class SrmResult:
    theta_output: torch.Tensor  # θ̃, uniform over θ⁰..θ^{T−1}
    theta_last: torch.Tensor
    released: list[torch.Tensor]  # v_p⁰..v_p^T, what left the MPC
    grad_norms: list[float]
    iterates: list[torch.Tensor]  # θ⁰..θ^T

    @property
    def theta_average(self) -> torch.Tensor:
        """Tail average: the mean of the last half of θ¹..θ^T (post-processing of released values, so free
        in privacy)."""
        tail = self.iterates[1:][len(self.iterates[1:]) // 2:]
        return torch.stack(tail).mean(0)

    def output(self, rule: str) -> torch.Tensor:
        """The model a run reports: 'paper' (the algorithm's own rule: θ̃ uniform over θ⁰..θ^{T−1} for DP-SRM,
        θ_R with R uniform for RRPSGD, the last iterate otherwise), 'last' or 'average' (tail average)."""
        check_choice(rule, "output", OUTPUT_RULES)
        if rule == "paper":
            return self.theta_output
        return self.theta_last if rule == "last" else self.theta_average


OUTPUT_RULES = ("paper", "last", "average")


def _batches(shard: Shard, size: int, steps: int, seed: int, key: int | None = None) -> list[np.ndarray]:
    """A fresh uniform batch without replacement at every release: from the ChaCha20 stream under the party's
    secret ``key`` in secure training (:func:`mpcdp.randomness.batch_key`), or from NumPy's generator of
    (seed, party) when ``key`` is None (simulated and reproducible runs) — :func:`mpcdp.randomness.batch_source`."""
    source = batch_source(key, seed, shard.party)
    n = len(shard.y)
    if size > n:
        raise ConfigError(f"`batch` {size} exceeds party {shard.party}'s {n} records")
    return [sample_without_replacement(source, n, size) for _ in range(steps)]


def _state(release: int, theta, v_p, thetas, iterates, released, norms) -> dict:
    """The loop's state right after release ``release`` (0..T): enough to continue it exactly."""
    return {"releases": release + 1, "theta": theta, "v_p": v_p, "thetas": list(thetas), "iterates": list(iterates),
            "released": list(released), "norms": list(norms)}


def _step_size(params: SrmParameters, norm: float) -> float:
    if params.learning_rate is not None:
        return params.learning_rate
    if norm <= 0:
        return 1 / (2 * params.lipschitz)
    return min(params.zeta / (params.lipschitz * norm), 1 / (2 * params.lipschitz))


def run_srm(shards: Sequence[Shard], params: SrmParameters, aggregate: Aggregate, *, dim: int,
            batch_sizes: Sequence[int], batch0_sizes: Sequence[int], model=LOGISTIC,
            batch_key: int | None = None, resume: dict | None = None,
            on_release: Callable[[dict], None] | None = None) -> SrmResult:
    """DP-SRM over the shards held here; ``aggregate`` sums across all parties and adds the noise.

    ``batch_sizes``/``batch0_sizes`` are every party's per-step batch (public), so each party knows the
    combined sizes B and B0 that divide the sums. ``model``: paper 002's logistic regression (§6.1) or one
    of its CNNs (:mod:`mpcdp.learning.paper_networks`, §6.2) — clipping is over all parameters jointly. ``batch_key``:
    the party's secret key for its batch generator (secure training); None: batches follow ``params.seed``.
    ``on_release(state)`` is called after every release with the loop's state (:mod:`mpcdp.learning.checkpoint`
    saves it); ``resume`` is such a state: the run continues after its last release, exactly as it would have.
    """
    total, total0 = float(sum(batch_sizes)), float(sum(batch0_sizes))
    sizes = dict(enumerate(batch_sizes))
    sizes0 = dict(enumerate(batch0_sizes))
    first = {s.party: _batches(s, sizes0[s.party], 1, params.seed, batch_key)[0] for s in shards}
    later = {s.party: _batches(s, sizes[s.party], params.steps, params.seed + 1, batch_key) for s in shards}
    if resume is None:
        theta = model.initial_theta(dim, params.seed)
        thetas = [theta]
        iterates = [theta]
        local = torch.zeros(dim, dtype=torch.float64)
        for s in shards:
            idx = torch.from_numpy(first[s.party])
            local += clip_rows(model.per_example_gradients(theta, s.x[idx], s.y[idx]), params.c1).sum(0)
        v_p = aggregate(0, local / total0)
        released = [v_p]
        norms: list[float] = []
        start = 0
        if on_release is not None:
            on_release(_state(0, theta, v_p, thetas, iterates, released, norms))
    else:
        start = int(resume["releases"]) - 1
        theta, v_p = resume["theta"], resume["v_p"]
        thetas, iterates = list(resume["thetas"]), list(resume["iterates"])
        released, norms = list(resume["released"]), list(resume["norms"])
    for t in range(start, params.steps):
        norm = float(v_p.norm())
        norms.append(norm)
        eta = _step_size(params, norm)
        previous, theta = theta, theta - eta * v_p
        iterates.append(theta)
        if t < params.steps - 1:
            thetas.append(theta)
        local = torch.zeros(dim, dtype=torch.float64)
        for s in shards:
            idx = torch.from_numpy(later[s.party][t])
            now, before = model.per_example_gradients_at(torch.stack([theta, previous]), s.x[idx], s.y[idx])
            terms = params.gamma * clip_rows(now, params.c1) + (1 - params.gamma) * clipped_differences(now, before,
                                                                                                      params.c2)
            local += terms.sum(0)
        v_p = aggregate(t + 1, local / total) + (1 - params.gamma) * v_p
        released.append(v_p)
        if on_release is not None:
            on_release(_state(t + 1, theta, v_p, thetas, iterates, released, norms))
    pick = np.random.default_rng([params.seed, 10_007]).integers(len(thetas))
    return SrmResult(theta_output=thetas[pick], theta_last=theta, released=released, grad_norms=norms,
                     iterates=iterates)
