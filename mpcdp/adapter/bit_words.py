"""The dealer's bit-domain replies in words (:mod:`.auth_bits`): MAC shares of the k = 1 bit domain packed in
:data:`MAC_BYTES` bytes each, and 0/1 bits packed 64 to an int64 word; and rotation pairs' one-hots with only
the positions each window's one-hot can set (:class:`.material.OneHotPairs`, :func:`pack_one_hots`).

Local byte layout only, no protocol: what party 0 receives from the dealer and what the parties XOR when they
open bits (:func:`mpcdp.mpc.bit_authenticated.open_bits`) are these functions' words. Each is one vectorised
copy (numpy's packbits and a strided view of the packed MAC bytes), not a loop over the 64 bits of a word.
Unpacking a reply reads nothing past the words it is given: a short reply raises (the dealer link checks every
reply's announced shape first).

Declared cost: none on the wire beyond the layout (6 bytes per MAC share, one bit per packed bit, whole
bytes per one-hot window).
"""

from __future__ import annotations

import functools

import numpy as np
import torch


MAC_BITS = 48
"""The bits of a bit-domain element that its MAC covers: SPDZ2k with k = 1 and s = 47 over Z_2^48 (the value's
bit and 47 MAC bits above it, :mod:`mpcdp.mpc.bit_authenticated`). Shares are int64 words computed mod 2^64 as
before; only their residues mod 2^48 matter, so party 0's dealt MAC shares travel as 6 bytes each."""
MAC_BYTES = MAC_BITS // 8


