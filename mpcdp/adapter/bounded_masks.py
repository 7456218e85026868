"""Bounded masks: the material of a B2A by a ripple carry (:func:`mpcdp.mpc.ripple.b2a_by_ripple`).

:class:`BoundedMasks`: n uniform ``bits``-bit values r, each both XOR-shared (as words) and additively shared in
Z_2^64 (exactly r < 2^bits, not r mod 2^bits of a wider value). With the dealer, r is the XOR of every member's
draw from its keyed generator (known to the dealer and no party) and the additive shares come as a rotating
request's: every member but the receiver draws its share from its generator, the receiver gets the rest in the
dealer's reply, n ring elements. Without a dealer the generators make it as :class:`~.material.MaskedBits`
does: r's bits converted to additive shares in one round (``bits`` ring elements per element from generator 0
to generator 1), then summed.

Security (semi-honest): the dealer draws r and receives only the request (its public sizes n and ``bits``,
checked before anything is allocated: :meth:`BoundedMasks.reply_shape`); each party's shares are
pseudo-random under its dealer key, so no party alone learns anything of r. Declared cost with the dealer: one
request, n ring elements (8 bytes each) to the receiver; ops ``bounded_masks`` n.
"""

from __future__ import annotations

import torch

from mpcdp.adapter import keyed, replicated
from mpcdp.adapter.group import provider
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


ROTATING: tuple[type[Material], ...] = (BoundedMasks,)  # its replies rotate: Material.dealt
KINDS: tuple[type[Material], ...] = ROTATING
