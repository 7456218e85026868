"""Input masks with their squares, for inputs whose squares an authenticated check needs (security = 'malicious').

:class:`AuthMaskSquares`: for n elements and every data party o, the authenticated mask [[r_o]] of
:class:`~.mac_material.AuthMasks` (r_o uniform in Z_2^128, known to o and the dealer only) and [[r_o² mod 2^128]].
Party o inputs x by sending d = x − r_o mod 2^64 to every party (:func:`mpcdp.mpc.authenticated.input_words_and_bits`
with ``squared``); then [[x]] = [[r_o]] + d and [[x²]] = [[r_o²]] + 2d·[[r_o]] + d², both local, exact mod 2^128
for the element r_o + d, and MAC-consistent: the square of an input costs no opening (an authenticated square
pair, :class:`~.mac_material.AuthSquares`, needs ε = x − a opened, one opening and two rounds). Whatever d o
sends, [[x²]] is the square of the [[x]] it input: the dealer is honest (issue 48's model) and deals r_o² for the
r_o it dealt.

Draws: every owner's r_o from its generator first (as :class:`~.mac_material.AuthMasks`'), then every other
party's value shares of all 2·m·n values (owner by owner, r_o then r_o², element by element) in one draw and their
MAC shares in another; party 0's come in the dealer's reply, (2·m·n, 4) words in that order. Declared cost
(dealer, party 0's reply): 8·8·m bytes per element (twice AuthMasks').
"""

from __future__ import annotations

import torch

from mpcdp.adapter.group import provider, rank, world_size
from mpcdp.adapter.limbs import Wide
from mpcdp.adapter.mac_material import RING, WORDS, draw_wide, no_dealer, party0_share
from mpcdp.adapter.material import Material, _dealer_generator
from mpcdp.errors import ProtocolViolation
from mpcdp.transport import costs

Pair = tuple[Wide, Wide]  # (value shares, MAC shares)


class AuthMaskSquares(Material):
    """For n elements and every party o: [[r_o]] and [[r_o²]] (value and MAC shares), and r_o to party o only."""

    @staticmethod
    def reply_shape(n: int, parties: int) -> tuple[int, ...]:
        return (2 * parties * n, WORDS)

    @staticmethod
    def serve(dealer, n: int, parties: int):
        generators = dealer._get_generators()
        if parties != len(generators):
            raise ProtocolViolation(f"party 0 asked for masks of {parties} owners; the run has {len(generators)}",
                                    party=0)
        masks = [draw_wide(g, n) for g in generators]
        values = [v for r in masks for v in (r, RING.mul(r, r))]  # (owner, mask or square, element), flat
        return party0_share(dealer, Wide(torch.cat([v.lo for v in values]), torch.cat([v.hi for v in values])),
                             2 * parties * n)

    generate = staticmethod(no_dealer)

    @classmethod
    def fetch(cls, n: int) -> tuple[Wide, list[Pair], list[Pair]]:
        """(r for this party's own inputs, [its shares of [[r_o]] for every owner o], [of [[r_o²]]])."""
        costs.record("auth_mask_squares", n * world_size())
        return provider().serve(cls, n)

    @classmethod
    def from_dealer(cls, n: int) -> tuple[Wide, list[Pair], list[Pair]]:
        generator = _dealer_generator()
        own = draw_wide(generator, n)
        m = world_size()
        if rank() == 0:
            reply = cls.request(n, m).reshape(m, 2, n, WORDS)
            value, mac = Wide(reply[..., 0], reply[..., 1]), Wide(reply[..., 2], reply[..., 3])
        else:  # the value shares of every (owner, mask or square, element), then the MAC shares: 4 draws in all
            value = draw_wide(generator, 2 * m * n).reshape(m, 2, n)
            mac = draw_wide(generator, 2 * m * n).reshape(m, 2, n)
        return own, [(value[o, 0], mac[o, 0]) for o in range(m)], [(value[o, 1], mac[o, 1]) for o in range(m)]


KINDS: tuple[type[Material], ...] = (AuthMaskSquares,)
