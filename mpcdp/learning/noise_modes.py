"""How a training run's noise is made, as records in one registry (protocol field ``[noise] mode``).

Every mode releases on the same grids (:mod:`mpcdp.accounting.grid`) and is certified for the bits it opens;
the two backends draw the same distribution (the secure one inside the run's parties, the simulated one in
plaintext), so secure and simulated training compare one mechanism with itself.

``dgauss`` (default)  one discrete Gaussian of σ_units per coordinate, sampled inside the MPC
    (:mod:`mpcdp.noise.secure_gaussian`). No data party, and no coalition missing one data party and not the
    dealer, learns a noise value. Certified by :mod:`mpcdp.accounting.released`.
``distributed``  every party adds its own discrete Gaussian of σ_units/√(m − t) to its share, drawn in
    plaintext from its own CSPRNG: no sampling inside the MPC and no dealer involved with the noise. Private
    against any coalition of at most t = ``colluders`` parties, certified by
    :mod:`mpcdp.accounting.distributed_noise`.

To extend: write a :class:`NoiseMode` (its calibration and certificate, its secure rows and its simulated rows)
and :func:`register` it; ``mpcdp train`` then accepts its name.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np
import torch

from mpcdp.accounting.distributed_noise import Parties, calibrate_distributed, certify_distributed, party_plan
from mpcdp.accounting.grid import GridRelease
from mpcdp.accounting.released import calibrate_on_grid, certify_on_grid
from mpcdp.errors import ConfigError
from mpcdp import registry
from mpcdp.learning.release_noise import secure_rows as dgauss_secure_rows, simulated_rows as dgauss_simulated_rows
from mpcdp.noise import discrete_gaussian
from mpcdp.validation import check_integer


@dataclasses.dataclass(frozen=True)
class NoiseChoice:
    """A run's noise mode and its parameters, as the protocol's ``[noise]`` table gives them."""

    mode: str = "dgauss"
    colluders: int = 0

    def __post_init__(self) -> None:
        if self.mode not in NOISE_MODES:
            raise ConfigError(f"[noise] `mode` must be one of {sorted(NOISE_MODES)}. Found {self.mode!r}.")
        check_integer(self.colluders, "colluders", minimum=0)
        if self.colluders and not NOISE_MODES[self.mode].takes_colluders:
            raise ConfigError(f"[noise] `colluders` applies to {sorted(k for k, v in NOISE_MODES.items() if v.takes_colluders)}"
                              f" only; mode {self.mode!r} draws its noise inside the MPC. Found {self.colluders}.")

    @property
    def record(self) -> "NoiseMode":
        return NOISE_MODES[self.mode]


@dataclasses.dataclass(frozen=True)
class NoiseMode:
    """One way to make a training run's noise.

    Attributes:
        name: the protocol value.
        summary: one line for the help and the docs.
        calibrate: (kinds, dim, ε, δ, *, calibrate, event_of, parties: int, choice) -> GridNoise, the releases
            and their certificate.
        secure_rows: (ctx, release, rows, choice) -> Shared, this party's share of ``rows`` × d noise values
            in grid units (every party calls it together).
        simulated_rows: (release, rows, choice, parties, seed, stream) -> int64 Tensor, the summed noise drawn
            in plaintext.
        takes_colluders: the mode has a collusion threshold.
        certify: (kinds, releases, δ, event_of, parties: int, choice) -> Certificate, the certificate of
            releases already on their grids for another event (e.g. without amplification by subsampling).
    """

    name: str
    summary: str
    calibrate: Callable
    secure_rows: Callable
    simulated_rows: Callable
    takes_colluders: bool = False
    certify: Callable | None = None


NOISE_MODES: dict[str, NoiseMode] = {}


def register(mode: NoiseMode) -> NoiseMode:
    """Add ``mode`` to the registry (its name must be new)."""
    return registry.add(NOISE_MODES, mode.name, mode, "noise mode")


def _dgauss_calibrate(kinds, dim, epsilon, delta, *, calibrate, event_of, parties, choice):
    return calibrate_on_grid(kinds, dim, epsilon, delta, calibrate=calibrate, event_of=event_of)


register(NoiseMode(
    "dgauss", "the exact discrete Gaussian sampled inside the MPC (private against any coalition without the dealer "
              "that misses one data party)",
    _dgauss_calibrate,
    lambda ctx, release, rows, choice: dgauss_secure_rows(ctx, release, rows),
    lambda release, rows, choice, parties, seed, stream: dgauss_simulated_rows(release, rows, seed=seed, stream=stream),
    certify=lambda kinds, releases, delta, event_of, parties, choice: certify_on_grid(kinds, releases, delta, event_of)))


def _distributed_calibrate(kinds, dim, epsilon, delta, *, calibrate, event_of, parties, choice):
    if choice.colluders >= parties:
        raise ConfigError(f"[noise] `colluders` must be < parties ({parties}). Found {choice.colluders}.")
    return calibrate_distributed(kinds, dim, epsilon, delta, calibrate=calibrate, event_of=event_of,
                                 parties=Parties(parties, choice.colluders))


def _distributed_rows(release: GridRelease, rows: int, choice: NoiseChoice, parties: int, *,
                      seed: int | None, stream: int) -> np.ndarray:
    plan = party_plan(release, Parties(parties, choice.colluders))
    values, _ = discrete_gaussian.sample_plain(plan, rows * release.dim, seed=seed, stream=stream)
    return values.reshape(rows, release.dim)


def _distributed_secure(ctx, release: GridRelease, rows: int, choice: NoiseChoice):
    from mpcdp.mpc.shared import Shared

    # This party's own noise is its additive share of the summed noise: the masked input of every release
    # hides it, and nothing moves here.
    own = _distributed_rows(release, rows, choice, ctx.parties, seed=None, stream=0)
    return Shared(torch.from_numpy(own), release.precision)


def _distributed_simulated(release: GridRelease, rows: int, choice: NoiseChoice, parties: int, seed, stream):
    total = sum(_distributed_rows(release, rows, choice, parties, seed=None if seed is None else seed + 7919 * j,
                                  stream=stream) for j in range(parties))
    return torch.from_numpy(np.asarray(total, dtype=np.int64))


register(NoiseMode(
    "distributed", "every party adds its own discrete Gaussian of σ/√(m − t) to its share (private against any "
                   "t = `colluders` parties; no sampling inside the MPC)",
    _distributed_calibrate, _distributed_secure, _distributed_simulated, takes_colluders=True,
    certify=lambda kinds, releases, delta, event_of, parties, choice: certify_distributed(
        kinds, releases, delta, event_of, Parties(parties, choice.colluders))))
