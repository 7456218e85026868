"""Bounded masks: the material of a B2A by a ripple carry (:func:`mpcdp.mpc.ripple.b2a_by_ripple`).

:class:`BoundedMasks`: n uniform ``bits``-bit values r, each both XOR-shared (as words) and additively shared in
Z_2^64 (exactly r < 2^bits, not r mod 2^bits of a wider value). With the dealer, r is the XOR of every member's
draw from its keyed generator (known to the dealer and no party) and the additive shares come as a rotating
request's: every member but the receiver draws its share from its generator, the receiver gets the rest in the
dealer's reply, n ring elements. Without a dealer the generators make it as :class:`~.material.MaskedBits`
does: r's bits converted to additive shares in one round (``bits`` ring elements per element from generator 0
to generator 1), then summed.


:class:`BoundedMaskSquares`: the same r with a uniform bit ρ, both XOR-shared, and additive shares of r (exact),
ρ, r² and ρ·r, each needed only mod a public width (:func:`square_fields`): what lets the ripple's caller
square x = y − r + 2^bits·c from the opened y with no multiplication of its own (the carry c is ρ ⊕ an opened
bit, so c·r is linear in ρ·r, :func:`mpcdp.mpc.ripple.b2a_by_ripple`). The dealer sends the receiver its four
shares reduced to their widths, packed as :class:`~.material.WordBits`' narrowed replies (8 elements at a time,
:func:`~.lanes.pack_bit_shares`). Without a dealer the generators convert r's bits and ρ together (one round,
bits + 1 ring elements per element), then reshare their summands of r and ρ (a second round: each generator
sends the one before it 2 ring elements per element, re-randomised by a sharing of zero from the component
keys; then it holds two of the three summands of each, and r² and ρ·r split into terms each known to one
generator, as :mod:`.replicated` multiplies).

Security (semi-honest): the dealer draws r and ρ and receives only the request (its public sizes n, ``bits``
and the square's width, checked before anything is allocated: :meth:`BoundedMasks.reply_shape`,
:meth:`BoundedMaskSquares.reply_shape`); each party's shares are pseudo-random under its dealer key, so no
party alone learns anything of r or ρ; without a dealer, a generator receives another's summands masked by a
component it lacks. Declared cost with the dealer: one request; the reply n ring elements (8 bytes each) for
:class:`BoundedMasks`, ⌈n/8⌉·⌈8·Σ widths/64⌉ words for :class:`BoundedMaskSquares` (Σ widths = 64 + (64 −
bits) + w + max(1, w − bits − 1), w the square's width); ops ``bounded_masks`` n.
"""

from __future__ import annotations

import torch

from typing import NamedTuple

from mpcdp.adapter import keyed, replicated
from mpcdp.adapter.group import provider
from mpcdp.adapter.lanes import WORD_BITS_GROUP, pack_bit_shares, unpack_bit_shares
from mpcdp.adapter.material import Material, _dealer_generator
from mpcdp.errors import ProtocolViolation
from mpcdp.transport import costs

MAX_BITS = 62
MAX_ELEMENTS = 1 << 24  # far above any pass (MAX_PASS candidates): a request for more is refused unread


def check_request(n, bits) -> tuple[int, int]:
    """(n, bits) of a request: n an integer in [0, :data:`MAX_ELEMENTS`], bits in [1, :data:`MAX_BITS`]."""
    def integer(x) -> bool:
        return isinstance(x, int) and not isinstance(x, bool)

    if not (integer(n) and 0 <= n <= MAX_ELEMENTS and integer(bits) and 1 <= bits <= MAX_BITS):
        raise ProtocolViolation(f"a bounded-mask request must be n in [0, {MAX_ELEMENTS}] and bits in [1, "
                                f"{MAX_BITS}]. Found n={str(n)[:20]}, bits={str(bits)[:20]}", party=0)
    return int(n), int(bits)


