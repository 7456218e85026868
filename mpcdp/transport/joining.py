"""How a process's links come up (once per run, before the configuration handshake; public metadata only):
every process listens on the address through which it reaches the rendezvous host (or ``--iface``'s),
publishes it in the rendezvous store (:mod:`.rendezvous`), connects to every process of a lower rank,
announcing its rank, and accepts the others (:func:`establish`); :class:`~.mesh.Mesh` makes meshes of the
links.

Security model: with credentials (:mod:`.credentials`) every link is TLS 1.3, mutually authenticated by the
deployment's CA, and a peer is the rank its certificate names; a connection that does not present this
deployment's certificate for the rank it claims is refused and reported while the genuine process is
awaited. The listener takes every connection at once; each admitted connection's handshake runs without
blocking the others, under its own deadline (:data:`HANDSHAKE_S`), at most ``max(16, processes)`` at once
per source, the rest parked unanswered by the gate (:mod:`.gate`); a connecting process retries a connection
that was reset or closed before its handshake ended until its own deadline. Without credentials links are plain TCP only
with ``--insecure-links``, which warns (:data:`INSECURE_LINKS_WARNING`). Cost: one TCP (and TLS) handshake
and a 4-byte rank announcement per pair of processes.
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

from mpcdp.errors import ConfigError, InsecureSettingWarning, PeerTimeout, ProtocolViolation
from mpcdp.transport import rendezvous
from mpcdp.transport.credentials import LinkSecurity
from mpcdp.transport.gate import PER_SOURCE, Gate

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


HANDSHAKE_S = 5.0  # an accepted connection has this long to finish its TLS handshake and announce its rank
ACCEPT_BATCH = 256  # connections taken from the backlog per wake (then the arrivals in hand get their turn)
CONNECT_RETRY_S = 0.1  # first pause before connecting again to a peer whose listener reset the connection


def establish(rank: int, processes: int, *, address: str, timeout_s: float,
              security: LinkSecurity | None = None, insecure: bool = False,
              locate: Callable[[int, tuple[str, int], list[int]], dict[int, tuple[str, int]]] | None = None,
              dealer: int | None = None) -> dict[int, socket.socket]:
    """Connect this process to every other process of the run (ranks 0..``processes``−1; the dealer, if
    any, is the last) and return the connected links by rank; :class:`~.mesh.Mesh` makes meshes of them.

    ``locate(rank, (host, port), peers)`` publishes this process's listener and returns the peers'
    (default: through the rendezvous store, :mod:`.rendezvous`). ``dealer``: the dealer's rank, if any
    (for naming it in errors).

    ``security``: this rank's TLS 1.3 credentials (:mod:`.credentials`); every link is then mutually
    authenticated and encrypted, and a connection that does not present this deployment's certificate
    for the rank it claims is refused (and reported on stderr) while the genuine process is awaited.
    Without it, links are plain TCP only with ``insecure`` (``--insecure-links``), on one host as across
    hosts, which warns (:data:`INSECURE_LINKS_WARNING`).

    The listener serves each accepted connection's handshake and rank announcement without blocking,
    under its own deadline (:data:`HANDSHAKE_S`), a few per source at once (:mod:`.gate`): a connection
    that fails, stalls or claims a rank it may not is closed and reported once per source, and the genuine
    process is awaited until the run's deadline. No thread is started.
    """
    if security is None:
        _consent_to_plain_links(rank, insecure)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind((address, 0))
    listener.listen(socket.SOMAXCONN)
    others = [j for j in range(processes) if j != rank]
    endpoints = (locate or _locate_by_rendezvous(timeout_s, processes, dealer))(rank, (address, listener.getsockname()[1]), others)
    links: dict[int, socket.socket] = {}
    deadline = time.monotonic() + timeout_s
    try:
        for peer in range(rank):
            links[peer] = _connect(rank, peer, tuple(endpoints[peer]), security, deadline, dealer)
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


def _locate_by_rendezvous(timeout_s: float, processes: int, dealer: int | None):
    def locate(rank: int, mine: tuple[str, int], peers: list[int]) -> dict[int, tuple[str, int]]:
        rendezvous.publish_endpoint(rank, *mine, processes)
        return rendezvous.endpoints(peers, processes=processes, timeout_s=timeout_s, dealer=dealer,
                                    listening=mine[0])

    return locate


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


def _connect(rank: int, peer: int, endpoint: tuple[str, int], security: LinkSecurity | None, deadline: float,
             dealer: int | None) -> socket.socket:
    """The link from this process to ``peer`` (a lower rank) at ``endpoint``: TLS checked to be ``peer``'s
    certificate where there is ``security``; this rank announced. A connection refused, reset or closed
    before its handshake ended (a listener under a flood may hold it back, :mod:`.gate`) is tried again,
    with a growing pause, until ``deadline``."""
    pause = CONNECT_RETRY_S
    while True:
        try:
            return _connect_once(rank, peer, endpoint, security, deadline, dealer)
        except ConnectionRefusedError:  # nothing listens there any more: the peer is gone, say so at once
            raise
        except (ConnectionError, ssl.SSLEOFError, socket.timeout) as exc:
            if time.monotonic() + pause >= deadline:
                raise PeerTimeout(f"Timed out connecting to {rendezvous.who(peer, dealer)} at {endpoint[0]}:"
                                  f"{endpoint[1]} ({type(exc).__name__}: {exc})", party=peer) from None
            time.sleep(pause)
            pause = min(2 * pause, 2.0)


def _connect_once(rank: int, peer: int, endpoint: tuple[str, int], security: LinkSecurity | None, deadline: float,
                  dealer: int | None) -> socket.socket:
    link = socket.create_connection(endpoint, timeout=max(0.1, min(HANDSHAKE_S, deadline - time.monotonic())))
    if security is not None:
        try:
            link = security.client.wrap_socket(link, server_side=False)
        except (ssl.SSLEOFError, ConnectionError, socket.timeout):
            link.close()
            raise
        except (ssl.SSLError, OSError) as exc:
            link.close()
            raise ProtocolViolation(f"the TLS handshake with {rendezvous.who(peer, dealer)} failed "
                                    f"({rendezvous.who(rank, dealer)}'s link): {exc}", party=peer) from None
        if security.peer_rank(link) != peer:
            link.close()
            raise ProtocolViolation(f"the process at {rendezvous.who(peer, dealer)}'s address presented the "
                                    f"certificate of {security.peer_rank(link)!r}", party=peer)
    link.sendall(struct.pack("<i", rank))
    link.settimeout(None)
    return link


class _Arrival:
    """One accepted connection, until it has finished its TLS handshake (with ``security``) and announced its
    rank in 4 bytes; non-blocking, so that it never holds up the listener or another arrival."""

    def __init__(self, raw: socket.socket, origin: str, source: str, security: LinkSecurity | None, expires: float):
        raw.setblocking(False)
        self.origin, self.source, self.expires = origin, source, expires
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
            if self.shaking and isinstance(self.link, ssl.SSLSocket):  # (shaking: the link is TLS)
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
        self.shown: set[str] = set()
        self.closing = False
        self.links: dict[int, socket.socket] = {}
        self.selector = selectors.DefaultSelector()
        self.gate = Gate(max(PER_SOURCE, processes), hold_s=HANDSHAKE_S, who=rendezvous.who(rank, dealer))

    def accept(self, listener: socket.socket, links: dict[int, socket.socket], deadline: float,
               timeout_s: float) -> None:
        """Add the links of ranks ``rank``+1.. to ``links``; raise :class:`PeerTimeout` at ``deadline``."""
        listener.setblocking(False)
        self.links = links
        self.selector.register(listener, selectors.EVENT_READ, None)
        try:
            while len(links) < self.processes - 1:
                now = time.monotonic()
                for arrival in [a for a in self.pending.values() if a.expires <= now]:
                    self._refuse(arrival, f"no TLS handshake and rank within {HANDSHAKE_S:g} s" if self.security
                                 else f"no rank within {HANDSHAKE_S:g} s")
                self.gate.expire()
                if now >= deadline:
                    raise self._timeout(links, timeout_s)
                wake = min([deadline, *(a.expires for a in self.pending.values()),
                            *filter(None, [self.gate.next_expiry()])])
                for key, _ in self.selector.select(timeout=max(0.0, wake - now)):
                    if key.data is None:
                        self._take(listener, links)
                    elif key.data.link in self.pending:
                        self._advance(key.data, links)
        finally:
            self.closing = True
            for arrival in list(self.pending.values()):
                self._refuse(arrival, "still unfinished when every process had its link")
            self.gate.close()
            self.selector.close()

    def _take(self, listener: socket.socket, links: dict[int, socket.socket]) -> None:
        """Every connection in the backlog (up to :data:`ACCEPT_BATCH`), sorted by the gate; the admitted
        ones start their handshake."""
        batch: list[tuple[socket.socket, tuple[str, int]]] = []
        while len(batch) < ACCEPT_BATCH:
            try:
                raw, origin = listener.accept()
            except (BlockingIOError, InterruptedError):
                break
            except OSError as exc:  # e.g. out of file descriptors: leave it in the backlog for now
                print(f"mpcdp {self._who(self.rank)}: could not accept a connection: {exc}", file=sys.stderr,
                      flush=True)
                break
            batch.append((raw, origin))
        self._start(self.gate.sort(batch), links)

    def _start(self, admitted: list[tuple[socket.socket, str, str]], links: dict[int, socket.socket]) -> None:
        for raw, origin, source in admitted:
            try:
                arrival = _Arrival(raw, origin, source, self.security, time.monotonic() + HANDSHAKE_S)
            except (ssl.SSLError, OSError) as exc:
                raw.close()
                self._report(source, str(exc))
                self._start(self.gate.release(source), links)
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
        self._start(self.gate.release(arrival.source), links)

    def _claim_problem(self, peer: int, link: socket.socket, links: dict[int, socket.socket]) -> str | None:
        if not self.rank < peer < self.processes:
            return f"it announced rank {peer}, not one that connects to {self._who(self.rank)}"
        if peer in links:
            return f"it announced rank {peer}, which already has its link"
        if self.security is not None and self.security.peer_rank(link) != peer:
            return f"it announced rank {peer} with the certificate of {self.security.peer_rank(link)!r}"
        return None

    def _refuse(self, arrival: _Arrival, why: str) -> None:
        if self.pending.pop(arrival.link, None) is None:
            return
        try:
            self.selector.unregister(arrival.link)
        except (KeyError, ValueError):
            pass
        arrival.link.close()
        self._report(arrival.source, why)
        promoted = self.gate.release(arrival.source)
        if self.closing:
            for raw, _, _ in promoted:
                raw.close()
        else:
            self._start(promoted, self.links)

    def _report(self, source: str, why: str) -> None:
        """Count a refusal; show the first from each source on stderr."""
        self.refused.append(f"{source} ({why})")
        if source not in self.shown:
            self.shown.add(source)
            print(f"mpcdp {self._who(self.rank)}: refused a connection from {source}: {why} (later refusals from "
                  f"it are counted, not shown)", file=sys.stderr, flush=True)

    def _timeout(self, links: dict[int, socket.socket], timeout_s: float) -> PeerTimeout:
        missing = sorted(set(range(self.processes)) - set(links) - {self.rank})
        note = f"; refused {len(self.refused)} connection(s): {'; '.join(self.refused[:10])}" if self.refused else ""
        held = self.gate.summary()
        note += f"; {held}" if held else ""
        return PeerTimeout(f"Timed out after {timeout_s} s connecting the parties' links; no link to "
                           f"{', '.join(map(self._who, missing))}{note}", party=missing[0] if missing else None)

    def _who(self, j: int) -> str:
        return rendezvous.who(j, self.dealer)
