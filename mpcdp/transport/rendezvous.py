"""The run's rendezvous: a small key-value store through which the processes find each other's links.

Party 0's process hosts a torch.distributed ``TCPStore`` at the rendezvous address (``tcp://HOST:PORT``,
or ``env://`` with ``MASTER_ADDR``/``MASTER_PORT``); with ``file:///path`` a ``FileStore`` on a shared file
system plays the part. Every process, the dealer included, writes where its listener is
(:func:`publish_endpoint`) and reads the others' (:func:`endpoints`). Later the store carries one more kind
of value: who was lost and who noticed (:mod:`.losses`). No process group is formed and no protocol data
crosses the store: every share, key and dealer message moves on mpcdp's links (:mod:`.mesh`).

Security model: the store is plain TCP and its content is public. A network attacker who alters an
endpoint can only make a link fail to connect: with credentials every link is TLS 1.3, mutually
authenticated, and a process at a forged address cannot present the rank's certificate (the run then
stops, naming that rank). A forged loss report can only change whom an error message names.
Cost: one write and m reads of about 20 bytes per process at start-up.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import time
from urllib.parse import urlparse

import torch.distributed as dist

from mpcdp.errors import ConfigError, ConfigMismatchError, PeerTimeout, ProtocolViolation

_store = None
_POLL_S = 0.02


def open_store(rendezvous: str, *, rank: int, processes: int, timeout_s: float):
    """Join the rendezvous as ``rank`` (party 0 hosts it); keep the store as this process's :func:`current`."""
    global _store
    parsed = urlparse(rendezvous)
    timeout = datetime.timedelta(seconds=float(timeout_s))
    if parsed.scheme == "file":
        _store = dist.FileStore(parsed.path, processes)
        _store.set_timeout(timeout)
        return _store
    if parsed.scheme == "env":
        host, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
    elif parsed.scheme == "tcp":
        host, port = parsed.hostname, parsed.port
    else:
        raise ConfigError(f"`rendezvous` must start with tcp://, file:// or env://. Found {rendezvous!r}.")
    if not host or not port:
        raise ConfigError(f"`rendezvous` {rendezvous!r} names no host and port (MASTER_ADDR, MASTER_PORT).")
    _store = dist.TCPStore(host, int(port), None, rank == 0, timeout, wait_for_workers=False)
    return _store


def current():
    """The store this process joined, or None (no run joined yet)."""
    return _store


def close_store() -> None:
    global _store
    _store = None


def _key(rank: int) -> str:
    return f"mpcdp/endpoint/{rank}"


def publish_endpoint(rank: int, host: str, port: int, processes: int) -> None:
    """Write where this process listens, and how many processes it expects in the run (public)."""
    _store.set(_key(rank), f"{host} {int(port)} {int(processes)}")


def endpoints(ranks: list[int], *, processes: int, timeout_s: float) -> dict[int, tuple[str, int]]:
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
                    f"rank {rank} joined a run of {theirs} processes, this one expects {processes} (`parties` "
                    f"differs, or the dealer is on for one and off for the other)", party=rank)
            found[rank] = host, port
        if len(found) == len(ranks):
            return found
        if time.monotonic() > deadline:
            missing = sorted(set(ranks) - set(found))
            raise PeerTimeout(f"Timed out after {timeout_s} s waiting at the rendezvous for {_names(missing)}",
                              party=missing[0])
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


def _names(ranks: list[int]) -> str:
    return ", ".join(f"rank {r}" for r in ranks)
