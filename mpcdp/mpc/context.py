"""The per-party protocol context: who we are, what we agreed on, and the one door to plaintext.

An :class:`MpcContext` exists on every data party of a run. Creating it (:meth:`MpcContext.join`) runs
the start-of-run handshake — every party sends the SHA-256 fingerprint of its configuration and job
description, and the descriptions themselves, to every other party (1 round, public metadata only) —
and refuses to go on if they differ, naming the field and the parties; then it establishes the pairwise
mask seeds (:mod:`mpcdp.mpc.masks`) and the direct links between the parties (:mod:`mpcdp.transport.mesh`). No
share of any private value has moved at that point.

:meth:`MpcContext.reveal` is the only function that turns a :class:`~mpcdp.mpc.shared.Shared` into
plaintext. Every value that becomes plaintext to any party — an opening of shares, a protocol's masked
value, a comparison result, a value sent in the clear, public metadata exchanged — passes through one choke
point, :meth:`MpcContext._disclose`, which records it as an :class:`Opening` (label, elements, recipients,
kind, reason, bytes, rounds) in :attr:`MpcContext.openings`. The kinds are closed (:data:`OPENING_KINDS`):
the opening audit (``tests/test_audit.py``, mpcdp/README.md "Threat model") asserts that a DDP-SRM step discloses
masked protocol values, the sampler's accept bits and the released noisy v_p, and nothing else. Openings are
counted in :mod:`mpcdp.transport.costs` and their bytes on the wire measured. ``ctx.rounds`` counts communication
rounds (phases of messages sent together; an opening is 1 or 2, see
:meth:`~mpcdp.transport.mesh.Mesh.open_shares`).

A replicated multiplication's resharing (:meth:`MpcContext.reshare`, honest-majority among parties 0–2 only)
passes through it too, as what it is: one re-randomised share of each value, to one member (kind ``share``).

Outside the choke point: the pairwise mask seeds (:mod:`mpcdp.mpc.masks`; secrets sent to one peer each,
never opened) and the dealer's correlated randomness (each party receives only its own share).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import time
from typing import Any, Callable

import numpy as np
import torch

from mpcdp.config import MpcConfig, fingerprint
from mpcdp.errors import ConfigMismatchError, InputError, ProtocolViolation
from mpcdp.transport import costs, public
from mpcdp.mpc.masks import PairwiseMasks
from mpcdp.mpc.shared import Shared, share_of
from mpcdp.randomness import KeyedStream, secure_key
from mpcdp.transport.wire import WireMeter
from mpcdp.transport.mesh import Mesh

RING_BITS = 64


# What may become plaintext, and why it reveals nothing private (the closed list the opening audit checks).
OPENING_KINDS = {
    "masked": "a protocol value masked by dealer randomness no data party knows (Beaver ε/δ, B2A words, "
              "truncation and comparison masks): uniformly random whatever the secrets are",
    "comparison": "the output bit of a secure comparison that the protocol makes public by design (the "
                  "sampler's accept bits: whether a candidate is kept, independent of the kept value)",
    "share": "one member's share of protocol values, sent to one other member for a replicated multiplication "
             "(honest-majority, among parties 0-2 only): re-randomised by a sharing of zero from a key its "
             "recipient lacks, so uniformly random to it; the recipient then holds two of three shares, never "
             "an opened value",
    "coin": "a key the noise committee draws together: the XOR of every member's fresh 256 bits from the OS "
            "CSPRNG, each committed to (SHA-256 with a nonce) before any is opened, exchanged among the members "
            "only: uniform if one member draws honestly, and keys only randomness that is XORed with dealt "
            "randomness no member knows",
    "release": "a differentially private release (the noisy aggregate v_p) or a job's declared output",
    "public": "public by design: configuration fingerprints, agreed shapes and validation flags, or a "
              "DP-noised model handed from node to node",
}


@dataclasses.dataclass(frozen=True)
class Opening:
    """One disclosure: what became plaintext, to whom, of which kind (:data:`OPENING_KINDS`) and why.

    ``values`` holds the plaintext itself only when the context keeps it (``keep_values``; for audits).
    """

    label: str
    elements: int
    recipients: tuple[int, ...]
    reason: str
    bytes_sent: int | None = None
    rounds: int = 1
    kind: str = "release"
    values: Any = dataclasses.field(default=None, repr=False, compare=False)  # a tensor, or public JSON values


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> dict[str, Any]:
    if isinstance(value, dict):
        for key, inner in value.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), inner, out)
    else:
        out[prefix] = value
    return out


def _gather_public(mesh: Mesh, rank: int, value: Any, *, label: str) -> list[Any]:
    """Every party's public ``value`` in rank order, as framed JSON over the mesh (never pickle)."""
    received = mesh.exchange_json(public.encode(value), label=label)
    everyone = [public.decode(received[j], peer=j, label=label) if j != rank else None
                for j in range(mesh.parties)]
    everyone[rank] = public.decode(public.encode(value), peer=rank, label=label)  # the same form as the others'
    return everyone


