"""The correlated randomness mpcdp's own integer protocols consume, one class per kind.

Each kind's :meth:`~Material.serve` (run by the dealer, returning party 0's share) and :meth:`~Material.fetch`
(run by every data party, returning its shares) sit side by side, because they must draw from the generators
the dealer shares with each party in exactly the same order: parties 1..m−1 draw their shares from their
keyed generator, the dealer draws the same values for them, computes the correlated value and sends party 0
the difference. The request that reaches the dealer is named after the class (:attr:`Material.request_name`),
so there is no string to keep in step by hand.

Security (semi-honest, non-colluding dealer): each party's shares are pseudo-random under its 256-bit dealer
key (:mod:`.keyed`); the dealer knows every mask. Declared cost: one dealer request per call from party 0,
carrying party 0's share (8 bytes per element); parties 1..m−1 communicate nothing. The operation count of
each kind is recorded in :mod:`mpcdp.transport.costs` under the kind's ``kind``.
"""

from __future__ import annotations

import torch

from mpcdp.adapter import keyed
from mpcdp.adapter.compat import cfg, ttp_provider
from mpcdp.adapter.group import rank
from mpcdp.transport import costs


def share_bits(bits: int) -> int | None:
    """Width of XOR shares of a ``bits``-bit value (CrypTen draws at most 62-bit or full 64-bit words)."""
    return bits if bits <= 62 else None


def shift_word(x: torch.Tensor, s: int) -> torch.Tensor:
    """x shifted left by s (s >= 0) or arithmetically right by −s; commutes with XOR sharing."""
    return x << s if s >= 0 else x >> (-s)


def _dealer_generator():
    if cfg.mpc.provider != "TTP":
        raise RuntimeError("mpcdp's integer protocols need the `dealer` provider "
                           f"(configured: {cfg.mpc.provider}).")
    return ttp_provider.TTPClient.get().get_generator()


class Material:
    """One kind of dealer material. Subclasses define ``serve`` (dealer) and ``fetch`` (parties)."""

    @classmethod
    def request_name(cls) -> str:
        return f"mpcdp_{cls.__name__}"

    @classmethod
    def request(cls, *args):
        """Party 0 asks the dealer for its share."""
        return ttp_provider.TTPClient.get().ttp_request(cls.request_name(), None, *args)


class WordBits(Material):
    """n random k-bit words R: a XOR share of R, shape (n,), and additive shares of its k bits, (n, k)."""

    @staticmethod
    def serve(dealer, n: int, k: int):
        word = dealer._get_binary_PRSS((n,), bitlength=k)
        bits = (word.unsqueeze(1) >> torch.arange(k)) & 1
        return bits - dealer._get_additive_PRSS((n, k), remove_rank=True)

    @classmethod
    def fetch(cls, n: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        costs.record("b2a_bits", n * k)
        generator = _dealer_generator()
        word = keyed.kbit((n,), bitlength=k, generator=generator)
        bits = cls.request(n, k) if rank() == 0 else keyed.ring((n, k), generator=generator)
        return word, bits


class MaskedBits(Material):
    """n uniform ring elements r: an additive share of r and a XOR share of r mod 2^bits."""

    @staticmethod
    def serve(dealer, n: int, bits: int):
        r = dealer._get_additive_PRSS((n,))
        return (r & ((1 << bits) - 1)) ^ dealer._get_binary_PRSS((n,), bitlength=share_bits(bits), remove_rank=True)

    @classmethod
    def fetch(cls, n: int, bits: int, *, kind: str = "comparison") -> tuple[torch.Tensor, torch.Tensor]:
        """``kind``: the operation counted (a comparison or a conversion to binary)."""
        costs.record(kind, n)
        generator = _dealer_generator()
        r = keyed.ring((n,), generator=generator)
        low = cls.request(n, bits) if rank() == 0 else keyed.kbit((n,), bitlength=share_bits(bits), generator=generator)
        return r, low


class TruncPairs(Material):
    """n uniform ring elements r and floor(r / 2^shift) with r read as unsigned, additively shared."""

    @staticmethod
    def serve(dealer, n: int, shift: int):
        r = dealer._get_additive_PRSS((n,))
        high = (r >> shift) & ((1 << (64 - shift)) - 1)
        return high - dealer._get_additive_PRSS((n,), remove_rank=True)

    @classmethod
    def fetch(cls, n: int, shift: int) -> tuple[torch.Tensor, torch.Tensor]:
        costs.record("trunc", n)
        generator = _dealer_generator()
        r = keyed.ring((n,), generator=generator)
        high = cls.request(n, shift) if rank() == 0 else keyed.ring((n,), generator=generator)
        return r, high


class Products(Material):
    """Beaver products with reused masks: a uniform mask per variable, (n, variables), and mask_u·mask_v per
    pair (u, v), (n, pairs), additively shared."""

    @staticmethod
    def serve(dealer, n: int, variables: int, pairs: list[tuple[int, int]]):
        a = dealer._get_additive_PRSS((n, variables))
        c = torch.stack([a[:, u] * a[:, v] for u, v in pairs], 1)
        return c - dealer._get_additive_PRSS((n, len(pairs)), remove_rank=True)

    @classmethod
    def fetch(cls, n: int, variables: int, pairs: list[tuple[int, int]]) -> tuple[torch.Tensor, torch.Tensor]:
        squares = sum(1 for u, v in pairs if u == v)
        costs.record("square", n * squares, calls=int(squares > 0))
        costs.record("mul", n * (len(pairs) - squares), calls=int(len(pairs) > squares))
        generator = _dealer_generator()
        a = keyed.ring((n, variables), generator=generator)
        c = cls.request(n, variables, list(pairs)) if rank() == 0 else keyed.ring((n, len(pairs)), generator=generator)
        return a, c


class AndShifted(Material):
    """Shifted ANDs: a uniform 64-bit word mask per variable and, per pair (u, v, s), mask_u AND (mask_v
    shifted by s), XOR-shared."""

    @staticmethod
    def serve(dealer, n: int, variables: int, pairs: list[tuple[int, int, int]]):
        a = dealer._get_binary_PRSS((n, variables))
        c = torch.stack([a[:, u] & shift_word(a[:, v], s) for u, v, s in pairs], 1)
        return c ^ dealer._get_binary_PRSS((n, len(pairs)), remove_rank=True)

    @classmethod
    def fetch(cls, n: int, variables: int, pairs: list[tuple[int, int, int]]) -> tuple[torch.Tensor, torch.Tensor]:
        costs.record("and_words", n * len(pairs))
        generator = _dealer_generator()
        a = keyed.kbit((n, variables), generator=generator)
        c = cls.request(n, variables, list(pairs)) if rank() == 0 else \
            keyed.kbit((n, len(pairs)), generator=generator)
        return a, c


KINDS: tuple[type[Material], ...] = (WordBits, MaskedBits, TruncPairs, Products, AndShifted)
