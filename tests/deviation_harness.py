"""The deviation harness (issue 48): every data party of a ``security = "malicious"`` run simulated in ONE process, one
thread per party, running mpcdp's own protocol code, with a hook on every message a chosen party sends.

What is reused, unchanged: every function of :mod:`mpcdp.mpc.authenticated` (inputs, openings, products, squares,
the batched MAC check with its commitments and view digests), :mod:`mpcdp.mpc.bounded` (the bound checks),
:mod:`mpcdp.mpc.auth_circuits` and :mod:`mpcdp.noise.auth_gaussian` (the sampler, circuit dg-auth/9),
:func:`mpcdp.mpc.release.noisy_release` (the release), and the dealer's own formulas for the authenticated
material (``serve`` and ``from_dealer`` of :mod:`mpcdp.adapter.mac_material`, :mod:`mpcdp.adapter.square_masks` and
:mod:`mpcdp.adapter.auth_bits`:
the dealer's and the parties' generators are seeded torch generators here, where the real run keys them from
the dealer's link).

What is modelled: the transport (:class:`SimContext`: every opening is all-to-all, every party sums what it
received; the real run's star and reduce-scatter plans only relay these sums), the dealer's process (its
generators in this process, see above) and the committed coin (:meth:`SimContext.common_stream`: a public
stream every party derives alike, honest: its commitment is :mod:`mpcdp.mpc.coin`'s and not under test here; so
is the MAC check's coin committed ahead, :func:`mpcdp.mpc.coin.open_ahead`).

The deviating party ("the cheater") runs the same code; its sends pass :class:`Deviation`'s hook, which at one
chosen send (an opening, an input, a MAC-check message) or one fetch of dealt material alters one message: flips
a bit, adds an offset, replays a word it sent earlier, permutes the message's words, sends the alteration to
one receiver only (the others get the honest message), or uses other material than dealt. A deviation sent
alike to every receiver is applied to the cheater's own part too (a cheater that changes its share before
sending it): its view digest then matches the honest parties', so the MACs, not the digest comparison, must
catch it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import math
import random
import threading
import types
from typing import Any, Callable

import torch

from mpcdp.adapter import auth_bits, dealer_link, keyed, mac_material, square_masks
from mpcdp.adapter.limbs import Wide
from mpcdp.adapter.mac_material import RING
from mpcdp.adapter.material import Material
from mpcdp.mpc import authenticated, coin

KINDS = ("flip", "offset", "replay", "reorder", "equivocate", "material")
"""The deviations: flip a bit, add an offset, replay an earlier word, permute the words, send an altered
message to one receiver only, use other material than dealt."""

_local = threading.local()


@dataclasses.dataclass
class Deviation:
    """One deviation of party ``cheater``: at its ``event``-th send (or, for ``kind`` 'material', its
    ``event``-th fetch of dealt material), of ``kind``, with ``seed`` choosing the word, bit, offset or
    permutation; ``to`` the receiver of an 'equivocate' (else every receiver); ``word``: the word altered (else
    one chosen by ``seed``); ``amount``: what an 'offset' adds (else a random word). After the run: ``label`` (the
    send's), ``delta`` (the int64 words added to the message, for a deviation sent alike to everyone),
    ``applied`` (whether the event was reached) and ``changed`` (whether the message differed)."""

    cheater: int
    kind: str
    event: int
    seed: int
    to: int | None = None
    word: int | None = None
    amount: int | None = None
    label: str = ""
    delta: torch.Tensor | None = None
    applied: bool = False
    changed: bool = False

    def alter(self, words: torch.Tensor, history: list[torch.Tensor]) -> torch.Tensor:
        """The altered message (a copy; ``words`` flat int64)."""
        rng = random.Random(self.seed)
        out = words.clone()
        if out.numel() == 0:
            return out
        at = rng.randrange(out.numel()) if self.word is None else self.word
        if self.kind in ("flip", "equivocate"):
            bit = rng.randrange(64)
            out[at] ^= -(1 << 63) if bit == 63 else 1 << bit
        elif self.kind == "offset":
            out[at] += rng.randrange(1, 1 << 63) * rng.choice((1, -1)) if self.amount is None else self.amount
        elif self.kind == "replay":
            earlier = [h for h in history if h.numel()] or [words]
            source = rng.choice(earlier)
            out[at] = source[rng.randrange(source.numel())]
        elif self.kind == "reorder":
            order = list(range(out.numel()))
            rng.shuffle(order)
            out = out[torch.tensor(order)]
        return out

    def follow(self, ctx: SimContext, words: torch.Tensor, label: str) -> torch.Tensor:
        """A later send of the cheater after the deviation (a second, matching alteration); unchanged here."""
        return words


@dataclasses.dataclass
class ParityFixedFlip(Deviation):
    """A flip of opened bit ``column`` of a bit opening (the ``event``-th send, kind 'flip', sent alike to every
    party) whose parities the cheater then keeps even: at the next bit check's parity opening it adds b_tj (j =
    ``column``, the flipped bit's place among the bits that check covers; b the check's coin rows, which it
    sees as everyone does) to its share of each y_t. Every y_t then stays even, so of the bit check only its
    MAC comparison can catch the flip (the opened y_t no longer carry their MACs). ``fixed``: the parities were
    altered."""

    column: int = 0
    fixed: bool = False

    def alter(self, words: torch.Tensor, history: list[torch.Tensor]) -> torch.Tensor:
        out = words.clone()
        bit = self.column % 64
        out[self.column // 64] ^= -(1 << 63) if bit == 63 else 1 << bit
        return out

    def follow(self, ctx: SimContext, words: torch.Tensor, label: str) -> torch.Tensor:
        if not self.applied or self.fixed or not label.endswith(": bit-check parities"):
            return words
        rows = next(w for name, w in reversed(ctx.drawn) if name.endswith(": bit-check rows"))
        rows = rows.reshape(words.numel(), -1)
        fix = (rows[:, self.column // 64] >> (self.column % 64)) & 1
        self.fixed = True
        return words + fix.reshape(words.shape)


class SimContext:
    """What :mod:`mpcdp.mpc.authenticated` and the release use of :class:`~mpcdp.mpc.context.MpcContext`, for
    party ``rank`` of the simulated run ``sim``."""

    def __init__(self, sim: SimParties, rank: int):
        self.sim, self.rank, self.parties = sim, rank, sim.m
        self.members = tuple(range(sim.m))
        self.config = types.SimpleNamespace(security="malicious", precision_bits=16, malicious_sampler="fewer-bytes",
                                            refuse_uncovered=_refuse)
        self.generator = torch.Generator().manual_seed(_seed(sim.seed, "party", rank))
        self.sends = 0
        self.fetches = 0
        self.history: list[torch.Tensor] = []
        self.streams = 0
        self.drawn: list[tuple[str, torch.Tensor]] = []  # every common stream's words, by label
        self.opened: list[tuple[str, torch.Tensor]] = []  # every opening's result, by label

    # -- what the protocol code calls -------------------------------------------------------------
    def note_draw(self, label: str, values) -> None:
        """Nothing: as the real context when no audit records (MpcContext.note_draw)."""

    def _open(self, flat: torch.Tensor, *, label: str, reason: str, xor: bool, kind: str, checked: bool = False,
              wide: bool = False) -> torch.Tensor:
        received = self._send(flat, label)
        if not wide:
            total = torch.zeros_like(flat)
            for words in received.values():
                total = total ^ words if xor else total + words
            self.opened.append((label, total.clone()))
            return total
        total_wide = RING.zeros((flat.shape[0],))
        for words in received.values():
            total_wide = RING.add(total_wide, Wide(words[:, 0].clone(), words[:, 1].clone()))
        return torch.stack([total_wide.lo, total_wide.hi], 1)

    def members_exchange(self, vector: torch.Tensor, *, label: str, kind: str, reason: str) -> dict[int, torch.Tensor]:
        return self._send(vector, label)

    def exchange_public(self, value: Any, *, label: str = "public metadata") -> list[Any]:
        got = self.sim.exchange(self.rank, {j: value for j in self.members}, label)
        return [got[j] for j in self.members]

    def common_stream(self, *, label: str, domain: bytes):
        self.streams += 1
        seed = _seed(self.sim.seed, "coin", label, domain.hex(), self.streams)
        return _Stream(torch.Generator().manual_seed(seed), lambda words: self.drawn.append((label, words.clone())))

    def encode(self, values: torch.Tensor, *, field: str, precision: int | None = None) -> torch.Tensor:
        bits = self.config.precision_bits if precision is None else precision
        return torch.round(values.to(torch.float64) * float(1 << bits)).to(torch.int64)

    def max_abs_at(self, precision: int) -> float:
        return float(2 ** (64 - 2 - precision)) / self.parties

    # -- the hook ---------------------------------------------------------------------------------
    def _send(self, words: torch.Tensor, label: str) -> dict[int, torch.Tensor]:
        """Send ``words`` to every party (this one's own copy included); return what each sent this one."""
        deviation = self.sim.deviation
        if deviation is not None and deviation.cheater == self.rank:
            words = deviation.follow(self, words, label)
        messages = {j: words for j in self.members}
        if deviation is not None and deviation.cheater == self.rank and deviation.kind != "material":
            if self.sends == deviation.event:
                flat = words.reshape(-1)
                altered = deviation.alter(flat, self.history).reshape(words.shape)
                deviation.applied, deviation.label = True, label
                deviation.changed = not torch.equal(altered, words)
                if deviation.kind == "equivocate":
                    messages[deviation.to] = altered
                else:
                    messages = {j: altered for j in self.members}
                    deviation.delta = (altered - words).reshape(-1)
            self.history.append(words.reshape(-1).clone())
        self.sends += 1
        self.sim.labels.setdefault(self.rank, []).append(label)
        return self.sim.exchange(self.rank, messages, label)


class _Stream:
    def __init__(self, generator: torch.Generator, note: Callable[[torch.Tensor], None]):
        self.generator, self.note = generator, note

    def words(self, n: int) -> torch.Tensor:
        words = torch.randint(-(1 << 63), (1 << 63) - 1, (n,), generator=self.generator, dtype=torch.int64)
        self.note(words)
        return words


def _refuse(what: str) -> None:
    raise AssertionError(f"the simulated run reached {what}, which security = 'malicious' does not cover")


def _seed(*parts: Any) -> int:
    return int.from_bytes(hashlib.sha256(repr(parts).encode()).digest()[:7], "big")


class PeerStopped(Exception):
    """Another simulated party stopped (raised or finished) while this one waited for its message."""


class SimParties:
    """m simulated parties (ranks 0..m−1) and their dealer; :meth:`run` runs a job on every party at once."""

    def __init__(self, m: int, seed: int, deviation: Deviation | None = None):
        self.m, self.seed, self.deviation = m, seed, deviation
        self.turn = threading.Condition()
        self.stopped = [False] * m
        self.box: dict[tuple[int, int, int], Any] = {}
        self.rounds = [0] * m
        self.labels: dict[int, list[str]] = {}
        self.fetch_labels: dict[int, list[str]] = {}
        self.contexts: dict[int, SimContext] = {}
        self.dealer = types.SimpleNamespace(
            _get_generators=lambda: self._dealer_generators)
        self._dealer_generators = [torch.Generator().manual_seed(_seed(seed, "party", j)) for j in range(m)]

    def exchange(self, rank: int, messages: dict[int, Any], label: str) -> dict[int, Any]:
        """Post this party's ``messages`` (receiver -> message), wait for every party's, take what was sent to it.
        Raises :class:`PeerStopped` if a party stopped before posting to this step."""
        with self.turn:
            step = self.rounds[rank]
            self.rounds[rank] += 1
            for j, message in messages.items():
                self.box[(step, rank, j)] = message
            self.turn.notify_all()
            while any(self.rounds[j] <= step for j in range(self.m)):
                if any(self.stopped[j] and self.rounds[j] <= step for j in range(self.m)):
                    raise PeerStopped(label)
                if not self.turn.wait(timeout=120):
                    raise PeerStopped(f"{label} (no message in 120 s)")
            return {j: self.box.pop((step, j, rank)) for j in range(self.m)}

    def run(self, job: Callable[[SimContext], Any]) -> list[tuple[str, Any]]:
        """Every party's outcome of ``job(ctx)``: ('output', value) or ('raised', the exception)."""
        outcomes: list[tuple[str, Any]] = [("none", None)] * self.m

        def party(rank: int) -> None:
            ctx = SimContext(self, rank)
            self.contexts[rank] = ctx
            _local.ctx = ctx
            try:
                outcomes[rank] = ("output", job(ctx))
            except BaseException as error:  # noqa: BLE001 - every outcome is the harness's verdict
                outcomes[rank] = ("raised", error)
            finally:
                with self.turn:  # a party that is done sends nothing more: whoever waits on it stops
                    self.stopped[rank] = True
                    self.turn.notify_all()

        threads_before = torch.get_num_threads()
        torch.set_num_threads(1)  # m threads of small tensors: intra-op threads would only contend
        with _patched_dealer(self):
            threads = [threading.Thread(target=party, args=(rank,)) for rank in range(self.m)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        torch.set_num_threads(threads_before)
        return outcomes


def _serve(cls, *args):
    """The provider's ``serve`` on the simulated party of this thread: the kind's own ``from_dealer`` (and, for
    party 0, the dealer's own ``serve``), then the cheater's 'material' deviation."""
    ctx: SimContext = _local.ctx
    share = cls.from_dealer(*args)
    deviation = ctx.sim.deviation
    if (deviation is not None and deviation.kind == "material" and deviation.cheater == ctx.rank
            and ctx.fetches == deviation.event):
        share = _other_material(share, deviation)
        deviation.applied, deviation.changed, deviation.label = True, True, cls.__name__
    ctx.fetches += 1
    ctx.sim.fetch_labels.setdefault(ctx.rank, []).append(cls.__name__)
    return share


def _dealt(sim: SimParties, cls, draw: Callable[[], Any], args: tuple, reply: Callable[[Any], Any] | None) -> Any:
    """A rotating request (:data:`mpcdp.adapter.auth_bits.ROTATING`) on the simulated party of this thread: every
    party picks the receiver as the real parties do (:class:`~mpcdp.adapter.dealer_link.Receivers`, in step);
    party 0's thread serves it, in request order as the real dealer does, with the dealer's generators rotated to
    the receiver's (the real dealer's ``_get_generators``), and hands the reply to the receiver; every other
    party draws its share."""
    ctx: SimContext = _local.ctx
    receivers = ctx.__dict__.setdefault("receivers", dealer_link.Receivers(range(sim.m)))
    receiver = receivers.next(math.prod(cls.reply_shape(*args)))
    key = ("dealt", ctx.__dict__.setdefault("dealt_requests", [0])[0], receiver)
    ctx.dealt_requests[0] += 1
    share = None
    if ctx.rank == 0:
        generators = sim._dealer_generators
        dealer = types.SimpleNamespace(**{**vars(sim.dealer), "_get_generators":
                                          lambda: generators[receiver:] + generators[:receiver]})
        share = cls.serve(dealer, *args)
        if receiver != 0:
            with sim.turn:
                sim.box[key] = share
                sim.turn.notify_all()
            share = None
    elif ctx.rank == receiver:
        with sim.turn:
            while key not in sim.box:
                if sim.stopped[0] or not sim.turn.wait(timeout=120):
                    raise PeerStopped(f"{cls.__name__} reply (party 0 stopped or sent nothing in 120 s)")
            share = sim.box.pop(key)
    if share is None:
        return draw()
    return share if reply is None else reply(share)


def _other_material(share: Any, deviation: Deviation) -> Any:
    """Other material than dealt: every Wide of ``share`` rolled by one element (another element's triple, mask,
    bit), or, for one element (and the MAC key share), another uniform word."""
    rng = torch.Generator().manual_seed(deviation.seed)

    def other(x: Any) -> Any:
        if isinstance(x, Wide):
            if x.lo.numel() > 1:
                return Wide(x.lo.roll(1, 0), x.hi.roll(1, 0))
            return Wide(x.lo ^ torch.randint(1, 1 << 62, x.lo.shape, generator=rng), x.hi)
        if isinstance(x, torch.Tensor):
            return x ^ torch.randint(1, 1 << 62, x.shape, generator=rng)
        if isinstance(x, tuple):
            return tuple(other(y) for y in x)
        if isinstance(x, list):
            return [other(y) for y in x]
        return x

    return other(share)


@contextlib.contextmanager
def _patched_dealer(sim: SimParties):
    """The adapter's process-wide hooks (provider, rank, world size, the dealer's generator, party 0's request)
    answered per simulated party, for the duration of one run."""
    provider = types.SimpleNamespace(serve=_serve)
    replacements = [
        (mac_material, "provider", lambda: provider), (auth_bits, "provider", lambda: provider),
        (mac_material, "rank", lambda: _local.ctx.rank), (auth_bits, "rank", lambda: _local.ctx.rank),
        (mac_material, "world_size", lambda: sim.m),
        (mac_material, "_dealer_generator", lambda: _local.ctx.generator),
        (auth_bits, "_dealer_generator", lambda: _local.ctx.generator),
        (square_masks, "provider", lambda: provider), (square_masks, "rank", lambda: _local.ctx.rank),
        (square_masks, "world_size", lambda: sim.m), (square_masks, "_dealer_generator", lambda: _local.ctx.generator),
        (Material, "request", classmethod(lambda cls, *args: cls.serve(sim.dealer, *args))),
        (Material, "dealt", classmethod(lambda cls, draw, *args, reply=None: _dealt(sim, cls, draw, args, reply))),
        # the MAC check's coin committed ahead: modelled as the honest coin too (its opening, mpcdp.mpc.coin's, is
        # not under test here; its commitments still travel in the σ message, where a deviation changes nothing)
        (coin, "open_ahead", lambda ctx, ahead: ctx.common_stream(label=ahead.label, domain=ahead.domain)),
        # no keyed stream of an earlier test in this process answers for the simulation's torch generators
        # (keyed streams are looked up by id(), which a new generator can reuse)
        (keyed, "_KEYED", {}),
    ]
    saved = [(owner, name, owner.__dict__[name]) for owner, name, _ in replacements]
    for owner, name, value in replacements:
        setattr(owner, name, value)
    try:
        yield
    finally:
        for owner, name, value in saved:
            setattr(owner, name, value)


def released_words(ctx: SimContext, x: authenticated.AuthShared) -> torch.Tensor:
    """Helper for jobs: open and MAC-check ``x``, returning its int64 words."""
    words = authenticated.open_values(ctx, x, label="job", reason="test")
    authenticated.mac_check(ctx, label="job")
    return words


# -- jobs: what the simulated parties run ---------------------------------------------------------------

PRECISION = 4
"""The release grid of the jobs: 2^-4."""


def local_vector(rank: int, d: int, seed: int) -> torch.Tensor:
    """Party ``rank``'s term of a job: d values on the release grid, L2 norm at most 1."""
    g = torch.Generator().manual_seed(_seed(seed, "local", rank))
    values = torch.rand(d, generator=g, dtype=torch.float64) * 2 - 1
    values = values / max(1.0, float(values.norm()))
    return torch.round(values * (1 << PRECISION)) / (1 << PRECISION)


def sum_job(d: int, seed: int) -> Callable[[SimContext], Any]:
    """The authenticated secure sum released (:func:`~mpcdp.mpc.release.noisy_release`, no noise, no bound)."""
    from mpcdp.mpc.release import noisy_release

    def job(ctx: SimContext) -> torch.Tensor:
        ctx.config.precision_bits = PRECISION
        return noisy_release(ctx, local_vector(ctx.rank, d, seed), None, shape=(d,), label="sum")

    return job


def full_job(d: int, seed: int, sigma: float = 16.0, sampler: str = "fewer-bytes") -> Callable[[SimContext], Any]:
    """Every stage: d samples of the authenticated sampler (the ``sampler`` plan: dg-auth/9, or dg-auth/10 for
    "fewer-rounds"; σ in grid units), every party's term checked against the L2 bound 1 (bounded inputs), summed,
    the noise added, released. Returns (the release, this party's noise share's value words) so a test can
    rebuild the noise."""
    from mpcdp.mpc.release import noisy_release
    from mpcdp.noise import discrete_gaussian as dg
    from mpcdp.noise.auth_gaussian import sample_authenticated

    plan = dg.plan_for(sigma)

    def job(ctx: SimContext) -> tuple[torch.Tensor, torch.Tensor]:
        ctx.config.malicious_sampler = sampler
        noise = sample_authenticated(ctx, d, plan)
        noise = dataclasses.replace(noise, precision_bits=PRECISION)
        out = noisy_release(ctx, local_vector(ctx.rank, d, seed), noise, shape=(d,), label="release", bound=1.0)
        return out, noise.value.lo.clone()

    return job


def bounded_job(d: int, seed: int) -> Callable[[SimContext], Any]:
    """The release with bounded inputs (every party's term checked against the L2 bound 1), no noise."""
    from mpcdp.mpc.release import noisy_release

    def job(ctx: SimContext) -> torch.Tensor:
        ctx.config.precision_bits = PRECISION
        return noisy_release(ctx, local_vector(ctx.rank, d, seed), None, shape=(d,), label="bounded", bound=1.0)

    return job


def plaintext_sum(m: int, d: int, seed: int) -> torch.Tensor:
    """What the sum and bounded jobs must release: Σ_j local_j, exactly (every term on the grid)."""
    return sum(local_vector(rank, d, seed) for rank in range(m))


# -- the verdict -----------------------------------------------------------------------------------------

def events(m: int, job: Callable[[SimContext], Any], seed: int) -> tuple[Any, list[str], list[str]]:
    """An honest run of ``job``: (party 0's output, the send labels, the material kinds fetched), the same for every
    party (every party runs the same steps)."""
    sim = SimParties(m, seed)
    outcomes = sim.run(job)
    for what, value in outcomes:
        if what != "output":
            raise AssertionError(f"the honest run did not finish: {value!r}")
    return outcomes[0][1], sim.labels[0], sim.fetch_labels[0]


def random_deviation(rng: random.Random, m: int, sends: int, fetches: int, kind: str | None = None) -> Deviation:
    """A deviation of a random party, of a random kind (or ``kind``), at a random send or fetch."""
    kind = kind or rng.choice(KINDS)
    cheater = rng.randrange(m)
    event = rng.randrange(fetches if kind == "material" else sends)
    to = rng.choice([j for j in range(m) if j != cheater]) if kind == "equivocate" else None
    return Deviation(cheater=cheater, kind=kind, event=event, seed=rng.getrandbits(32), to=to)


SUBSTITUTION = "(masked inputs)"
"""The label of a party's masked input: altered alike to every party it is an input substitution, which no MPC
can prevent (the release then adds what the cheater substituted, unless a bound check or the validation flag
refuses it)."""


def _released(output: Any) -> torch.Tensor:
    return output[0] if isinstance(output, tuple) else output


def verdict(outcomes: list[tuple[str, Any]], honest: Any, deviation: Deviation) -> list[str]:
    """Each honest party's outcome, one of: 'same' (released what the honest run released), 'mac' (stopped on
    a failed MAC check), 'peer' (stopped as another party stopped first), and for an input substitution only
    'substituted' (released the honest release plus the substituted amount), 'bound' (stopped naming the
    cheater's contribution as outside its bound), 'flag' (stopped: the validation flags say a problem nobody
    named). Raises AssertionError for anything else: a different release, another error, an honest party named."""
    from mpcdp.errors import MacCheckFailed
    from mpcdp.mpc.bounded import OutOfBound

    substitution = deviation.label.endswith(SUBSTITUTION) and deviation.kind != "equivocate"
    out = []
    for rank, (what, value) in enumerate(outcomes):
        if rank == deviation.cheater:
            continue
        if what == "output":
            if torch.equal(_released(value), _released(honest)):
                out.append("same")
            elif substitution and _substituted(value, honest, deviation):
                out.append("substituted")
            else:
                raise AssertionError(f"party {rank} released {value} (honest {honest}) after {deviation}")
        elif isinstance(value, MacCheckFailed):
            if value.party not in (None, deviation.cheater):
                raise AssertionError(f"party {rank} named honest party {value.party} after {deviation}: {value}")
            out.append("mac")
        elif isinstance(value, PeerStopped):
            out.append("peer")
        elif substitution and isinstance(value, OutOfBound) and value.party == deviation.cheater:
            out.append("bound")
        elif substitution and "validation flag" in str(value):
            out.append("flag")
        else:
            raise AssertionError(f"party {rank} stopped with {value!r} after {deviation}")
    if out.count("peer") == len(out):
        raise AssertionError(f"no honest party stopped by itself after {deviation}")
    return out


def _substituted(value: Any, honest: Any, deviation: Deviation) -> bool:
    """Whether ``value`` is the honest release plus the cheater's alteration of its masked input (first the
    release's coordinates, in grid units)."""
    released, expected = _released(value), _released(honest)
    if deviation.delta is None:
        return False
    d = expected.numel()
    words = torch.round(expected * (1 << PRECISION)).to(torch.int64) + deviation.delta[:d]
    return torch.equal(released, words.to(torch.float64) / (1 << PRECISION))


def trial(m: int, job: Callable[[SimContext], Any], seed: int, deviation: Deviation, honest: Any) -> list[str]:
    """Run ``job`` with ``deviation``; the verdict per honest party, or ['no effect'] where the deviation
    changed nothing (then every party must release the honest output)."""
    sim = SimParties(m, seed, deviation)
    outcomes = sim.run(job)
    if not deviation.changed:
        if any(what != "output" or not torch.equal(_released(v), _released(honest)) for what, v in outcomes):
            raise AssertionError(f"an unchanged message changed the run: {deviation}, {outcomes}")
        return ["no effect"]
    return verdict(outcomes, honest, deviation)


# -- the check's soundness at a reduced s: a vectorised plaintext model -----------------------------------

MODEL_KINDS = ("flip", "offset", "replay", "reorder", "material")
"""The kinds :func:`model_check` models (an 'equivocate' is the view digests' to catch, not the MACs')."""


def model_check(s: int, m: int, kind: str, trials: int, seed: int, n: int = 4) -> tuple[torch.Tensor, torch.Tensor]:
    """``trials`` independent batched MAC checks of n opened values among m parties in Z_2^(64+s), simulated in one
    process over the parties' shares with the parties' own σ function (:func:`~mpcdp.mpc.authenticated.sigma_terms`,
    the key shares α_i uniform in [0, 2^s) as dealt). Party 1 deviates by ``kind`` before the opening: alters
    one of its value shares (a bit flipped, an offset, a word replayed from another share), permutes its value
    shares, or uses another element's material (value and MAC shares rolled by one); then, after the coin χ, it
    adds to its σ share the best known correction, g·Σ_j χ_j·e_j − Σ_j χ_j·f_j for its errors e (value) and f (MAC)
    and a guess g = α_1 + u of the key (u uniform in [0, 2^s)). Returns (passed, changed): whether each check
    passed, and whether the deviation changed an opened value mod 2^64 (what the release would show)."""
    from mpcdp.adapter.limbs import Ring
    from mpcdp.mpc.authenticated import sigma_terms

    ring, g = Ring(s), torch.Generator().manual_seed(seed)

    def uniform(*shape: int, bits: int | None = None) -> torch.Tensor:
        words = torch.randint(-(1 << 63), (1 << 63) - 1, shape, generator=g, dtype=torch.int64)
        return words if bits is None else words & ((1 << bits) - 1)

    def element() -> Wide:
        return ring.reduce(uniform(trials, n), uniform(trials, n))

    alphas = [uniform(trials, 1, bits=s) for _ in range(m)]
    alpha = Wide(sum(alphas), torch.zeros(trials, 1, dtype=torch.int64))  # < m·2^s: no carry into hi
    value = element()
    shares = [element() for _ in range(m - 1)]
    rest = shares[0]
    for other in shares[1:]:
        rest = ring.add(rest, other)
    shares = [ring.sub(value, rest)] + shares
    macs = [element() for _ in range(m - 1)]
    rest = macs[0]
    for other in macs[1:]:
        rest = ring.add(rest, other)
    macs = [ring.sub(ring.mul(Wide(alpha.lo.expand(trials, n), alpha.hi.expand(trials, n)), value), rest)] + macs
    own, own_mac = shares[1], macs[1]
    rows = torch.arange(trials)
    at = torch.randint(0, n, (trials,), generator=g)
    new, new_mac = Wide(own.lo.clone(), own.hi.clone()), Wide(own_mac.lo.clone(), own_mac.hi.clone())
    if kind == "flip":
        bit = torch.randint(0, 64 + s, (trials,), generator=g)
        low = bit < 64
        new.lo[rows, at] ^= torch.where(low, torch.ones_like(bit) << bit.clamp(max=63), torch.zeros_like(bit))
        new.hi[rows, at] ^= torch.where(low, torch.zeros_like(bit), torch.ones_like(bit) << (bit - 64).clamp(min=0))
    elif kind == "offset":
        offset = ring.reduce(uniform(trials), uniform(trials))
        moved = ring.add(Wide(new.lo[rows, at], new.hi[rows, at]), offset)
        new.lo[rows, at], new.hi[rows, at] = moved.lo, moved.hi
    elif kind == "replay":
        source = torch.randint(0, n, (trials,), generator=g)
        new.lo[rows, at], new.hi[rows, at] = own.lo[rows, source], own.hi[rows, source]
    elif kind == "reorder":
        order = torch.argsort(torch.rand(trials, n, generator=g), dim=1)
        new = Wide(own.lo.gather(1, order), own.hi.gather(1, order))
    elif kind == "material":
        new = Wide(own.lo.roll(1, 1), own.hi.roll(1, 1))
        new_mac = Wide(own_mac.lo.roll(1, 1), own_mac.hi.roll(1, 1))
    else:
        raise ValueError(f"`kind` must be one of {MODEL_KINDS}. Found {kind!r}.")
    e, f = ring.sub(new, own), ring.sub(new_mac, own_mac)
    shares[1], macs[1] = new, new_mac
    opened = shares[0]
    for other in shares[1:]:
        opened = ring.add(opened, other)
    chi = uniform(trials, n, bits=s)
    sigmas = [sigma_terms(ring, alphas[i], chi, opened, macs[i]) for i in range(m)]
    guess = alphas[1] + uniform(trials, 1, bits=s)
    correction = ring.sub(ring.scale(guess, ring.scale(chi, e)), ring.scale(chi, f))
    sigmas[1] = ring.add(sigmas[1], correction)
    total = sigmas[0]
    for other in sigmas[1:]:
        total = ring.add(total, other)
    total = ring.sum0(Wide(total.lo.T, total.hi.T))
    passed = (total.lo == 0) & (total.hi == 0)
    return passed, (e.lo != 0).any(1)


def bit_model_check(rows: int, s: int, trials: int, seed: int, n: int = 8, m: int = 3) -> tuple[torch.Tensor, torch.Tensor]:
    """The check's soundness at a reduced λ = ``rows`` and s (MACs mod 2^(1+s)), vectorised over ``trials``
    independent checks of n opened bits among m parties, with :mod:`mpcdp.mpc.bit_authenticated`'s formulas for
    the combinations and σ (vectorised over the checks). Party 1 flips the bit it sends for one random opened bit (or a random nonempty set of them), then,
    after the coin, adds to each y_t share the parity fix (bit 0 of Σ_j b_tj·Δ_j) and to its σ share its best
    correction with a guess of the key. Returns (passed, changed): whether each check passed and whether an
    opened bit was wrong."""
    g = torch.Generator().manual_seed(seed)
    mask = (1 << (1 + s)) - 1 if s < 63 else -1

    def uniform(*shape: int) -> torch.Tensor:
        return torch.randint(-(1 << 63), (1 << 63) - 1, shape, generator=g, dtype=torch.int64)

    alphas = [uniform(trials, 1) & ((1 << s) - 1) for _ in range(m)]
    alpha = sum(alphas)
    x = uniform(trials, n)
    shares = [uniform(trials, n) for _ in range(m - 1)]
    shares = [x - sum(shares)] + shares
    macs = [uniform(trials, n) for _ in range(m - 1)]
    macs = [alpha * x - sum(macs)] + macs
    flips = (torch.rand(trials, n, generator=g) < 0.5).to(torch.int64)
    flips[torch.arange(trials), torch.randint(0, n, (trials,), generator=g)] = 1
    opened = (x & 1) ^ flips  # what party 1's flipped sends make everyone see
    matrix = (torch.rand(trials, rows, n, generator=g) < 0.5).to(torch.int64)
    r = uniform(trials, rows)
    r_shares = [uniform(trials, rows) for _ in range(m - 1)]
    r_shares = [r - sum(r_shares)] + r_shares
    r_macs = [uniform(trials, rows) for _ in range(m - 1)]
    r_macs = [alpha * r - sum(r_macs)] + r_macs
    y_shares, y_macs = [], []
    for i in range(m):
        own = shares[i] - opened if i == 0 else shares[i]
        y_shares.append((matrix * own.unsqueeze(1)).sum(-1) + 2 * r_shares[i])
        y_macs.append((matrix * (macs[i] - alphas[i] * opened).unsqueeze(1)).sum(-1) + 2 * r_macs[i])
    parity = (matrix * flips.unsqueeze(1)).sum(-1) & 1  # what each row's bit 0 carries: known to party 1
    y_shares[1] = y_shares[1] + parity  # party 1's fix of bit 0 (an odd error on y_t)
    y = sum(y_shares)
    chi = uniform(trials, rows)
    sigmas = [(chi * (y_macs[i] - alphas[i] * y)).sum(-1) for i in range(m)]
    guess = alphas[1] + (uniform(trials, 1) & ((1 << s) - 1))
    sigmas[1] = sigmas[1] + (guess.reshape(-1) * (chi * parity).sum(-1))
    total = torch.stack(sigmas).sum(0)
    passed = ((y & 1) == 0).all(-1) & (((total & mask) if s < 63 else total) == 0)
    return passed, flips.any(-1)
