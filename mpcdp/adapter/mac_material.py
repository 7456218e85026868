"""The dealer's authenticated material for security with abort (SPDZ2k-style, :mod:`mpcdp.mpc.authenticated`).

Every value lives in Z_2^128 (k = 64 value bits, s = 64 MAC bits, :mod:`.limbs`); a party's share of an
authenticated value x is four int64 words: its value share (lo, hi) and its MAC share (lo, hi), with Σ value
shares = x and Σ MAC shares = α·x mod 2^128. Three kinds, each a :class:`~.material.Material`:

* :class:`MacKey`: every data party's share α_i of the MAC key, a uniform 64-bit word drawn from the keyed
  generator it shares with the dealer; α = Σ α_i (in Z_2^128). The dealer keeps α for the run. Requested once
  per run, before any other authenticated material.
* :class:`AuthMasks`: for n elements and every data party o, an authenticated random mask [[r_o]], r_o uniform in
  Z_2^128, whose owner o knows r_o (drawn from o's own dealer generator; nobody else but the dealer does).
  Party o inputs x by broadcasting x − r_o mod 2^64.
* :class:`AuthRandoms`: n authenticated random values [[r]] that nobody knows (the 2^64·r masks of an opening).
* :class:`AuthTriples`: n authenticated Beaver triples [[a]], [[b]], [[c]], a and b uniform in Z_2^128 that nobody
  knows and c = a·b mod 2^128 (:func:`mpcdp.mpc.authenticated.multiply`).
* :class:`AuthSquares`: n authenticated square pairs [[a]], [[a²]] (:func:`mpcdp.mpc.authenticated.square`).

As with every kind: parties 1..m−1 draw their shares from their keyed dealer generator, the dealer draws the same
words, and party 0 receives the difference from the dealer (8 bytes per word). Security: the dealer is honest
and colludes with nobody (issue 48's model): it knows α and every mask. A party that asks for other material
than the others, or draws other words, breaks the correlation of its own shares only, and the next MAC check
fails. Without a dealer there is no authenticated material: ``security = "malicious"`` is refused with the
``honest-majority`` provider (:class:`mpcdp.config.MpcSettings`).

Declared cost (dealer, party 0's reply): :class:`AuthMasks` 4·8·m bytes per element, :class:`AuthRandoms` 4·8
bytes per element, :class:`AuthTriples` 3·4·8 = 96 bytes per triple, :class:`AuthSquares` 64 bytes per pair,
:class:`MacKey` nothing (an empty reply).
"""

from __future__ import annotations

import torch

from mpcdp.adapter import dealer_view, keyed
from mpcdp.adapter.group import provider, rank, world_size
from mpcdp.adapter.limbs import Ring, Wide
from mpcdp.adapter.material import Material, _dealer_generator
from mpcdp.errors import ConfigError, ProtocolViolation
from mpcdp.transport import costs

RING = Ring(64)
WORDS = 4  # value lo, value hi, MAC lo, MAC hi


def no_dealer(*_args):
    """Every authenticated kind's ``generate``: without a dealer there is no authenticated material."""
    raise ConfigError("authenticated material (security = 'malicious') is dealt by the dealer only: "
                      "`provider` must be 'dealer'")


def draw_wide(generator, n: int) -> Wide:
    """n uniform elements of Z_2^128 (low limb first) from a keyed generator."""
    return Wide(keyed.ring((n,), generator=generator), keyed.ring((n,), generator=generator))


def _dealer_key(dealer) -> torch.Tensor:
    key = getattr(dealer, "mac_key", None)
    if key is None:
        raise ProtocolViolation("party 0 asked the dealer for authenticated material before the MAC key", party=0)
    return key


def party0_share(dealer, values: Wide, n: int) -> torch.Tensor:
    """Party 0's (n, 4) share of authenticated ``values``: parties 1..m−1 draw theirs from their generators."""
    value, key = values, _dealer_key(dealer)
    mac = RING.mul(Wide(key[0].expand(n), key[1].expand(n)), values)
    for generator in dealer._get_generators()[1:]:
        value = RING.sub(value, draw_wide(generator, n))
        mac = RING.sub(mac, draw_wide(generator, n))
    return torch.stack([value.lo, value.hi, mac.lo, mac.hi], 1)


def own_shares(generator, n: int, k: int, request) -> list[tuple[Wide, Wide]]:
    """This party's (value, MAC) shares of k authenticated vectors of n values each, in the order the dealer
    served them (party 0's from the dealer's (n, 4k) reply)."""
    if rank() == 0:
        reply = request().reshape(n, k, WORDS)
        return [(Wide(reply[:, t, 0], reply[:, t, 1]), Wide(reply[:, t, 2], reply[:, t, 3])) for t in range(k)]
    return [(draw_wide(generator, n), draw_wide(generator, n)) for _ in range(k)]


