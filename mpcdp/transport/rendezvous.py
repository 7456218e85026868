"""The run's rendezvous: a small key-value store through which the processes find each other's links.

Party 0's process hosts it (:class:`StoreServer`) at the rendezvous address (``tcp://HOST:PORT``, or
``env://`` with ``MASTER_ADDR``/``MASTER_PORT``); with ``file:///path`` torch's ``FileStore`` on a shared
file system plays the part. Every process, the dealer included, writes where its listener is
(:func:`publish_endpoint`) and reads the others' (:func:`endpoints`). Later the store carries one more kind
of value: who was lost and who noticed (:mod:`.losses`). Under ``torchrun``, whose agent on the first host
already keeps a store at ``MASTER_ADDR:MASTER_PORT`` (``TORCHELASTIC_USE_AGENT_STORE=True``), every process
joins that store instead, under a key prefix of its own run and restart (:func:`agent_store`). No protocol data crosses the store: every share,
key and dealer message moves on mpcdp's links (:mod:`.mesh`).

Wire format: each request and reply is a 4-byte little-endian length and at most :data:`MAX_MESSAGE_BYTES`
of UTF-8 JSON (``{"op": "set" | "get" | "cas", "key", "value", "expected"}`` → ``{"value"}``); anything else
closes the connection. Nothing is unpickled.

Security model: with credentials (:mod:`.credentials`) the store's connections are TLS 1.3 like the links:
the host presents rank 0's certificate, every client its own, and a client may write the endpoint of its
own rank only. Without them (one host, or ``--insecure-links``) the store is plain TCP and its public
content (endpoints, loss reports) can be read and altered by the network: an altered endpoint makes a link
fail to connect, an altered loss report changes whom an error message names; neither changes a result.
torchrun's agent store is such a plain store even with credentials (the links stay TLS, so a forged
endpoint still reaches no one but the rank whose certificate the link checks).
Cost: per process one connection, one write and m reads of about 30 bytes at start-up.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import socket
import ssl
import struct
import sys
import threading
import time
from urllib.parse import urlparse

import torch.distributed as dist

from mpcdp.errors import ConfigError, ConfigMismatchError, PeerLost, PeerTimeout, ProtocolViolation
from mpcdp.transport import frames

_store = None
_server = None
_POLL_S = 0.02
MAX_MESSAGE_BYTES = 1 << 16
ENDPOINT_PREFIX = "mpcdp/endpoint/"
LOST_KEY = "mpcdp/lost"  # "j i": party j was lost, noticed by process i (:mod:`.losses`)


def open_store(rendezvous: str, *, rank: int, processes: int, timeout_s: float, security=None):
    """Join the rendezvous as ``rank`` (party 0 hosts it); keep the store as this process's :func:`current`.

    ``security``: this rank's :class:`~.credentials.LinkSecurity`; the store's connections are then TLS.
    """
    global _store, _server
    parsed = urlparse(rendezvous)
    if parsed.scheme == "file":
        _store = dist.FileStore(parsed.path, processes)
        _store.set_timeout(datetime.timedelta(seconds=float(timeout_s)))
        return _store
    if parsed.scheme == "env":
        host, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
    elif parsed.scheme == "tcp":
        host, port = parsed.hostname, parsed.port
    else:
        raise ConfigError(f"`rendezvous` must start with tcp://, file:// or env://. Found {rendezvous!r}.")
    if not host or not port:
        raise ConfigError(f"`rendezvous` {rendezvous!r} names no host and port (MASTER_ADDR, MASTER_PORT).")
    if _torchrun_keeps(host, port):
        _store = agent_store(host, int(port), timeout_s)
        return _store
    if rank == 0:
        _server = StoreServer(int(port), security)
    _store = StoreClient(host, int(port), security=security, timeout_s=timeout_s)
    return _store


def _torchrun_keeps(host: str, port) -> bool:
    """Whether torchrun's agent keeps the store at host:port (its workers' environment says so)."""
    env = os.environ
    return (env.get("TORCHELASTIC_USE_AGENT_STORE") == "True" and env.get("MASTER_ADDR") == host
            and env.get("MASTER_PORT") == str(port))


def agent_store(host: str, port: int, timeout_s: float):
    """torchrun's agent store at host:port, joined as a client (no process of the run hosts it), with the keys
    of this run and restart apart from torchrun's own."""
    prefix = f"mpcdp/{os.environ.get('TORCHELASTIC_RUN_ID', '')}/{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}"
    try:
        client = dist.TCPStore(host, port, is_master=False,
                               timeout=datetime.timedelta(seconds=float(timeout_s)), wait_for_workers=False)
    except (RuntimeError, OSError) as exc:
        raise PeerTimeout(f"Timed out after {timeout_s} s reaching torchrun's store at {host}:{port}: {exc}",
                          party=0) from None
    return dist.PrefixStore(prefix, client)


