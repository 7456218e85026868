"""The rendezvous key-value store itself: its wire format, the schema of every value it holds, the server party
0's process hosts and the client every process holds (:mod:`.rendezvous` says what the run keeps in it).

Wire format: each request and reply is a 4-byte little-endian length and at most :data:`MAX_MESSAGE_BYTES`
of UTF-8 JSON nested at most :data:`MAX_JSON_DEPTH` deep (checked before it is parsed):
``{"op": "get", "key"}`` or ``{"op": "set", "key", "value"}`` → ``{"value"}``; ``{"op": "written", "key": prefix}``
→ ``{"written": hex}``, which ranks' keys of one family hold a value (bit r: rank r; one request where a waiting
process would read every rank's key); or ``{"error"}`` followed by the connection's close. Nothing is unpickled.

Schema: only three families of keys may be written, three keys per rank of the run (rank < ``processes``;
claims also for :data:`~.store_values.CLAIM_STRAYS` ranks beyond, a process started with a RANK beyond the run's):

* ``mpcdp/endpoint/<rank>``: ``'IPv4 port processes'`` (where that rank listens, :func:`parse_endpoint`);
* ``mpcdp/claim/<rank>``: ``'parties processes nonce'`` (the place a process was started with, :mod:`.claims`);
* ``mpcdp/report/<rank>``: ``{"suspect": j | null, "evidence": kind}``, that rank's loss report
  (:func:`parse_report`, :mod:`.losses`), or that party's refusal of its own input (:mod:`mpcdp.refusals`).

Every value is parsed against that schema by the server when it is written and again by every reader (a
torchrun agent store or a file store has no such server). Each key is written once: a second write of
another value is refused (two processes claiming one rank).

Security model: with credentials the store's connections are TLS 1.3, the server presents rank 0's
certificate and every client its own, and a client may write only the keys of its own rank: a member can
publish no endpoint and no loss report but its own. Without them (one host, or ``--insecure-links``) any
process that reaches the store can write any rank's key once, within the schema; readers then accept
endpoints only inside the run's network (:func:`mpcdp.transport.rendezvous.endpoints`).

Bounds: the listener binds one address (the rendezvous host's, :func:`mpcdp.transport.rendezvous.bind_address`)
and takes every connection at once; a gate (:mod:`.gate`) admits at most ``max(16, processes)`` per source
(its address, and its user where it is on this host) to their TLS handshake and first request at once, one
thread each, and parks the rest unanswered (no thread) until one of that source's finishes or
``request_s`` passes; past its first request a connection counts against ``max_connections`` without
credentials, and under TLS a rank holds one connection (its newest); the TLS handshake and the first request must complete
within ``request_s`` of the connection's accept, on the connection's own thread, and every later request
within ``request_s`` of its first byte; between requests a connection may stay idle while the store runs
(the run's processes hold theirs from the rendezvous to the end of the run). Keys are bounded by the schema
(three per rank) and stored bytes by :attr:`StoreServer.max_stored_bytes`. Every refusal closes the connection
and is reported once per source (the writer's rank, or its address) on party 0's stderr.
Cost: one thread and one connection per process of the run; requests of at most a few hundred bytes.
"""

from __future__ import annotations

import datetime
import socket
import ssl
import struct
import sys
import threading
import time
from typing import Protocol

from mpcdp.errors import ConfigError, PeerLost, PeerTimeout, ProtocolViolation
from mpcdp.transport.gate import PER_SOURCE, Gate
from mpcdp.transport.store_values import (CLAIM_PREFIX, CLAIM_STRAYS, ENDPOINT_PREFIX, MAX_JSON_DEPTH, MAX_MESSAGE_BYTES, MAX_RANKS,
                                          MAX_VALUE_BYTES, REPORT_PREFIX, REQUEST_S, _recv_exactly, _shown, key_rank,
                                          loads_bounded, parse_claim, parse_endpoint, parse_report, read_reply,
                                          write_message)

_SHOWN_SOURCES = 32  # refusals reported on stderr: the first from each source, for this many sources


class _Refused(Exception):
    """A request or connection the store refuses (the text says why)."""


class _Left(Exception):
    """The client closed its connection between requests."""


