"""Predicting the fitness gap of collaborative DP learning before running it (paper 003: Wu, Farokhi, Smith, Kaafar,
arXiv:1906.09679, §III, Theorems 2–3), and choosing which owners to include (§I-A, §IV-A.3).

With n = Σ_ℓ n_ℓ and S = Σ_ℓ 1/ε_ℓ² (an owner with ε_ℓ = ∞ adds 0):

* Theorem 2 (Algorithm 1; f L-strongly convex with λ-Lipschitz gradient, θ_max = ∞, T large enough):
  (9)  min_k E f(θ[k]) − f(θ*) <= 8Ξ²ρ/(L·n²)·S + ε_slack,
  (10) min_k E ‖θ[k] − θ*‖²    <= 32Ξ²ρ/(L²·n²)·S + ε_slack/(4L).
  T cancels: the noise energy grows as T² (Appendix B) and the step ρ/(T²k) shrinks as 1/T².
* Theorem 3 (Algorithm 2; f convex; c1, c2 "large enough", possibly depending on T):
  (11) E f(θ̄[T]) − f(θ*) <= c2·Ξ/n·√S,
  (12) E ‖θ̄[T] − θ*‖²    <= 4c2·Ξ/(L·n)·√S   (g1 L-strongly convex).

Appendix B's noise energy E‖w[k]‖² = 8Ξ²T²/n²·S drops the dimension: i.i.d. Laplace(b) on p_θ coordinates has
E‖w_ℓ‖² = 2p_θ·b². :func:`noise_energy` takes ``dimension`` (default 1 = the paper's expression); the theorem
functions reproduce (9)–(12) as printed, and ``dimension = p_θ`` in :func:`theorem2_gap` gives the bound with the
factor restored (the proof is linear in the noise energy).

Owner selection: both bounds depend on the owners only through √S/n — (9) is its square times constants, (11)
is it times constants — so both theorems rank every subset of owners the same way. Including owner j helps iff
√(S + 1/ε_j²)/(n + n_j) < √S/n: a small owner with a small budget adds noise its records cannot average out
("it is best to exclude smaller conservative datasets", §I-A and Fig. 6). Note the bounds compare with θ* of the
*included* data; they do not value the statistical benefit of more records.
"""

from __future__ import annotations

import itertools
import math
from typing import Sequence

from mpcdp.errors import ConfigError
from mpcdp.validation import check_integer, check_number

EXHAUSTIVE_LIMIT = 20  # owners; above this the subset search is greedy


def _check_owners(sizes: Sequence[int], epsilons: Sequence[float]) -> tuple[tuple[int, ...], tuple[float, ...]]:
    sizes, epsilons = tuple(sizes), tuple(epsilons)
    if not sizes:
        raise ConfigError("`sizes` is empty: at least one owner is needed.")
    if len(sizes) != len(epsilons):
        raise ConfigError(f"`sizes` and `epsilons` need one entry per owner. Found {len(sizes)} and {len(epsilons)}.")
    for j, (n_l, eps) in enumerate(zip(sizes, epsilons)):
        check_integer(n_l, "sizes", where=f" (owner {j})")
        check_number(eps, "epsilons", low=0, infinite=True, where=f" (owner {j})", note="math.inf for no privacy")
    return sizes, epsilons


def _positive(name: str, value: float) -> None:
    check_number(value, name, low=0)


def inverse_budget_sum(epsilons: Sequence[float]) -> float:
    """S = Σ_ℓ 1/ε_ℓ² (ε_ℓ = ∞ contributes 0)."""
    return math.fsum(0.0 if math.isinf(e) else 1.0 / e / e for e in epsilons)  # never e*e: it underflows to 0


def collaboration_score(sizes: Sequence[int], epsilons: Sequence[float]) -> float:
    """√S/n, the factor through which owners enter both Theorem 2 (squared) and Theorem 3 (linearly)."""
    sizes, epsilons = _check_owners(sizes, epsilons)
    return math.sqrt(inverse_budget_sum(epsilons)) / sum(int(n) for n in sizes)


def noise_energy(sizes: Sequence[int], epsilons: Sequence[float], *, xi: float, steps: int,
                 dimension: int = 1) -> float:
    """E‖w[k]‖² of the combined noise w[k] = (1/n)·Σ n_ℓ·w_ℓ[k] (Appendix B): 8Ξ²T²·p_θ/n²·S.

    ``dimension = 1`` is the paper's printed expression; pass p_θ for the exact energy of p_θ Laplace coordinates.
    """
    sizes, epsilons = _check_owners(sizes, epsilons)
    _positive("xi", xi)
    check_integer(steps, "steps")
    check_integer(dimension, "dimension")
    n = sum(int(v) for v in sizes)
    return 8.0 * xi ** 2 * steps ** 2 * dimension / n ** 2 * inverse_budget_sum(epsilons)


