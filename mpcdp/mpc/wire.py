"""Bytes a party actually puts on the network, from the kernel's counters.

:func:`tcp_bytes` reads every TCP socket's ``TCP_INFO`` (payload received and sent, per connection — what
the cost ledgers use); :func:`interface_counters` reads a network interface's frame counters (used to check
the former against what crossed an emulated host's link). :class:`WireMeter`, older and cheaper, reads the
process's write counter:

``/proc/self/io``'s ``wchar`` counts every byte the process passes to write-type system calls; gloo's
TCP transport sends with ``writev``, so over a window in which the process only runs protocol traffic
the delta is exactly the TCP payload it sent: data plus gloo's own framing (about 288 bytes per
message, measured), without TCP/IP headers. Linux only; elsewhere the meter reports ``None``.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import struct
import time

_PROC_IO = "/proc/self/io"


def _written_bytes() -> int | None:
    try:
        with open(_PROC_IO, "rb") as fh:
            for line in fh:
                if line.startswith(b"wchar:"):
                    return int(line.split(b":")[1])
    except OSError:
        return None
    return None


@dataclasses.dataclass
class WireMeter:
    """Accumulates bytes written and wall time over the windows it is used in (``with meter:``)."""

    bytes_sent: int | None = 0
    wall_s: float = 0.0
    _start_bytes: int | None = None
    _start_time: float = 0.0

    def __enter__(self) -> "WireMeter":
        self._start_bytes = _written_bytes()
        self._start_time = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        self.wall_s += time.perf_counter() - self._start_time
        end = _written_bytes()
        if self._start_bytes is None or end is None or self.bytes_sent is None:
            self.bytes_sent = None
        else:
            self.bytes_sent += end - self._start_bytes

    def absorb(self, other: "WireMeter") -> None:
        """Add another meter's totals to this one."""
        self.wall_s += other.wall_s
        if self.bytes_sent is None or other.bytes_sent is None:
            self.bytes_sent = None
        else:
            self.bytes_sent += other.bytes_sent


_TCP_INFO_LEN = 216  # struct tcp_info up to tcpi_bytes_retrans (Linux >= 4.19)
_BYTES_RECEIVED_AT = 128  # tcpi_bytes_received (u64)
_NOTSENT_AT = 144  # tcpi_notsent_bytes (u32): written by the application, still queued in the kernel
_BYTES_SENT_AT = 200  # tcpi_bytes_sent (u64): payload handed to the wire, retransmissions included
_BYTES_RETRANS_AT = 208  # tcpi_bytes_retrans (u64)


def tcp_bytes() -> tuple[int, int]:
    """(bytes received, bytes sent): TCP payload over every TCP socket this process holds, from the
    kernel's per-connection counters (``TCP_INFO``). Sent = handed to the wire (without retransmissions)
    plus still queued, i.e. everything the process wrote. Exact for the sockets open now; (0, 0) where
    the platform has no such counters. Cost: one ``getsockopt`` per open socket (tens of microseconds)."""
    received = sent = 0
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return 0, 0
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
                received += struct.unpack_from("<Q", info, _BYTES_RECEIVED_AT)[0]
                sent += (struct.unpack_from("<Q", info, _BYTES_SENT_AT)[0]
                         - struct.unpack_from("<Q", info, _BYTES_RETRANS_AT)[0]
                         + struct.unpack_from("<I", info, _NOTSENT_AT)[0])
        except OSError:
            pass
        finally:
            sock.close()  # closes our duplicate only
    return received, sent


def interface_counters(name: str) -> dict[str, int] | None:
    """Frame counters of network interface ``name`` as the kernel keeps them (bytes include the Ethernet
    and IP/TCP headers); None if there is no such interface in this network namespace."""
    base = f"/sys/class/net/{name}/statistics"
    try:
        return {key: int(open(f"{base}/{key}").read()) for key in ("tx_bytes", "rx_bytes", "tx_packets", "rx_packets")}
    except OSError:
        return None