class StoreServer:
    """The key-value store party 0 hosts at ``host:port``, one thread per connection (daemon threads).

    Counters for whoever watches it: :attr:`active` and :attr:`peak` connections, :attr:`stored_bytes`,
    :attr:`refusals` (count per source) and :attr:`shown` (the refusal lines written to stderr, in order).
    """

    def __init__(self, port: int, security=None, *, host: str = "127.0.0.1", processes: int | None = None,
                 request_s: float = REQUEST_S, max_connections: int | None = None):
        self.security = security
        self.ranks = processes or MAX_RANKS
        self.request_s = float(request_s)
        self.max_connections = max_connections or (max(16, 2 * processes + 8) if processes else 64)
        self.max_stored_bytes = (3 * min(self.ranks, 1024) + CLAIM_STRAYS) * (MAX_VALUE_BYTES + 32)
        self.values: dict[str, str] = {}
        self.stored_bytes = 0
        self.active = self.peak = self.established = 0
        self.refusals: dict[str, int] = {}
        self.shown: list[str] = []
        self.gate = Gate(max(PER_SOURCE, self.ranks if processes else PER_SOURCE), hold_s=self.request_s,
                         who="party 0 (the rendezvous)")
        self.lock = threading.Lock()
        self._by_rank: dict[int, socket.socket] = {}
        self._open: set[socket.socket] = set()
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.listener.bind((host, port))
        except OSError as exc:
            self.listener.close()
            raise ConfigError(f"the rendezvous {host}:{port} cannot be opened on party 0's host: {exc}") from None
        self.listener.listen(socket.SOMAXCONN)
        self.address = self.listener.getsockname()
        self.listener.settimeout(0.25)  # the accept loop wakes to reset parked connections past their hold time
        threading.Thread(target=self._accept, daemon=True, name="mpcdp-rendezvous").start()

    def close(self) -> None:
        """Stop accepting and close every connection."""
        self.listener.close()
        with self.lock:
            self.gate.close()
            for link in list(self._open):
                _shut(link)

    def holders(self) -> frozenset[int] | None:
        """The ranks holding a connection now (under TLS each rank's newest: a process's closes when it exits);
        None without credentials, where a connection names no rank."""
        if self.security is None:
            return None
        with self.lock:
            return frozenset(self._by_rank)

    def _accept(self) -> None:
        """Take every connection at once (the backlog never fills); the gate admits it to a thread now or
        parks it (:mod:`.gate`)."""
        while True:  # set before the thread starts: a store closed at once must not fail here
            try:
                raw, origin = self.listener.accept()
            except socket.timeout:
                with self.lock:
                    self.gate.expire()
                continue
            except OSError:
                return
            with self.lock:
                admitted = self.gate.sort([(raw, origin), *self._backlog()])  # one table read per batch
                self.gate.expire()
            self._launch(admitted)

    def _backlog(self, most: int = 256) -> list[tuple[socket.socket, tuple[str, int]]]:
        """The connections already waiting in the backlog (up to ``most``), without blocking."""
        taken: list[tuple[socket.socket, tuple[str, int]]] = []
        self.listener.setblocking(False)
        try:
            while len(taken) < most:
                taken.append(self.listener.accept())
        except OSError:  # BlockingIOError: none left (or the listener closed: the accept loop sees it)
            pass
        finally:
            try:
                self.listener.settimeout(0.25)
            except OSError:
                pass
        return taken

    def _launch(self, admitted: list[tuple[socket.socket, str, str]]) -> None:
        for raw, origin, source in admitted:
            raw.settimeout(None)
            with self.lock:
                self.active += 1
                self.peak = max(self.peak, self.active)
                self._open.add(raw)
            try:
                threading.Thread(target=self._serve, args=(raw, origin, source), daemon=True,
                                 name="mpcdp-rendezvous-client").start()
            except RuntimeError:  # no thread to be had: refuse this one
                self._release(raw, None)
                self._left_handshake(source)
                self._refuse(origin, "no thread left to serve it")

    def _left_handshake(self, source: str) -> None:
        """A connection of ``source`` finished its first request (or failed before): its place goes to the
        next parked connection of that source."""
        with self.lock:
            promoted = self.gate.release(source)
        self._launch(promoted)

    def _serve(self, raw: socket.socket, origin: str, gate_source: str) -> None:
        source, writer, link, greeting = origin, None, raw, True
        deadline: float | None  # the first request's; None (no deadline) for the later ones
        try:
            deadline = time.monotonic() + self.request_s
            link = self._handshake(raw, origin, deadline)
            if self.security is not None:
                writer = self.security.peer_rank(link)
                source = f"rank {writer} ({origin})"
                self._hold(writer, link)
            while True:
                request = self._next_request(link, deadline)
                deadline = None
                reply = self._apply(request, writer)
                link.settimeout(self.request_s)
                write_message(link, reply)
                if greeting:
                    greeting = False
                    self._left_handshake(gate_source)
                    self._admit_established(writer)
        except _Left:
            pass
        except _Refused as exc:
            self._refuse(source, str(exc))
            if self.security is None or link is not raw:
                self._tell(link, str(exc))
        except (OSError, ValueError) as exc:  # ssl.SSLError and ConnectionError are OSErrors
            self._refuse(source, f"its connection failed ({type(exc).__name__}: {str(exc)[:120]})")
        except Exception as exc:  # noqa: BLE001 - nothing a client sends may end the store's host
            self._refuse(source, f"a request the store could not take ({type(exc).__name__})")
        finally:
            if greeting:
                self._left_handshake(gate_source)
            else:
                with self.lock:
                    self.established -= 1
            self._release(raw, writer, link)

    def _admit_established(self, writer: int | None) -> None:
        """Count a connection past its first request; without credentials at most ``max_connections`` such
        (under TLS each rank holds one, :meth:`_hold`)."""
        with self.lock:
            self.established += 1
            over = self.security is None and self.established > self.max_connections
        if over:
            raise _Refused(f"more than {self.max_connections} connections at once")

    def _handshake(self, raw: socket.socket, origin: str, deadline: float) -> socket.socket:
        """TLS (with credentials) under the connection's first deadline; the peer's rank must be named."""
        if self.security is None:
            return raw
        raw.settimeout(max(0.001, deadline - time.monotonic()))
        try:
            link = self.security.server.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError) as exc:
            raise _Refused(f"its TLS handshake failed or did not end within {self.request_s} s: {exc}") from None
        if self.security.peer_rank(link) is None:
            raise _Refused("its certificate names no rank")
        with self.lock:
            self._open.add(link)
        return link

    def _hold(self, rank: int, link: socket.socket) -> None:
        """A rank holds one connection: its newest (the older one is closed)."""
        with self.lock:
            older = self._by_rank.get(rank)
            self._by_rank[rank] = link
        if older is not None:
            _shut(older)

    def _release(self, raw: socket.socket, writer: int | None, link: socket.socket | None = None) -> None:
        for end in {raw} if link is None else {raw, link}:
            end.close()
        with self.lock:
            self.active -= 1
            self._open.discard(raw)
            self._open.discard(link)
            if writer is not None and self._by_rank.get(writer) is link:
                del self._by_rank[writer]

    def _next_request(self, link: socket.socket, first_deadline: float | None):
        """The next request: its first byte by ``first_deadline`` (None: whenever), the rest within
        ``request_s`` of that byte."""
        link.settimeout(None if first_deadline is None else max(0.001, first_deadline - time.monotonic()))
        try:
            first = link.recv(1)
        except socket.timeout:
            raise _Refused(f"it sent no request within {self.request_s} s of connecting") from None
        if not first:
            raise _Left()
        deadline = time.monotonic() + self.request_s
        if first_deadline is not None:
            deadline = min(deadline, first_deadline)
        try:
            (n,) = struct.unpack("<I", first + _recv_exactly(link, 3, deadline))
            if n > MAX_MESSAGE_BYTES:
                raise _Refused(f"a message of {n} bytes (at most {MAX_MESSAGE_BYTES})")
            body = _recv_exactly(link, n, deadline)
        except socket.timeout:
            raise _Refused(f"a request did not arrive in full within {self.request_s} s of its first byte") from None
        except ConnectionError:
            raise _Refused("it closed the connection in the middle of a request") from None
        try:
            return loads_bounded(body, MAX_JSON_DEPTH)
        except ValueError as exc:
            raise _Refused(f"a request that is not store JSON: {exc}") from None

    def _apply(self, request, writer: int | None) -> dict:
        if not isinstance(request, dict) or not isinstance(request.get("key"), str):
            raise _Refused("not a store request")
        op, key = request.get("op"), request["key"]
        if op == "get" and set(request) == {"op", "key"}:
            with self.lock:
                return {"value": self.values.get(key)}
        if op == "written" and set(request) == {"op", "key"}:
            return {"written": self._written(key)}
        if op != "set" or set(request) != {"op", "key", "value"} or not isinstance(request["value"], str):
            raise _Refused(f"not a store request (op {_shown(str(op))})")
        value = request["value"]
        self._check_write(key, value, writer)
        with self.lock:
            held = self.values.get(key)
            if held is not None and held != value:
                raise _Refused(f"{key} is written already (each key once: another process claims that rank)")
            if held is None:
                size = len(key) + len(value)
                if self.stored_bytes + size > self.max_stored_bytes:
                    raise _Refused(f"the store holds {self.stored_bytes} bytes already")
                self.values[key] = value
                self.stored_bytes += size
        return {"value": value}

    def _written(self, prefix: str) -> str:
        """The ranks whose ``prefix`` key holds a value, as a hex bitmap (at most 1,026 digits: every writable rank)."""
        if prefix not in (ENDPOINT_PREFIX, REPORT_PREFIX, CLAIM_PREFIX):
            raise _Refused(f"not a store request (written {_shown(prefix)})")
        with self.lock:
            ranks = [rank for rank in range(self.ranks + CLAIM_STRAYS) if prefix + str(rank) in self.values]
        return format(sum(1 << rank for rank in ranks), "x")

    def _check_write(self, key: str, value: str, writer: int | None) -> None:
        """The key is a rank's endpoint or report, of a rank of the run, the writer's own under TLS, and the
        value fits that key's schema."""
        family = key_rank(key)
        if family is None:
            raise _Refused(f"it may not write {_shown(key)} (only mpcdp/endpoint/<rank> and mpcdp/report/<rank>)")
        prefix, rank = family
        if rank >= self.ranks + (CLAIM_STRAYS if prefix == CLAIM_PREFIX else 0):
            raise _Refused(f"it may not write {key}: the run has ranks 0..{self.ranks - 1}")
        if self.security is not None and rank != writer:
            raise _Refused(f"rank {writer} may not write {key} (another rank's)")
        if len(value.encode("utf-8")) > MAX_VALUE_BYTES:
            raise _Refused(f"a value of more than {MAX_VALUE_BYTES} bytes for {key}")
        try:
            if prefix == ENDPOINT_PREFIX:
                parse_endpoint(value)
            elif prefix == CLAIM_PREFIX:
                parse_claim(value)
            else:
                parse_report(value, rank)
        except ValueError as exc:
            raise _Refused(f"a malformed value for {key}: {exc}") from None

    def _tell(self, link: socket.socket, why: str) -> None:
        try:
            link.settimeout(1.0)
            write_message(link, {"error": why})
        except (OSError, ValueError):
            pass

    def _refuse(self, source: str, why: str) -> None:
        """Count a refusal; show the first one from each source (for the first few sources) on stderr."""
        with self.lock:
            count = self.refusals.get(source, 0) + 1
            self.refusals[source] = count
            shown = count == 1 and len(self.refusals) <= _SHOWN_SOURCES
        if shown:
            line = (f"mpcdp party 0: the rendezvous refused a connection from {source}: {why} (later refusals "
                    f"from it are counted, not shown)")
            print(line, file=sys.stderr, flush=True)
            with self.lock:  # kept once written: whoever watches :attr:`shown` knows the line is out
                self.shown.append(line)


