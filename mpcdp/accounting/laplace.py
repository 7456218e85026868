"""Per-owner Laplace noise and its certified budget (paper 003: Wu, Farokhi, Smith, Kaafar, "The Value of
Collaboration in Convex Machine Learning with Differential Privacy", arXiv:1906.09679).

Every query k = 1..T asks data owner ℓ for its average (sub)gradient Q_ℓ(D_ℓ; k) = (1/n_ℓ)·Σ ξ_ḡ2(θ[k]) (eq. 5).
Adjacency is replace-one (Definition 1: |D_ℓ \\ D′_ℓ| = |D′_ℓ \\ D_ℓ| <= 1). With Assumption 3,
Ξ := max ‖ξ_ḡ2‖₁, one replacement moves Q_ℓ by at most Δ_ℓ = 2Ξ/n_ℓ in L1 norm (Appendix A). The owner adds i.i.d.
Laplace noise of scale b_ℓ = 2ΞT/(n_ℓ·ε_ℓ) to every coordinate (Theorem 1), so each response is Δ_ℓ/b_ℓ = ε_ℓ/T-DP
and the T responses compose to ε_ℓ-DP (basic composition of pure DP; Appendix A multiplies the T density
ratios).

Two certificates are computed for an owner (:func:`certify_owner`):

* ``epsilon_pure`` — the closed form Σ_k Δ_ℓ/b_ℓ, δ = 0 (the paper's own argument). This is the guarantee.
* ``epsilon_pld`` — dp-accounting's PLD accountant (pessimistic discretisation, so an upper bound) at a tiny δ,
  and ``delta_at_budget`` = δ(ε_ℓ). The PLD accountant truncates the tails of the privacy-loss distribution
  and puts the cut mass (~1e-15) at +∞, so at δ = 0 it reports ε = ∞; at δ >= 1e-12 it reports ε <= ε_ℓ,
  a tighter (ε, δ) statement than basic composition for large T.

Released bits (:mod:`mpcdp.noise.discrete_laplace`). A response is released on a grid 2^-p (b·2^p ≈ 2^21 units,
:func:`~mpcdp.accounting.grid.release_precision`): r = round(2^p·Q) + L, L ~ DLap(t) exactly, t an integer.
:func:`laplace_grid` sets Δ₁,int = ⌈Δ_ℓ·2^p + d⌉ (the rounding of d coordinates) and t = ⌈Δ₁,int·T/ε_ℓ⌉, so each
response is exactly Δ₁,int/t <= ε_ℓ/T-DP for the bits released: ``epsilon_pure`` of :func:`certify_owner` with
``dim`` is the guarantee of what a run opens, no residual, no tail. (``epsilon_pld`` analyses the continuous
Laplace pair at the same noise multiplier; it is reported, not relied on.)

Relation label: dp-accounting accepts a ``LaplaceDpEvent`` only under ADD_OR_REMOVE_ONE (or REPLACE_SPECIAL).
Its noise multiplier is b/C with C the L1 distance a neighbouring step can move the released vector; the pair it
analyses is Lap(0, b) against Lap(C, b). We set C = Δ_ℓ = 2Ξ/n_ℓ, the *replace-one* sensitivity, so the
multiplier is b_ℓ/Δ_ℓ = T/ε_ℓ and the pair analysed is exactly the replace-one pair of the paper; the
relation label only tells the accountant to take C as given.
"""

from __future__ import annotations

import dataclasses
import fractions
import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import dp_accounting
    from dp_accounting import pld

from mpcdp.accounting.basics import leaves
from mpcdp.errors import ConfigError
from mpcdp.validation import check_integer, check_number

# The released mechanism's version (recorded results state it; change it when the released distribution changes).
MECHANISM = ("dlap-grid/1: nearest rounding to 2^-p, Δ₁,int = ceil(Δ₁·2^p + d), exact discrete Laplace of integer "
             "scale t = ceil(Δ₁,int·T/ε) (Canonne–Kamath–Steinke sampler)")

# A relative slack for comparing a float sum T·(ε/T) with ε (rounding only, ~1e-16 per term).
ROUNDING_RTOL = 1e-12


def _check_epsilon(epsilon_l: float, field: str = "epsilon") -> None:
    check_number(epsilon_l, field, low=0, infinite=True, note="math.inf for an owner without privacy")


