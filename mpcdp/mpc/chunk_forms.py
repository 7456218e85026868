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
the rank of M'_k (every a, every b in the span of M_k's columns and 1: a b outside it never lowers the rank)
and factors M'_k by a basis of its columns. A zero chunk's q_k is then wrong, but the circuit never reads it:
it picks q_k only for the highest nonzero chunk. On the sampler's tables (:mod:`mpcdp.noise.gaussian_factors`)
this takes the six other groups from 259 ANDs (one per bit their entries can have set) to 152, and the first
factor from 58 to 44.

Layouts (bit positions in a 64-bit word; r = :attr:`ChunkForms.rank`, c = the chunk count):
  left   T1's bit p (chunk p // 4) ↦ the α_j·T1 at bits 0..r−1, a_k·T1_k at r + k;
  right  entry v ↦ the β_j[v] at bits 0..r−1, b_k[v] at r + k, [TH[v] = 2^bits] at r + c (the top);
  chunk_of  AND bit j ↦ 1 << its chunk (the parity of a chunk's products by a selection).
Public constants only: nothing here touches a share or the network.
"""

from __future__ import annotations

import dataclasses
import functools


@dataclasses.dataclass(frozen=True)
class ChunkForms:
    """How :func:`~mpcdp.mpc.bernoulli.bernoulli_bits` computes one factor's q_k for every chunk k < ``chunks``:
    ``rank`` ANDs per element, of ``left`` selected by T1 (64 entries, one per bit of T1) and the right operand
    (``right`` selected by the window's one-hot, or, where ``right`` is None, words the caller makes in its
    layout), the products' chunk parities ``chunk_of`` (``rank`` entries), XOR the two operands' corrections.
    ``chunk_mask``: the chunks whose q_k can be nonzero (the picks need those only)."""

    rank: int
    chunks: int
    left: tuple[int, ...]
    right: tuple[int, ...] | None
    chunk_of: tuple[int, ...]
    chunk_mask: int

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


def _span(vectors: list[int]) -> list[int]:
    """Every XOR of a subset of ``vectors`` (each once), in a fixed order: 0 first."""
    span = [0]
    for v in vectors:
        if v not in span:
            span += [s ^ v for s in span]
    return span


def _best_change(columns: list[int], ones: int) -> tuple[int, int]:
    """The free change (a as a bit mask over the columns, b as a vector over the entries) that minimises the
    rank of the columns c_i ⊕ a_i·1 ⊕ b; no change when it does not lower the rank (ties: the first found)."""
    best, choice = _rank(columns), (0, 0)
    for a in range(1 << len(columns)):
        for b in _span([*columns, ones]):
            changed = [c ^ (ones if (a >> i) & 1 else 0) ^ b for i, c in enumerate(columns)]
            rank = _rank(changed)
            if rank < best:
                best, choice = rank, (a, b)
    return choice


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


def _chunk_columns(table: tuple[int, ...], low: int, width: int) -> list[int]:
    """Columns of M: column i the vector over entries v of bit low + i of table[v]."""
    return [sum(((entry >> (low + i)) & 1) << v for v, entry in enumerate(table)) for i in range(width)]


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
    for k in range(chunks):
        columns = _chunk_columns(table, 4 * k, min(4, bits - 4 * k))
        a, b = _best_change(columns, ones)
        changed = [c ^ (ones if (a >> i) & 1 else 0) ^ b for i, c in enumerate(columns)]
        parts.append((*_factor(changed), a, b, any(columns)))
    rank = sum(len(basis) for basis, *_ in parts)
    if rank + chunks + 1 > 64:
        raise ValueError(f"the table's forms need {rank + chunks + 1} bits, more than a word.")
    left, right, chunk_of, mask, offset = [0] * 64, [0] * len(table), [], 0, 0
    for k, (basis, coefficients, a, b, nonzero) in enumerate(parts):
        for i, subset in enumerate(coefficients):
            left[4 * k + i] = (subset << offset) | (((a >> i) & 1) << (rank + k))
        for v in range(len(table)):
            beta = sum(((vector >> v) & 1) << j for j, vector in enumerate(basis))
            right[v] |= (beta << offset) | (((b >> v) & 1) << (rank + k))
        chunk_of += [1 << k] * len(basis)
        mask |= int(nonzero) << k
        offset += len(basis)
    for v, entry in enumerate(table):
        right[v] |= ((entry >> bits) & 1) << (rank + chunks)
    return ChunkForms(rank, chunks, tuple(_signed(x) for x in left), tuple(_signed(x) for x in right),
                      tuple(chunk_of), mask)


@functools.lru_cache(maxsize=16)
def bit_forms(low: int, width: int, bits: int) -> ChunkForms:
    """The forms of thresholds whose bits low..low+width−1 are shared bits the caller holds (every other bit
    below 2^bits 0, TH < 2^bits): one AND per bit, no correction. The caller's right operand is those bits
    moved down to bits 0..width−1 (and 0 at bit width + chunks: TH never reaches 2^bits)."""
    chunks = -(-bits // 4)
    if not (1 <= bits <= 62 and 0 <= low and 0 < width and low + width <= bits and width + chunks + 1 <= 64):
        raise ValueError(f"bits {low}..{low + width - 1} of a {bits}-bit threshold do not fit the layout.")
    left = [(1 << (p - low)) if low <= p < low + width else 0 for p in range(64)]
    mask = sum(1 << k for k in range(low // 4, (low + width - 1) // 4 + 1))
    return ChunkForms(width, chunks, tuple(_signed(x) for x in left), None,
                      tuple(1 << ((low + j) // 4) for j in range(width)), mask)


def union_bits(table: tuple[int, ...], bits: int) -> int:
    """How many bits below 2^bits some entry of ``table`` has set: the ANDs per element without the forms."""
    union = 0
    for entry in table:
        union |= entry & ((1 << bits) - 1)
    return bin(union).count("1")
