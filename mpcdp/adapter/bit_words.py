"""The dealer's bit-domain replies in words (:mod:`.auth_bits`): MAC shares of the k = 1 bit domain packed in
:data:`MAC_BYTES` bytes each, and 0/1 bits packed 64 to an int64 word.

Local byte layout only, no protocol: what party 0 receives from the dealer and what the parties XOR when they
open bits (:func:`mpcdp.mpc.bit_authenticated.open_bits`) are these functions' words. Each is one vectorised
copy (numpy's packbits and a strided view of the packed MAC bytes), not a loop over the 64 bits of a word.
Unpacking a reply reads nothing past the words it is given: a short reply raises (the dealer link checks every
reply's announced shape first).

Declared cost: none on the wire beyond the layout (6 bytes per MAC share, one bit per packed bit).
"""

from __future__ import annotations

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
    :func:`mac_words` int64 words (the last zero-padded): one strided copy of each share's low bytes."""
    raw = macs.reshape(-1).contiguous().numpy().astype("<i8", copy=False).view(np.uint8).reshape(-1, 8)
    n = raw.shape[0]
    padded = np.zeros(mac_words(n) * 8, dtype=np.uint8)
    padded[:n * MAC_BYTES].reshape(n, MAC_BYTES)[:] = raw[:, :MAC_BYTES]
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
