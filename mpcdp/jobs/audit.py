"""`mpcdp audit`: measure privacy — plant canaries in a training run and lower-bound ε from what it released.

Two settings, both through the same training path as `mpcdp train` (simulated, or the secure backend's real
party processes, where party 0 plants the canaries):

* **white box** (gradient canaries, every release observed): every release gains K coordinates that no
  record's gradient touches, and canary i is a record whose clipped gradient (or gradient difference) is
  S_i·(Δ_t/2)·e_i — a Dirac canary at the release's per-record bound Δ_t/2, Δ_t the release's replace-one
  sensitivity from the run's certificate. It takes part in release t as any record of party 0 does, with the
  certificate's sampling rate (its own draw, unseen by the scorer). Flipping S_i changes the run by exactly
  one replace-one neighbour. The score of canary i is the log-likelihood ratio, summed over the releases, of
  "sign +1" against "sign −1" for its coordinate, with each release kind's values centred on their median
  when a canary is in a minority of them (which costs nothing when the noise is fresh and removes it when a
  row repeats) and the noise scale
  estimated from the released coordinates (the certified scale when the mechanism is right, the true one
  when it is not);
* **black box** (input-space canaries, only the final model observed): K extra records of party 0, random
  0/1 feature rows with label S_i (logistic regression); the score is the final model's margin on the row.

S_i are fair coins drawn by the planting party. With one run (``runs`` = 1) the bound is Steinke, Nasr and
Jagielski's; with several, one canary per run and Clopper–Pearson bounds on its error rates
(:mod:`mpcdp.accounting.audit_bounds`). The report puts the lower bound, at its confidence, next to the ε
certified for the audited run (K more coordinates or K more records than the plain run).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import time
from typing import Any, Callable, Sequence

import numpy as np
import torch

from mpcdp.jobs.report import save_figure
from mpcdp.accounting import audit_bounds
from mpcdp.errors import ConfigError
from mpcdp.validation import check_integer
from mpcdp.jobs.secure_run import Job, secure_run
from mpcdp.jobs.train import TrainPlan, plan_noise, training_split, unit_rows
from mpcdp.learning.backends import mpc_party, train_simulated
from mpcdp.learning.dpsrm import Shard

SETTINGS = ("white-box", "black-box")
BUGS = ("noise scaled by 0.1", "noise omitted", "the same noise row every step")


@contextlib.contextmanager
def broken_mechanism(bug: str, mode: str | None = None):
    """Within the block, the simulated backend's noise of ``mode`` (None: the default training mechanism, the
    discrete Gaussian) is broken as ``bug`` says (one of :data:`BUGS`) — to check that the audit catches it.
    Nothing else changes; the certificate still claims the intact mechanism."""
    from mpcdp.learning import mechanisms

    if bug not in BUGS:
        raise ConfigError(f"`bug` must be one of {list(BUGS)}. Found {bug!r}.")
    mode = mode or mechanisms.NoiseChoice.mode
    record = mechanisms.MECHANISMS[mode]
    assert isinstance(record, mechanisms.MechanismRecord)  # (a shipped record, a dataclass)
    draw = record.simulated_rows

    def rows(release, count, choice, parties, seed, stream):
        good = draw(release, count, choice, parties, seed, stream)
        if bug == BUGS[0]:
            return torch.round(good.double() * 0.1).to(torch.int64)
        if bug == BUGS[1]:
            return torch.zeros_like(good)
        return good[:1].expand_as(good).clone()

    mechanisms.MECHANISMS[mode] = dataclasses.replace(record, simulated_rows=rows)
    try:
        yield
    finally:
        mechanisms.MECHANISMS[mode] = record


@dataclasses.dataclass(frozen=True)
class Canaries:
    """Gradient canaries of one run: ``count`` of them in coordinates ``dim``..``dim + count − 1``; release
    t's per-record bound and sampling rate are ``bounds[kind]`` and ``rates[kind]`` (kind 0: release 0 when it
    is of its own kind)."""

    count: int
    dim: int
    bounds: tuple[float, float]
    rates: tuple[float, float]
    separate_first: bool
    seed: int | None

    def kind(self, t: int) -> int:
        return 0 if (t == 0 and self.separate_first) else 1


@dataclasses.dataclass
class AuditedRun:
    """A run's result with what the planting party knows: the canaries' signs and every release's canary
    coordinates (public, as every release)."""

    result: Any
    signs: np.ndarray | None
    released: list[np.ndarray]
    kinds: list[int]


class CanaryRunner:
    """The algorithm's runner with every release widened by the canary coordinates; the planting party adds
    its canaries' contributions to its local sum before the secure aggregation (picklable)."""

    def __init__(self, runner: Callable, canaries: Canaries, planting: bool):
        self.runner, self.canaries, self.planting = runner, canaries, planting

    def __call__(self, shards, params, aggregate, *, dim: int, **kwargs):
        c = self.canaries
        rng = np.random.default_rng(c.seed)  # None: OS entropy
        signs = rng.choice(np.array([-1, 1]), size=c.count) if self.planting else None
        released, kinds = [], []

        def widened(t: int, value: torch.Tensor) -> torch.Tensor:
            extra = torch.zeros(c.count, dtype=torch.float64)
            kind = c.kind(t)
            if signs is not None:  # each canary takes part as any record does, at the release's sampling rate
                took = rng.random(c.count) < c.rates[kind]
                extra = torch.from_numpy(signs * took * c.bounds[kind]).to(torch.float64)
            out = aggregate(t, torch.cat([value.reshape(-1), extra]))
            released.append(out[c.dim:].numpy().copy())
            kinds.append(kind)
            return out[: c.dim]

        result = self.runner(shards, params, widened, dim=c.dim, **kwargs)
        return AuditedRun(result, signs, released, kinds)


