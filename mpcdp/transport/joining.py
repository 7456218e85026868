"""How a process's links come up (once per run, before the configuration handshake; public metadata only):
every process listens on the address through which it reaches the rendezvous host (or ``--iface``'s),
publishes it in the rendezvous store (:mod:`.rendezvous`), connects to every process of a lower rank,
announcing its rank, and accepts the others (:func:`establish`); :class:`~.mesh.Mesh` makes meshes of the
links.

Security model: with credentials (:mod:`.credentials`) every link is TLS 1.3, mutually authenticated by the
deployment's CA, and a peer is the rank its certificate names; a connection that does not present this
deployment's certificate for the rank it claims is refused and reported while the genuine process is
awaited. Each accepted connection's handshake runs without blocking the others, under its own deadline
(:data:`HANDSHAKE_S`), at most :data:`MAX_PENDING` at once. Without credentials links are plain TCP only
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
MAX_PENDING = 32  # accepted connections in that phase at once; later ones wait in the kernel's backlog


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
