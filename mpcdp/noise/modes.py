"""The comparison samplers, and the block every way of making noise returns.

A sampler's ``draw(ctx, spec, count, shape)`` returns a :class:`NoiseBlock`: the noise (secret-shared, except
in ``plaintext`` mode) plus the dp-accounting event of one row — one Gaussian release of a vector with L2
sensitivity ``spec.sensitivity`` — so the σ accounted is the σ sampled. A block of T rows is generated in one
vectorized computation (noise does not depend on the data) and consumed row by row.

Every way of making noise is one record of :data:`mpcdp.learning.mechanisms.MECHANISMS` (the one registry):
the training mechanisms ``dgauss`` and ``distributed`` draw through the release grid of
:mod:`mpcdp.accounting.grid` (:mod:`mpcdp.learning.noise_modes`), which this layer cannot import; the
comparison-only samplers below are registered there, flagged not certified for training.

Samplers here (threat model: semi-honest parties, non-colluding dealer):

``rou``  ratio-of-uniforms inside the MPC (:mod:`mpcdp.noise.rou`): no coalition missing one data party,
    and not the dealer alone, knows any noise value (the dealer with one party does). Close to N(0, σ²) in its centre, truncated at
    σ·6.865 (k = 16), but its outputs x = 2cW/U₁ thin out in the tails: some grid cells inside the support
    can never be produced, and at large σ/2^-p the output lies on a lattice. A release with such noise is
    not the Gaussian mechanism, so its event is ``UnsupportedDpEvent`` — for cost comparison only; training
    uses ``dgauss``.
``boxmuller``  CrypTen's ``crypten.randn`` (Box–Muller on 16-bit uniforms, CrypTen's log/sqrt/cos
    approximations): for comparison only. Its nominal support is |x| <= √(2·16·ln 2) = 4.71, but CrypTen's
    approximations push values past it (up to 5.3 seen) and it is measurably not N(0,1) (std ≈ 1.015), so
    its event is ``UnsupportedDpEvent`` — an accountant must refuse it.
``plaintext``  the simulated equivalent: torch's float64 normal, in plaintext, from a CSPRNG-keyed
    generator. Used by the comparison harness; protects nothing by itself.

Declared cost: ``rou`` and ``boxmuller`` that of their in-MPC samplers; ``plaintext`` communicates nothing.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any
import secrets

if TYPE_CHECKING:
    import dp_accounting
import numpy as np
import torch

from mpcdp.mpc.shared import Shared

if TYPE_CHECKING:  # the samplers take a context; importing it here would import the adapter
    from mpcdp.mpc.authenticated import AuthShared
    from mpcdp.mpc.context import MpcContext

BOXMULLER_SUPPORT = math.sqrt(2 * 16 * math.log(2))


@dataclasses.dataclass
class NoiseBlock:
    """A block of noise rows and what it is, for the accountant.

    Attributes:
        values: Shared (secret-shared modes) or torch.Tensor (``plaintext``), shape (T, d) or (d,).
        event: the dp-accounting event of releasing one row added to a sensitivity-``spec.sensitivity`` query.
        sigma: the standard deviation actually sampled (>= the requested one).
        support: largest |noise| / σ the sampler can produce (inf if unbounded).
        delta_overhead: total variation from N(0, σ²) per coordinate summed over the block (add to δ).
        stats: public counts (candidates, passes) for ``rou``.
    """

    values: Shared | torch.Tensor | AuthShared
    spec: Any  # the mpcdp.learning.mechanisms.NoiseSpec it was drawn for
    event: dp_accounting.DpEvent
    sigma: float
    support: float
    delta_overhead: float
    stats: dict

    def row(self, t: int) -> Shared | torch.Tensor:
        if isinstance(self.values, Shared):
            return self.values.select_row(t)
        if not isinstance(self.values, torch.Tensor):
            raise TypeError("authenticated noise (security = 'malicious') has no rows to add to a release yet")
        return self.values[t]

    @property
    def shared(self) -> Shared:
        """``values`` of a mode that draws inside the MPC (a TypeError for plaintext noise)."""
        if not isinstance(self.values, Shared):
            raise TypeError("this noise was drawn in plaintext, not inside the MPC")
        return self.values

    @property
    def plain(self) -> torch.Tensor:
        """``values`` of plaintext noise (a TypeError for noise secret-shared inside the MPC)."""
        if not isinstance(self.values, torch.Tensor):
            raise TypeError("this noise is secret-shared inside the MPC, not plaintext")
        return self.values


def gaussian_event(sigma: float, sensitivity: float) -> dp_accounting.DpEvent:
    import dp_accounting

    return dp_accounting.GaussianDpEvent(noise_multiplier=sigma / sensitivity)


def csprng_normal(n: int, *, seed: int | None = None, stream: int = 0) -> np.ndarray:
    """n standard normal float64 values: Box–Muller on 53-bit uniforms from the OS CSPRNG (or a seed)."""
    if seed is None:
        raw = np.frombuffer(secrets.token_bytes(16 * n), dtype="<u8").reshape(2, n)
    else:
        raw = np.random.default_rng([seed, stream]).integers(0, 2**64 - 1, size=(2, n), dtype=np.uint64,
                                                             endpoint=True)
    u = ((raw >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53  # in (0, 1)
    return np.sqrt(-2.0 * np.log(u[0])) * np.cos(2.0 * np.pi * u[1])


def draw_plaintext(ctx, spec: Any, count: int, shape) -> NoiseBlock:
    values = torch.from_numpy(csprng_normal(count, seed=spec.seed) * spec.sigma).reshape(shape)
    return NoiseBlock(values, spec, gaussian_event(spec.sigma, spec.sensitivity), spec.sigma, math.inf, 0.0, {})


def draw_rou(ctx: MpcContext, spec: Any, count: int, shape) -> NoiseBlock:
    import dp_accounting

    from mpcdp.noise import rou

    rng = None if spec.seed is None else np.random.default_rng([spec.seed, ctx.rank])
    stats = rou.RouStats()
    shared = rou.sample_rou(ctx, count, sigma=spec.sigma, uniform_bits=spec.uniform_bits, rng=rng, stats=stats)
    sigma = rou.sampled_sigma(spec.sigma)
    return NoiseBlock(shared.reshape(shape), spec, dp_accounting.UnsupportedDpEvent(), sigma,
                      rou.support_bound(spec.uniform_bits), count * rou.truncated_mass(spec.uniform_bits),
                      dataclasses.asdict(stats) | {"acceptance_rate": stats.acceptance_rate})


def draw_boxmuller(ctx: MpcContext, spec: Any, count: int, shape) -> NoiseBlock:
    import dp_accounting

    from mpcdp import adapter

    share = adapter.crypten_randn(count, sigma=spec.sigma, precision_bits=ctx.config.precision_bits)
    return NoiseBlock(Shared(share, ctx.config.precision_bits).reshape(shape), spec,
                      dp_accounting.UnsupportedDpEvent(), spec.sigma, BOXMULLER_SUPPORT, math.nan, {})
