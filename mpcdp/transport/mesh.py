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
and process j connects to every process i < j, announcing its rank. :meth:`Mesh.establish` returns the
links; a data party makes one :class:`Mesh` of its links to the other data parties (counted as link bytes)
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
(:data:`INSECURE_LINKS_WARNING`). Whoever can reach a listener is hostile until proven: each accepted
connection gets :data:`HANDSHAKE_S` seconds to finish its handshake and announce its rank, served without
blocking the others, at most :data:`MAX_PENDING` at once; a connection that fails is closed, reported once,
and the genuine process still awaited. What travels is what the protocols open: uniformly masked shares,
public values, and the dealer's keys and material (the guide mpcdp/README.md, "Threat model").
"""

from __future__ import annotations

import os
import selectors
import socket
import ssl
import struct
import sys
import time
import warnings
from typing import Callable
from urllib.parse import urlparse

import torch

from mpcdp.errors import ConfigError, InsecureSettingWarning, MpcdpError, PeerLost, PeerTimeout, ProtocolViolation
from mpcdp.transport import costs, frames, rendezvous, wire
from mpcdp.transport.credentials import LinkSecurity


def local_address(rendezvous: str, iface: str | None = None) -> str:
    """The IPv4 address this process listens on: ``iface``'s, or else the one through which this host
    reaches the rendezvous host (loopback for a file:// rendezvous)."""
    if iface:
        return interface_address(iface)
    parsed = urlparse(rendezvous)
    host = parsed.hostname if parsed.scheme == "tcp" else os.environ.get("MASTER_ADDR") if parsed.scheme == "env" \
        else None
    if not host:
        return "127.0.0.1"
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect((socket.gethostbyname(host), 9))  # UDP connect sends nothing; it only picks a route
        return probe.getsockname()[0]
    finally:
        probe.close()


def interface_address(iface: str) -> str:
    """The IPv4 address of network interface ``iface`` (Linux)."""
    import fcntl

    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        packed = fcntl.ioctl(probe.fileno(), 0x8915, struct.pack("256s", iface[:15].encode()))  # SIOCGIFADDR
    except OSError as exc:
        raise ConfigError(f"`iface` {iface!r} has no IPv4 address here ({exc.strerror})") from None
    finally:
        probe.close()
    return socket.inet_ntoa(packed[20:24])


_JOIN_BYTES = 1 << 16
STALL_S = 2.0  # a frame's sender silent this long, then closing its link: it left the frame unfinished
HANDSHAKE_S = 5.0  # an accepted connection has this long to finish its TLS handshake and announce its rank
MAX_PENDING = 32  # accepted connections in that phase at once; later ones wait in the kernel's backlog


class Mesh:
    """This party's links to every other data party (rank → connected socket)."""

    def __init__(self, rank: int, parties: int, links: dict[int, socket.socket], *, timeout_s: float,
                 delay_s: float = 0.0, counted: bool = True, dealer: int | None = None):
        self.rank, self.parties, self.links = rank, parties, links
        self.timeout_s, self.delay_s = timeout_s, delay_s
        self.counted = counted  # bytes go to the cost ledgers as link bytes (the dealer's link is metered apart)
        self.dealer = dealer  # the dealer's rank, for naming it in errors
        self.bytes_sent = 0
        self.bytes_received = 0
        self._next_out = {j: 0 for j in links}
        self._next_in = {j: 0 for j in links}
        if counted:
            costs.register_links({link.fileno() for link in links.values()})

    def name(self, j: int) -> str:
        return rendezvous.who(j, self.dealer)

    @classmethod
    def establish(cls, rank: int, processes: int, *, address: str, timeout_s: float,
                  security: LinkSecurity | None = None, insecure: bool = False,
                  locate: Callable[[int, tuple[str, int], list[int]], dict[int, tuple[str, int]]] | None = None,
                  dealer: int | None = None) -> dict[int, socket.socket]:
        """Connect this process to every other process of the run (ranks 0..``processes``−1; the dealer, if
        any, is the last) and return the connected links by rank; :meth:`__init__` makes meshes of them.

        ``locate(rank, (host, port), peers)`` publishes this process's listener and returns the peers'
        (default: through the rendezvous store, :mod:`.rendezvous`). ``dealer``: the dealer's rank, if any
        (for naming it in errors).

        ``security``: this rank's TLS 1.3 credentials (:mod:`.credentials`); every link is then mutually
        authenticated and encrypted, and a connection that does not present this deployment's certificate
        for the rank it claims is refused (and reported on stderr) while the genuine process is awaited.
        Without it, links are plain TCP only with ``insecure`` (``--insecure-links``), on one host as across
        hosts, which warns (:data:`INSECURE_LINKS_WARNING`).

        The listener serves each accepted connection's handshake and rank announcement without blocking,
        under its own deadline (:data:`HANDSHAKE_S`), at most :data:`MAX_PENDING` at once: a connection that
        fails, stalls or claims a rank it may not is closed and reported once (its origin address), and the
        genuine process is awaited until the run's deadline. No thread is started.
        """
        if security is None:
            _consent_to_plain_links(rank, insecure)
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind((address, 0))
        listener.listen(MAX_PENDING + processes)
        others = [j for j in range(processes) if j != rank]
        endpoints = (locate or _locate_by_rendezvous(timeout_s, processes, dealer))(rank, (address, listener.getsockname()[1]), others)
        links: dict[int, socket.socket] = {}
        deadline = time.monotonic() + timeout_s
        try:
            for peer in range(rank):
                links[peer] = _connect(rank, peer, tuple(endpoints[peer]), security, timeout_s, dealer)
            _Arrivals(rank, processes, security, dealer).accept(listener, links, deadline, timeout_s)
        except BaseException:
            for link in links.values():
                link.close()
            raise
        finally:
            listener.close()
        for link in links.values():
            link.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            link.setblocking(False)
        return links

    def wire_bytes_sent(self) -> int:
        """What the kernel has sent on these links so far (TCP payload: frames, plus TLS records and
        handshakes where links are TLS)."""
        return wire.tcp_bytes({link.fileno() for link in self.links.values()})[1]

    @property
    def protection(self) -> str:
        versions = {link.version() if isinstance(link, ssl.SSLSocket) else "plain TCP" for link in self.links.values()}
        return versions.pop() if len(versions) == 1 else "mixed: " + ", ".join(sorted(map(str, versions)))

    def close(self, *, orderly: bool = True) -> None:
        """Close every link. ``orderly``: the run ended here as planned, so each peer first gets an empty
        ``goodbye`` frame; a peer that sees a link close without one knows this party stopped early."""
        if self.counted:
            costs.register_links(set())
        for j, link in self.links.items():
            if orderly:
                try:
                    link.settimeout(1.0)
                    link.sendall(frames.header(frames.JSON, self._next_out[j], "goodbye", 0))
                except (OSError, ssl.SSLError):
                    pass  # the peer is already gone
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
        out = {j: (frames.code_of(t.dtype), memoryview(t.numpy()).cast("B")) for j, t in sends.items()}
        into = {j: frames.Incoming(j, frames.code_of(t.dtype), label, into=memoryview(t.numpy()).cast("B"))
                for j, t in receives.items()}
        self._move(out, into, label)

    def exchange_json(self, payload: bytes, *, label: str) -> dict[int, bytes]:
        """Send the same ``payload`` (UTF-8 JSON, at most :data:`~.frames.MAX_PUBLIC_BYTES`) to every other
        party and return theirs, undecoded (1 round; public metadata only)."""
        others = [j for j in range(self.parties) if j != self.rank]
        return self.exchange_text({j: payload for j in others}, others, label=label)

    def exchange_text(self, sends: dict[int, bytes], receives: list[int], *, label: str,
                      limit: int = frames.MAX_PUBLIC_BYTES, patient: bool = False) -> dict[int, bytes]:
        """Send ``sends[j]`` (UTF-8 JSON) to party j and receive one JSON message of at most ``limit`` bytes
        from each party in ``receives``, at once; return those, undecoded (1 round; public values only).
        ``patient``: no deadline (see :meth:`_move`)."""
        for payload in sends.values():
            if len(payload) > frames.MAX_PUBLIC_BYTES:
                raise ValueError(f"public payload of {len(payload)} bytes exceeds {frames.MAX_PUBLIC_BYTES}")
        into = {j: frames.Incoming(j, frames.JSON, label, limit=limit) for j in receives}
        self._move({j: (frames.JSON, memoryview(payload)) for j, payload in sends.items()}, into, label, patient)
        return {j: bytes(incoming.payload) for j, incoming in into.items()}

    def _move(self, out: dict[int, tuple[int, memoryview]], into: dict[int, "frames.Incoming"], label: str,
              patient: bool = False) -> None:
        """Move one round's messages. ``patient``: wait for them without a deadline (a server waiting for its
        next request); a link that closes still ends the wait."""
        if self.delay_s and out:
            time.sleep(self.delay_s)
        pending: dict[int, list[memoryview]] = {}
        for j, (code, payload) in out.items():
            header = frames.header(code, self._next_out[j], label, len(payload))
            self._next_out[j] += 1
            # a small message leaves in one write (one packet, as without a frame); a large one in two
            pending[j] = [memoryview(header + payload)] if len(payload) <= _JOIN_BYTES \
                else [memoryview(header), payload]
        for j, incoming in into.items():
            incoming.expect(self._next_in[j])
            self._next_in[j] += 1
        sent = {j: 0 for j in out}
        got = {j: 0 for j in into}
        last_byte: dict[int, float] = {}  # when the latest byte from each sender arrived in this round
        selector = selectors.DefaultSelector()
        # Links this round neither writes to nor still reads from are watched for closing: a peer that stops
        # (e.g. on a protocol violation it saw) must stop this party too, not leave it waiting for a third. A
        # peer that finished sends a goodbye frame before closing; one that stopped early closes without.
        watched = set(self.links) - set(into)

        def events(j: int) -> int:
            mask = 0
            if pending.get(j):
                mask |= selectors.EVENT_WRITE
            if (j in into and not into[j].done) or j in watched:
                mask |= selectors.EVENT_READ
            return mask

        def working() -> bool:
            return any(pending.values()) or any(not incoming.done for incoming in into.values())

        try:
            for j in self.links:
                if events(j):
                    selector.register(self.links[j], events(j), j)
            deadline = time.monotonic() + self.timeout_s
            while working():
                ready = selector.select(timeout=None if patient else max(0.0, deadline - time.monotonic()))
                if not ready:
                    raise self._deadline_passed(pending, into, label)
                for key, mask in ready:
                    j = key.data
                    link = key.fileobj
                    try:
                        if mask & selectors.EVENT_WRITE and pending.get(j):
                            sent[j] += self._send_some(link, pending[j])
                        if mask & selectors.EVENT_READ and j in into and not into[j].done:
                            while not into[j].done:
                                n = link.recv_into(into[j].window())
                                if n == 0:
                                    raise self._closed_on(j, into[j], last_byte.get(j), label)
                                got[j] += n
                                last_byte[j] = time.monotonic()
                                into[j].advance(n, me=self.rank)
                                if not _buffered(link):
                                    break
                            if into[j].done:
                                watched.add(j)
                        elif mask & selectors.EVENT_READ and j in watched:
                            watched.discard(j)  # the peer is ahead of us (its next message is here) or gone
                            if not socket.socket.recv(link, 1, socket.MSG_PEEK):
                                raise PeerLost(f"connection closed by {self.name(j)} ({self.name(self.rank)}'s link, "
                                               f"step {label!r})", party=j)
                    except (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
                        pass
                    except (ConnectionResetError, BrokenPipeError, ssl.SSLError) as exc:
                        raise PeerLost(f"link to {self.name(j)} failed ({self.name(self.rank)}'s link): {exc}",
                                       party=j) from exc
                    remaining = events(j)
                    if remaining:
                        selector.modify(link, remaining, j)
                    else:
                        selector.unregister(link)
        except PeerLost as exc:  # a link closed: a frame stalled on another is the stronger evidence
            stalled = None if isinstance(exc, ProtocolViolation) else self._stalled(into, last_byte, label)
            if stalled is None:
                raise
            raise stalled from exc
        finally:
            selector.close()
            moved_out, moved_in = sum(sent.values()), sum(got.values())
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
    def open_shares(self, share: torch.Tensor, *, label: str, xor: bool = False) -> tuple[torch.Tensor, int]:
        """Every party's ``share`` combined (sum in Z_2^64, or XOR of words), delivered to every party;
        returns (the combination, rounds). Plans (:func:`mpcdp.transport.costs.opening_plan`):

        * ``direct`` (2 parties): each sends its share to the other. 1 round, 8d bytes each way.
        * ``star`` (while party 0 relays at most 64 KiB, (m−1)·8d): shares to party 0, which combines them
          and sends the result back.
          2 rounds; party 0 sends and receives (m−1)·8d bytes, the others 8d. Party 0 sees each party's
          share — one additive share, uniformly masked, like any partial sum.
        * ``scatter`` (larger): the vector is cut into m chunks; party i combines chunk i of every share
          (reduce-scatter) and sends the result to all (all-gather). 2 rounds, ≈ 2(m−1)/m·8d bytes each.
        """
        flat = share.reshape(-1).contiguous()
        plan = costs.opening_plan(flat.numel(), self.parties)
        me, m = self.rank, self.parties

        def combine(into: torch.Tensor, other: torch.Tensor) -> None:
            if xor:
                into ^= other
            else:
                into += other

        result = flat.clone()
        if plan == "direct":
            other = torch.empty_like(flat)
            self.exchange({1 - me: flat}, {1 - me: other}, label=label)
            combine(result, other)
            return result.reshape(share.shape), 1
        if plan == "star":
            if me == 0:
                incoming = {j: torch.empty_like(flat) for j in range(1, m)}
                self.exchange({}, incoming, label=label)
                for buf in incoming.values():
                    combine(result, buf)
                self.exchange({j: result for j in range(1, m)}, {}, label=label + " (sum)")
            else:
                self.exchange({0: flat}, {}, label=label)
                self.exchange({}, {0: result}, label=label + " (sum)")
            return result.reshape(share.shape), 2
        chunks = torch.tensor_split(flat, m)
        mine = chunks[me].clone()
        incoming = {j: torch.empty_like(chunks[me]) for j in range(m) if j != me}
        self.exchange({j: chunks[j] for j in incoming}, incoming, label=label)
        for buf in incoming.values():
            combine(mine, buf)
        gathered = {j: torch.empty_like(chunks[j]) for j in range(m) if j != me}
        self.exchange({j: mine for j in gathered}, gathered, label=label + " (sum)")
        gathered[me] = mine
        return torch.cat([gathered[j] for j in range(m)]).reshape(share.shape), 2

    def exchange_int64(self, vector: torch.Tensor, *, label: str) -> tuple[torch.Tensor, int]:
        """Every party's fixed-size public int64 ``vector``, stacked in rank order (1 round)."""
        vector = vector.to(torch.int64).contiguous()
        out = [vector if j == self.rank else torch.empty_like(vector) for j in range(self.parties)]
        others = [j for j in range(self.parties) if j != self.rank]
        self.exchange({j: vector for j in others}, {j: out[j] for j in others}, label=label)
        return torch.stack(out), 1


def _locate_by_rendezvous(timeout_s: float, processes: int, dealer: int | None):
    def locate(rank: int, mine: tuple[str, int], peers: list[int]) -> dict[int, tuple[str, int]]:
        rendezvous.publish_endpoint(rank, *mine, processes)
        return rendezvous.endpoints(peers, processes=processes, timeout_s=timeout_s, dealer=dealer,
                                    listening=mine[0])

    return locate


def _buffered(link: socket.socket) -> bool:
    """Whether a TLS link holds decrypted bytes that the selector will not announce."""
    return isinstance(link, ssl.SSLSocket) and link.pending() > 0


INSECURE_LINKS_WARNING = (
    "plain links (--insecure-links, MPCDP_INSECURE_LINKS=1): this process's links and the rendezvous store are "
    "plain TCP, neither authenticated nor encrypted. Anyone who can reach them - another host on the network, or "
    "another user of this host over loopback - can read and alter every share the parties exchange, the "
    "dealer's keys and material, the released values, and the rendezvous (and so join the run in a party's "
    "place). To close them, drop --insecure-links (unset MPCDP_INSECURE_LINKS) and give every process the "
    "deployment's credentials (`mpcdp credentials`, then --credentials DIR or MPCDP_CREDENTIALS); local runs "
    "(`mpcdp train`, the harness) make their own.")


def _consent_to_plain_links(rank: int, insecure: bool) -> None:
    """Plain links only when asked for (``--insecure-links``), with a warning that says what they expose."""
    if not insecure:
        raise ConfigError(
            f"party {rank} has no TLS credentials: links must be authenticated, on one host as across hosts. "
            f"Give every process its credentials (`--credentials DIR` or MPCDP_CREDENTIALS, made by `mpcdp "
            f"credentials`; local runs such as `mpcdp train` make their own), or pass `--insecure-links` to send "
            f"plain TCP knowingly.", party=rank)
    warnings.warn(f"party {rank}: {INSECURE_LINKS_WARNING}", InsecureSettingWarning, stacklevel=3)


def _connect(rank: int, peer: int, endpoint: tuple[str, int], security: LinkSecurity | None, timeout_s: float,
             dealer: int | None) -> socket.socket:
    """The link from this process to ``peer`` (a lower rank) at ``endpoint``: TLS checked to be ``peer``'s
    certificate where there is ``security``; this rank announced."""
    try:
        link = socket.create_connection(endpoint, timeout=timeout_s)
    except socket.timeout:
        raise PeerTimeout(f"Timed out after {timeout_s} s connecting to {rendezvous.who(peer, dealer)} at "
                          f"{endpoint[0]}:{endpoint[1]}", party=peer) from None
    if security is not None:
        try:
            link = security.client.wrap_socket(link, server_side=False)
        except (ssl.SSLError, OSError) as exc:
            link.close()
            raise ProtocolViolation(f"the TLS handshake with {rendezvous.who(peer, dealer)} failed "
                                    f"({rendezvous.who(rank, dealer)}'s link): {exc}", party=peer) from None
        if security.peer_rank(link) != peer:
            link.close()
            raise ProtocolViolation(f"the process at {rendezvous.who(peer, dealer)}'s address presented the "
                                    f"certificate of {security.peer_rank(link)!r}", party=peer)
    link.sendall(struct.pack("<i", rank))
    return link


class _Arrival:
    """One accepted connection, until it has finished its TLS handshake (with ``security``) and announced its
    rank in 4 bytes; non-blocking, so that it never holds up the listener or another arrival."""

    def __init__(self, raw: socket.socket, origin: str, security: LinkSecurity | None, expires: float):
        raw.setblocking(False)
        self.origin, self.expires = origin, expires
        self.link = security.server.wrap_socket(raw, server_side=True, do_handshake_on_connect=False) \
            if security is not None else raw
        self.shaking = security is not None
        self.announced = b""

    def step(self) -> int:
        """Go as far as the bytes at hand allow; return the selector events to wait for next, or 0 once the
        rank is announced.

        Raises:
            OSError, ssl.SSLError: the handshake failed or the connection closed.
        """
        try:
            if self.shaking:
                self.link.do_handshake()
                self.shaking = False
            while len(self.announced) < 4:
                chunk = self.link.recv(4 - len(self.announced))
                if not chunk:
                    raise ConnectionError("it closed the connection")
                self.announced += chunk
            return 0
        except ssl.SSLWantWriteError:
            return selectors.EVENT_WRITE
        except (ssl.SSLWantReadError, BlockingIOError, InterruptedError):
            return selectors.EVENT_READ


class _Arrivals:
    """The accepting side of :meth:`Mesh.establish`: the links from every higher rank, taken from whoever
    connects to the listener, each connection checked on its own (:class:`_Arrival`)."""

    def __init__(self, rank: int, processes: int, security: LinkSecurity | None, dealer: int | None):
        self.rank, self.processes, self.security, self.dealer = rank, processes, security, dealer
        self.pending: dict[socket.socket, _Arrival] = {}
        self.refused: list[str] = []
        self.selector = selectors.DefaultSelector()

    def accept(self, listener: socket.socket, links: dict[int, socket.socket], deadline: float,
               timeout_s: float) -> None:
        """Add the links of ranks ``rank``+1.. to ``links``; raise :class:`PeerTimeout` at ``deadline``."""
        listener.setblocking(False)
        listening = False
        try:
            while len(links) < self.processes - 1:
                now = time.monotonic()
                for arrival in [a for a in self.pending.values() if a.expires <= now]:
                    self._refuse(arrival, f"no TLS handshake and rank within {HANDSHAKE_S:g} s" if self.security
                                 else f"no rank within {HANDSHAKE_S:g} s")
                if now >= deadline:
                    raise self._timeout(links, timeout_s)
                if listening != (len(self.pending) < MAX_PENDING):
                    listening = not listening
                    (self.selector.register if listening else self.selector.unregister)(
                        *((listener, selectors.EVENT_READ, None) if listening else (listener,)))
                wake = min([deadline, *(a.expires for a in self.pending.values())])
                for key, _ in self.selector.select(timeout=max(0.0, wake - now)):
                    if key.data is None:
                        self._take(listener, links)
                    else:
                        self._advance(key.data, links)
        finally:
            for arrival in list(self.pending.values()):
                self._refuse(arrival, "still unfinished when every process had its link")
            self.selector.close()

    def _take(self, listener: socket.socket, links: dict[int, socket.socket]) -> None:
        while len(self.pending) < MAX_PENDING:
            try:
                raw, origin = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # e.g. out of file descriptors: leave it in the backlog for now
                print(f"mpcdp {self._who(self.rank)}: could not accept a connection: {exc}", file=sys.stderr,
                      flush=True)
                return
            try:
                arrival = _Arrival(raw, origin[0], self.security, time.monotonic() + HANDSHAKE_S)
            except (ssl.SSLError, OSError) as exc:
                raw.close()
                self._report(origin[0], str(exc))
                continue
            self.pending[arrival.link] = arrival
            self.selector.register(arrival.link, selectors.EVENT_READ, arrival)
            self._advance(arrival, links)

    def _advance(self, arrival: _Arrival, links: dict[int, socket.socket]) -> None:
        try:
            events = arrival.step()
        except (ssl.SSLError, OSError) as exc:
            self._refuse(arrival, str(exc) or type(exc).__name__)
            return
        if events:
            self.selector.modify(arrival.link, events, arrival)
            return
        peer = struct.unpack("<i", arrival.announced)[0]
        problem = self._claim_problem(peer, arrival.link, links)
        if problem:
            self._refuse(arrival, problem)
            return
        self.selector.unregister(arrival.link)
        del self.pending[arrival.link]
        links[peer] = arrival.link

    def _claim_problem(self, peer: int, link: socket.socket, links: dict[int, socket.socket]) -> str | None:
        if not self.rank < peer < self.processes:
            return f"it announced rank {peer}, not one that connects to {self._who(self.rank)}"
        if peer in links:
            return f"it announced rank {peer}, which already has its link"
        if self.security is not None and self.security.peer_rank(link) != peer:
            return f"it announced rank {peer} with the certificate of {self.security.peer_rank(link)!r}"
        return None

    def _refuse(self, arrival: _Arrival, why: str) -> None:
        self.pending.pop(arrival.link, None)
        try:
            self.selector.unregister(arrival.link)
        except (KeyError, ValueError):
            pass
        arrival.link.close()
        self._report(arrival.origin, why)

    def _report(self, origin: str, why: str) -> None:
        self.refused.append(f"{origin} ({why})")
        print(f"mpcdp {self._who(self.rank)}: refused a connection from {origin}: {why}", file=sys.stderr,
              flush=True)

    def _timeout(self, links: dict[int, socket.socket], timeout_s: float) -> PeerTimeout:
        missing = sorted(set(range(self.processes)) - set(links) - {self.rank})
        note = f"; refused {len(self.refused)} connection(s): {'; '.join(self.refused[:10])}" if self.refused else ""
        return PeerTimeout(f"Timed out after {timeout_s} s connecting the parties' links; no link to "
                           f"{', '.join(map(self._who, missing))}{note}", party=missing[0] if missing else None)

    def _who(self, j: int) -> str:
        return rendezvous.who(j, self.dealer)
