"""Admitting arriving connections by source, so that a flood from one source cannot keep another out.

A listener (a process's link listener, :mod:`.joining`; the rendezvous store, :mod:`.store`) accepts every
connection as soon as the kernel has it, so its backlog never fills and a genuine party's connection is
never dropped behind a flood. Each accepted connection is sorted (:meth:`Gate.sort`) by its **source**: its
address, and, where the connecting socket is on this host, the user that owns it (from the kernel's table
of this network namespace, ``/proc/net/tcp``, matched on the connection's whole address pair: the kernel
gives one ephemeral port to sockets bound for different destinations, so a port alone may name another
user's socket). A source may have at most ``per_source`` connections in their handshake at once; more are
**parked**: held unanswered, costing no thread and no reads, promoted when the source's handshakes finish
(:meth:`Gate.release`), and reset after ``hold_s`` (:meth:`Gate.expire`), so a flooder's refills slow to
its own connections' hold time. A reset (SO_LINGER 0) leaves no TIME_WAIT.

Security model: another local user, or another host, gets the handshake slots of its own source only; an
authenticated party from another source is served at once however many connections the flooder holds (up to
:data:`MAX_PARKED` parked in all, or half the open-file limit, which the gate raises to its hard limit;
beyond that the newest is reset at once). Not covered: a flood from the
parties' own user on their own host (that user can stop the processes anyway), or from many addresses.
Cost: one read of the kernel's TCP table per batch of accepted connections from this host.
"""

from __future__ import annotations

import collections
import socket
import struct
import sys
import time

PER_SOURCE = 16  # handshakes at once per source (at least the run's process count: a local run is one source)
HOLD_S = 5.0
MAX_PARKED = 4096


def _hex_address(ip: str, port: int) -> str:
    """``ip:port`` as /proc/net/tcp writes a local address (IPv4, little-endian on the hosts mpcdp runs on)."""
    packed = socket.inet_aton(ip)
    return f"{struct.unpack('<I', packed)[0]:08X}:{port:04X}"


def owners(ends: list[tuple[tuple[str, int], tuple[str, int]]]) -> dict[tuple[str, int], int]:
    """The uid owning each socket of this host whose own end is ``origin`` and whose peer is ``local``, for
    each ``(origin, local)`` (an arrival's connecting end and the end it reached here), keyed by origin;
    origins on other hosts are absent. Matching the pair, not the origin alone, keeps another user's socket
    that shares the origin's port (bound for another destination) from being taken for it."""
    found: dict[tuple[str, int], int] = {}
    try:
        with open("/proc/net/tcp") as file:
            table = file.read()
        heading = table.find("\n")
        for origin, local in ends:  # one search of the table per pair, not a split of its every row: 64 parties
            at = table.rfind(f" {_hex_address(*origin)} {_hex_address(*local)} ")  # hold 4,000 rows; the last match
            if at > heading:
                end = table.find("\n", at)
                row = table[table.rfind("\n", 0, at) + 1:len(table) if end < 0 else end].split(None, 8)
                found[origin] = int(row[7])
    except (OSError, IndexError, ValueError):
        pass
    return found


def _local_end(link: socket.socket) -> tuple[str, int]:
    """The address an accepted connection reached on this host (its peer's remote end); 0.0.0.0:0, which
    matches no connected socket's row, once the connection is gone."""
    try:
        ip, port = link.getsockname()[:2]
        return ip, port
    except OSError:
        return "0.0.0.0", 0


def _file_limit() -> int:
    """This process's open-file limit, raised to its hard limit (at most 65,536) so that parked connections
    fit (once per process; other users' limits are untouched)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = min(hard if hard != resource.RLIM_INFINITY else 65536, 65536)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
        except (ValueError, OSError):
            pass
    return soft


def _reset(link: socket.socket) -> None:
    try:
        link.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    link.close()


class Gate:
    """Sorts accepted connections into admitted and parked by source (the module docstring)."""

    def __init__(self, per_source: int = PER_SOURCE, *, hold_s: float = HOLD_S, max_parked: int = MAX_PARKED,
                 who: str = "this process"):
        self.per_source, self.hold_s, self.who = per_source, hold_s, who
        self.max_parked = min(max_parked, _file_limit() // 2)
        self.pending: collections.Counter[str] = collections.Counter()
        self.parked: dict[str, collections.deque] = collections.defaultdict(collections.deque)
        self.parked_total = 0
        self.held: collections.Counter[str] = collections.Counter()  # every connection ever parked, by source

    def sort(self, arrivals: list[tuple[socket.socket, tuple[str, int]]]) -> list[tuple[socket.socket, str, str]]:
        """The arrivals (link, (ip, port)) to serve now, as (link, ip, source); the others are parked."""
        uids = owners([(origin, _local_end(link)) for link, origin in arrivals]) if arrivals else {}
        admitted = []
        for link, origin in arrivals:
            source = origin[0] if origin not in uids else f"{origin[0]} uid {uids[origin]}"
            if self.pending[source] < self.per_source:
                self.pending[source] += 1
                admitted.append((link, origin[0], source))
            else:
                self._park(link, origin[0], source)
        return admitted

    def _park(self, link: socket.socket, ip: str, source: str) -> None:
        self.held[source] += 1
        if self.held[source] == 1:
            print(f"mpcdp {self.who}: more than {self.per_source} connections from {source} at once; later ones "
                  f"wait unanswered, at most {self.hold_s:g} s (counted, not shown)", file=sys.stderr, flush=True)
        if self.parked_total >= self.max_parked:
            _reset(link)
            return
        self.parked[source].append((time.monotonic() + self.hold_s, link, ip))
        self.parked_total += 1

    def release(self, source: str) -> list[tuple[socket.socket, str, str]]:
        """A connection of ``source`` left its handshake (served or refused); returns the parked connection
        of that source now admitted in its place, if any (as :meth:`sort`)."""
        self.pending[source] -= 1
        queue = self.parked.get(source)
        while queue:
            expires, link, ip = queue.popleft()
            self.parked_total -= 1
            if expires > time.monotonic():
                self.pending[source] += 1
                return [(link, ip, source)]
            _reset(link)
        return []

    def expire(self) -> None:
        """Reset every parked connection past its hold time."""
        now = time.monotonic()
        for queue in self.parked.values():
            while queue and queue[0][0] <= now:
                _reset(queue.popleft()[1])
                self.parked_total -= 1

    def next_expiry(self) -> float | None:
        return min((q[0][0] for q in self.parked.values() if q), default=None)

    def close(self) -> None:
        for queue in self.parked.values():
            while queue:
                _reset(queue.popleft()[1])
        self.parked_total = 0

    def summary(self) -> str:
        """What was held back, for a time-out's message ('' if nothing)."""
        return "; ".join(f"{n} connection(s) from {source} held back" for source, n in self.held.most_common(3))

