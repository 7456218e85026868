"""The run's rendezvous: a small key-value store through which the processes find each other's links.

Party 0's process hosts it (:class:`~.store.StoreServer`) at the rendezvous address (``tcp://HOST:PORT``, or
``env://`` with ``MASTER_ADDR``/``MASTER_PORT``); with ``file:///path`` torch's ``FileStore`` on a shared
file system plays the part. Every process, the dealer included, writes where its listener is
(:func:`publish_endpoint`) and reads the others' (:func:`endpoints`). When a run fails, each process writes
its own loss report there (:func:`publish_report`, :mod:`.losses`). Under ``torchrun``, whose agent on the
first host already keeps a store at ``MASTER_ADDR:MASTER_PORT`` (``TORCHELASTIC_USE_AGENT_STORE=True``),
every process joins that store instead, under a key prefix of its own run and restart (:func:`agent_store`).
No protocol data crosses the store: every share, key and dealer message moves on mpcdp's links (:mod:`.mesh`).
The wire format, the schema of every value and the server's bounds are in :mod:`.store`.

Where the store listens (:func:`bind_address`): on the rendezvous host's address only (127.0.0.1 for local
runs; ``MASTER_ADDR`` for env://), never on every interface. If that host is not an address of party 0's
host (a name for another host, a NAT's public address), the store listens on the address through which
party 0's host reaches it, and says so on stderr.

Security model: with credentials (:mod:`.credentials`) the store's connections are TLS 1.3 like the links:
the host presents rank 0's certificate, every client its own, and a client may write its own rank's
endpoint and report only. Without them (one host, or ``--insecure-links``) the store is plain TCP: anyone
who reaches it can write a rank's endpoint or report first. Each process then accepts endpoints only inside
the run's declared network (:func:`declared_network`: loopback when it listens on loopback, else the subnet
of the interface it listens on, or ``MPCDP_NETWORK``) and refuses any other, naming the rank; loss reports
are weighed, not trusted (:mod:`.losses`). Every value read is parsed against the store's schema, a
malformed one names the rank of its key. torchrun's agent store and a ``file://`` store check nothing on
write; with credentials every value written there is sealed by its writer's rank key and every reader
verifies it (:mod:`.signed_values`): a value not sealed by its key's rank (a forged refusal, report or
endpoint) is ignored and said once on stderr as an unauthenticated writer's; a rendezvous that then times
out names no party. Cost: per process one connection, two writes and m reads of about 30 bytes at start-up
(with sealing about 800 bytes each, one signature per write and one verification per value read).
"""

from __future__ import annotations

import dataclasses
import datetime
import ipaddress
import json
import os
import socket
import struct
import sys
import time
import warnings
from typing import TYPE_CHECKING
from urllib.parse import urlparse

if TYPE_CHECKING:
    import torch.distributed as dist

from mpcdp.errors import ConfigError, ConfigMismatchError, InsecureSettingWarning, PeerLost, PeerTimeout, \
    ProtocolViolation
from mpcdp.transport.signed_values import Unauthenticated, ValueSigner
from mpcdp.transport.store import Store, StoreClient, StoreServer
from mpcdp.transport.store_values import (ENDPOINT_PREFIX, MAX_MESSAGE_BYTES, REPORT_PREFIX, Report,
                                          disagreement_value, parse_endpoint, parse_report, public_line)

__all__ = ["ENDPOINT_PREFIX", "MAX_MESSAGE_BYTES", "REPORT_PREFIX", "Report", "StoreClient", "StoreServer",
           "open_store", "agent_store", "bind_address", "declared_network", "declare_network", "endpoints",
           "publish_disagreement", "publish_endpoint", "read_value", "write_value", "publish_refusal", "publish_report", "read_reports", "run", "store_holders", "who", "current",
           "written_ranks", "poll_s"]

