"""The bit streams that the Bernoulli pass's ANDs open (:func:`mpcdp.mpc.bernoulli._and_on_runs`): groups of g
elements, each element's fields (one per block, block b's of width widths[b] <= 64) one after another, element e
of a group at bit e·W of the group's ⌈g·W/64⌉ words (W = Σ widths), field b at e·W + Σ_{c<b} widths[c].

Local layout only, no protocol: XOR-linear (applied to XOR shares it gives XOR shares of the stream), the same
words as :func:`mpcdp.adapter.lanes.pack_columns` on the fields in that order. Every field's word and shift are
public constants of (widths, g), so the work is a few whole-array NumPy operations on rows of every group's
copy of one field: one gather of those rows, a shift per row, then the fields of each rank within their words
(first field starting in a word, second, ...) ORed into their words, a handful of operations; no loop over
fields or words, no reduction over tiny segments, no torch shift by a tensor of amounts.

Also the gathering of each element's runs of bits into one word per block before they are packed, and back
(:func:`gather_runs`, :func:`spread_runs`).

Also each element's runs packed, :data:`RUN_GROUP` elements at a time, and unpacked (:func:`pack_runs`,
:func:`unpack_runs`: what the ANDs and the chunk flags' rotation open).

Declared cost: none on the wire beyond the layout (⌈g·W/64⌉ words per group of g elements).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np
import torch

from mpcdp.mpc.binary import low_mask


class StreamLayout(NamedTuple):
    """Fields j of a group in rank order (by their rank within the word they start in, then by word): their
    block and element, the word they start in and their shift there (a (fields, 1) column), their mask; per
    rank the slice of its fields and their words (distinct); the fields (in this order) that cross into the
    next word and the right shift that moves their upper part down; the group's words and elements."""
    block: np.ndarray
    element: np.ndarray
    word: np.ndarray
    shift: np.ndarray
    mask: np.ndarray
    ranks: tuple[tuple[slice, np.ndarray], ...]
    spill: np.ndarray
    spill_shift: np.ndarray
    words: int
    g: int