class StoreServer:
    """The key-value store party 0 hosts, one thread per connected process (daemon threads)."""

    def __init__(self, port: int, security=None):
        self.values: dict[str, str] = {}
        self.lock = threading.Lock()
        self.security = security
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.listener.bind(("", port))
        except OSError as exc:
            raise ConfigError(f"the rendezvous port {port} cannot be opened on party 0's host: {exc}") from None
        self.listener.listen(64)
        threading.Thread(target=self._accept, daemon=True, name="mpcdp-rendezvous").start()

    def _accept(self) -> None:
        while True:
            try:
                raw, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _serve(self, raw: socket.socket) -> None:
        try:
            raw.settimeout(None)
            origin = raw.getpeername()[0]
            try:
                link = self.security.server.wrap_socket(raw, server_side=True) if self.security else raw
            except (ssl.SSLError, OSError) as exc:
                print(f"mpcdp party 0: refused a connection from {origin} to the rendezvous: {exc}",
                      file=sys.stderr, flush=True)
                raise
            writer = self.security.peer_rank(link) if self.security else None
            while True:
                request = _read_message(link)
                reply = self._apply(request, writer)
                _write_message(link, reply)
        except (OSError, ssl.SSLError, ValueError):
            raw.close()

    def _apply(self, request, writer: int | None) -> dict:
        if not isinstance(request, dict) or not isinstance(request.get("key"), str):
            raise ValueError("not a store request")
        op, key = request.get("op"), request["key"]
        with self.lock:
            if op == "get":
                return {"value": self.values.get(key)}
            value = request.get("value")
            if not isinstance(value, str):
                raise ValueError("no value")
            if key.startswith(ENDPOINT_PREFIX) and self.security is not None and key != ENDPOINT_PREFIX + str(writer):
                raise ValueError(f"rank {writer} may not write {key}")
            if op == "set":
                self.values[key] = value
            elif op == "cas":
                if self.values.get(key, "") == request.get("expected", ""):
                    self.values[key] = value
            else:
                raise ValueError(f"unknown op {op!r}")
            return {"value": self.values.get(key)}


class StoreClient:
    """A connection to the rendezvous (the subset of torch's ``Store`` API mpcdp uses)."""

    def __init__(self, host: str, port: int, *, security=None, timeout_s: float):
        deadline = time.monotonic() + timeout_s
        self.timeout_s = float(timeout_s)
        while True:
            try:
                raw = socket.create_connection((host, port), timeout=max(0.1, deadline - time.monotonic()))
                break
            except OSError as exc:
                if time.monotonic() > deadline:
                    raise PeerTimeout(f"Timed out after {timeout_s} s reaching the rendezvous at {host}:{port} "
                                      f"(party 0's host): {exc}", party=0) from None
                time.sleep(0.05)
        if security is not None:
            try:
                raw = security.client.wrap_socket(raw, server_side=False)
            except (ssl.SSLError, OSError) as exc:
                raise ProtocolViolation(f"the TLS handshake with the rendezvous at {host}:{port} failed: {exc}",
                                        party=0) from None
            if security.peer_rank(raw) != 0:
                raise ProtocolViolation(f"the rendezvous at {host}:{port} presented the certificate of "
                                        f"{security.peer_rank(raw)!r}, not party 0's", party=0)
        self.link = raw
        self.lock = threading.Lock()

    def set_timeout(self, timeout: datetime.timedelta) -> None:
        self.timeout_s = timeout.total_seconds()

    def _ask(self, request: dict) -> str | None:
        with self.lock:
            self.link.settimeout(self.timeout_s)
            try:
                _write_message(self.link, request)
                reply = _read_message(self.link)
            except (OSError, ValueError) as exc:
                raise PeerLost(f"the rendezvous store (party 0's process) failed: {exc}", party=0) from None
        value = reply.get("value") if isinstance(reply, dict) else None
        if value is not None and not isinstance(value, str):
            raise ProtocolViolation("the rendezvous store sent a malformed reply", party=0)
        return value

    def set(self, key: str, value: str) -> None:
        self._ask({"op": "set", "key": key, "value": value})

    def get(self, key: str) -> bytes:
        value = self._ask({"op": "get", "key": key})
        return b"" if value is None else value.encode()

    def check(self, keys: list[str]) -> bool:
        return all(self._ask({"op": "get", "key": key}) is not None for key in keys)

    def compare_set(self, key: str, expected: str, desired: str) -> bytes:
        value = self._ask({"op": "cas", "key": key, "expected": expected, "value": desired})
        return b"" if value is None else value.encode()