_store: Store | None = None
_server: StoreServer | None = None
_run: Run | None = None
_signer: ValueSigner | None = None  # sealing values, where the store is not mpcdp's TLS store (credentials given)
_forged: dict[str, str] = {}  # key -> why its value was ignored (said once on stderr)
_network: ipaddress.IPv4Network | None = None  # MPCDP_NETWORK, as the runtime declared it
_opened: tuple[str, int, int] | None = None  # (rendezvous, rank, processes) of the store joined
_POLL_S = 0.02
_REPORT_POLL_S = 0.25


@dataclasses.dataclass
class Run:
    """What this process knows of its run: its rank, how many processes, whether the store is TLS, and the
    dealer's rank (known once :func:`endpoints` was called; None without a dealer)."""
    rank: int
    processes: int
    secure: bool
    dealer: int | None = None


def open_store(rendezvous: str, *, rank: int, processes: int, timeout_s: float, security=None) -> Store:
    """Join the rendezvous as ``rank`` (party 0 hosts it); keep the store as this process's :func:`current`
    (joined once per run: a second call for the same run returns it).

    ``security``: this rank's :class:`~.credentials.LinkSecurity`; the store's connections are then TLS.
    torch is imported only for a ``file://`` store or torchrun's: a process claims its place at a ``tcp://``
    rendezvous (:mod:`.claims`) before it imports torch.
    """
    global _store, _server, _run, _signer, _opened
    if _store is not None and _opened == (rendezvous, rank, processes):  # joined already (its claim, .claims)
        return _store
    _opened = (rendezvous, rank, processes)
    _run = Run(rank, processes, security is not None)
    _signer = None
    _forged.clear()
    parsed = urlparse(rendezvous)
    if parsed.scheme == "file":
        import torch.distributed as dist

        _store = dist.FileStore(parsed.path, processes)
        _store.set_timeout(datetime.timedelta(seconds=float(timeout_s)))
        _signer = None if security is None else ValueSigner(security, f"file:{parsed.path}")
        return _store
    port: str | int | None  # MASTER_PORT's text or the URL's number
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
        _signer = None if security is None else ValueSigner(security, f"torchrun:{agent_scope()}")
        return _store
    if rank == 0:
        if _server is not None:
            _server.close()
        _server = StoreServer(int(port), security, host=bind_address(host), processes=processes)
        host = _server.address[0]  # party 0 reaches its own store where it listens (behind a NAT too)
    _store = StoreClient(host, int(port), security=security, timeout_s=timeout_s)
    return _store


def bind_address(host: str) -> str:
    """The address party 0's store listens on for the rendezvous host ``host``: that host's own address when
    it is one of this host's, else (a name for another host, a NAT's public address) the address through
    which this host reaches it, with a line on stderr.

    Raises:
        ConfigError: ``host`` does not resolve, or no route leads to it.
    """
    try:
        address = socket.gethostbyname(host)
    except OSError as exc:
        raise ConfigError(f"the rendezvous host {host!r} does not resolve on party 0's host ({exc})") from None
    if _is_local(address):
        if ipaddress.IPv4Address(address).is_unspecified:
            print(f"mpcdp party 0: the rendezvous host {host!r} is {address}: the store listens on every "
                  f"interface of this host", file=sys.stderr, flush=True)
        return address
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect((address, 9))  # UDP connect sends nothing; it only picks a route
        chosen = probe.getsockname()[0]
    except OSError as exc:
        raise ConfigError(f"the rendezvous host {host!r} ({address}) is not reachable from party 0's host "
                          f"({exc})") from None
    finally:
        probe.close()
    print(f"mpcdp party 0: the rendezvous host {host!r} ({address}) is not an address of this host; the store "
          f"listens on {chosen}, the address through which this host reaches it (behind a NAT, forward the "
          f"port to {chosen})", file=sys.stderr, flush=True)
    return chosen


def _is_local(address: str) -> bool:
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.bind((address, 0))
        return True
    except OSError:
        return False
    finally:
        probe.close()


def _torchrun_keeps(host: str, port) -> bool:
    """Whether torchrun's agent keeps the store at host:port (its workers' environment says so)."""
    env = os.environ
    return (env.get("TORCHELASTIC_USE_AGENT_STORE") == "True" and env.get("MASTER_ADDR") == host
            and env.get("MASTER_PORT") == str(port))


