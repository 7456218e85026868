"""Direct TCP links between the processes of a run: the transport of every message — mpcdp's openings and
public exchanges, CrypTen's protocols (:mod:`mpcdp.adapter.communicator`) and the dealer's keys and material
(:mod:`mpcdp.adapter.dealer_link`). No gloo process group is formed.

Why not gloo: mpcdp's protocols run in lockstep, so both ends of every message know its size,
step and type in advance. Each message travels in a 16-byte frame header (:mod:`.frames`) that the receiver
checks against that expectation before it reads the payload; a message that is not the expected one stops
the run naming its sender (:class:`~mpcdp.errors.ProtocolViolation`). Gloo adds a 96-byte header per
message and a 48-byte receive notification from the receiver, 14% on top of an a9a-sized opening. Here the
bytes on the wire are the shares and their frames, counted at this one choke point (and checked against the kernel's TCP counters and
an emulated host's link counters in tests/test_costs.py and benchmarks/cost_network.py). The emulated
network delay of :class:`~mpcdp.config.MpcConfig` (``link_delay_ms``) is injected here, once per round. Gloo
also cannot carry TLS.

Set-up (once per run, before the configuration handshake, which then runs over these links; public
metadata only): every process (data parties 0..m−1, the dealer m) listens on the address through which it
reaches the rendezvous host (or ``--iface``'s), publishes it in the rendezvous store (:mod:`.rendezvous`),
and process j connects to every process i < j, announcing its rank (:mod:`.joining`). :meth:`Mesh.establish`
returns the links; a data party makes one :class:`Mesh` of its links to the other data parties (counted as link bytes)
and one of its link to the dealer (metered as dealer traffic). Links are full-duplex with Nagle's algorithm off. No peer data is ever unpickled:
tensors travel as raw words, public metadata as JSON (:mod:`.public`).

Failures: a peer that closes its link raises :class:`~mpcdp.errors.PeerLost` naming it; a peer silent for
``timeout_s`` raises :class:`~mpcdp.errors.PeerTimeout` naming the parties still owed data. A frame that has
started arriving (part of its header or payload) and is still unfinished at the deadline, or whose sender
falls silent for :data:`STALL_S` and then closes its link, is direct evidence against its sender: a
:class:`~mpcdp.errors.ProtocolViolation` naming it, with ``evidence = "short"``, stronger than any timeout or
report of its own (:mod:`.losses`). A link closed sooner after the frame's last byte is a plain loss: an
honest process that stops mid-send (after writing its loss report) closes its links that way.

Security model: every link is TLS 1.3, mutually authenticated by the deployment's CA (:mod:`.credentials`;
local runs get a throwaway deployment from the launcher, :mod:`mpcdp.runtime.harness`), and a peer is the rank
its certificate names. Plain TCP only with ``--insecure-links``, on one host as across hosts, which warns
(:data:`~.joining.INSECURE_LINKS_WARNING`). Whoever can reach a listener is hostile until proven: each
accepted connection gets :data:`~.joining.HANDSHAKE_S` seconds to finish its handshake and announce its rank, served without
blocking the others, at most a few per source at once (:mod:`.gate`); a connection that fails is closed, reported once,
and the genuine process still awaited. What travels is what the protocols open: uniformly masked shares,
public values, and the dealer's keys and material (the guide mpcdp/README.md, "Threat model").
"""

from __future__ import annotations

import select
import selectors
import socket
import ssl
import time
from typing import cast

import torch

from mpcdp.errors import MpcdpError, PeerLost, PeerTimeout, ProtocolViolation
from mpcdp.transport import costs, frames, joining, rendezvous, wire


_READ, _WRITE = select.POLLIN, select.POLLOUT
STALL_S = 2.0  # a frame's sender silent this long, then closing its link: it left the frame unfinished


