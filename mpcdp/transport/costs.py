"""What a secure computation costs: operation counts, bytes, rounds and time, counted where they happen.

Counting is always on and costs a dictionary update per protocol call. Two choke points feed it:

* **correlated randomness** — every multiplication, square, AND, truncation, B2A conversion and comparison
  needs dealer material, and every request for it (mpcdp's integer protocols and CrypTen's own provider
  alike) passes through :mod:`mpcdp.adapter`, which calls :func:`record` with the kind
  and the number of elements;
* **openings** — every value opened to the parties passes through ``MpcContext._open`` and the transport
  in the adapter, which records the opening, its elements and its communication phases.

A *round* is a communication phase: a set of messages that can all be sent at once because none depends
on another. An opening through party 0 is 2 phases (shares in, sum out); a direct exchange between 2
parties is 1. A round costs one one-way network latency, whatever the number of messages in it.

Bytes are what the kernel's TCP stack carried for this process (``TCP_INFO`` of every TCP socket; see
:mod:`mpcdp.transport.wire`): TCP payload, without TCP/IP headers — on mpcdp's links the shares in their frames
(CrypTen's messages included). Traffic with the dealer is kept apart: party 0 meters its
requests; the dealer meters what it sends per request. Under the ``honest-majority`` provider there is no
dealer: the generators' material messages are data-party traffic, metered per kind the same way
(:func:`record_material`).

Kinds (elements are counted, not calls):
  mul          Beaver products x·y of two different shared values (ring elements)
  square       Beaver products x·x
  and_words    ANDs of XOR-shared 64-bit words (bit-ANDs = 64 × and_words)
  trunc        probabilistic-free truncations (mpcdp) or CrypTen wraps-based truncations
  trunc_redo   elements of a truncation redone because their mask was unsafe (public, rare)
  b2a_bits     bits converted from XOR to additive sharing
  comparison   comparisons (x >= 0) of shared values
  one_hot_words  dealt words of one-hot vectors (rotation pairs, chunk one-hots)
  table_words  dealt words of Bernoulli factor tables (the dealer's evaluations of factors for every window value)
  random_bits  private random bits a party contributes (sampler uniforms)
  openings     opening calls; opened_elements: ring elements or words opened
  reshares     resharings of a replicated multiplication (honest-majority among parties 0–2: each member sends
               its share to one other member, 1 round; ``MpcContext.reshare``); reshared_elements: the ring
               elements or words each member sends (it receives as many)
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import time
from typing import Iterable, Iterator

from mpcdp.transport import wire
from mpcdp.transport.hop_clock import HopClock
from mpcdp.transport.frames import HEADER_BYTES

KINDS = ("mul", "square", "and_words", "trunc", "trunc_redo", "b2a_bits", "bounded_masks", "comparison", "one_hot_words",
         "table_words", "random_bits", "openings", "opened_elements", "reshares", "reshared_elements")
WORD_BITS = 64


@dataclasses.dataclass(eq=False)  # sections are told apart by identity
class Ledger:
    """Counts, rounds and bytes of one section of a party's computation.

    Attributes:
        ops: elements per kind (see the module docstring).
        calls: protocol invocations per kind.
        rounds: communication phases between data parties.
        dealer_requests: requests party 0 sent to the dealer (0 on other parties).
        dealer_request_bytes: bytes party 0 wrote to the dealer.
        material_requests / material_bytes: per kind of correlated randomness (its class name in
            :mod:`mpcdp.adapter.material`): requests for it, and the bytes this process sent to get it
            (party 0's dealer requests; a generator's messages under ``honest-majority``).
        material_rounds: communication phases spent on material (2 per dealer request on party 0; 1 per
            dealer-free request that converts bits, on every party).
        bytes_sent / bytes_received: TCP payload bytes of this process over the section (dealer traffic
            included; see :meth:`party_bytes_sent`): what mpcdp's links moved (counted where they move it)
            plus the kernel's counts for every other TCP socket (the dealer's link, the rendezvous).
        dealer_sent / dealer_received: the kernel's counts for this party's link to the dealer alone (its
            requests; the dealer's replies to it, TLS records included).
        link_sent / link_received: the part moved on mpcdp's links; kernel_link_sent: the kernel's count of
            bytes written to those links (equal to link_sent; kept as the check).
        wall_s: wall time of the section.
        clock: the section's critical path in one-way delays as this process saw it (:mod:`.hop_clock`;
            ``hops`` in :meth:`to_dict`), the latency term of :class:`Link`'s estimate; emulated_clock: the
            same under the transport's injected delay, which holds each sender (``emulated_hops``).
    """

    ops: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    calls: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    rounds: int = 0
    dealer_requests: int = 0
    dealer_request_bytes: int = 0
    material_requests: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    material_bytes: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    material_rounds: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0
    dealer_sent: int = 0
    dealer_received: int = 0
    link_sent: int = 0
    link_received: int = 0
    kernel_link_sent: int = 0
    wall_s: float = 0.0
    interface: dict[str, int] | None = None
    clock: HopClock = dataclasses.field(default_factory=HopClock)
    emulated_clock: HopClock = dataclasses.field(default_factory=lambda: HopClock(blocking=True))

    def add(self, kind: str, elements: int, calls: int = 1) -> None:
        self.ops[kind] += int(elements)
        self.calls[kind] += int(calls)

    @property
    def clocks(self) -> tuple[HopClock, HopClock]:
        """Both replays of the critical path: over a real link, and under the transport's injected delay."""
        return self.clock, self.emulated_clock

    @property
    def party_bytes_sent(self) -> int:
        """Bytes this party sent to other data parties (its requests to the dealer taken out)."""
        return self.bytes_sent - self.dealer_request_bytes

    def to_dict(self) -> dict:
        return {"ops": {k: self.ops.get(k, 0) for k in KINDS}, "calls": {k: self.calls.get(k, 0) for k in KINDS},
                "rounds": self.rounds, "dealer_requests": self.dealer_requests,
                "dealer_request_bytes": self.dealer_request_bytes,
                "material_requests": dict(self.material_requests), "material_bytes": dict(self.material_bytes),
                "material_rounds": self.material_rounds, "bytes_sent": self.bytes_sent,
                "bytes_received": self.bytes_received, "dealer_sent": self.dealer_sent,
                "dealer_received": self.dealer_received, "link_sent": self.link_sent,
                "link_received": self.link_received, "kernel_link_sent": self.kernel_link_sent,
                "wall_s": self.wall_s, "interface": self.interface, "hops": self.clock.hops,
                "emulated_hops": self.emulated_clock.hops}