class Store(Protocol):
    """The subset of torch's ``Store`` API mpcdp uses: :class:`StoreClient` has it, as do torch's ``FileStore``
    and the ``PrefixStore`` over torchrun's agent store (:func:`mpcdp.transport.rendezvous.agent_store`)."""

    def set(self, key: str, value: str, /) -> None: ...

    def get(self, key: str, /) -> bytes: ...

    def check(self, keys: list[str], /) -> bool: ...

    def set_timeout(self, timeout: datetime.timedelta, /) -> None: ...


def _shut(link: socket.socket) -> None:
    try:
        link.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


# -- client -----------------------------------------------------------------------------------------------

class StoreClient:
    """A connection to the rendezvous (the subset of torch's ``Store`` API mpcdp uses). A connection the
    store closed (it was full, or this rank connected again) is made anew for the next request."""

    def __init__(self, host: str, port: int, *, security=None, timeout_s: float):
        self.host, self.port, self.security = host, port, security
        self.timeout_s = float(timeout_s)
        self.link: socket.socket | None = None
        self.lock = threading.Lock()
        with self.lock:
            self._connect(time.monotonic() + self.timeout_s)

    def set_timeout(self, timeout: datetime.timedelta) -> None:
        self.timeout_s = timeout.total_seconds()

    def _connect(self, deadline: float) -> socket.socket:
        where = f"the rendezvous at {self.host}:{self.port} (party 0's host)"
        while True:
            try:
                raw = socket.create_connection((self.host, self.port),
                                               timeout=max(0.1, deadline - time.monotonic()))
                self.link = self._secure(raw, where)
                return self.link
            except ProtocolViolation:
                raise
            except OSError as exc:
                if time.monotonic() > deadline:
                    raise PeerTimeout(f"Timed out after {self.timeout_s} s reaching {where}: {exc}", party=0) from None
                time.sleep(0.05)

    def _secure(self, raw: socket.socket, where: str) -> socket.socket:
        if self.security is None:
            return raw
        try:
            link = self.security.client.wrap_socket(raw, server_side=False)
        except (ssl.SSLEOFError, ConnectionError, socket.timeout):
            raw.close()
            raise
        except (ssl.SSLError, OSError) as exc:
            raw.close()
            raise ProtocolViolation(f"the TLS handshake with {where} failed: {exc}", party=0) from None
        if self.security.peer_rank(link) != 0:
            link.close()
            raise ProtocolViolation(f"{where} presented the certificate of {self.security.peer_rank(link)!r}, "
                                    f"not party 0's", party=0)
        return link

    def _drop(self) -> None:
        if self.link is not None:
            self.link.close()
            self.link = None

    def _ask(self, request: dict) -> str | None:
        with self.lock:
            reply = self._exchange(request)
        if "error" in reply:
            raise ConfigError(f"the rendezvous refused this process's request for {request.get('key')!r}: "
                              f"{str(reply['error'])[:300]}")
        value = reply.get("value")
        if value is not None and not isinstance(value, str):
            raise ProtocolViolation("the rendezvous store sent a malformed reply", party=0)
        return value

    def _exchange(self, request: dict) -> dict:
        """One request and its reply, connecting again (until the timeout) if the store closed the link."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                link = self._connect(deadline) if self.link is None else self.link
                link.settimeout(max(0.05, deadline - time.monotonic()))
                write_message(link, request)
                reply = read_reply(link)
                if "error" in reply:
                    self._drop()
                return reply
            except (ssl.SSLEOFError, ConnectionError) as exc:  # closed by the store: connect again
                self._drop()
                failure = exc
            except ssl.SSLError as exc:
                self._drop()
                raise ProtocolViolation(f"the rendezvous store's TLS failed: {exc}", party=0) from None
            except (OSError, ValueError) as exc:
                self._drop()
                raise PeerLost(f"the rendezvous store (party 0's process) failed: {exc}", party=0) from None
            except PeerTimeout as exc:
                raise PeerLost(f"the rendezvous store (party 0's process) is gone: {exc}", party=0) from None
            if time.monotonic() > deadline:
                raise PeerLost(f"the rendezvous store (party 0's process) failed: {failure}", party=0)
            time.sleep(0.05)

    def set(self, key: str, value: str) -> None:
        self._ask({"op": "set", "key": key, "value": value})

    def get(self, key: str) -> bytes:
        value = self._ask({"op": "get", "key": key})
        return b"" if value is None else value.encode()

    def fetch(self, key: str) -> bytes | None:
        """The value of ``key``, or None if it is not written (one round trip)."""
        value = self._ask({"op": "get", "key": key})
        return None if value is None else value.encode()

    def written(self, prefix: str) -> frozenset[int]:
        """The ranks whose ``prefix`` key (``mpcdp/endpoint/`` and the like) holds a value (one round trip)."""
        with self.lock:
            reply = self._exchange({"op": "written", "key": prefix})
        bits = reply.get("written")
        if "error" in reply:
            raise ConfigError(f"the rendezvous refused this process's request: {str(reply['error'])[:300]}")
        if not isinstance(bits, str) or not 0 < len(bits) <= (MAX_RANKS + CLAIM_STRAYS) // 4 + 1 \
                or bits.strip("0123456789abcdef"):
            raise ProtocolViolation("the rendezvous store sent a malformed reply", party=0)
        value = int(bits, 16)
        return frozenset(rank for rank in range(value.bit_length()) if value >> rank & 1)

    def check(self, keys: list[str]) -> bool:
        return all(self._ask({"op": "get", "key": key}) is not None for key in keys)
