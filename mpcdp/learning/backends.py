"""Where DP-SRM's sum and noise happen: inside the MPC (``mpc``) or in plaintext (``simulated``).

Both backends release the same mechanism (:mod:`mpcdp.accounting.released`): the sum of the terms on the
release kind's grid 2^-p plus discrete Gaussian noise in grid units (:mod:`mpcdp.noise.discrete_gaussian`).

``mpc``: every party process runs :func:`mpc_party`; its local term sum goes into
:func:`~mpcdp.mpc.release.noisy_release` (each party's term rounded to the grid, masked, plus its noise share;
one opening per step). The noise rows come from blocks pre-sampled inside the MPC
(the run's noise mode, :mod:`mpcdp.learning.noise_modes`: one block of 1×d for release 0, one of T×d for
releases 1..T), and only v_p leaves; under ``security = "malicious"`` each release also checks every party's
term inside the MPC against the bound an honest term satisfies (:mod:`mpcdp.learning.term_bounds`,
:func:`release_bounds`). ``simulated``: one process, the same algorithm; the sum of the terms held here is
rounded to the same grid and the noise drawn in plaintext from the same integer distribution
(:func:`~mpcdp.learning.release_noise.simulated_rows`). The one difference: the secure sum rounds each party's
term, the simulated one rounds their sum (at most m/2 grid units apart per coordinate, against a noise of
≈ 2^21 units; the same Δ_int covers both). :meth:`NoiseLevels.none` runs without noise at the run's precision
(for tests that compare the two paths exactly).
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING, Any, Callable, Sequence

import torch

from mpcdp.accounting.grid import GridRelease, encode
from mpcdp.errors import ConfigError, InputError
from mpcdp.config import covers_malicious_unless
from mpcdp.learning.checkpoint import Checkpointer, available, journaled, load, shard_digest
from mpcdp.learning.dpsrm import Shard, SrmResult, run_srm
from mpcdp.learning.logreg import warm_up
if TYPE_CHECKING:
    from mpcdp.mpc.authenticated import AuthShared
from mpcdp.mpc.context import MpcContext
from mpcdp.mpc.release import noisy_release
from mpcdp.mpc.shared import Shared, share_of
from mpcdp.learning.mechanisms import NoiseChoice
from mpcdp.learning.term_bounds import release_bound, states_bound
from mpcdp.randomness import batch_key
from mpcdp.runtime import progress


@dataclasses.dataclass(frozen=True)
class NoiseLevels:
    """The release kinds of a run on their grids, in order (empty: no noise), with ``rows``, how many
    releases each kind covers (release 0 onwards; empty: release 0 is the first kind's, releases 1..T the last
    kind's), and ``choice``, how the noise is made (:mod:`mpcdp.learning.mechanisms`). :attr:`first` and
    :attr:`later` are the first and the last kinds (what algorithms with one or two kinds have)."""

    releases: tuple[GridRelease, ...] = ()
    choice: NoiseChoice = NoiseChoice()
    rows: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "releases", tuple(self.releases))
        object.__setattr__(self, "rows", tuple(self.rows))
        if any(r is None for r in self.releases):
            raise ConfigError("every release kind must be set (no release kinds at all: noiseless)")
        if self.rows and (len(self.rows) != len(self.releases) or min(self.rows) < 1):
            raise ConfigError(f"`rows` needs one count >= 1 per release kind. Found {self.rows!r} for "
                              f"{len(self.releases)} kinds.")

    @classmethod
    def none(cls) -> "NoiseLevels":
        return cls()

    @classmethod
    def for_sigmas(cls, sigma0: float, sigma: float, *, dim: int, sensitivity0: float = 1.0,
                   sensitivity: float = 1.0) -> "NoiseLevels":
        """Release kinds whose noise is about ``sigma0`` and ``sigma`` (real units) for the given sensitivities."""
        return cls((GridRelease(sensitivity0, dim, sigma0 / sensitivity0), GridRelease(sensitivity, dim, sigma / sensitivity)))

    @property
    def noiseless(self) -> bool:
        return not self.releases

    @property
    def first(self) -> GridRelease | None:
        return self.releases[0] if self.releases else None

    @property
    def later(self) -> GridRelease | None:
        return self.releases[-1] if self.releases else None

    @property
    def sigmas(self) -> tuple[float, ...]:
        """The released noise's standard deviation of every kind (real units)."""
        return tuple(r.sigma for r in self.releases)

    @property
    def sigma0(self) -> float:
        """The released noise's standard deviation of release 0 (real units)."""
        return 0.0 if self.first is None else self.first.sigma

    @property
    def sigma(self) -> float:
        """The released noise's standard deviation of releases 1..T (real units)."""
        return 0.0 if self.later is None else self.later.sigma

    def blocks(self, steps: int) -> list[tuple[GridRelease, int, int]]:
        """(release kind, rows to draw, first release it serves) per noise block of a run of ``steps``
        releases after release 0: block 0 serves release 0; with ``rows`` for more than two kinds, kind i
        serves its own rows, the last kind every release after; otherwise the last kind releases 1..T."""
        if self.noiseless:
            return []
        if len(self.releases) <= 2 or not self.rows:
            return [(self.releases[0], 1, 0), (self.releases[-1], steps, 1)]
        out, start = [], 0
        for i, (release, count) in enumerate(zip(self.releases, self.rows)):
            last = i == len(self.releases) - 1
            out.append((release, max(count, steps + 1 - start) if last else count, start))
            start += count
        return out


def draw_blocks(noise: NoiseLevels, steps: int, draw: Callable[[GridRelease, int, int], Any]) -> list:
    """``draw(release, rows, block index)`` for every block of :meth:`NoiseLevels.blocks`."""
    return [draw(release, count, i) for i, (release, count, _) in enumerate(noise.blocks(steps))]


def block_row(noise: NoiseLevels, steps: int, t: int) -> tuple[int, int]:
    """(block, row) that release ``t`` takes its noise from."""
    starts = [start for _, _, start in noise.blocks(steps)]
    block = max(i for i, start in enumerate(starts) if start <= t)
    return block, t - starts[block]


def releases_alike(noise: NoiseLevels, steps: int, t: int) -> int:
    """How many releases from ``t`` on (``t`` included) share release ``t``'s noise block, and so its grid and
    bound (release 0 has its own): public, what :func:`~mpcdp.mpc.release.noisy_release` may ask the dealer for
    at once (``ahead``)."""
    blocks = noise.blocks(steps)
    if not blocks:
        return 1 if t == 0 else max(1, steps + 1 - t)
    block, row = block_row(noise, steps, t)
    return max(1, blocks[block][1] - row)


def _sizes(params, parties: int) -> dict[str, list[int]]:
    return {"batch_sizes": [getattr(params, "batch", 0)] * parties,
            "batch0_sizes": [getattr(params, "batch0", 0)] * parties}


def _checkpointing(checkpoint: dict | None, rank: int, params, ledger: dict) -> tuple[Any, dict]:
    """(the Checkpointer or None, the runner's extra keyword arguments) for a run's checkpoint settings."""
    if not checkpoint or not checkpoint.get("every"):
        return None, {}
    saver = Checkpointer(checkpoint["dir"], rank, every=checkpoint["every"], total=params.steps + 1,
                         description=checkpoint["description"])
    saver.ledger = ledger
    return saver, {"on_release": saver}


def train_simulated(shards: Sequence[Shard], params, noise: NoiseLevels, *, dim: int,
                    noise_seed: int | None = None, runner: Callable = run_srm,
                    checkpoint: dict | None = None) -> SrmResult:
    """All shards in this process; the sum rounded to each release's grid and the same integer noise as the
    secure backend, drawn in plaintext (``noise_seed``: reproducible noise for tests). ``runner``: DP-SRM by
    default, or a baseline from :mod:`mpcdp.learning.baselines` (same signature). ``checkpoint``: see
    :func:`mpc_party` (one checkpoint folder, ``party-0``)."""
    resumed = _resume_payload(None, checkpoint, 0)
    if resumed is not None:
        stored = resumed["secrets"]
        blocks = [stored["noise0"], stored["noise"], *stored.get("noise_more", [])]
    elif noise.noiseless:
        blocks = []
    else:
        draw = noise.choice.record.simulated_rows
        blocks = draw_blocks(noise, params.steps,
                             lambda release, count, i: draw(release, count, noise.choice, len(shards), noise_seed, i))
    kinds = noise.blocks(params.steps)

    def aggregate(t: int, total: torch.Tensor) -> torch.Tensor:
        progress.advance(t + 1)
        if not blocks or blocks[0] is None:
            return total
        block, offset = block_row(noise, params.steps, t)
        release, row = kinds[block][0], blocks[block][offset]
        return (encode(total, release.precision) + row).to(torch.float64) * 2.0**-release.precision

    saver, extra = _checkpointing(checkpoint, 0, params, {"sigma0": noise.sigma0, "sigma": noise.sigma})
    if saver is not None:
        saver.secrets = {"noise0": blocks[0] if blocks else None, "noise": blocks[1] if blocks else None,
                         **({"noise_more": blocks[2:]} if len(blocks) > 2 else {})}
    if resumed is not None:
        extra["resume"] = resumed["state"]
    progress.phase("training step", params.steps + 1, 0 if resumed is None else resumed["state"]["releases"])
    return runner(shards, params, aggregate, dim=dim, **extra, **_sizes(params, len(shards)))


def _resume_payload(ctx: MpcContext | None, checkpoint: dict | None, rank: int) -> dict | None:
    """The checkpoint to continue from: the newest release every party has (one public exchange)."""
    if not checkpoint or not checkpoint.get("resume"):
        return None
    mine = available(checkpoint["dir"], rank)
    everyone = [mine] if ctx is None else ctx.exchange_public(mine, label="checkpointed releases")
    common = set(everyone[0]).intersection(*map(set, everyone[1:]))
    if not common:
        listing = "; ".join(f"party {r}: {v or 'none'}" for r, v in enumerate(everyone))
        raise ConfigError(f"`resume`: no release is checkpointed by every party under {checkpoint['dir']!r} "
                          f"({listing})")
    return load(checkpoint["dir"], rank, max(common), checkpoint["description"])


def _opened_since(ctx: MpcContext, checkpoint: dict | None, resumed: dict | None) -> dict[int, torch.Tensor]:
    """The releases after the resumed checkpoint that some party journaled as opened, with their values
    (one public exchange; each value from the lowest-ranked party that has it, all copies must agree)."""
    if resumed is None or checkpoint is None:  # (resumed only from a checkpoint)
        return {}
    after = resumed["state"]["releases"] - 1
    mine = {str(t): v for t, v in journaled(checkpoint["dir"], ctx.rank, after).items()}
    everyone = ctx.exchange_public(mine, label="releases opened before the restart")
    replay: dict[int, torch.Tensor] = {}
    for rank, theirs in enumerate(everyone):
        for key, value in theirs.items():
            t = int(key)
            if t in replay and not torch.equal(replay[t], value):
                raise ConfigError(f"`resume`: party {rank}'s journal of release {t} differs from another "
                                  f"party's; the checkpoint directories do not belong to one run")
            replay.setdefault(t, value)
    if replay and sorted(replay) != list(range(after + 1, after + 1 + len(replay))):
        raise ConfigError(f"`resume`: the journaled releases after {after} are not consecutive: {sorted(replay)}")
    return replay


def shard_problem(shard: Shard) -> str | None:
    """What is wrong with a party's training data, or None: empty, rows and labels of different lengths,
    NaN/Inf features or labels. The text goes to every party: it names the field, never a value nor how many
    entries are affected."""
    n = int(shard.x.shape[0]) if shard.x.ndim else 0
    if n == 0:
        return "`features` are empty (0 records)"
    if len(shard.y) != n:
        return f"`labels` has {len(shard.y)} entries for {n} feature rows"
    for field, values in (("features", shard.x), ("labels", shard.y)):
        if not bool(torch.isfinite(values.to(torch.float64)).all()):
            return f"`{field}` contain NaN/Inf values"
    return None


def check_shards(ctx: MpcContext, shard: Shard) -> None:
    """Every party's data is usable and has the same record shape — checked before any share is made
    (one public exchange of the problems and shapes; raised on every party, naming the first bad party)."""
    mine = {"problem": shard_problem(shard), "shape": tuple(shard.x.shape[1:])}
    everyone = ctx.exchange_public(mine, label="training data check")
    for rank, info in enumerate(everyone):
        if info["problem"] is not None:
            raise InputError(f"party {rank}: {info['problem']}", party=rank)
    shapes = [tuple(info["shape"]) for info in everyone]
    if len(set(shapes)) > 1:
        common = max(set(shapes), key=shapes.count)  # blame a party that differs from the most common shape
        odd = next(r for r, s in enumerate(shapes) if s != common)
        raise InputError("`features` shapes differ between parties: "
                         + ", ".join(f"party {r} = {s}" for r, s in enumerate(shapes)), party=odd)


def _secure_blocks(ctx: MpcContext, noise: NoiseLevels, steps: int, resumed: dict | None) -> list[Shared]:
    """This party's shares of the run's noise blocks: drawn by the run's mechanism, or those checkpointed."""
    if resumed is not None:
        stored = resumed["secrets"]
        if stored["noise0"] is None:
            return []
        return [Shared(stored[k], stored[f"{k}_bits"]) for k in ("noise0", "noise")] + \
            [Shared(v, bits) for v, bits in zip(stored.get("noise_more", []), stored.get("noise_more_bits", []))]
    draw = noise.choice.record.secure_rows
    samples = noise_samples(noise, steps)
    progress.phase("sampling noise", samples)
    blocks = draw_blocks(noise, steps, lambda release, count, i: draw(ctx, release, count, noise.choice))
    progress.advance(samples)  # a mechanism that draws without reporting (each party's own noise) is done too
    return blocks


def noise_samples(noise: NoiseLevels, steps: int) -> int:
    """The noise values a run of ``steps`` releases after release 0 draws: rows × d over its blocks."""
    return sum(count * release.dim for release, count, _ in noise.blocks(steps))


def _stored_blocks(blocks: list[Shared]) -> dict[str, Any]:
    """The checkpointed form of this party's noise blocks (release 0's, releases 1..T's, any more kinds')."""
    out: dict[str, Any] = {"noise0": None, "noise": None, "noise0_bits": None, "noise_bits": None}
    for key, block in zip(("noise0", "noise"), blocks):
        out[key], out[f"{key}_bits"] = share_of(block), block.precision_bits
    if len(blocks) > 2:
        out["noise_more"] = [share_of(b) for b in blocks[2:]]
        out["noise_more_bits"] = [b.precision_bits for b in blocks[2:]]
    return out


def _row(block: Any, row: int) -> Any:
    """Row ``row`` of a noise block: :class:`Shared`, or authenticated shares under ``security = "malicious"``."""
    from mpcdp.mpc.authenticated import AuthShared

    return block[row] if isinstance(block, AuthShared) else block.select_row(row)


def _uncovered_training(shard: Shard, params, noise: NoiseLevels, dim: int, runner: Callable = run_srm,
                        checkpoint: dict | None = None, *rest: Any) -> str | None:
    """What ``security = "malicious"`` does not cover among :func:`mpc_party`'s arguments: noise whose draw does
    not MAC-check every opening, and checkpoints (they store plain shares)."""
    if not getattr(noise.choice.record, "authenticated", False):
        return f"training with noise mode {noise.choice.record.name!r}"
    if not states_bound(params):
        return f"training with {type(params).__name__}, which states no bound for its terms (`term_bound`)"
    return "checkpoints" if checkpoint else None


def release_bounds(ctx: MpcContext, params, noise: NoiseLevels, dim: int) -> Callable[[int], float | None]:
    """Release t's bound on every party's term (:mod:`mpcdp.learning.term_bounds`) under ``security =
    "malicious"``, None otherwise (semi-honest parties clip their own). Every release kind's bound is checked to
    fit the in-MPC check on its grid here, before any noise is sampled (a ConfigError on every party)."""
    if ctx.config.security != "malicious":
        return lambda t: None
    from mpcdp.mpc.bounded import unit_bound

    sizes = _sizes(params, ctx.parties)

    def bound(t: int) -> float:
        return release_bound(params, t, sizes["batch_sizes"], sizes["batch0_sizes"])

    grids = [(r.precision, start) for r, _, start in noise.blocks(params.steps)] or [(ctx.config.precision_bits, 0)]
    for bits, start in grids:  # (noiseless: the run's precision, as noisy_release then uses)
        for t in {start, max(start, 1)}:
            unit_bound(bound(t), dim, bits)
    return bound


@covers_malicious_unless(_uncovered_training)
def mpc_party(ctx: MpcContext, shard: Shard, params, noise: NoiseLevels, dim: int,
              runner: Callable = run_srm, checkpoint: dict | None = None,
              on_opened: Callable[[int], None] | None = None) -> dict[str, Any]:
    """One party of a DDP-SRM run: noise pre-sampled inside the MPC, then the online phase (timed apart; the
    process's one-time set-up is in neither). The party's mini-batches come from a generator keyed by the OS
    CSPRNG, so no other party can tell which of its records a step used — unless the run is
    ``reproducible`` (:class:`~mpcdp.config.MpcConfig`), when they follow the protocol's seed and equal
    the simulated run's.

    ``checkpoint`` (DP-SRM only): ``{"dir", "every", "resume", "description"}`` — save this party's state every
    ``every`` releases under ``dir`` (:mod:`mpcdp.learning.checkpoint`), or continue from the newest release every
    party saved (``resume``), refusing a checkpoint of another configuration before any share moves.
    ``on_opened``: called with t once release t is out, opened now or re-served after a restart (some party
    opened it before, perhaps while this one was being killed): a privacy ledger (:mod:`mpcdp.jobs.budget`)
    counts each release once either way."""
    check_shards(ctx, shard)
    if checkpoint:  # this party's checkpoints are bound to its own records, too
        checkpoint = {**checkpoint, "description": {**checkpoint["description"],
                                                    "shard_sha256": shard_digest(shard.x, shard.y)}}
    resumed = _resume_payload(ctx, checkpoint, ctx.rank)
    replay = _opened_since(ctx, checkpoint, resumed)
    warm_up()
    bound_of = release_bounds(ctx, params, noise, dim)
    start = time.perf_counter()
    blocks = _secure_blocks(ctx, noise, params.steps, resumed)
    presample_s = time.perf_counter() - start

    def aggregate(t: int, local: torch.Tensor) -> torch.Tensor:
        if t in replay:  # opened before the restart: served again, never opened again
            released = replay[t]
        else:
            noise_row = None if not blocks else _row(blocks[block_row(noise, params.steps, t)[0]],
                                                     block_row(noise, params.steps, t)[1])
            released = noisy_release(ctx, local, noise_row, shape=(dim,), label=f"v_p[{t}]",
                                     field="local gradient terms", bound=bound_of(t),
                                     ahead=releases_alike(noise, params.steps, t))
        if on_opened is not None:
            on_opened(t)
        if saver is not None:
            saver.journal(t, released)
        ctx.progress(t + 1, params.steps + 1)
        progress.advance(t + 1)
        return released

    start = time.perf_counter()
    parties = ctx.parties
    if resumed is not None:
        key = resumed["secrets"]["batch_key"]
    else:
        key = None if ctx.config.reproducible else batch_key()
    saver, extra = _checkpointing(checkpoint, ctx.rank, params, {"sigma0": noise.sigma0, "sigma": noise.sigma})
    if saver is not None:  # this party's own secrets, kept on its own disk only
        saver.secrets = {"batch_key": key, **_stored_blocks(blocks)}
    if resumed is not None:
        extra["resume"] = resumed["state"]
    progress.phase("training step", params.steps + 1, 0 if resumed is None else resumed["state"]["releases"])
    result = runner([shard], params, aggregate, dim=dim, batch_key=key, **extra, **_sizes(params, parties))
    from mpcdp.adapter import material_bytes_sent  # the generators' material messages (no dealer)

    return {"result": result, "presample_s": presample_s, "online_s": time.perf_counter() - start,
            "bytes_sent": ctx.wire.bytes_sent + material_bytes_sent(), "rounds": ctx.rounds,
            "resumed_after": None if resumed is None else resumed["state"]["releases"] - 1,
            "re_served": sorted(replay), "link_wire_bytes": ctx.link_wire_bytes(), "links": ctx.links,
            "opened_releases": [o.label for o in ctx.openings if o.kind == "release"]}