def agent_store(host: str, port: int, timeout_s: float) -> Store:
    """torchrun's agent store at host:port, joined as a client (no process of the run hosts it), with the keys
    of this run and restart apart from torchrun's own. It is a plain store that checks nothing on write;
    every value mpcdp reads from it is schema-checked (:func:`endpoints`, :func:`read_reports`)."""
    import torch.distributed as dist

    prefix = agent_scope()
    try:
        client = dist.TCPStore(host, port, is_master=False,
                               timeout=datetime.timedelta(seconds=float(timeout_s)), wait_for_workers=False)
    except (RuntimeError, OSError) as exc:
        raise PeerTimeout(f"Timed out after {timeout_s} s reaching torchrun's store at {host}:{port}: {exc}",
                          party=0) from None
    return dist.PrefixStore(prefix, client)


def agent_scope() -> str:
    """The key prefix of this run and restart in torchrun's agent store."""
    return f"mpcdp/{os.environ.get('TORCHELASTIC_RUN_ID', '')}/{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}"


def who(rank: int, dealer: int | None) -> str:
    """How errors name a process: ``the dealer`` or ``party j``."""
    return "the dealer" if rank == dealer else f"party {rank}"


def current() -> Store | None:
    """The store this process joined, or None (no run joined yet)."""
    return _store


def store_holders() -> frozenset[int] | None:
    """On party 0's process, the ranks still connected to the store it hosts (:meth:`StoreServer.holders`);
    None elsewhere, or where the store cannot tell (no credentials)."""
    return None if _server is None else _server.holders()


def run() -> Run | None:
    """What this process knows of the run it joined (None: none joined)."""
    return _run


def _joined() -> Store:
    if _store is None:
        raise RuntimeError("no rendezvous joined")
    return _store


def _key(rank: int) -> str:
    return f"{ENDPOINT_PREFIX}{rank}"


def _read(key: str, rank: int) -> bytes | None:
    """Rank ``rank``'s value of ``key``, or None if nobody wrote it (torch's stores block on a missing key:
    check first) or, where values are sealed, one not sealed by ``rank`` was written (said once)."""
    store = _joined()
    fetch = getattr(store, "fetch", None)
    raw = fetch(key) if fetch is not None else (store.get(key) if store.check([key]) else None)
    if raw is None or _signer is None:
        return raw
    try:
        return _signer.open(key, rank, raw).encode("utf-8")
    except Unauthenticated as exc:
        _note_forged(key, rank, str(exc))
        return None


def _note_forged(key: str, rank: int, reason: str) -> None:
    assert _signer is not None  # only sealed values are opened
    if _forged.get(key) != reason:  # each forgery said once
        where = "torchrun's agent store" if _signer.scope.startswith("torchrun:") else "the file store"
        _forged[key] = reason
        print(f"mpcdp: {key} in {where} is not signed by rank {rank}'s credential ({reason}): an unauthenticated "
              f"writer put it there (the store does not record who); ignored", file=sys.stderr, flush=True)


def written_ranks(prefix: str, below: int) -> set[int] | None:
    """The ranks below ``below`` whose ``prefix`` key holds a value, in one request to mpcdp's own store; None
    where the store cannot say (torchrun's agent store, a file store: read each key). A waiting process asks
    this each poll instead of reading every rank's key: m processes polling m keys each made the set-up of a
    64-party run quadratic (100,000 requests)."""
    written = getattr(_joined(), "written", None)
    return None if written is None else {rank for rank in written(prefix) if rank < below}


def poll_s(processes: int) -> float:
    """Seconds between a waiting process's polls of the store: 20 ms, longer beyond 16 processes, so that their
    polls together come to at most about 800 a second (each one request, :func:`written_ranks`)."""
    return _POLL_S * max(1.0, processes / 16)


def _write(key: str, value: str) -> None:
    _joined().set(key, value if _signer is None else _signer.seal(key, value))


