"""The dealer's authenticated random bits, for the in-MPC sampler under ``security = "malicious"``.

Two domains. :class:`AuthBits`: n authenticated values [[b]] of :mod:`.mac_material`'s Z_2^128 (k = s = 64) whose
value b is a uniform bit that no data party knows, the XOR of one bit drawn from every party's dealer generator
(party 0's included), as :class:`~.mac_material.AuthRandoms`' r is the sum of one word from each (32 bytes per bit
to party 0; circuit dg-auth/1 drew every candidate bit so; dg-auth/2 to /4 use the bit domain below). The k = 1 bit
domain of :mod:`mpcdp.mpc.bit_authenticated`: a bit is one int64 value word and one MAC word per party, its value
the low bit of Σ value words, its MAC Σ MAC words ≡ α_b·Σ value words mod 2^48 (:data:`MAC_BITS`) under the bit key
(:class:`BitKey`). Every value word comes from the party's keyed generator (party 0's too), so party 0's reply
carries only what is correlated, each MAC share packed in 6 bytes (:func:`pack_macs`; dg-auth/2 sent 8):
:class:`BitShares` (dealt uniform bits: the XOR of the low bits of every party's draw) and :class:`BitRandoms`
(uniform words, the bit check's masks) 6 bytes each, :class:`BitTriples` 18⅛ bytes (three MAC shares and the low
bit of party 0's share of c), :class:`DaBits` 38 bytes (a bit in both domains: its bit-domain MAC and its Z_2^128
value and MAC shares), :class:`EdaBits` 6·bits + 32 bytes (``bits`` bit-domain bits and r = Σ 2^i·r_i in Z_2^128),
:class:`OneHots` 2^w·6⅛ bytes (a one-hot vector at a uniform index no party knows). :class:`BitShares` and
:class:`EdaBits` deal, on request, a **half triple** with chosen bits r (b uniform, c ≡ r·b mod 2,
:data:`HALF_BYTES`), so that the one product such a bit enters opens one bit and needs no triple of its own
(dg-auth/8; :class:`MaskBits`, the muxes' window masks, one per product a bit enters: dg-auth/9). The sampler
(:mod:`mpcdp.noise.auth_gaussian`) XORs every dealt candidate bit with the committee's
committed coin, so the dealer alone does not know them either (issue 44).

Seeding, as every kind: parties 1..m−1 draw their shares from their keyed dealer generator, the dealer draws the
same words, and party 0 receives the difference — for the kinds of :data:`ROTATING` (:class:`BitShares`,
:class:`BitTriples`: most of the sampler's dealt bytes) not party 0 but the data party with the fewest reply
elements so far (:class:`.dealer_link.Receivers`, as the semi-honest kinds'; "party 0" below is that receiver). Security: the dealer is honest and colludes with nobody (issue
48's model); it knows every dealt bit and both keys. A dealt bit is a bit (a dealt one-hot a one-hot) by construction, so nothing
checks that it is one: with an honest dealer nobody can deal anything else, and a party that draws other words than the
dealer's breaks only its own shares' correlation, which the next check catches
(:func:`mpcdp.mpc.authenticated.mac_check`, :func:`mpcdp.mpc.bit_authenticated.bit_check`).

View audit (``mpcdp audit views --security malicious``, :mod:`mpcdp.jobs.auth_views`): the dealer notes every bit
it deals in its recorded view (:mod:`.dealer_view`: the candidate bits under ``bits``, daBits, edaBits and masks
under their own names), and a party that records (:func:`record_parts`) keeps its own part of each candidate bit's XOR;
neither records anything otherwise.

Declared cost: the receiver's reply as above per element; the other parties nothing (their shares come from
their dealer keys); one request per call, always sent by party 0.
"""

from __future__ import annotations

from typing import Any

import torch

from mpcdp.adapter import dealer_view, keyed, objects
from mpcdp.adapter.group import provider, rank
from mpcdp.adapter.bit_words import MAC_BITS, MAC_BYTES, mac_words, pack_bits, pack_macs, unpack_bits, unpack_macs
from mpcdp.adapter.limbs import Wide
from mpcdp.adapter.mac_material import RING, WORDS, MacKey, no_dealer, own_share, party0_share
from mpcdp.errors import ProtocolViolation
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
        return party0_share(dealer, RING.lift(bits), n)

    generate = staticmethod(no_dealer)

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
        return own_share(generator, n, lambda: cls.request(n))