def _check_common(xi: float, steps: int, n_l: int) -> None:
    check_number(xi, "xi", low=0, where=" (Ξ, the bound on ‖ξ_ḡ2‖₁)")
    check_integer(steps, "steps", where=" (the horizon T)")
    check_integer(n_l, "n_l", where=" (the owner's record count)")


def response_sensitivity(*, xi: float, n_l: int) -> float:
    """Δ_ℓ = 2Ξ/n_ℓ: the replace-one L1 sensitivity of one response Q_ℓ(D_ℓ; k) (paper 003, Appendix A)."""
    _check_common(xi, 1, n_l)
    return 2.0 * xi / n_l


def laplace_scale(*, xi: float, steps: int, n_l: int, epsilon_l: float) -> float:
    """b = 2ΞT/(n_ℓ·ε_ℓ), the per-coordinate Laplace scale of owner ℓ (paper 003, Theorem 1).

    Args:
        xi: Ξ, the bound on the L1 norm of one example's (sub)gradient of g2 (Assumption 3).
        steps: T, the horizon the owner's budget covers (the number of communication rounds agreed in advance).
        n_l: n_ℓ, the owner's record count.
        epsilon_l: ε_ℓ, the owner's budget over the whole horizon; ``math.inf`` means no privacy (b = 0), the
            paper's non-private reference (§IV) and the learner's own data (§V).

    Raises:
        ConfigError: ε_ℓ <= 0 or NaN, Ξ <= 0, T < 1 or n_ℓ < 1.
    """
    _check_common(xi, steps, n_l)
    _check_epsilon(epsilon_l, "epsilon_l")
    if math.isinf(epsilon_l):
        return 0.0
    return 2.0 * xi * steps / (n_l * epsilon_l)


@dataclasses.dataclass(frozen=True)
class LaplaceGrid:
    """One owner's responses as released: grid 2^-``precision``, L1 sensitivity and discrete Laplace scale in
    grid units (both integers)."""

    precision: int
    sensitivity_units: int
    scale_units: int

    @property
    def scale(self) -> float:
        """The noise scale in real units, t·2^-p (>= Theorem 1's b)."""
        return self.scale_units * 2.0**-self.precision

    @property
    def event(self) -> dp_accounting.DpEvent:
        """One response: ``LaplaceDpEvent(t/Δ₁,int)`` (pure ε = Δ₁,int/t, exactly, for the discrete Laplace)."""
        return query_event(float(self.scale_units), float(self.sensitivity_units))


def laplace_grid(*, xi: float, steps: int, n_l: int, epsilon_l: float, dim: int) -> LaplaceGrid:
    """The grid, Δ₁,int and the integer scale t = ⌈Δ₁,int·T/ε_ℓ⌉ (exact rational ceiling) of owner ℓ's responses."""
    from mpcdp.accounting.grid import release_precision
    from mpcdp.noise.discrete_laplace import l1_sensitivity_units

    check_integer(dim, "dim")
    scale = laplace_scale(xi=xi, steps=steps, n_l=n_l, epsilon_l=epsilon_l)
    if scale == 0:
        raise ConfigError("`epsilon_l` is infinite: a non-private owner releases no noise and has no grid")
    precision = release_precision(scale)
    units = l1_sensitivity_units(response_sensitivity(xi=xi, n_l=n_l), dim, precision)
    t = math.ceil(fractions.Fraction(units * steps) / fractions.Fraction(epsilon_l))
    return LaplaceGrid(precision, units, t)


def query_event(scale: float, sensitivity: float) -> dp_accounting.DpEvent:
    """The event of one response: ``LaplaceDpEvent(b/Δ)``, or ``NonPrivateDpEvent`` when b = 0."""
    import dp_accounting

    check_number(scale, "scale", low=0, low_open=False)
    check_number(sensitivity, "sensitivity", low=0)
    if scale == 0:
        return dp_accounting.NonPrivateDpEvent()
    return dp_accounting.LaplaceDpEvent(scale / sensitivity)


