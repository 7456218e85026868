"""B2A of a narrow XOR-shared word by a ripple carry on a bounded mask: exact additive shares in Z_2^64 of x < 2^k
for the price of k one-bit ANDs and one k-bit word, instead of k converted bits (one ring element each, less
for bits whose value is read mod 2^w: :func:`mpcdp.mpc.ring.b2a_bits`); and, with the dealer's squares, x² too
for no further communication.

Steps, for n XOR-shared k-bit words x (k <= 62) and e further XOR-shared bits b_j to convert the usual way:
  1. Material: a bounded mask r < 2^k, XOR- and additively shared, with a bit ρ for the carry out
     (:class:`mpcdp.adapter.BoundedMasks` and a (1+e)-bit word R of :class:`mpcdp.adapter.WordBits` whose bit 0
     is ρ; or, with ``square_width``, :class:`mpcdp.adapter.BoundedMaskSquares`: r, ρ and additive shares of r²
     and ρ·r, then an e-bit R for the b_j alone); the ANDs' Beaver word masks.
  2. y = x + r by a ripple carry on bit columns (64 words' bits to a word): c_0 = 0 and
     c_{i+1} = maj(x_i, r_i, c_i) = x_i ⊕ ((x_i ⊕ r_i) AND (x_i ⊕ c_i)), one AND per bit, k rounds (every AND
     of a bit column of all n words in one opening, their material in one request); y_i = x_i ⊕ r_i ⊕ c_i.
  3. One opening of bit columns, k + 1 + e words per 64 elements: y mod 2^k, then c_k ⊕ ρ and b ⊕ R. The carry
     out c_k and the b_j become additive as in :func:`~mpcdp.mpc.ring.b2a_bits` (``widths``: c_k's share is
     needed mod 2^(64−k)): c_k = ρ + ε − 2ερ for the opened ε = c_k ⊕ ρ.
  4. x = y − r + 2^k·c_k, exact in Z_2^64 (x + r = y + 2^k·c_k over the integers). Local.
  5. (``square_width`` w) x² = y² − 2y·r + r² + 2^(k+1)·(y·c_k − c_k·r) + 2^(2k)·c_k, with
     c_k·r = ε·r + (1 − 2ε)·(ρ·r): linear in the dealt r, r², ρ, ρ·r with public coefficients (y and ε are
     open), right mod 2^w. Local: the square costs the dealer's two narrowed shares and no opening.

Security (semi-honest, the provider's model): every opening is masked by material no data party knows — the
ANDs' operands by Beaver word masks (or, under honest-majority among parties 0–2, re-randomised resharings),
y by r (uniform on [0, 2^k), so y = x + r mod 2^k is uniform whatever x is), c_k by ρ and b by R. Step 5 opens
nothing. The dealer knows r, ρ, r² and ρ·r (its own draws) and receives only requests whose sizes are n, k, e
and the widths, all public. Declared cost (:func:`declared_cost`): k multiplication steps of 2⌈n/64⌉ words,
then one opening of (k+1+e)⌈n/64⌉ words; requests: the bounded masks (open nothing), the ANDs' material
(before the first) and, where e > 0 or without squares, WordBits (before the last opening); ops: bounded_masks
n, and_words k⌈n/64⌉, b2a_bits (1+e)n without squares or en with them.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from mpcdp.mpc import binary, ring
from mpcdp.mpc.carry_prefix import bit_columns as _columns, column_words as _words
from mpcdp.mpc.context import MpcContext


class Lifted(NamedTuple):
    """Additive shares of what :func:`b2a_by_ripple` converts: x (n,), exact in Z_2^64; the extra bits (n, e),
    bit j right mod 2^widths[1 + j]; x² (n,) right mod 2^square_width, or None without squares."""

    value: torch.Tensor
    bits: torch.Tensor
    square: torch.Tensor | None


def squares_dealt(ctx: MpcContext) -> bool:
    """Whether a square comes cheapest from :class:`mpcdp.adapter.BoundedMaskSquares` (Beaver multiplication:
    the dealer, or honest-majority outside parties 0–2) rather than from the parties' own multiplication
    (replicated resharing among exactly parties 0–2: one word per element per member, no material)."""
    from mpcdp import adapter

    return adapter.replicated_arithmetic(ctx.members) is None


def b2a_by_ripple(ctx: MpcContext, words: torch.Tensor, k: int, extra: torch.Tensor, e: int, widths: list[int], *,
                  label: str, square_width: int = 0) -> Lifted:
    """x = the k low bits of XOR-shared ``words`` and the e low bits of XOR-shared ``extra``, additively shared
    (:class:`Lifted`); with ``square_width`` w >= 1, also x² mod 2^w from the dealt squares (step 5).
    ``widths``: 1 + e widths, the first for the carry out (at most 64 − k)."""
    from mpcdp import adapter

    if not 1 <= k <= 62 or len(widths) != 1 + e or widths[0] > 64 - k or not 0 <= square_width <= 64:
        raise ValueError(f"`k` must be in [1, 62] with 1 + e widths, the first <= 64 − k, and `square_width` in "
                         f"[0, 64]. Found k={k}, e={e}, widths={widths}, square_width={square_width}.")
    n = words.numel()
    if square_width:
        mask = adapter.dealer_bounded_mask_squares(n, k, square_width)
        r_word, r_value = mask.word, mask.value
    else:
        r_word, r_value = adapter.dealer_bounded_masks(n, k)
    sums, carry = _ripple(ctx, words.reshape(-1), r_word, k, label=f"{label}-carry")
    flat = extra.reshape(-1) & binary.low_mask(e)
    if square_width:
        m_word, m_bits = adapter.dealer_word_bits(n, e, widths[1:]) if e else (torch.zeros_like(flat), None)
        high = _columns(flat ^ m_word, e)
        carry = carry ^ _columns(mask.carry_word, 1)
    else:
        m_word, m_bits = adapter.dealer_word_bits(n, 1 + e, widths)
        masked = ((flat << 1) ^ m_word) & binary.low_mask(1 + e)
        carry, high = carry ^ _columns(masked & 1, 1), _columns(masked >> 1, e)
    (opened,) = ctx.open_masked([torch.cat([sums, carry, high]).reshape(-1)], label=label, xor=True)
    opened = _words(opened.reshape(k + 1 + e, -1), n)
    y, flip = opened & binary.low_mask(k), (opened >> k) & 1
    if square_width:
        c = ring.public_add(ctx, (1 - 2 * flip) * mask.carry, flip)
        bits = ring._bits_from_opened(ctx, opened >> (k + 1), m_bits) if e else torch.zeros((n, 0), dtype=torch.int64)
    else:
        converted = ring._bits_from_opened(ctx, opened >> k, m_bits)
        c, bits = converted[:, 0], converted[:, 1:]
    x = ring.public_add(ctx, (c << k) - r_value, y)
    return Lifted(x, bits, _square(ctx, y, flip, c, mask, k) if square_width else None)


def _square(ctx: MpcContext, y: torch.Tensor, flip: torch.Tensor, c: torch.Tensor, mask, k: int) -> torch.Tensor:
    """Step 5: additive shares of x² = (y − r + 2^k·c)², y and the carry's opened ε = ``flip`` public, c the
    carry's shares, ``mask`` this party's :class:`~mpcdp.adapter.bounded_masks.MaskSquares` (right mod its
    widths, so the square is right mod the square's width)."""
    carry_r = flip * mask.value + (1 - 2 * flip) * mask.carry_product  # c·r = ε·r + (1 − 2ε)·ρr
    secret = mask.square - 2 * y * mask.value + ((y * c - carry_r) << (k + 1)) + (c << (2 * k))
    return ring.public_add(ctx, secret, y * y)


def _ripple(ctx: MpcContext, x: torch.Tensor, r: torch.Tensor, k: int, *, label: str
            ) -> tuple[torch.Tensor, torch.Tensor]:
    """XOR shares of the bit columns (:func:`_columns`) of ((x + r) mod 2^k, (k, ⌈n/64⌉), and of the carry out
    of bit k − 1, (1, ⌈n/64⌉), for XOR-shared k-bit words x and r: one AND per bit and round."""
    xs, rs = _columns(x, k), _columns(r, k)
    ands = ring.ShiftedAnds(ctx, xs.shape[1], 2 * k, [(2 * i, 2 * i + 1, 0) for i in range(k)], label=label)
    carry = torch.zeros(xs.shape[1], dtype=torch.int64)
    sums = torch.empty_like(xs)
    for i in range(k):
        xi, ri = xs[i], rs[i]
        sums[i] = xi ^ ri ^ carry
        ands.open({2 * i: xi ^ ri, 2 * i + 1: xi ^ carry})
        carry = xi ^ ands.product(2 * i, 2 * i + 1, 0)
    return sums, carry.unsqueeze(0)


def declared_cost(n: int, k: int, e: int, *, squares: bool = False
                  ) -> tuple[list[tuple[int, bool, bool]], dict[str, int], int]:
    """(elements, is a multiplication, needs a request for material) of each communication step of
    :func:`b2a_by_ripple` on n words, its operations, and its requests that open nothing (the bounded masks).
    ``squares``: with a ``square_width`` (the carry's bit dealt with the masks; WordBits only for e > 0)."""
    columns = -(-n // 64)
    steps = [(2 * columns, True, i == 0) for i in range(k)]
    steps.append(((k + 1 + e) * columns, False, not squares or e > 0))
    return steps, {"bounded_masks": n, "and_words": k * columns, "b2a_bits": (e if squares else 1 + e) * n}, 1