def write_value(key: str, value: str) -> None:
    """Write ``value`` under this process's own ``key`` (sealed where the store needs it)."""
    _write(key, value)


def read_value(key: str, rank: int) -> bytes | None:
    """Rank ``rank``'s value of ``key`` (None: not written, or not sealed by ``rank``)."""
    return _read(key, rank)


def publish_endpoint(rank: int, host: str, port: int, processes: int) -> None:
    """Write where this process listens, and how many processes it expects in the run (public)."""
    _write(_key(rank), f"{host} {int(port)} {int(processes)}")


def publish_report(rank: int, suspect: int | None, evidence: str) -> None:
    """Write this process's loss report (public; each rank writes its own once, :mod:`.losses`)."""
    _write(f"{REPORT_PREFIX}{rank}", json.dumps({"suspect": suspect, "evidence": evidence}, separators=(",", ":")))


def publish_refusal(rank: int, refusal) -> None:
    """Write this party's refusal of its own input as its report (public; :mod:`mpcdp.refusals`)."""
    _write(f"{REPORT_PREFIX}{rank}", json.dumps(refusal.value(), separators=(",", ":"), ensure_ascii=False))


def publish_disagreement(rank: int, line: str) -> None:
    """Write this data party's refusal of the run that the parties agreed on (their handshake or data agreement
    differed) as its report, for the processes outside that agreement — the dealer — to say the same line
    (public: what every data party computed from what all of them sent; :func:`~.store_values.public_line`)."""
    _write(f"{REPORT_PREFIX}{rank}", disagreement_value(public_line(line)))


def read_reports(processes: int) -> dict[int, Report | str]:
    """Every loss report written so far, by writer rank; a malformed one as the text of why (schema-checked
    here whatever store holds it)."""
    found: dict[int, Report | str] = {}
    present = written_ranks(REPORT_PREFIX, processes)
    for rank in range(processes) if present is None else sorted(present):
        raw = _read(f"{REPORT_PREFIX}{rank}", rank)
        if raw is None:
            continue
        try:
            found[rank] = parse_report(raw.decode("utf-8"), rank)
        except (UnicodeDecodeError, ValueError) as exc:
            found[rank] = f"a malformed loss report ({exc})"
    return found


def declare_network(cidr: str | None) -> None:
    """The network this run's plain endpoints must lie in (``MPCDP_NETWORK``, read by the runtime); None:
    derive it from where this process listens (:func:`declared_network`)."""
    global _network
    _network = None if cidr is None else ipaddress.IPv4Network(cidr, strict=False)


def declared_network(listening: str) -> ipaddress.IPv4Network:
    """The network inside which this process accepts a plain endpoint: ``MPCDP_NETWORK`` if declared, else
    127.0.0.0/8 when it listens on loopback, else the IPv4 subnet of the interface holding ``listening``
    (its address and netmask), else ``listening`` alone."""
    if _network is not None:
        return _network
    address = ipaddress.IPv4Address(listening)
    if address.is_loopback:
        return ipaddress.IPv4Network("127.0.0.0/8")
    netmask = _interface_netmask(listening)
    return ipaddress.IPv4Network(f"{listening}/{netmask or 32}", strict=False)


def _interface_netmask(address: str) -> str | None:
    """The netmask of the interface whose (primary) IPv4 address is ``address`` (Linux), or None."""
    import fcntl

    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for _, name in socket.if_nameindex():
            request = struct.pack("256s", name[:15].encode())
            try:
                if socket.inet_ntoa(fcntl.ioctl(probe.fileno(), 0x8915, request)[20:24]) != address:  # SIOCGIFADDR
                    continue
                return socket.inet_ntoa(fcntl.ioctl(probe.fileno(), 0x891B, request)[20:24])  # SIOCGIFNETMASK
            except OSError:
                continue
    finally:
        probe.close()
    return None


