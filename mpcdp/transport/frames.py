"""The frame every message on mpcdp's links travels in, and its check on receipt.

A frame is a 16-byte header and a payload. The header (little-endian) holds:

* ``MP``, the magic;
* the format version;
* the payload's type code: int64 words, float64 values or UTF-8 JSON;
* the message number on this link and direction, counted from 0 by both ends;
* a tag, CRC-32 of the step's label, which sender and receiver both know;
* the payload length in bytes.

The receiver knows what it expects: the next message number, the label, the type and, for tensors, the exact
length. JSON payloads must be at most :data:`MAX_PUBLIC_BYTES`. A header that differs in any field stops the
run with :class:`~mpcdp.errors.ProtocolViolation`, which names the sending party, the field, what was
expected and what came. The header is checked before a byte of the payload is read into the receiver's
buffer. This catches:

* a short, long or garbled message: the length or the next header does not match;
* a message of the wrong step: the tag;
* a replayed, dropped or reordered message: the number;
* a payload of another type, including pickled objects: there is no pickle type, and a JSON payload is only
  ever parsed as JSON (:mod:`mpcdp.transport.public`).

Security model: framing protects the honest parties from desynchronisation and from data that is not
what the protocol says. It does not make a deviating party's *values* honest: the protocols stay
semi-honest. Cost: 16 bytes per message, declared in :func:`mpcdp.transport.costs.wire_bytes`.
"""

from __future__ import annotations

import functools
import struct
import zlib

import torch

from mpcdp.errors import ProtocolViolation

HEADER = struct.Struct("<2sBBIII")
HEADER_BYTES = HEADER.size
MAGIC = b"MP"
VERSION = 1
INT64, FLOAT64, JSON = 1, 2, 3
TYPE_NAMES = {INT64: "int64", FLOAT64: "float64", JSON: "json"}
MAX_PUBLIC_BYTES = 16 << 20
JOIN_BYTES = 1 << 16  # a payload up to this size leaves with its header in one write
RECORD_BYTES = 1 << 14  # TLS's largest record (16 KiB of plaintext): a larger frame's first write fills one
_CODES = {torch.int64: INT64, torch.float64: FLOAT64}


def code_of(dtype: torch.dtype) -> int:
    """The type code of a tensor payload."""
    if dtype not in _CODES:
        raise TypeError(f"mpcdp's links carry int64 or float64 tensors. Found {dtype}.")
    return _CODES[dtype]


@functools.lru_cache(maxsize=4096)
def tag_of(label: str) -> int:
    """The step tag of ``label`` (CRC-32 of its UTF-8 bytes; a run uses few labels, so each is computed once)."""
    return zlib.crc32(label.encode("utf-8"))


def header(code: int, number: int, label: str, length: int) -> bytes:
    """The header of message ``number`` on a link: a payload of type ``code`` and ``length`` bytes at step
    ``label``."""
    return HEADER.pack(MAGIC, VERSION, code, number, tag_of(label), length)


def writes(header: bytes, payload: memoryview) -> list[memoryview]:
    """A frame's writes on a link. A small frame (payload up to :data:`JOIN_BYTES`) is one write: one packet, as
    without a frame. A large one is its header joined to the payload's first bytes, one full TLS record of
    :data:`RECORD_BYTES` (a copy of 16 KiB), then the rest of the payload, written from the sender's tensor without a
    copy. (A header written alone was its own TLS record, 16 + 22 bytes on the wire, its own write system call, TCP
    packet and read on the peer, once per large frame.) The frame's bytes are the same either way."""
    if len(payload) <= JOIN_BYTES:
        return [memoryview(header + payload)]
    first = RECORD_BYTES - len(header)
    return [memoryview(header + payload[:first]), payload[first:]]


class Incoming:
    """One message expected from party ``peer``: a header first, then a payload written straight into
    ``into`` (a tensor's bytes, exact length), or into a new buffer of at most ``limit`` bytes (JSON)."""

    def __init__(self, peer: int, code: int, label: str, *, into: memoryview | None = None, limit: int = 0):
        self.peer, self.code, self.label = peer, code, label
        self.target = into
        self.limit = limit
        self.header = bytearray(HEADER_BYTES)
        self.filled = 0
        self.number = 0
        self.payload: bytearray | memoryview | None = None
        self.done = False

    def expect(self, number: int) -> None:
        self.number = number

    @property
    def started(self) -> bool:
        """Whether part of this message (of its header or payload) has arrived and it is not complete."""
        return not self.done and (self.filled > 0 or self.payload is not None)

    def progress(self) -> str:
        """How much of the frame arrived: "N of its M bytes" (M once the header is in)."""
        if self.payload is None:
            return f"{self.filled} bytes of its {HEADER_BYTES}-byte header"
        return f"{HEADER_BYTES + self.filled} of its {HEADER_BYTES + len(self.payload)} bytes"

    def window(self) -> memoryview:
        """Where the next received bytes go."""
        if self.payload is None:
            return memoryview(self.header)[self.filled:]
        return memoryview(self.payload)[self.filled:] if isinstance(self.payload, bytearray) \
            else self.payload[self.filled:]

    def advance(self, n: int, *, me: int) -> None:
        """``n`` more bytes arrived in :meth:`window`; check the header as soon as it is complete."""
        self.filled += n
        if self.payload is None and self.filled == HEADER_BYTES:
            length = self._check(me)
            self.filled = 0
            if self.target is not None:
                self.payload = self.target
            else:
                self.payload = bytearray(length)
            self.done = length == 0
        elif self.payload is not None and self.filled == len(self.payload):
            self.done = True

    def _check(self, me: int) -> int:
        magic, version, code, number, tag, length = HEADER.unpack(self.header)
        if magic != MAGIC or version != VERSION:
            self._refuse(me, "frame header", f"{MAGIC!r} version {VERSION}",
                         f"{magic!r} version {version} (not an mpcdp frame)")
        if number != self.number:
            self._refuse(me, "message number", str(self.number), f"{number} (a replayed, dropped or reordered message)")
        if tag != tag_of(self.label):
            self._refuse(me, "step tag", f"{tag_of(self.label):#010x}", f"{tag:#010x} (a message of another step)")
        if code != self.code:
            self._refuse(me, "payload type", TYPE_NAMES[self.code], TYPE_NAMES.get(code, f"unknown code {code}"))
        if self.target is not None and length != len(self.target):
            self._refuse(me, "payload length", f"{len(self.target)} bytes", f"{length} bytes")
        if self.target is None and length > self.limit:
            self._refuse(me, "payload length", f"at most {self.limit} bytes", f"{length} bytes")
        return length

    def _refuse(self, me: int, field: str, expected: str, found: str) -> None:
        raise ProtocolViolation(
            f"party {self.peer} sent a message that is not the expected one on party {me}'s link at step "
            f"{self.label!r}: {field} expected {expected}, found {found}", party=self.peer)


def read_exactly(link, n: int) -> bytes:
    """Exactly ``n`` bytes from a blocking socket (set-up messages: a rank, a store message's length and body).

    Raises:
        ConnectionError: the peer closed the connection first.
    """
    data = b""
    while len(data) < n:
        chunk = link.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the peer closed the connection")
        data += chunk
    return data