def owner_event(*, xi: float, steps: int, n_l: int, epsilon_l: float,
                queries: int | None = None, dim: int | None = None) -> dp_accounting.DpEvent:
    """All responses of owner ℓ: ``queries`` (default T) self-composed Laplace events at Theorem 1's scale.

    Algorithms 1 and 2 loop k = 1..T−1, so a run answers T−1 queries while the scale is set for T (the paper
    is conservative by one query); pass ``queries=T−1`` to account for exactly what a run released.
    """
    import dp_accounting

    queries = steps if queries is None else queries
    check_integer(queries, "queries", minimum=0, maximum=steps, maximum_name="T")
    scale = laplace_scale(xi=xi, steps=steps, n_l=n_l, epsilon_l=epsilon_l)
    if dim is not None and scale > 0:  # the released bits: the discrete Laplace on the grid
        one = laplace_grid(xi=xi, steps=steps, n_l=n_l, epsilon_l=epsilon_l, dim=dim).event
    else:
        one = query_event(scale, response_sensitivity(xi=xi, n_l=n_l))
    return dp_accounting.SelfComposedDpEvent(one, queries) if queries else dp_accounting.NoOpDpEvent()


def pure_epsilon(event: dp_accounting.DpEvent) -> float:
    """Σ count/noise_multiplier over the Laplace leaves (basic composition of pure DP; δ = 0).

    Raises:
        dp_accounting.UnsupportedEventError: a leaf that is neither Laplace, non-private nor a no-op.
    """
    import dp_accounting

    terms = []
    for leaf, count in leaves(event):
        if isinstance(leaf, dp_accounting.NoOpDpEvent) or count == 0:
            continue
        if isinstance(leaf, dp_accounting.NonPrivateDpEvent):
            return math.inf
        if not isinstance(leaf, dp_accounting.LaplaceDpEvent):
            raise dp_accounting.UnsupportedEventError(f"pure-ε composition supports Laplace events only; "
                                                      f"found {leaf!r}")
        terms.append(count / leaf.noise_multiplier)
    return math.fsum(terms)


@dataclasses.dataclass(frozen=True)
class OwnerCertificate:
    """What owner ℓ's responses certify, against its budget ε_ℓ.

    Attributes:
        budget: ε_ℓ.
        epsilon_pure: closed-form basic composition, δ = 0 — the guarantee.
        epsilon_pld: dp-accounting PLD accountant's ε at ``delta`` (an upper bound; ∞ if non-private).
        delta: the δ at which ``epsilon_pld`` is reported.
        delta_at_budget: PLD's δ(ε_ℓ) (truncation mass of the discretised PLD, ~1e-15).
    """

    budget: float
    epsilon_pure: float
    epsilon_pld: float
    delta: float
    delta_at_budget: float

    @property
    def within_budget(self) -> bool:
        """ε_pure <= ε_ℓ up to float rounding of the sum (relative 1e-12)."""
        return self.epsilon_pure <= self.budget * (1 + ROUNDING_RTOL)


def pld_certificate(event: dp_accounting.DpEvent, *, delta: float = 1e-12,
                    budget: float | None = None) -> tuple[float, float]:
    """(ε at ``delta``, δ at ``budget``) from dp-accounting's PLD accountant (see the module note on the relation)."""
    from dp_accounting import pld
    import dp_accounting

    check_number(delta, "delta", low=0, high=1, low_open=False)
    accountant = pld.PLDAccountant(neighboring_relation=dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE)
    if not accountant.supports(event):
        raise dp_accounting.UnsupportedEventError(f"the PLD accountant does not support {event!r}")
    accountant.compose(event)
    epsilon = float(accountant.get_epsilon(delta))
    delta_at = float(accountant.get_delta(budget)) if budget is not None and math.isfinite(budget) else math.nan
    return epsilon, delta_at


def certify_owner(*, xi: float, steps: int, n_l: int, epsilon_l: float, queries: int | None = None,
                  delta: float = 1e-12, dim: int | None = None) -> OwnerCertificate:
    """Certify owner ℓ's ``queries`` responses (default T) against its budget ε_ℓ: as released on the grid for
    responses of ``dim`` coordinates (:func:`laplace_grid`), or at Theorem 1's continuous scale (``dim`` None)."""
    event = owner_event(xi=xi, steps=steps, n_l=n_l, epsilon_l=epsilon_l, queries=queries, dim=dim)
    epsilon_pure = pure_epsilon(event)
    if math.isinf(epsilon_pure):
        return OwnerCertificate(epsilon_l, math.inf, math.inf, delta, 1.0)
    epsilon_pld, delta_at = pld_certificate(event, delta=delta, budget=epsilon_l)
    return OwnerCertificate(epsilon_l, epsilon_pure, epsilon_pld, delta, delta_at)