class Mesh:
    """This party's links to every other data party (rank → connected socket)."""

    def __init__(self, rank: int, parties: int, links: dict[int, socket.socket], *, timeout_s: float,
                 delay_s: float = 0.0, counted: bool = True, dealer: int | None = None, all_to_all: bool = False):
        self.rank, self.parties, self.links = rank, parties, links
        self.all_to_all = all_to_all  # [mpc] openings = "all-to-all": no star (:meth:`open_shares`)
        self.timeout_s, self.delay_s = timeout_s, delay_s
        self.counted = counted  # bytes go to the cost ledgers as link bytes (the dealer's link is metered apart)
        self.dealer = dealer  # the dealer's rank, for naming it in errors
        self.bytes_sent = 0
        self.bytes_received = 0
        # the last opening's shares received, sender -> (offset into the vector, its share of that part);
        # references only, kept by the context when it records values (the view audit, mpcdp.jobs.views)
        self.received_shares: dict[int, tuple[int, torch.Tensor]] = {}
        # while the noise committee samples (MpcContext.committee sets it to 0): its star openings so far, by which
        # their kings rotate; None: the first member is every star's king
        self.star_turn: int | None = None
        self._next_out = {j: 0 for j in links}
        self._next_in = {j: 0 for j in links}
        if counted or set(links) == {dealer}:  # mpcdp's links, or a data party's link to the dealer (metered apart)
            (costs.register_links if counted else costs.register_dealer_link)({s.fileno() for s in links.values()})

    def name(self, j: int) -> str:
        return rendezvous.who(j, self.dealer)

    @classmethod
    def establish(cls, rank: int, processes: int, **kwargs) -> dict[int, socket.socket]:
        """Connect this process to every other process of the run and return the connected links by rank
        (:func:`mpcdp.transport.joining.establish`, whose keyword arguments it takes)."""
        return joining.establish(rank, processes, **kwargs)

    def wire_bytes_sent(self) -> int:
        """What the kernel has sent on these links so far (TCP payload: frames, plus TLS records and
        handshakes where links are TLS)."""
        return sum(wire.socket_counters(link)[1] for link in self.links.values())

    @property
    def protection(self) -> str:
        versions = {str(link.version()) if isinstance(link, ssl.SSLSocket) else "plain TCP"
                    for link in self.links.values()}
        return versions.pop() if len(versions) == 1 else "mixed: " + ", ".join(sorted(map(str, versions)))

    def close(self, *, orderly: bool = True, drain_s: float = 0.0) -> None:
        """Close every link. ``orderly``: the run ended here as planned, so each peer first gets an empty
        ``goodbye`` frame; a peer that sees a link close without one knows this party stopped early.
        ``drain_s`` > 0 (a party whose own check failed, :mod:`mpcdp.runtime.party`): first keep the links open,
        reading and dropping what the peers still send, until each peer closes or ``drain_s`` passes. A peer
        still finishing the same round of the check watches this party's link (:meth:`_transfer`) and would
        stop at its close, with the others' reports instead of its own verdict; this way every honest party
        finishes its own check and says what it found itself."""
        if self.counted or set(self.links) == {self.dealer}:
            (costs.register_links if self.counted else costs.register_dealer_link)(set())
        for j, link in self.links.items():
            if orderly:
                try:
                    link.settimeout(1.0)
                    link.sendall(frames.header(frames.JSON, self._next_out[j], "goodbye", 0))
                except (OSError, ssl.SSLError):
                    pass  # the peer is already gone
        if drain_s > 0:
            _drain(list(self.links.values()), drain_s)
        for link in self.links.values():
            link.close()
        self.links = {}

    # -- one round: send to some peers and receive from some, all at once ---------------------------------
    def exchange(self, sends: dict[int, torch.Tensor], receives: dict[int, torch.Tensor], *, label: str) -> None:
        """Send ``sends[j]`` to party j and fill ``receives[j]`` from party j (contiguous int64 or float64
        tensors), at once, each as one frame tagged ``label`` (both ends pass the same label).

        One round: waits the emulated delay once, then moves every message concurrently.

        Raises:
            ProtocolViolation: a frame from party j is not the one expected here (named in the message).
        """
        out = {j: (frames.code_of(t.dtype), t.numpy().data.cast("B")) for j, t in sends.items()}
        into = {j: frames.Incoming(j, frames.code_of(t.dtype), label, into=t.numpy().data.cast("B"))
                for j, t in receives.items()}
        self._move(out, into, label)

    def exchange_json(self, payload: bytes, *, label: str) -> dict[int, bytes]:
        """Send the same ``payload`` (UTF-8 JSON, at most :data:`~.frames.MAX_PUBLIC_BYTES`) to every other
        party and return theirs, undecoded (1 round; public metadata only)."""
        others = [j for j in range(self.parties) if j != self.rank]
        return self.exchange_text({j: payload for j in others}, others, label=label)

    def exchange_text(self, sends: dict[int, bytes], receives: list[int], *, label: str,
                      limit: int = frames.MAX_PUBLIC_BYTES, patient: bool = False,
                      answer_label: str | None = None) -> dict[int, bytes]:
        """Send ``sends[j]`` (UTF-8 JSON) to party j and receive one JSON message of at most ``limit`` bytes
        from each party in ``receives``, at once; return those, undecoded (1 round; public values only).
        ``patient``: no deadline (see :meth:`_move`). ``answer_label``: the received messages are the next step
        (a question at ``label`` and its answer): the same frames as two calls, one transfer (one poll set and
        one wait) instead of two."""
        for payload in sends.values():
            if len(payload) > frames.MAX_PUBLIC_BYTES:
                raise ValueError(f"public payload of {len(payload)} bytes exceeds {frames.MAX_PUBLIC_BYTES}")
        awaited = label if answer_label is None else answer_label
        into = {j: frames.Incoming(j, frames.JSON, awaited, limit=limit) for j in receives}
        self._move({j: (frames.JSON, memoryview(payload)) for j, payload in sends.items()}, into, awaited, patient,
                   label)  # positional: wrappers of _move (the deviation tests') pass the rest on as it is
        received = {}
        for j, incoming in into.items():
            assert incoming.payload is not None  # _move returned: every message arrived
            received[j] = bytes(incoming.payload)
        return received

    def _move(self, out: dict[int, tuple[int, memoryview]], into: dict[int, "frames.Incoming"], label: str,
              patient: bool = False, out_label: str | None = None) -> None:
        """Move one round's messages. ``patient``: wait for them without a deadline (a server waiting for its
        next request); a link that closes still ends the wait. ``out_label``: the step of the frames sent, if
        not ``label`` (:meth:`exchange_text`'s question and answer).

        Phases: the emulated delay, the frames to send (:meth:`_frames_out`), the steps awaited
        (:meth:`_expect_in`), the transfer itself (:meth:`_transfer`), and the byte tallies (:meth:`_tally`), which
        count what moved however the round ends."""
        if self.delay_s and out:
            time.sleep(self.delay_s)
        if self.counted:
            costs.record_move(self.rank, out, into)
        pending = self._frames_out(out, label if out_label is None else out_label)
        self._expect_in(into)
        sent = {j: 0 for j in out}
        got = {j: 0 for j in into}
        last_byte: dict[int, float] = {}  # when the latest byte from each sender arrived in this round
        try:
            self._transfer(pending, into, label, patient, sent, got, last_byte)
        except PeerLost as exc:  # a link closed: a frame stalled on another is the stronger evidence
            stalled = None if isinstance(exc, ProtocolViolation) else self._stalled(into, last_byte, label)
            if stalled is None:
                raise
            raise stalled from exc
        finally:
            self._tally(sum(sent.values()), sum(got.values()))

    def _frames_out(self, out: dict[int, tuple[int, memoryview]], label: str) -> dict[int, list[memoryview]]:
        """Frame each outgoing payload (its header numbered with the link's next outgoing step) and queue it for
        sending: party j → the frame's parts still to write."""
        pending: dict[int, list[memoryview]] = {}
        for j, (code, payload) in out.items():
            header = frames.header(code, self._next_out[j], label, len(payload))
            self._next_out[j] += 1
            pending[j] = frames.writes(header, payload)
        return pending

    def _expect_in(self, into: dict[int, "frames.Incoming"]) -> None:
        """Tell each awaited frame the step number its header must carry (the link's next incoming step)."""
        for j, incoming in into.items():
            incoming.expect(self._next_in[j])
            self._next_in[j] += 1

    def _transfer(self, pending: dict[int, list[memoryview]], into: dict[int, "frames.Incoming"], label: str,
                  patient: bool, sent: dict[int, int], got: dict[int, int], last_byte: dict[int, float]) -> None:
        """Write every queued frame and read every awaited one, all links at once, until the round is done; count
        the bytes into ``sent``/``got`` and note each sender's latest byte in ``last_byte`` as they move.

        Each link first gets its frames without a wait (a link almost always has room for a round's frames);
        then one ``poll`` of the round's links waits for what is left. Per round that is one system call per
        write and per wait, no more (a selector object cost an ``epoll`` descriptor and a registration call
        per link and event change, on every round): the bytes, their order and every check are the same.

        Raises:
            PeerLost: a link closed or failed (a :class:`~mpcdp.errors.ProtocolViolation`: a frame was not the
                one expected).
            MpcdpError: the deadline passed (:meth:`_deadline_passed`).
        """
        # Links this round neither writes to nor still reads from are watched for closing: a peer that stops
        # (e.g. on a protocol violation it saw) must stop this party too, not leave it waiting for a third. A
        # peer that finished sends a goodbye frame before closing; one that stopped early closes without.
        watched = set(self.links) - set(into)
        deadline = time.monotonic() + self.timeout_s
        state = (pending, into, watched, label, sent, got, last_byte)
        for j, queue in pending.items():
            if queue:
                self._serve(j, self.links[j], _WRITE, state)
        poller, by_fd, masks = select.poll(), {}, {}
        for j, link in self.links.items():
            by_fd[link.fileno()] = j
            masks[j] = _events(j, pending, into, watched)
            if masks[j]:
                poller.register(link, masks[j])
        while any(pending.values()) or not all(incoming.done for incoming in into.values()):
            ready = poller.poll(None if patient else max(0.0, deadline - time.monotonic()) * 1000.0)
            if not ready:
                raise self._deadline_passed(pending, into, label)
            for fd, happened in ready:
                j = by_fd[fd]
                # as a selector reads poll's answer: an error or hang-up counts as readable and writable
                mask = masks[j] & ((_READ if happened & ~_WRITE else 0) | (_WRITE if happened & ~_READ else 0))
                self._serve(j, self.links[j], mask, state)
                remaining = _events(j, pending, into, watched)
                if remaining != masks[j]:
                    masks[j] = remaining
                    if remaining:
                        poller.register(fd, remaining)  # poll's register of a registered descriptor modifies it
                    else:
                        poller.unregister(fd)

    def _serve(self, j: int, link: socket.socket, mask: int, state: tuple) -> None:
        """Move what party j's link can take or give now (``mask``: writable, readable): write its queued frame
        parts, read its awaited frame, or check a watched link (:meth:`_transfer`'s ``state``)."""
        pending, into, watched, label, sent, got, last_byte = state
        try:
            while mask & _WRITE and pending.get(j):
                sent[j] += self._send_some(link, pending[j])
            if mask & _READ and j in into and not into[j].done:
                self._receive_some(link, j, into[j], label, got, last_byte)
                if into[j].done:
                    watched.add(j)
            elif mask & _READ and j in watched:
                watched.discard(j)  # the peer is ahead of us (its next message is here) or gone
                self._check_open(link, j, label)
        except (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
            pass
        except (ConnectionResetError, BrokenPipeError, ssl.SSLError) as exc:
            raise PeerLost(f"link to {self.name(j)} failed ({self.name(self.rank)}'s link): {exc}", party=j) from exc

    def _receive_some(self, link: socket.socket, j: int, incoming: "frames.Incoming", label: str,
                      got: dict[int, int], last_byte: dict[int, float]) -> None:
        """Read what party j's link holds now into its awaited frame (including the bytes a TLS link has already
        decrypted, which the selector will not announce), counting each read into ``got[j]`` and its time into
        ``last_byte[j]`` before the frame checks it. It reads until the frame is complete or the link has nothing
        more (the non-blocking read raises ``BlockingIOError``/``SSLWantReadError``, which :meth:`_transfer`
        takes as "wait"), not one TLS record per wake-up: a large frame arrives in 16 KiB records, and going back
        to the selector after each one cost two system calls and a pass over the round's links per record.

        Raises:
            PeerLost: the link closed (:meth:`_closed_on`: a plain loss, or direct evidence of a stalled frame).
            ProtocolViolation: the frame is not the one expected here.
        """
        while not incoming.done:
            n = link.recv_into(incoming.window())
            if n == 0:
                raise self._closed_on(j, incoming, last_byte.get(j), label)
            got[j] += n
            last_byte[j] = time.monotonic()
            incoming.advance(n, me=self.rank)

    def _check_open(self, link: socket.socket, j: int, label: str) -> None:
        """A watched link became readable: the peer is ahead of us (its next message is here, left unread) or
        has closed its link, which raises :class:`~mpcdp.errors.PeerLost` naming it."""
        if not socket.socket.recv(link, 1, socket.MSG_PEEK):
            raise PeerLost(f"connection closed by {self.name(j)} ({self.name(self.rank)}'s link, "
                           f"step {label!r})", party=j)

    def _tally(self, moved_out: int, moved_in: int) -> None:
        """Add one round's bytes to this mesh's totals and, for counted links, to the cost ledgers."""
        self.bytes_sent += moved_out
        self.bytes_received += moved_in
        if self.counted:
            costs.record_link(moved_out, moved_in)

    def _deadline_passed(self, pending: dict[int, list], into: dict[int, "frames.Incoming"],
                         label: str) -> MpcdpError:
        """The error at a round's deadline: direct evidence against the first sender whose frame started
        arriving and is unfinished, else a timeout naming the parties still owed data."""
        unfinished = sorted(j for j, incoming in into.items() if incoming.started)
        if unfinished:
            return self._unfinished(unfinished[0], into[unfinished[0]], label,
                                    f"then nothing until the deadline ({self.timeout_s} s)")
        owed = sorted(j for j in self.links if pending.get(j) or (j in into and not into[j].done))
        return PeerTimeout(f"Timed out after {self.timeout_s} s waiting for {', '.join(map(self.name, owed))} "
                           f"({self.name(self.rank)}'s link, step {label!r})", party=owed[0])

    def _closed_on(self, j: int, incoming: "frames.Incoming", last_byte: float | None, label: str) -> PeerLost:
        """The error for party j's link closing while its message is awaited: a plain loss, or, when j fell
        silent for :data:`STALL_S` in the middle of a frame before closing, direct evidence against it."""
        silent = time.monotonic() - last_byte if last_byte is not None else 0.0
        if incoming.started and silent >= STALL_S:
            return self._unfinished(j, incoming, label, f"then nothing for {silent:.1f} s, and closed its link")
        return PeerLost(f"connection closed by {self.name(j)} ({self.name(self.rank)}'s link)", party=j)

    def _stalled(self, into: dict[int, "frames.Incoming"], last_byte: dict[int, float],
                 label: str) -> ProtocolViolation | None:
        """Direct evidence against the first sender whose frame has been unfinished and silent for
        :data:`STALL_S`, if any."""
        now = time.monotonic()
        for j in sorted(into):
            silent = now - last_byte.get(j, now)
            if into[j].started and silent >= STALL_S:
                return self._unfinished(j, into[j], label, f"then nothing for {silent:.1f} s")
        return None

    def _unfinished(self, j: int, incoming: "frames.Incoming", label: str, then: str) -> ProtocolViolation:
        """Direct evidence against party j: it started a frame at step ``label`` and did not finish it."""
        error = ProtocolViolation(f"{self.name(j)} left a frame unfinished on {self.name(self.rank)}'s link at step "
                                  f"{label!r}: it sent {incoming.progress()}, {then}", party=j)
        error.evidence = "short"
        return error

    @staticmethod
    def _send_some(link: socket.socket, queue: list[memoryview]) -> int:
        """Write as much of the queued frame parts as the link takes now; drop the parts fully written."""
        n = link.send(queue[0])
        if n == len(queue[0]):
            queue.pop(0)
        else:
            queue[0] = queue[0][n:]
        return n

    # -- the protocols' communication patterns ---------------------------------------------------------
    def open_shares(self, share: torch.Tensor, *, label: str, xor: bool = False,
                    members: tuple[int, ...] | None = None, wide: bool = False) -> tuple[torch.Tensor, int]:
        """Every member's ``share`` combined (sum in Z_2^64, or XOR of words), delivered to every member;
        returns (the combination, rounds). ``members``: the parties taking part, in rank order (default: all;
        a noise committee, :meth:`mpcdp.mpc.context.MpcContext.committee`); the others take no part. ``wide``:
        ``share`` is n elements of Z_2^128 as rows (low word, high word), summed with the carry (the
        authenticated openings of :mod:`mpcdp.mpc.authenticated`); chunks are cut between rows. Plans
        (:func:`mpcdp.transport.costs.opening_plan`, on the members' count k and the words sent):

        * ``direct`` (2 members, or where a star would go with :attr:`all_to_all`): each sends its share to every
          other member. 1 round, (k−1)·8d bytes each way; every member sees every share, as a star's king does.
        * ``star`` (while the king relays at most 64 KiB, (k−1)·8d): shares to one member, the king, which
          combines them and sends the result back. 2 rounds; it sends and receives (k−1)·8d bytes, the others
          8d. It sees each member's share — one additive share, uniformly masked, like any partial sum. The
          king is the first member, or, while the noise committee samples (:attr:`star_turn`), member i mod k
          at the committee's i-th star opening (:meth:`_star_king`; every member counts in step, as each takes
          part in every opening of the committee), so the relaying work is spread.
        * ``scatter`` (larger): the vector is cut into k chunks; member i combines chunk i of every share
          (reduce-scatter) and sends the result to all (all-gather). 2 rounds, ≈ 2(k−1)/k·8d bytes each.

        :attr:`received_shares` then holds the other members' shares (or chunks of them) that this party
        received, by sender; every other message it received is part of the combination itself.
        """
        if wide and (xor or share.dim() != 2 or share.shape[1] != 2):
            raise ValueError(f"a wide opening takes rows (low word, high word) summed. Found shape "
                             f"{tuple(share.shape)}, xor={xor}.")
        flat = share.contiguous() if wide else share.reshape(-1).contiguous()
        ranks = list(range(self.parties)) if members is None else list(members)
        plan = costs.opening_plan(flat.numel(), len(ranks), self.all_to_all)
        me, k = ranks.index(self.rank), len(ranks)
        king = self._star_king(ranks) if plan == "star" else None
        if self.counted:
            costs.record_opening(plan, ranks, king, 1 if plan == "direct" else 2)

        def combine(into: torch.Tensor, other: torch.Tensor) -> None:
            if xor:
                into ^= other
            elif wide:
                _add_wide(into, other)
            else:
                into += other

        if plan == "direct":
            result = flat.clone()
            peers = [j for j in ranks if j != self.rank]
            incoming = {j: torch.empty_like(flat) for j in peers}
            self.exchange({j: flat for j in peers}, incoming, label=label)
            self.received_shares = {j: (0, buf) for j, buf in incoming.items()}
            for buf in incoming.values():  # in rank order: every member combines alike
                combine(result, buf)
            return result.reshape(share.shape), 1
        if king is not None:
            result = flat.clone() if self.rank == king else torch.empty_like(flat)  # the sum, or where it arrives
            if self.rank == king:
                others = [j for j in ranks if j != king]
                incoming = {j: torch.empty_like(flat) for j in others}
                self.exchange({}, incoming, label=label)
                self.received_shares = {j: (0, buf) for j, buf in incoming.items()}
                for buf in incoming.values():
                    combine(result, buf)
                self.exchange({j: result for j in others}, {}, label=label + " (sum)")
            else:
                self.received_shares = {}
                self.exchange({king: flat}, {}, label=label)
                self.exchange({}, {king: result}, label=label + " (sum)")
            return result.reshape(share.shape), 2
        chunks = torch.tensor_split(flat, k)
        result = torch.empty_like(flat)
        combined = torch.tensor_split(result, k)  # chunk i of the result, received in place
        mine = combined[me]
        mine.copy_(chunks[me])
        incoming = {ranks[i]: torch.empty_like(chunks[me]) for i in range(k) if i != me}
        self.exchange({ranks[i]: chunks[i] for i in range(k) if i != me}, incoming, label=label)
        offset = sum(len(chunk) for chunk in chunks[:me])  # elements (rows, when wide) before this chunk
        self.received_shares = {j: (offset, buf) for j, buf in incoming.items()}
        for buf in incoming.values():
            combine(mine, buf)
        self.exchange({ranks[i]: mine for i in range(k) if i != me},
                      {ranks[i]: combined[i] for i in range(k) if i != me}, label=label + " (sum)")
        return result.reshape(share.shape), 2

    def _star_king(self, ranks: list[int]) -> int:
        """The king of this star opening among ``ranks``: the first member, or while :attr:`star_turn` counts
        member i mod k at the i-th (public: a count every member keeps the same)."""
        if self.star_turn is None:
            return ranks[0]
        self.star_turn += 1
        return ranks[(self.star_turn - 1) % len(ranks)]

    def exchange_int64(self, vector: torch.Tensor, *, label: str) -> tuple[torch.Tensor, int]:
        """Every party's fixed-size public int64 ``vector``, stacked in rank order (1 round)."""
        vector = vector.to(torch.int64).contiguous()
        out = [vector if j == self.rank else torch.empty_like(vector) for j in range(self.parties)]
        others = [j for j in range(self.parties) if j != self.rank]
        self.exchange({j: vector for j in others}, {j: out[j] for j in others}, label=label)
        return torch.stack(out), 1


def _events(j: int, pending: dict[int, list[memoryview]], into: dict[int, "frames.Incoming"],
            watched: set[int]) -> int:
    """What a round still waits for on party j's link: writable while frames are queued for it, readable while
    its frame is awaited or the link is watched for closing (:meth:`Mesh._transfer`)."""
    return (_WRITE if pending.get(j) else 0) | (_READ if (j in into and not into[j].done) or j in watched else 0)


_SIGN = -(1 << 63)


def _add_wide(into: torch.Tensor, other: torch.Tensor) -> None:
    """into += other for rows (low word, high word) of Z_2^128, in place: the low words' carry goes up."""
    low = into[:, 0] + other[:, 0]
    carry = ((low ^ _SIGN) < (into[:, 0] ^ _SIGN)).to(torch.int64)  # unsigned overflow of the low word
    into[:, 1] += other[:, 1] + carry
    into[:, 0] = low



def _drain(links: list[socket.socket], seconds: float) -> None:
    """Read and drop what arrives on every link until each peer closes it or ``seconds`` pass
    (:meth:`Mesh.close`). Raw reads: a TLS link is closed right after, never read as TLS again."""
    deadline = time.monotonic() + seconds
    with selectors.DefaultSelector() as waiting:
        for link in links:
            try:
                waiting.register(link, selectors.EVENT_READ)
            except (OSError, ValueError):
                pass  # already closed
        while waiting.get_map() and time.monotonic() < deadline:
            for key, _ in waiting.select(timeout=max(0.0, deadline - time.monotonic())):
                sock = cast(socket.socket, key.fileobj)
                try:
                    sock.setblocking(False)
                    data = socket.socket.recv(sock, 65536)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                if not data:
                    waiting.unregister(sock)
