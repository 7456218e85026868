"""`mpcdp collab PROTOCOL.toml`: paper 003 (Wu, Farokhi, Smith, Kaafar) — data owners answer a learner's gradient
queries with Laplace noise, each with its own budget ε_ℓ, and the learner combines the answers with weights
n_ℓ/n (Algorithm 1 or 2, :mod:`mpcdp.learning.collab`); the fitness gap is predicted before training by
Theorem 2 / 3 (:mod:`mpcdp.learning.collab_prediction`).

Backends (``backend`` in the protocol or ``--backend``; :mod:`mpcdp.execution`):

* ``simulated`` — one process, every owner answering in turn;
* ``processes`` (formerly ``plain``) — every owner a party process of the runtime; each sends its weighted noisy response
  (n_ℓ/n)·Q̃_ℓ to every other party in the clear, as the paper's learner receives them (each response is
  ε_ℓ/T-DP on its own, Theorem 1); every party then steps the same public model;
* ``mpc`` — the same owners, but the weighted responses are summed inside the MPC and only the sum
  Σ_ℓ (n_ℓ/n)·Q̃_ℓ is opened (one opening of p_θ + 1 elements per round; :func:`~mpcdp.mpc.release.noisy_release`
  with no MPC noise — the Laplace noise is each owner's own). Nobody sees an individual response.

The three give the same model for the same seed (the owners' noise comes from per-owner generators seeded by
(seed, owner)), up to the fixed-point rounding of the secure sum (2^-17 per element per round).

Security model (``processes`` and ``mpc``): honest-but-curious owners; the model, the query points and the sizes
n_ℓ are public. A protocol's ``seed`` makes the Laplace noise reproducible (experiments); without it every owner
keys its noise stream by the OS CSPRNG.

Protocol fields: ``dataset`` ('lending-club' regression, 'lending-club-class' ±1, or any feature-row dataset
such as 'a9a', whose rows are scaled to ‖x‖₁ <= 1 with the test split's largest L1 norm), ``cost`` ('squared' or
'hinge'), ``algorithm`` (1 or 2), ``backend``; ``[owners] sizes, epsilons`` (one entry per owner: the first
n_1 training rows are owner 1's, the next n_2 owner 2's, ... as in §IV-A); ``[training] steps`` (T), ``xi``
(Ξ, the per-example L1 bound, enforced by scaling), ``rho`` (Algorithm 1; default T²/λ with λ the public
slice's smoothness) or ``c1`` and ``theta_max`` (Algorithm 2), ``l2``, ``seed``; ``[mpc]`` as for `mpcdp train`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
import warnings
from typing import Any, Sequence

import numpy as np
import torch

from mpcdp.accounting.laplace import certify_owner
from mpcdp.data.registry import load
from mpcdp.config import MpcSettings, resolve_mpc
from mpcdp.errors import ConfigError, InsecureSettingWarning
from mpcdp.execution import MPC, PROCESSES, SIMULATED, backend_for
from mpcdp.validation import check_choice, check_integer, check_number, read_protocol
from mpcdp.learning.collab import (HingeSVM, Owner, SquaredLoss, nonprivate_optimum, pooled_cost, relative_fitness,
                                   run_collab)
from mpcdp.learning.collab_prediction import collaboration_score, theorem2_gap, theorem3_gap

BACKENDS = (SIMULATED, PROCESSES, MPC)
COSTS = ("squared", "hinge")


@dataclasses.dataclass(frozen=True)
class CollabPlan:
    """A paper 003 protocol resolved against the command line."""

    name: str
    dataset: str
    cost: str
    algorithm: int
    backend: str
    sizes: tuple[int, ...]
    epsilons: tuple[float, ...]
    steps: int
    xi: float
    rho: float | None = None
    c1: float | None = None
    theta_max: float = math.inf
    l2: float = 0.0
    seed: int | None = 0
    mpc: MpcSettings = dataclasses.field(default_factory=MpcSettings)  # resolved once (resolve_mpc)
    offset: int = 0  # training rows before owner 1's (to leave an owner out and keep the others' rows)

    @property
    def parties(self) -> int:
        """The owners, one party each."""
        return len(self.sizes)

    def cost_function(self) -> SquaredLoss | HingeSVM:
        return SquaredLoss(l2=self.l2) if self.cost == "squared" else HingeSVM(l2=self.l2)


def plan_from(path: str, *, backend: str | None = None, algorithm: int | None = None,
              sizes: Sequence[int] | None = None, epsilons: Sequence[float] | None = None, seed: int | None = None,
              overrides: dict[str, Any] | None = None) -> CollabPlan:
    """Read a protocol file (see the module docstring); keyword arguments override it (sweeps, the command line)."""
    protocol = read_protocol(path, ("owners", "training"))
    settings = resolve_mpc(protocol.get("mpc", {}), f" in {path!r}")  # a misspelt setting, before anything else
    settings.refuse_uncovered("paper 003's collaboration")
    owners, training = dict(protocol["owners"]), {**protocol["training"], **(overrides or {})}
    sizes = tuple(sizes if sizes is not None else owners.get("sizes", ()))
    epsilons = tuple(epsilons if epsilons is not None else owners.get("epsilons", ()))
    if not sizes or len(sizes) != len(epsilons):
        raise ConfigError(f"[owners] `sizes` and `epsilons` need one entry per owner. Found {list(sizes)} and "
                          f"{list(epsilons)}.")
    for j, n_l in enumerate(sizes):
        check_integer(n_l, "sizes", where=f" (owner {j + 1})")
    epsilons = tuple(check_number(e, "epsilons", low=0, infinite=True, where=f" (owner {j + 1})",
                                  note="inf: no privacy") for j, e in enumerate(epsilons))
    backend = backend_for(backend or protocol.get("backend", SIMULATED), BACKENDS, "`mpcdp collab`")
    if backend != "simulated" and len(sizes) < 2:
        raise ConfigError(f"the {backend} backend needs at least 2 owners. Found {len(sizes)}.")
    cost = check_choice(protocol.get("cost", "squared"), "cost", COSTS)
    algorithm = check_choice(algorithm if algorithm is not None else protocol.get("algorithm", 1), "algorithm", (1, 2))
    known = {"steps", "xi", "rho", "c1", "theta_max", "l2", "seed"}
    unknown = sorted(set(training) - known)
    if unknown:
        raise ConfigError(f"[training] {', '.join(f'`{k}`' for k in unknown)} in {path!r} is not a parameter of "
                          f"paper 003's algorithms; they take {sorted(known)}.")
    steps = check_integer(training.get("steps"), "steps", minimum=2, where=" (the horizon T)")
    xi = check_number(training.get("xi"), "xi", low=0, where=" (Ξ, the per-example L1 bound)")
    if algorithm == 2 and "c1" not in training:
        raise ConfigError("Algorithm 2 needs `c1` (its step size c1/√k) in [training].")
    theta_max = float(training.get("theta_max", math.inf))
    if algorithm == 1 and not math.isinf(theta_max):
        raise ConfigError(f"`theta_max` applies to Algorithm 2 only (Algorithm 1 is unconstrained). Found "
                          f"{theta_max!r}.")
    return CollabPlan(
        name=protocol.get("name", path), dataset=protocol.get("dataset", "lending-club"), cost=cost,
        algorithm=algorithm, backend=backend, sizes=sizes, epsilons=epsilons, steps=steps, xi=float(xi),
        rho=training.get("rho"), c1=training.get("c1"), theta_max=theta_max, l2=float(training.get("l2", 0.0)),
        seed=seed if seed is not None else training.get("seed"), mpc=settings)


@dataclasses.dataclass(frozen=True)
class Problem:
    """The owners' data for a plan (first n_1 training rows to owner 1, and so on) and the public reference."""

    owners: tuple[Owner, ...]
    x_public: torch.Tensor
    y_public: torch.Tensor
    data_name: str