class BoundedMasks(Material):
    """n uniform ``bits``-bit values r: a XOR share (n,) and an additive share (n,) in Z_2^64 of each."""

    @staticmethod
    def reply_shape(n: int, bits: int) -> tuple[int, ...]:
        n, _ = check_request(n, bits)
        return (n,)

    @staticmethod
    def serve(dealer, n: int, bits: int):
        n, bits = check_request(n, bits)
        r = dealer._get_binary_PRSS((n,), bitlength=bits)
        return r - dealer._get_additive_PRSS((n,), remove_rank=True)

    generator_rounds = 1

    @staticmethod
    def generate(source: replicated.ReplicatedSource, n: int, bits: int):
        n, bits = check_request(n, bits)
        parts = source.random((n,), bits=bits)
        arithmetic = source.arithmetic_bits(parts, bits)
        value = None if arithmetic is None else (arithmetic * (1 << torch.arange(bits))).sum(1)
        return source.xor(source.own(parts), (n,), bits=bits), source.additive(value, (n,))

    @classmethod
    def fetch(cls, n: int, bits: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(XOR shares of r as words, additive shares of r), each (n,)."""
        costs.record("bounded_masks", n)
        return provider().serve(cls, n, bits)

    @classmethod
    def from_dealer(cls, n: int, bits: int) -> tuple[torch.Tensor, torch.Tensor]:
        generator = _dealer_generator()
        word = keyed.kbit((n,), bitlength=bits, generator=generator)
        return word, cls.dealt(lambda: keyed.ring((n,), generator=generator), n, bits)


def check_square_request(n, bits, width) -> tuple[int, int, int]:
    """(n, bits, width) of a request for :class:`BoundedMaskSquares`: as :func:`check_request`, and the square's
    width an integer in [1, 64]."""
    n, bits = check_request(n, bits)
    if not (isinstance(width, int) and not isinstance(width, bool) and 1 <= width <= 64):
        raise ProtocolViolation(f"a bounded-mask-square request's width must be in [1, 64]. Found "
                                f"width={str(width)[:20]}", party=0)
    return n, bits, int(width)


def square_fields(bits: int, width: int) -> list[int]:
    """The bits of each additive share that matter, in the reply's order: r (all 64: x is exact), ρ (weight
    2^bits in x: 64 − bits), r² (the square's width) and ρ·r (weight 2^(bits+1) in the square)."""
    return [64, 64 - bits, width, max(1, width - bits - 1)]


class MaskSquares(NamedTuple):
    """One party's shares of :class:`BoundedMaskSquares`: XOR shares of r and ρ (n,); additive shares of r
    (exact), ρ, r² and ρ·r (n,), each right mod its width (:func:`square_fields`)."""

    word: torch.Tensor
    carry_word: torch.Tensor
    value: torch.Tensor
    carry: torch.Tensor
    square: torch.Tensor
    carry_product: torch.Tensor


class BoundedMaskSquares(Material):
    """n uniform ``bits``-bit values r with a uniform bit ρ each, and additive shares of r, ρ, r², ρ·r."""

    @staticmethod
    def reply_shape(n: int, bits: int, width: int) -> tuple[int, ...]:
        n, bits, width = check_square_request(n, bits, width)
        return (-(-n // WORD_BITS_GROUP), -(-WORD_BITS_GROUP * sum(square_fields(bits, width)) // 64))

    @staticmethod
    def serve(dealer, n: int, bits: int, width: int):
        n, bits, width = check_square_request(n, bits, width)
        r = dealer._get_binary_PRSS((n,), bitlength=bits)
        rho = dealer._get_binary_PRSS((n,), bitlength=1)
        values = torch.stack([r, rho, r * r, rho * r], 1)
        return pack_bit_shares(values - dealer._get_additive_PRSS((n, 4), remove_rank=True), square_fields(bits, width))

    generator_rounds = 2

    @staticmethod
    def generate(source: replicated.ReplicatedSource, n: int, bits: int, width: int):
        n, bits, width = check_square_request(n, bits, width)
        parts = source.random((n,), bits=bits + 1)  # r's bits, then ρ at bit `bits`
        arithmetic = source.arithmetic_bits(parts, bits + 1)
        word = source.xor(source.own(parts), (n,), bits=bits + 1)
        summands = None
        if arithmetic is not None:  # a generator: its summands of r and ρ, then of r² and ρ·r
            value = (arithmetic[:, :bits] * (1 << torch.arange(bits))).sum(1)
            summands = torch.stack([value, arithmetic[:, bits], *_reshared_products(source, value, arithmetic[:, bits])], 1)
        shares = source.additive(summands, (n, 4))
        return MaskSquares(word & ((1 << bits) - 1), (word >> bits) & 1, *shares.unbind(1))

    @classmethod
    def fetch(cls, n: int, bits: int, width: int) -> MaskSquares:
        costs.record("bounded_masks", n)
        return provider().serve(cls, n, bits, width)

    @classmethod
    def from_dealer(cls, n: int, bits: int, width: int) -> MaskSquares:
        generator = _dealer_generator()
        word = keyed.kbit((n,), bitlength=bits, generator=generator)
        carry_word = keyed.kbit((n,), bitlength=1, generator=generator)
        fields = square_fields(bits, width)
        shares = cls.dealt(lambda: keyed.ring((n, 4), generator=generator), n, bits, width,
                           reply=lambda words: unpack_bit_shares(words, n, fields))
        return MaskSquares(word, carry_word, *shares.unbind(1))


def _reshared_products(source: replicated.ReplicatedSource, value: torch.Tensor, bit: torch.Tensor
                       ) -> tuple[torch.Tensor, torch.Tensor]:
    """This generator's summands of r² and ρ·r from its summands of r and ρ (3-of-3): each generator sends the one
    before it its summands plus a sharing of zero (f_g − f_{g+1}, component keys: the receiver lacks component
    g + 1), one round of 2n ring elements; generator g then holds summands g and g + 1 of each, and
    (Σ a)(Σ b) = Σ_g (a_g·b_g + a_g·b_{g+1} + a_{g+1}·b_g)."""
    g, n = source.generator, value.numel()
    assert g is not None  # (called on the generators only)
    nxt = (g + 1) % replicated.GENERATORS
    mine = torch.cat([value, bit]) + source.held(g, 2 * n) - source.held(nxt, 2 * n)
    theirs = torch.empty(2 * n, dtype=torch.int64)
    source.mesh.exchange({(g - 1) % replicated.GENERATORS: mine}, {nxt: theirs}, label=replicated.BITS_LABEL)
    a0, b0, a1, b1 = mine[:n], mine[n:], theirs[:n], theirs[n:]
    return a0 * a0 + 2 * a0 * a1, b0 * a0 + b0 * a1 + b1 * a0


ROTATING: tuple[type[Material], ...] = (BoundedMasks, BoundedMaskSquares)  # its replies rotate: Material.dealt
KINDS: tuple[type[Material], ...] = ROTATING