def mac_words(n: int) -> int:
    """int64 words that carry n packed MAC shares (:func:`pack_macs`)."""
    return -(-n * MAC_BYTES // 8)


def pack_macs(macs: torch.Tensor) -> torch.Tensor:
    """MAC shares (any shape, int64) mod 2^MAC_BITS, MAC_BYTES little-endian bytes each, one after another in
    :func:`mac_words` int64 words (the last zero-padded): one strided copy of each share's three low 16-bit
    halfwords (5× faster than copying its six low bytes one by one)."""
    raw = macs.reshape(-1).contiguous().numpy().astype("<i8", copy=False).view("<u2").reshape(-1, 4)
    n = raw.shape[0]
    padded = np.zeros(mac_words(n) * 8, dtype=np.uint8)
    padded[:n * MAC_BYTES].view("<u2").reshape(n, MAC_BYTES // 2)[:] = raw[:, :MAC_BYTES // 2]
    return torch.from_numpy(padded.view("<i8").astype(np.int64, copy=False))


def unpack_macs(words: torch.Tensor, n: int) -> torch.Tensor:
    """The n MAC shares of :func:`pack_macs`' words, (n,) int64 in [0, 2^MAC_BITS): every share but the last read
    as 8 bytes at a MAC_BYTES stride (within the words) with its top bytes masked off, the last one alone."""
    raw = words.reshape(-1).contiguous().numpy().astype("<i8", copy=False).view(np.uint8)
    if raw.size < n * MAC_BYTES:
        raise ValueError(f"{n} MAC shares need {n * MAC_BYTES} bytes. Found {raw.size}.")
    out = np.zeros(n, dtype=np.int64)
    if n > 1:
        wide = np.ndarray((n - 1,), dtype="<i8", buffer=raw, strides=(MAC_BYTES,))
        np.bitwise_and(wide, (1 << MAC_BITS) - 1, out=out[:n - 1])
    if n:
        last = np.zeros(8, dtype=np.uint8)
        last[:MAC_BYTES] = raw[(n - 1) * MAC_BYTES:n * MAC_BYTES]
        out[n - 1] = last.view("<i8")[0]
    return torch.from_numpy(out)


def pack_bits(bits: torch.Tensor) -> torch.Tensor:
    """Flat 0/1 int64 bits, 64 to a word (bit i of word w is bit 64·w + i)."""
    n = bits.numel()
    packed = np.zeros(-(-n // 64) * 8, dtype=np.uint8)
    packed[:-(-n // 8)] = np.packbits((bits.reshape(-1) & 1).to(torch.uint8).numpy(), bitorder="little")
    return torch.from_numpy(packed.view("<i8").astype(np.int64, copy=False))


def unpack_bits(words: torch.Tensor, n: int) -> torch.Tensor:
    """The first n bits of :func:`pack_bits`' words (0/1 int64; fewer if the words hold fewer)."""
    raw = words.reshape(-1).contiguous().numpy().astype("<i8", copy=False).view(np.uint8)
    return torch.from_numpy(np.unpackbits(raw, count=min(n, 8 * raw.size), bitorder="little").astype(np.int64))



@functools.lru_cache(maxsize=64)
def _one_hot_bytes(windows: tuple[tuple[int, int], ...], lane: int) -> np.ndarray:
    """The bytes of an element's one-hot words (:func:`~.lanes.packed_one_hots`, little-endian) that hold a
    window's 2^width positions, whole bytes (a 4-position one-hot takes one byte), in order."""
    per = 64 // lane
    keep: list[int] = []
    for i, (_, width) in enumerate(windows):
        first = 8 * (i // per) + lane * (i % per) // 8
        keep += range(first, first + max(1, (1 << width) // 8))
    return np.array(keep, dtype=np.int64)


def packs_one_hots(windows, lane: int) -> bool:
    """Whether :func:`pack_one_hots` makes the windows' one-hot words shorter: some lane has more bytes than
    its window's one-hot needs, or the last word has empty lanes."""
    windows = tuple((int(low), int(width)) for low, width in windows)
    return _one_hot_bytes(windows, lane).size < 8 * -(-len(windows) // (64 // lane))


def one_hot_reply_words(n: int, windows, lane: int) -> int:
    """Words of the one-hots of n elements as dealt: ⌈n·B/8⌉ for B bytes per element where :func:`pack_one_hots`
    is shorter, else one word per 64/lane windows of each element."""
    windows = tuple((int(low), int(width)) for low, width in windows)
    if not packs_one_hots(windows, lane):
        return n * -(-len(windows) // (64 // lane))
    return -(-n * _one_hot_bytes(windows, lane).size // 8)


def one_hot_mask(windows, lane: int) -> torch.Tensor:
    """(⌈windows/(64/lane)⌉,): the bits of :func:`~.lanes.packed_one_hots`' words in the bytes that
    :func:`pack_one_hots` keeps."""
    windows = tuple((int(low), int(width)) for low, width in windows)
    mask = np.zeros(8 * -(-len(windows) // (64 // lane)), dtype=np.uint8)
    mask[_one_hot_bytes(windows, lane)] = 0xFF
    return torch.from_numpy(mask.view(np.int64).copy())


def pack_one_hots(hots: torch.Tensor, windows, lane: int) -> torch.Tensor:
    """(:func:`one_hot_reply_words`,) words: each element's one-hot words (n, ⌈windows/(64/lane)⌉) with only the
    bytes that hold a window's positions (:func:`_one_hot_bytes`), one element after another (a byte gather:
    local, XOR-linear)."""
    windows = tuple((int(low), int(width)) for low, width in windows)
    keep, n = _one_hot_bytes(windows, lane), hots.shape[0]
    out = np.zeros(8 * one_hot_reply_words(n, windows, lane), dtype=np.uint8)
    out[:n * keep.size] = np.ascontiguousarray(hots.numpy()).view(np.uint8).reshape(n, 8 * hots.shape[1])[:, keep].reshape(-1)
    return torch.from_numpy(out.view(np.int64))


def unpack_one_hots(words: torch.Tensor, n: int, windows, lane: int) -> torch.Tensor:
    """The receiver's (n, ⌈windows/(64/lane)⌉) one-hot words from :func:`pack_one_hots`' words: 0 outside the
    kept bytes (the other members' shares are 0 there too, :func:`one_hot_mask`), except bit 0 of a lane with
    no window (:func:`~.lanes.packed_one_hots`: the one-hot of 0, public, held by the receiver). Runs of at
    least 8 consecutive kept bytes are copied as slices, the other kept bytes by one byte scatter
    (:func:`_byte_runs`)."""
    windows = tuple((int(low), int(width)) for low, width in windows)
    runs, (sources, places), empty = _byte_runs(windows, lane)
    kept = _one_hot_bytes(windows, lane).size
    out = np.zeros((n, 8 * -(-len(windows) // (64 // lane))), dtype=np.uint8)
    source = np.ascontiguousarray(words.numpy()).view(np.uint8)[:n * kept].reshape(n, kept)
    for start, at, length in runs:
        out[:, at:at + length] = source[:, start:start + length]
    if places.size:
        out[:, places] = source[:, sources]
    for byte, bit in empty:  # bytes no window keeps: 0 until this bit is set
        out[:, byte] = bit
    return torch.from_numpy(out.view(np.int64))


@functools.lru_cache(maxsize=64)
def _byte_runs(windows: tuple[tuple[int, int], ...], lane: int) -> tuple[tuple, tuple[np.ndarray, np.ndarray], tuple]:
    """For :func:`unpack_one_hots`: the runs of at least 8 consecutive kept bytes of :func:`_one_hot_bytes` as
    (index among the kept bytes, byte, length); the other kept bytes' (indices, bytes); (byte, bit value) of
    bit 0 of each lane with no window."""
    keep, per = _one_hot_bytes(windows, lane).tolist(), 64 // lane
    runs: list[list[int]] = []  # [index among the kept bytes, byte, length]
    for index, byte in enumerate(keep):
        if runs and runs[-1][1] + runs[-1][2] == byte:
            runs[-1][2] += 1
        else:
            runs.append([index, byte, 1])
    short = [(start + i, at + i) for start, at, length in runs if length < 8 for i in range(length)]
    scattered = (np.array([i for i, _ in short], dtype=np.int64), np.array([b for _, b in short], dtype=np.int64))
    empty = tuple((8 * (i // per) + lane * (i % per) // 8, 1 << (lane * (i % per) % 8))
                  for i in range(len(windows), -(-len(windows) // per) * per))
    return tuple(tuple(run) for run in runs if run[2] >= 8), scattered, empty
