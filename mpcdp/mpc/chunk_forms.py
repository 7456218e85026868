"""Low-rank GF(2) forms of the chunk bits :func:`mpcdp.mpc.bernoulli.bernoulli_bits` needs: q_k = parity(T1_k AND
TH_k) for each 4-bit chunk k of a uniform word, T1_k the one-hot of the chunk's top set bit (XOR-shared) and TH
a public table's entry picked by a one-hot o (XOR-shared) — with as few ANDs as the table allows.

Maths. With M_k[v, i] = bit 4k + i of TH[v], q_k = ⊕_{i,v} T1_k[i]·o[v]·M_k[v, i] is a bilinear form of two
one-hots. Any factorisation M_k = Σ_{j<r} β_j α_j^T over GF(2) gives q_k = ⊕_j (α_j·T1_k)(β_j·o): r ANDs, whose
operands are local (a parity of T1_k's bits; a selection by o from a public table of β_j's coordinates). Two
free changes lower r further: o has exactly one set bit, and T1_k too whenever chunk k is nonzero, so for any
a (per bit of the chunk) and b (per table entry), with M'_k = M_k ⊕ 1a^T ⊕ b1^T,

    q_k = T1_k^T M'_k o ⊕ a·T1_k ⊕ b·o     whenever chunk k is nonzero,

and the two corrections are local too. :func:`table_forms` picks, chunk by chunk, the a and b that minimise
the rank of M'_k (:func:`_best_change`: the least is the dimension of the columns' affine hull modulo 1) and
factors M'_k by a basis of its columns. A zero chunk's q_k is then wrong, but the circuit never reads it: it
picks q_k only for the highest nonzero chunk. On the sampler's tables (:mod:`mpcdp.noise.gaussian_factors`)
the five other groups need 92 ANDs per element (their plain ranks 123, the bits their entries can have set
162) and the first factor 46 (plain rank and set bits 62).

Layouts (bit positions in a 64-bit word; r = :attr:`ChunkForms.rank`, c = the chunk count):
  left   T1's bit p (chunk p // 4) ↦ the α_j·T1 at bits 0..r−1, a_k·T1_k at r + k;
  right  entry v ↦ the β_j[v] at bits 0..r−1, b_k[v] at r + k, [TH[v] = 2^bits] at r + c (the top);
  chunk_of  AND bit j ↦ 1 << its chunk (the parity of a chunk's products by a selection).
Public constants only: nothing here touches a share or the network.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np


@dataclasses.dataclass(frozen=True)
class ChunkForms:
    """How :func:`~mpcdp.mpc.bernoulli.bernoulli_bits` computes one factor's q_k for every chunk k < ``chunks``:
    ``rank`` ANDs per element, of ``left`` selected by T1 (64 entries, one per bit of T1) and the right operand
    (``right`` selected by the window's one-hot, or for :func:`bit_forms` a linear map of the caller's bits),
    the products' chunk parities ``chunk_of`` (``rank`` entries), XOR the two operands' corrections.
    ``chunk_mask``: the chunks whose q_k can be nonzero (the picks need those only)."""

    rank: int
    chunks: int
    left: tuple[int, ...]
    right: tuple[int, ...]
    chunk_of: tuple[int, ...]
    chunk_mask: int

    @property
    def first_chunk(self) -> int:
        """The lowest chunk where some threshold has a bit set (``chunks`` if none): every threshold's bits
        below it are 0, so W's chunks there need no one-hot (:func:`~mpcdp.mpc.bernoulli.coin_uniform`)."""
        return (self.chunk_mask & -self.chunk_mask).bit_length() - 1 if self.chunk_mask else self.chunks

    @property
    def top(self) -> int:
        """Bit of the right operand that holds [TH = 2^bits] (the factor then always passes)."""
        return self.rank + self.chunks


def _signed(word: int) -> int:
    word &= (1 << 64) - 1
    return word - (1 << 64) if word >= 1 << 63 else word