_active: list[Ledger] = []
_links: set[int] = set()  # file descriptors of mpcdp's own links (mpcdp.transport.mesh)
_dealer_links: set[int] = set()  # and of this data party's link to the dealer


def register_links(fds: set[int]) -> None:
    """Tell the ledgers which sockets are mpcdp's links (their bytes are counted as they move)."""
    _links.clear()
    _links.update(fds)


def register_dealer_link(fds: set[int]) -> None:
    """Tell the ledgers which socket is this data party's link to the dealer (its kernel counts are the
    ``dealer_sent`` / ``dealer_received`` part of the bytes: the dealer's replies reach the party it picks)."""
    _dealer_links.clear()
    _dealer_links.update(fds)


def record_link(sent: int, received: int) -> None:
    """Bytes moved on mpcdp's links (called by the transport, the choke point)."""
    for ledger in _active:
        ledger.link_sent += sent
        ledger.link_received += received


def record(kind: str, elements: int, calls: int = 1) -> None:
    """Count ``elements`` of ``kind`` in every open section (called by the choke points only)."""
    for ledger in _active:
        ledger.add(kind, elements, calls)


def record_rounds(rounds: int) -> None:
    for ledger in _active:
        ledger.rounds += rounds


def record_dealer_request(request_bytes: int, kind: str = "crypten", *, receiver: int = 0) -> None:
    """Party 0 asked the dealer for ``kind`` material and wrote ``request_bytes`` for it; the reply goes to
    ``receiver``."""
    for ledger in _active:
        ledger.dealer_requests += 1
        ledger.dealer_request_bytes += request_bytes
        for clock in ledger.clocks:
            clock.request(0, receiver)
    record_material(kind, request_bytes, rounds=2)


