"""Collaborative learning from DP gradient queries (paper 003: Wu, Farokhi, Smith, Kaafar, "The Value of
Collaboration in Convex Machine Learning with Differential Privacy", arXiv:1906.09679, §II, Algorithms 1–2).

Problem (1)–(2): minimise f(θ) = g1(θ) + (1/n)·Σ_{all owners' records} g2(M(x; θ), y), n = Σ_ℓ n_ℓ, over
Θ = {θ : ‖θ‖∞ <= θ_max}. At round k the learner sends θ[k] to every owner ℓ; the owner answers

    Q̃_ℓ(D_ℓ; k) = (1/n_ℓ)·Σ_{(x,y) ∈ D_ℓ} ξ_ḡ2(θ[k]) + w_ℓ[k],   w_ℓ[k] i.i.d. Laplace(b_ℓ) per coordinate,  (5), (6)

with b_ℓ = 2ΞT/(n_ℓ·ε_ℓ) (Theorem 1) and the learner combines Σ_ℓ (n_ℓ/n)·Q̃_ℓ (eq. 4/7), adds ξ_g1(θ[k]) (g1
is public) and steps:

* Algorithm 1 (strongly convex, smooth f): θ[k+1] = θ[k] − ρ/(T²·k)·(ξ_g1(θ[k]) + Σ_ℓ (n_ℓ/n)·Q̃_ℓ); no projection
  (Theorem 2 assumes θ_max = ∞). Output: the iterates θ[1..T]; ``final`` is θ[T] (Theorem 2 bounds
  min_k E f(θ[k]); picking that k would need f, which is private, so the last iterate is returned).
* Algorithm 2 (convex, possibly non-smooth f): θ[k+1] = Π_Θ[θ[k] − (c1/√k)·(ξ_g1(θ[k]) + Σ_ℓ (n_ℓ/n)·Q̃_ℓ)],
  Π_Θ the Euclidean projection onto the box Θ (a clamp), and the averaging rule (8)
  θ̄[k+1] = (k−1)/(1/√T + k)·θ̄[k] + (1/√T + 1)/(1/√T + k)·θ[k]. Output: θ̄[T].

Both loop k = 1..T−1: each owner answers T−1 queries while its noise is set for T (conservative by one query).

Security model: honest-but-curious owners and learner (§I); each owner's responses are ε_ℓ-DP on its own
records (replace-one adjacency, Definition 1); datasets do not overlap (Assumption 1). The owner's step
(:func:`respond`) and the learner's step (:func:`combine` + :func:`algorithm1_step` / :func:`algorithm2_step`) are
separate functions so that owners can run as separate processes and the combination can run inside MPC.

Bounding Ξ (Assumption 3): the paper *assumes* ‖ξ_ḡ2‖₁ <= Ξ over X×Y. :func:`average_subgradient` enforces it
by scaling every per-example subgradient to L1 norm <= Ξ, so Theorem 1's guarantee holds for any data. With
features normalised to ‖x‖₁ <= 1 (what :mod:`mpcdp.data.lending_club` ships) and Ξ from the cost's
``xi_bound``, the scaling never triggers and the algorithm is the paper's unchanged.

Declared cost (per round): each owner: one pass over its n_ℓ records (n_ℓ·p_θ multiply-adds), p_θ Laplace
draws, one vector of p_θ floats sent; learner: one weighted sum of N vectors.

Noise source: exact discrete Laplace on the response's grid (:mod:`mpcdp.noise.discrete_laplace`), its words from a
:class:`~mpcdp.randomness.KeyedStream` keyed by the OS CSPRNG (``generator=None``, the default), or a seeded
``torch.Generator`` (Mersenne Twister) — reproducible and predictable, for experiments.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, Sequence

import dp_accounting
import numpy as np
import torch

from mpcdp.accounting.grid import encode
from mpcdp.accounting.laplace import laplace_grid, laplace_scale, query_event, response_sensitivity
from mpcdp.errors import ConfigError, InputError
from mpcdp.noise import discrete_laplace
from mpcdp.randomness import KeyedStream, secure_key
from mpcdp.validation import check_choice, check_integer, check_number

__all__ = ["Owner", "SquaredLoss", "HingeSVM", "laplace_scale", "clip_l1", "average_subgradient",
           "respond", "owner_weights", "combine", "project_box", "algorithm1_step", "algorithm2_step",
           "averaging_step", "CollabRun", "run_collab", "relative_fitness", "pooled_cost", "nonprivate_optimum"]

DTYPE = torch.float64


def _as_tensor(values, field: str, owner: str) -> torch.Tensor:
    try:
        tensor = torch.as_tensor(np.asarray(values), dtype=DTYPE)
    except (TypeError, ValueError) as error:
        raise InputError(f"owner {owner}: `{field}` is not numeric: {error}") from error
    return tensor


@dataclasses.dataclass(frozen=True, eq=False)
class Owner:
    """One data owner: its private records (x: (n_ℓ, p_x), y: (n_ℓ,)) and its budget ε_ℓ over the horizon.

    ``epsilon = math.inf`` marks an owner without privacy (the learner's own data, §V, or the non-private
    reference of §IV). Inputs are converted to float64 tensors.

    Raises:
        ConfigError: ε_ℓ <= 0 or NaN.
        InputError: no records, wrong shapes, or NaN/Inf in x or y.
    """

    x: torch.Tensor
    y: torch.Tensor
    epsilon: float
    name: str = "owner"

    def __post_init__(self) -> None:
        check_number(self.epsilon, "epsilon", low=0, infinite=True, where=f" (owner {self.name!r})",
                     note="math.inf for no privacy")
        x = _as_tensor(self.x, "x", repr(self.name))
        y = _as_tensor(self.y, "y", repr(self.name))
        if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] == 0:
            raise InputError(f"owner {self.name!r} has no records: `x` must be (n_l >= 1, p_x >= 1). "
                             f"Found shape {tuple(x.shape)}.")
        if y.shape != (x.shape[0],):
            raise InputError(f"owner {self.name!r}: `y` must have shape ({x.shape[0]},). Found {tuple(y.shape)}.")
        for field, tensor in (("x", x), ("y", y)):
            if not torch.isfinite(tensor).all():
                bad = int((~torch.isfinite(tensor.reshape(len(tensor), -1))).any(1).sum())
                raise InputError(f"owner {self.name!r}: `{field}` has {bad} records with NaN/Inf entries.")
        object.__setattr__(self, "x", x)
        object.__setattr__(self, "y", y)

    @property
    def n(self) -> int:
        """n_ℓ, the record count (public: the weights n_ℓ/n and Theorem 1's scale use it)."""
        return int(self.x.shape[0])


@dataclasses.dataclass(frozen=True)
class SquaredLoss:
    """Linear regression (Remark 1, §IV-A): M(x; θ) = θᵀx, g2 = (y − θᵀx)², g1 = (l2/2)·‖θ‖².

    §IV-A uses g1 = 0 (``l2 = 0``); f is then strongly convex when the pooled XᵀX is full rank. ``l2 > 0`` makes
    it strongly convex for any data.
    """

    l2: float = 0.0

    def __post_init__(self) -> None:
        check_number(self.l2, "l2", low=0, low_open=False)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def check_labels(self, y: torch.Tensor) -> None:
        """Any finite target is valid (checked by :class:`Owner`)."""

    def g1(self, theta: torch.Tensor) -> torch.Tensor:
        return 0.5 * self.l2 * (theta @ theta)

    def g1_subgradient(self, theta: torch.Tensor) -> torch.Tensor:
        return self.l2 * theta

    def losses(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return (y - x @ theta) ** 2

    def per_example_subgradients(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """∇_θ (y − θᵀx)² = −2(y − θᵀx)·x, one row per example."""
        return (-2.0 * (y - x @ theta)).unsqueeze(1) * x

    @staticmethod
    def xi_bound(*, x_l1_max: float, y_max: float, theta_max: float) -> float:
        """Ξ for ‖x‖₁ <= x_l1_max, |y| <= y_max, ‖θ‖∞ <= θ_max: ‖2(y − θᵀx)x‖₁ <= 2(y_max + θ_max·x_l1_max)·x_l1_max."""
        return 2.0 * (y_max + theta_max * x_l1_max) * x_l1_max

    def curvature(self, x: torch.Tensor) -> tuple[float, float]:
        """(L, λ): strong-convexity and gradient-Lipschitz constants of f on pooled features x (Theorem 2):
        the extreme eigenvalues of ∇²f = (2/n)·XᵀX + l2·I."""
        x = torch.as_tensor(x, dtype=DTYPE)
        eigenvalues = torch.linalg.eigvalsh(2.0 * x.T @ x / x.shape[0]) + self.l2
        return float(eigenvalues[0]), float(eigenvalues[-1])


@dataclasses.dataclass(frozen=True)
class HingeSVM:
    """Linear SVM (Remark 1, §IV-B): M(x; θ) = θᵀ[xᵀ 1]ᵀ, g2 = max(0, 1 − y·M), g1 = (l2/2)·θᵀθ (paper: l2 = 1).

    The subgradient of g2 is −y·[x; 1] where y·M < 1 and 0 elsewhere (0 is in the subdifferential at the kink).
    Labels must be ±1.
    """

    l2: float = 1.0

    def __post_init__(self) -> None:
        check_number(self.l2, "l2", low=0, low_open=False)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([x, torch.ones(x.shape[0], 1, dtype=x.dtype)], dim=1)

    def check_labels(self, y: torch.Tensor) -> None:
        bad = int(((y != 1) & (y != -1)).sum())
        if bad:
            raise InputError(f"`y` must be ±1 for the hinge loss. Found {bad} other labels.")

    def g1(self, theta: torch.Tensor) -> torch.Tensor:
        return 0.5 * self.l2 * (theta @ theta)

    def g1_subgradient(self, theta: torch.Tensor) -> torch.Tensor:
        return self.l2 * theta

    def losses(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.clamp(1.0 - y * (x @ theta), min=0.0)

    def per_example_subgradients(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        active = (y * (x @ theta) < 1.0).to(x.dtype)
        return (-(y * active)).unsqueeze(1) * x

    @staticmethod
    def xi_bound(*, x_l1_max: float) -> float:
        """Ξ for ‖x‖₁ <= x_l1_max and y = ±1: ‖y·[x; 1]‖₁ <= x_l1_max + 1 (independent of θ)."""
        return x_l1_max + 1.0


Cost = SquaredLoss | HingeSVM


def clip_l1(rows: torch.Tensor, bound: float) -> torch.Tensor:
    """Scale every row of a (batch, d) tensor to L1 norm at most ``bound`` (rows already inside are kept)."""
    check_number(bound, "xi", low=0, where=" (Ξ)")
    norms = rows.abs().sum(dim=1, keepdim=True)
    return rows * torch.clamp(bound / torch.clamp(norms, min=1e-300), max=1.0)


def average_subgradient(cost: Cost, owner: Owner, theta: torch.Tensor, *, xi: float) -> torch.Tensor:
    """Q_ℓ(D_ℓ; k) = (1/n_ℓ)·Σ ξ_ḡ2(θ), eq. (5), each per-example subgradient scaled to ‖·‖₁ <= Ξ (Assumption 3)."""
    x = cost.features(owner.x)
    theta = _check_theta(theta, x.shape[1])
    cost.check_labels(owner.y)
    return clip_l1(cost.per_example_subgradients(theta, x, owner.y), xi).mean(dim=0)


def respond(owner: Owner, cost: Cost, theta: torch.Tensor, *, xi: float, steps: int,
            generator: torch.Generator | KeyedStream) -> tuple[torch.Tensor, dp_accounting.DpEvent]:
    """Owner ℓ's DP response (6) to the query at θ[k], and the event describing exactly that release.

    Returns the response as released, on its grid 2^-p (:func:`~mpcdp.accounting.laplace.laplace_grid`):
    (round(2^p·Q_ℓ(D_ℓ; k)) + L)·2^-p, L i.i.d. exact discrete Laplace of integer scale t = ⌈Δ₁,int·T/ε_ℓ⌉ per
    coordinate (:mod:`mpcdp.noise.discrete_laplace`; Theorem 1's b_ℓ = 2ΞT/(n_ℓ·ε_ℓ) with the rounding in the
    sensitivity), and the event of exactly that release, ``LaplaceDpEvent(t/Δ₁,int)`` (``NonPrivateDpEvent`` and
    the exact value when ε_ℓ = ∞).
    """
    exact = average_subgradient(cost, owner, theta, xi=xi)
    if math.isinf(owner.epsilon):
        return exact, query_event(0.0, response_sensitivity(xi=xi, n_l=owner.n))
    grid = laplace_grid(xi=xi, steps=steps, n_l=owner.n, epsilon_l=owner.epsilon, dim=int(exact.numel()))
    noise = discrete_laplace.sample(grid.scale_units, int(exact.numel()), discrete_laplace.words_from(generator))
    units = encode(exact, grid.precision) + torch.from_numpy(noise)
    return units.to(DTYPE) * 2.0**-grid.precision, grid.event


def owner_weights(sizes: Sequence[int]) -> tuple[float, ...]:
    """n_ℓ/n for each owner (eq. 4): every record weighs 1/n whatever owner holds it."""
    sizes = tuple(sizes)
    if not sizes:
        raise ConfigError("`sizes` is empty: at least one owner is needed.")
    for j, n_l in enumerate(sizes):
        check_integer(n_l, "sizes", where=f" (owner {j})")
    n = sum(int(n_l) for n_l in sizes)
    return tuple(int(n_l) / n for n_l in sizes)


def combine(responses: Sequence[torch.Tensor], sizes: Sequence[int]) -> torch.Tensor:
    """The learner's aggregate Σ_ℓ (n_ℓ/n)·Q̃_ℓ(D_ℓ; k) (Algorithms 1–2, line 5) — the step to run inside MPC."""
    weights = owner_weights(sizes)
    if len(responses) != len(weights):
        raise InputError(f"`responses` needs one entry per owner ({len(weights)}). Found {len(responses)}.")
    shapes = {tuple(r.shape) for r in responses}
    if len(shapes) != 1:
        raise InputError(f"`responses` differ in shape: {sorted(shapes)}")
    return sum((w * r.to(DTYPE) for w, r in zip(weights, responses)), torch.zeros((), dtype=DTYPE))


def project_box(theta: torch.Tensor, theta_max: float) -> torch.Tensor:
    """Π_Θ for Θ = {‖θ‖∞ <= θ_max}: the Euclidean projection onto a box is the coordinate-wise clamp."""
    check_number(theta_max, "theta_max", low=0, infinite=True, note="math.inf for no constraint")
    return theta if math.isinf(theta_max) else torch.clamp(theta, -theta_max, theta_max)


def algorithm1_step(theta: torch.Tensor, aggregate: torch.Tensor, cost: Cost, *, k: int, rho: float,
                    steps: int) -> torch.Tensor:
    """Algorithm 1, line 5: θ[k+1] = θ[k] − ρ/(T²·k)·(ξ_g1(θ[k]) + aggregate)."""
    _check_round(k, steps)
    return theta - rho / (steps ** 2 * k) * (cost.g1_subgradient(theta) + aggregate)


def algorithm2_step(theta: torch.Tensor, aggregate: torch.Tensor, cost: Cost, *, k: int, c1: float,
                    theta_max: float) -> torch.Tensor:
    """Algorithm 2, line 5: θ[k+1] = Π_Θ[θ[k] − (c1/√k)·(ξ_g1(θ[k]) + aggregate)]."""
    check_integer(k, "k")
    return project_box(theta - c1 / math.sqrt(k) * (cost.g1_subgradient(theta) + aggregate), theta_max)


def averaging_step(theta_bar: torch.Tensor, theta: torch.Tensor, *, k: int, steps: int) -> torch.Tensor:
    """Averaging rule (8): θ̄[k+1] = (k−1)/(1/√T + k)·θ̄[k] + (1/√T + 1)/(1/√T + k)·θ[k] (weights sum to 1)."""
    _check_round(k, steps)
    r = 1.0 / math.sqrt(steps)
    return (k - 1) / (r + k) * theta_bar + (r + 1) / (r + k) * theta


@dataclasses.dataclass
class CollabRun:
    """A run of Algorithm 1 or 2.

    Attributes:
        algorithm: 1 or 2.
        iterates: θ[1..T].
        averages: θ̄[1..T] for Algorithm 2 (θ̄[1] := θ[1]; rule (8) gives it weight 0), else None.
        final: θ[T] (Algorithm 1) or θ̄[T] (Algorithm 2).
        scales: b_ℓ per owner (Theorem 1).
        events: per owner, the composition of the events its responses returned (T−1 queries).
    """

    algorithm: int
    iterates: list[torch.Tensor]
    averages: list[torch.Tensor] | None
    final: torch.Tensor
    scales: tuple[float, ...]
    events: tuple[dp_accounting.DpEvent, ...]


# aggregate(k, local) -> Σ over *every* owner of (n_ℓ/n)·Q̃_ℓ, given Σ over the owners held here (public result)
Aggregate = Callable[[int, torch.Tensor], torch.Tensor]


def run_collab(owners: Sequence[Owner], cost: Cost, *, algorithm: int, steps: int, xi: float,
               rho: float | None = None, c1: float | None = None, theta_max: float = math.inf,
               theta0: torch.Tensor | None = None, generator: torch.Generator | KeyedStream | None = None,
               generators: Sequence[torch.Generator | KeyedStream] | None = None, sizes: Sequence[int] | None = None,
               positions: Sequence[int] | None = None, aggregate: Aggregate | None = None) -> CollabRun:
    """Run Algorithm 1 (``rho``) or Algorithm 2 (``c1``, ``theta_max``) over the owners held here.

    In one process (the defaults) every owner is here, answering in turn, and the learner's combination is a
    plaintext weighted sum. In a party process (:mod:`mpcdp.jobs.collab`) ``owners`` is this party's owner,
    ``sizes`` every owner's n_ℓ (public), ``positions`` where the owners held here sit in ``sizes``, and
    ``aggregate`` sums the weighted responses across parties — in the clear (the learner sees every response,
    as in the paper) or inside the MPC (only the sum is opened).

    Args:
        owners: the data owners (each with its ε_ℓ).
        cost: :class:`SquaredLoss` or :class:`HingeSVM`.
        algorithm: 1 or 2.
        steps: T, the horizon (Algorithms loop k = 1..T−1).
        xi: Ξ, the per-example L1 bound on ξ_ḡ2 (enforced by scaling).
        rho: ρ of Algorithm 1 (Theorem 2 needs ρ/T² <= 1/λ).
        c1: c1 of Algorithm 2.
        theta_max: θ_max of Θ (Algorithm 2 only; Algorithm 1 is unconstrained).
        theta0: θ[1] (zeros by default; projected onto Θ for Algorithm 2).
        generator: the noise source shared by the owners in turn; None keys one by the OS CSPRNG.
        generators: one noise source per owner held here (instead of ``generator``).
        sizes: every owner's record count n_ℓ, public (default: the owners held here are all of them).
        positions: the index in ``sizes`` of each owner held here (default 0, 1, ...).
        aggregate: the cross-party sum of Σ_{owners here} (n_ℓ/n)·Q̃_ℓ (default: identity).
    """
    _check_run(owners, algorithm=algorithm, steps=steps, rho=rho, c1=c1, theta_max=theta_max)
    generators = _noise_sources(owners, generator, generators)
    sizes, positions = _placement(owners, sizes, positions)
    weights = owner_weights(sizes)
    local_weights = [weights[p] for p in positions]
    dim = cost.features(owners[0].x[:1]).shape[1]
    theta = torch.zeros(dim, dtype=DTYPE) if theta0 is None else _check_theta(theta0, dim).clone()
    if algorithm == 2:
        theta = project_box(theta, theta_max)
    iterates, averages = [theta], ([theta] if algorithm == 2 else None)
    released: list[list[dp_accounting.DpEvent]] = [[] for _ in owners]
    for k in range(1, steps):
        local = _query_owners(owners, cost, theta, xi=xi, steps=steps, weights=local_weights, generators=generators,
                              released=released)
        aggregate_k = local if aggregate is None else aggregate(k, local)
        if algorithm == 1:
            assert rho is not None  # (_check_run)
            new_theta = algorithm1_step(theta, aggregate_k, cost, k=k, rho=rho, steps=steps)
        else:
            assert c1 is not None and averages is not None  # (_check_run; Algorithm 2 averages)
            new_theta = algorithm2_step(theta, aggregate_k, cost, k=k, c1=c1, theta_max=theta_max)
            averages.append(averaging_step(averages[-1], theta, k=k, steps=steps))
        theta = new_theta
        iterates.append(theta)
    scales = tuple(0.0 if math.isinf(o.epsilon) else laplace_grid(xi=xi, steps=steps, n_l=o.n, epsilon_l=o.epsilon,
                                                                   dim=dim).scale for o in owners)
    events = tuple(dp_accounting.ComposedDpEvent(list(e)) for e in released)
    final = iterates[-1] if averages is None else averages[-1]  # (averages: Algorithm 2's only)
    return CollabRun(algorithm, iterates, averages, final, scales, events)


def _check_run(owners: Sequence[Owner], *, algorithm: int, steps: int, rho: float | None, c1: float | None,
               theta_max: float) -> None:
    """Refuse a run :func:`run_collab` cannot make: an unknown algorithm, a horizon that is not a positive
    integer, no owners, a missing or non-positive step size, a bounded Θ for Algorithm 1, or owners whose
    features differ in width."""
    check_choice(algorithm, "algorithm", (1, 2))
    check_integer(steps, "steps", where=" (the horizon T)")
    if not owners:
        raise ConfigError("`owners` is empty: at least one data owner is needed.")
    step_size = rho if algorithm == 1 else c1
    name = "rho" if algorithm == 1 else "c1"
    check_number(step_size, name, low=0, where=f" (Algorithm {algorithm})")
    if algorithm == 1 and not math.isinf(theta_max):
        raise ConfigError(f"`theta_max` must be math.inf for Algorithm 1 (unconstrained, Theorem 2). "
                          f"Found {theta_max!r}.")
    dims = {o.x.shape[1] for o in owners}
    if len(dims) != 1:
        raise InputError(f"owners' features differ in width: {sorted(dims)}")


def _noise_sources(owners: Sequence[Owner], generator: torch.Generator | KeyedStream | None,
                   generators: Sequence[torch.Generator | KeyedStream] | None
                   ) -> Sequence[torch.Generator | KeyedStream]:
    """One noise source per owner held here: ``generators`` as given, else ``generator`` shared by every owner
    in turn (by default a :class:`~mpcdp.randomness.KeyedStream` keyed by the OS CSPRNG)."""
    if generators is None:
        if generator is None:
            generator = KeyedStream(secure_key(), b"mpcdp/laplace")
        generators = [generator] * len(owners)
    if len(generators) != len(owners):
        raise ConfigError(f"`generators` needs one entry per owner held here ({len(owners)}). "
                          f"Found {len(generators)}.")
    return generators


def _placement(owners: Sequence[Owner], sizes: Sequence[int] | None,
               positions: Sequence[int] | None) -> tuple[list[int], list[int]]:
    """Every owner's record count and the index of each owner held here among them (by default the owners
    held here are all of them, in order), checked against the owners' own counts."""
    sizes = [o.n for o in owners] if sizes is None else list(sizes)
    positions = list(range(len(owners))) if positions is None else list(positions)
    if len(positions) != len(owners) or any(sizes[p] != o.n for p, o in zip(positions, owners)):
        raise ConfigError(f"`sizes` {sizes} at `positions` {positions} must be the owners' own record counts "
                          f"{[o.n for o in owners]}.")
    return sizes, positions


def _query_owners(owners: Sequence[Owner], cost: Cost, theta: torch.Tensor, *, xi: float, steps: int,
                  weights: Sequence[float], generators: Sequence[torch.Generator | KeyedStream],
                  released: list[list[dp_accounting.DpEvent]]) -> torch.Tensor:
    """One round's query to the owners held here, in turn: each answers θ[k] (:func:`respond`) and its event is
    appended to ``released``; returns Σ_{owners here} (n_ℓ/n)·Q̃_ℓ, ``weights`` being their n_ℓ/n."""
    local = torch.zeros(theta.shape[0], dtype=DTYPE)
    for j, owner in enumerate(owners):
        response, event = respond(owner, cost, theta, xi=xi, steps=steps, generator=generators[j])
        local += weights[j] * response
        released[j].append(event)
    return local


def pooled_cost(cost: Cost, owners: Sequence[Owner], theta: torch.Tensor) -> float:
    """f(θ) of (2) on the owners' pooled data (an evaluation on private data: for experiments only)."""
    x = torch.cat([cost.features(o.x) for o in owners])
    y = torch.cat([o.y for o in owners])
    theta = _check_theta(theta, x.shape[1])
    return float(cost.g1(theta) + cost.losses(theta, x, y).mean())


def relative_fitness(f_theta: float, f_star: float) -> float:
    """ψ(θ) = f(θ)/f(θ*) − 1, eq. (13)."""
    check_number(f_star, "f_star", low=0, infinite=True, note="for the relative fitness (13)")
    return f_theta / f_star - 1.0


def nonprivate_optimum(owners: Sequence[Owner], cost: Cost, *, steps: int = 5000) -> torch.Tensor:
    """θ* of (1) on the pooled data (Θ unconstrained). Squared loss: the normal equations. Hinge: §IV's recipe,
    Algorithm 1 with ε = ∞, ρ = T²/L with L = l2 (step 1/(L·k)), best iterate by f."""
    x = torch.cat([cost.features(o.x) for o in owners])
    y = torch.cat([o.y for o in owners])
    n, dim = x.shape
    if isinstance(cost, SquaredLoss):
        gram = x.T @ x / n + 0.5 * cost.l2 * torch.eye(dim, dtype=DTYPE)
        return torch.linalg.lstsq(gram, x.T @ y / n).solution
    check_number(cost.l2, "l2", low=0, note="for the hinge reference optimum (strong convexity)")
    theta = best = torch.zeros(dim, dtype=DTYPE)  # θ[1]: the answer when no step runs (steps <= 1)
    best_value = math.inf
    for k in range(1, steps):
        value = float(cost.g1(theta) + cost.losses(theta, x, y).mean())
        if value < best_value:
            best, best_value = theta, value
        grad = cost.g1_subgradient(theta) + cost.per_example_subgradients(theta, x, y).mean(0)
        theta = theta - grad / (cost.l2 * k)
    return best


def _check_theta(theta, dim: int) -> torch.Tensor:
    theta = torch.as_tensor(theta, dtype=DTYPE)
    if theta.shape != (dim,):
        raise InputError(f"`theta` must have shape ({dim},). Found {tuple(theta.shape)}.")
    if not torch.isfinite(theta).all():
        raise InputError("`theta` has NaN/Inf entries.")
    return theta


def _check_round(k: int, steps: int) -> None:
    check_integer(k, "k", maximum=steps - 1, maximum_name="T − 1")