def white_box_scores(released: np.ndarray, kinds: list[int], mu: tuple[float, float], sigma: tuple[float, float],
                     rates: tuple[float, float]) -> np.ndarray:
    """Each canary's summed log-likelihood ratio of sign +1 against −1 (``released``: releases × canaries),
    under Gaussian noise of the scale the releases show (``sigma``, the certified one, only as a floor)."""
    x = np.asarray(released, dtype=np.float64).copy()
    kind_of = np.asarray(kinds)
    total = np.zeros(x.shape[1])
    for kind in (0, 1):
        rows = kind_of == kind
        if not rows.any():
            continue
        values = x[rows]
        if values.shape[0] >= 3 and rates[kind] < 0.5:  # a canary in a minority of releases: the median is noise
            values = values - np.median(values, axis=0)
        # the noise's scale as released (a robust estimate over every canary coordinate), not as claimed: the
        # same when the mechanism is right, and the attack's edge when it is not
        spread = 1.4826 * float(np.median(np.abs(values - np.median(values))))
        if values.size < 30:  # too few values to estimate it (one canary, few releases): the certified scale
            spread = sigma[kind]
        m, s, q = mu[kind], max(spread, 1e-4 * sigma[kind]), min(max(rates[kind], 1e-12), 1.0)
        if q >= 1.0:
            plus, minus = -(values - m) ** 2, -(values + m) ** 2
        else:
            base = np.log1p(-q) - values**2 / (2 * s * s)
            plus = np.logaddexp(base, math.log(q) - (values - m) ** 2 / (2 * s * s))
            minus = np.logaddexp(base, math.log(q) - (values + m) ** 2 / (2 * s * s))
        total += (plus - minus).sum(0)
    return total


def _canaries_for(plan: TrainPlan, noise, sizes: tuple[int, ...], dim: int, count: int, seed: int | None) -> Canaries:
    if noise.certificate is None or noise.levels.noiseless:
        raise ConfigError(f"protocol {plan.name!r} releases nothing noisy to audit (algorithm {plan.algorithm!r}).")
    first, later = noise.levels.first, noise.levels.later
    params = noise.params
    if getattr(params, "full_batch", False):  # every record in every step
        rates = (1.0, 1.0)
    else:
        batch = getattr(params, "batch", None)
        if batch is None:
            raise ConfigError(f"the white-box audit needs a record-sampling algorithm. Found {plan.algorithm!r}.")
        batch0 = getattr(params, "batch0", batch)
        rates = (min(1.0, batch0 / sizes[0]), min(1.0, batch / sizes[0]))
    separate = first is not later and first != later
    return Canaries(count, dim, (first.sensitivity / 2, later.sensitivity / 2), rates, separate, seed)