def record_move(rank: int, sends: Iterable[int], receives: Iterable[int]) -> None:
    """One round of this process (``rank``) on the links between data parties: messages to ``sends``, from
    ``receives`` (for the critical path, :mod:`.hop_clock`)."""
    to, from_ = list(sends), list(receives)
    for ledger in _active:
        for clock in ledger.clocks:
            clock.move(rank, to, from_)


def record_opening(plan: str, members: list[int], king: int | None, moves: int) -> None:
    """An opening by ``plan`` among ``members`` (``king``: the star's), made of this process's next ``moves``
    rounds (:meth:`.hop_clock.HopClock.opening`)."""
    for ledger in _active:
        for clock in ledger.clocks:
            clock.opening(plan, members, king, moves)


def record_material(kind: str, sent_bytes: int, *, rounds: int) -> None:
    """One request for ``kind`` material: this process sent ``sent_bytes`` for it over ``rounds`` phases."""
    for ledger in _active:
        ledger.material_requests[kind] += 1
        ledger.material_bytes[kind] += int(sent_bytes)
        ledger.material_rounds += int(rounds)


@contextlib.contextmanager
def section(interface: str | None = None) -> Iterator[Ledger]:
    """Meter the block: ``with costs.section() as ledger: ...`` (sections nest; all of them count).

    With ``interface``, also the change of that network interface's frame counters (bytes with headers,
    packets) over the block, for checking the TCP counters against the link.
    """
    ledger = Ledger()
    link0 = wire.interface_counters(interface) if interface else None
    counters0 = wire.tcp_counters()
    start = time.perf_counter()
    _active.append(ledger)
    try:
        yield ledger
    finally:
        _active.remove(ledger)
        ledger.wall_s = time.perf_counter() - start
        counters1 = wire.tcp_counters()
        other_rx = other_tx = 0
        for fd, (rx, tx) in counters1.items():
            rx0, tx0 = counters0.get(fd, (0, 0))
            if fd in _links:
                ledger.kernel_link_sent += tx - tx0
            else:
                other_rx, other_tx = other_rx + rx - rx0, other_tx + tx - tx0
            if fd in _dealer_links:
                ledger.dealer_received += rx - rx0
                ledger.dealer_sent += tx - tx0
        ledger.bytes_sent = ledger.link_sent + other_tx
        ledger.bytes_received = ledger.link_received + other_rx
        link1 = wire.interface_counters(interface) if interface else None
        if link0 is not None and link1 is not None:
            ledger.interface = {key: link1[key] - link0[key] for key in link0}


# -- the declared transport -------------------------------------------------------------------------------

# mpcdp's links (mpcdp.transport.mesh) carry each message in a frame: a 16-byte header (length, step tag, type,
# message number) before the payload. (gloo would add a 96-byte header per message and a 48-byte receive
# notification.)
RELAY_CAP_BYTES = 1 << 16


