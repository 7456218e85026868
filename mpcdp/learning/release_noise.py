"""Noise rows for the releases of a training run, on the release's own grid, for both backends.

One definition (:mod:`mpcdp.noise.discrete_gaussian`, the plan of a :class:`~mpcdp.accounting.grid.GridRelease`
whose sampler it is: :func:`~mpcdp.noise.discrete_gaussian.plan_of`)
and two ways to draw it:

* :func:`secure_rows` samples inside the MPC (:mod:`mpcdp.noise.secure_gaussian`). No data party, no coalition
  missing one data party and not the dealer learns a noise value (semi-honest, non-colluding dealer).
* :func:`simulated_rows` draws the same integer distribution in plaintext, from the OS CSPRNG (or a seed, for
  reproducible simulation). It protects nothing by itself: it is the simulated backend's noise, so that secure
  and simulated training compare one mechanism with itself.

Declared cost of :func:`secure_rows`: that of :func:`~mpcdp.noise.secure_gaussian.sample_discrete_gaussian` for
rows·d samples, drawn in chunks of at most one full pass each (:func:`samples_per_pass`) so that progress is
reported between passes (:mod:`mpcdp.runtime.progress`); :func:`simulated_rows` communicates nothing.
"""

from __future__ import annotations


import numpy as np
import torch

from mpcdp.accounting.grid import GridRelease
from mpcdp.mpc.context import MpcContext
from mpcdp.mpc.shared import Shared
from mpcdp.noise import discrete_gaussian, secure_gaussian
from mpcdp.runtime import progress


def secure_rows(ctx: MpcContext, release: GridRelease, rows: int, *, seed: int | None = None,
                stats: dict | None = None) -> Shared:
    """Shares of ``rows`` × d noise values in grid units of 2^-p (``Shared`` with precision p).

    ``seed``: reproducible (insecure) random fields for tests; None draws them from a CSPRNG."""
    rng = None if seed is None else np.random.default_rng([seed, ctx.rank])
    plan = discrete_gaussian.plan_of(release)
    left, chunk, parts = rows * release.dim, samples_per_pass(plan), []
    while left > 0:
        count = min(left, chunk)
        parts.append(secure_gaussian.sample_discrete_gaussian(ctx, count, plan, rng=rng, stats=stats))
        progress.advance_by(count)
        left -= count
    return Shared(torch.cat(parts).reshape(rows, release.dim), release.precision)


def samples_per_pass(plan: discrete_gaussian.DiscreteGaussianPlan) -> int:
    """The most samples whose first pass of candidates fits in one pass of the sampler
    (:data:`~mpcdp.noise.secure_gaussian.MAX_PASS`; public: it depends on the plan's acceptance only)."""
    count = int(plan.acceptance * secure_gaussian.MAX_PASS)
    while count > 1 and secure_gaussian.candidates_wanted(plan, count) > secure_gaussian.MAX_PASS:
        count -= max(1, count // 200)
    return count


def simulated_rows(release: GridRelease, rows: int, *, seed: int | None = None, stream: int = 0) -> torch.Tensor:
    """``rows`` × d noise values drawn in plaintext from the same distribution, as int64 grid units."""
    plan = discrete_gaussian.plan_of(release)
    values, _ = discrete_gaussian.sample_plain(plan, rows * release.dim, seed=seed, stream=stream)
    return torch.from_numpy(values).reshape(rows, release.dim)
