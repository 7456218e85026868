"""A toy integer-grid training mechanism in one file whose sampler plan is not the discrete Gaussian's: the
rounded Gaussian round(σ·Z), drawn in plaintext. :data:`RECORD` is its one registry entry (tests register it
with :func:`mpcdp.learning.mechanisms.register` and remove it after); nothing else in mpcdp is edited for it.

Noise. Per coordinate N = round(σ·Z), Z standard normal, σ the plan's: the σ_units the grid asks for rounded
*up* to a multiple of 1/64 unit (:class:`RoundedPlan`, a plan of its own shape: one integer). That is exactly
the reference distribution of the grid's certificate (:mod:`mpcdp.accounting.grid`: round(s + σZ) is a
post-processing of the continuous Gaussian mechanism with sensitivity Δ_int), so its residual is zero and the
one calibrate/certify path of :mod:`mpcdp.accounting.released` certifies it with noise multiplier σ/Δ_int.
Caveat, and why it is a toy for tests only: Z comes from float64 Box–Muller on 53-bit uniforms
(:func:`mpcdp.noise.modes.csprng_normal`), whose distance from the normal this file does not bound.

Who draws it: this process (the simulated backend). It has no circuit inside the MPC, so ``secure_rows``
refuses. Declared cost: nothing communicated (its record keeps the default empty ``sampler_passes``).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch

from mpcdp.accounting.certify import certify
from mpcdp.accounting.grid import GridRelease, Residual
from mpcdp.accounting.released import GridAccounting, core_pieces
from mpcdp.errors import ConfigError
from mpcdp.learning import mechanisms
from mpcdp.learning.noise_modes import grid_calibrate, grid_certify
from mpcdp.noise import who_knows
from mpcdp.noise.modes import NoiseBlock, csprng_normal, gaussian_event

NAME = "toy-rounded-gaussian"
STEPS = 64  # σ on a grid of 1/64 unit


@dataclasses.dataclass(frozen=True)
class RoundedPlan:
    """The toy sampler's plan: σ = ``steps``/64 grid units (>= the requested σ)."""

    sigma_requested: float
    steps: int

    @property
    def sigma(self) -> float:
        return self.steps / STEPS


@dataclasses.dataclass(frozen=True)
class RoundedSampler:
    name: str = "rounded Gaussian round(σZ), σ to 1/64 unit (a toy)"

    def plan_for(self, sigma_units: float) -> RoundedPlan:
        return RoundedPlan(float(sigma_units), math.ceil(sigma_units * STEPS))


SAMPLER = RoundedSampler()


def _plan(release: GridRelease) -> RoundedPlan:
    plan = release.plan
    assert isinstance(plan, RoundedPlan), f"a release of another sampler: {release.sampler.name}"
    return plan


def _units(release: GridRelease, count: int, *, seed: int | None, stream: int) -> np.ndarray:
    return np.rint(csprng_normal(count, seed=seed, stream=stream) * _plan(release).sigma).astype(np.int64)


def _residual(releases, parties) -> Residual:
    return Residual(sum(r.dim * rows for r, rows in releases), 0.0, 0.0)


ACCOUNTING = GridAccounting(
    name=NAME, id=f"{NAME}/1: nearest rounding to 2^-p per party, Δ_int = ceil(Δ·2^p + √d), round(σZ) in float64 (a toy)",
    plan=lambda release, parties: release.plan, residual=_residual,
    noise_multiplier=lambda release, parties: release.released_noise_multiplier, accountant=certify,
    reserve_bounds=lambda parties: (0.0, 0.0), per_party=False,
    method=lambda accountant, parties: f"{accountant.method}, on the release grid (a toy's rounded Gaussian)",
    pieces=lambda accountant, parties: core_pieces(accountant),
    release_pieces=lambda r, z, parties: {"sigma_units": r.plan.sigma, "noise_multiplier": z, "sigma": r.sigma},
    sampler=SAMPLER)


def simulated_rows(release: GridRelease, rows: int, choice, parties: int, seed, stream) -> torch.Tensor:
    return torch.from_numpy(_units(release, rows * release.dim, seed=seed, stream=stream)).reshape(rows, release.dim)


def secure_rows(ctx, release: GridRelease, rows: int, choice):
    raise ConfigError(f"noise mode {NAME!r} has no circuit inside the MPC: run it with `--backend simulated`")


def draw(ctx, spec, count: int, shape) -> NoiseBlock:
    """``mpcdp noise``: ``count`` values of a release of ``spec``'s σ, in real units, drawn here."""
    release = GridRelease(spec.sensitivity, count, spec.sigma / spec.sensitivity, SAMPLER)
    values = _units(release, count, seed=spec.seed, stream=0) * 2.0**-release.precision
    return NoiseBlock(torch.from_numpy(values).reshape(shape), spec, gaussian_event(release.sigma, spec.sensitivity),
                      release.sigma, math.inf, 0.0, {"precision_bits": release.precision})


RECORD = mechanisms.MechanismRecord(
    name=NAME, id=ACCOUNTING.id, summary="round(σZ) drawn in plaintext on the release grid (a toy)", draw=draw,
    plan=ACCOUNTING.plan, residual=ACCOUNTING.residual, calibrate=grid_calibrate(ACCOUNTING),
    certify=grid_certify(ACCOUNTING), secure_rows=secure_rows, simulated_rows=simulated_rows, in_mpc=False,
    drawn_by=who_knows.THIS_PROCESS)
