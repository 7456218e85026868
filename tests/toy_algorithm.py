"""A complete extension in one file: a toy algorithm and a toy noise mode, each one registered record.

``momentum-gd``: full-batch gradient descent with heavy-ball momentum, its gradient sum released once per
step through the MPC. ``every-party``: every party adds a full-σ discrete Gaussian of its own, private even if
all the other parties pool what they know. Used by tests/test_registry.py through `mpcdp --plugin`.
"""

from __future__ import annotations

import dataclasses

import torch

from mpcdp.accounting.distributed import full_batch_noise_for
from mpcdp.accounting.distributed_noise import DISTRIBUTED, Parties, calibrate_distributed
from mpcdp.accounting.events import full_batch_gaussian_event
from mpcdp.accounting.released import ReleaseKind
from mpcdp.learning import algorithms, mechanisms
from mpcdp.learning.dpsrm import SrmResult


@dataclasses.dataclass(frozen=True, kw_only=True)
class MomentumParameters:
    steps: int
    c1: float = 1.0
    learning_rate: float = 0.5
    momentum: float = 0.5
    seed: int = 0


def run_momentum(shards, params: "_Resolved", aggregate, *, dim: int, model, **_unused):
    """θ ← θ − lr·u, u ← μ·u + v_t, v_t the released clipped-gradient sum divided by n."""
    theta = model.initial_theta(dim, params.seed)
    velocity = torch.zeros(dim, dtype=torch.float64)
    iterates, released = [theta], []
    for t in range(params.steps):
        local = sum(model.clipped_gradient_sum(theta, s.x, s.y, params.c1) for s in shards) / params.n_total
        v = aggregate(t, local)
        released.append(v)
        velocity = params.momentum * velocity + v
        theta = theta - params.learning_rate * velocity
        iterates.append(theta)
    return SrmResult(theta_output=theta, theta_last=theta, released=released, grad_norms=[], iterates=iterates)


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Resolved(MomentumParameters):
    n_total: int


def _releases(params: MomentumParameters, setting: algorithms.Setting) -> algorithms.Releases:
    resolved = _Resolved(**dataclasses.asdict(params), n_total=setting.records)
    sensitivity = 2 * params.c1 / setting.records
    kinds = (ReleaseKind("releases 1..T", sensitivity, params.steps),)
    return algorithms.Releases(
        params.steps, resolved, float(params.steps), kinds,
        lambda eps, dlt: (full_batch_noise_for(sensitivity, params.steps, eps, dlt)[0],),
        lambda sigmas: full_batch_gaussian_event(sigmas[0], sensitivity, params.steps))


algorithms.register(algorithms.Algorithm(
    "momentum-gd", "full-batch gradient descent with heavy-ball momentum (a toy)", MomentumParameters,
    lambda training, parties, passes: MomentumParameters(steps=int(passes), **training),
    frozenset({"c1", "learning_rate", "momentum", "seed"}), releases=_releases, runner=run_momentum,
    full_batch=True))


def _every_party_calibrate(kinds, dim, epsilon, delta, *, calibrate, event_of, parties, choice):
    return calibrate_distributed(kinds, dim, epsilon, delta, calibrate=calibrate, event_of=event_of,
                                 parties=Parties(parties, parties - 1))


def _every_party(choice: mechanisms.NoiseChoice, parties: int) -> mechanisms.NoiseChoice:
    return dataclasses.replace(choice, mode="distributed", colluders=parties - 1)


_DISTRIBUTED = mechanisms.MECHANISMS["distributed"]

mechanisms.register(mechanisms.MechanismRecord(
    name="every-party", id=DISTRIBUTED.id, summary="every party adds a full-σ discrete Gaussian of its own (a toy)",
    calibrate=_every_party_calibrate, plan=DISTRIBUTED.plan, residual=DISTRIBUTED.residual,
    certify=lambda kinds, releases, delta, event_of, parties, choice: _DISTRIBUTED.certify(
        kinds, releases, delta, event_of, parties, _every_party(choice, parties)),
    secure_rows=lambda ctx, release, rows, choice: _DISTRIBUTED.secure_rows(
        ctx, release, rows, _every_party(choice, ctx.parties)),
    simulated_rows=lambda release, rows, choice, parties, seed, stream: _DISTRIBUTED.simulated_rows(
        release, rows, _every_party(choice, parties), parties, seed, stream),
    draw=_DISTRIBUTED.draw))
