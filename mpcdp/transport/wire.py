"""Bytes a party actually puts on the network, from the kernel's counters.

:func:`tcp_counters` reads every TCP socket's ``TCP_INFO``: payload bytes received and sent per connection,
without TCP/IP headers (what the cost ledgers of :mod:`mpcdp.transport.costs` and :class:`WireMeter` use);
:func:`interface_counters` reads a network interface's frame counters (to check the former against what
crossed an emulated host's link). Linux; elsewhere the counters read zero.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import struct
import time
from collections.abc import Collection

@dataclasses.dataclass
class WireMeter:
    """Accumulates the TCP payload bytes this process sends, and wall time, over the windows it is used in
    (``with meter:``), plus bytes counted elsewhere (:meth:`add`). Per socket: a socket opened inside a
    window counts from zero; one closed inside it is not counted."""

    bytes_sent: int = 0
    wall_s: float = 0.0
    _start: dict = dataclasses.field(default_factory=dict)
    _start_time: float = 0.0

    def __enter__(self) -> "WireMeter":
        self._start = tcp_counters()
        self._start_time = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        self.wall_s += time.perf_counter() - self._start_time
        end = tcp_counters()
        self.bytes_sent += sum(tx - self._start.get(fd, (0, 0))[1] for fd, (_, tx) in end.items())

    def add(self, bytes_sent: int, wall_s: float = 0.0) -> None:
        self.bytes_sent += bytes_sent
        self.wall_s += wall_s


_TCP_INFO_LEN = 216  # struct tcp_info up to tcpi_bytes_retrans (Linux >= 4.19)
_BYTES_RECEIVED_AT = 128  # tcpi_bytes_received (u64)
_NOTSENT_AT = 144  # tcpi_notsent_bytes (u32): written by the application, still queued in the kernel
_BYTES_SENT_AT = 200  # tcpi_bytes_sent (u64): payload handed to the wire, retransmissions included
_BYTES_RETRANS_AT = 208  # tcpi_bytes_retrans (u64)


def socket_counters(sock: socket.socket) -> tuple[int, int]:
    """(bytes received, bytes sent) of one TCP socket, as :func:`tcp_counters` reads them; (0, 0) where the
    platform has no such counters. One ``getsockopt``: for a caller that holds its sockets (no scan of the
    process's descriptors)."""
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_LEN)
    except (OSError, AttributeError):
        return 0, 0
    if len(info) < _BYTES_RETRANS_AT + 8:
        return 0, 0
    return (struct.unpack_from("<Q", info, _BYTES_RECEIVED_AT)[0],
            struct.unpack_from("<Q", info, _BYTES_SENT_AT)[0] - struct.unpack_from("<Q", info, _BYTES_RETRANS_AT)[0]
            + struct.unpack_from("<I", info, _NOTSENT_AT)[0])


def tcp_counters() -> dict[int, tuple[int, int]]:
    """Per TCP socket of this process (file descriptor → (bytes received, bytes sent)): TCP payload from
    the kernel's per-connection counters (``TCP_INFO``). Sent = handed to the wire (without retransmissions)
    plus still queued, i.e. everything the process wrote; received = everything that arrived, read by the
    process or not yet. Empty where the platform has no such counters. Cost: one ``getsockopt`` per socket."""
    counters: dict[int, tuple[int, int]] = {}
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return counters
    for name in fds:
        try:
            if not os.readlink(f"/proc/self/fd/{name}").startswith("socket:"):
                continue
            sock = socket.socket(fileno=os.dup(int(name)))
        except OSError:
            continue
        try:
            if sock.type != socket.SOCK_STREAM or sock.family not in (socket.AF_INET, socket.AF_INET6):
                continue
            info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_LEN)
            if len(info) >= _BYTES_RETRANS_AT + 8:
                counters[int(name)] = (
                    struct.unpack_from("<Q", info, _BYTES_RECEIVED_AT)[0],
                    struct.unpack_from("<Q", info, _BYTES_SENT_AT)[0]
                    - struct.unpack_from("<Q", info, _BYTES_RETRANS_AT)[0]
                    + struct.unpack_from("<I", info, _NOTSENT_AT)[0])
        except OSError:
            pass
        finally:
            sock.close()  # closes our duplicate only
    return counters


def tcp_bytes(fds: set[int] | None = None, *, exclude: Collection[int] = frozenset()) -> tuple[int, int]:
    """(bytes received, bytes sent) summed over this process's TCP sockets (only ``fds`` if given, never
    those in ``exclude``); see :func:`tcp_counters`."""
    counters = tcp_counters()
    chosen = [v for fd, v in counters.items() if (fds is None or fd in fds) and fd not in exclude]
    return sum(v[0] for v in chosen), sum(v[1] for v in chosen)


def interface_counters(name: str) -> dict[str, int] | None:
    """Frame counters of network interface ``name`` as the kernel keeps them (bytes include the Ethernet
    and IP/TCP headers); None if there is no such interface in this network namespace.

    Read from one line of ``/proc/net/dev`` — one snapshot of the device's statistics — so that a packet
    sent while reading cannot be counted in ``tx_packets`` but not in ``tx_bytes`` (separate sysfs files
    are read at separate moments)."""
    try:
        with open("/proc/net/dev") as table:
            lines = table.read().splitlines()[2:]
    except OSError:
        return None
    for line in lines:
        device, _, numbers = line.partition(":")
        if device.strip() == name:
            fields = [int(x) for x in numbers.split()]
            return {"rx_bytes": fields[0], "rx_packets": fields[1], "tx_bytes": fields[8], "tx_packets": fields[9]}
    return None