def problem_of(plan: CollabPlan, *, reference_sizes: Sequence[int] | None = None) -> Problem:
    data = load(plan.dataset)
    x, y = torch.from_numpy(np.asarray(data.x_train)).double(), torch.from_numpy(np.asarray(data.y_train)).double()
    if x.ndim != 2:
        raise ConfigError(f"dataset {plan.dataset!r} holds images; paper 003's models take feature rows.")
    x_public = torch.from_numpy(np.asarray(data.x_test)).double()
    if not plan.dataset.startswith("lending-club"):  # Lending Club ships prepared; others are scaled here
        x, x_public = _unit_l1_rows(x, x_public), _unit_l1_rows(x_public, x_public)
    if plan.offset + sum(plan.sizes) > len(y):
        raise ConfigError(f"[owners] `sizes` {list(plan.sizes)} ask for {sum(plan.sizes)} rows; dataset "
                          f"{plan.dataset!r} has {len(y) - plan.offset} training rows.")
    owners, start = [], plan.offset
    for j, (n_l, eps) in enumerate(zip(plan.sizes, plan.epsilons)):
        owners.append(Owner(x[start:start + n_l], y[start:start + n_l], epsilon=eps, name=f"owner {j + 1}"))
        start += n_l
    return Problem(tuple(owners), x_public, torch.from_numpy(np.asarray(data.y_test)).double(), data.name)