@functools.lru_cache(maxsize=64)
def stream_layout(widths: tuple[int, ...], g: int) -> StreamLayout:
    """The public layout of a group of ``g`` elements' fields of ``widths`` (each in [0, 64]; a field of width 0
    holds nothing: it is read as 0)."""
    if not widths or not all(0 <= w <= 64 for w in widths) or g < 1:
        raise ValueError(f"widths must be in [0, 64] and g >= 1. Found {widths}, {g}.")
    total = sum(widths)
    position = (np.arange(g).reshape(-1, 1) * total + np.cumsum((0,) + widths[:-1])).reshape(-1)
    width = np.tile(np.array(widths), g)
    keep = np.flatnonzero(width)  # fields of width 0 are never written and read as 0 (their mask)
    word, shift = position[keep] // 64, position[keep] % 64
    rank = np.arange(keep.size) - np.searchsorted(word, word)  # fields before it that start in its word
    order = np.lexsort((word, rank))
    ranks = tuple((slice(int(np.searchsorted(rank[order], r)), int(np.searchsorted(rank[order], r, "right"))),
                   word[order][rank[order] == r]) for r in range(int(rank.max()) + 1 if keep.size else 0))
    field = keep[order]
    spill = np.flatnonzero(shift[order] + width[field] > 64)
    return StreamLayout(field % len(widths), field // len(widths), word[order],
                        shift[order].astype(np.uint64).reshape(-1, 1),
                        np.array([(1 << w) - 1 for w in width[field].tolist()], dtype=np.uint64).reshape(-1, 1),
                        ranks, spill, (64 - shift[order][spill]).astype(np.uint64).reshape(-1, 1),
                        -(-g * total // 64), g)


def _by_field(gathered: np.ndarray, layout: StreamLayout) -> np.ndarray:
    """(blocks, groups·g) words as a (blocks, g, groups) view: [b, e] every group's element e of block b."""
    return gathered.reshape(gathered.shape[0], -1, layout.g).transpose(0, 2, 1)


def pack_stream(gathered: np.ndarray, layout: StreamLayout) -> np.ndarray:
    """(blocks, groups·g) uint64 words, block b's fields below 2^widths[b], to the (groups, words) words of the
    groups' streams: every group's copy of a field as one row (one gather), each row shifted to its place, the
    rows of each rank ORed into their words (distinct words per rank: disjoint bits), the upper parts of the
    fields that cross a word boundary ORed into the next word (one field crosses each boundary)."""
    rows = _by_field(gathered, layout)[layout.block, layout.element]  # (fields, groups), rank order
    words = np.zeros((layout.words, rows.shape[1]), dtype=np.uint64)
    spilled = np.right_shift(rows[layout.spill], layout.spill_shift)
    np.left_shift(rows, layout.shift, out=rows)
    for part, word in layout.ranks:
        words[word] |= rows[part]
    words[layout.word[layout.spill] + 1] |= spilled
    return np.ascontiguousarray(words.T)


def unpack_stream(words: np.ndarray, layout: StreamLayout, gathered: np.ndarray) -> None:
    """:func:`pack_stream` undone: the (groups, words) uint64 words' fields, each below 2^(its width), written to
    ``gathered`` (blocks, groups·g; fields of width 0 left as they are): every field's word gathered as a row and
    shifted down (logical shifts), the next word's low bits shifted up into the fields that cross a boundary."""
    by_word = np.ascontiguousarray(words.T)
    rows = np.right_shift(by_word[layout.word], layout.shift)
    rows[layout.spill] |= np.left_shift(by_word[layout.word[layout.spill] + 1], layout.spill_shift)
    rows &= layout.mask
    _by_field(gathered, layout)[layout.block, layout.element] = rows


def gather_runs(v: torch.Tensor, runs: list[list[tuple[int, int]]]) -> torch.Tensor:
    """(blocks, per): row b's runs[b] bits (low, width) of each word moved down next to each other, the first
    run at bit 0 (a fixed bit compression, XOR-linear). One pass over the row per run."""
    return _move_runs(v, runs, gather=True)


def spread_runs(gathered: torch.Tensor, runs: list[list[tuple[int, int]]]) -> torch.Tensor:
    """The inverse of :func:`gather_runs`: each row's packed runs moved back to their bits, 0 elsewhere."""
    return _move_runs(gathered, runs, gather=False)


def _move_runs(source: torch.Tensor, runs: list[list[tuple[int, int]]], *, gather: bool) -> torch.Tensor:
    """Row b's runs[b] moved between their own bits (low, width) and packed places (offset, width): from the
    own bits to the packed places with ``gather``, back otherwise; every other bit 0. Several rows: their
    r-th runs moved together (:func:`_move_runs_by_rank`); one row: run by run."""
    if len(runs) > 1:
        return _move_runs_by_rank(source, runs, gather=gather)
    out = torch.zeros_like(source)
    moved = torch.empty(source.shape[1], dtype=torch.int64)
    for b, runs_of in enumerate(runs):
        offset = 0
        for low, width in runs_of:
            read, write = (low, offset) if gather else (offset, low)
            torch.bitwise_right_shift(source[b], read, out=moved)
            moved &= low_mask(width)
            moved <<= write
            out[b] |= moved
            offset += width
    return out


@functools.lru_cache(maxsize=16)
def _rank_layout(runs: tuple[tuple[tuple[int, int], ...], ...]) -> tuple[np.ndarray, np.ndarray, list]:
    """For :func:`_move_runs_by_rank`: the rows by descending run count (a stable order), its inverse, and per
    rank r (r-th run of a row) the count c of rows that have one and their (low, width, offset) as (c, 1)
    columns, in that order (NumPy arrays)."""
    order = sorted(range(len(runs)), key=lambda b: -len(runs[b]))
    inverse = [0] * len(order)
    for place, b in enumerate(order):
        inverse[b] = place
    offsets = [[sum(w for _, w in runs[b][:r]) for r in range(len(runs[b]))] for b in range(len(runs))]
    ranks = []
    for r in range(max(len(block) for block in runs)):
        rows = [b for b in order if len(runs[b]) > r]

        def column(values: list[int]) -> np.ndarray:
            return np.array(values, dtype=np.int64).reshape(-1, 1)

        ranks.append((len(rows), column([runs[b][r][0] for b in rows]),
                      column([low_mask(runs[b][r][1]) for b in rows]), column([offsets[b][r] for b in rows])))
    return np.array(order, dtype=np.int64), np.array(inverse, dtype=np.int64), ranks


def _move_runs_by_rank(source: torch.Tensor, runs: list[list[tuple[int, int]]], *, gather: bool) -> torch.Tensor:
    """:func:`_move_runs` on several rows at once: the rows put in order of descending run count, then for each
    rank r the r-th runs of the rows that have one (a leading slice) moved with per-row shifts and masks, so
    a call costs a few whole-slice operations per rank instead of per run; the rows put back in their order.
    The same bits move to the same places (on NumPy views: per-row shifts cost torch a slow path)."""
    order, inverse, ranks = _rank_layout(tuple(tuple(tuple(run) for run in block) for block in runs))
    in_order = bool((order == np.arange(order.size)).all())  # rows already by descending run count: no copies
    ordered = source.numpy() if in_order else np.take(source.numpy(), order, axis=0)
    out = np.zeros_like(ordered)
    moved = np.empty_like(ordered[:ranks[0][0]] if ranks else ordered)
    for count, lows, masks, offsets in ranks:
        read, write = (lows, offsets) if gather else (offsets, lows)
        part = moved[:count]
        np.right_shift(ordered[:count], read, out=part)
        part &= masks
        part <<= write
        out[:count] |= part
    return torch.from_numpy(out if in_order else np.take(out, inverse, axis=0))


RUN_GROUP = 64
"""Elements whose runs :func:`pack_runs` packs together with no word boundary between them: 64 elements'
Σ widths bits are exactly Σ widths words."""


def run_words(runs: list[list[tuple[int, int]]], per: int) -> int:
    """Words of :func:`pack_runs` on blocks of ``per`` elements: the runs of :data:`RUN_GROUP` elements at a
    time one after another (Σ widths words per group), then the rest's."""
    bits = sum(width for block in runs for _, width in block)
    return per // RUN_GROUP * bits + -(-(per % RUN_GROUP) * bits // 64)


def _run_groups(runs: list[list[tuple[int, int]]], per: int) -> list[tuple[int, int, StreamLayout]]:
    """(first element, end, layout) of each group of a block: the whole groups of :data:`RUN_GROUP`, then the rest."""
    widths = tuple(sum(width for _, width in runs_of) for runs_of in runs)  # each block's runs, side by side
    full = per // RUN_GROUP * RUN_GROUP
    return [(a, b, stream_layout(widths, min(b - a, RUN_GROUP))) for a, b in ((0, full), (full, per)) if b > a]


def pack_runs(v: torch.Tensor, runs: list[list[tuple[int, int]]]) -> torch.Tensor:
    """(:func:`run_words`,) words: the bit runs (low, width) of each element of v (len(runs) blocks of equal
    size) moved together into one word per block (:func:`gather_runs`), and those words, one per block and
    element, packed one after another across :data:`RUN_GROUP` elements of a block at a time
    (:func:`pack_stream`). Local, XOR-linear."""
    per = v.numel() // len(runs)
    gathered = gather_runs(v.reshape(len(runs), per), runs).numpy().view(np.uint64)
    parts = [pack_stream(gathered[:, a:b], layout).reshape(-1) for a, b, layout in _run_groups(runs, per)]
    del gathered  # a lower peak of memory
    stream = parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else np.zeros(0, np.uint64)  # 1: no copy
    return torch.from_numpy(stream.view(np.int64))


def unpack_runs(words: torch.Tensor, runs: list[list[tuple[int, int]]], per: int) -> torch.Tensor:
    """The inverse of :func:`pack_runs` on blocks of ``per`` elements: each element's runs at their bits, the
    other bits 0. Local, XOR-linear."""
    packed, start = words.contiguous().numpy().view(np.uint64), 0
    gathered = torch.zeros((len(runs), per), dtype=torch.int64)
    for a, b, layout in _run_groups(runs, per):
        count = (b - a) // layout.g * layout.words
        unpack_stream(packed[start:start + count].reshape(-1, layout.words), layout,
                      gathered.numpy().view(np.uint64)[:, a:b])
        start += count
    del packed
    return spread_runs(gathered, runs).reshape(-1)