def own_share(generator, n: int, request) -> tuple[Wide, Wide]:
    """This party's value and MAC shares of n authenticated values (party 0's from the dealer's reply)."""
    if rank() == 0:
        reply = request()
        return Wide(reply[:, 0], reply[:, 1]), Wide(reply[:, 2], reply[:, 3])
    return draw_wide(generator, n), draw_wide(generator, n)


class MacKey(Material):
    """This party's share α_i of the MAC key (a uniform 64-bit word; the dealer keeps α = Σ α_i)."""

    @staticmethod
    def reply_shape() -> tuple[int, ...]:
        return (0,)

    @staticmethod
    def serve(dealer):
        shares = [keyed.ring((1,), generator=g) for g in dealer._get_generators()]
        total = RING.sum0(Wide(torch.cat(shares), torch.zeros(len(shares), dtype=torch.int64)))
        dealer.mac_key = torch.stack([total.lo, total.hi])
        return torch.zeros(0, dtype=torch.int64)

    generate = staticmethod(no_dealer)

    @classmethod
    def fetch(cls) -> torch.Tensor:
        costs.record("mac_key", 1)
        return provider().serve(cls)

    @classmethod
    def from_dealer(cls) -> torch.Tensor:
        generator = _dealer_generator()
        if rank() == 0:
            cls.request()
        return keyed.ring((1,), generator=generator)[0]


class AuthMasks(Material):
    """For n elements and every party o: [[r_o]] (value and MAC shares), and r_o itself to party o only."""

    @staticmethod
    def reply_shape(n: int, parties: int) -> tuple[int, ...]:
        return (n, WORDS * parties)

    @staticmethod
    def serve(dealer, n: int, parties: int):
        return _serve_owner_masks(dealer, n, parties, bits=False)

    generate = staticmethod(no_dealer)

    @classmethod
    def fetch(cls, n: int) -> tuple[Wide, list[tuple[Wide, Wide]]]:
        """(r for this party's own inputs, [this party's (value, MAC) shares of [[r_o]] for every owner o])."""
        costs.record("auth_masks", n * world_size())
        return provider().serve(cls, n)

    @classmethod
    def from_dealer(cls, n: int) -> tuple[Wide, list[tuple[Wide, Wide]]]:
        return _owner_masks_from_dealer(cls, n)


class AuthBitMasks(Material):
    """For n elements and every party o: [[r_o]] whose value r_o is a uniform BIT (the low bit of a word from owner
    o's generator), and r_o to party o only: the masks of bits a party inputs
    (:func:`mpcdp.mpc.authenticated.input_bits`), which are then bits by construction. Party 0's reply as
    :class:`AuthMasks`': 32 bytes per element and owner."""

    reply_shape = AuthMasks.reply_shape

    @staticmethod
    def serve(dealer, n: int, parties: int):
        return _serve_owner_masks(dealer, n, parties, bits=True)

    generate = staticmethod(no_dealer)

    @classmethod
    def fetch(cls, n: int) -> tuple[torch.Tensor, list[tuple[Wide, Wide]]]:
        """(the bits r of this party's own inputs (n,) 0/1, [this party's (value, MAC) shares of [[r_o]] for every
        owner o])."""
        costs.record("auth_bit_masks", n * world_size())
        return provider().serve(cls, n)

    @classmethod
    def from_dealer(cls, n: int) -> tuple[torch.Tensor, list[tuple[Wide, Wide]]]:
        own, shares = _owner_masks_from_dealer(cls, n)  # the same draws and reply layout as AuthMasks'
        return own.lo & 1, shares


def _serve_owner_masks(dealer, n: int, parties: int, *, bits: bool) -> torch.Tensor:
    """Party 0's reply for :class:`AuthMasks` (``bits`` False) or :class:`AuthBitMasks` (True): r_o drawn from
    owner o's generator for every owner first (its low bit only with ``bits``), then party 0's value and MAC
    shares of each [[r_o]]."""
    generators = dealer._get_generators()
    if parties != len(generators):
        raise ProtocolViolation(f"party 0 asked for masks of {parties} owners; the run has {len(generators)}",
                                party=0)
    masks = [draw_wide(g, n) for g in generators]
    if bits:
        masks = [Wide(r.lo & 1, torch.zeros_like(r.hi)) for r in masks]
        dealer_view.note_draw(bit_masks=torch.stack([r.lo for r in masks]))  # the view audit's record (else no-op)
    return torch.cat([party0_share(dealer, r, n) for r in masks], 1)