_FIELDS_SHOWN = 8  # a mismatch names this many fields, the first ones as described (the rest are counted)


def _as_described(handshake: Any) -> Any:
    """A party's handshake as :func:`describe_mismatch` names it: the job's fields by their own names (the
    resolved plan, e.g. `epsilon`), then the MPC configuration's as ``mpc.<field>``."""
    if not isinstance(handshake, dict):
        return {"handshake": handshake}
    description = handshake.get("description", handshake)
    if isinstance(description, dict) and isinstance(description.get("job"), dict):
        return {**description["job"], "mpc": description.get("config")}
    return description


def describe_mismatch(descriptions: list[dict[str, Any]]) -> tuple[str, int]:
    """Human-readable list of the fields on which parties differ (in the order the descriptions list them:
    a description that puts its inputs before what is computed from them names the cause first), and the
    first party that differs."""
    flat = [_flatten("", d, {}) for d in descriptions]
    keys = list(dict.fromkeys(key for f in flat for key in f))
    lines, first = [], None
    for key in keys:
        values = [f.get(key, "<missing>") for f in flat]
        if any(v != values[0] for v in values):
            odd = [r for r, v in enumerate(values) if v != values[0]]
            first = odd[0] if first is None else min(first, odd[0])
            lines.append(f"`{key}`: " + ", ".join(f"party {r} = {v!r}" for r, v in enumerate(values)))
    if len(lines) > _FIELDS_SHOWN:
        lines = lines[:_FIELDS_SHOWN] + [f"and {len(lines) - _FIELDS_SHOWN} more fields"]
    return "; ".join(lines), (first if first is not None else 0)