def _train(plan: TrainPlan, backend: str, shards: list[Shard], noise, dim: int, runners: Sequence[Callable],
           audit: dict[str, Any]):
    """One training run, simulated or on the party processes; what party 0's runner returned. ``audit``: the
    audit's public settings (setting and canary count; never the canaries' signs or seed), for the handshake."""
    if backend == "simulated":
        return train_simulated(shards, noise.params, noise.levels, dim=dim, runner=runners[0])
    job = Job("audit", noise=noise, dim=dim, party_sizes=tuple(len(s.y) for s in shards), public={"audit": audit})
    run = secure_run(plan, mpc_party, [(s, noise.params, noise.levels, dim, r) for s, r in zip(shards, runners)],
                     job=job)
    return run.values[0]["result"]


def white_box_run(plan: TrainPlan, backend: str, count: int, seed: int | None) -> dict[str, Any]:
    """One run with ``count`` gradient canaries; their signs and scores, and the run's certificate."""
    model = plan.trained_model
    _, x, y, parts = training_split(plan)
    shards = [Shard(j, x[idx], y[idx]) for j, idx in enumerate(parts)]
    sizes, dim = tuple(len(p) for p in parts), model.dimension(x)
    noise = plan_noise(plan, sizes, dim + count)
    canaries = _canaries_for(plan, noise, sizes, dim, count, seed)
    assert plan.record.runner is not None  # (an algorithm with a secure run: plan_noise)
    base = functools.partial(plan.record.runner, model=model)
    runners = [CanaryRunner(base, canaries, planting=(j == 0)) for j in range(len(shards))]
    run = _train(plan, backend, shards, noise, dim + count, runners, {"setting": "white-box", "canaries": count})
    levels = noise.levels
    assert levels.first is not None and levels.later is not None  # (noisy: _canaries_for)
    sigma = (levels.first.noise_multiplier * levels.first.sensitivity,
             levels.later.noise_multiplier * levels.later.sensitivity)
    scores = white_box_scores(np.stack(run.released), run.kinds, canaries.bounds, sigma, canaries.rates)
    return {"signs": run.signs, "scores": scores, "certificate": noise.certificate,
            "rates": canaries.rates, "sigma": sigma, "bounds": canaries.bounds, "releases": len(run.released)}


def black_box_run(plan: TrainPlan, backend: str, count: int, seed: int | None) -> dict[str, Any]:
    """One run with ``count`` input-space canaries in party 0's data; scores from the final model only."""
    model = plan.trained_model
    _, x, y, parts = training_split(plan)
    if model.kind != "logreg":
        raise ConfigError(f"the black-box audit plants logistic-regression records. Found model {model.name!r}.")
    rng = np.random.default_rng(seed)
    signs = rng.choice(np.array([-1, 1]), size=count)
    ones = max(1, int(round(float((x != 0).sum(1).double().mean()))))
    rows = np.zeros((count, x.shape[1]))
    for i in range(count):
        rows[i, rng.choice(x.shape[1], size=ones, replace=False)] = 1.0
    planted = torch.from_numpy(rows)
    if plan.normalize_rows:
        planted = unit_rows(planted)
    shards = [Shard(j, x[idx], y[idx]) for j, idx in enumerate(parts)]
    shards[0] = Shard(0, torch.cat([shards[0].x, planted]),
                      torch.cat([shards[0].y, torch.from_numpy(signs).to(shards[0].y.dtype)]))
    sizes, dim = tuple(len(s.y) for s in shards), model.dimension(x)
    noise = plan_noise(plan, sizes, dim)
    assert plan.record.runner is not None  # (an algorithm with a secure run: plan_noise)
    base = functools.partial(plan.record.runner, model=model)
    result = _train(plan, backend, shards, noise, dim, [base] * len(shards),
                    {"setting": "black-box", "canaries": count})
    theta = result.output(plan.output)
    return {"signs": signs, "scores": (planted @ theta).numpy(), "certificate": noise.certificate}


