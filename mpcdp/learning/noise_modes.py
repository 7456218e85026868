"""The members of the two training mechanisms, ``dgauss`` and ``distributed`` (registered as records of
:data:`mpcdp.learning.mechanisms.MECHANISMS`, protocol field ``[noise] mode``).

Both release on the same grids (:mod:`mpcdp.accounting.grid`) and are certified for the bits they open by the
one path of :mod:`mpcdp.accounting.released`, with the mechanism's accounting (its sampler plan and residual)
as a parameter. The secure and the simulated backends draw the same distribution, and so do ``mpcdp noise`` and
``mpcdp cost`` (:func:`draw_dgauss`, :func:`draw_distributed`): every draw starts from a
:class:`~mpcdp.accounting.grid.GridRelease` and asks the mechanism's ``plan`` for the sampler.

``dgauss`` (default)  one discrete Gaussian of σ_units per coordinate, sampled inside the MPC
    (:mod:`mpcdp.noise.secure_gaussian`) by the noise committee, parties 0..c−1. Known only to the dealer with
    one member, or to every member together (under honest-majority to any two of parties 0–2):
    :func:`mpcdp.noise.who_knows.noise_known_to`, the run's ``noise_known_to``. Certified with
    :data:`~mpcdp.accounting.released.DGAUSS`. Declared cost: that of :func:`~mpcdp.noise.secure_gaussian.sample_discrete_gaussian` for rows·d samples.
``distributed``  every party adds its own discrete Gaussian of σ_units/√(m − t) to its share, drawn in
    plaintext from its own CSPRNG: no sampling inside the MPC and no dealer involved with the noise. Private
    against any coalition of at most t = ``colluders`` parties, certified with
    :data:`~mpcdp.accounting.distributed_noise.DISTRIBUTED`. Declared cost: nothing communicated.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import torch

from mpcdp.accounting.distributed_noise import party_plan
from mpcdp.accounting.grid import GridRelease
from mpcdp.accounting.released import GridAccounting, Parties, calibrate_on_grid, certify_on_grid
from mpcdp.errors import ConfigError
from mpcdp.learning.release_noise import secure_rows as dgauss_secure_rows, simulated_rows as dgauss_simulated_rows
from mpcdp.mpc.shared import Shared
from mpcdp.noise import discrete_gaussian
from mpcdp.noise.modes import NoiseBlock, gaussian_event


def parties_of(parties: int, colluders: int, field: str = "[noise] `colluders`") -> Parties:
    """The run's m parties and t colluders, refused (naming ``field``) unless t < m."""
    if colluders >= parties:
        raise ConfigError(f"{field} must be < parties ({parties}). Found {colluders}.")
    return Parties(parties, colluders)


def grid_calibrate(accounting: GridAccounting):
    """The ``calibrate`` member of a grid mechanism: (kinds, dim, ε, δ, *, calibrate, event_of, parties: int,
    choice) -> GridNoise."""
    def calibrate(kinds, dim, epsilon, delta, *, calibrate, event_of, parties, choice):
        return calibrate_on_grid(kinds, dim, epsilon, delta, calibrate=calibrate, event_of=event_of,
                                 mechanism=accounting, parties=parties_of(parties, choice.colluders))
    return calibrate


def grid_certify(accounting: GridAccounting):
    """The ``certify`` member of a grid mechanism: (kinds, releases, δ, event_of, parties: int, choice) ->
    Certificate."""
    def certify(kinds, releases, delta, event_of, parties, choice):
        return certify_on_grid(kinds, releases, delta, event_of, accounting, parties_of(parties, choice.colluders))
    return certify


def release_for(spec: Any, shape: tuple[int, ...]) -> tuple[GridRelease, int]:
    """The release a ``mpcdp noise`` / ``mpcdp cost`` draw of ``shape`` stands for (rows × d, d the last axis;
    σ = ``spec.sigma`` for sensitivity ``spec.sensitivity``), and its rows."""
    dim = int(shape[-1]) if shape else 1
    return GridRelease(spec.sensitivity, dim, spec.sigma / spec.sensitivity), int(np.prod(shape)) // dim


# -- dgauss ---------------------------------------------------------------------------------------------------

