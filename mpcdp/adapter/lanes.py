"""Local word arithmetic on lane-packed one-hot words: moving each lane's set position by a public (or opened)
value, packing one-hots, packing fields of given widths one after another (:func:`pack_fields`), and the
block-by-block iteration that keeps these passes in cache.

Security model: none of its own — every function is local and GF(2)-linear in the share word, so applied to
each party's XOR share of lane-packed one-hots of r it gives shares of the moved one-hots, revealing nothing.
Used by the rotation-pair material (:class:`mpcdp.adapter.material.OneHotPairs`) and by the circuits of
:mod:`mpcdp.mpc.binary`. Cost: a few word operations per word and move step, no communication.
"""

from __future__ import annotations

import functools

import numpy as np
import torch

_SWAP_MASKS = (0x5555555555555555, 0x3333333333333333, 0x0F0F0F0F0F0F0F0F, 0x00FF00FF00FF00FF,
               0x0000FFFF0000FFFF, 0x00000000FFFFFFFF)  # positions whose index has bit i = 0
BLOCK_WORDS = 1 << 15
"""Words per block of local word arithmetic (:func:`row_blocks`): a block and its few temporaries stay in the
core's cache, and the temporaries are reused from block to block instead of being allocated at full size."""


def row_blocks(rows: int, per_row: int) -> list[slice]:
    """Consecutive row slices covering ``rows`` rows of ``per_row`` words, about :data:`BLOCK_WORDS` words each."""
    step = max(1, BLOCK_WORDS // max(1, per_row))
    return [slice(start, min(rows, start + step)) for start in range(0, rows, step)]


def xor_permute(words: torch.Tensor, c: torch.Tensor, lane: int = 64) -> torch.Tensor:
    """Each ``lane``-position lane of each word with position x moved to x ⊕ c (local, GF(2)-linear).

    ``c``: (n,) for one lane to a word, or (n, 64/lane), lane j's move in column j, each < ``lane``. Applied
    to a share of lane-packed one-hot words of r, it gives a share of the one-hot words of r ⊕ c. Cost: per
    word, log2(lane) conditional swap steps of a few word operations each, block by block (:func:`row_blocks`)."""
    per = 64 // lane
    c = c.reshape(words.shape[0], per)
    out = words.clone()
    for rows in row_blocks(words.shape[0], 1):
        spread = c[rows, 0].clone()  # lane j's move at bits lane·j..: one word per word
        for j in range(1, per):
            spread |= c[rows, j] << (lane * j)
        _move_lanes(_words(out[rows]), _words(spread), lane, lane.bit_length() - 1)
    return out


def _move_lanes(out: np.ndarray, spread: np.ndarray, lane: int, steps: int) -> None:
    """In place: each lane of ``out`` with position x moved to x ⊕ m, m the lane's bits of ``spread`` (same
    shape; lane j's m at bits lane·j.., below 2^steps). Step i swaps the position pairs (x, x + 2^i), x with
    bit i clear, in the lanes whose m has bit i (a masked delta swap: 8 word operations). On unsigned NumPy
    views of tensors' memory (:func:`_words`; logical shifts): the same word operations, at less cost per call
    than torch's on these block sizes. The mask of a step is bit i of each lane's m times the pairs' upper
    halves over 2^i (:func:`_step_masks`): one AND and one multiply, the lanes' products disjoint."""
    words, moves = out.view(np.uint64), spread.view(np.uint64)
    pick, delta = np.empty_like(words), np.empty_like(words)
    for s, bit_i, upper in _step_masks(lane)[:steps]:
        np.bitwise_and(moves, bit_i, out=pick)
        np.multiply(pick, upper, out=pick)  # the pairs' upper halves, in the lanes that swap
        np.left_shift(words, s, out=delta)
        np.bitwise_xor(delta, words, out=delta)
        np.bitwise_and(delta, pick, out=delta)
        np.bitwise_xor(words, delta, out=words)
        np.right_shift(delta, s, out=delta)
        np.bitwise_xor(words, delta, out=words)


@functools.lru_cache(maxsize=8)
def _step_masks(lane: int) -> tuple[tuple[np.uint64, np.uint64, np.uint64], ...]:
    """Per step i of :func:`_move_lanes` on ``lane``-position lanes: (2^i, bit i of every lane, a lane's
    positions with bit i set over 2^i: exact, as the lowest of them is 2^i)."""
    low_bits = sum(1 << (lane * j) for j in range(64 // lane))  # bit 0 of every lane
    return tuple((np.uint64(1 << i), np.uint64(low_bits << i), np.uint64((~_SWAP_MASKS[i] & ((1 << lane) - 1)) >> i))
                 for i in range(lane.bit_length() - 1))


def _words(x: torch.Tensor) -> np.ndarray:
    """A NumPy int64 view of a CPU tensor's memory (no copy: writes go to the tensor)."""
    return x.numpy()


def _lane_mask(lane: int, j: int) -> int:
    mask = ((1 << lane) - 1) << (lane * j)
    return mask - (1 << 64) if mask >= 1 << 63 else mask


def parity(words: torch.Tensor) -> torch.Tensor:
    """Parity of each word's 64 bits (local: the XOR of the parties' parities is the parity of the XOR)."""
    x = words
    for s in (32, 16, 8, 4, 2, 1):
        x = x ^ (x >> s)
    return x & 1


def moved_one_hots(hots: torch.Tensor, word: torch.Tensor, windows: list[tuple[int, int]], lane: int) -> torch.Tensor:
    """Every lane of ``hots`` (n, words; window i in word i // (64/lane), lane i % (64/lane)) moved by its
    window's bits of ``word`` (:func:`xor_permute`): one-hots of R's windows become those of (R ⊕ word)'s.
    Local; block by block (:func:`row_blocks`), all words of a row at once. ``hots`` is left as it is
    (:func:`move_one_hots` moves them in place)."""
    return move_one_hots(hots.contiguous().clone(), word, windows, lane)


def move_one_hots(hots: torch.Tensor, word: torch.Tensor, windows: list[tuple[int, int]], lane: int) -> torch.Tensor:
    """:func:`moved_one_hots` in place, on a contiguous ``hots`` the caller does not need again (dealt material
    consumed once: no copy of it), which it returns."""
    if not hots.is_contiguous():
        raise ValueError("`hots` must be contiguous to be moved in place")
    spread = _lane_moves(tuple(windows), lane, hots.shape[1])
    steps = max(width for _, width in windows)
    moves = _words(word.reshape(-1))
    for rows in row_blocks(hots.shape[0], hots.shape[1]):
        _move_lanes(_words(hots[rows]), spread(moves[rows]), lane, steps)
    return hots


@functools.lru_cache(maxsize=64)
def _lane_moves(windows: tuple[tuple[int, int], ...], lane: int, words: int):
    """The map from words (n,) to their lane moves (n, words), NumPy arrays: lane j of column i holds the bits
    of window i·(64/lane) + j, 0 for absent windows. One lane to a word, or 16-bit lanes whose windows are a
    word's consecutive nibbles: each column from its own constant shift of the words (:func:`_column_moves`,
    :func:`_nibble_moves`; a broadcast shift by an array of amounts runs element by element)."""
    per = 64 // lane
    padded = list(windows) + [(0, 0)] * (words * per - len(windows))
    column_masks = tuple(sum(((1 << padded[per * i + j][1]) - 1) << (lane * j) for j in range(per))
                         for i in range(words))
    bases = tuple(padded[per * i][0] for i in range(words))
    if per == 1:
        return functools.partial(_column_moves, bases, column_masks)
    if lane == 16 and all(padded[per * i + j][0] == padded[per * i][0] + 4 * j or padded[per * i + j][1] == 0
                          for i in range(words) for j in range(per)):
        return functools.partial(_nibble_moves, bases, column_masks)
    lows = np.array([low for low, _ in padded], dtype=np.int64).reshape(1, words, per)
    masks = np.array([(1 << width) - 1 for _, width in padded], dtype=np.int64).reshape(1, words, per)
    places = np.arange(per, dtype=np.int64) * lane
    return lambda word: (((word.reshape(-1, 1, 1) >> lows) & masks) << places).sum(2)  # disjoint: sum = OR


def _column_moves(lows: tuple[int, ...], masks: tuple[int, ...], word: np.ndarray) -> np.ndarray:
    """(n, len(lows)): column i the bits of ``word`` from lows[i] under masks[i]."""
    out = np.empty((word.shape[0], len(lows)), dtype=np.int64)
    for i, (low, mask) in enumerate(zip(lows, masks)):
        np.right_shift(word, low, out=out[:, i])
        out[:, i] &= mask
    return out


_NIBBLE_LANES = 0x000F000F000F000F  # bits 16j..16j+3, j < 4


def _nibble_moves(bases: tuple[int, ...], lane_masks: tuple[int, ...], word: np.ndarray) -> np.ndarray:
    """(n, len(bases)): column i the 4-bit groups j = 0..3 of ``word`` >> bases[i] at bits 16j..16j+3, kept
    where lane_masks[i] (bits within those) has them."""
    out = _column_moves(bases, (0xFFFF,) * len(bases), word)
    x, spare = out.reshape(-1), np.empty(out.size, dtype=np.int64)
    for shift, keep in ((24, 0x000000FF000000FF), (12, _NIBBLE_LANES)):
        np.left_shift(x, shift, out=spare)
        x |= spare
        x &= keep
    for i, mask in enumerate(lane_masks):
        if mask != _NIBBLE_LANES:
            out[:, i] &= mask
    return out


LANE_LOW_BIT = 1 | 1 << 16 | 1 << 32 | 1 << 48  # bit 0 of each 16-bit lane


def lanes_below(s: int) -> int:
    """Bits 0..s−1 of every 16-bit lane (0 <= s <= 16), as a signed word."""
    mask = ((1 << s) - 1) * LANE_LOW_BIT
    return mask - (1 << 64) if mask >= 1 << 63 else mask


def rotate_lanes(words: torch.Tensor, amounts: torch.Tensor) -> torch.Tensor:
    """Each 16-bit lane of each word rotated up by its public amount: position x to (x + a) mod 16 (local,
    GF(2)-linear). ``amounts``: (n, 4), lane j's amount in column j, each < 16. Applied to a share of the one-hot
    of v, it gives a share of the one-hot of (v + a) mod 16. Four conditional rotation steps (by 1, 2, 4, 8) of
    a few in-place word operations each, block by block (:func:`row_blocks`)."""
    spread = (amounts << _LANE_PLACES).sum(1)  # lane j's amount at bits 16j..16j+3 (disjoint: the sum is their OR)
    return rotate_lanes_by(words, spread)


def spread_nibbles(values: torch.Tensor) -> torch.Tensor:
    """The four 4-bit chunks of each value < 2^16 moved to bits 16j..16j+3 (the ``spread`` of
    :func:`rotate_lanes_by`): word operations, no shift by a tensor of amounts."""
    x = values | (values << 24)
    x &= 0x000000FF000000FF
    x |= x << 12
    x &= 0x000F000F000F000F
    return x


def rotate_lanes_by(words: torch.Tensor, spread: torch.Tensor) -> torch.Tensor:
    """:func:`rotate_lanes` with lane j's amount at bits 16j..16j+3 of ``spread`` (n,)."""
    out = words.clone()
    flat, moves_all = _words(out.reshape(-1)), _words(spread)
    for rows in row_blocks(out.shape[0], 1):
        x, moves = flat[rows], moves_all[rows]
        chosen, rotated, high = np.empty_like(x), np.empty_like(x), np.empty_like(x)
        for i in range(4):
            s = 1 << i
            below = lanes_below(s)
            np.left_shift(x, s, out=rotated)
            rotated &= ~below
            np.right_shift(x, 16 - s, out=high)
            high &= below
            rotated |= high
            rotated ^= x
            np.right_shift(moves, i, out=chosen)
            chosen &= LANE_LOW_BIT
            chosen *= 0xFFFF
            rotated &= chosen
            x ^= rotated
    return out


_LANE_PLACES = torch.arange(4, dtype=torch.int64) * 16


def chunk_values(word: torch.Tensor, chunks: int) -> torch.Tensor:
    """(n, 4·⌈chunks/4⌉): the 4-bit chunks of each word, those from ``chunks`` on set to 0."""
    values = (word.unsqueeze(1) >> (4 * torch.arange(4 * -(-chunks // 4)))) & 0xF
    values[:, chunks:] = 0
    return values


@functools.lru_cache(maxsize=64)
def _field_layout(widths: tuple[int, ...]) -> tuple[tuple[int, int, int, int, int], ...]:
    """Per field of :func:`pack_fields`: (its word, its bit offset there, its mask, for a field that crosses into
    the next word the bits there (0 otherwise), the mask of a word's bits from its offset up moved down (what a
    logical right shift by the offset keeps)), as signed 64-bit integers."""
    layout = []
    offset = 0
    for w in widths:
        layout.append((offset // 64, offset % 64, -1 if w >= 64 else (1 << w) - 1, max(0, offset % 64 + w - 64),
                       -1 if offset % 64 == 0 else (1 << (64 - offset % 64)) - 1))
        offset += w
    return tuple(layout)


@functools.lru_cache(maxsize=64)
def _column_layout(widths: tuple[int, ...]) -> dict[str, torch.Tensor]:
    """:func:`_field_layout` as tensors for whole-tensor packing: each field's word, bit offset and mask (as
    (k, 1) columns where they broadcast), and for the fields that cross into the next word their indices, the
    right shift that moves their upper part down, and that part's mask."""
    layout = _field_layout(widths)
    spills = [i for i, (_, _, _, spill, _) in enumerate(layout) if spill]

    def column(values) -> torch.Tensor:
        return torch.tensor(values, dtype=torch.int64).reshape(-1, 1)

    return {"word": torch.tensor([f[0] for f in layout], dtype=torch.int64),
            "bit": column([f[1] for f in layout]), "mask": column([f[2] for f in layout]),
            "above": column([f[4] for f in layout]),
            "spill": torch.tensor(spills, dtype=torch.int64),
            "spill_word": torch.tensor([layout[i][0] + 1 for i in spills], dtype=torch.int64),
            "spill_shift": column([64 - layout[i][1] for i in spills]),
            "spill_mask": column([(1 << layout[i][3]) - 1 for i in spills])}


def pack_columns(columns: torch.Tensor, widths: list[int]) -> torch.Tensor:
    """:func:`pack_fields` on columns: (k, n) fields (row i field i of every element) to (⌈Σ widths/64⌉, n)
    words (row j word j of every element). Whole-tensor operations, no loop over fields: every field masked and
    shifted to its offset at once, then added to its word (disjoint bits: the sum is their OR), the upper
    parts of the fields that cross a word boundary to the next word. ``columns`` is not modified."""
    if columns.shape[1] >= LONG_COLUMNS:
        return _pack_long_columns(columns, widths)
    layout = _column_layout(tuple(int(w) for w in widths))
    fields = torch.bitwise_and(columns, layout["mask"])
    words = torch.zeros((-(-sum(widths) // 64), columns.shape[1]), dtype=torch.int64)
    if layout["spill"].numel():
        upper = fields.index_select(0, layout["spill"])
        upper >>= layout["spill_shift"]
        upper &= layout["spill_mask"]
        words.index_add_(0, layout["spill_word"], upper)
    fields <<= layout["bit"]
    return words.index_add_(0, layout["word"], fields)


def unpack_columns(words: torch.Tensor, widths: list[int]) -> torch.Tensor:
    """The (k, n) fields of :func:`pack_columns`' (⌈Σ widths/64⌉, n) words, each in [0, 2^widths[i]).
    Whole-tensor operations: every field's word gathered and shifted down at once (a logical shift), the
    upper parts of the fields that cross a word boundary added from the next word (disjoint bits)."""
    if words.shape[1] >= LONG_COLUMNS:
        return _unpack_long_columns(words, widths)
    layout = _column_layout(tuple(int(w) for w in widths))
    out = words.index_select(0, layout["word"])
    out >>= layout["bit"]
    out &= layout["above"]  # a logical shift: the sign's copies cleared
    if layout["spill"].numel():
        upper = words.index_select(0, layout["spill_word"])
        upper <<= layout["spill_shift"]
        out.index_add_(0, layout["spill"], upper)  # above the lower part's bits: the sum is their OR
    out &= layout["mask"]
    return out


LONG_COLUMNS = 4096
"""Elements from which :func:`pack_columns` and :func:`unpack_columns` go field by field (a few operations on
each field's whole column, which stays in cache) instead of on every field at once (whose temporaries, k·n
words, would not): the former for many elements and few fields, the latter for many fields."""


def _pack_long_columns(columns: torch.Tensor, widths: list[int]) -> torch.Tensor:
    """:func:`pack_columns` field by field."""
    layout = _field_layout(tuple(int(w) for w in widths))
    n = columns.shape[1]
    words = torch.zeros((-(-sum(widths) // 64), n), dtype=torch.int64)
    field, moved = torch.empty(n, dtype=torch.int64), torch.empty(n, dtype=torch.int64)
    for i, (word, bit, mask, spill, _) in enumerate(layout):
        torch.bitwise_and(columns[i], mask, out=field)
        words[word] |= torch.bitwise_left_shift(field, bit, out=moved)
        if spill:  # the upper part: the next word's low bits
            torch.bitwise_right_shift(field, 64 - bit, out=moved)
            moved &= (1 << spill) - 1
            words[word + 1] |= moved
    return words


def _unpack_long_columns(words: torch.Tensor, widths: list[int]) -> torch.Tensor:
    """:func:`unpack_columns` field by field."""
    layout = _field_layout(tuple(int(w) for w in widths))
    out = torch.empty((len(layout), words.shape[1]), dtype=torch.int64)
    for i, (word, bit, mask, spill, above) in enumerate(layout):
        field = torch.bitwise_right_shift(words[word], bit, out=out[i])
        if bit:
            field &= above  # a logical shift: the sign's copies cleared
        if spill:
            field |= words[word + 1] << (64 - bit)
        if mask != -1:
            field &= mask
    return out


def pack_fields(values: torch.Tensor, widths: list[int]) -> torch.Tensor:
    """(n, k) int64 values to (n, ⌈Σ widths/64⌉) words: field i (values[:, i] mod 2^widths[i]) at its offset
    Σ_{j<i} widths[j] of the element's bit string, a field that crosses a word boundary split between the two
    (local and XOR-linear: applied to XOR shares it gives XOR shares of the packed words). On contiguous
    columns (:func:`pack_columns`: a few whole-tensor word operations, whatever the number of fields);
    ``values`` is not modified."""
    return pack_columns(values.T.contiguous(), widths).T.contiguous()  # free when values is a transposed (k, n) tensor


def unpack_fields(words: torch.Tensor, widths: list[int]) -> torch.Tensor:
    """The (n, k) fields of :func:`pack_fields`' words, each in [0, 2^widths[i]) (a 64-bit field as int64).
    On the rows as they are (no transposed copies), block by block (:func:`row_blocks`): each field's word
    gathered and shifted down at once (a logical shift), the next word's low bits shifted up into the fields
    that cross a word boundary (a shift by 64 clears the others), a few whole-block operations."""
    layout = _row_layout(tuple(int(w) for w in widths), words.shape[1])
    out = torch.empty((words.shape[0], len(widths)), dtype=torch.int64)
    words, upper = words.contiguous(), np.empty(0, dtype=np.uint64)
    for rows in row_blocks(words.shape[0], len(widths)):
        upper = _unpack_rows(words[rows], layout, out[rows], upper)
    return out


def _unpack_rows(block: torch.Tensor, layout: dict, field: torch.Tensor, upper: np.ndarray) -> np.ndarray:
    """:func:`unpack_fields` of one block of rows into ``field``; returns the scratch array ``upper`` (reused).
    On NumPy views as unsigned words: the shifts are logical and a shift by 64 clears, so each field is its
    word shifted down OR the next word shifted up, masked once."""
    words, out = block.numpy().view(np.uint64), field.numpy().view(np.uint64)
    if upper.shape != out.shape:
        upper = np.empty(out.shape, dtype=np.uint64)
    np.take(words, layout["word"], axis=1, out=out, mode="clip")  # in range: no buffered copy
    out >>= layout["bit"]
    if layout["spills"]:
        np.take(words, layout["next"], axis=1, out=upper, mode="clip")
        upper <<= layout["up"]
        out |= upper
    out &= layout["mask"]
    return upper


@functools.lru_cache(maxsize=64)
def _row_layout(widths: tuple[int, ...], words: int) -> dict:
    """:func:`_field_layout` as (k,) NumPy rows for :func:`unpack_fields`: each field's word, bit offset (as
    unsigned words, for logical shifts), the next word (the last word for a field that stays in its own), the
    left shift that moves that word's low bits above the field's lower part (64 for a field that stays in its
    word: the shift clears them), the field's mask, and whether any field crosses a word boundary."""
    layout = _field_layout(widths)

    def row(values) -> np.ndarray:
        return np.array(values, dtype=np.int64).view(np.uint64)

    return {"word": np.array([f[0] for f in layout]), "bit": row([f[1] for f in layout]),
            "next": np.array([min(f[0] + 1, words - 1) for f in layout]),
            "up": row([64 - f[1] if f[3] else 64 for f in layout]), "mask": row([f[2] for f in layout]),
            "spills": any(f[3] for f in layout)}


def packed_one_hots(r: torch.Tensor, windows: list[tuple[int, int]], lane: int) -> torch.Tensor:
    """(n, ⌈windows/(64/lane)⌉): the one-hot words of r's windows, 64/lane to a word (window i: word i // per,
    lane i % per)."""
    per = 64 // lane
    words = -(-len(windows) // per)
    padded = list(windows) + [(0, 0)] * (words * per - len(windows))  # absent windows: the one-hot of 0
    return _one_hot_bits(r, tuple(padded), lane).reshape(-1, words, per).sum(2)  # disjoint bits: sum = OR


@functools.lru_cache(maxsize=64)
def _one_hot_layout(windows: tuple[tuple[int, int], ...], lane: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(low bits, masks, lane offsets) of the windows of :func:`packed_one_hots`, as (1, windows) tensors."""
    per = 64 // lane
    lows = torch.tensor([[low for low, _ in windows]], dtype=torch.int64)
    masks = torch.tensor([[(1 << width) - 1 for _, width in windows]], dtype=torch.int64)
    return lows, masks, (torch.arange(len(windows), dtype=torch.int64) % per).unsqueeze(0) * lane


def _one_hot_bits(r: torch.Tensor, windows: tuple[tuple[int, int], ...], lane: int) -> torch.Tensor:
    """(n, windows): 1 << (window i's value + its lane's offset), one shift of a whole tensor."""
    lows, masks, offsets = _one_hot_layout(windows, lane)
    values = r.reshape(-1, 1) >> lows
    values &= masks
    values += offsets
    return torch.bitwise_left_shift(torch.ones((), dtype=torch.int64), values, out=values)


def check_widths(widths, k: int) -> list[int]:
    """``widths``: k integers in [1, 64] (the bits of each field of :func:`pack_fields`)."""
    from mpcdp.errors import ProtocolViolation

    if not (isinstance(widths, (list, tuple)) and len(widths) == k and all(
            isinstance(w, int) and not isinstance(w, bool) and 1 <= w <= 64 for w in widths)):
        raise ProtocolViolation(f"field widths must be {k} integers in [1, 64]. Found {str(widths)[:60]}", party=0)
    return [int(w) for w in widths]


WORD_BITS_GROUP = 8
"""Elements whose narrowed B2A shares :class:`WordBits` packs together (no word boundary between them)."""


def pack_bit_shares(share: torch.Tensor, widths: list[int]) -> torch.Tensor:
    """(n, k) shares, field i reduced to widths[i] bits, packed :data:`WORD_BITS_GROUP` elements at a time one
    field after another: (⌈n/g⌉, ⌈g·Σ widths/64⌉) words (the last group padded with zero fields)."""
    n, k = share.shape
    rows = -(-n // WORD_BITS_GROUP)
    padded = torch.zeros((rows * WORD_BITS_GROUP, k), dtype=torch.int64)
    padded[:n] = share
    return pack_fields(padded.reshape(rows, WORD_BITS_GROUP * k), widths * WORD_BITS_GROUP)


def unpack_bit_shares(words: torch.Tensor, n: int, widths: list[int]) -> torch.Tensor:
    """The (n, k) fields of :func:`pack_bit_shares`' words."""
    return unpack_fields(words, widths * WORD_BITS_GROUP).reshape(-1, len(widths))[:n]


class PackedBitShares:
    """Party 0's additive bit shares (n, k) as the dealer packed them (:func:`pack_bit_shares`), unpacked where
    they are used, block by block (:meth:`unpacked_blocks`): a consumer that works on each block as it is
    unpacked reads it from cache instead of from a full (n, k) tensor written first. The same values as
    :func:`unpack_bit_shares`."""

    def __init__(self, words: torch.Tensor, n: int, widths: list[int]):
        self.words, self.n, self.widths = words, n, list(widths)
        self.shape = (n, len(widths))

    def unpack(self) -> torch.Tensor:
        return unpack_bit_shares(self.words, self.n, self.widths)

    def unpacked_blocks(self, out: torch.Tensor):
        """Unpack into ``out`` ((⌈n/g⌉·g, k): room for the last group's padding) block by block, yielding each
        block's elements (a slice, at most n) and their (elements, k) rows of ``out``, filled."""
        k, g = len(self.widths), WORD_BITS_GROUP
        layout = _row_layout(tuple(self.widths * g), self.words.shape[1])
        rows_out, upper = out.view(-1, g * k), np.empty(0, dtype=np.uint64)
        for rows in row_blocks(self.words.shape[0], g * k):
            upper = _unpack_rows(self.words[rows], layout, rows_out[rows], upper)
            elements = slice(rows.start * g, min(self.n, rows.stop * g))
            yield elements, out[elements]


def check_masks(masks, pairs: int) -> list[int]:
    """``masks``: one 64-bit pattern per pair, as signed int64 integers."""
    from mpcdp.errors import ProtocolViolation

    if not (isinstance(masks, (list, tuple)) and len(masks) == pairs
            and all(isinstance(m, int) and not isinstance(m, bool) and -(1 << 63) <= m < (1 << 63) for m in masks)):
        raise ProtocolViolation(f"merged AND masks must be one signed 64-bit integer per pair ({pairs}). "
                                f"Found {str(masks)[:60]}", party=0)
    return [int(m) for m in masks]


def check_windows(windows, lane: int = 64) -> list[tuple[int, int]]:
    """``windows``: a list of (low bit, width) with 0 <= low, 1 <= width <= log2(lane) and low + width <= 64;
    ``lane``: 64 or 16."""
    from mpcdp.errors import ProtocolViolation

    if lane not in (16, 64):
        raise ProtocolViolation(f"a one-hot lane must be 16 or 64 bits. Found {str(lane)[:20]}", party=0)
    out = []
    for window in windows if isinstance(windows, (list, tuple)) and 0 < len(windows) <= 64 else [None]:
        if not (isinstance(window, (list, tuple)) and len(window) == 2
                and all(isinstance(v, int) and not isinstance(v, bool) for v in window)
                and 0 <= window[0] and 1 <= window[1] <= lane.bit_length() - 1 and window[0] + window[1] <= 64):
            raise ProtocolViolation(f"a one-hot window must be (low bit, width <= {lane.bit_length() - 1}) inside a "
                                    f"64-bit word. Found {str(window)[:40]}", party=0)
        out.append((int(window[0]), int(window[1])))
    return out
