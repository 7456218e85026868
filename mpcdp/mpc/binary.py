"""Exact circuits on XOR-shared 64-bit words: conversion from arithmetic shares, one-hot decoding by rotation,
table lookup, packed ANDs and the AND of a word's bits (the Bernoulli factors built on them:
:mod:`mpcdp.mpc.bernoulli`).

These run the discrete Gaussian sampler (:mod:`mpcdp.noise.secure_gaussian`) on integers only. Every
function works on a batch of flat int64 tensors, and every party calls it in lockstep. A word holds one
value's bits, so one AND of two words is 64 bit-ANDs at the price of one (binary Beaver, :class:`ShiftedAnds`).

Security model: semi-honest data parties. Correlated randomness comes from the dealer, which never sees an
opened value. Every opening is a value masked by dealer randomness no data party knows (kind ``masked``).
The functions here open no result: they return XOR shares.

Declared costs per call on n words (one opening = one ``ctx.open_masked``; see :func:`declared_cost_*`):
  to_binary_by_chunks  1 opening of n ring elements (c = x − r), ⌈log2(q − 1)⌉ prefix levels of a few bit
              columns of ⌈n/64⌉ words each (q = ⌈bits/4⌉ chunks; :mod:`mpcdp.mpc.carry_prefix`), 1 opening of n
              words; ⌈q/4⌉ dealt one-hot words per element (:class:`mpcdp.adapter.ChunkOneHots`); 3 dealer requests
  rotated_one_hots  1 opening of the windows' bits, packed (⌈n/⌊64/span⌋⌉ words); one dealt one-hot word per
              window (:class:`mpcdp.adapter.OneHotPairs`); 1 dealer request; no AND
  all_bits_packed   ⌈log2 w⌉ levels of ⌈n/⌊64/lane⌋⌉ words
  all_bits_tree     ⌈log2 w⌉ levels of 2⌈n/⌊64/h⌋⌉ words, h = ⌈w/2⌉, ⌈w/4⌉, ... (:func:`declared_cost_all_bits_tree`)
  packed_ands 1 opening of (variables · ⌈n/⌊64/lane⌋⌉) words
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

import numpy as np
import torch

if TYPE_CHECKING:
    from mpcdp import adapter
    from mpcdp.adapter.lanes import chunk_values, lanes_below, row_blocks
from mpcdp.mpc.carry_prefix import carry_prefix, prefix_variables, sklansky_levels
from mpcdp.mpc.context import MpcContext
from mpcdp.mpc.ring import ShiftedAnds, public_xor

ONES = -1  # the all-ones 64-bit word


def low_mask(bits: int) -> int:
    return (1 << bits) - 1 if bits < 64 else ONES


def broadcast(ctx: MpcContext, x: torch.Tensor, bit: int) -> torch.Tensor:
    """XOR shares of the word whose 64 bits all equal bit ``bit`` of x (local)."""
    return -((x >> bit) & 1)


def _chunk_table(image) -> tuple[int, ...]:
    """The GF(2)-linear map, position by position, from a word of four 16-bit one-hot lanes (lane j the
    one-hot of a 4-bit value v) to 16 bits: ``image(v)`` (4 bits) at bits 4j..4j+3. Applied with :func:`select`."""
    return tuple((image(v) & 0xF) << (4 * j) for j in range(4) for v in range(16))


DIGIT_TABLE = _chunk_table(lambda v: v)
CARRY_TABLE = _chunk_table(lambda v: (v ^ (v + 1)) & 0xE)  # bits k >= 1 of v that a carry in flips
NIBBLE_LOW_BIT = 0x1111111111111111  # bit 0 of every 4-bit chunk


def spread_to_nibbles(values: torch.Tensor, count: int) -> torch.Tensor:
    """Bit i of each value moved to bit 4i, for i < ``count`` (<= 16; local, XOR-linear)."""
    out = torch.zeros_like(values)
    for i in range(count):
        out |= ((values >> i) & 1) << (4 * i)
    return out


def _chunk_sums(ctx: MpcContext, hots: torch.Tensor, c: torch.Tensor,
                chunks: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """From the dealt one-hots of r's chunks (n, ⌈chunks/4⌉) and public c: XOR shares of e_i = (c_i + r_i) mod 16
    for every chunk i (its 4 bits at 4i..4i+3, one word per element), of the carry-flip bits of e_i (bits 1..3 of
    e_i ⊕ (e_i + 1), same places), and of the chunks' (generate, propagate) bits (n, 2), bit i of each for
    chunk i: generate = [c_i + r_i >= 16] = [e_i < c_i], propagate = [e_i = 15]. Local."""
    from mpcdp.adapter.lanes import rotate_lanes_by, spread_nibbles

    e, flips = torch.zeros_like(c), torch.zeros_like(c)
    gp = torch.zeros((c.numel(), 2), dtype=torch.int64)
    for k in range(hots.shape[1]):
        group = (c >> (16 * k)) & low_mask(4 * max(0, min(4, chunks - 4 * k)))  # c's chunks 4k..4k+3, 4 bits each
        moved = rotate_lanes_by(hots[:, k], spread_nibbles(group))  # lane j: the one-hot of e_{4k+j}
        digit, flip = select_fields(ctx, moved, [(DIGIT_TABLE, 16), (CARRY_TABLE, 16)])
        e |= digit << (16 * k)
        flips |= flip << (16 * k)
        below_c = _below_lanes(group)  # lane j: positions below c's chunk
        gp[:, 0] |= gather_bits(lane_parity(moved & below_c, 16), 16, 4) << (4 * k)
        gp[:, 1] |= gather_bits(moved >> 15, 16, 4) << (4 * k)
    return e, flips, gp


def _below_lanes(group: torch.Tensor) -> torch.Tensor:
    """For 16-bit values (four 4-bit chunks a_j), the word whose 16-bit lane j has its a_j low bits set: two
    lookups by byte in :func:`_below_table` (a byte's two chunks, lanes 0 and 1 of the result)."""
    table = _below_table()
    return table[group & 0xFF] | (table[(group >> 8) & 0xFF] << 32)


@functools.lru_cache(maxsize=1)
def _below_table() -> torch.Tensor:
    """(256,): entry b = ((1 << (b & 15)) − 1) | (((1 << (b >> 4)) − 1) << 16)."""
    return torch.tensor([((1 << (b & 15)) - 1) | (((1 << (b >> 4)) - 1) << 16) for b in range(256)], dtype=torch.int64)


def _add_carries(ctx: MpcContext, e: torch.Tensor, flips: torch.Tensor, carries: torch.Tensor, *,
                 label: str) -> torch.Tensor:
    """XOR shares of the chunks e_i + carry_i (mod 16) from the chunks' words e and carry-flip bits and the
    carries (bit 4i: carry_i): bit 0 of a chunk flips with its carry, bit k >= 1 where carry AND flip bit k. One
    word (carries and flip bits side by side) opened once for its three shifted self-ANDs, which land on
    disjoint bits (4i + k for shift k): one merged product, one dealt word per element instead of three."""
    x = carries | flips
    ands = ShiftedAnds(ctx, x.numel(), 1, [(0, 0, 1), (0, 0, 2), (0, 0, 3)], label=label,
                       masks=[_signed(NIBBLE_LOW_BIT << k) for k in (1, 2, 3)])
    ands.open({0: x})
    return e ^ carries ^ ands.merged_product()


def to_binary_by_chunks(ctx: MpcContext, x: torch.Tensor, bits: int = 62, *, label: str = "a2b") -> torch.Tensor:
    """XOR shares of x mod 2^bits for additive shares of an integer x (bits <= 64); exact.

    Security model: as this module's (semi-honest; the material from the run's provider). The opened values are
    c = x − r, r uniform on the ring and unknown to every party (so c is uniform whatever x is), and the masked
    words of the ANDs (:class:`ShiftedAnds`); the dealt one-hots of r's chunks are never opened.

    Exactness: x = c + r in Z_2^64, so x mod 2^bits is the sum of c's and r's low ``bits`` bits, computed on
    4-bit chunks (:class:`mpcdp.adapter.ChunkOneHots` deals the one-hot of each chunk r_i of r). Rotating r_i's
    one-hot up by c_i (public; :func:`mpcdp.adapter.rotate_lanes`) gives the one-hot of e_i = (c_i + r_i) mod 16,
    from which local selections read e_i's bits, the bits a carry into the chunk flips (e_i + 1 flips bit
    k >= 1 iff bits 0..k−1 of e_i are 1), whether the chunk generates a carry (c_i + r_i >= 16, i.e. e_i < c_i)
    and whether it propagates one (e_i = 15). The carries into chunks 1.. come from a Sklansky prefix over the
    chunks' (generate, propagate) pairs on bit columns, 64 elements to a word
    (:func:`~mpcdp.mpc.carry_prefix.carry_prefix`); chunk i of the result is e_i + carry_i mod 16 (one AND level). The carry out of the top chunk is dropped (mod 2^bits); a narrower
    top chunk (4 ∤ bits: the dealt one-hot is of r's 4 bits there, c's chunk has only the bits below ``bits``) is
    right in its low bits, mod 16 and so mod 2^(bits mod 4), and only those are kept.

    Declared cost on n elements with q = ⌈bits/4⌉ chunks and L = ⌈log2(q − 1)⌉ levels: 1 opening of n ring
    elements (c), L openings of the prefix's columns (:func:`~mpcdp.mpc.carry_prefix.prefix_variables`, ⌈n/64⌉
    words each), 1 opening of n words (the carries' AND); dealt ⌈q/4⌉n one-hot words and the prefix's ANDs'
    columns plus n AND words (n for q = 2; none for q = 1, which opens c only); 3 dealer requests (2 for q = 2,
    1 for q = 1). For bits = 62: 20, 14, 10 and 8 columns, ≈ 2.8n elements in 6 openings (Kogge–Stone on
    16-bit lanes opened 4n; a binary adder on the 62 bits opens 13n in 7).
    """
    from mpcdp import adapter

    if not 1 <= bits <= 64:
        raise ValueError(f"`bits` must be in [1, 64]. Found {bits}.")
    flat, n = x.reshape(-1), x.numel()
    chunks = -(-bits // 4)
    r, hots = adapter.dealer_chunk_one_hots(n, bits)
    (c,) = ctx.open_masked([flat - r], label=f"{label}-mask")
    e, flips, gp = _chunk_sums(ctx, hots, c & low_mask(bits), chunks)
    if chunks == 1:
        return (e & low_mask(bits)).reshape(x.shape)
    g = carry_prefix(ctx, gp[:, 0], gp[:, 1], chunks - 1, label=f"{label}-carry") if chunks > 2 else gp[:, 0]
    carries = spread_to_nibbles(g << 1, chunks)
    out = _add_carries(ctx, e, flips, carries, label=f"{label}-add")
    return (out & low_mask(bits)).reshape(x.shape)


def declared_cost_by_chunks(n: int, bits: int = 62) -> tuple[list[int], dict[str, int], int]:
    """(elements of each opening, operations, dealer requests) of :func:`to_binary_by_chunks` on n elements: the
    mask n, the carry prefix's levels (:func:`prefix_variables`' columns, ⌈n/64⌉ words each), the carries' AND n;
    one_hot_words ⌈q/4⌉n, and_words the prefix's ANDs' columns plus n; requests: the one-hots, the prefix's
    material (one for every level) and the AND's."""
    chunks = -(-bits // 4)
    if chunks == 1:
        return [n], {"one_hot_words": n}, 1
    columns = -(-n // 64)
    variables = prefix_variables(chunks - 1)
    products = sum(1 + int(p) for steps in sklansky_levels(chunks - 1) for _, _, p in steps)
    ops = {"one_hot_words": -(-chunks // 4) * n, "and_words": products * columns + n}
    return [n, *[len(level) * columns for level in variables], n], ops, 2 + int(bool(variables))


def _signed(word: int) -> int:
    """A 64-bit pattern as a signed int64 value."""
    word &= (1 << 64) - 1
    return word - (1 << 64) if word >= 1 << 63 else word


def select(ctx: MpcContext, onehot: torch.Tensor, table: tuple[int, ...], bits: int) -> torch.Tensor:
    """XOR shares of table[v] (public ``bits``-bit entries) from the one-hot word of v (local).

    The result is GF(2)-linear in the share word w: select(w) = XOR of table[j] over the set bits j of w, so the
    XOR of the parties' results is table[v] (exactly one position is set in the shared word). It is computed
    :data:`SELECT_CHUNK` bits of w at a time from precomputed tables of 2^SELECT_CHUNK entries
    (:func:`_chunk_tables`, one flat array): one gather per chunk of w that the table reaches (6 for 56..64
    entries, whatever ``bits`` is; the bits of w beyond the table are ignored, as its missing entries are 0),
    block by block (:func:`~mpcdp.adapter.lanes.row_blocks`). With fewer than 64 entries it is any GF(2)-linear
    map of a word's low len(table) bits, w need not be one-hot (the chunk forms' parities use it so).
    """
    from mpcdp.adapter.lanes import row_blocks

    flat_tables, chunks = _chunk_tables(tuple(int(v) for v in table), bits)
    words = onehot.reshape(-1).contiguous()
    out = torch.empty_like(words)
    words_np, out_np = words.numpy(), out.numpy()
    for rows in row_blocks(words.numel(), 1):
        _select_block(words_np[rows], flat_tables, out_np[rows], chunks)
    return out.reshape(onehot.shape)


SELECT_CHUNK = 11
"""Bits of a one-hot word :func:`select` looks up at once: 2^11 entries per chunk (16 KiB), six chunks for 64
entries (96 KiB, in the core's cache), against eight gathers from 256-entry tables by bytes."""


def select_fields(ctx: MpcContext, onehot: torch.Tensor, tables: list[tuple[tuple[int, ...], int]]) -> list[torch.Tensor]:
    """:func:`select` of every (table, bits) in ``tables`` from the same one-hot words: the same XOR shares,
    with one pass of byte gathers per 64 bits of entries instead of one per table. Consecutive tables whose
    widths fit in a word are selected together (entry j of the merged table: their entries j side by side,
    the first at bit 0) and cut apart again; selection is XOR-linear bit by bit, so each field is exactly
    that table's selection. Local."""
    out: list[torch.Tensor] = []
    group: list[tuple[tuple[int, ...], int]] = []
    for table, bits in [*tables, ((), 65)]:  # a last entry too wide for any word closes the final group
        if group and sum(b for _, b in group) + bits > 64:
            if len(group) == 1:
                out.append(select(ctx, onehot, *group[0]))
            else:
                merged, offset = [0] * max(len(t) for t, _ in group), 0
                for entries, width in group:
                    for j, v in enumerate(entries):
                        merged[j] |= (int(v) & low_mask(width)) << offset
                    offset += width
                word, offset = select(ctx, onehot, tuple(merged), offset), 0
                for _, width in group:
                    out.append((word >> offset) & low_mask(width))
                    offset += width
            group = []
        group.append((table, bits))
    return out


def _select_block(words: np.ndarray, flat_tables: np.ndarray, out: np.ndarray, chunks: int) -> None:
    """``out`` = the XOR over the low ``chunks`` chunks c_k (:data:`SELECT_CHUNK` bits) of each word of
    flat_tables[2^SELECT_CHUNK·k + c_k] (NumPy views; the indices are in range by construction)."""
    size = 1 << SELECT_CHUNK
    index, entry = np.empty_like(words), np.empty_like(words)
    np.bitwise_and(words, size - 1, out=index)
    np.take(flat_tables, index, out=out, mode="clip")
    for k in range(1, chunks):
        np.right_shift(words, SELECT_CHUNK * k, out=index)
        np.bitwise_and(index, size - 1, out=index)
        np.add(index, size * k, out=index)
        np.take(flat_tables, index, out=entry, mode="clip")
        np.bitwise_xor(out, entry, out=out)


@functools.lru_cache(maxsize=64)
def _chunk_tables(table: tuple[int, ...], bits: int) -> tuple[np.ndarray, int]:
    """(flat (chunks·2^SELECT_CHUNK,) array, chunks): entry [k, c] is the XOR of table[SELECT_CHUNK·k + i] (low
    ``bits`` bits) over the set bits i of c, positions past the table (and past bit 63: an arithmetic shift's
    sign copies) counting 0; chunks = ⌈len(table)/SELECT_CHUNK⌉ (at least 1). Built by doubling: entries
    [2^i, 2^(i+1)) of a chunk's table are entries [0, 2^i) XOR its i-th position's entry."""
    if len(table) > 64:
        raise ValueError(f"a one-hot word selects among at most 64 entries. Found {len(table)}.")
    chunks = max(1, -(-len(table) // SELECT_CHUNK))
    entries = np.zeros(chunks * SELECT_CHUNK, dtype=np.int64)
    entries[:len(table)] = [_signed(v & ((1 << bits) - 1)) for v in table]
    positions = entries.reshape(chunks, SELECT_CHUNK)
    tables = np.zeros((chunks, 1 << SELECT_CHUNK), dtype=np.int64)
    for i in range(SELECT_CHUNK):
        np.bitwise_xor(tables[:, :1 << i], positions[:, i:i + 1], out=tables[:, 1 << i:1 << (i + 1)])
    return tables.reshape(-1), chunks


def levels(bits: int) -> int:
    """⌈log2 bits⌉: prefix levels for a ``bits``-bit word."""
    return max(0, math.ceil(math.log2(bits)))


def open_packed(ctx: MpcContext, values: torch.Tensor, bits: int, *, label: str,
                kind: str = "masked") -> torch.Tensor:
    """Open XOR-shared ``bits``-bit values, ⌊64/bits⌋ to a word (one opening of ⌈n/⌊64/bits⌋⌉ words; packing
    is XOR-linear). ``kind``: as :meth:`~mpcdp.mpc.context.MpcContext.open_masked`."""
    flat = values.reshape(-1) & low_mask(bits)
    if 64 // bits == 1:  # one value to a word
        (opened,) = ctx.open_masked([flat], label=label, xor=True, kind=kind)
        return (opened & low_mask(bits)).reshape(values.shape)
    (opened,) = ctx.open_masked([pack_lanes(flat, bits)], label=label, xor=True, kind=kind)
    return unpack_lanes(opened, bits, flat.numel()).reshape(values.shape)


def rotated_one_hots(ctx: MpcContext, words: torch.Tensor, windows: list[tuple[int, int]], *,
                     label: str, lane: int = 64) -> torch.Tensor:
    """XOR shares of the one-hot of each window (low, width) of XOR-shared words: (n, windows) words for
    ``lane`` 64 (width <= 6), or (n, ⌈windows/4⌉) words of four 16-bit lanes for ``lane`` 16 (width <= 4).

    A dealt rotation pair (R and the one-hots of R's windows, :class:`mpcdp.adapter.OneHotPairs`) masks the
    opened c = (words ⊕ R) restricted to the windows' span; each one-hot of R's window, moved by c's window
    (:func:`~mpcdp.adapter.moved_one_hots`, local), is the one-hot of the word's window. Cost: one opening of
    the span's bits, ⌊64/span⌋ elements to a word; one dealt word per word of one-hots; no AND.
    """
    from mpcdp import adapter

    flat = words.reshape(-1)
    r, hots = adapter.dealer_one_hot_pairs(flat.numel(), windows, lane)
    low = min(lo for lo, _ in windows)
    span = max(lo + width for lo, width in windows) - low
    masked = flat ^ r
    if low:
        masked >>= low
    c = open_packed(ctx, masked, span, label=label)  # the span's bits only
    if low:
        c <<= low
    return adapter.move_one_hots(hots.contiguous(), c, windows, lane)  # dealt, used once: moved in place


def lane_parity(words: torch.Tensor, lane: int) -> torch.Tensor:
    """Bit 0 of each ``lane``-bit lane (lane a power of 2 <= 64) becomes the parity of that lane (local; the
    other bits are left meaningless). Block by block."""
    from mpcdp.adapter.lanes import row_blocks

    out = torch.empty(words.shape, dtype=torch.int64)
    flat_in, flat_out = words.reshape(-1).numpy(), out.view(-1).numpy()
    for rows in row_blocks(flat_in.size, 1):
        x, s = flat_out[rows], lane // 2
        x[:] = flat_in[rows]
        shifted = np.empty_like(x)
        while s:
            np.right_shift(x, s, out=shifted)
            x ^= shifted
            s //= 2
    return out


def gather_bits(words: torch.Tensor, stride: int, count: int) -> torch.Tensor:
    """Bits 0, stride, 2·stride, ... of each word, packed: bit i of the result is bit i·stride (local; stride
    a power of 2, count·stride <= 64). Groups of gathered bits are merged pairwise, ⌈log2 count⌉ steps, block
    by block."""
    from mpcdp.adapter.lanes import row_blocks

    wanted = _signed(sum(1 << (i * stride) for i in range(count)))
    merges, group = [], 1  # (shift, mask) per step: groups of `group` bits at the bottom of 2·group·stride
    while group < count:
        block = 2 * group * stride
        kept = sum(((1 << (2 * group)) - 1) << start for start in range(0, 64, block))
        merges.append((block // 2 - group, _signed(kept)))
        group *= 2
    out = torch.empty(words.shape, dtype=torch.int64)
    flat_in, flat_out = words.reshape(-1).numpy(), out.view(-1).numpy()
    for rows in row_blocks(flat_in.size, 1):
        x = np.bitwise_and(flat_in[rows], wanted, out=flat_out[rows])
        shifted = np.empty_like(x)
        for shift, mask in merges:
            np.right_shift(x, shift, out=shifted)
            x |= shifted
            x &= mask
    return out


def pack_lanes(values: torch.Tensor, lane: int) -> torch.Tensor:
    """⌊64/lane⌋ values (< 2^lane each, or XOR shares of them) to a word, lane j at bits [j·lane, (j+1)·lane).
    Few wide lanes (up to 4 to a word): a constant shift and an OR per lane on NumPy views; many narrow ones:
    one broadcast shift and a sum over each word's row (disjoint bit fields: the sum is their OR)."""
    per = 64 // lane
    if per == 1:
        return values.reshape(-1) & low_mask(lane)
    n = values.numel()
    rows = torch.zeros((-(-n // per), per), dtype=torch.int64)  # the last word's missing values 0
    torch.bitwise_and(values.reshape(-1), low_mask(lane), out=rows.view(-1)[:n])
    if per > 4:
        rows <<= torch.arange(per, dtype=torch.int64) * lane
        return rows.sum(1)
    columns = rows.numpy()
    out, moved = columns[:, 0].copy(), np.empty(rows.shape[0], dtype=np.int64)
    for j in range(1, per):
        out |= np.left_shift(columns[:, j], j * lane, out=moved)
    return torch.from_numpy(out)


def unpack_lanes(packed: torch.Tensor, lane: int, count: int) -> torch.Tensor:
    """The first ``count`` values of :func:`pack_lanes`' words: 1-bit lanes by numpy's unpackbits, up to 4
    lanes to a word by a constant (logical) shift per lane into its column of the result and one mask on
    NumPy views, more by one broadcast shift."""
    if lane == 64:
        return packed.reshape(-1)[:count]
    per = 64 // lane
    if per > 4 and lane > 1:
        shifts = torch.arange(per, dtype=torch.int64) * lane
        return ((packed.unsqueeze(1) >> shifts) & low_mask(lane)).reshape(-1)[:count]
    words = np.ascontiguousarray(packed.reshape(-1).numpy()).view(np.uint64)
    if lane == 1:
        return torch.from_numpy(np.unpackbits(words.view(np.uint8), bitorder="little", count=count).astype(np.int64))
    out = np.empty((words.size, per), dtype=np.uint64)
    for j in range(per):
        np.right_shift(words, np.uint64(j * lane), out=out[:, j])
    out &= np.uint64(low_mask(lane))
    return torch.from_numpy(out.view(np.int64).reshape(-1)[:count])


def packed_ands(ctx: MpcContext, variables: dict[int, torch.Tensor], pairs: list[tuple[int, int]], lane: int, *,
                label: str) -> list[torch.Tensor]:
    """x_u AND x_v of XOR-shared ``lane``-bit values for every pair (one AND level), ⌊64/lane⌋ values to a
    word: 1 opening of (variables · n / ⌊64/lane⌋) words."""
    count = next(iter(variables.values())).numel()
    ands = ShiftedAnds(ctx, -(-count // (64 // lane)), len(variables), [(u, v, 0) for u, v in pairs], label=label)
    ands.open({u: pack_lanes(x, lane) for u, x in variables.items()})
    return [unpack_lanes(ands.product(u, v, 0), lane, count) for u, v in pairs]


def all_bits_tree(ctx: MpcContext, words: torch.Tensor, width: int, *, label: str = "and-all") -> torch.Tensor:
    """XOR shares (in bit 0) of the AND of bits 0..width−1 of each word, by a tree that opens only the bits
    still needed: each level ANDs the even bits with the odd ones (a lone top bit with a public 1), halving
    the width, the two ``h``-bit halves packed ⌊64/h⌋ to a word (:func:`packed_ands`). ⌈log2 width⌉ levels,
    level l one opening of 2⌈n/⌊64/h_l⌋⌉ words (h_1 = ⌈width/2⌉, h_{l+1} = ⌈h_l/2⌉): for 11 bits 0.39n words
    in all, against n for :func:`all_bits_packed`'s 16-bit lanes."""
    x = words.reshape(-1) & low_mask(width)
    w = width
    while w > 1:
        half = (w + 1) // 2
        even, odd = gather_bits(x, 2, half), gather_bits(x >> 1, 2, half)
        if w % 2:  # the top bit has no partner: AND it with 1 (odd's bit there is 0 in every share)
            odd = public_xor(ctx, odd, 1 << (half - 1))
        (x,) = packed_ands(ctx, {0: even, 1: odd}, [(0, 1)], half, label=label)
        w = half
    return (x & 1).reshape(words.shape)


def declared_cost_all_bits_tree(n: int, width: int) -> list[int]:
    """Words opened at each level of :func:`all_bits_tree` on n words (each level also deals half as many AND
    words and needs one request for material)."""
    sizes, w = [], width
    while w > 1:
        w = (w + 1) // 2
        sizes.append(2 * -(-n // (64 // w)))
    return sizes


def all_bits_packed(ctx: MpcContext, words: torch.Tensor, width: int, *, label: str = "and-all") -> torch.Tensor:
    """XOR shares (in bit 0) of the AND of bits 0..width−1 of each word, ⌊64/lane⌋ words to a 64-bit word,
    lane = 2^⌈log2 width⌉ bits (the unused bits of a lane set to 1): ⌈log2 width⌉ openings of ⌈n/⌊64/lane⌋⌉ words."""
    lane = 1 << levels(width)
    count = words.numel()
    x = pack_lanes(public_xor(ctx, words.reshape(-1) & low_mask(width), low_mask(lane) ^ low_mask(width)), lane)
    span = 1
    while span < width:
        ands = ShiftedAnds(ctx, x.numel(), 1, [(0, 0, -span)], label=label)
        ands.open({0: x})
        x = ands.product(0, 0, -span)
        span *= 2
    return (unpack_lanes(x, lane, count) & 1).reshape(words.shape)