def endpoints(ranks: list[int], *, processes: int, timeout_s: float, dealer: int | None = None,
              listening: str | None = None) -> dict[int, tuple[str, int]]:
    """Where each of ``ranks`` listens, waiting for them to publish it for up to ``timeout_s``.

    ``listening``: the address this process listens on; where the store is plain (no credentials), an
    endpoint outside :func:`declared_network` of it is refused.

    Raises:
        ConfigMismatchError: a rank expects a run of another size, naming it.
        PeerTimeout: naming the first rank that did not publish in time.
        ProtocolViolation: a value that is not an IPv4 address, a port and a count, or (plain store) an
            address outside the run's network, naming its rank.
        PeerLost: another process reported a loss while this one waited (named by :mod:`.losses`).
    """
    if _run is not None:
        _run.dealer = dealer
    network = _plain_network(listening)
    deadline = time.monotonic() + timeout_s
    next_report_check = time.monotonic()
    found: dict[int, tuple[str, int]] = {}
    while True:
        present = written_ranks(ENDPOINT_PREFIX, processes)
        for rank in ranks:
            unwritten = rank in found or (present is not None and rank not in present)
            raw = None if unwritten else _read(_key(rank), rank)
            if raw is not None:
                found[rank] = _accept_endpoint(rank, raw, processes, dealer, network)
        if len(found) == len(ranks):
            return found
        if time.monotonic() >= next_report_check:
            if read_reports(processes):  # another process already gave up: stop with it
                raise PeerLost("another process of the run stopped while this one waited at the rendezvous",
                               party=None)
            next_report_check = time.monotonic() + _REPORT_POLL_S  # from the check's end: a slow store is asked less
        if time.monotonic() > deadline:
            missing = sorted(set(ranks) - set(found))
            forged = [r for r in missing if _key(r) in _forged]
            if forged:  # a writer without credentials holds the key: not the party's fault
                raise PeerTimeout(f"Timed out after {timeout_s} s waiting at the rendezvous: no endpoint signed by "
                                  f"{', '.join(who(r, dealer) for r in forged)} arrived, and an unauthenticated "
                                  f"writer wrote {'that key' if len(forged) == 1 else 'those keys'}", party=None)
            raise PeerTimeout(f"Timed out after {timeout_s} s waiting at the rendezvous for "
                              f"{', '.join(who(r, dealer) for r in missing)}", party=missing[0])
        time.sleep(poll_s(processes))


def _plain_network(listening: str | None) -> ipaddress.IPv4Network | None:
    """The network endpoints must lie in, where the store is plain; None under TLS (links check ranks)."""
    if listening is None or (_run is not None and _run.secure):
        return None
    network = declared_network(listening)
    if not network.subnet_of(ipaddress.IPv4Network("127.0.0.0/8")):
        rank = _run.rank if _run is not None else "?"
        warnings.warn(f"rank {rank}: the rendezvous store is plain TCP (--insecure-links): endpoints are accepted "
                      f"only inside {network} (MPCDP_NETWORK), and anyone on that network can still write one",
                      InsecureSettingWarning, stacklevel=3)
    return network


def _accept_endpoint(rank: int, raw: bytes, processes: int, dealer: int | None,
                     network: ipaddress.IPv4Network | None) -> tuple[str, int]:
    try:
        host, port, theirs = parse_endpoint(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ProtocolViolation(f"the rendezvous holds no valid endpoint for rank {rank} ({exc}); expected "
                                f"'IPv4 port processes'", party=rank) from None
    if theirs != processes:
        raise ConfigMismatchError(
            f"{who(rank, dealer)} joined a run of {theirs} processes, this one expects {processes} "
            f"(`parties` differs, or the dealer is on for one and off for the other)", party=rank)
    if network is not None and ipaddress.IPv4Address(host) not in network:
        message = (f"the rendezvous holds an endpoint for {who(rank, dealer)} outside this run's network "
                   f"{network}: {host}:{port}. The store is plain TCP (no credentials), so a process outside the "
                   f"run may have written it; refused. If the run spans a wider network, declare it with "
                   f"MPCDP_NETWORK=CIDR.")
        print(f"mpcdp: {message}", file=sys.stderr, flush=True)
        raise ProtocolViolation(message, party=rank)
    return host, port