def opening_plan(elements: int, parties: int, all_to_all: bool = False) -> str:
    """How an opening of ``elements`` 8-byte values travels over :class:`~mpcdp.transport.mesh.Mesh`:
    ``direct`` (every party sends its share to every other: 1 round, (m−1)·8d bytes each way; always for 2
    parties), ``star`` (shares to party 0, sum back: 2 rounds) while what party 0 relays, (m−1)·8d bytes each
    way, is at most :data:`RELAY_CAP_BYTES`, or ``direct`` there instead with ``all_to_all`` (``[mpc] openings
    = "all-to-all"``), or ``scatter`` (reduce-scatter then all-gather over point-to-point links, 2 rounds,
    every party ≈ 2(m−1)/m·8d bytes) above that cap. The star saves messages on small openings (2(m−1) in all
    instead of m(m−1)), all-to-all a round; above the cap either's busiest party would carry m/2 times the
    scatter's mean."""
    if parties == 2:
        return "direct"
    if (parties - 1) * 8 * elements > RELAY_CAP_BYTES:
        return "scatter"
    return "direct" if all_to_all else "star"


def chunk_sizes(elements: int, parties: int) -> list[int]:
    """Sizes of the per-party chunks of a scattered opening (as ``torch.tensor_split`` cuts them)."""
    base, extra = divmod(elements, parties)
    return [base + (1 if i < extra else 0) for i in range(parties)]


def opening_messages(elements: int, parties: int, rank: int,
                     all_to_all: bool = False) -> tuple[list[int], list[int], int]:
    """(payload bytes of each message ``rank`` sends, of each it receives, rounds) for one opening."""
    plan = opening_plan(elements, parties, all_to_all)
    size = 8 * elements
    if plan == "direct":
        return [size] * (parties - 1), [size] * (parties - 1), 1
    if plan == "star":
        if rank == 0:
            return [size] * (parties - 1), [size] * (parties - 1), 2
        return [size], [size], 2
    chunks = [8 * c for c in chunk_sizes(elements, parties)]
    sent = [chunks[i] for i in range(parties) if i != rank] + [chunks[rank]] * (parties - 1)
    received = [chunks[rank]] * (parties - 1) + [chunks[i] for i in range(parties) if i != rank]
    return sent, received, 2


def exchange_messages(size: int, parties: int) -> tuple[list[int], list[int], int]:
    """(sent, received, rounds) of an all-to-all exchange of a public ``size``-byte vector (1 round)."""
    return [size] * (parties - 1), [size] * (parties - 1), 1


def reshare_messages(elements: int) -> tuple[list[int], list[int], int]:
    """(sent, received, rounds) of a member in a resharing of ``elements`` 8-byte values among three members:
    its share to one member, another's share from the other (1 round; ``MpcContext.reshare``)."""
    return [8 * elements], [8 * elements], 1


def wire_bytes(sent: list[int], received: list[int]) -> tuple[int, int]:
    """(bytes written, bytes read) on the TCP links of a party that sends and receives messages of these
    payload sizes: each travels in a frame, a 16-byte header before the payload (:mod:`.frames`)."""
    return sum(sent) + HEADER_BYTES * len(sent), sum(received) + HEADER_BYTES * len(received)


# -- network model --------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Link:
    """A network between the parties: per-party bandwidth and round-trip time."""

    name: str
    bits_per_s: float
    rtt_s: float

    def time_s(self, *, hops: int, bytes_max_party: int, compute_s: float = 0.0) -> float:
        """Estimated wall time: local compute + one one-way latency per hop (``hops``: the critical path's
        hops, a ledger's ``hops``, :mod:`.hop_clock`) + the busiest party's bytes at the link rate (its
        sending and receiving overlap on a full-duplex link; we take the larger).

        A dealer request costs what it delays: one delay when its receiver is the king of the star opening
        that follows (the other parties' shares travel meanwhile), two when another party waits for the
        receiver, none when it travels while the receiver is busy anyway (measured on emulated hosts,
        benchmarks/results/cost-network.md)."""
        return compute_s + hops * self.rtt_s / 2 + 8 * bytes_max_party / self.bits_per_s


LAN = Link("LAN", 1e9, 0.2e-3)
WAN = Link("WAN", 100e6, 40e-3)


