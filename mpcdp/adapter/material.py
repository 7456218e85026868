"""The correlated randomness mpcdp's own integer protocols consume, one class per kind, from any provider.

Each kind's :meth:`~Material.fetch` (run by every data party, returning its shares) counts the operation and
asks the run's provider (:func:`.group.provider`, a record of :mod:`mpcdp.providers`) to serve it; it never
looks at which provider that is. Beside it sit what the built-in providers serve it from: ``serve`` (run by
the dealer, returning the receiver's share) with ``from_dealer`` (the parties' side of it, under a provider with
a dealer), and ``generate`` (the same material made by the data parties themselves under ``honest-majority``,
:mod:`.replicated`). ``serve`` and ``from_dealer`` must draw from the generators the dealer shares with each
party in exactly the same order: every member but the reply's receiver (rotating, :data:`ROTATING`) draws its
share from its keyed generator, the dealer draws the same values for them and sends the receiver the rest. The
request that reaches the dealer is named after the class (:attr:`Material.request_name`), so there is no string
to keep in step by hand.

Security (semi-honest): with the dealer, each party's shares are pseudo-random under its 256-bit dealer key
(:mod:`.keyed`), and the dealer knows every mask; without it, see :mod:`.replicated` (no coalition holding at
most one of parties 0, 1, 2 knows a mask). Declared cost with the dealer: one request per call from party 0,
its reply the receiver's share (8 bytes per element); the others receive nothing. Without it: nothing for
masks, products and ANDs; one round of one ring element per converted bit from party 0 to party 1 for
``WordBits`` (k per word), ``MaskedBits`` (``bits`` per element) and ``TruncPairs`` (64 per element); one
round of one word per word of one-hots from party 1 to party 0 for ``OneHotPairs``; two rounds for
``ChunkOneHots`` (per element with q chunks: ⌈q/4⌉ one-hot words from party 1 to party 0 and one word from
party 2 to party 1, then q ring elements from party 0 to party 1). The operation count of each kind is recorded
in :mod:`mpcdp.transport.costs` under the kind's ``kind``, and every request, its bytes and rounds under the
class's name.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import torch

from mpcdp.adapter import chunk_masks, dealer_view, factor_tables, keyed, replicated
from mpcdp.adapter.bit_words import one_hot_mask, one_hot_reply_words, pack_one_hots, packs_one_hots, unpack_one_hots
from mpcdp.adapter.lanes import (WORD_BITS_GROUP, check_masks, check_widths, check_windows,
                                 pack_bit_shares, packed_one_hots, PackedBitShares)
from mpcdp.adapter.compat import cfg, ttp_provider
from mpcdp.adapter.group import provider, rank
from mpcdp.transport import costs


def share_bits(bits: int) -> int | None:
    """Width of XOR shares of a ``bits``-bit value (CrypTen draws at most 62-bit or full 64-bit words)."""
    return bits if bits <= 62 else None


def shift_word(x: torch.Tensor, s: int) -> torch.Tensor:
    """x shifted left by s (s >= 0) or arithmetically right by −s; commutes with XOR sharing."""
    return x << s if s >= 0 else x >> (-s)


def _dealer_generator():
    client = ttp_provider.TTPClient.get()  # a DealerClient: its keyed generator (CrypTen's cfg costs 0.3 ms a read)
    if getattr(client, "generator", None) is None and cfg.mpc.provider != "TTP":
        raise RuntimeError(f"mpcdp's integer protocols need the `dealer` provider (configured: {cfg.mpc.provider}).")
    return client.get_generator()


class Material:
    """One kind of correlated randomness. Subclasses define ``fetch`` (parties: count, then ask the provider),
    ``serve`` (dealer), ``from_dealer`` (parties, with a dealer) and ``generate`` (parties, without a dealer);
    ``generator_rounds``: rounds ``generate`` communicates."""

    generator_rounds = 0

    @classmethod
    def request_name(cls) -> str:
        return f"mpcdp_{cls.__name__}"

    serve: Callable[..., torch.Tensor]  # every kind's: (dealer, *request arguments) -> the receiver's share

    @staticmethod
    def reply_shape(*args: Any) -> tuple[int, ...]:
        """The shape of party 0's share that ``serve`` returns for a request's arguments (checked before the reply
        is received, :mod:`.dealer_link`): one row per element (the first argument, n) unless the kind says
        otherwise."""
        return (args[0],)

    @classmethod
    def request(cls, *args):
        """Party 0 asks the dealer for its share (a kind whose reply is always party 0's)."""
        return ttp_provider.TTPClient.get().ttp_request(cls.request_name(), None, *args)

    @classmethod
    def dealt(cls, draw: Callable[[], torch.Tensor], *args, reply: Callable[[torch.Tensor], Any] | None = None):
        """Every member's share of request ``args`` (:meth:`.dealer_link.DealerClient.dealt`)."""
        return ttp_provider.TTPClient.get().dealt(cls.request_name(), draw, *args, reply=reply)


class WordBits(Material):
    """n random k-bit words R: a XOR share of R, shape (n,), and additive shares of its k bits, (n, k).

    ``widths`` (optional, k entries in [1, 64]): bit i's additive shares are needed only mod 2^widths[i] (it is
    used times 2^(64 − widths[i]) or in a value read mod 2^widths[i]), so the dealer sends party 0 its share of
    bit i reduced to widths[i] bits, the fields packed one after another across :data:`WORD_BITS_GROUP`
    elements, ⌈g·Σ widths / 64⌉ words per g elements (:func:`pack_bit_shares`); party 0's shares of bit i are
    then right mod 2^widths[i] only, and come as the reply's words (:class:`PackedBitShares`), unpacked where used."""

    @staticmethod
    def reply_shape(n: int, k: int, widths: list | None = None) -> tuple[int, ...]:
        if widths is None:
            return (n, k)
        return (-(-n // WORD_BITS_GROUP), -(-WORD_BITS_GROUP * sum(check_widths(widths, k)) // 64))

    @staticmethod
    def serve(dealer, n: int, k: int, widths: list | None = None):
        word = dealer._get_binary_PRSS((n,), bitlength=k)
        bits = (word.unsqueeze(1) >> torch.arange(k)) & 1
        share = bits - dealer._get_additive_PRSS((n, k), remove_rank=True)
        return share if widths is None else pack_bit_shares(share, check_widths(widths, k))

    generator_rounds = 1

    @staticmethod
    def generate(source: replicated.ReplicatedSource, n: int, k: int, widths: list | None = None):
        parts = source.random((n,), bits=k)
        word = source.xor(source.own(parts), (n,), bits=k)
        return word, source.additive(source.arithmetic_bits(parts, k), (n, k))

    @classmethod
    def fetch(cls, n: int, k: int, widths: list | None = None) -> tuple[torch.Tensor, torch.Tensor | PackedBitShares]:
        costs.record("b2a_bits", n * k)
        if widths is None:
            return provider().serve(cls, n, k)
        return provider().serve(cls, n, k, [int(w) for w in widths])

    @classmethod
    def from_dealer(cls, n: int, k: int, widths: list | None = None) -> tuple[torch.Tensor, torch.Tensor | PackedBitShares]:
        generator = _dealer_generator()
        word = keyed.kbit((n,), bitlength=k, generator=generator)
        if widths is None:
            return word, cls.dealt(lambda: keyed.ring((n, k), generator=generator), n, k)
        return word, cls.dealt(lambda: keyed.ring((n, k), generator=generator), n, k, list(widths),
                               reply=lambda words: PackedBitShares(words, n, check_widths(widths, k)))


class MaskedBits(Material):
    """n uniform ring elements r: an additive share of r and a XOR share of r mod 2^bits."""

    @staticmethod
    def serve(dealer, n: int, bits: int):
        r = dealer._get_additive_PRSS((n,))
        return (r & ((1 << bits) - 1)) ^ dealer._get_binary_PRSS((n,), bitlength=share_bits(bits), remove_rank=True)

    generator_rounds = 1

    @staticmethod
    def generate(source: replicated.ReplicatedSource, n: int, bits: int):
        low = min(bits, 64)  # r = low bits (converted bit by bit) + 2^bits · a uniform ring element
        parts = source.random((n,), bits=low)
        high = source.random((n,)) if low < 64 else {}
        arithmetic = source.arithmetic_bits(parts, low)
        value = None
        if arithmetic is not None:
            value = (arithmetic * (1 << torch.arange(low))).sum(1)
            if high:
                own_high = source.own(high)
                assert own_high is not None  # (arithmetic is not None: a generator)
                value = value + (own_high << low)
        width = share_bits(bits) or 64
        return source.additive(value, (n,)), source.xor(source.own(parts), (n,), bits=width)

    @classmethod
    def fetch(cls, n: int, bits: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Counted as n comparisons (their one user, :func:`mpcdp.mpc.ring.ge_zero`)."""
        costs.record("comparison", n)
        return provider().serve(cls, n, bits)

    @classmethod
    def from_dealer(cls, n: int, bits: int) -> tuple[torch.Tensor, torch.Tensor]:
        generator = _dealer_generator()
        r = keyed.ring((n,), generator=generator)
        return r, cls.dealt(lambda: keyed.kbit((n,), bitlength=share_bits(bits), generator=generator), n, bits)


class TruncPairs(Material):
    """n uniform ring elements r and floor(r / 2^shift) with r read as unsigned, additively shared."""

    @staticmethod
    def serve(dealer, n: int, shift: int):
        r = dealer._get_additive_PRSS((n,))
        high = (r >> shift) & ((1 << (64 - shift)) - 1)
        return high - dealer._get_additive_PRSS((n,), remove_rank=True)

    generator_rounds = 1

    @staticmethod
    def generate(source: replicated.ReplicatedSource, n: int, shift: int):
        parts = source.random((n,))
        bits = source.arithmetic_bits(parts, 64)  # r's 64 bits: floor(r / 2^shift) is their upper part
        r = high = None
        if bits is not None:
            r = (bits * (1 << torch.arange(64))).sum(1)
            high = (bits[:, shift:] * (1 << torch.arange(64 - shift))).sum(1)
        return source.additive(r, (n,)), source.additive(high, (n,))

    @classmethod
    def fetch(cls, n: int, shift: int) -> tuple[torch.Tensor, torch.Tensor]:
        costs.record("trunc", n)
        return provider().serve(cls, n, shift)

    @classmethod
    def from_dealer(cls, n: int, shift: int) -> tuple[torch.Tensor, torch.Tensor]:
        generator = _dealer_generator()
        r = keyed.ring((n,), generator=generator)
        return r, cls.dealt(lambda: keyed.ring((n,), generator=generator), n, shift)


class Products(Material):
    """Beaver products with reused masks: a uniform mask per variable, (n, variables), and mask_u·mask_v per
    pair (u, v), (n, pairs), additively shared."""

    @staticmethod
    def reply_shape(n: int, variables: int, pairs: list) -> tuple[int, ...]:
        return (n, len(pairs))

    @staticmethod
    def serve(dealer, n: int, variables: int, pairs: list[tuple[int, int]]):
        a = dealer._get_additive_PRSS((n, variables))
        c = torch.stack([a[:, u] * a[:, v] for u, v in pairs], 1)
        return c - dealer._get_additive_PRSS((n, len(pairs)), remove_rank=True)

    @staticmethod
    def generate(source: replicated.ReplicatedSource, n: int, variables: int, pairs: list[tuple[int, int]]):
        a = source.random((n, variables))
        mine, nxt = source.own(a), source.next_part(a)
        c = None
        if mine is not None and nxt is not None:  # this generator's three of the nine cross terms of every product
            c = torch.stack([mine[:, u] * mine[:, v] + mine[:, u] * nxt[:, v] + nxt[:, u] * mine[:, v]
                             for u, v in pairs], 1)
        return source.additive(mine, (n, variables)), source.additive(c, (n, len(pairs)))

    @classmethod
    def fetch(cls, n: int, variables: int, pairs: list[tuple[int, int]]) -> tuple[torch.Tensor, torch.Tensor]:
        squares = sum(1 for u, v in pairs if u == v)
        costs.record("square", n * squares, calls=int(squares > 0))
        costs.record("mul", n * (len(pairs) - squares), calls=int(len(pairs) > squares))
        return provider().serve(cls, n, variables, pairs)

    @classmethod
    def from_dealer(cls, n: int, variables: int, pairs: list[tuple[int, int]]) -> tuple[torch.Tensor, torch.Tensor]:
        generator = _dealer_generator()
        a = keyed.ring((n, variables), generator=generator)
        return a, cls.dealt(lambda: keyed.ring((n, len(pairs)), generator=generator), n, variables, list(pairs))


class AndShifted(Material):
    """Shifted ANDs: a uniform 64-bit word mask per variable and, per pair (u, v, s), mask_u AND (mask_v
    shifted by s), XOR-shared, shape (n, pairs).

    ``masks`` (optional, one 64-bit pattern per pair, as signed int64): the caller needs only the XOR over the
    pairs of (x_u AND shift(x_v, s) AND mask), so one column is dealt, the XOR over the pairs of
    (mask_u AND shift(mask_v, s) AND mask), shape (n, 1): one word per element instead of one per pair
    (:meth:`mpcdp.mpc.ring.BeaverShiftedAnds.merged_product`)."""

    @staticmethod
    def reply_shape(n: int, variables: int, pairs: list, masks: list | None = None) -> tuple[int, ...]:
        return (n, len(pairs) if masks is None else 1)

    @staticmethod
    def _products(mine: torch.Tensor, nxt: torch.Tensor | None, pairs: list, masks: list | None) -> torch.Tensor:
        """Per pair mine_u AND shift(mine_v, s) (with ``nxt``: this generator's three of the nine cross terms),
        (n, pairs); with ``masks`` their masked XOR, (n, 1)."""
        terms = [mine[:, u] & shift_word(mine[:, v], s) if nxt is None else (mine[:, u] & shift_word(mine[:, v], s))
                 ^ (mine[:, u] & shift_word(nxt[:, v], s)) ^ (nxt[:, u] & shift_word(mine[:, v], s)) for u, v, s in pairs]
        if masks is None:
            return torch.stack(terms, 1)
        merged = torch.zeros(mine.shape[0], dtype=torch.int64)
        for term, mask in zip(terms, check_masks(masks, len(pairs)), strict=True):
            merged ^= term & mask
        return merged.unsqueeze(1)

    @staticmethod
    def serve(dealer, n: int, variables: int, pairs: list[tuple[int, int, int]], masks: list | None = None):
        a = dealer._get_binary_PRSS((n, variables))
        c = AndShifted._products(a, None, pairs, masks)
        return c ^ dealer._get_binary_PRSS(tuple(c.shape), remove_rank=True)

    @staticmethod
    def generate(source: replicated.ReplicatedSource, n: int, variables: int, pairs: list[tuple[int, int, int]],
                 masks: list | None = None):
        a = source.random((n, variables))
        mine, nxt = source.own(a), source.next_part(a)
        c = None
        if mine is not None and nxt is not None:
            c = AndShifted._products(mine, nxt, pairs, masks)
        return source.xor(mine, (n, variables)), source.xor(c, AndShifted.reply_shape(n, variables, pairs, masks))

    @classmethod
    def fetch(cls, n: int, variables: int, pairs: list[tuple[int, int, int]], masks: list[int] | None = None
              ) -> tuple[torch.Tensor, torch.Tensor]:
        costs.record("and_words", n * cls.reply_shape(n, variables, pairs, masks)[1])
        return provider().serve(cls, n, variables, pairs, *([] if masks is None else [[int(m) for m in masks]]))

    @classmethod
    def from_dealer(cls, n: int, variables: int, pairs: list[tuple[int, int, int]], masks: list | None = None
                    ) -> tuple[torch.Tensor, torch.Tensor]:
        generator = _dealer_generator()
        a = keyed.kbit((n, variables), generator=generator)
        return a, cls.dealt(lambda: keyed.kbit(cls.reply_shape(n, variables, pairs, masks), generator=generator), n,
                            variables, list(pairs), *([] if masks is None else [list(masks)]))


class OneHotPairs(Material):
    """Rotation pairs for one-hot decoding: n random words R, XOR-shared, shape (n,), and for each window
    (low, width) of R the one-hot of r = (R >> low) mod 2^width in a ``lane``-bit lane, 64/lane lanes to a
    word (``lane`` 64: one word per window; 16: four windows of width <= 4 to a word), XOR-shared, shape
    (n, ⌈windows/(64/lane)⌉).

    Used by :func:`mpcdp.mpc.binary.rotated_one_hots`: opening v ⊕ R and moving each lane of R's one-hots by
    it gives the one-hots of v. With a dealer, where some lane is wider than its window's 2^width positions (or
    empty), the reply keeps only those positions, packed (:func:`~.bit_words.pack_one_hots`; the other members'
    shares 0 elsewhere), :func:`~.bit_words.one_hot_reply_words` words counted as ``one_hot_words``. Without a
    dealer the generators make it in one round (one word per word of
    one-hots from generator 1 to generator 0, masked by a component generator 0 lacks): with
    R = c₀ ⊕ c₁ ⊕ c₂, generator 1 computes u = onehot(c₂) moved by c₁ and sends u ⊕ s (s from component 2,
    which generators 1 and 2 hold); generator 0 moves what it receives by c₀, generator 2 moves s by c₀, and
    the two results XOR to onehot(R).
    """

    @staticmethod
    def reply_shape(n: int, windows: list, lane: int = 64) -> tuple[int, ...]:
        if packs_one_hots(windows, lane):
            return (one_hot_reply_words(n, windows, lane),)
        return (n, -(-len(windows) // (64 // lane)))

    @staticmethod
    def serve(dealer, n: int, windows: list, lane: int = 64):
        windows = check_windows(windows, lane)
        r = dealer._get_binary_PRSS((n,))
        dealer_view.note_draw(r=r)
        hots = packed_one_hots(r, windows, lane)
        share = hots ^ dealer._get_binary_PRSS(tuple(hots.shape), remove_rank=True)
        return pack_one_hots(share, windows, lane) if packs_one_hots(windows, lane) else share

    generator_rounds = 1

    generate = staticmethod(chunk_masks.generated_pairs)

    @classmethod
    def fetch(cls, n: int, windows: list[tuple[int, int]], lane: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
        costs.record("one_hot_words", one_hot_reply_words(n, windows, lane))
        return provider().serve(cls, n, [list(window) for window in windows], lane)

    @classmethod
    def from_dealer(cls, n: int, windows: list, lane: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
        generator = _dealer_generator()
        r, shape = keyed.kbit((n,), generator=generator), (n, -(-len(windows) // (64 // lane)))
        if not packs_one_hots(windows, lane):
            return r, cls.dealt(lambda: keyed.kbit(shape, generator=generator), n, windows, lane)
        mask = one_hot_mask(windows, lane)
        return r, cls.dealt(lambda: keyed.kbit(shape, generator=generator).bitwise_and_(mask), n, windows, lane,
                            reply=lambda words: unpack_one_hots(words, n, windows, lane))


class ChunkOneHots(Material):
    """Masks for converting a shared integer to XOR shares by rotated one-hots (used by
    :func:`mpcdp.mpc.binary.to_binary_by_chunks`): n uniform ring elements r, additively shared, shape (n,), and
    the one-hot of each 4-bit chunk of r that covers its low ``bits`` bits in a 16-bit lane, four chunks to a word
    (chunk i: word i // 4, lane i % 4), XOR-shared, shape (n, ⌈⌈bits/4⌉/4⌉). Made as :mod:`.chunk_masks` says."""

    @staticmethod
    def reply_shape(n: int, bits: int) -> tuple[int, ...]:
        return (n, chunk_masks.chunk_words(chunk_masks.check_chunk_bits(bits)))

    serve = staticmethod(chunk_masks.served)
    generator_rounds = 2
    generate = staticmethod(chunk_masks.generated)

    @classmethod
    def fetch(cls, n: int, bits: int) -> tuple[torch.Tensor, torch.Tensor]:
        costs.record("one_hot_words", n * cls.reply_shape(n, bits)[1])
        return provider().serve(cls, n, bits)

    @classmethod
    def from_dealer(cls, n: int, bits: int) -> tuple[torch.Tensor, torch.Tensor]:
        generator = _dealer_generator()
        r = keyed.ring((n,), generator=generator)
        shape = cls.reply_shape(n, bits)
        return r, cls.dealt(lambda: keyed.kbit(shape, generator=generator), n, bits)


class FactorTables(Material):
    """Bernoulli factors looked up in dealt tables (:mod:`.factor_tables`): n uniform words R, XOR-shared,
    shape (n,), and per element the tables of the factors of each window of a word masked by R and one word
    per bit factor, XOR-shared, shape (n, :func:`~.factor_tables.reply_words`).

    **Only the view audit's planted leak asks for it** (:func:`mpcdp.mpc.bernoulli.planted_dealer_tables`):
    the tables' maker knows every factor's uniform word, so the dealer would hold information correlated with
    the released noise (it knows which window values pass, and a released candidate is one that passed). The
    sampler evaluates the factors with :func:`mpcdp.mpc.bernoulli.bernoulli_bits` on words no single role
    knows. Only a provider with a dealer serves it.
    """

    @staticmethod
    def reply_shape(n: int, word_bits: int, windows: list, factors: list, bit_factors: list) -> tuple[int, ...]:
        spec = factor_tables.check_spec(word_bits, windows, factors, bit_factors)
        return (n, factor_tables.reply_words(spec[1], spec[3]))

    serve = staticmethod(factor_tables.served)

    @staticmethod
    def generate(source: replicated.ReplicatedSource, *args):
        from mpcdp.errors import ConfigError

        raise ConfigError("factor tables need a dealer (their maker knows the factors' uniform words and must "
                          "see no opened value); this provider has none")

    @classmethod
    def fetch(cls, n: int, word_bits: int, windows: Sequence[Sequence[int]], factors: list, bit_factors: list
              ) -> tuple[torch.Tensor, torch.Tensor]:
        windows = [list(w) for w in windows]
        factors = [[f[0], f[1], f[2], [int(t) for t in f[3]]] for f in factors]
        bit_factors = [list(b) for b in bit_factors]
        costs.record("table_words", n * cls.reply_shape(n, word_bits, windows, factors, bit_factors)[1])
        return provider().serve(cls, n, word_bits, windows, factors, bit_factors)

    @classmethod
    def from_dealer(cls, n: int, word_bits: int, windows: list, factors: list, bit_factors: list
                    ) -> tuple[torch.Tensor, torch.Tensor]:
        generator = _dealer_generator()
        r = keyed.kbit((n,), generator=generator)
        shape = cls.reply_shape(n, word_bits, windows, factors, bit_factors)
        return r, cls.dealt(lambda: keyed.kbit(shape, generator=generator), n, word_bits, windows, factors, bit_factors)


def deals_factor_tables() -> bool:
    """Whether the run's provider serves :class:`FactorTables`: it has a dealer."""
    return bool(provider().has_dealer)


def check_members(members, parties: int) -> list[int]:
    """``members``: ranks in increasing order, starting with party 0, within the run's ``parties``."""
    from mpcdp.errors import ProtocolViolation

    ok = isinstance(members, (list, tuple)) and 2 <= len(members) <= parties and all(
        isinstance(r, int) and not isinstance(r, bool) for r in members)
    if not ok or members[0] != 0 or list(members) != sorted(set(members)) or members[-1] >= parties:
        raise ProtocolViolation(f"a committee must list 2..{parties} ranks in increasing order from party 0. "
                                f"Found {str(members)[:60]}", party=0)
    return [int(r) for r in members]


class CommitteeScope(Material):
    """Not material: party 0 tells the dealer which parties the next requests are for (a noise committee, or
    every party again). The dealer then draws shares for those parties' keyed generators only, and the other
    parties draw nothing, so their generators stay in step; the replies rotate among those parties
    (:class:`.dealer_link.Receivers`). Reply (to party 0): an empty tensor."""

    @staticmethod
    def reply_shape(members: list) -> tuple[int, ...]:
        return (0,)

    @staticmethod
    def serve(dealer, members: list):
        every = getattr(dealer, "every_generator", None)
        if every is None:
            every = dealer.every_generator = list(dealer.generators)
        dealer.receivers.members = check_members(members, len(every))
        dealer.generators = [every[r] for r in dealer.receivers.members]
        return torch.zeros(0, dtype=torch.int64)

    @staticmethod
    def generate(source: replicated.ReplicatedSource, members: list):
        """Without a dealer the generators make the material: a committee is the three of them, and inside
        it their shares go to no other party (:attr:`~.replicated.ReplicatedSource.generators_only`)."""
        members = list(members)
        every = list(range(source.mesh.parties))
        if members not in (every, list(range(replicated.GENERATORS))):
            from mpcdp.errors import ConfigError

            raise ConfigError(f"without a dealer the noise committee is the three generators, parties 0, 1 and 2. "
                              f"Found {members}.")
        source.generators_only = members != every

    @classmethod
    def fetch(cls, members: list[int]) -> None:
        """Every member: scope the run's material to ``members`` (all ranks: every party again)."""
        provider().serve(cls, list(members))

    @classmethod
    def from_dealer(cls, members: list[int]) -> None:
        ttp_provider.TTPClient.get().receivers.members = list(members)
        if rank() == 0:
            cls.request(list(members))


ROTATING: tuple[type[Material], ...] = (WordBits, MaskedBits, TruncPairs, Products, AndShifted, OneHotPairs,
                                         ChunkOneHots, FactorTables)  # their replies rotate: Material.dealt
KINDS: tuple[type[Material], ...] = ROTATING + (CommitteeScope,)