def run_audit(plan: TrainPlan, *, backend: str = "simulated", setting: str = "white-box", canaries: int = 1000,
              runs: int = 1, confidence: float = 0.95, seed: int | None = None,
              progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Audit ``plan``: one run with ``canaries`` canaries, or ``runs`` runs with one canary each."""
    if setting not in SETTINGS:
        raise ConfigError(f"`setting` must be one of {list(SETTINGS)}. Found {setting!r}.")
    if backend not in ("simulated", "mpc"):
        raise ConfigError(f"`backend` must be 'simulated' or 'mpc'. Found {backend!r}.")
    check_integer(runs, "runs", minimum=1)
    if runs == 1:
        check_integer(canaries, "canaries", minimum=2, note="a one-run audit")
    one = white_box_run if setting == "white-box" else black_box_run
    start = time.perf_counter()
    if runs == 1:
        out = one(plan, backend, canaries, seed)
        bound = audit_bounds.one_run(out["scores"], out["signs"], delta=plan.delta, confidence=confidence)
        scores, signs = out["scores"], out["signs"]
        if progress is not None:
            progress(1, 1)
    else:
        scores, signs = [], []
        for r in range(runs):
            out = one(plan, backend, 1, None if seed is None else seed + r)
            scores.append(float(out["scores"][0]))
            signs.append(int(out["signs"][0]))
            if progress is not None:
                progress(r + 1, runs)
        scores, signs = np.array(scores), np.array(signs)
        bound = audit_bounds.many_runs(scores, signs, delta=plan.delta, confidence=confidence,
                                       seed=0 if seed is None else seed)
    certificate = out["certificate"]
    return {"protocol": plan.name, "algorithm": plan.record.display_name(plan.parties), "backend": backend,
            "setting": setting, "parties": plan.parties, "method": bound.method,
            "canaries": canaries if runs == 1 else 1, "runs": runs, "confidence": confidence,
            "epsilon_lower": bound.epsilon, "epsilon_certified": certificate.epsilon, "delta": certificate.delta,
            "tightness": bound.epsilon / certificate.epsilon, "guesses": bound.guesses, "correct": bound.correct,
            "detail": bound.detail, "wall_s": round(time.perf_counter() - start, 3),
            "scores": np.asarray(scores).tolist(), "signs": np.asarray(signs).tolist()}


def markdown(report: dict[str, Any], command: str | None = None) -> str:
    """The audit as a short table."""
    from mpcdp.jobs.report import markdown_table

    detail = report["detail"]
    how = (f"{report['canaries']} canaries in one run, k = {detail['k']} guesses each side (k tried: "
           f"{detail['k_tried']}, significance split among them)" if report["method"] == "one run" else
           f"{report['runs']} runs of one canary, threshold chosen on half, Clopper–Pearson on the other half")
    rows = [[report["protocol"], report["algorithm"], report["backend"], report["setting"], how,
             f"{report['correct']} / {report['guesses']}", f"{report['epsilon_lower']:.3f}",
             f"{report['epsilon_certified']:.4f}", f"{report['tightness']:.3f}"]]
    head = [f"# Privacy audit: {report['protocol']}", ""]
    if command:
        head.append(f"Command: `{command}`")
        head.append("")
    return "\n".join(head) + "\n" + markdown_table(
        ["protocol", "algorithm", "backend", "setting", "method", "correct / guesses",
         f"ε lower bound ({100 * report['confidence']:.0f}%)", "ε certified", "lower ÷ certified"], rows)


def plot(record: dict[str, Any], path) -> None:
    """Histogram of the canaries' scores by their true sign, with the bound in the title."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scores, signs = np.asarray(record["scores"]), np.asarray(record["signs"])
    fig, ax = plt.subplots(figsize=(6, 3.5))
    bins = np.histogram_bin_edges(scores, bins=40)
    ax.hist(scores[signs == 1], bins=bins.tolist(), alpha=0.6, label="sign +1")
    ax.hist(scores[signs == -1], bins=bins.tolist(), alpha=0.6, label="sign −1")
    ax.set_xlabel("canary score (high: guess +1)")
    ax.set_ylabel("canaries" if record["runs"] == 1 else "runs")
    ax.set_title(f"{record['protocol']} ({record['backend']}, {record['setting']}): ε ≥ "
                 f"{record['epsilon_lower']:.3f}, certified {record['epsilon_certified']:.3f}", fontsize=9)
    ax.legend()
    fig.tight_layout()
    save_figure(fig, path, dpi=120)


def write(report: dict[str, Any], prefix: str, command: str | None = None) -> dict[str, Any]:
    """PREFIX.md, PREFIX.json and PREFIX.png (versions stamped, :func:`mpcdp.jobs.report.write_record`)."""
    from mpcdp.jobs.report import write_record

    return write_record(prefix, {**report, "command": command}, markdown(report, command), plot)