def theorem2_gap(sizes: Sequence[int], epsilons: Sequence[float], *, xi: float, rho: float,
                 strong_convexity: float, slack: float = 0.0, dimension: int = 1) -> float:
    """Theorem 2, (9): min_k E f(θ[k]) − f(θ*) <= 8Ξ²ρ/(L·n²)·Σ 1/ε_ℓ² + ε_slack (× p_θ if ``dimension`` is given).

    ∝ 1/(n²·ε²) for equal budgets. Valid for Algorithm 1 with ρ/T² <= 1/λ (:func:`theorem2_rho_limit`).
    """
    sizes, epsilons = _check_owners(sizes, epsilons)
    for name, value in (("xi", xi), ("rho", rho), ("strong_convexity", strong_convexity)):
        _positive(name, value)
    n = sum(int(v) for v in sizes)
    return 8.0 * xi ** 2 * rho * dimension / (strong_convexity * n ** 2) * inverse_budget_sum(epsilons) + slack


def theorem2_distance(sizes: Sequence[int], epsilons: Sequence[float], *, xi: float, rho: float,
                      strong_convexity: float, slack: float = 0.0, dimension: int = 1) -> float:
    """Theorem 2, (10): min_k E‖θ[k] − θ*‖² <= 32Ξ²ρ/(L²·n²)·Σ 1/ε_ℓ² + ε_slack/(4L) (as stated; the proof's last
    line has ε/(8L²))."""
    gap = theorem2_gap(sizes, epsilons, xi=xi, rho=rho, strong_convexity=strong_convexity, dimension=dimension)
    return 4.0 * gap / strong_convexity + slack / (4.0 * strong_convexity)


def theorem2_rho_limit(*, steps: int, lipschitz: float) -> float:
    """The largest ρ Theorem 2's proof allows: the first step ρ/T² must be <= 1/λ, so ρ <= T²/λ."""
    _positive("lipschitz", lipschitz)
    return steps ** 2 / lipschitz


def theorem3_gap(sizes: Sequence[int], epsilons: Sequence[float], *, xi: float, c2: float) -> float:
    """Theorem 3, (11): E f(θ̄[T]) − f(θ*) <= c2·Ξ/n·√(Σ 1/ε_ℓ²). ∝ 1/(n·ε) for equal budgets; c2 may depend on T."""
    _positive("xi", xi)
    _positive("c2", c2)
    return c2 * xi * collaboration_score(sizes, epsilons)


def theorem3_distance(sizes: Sequence[int], epsilons: Sequence[float], *, xi: float, c2: float,
                      strong_convexity: float) -> float:
    """Theorem 3, (12): E‖θ̄[T] − θ*‖² <= 4c2·Ξ/(L·n)·√(Σ 1/ε_ℓ²) (g1 L-strongly convex)."""
    _positive("strong_convexity", strong_convexity)
    return 4.0 * theorem3_gap(sizes, epsilons, xi=xi, c2=c2) / strong_convexity


def select_owners(sizes: Sequence[int], epsilons: Sequence[float], *,
                  always_include: Sequence[int] = ()) -> tuple[int, ...]:
    """The subset of owners (sorted indices) with the smallest predicted gap, √S/n (Theorems 2 and 3 agree).

    ``always_include``: owners that must take part (e.g. the learner's own data, §V). Exhaustive search up to
    20 owners; above that, greedy: start from the required owners (or the best single owner) and add the owner
    that lowers √S/n most until none does. Ties keep the larger subset (more data at the same predicted gap).
    """
    sizes, epsilons = _check_owners(sizes, epsilons)
    required = tuple(sorted(set(always_include)))
    for j in required:
        check_integer(j, "always_include", minimum=0, maximum=len(sizes) - 1, note="each entry an owner index")

    def score(subset: Sequence[int]) -> float:
        return collaboration_score([sizes[j] for j in subset], [epsilons[j] for j in subset])

    optional = [j for j in range(len(sizes)) if j not in required]
    if len(sizes) <= EXHAUSTIVE_LIMIT:
        best: tuple[int, ...] = ()  # replaced by the first subset, even one whose score is inf
        best_score = math.inf
        for r in range(len(optional) + 1):
            for extra in itertools.combinations(optional, r):
                subset = tuple(sorted(required + extra))
                if not subset:
                    continue
                value = score(subset)
                if value < best_score or (value == best_score and len(subset) > len(best)):
                    best, best_score = subset, value
        return best
    chosen = list(required) or [min(optional, key=lambda j: score([j]))]
    remaining = [j for j in optional if j not in chosen]
    while remaining:
        candidate = min(remaining, key=lambda j: score(chosen + [j]))
        if score(chosen + [candidate]) > score(chosen):
            break
        chosen.append(candidate)
        remaining.remove(candidate)
    return tuple(sorted(chosen))
