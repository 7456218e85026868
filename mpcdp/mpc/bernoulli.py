"""Bernoulli factors [V < TH] on XOR-shared thresholds, exact: V = W ⊕ TH for a uniform word W, so V < TH
exactly when TH has the top set bit of W, with probability TH/2^bits.

The sampler's way, under every provider: :func:`bernoulli_bits` on W = R ⊕ S, R a dealt rotation pair's word
and S the committee's committed coin (:func:`coin_uniform`), W's top set bit found by one-hot decoding and
TH's bit there by ANDs, as few as the least-rank GF(2) forms of the thresholds' table allow
(:mod:`mpcdp.mpc.chunk_forms`). No single role knows W: the dealer (or, without one, each generator) knows R only,
each member S only. So whether a factor passes at a window value is hidden from every role alone, and the
released noise is independent of each role's view (``mpcdp audit views`` measures it).

:func:`table_factors` is kept as the planted leak of the view audit only (:func:`planted_dealer_tables`):
the dealer evaluates each factor for every value a window of the secret word can take, from its *own*
uniform words, and deals the tables; the parties open the window masked and look the result up. It is
cheap (one opening, no AND), but the dealer then knows every candidate's pass set, and the released
candidate is one that passed: that was circuit dg-mpc/5, and the reason it is no longer run.

Security model: semi-honest data parties; every opening is a value masked by randomness no data party knows
(kind ``masked``). Nothing here opens a result: the functions return XOR shares. Used by the discrete
Gaussian sampler (:mod:`mpcdp.noise.secure_gaussian`).

Declared costs per call on n words (:func:`declared_cost_table_factors`, :func:`declared_cost_bernoulli`,
:func:`declared_cost_coin_uniform`):
  coin_uniform    no opening; the dealt one-hots of the chunks each block reads (2^width bits each, packed);
                  1 dealer request per run of blocks that read the same chunks
  bernoulli_bits  openings of the flags from each block's first chunk (chunks − first bits, packed bit after bit,
                  :mod:`mpcdp.mpc.chunk_flags`) + ⌈n/16⌉ words (two rotations), 2·:func:`run_words` of the
                  forms' ranks (one AND), then 2·run_words of the chunks and of the super-chunks whose bit can
                  be nonzero (the picks); 4 dealer requests + 1 per run of blocks with the same first chunk;
                  the flags' one-hots as dealt + ⌈n/4⌉ dealt one-hot words
  table_factors   (planted leak only) 1 opening of the windows' span, packed (⌈n/⌊64/span⌋⌉ words);
                  ⌈2^width/64⌉ dealt table words per window and one per bit factor; 1 dealer request
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import numpy as np
import torch

if TYPE_CHECKING:
    from mpcdp import adapter
    from mpcdp.adapter.factor_tables import reply_words, table_words
    from mpcdp.adapter.lanes import parity, row_blocks
from mpcdp.mpc import binary, chunk_flags
from mpcdp.mpc.binary import lane_parity, low_mask, open_packed, rotated_one_hots
from mpcdp.mpc.chunk_forms import ChunkForms
from mpcdp.mpc.context import MpcContext
from mpcdp.mpc.plants import planting
from mpcdp.mpc.ring import ShiftedAnds, public_xor
from mpcdp.mpc.run_streams import pack_runs, run_words, unpack_runs


def _top_table() -> tuple[int, ...]:
    """The GF(2)-linear map, position by position, from a word of four 16-bit one-hot lanes (lane j the one-hot
    of a 4-bit value v_j) to 20 bits: bits 4j..4j+3 the one-hot of the top set bit of v_j (0 for v_j = 0), bit
    16 + j set iff v_j = 0. The definition of :func:`_tops`, which computes it with word operations."""
    images = []
    for position in range(64):
        j, v = divmod(position, 16)
        top = 0 if v == 0 else 1 << (v.bit_length() - 1)
        images.append((top << (4 * j)) | ((1 << (16 + j)) if v == 0 else 0))
    return tuple(images)


TOP_TABLE = _top_table()
_LANE_BITS = 0x0001000100010001  # bit 0 of each 16-bit lane


def _tops(ctx: MpcContext, words: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """For words (n, w) of four 16-bit one-hot lanes (4w 4-bit values v): XOR shares of (the top-bit one-hots,
    4 bits per value, value k at bits 4k..4k+3, as one word per row — 16 bits per input word; the zero flags
    [v_k = 0], value k at bit k). Local: :data:`TOP_TABLE` applied to every word, block by block. It is a
    parity of lane positions per output bit (top bit t: positions 2^t..2^(t+1)−1; zero: position 0), so each
    is read from a running XOR of neighbouring bits (spans 1, 2, 4, 8) and the bits are packed down. On NumPy
    views of the words (fewer, cheaper calls than torch's on these block sizes)."""
    from mpcdp.adapter.lanes import row_blocks

    words = words.contiguous()
    n, w = words.shape
    tops, zeros = torch.empty(n, dtype=torch.int64), torch.empty(n, dtype=torch.int64)
    source, top_out, zero_out = words.numpy(), tops.numpy(), zeros.numpy()
    for rows in row_blocks(n, w):
        x = source[rows]
        nibbles = _top_nibbles(x)  # value j of a word at bits 4j..4j+3
        flags = x & _LANE_BITS  # [lane j's position 0] at bit 16j, packed to bits 0..3 below
        flags |= flags >> 15
        flags &= 0x0000000300000003
        flags |= flags >> 30
        flags &= 0xF
        top, zero = top_out[rows], zero_out[rows]
        top[:] = nibbles[:, 0]
        zero[:] = flags[:, 0]
        for j in range(1, w):  # disjoint bit fields, word j's at 16j and 4j (w <= 4)
            nibbles[:, j] <<= 16 * j
            top |= nibbles[:, j]
            flags[:, j] <<= 4 * j
            zero |= flags[:, j]
    return tops, zeros


def _top_nibbles(x: np.ndarray) -> np.ndarray:
    """Per word of x, bits 4j..4j+3: the parities of lane j's positions 1, 2..3, 4..7 and 8..15 (local)."""
    pairs = x >> 1
    pairs ^= x  # bit p: x_p ⊕ x_(p+1)
    fours = pairs >> 2
    fours ^= pairs  # x_p ⊕ ... ⊕ x_(p+3)
    eights = fours >> 4
    eights ^= fours  # x_p ⊕ ... ⊕ x_(p+7)
    out = x >> 1
    out &= _LANE_BITS
    for part, shift, bit in ((pairs, 1, 1), (fours, 2, 2), (eights, 5, 3)):
        part >>= shift
        part &= _LANE_BITS << bit
        out |= part
    return _pack_nibbles(out)


def _pack_nibbles(x: np.ndarray) -> np.ndarray:
    """The low 4 bits of each 16-bit lane j of x moved to bits 4j..4j+3 (x's other bits clear)."""
    x |= x >> 12
    x &= 0x000000FF000000FF
    x |= x >> 24
    x &= 0xFFFF
    return x


def coin_uniform(ctx: MpcContext, coin: torch.Tensor, bits: int, first_chunks: list[int] | None = None
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """XOR shares of uniform ``bits``-bit words W = R ⊕ S (bits <= 64), and the one-hots of W's 4-bit chunks
    (four 16-bit lanes to a word, as :func:`rotated_one_hots` gives them), with no opening.

    R is a dealt rotation pair's word (:class:`mpcdp.adapter.OneHotPairs`): known to the dealer alone, or
    without one to any two generators together. S = ``coin`` are public words of a stream that every member
    computes and nobody else (:meth:`~mpcdp.mpc.context.MpcContext.common_stream`). So W is uniform, and
    hidden from every member alone and from the dealer alone; whoever holds both R and S (the dealer with a
    member, or two generators) learns it. One request for material per run of blocks with the same first
    chunk (:func:`coin_runs`); no communication.

    ``first_chunks``: the words are len(first_chunks) blocks of equal size, and block b's chunks below
    first_chunks[b] get no dealt one-hot: their lanes are 0, which :func:`bernoulli_bits` reads as a nonzero
    chunk with no top bit, whose q it never picks (no threshold of the block has a bit there,
    :attr:`~mpcdp.mpc.chunk_forms.ChunkForms.first_chunk`). Its bit is still the rule's: such a chunk is the
    highest nonzero one only when W's top set bit is below first_chunks[b] or W = 0, and then TH's bit there,
    and so [V < TH], is 0 (TH = 2^bits passes either way)."""
    s = coin.reshape(-1) & low_mask(bits)
    r, hots = torch.zeros_like(s), torch.zeros((s.numel(), -(-bits // 16)), dtype=torch.int64)
    for _ in _dealt_runs(ctx, s, bits, first_chunks, r, lambda rows: hots[rows]):
        pass
    return public_xor(ctx, r & low_mask(bits), s), hots


def coin_tops(ctx: MpcContext, coin: torch.Tensor, bits: int, first_chunks: list[int] | None = None
              ) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """:func:`coin_uniform`'s W and what :func:`bernoulli_bits` reads of its chunks' one-hots (:func:`_tops`),
    the same requests in the same order, the one-hots made and read a block of a run at a time (never all at once,
    four words per element: a lower peak of memory); a run with no chunk to decode keeps tops 0. The tops come as
    a list [T1, zero flags] that bernoulli_bits empties, so it can free each once read."""
    from mpcdp.adapter.lanes import BLOCK_WORDS
    s, words = coin.reshape(-1) & low_mask(bits), -(-bits // 16)
    r, t1, zero = torch.zeros_like(s), torch.zeros_like(s), torch.zeros_like(s)
    buffer = torch.empty((max(1, BLOCK_WORDS // words), words), dtype=torch.int64)  # a block's, reused
    for rows, hots in _dealt_runs(ctx, s, bits, first_chunks, r, lambda at: buffer[:at.stop - at.start].zero_()):
        t1[rows], zero[rows] = _tops(ctx, hots)
    return public_xor(ctx, r & low_mask(bits), s), [t1, zero]


def _dealt_runs(ctx: MpcContext, s: torch.Tensor, bits: int, first_chunks: list[int] | None, r: torch.Tensor,
                hots_of: Callable[[slice], torch.Tensor]) -> Iterator[tuple[slice, torch.Tensor]]:
    """Per run of :func:`coin_runs` with a chunk to decode, in order: one request for its rotation pair, R into
    ``r``'s rows, then a block of rows at a time (row_blocks) the chunks' one-hots of W = R ⊕ S into
    ``hots_of(rows)`` (zero rows, :func:`_put_chunk_lanes`), yielding (rows, those one-hots)."""
    from mpcdp import adapter
    from mpcdp.adapter.lanes import row_blocks

    chunks = -(-bits // 4)
    for first, rows in coin_runs(first_chunks or [0], s.numel()):
        windows = [(4 * k, min(4, bits - 4 * k)) for k in range(first, chunks)]
        if windows:
            dealt_r, dealt = adapter.dealer_one_hot_pairs(rows.stop - rows.start, windows, 16)
            if "member words" in _PLANTED:  # the view audit's planted leak: R = 0, so W = S, which every member knows
                dealt_r, dealt = torch.zeros_like(dealt_r), _zero_one_hots(ctx, dealt, windows)
            r[rows] = dealt_r
            moved = adapter.move_one_hots(dealt.contiguous(), s[rows], windows, 16)  # in place: dealt's words
            for block in row_blocks(rows.stop - rows.start, -(-chunks // 4)):
                at = slice(rows.start + block.start, rows.start + block.stop)
                _put_chunk_lanes(hots := hots_of(at), moved[block], first, chunks)
                yield at, hots
            del moved


def coin_runs(first_chunks: list[int], n: int) -> list[tuple[int, slice]]:
    """(first chunk, the words' slice) of each run of consecutive blocks of :func:`coin_uniform` (n words in
    len(first_chunks) blocks of equal size) with the same first chunk (:func:`~mpcdp.mpc.chunk_flags.block_runs`)."""
    return chunk_flags.block_runs(first_chunks, n)


def _put_chunk_lanes(out: torch.Tensor, moved: torch.Tensor, first: int, chunks: int) -> None:
    """Into ``out`` (zero rows of whole words, contiguous): the one-hots of chunks first.. (window i's in lane i
    of ``moved``, four to a word) in their chunks' lanes (chunk k: word k // 4, lane k % 4), the lanes below
    left 0 (local): lane i is bytes 2i, 2i + 1 of an element's little-endian words, so it is one copy of the
    bytes, 2·first places up, straight into the result (no intermediate array)."""
    if not first:
        out.copy_(moved)
        return
    target = out.numpy().view(np.uint8)
    target[:, 2 * first:2 * chunks] = np.ascontiguousarray(moved.numpy()).view(np.uint8)[:, :2 * (chunks - first)]


def bernoulli_bits(ctx: MpcContext, tops: list[torch.Tensor], forms: list[ChunkForms],
                   rights: torch.Tensor, bits: int, *, label: str) -> torch.Tensor:
    """XOR shares (bit 0) of [V < TH] for V = W ⊕ TH, W uniform ``bits``-bit words given by the one-hots of their
    4-bit chunks, read as their tops (the list [T1, zero flags] :func:`coin_tops` gives, emptied here; bits <= 62),
    and thresholds TH <= 2^bits (TH = 2^bits: always 1) given by their :class:`~mpcdp.mpc.chunk_forms.ChunkForms`:
    for TH < 2^bits, V is uniform whatever TH is, so each bit is 1 with probability TH/2^bits. The elements are
    len(forms) blocks of equal size, block b's thresholds described by forms[b] and its right operands (``rights``,
    XOR-shared words in forms[b]'s right layout: a selection from forms[b].right by a one-hot, or the caller's bits).

    V and TH first differ at the top set bit of W, and V < TH there iff TH has that bit. The top set bit is
    found by one-hot decoding, no prefix circuit:
      1. W's chunk one-hots give, locally, each chunk's top-bit one-hot (at W's positions, word T1) and
         whether the chunk is nonzero;
      2. the chunks' nonzero flags from the block's first chunk up (:mod:`mpcdp.mpc.chunk_flags`: no
         threshold of the block has a bit below it, so W's top bit there decides as W = 0 does), four to a
         super-chunk: their one-hots give the highest nonzero chunk of each super-chunk (F1) and whether it
         is nonzero;
      3. the super-chunks' flags: their one-hot gives the highest nonzero super-chunk (F2).
    Then TH's bit at T1 in chunk k, q_k = parity(T1_k AND TH_k), by the forms' low-rank factorisation: the
    left operand a local selection from T1, one AND of the two operands on their ``rank`` bits only, the
    products' chunk parities and the operands' corrections local (:mod:`mpcdp.mpc.chunk_forms`; q_k is exact
    whenever chunk k is nonzero, the only case read). Then r_s = ⊕_{k in s} F1_k AND q_k and the result
    ⊕_s F2_s AND r_s (two AND levels, on the chunks and super-chunks whose q can be nonzero only), XOR
    [TH = 2^bits]. W = 0 gives 0. The three ANDs open their operands packed one after another across 64
    elements of a block at a time (:func:`_and_on_runs`, :func:`run_words`).

    Security: every opening is a Beaver opening of operands XOR dealt masks no data party knows (kind
    ``masked``), or of the rotations' words XOR a dealt word; their number and sizes depend on the element
    count and the public forms only. So each data party's view is uniform words, independent of W, TH and the
    result; the dealer receives no opened value and only requests whose sizes are those public counts.
    Cost per element of block b with first chunk f: openings of (16 − f)/64 + 1/16 words (the two
    rotations, 62-bit W), 2·rank/64 words (the AND), 2·|chunks|/64 and 2·|super-chunks|/64 words (the picks,
    those whose q can be nonzero); dealt: the flags' one-hots (2^width bits per 4-bit window from f, packed)
    + 1/4 one-hot words and the ANDs' words (:func:`declared_cost_bernoulli`).
    """
    if not 1 <= bits <= 62:
        raise ValueError(f"`bits` must be in [1, 62]. Found {bits}.")
    chunks = -(-bits // 4)
    supers = -(-chunks // 4)
    firsts = chunk_flags.flag_firsts(forms, chunks)
    per_block = chunk_flags.per_block
    t1, zero = tops.pop(0), tops.pop(0)
    flags = public_xor(ctx, zero & low_mask(chunks), low_mask(chunks))  # bit k: chunk k is nonzero
    flags = per_block(flags, firsts, shift=True)  # bit j: chunk first + j
    del zero  # here and below: each intermediate freed once read (a lower peak of memory)
    f1, super_zero = _tops(ctx, chunk_flags.flag_one_hots(ctx, flags, firsts, chunks, label=f"{label}-flags"))
    del flags
    f1 = per_block(f1, [low_mask(chunks - f) for f in firsts])  # bit j: chunk first + j tops its super-chunk
    super_flags = public_xor(ctx, super_zero, low_mask(supers)) & per_block(
        torch.full_like(super_zero, -1), [low_mask(-(-(chunks - f) // 4)) for f in firsts])
    f2 = _super_tops(ctx, super_flags, supers, label=f"{label}-supers")  # bit s: super-chunk s is the highest nonzero
    del super_zero, super_flags
    q, top = _chunk_bits(ctx, t1, forms, rights.reshape(-1), chunks, label=f"{label}-and")
    del t1
    masks = [form.chunk_mask >> f for form, f in zip(forms, firsts)]  # from each block's first chunk
    q = per_block(q, firsts, shift=True)
    r = binary.gather_bits(lane_parity(_and_on_runs(ctx, f1, q, [_mask_runs(m) for m in masks], label=f"{label}-pick"),
                                       4), 4, supers)  # bit s: TH's at s's pick
    del f1, q
    f2_r = _and_on_runs(ctx, f2, r, [_mask_runs(_super_mask(m)) for m in masks], label=f"{label}-last")
    return (lane_parity(f2_r, 4) & 1) ^ top


def _chunk_bits(ctx: MpcContext, t1: torch.Tensor, forms: list[ChunkForms], rights: torch.Tensor, chunks: int, *,
                label: str) -> tuple[torch.Tensor, torch.Tensor]:
    """XOR shares of (q: bit k the q_k of chunk k, exact where chunk k is nonzero; the top bit [TH = 2^bits])
    per element, from the top-bit one-hots T1 and the right operands: each block's left operand selected
    from T1 by its form, one AND on the forms' ranks (:func:`_and_on_runs`), then per block the products'
    chunk parities (a selection) XOR both operands' corrections."""
    per = t1.numel() // len(forms)
    blocks = [slice(b * per, (b + 1) * per) for b in range(len(forms))]
    left = torch.empty_like(t1)
    for rows, form in zip(blocks, forms):  # straight into one array (no list of blocks, then a copy)
        left[rows] = binary.select(ctx, t1[rows], form.left, 64)
    products = _and_on_runs(ctx, left, rights, [[(0, form.rank)] for form in forms], label=label)
    q, top = torch.empty_like(left), torch.empty_like(left)
    for rows, form in zip(blocks, forms):
        part = torch.bitwise_xor(left[rows], rights[rows], out=q[rows])  # the corrections, in place in q
        part >>= form.rank
        part &= low_mask(chunks)
        part ^= binary.select(ctx, products[rows], form.chunk_of, chunks)
        top[rows] = (rights[rows] >> form.top) & 1
    return q, top


def _mask_runs(mask: int) -> list[tuple[int, int]]:
    """The runs (low, width) of consecutive set bits of ``mask``, from bit 0 up."""
    runs, p = [], 0
    while mask >> p:
        if (mask >> p) & 1:
            q = p
            while (mask >> q) & 1:
                q += 1
            runs.append((p, q - p))
            p = q
        else:
            p += 1
    return runs


def _super_mask(chunk_mask: int) -> int:
    """Bit s set iff some chunk 4s..4s+3 is set in ``chunk_mask``."""
    return sum(1 << s for s in range(16) if (chunk_mask >> (4 * s)) & 0xF)


def _and_on_runs(ctx: MpcContext, x: torch.Tensor, y: torch.Tensor, runs: list[list[tuple[int, int]]], *,
                 label: str) -> torch.Tensor:
    """XOR shares of x AND y for XOR-shared words whose product is 0 outside the bit runs (low, width) of each
    block (x, y: len(runs) blocks of equal size): one AND of the runs' bits packed one after another, across
    :data:`~mpcdp.mpc.run_streams.RUN_GROUP` elements of a block at a time, :func:`run_words` words per operand.

    Local work, XOR-linear (:func:`~mpcdp.mpc.run_streams.pack_runs`): each element's runs moved together
    into one word per block, those words packed one after another; the product is unpacked and spread back
    the same way (:func:`~mpcdp.mpc.run_streams.unpack_runs`)."""
    per = x.numel() // len(runs)
    ands = ShiftedAnds(ctx, run_words(runs, per), 2, [(0, 1, 0)], label=label)
    ands.open({0: pack_runs(x, runs), 1: pack_runs(y, runs)})
    product = ands.product(0, 1, 0)
    del ands
    return unpack_runs(product, runs, per)


def _super_tops(ctx: MpcContext, flags: torch.Tensor, supers: int, *, label: str) -> torch.Tensor:
    """XOR shares of the top-bit one-hot of each ``supers``-bit value (<= 4 bits), by one rotation of the
    values four to a word (element 4i + j at bits 4j of word i, its one-hot in lane j): one dealt one-hot word
    per four elements, one opening of 16 bits per four elements."""
    n = flags.numel()
    padded = torch.zeros((-(-n // 4), 4), dtype=torch.int64)
    torch.bitwise_and(flags.reshape(-1), low_mask(supers), out=padded.view(-1)[:n])
    packed = padded[:, 0].clone()
    for j in range(1, 4):  # disjoint bit fields, constant shifts
        packed |= padded[:, j] << 4 * j
    tops, _ = _tops(ctx, rotated_one_hots(ctx, packed, [(4 * j, supers) for j in range(4)], label=label, lane=16))
    out = torch.empty((tops.numel(), 4), dtype=torch.int64)
    for j in range(4):
        torch.bitwise_right_shift(tops, 4 * j, out=out[:, j])
    out &= low_mask(supers)
    return out.view(-1)[:n]


_PLANTED: set[str] = set()  # the view audit's planted leaks in force in this process (never in a run)


def planted_dealer_tables():
    """Within the block, in this process, the sampler reads its Bernoulli factors from the dealer's tables
    (:func:`table_factors`, circuit dg-mpc/5) where the provider has a dealer. **A planted leak**: the
    dealer then draws every factor's uniform word itself, so it holds information correlated with the
    released noise (it knows, for every candidate, which window values pass). Only the view audit
    (``mpcdp audit views --plant-leak dealer``, :mod:`mpcdp.jobs.views`) uses it, to show that the audit
    detects such a dealer; a run never does."""
    return planting(_PLANTED, "dealer tables")


def planted_member_words():
    """Within the block, in this process, :func:`coin_uniform` drops the dealt word R, so every factor's
    uniform word is the committee's coin S itself. **A planted leak**: every member then knows every
    factor's word. Only the view audit (``mpcdp audit views --plant-leak party J``) uses it, on every member
    at once (the words must agree), to show that it detects such a member; a run never does."""
    return planting(_PLANTED, "member words")


def _zero_one_hots(ctx: MpcContext, hots: torch.Tensor, windows: list[tuple[int, int]]) -> torch.Tensor:
    """XOR shares of the one-hots of R = 0 in ``hots``' layout (bit 0 of each window's 16-bit lane, four
    lanes to a word): the first member holds them, the others 0."""
    out = torch.zeros_like(hots)
    if ctx.rank == ctx.members[0]:
        for k in range(len(windows)):
            out[:, k // 4] |= 1 << (16 * (k % 4))
    return out


def tables_dealt() -> bool:
    """Whether this pass reads its factors from dealt tables (:func:`table_factors`): only inside
    :func:`planted_dealer_tables`, under a provider with a dealer. Otherwise every factor is the circuit
    :func:`bernoulli_bits` on W = R ⊕ S, whose W no single role knows."""
    from mpcdp import adapter

    return "dealer tables" in _PLANTED and adapter.deals_factor_tables()


def table_factors(ctx: MpcContext, words: torch.Tensor, word_bits: int, windows: list[tuple[int, int]],
                  factors: list, bit_factors: list, *, label: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """XOR shares (n, windows + bit factors), bit 0, of Bernoulli factors [V < TH] on XOR-shared words T, looked
    up in tables the dealer made (:class:`mpcdp.adapter.FactorTables`; its module states the rule): per window
    (low, width) the AND of its ``factors`` [window, sub_low, sub_width, thresholds] at T's window value, then
    per bit factor (low, bits, shift) the factor whose threshold is ((T >> low) mod 2^bits)·2^shift.

    The parties open c = T ⊕ R on the span of the windows and bit factors (packed, ⌊64/span⌋ to a word); a
    window's result is bit c of its table, a bit factor's is parity(Q AND c's bits) ⊕ β: both local. Cost: that
    one opening; the tables' words dealt (:func:`declared_cost_table_factors`); 1 dealer request; no AND.
    Also returns this party's shares of the mask R and of the tables (for tests of the decisions).
    """
    from mpcdp import adapter
    from mpcdp.adapter.factor_tables import table_words
    from mpcdp.adapter.lanes import parity

    flat = words.reshape(-1)
    n = flat.numel()
    r, tables = adapter.dealer_factor_tables(n, word_bits, windows, factors, bit_factors)
    spots = [*windows, *((low, bits) for low, bits, _ in bit_factors)]
    low = min(lo for lo, _ in spots)
    span = max(lo + width for lo, width in spots) - low
    c = open_packed(ctx, (flat ^ r) >> low, span, label=f"{label}-window") << low
    out, column = torch.empty((n, len(spots)), dtype=torch.int64), 0
    for i, ((lo, width), words_of_table) in enumerate(zip(windows, table_words(windows))):
        value = (c >> lo) & low_mask(width)
        word = tables[:, column:column + words_of_table].gather(1, (value >> 6).unsqueeze(1)).squeeze(1)
        out[:, i] = (word >> (value & 63)) & 1
        column += words_of_table
    for j, (lo, bits, _) in enumerate(bit_factors):
        entry = tables[:, column + j]
        out[:, len(windows) + j] = parity(entry & low_mask(bits) & (c >> lo)) ^ ((entry >> 63) & 1)
    return out, r, tables


def declared_cost_table_factors(n: int, windows: list[tuple[int, int]], bit_factors: list) -> tuple[int, int]:
    """(words opened, table words dealt) of :func:`table_factors` on n words."""
    from mpcdp.adapter.factor_tables import reply_words

    spots = [*windows, *((low, bits) for low, bits, _ in bit_factors)]
    span = max(lo + width for lo, width in spots) - min(lo for lo, _ in spots)
    return -(-n // (64 // span)), reply_words(windows, bit_factors) * n


def declared_cost_coin_uniform(n: int, bits: int, first_chunks: list[int] | None = None) -> tuple[int, int]:
    """(dealt one-hot words, requests for material) of :func:`coin_uniform` on n words of ``bits`` bits (no
    opening): per run of :func:`coin_runs`, the one-hots of its chunks from its first
    (:func:`~mpcdp.adapter.bit_words.one_hot_reply_words`: a 2-bit top chunk's 4 positions, no empty lane)."""
    from mpcdp.adapter.bit_words import one_hot_reply_words

    chunks, words, requests = -(-bits // 4), 0, 0
    for first, rows in coin_runs(first_chunks or [0], n):
        windows = [(4 * k, min(4, bits - 4 * k)) for k in range(first, chunks)]
        if windows:
            words += one_hot_reply_words(rows.stop - rows.start, windows, 16)
            requests += 1
    return words, requests


def declared_cost_bernoulli(e: int, forms: list[ChunkForms]) -> tuple[list[tuple[int, bool]], dict[str, int]]:
    """((elements, is a multiplication) of each communication step, operations) of :func:`bernoulli_bits`
    on e elements in len(forms) blocks: the chunk flags (:func:`~mpcdp.mpc.chunk_flags.declared_cost_flags`)
    and super-flags ⌈e/16⌉ (rotations), the forms' AND 2·:func:`run_words` of their ranks, the picks
    2·:func:`run_words` of the chunks and of the super-chunks (from each block's first chunk) whose q can be
    nonzero; AND words those three run_words, one-hot words the flags' + ⌈e/4⌉ (the super-flags' one-hots
    four elements to a word)."""
    quarter, sixteenth, per = -(-e // 4), -(-e // 16), e // len(forms)
    firsts = chunk_flags.flag_firsts(forms, forms[0].chunks)
    masks = [form.chunk_mask >> f for form, f in zip(forms, firsts)]
    anded = run_words([[(0, form.rank)] for form in forms], per)
    picked = run_words([_mask_runs(m) for m in masks], per)
    last = run_words([_mask_runs(_super_mask(m)) for m in masks], per)
    flags, flag_hots, _ = chunk_flags.declared_cost_flags(e, forms)
    steps = [(flags, False), (sixteenth, False), (2 * anded, True), (2 * picked, True), (2 * last, True)]
    return steps, {"and_words": anded + picked + last, "one_hot_words": flag_hots + quarter}
