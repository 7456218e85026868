"""The carries of a sum of two XOR-shared numbers, from their chunks' (generate, propagate) bits: a Sklansky
(divide-and-conquer) prefix on bit columns, used by :func:`mpcdp.mpc.binary.to_binary_by_chunks` (the sampler's
T to binary) for the carries between its 4-bit chunks.

Security model: as :mod:`mpcdp.mpc.binary`'s (semi-honest; the material from the run's provider). The only
values opened are the ANDs' operands XOR dealt masks no data party knows (:func:`~mpcdp.mpc.ring.ShiftedAnds`,
kind ``masked``; under honest-majority among parties 0–2, re-randomised resharings), in numbers set by the
element count and the width only. Nothing is opened in the clear: the result is XOR shares.

Declared cost on n elements and w positions (:func:`prefix_variables`, :func:`sklansky_levels`): ⌈log2 w⌉
openings, level l of |variables_l|·⌈n/64⌉ words; the ANDs' material in one dealer request, one dealt word per
AND per 64 elements. For w = 15 (62-bit T): 20, 14, 10 and 8 columns (52 bits per element) and 42 ANDs, against
Kogge–Stone on four 16-bit lanes to a word: 4 levels of 32 bits (128) and 112 AND bits.
"""

from __future__ import annotations

import functools

import numpy as np
import torch

from mpcdp.mpc.context import MpcContext
from mpcdp.mpc.ring import ShiftedAnds


@functools.lru_cache(maxsize=16)
def sklansky_levels(width: int) -> tuple[tuple[tuple[int, int, bool], ...], ...]:
    """The steps of a Sklansky (divide-and-conquer) prefix over positions 0..width−1, level by level: at level l
    every position u in the upper half of a block of 2^(l+1) positions takes (u, top, p), top the last position
    of the block's lower half: G_u ^= P_u·G_top and, where p, P_u = P_u·P_top. ⌈log2 width⌉ levels (as
    Kogge–Stone), with P updated only where a later level reads it: never in blocks that start at position 0
    (no carry enters position 0, so no P of a prefix from 0 is read). Public constants."""
    levels: list[list[list]] = []
    half = 1
    while half < width:
        levels.append([[u, start + half - 1, start > 0] for start in range(0, width, 2 * half)
                       for u in range(start + half, min(start + 2 * half, width))])
        half *= 2
    read: set[int] = set()  # positions whose P a later level reads
    for steps in reversed(levels):
        for step in steps:
            step[2] = step[2] and step[0] in read
        read |= {u for u, _, _ in steps} | {top for _, top, p in steps if p}
    return tuple(tuple((u, top, p) for u, top, p in steps) for steps in levels)


def prefix_variables(width: int) -> list[list[tuple[str, int]]]:
    """Per level of :func:`sklansky_levels`, the columns its ANDs open, each once: P of every combined position,
    G of every top, P of every top whose P some step there reads."""
    out = []
    for steps in sklansky_levels(width):
        tops = sorted({top for _, top, _ in steps})
        out.append([("P", u) for u, _, _ in steps] + [("G", t) for t in tops] +
                   [("P", t) for t in tops if any(p and top == t for _, top, p in steps)])
    return out


@functools.lru_cache(maxsize=16)
def _numbering(width: int) -> tuple[dict[tuple[int, str, int], int], list[tuple[int, int, int]]]:
    """(the ANDs' variable of each (level, kind, position) that :func:`prefix_variables` opens, every product's
    (variable, variable, shift 0): each step's P_u·G_top, then its P_u·P_top where it updates P)."""
    index = {(level, kind, pos): 0 for level, opened in enumerate(prefix_variables(width)) for kind, pos in opened}
    index = {key: i for i, key in enumerate(index)}
    pairs = []
    for level, steps in enumerate(sklansky_levels(width)):
        for u, top, update in steps:
            pairs.append((index[(level, "P", u)], index[(level, "G", top)], 0))
            if update:
                pairs.append((index[(level, "P", u)], index[(level, "P", top)], 0))
    return index, pairs


def carry_prefix(ctx: MpcContext, g: torch.Tensor, p: torch.Tensor, width: int, *, label: str) -> torch.Tensor:
    """Words whose bit i is g_i ⊕ p_i·g_{i−1} ⊕ p_i·p_{i−1}·g_{i−2} ⊕ ... (the carry out of positions 0..i, none
    into position 0) for every i < ``width``, from XOR-shared words of the (generate, propagate) bits: a Sklansky
    prefix (:func:`sklansky_levels`) on bit columns (bit i of 64 elements to a word, :func:`bit_columns`), each
    level one opening of the columns it multiplies (:func:`prefix_variables`), every level's material in one
    request. Exact: level l leaves every position u with (G, P) of the positions from u's block of 2^(l+1) start
    to u, so after the last level G_u is the carry out of 0..u."""
    index, pairs = _numbering(width)
    columns = {"G": list(bit_columns(g, width)), "P": list(bit_columns(p, width))}
    ands = ShiftedAnds(ctx, columns["G"][0].numel(), len(index), pairs, label=label)
    for level, steps in enumerate(sklansky_levels(width)):
        ands.open({index[(level, kind, pos)]: columns[kind][pos] for kind, pos in prefix_variables(width)[level]})
        for u, top, update in steps:
            mine = index[(level, "P", u)]
            columns["G"][u] = columns["G"][u] ^ ands.product(mine, index[(level, "G", top)], 0)
            if update:
                columns["P"][u] = ands.product(mine, index[(level, "P", top)], 0)
    return column_words(torch.stack(columns["G"]), g.numel())


def bit_columns(x: torch.Tensor, k: int) -> torch.Tensor:
    """(k, ⌈n/64⌉) words: row i holds bit i of the n words x, element j's at bit j mod 64 of word j // 64 (a bit
    transposition, XOR-linear; by bytes on NumPy views)."""
    n = x.numel()
    bits = np.unpackbits(np.ascontiguousarray(x.reshape(-1).numpy()).view(np.uint8).reshape(n, 8), axis=1,
                         bitorder="little")
    padded = np.zeros((k, -(-n // 64) * 64), dtype=np.uint8)
    padded[:, :n] = bits[:, :k].T
    return torch.from_numpy(np.packbits(padded, axis=1, bitorder="little").view(np.int64))


def column_words(columns: torch.Tensor, n: int) -> torch.Tensor:
    """The inverse of :func:`bit_columns` for its first n elements: (n,) words, bit i from row i (<= 64 rows)."""
    k = columns.shape[0]
    bits = np.unpackbits(np.ascontiguousarray(columns.numpy()).view(np.uint8), axis=1, count=n, bitorder="little")
    padded = np.zeros((n, 64), dtype=np.uint8)
    padded[:, :k] = bits.T
    return torch.from_numpy(np.packbits(padded, axis=1, bitorder="little").view(np.int64).reshape(n))