def dgauss_secure(ctx, release: GridRelease, rows: int, choice) -> Any:
    """This party's shares of ``rows`` × d noise values of ``release``: :class:`Shared`, or under
    ``security = "malicious"`` authenticated shares (:class:`~mpcdp.mpc.authenticated.AuthShared`, circuit
    dg-auth: every opening MAC-checked) that only an authenticated release adds."""
    if ctx.config.security == "malicious":
        from mpcdp.mpc.authenticated import AuthShared
        from mpcdp.noise.auth_gaussian import sample_authenticated

        drawn = sample_authenticated(ctx, rows * release.dim, discrete_gaussian.plan_of(release))
        return AuthShared(drawn.value.reshape(rows, release.dim), drawn.mac.reshape(rows, release.dim),
                          release.precision)
    return dgauss_secure_rows(ctx, release, rows)


def dgauss_simulated(release: GridRelease, rows: int, choice, parties: int, seed, stream) -> torch.Tensor:
    return dgauss_simulated_rows(release, rows, seed=seed, stream=stream)


def draw_dgauss(ctx, spec: Any, count: int, shape: tuple[int, ...]) -> NoiseBlock:
    """What training's secure rows are, for a release of ``spec``'s σ: the in-MPC sampler of its plan."""
    release, rows = release_for(spec, shape)
    plan = discrete_gaussian.plan_of(release)
    stats: dict = {}
    if ctx.config.security == "malicious":  # every opening MAC-checked: circuit dg-auth (mpcdp.noise.auth_gaussian)
        from mpcdp.noise.auth_gaussian import sample_authenticated

        drawn = sample_authenticated(ctx, count, plan, stats=stats)
        stats |= {"acceptance_rate": stats["accepted"] / stats["candidates"], "precision_bits": release.precision}
        return NoiseBlock(dataclasses.replace(drawn, precision_bits=release.precision), spec,
                          gaussian_event(release.sigma, spec.sensitivity), release.sigma,
                          plan.support_edge / plan.sigma, count * plan.truncated_mass, stats)
    shares = dgauss_secure_rows(ctx, release, rows, seed=spec.seed, stats=stats)
    stats |= {"acceptance_rate": stats["accepted"] / stats["candidates"], "precision_bits": release.precision}
    return NoiseBlock(shares.reshape(shape), spec, gaussian_event(release.sigma, spec.sensitivity), release.sigma,
                      plan.support_edge / plan.sigma, count * plan.truncated_mass, stats)


# -- distributed ----------------------------------------------------------------------------------------------

def _own_rows(release: GridRelease, rows: int, parties: Parties, *, seed: int | None, stream: int) -> np.ndarray:
    plan = party_plan(release, parties)
    values, _ = discrete_gaussian.sample_plain(plan, rows * release.dim, seed=seed, stream=stream)
    return values.reshape(rows, release.dim)


def distributed_secure(ctx, release: GridRelease, rows: int, choice) -> Shared:
    # This party's own noise is its additive share of the summed noise: the masked input of every release
    # hides it, and nothing moves here.
    own = _own_rows(release, rows, parties_of(ctx.parties, choice.colluders), seed=None, stream=0)
    return Shared(torch.from_numpy(own), release.precision)


def distributed_simulated(release: GridRelease, rows: int, choice, parties: int, seed, stream) -> torch.Tensor:
    who = parties_of(parties, choice.colluders)
    total = sum(_own_rows(release, rows, who, seed=None if seed is None else seed + 7919 * j, stream=stream)
                for j in range(parties))
    return torch.from_numpy(np.asarray(total, dtype=np.int64))


def draw_distributed(ctx, spec: Any, count: int, shape: tuple[int, ...]) -> NoiseBlock:
    """What training's secure rows are, for a release of ``spec``'s σ: this party's own draw of the party plan
    (σ_units/√(m − t), Δ_int from the same grid), as its additive share; zero communication."""
    release, rows = release_for(spec, shape)
    parties = parties_of(ctx.parties, spec.colluders, "`colluders`")
    plan = party_plan(release, parties)
    own = _own_rows(release, rows, parties, seed=spec.seed, stream=ctx.rank)
    own_sigma = plan.sigma * 2.0**-release.precision
    return NoiseBlock(Shared(torch.from_numpy(own), release.precision).reshape(shape), spec,
                      gaussian_event(spec.sigma, spec.sensitivity), own_sigma * math.sqrt(ctx.parties),
                      plan.support_edge / plan.sigma, ctx.parties * count * plan.truncated_mass,
                      {"own_sigma": own_sigma, "precision_bits": release.precision})