def _unit_l1_rows(x: torch.Tensor, x_public: torch.Tensor) -> torch.Tensor:
    """Rows divided by the largest L1 norm on the public (test) split, any row still above 1 scaled onto the
    unit L1 sphere — so that ‖x‖₁ <= 1 and Ξ bounds the subgradients (Assumption 3) with public statistics."""
    scaled = x / x_public.abs().sum(1).max().clamp(min=1e-12)
    return scaled / scaled.abs().sum(1, keepdim=True).clamp(min=1.0)


def step_size(plan: CollabPlan, problem: Problem) -> dict[str, float]:
    """ρ (Algorithm 1; default T²/λ, λ the smoothness estimated on the public slice — Theorem 2's largest ρ) or
    c1 and θ_max (Algorithm 2)."""
    if plan.algorithm == 2:
        assert plan.c1 is not None  # (plan_from requires c1 for Algorithm 2)
        return {"c1": float(plan.c1), "theta_max": plan.theta_max}
    if plan.rho is not None:
        return {"rho": float(plan.rho)}
    _, smoothness = _public_curvature(plan, problem)
    return {"rho": plan.steps ** 2 / smoothness}


def _public_curvature(plan: CollabPlan, problem: Problem) -> tuple[float, float]:
    cost = plan.cost_function()
    if isinstance(cost, SquaredLoss):
        return cost.curvature(problem.x_public)
    return max(plan.l2, 1e-12), max(plan.l2, 1e-12)  # hinge: g1's curvature only


def noise_generators(seed: int | None, owners: int) -> list:
    """One Laplace noise source per owner: reproducible from (seed, owner) — warned as insecure — or a stream
    keyed by the OS CSPRNG."""
    if seed is None:
        from mpcdp.randomness import KeyedStream, secure_key

        return [KeyedStream(secure_key(), b"mpcdp/laplace") for _ in range(owners)]
    warnings.warn("reproducible Laplace noise seed set: the owners' noise is predictable — for experiments only",
                  InsecureSettingWarning, stacklevel=2)
    return [torch.Generator().manual_seed(int(np.random.SeedSequence([seed, j]).generate_state(1, np.uint64)[0] >> 1))
            for j in range(owners)]


def prediction(plan: CollabPlan, problem: Problem, *, sizes: Sequence[int] | None = None,
               epsilons: Sequence[float] | None = None) -> dict[str, Any]:
    """What Theorems 2 / 3 predict before training, from public quantities only (sizes, budgets, Ξ, ρ or c1,
    and curvature estimated on the public slice)."""
    sizes = list(plan.sizes if sizes is None else sizes)
    epsilons = list(plan.epsilons if epsilons is None else epsilons)
    strong, _ = _public_curvature(plan, problem)
    out: dict[str, Any] = {"score": collaboration_score(sizes, epsilons), "strong_convexity_public": strong}
    if plan.algorithm == 1:
        rho = step_size(plan, problem)["rho"]
        out["bound"] = theorem2_gap(sizes, epsilons, xi=plan.xi, rho=rho, strong_convexity=strong,
                                    dimension=problem.x_public.shape[1] + (plan.cost == "hinge"))
        out["theorem"] = "2"
    else:  # Theorem 3 holds for some constant c2 the paper does not give: its shape, not its value
        out["bound"] = None
        out["shape"] = theorem3_gap(sizes, epsilons, xi=plan.xi, c2=1.0)
        out["theorem"] = "3 (shape Ξ·√Σ1/ε²/n; its constant c2 is not given)"
    return out


