"""Capture every frame on a network interface until killed (run inside an emulated host's namespace):
``python sniff.py IFACE OUT``. Appends each frame to OUT as it arrives, after its 4-byte length.

:func:`tcp_streams` reads such a capture back as TCP byte streams (each up to the first frame the capture
missed), and :func:`tls_records_only` checks that
a stream is nothing but TLS records (tests/test_multihost.py)."""

import socket
import struct
import sys

ETH_P_ALL = 0x0003
TLS_CONTENT_TYPES = (20, 21, 22, 23)  # change_cipher_spec, alert, handshake, application_data
TLS_MAX_RECORD = (1 << 14) + 256


def frames(capture: bytes):
    at = 0
    while at + 4 <= len(capture):
        (n,) = struct.unpack_from("<I", capture, at)
        yield capture[at + 4:at + 4 + n]
        at += 4 + n


def tcp_streams(capture: bytes) -> dict[tuple[str, int, str, int], bytes]:
    """The TCP payload of every IPv4 flow (source, port, destination, port) in a capture, in sequence order
    (each segment once)."""
    flows: dict[tuple, dict[int, bytes]] = {}
    for frame in frames(capture):
        if len(frame) < 14 + 20 or frame[12:14] != b"\x08\x00":
            continue  # not IPv4
        ip = frame[14:]
        ihl = (ip[0] & 0x0F) * 4
        if ip[9] != 6:
            continue  # not TCP
        total = struct.unpack_from("!H", ip, 2)[0]
        tcp = ip[ihl:total]
        sport, dport, seq = struct.unpack_from("!HHI", tcp, 0)
        payload = tcp[(tcp[12] >> 4) * 4:]
        if payload:
            key = (socket.inet_ntoa(ip[12:16]), sport, socket.inet_ntoa(ip[16:20]), dport)
            flows.setdefault(key, {})[seq] = payload
    return {key: _contiguous(segments) for key, segments in flows.items()}


def _contiguous(segments: dict[int, bytes]) -> bytes:
    """The flow's bytes from its first captured segment up to the first gap: a frame the capture missed (a
    loaded host can drop some) would otherwise splice unrelated bytes together. A retransmitted segment that
    overlaps what is already there adds only its new bytes."""
    first = min(segments)  # no wrap-around in a test's few megabytes
    out, expected = bytearray(), 0
    for seq in sorted(segments, key=lambda s: (s - first) % (1 << 32)):
        offset, payload = (seq - first) % (1 << 32), segments[seq]
        if offset > expected:
            break
        out += payload[expected - offset:]
        expected = max(expected, offset + len(payload))
    return bytes(out)


def tls_records_only(stream: bytes) -> bool:
    """Whether ``stream`` is a sequence of TLS records (the last one may be cut off by the capture's end)."""
    at = 0
    while at + 5 <= len(stream):
        kind, major, minor, length = stream[at], stream[at + 1], stream[at + 2], struct.unpack_from("!H", stream, at + 3)[0]
        if kind not in TLS_CONTENT_TYPES or major != 3 or minor not in (1, 3) or length > TLS_MAX_RECORD:
            return False
        at += 5 + length
    return True


if __name__ == "__main__":
    iface, out = sys.argv[1], sys.argv[2]
    capture = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    capture.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 25)  # few drops while the host is busy
    capture.bind((iface, 0))
    with open(out, "ab", buffering=0) as sink:
        print("capturing", flush=True)
        while True:
            frame = capture.recv(65535)
            sink.write(struct.pack("<I", len(frame)) + frame)
