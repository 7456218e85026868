"""What a secure training run will cost, said before any share moves: noise samples, bytes per party and the
dealer's, and the time from the parties' start to their result. Shown, never used to stop a run: a run is
stopped only when no party makes progress for ``timeout_s`` (:mod:`mpcdp.runtime.harness`).

Bytes come from the declared costs the protocols state and tests/test_costs.py checks against the counters:
the in-MPC sampler's (:func:`mpcdp.noise.secure_gaussian.declared_cost`, per pass of candidates, passes as
:func:`mpcdp.learning.release_noise.secure_rows` draws them), one opening of d + 1 elements per release
(:func:`mpcdp.mpc.release.declared_cost`), framed as :mod:`mpcdp.transport.costs` frames them; the dealer sends
party 0 one 8-byte element per element of material (:mod:`mpcdp.adapter.material`), or per word of a reply
packed below a word per element (the sampler's B2A: :func:`dealt_elements`). Without a dealer
(``honest-majority``) the generators' material messages are not counted. Every party's own noise
(``distributed``) moves nothing and costs no sampling time worth counting.

Time is the declared bytes at rates calibrated from this project's recorded runs on its reference machine
(2 shared cores, loopback, TLS links; benchmarks/results/noise-exact.md, startup.md and estimate.md's runs):

* sampling: :data:`NOISE_S_PER_CANDIDATE` seconds per candidate the noise committee draws (its parties 0..c−1
  compute and move every opening of a pass; the others wait), plus :data:`NOISE_S_PER_ROUND` per round of its
  passes (what a small call, such as the quick start's, mostly waits for);
* training: per release, :data:`RELEASE_S` (one opening, the step's bookkeeping) plus
  :data:`GRADIENT_S_PER_ENTRY` per record of the party's batch per model parameter (clipped per-record
  gradients) plus the release's bytes at :data:`NOISE_S_PER_BYTE`;
* set-up: :data:`SETUP_S` (the processes' start, the links, the handshake, the data agreement), plus
  :data:`FIRST_RUN_S` for the first run forked from a fork server this process started (its processes wait for
  the server's imports).

Under ``security = "malicious"`` (issue 48) every data party samples, with the authenticated sampler (dg-auth/9):
its candidates in the passes :func:`mpcdp.noise.auth_gaussian_cost.passes` makes, each dealing and opening what
:func:`~mpcdp.noise.auth_gaussian_cost.per_candidate` declares (party 0 is the king of its openings: it sends the
opened bits to every other party, the others theirs to it), times :data:`AUTH_OVERHEAD` (the per-pass checks and
the frames); the time is :data:`AUTH_S_PER_PASS` per pass and :data:`AUTH_S_PER_CANDIDATE` per candidate, times
(m/3)^:data:`AUTH_SCALING` (every party computes every candidate on the shared cores); each release adds its
bound checks, per model parameter and party :data:`AUTH_RELEASE_DEALER_BYTES` and :data:`AUTH_RELEASE_BYTES`,
and :data:`AUTH_RELEASE_S` (times the same factor). Its constants are fitted on two runs of this machine, so
the malicious estimate is rougher than the semi-honest one (on dg-auth/9's quick start the dealer's bytes within 1%,
the busiest party's 9% high, the sampling time within 1%; tests/test_progress.py checks another protocol).

An estimate, not a bound: another machine, a real network (add its latency per round) or a busy host change
the time; benchmarks/results/estimate.md records estimate against measurement (33× off at load 14: the reason
it never stops a run).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from mpcdp.learning.backends import NoiseLevels, noise_samples
from mpcdp.mpc import release as release_protocol
from mpcdp.transport import costs

NOISE_S_PER_BYTE = 13.8e-9  # moving a release's bytes: 50.4 µs per sample / 3,650 B per sample (noise-exact.md, dg-mpc/1)
NOISE_S_PER_CANDIDATE = 1.15e-5  # the in-MPC sampler (dg-mpc/12) in a training run, per candidate on the committee,
NOISE_S_PER_ROUND = 4.1e-4  # and per round of its passes: fitted on benchmarks.estimate's two runs on an idle host
# (load 0.5-1.2, four runs each: the quick start's 9,398 candidates and 214 rounds in 0.18-0.27 s, median 0.195 s;
# the own-data MLP's 115,539 candidates and 214 rounds in 1.29-1.53 s, median 1.41 s); dg-mpc/6's rates (2.6e-5 and
# 1.55e-3, from noise-exact.md) put both at 2.4-2.9x. `mpcdp noise` at sigma = 1 costs less per candidate than
# these runs (10^5 samples: 128,897 candidates and 216 rounds in 0.73 s), so these rates are for training runs
RELEASE_S = 2.0e-3  # quickstart: 0.12 s online for 55 releases of 123 parameters (startup.md), less its gradients
# per record and parameter of a clipped per-record gradient: estimate.md, own-data MLP on an idle host (0.42 s of
# training steps where 2e-7 predicted 1.88 s)
GRADIENT_S_PER_ENTRY = 5.0e-8
SETUP_S = 0.5  # a run forked from a ready fork server: estimate.md's own-data MLP (the second run of its process)
# 0.55-0.69 s, a second quick start in one process 0.30-0.33 s, on an idle host
FIRST_RUN_S = 2.5  # more for a process's first run, whose processes wait for the rest of the server's imports
# (mpcdp.runtime.process_server.PRELOAD): the quick start's set-up was 2.27-2.84 s under `mpcdp train` (which
# starts the server before its own imports), 3.73-3.79 s under mpcdp.train and 4.29 s under benchmarks.estimate
DEALER_ELEMENT_BYTES = 8  # one ring element or word to party 0 per element of material
# security = "malicious", fitted on this machine (noise-malicious.md at m = 3 and 8; quickstart-malicious.md):
AUTH_OVERHEAD = 1.094  # measured / declared bytes: the dealer's 17.1 and 16.8 MB (m = 3, 8) for 1,425 candidates
# of 10,889 B (dg-auth/9; dg-auth/7: 1.07 of 13,749 B)
AUTH_S_PER_PASS = 0.30  # a pass's 300 rounds and checks (m = 3: one pass of 1,425 candidates in 0.72 s) and
AUTH_S_PER_CANDIDATE = 2.95e-4  # each candidate (the quick start: two passes, 9,400 candidates, in 3.36 s)
AUTH_SCALING = 0.81  # both times (m/3)^0.81: m = 8 took 2.2× m = 3's 0.72 s (every party computes every candidate)
# a release's bound checks (the quick start beyond its sampler and the semi-honest releases: 10.4 MB from the
# dealer, 1.7 MB from the parties and 0.52 s over 55 releases of 123 parameters at m = 3):
AUTH_RELEASE_DEALER_BYTES = 510  # per release, model parameter and party
AUTH_RELEASE_BYTES = 83  # per release, model parameter and party (the parties' mean)
AUTH_RELEASE_S = 9.4e-3  # per release at m = 3
MATERIAL_OPS = ("and_words", "b2a_bits", "bounded_masks", "square", "one_hot_words",
                "table_words")  # counted ops that are dealt elements
PACKED_REPLIES = {"b2a_bits": "b2a_reply_words", "bounded_masks": "bounded_reply_words"}
"""Counted ops whose reply a protocol may pack, or widen: where its declared cost names the words
(``b2a_reply_words``: the B2A reply of :class:`mpcdp.adapter.material.WordBits` with widths, the fields packed
one after another; ``bounded_reply_words``: :class:`mpcdp.adapter.BoundedMaskSquares`' reply, each mask with its
carry's bit and squares at their widths), those are the dealt elements instead of one per op."""


def dealt_elements(ops) -> int:
    """Elements of material the dealer sends party 0 for a declared cost's operations ``ops``: one per counted
    op of :data:`MATERIAL_OPS`, or the packed reply's words (:data:`PACKED_REPLIES`) where declared."""
    return sum(ops.get(PACKED_REPLIES[k], ops.get(k, 0)) if k in PACKED_REPLIES else ops.get(k, 0)
               for k in MATERIAL_OPS)


@dataclasses.dataclass(frozen=True)
class RunEstimate:
    """A secure run's declared cost and estimated time (from the parties' start to their result).

    Attributes:
        noise_samples: noise values drawn (rows × d over every release kind).
        releases: noisy aggregates opened (steps + 1).
        party_bytes: bytes each data party sends to the other data parties, in rank order.
        dealer_bytes: bytes the dealer sends (0 without one).
        setup_s, presample_s, online_s: the estimated time of each part.
    """

    noise_samples: int
    releases: int
    party_bytes: tuple[int, ...]
    dealer_bytes: int
    setup_s: float
    presample_s: float
    online_s: float

    @property
    def bytes_per_party(self) -> int:
        """The busiest data party's bytes."""
        return max(self.party_bytes)

    @property
    def seconds(self) -> float:
        return self.setup_s + self.presample_s + self.online_s

    def to_dict(self) -> dict[str, Any]:
        return {"noise_samples": self.noise_samples, "releases": self.releases,
                "party_bytes": list(self.party_bytes), "bytes_per_party": self.bytes_per_party,
                "dealer_bytes": self.dealer_bytes, "setup_s": round(self.setup_s, 3),
                "presample_s": round(self.presample_s, 3), "online_s": round(self.online_s, 3),
                "seconds": round(self.seconds, 3)}

    def describe(self) -> str:
        """One line in words: "estimate: 712,348 noise samples, 2.6 GB per party, 1.7 GB from the dealer,
        about 9 min (sampling noise 8 min, 206 training steps 40 s)"."""
        dealer = f", {_size(self.dealer_bytes)} from the dealer" if self.dealer_bytes else ""
        return (f"estimate: {self.noise_samples:,} noise samples, {_size(self.bytes_per_party)} per party{dealer}, "
                f"about {_duration(self.seconds)} (sampling noise {_duration(self.presample_s)}, "
                f"{self.releases:,} training steps {_duration(self.online_s)})")


def estimate_training(levels: NoiseLevels, *, steps: int, dim: int, parties: int, batch: int,
                      has_dealer: bool = True, committee: int = 3, replicated: bool = False,
                      security: str = "semi-honest", fewer_rounds: bool = False,
                      all_to_all: bool = False) -> RunEstimate:
    """The estimate of a secure training run: ``steps`` releases after release 0 of a ``dim``-parameter model,
    noise ``levels``, ``parties`` data parties, ``batch`` records per party and release, a noise committee of
    ``committee`` parties (see the module docstring for the model); ``replicated``: the committee multiplies
    by replicated resharing (:func:`mpcdp.noise.secure_gaussian.declared_cost`); ``security``: "malicious" for
    the authenticated sampler and bound-checked releases (every data party samples; no committee);
    ``fewer_rounds``: its plan dg-auth/10 (``malicious_sampler = "fewer-rounds"``: its bytes; the same time model);
    ``all_to_all``: ``[mpc] openings = "all-to-all"`` (every party sends every small opening to every other)."""
    releases = steps + 1
    online = costs.DeclaredCost(all_to_all=all_to_all)
    for _ in range(releases):
        online = online + release_protocol.declared_cost(dim)
    online_sent = [online.bytes(parties, rank)[0] for rank in range(parties)]
    online_s = releases * (RELEASE_S + batch * dim * GRADIENT_S_PER_ENTRY) + max(online_sent) * NOISE_S_PER_BYTE
    if security == "malicious":
        return _malicious(levels, steps, dim, parties, online_sent, online_s, fewer_rounds, all_to_all)
    candidates = _sampler_passes(levels, steps)
    noise_cost = _sampler_cost(levels, candidates, replicated=replicated)
    if noise_cost is not None:
        noise_cost.all_to_all = all_to_all
    members = min(parties, committee)  # the noise committee opens among itself; the others send nothing
    noise_sent = [noise_cost.bytes(members, rank)[0] if noise_cost and rank < members else 0
                  for rank in range(parties)]
    material = 0 if noise_cost is None else dealt_elements(noise_cost.ops)
    drawn = sum(sum(passes) for _, passes in candidates)
    return RunEstimate(noise_samples=noise_samples(levels, steps), releases=releases,
                       party_bytes=tuple(a + b for a, b in zip(noise_sent, online_sent)),
                       dealer_bytes=DEALER_ELEMENT_BYTES * material if has_dealer else 0,
                       setup_s=setup_s(), presample_s=_sampling_s(drawn, noise_cost, members), online_s=online_s)


def _malicious(levels: NoiseLevels, steps: int, dim: int, parties: int, online_sent: list[int],
               online_s: float, fewer_rounds: bool = False, all_to_all: bool = False) -> RunEstimate:
    """A run under ``security = "malicious"`` (module docstring): the releases' openings as semi-honest
    (``online_sent``, ``online_s``) plus their bound checks, and the authenticated sampler's passes (its openings
    through party 0's star, or ``all_to_all`` from every party to every other)."""
    from mpcdp.noise import auth_gaussian_cost, discrete_gaussian

    candidates, passes, dealt, opened = 0, 0, 0.0, 0.0
    for release, values in _noise_blocks(levels, steps):
        plan = discrete_gaussian.plan_of(release)
        drawn = auth_gaussian_cost.passes(plan, values)
        per_dealt, per_opened = auth_gaussian_cost.per_candidate(plan, fewer_rounds)
        candidates, passes = candidates + sum(drawn), passes + len(drawn)
        dealt, opened = dealt + sum(drawn) * per_dealt, opened + sum(drawn) * per_opened
    entries = (steps + 1) * dim * parties  # every party's term is bound-checked in every release
    sampled = [AUTH_OVERHEAD * opened / 8 * (parties - 1 if rank == 0 or all_to_all else 1) for rank in range(parties)]
    return RunEstimate(
        noise_samples=noise_samples(levels, steps), releases=steps + 1,
        party_bytes=tuple(int(o + s + AUTH_RELEASE_BYTES * entries / parties) for o, s in zip(online_sent, sampled)),
        dealer_bytes=int(AUTH_OVERHEAD * dealt + AUTH_RELEASE_DEALER_BYTES * entries), setup_s=setup_s(),
        presample_s=(passes * AUTH_S_PER_PASS + candidates * AUTH_S_PER_CANDIDATE) * (parties / 3) ** AUTH_SCALING,
        online_s=online_s + AUTH_RELEASE_S * (steps + 1) * (parties / 3) ** AUTH_SCALING)


def _noise_blocks(levels: NoiseLevels, steps: int) -> list[tuple[Any, int]]:
    """(release kind, values) per noise block drawn inside the MPC (the blocks :func:`_sampler_passes` counts)."""
    if levels.noiseless:
        return []
    mechanism = levels.choice.record
    return [(release, rows * release.dim) for release, rows, _ in levels.blocks(steps)
            if mechanism.sampler_passes(release, rows * release.dim)]


def setup_s() -> float:
    """The set-up's time: :data:`SETUP_S`, plus :data:`FIRST_RUN_S` where this run is the first this process forks
    from the fork server it started (:func:`mpcdp.runtime.process_server.first_run_pending`)."""
    from mpcdp.runtime.process_server import first_run_pending

    return SETUP_S + (FIRST_RUN_S if first_run_pending() else 0.0)


def _sampling_s(candidates: int, cost: costs.DeclaredCost | None, members: int) -> float:
    """The committee's sampling time: per candidate, and per round of its passes."""
    return 0.0 if cost is None else candidates * NOISE_S_PER_CANDIDATE + cost.rounds(members) * NOISE_S_PER_ROUND


def estimate_plan(plan, noise, dim: int, levels: NoiseLevels | None = None) -> RunEstimate:
    """The estimate of a secure run of ``plan`` (:class:`~mpcdp.jobs.train.TrainPlan`) on the shipped data,
    whose releases are calibrated as ``noise`` (:class:`~mpcdp.learning.algorithms.PlanNoise`) for a
    ``dim``-parameter model; ``levels``: the noise drawn, where not ``noise.levels`` (a run without noise)."""
    from mpcdp import providers

    batch = max(getattr(noise.params, "batch", 0), getattr(noise.params, "batch0", 0))
    provider = providers.lookup(plan.mpc.provider)
    committee = plan.mpc.noise_committee
    # a provider with replicated arithmetic offers it to a committee of exactly three (its parties 0-2)
    replicated = hasattr(provider, "replicated_arithmetic") and min(plan.parties, committee) == 3
    return estimate_training(noise.levels if levels is None else levels, steps=noise.steps, dim=dim,
                             parties=plan.parties, batch=batch, has_dealer=provider.has_dealer,
                             committee=committee, replicated=replicated, security=plan.mpc.security,
                             fewer_rounds=plan.mpc.malicious_sampler == "fewer-rounds",
                             all_to_all=plan.mpc.openings == "all-to-all")


def estimate_own_data(plan, noise, dim: int, levels: NoiseLevels) -> RunEstimate:
    """Every party of a run on the parties' own data, once the data agreement has made the record counts
    public and the noise is calibrated for them (after the noise agreement, before any share): the estimate
    of :func:`estimate_plan`, printed on this party (:mod:`mpcdp.runtime.progress`)."""
    from mpcdp.runtime import progress

    estimate = estimate_plan(plan, noise, dim, levels)
    progress.note(estimate.describe())
    return estimate


def _sampler_passes(levels: NoiseLevels, steps: int) -> list[tuple[Any, list[int]]]:
    """(release kind, candidates of each pass) per noise block drawn inside the MPC, as the run's mechanism
    declares them (its record's ``sampler_passes``; none for a mechanism that samples nothing in the MPC)."""
    return [(release, levels.choice.record.sampler_passes(release, values))
            for release, values in _noise_blocks(levels, steps)]


def _sampler_cost(levels: NoiseLevels, blocks: list[tuple[Any, list[int]]], *, replicated: bool = False
                  ) -> costs.DeclaredCost | None:
    if not blocks:
        return None
    total = costs.DeclaredCost()
    for release, passes in blocks:
        total = total + levels.choice.record.declared_cost(release, passes, replicated=replicated)
    return total


def _size(count: int) -> str:
    from mpcdp.runtime.progress import size

    return size(count)


def _duration(seconds: float) -> str:
    if seconds >= 90:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"