def run_plan(plan: CollabPlan, *, f_star: float | None = None,
             evaluation: Sequence[Owner] | None = None) -> dict[str, Any]:
    """Train as ``plan`` says; report the model's fitness on the owners' pooled data next to the prediction.

    ``evaluation``: the owners whose pooled data f is evaluated on (default: the plan's own — sweeps that leave
    an owner out evaluate on the full set); ``f_star``: f(θ*) there, when the caller already has it."""
    problem = problem_of(plan)
    cost = plan.cost_function()
    evaluation = tuple(problem.owners if evaluation is None else evaluation)
    if f_star is None:
        f_star = pooled_cost(cost, evaluation, nonprivate_optimum(evaluation, cost))
    hyper = step_size(plan, problem)
    start = time.perf_counter()
    extra: dict[str, Any] = {}
    if plan.backend == "simulated":
        run = run_collab(problem.owners, cost, algorithm=plan.algorithm, steps=plan.steps, xi=plan.xi,
                         generators=noise_generators(plan.seed, len(problem.owners)), rho=hyper.get("rho"),
                         c1=hyper.get("c1"), theta_max=hyper.get("theta_max", math.inf))
        final, iterates = run.final, run.iterates
    else:
        from mpcdp.jobs.secure_run import Job, secure_run

        job = Job(f"collab-{plan.backend}", plan_fields=dataclasses.asdict(plan))
        result = secure_run(plan, collab_party, [(o, j, plan, hyper) for j, o in enumerate(problem.owners)], job=job)
        first = result.values[0]
        final, iterates = first["final"], first["iterates"]
        if any(not torch.equal(final, r["final"]) for r in result.values):
            raise RuntimeError("the parties ended with different models")  # cannot happen: the sum is public
        extra = {"bytes_per_party": max(r["bytes_sent"] or 0 for r in result.values), "rounds": first["rounds"],
                 "online_s": max(r["online_s"] for r in result.values)}
    wall = time.perf_counter() - start
    f_final = pooled_cost(cost, evaluation, final)
    dim = int(cost.features(problem.owners[0].x[:1]).shape[1])
    certificates = [_certificate(plan.xi, plan.steps, n, e, dim) for n, e in zip(plan.sizes, plan.epsilons)]
    return {
        "protocol": plan.name, "dataset": problem.data_name, "cost": plan.cost, "algorithm": plan.algorithm,
        "backend": plan.backend, "sizes": list(plan.sizes), "epsilons": list(plan.epsilons), "steps": plan.steps,
        "xi": plan.xi, **hyper, "seed": plan.seed,
        "epsilon_certified": [None if c is None else c.epsilon_pure for c in certificates],
        "epsilon_pld": [None if c is None else c.epsilon_pld for c in certificates],
        "f": f_final, "f_star": f_star, "gap": f_final - f_star, "psi": relative_fitness(f_final, f_star),
        "psi_curve": [relative_fitness(pooled_cost(cost, evaluation, t), f_star) for t in iterates[::10]],
        "prediction": prediction(plan, problem), "wall_s": round(wall, 4), **extra,
        "final": final.tolist(),
    }


@functools.lru_cache(maxsize=256)
def _certificate(xi: float, steps: int, n_l: int, epsilon_l: float, dim: int):
    """The certificate of one owner's T responses as released on their grid (None without privacy); cached."""
    return certify_owner(xi=xi, steps=steps, n_l=n_l, epsilon_l=epsilon_l, dim=dim) if math.isfinite(epsilon_l) else None


def collab_party(ctx, owner: Owner, position: int, plan: CollabPlan, hyper: dict[str, float]) -> dict[str, Any]:
    """One owner as a party process: answer every query; combine in the clear or inside the MPC."""
    from mpcdp.mpc.release import noisy_release

    cost = plan.cost_function()
    dim = cost.features(owner.x[:1]).shape[1]

    def aggregate(k: int, local: torch.Tensor) -> torch.Tensor:
        ctx.progress(k, plan.steps - 1)
        if plan.backend == PROCESSES:  # the learner sees every owner's (weighted) noisy response
            everyone = ctx.exchange_public(local, label="noisy responses (plain learner)")
            return torch.stack(everyone).sum(0)
        return noisy_release(ctx, local, None, shape=(dim,), label=f"aggregate[{k}]",
                             field="weighted noisy responses")

    generator = noise_generators(plan.seed, len(plan.sizes))[position]
    start = time.perf_counter()
    run = run_collab([owner], cost, algorithm=plan.algorithm, steps=plan.steps, xi=plan.xi, generators=[generator],
                     sizes=plan.sizes, positions=[position], aggregate=aggregate, rho=hyper.get("rho"),
                     c1=hyper.get("c1"), theta_max=hyper.get("theta_max", math.inf))
    return {"final": run.final, "iterates": run.iterates, "online_s": time.perf_counter() - start,
            "bytes_sent": ctx.wire.bytes_sent, "rounds": ctx.rounds}