def _rank(vectors: list[int]) -> int:
    """Rank over GF(2) of bit vectors given as ints."""
    pivots: dict[int, int] = {}  # top bit -> the basis vector with that top bit
    for v in vectors:
        while v and v.bit_length() in pivots:
            v ^= pivots[v.bit_length()]
        if v:
            pivots[v.bit_length()] = v
    return len(pivots)


def _best_change(columns: list[int], ones: int) -> tuple[int, int]:
    """The free change (a as a bit mask over the columns, b as a vector over the entries) that minimises the
    rank of the columns c_i ⊕ a_i·1 ⊕ b; no change when it does not lower the rank.

    The least rank is d = rank{c_i ⊕ c_0 (i >= 1), 1} − 1: modulo 1 the changed columns are the c_i translated
    by b, whose span is at least their affine hull's dimension d, and b = c_0 (a point of the hull) reaches it;
    lifted back, some a cancels the multiples of 1 (tests/test_chunk_forms.py checks d against every a and b).
    So b = c_0 and the a with a_0 = 0 of least rank, the first of at most 8."""
    width, plain = len(columns), _rank(columns)
    least = _rank([c ^ columns[0] for c in columns[1:]] + [ones]) - 1
    if least >= plain:
        return 0, 0
    b = columns[0]
    for a in range(0, 1 << width, 2):
        if _rank([c ^ (ones if (a >> i) & 1 else 0) ^ b for i, c in enumerate(columns)]) == least:
            return a, b
    raise AssertionError("no change reaches the least rank")  # unreachable: see the docstring


def _factor(columns: list[int]) -> tuple[list[int], list[int]]:
    """(basis β_j: the first independent columns, coefficients: per column i the mask of the β_j whose XOR is
    c_i). Columns are at most four, so each combination is found by trying every subset of the basis."""
    basis: list[int] = []
    for c in columns:
        if _rank([*basis, c]) > len(basis):
            basis.append(c)
    coefficients = []
    for c in columns:
        subset = next(s for s in range(1 << len(basis))
                      if _xor(basis[j] for j in range(len(basis)) if (s >> j) & 1) == c)
        coefficients.append(subset)
    return basis, coefficients


def _xor(values) -> int:
    out = 0
    for v in values:
        out ^= v
    return out


def _transposed(words: list[int], count: int) -> list[int]:
    """The bit matrix transposed: bit j of word i becomes bit i of word j (j < ``count``, len(words) <= 64,
    words < 2^64; disjoint bits, so the sums are ORs)."""
    matrix = (np.array(words, dtype=np.uint64)[:, None] >> np.arange(count, dtype=np.uint64)) & np.uint64(1)
    return [int(x) for x in (matrix << np.arange(len(words), dtype=np.uint64)[:, None]).sum(0, dtype=np.uint64)]