class MpcContext:
    """This data party's view of a run. Build with :meth:`join`; every party calls methods in lockstep."""

    def __init__(self, *, rank: int, config: MpcConfig, job: dict[str, Any], masks: PairwiseMasks | None,
                 mesh: Mesh | None = None, on_step: Callable[[int, str], None] | None = None,
                 on_progress: Callable[[int, int], None] | None = None):
        self.rank = rank
        self.config = config
        self.job = job
        self.parties = config.parties
        self.openings: list[Opening] = []
        self.keep_values = False  # True: every Opening also keeps its plaintext (for the opening audit)
        self.draws: list[tuple[str, Any]] = []  # with keep_values: what this party drew privately (note_draw)
        self.rounds = 0
        self.wire = WireMeter()
        self.steps = 0
        self._masks = masks
        self._mesh = mesh
        self._on_step = on_step
        self._on_progress = on_progress
        self.members: tuple[int, ...] = tuple(range(self.parties))  # who takes part in openings now

    def progress(self, done: int, total: int) -> None:
        """Tell the launcher how far this party's job is (shown as a progress bar by the CLI)."""
        if self._on_progress is not None:
            self._on_progress(done, total)

    def note_step(self, label: str) -> None:
        """Note that this party enters a communication step (lets a launcher tell who stalled)."""
        self.steps += 1
        if self._on_step is not None:
            self._on_step(self.steps, label)

    # -- start of run ----------------------------------------------------------------------------
    @classmethod
    def join(cls, *, config: MpcConfig, job: dict[str, Any], mesh: Mesh,
             on_step: Callable[[int, str], None] | None = None,
             on_progress: Callable[[int, int], None] | None = None) -> "MpcContext":
        """Handshake with the other parties over ``mesh``, this party's links to them
        (:func:`mpcdp.adapter.start_party` makes it).

        ``on_step(n, label)`` is called whenever this party enters its n-th communication step.
        """
        rank, world = mesh.rank, mesh.parties
        if on_step is not None:
            on_step(0, "handshake")
        if world != config.parties:
            raise ConfigMismatchError(
                f"`parties` is {config.parties} in this party's configuration but the network has {world} "
                f"data parties", party=rank)
        description = json.loads(json.dumps({"config": config.to_dict(), "job": job}, default=repr))
        mine = {"fingerprint": fingerprint(description), "description": description}
        everyone = _gather_public(mesh, rank, mine, label="handshake")
        if any(not isinstance(other, dict) or other.get("fingerprint") != mine["fingerprint"] for other in everyone):
            detail, first = describe_mismatch([_as_described(other) for other in everyone])
            raise ConfigMismatchError(
                f"parties run different configurations (checked before any share was sent): {detail}",
                party=first)

        def over_mesh(outgoing: dict[int, torch.Tensor], incoming: dict[int, torch.Tensor]) -> None:
            mesh.exchange(outgoing, incoming, label="pair seeds")

        masks = PairwiseMasks.establish(rank, world, over_mesh)
        ctx = cls(rank=rank, config=config, job=job, masks=masks, mesh=mesh, on_step=on_step,
                  on_progress=on_progress)
        ctx._disclose("handshake: configuration fingerprint and description", 1, tuple(range(world)),
                      kind="public", reason="every party checks that all run the same configuration")
        return ctx

    def _disclose(self, label: str, elements: int, recipients: tuple[int, ...], *, kind: str, reason: str,
                  bytes_sent: int | None = None, rounds: int = 1, values: Any = None) -> None:
        """The choke point: record one value that became plaintext to ``recipients``."""
        if kind not in OPENING_KINDS:
            raise ValueError(f"`kind` must be one of {sorted(OPENING_KINDS)}. Found {kind!r}.")
        kept = None
        if self.keep_values and values is not None:
            kept = values.detach().clone() if torch.is_tensor(values) else values
        self.openings.append(Opening(label=label, elements=int(elements), recipients=tuple(recipients),
                                     reason=reason, bytes_sent=bytes_sent, rounds=rounds, kind=kind,
                                     values=kept))

    def note_draw(self, label: str, values: Any) -> None:
        """Record what this party drew or holds privately (its share of a candidate's fields, the committee's
        coin words, the shares an opening delivered to it), when the context keeps values: the rest of its
        view next to :attr:`openings`, for the view audit (:mod:`mpcdp.jobs.views`). Nothing is sent."""
        if self.keep_values:
            kept = {k: v.copy() if hasattr(v, "copy") else v for k, v in values.items()} \
                if isinstance(values, dict) else values.clone()
            self.draws.append((label, kept))

    @property
    def _links(self) -> Mesh:
        if self._mesh is None:
            raise RuntimeError("context has no links to the other parties; build it with MpcContext.join")
        return self._mesh

    def link_wire_bytes(self) -> int:
        """Bytes the kernel sent on this party's links to the others so far (TLS overhead included)."""
        return self._mesh.wire_bytes_sent() if self._mesh is not None else 0

    @property
    def links(self) -> str:
        """How this party's links are protected: ``TLSv1.3`` (every link) or ``plain TCP``."""
        return self._mesh.protection if self._mesh is not None else "none"

    def close(self, *, orderly: bool = True, drain_s: float = 0.0) -> None:
        """Close this party's links: the run is over (``orderly``), or it stops early (``drain_s``: Mesh.close)."""
        if self._mesh is not None:
            self._mesh.close(orderly=orderly, drain_s=drain_s)

    # -- public metadata --------------------------------------------------------------------------
    def exchange_public(self, value: Any, *, label: str = "public metadata") -> list[Any]:
        """Every party's ``value`` (public metadata: JSON types and int64/float64 tensors, see
        :mod:`mpcdp.transport.public`), in rank order. One round; tuples come back as lists."""
        self.note_step("exchange")
        self.rounds += 1
        costs.record_rounds(1)
        with self.wire:
            everyone = _gather_public(self._links, self.rank, value, label=label)
        self._disclose(label, 1, tuple(range(self.parties)), kind="public", reason="public by design",
                       values=everyone)
        return everyone

    def exchange_fixed(self, vector: torch.Tensor, *, label: str = "public metadata") -> torch.Tensor:
        """Every party's fixed-size int64 ``vector`` (public), stacked in rank order. One round, (m−1)
        messages of 8·len bytes per party."""
        self.note_step("exchange")
        with self.wire:
            stacked, rounds = self._links.exchange_int64(vector.to(torch.int64), label=label)
        self.rounds += rounds
        costs.record_rounds(rounds)
        self._disclose(label, vector.numel(), tuple(range(self.parties)), kind="public",
                       reason="public by design", rounds=rounds, values=stacked)
        return stacked

    def send_public(self, to: int, value: torch.Tensor, *, label: str) -> None:
        """Send a public float64 tensor to party ``to`` only (one message, one round; e.g. a DP-noised model
        handed from node to node). Recorded in :attr:`openings` as disclosed to ``to``."""
        if to == self.rank or not 0 <= to < self.parties:
            raise ValueError(f"`to` must be another party's rank (0..{self.parties - 1}, not {self.rank}). "
                             f"Found {to!r}.")
        self.note_step(f"send {label}")
        flat = value.detach().to(torch.float64).contiguous().reshape(-1)
        before, start = self._links.bytes_sent, time.perf_counter()
        self._links.exchange({to: flat}, {}, label=label)
        sent = self._links.bytes_sent - before
        self.rounds += 1
        costs.record_rounds(1)
        self.wire.add(sent, time.perf_counter() - start)
        self._disclose(label, flat.numel(), (to,), kind="public", reason="public by design", bytes_sent=sent,
                       values=flat)

    def receive_public(self, src: int, shape: tuple[int, ...], *, label: str) -> torch.Tensor:
        """Receive the float64 tensor of ``shape`` that party ``src`` sends with :meth:`send_public`."""
        if src == self.rank or not 0 <= src < self.parties:
            raise ValueError(f"`src` must be another party's rank (0..{self.parties - 1}, not {self.rank}). "
                             f"Found {src!r}.")
        self.note_step(f"receive {label}")
        into = torch.empty(int(torch.Size(shape).numel()), dtype=torch.float64)
        self._links.exchange({}, {src: into}, label=label)
        return into.reshape(shape)

    # -- fixed point ------------------------------------------------------------------------------
    @property
    def scale(self) -> int:
        return 1 << self.config.precision_bits

    @property
    def max_abs_input(self) -> float:
        """Largest |value| a party may input so that a sum over all parties cannot wrap the ring."""
        return self.max_abs_at(self.config.precision_bits)

    def max_abs_at(self, precision: int) -> float:
        """:attr:`max_abs_input` for values encoded with ``precision`` fractional bits."""
        return float(2 ** (RING_BITS - 2 - precision)) / self.parties

    def encode(self, values: torch.Tensor, *, field: str, precision: int | None = None) -> torch.Tensor:
        """Fixed-point encode (round to nearest, ties to even: |error| <= 2^-(bits+1) per element) with the
        run's precision, or with ``precision`` fractional bits (a release grid, :mod:`mpcdp.accounting.grid`)."""
        bits = self.config.precision_bits if precision is None else precision
        scaled = values.to(torch.float64) * float(1 << bits)
        big = values.abs().max().item() if values.numel() else 0.0
        if not math.isfinite(big) or big > self.max_abs_at(bits):
            raise InputError(f"`{field}` has entries that are not finite or beyond the fixed-point limit "
                             f"|value| <= {self.max_abs_at(bits):.3g} ({bits} fractional bits, "
                             f"{self.parties} parties)", party=self.rank)
        return torch.round(scaled).to(torch.int64)

    # -- sharing and opening ----------------------------------------------------------------------
    def masked_input(self, encoded: torch.Tensor, *, precision: int | None = None) -> Shared:
        """This party's share of a sharing in which it contributes ``encoded`` (no communication).

        Every party calls this together; the shared value is the sum of all parties' contributions.
        ``precision``: the fractional bits of ``encoded`` (default: the run's).
        """
        if self._masks is None:
            raise RuntimeError("context has no mask seeds; build it with MpcContext.join")
        bits = self.config.precision_bits if precision is None else precision
        return Shared(encoded + self._masks.zero_share(encoded.shape), bits)

    def rerandomised(self, shares: torch.Tensor) -> torch.Tensor:
        """``shares`` plus this party's share of a fresh sharing of zero (pairwise keys; no communication): the
        shared value is unchanged and every party's share becomes uniform."""
        if self._masks is None:
            raise RuntimeError("context has no mask seeds; build it with MpcContext.join")
        return shares + self._masks.zero_share(shares.shape)

    def input_from(self, src: int, value: torch.Tensor | None, shape: tuple[int, ...], *, field: str) -> Shared:
        """Share party ``src``'s private ``value`` (others pass None); ``shape`` is public. No communication."""
        if self.rank == src:
            if value is None or tuple(value.shape) != tuple(shape):
                raise InputError(f"`{field}` at its source party {src} must have shape {tuple(shape)}. "
                                 f"Found {None if value is None else tuple(value.shape)}.", party=src)
            encoded = self.encode(value, field=field)
        else:
            encoded = torch.zeros(shape, dtype=torch.int64)
        return self.masked_input(encoded)

    # -- the noise committee ------------------------------------------------------------------------
    def committee_members(self) -> tuple[int, ...]:
        """The parties that sample in-MPC noise: parties 0..c−1, c = the configuration's ``noise_committee``
        (all parties when m <= c)."""
        return tuple(range(min(self.parties, self.config.noise_committee)))

    @contextlib.contextmanager
    def committee(self, members: tuple[int, ...]):
        """Inside: openings (their star kings rotating, :meth:`.Mesh.open_shares`) and the material (:class:`mpcdp.
        adapter.CommitteeScope`) involve ``members`` only; every member enters together, no other party. Yields."""
        from mpcdp import adapter  # here, not above: importing this module does not import CrypTen
        if self.rank not in members:
            raise RuntimeError(f"party {self.rank} is not on the committee {members}")
        previous, self.members = self.members, tuple(members)
        scoped, self._links.star_turn = self.members != tuple(range(self.parties)), 0  # star kings rotate
        if scoped:
            adapter.committee_scope(list(self.members))
        try:
            yield
        finally:
            self.members, self._links.star_turn = previous, None
            if scoped:
                adapter.committee_scope(list(previous))

    def wait_for_committee(self, members: tuple[int, ...], *, label: str) -> dict[str, int]:
        """A party off the committee: wait, without a deadline, until the committee's first member says it is
        done, and return the public counts it sends (:meth:`committee_done`, same label): a JSON object of at
        most 16 non-negative integers, checked here."""
        self.note_step(f"wait {label}")
        raw = self._links.exchange_text({}, [members[0]], label=label, patient=True, limit=1024)[members[0]]
        try:
            counts = json.loads(raw)
        except ValueError:
            counts = None
        if not (isinstance(counts, dict) and len(counts) <= 16 and all(
                isinstance(k, str) and len(k) <= 32 and isinstance(v, int) and not isinstance(v, bool) and v >= 0
                for k, v in counts.items())):
            raise ProtocolViolation(f"party {members[0]} ended the noise committee with a message that is not "
                                    f"public counts", party=members[0])
        self._disclose(label, len(counts), (self.rank,), kind="public", reason="public by design", values=counts)
        return counts

    def committee_done(self, members: tuple[int, ...], counts: dict[str, int], *, label: str) -> None:
        """The committee's first member tells every other party that the committee is done, with the public
        ``counts`` (e.g. candidates drawn and accepted: functions of opened accept bits only)."""
        if self.rank == members[0]:
            others = [j for j in range(self.parties) if j not in members]
            payload = json.dumps({k: int(v) for k, v in counts.items()}).encode()
            self._links.exchange_text({j: payload for j in others}, [], label=label)
            self._disclose(label, len(counts), tuple(others), kind="public", reason="public by design",
                           values=counts)

    def _open(self, flat: torch.Tensor, *, label: str, reason: str, xor: bool, kind: str, checked: bool = False,
              wide: bool = False) -> torch.Tensor:
        if self.config.security == "malicious" and not checked:  # checked: mpcdp.mpc.authenticated's (opened_checked)
            self.config.refuse_uncovered(f"the opening {label!r}")
        self.note_step(f"open {label}")
        before, start = self._links.bytes_sent, time.perf_counter()
        opened, rounds = self._links.open_shares(flat, label=label, xor=xor, members=self.members, wide=wide)
        sent = self._links.bytes_sent - before
        self.rounds += rounds
        costs.record("openings", 1)
        costs.record("opened_elements", flat.numel(), calls=0)
        costs.record_rounds(rounds)
        self.wire.add(sent, time.perf_counter() - start)
        self._disclose(label, flat.numel(), self.members, kind=kind, reason=reason,
                       bytes_sent=sent, rounds=rounds, values=opened)
        self.note_draw(f"received: {label}", self._links.received_shares)  # by sender: (offset, share)
        return opened

    def common_stream(self, *, label: str, domain: bytes) -> KeyedStream:
        """A ChaCha20 stream that every current member computes and nobody else, keyed by a coin every member
        committed to before any part was opened (:func:`mpcdp.mpc.coin.committed_stream`, opening kind
        ``coin``). Only for randomness that may be public to every member: :func:`mpcdp.mpc.bernoulli.coin_uniform`
        XORs it with dealt randomness no member knows."""
        from mpcdp.mpc.coin import committed_stream

        return committed_stream(self, label=label, domain=domain)

    def members_exchange(self, vector: torch.Tensor, *, label: str, kind: str, reason: str) -> dict[int, torch.Tensor]:
        """Every current member's fixed-size int64 ``vector`` (rank -> vector, this party's included), sent
        all-to-all among the members in one round; recorded in :attr:`openings` as ``kind``."""
        self.note_step(f"exchange {label}")
        others = [j for j in self.members if j != self.rank]
        received = {j: torch.empty_like(vector) for j in others}
        before, start = self._links.bytes_sent, time.perf_counter()
        self._links.exchange({j: vector for j in others}, received, label=label)
        sent = self._links.bytes_sent - before
        self.rounds += 1
        costs.record_rounds(1)
        self.wire.add(sent, time.perf_counter() - start)
        self._disclose(label, vector.numel(), self.members, kind=kind, bytes_sent=sent, reason=reason,
                       values=torch.stack([received[j] for j in others]) if others else None)
        return {self.rank: vector, **received}

    def reshare(self, share: torch.Tensor, *, to: int, source: int, label: str) -> torch.Tensor:
        """Send this party's int64 ``share`` of protocol values to member ``to`` and receive member ``source``'s
        share of the same values, same shape (one round; one framed message each way, its size fixed in
        advance and checked against the frame). For a replicated multiplication among three members
        (:class:`mpcdp.mpc.ring.ReplicatedProducts`), whose shares are re-randomised before they are sent.

        Recorded in :attr:`openings` as what this party received (kind ``share``: one share of each value, from
        ``source``), and counted as ``reshares`` / ``reshared_elements`` in :mod:`mpcdp.transport.costs`.
        """
        others = [j for j in self.members if j != self.rank]
        if to not in others or source not in others:
            raise ValueError(f"`to` and `source` of a resharing must be other members {others}. "
                             f"Found to={to!r}, source={source!r}.")
        self.note_step(f"reshare {label}")
        flat = share.reshape(-1).to(torch.int64).contiguous()
        received = torch.empty_like(flat)
        before, start = self._links.bytes_sent, time.perf_counter()
        self._links.exchange({to: flat}, {source: received}, label=label)
        sent = self._links.bytes_sent - before
        self.rounds += 1
        costs.record("reshares", 1)
        costs.record("reshared_elements", flat.numel(), calls=0)
        costs.record_rounds(1)
        self.wire.add(sent, time.perf_counter() - start)
        self._disclose(label, flat.numel(), (self.rank,), kind="share", bytes_sent=sent, values=received,
                       reason=f"party {source}'s share, masked by a sharing of zero: {OPENING_KINDS['share']}")
        return received.reshape(share.shape)

    def open_masked(self, tensors: list[torch.Tensor], *, label: str, xor: bool = False,
                    kind: str = "masked") -> list[torch.Tensor]:
        """Open protocol-internal values (sum, or XOR for binary shares) in one round.

        For mpcdp's protocols only: every opened value must be uniformly masked by dealer randomness no
        party knows (Beaver's ε/δ, B2A words, comparison and truncation masks; ``kind="masked"``) or be a
        comparison result public by design (``kind="comparison"``, e.g. the sampler's accept bits).
        """
        if kind not in ("masked", "comparison"):
            raise ValueError(f"`kind` of a protocol opening must be 'masked' or 'comparison'. Found {kind!r}.")
        flat = tensors[0].reshape(-1) if len(tensors) == 1 else torch.cat([t.reshape(-1) for t in tensors])
        opened = self._open(flat, label=label, reason=OPENING_KINDS[kind].split(":")[0], xor=xor, kind=kind)
        parts = torch.split(opened, [t.numel() for t in tensors])
        return [part.reshape(t.shape) for part, t in zip(parts, tensors)]

    def reveal(self, x: Shared, *, label: str, reason: str) -> torch.Tensor:
        """Open ``x`` to every data party (float64). One opening; recorded in :attr:`openings`."""
        if not isinstance(x, Shared):
            raise TypeError(f"`x` must be a Shared value. Found {type(x).__name__}.")
        raw = self._open(share_of(x), label=label, reason=reason, xor=False, kind="release")
        return raw.to(torch.float64) / (1 << x.precision_bits)