def _write_message(link: socket.socket, message: dict) -> None:
    data = json.dumps(message, separators=(",", ":")).encode()
    link.sendall(struct.pack("<I", len(data)) + data)


def _read_message(link: socket.socket):
    head = frames.read_exactly(link, 4)
    (n,) = struct.unpack("<I", head)
    if n > MAX_MESSAGE_BYTES:
        raise ValueError(f"a store message of {n} bytes")
    try:
        return json.loads(frames.read_exactly(link, n).decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ValueError(str(exc)) from None


def who(rank: int, dealer: int | None) -> str:
    """How errors name a process: ``the dealer`` or ``party j``."""
    return "the dealer" if rank == dealer else f"party {rank}"


def current():
    """The store this process joined, or None (no run joined yet)."""
    return _store


def close_store() -> None:
    global _store
    _store = None


def _key(rank: int) -> str:
    return f"{ENDPOINT_PREFIX}{rank}"


def publish_endpoint(rank: int, host: str, port: int, processes: int) -> None:
    """Write where this process listens, and how many processes it expects in the run (public)."""
    _store.set(_key(rank), f"{host} {int(port)} {int(processes)}")


def endpoints(ranks: list[int], *, processes: int, timeout_s: float,
              dealer: int | None = None) -> dict[int, tuple[str, int]]:
    """Where each of ``ranks`` listens, waiting for them to publish it for up to ``timeout_s``.

    Raises:
        ConfigMismatchError: a rank expects a run of another size, naming it.
        PeerTimeout: naming the first rank that did not publish in time.
        ProtocolViolation: a value that is not an IPv4 address, a port and a count, naming its rank.
    """
    deadline = time.monotonic() + timeout_s
    found: dict[int, tuple[str, int]] = {}
    while True:
        for rank in ranks:
            if rank in found or not _store.check([_key(rank)]):
                continue
            host, port, theirs = _parse(rank, _store.get(_key(rank)))
            if theirs != processes:
                raise ConfigMismatchError(
                    f"{who(rank, dealer)} joined a run of {theirs} processes, this one expects {processes} "
                    f"(`parties` differs, or the dealer is on for one and off for the other)", party=rank)
            found[rank] = host, port
        if len(found) == len(ranks):
            return found
        if _store.check([LOST_KEY]):  # another process already gave up on someone: stop with it
            lost = int(_store.get(LOST_KEY).decode().split()[0])
            raise PeerLost(f"{who(lost, dealer)} did not join the run", party=lost)
        if time.monotonic() > deadline:
            missing = sorted(set(ranks) - set(found))
            raise PeerTimeout(f"Timed out after {timeout_s} s waiting at the rendezvous for "
                              f"{', '.join(who(r, dealer) for r in missing)}", party=missing[0])
        time.sleep(_POLL_S)


def _parse(rank: int, raw: bytes) -> tuple[str, int, int]:
    try:
        host, port, processes = raw.decode("ascii").split(" ")
        ipaddress.IPv4Address(host)
        if not 0 < int(port) < 65536:
            raise ValueError(port)
        return host, int(port), int(processes)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ProtocolViolation(f"the rendezvous holds no valid endpoint for rank {rank} ({exc}); expected "
                                f"'IPv4 port processes'", party=rank) from None

