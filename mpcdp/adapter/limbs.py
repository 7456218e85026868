"""Exact arithmetic in Z_2^(64+s), 1 <= s <= 64, on pairs of int64 limbs, vectorised in torch.

An element is :class:`Wide` ``(lo, hi)``: the value lo + 2^64·hi with both limbs read as unsigned 64-bit words
(stored as two's complement int64) and hi reduced mod 2^s. The low limb of a Z_2^(64+s) sharing is a Z_2^64
sharing of the same value, so mpcdp's Z_2^64 code can open it unchanged. Authenticated shares
(:mod:`mpcdp.mpc.authenticated`) live here with s = 64 (Z_2^128); the dealer deals them
(:mod:`.mac_material`), which is why this module sits in the adapter layer. Pure torch; no randomness, no
communication. Cost: an addition is 3 int64 operations per element, a product about 20.
"""

from __future__ import annotations

import dataclasses

import torch

_LOW32 = 0xFFFFFFFF
_SIGN = -(1 << 63)


def _ult(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a < b as unsigned 64-bit words (0/1 int64)."""
    return ((a ^ _SIGN) < (b ^ _SIGN)).to(torch.int64)


def _shr32(a: torch.Tensor) -> torch.Tensor:
    """The high 32 bits of unsigned a (a logical shift)."""
    return (a >> 32) & _LOW32


def mul_wide(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The full 128-bit product of unsigned 64-bit words a·b (broadcast), as (low word, high word). Each factor is
    split into its 32-bit halves in its own shape (a scalar or a row broadcast against a matrix is split once, not
    once per element); the partial products are fresh tensors of the broadcast shape, so the sums build up in
    place (fewer allocations, same values)."""
    if a.shape == b.shape:
        a0, a1, b0, b1 = a & _LOW32, _shr32(a), b & _LOW32, _shr32(b)
        p00, p10 = a0 * b0, a1 * b0  # each < 2^64 unsigned (int64 wraps)
        p01, p11 = a0.mul_(b1), a1.mul_(b1)
    else:
        a0, a1, b0, b1 = a & _LOW32, _shr32(a), b & _LOW32, _shr32(b)
        p00, p10, p01, p11 = a0 * b0, a1 * b0, a0 * b1, a1 * b1
    middle = _shr32(p00).add_(p01 & _LOW32).add_(p10 & _LOW32)  # < 3·2^32
    high = p11.add_(_shr32(p01)).add_(_shr32(p10)).add_(_shr32(middle))
    low = p00.bitwise_and_(_LOW32).bitwise_or_(middle << 32)
    return low, high


@dataclasses.dataclass(frozen=True)
class Wide:
    """Elements of Z_2^(64+s) as two int64 limbs of one shape (see the module docstring)."""

    lo: torch.Tensor
    hi: torch.Tensor

    @property
    def shape(self) -> torch.Size:
        return self.lo.shape

    def reshape(self, *shape: int) -> Wide:
        return Wide(self.lo.reshape(*shape), self.hi.reshape(*shape))

    def __getitem__(self, index) -> Wide:
        return Wide(self.lo[index], self.hi[index])

    @staticmethod
    def stack(parts: list[Wide]) -> Wide:
        """Elements of one count, each part flattened, as the rows of a matrix."""
        return Wide(torch.stack([w.lo.reshape(-1) for w in parts]), torch.stack([w.hi.reshape(-1) for w in parts]))

    @staticmethod
    def pair(first: Wide, second: Wide) -> Wide:
        """Two elements of one shape S as one of shape (2, *S) (e.g. an authenticated value's value and MAC
        shares, so that one operation serves both; ``[0]`` and ``[1]`` give them back as views)."""
        return Wide(torch.stack([first.lo, second.lo]), torch.stack([first.hi, second.hi]))


@dataclasses.dataclass(frozen=True)
class Ring:
    """Z_2^(64+s): values in Z_2^64 (k = 64) with s more bits for the MACs."""

    s: int = 64

    def __post_init__(self) -> None:
        if not (isinstance(self.s, int) and 1 <= self.s <= 64):
            raise ValueError(f"`s` must be an integer in [1, 64]. Found {self.s!r}.")

    @property
    def modulus(self) -> int:
        return 1 << (64 + self.s)

    def reduce(self, lo: torch.Tensor, hi: torch.Tensor) -> Wide:
        return Wide(lo, hi if self.s == 64 else hi & ((1 << self.s) - 1))

    def lift(self, word: torch.Tensor) -> Wide:
        """A Z_2^64 word (unsigned) as an element with upper limb 0."""
        return Wide(word, torch.zeros_like(word))

    def zeros(self, shape) -> Wide:
        return Wide(torch.zeros(shape, dtype=torch.int64), torch.zeros(shape, dtype=torch.int64))

    def add(self, a: Wide, b: Wide) -> Wide:
        lo = a.lo + b.lo
        return self.reduce(lo, a.hi + b.hi + _ult(lo, a.lo))

    def neg(self, a: Wide) -> Wide:
        lo = -a.lo  # two's complement of (lo, hi): borrow into hi unless lo == 0
        return self.reduce(lo, -a.hi - (a.lo != 0).to(torch.int64))

    def sub(self, a: Wide, b: Wide) -> Wide:
        return self.add(a, self.neg(b))

    def mul(self, a: Wide, b: Wide) -> Wide:
        lo, hi = mul_wide(a.lo, b.lo)
        return self.reduce(lo, hi + a.lo * b.hi + a.hi * b.lo)

    def scale(self, word: torch.Tensor, a: Wide) -> Wide:
        """word·a for unsigned 64-bit words ``word`` (broadcast against ``a``)."""
        lo, hi = mul_wide(word, a.lo)
        return self.reduce(lo, hi + word * a.hi)

    def shift_up(self, a: Wide) -> Wide:
        """2^64·a: the low limb moves up, the new low limb is 0."""
        return self.reduce(torch.zeros_like(a.lo), a.lo)

    def total(self, a: Wide) -> int:
        """Σ a over every element, as a Python int in [0, 2^(64+s)) (exact; for checks of a few values)."""
        flat_lo, flat_hi = a.lo.reshape(-1), a.hi.reshape(-1)
        low = int((flat_lo & _LOW32).sum().item()) + (int(_shr32(flat_lo).sum().item()) << 32)
        high = (int(_shr32(flat_hi).sum().item()) << 32) + int((flat_hi & _LOW32).sum().item())
        return (low + (high << 64)) % self.modulus

    def sum0(self, a: Wide) -> Wide:
        """The sum along dimension 0 (exact, vectorised over the other dimensions)."""
        lo_low, lo_high = (a.lo & _LOW32).sum(0), _shr32(a.lo).sum(0)  # each < rows·2^32
        hi = a.hi.sum(0)
        partial = lo_low + (lo_high << 32)
        carry = _shr32(lo_high) + _shr32(_shr32(lo_low) + (lo_high & _LOW32))
        return self.reduce(partial, hi + carry)

    def from_int(self, value: int, shape=()) -> Wide:
        value %= self.modulus
        lo, hi = _signed(value & ((1 << 64) - 1)), _signed(value >> 64)
        return Wide(torch.full(shape, lo, dtype=torch.int64), torch.full(shape, hi, dtype=torch.int64))

    def to_ints(self, a: Wide) -> list[int]:
        """Every element as a Python int in [0, 2^(64+s)) (for tests and checks of a few values)."""
        return [(lo % (1 << 64)) + ((hi % (1 << 64)) << 64)
                for lo, hi in zip(a.lo.reshape(-1).tolist(), a.hi.reshape(-1).tolist())]


def _signed(word: int) -> int:
    return word - (1 << 64) if word >= 1 << 63 else word
