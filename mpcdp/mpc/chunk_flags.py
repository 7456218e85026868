"""The chunk flags of :func:`mpcdp.mpc.bernoulli.bernoulli_bits` from each factor's first chunk: bit j of a
block's flags is [chunk first + j of W is nonzero], for the chunks at or above the block's
:attr:`~mpcdp.mpc.chunk_forms.ChunkForms.first_chunk` only (every threshold of the block is 0 below it), their
one-hots by one rotation whose opening packs each block's flags at its own width, bit after bit.

Exactly the rule's decision: when W's top set bit is below the first chunk (or W = 0) every flag is 0, the
super-chunks' one-hot is 0 and the factor reads [TH = 2^bits], which is the rule's [V < TH] there since TH has
no bit below its first chunk (and TH = 2^bits passes either way).

Security model: as :func:`mpcdp.mpc.binary.rotated_one_hots`: the opened words are the flags XOR a dealt R no
data party knows (kind ``masked``); the widths, runs and sizes depend on the element count and the public
forms only.

Declared cost per call on e elements in blocks of ``per`` (:func:`declared_cost_flags`): one opening of
:func:`~mpcdp.mpc.run_streams.run_words` of the blocks' widths (Σ (chunks − first) words per 64 elements of a
block); the runs' one-hots as dealt (4-bit windows, 16-bit lanes); one request for material per run of blocks
with the same first chunk.
"""

from __future__ import annotations

import torch

from mpcdp.mpc.chunk_forms import ChunkForms
from mpcdp.mpc.context import MpcContext
from mpcdp.mpc.run_streams import pack_runs, run_words, unpack_runs


def block_runs(firsts: list[int], n: int) -> list[tuple[int, slice]]:
    """(first chunk, the elements' slice) of each run of consecutive blocks (n elements in len(firsts) blocks
    of equal size) with the same first chunk."""
    per = n // len(firsts)
    runs: list[tuple[int, slice]] = []
    for b, first in enumerate(firsts):
        if runs and runs[-1][0] == first:
            runs[-1] = (first, slice(runs[-1][1].start, (b + 1) * per))
        else:
            runs.append((first, slice(b * per, (b + 1) * per)))
    return runs


def flag_firsts(forms: list[ChunkForms], chunks: int) -> list[int]:
    """Per block of :func:`~mpcdp.mpc.bernoulli.bernoulli_bits`, the lowest chunk its flags cover: the form's
    first chunk (every threshold's bits below it are 0), at most the top chunk."""
    return [min(form.first_chunk, chunks - 1) for form in forms]


def per_block(words: torch.Tensor, values: list[int], *, shift: bool = False) -> torch.Tensor:
    """``words`` (len(values) blocks of equal size) with block b shifted right by values[b] (``shift``) or ANDed
    with values[b] (local, XOR-linear)."""
    per, out = words.numel() // len(values), torch.empty_like(words)
    for b, value in enumerate(values):
        rows = slice(b * per, (b + 1) * per)
        out[rows] = words[rows] >> value if shift else words[rows] & value
    return out


def flag_windows(chunks: int, first: int) -> list[tuple[int, int]]:
    """The 4-bit windows of the chunk flags from chunk ``first`` up (bit j: chunk first + j)."""
    return [(4 * s, min(4, chunks - first - 4 * s)) for s in range(-(-(chunks - first) // 4))]


def flag_one_hots(ctx: MpcContext, flags: torch.Tensor, firsts: list[int], chunks: int, *, label: str) -> torch.Tensor:
    """XOR shares of the one-hots (four 16-bit lanes, one word per element) of the chunk flags of each block
    from its first chunk up (``flags`` already shifted down by it): a dealt rotation pair per run of blocks
    with the same first chunk (:func:`block_runs`), the masked flags opened in one round, chunks − first bits
    each, packed bit after bit (:func:`~mpcdp.mpc.run_streams.pack_runs`, :func:`declared_cost_flags`). The
    chunks below the first are not read: W's top set bit there (or W = 0) leaves every flag 0, so the top
    super-chunk's one-hot is 0 and the factor reads [TH = 2^bits], the rule's decision since TH has no bit
    there."""
    from mpcdp import adapter

    runs, masked = [], torch.empty_like(flags)
    for first, rows in block_runs(firsts, flags.numel()):
        r, hots = adapter.dealer_one_hot_pairs(rows.stop - rows.start, flag_windows(chunks, first), 16)
        masked[rows] = flags[rows] ^ r
        runs.append((first, rows, hots))
    bits = _bit_runs(firsts, chunks)
    (opened,) = ctx.open_masked([pack_runs(masked, bits)], label=label, xor=True)
    c = unpack_runs(opened, bits, flags.numel() // len(firsts))
    out = torch.zeros((flags.numel(), 1), dtype=torch.int64)
    for first, rows, hots in runs:
        out[rows] = adapter.move_one_hots(hots.contiguous(), c[rows], flag_windows(chunks, first), 16)
    return out


def _bit_runs(firsts: list[int], chunks: int) -> list[list[tuple[int, int]]]:
    """Per block, the flags' one run of bits (0, chunks − first): what the rotation opens."""
    return [[(0, chunks - first)] for first in firsts]


def declared_cost_flags(e: int, forms: list[ChunkForms]) -> tuple[int, int, int]:
    """(words opened, one-hot words dealt, requests for material) of the chunk flags' rotation in
    :func:`~mpcdp.mpc.bernoulli.bernoulli_bits` on e elements: per run of blocks with the same first chunk f
    (:func:`block_runs`), its rows' chunks − f bits packed bit after bit (:func:`~mpcdp.mpc.run_streams.run_words`),
    and the one-hots of :func:`flag_windows` as dealt
    (:func:`~mpcdp.adapter.bit_words.one_hot_reply_words`)."""
    from mpcdp.adapter.bit_words import one_hot_reply_words

    chunks, firsts = forms[0].chunks, flag_firsts(forms, forms[0].chunks)
    dealt = requests = 0
    for first, rows in block_runs(firsts, e):
        dealt += one_hot_reply_words(rows.stop - rows.start, flag_windows(chunks, first), 16)
        requests += 1
    return run_words(_bit_runs(firsts, chunks), e // len(forms)), dealt, requests
