"""The L2 bound every honest party's training term satisfies at each release, checked inside the MPC under
``security = "malicious"`` (issue 48, "Bounded inputs", in training; :mod:`mpcdp.mpc.bounded` does the check,
:func:`mpcdp.mpc.release.noisy_release` passes it).

Security model: :mod:`mpcdp.mpc.bounded`'s. A deviating party may still choose its own term, but only among the
terms an honest party could have sent: a vector on the release grid whose norm is at most the bound below, or
every honest party stops before release t is used or output, naming it ("party J's contribution to release 'v_p[t]' is
outside its clipping bound (security = 'malicious')"). The noise is not its to choose (the authenticated
sampler's), so this is robustness against poisoning; privacy does not rest on it.

Derivation. Party j's term at release t, as the runners compute it, is Σ_{i ∈ batch_j(t)} w·c_i: c_i is record
i's clipped contribution, ‖c_i‖ ≤ C_t, and w the one public scaling applied before the release. So, by the
triangle inequality, ‖term_j‖ ≤ b_j·C_t·w, the clipping norm times the party's share of the weight. The
certificate's replace-one sensitivity is built from the same two numbers (Δ_t = 2·C_t·w: one record's c_i
replaced), so the check enforces, on every party's term, exactly the per-record bound the certificate assumes.
Per algorithm (each parameters type's ``term_bound``):

* DP-SRM / DDP-SRM, release 0: C1·b0_j/B0 (``batch0``, combined B0); releases t ≥ 1: (γ·C1 + (1 − γ)·C2)·b_j/B
  (γ·clip_C1(∇f_i(θᵗ)) + (1 − γ)·clip_C2(∇f_i(θᵗ) − ∇f_i(θᵗ⁻¹)), over B; the (1 − γ)·v_pᵗ⁻¹ is added in public
  after the release). Every party's batch is public, and ``batch`` splits evenly, so b_j/B = 1/m for every j.
* DP-SGD, RRPSGD: C1·b_j/B (weights ``records``), C1/m (``parties``: the term is (1/m)·the party's mean).
* Full batch: C1/m for Jayaraman et al. (``parties``); for DP-GD and WD-DP (``records``, w = 1/n) the party's
  share n_j/n is its own record count, which the others hold only as its claim and which the party function is
  not given: the bound used is C1 (share 1), what every honest party's term satisfies, looser by n/n_j.

The bound is the same for every party (the check holds every contributor to one bound); a parameters type
without ``term_bound`` is refused under ``security = "malicious"`` before any process starts.

On the grid. The term is computed in float64 (a clipping scale from a computed norm, a sum of b rows, one
division): its norm exceeds the exact bound by a relative rounding error of order (b + d)·2^-53, far below
:data:`FLOAT_ALLOWANCE` = 2^-24 for any batch and model dimension below 2^20; the bound is raised by that
factor. Each coordinate is then rounded to the nearest multiple of 2^-p (p the release's grid,
:mod:`mpcdp.accounting.grid`), moving it by at most half a unit, so ‖g‖ ≤ ‖term‖·2^p + √d/2 (Minkowski):
:func:`~mpcdp.mpc.bounded.unit_bound` checks ‖g‖² ≤ ⌈bound·2^p + ⌈√d⌉/2⌉² in grid units, which an honest term at
the clipping norm passes. (The certificate's Δ_int = ⌈Δ·2^p + √d⌉ is the same argument for the difference of two
rounded terms: up to one unit per coordinate.) A term 1% over its bound is refused whenever 1% of bound·2^p
exceeds √d/2 + 1 units (the quick start: about 5·10⁵ units against 7).

Cost: :mod:`mpcdp.mpc.bounded`'s per release, with d the model dimension and L the bit length of twice the bound
in grid units (the quick start: d = 123, L = 27: per contributor 123·27 coordinate bits and the slack's L_s bits
input as bits, and the 3·123 squares per release at m = 3 from the dealt masks' squares, nothing opened for them;
the checks opened with the release under its one MAC check: 6 rounds per release);
measured in ``benchmarks/results/quickstart-malicious.md``. The check needs d·2^(2L) < 2^63 (a larger model or
bound is refused in one line before the noise is sampled).
"""

from __future__ import annotations

from typing import Any, Sequence

FLOAT_ALLOWANCE = 2.0 ** -24
"""The relative allowance for float64 rounding in the computed term (module docstring)."""


def states_bound(params: Any) -> bool:
    """Whether an algorithm's parameters say the bound of their terms (a ``term_bound`` method)."""
    return callable(getattr(params, "term_bound", None))


def release_bound(params: Any, release: int, batch_sizes: Sequence[int], batch0_sizes: Sequence[int]) -> float:
    """The L2 norm (real units) that every honest party's term at release ``release`` has at most, with the float
    allowance: ``params.term_bound(release, batch_sizes, batch0_sizes)``·(1 + 2^-24). ``batch_sizes`` and
    ``batch0_sizes``: every party's per-step batch (public; 0 for full-batch parameters)."""
    if not states_bound(params):
        raise TypeError(f"{type(params).__name__} states no bound for its terms (`term_bound`)")
    return float(params.term_bound(release, batch_sizes, batch0_sizes)) * (1 + FLOAT_ALLOWANCE)