@functools.lru_cache(maxsize=64)
def table_forms(table: tuple[int, ...], bits: int) -> ChunkForms:
    """The forms of the public thresholds ``table`` (entries <= 2^bits, at most 64 of them, bits <= 62) for
    chunks of 4 bits (the last one narrower where 4 ∤ bits): per chunk the free change of least rank
    (:func:`_best_change`), factored by a basis of its columns (:func:`_factor`).

    Raises:
        ValueError: if ``bits`` is over 62 or the rank, the corrections and the top do not fit in a word.
    """
    if not 1 <= bits <= 62 or len(table) > 64:
        raise ValueError(f"`bits` must be in [1, 62] and the table at most 64 entries. Found {bits}, {len(table)}.")
    chunks, ones = -(-bits // 4), (1 << len(table)) - 1
    parts = []  # per chunk: (basis, coefficients, a, b)
    all_columns = _transposed(list(table), bits)  # column p: bit p of every entry
    for k in range(chunks):
        columns = all_columns[4 * k:min(4 * k + 4, bits)]
        a, b = _best_change(columns, ones)
        changed = [c ^ (ones if (a >> i) & 1 else 0) ^ b for i, c in enumerate(columns)]
        parts.append((*_factor(changed), a, b, any(columns)))
    rank = sum(len(basis) for basis, *_ in parts)
    if rank + chunks + 1 > 64:
        raise ValueError(f"the table's forms need {rank + chunks + 1} bits, more than a word.")
    left, right_columns, mask = [0] * 64, [0] * 64, 0  # right_columns[bit]: that bit over the entries
    chunk_of: list[int] = []
    for k, (basis, coefficients, a, b, nonzero) in enumerate(parts):
        offset = len(chunk_of)
        for i, subset in enumerate(coefficients):
            left[4 * k + i] = (subset << offset) | (((a >> i) & 1) << (rank + k))
        right_columns[offset:offset + len(basis)] = basis
        right_columns[rank + k] = b
        chunk_of += [1 << k] * len(basis)
        mask |= int(nonzero) << k
    right_columns[rank + chunks] = _transposed(list(table), bits + 1)[bits]  # [TH = 2^bits]
    right = _transposed(right_columns, len(table))
    return ChunkForms(rank, chunks, tuple(_signed(x) for x in left), tuple(_signed(x) for x in right),
                      tuple(chunk_of), mask)


@functools.lru_cache(maxsize=16)
def bit_forms(low: int, width: int, bits: int) -> ChunkForms:
    """The forms of thresholds whose bits low..low+width−1 are shared bits x_0..x_(width−1) the caller holds
    (every other bit below 2^bits 0, TH < 2^bits); ``right`` is a linear map of those bits (entry i: the image
    of x_i). A chunk whose every possible top position p_0 < p_1 < ... holds such a bit has one AND fewer than
    its bits, by the free change of o alone: T1_k is one-hot there, so q_k = TH_p0 ⊕ ⊕_(j>0) T1[p_j]·(TH_p0 ⊕
    TH_pj), the correction TH_p0 local (3 ANDs for 4 bits); any other chunk one AND per bit. The sampler's low
    bits' factor (bits 9..40): 25 ANDs instead of 32."""
    chunks = -(-bits // 4)
    if not (1 <= bits <= 62 and 0 <= low and 0 < width and low + width <= bits):
        raise ValueError(f"bits {low}..{low + width - 1} of a {bits}-bit threshold do not fit the layout.")
    products: list[tuple[int, tuple[int, ...], int]] = []  # per AND: (T1 bit, the caller's bits XORed, chunk)
    corrections = []  # (chunk, the caller's bit that is its correction)
    for k in range(low // 4, (low + width - 1) // 4 + 1):
        positions = [p for p in range(4 * k, min(4 * k + 4, bits)) if low <= p < low + width]
        if len(positions) == min(4, bits - 4 * k):  # every position the chunk's top can take
            corrections.append((k, positions[0] - low))
            products += [(p, (positions[0] - low, p - low), k) for p in positions[1:]]
        else:
            products += [(p, (p - low,), k) for p in positions]
    rank = len(products)
    if rank + chunks + 1 > 64:
        raise ValueError(f"bits {low}..{low + width - 1} of a {bits}-bit threshold do not fit the layout.")
    left, right = [0] * 64, [0] * width
    for j, (p, sources, _) in enumerate(products):
        left[p] |= 1 << j
        for i in sources:
            right[i] ^= 1 << j
    for k, i in corrections:
        right[i] |= 1 << (rank + k)
    mask = sum(1 << k for k in range(low // 4, (low + width - 1) // 4 + 1))
    return ChunkForms(rank, chunks, tuple(_signed(x) for x in left), tuple(_signed(x) for x in right),
                      tuple(1 << k for _, _, k in products), mask)


def union_bits(table: tuple[int, ...], bits: int) -> int:
    """How many bits below 2^bits some entry of ``table`` has set: the ANDs per element without the forms."""
    union = 0
    for entry in table:
        union |= entry & ((1 << bits) - 1)
    return bin(union).count("1")