@dataclasses.dataclass
class DeclaredCost:
    """A protocol's cost as its docstring declares it: operation counts, the sizes of its openings in
    order, its public all-to-all exchanges (bytes each), its resharings (elements each member sends, in
    order; :func:`reshare_messages`) and its requests for material (to the dealer, or made by the generators
    without one). ``kings_rotate``: the i-th star opening has member i mod k as king (the noise committee's,
    :meth:`~mpcdp.transport.mesh.Mesh.open_shares`), else the first member is every star's king.
    ``all_to_all``: the openings a star would carry go all-to-all (``[mpc] openings``, :func:`opening_plan`).
    ``king_resets``: the openings (indices) at which the count of star openings restarts from 0, as the mesh's
    does at each committee scope (each :func:`~mpcdp.noise.secure_gaussian.sample_discrete_gaussian` call): a
    rotating cost added to another (:meth:`__add__`) starts one, so a run's calls summed count as the run does."""

    ops: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    openings: list[int] = dataclasses.field(default_factory=list)
    exchanges: list[int] = dataclasses.field(default_factory=list)
    dealer_requests: int = 0
    reshares: list[int] = dataclasses.field(default_factory=list)
    kings_rotate: bool = False
    all_to_all: bool = False
    king_resets: tuple[int, ...] = ()

    def __add__(self, other: "DeclaredCost") -> "DeclaredCost":
        at = len(self.openings)
        resets = self.king_resets + ((at,) if other.kings_rotate else ()) + tuple(at + i for i in other.king_resets)
        return DeclaredCost(self.ops + other.ops, self.openings + other.openings, self.exchanges + other.exchanges,
                            self.dealer_requests + other.dealer_requests, self.reshares + other.reshares,
                            self.kings_rotate or other.kings_rotate,  # (only sampler costs are added to rotating ones)
                            self.all_to_all or other.all_to_all,  # (one run's costs: one setting)
                            resets)

    def open(self, *sizes: int) -> None:
        self.openings.extend(int(s) for s in sizes)

    def reshare(self, *sizes: int) -> None:
        self.reshares.extend(int(s) for s in sizes)

    def rounds(self, parties: int) -> int:
        return (sum(opening_messages(e, parties, 0, self.all_to_all)[2] for e in self.openings)
                + sum(exchange_messages(b, parties)[2] for b in self.exchanges)
                + sum(reshare_messages(e)[2] for e in self.reshares))

    def bytes(self, parties: int, rank: int) -> tuple[int, int]:
        """(bytes sent, bytes received) by ``rank`` to and from the other data parties."""
        sent, received, stars = [], [], 0
        resets = set(self.king_resets)
        for index, elements in enumerate(self.openings):
            stars = 0 if index in resets else stars  # a new committee scope counts from 0
            role = rank  # in a star, 0 is the king: the (stars mod k)-th member while kings rotate
            if self.kings_rotate and opening_plan(elements, parties, self.all_to_all) == "star":
                role, stars = (rank - stars) % parties, stars + 1
            s, r, _ = opening_messages(elements, parties, role, self.all_to_all)
            sent += s
            received += r
        for size in self.exchanges:
            s, r, _ = exchange_messages(size, parties)
            sent += s
            received += r
        for elements in self.reshares:
            s, r, _ = reshare_messages(elements)
            sent += s
            received += r
        return wire_bytes(sent, received)

    def op_counts(self) -> dict[str, int]:
        counts = {k: self.ops.get(k, 0) for k in KINDS}
        counts["openings"] = len(self.openings)
        counts["opened_elements"] = sum(self.openings)
        counts["reshares"] = len(self.reshares)
        counts["reshared_elements"] = sum(self.reshares)
        return counts


def opening_bytes(elements_list: list[int], parties: int, rank: int) -> tuple[int, int]:
    """(sent, received) bytes of ``rank`` for openings of these sizes (the transport's declared cost)."""
    return DeclaredCost(openings=list(elements_list)).bytes(parties, rank)
