"""B2A of a narrow XOR-shared word by a ripple carry on a bounded mask: exact additive shares in Z_2^64 of x < 2^k
for the price of k one-bit ANDs and one k-bit word, instead of k converted bits (one ring element each, less
for bits whose value is read mod 2^w: :func:`mpcdp.mpc.ring.b2a_bits`).

Steps, for n XOR-shared k-bit words x (k <= 62) and e further XOR-shared bits b_j to convert the usual way:
  1. Material: a bounded mask r < 2^k, XOR- and additively shared (:class:`mpcdp.adapter.BoundedMasks`); the
     ANDs' Beaver word masks; and a (1+e)-bit word R, XOR-shared, with additive shares of its bits, to convert
     the carry out and the b_j (:class:`mpcdp.adapter.WordBits`).
  2. y = x + r by a ripple carry on bit columns (64 words' bits to a word): c_0 = 0 and
     c_{i+1} = maj(x_i, r_i, c_i) = x_i ⊕ ((x_i ⊕ r_i) AND (x_i ⊕ c_i)), one AND per bit, k rounds (every AND
     of a bit column of all n words in one opening, their material in one request); y_i = x_i ⊕ r_i ⊕ c_i.
  3. One opening, packed ⌊64/(k+1+e)⌋ to a word: y mod 2^k, then (c_k, b) ⊕ R. The carry out c_k and the b_j
     become additive as in :func:`~mpcdp.mpc.ring.b2a_bits` (``widths``: c_k's share is needed mod 2^(64−k)).
  4. x = y − r + 2^k·c_k, exact in Z_2^64 (x + r = y + 2^k·c_k over the integers). Local.

Security (semi-honest, the provider's model): every opening is masked by material no data party knows — the
ANDs' operands by Beaver word masks (or, under honest-majority among parties 0–2, re-randomised resharings),
y by r (uniform on [0, 2^k), so y = x + r mod 2^k is uniform whatever x is), (c_k, b) by R. The dealer
receives only requests whose sizes are n, k and e. Declared cost (:func:`declared_cost`): k multiplication
steps of 2⌈n/64⌉ words, then one opening of ⌈n/⌊64/(k+1+e)⌋⌉ words; requests: BoundedMasks (opens nothing),
the ANDs' material (before the first) and WordBits (before the last opening); ops: bounded_masks n, and_words
k⌈n/64⌉, b2a_bits (1+e)n.
"""

from __future__ import annotations

import numpy as np
import torch

from mpcdp.mpc import binary, ring
from mpcdp.mpc.context import MpcContext


def b2a_by_ripple(ctx: MpcContext, words: torch.Tensor, k: int, extra: torch.Tensor, e: int, widths: list[int], *,
                  label: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(additive shares (n,) of x = the k low bits of XOR-shared ``words``, exact in Z_2^64; additive shares
    (n, e) of the e low bits of XOR-shared ``extra``, bit j right mod 2^widths[1 + j]). ``widths``: 1 + e
    widths, the first for the carry out (at most 64 − k)."""
    from mpcdp import adapter

    if not 1 <= k <= 62 or len(widths) != 1 + e or widths[0] > 64 - k:
        raise ValueError(f"`k` must be in [1, 62] with 1 + e widths, the first <= 64 − k. Found k={k}, "
                         f"e={e}, widths={widths}.")
    n = words.numel()
    r_word, r_value = adapter.dealer_bounded_masks(n, k)
    sums, carry = _ripple(ctx, words.reshape(-1), r_word, k, label=f"{label}-carry")
    m_word, m_bits = adapter.dealer_word_bits(n, 1 + e, widths)
    masked = (carry | ((extra.reshape(-1) & binary.low_mask(e)) << 1)) ^ m_word
    opened = binary.open_packed(ctx, (sums & binary.low_mask(k)) | ((masked & binary.low_mask(1 + e)) << k),
                                k + 1 + e, label=label)
    bits = ring._bits_from_opened(ctx, opened >> k, m_bits)
    x = ring.public_add(ctx, (bits[:, 0] << k) - r_value, opened & binary.low_mask(k))
    return x, bits[:, 1:]


def _ripple(ctx: MpcContext, x: torch.Tensor, r: torch.Tensor, k: int, *, label: str
            ) -> tuple[torch.Tensor, torch.Tensor]:
    """XOR shares of ((x + r) mod 2^k, the carry out of bit k − 1) for XOR-shared k-bit words x and r: the bits
    as columns, 64 words to a column word (:func:`_columns`), one AND per bit and round."""
    n = x.numel()
    xs, rs = _columns(x, k), _columns(r, k)
    ands = ring.ShiftedAnds(ctx, xs.shape[1], 2 * k, [(2 * i, 2 * i + 1, 0) for i in range(k)], label=label)
    carry = torch.zeros(xs.shape[1], dtype=torch.int64)
    sums = torch.empty_like(xs)
    for i in range(k):
        xi, ri = xs[i], rs[i]
        sums[i] = xi ^ ri ^ carry
        ands.open({2 * i: xi ^ ri, 2 * i + 1: xi ^ carry})
        carry = xi ^ ands.product(2 * i, 2 * i + 1, 0)
    return _words(sums, n), _words(carry.unsqueeze(0), n)


def _columns(x: torch.Tensor, k: int) -> torch.Tensor:
    """(k, ⌈n/64⌉) words: row i holds bit i of the n words x, word j's bit at position j mod 64 of column word
    j // 64 (XOR-linear: a bit transposition; on NumPy views)."""
    n = x.numel()
    bits = ((x.reshape(1, -1) >> torch.arange(k, dtype=torch.int64).reshape(-1, 1)) & 1).to(torch.uint8).numpy()
    padded = np.zeros((k, -(-n // 64) * 64), dtype=np.uint8)
    padded[:, :n] = bits
    return torch.from_numpy(np.packbits(padded, axis=1, bitorder="little").view(np.int64).copy())


def _words(columns: torch.Tensor, n: int) -> torch.Tensor:
    """The inverse of :func:`_columns` for its first n words: Σ_i 2^i·(bit of row i)."""
    rows = np.ascontiguousarray(columns.numpy()).view(np.uint8)
    bits = torch.from_numpy(np.unpackbits(rows, axis=1, count=n, bitorder="little").astype(np.int64))
    return (bits << torch.arange(columns.shape[0], dtype=torch.int64).reshape(-1, 1)).sum(0)


def declared_cost(n: int, k: int, e: int) -> tuple[list[tuple[int, bool, bool]], dict[str, int], int]:
    """(elements, is a multiplication, needs a request for material) of each communication step of
    :func:`b2a_by_ripple` on n words, its operations, and its requests that open nothing (the bounded masks)."""
    columns = -(-n // 64)
    steps = [(2 * columns, True, i == 0) for i in range(k)]
    steps.append((-(-n // (64 // (k + 1 + e))), False, True))
    return steps, {"bounded_masks": n, "and_words": k * columns, "b2a_bits": (1 + e) * n}, 1
