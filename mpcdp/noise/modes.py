"""Noise for the aggregate, behind one interface, each mode returning the event that describes it.

``sample_noise(ctx, spec, shape)`` returns a :class:`NoiseBlock`: the noise (secret-shared, except in
``plaintext`` mode) plus the dp-accounting event of one row — one Gaussian release of a vector with L2
sensitivity ``spec.sensitivity`` — so the σ accounted is the σ sampled. A block of T rows is generated in one
vectorized computation (noise does not depend on the data) and consumed row by row.

Modes (threat model: semi-honest parties, non-colluding dealer):

``rou`` (default)  ratio-of-uniforms inside the MPC (:mod:`mpcdp.noise.rou`): nobody — no coalition missing
    one data party, not the dealer — knows any noise value. Close to N(0, σ²) in its centre, truncated at
    σ·6.865 (k = 16), but its outputs x = 2cW/U₁ thin out in the tails: some grid cells inside the support
    can never be produced, and at large σ/2^-p the output lies on a lattice. A release with such noise is
    not the Gaussian mechanism, so its event is ``UnsupportedDpEvent`` — for cost comparison only; training
    uses ``dgauss``.
``dgauss``  the discrete Gaussian of :mod:`mpcdp.noise.discrete_gaussian`, sampled inside the MPC
    (:mod:`mpcdp.noise.secure_gaussian`) on the release grid 2^-p of :func:`mpcdp.noise.fixed_point.release_precision`
    (σ ≈ 2^21 grid units). Its pmf is enumerated exactly: within e^(±1e-11) of round(σ·Z) on |x| < 9.8σ, 0
    outside (mass 4e-25 per coordinate, ``delta_overhead``). Who knows the noise: as for ``rou``.
``distributed``  each party adds its own discrete Gaussian of σ/√(m−t) grid units (the sampler of
    :mod:`mpcdp.noise.discrete_gaussian`, in plaintext from the OS CSPRNG) to its own share, on the grid of
    ``dgauss``: zero communication. Any t colluding parties know their t contributions, so the noise unknown to
    them still has variance σ²; more colluders see less noise. Its sum is not a Gaussian: training certifies it
    through the RDP curve of the honest parties' sum (:mod:`mpcdp.accounting.distributed_noise`).
``boxmuller``  CrypTen's ``crypten.randn`` (Box–Muller on 16-bit uniforms, CrypTen's log/sqrt/cos
    approximations): for comparison only. Its nominal support is |x| <= √(2·16·ln 2) = 4.71, but CrypTen's
    approximations push values past it (up to 5.3 seen) and it is measurably not N(0,1) (std ≈ 1.015), so
    its event is ``UnsupportedDpEvent`` — an accountant must refuse it.
``plaintext``  the simulated equivalent: torch's float64 normal, in plaintext, from a CSPRNG-keyed
    generator. Used by the comparison harness; protects nothing by itself.

Every mode is a :class:`Sampler` record in :data:`SAMPLERS`; to add one, :func:`register` a record whose
``draw`` returns a :class:`NoiseBlock`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Callable
import secrets
import warnings

import dp_accounting
import numpy as np
import torch

from mpcdp.errors import ConfigError, InsecureSettingWarning
from mpcdp import registry
from mpcdp.mpc.shared import Shared
from mpcdp.validation import require_positive

if TYPE_CHECKING:  # the samplers take a context; importing it here would import the adapter
    from mpcdp.mpc.context import MpcContext

BOXMULLER_SUPPORT = math.sqrt(2 * 16 * math.log(2))


@dataclasses.dataclass(frozen=True, kw_only=True)
class NoiseSpec:
    """What noise to add: ``sigma`` = noise_multiplier · ``sensitivity`` (both public).

    Attributes:
        sigma: standard deviation per coordinate, > 0.
        sensitivity: the L2 sensitivity of one row's release (for the event's noise multiplier), > 0.
        mode: a name in :data:`SAMPLERS`.
        colluders: t, the colluding parties ``distributed`` mode tolerates (0 <= t < m).
        uniform_bits: bits per uniform for ``rou`` (16..18).
        seed: reproducible (insecure) randomness for tests and simulation; None = OS CSPRNG.
    """

    sigma: float
    sensitivity: float = 1.0
    mode: str = "rou"
    colluders: int = 0
    uniform_bits: int = 16
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.mode not in SAMPLERS:
            raise ConfigError(f"`mode` must be one of {list(SAMPLERS)}. Found {self.mode!r}.")
        require_positive(self, ("sigma", "sensitivity"))
        if not (isinstance(self.colluders, int) and self.colluders >= 0):
            raise ConfigError(f"`colluders` must be an integer >= 0. Found {self.colluders!r}.")
        if not 16 <= self.uniform_bits <= 18:
            raise ConfigError(f"`uniform_bits` must be in [16, 18]. Found {self.uniform_bits!r}.")
        if self.seed is not None:
            warnings.warn("reproducible noise seed set: the noise is predictable — for tests and simulation only",
                          InsecureSettingWarning, stacklevel=3)


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

    values: Shared | torch.Tensor
    spec: NoiseSpec
    event: dp_accounting.DpEvent
    sigma: float
    support: float
    delta_overhead: float
    stats: dict

    def row(self, t: int) -> Shared | torch.Tensor:
        if isinstance(self.values, Shared):
            return self.values.select_row(t)
        return self.values[t]


def _gaussian_event(sigma: float, sensitivity: float) -> dp_accounting.DpEvent:
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


@dataclasses.dataclass(frozen=True)
class Sampler:
    """One way to draw noise. ``draw(ctx, spec, count, shape)`` returns the :class:`NoiseBlock`; ``in_mpc``:
    it runs among the parties (``ctx`` required); ``certifiable``: its event is one an accountant accepts."""

    name: str
    summary: str
    draw: Callable[[MpcContext | None, "NoiseSpec", int, tuple[int, ...]], NoiseBlock]
    in_mpc: bool = True
    certifiable: bool = True


SAMPLERS: dict[str, Sampler] = {}


def register(sampler: Sampler) -> Sampler:
    """Add ``sampler`` to the registry (its name must be new)."""
    return registry.add(SAMPLERS, sampler.name, sampler, "noise sampler")


def in_mpc_modes() -> list[str]:
    """The names of the samplers that run among the parties (choices of `mpcdp cost` and `mpcdp party`)."""
    return [name for name, s in SAMPLERS.items() if s.in_mpc]


def sample_noise(ctx: MpcContext | None, spec: NoiseSpec, shape: tuple[int, ...]) -> NoiseBlock:
    """Noise of ``shape`` for ``spec`` (every party calls it together; ``ctx`` may be None for plaintext)."""
    sampler = SAMPLERS[spec.mode]
    if sampler.in_mpc and ctx is None:
        raise ValueError(f"mode {spec.mode!r} runs inside the MPC and needs a context")
    return sampler.draw(ctx, spec, int(np.prod(shape)), shape)


def _plaintext(ctx, spec: NoiseSpec, count: int, shape) -> NoiseBlock:
    values = torch.from_numpy(csprng_normal(count, seed=spec.seed) * spec.sigma).reshape(shape)
    return NoiseBlock(values, spec, _gaussian_event(spec.sigma, spec.sensitivity), spec.sigma, math.inf, 0.0, {})


def _rou(ctx: MpcContext, spec: NoiseSpec, count: int, shape) -> NoiseBlock:
    from mpcdp.noise import rou

    rng = None if spec.seed is None else np.random.default_rng([spec.seed, ctx.rank])
    stats = rou.RouStats()
    shared = rou.sample_rou(ctx, count, sigma=spec.sigma, uniform_bits=spec.uniform_bits, rng=rng, stats=stats)
    sigma = rou.sampled_sigma(spec.sigma)
    return NoiseBlock(shared.reshape(shape), spec, dp_accounting.UnsupportedDpEvent(), sigma,
                      rou.support_bound(spec.uniform_bits), count * rou.truncated_mass(spec.uniform_bits),
                      dataclasses.asdict(stats) | {"acceptance_rate": stats.acceptance_rate})


def _dgauss(ctx: MpcContext, spec: NoiseSpec, count: int, shape) -> NoiseBlock:
    from mpcdp.noise import discrete_gaussian, secure_gaussian
    from mpcdp.noise.fixed_point import release_precision

    precision = release_precision(spec.sigma)
    plan = discrete_gaussian.plan_for(spec.sigma * 2**precision)
    rng = None if spec.seed is None else np.random.default_rng([spec.seed, ctx.rank])
    stats: dict = {}
    shares = secure_gaussian.sample_discrete_gaussian(ctx, count, plan, rng=rng, stats=stats)
    sigma = plan.sigma * 2.0**-precision
    stats |= {"acceptance_rate": stats["accepted"] / stats["candidates"], "precision_bits": precision}
    return NoiseBlock(Shared(shares, precision).reshape(shape), spec, _gaussian_event(sigma, spec.sensitivity),
                      sigma, plan.support_edge / plan.sigma, count * plan.truncated_mass, stats)


def _distributed(ctx: MpcContext, spec: NoiseSpec, count: int, shape) -> NoiseBlock:
    from mpcdp.noise import discrete_gaussian
    from mpcdp.noise.fixed_point import release_precision

    if spec.colluders >= ctx.parties:
        raise ConfigError(f"`colluders` must be < parties ({ctx.parties}). Found {spec.colluders}.")
    precision = release_precision(spec.sigma)
    plan = discrete_gaussian.plan_for(spec.sigma * 2**precision / math.sqrt(ctx.parties - spec.colluders))
    own, _ = discrete_gaussian.sample_plain(plan, count, seed=spec.seed, stream=ctx.rank)
    shared = Shared(torch.from_numpy(own), precision)  # this party's own noise is its additive share
    own_sigma = plan.sigma * 2.0**-precision
    return NoiseBlock(shared.reshape(shape), spec, _gaussian_event(spec.sigma, spec.sensitivity),
                      own_sigma * math.sqrt(ctx.parties), plan.support_edge / plan.sigma,
                      ctx.parties * count * plan.truncated_mass,
                      {"own_sigma": own_sigma, "precision_bits": precision})


def _boxmuller(ctx: MpcContext, spec: NoiseSpec, count: int, shape) -> NoiseBlock:
    from mpcdp import adapter

    share = adapter.crypten_randn(count, sigma=spec.sigma, precision_bits=ctx.config.precision_bits)
    return NoiseBlock(Shared(share, ctx.config.precision_bits).reshape(shape), spec,
                      dp_accounting.UnsupportedDpEvent(), spec.sigma, BOXMULLER_SUPPORT, math.nan, {})


register(Sampler("dgauss", "the exact discrete Gaussian inside the MPC (what training releases)", _dgauss))
register(Sampler("rou", "ratio-of-uniforms inside the MPC (holes in its tails: for cost comparison only)", _rou,
                 certifiable=False))
register(Sampler("distributed", "every party adds its own discrete Gaussian of σ/√(m−t) (no MPC sampling)",
                 _distributed))
register(Sampler("boxmuller", "CrypTen's Box–Muller (measurably not N(0, σ²): comparison only)", _boxmuller,
                 certifiable=False))
register(Sampler("plaintext", "float64 Gaussian in plaintext (the simulated equivalent; protects nothing)",
                 _plaintext, in_mpc=False))
