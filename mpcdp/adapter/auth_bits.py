"""The dealer's authenticated random bits, for the in-MPC sampler under ``security = "malicious"``.

:class:`AuthBits`: n authenticated values [[b]] (:mod:`.mac_material`'s layout: value and MAC shares in Z_2^128,
k = s = 64) whose value b is a uniform bit, 0 or 1, that no data party knows. b is the XOR of one bit drawn
from every party's dealer generator (party 0's included), as :class:`~.mac_material.AuthRandoms`' r is the sum
of one word from each: a party knows its own bit of the XOR only. The authenticated sampler
(:mod:`mpcdp.noise.auth_gaussian`) uses them for every uniform bit of a candidate (XORed with the committee's
committed coin, so the dealer alone does not know them either: issue 44) and for the masks of its
arithmetic-to-bits step, whose [[r]] = Σ 2^i·[[r_i]] is then a linear function of 64 of them (an edaBit with
no material of its own).

Seeding, as every kind: parties 1..m−1 draw their value and MAC shares from their keyed dealer generator, the
dealer draws the same words, and party 0 receives the difference (4 words per bit). Security: the dealer is
honest and colludes with nobody (issue 48's model); it knows every b. A dealt b is a bit by construction, so
the sampler needs no check that it is one: with an honest dealer nobody can deal anything else, and a party
that draws other words than the dealer's breaks only its own shares' correlation, which the next MAC check
catches (:func:`mpcdp.mpc.authenticated.mac_check`).

View audit (``mpcdp audit views --security malicious``, :mod:`mpcdp.jobs.auth_views`): the dealer notes every b
it deals in its recorded view (:mod:`.dealer_view`), and a party that records (:func:`record_parts`) keeps its
own part of each XOR; neither records anything otherwise.

Declared cost: party 0's reply, 4·8 = 32 bytes per bit; the other parties nothing (their shares come from their
dealer keys); one request per call.
"""

from __future__ import annotations

import torch

from mpcdp.adapter import dealer_view, keyed
from mpcdp.adapter.group import provider, rank
from mpcdp.adapter.limbs import Wide
from mpcdp.adapter.mac_material import RING, WORDS, _no_dealer, _own_share, _party0_share
from mpcdp.adapter.material import Material, _dealer_generator
from mpcdp.transport import costs


def _bit_part(generator, n: int) -> torch.Tensor:
    """One party's part of n dealt bits (bit 0 of a word from its dealer generator)."""
    return keyed.ring((n,), generator=generator) & 1


PARTS: list[torch.Tensor] | None = None  # this party's parts, while the view audit records (None: not recording)


def record_parts() -> list[torch.Tensor]:
    """Keep this party's part of every dealt bit's XOR from now on (the view audit only); returns the list."""
    global PARTS
    PARTS = []
    return PARTS


class AuthBits(Material):
    """n authenticated uniform bits [[b]] (value and MAC shares) that no data party knows."""

    @staticmethod
    def reply_shape(n: int) -> tuple[int, ...]:
        return (n, WORDS)

    @staticmethod
    def serve(dealer, n: int):
        bits = torch.zeros(n, dtype=torch.int64)
        for generator in dealer._get_generators():  # b = XOR of one bit from every party's generator
            bits ^= _bit_part(generator, n)
        dealer_view.note_draw(bits=bits)  # the view audit's record of what the dealer knows (no-op otherwise)
        return _party0_share(dealer, RING.lift(bits), n)

    generate = staticmethod(_no_dealer)

    @classmethod
    def fetch(cls, n: int) -> tuple[Wide, Wide]:
        """This party's (value, MAC) shares of n dealt bits."""
        costs.record("auth_bits", n)
        return provider().serve(cls, n)

    @classmethod
    def from_dealer(cls, n: int) -> tuple[Wide, Wide]:
        generator = _dealer_generator()
        part = _bit_part(generator, n)  # this party's part of the XOR, which the dealer draws too
        if PARTS is not None:
            PARTS.append(part.clone())
        return _own_share(generator, n, lambda: cls.request(n))


KINDS: tuple[type[Material], ...] = (AuthBits,)