def _owner_masks_from_dealer(material: type[Material], n: int) -> tuple[Wide, list[tuple[Wide, Wide]]]:
    """This party's side of :func:`_serve_owner_masks`: (its own r, drawn as the dealer draws it from this party's
    generator, [its (value, MAC) shares of [[r_o]] for every owner o]): party 0's from the dealer's reply, the
    others' from their generators."""
    generator = _dealer_generator()
    own = draw_wide(generator, n)
    m = world_size()
    if rank() == 0:
        reply = material.request(n, m).reshape(n, m, WORDS)
        return own, [(Wide(reply[:, o, 0], reply[:, o, 1]), Wide(reply[:, o, 2], reply[:, o, 3])) for o in range(m)]
    return own, [(draw_wide(generator, n), draw_wide(generator, n)) for _ in range(m)]


class AuthRandoms(Material):
    """n authenticated random values [[r]] that no party knows."""

    @staticmethod
    def reply_shape(n: int) -> tuple[int, ...]:
        return (n, WORDS)

    @staticmethod
    def serve(dealer, n: int):
        values = RING.zeros((n,))
        for generator in dealer._get_generators():  # r = Σ of every party's draw: party 0's included
            values = RING.add(values, draw_wide(generator, n))
        return party0_share(dealer, values, n)

    generate = staticmethod(no_dealer)

    @classmethod
    def fetch(cls, n: int) -> tuple[Wide, Wide]:
        costs.record("auth_randoms", n)
        return provider().serve(cls, n)

    @classmethod
    def from_dealer(cls, n: int) -> tuple[Wide, Wide]:
        generator = _dealer_generator()
        draw_wide(generator, n)  # party 0's part of r, which the dealer draws too (party 0's share comes next)
        return own_share(generator, n, lambda: cls.request(n))


class AuthTriples(Material):
    """n authenticated Beaver triples: this party's (value, MAC) shares of [[a]], [[b]] and [[c = a·b mod 2^128]],
    a and b uniform in Z_2^128 and known to nobody (each the sum of one draw from every party's dealer generator,
    as :class:`AuthRandoms`). Party 0's reply: 12 words (96 bytes) per triple."""

    @staticmethod
    def reply_shape(n: int) -> tuple[int, ...]:
        return (n, 3 * WORDS)

    @staticmethod
    def serve(dealer, n: int):
        generators = dealer._get_generators()
        a, b = RING.zeros((n,)), RING.zeros((n,))
        for generator in generators:  # every party's parts of a, then of b, from its own generator: party 0's too
            a = RING.add(a, draw_wide(generator, n))
            b = RING.add(b, draw_wide(generator, n))
        return torch.cat([party0_share(dealer, v, n) for v in (a, b, RING.mul(a, b))], 1)

    generate = staticmethod(no_dealer)

    @classmethod
    def fetch(cls, n: int) -> list[tuple[Wide, Wide]]:
        """[(value, MAC) shares of [[a]], of [[b]], of [[c]]], each of n elements."""
        costs.record("auth_triples", n)
        return provider().serve(cls, n)

    @classmethod
    def from_dealer(cls, n: int) -> list[tuple[Wide, Wide]]:
        generator = _dealer_generator()
        draw_wide(generator, n)  # this party's parts of a and b, which the dealer draws too
        draw_wide(generator, n)
        return own_shares(generator, n, 3, lambda: cls.request(n))


class AuthSquares(Material):
    """n authenticated square pairs: this party's (value, MAC) shares of [[a]] and [[a² mod 2^128]], a uniform in
    Z_2^128 and known to nobody (as :class:`AuthTriples`' a). Party 0's reply: 8 words (64 bytes) per pair."""

    @staticmethod
    def reply_shape(n: int) -> tuple[int, ...]:
        return (n, 2 * WORDS)

    @staticmethod
    def serve(dealer, n: int):
        a = RING.zeros((n,))
        for generator in dealer._get_generators():  # every party's part of a, from its own generator
            a = RING.add(a, draw_wide(generator, n))
        return torch.cat([party0_share(dealer, v, n) for v in (a, RING.mul(a, a))], 1)

    generate = staticmethod(no_dealer)

    @classmethod
    def fetch(cls, n: int) -> list[tuple[Wide, Wide]]:
        """[(value, MAC) shares of [[a]], of [[a²]]], each of n elements."""
        costs.record("auth_squares", n)
        return provider().serve(cls, n)

    @classmethod
    def from_dealer(cls, n: int) -> list[tuple[Wide, Wide]]:
        generator = _dealer_generator()
        draw_wide(generator, n)  # this party's part of a, which the dealer draws too
        return own_shares(generator, n, 2, lambda: cls.request(n))


KINDS: tuple[type[Material], ...] = (MacKey, AuthMasks, AuthBitMasks, AuthRandoms, AuthTriples, AuthSquares)
