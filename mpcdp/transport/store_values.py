"""What the rendezvous store holds and how its messages travel: the keys a run may write, the schema of
their values, and bounded reading of the wire format (:mod:`.store` serves and reads through these).

Wire format: a 4-byte little-endian length and at most :data:`MAX_MESSAGE_BYTES` of UTF-8 JSON nested at most
:data:`MAX_JSON_DEPTH` deep (checked before it is parsed). Keys: ``mpcdp/endpoint/<rank>`` =
``'IPv4 port processes'`` (:func:`parse_endpoint`), ``mpcdp/claim/<rank>`` = ``'parties processes nonce'``
(:func:`parse_claim`) and ``mpcdp/report/<rank>`` = ``{"suspect": j | null,
"evidence": kind}``, or a party's refusal of its own input ``{"refused", "file", "field", "position"}``
(:mod:`mpcdp.refusals`), or a data party's line refusing the run with the others ``{"disagreed": line}``
(:func:`parse_report`). Nothing is unpickled.

Security model: every value is parsed against this schema by the server when it is written and again by every
reader; a malformed value names its writer (the rank in its key), never stops the reader. Cost: none beyond
the bytes read.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import struct
import time
from typing import NamedTuple

from mpcdp.refusals import Refusal, parse_refusal

MAX_MESSAGE_BYTES = 4096
MAX_VALUE_BYTES = 256
MAX_JSON_DEPTH = 2
MAX_RANKS = 4096
REQUEST_S = 5.0
ENDPOINT_PREFIX = "mpcdp/endpoint/"
REPORT_PREFIX = "mpcdp/report/"
CLAIM_PREFIX = "mpcdp/claim/"
CLAIM_STRAYS = 8  # claims of ranks this far beyond a run's processes are kept (mpcdp.transport.claims)
EVIDENCE = ("violation", "short", "timeout", "closed", "mac", "bound", "none")
"""``mac``: the writer's MAC check failed (``security = "malicious"``); it names a suspect only where the
evidence does (a σ share that does not match its commitment), else none. ``bound``: the writer's in-MPC bound
check of the suspect's contribution failed (:mod:`mpcdp.mpc.bounded`; none when it is the writer's own)."""


class Report(NamedTuple):
    """One process's loss report: whom it suspects (None: nobody) and on what evidence (:data:`EVIDENCE`); or,
    evidence ``"refused"``, the writer's refusal of its own input (:mod:`mpcdp.refusals`); or, evidence
    ``"disagreed"``, the line on which the data parties refused the run together (``reason``: their handshake
    or data agreement differed, :func:`disagreement_value`)."""
    writer: int
    suspect: int | None
    evidence: str
    refusal: Refusal | None = None
    reason: str | None = None


def public_line(text: str) -> str:
    """``text`` as a disagreement report may carry it: printable characters only (others as ``?``), cut so that
    its report fits :data:`MAX_VALUE_BYTES` (ending in ``…`` when cut)."""
    text = "".join(ch if ch.isprintable() else "?" for ch in text.split("\n", 1)[0])
    cut = False
    while len(disagreement_value(text + ("…" if cut else "")).encode("utf-8")) > MAX_VALUE_BYTES:
        text, cut = text[:-8], True
    return text + ("…" if cut else "")


def disagreement_value(line: str) -> str:
    """The report of a data party that refused the run with the others (public: the handshake's or the data
    agreement's line, which every data party computed from what all of them sent): ``{"disagreed": line}``."""
    return json.dumps({"disagreed": line}, separators=(",", ":"), ensure_ascii=False)


# -- schema -----------------------------------------------------------------------------------------------

def key_rank(key: str) -> tuple[str, int] | None:
    """(prefix, rank) of a writable key (``mpcdp/endpoint/<rank>``, ``mpcdp/report/<rank>``,
    ``mpcdp/claim/<rank>``), else None."""
    for prefix in (ENDPOINT_PREFIX, REPORT_PREFIX, CLAIM_PREFIX):
        tail = key[len(prefix):] if key.startswith(prefix) else ""
        if tail.isascii() and tail.isdigit() and len(tail) <= 4 and (tail == "0" or not tail.startswith("0")):
            return prefix, int(tail)
    return None


def parse_endpoint(text: str) -> tuple[str, int, int]:
    """``'IPv4 port processes'`` → (host, port, processes).

    Raises:
        ValueError: any other text.
    """
    parts = text.split(" ")
    if len(parts) != 3 or not all(p.isascii() and p for p in parts):
        raise ValueError(f"{_shown(text)} is not 'IPv4 port processes'")
    host, port, processes = parts
    ipaddress.IPv4Address(host)
    if not (port.isdigit() and 0 < int(port) < 65536):
        raise ValueError(f"port {_shown(port)} is not in 1..65535")
    if not (processes.isdigit() and 0 < int(processes) <= MAX_RANKS):
        raise ValueError(f"process count {_shown(processes)} is not in 1..{MAX_RANKS}")
    return host, int(port), int(processes)


def parse_claim(text: str) -> tuple[int, int, str]:
    """``'parties processes nonce'`` (a process's claim of its place, :mod:`.claims`) → (parties, processes,
    nonce: 16 hex digits).

    Raises:
        ValueError: any other text.
    """
    parts = text.split(" ")
    if len(parts) != 3 or not all(p.isascii() and p.isdigit() and 0 < int(p) <= MAX_RANKS for p in parts[:2]) \
            or len(parts[2]) != 16 or any(ch not in "0123456789abcdef" for ch in parts[2]):
        raise ValueError(f"{_shown(text)} is not 'parties processes nonce'")
    return int(parts[0]), int(parts[1]), parts[2]


def parse_report(text: str, writer: int) -> Report:
    """``{"suspect": j | null, "evidence": kind}`` written by rank ``writer`` → :class:`Report`; a refusal
    (:func:`~.refusals.parse_refusal`) → a report of evidence ``"refused"`` that suspects nobody.

    Raises:
        ValueError: not that schema (other fields, a suspect that is the writer or not a rank, an unknown
            kind, a suspect without evidence or evidence without a suspect, a malformed refusal).
    """
    if len(text.encode("utf-8")) > MAX_VALUE_BYTES:
        raise ValueError(f"a report of more than {MAX_VALUE_BYTES} bytes")
    value = loads_bounded(text.encode("utf-8"), MAX_JSON_DEPTH)
    if isinstance(value, dict) and "refused" in value:
        return Report(writer, None, "refused", parse_refusal(value))
    if isinstance(value, dict) and "disagreed" in value:
        line = value["disagreed"]
        if set(value) != {"disagreed"} or not isinstance(line, str) or not line or public_line(line) != line:
            raise ValueError("a disagreement that is not {'disagreed': one printable line}")
        return Report(writer, None, "disagreed", reason=line)
    if not isinstance(value, dict) or set(value) != {"suspect", "evidence"}:
        raise ValueError(f"{_shown(text)} is not {{'suspect', 'evidence'}}")
    suspect, evidence = value["suspect"], value["evidence"]
    if evidence not in EVIDENCE:
        raise ValueError(f"evidence {_shown(str(evidence))} is not one of {', '.join(EVIDENCE)}")
    if suspect is None:
        if evidence not in ("none", "mac", "bound"):
            raise ValueError("evidence without a suspect")
        return Report(writer, None, evidence)
    if isinstance(suspect, bool) or not isinstance(suspect, int) or not 0 <= suspect < MAX_RANKS:
        raise ValueError(f"suspect {_shown(str(suspect))} is not a rank")
    if suspect == writer or evidence == "none":
        raise ValueError("a report that names its own writer, or a suspect without evidence")
    return Report(writer, suspect, evidence)


def json_depth(text: str) -> int:
    """How deep the arrays and objects of a JSON text nest (strings skipped), without parsing it."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def loads_bounded(data: bytes, depth: int):
    """UTF-8 JSON nested at most ``depth`` deep (checked first), without NaN or infinities.

    Raises:
        ValueError: anything else.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 ({exc.reason})") from None
    if json_depth(text) > depth:
        raise ValueError(f"JSON nested deeper than {depth}")
    try:
        return json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError("JSON nested too deep") from None


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _shown(text: str, limit: int = 60) -> str:
    """Hostile text as an error shows it: quoted, escaped and cut."""
    return repr(text[:limit]) + ("…" if len(text) > limit else "")


# -- wire -------------------------------------------------------------------------------------------------

def write_message(link: socket.socket, message: dict) -> None:
    data = json.dumps(message, separators=(",", ":")).encode()
    link.sendall(struct.pack("<I", len(data)) + data)


def read_reply(link: socket.socket) -> dict:
    """A reply from the store (the link's own timeout applies).

    Raises:
        ValueError: a reply over the size or depth caps, or not an object.
        ConnectionError: the store closed the connection.
    """
    (n,) = struct.unpack("<I", _recv_exactly(link, 4, None))
    if n > MAX_MESSAGE_BYTES:
        raise ValueError(f"a reply of {n} bytes")
    reply = loads_bounded(_recv_exactly(link, n, None), MAX_JSON_DEPTH)
    if not isinstance(reply, dict):
        raise ValueError("a reply that is not an object")
    return reply


def _recv_exactly(link: socket.socket, n: int, deadline: float | None) -> bytes:
    """Exactly ``n`` bytes; with a ``deadline`` (time.monotonic()) all of them must arrive before it.

    Raises:
        socket.timeout: the deadline passed. ConnectionError: the peer closed first.
    """
    data = b""
    while len(data) < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout("deadline")
            link.settimeout(left)
        chunk = link.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the peer closed the connection")
        data += chunk
    return data


# -- server -----------------------------------------------------------------------------------------------