# -- the bit domain (SPDZ2k with k = 1, :mod:`mpcdp.mpc.bit_authenticated`; the module docstring) -----------


BIT_BYTES = MAC_BYTES
"""Dealt bytes to party 0 per bit-domain element (:class:`BitShares`, :class:`BitRandoms`): its MAC share."""
BIT_TRIPLE_BYTES = 3 * MAC_BYTES + 1 / 8
"""Dealt bytes to party 0 per :class:`BitTriples` triple: three MAC shares and one bit of c's value share."""
DA_BYTES = MAC_BYTES + 8 * WORDS
"""Dealt bytes to party 0 per :class:`DaBits` daBit: its bit-domain MAC share and four Z_2^128 words."""
ONE_HOT_BYTES = MAC_BYTES + 1 / 8
"""Dealt bytes to party 0 per element of a :class:`OneHots` vector: its MAC share and one bit of its value share."""
EDA_BYTES = 64 * MAC_BYTES + 8 * WORDS
"""Dealt bytes to party 0 per 64-bit :class:`EdaBits` edaBit: 64 bit-domain MAC shares and four Z_2^128 words."""


def _bit_macs(dealer, values: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """Party 0's MAC shares (n,) of bit-domain ``values`` (the dealer's α_b·x minus parties 1..m−1's MAC draws),
    computed in place in ``out`` (a view of n int64, e.g. one column of the reply's interleaved MAC shares) when
    given, else in a new tensor."""
    key = getattr(dealer, "bit_key", None)
    if key is None:
        raise ProtocolViolation("party 0 asked the dealer for bit-domain material before the bit MAC key", party=0)
    mac = torch.mul(values, key, out=out) if out is not None else key * values
    for generator in dealer._get_generators()[1:]:
        mac.sub_(keyed.ring(values.shape, generator=generator))
    return mac


def _interleaved_macs(dealer, *values: torch.Tensor) -> torch.Tensor:
    """Party 0's MAC shares of each of ``values`` ((n,) each), as ``torch.stack([_bit_macs(dealer, v) for v in
    values], 1)`` (the same draws in the same order) but written straight into the (n, len(values)) result."""
    macs = torch.empty(values[0].numel(), len(values), dtype=torch.int64)
    for column, value in enumerate(values):
        _bit_macs(dealer, value, out=macs[:, column])
    return macs


def _bit_own_macs(generator, n: int, k: int, request) -> list[torch.Tensor]:
    """This party's k MAC-share vectors (n,) (party 0's from the dealer's packed reply of n·k shares, element by
    element)."""
    if rank() == 0:
        reply = unpack_macs(request(), n * k).reshape(n, k)
        return [reply[:, t] for t in range(k)]
    return [keyed.ring((n,), generator=generator) for _ in range(k)]


def _rotating_reply(kind: type[Material], *args: Any) -> torch.Tensor | None:
    """This party's reply to a request of a :data:`ROTATING` kind if it is the request's receiver
    (:meth:`.dealer_link.DealerClient.dealt`), else None: it draws its share from its generator."""
    nothing = torch.zeros(0, dtype=torch.int64)
    reply = kind.dealt(lambda: nothing, *args)
    return None if reply is nothing else reply


class BitKey(MacKey):
    """This party's share α_b,i of the bit-domain MAC key (a uniform 64-bit word; the dealer keeps α_b). Drawn
    and fetched as :class:`~mpcdp.adapter.mac_material.MacKey`, in Z_2^64."""

    @staticmethod
    def serve(dealer):
        dealer.bit_key = _joint_words(dealer, 1)[0]
        return torch.zeros(0, dtype=torch.int64)

    @classmethod
    def fetch(cls) -> torch.Tensor:
        costs.record("bit_mac_key", 1)
        return provider().serve(cls)


def _joint_words(dealer, n: int) -> torch.Tensor:
    """The sum of every party's next n words from its dealer key: an element no single party knows."""
    values = torch.zeros(n, dtype=torch.int64)
    for generator in dealer._get_generators():
        values.add_(keyed.ring((n,), generator=generator))
    return values


class BitRandoms(Material):
    """n bit-domain elements r, uniform in Z_2^64, that no party knows (the 2·r masks of the bit check's
    openings): value shares from every party's generator, party 0's MAC share dealt (:data:`MAC_BYTES` each)."""

    @staticmethod
    def reply_shape(n: int) -> tuple[int, ...]:
        return (mac_words(n),)

    @staticmethod
    def serve(dealer, n: int):
        return pack_macs(_bit_macs(dealer, _joint_words(dealer, n)))

    generate = staticmethod(no_dealer)

    @classmethod
    def fetch(cls, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        costs.record("bit_randoms", n)
        return provider().serve(cls, n)

    @classmethod
    def from_dealer(cls, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        generator = _dealer_generator()
        value = keyed.ring((n,), generator=generator)
        (mac,) = _bit_own_macs(generator, n, 1, lambda: cls.request(n))
        return value, mac


class BitShares(Material):
    """n rows of ``width`` dealt uniform bits in the bit domain (each the low bit of a :class:`BitRandoms`
    element: the XOR of the low bits of every party's value draw), noted in the dealer's recorded view like
    :class:`AuthBits`' (the view audit); with a **half triple** (:func:`_serve_halves`) for each bit in the
    columns ``halves`` of every row (a column listed k times gets k, each for one product). :data:`MAC_BYTES` per
    bit and :data:`HALF_BYTES` per half triple to party 0."""

    VIEW = "bits"  # the name the dealer's recorded view gives the bits (the view audit's candidate bits)

    @staticmethod
    def reply_shape(n: int, width: int = 1, halves: list | None = None) -> tuple[int, ...]:
        objects.check_columns(width, halves)
        return (mac_words(n * width) + half_words(n * len(halves or [])),)

    @classmethod
    def serve(cls, dealer, n: int, width: int = 1, halves: list | None = None):
        values = _joint_words(dealer, n * width)
        dealer_view.note_draw(**{cls.VIEW: values & 1})
        reply = pack_macs(_bit_macs(dealer, values))
        if not halves:
            return reply
        return torch.cat([reply, _serve_halves(dealer, values.reshape(n, width)[:, list(halves)].reshape(-1))])

    generate = staticmethod(no_dealer)

    @classmethod
    def fetch(cls, n: int, width: int = 1, halves: list[int] | None = None) -> tuple[torch.Tensor, torch.Tensor, Any]:
        """(value, MAC) shares of n·width bits (flat, row by row) and, with ``halves``, their half triples
        ((b value, b MAC), (c value, c MAC)), each (n·len(halves),) row by row; else None."""
        costs.record("bit_shares", n * width)
        return provider().serve(cls, n, width, list(halves) if halves else None)

    @classmethod
    def from_dealer(cls, n: int, width: int = 1, halves: list | None = None) -> tuple[torch.Tensor, torch.Tensor, Any]:
        generator = _dealer_generator()
        total = n * width
        value = keyed.ring((total,), generator=generator)
        rest, reply = None, _rotating_reply(cls, n, width, halves)
        if reply is not None:
            mac, rest = unpack_macs(reply[:mac_words(total)], total), reply[mac_words(total):]
        else:
            mac = keyed.ring((total,), generator=generator)
        if PARTS is not None and cls is BitShares:  # candidate bits only (not MaskBits)
            PARTS.append((value & 1).clone())
        return value, mac, _own_halves(generator, n * len(halves), rest) if halves else None


class MaskBits(BitShares):
    """:class:`BitShares` that mask a secret's bits before they are opened (the muxes' selector bits, dg-auth/9),
    a column's bit with one half triple per product it enters: the dealer's recorded view notes them under
    ``mask_bits`` and a recording party keeps no part of them (they are not candidate bits)."""

    VIEW = "mask_bits"


HALF_BYTES = 2 * MAC_BYTES + 1 / 8
"""Dealt bytes to party 0 per half triple: the MAC shares of b and c and one bit of c's value share."""


def half_words(h: int) -> int:
    """int64 words of party 0's reply for h half triples (:func:`_serve_halves`)."""
    return mac_words(2 * h) + -(-h // 64)


def _serve_halves(dealer, r: torch.Tensor) -> torch.Tensor:
    """Party 0's reply for **half triples** on dealt bit-domain elements whose values the dealer drew (``r``,
    (h,)): b uniform in Z_2^64 and c ≡ r·b (mod 2), as :class:`BitTriples`' b and c with the dealt element itself
    as a (:func:`mpcdp.mpc.bit_authenticated.multiply_dealt`). Every party draws b's and c's value shares (party
    0's c but its low bit β, set by the dealer), then parties 1..m−1 the two MAC shares; the reply: party 0's two
    MAC shares (packed) and β (packed 64 to a word), :data:`HALF_BYTES` each."""
    generators = dealer._get_generators()
    h = r.numel()
    b = torch.zeros(h, dtype=torch.int64)
    for generator in generators:
        b.add_(keyed.ring((h,), generator=generator))
    own = keyed.ring((h,), generator=generators[0]) & ~1  # party 0's share of c but its low bit
    others = torch.zeros(h, dtype=torch.int64)
    for generator in generators[1:]:  # parties 1..m−1 draw their share of c, then the two MACs
        others.add_(keyed.ring((h,), generator=generator))
    low = (r * b - others) & 1
    c = own.add_(low).add_(others)
    macs = _interleaved_macs(dealer, b, c)
    return torch.cat([pack_macs(macs), pack_bits(low)])


def _own_halves(generator, h: int, reply: torch.Tensor | None) -> tuple[tuple[torch.Tensor, torch.Tensor],
                                                                        tuple[torch.Tensor, torch.Tensor]]:
    """This party's ((b value, b MAC), (c value, c MAC)) of h half triples (party 0's MACs and c's low bits from
    ``reply``, the dealer's :func:`_serve_halves`)."""
    b, c = keyed.ring((h,), generator=generator), keyed.ring((h,), generator=generator)
    if reply is not None:
        words = mac_words(2 * h)
        macs = unpack_macs(reply[:words], 2 * h).reshape(h, 2)
        return (b, macs[:, 0]), ((c & ~1) + unpack_bits(reply[words:], h), macs[:, 1])
    return (b, keyed.ring((h,), generator=generator)), (c, keyed.ring((h,), generator=generator))


class BitTriples(Material):
    """n bit-domain Beaver triples: a, b uniform in Z_2^64 (value shares from every party's generator) and c with
    c ≡ a·b (mod 2), so c's low bit is the AND of a's and b's (its upper bits don't care). Every value share of c
    comes from a generator too, party 0's except its low bit β, which the dealer sets so that the shares sum to
    the AND mod 2. Party 0's reply: its MAC shares of a, b and c (packed, :data:`MAC_BYTES` each) and β (packed 64
    to a word): :data:`BIT_TRIPLE_BYTES` per triple."""

    @staticmethod
    def reply_shape(n: int) -> tuple[int, ...]:
        return (mac_words(3 * n) + -(-n // 64),)

    @staticmethod
    def serve(dealer, n: int):
        generators = dealer._get_generators()
        a, b = torch.zeros(n, dtype=torch.int64), torch.zeros(n, dtype=torch.int64)
        for generator in generators:
            a = a + keyed.ring((n,), generator=generator)
            b = b + keyed.ring((n,), generator=generator)
        own = keyed.ring((n,), generator=generators[0]) & ~1  # party 0's share of c but its low bit
        others = torch.zeros(n, dtype=torch.int64)
        for generator in generators[1:]:  # parties 1..m−1 draw their share of c first, then the three MACs
            others.add_(keyed.ring((n,), generator=generator))
        low = (a * b - others) & 1
        c = own.add_(low).add_(others)
        macs = _interleaved_macs(dealer, a, b, c)
        return torch.cat([pack_macs(macs), pack_bits(low)])

    generate = staticmethod(no_dealer)

    @classmethod
    def fetch(cls, n: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """[(value, MAC) shares of a, of b, of c], each (n,)."""
        costs.record("bit_triples", n)
        return provider().serve(cls, n)

    @classmethod
    def from_dealer(cls, n: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        generator = _dealer_generator()
        a, b, c = (keyed.ring((n,), generator=generator) for _ in range(3))
        reply, words = _rotating_reply(cls, n), mac_words(3 * n)
        if reply is not None:
            macs = unpack_macs(reply[:words], 3 * n).reshape(n, 3)
            c = (c & ~1) + unpack_bits(reply[words:], n)
            a_mac, b_mac, c_mac = macs[:, 0], macs[:, 1], macs[:, 2]
        else:
            a_mac, b_mac, c_mac = (keyed.ring((n,), generator=generator) for _ in range(3))
        return [(a, a_mac), (b, b_mac), (c, c_mac)]


class DaBits(Material):
    """n daBits: a uniform bit r that no party knows, authenticated in both domains — a bit-domain element whose low
    bit is r (value shares from every party's generator, as :class:`BitShares`) and an element [[r]] of
    :mod:`.mac_material`'s Z_2^128 with value exactly r. Party 0's reply: its bit-domain MAC shares (packed) and
    its four Z_2^128 words per daBit, :data:`DA_BYTES` per daBit."""

    @staticmethod
    def reply_shape(n: int) -> tuple[int, ...]:
        return (mac_words(n) + WORDS * n,)

    @staticmethod
    def serve(dealer, n: int):
        values = _joint_words(dealer, n)
        dealer_view.note_draw(da_bits=values & 1)
        bit_mac = _bit_macs(dealer, values)
        return torch.cat([pack_macs(bit_mac), party0_share(dealer, RING.lift(values & 1), n).reshape(-1)])

    generate = staticmethod(no_dealer)

    @classmethod
    def fetch(cls, n: int) -> tuple[tuple[torch.Tensor, torch.Tensor], tuple[Wide, Wide]]:
        """((bit-domain value, MAC) shares, (Z_2^128 value, MAC) shares), each of n elements."""
        costs.record("da_bits", n)
        return provider().serve(cls, n)

    @classmethod
    def from_dealer(cls, n: int) -> tuple[tuple[torch.Tensor, torch.Tensor], tuple[Wide, Wide]]:
        generator = _dealer_generator()
        value = keyed.ring((n,), generator=generator)
        if rank() == 0:
            reply, words = cls.request(n), mac_words(n)
            wide = reply[words:].reshape(n, WORDS)
            return ((value, unpack_macs(reply[:words], n)),
                    (Wide(wide[:, 0], wide[:, 1]), Wide(wide[:, 2], wide[:, 3])))
        mac = keyed.ring((n,), generator=generator)
        return (value, mac), own_share(generator, n, None)


class EdaBits(Material):
    """n edaBits of ``bits`` bits: r = Σ_i 2^i·r_i for uniform bits r_i no party knows, each r_i a bit-domain
    element (value shares from every party's generator) and r itself one element [[r]] of Z_2^128 (value exactly
    r < 2^bits); with a half triple (:func:`_serve_halves`) for each r_i at the positions ``halves``. Party 0's
    reply: ``bits`` bit-domain MAC shares (packed, :data:`MAC_BYTES` each), four Z_2^128 words per edaBit and
    :data:`HALF_BYTES` per half triple."""

    @staticmethod
    def reply_shape(n: int, bits: int, halves: list | None = None) -> tuple[int, ...]:
        objects.check_columns(bits, halves)
        return (mac_words(n * bits) + WORDS * n + half_words(n * len(halves or [])),)

    @staticmethod
    def serve(dealer, n: int, bits: int, halves: list | None = None):
        values = torch.zeros(n, bits, dtype=torch.int64)
        for generator in dealer._get_generators():
            values = values + keyed.ring((n, bits), generator=generator)
        dealer_view.note_draw(eda_bits=values & 1)
        macs = _bit_macs(dealer, values)
        r = ((values & 1) << torch.arange(bits)).sum(1)
        reply = [pack_macs(macs), party0_share(dealer, RING.lift(r), n).reshape(-1)]
        if halves:
            reply.append(_serve_halves(dealer, values[:, list(halves)].reshape(-1)))
        return torch.cat(reply)

    generate = staticmethod(no_dealer)

    @classmethod
    def fetch(cls, n: int, bits: int, halves: list[int] | None = None
              ) -> tuple[tuple[torch.Tensor, torch.Tensor], tuple[Wide, Wide], Any]:
        """((bit-domain value, MAC) shares (n, bits), (Z_2^128 value, MAC) shares of r (n,), and with ``halves``
        the half triples of those bits ((b value, b MAC), (c value, c MAC)), each (n·len(halves),) row by row,
        else None)."""
        costs.record("eda_bits", n)
        return provider().serve(cls, n, bits, list(halves) if halves else None)

    @classmethod
    def from_dealer(cls, n: int, bits: int, halves: list | None = None
                    ) -> tuple[tuple[torch.Tensor, torch.Tensor], tuple[Wide, Wide], Any]:
        generator = _dealer_generator()
        value = keyed.ring((n, bits), generator=generator)
        h = n * len(halves or [])
        if rank() == 0:
            reply, words = cls.request(n, bits, halves), mac_words(n * bits)
            wide = reply[words:words + WORDS * n].reshape(n, WORDS)
            return ((value, unpack_macs(reply[:words], n * bits).reshape(n, bits)),
                    (Wide(wide[:, 0], wide[:, 1]), Wide(wide[:, 2], wide[:, 3])),
                    _own_halves(generator, h, reply[words + WORDS * n:]) if h else None)
        mac = keyed.ring((n, bits), generator=generator)
        share = own_share(generator, n, None)
        return (value, mac), share, _own_halves(generator, h, None) if h else None


class OneHots(Material):
    """n one-hot vectors of 2^w bit-domain elements (dg-auth/9's piece index) at an index R < 2^w no data party
    knows: the XOR of the low w bits of one word from every party's generator, as a dealt bit's. The value shares
    come from every party's generator, party 0's low bits set by the dealer. Party 0's reply: the MAC shares and
    those low bits, 2^w·:data:`ONE_HOT_BYTES` bytes per vector. The dealer notes R in its recorded view."""

    @staticmethod
    def reply_shape(n: int, w: int) -> tuple[int, ...]:
        return (mac_words(n << w) + -(-(n << w) // 64),)

    @staticmethod
    def serve(dealer, n: int, w: int):
        size, generators = 1 << w, dealer._get_generators()
        index = torch.zeros(n, dtype=torch.int64)
        for generator in generators:  # R: the XOR of every party's part
            index ^= keyed.ring((n,), generator=generator) & (size - 1)
        own = keyed.ring((n, size), generator=generators[0]) & ~1  # party 0's value shares but their low bits
        others = torch.zeros(n, size, dtype=torch.int64)
        for generator in generators[1:]:  # parties 1..m−1: their value shares, then their MAC shares
            others = others + keyed.ring((n, size), generator=generator)
        hot = (torch.arange(size).reshape(1, size) == index.reshape(n, 1)).to(torch.int64)
        low = (hot - others) & 1
        dealer_view.note_draw(one_hot_index=index)
        return torch.cat([pack_macs(_bit_macs(dealer, (own + low + others).reshape(-1))), pack_bits(low)])

    generate = staticmethod(no_dealer)

    @classmethod
    def fetch(cls, n: int, w: int) -> tuple[torch.Tensor, torch.Tensor]:
        """This party's (value, MAC) shares of the n one-hot vectors, (n, 2^w) each."""
        costs.record("one_hots", n)
        return provider().serve(cls, n, w)

    @classmethod
    def from_dealer(cls, n: int, w: int) -> tuple[torch.Tensor, torch.Tensor]:
        generator = _dealer_generator()
        size = 1 << w
        part = keyed.ring((n,), generator=generator) & (size - 1)
        value = keyed.ring((n, size), generator=generator)
        if rank() == 0:
            reply, words = cls.request(n, w), mac_words(n * size)
            mac = unpack_macs(reply[:words], n * size)
            value = (value & ~1) + unpack_bits(reply[words:], n * size).reshape(n, size)
        else:
            mac = keyed.ring((n * size,), generator=generator)
        if PARTS is not None:  # this party's part of R, as w bits (n, w), least significant first
            PARTS.append(((part.reshape(n, 1) >> torch.arange(w)) & 1).clone())
        return value, mac.reshape(n, size)


KINDS: tuple[type[Material], ...] = (AuthBits, BitKey, BitRandoms, BitShares, BitTriples, DaBits, EdaBits, MaskBits,
                                     OneHots)
ROTATING: tuple[type[Material], ...] = (BitShares, BitTriples, MaskBits)
"""The kinds whose reply goes to the member with the fewest reply elements so far (:class:`.dealer_link.Receivers`,
as the semi-honest kinds'), not always to party 0: the dealer's generators come rotated to the receiver's, so
each ``serve``'s "party 0" is the receiver; the bulk of the sampler's dealt bytes (issue 48)."""
