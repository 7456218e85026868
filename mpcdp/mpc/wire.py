"""Bytes a party actually writes to the network, from the kernel's per-process counter.

``/proc/self/io``'s ``wchar`` counts every byte the process passes to write-type system calls; gloo's
TCP transport sends with ``writev``, so over a window in which the process only runs protocol traffic
the delta is exactly the TCP payload it sent: data plus gloo's own framing (about 288 bytes per
message, measured), without TCP/IP headers. Linux only; elsewhere the meter reports ``None``.
"""

from __future__ import annotations

import dataclasses
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
