"""One secure run of a plan: the one way `mpcdp train`, `mpcdp party --job train` (with or without ``--data``),
:func:`mpcdp.train` on own files, `mpcdp audit`, `mpcdp collab` and `mpcdp decentralized` start the party
processes of a plan.

:func:`secure_run` builds the run's MPC configuration from the plan (:func:`config_for`), the description every
party compares in its handshake over the whole resolved plan (:class:`Job`, :func:`handshake_description`), and
starts the parties: all of them here, each in its own process (:func:`mpcdp.runtime.harness.run_job`, the
default), or only this host's (:func:`host_launcher`), the others starting the same command on theirs.
:func:`secure_run_here` is the single-host form that returns this party's own value.

Security model: the parties' common one (semi-honest parties, a dealer that colludes with no party; see the
guide's "Threat model"). The handshake, checked before any share is sent, refuses on every party a party whose
plan differs in any parameter that changes the released bits or the certificate (ε, δ, a clipping constant,
σ of a release kind, the mechanism, ...), naming the field and each party's value. It holds public values only.
Declared cost: the handshake is one exchange of the description (a few kilobytes) per party; nothing else here
adds traffic to the run.

To start a new kind of secure training run: write its party function (a module-level ``fn(ctx, *args)``), and
call :func:`secure_run` with a :class:`Job` naming what runs and the public settings its parties must agree on.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol, Sequence

from mpcdp.config import MpcConfig, MpcSettings
from mpcdp.randomness import warn_reproducible

if TYPE_CHECKING:
    from mpcdp.learning.algorithms import PlanNoise
    from mpcdp.runtime.endpoint import RunSettings
    from mpcdp.runtime.harness import RunResult


class SecurePlan(Protocol):
    """What :func:`secure_run` needs of any resolved plan (training, paper 003's collaboration, paper 004's
    nodes): how many data parties it has and its resolved [mpc] settings."""

    @property
    def parties(self) -> int: ...

    @property
    def mpc(self) -> MpcSettings: ...


class Plan(Protocol):
    """What a secure training run reads of a resolved protocol (:class:`mpcdp.jobs.train.TrainPlan` has it): every field
    that changes the released bits or the certificate, and ``mpc``, the ``[mpc]`` table of its configuration."""

    name: str
    algorithm: str
    dataset: str
    parties: int
    backend: str
    epsilon: float
    delta: float
    calibration: str
    params: Any
    passes: float
    output: str
    size_ratio: float
    normalize_rows: bool
    model: str
    noise: Any
    mpc: MpcSettings
    eval_every: int | None


class Launcher(Protocol):
    """How a secure run's parties start: :func:`~mpcdp.runtime.harness.run_job` (every party here) or a
    :func:`host_launcher` (this host's party only). Returns the parties' values it holds, in rank order."""

    def __call__(self, fn: Callable[..., Any], config: MpcConfig, *, party_args: Sequence[Sequence[Any]],
                 job: dict[str, Any], progress: Callable[[int, int], None] | None = None) -> RunResult: ...


@dataclasses.dataclass(frozen=True)
class Job:
    """What a secure run on a plan runs, as its handshake describes it (:func:`handshake_description`).

    ``run``: what runs (the algorithm's display name, "audit", ...); ``noise``: the calibrated releases, None
    where they are calibrated after the handshake (own data); ``dim``/``party_sizes``: the model's size and the
    shipped split's part sizes (None on own data: the counts are not public then); ``public``: the path's own
    public settings (never a secret, e.g. the audit's setting and canary count). ``plan_fields``: for a plan that
    is not a training plan (papers 003 and 004), its whole resolved form, which the handshake compares instead
    of a training plan's fields; ``reproducible_draws``: what a ``reproducible`` run draws from the protocol's
    seed (the warning names it)."""

    run: str
    noise: PlanNoise | None = None
    dim: int | None = None
    party_sizes: tuple[int, ...] | None = None
    public: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    plan_fields: Mapping[str, Any] | None = None
    reproducible_draws: str = "every party's mini-batches"

    def describe(self, plan: Any) -> dict[str, Any]:
        """The handshake description of this job on ``plan`` (a :class:`Plan` unless ``plan_fields`` is set)."""
        if self.plan_fields is not None:
            return {"run": self.run, **_public_form(dict(self.plan_fields)), **_public_form(dict(self.public))}
        return handshake_description(plan, run=self.run, noise=self.noise, dim=self.dim,
                                     party_sizes=self.party_sizes, **self.public)


def secure_run(plan: SecurePlan, fn: Callable[..., Any], party_args: Sequence[Sequence[Any]], *, job: Job,
               launch: Launcher | None = None, progress: Callable[[int, int], None] | None = None) -> RunResult:
    """Run ``fn(ctx, *party_args[j])`` on every party j of ``plan``'s secure run after the handshake on ``job``;
    ``launch``: how the parties start (None: all here, :func:`~mpcdp.runtime.harness.run_job`); ``progress``:
    called with (done, total) as the parties report steps. Returns the harness's
    :class:`~mpcdp.runtime.harness.RunResult` (a :func:`host_launcher` holds this host's value only).

    Raises:
        PartyFailed: a party raised, died, timed out, or its handshake differed (named on every party).
    """
    if launch is None:
        from mpcdp.runtime.harness import run_job

        launch = run_job
    return launch(fn, config_for(plan, job.reproducible_draws), party_args=party_args, job=job.describe(plan),
                  progress=progress)


def secure_run_here(plan: Plan, fn: Callable[..., Any], args: Sequence[Any], *, job: Job, rank: int,
                    rendezvous: str, settings: RunSettings | None = None,
                    on_step: Callable[[int, str], None] | None = None) -> Any:
    """Data party ``rank`` of ``plan``'s secure run, in this process, joining the others at ``rendezvous`` (they
    run the same on their hosts, the dealer ``mpcdp party`` with rank m): ``fn(ctx, *args)`` after the handshake
    on ``job``; returns its value. ``settings``: the run's :class:`~mpcdp.runtime.endpoint.RunSettings` (None:
    from the environment); ``on_step``: called with (step, label) as this party's steps start."""
    return _join(fn, config_for(plan, job.reproducible_draws), args, job.describe(plan), rank=rank,
                 rendezvous=rendezvous, settings=settings, on_step=on_step)


def host_launcher(rank: int, rendezvous: str, settings: RunSettings | None = None) -> Launcher:
    """A :class:`Launcher` that runs only data party ``rank`` of a secure run, in this process, on this host (the
    other parties and the dealer run the same command on theirs: `mpcdp party --job train`). ``settings``: the
    run's :class:`~mpcdp.runtime.endpoint.RunSettings` (None: from the environment).

    Every party holds the whole shipped dataset only because the demo splits it the same way on every host;
    each party trains on its own part and sends nothing but masked shares."""

    def joined(step: int, label: str) -> None:
        if step == 1:  # the handshake is done: every party is in and the run has started
            print(f"mpcdp party {rank}: joined; training", file=sys.stderr, flush=True)

    def launch(fn, config, *, party_args, job, progress=None):
        from mpcdp.runtime.harness import RunResult

        start = time.perf_counter()
        value = _join(fn, config, party_args[rank], job, rank=rank, rendezvous=rendezvous, settings=settings,
                      on_step=joined)
        return RunResult(values=[value], dealer=None, wall_s=time.perf_counter() - start)

    return launch


def _join(fn: Callable[..., Any], config: MpcConfig, args: Sequence[Any], job: dict[str, Any], *, rank: int,
          rendezvous: str, settings: RunSettings | None, on_step: Callable[[int, str], None] | None) -> Any:
    from mpcdp.runtime.party import run_party

    return run_party(rank=rank, config=config, rendezvous=rendezvous, fn=fn, args=args, job=job, on_step=on_step,
                     settings=settings)


def config_for(plan: SecurePlan, reproducible_draws: str = "every party's mini-batches") -> MpcConfig:
    """The MPC configuration of ``plan``'s secure run (its resolved [mpc] settings, its parties). Every secure
    path (``mpcdp train``, ``mpcdp party --job train`` with or without ``--data``, ``mpcdp compare``, ``mpcdp
    audit``, ``mpcdp collab``, ``mpcdp decentralized``) takes its configuration here, so a ``reproducible`` one
    is warned about here, once per run, naming what it draws from the seed (``reproducible_draws``)."""
    config = plan.mpc.for_parties(plan.parties)
    if config.reproducible:
        warn_reproducible(reproducible_draws)
    return config


def handshake_description(plan: Plan, *, run: str, noise: PlanNoise | None = None, dim: int | None = None,
                          party_sizes: Sequence[int] | None = None, **extra: Any) -> dict[str, Any]:
    """What every party of a secure run on ``plan`` compares in its handshake, before any share
    (:meth:`mpcdp.mpc.context.MpcContext.join`, which adds the MPC configuration: precision, provider,
    time-outs): the whole resolved plan, i.e. every parameter that changes the released bits or the certificate.
    The one description of shipped-data training, own-data training and the audit; a party whose protocol file
    differs is refused on every party, naming the field and each party's value.

    ``run``: what runs (the algorithm's display name, "audit", ...); ``noise``: the calibrated releases
    (steps, the algorithm's resolved hyper-parameters, σ of every release kind on its grid, the certificate
    with its mechanism and accountant ids), None where they are calibrated after the handshake (own data:
    each party's record count is learned then, and the noise agreement compares the calibration);
    ``dim``/``party_sizes``: the model's size and the shipped split's part sizes; ``extra``: the path's own
    public settings.

    Public values only: protocol parameters, the shipped dataset's name and split (public by design, as is the
    shipped data), and what is computed from them. Never a data value or a count the protocol does not already
    make public (own-data paths pass no sizes)."""
    described: dict[str, Any] = {
        "run": run, "protocol": plan.name, "algorithm": plan.algorithm, "dataset": plan.dataset,
        "parties": plan.parties, "backend": plan.backend, "epsilon": plan.epsilon, "delta": plan.delta,
        "calibration": plan.calibration, "params": _public_form(plan.params), "passes": plan.passes,
        "output": plan.output, "size_ratio": plan.size_ratio, "normalize_rows": plan.normalize_rows,
        "model": plan.model, "noise": _public_form(plan.noise)}
    if dim is not None:
        described["dim"] = dim
    if party_sizes is not None:
        described["party_sizes"] = [int(n) for n in party_sizes]
    described["eval_every"] = plan.eval_every  # own data: every party evaluates the same iterates (one secure sum)
    if noise is not None:
        described.update(steps=noise.steps, resolved_params=_public_form(noise.params),
                         releases=_public_form(noise.levels), certificate=_public_form(noise.certificate))
    return {**described, **extra}


def _public_form(value: Any) -> Any:
    """``value`` as plain JSON types for a handshake (dataclasses as their fields, recursively)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _public_form(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(key): _public_form(inner) for key, inner in value.items()}
    if isinstance(value, (list, tuple)):
        return [_public_form(inner) for inner in value]
    return value
