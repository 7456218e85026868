"""Bit circuits on authenticated values, written once for two backends: the parties' authenticated shares
(:class:`AuthArith`) and plaintext integers (:class:`PlainArith`, the simulation the tests compare with the
plaintext rule). Used by the authenticated discrete Gaussian sampler (:mod:`mpcdp.noise.auth_gaussian`).

A bit is an authenticated value of Z_2^k (k = 64) equal to 0 or 1 (:mod:`mpcdp.mpc.authenticated`, SPDZ2k
MACs over Z_2^128). NOT, XOR with a public bit and every linear combination with public coefficients are
local; AND is a product, XOR of two secret bits a + b − 2ab. A product is one authenticated Beaver
multiplication (:func:`mpcdp.mpc.authenticated.multiply`): ε and δ opened in full, pending until the next MAC
check. The circuits batch every product of a round into one call (:func:`mul_batch`): one opening and one
dealer request per round. The backends' values keep their leading dimension (candidates); products and the
public coefficients broadcast against it. A factor given as :class:`Dealt` (bits W = R ⊕ S: R dealt with a half
triple per bit, S public) makes a half product (:meth:`BitArith.mul_dealt`,
:func:`~mpcdp.mpc.bit_authenticated.multiply_dealt`: one opened bit, no triple of its own), in the same round.

Security model: as :mod:`mpcdp.mpc.authenticated` (security with abort against any set of deviating data
parties; the dealer honest and colluding with nobody). Nothing here opens a result except
:meth:`AuthArith.open`, whose value is pending until the caller's :func:`~mpcdp.mpc.authenticated.mac_check`.

Cost (products; one round each level): :func:`one_hot` of w bits 2^w − 2 products in w − 1 rounds;
:func:`mux` of 2^w secret entries 2^w − 1 products in w rounds; :func:`and_all` of b bits b − 1 products in
⌈log2 b⌉ rounds; each product 4 words opened (two Z_2^128 elements) and 96 bytes dealt to party 0.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol, Sequence

import numpy as np
import torch

from mpcdp.adapter.limbs import Wide
from mpcdp.adapter.mac_material import RING
from mpcdp.mpc import authenticated, bit_authenticated
from mpcdp.mpc.authenticated import AuthShared
from mpcdp.mpc.bit_authenticated import BitShared
from mpcdp.mpc.context import MpcContext


def _signed(value: int) -> int:
    value %= 1 << 64
    return value - (1 << 64) if value >= 1 << 63 else value


def words(c: int | torch.Tensor) -> torch.Tensor:
    """Public Z_2^64 words as int64 (Python ints reduced mod 2^64)."""
    return c.to(torch.int64) if isinstance(c, torch.Tensor) else torch.tensor(_signed(int(c)), dtype=torch.int64)


class Arith(Protocol):
    """What the circuits need of a backend (values of one party, or plaintext)."""

    def mul(self, x: Any, y: Any) -> Any: ...
    def add(self, x: Any, y: Any) -> Any: ...
    def sub(self, x: Any, y: Any) -> Any: ...
    def scale(self, x: Any, c: int | torch.Tensor) -> Any: ...
    def plus(self, x: Any, c: int | torch.Tensor) -> Any: ...
    def cat(self, xs: Sequence[Any], dim: int) -> Any: ...
    def reshape(self, x: Any, *shape: int) -> Any: ...
    def expand(self, x: Any, *shape: int) -> Any: ...
    def take(self, x: Any, index: Any) -> Any: ...
    def total(self, x: Any, dim: int) -> Any: ...
    def combine(self, x: Any, matrix: torch.Tensor) -> Any: ...
    def open(self, x: Any, *, label: str) -> torch.Tensor: ...
    def shape(self, x: Any) -> torch.Size: ...
    def mul_dealt(self, x: Any, y: Any, us: Sequence[Any], ds: Sequence[Dealt]) -> tuple[Any, list[Any]]: ...


class PlainArith:
    """Plaintext integers mod 2^64 (int64 tensors): the circuits' simulation, for tests."""

    products = 0
    halves = 0

    def mul(self, x, y):
        self.products += x.numel()
        return x * y

    def mul_half(self, u, r):
        """u·r for a dealt r (a half product: counted apart)."""
        self.halves += u.numel()
        return u * r

    def mul_dealt(self, x, y, us, ds):
        return (None if x is None else self.mul(x, y)), [self.mul_half(u, d.r) for u, d in zip(us, ds)]

    def add(self, x, y):
        return x + y

    def sub(self, x, y):
        return x - y

    def scale(self, x, c):
        return x * words(c)

    def plus(self, x, c):
        return x + words(c)

    def cat(self, xs, dim):
        return torch.cat(list(xs), dim)

    def reshape(self, x, *shape):
        return x.reshape(*shape)

    def expand(self, x, *shape):
        return x.expand(*shape).contiguous()

    def take(self, x, index):
        return x[index]

    def total(self, x, dim):
        return x.sum(dim)

    def combine(self, x, matrix):
        return (x.unsqueeze(-1) * matrix).sum(-2)

    def open(self, x, *, label):
        return x.clone()

    def shape(self, x):
        return x.shape


class PlainBits(PlainArith):
    """Plaintext bits as the bit domain holds them: a product's upper 63 bits are random ("don't care"), so a
    circuit that reads anything but low bits fails the plaintext rule test."""

    def __init__(self, seed: int = 0):
        self.generator = torch.Generator().manual_seed(seed)

    def _noise(self, shape) -> torch.Tensor:
        return 2 * torch.randint(-(1 << 62), 1 << 62, shape, generator=self.generator, dtype=torch.int64)

    def mul(self, x, y):
        return super().mul(x, y) + self._noise(x.shape)

    def mul_half(self, u, r):
        return super().mul_half(u, r) + self._noise(u.shape)

    def open(self, x, *, label):
        return x & 1


def _map(x: AuthShared, fn) -> AuthShared:
    return AuthShared(Wide(fn(x.value.lo), fn(x.value.hi)), Wide(fn(x.mac.lo), fn(x.mac.hi)), x.precision_bits)


class AuthArith:
    """This party's authenticated shares (:class:`AuthShared`, integers: precision 0) under ``ctx``; every
    product labelled ``label`` and numbered."""

    def __init__(self, ctx: MpcContext, label: str):
        self.ctx, self.label, self.step, self.products = ctx, label, 0, 0

    def mul(self, x, y):
        self.step += 1
        self.products += x.value.lo.numel()
        return authenticated.multiply(self.ctx, x, y, label=f"{self.label}-{self.step}")

    def add(self, x, y):
        return AuthShared(RING.add(x.value, y.value), RING.add(x.mac, y.mac), 0)

    def sub(self, x, y):
        return AuthShared(RING.sub(x.value, y.value), RING.sub(x.mac, y.mac), 0)

    def scale(self, x, c):
        return x.mul_public(words(c))  # value and MAC shares in one scaling, c split once (broadcast)

    def plus(self, x, c):
        alpha = authenticated.mac_key_share(self.ctx)
        value, mac = authenticated.add_public(RING, alpha, self.ctx.rank, x.value, x.mac,
                                              words(c).expand(x.value.shape).contiguous())
        return AuthShared(value, mac, 0)

    def cat(self, xs, dim):
        xs = list(xs)
        def joined(part: str, limb: str) -> torch.Tensor:
            return torch.cat([getattr(getattr(x, part), limb) for x in xs], dim)
        return AuthShared(Wide(joined("value", "lo"), joined("value", "hi")),
                          Wide(joined("mac", "lo"), joined("mac", "hi")), 0)

    def reshape(self, x, *shape):
        return _map(x, lambda t: t.reshape(*shape))

    def expand(self, x, *shape):
        return _map(x, lambda t: t.expand(*shape).contiguous())

    def take(self, x, index):
        return _map(x, lambda t: t[index])

    def total(self, x, dim):
        def summed(a: Wide) -> Wide:
            return RING.sum0(Wide(a.lo.movedim(dim, 0), a.hi.movedim(dim, 0)))
        return AuthShared(summed(x.value), summed(x.mac), 0)

    def combine(self, x, matrix):
        # row by row (x's last dimension): memory of the result's size, not of x's times the matrix's columns
        total = None
        for i in torch.nonzero(matrix.abs().sum(-1)).reshape(-1).tolist():
            column = _map(x, lambda t: t[..., i:i + 1].expand(*t.shape[:-1], matrix.shape[-1]))
            term = self.scale(column, matrix[i])
            total = term if total is None else self.add(total, term)
        if total is None:
            zero = torch.zeros((*x.value.shape[:-1], matrix.shape[-1]), dtype=torch.int64)
            return AuthShared(Wide(zero, zero), Wide(zero, zero), 0)
        return total

    def mul_dealt(self, x, y, us, ds):
        """Refused: Z_2^128 has no dealt bits with half triples (the circuits use dealt factors in the bit domain
        only)."""
        raise ValueError("a dealt factor's half product runs in the bit domain only, not in Z_2^128")

    def open(self, x, *, label):
        return authenticated.open_values(self.ctx, x, label=label, kind="masked",
                                         reason="a value masked by a dealt authenticated mask nobody knows")

    def shape(self, x):
        return x.value.shape


class BitArith:
    """This party's authenticated bits in the k = 1 domain (:class:`~mpcdp.mpc.bit_authenticated.BitShared`) under
    ``ctx``: every value an element of Z_2^64 whose low bit is the bit, so the circuits' integer formulas (XOR as
    a + b − 2ab, NOT as 1 − x, the one-hot's and the mux's differences) hold on the low bit, their reduction mod 2.
    A product is :func:`~mpcdp.mpc.bit_authenticated.multiply` (2 bits opened, 18⅛ bytes dealt); :meth:`open`
    opens low bits, pending until :func:`~mpcdp.mpc.bit_authenticated.bit_check`."""

    def __init__(self, ctx: MpcContext, label: str):
        self.ctx, self.label, self.step, self.products, self.halves = ctx, label, 0, 0, 0

    def mul(self, x, y):
        self.step += 1
        self.products += x.value.numel()
        return bit_authenticated.multiply(self.ctx, x, y, label=f"{self.label}-{self.step}")

    def mul_dealt(self, x, y, us, ds):
        if any(d.half is None or not bool(d.has.all()) for d in ds):
            raise ValueError("a dealt product needs a half triple for every dealt bit it multiplies")
        self.step += 1
        self.products += 0 if x is None else x.value.numel()
        self.halves += sum(u.value.numel() for u in us)
        return bit_authenticated.multiply_dealt(self.ctx, x, y, [(u, d.r, d.half) for u, d in zip(us, ds)],
                                                label=f"{self.label}-{self.step}")

    def add(self, x, y):
        return x + y

    def sub(self, x, y):
        return x - y

    def scale(self, x, c):
        return x.scale(words(c))

    def plus(self, x, c):
        return bit_authenticated.add_public(self.ctx, x, words(c))

    def cat(self, xs, dim):
        xs = list(xs)
        return BitShared(torch.cat([x.value for x in xs], dim), torch.cat([x.mac for x in xs], dim))

    def reshape(self, x, *shape):
        return BitShared(x.value.reshape(*shape), x.mac.reshape(*shape))

    def expand(self, x, *shape):
        return BitShared(x.value.expand(*shape).contiguous(), x.mac.expand(*shape).contiguous())

    def take(self, x, index):
        return x[index]

    def total(self, x, dim):
        return BitShared(x.value.sum(dim), x.mac.sum(dim))

    def combine(self, x, matrix):
        return BitShared(combine_words(x.value, matrix), combine_words(x.mac, matrix))

    def open(self, x, *, label):
        return bit_authenticated.open_bits(self.ctx, x, label=label, kind="masked",
                                           reason="a bit masked by a dealt bit nobody knows")

    def shape(self, x):
        return x.value.shape


COMBINE_ROWS = 2048
"""Rows of x that :func:`combine_words` turns into limbs and combines at a time: its float limbs, partial sums
and their integer copies are a few MB, reused block after block, not x's size times the matrix's columns (fresh
heap memory is paid for in page faults)."""


def combine_words(x: torch.Tensor, matrix: torch.Tensor) -> torch.Tensor:
    """Σ_i x[..., i]·matrix[i, c] mod 2^64 for int64 words ``x`` (..., L) and public int64 ``matrix`` (L, C):
    (..., C), exactly as ``(x.unsqueeze(-1) * matrix).sum(-2)``. A 0/1 matrix (every one the circuits use) takes
    one float matrix product on x's four 16-bit limbs, each partial sum at most L·(2^16 − 1): exact in float32 for
    L ≤ 256 (below 2^24), else in float64; recombined mod 2^64. The limbs are x's own little-endian bytes read as
    16-bit words and converted by one strided copy (no shifts, masks or stacked copies), :data:`COMBINE_ROWS`
    rows at a time into buffers reused from block to block. Any other matrix: the elementwise products."""
    L = x.shape[-1]
    if not bool(((matrix == 0) | (matrix == 1)).all()) or L >= 1 << 36:
        return (x.unsqueeze(-1) * matrix).sum(-2)
    exact = torch.float32 if L <= 256 else torch.float64
    lead, C = x.shape[:-1], matrix.shape[-1]
    rows = x.reshape(-1, L).contiguous()
    n = rows.shape[0]
    halves = torch.from_numpy(rows.numpy().astype("<i8", copy=False).view("<u2").astype(np.uint16, copy=False))
    limbs_of = halves.reshape(n, L, 4).movedim(-1, 0)  # (4, n, L): limb l of x_i, a strided view
    weights, out = matrix.to(exact), torch.empty(n, C, dtype=torch.int64)
    size = max(1, min(n, COMBINE_ROWS))
    buffers = (torch.empty(4 * size * L, dtype=exact), torch.empty(4 * size * C, dtype=exact),
               torch.empty(4 * size * C, dtype=torch.int64))
    for start in range(0, n, size):
        k = min(size, n - start)
        limbs, parts, words = (b[:4 * k * w].view(4, k, w) for b, w in zip(buffers, (L, C, C)))
        limbs.copy_(limbs_of[:, start:start + k])
        torch.matmul(limbs, weights, out=parts)
        words.copy_(parts)  # (4, k, C), each exact
        words[1] <<= 16
        words[2] <<= 32
        words[3] <<= 48
        block = torch.add(words[0], words[1], out=out[start:start + k])
        block += words[2]
        block += words[3]
    return out.reshape(*lead, C)


def not_bit(A: Arith, x: Any) -> Any:
    """1 − x (local)."""
    return A.plus(A.scale(x, -1), 1)


def xor_public(A: Arith, x: Any, bits: torch.Tensor) -> Any:
    """x ⊕ b for public bits b (broadcast against x): x + b − 2bx (local)."""
    return A.plus(A.scale(x, 1 - 2 * bits), bits)


def mul_batch(A: Arith, pairs: Sequence[tuple[Any, Any]]) -> list[Any]:
    """Every product of ``pairs`` (each pair of one shape, leading dimension n) in one multiplication; a pair
    whose second factor is :class:`Dealt` (W = R ⊕ S) is a half product u·R (one opened bit, no ε), and
    u·W = u·S + (1 − 2S)·(u·R), local."""
    if not pairs:
        return []
    n = A.shape(pairs[0][0])[0]
    widths = [max(1, int(torch.Size(A.shape(x)[1:]).numel())) for x, _ in pairs]
    full = [i for i, (_, y) in enumerate(pairs) if not isinstance(y, Dealt)]
    half = [i for i, (_, y) in enumerate(pairs) if isinstance(y, Dealt)]

    def flat(indices: list[int], side: int) -> Any:
        return A.cat([A.reshape(pairs[i][side], n, widths[i]) for i in indices], 1)

    out: list[Any] = [None] * len(pairs)
    if not half:
        products = A.mul(flat(full, 0), flat(full, 1))
    else:  # each pair's dealt operand as it is (no copy of all of them side by side): only u − b is joined, to open
        us = [A.reshape(pairs[i][0], n, widths[i]) for i in half]
        ds = [pairs[i][1].reshape(A, n, widths[i]) for i in half]
        products, moved = A.mul_dealt(flat(full, 0) if full else None, flat(full, 1) if full else None, us, ds)
        for i, u, d, m in zip(half, us, ds, moved):  # u·W from u·R
            out[i] = A.reshape(A.add(A.scale(u, d.coin), A.scale(m, 1 - 2 * d.coin)), *A.shape(pairs[i][0]))
    at = 0
    for i in full:
        out[i] = A.reshape(A.take(products, (slice(None), slice(at, at + widths[i]))), *A.shape(pairs[i][0]))
        at += widths[i]
    return out


@dataclasses.dataclass(frozen=True)
class Dealt:
    """Bits W = R ⊕ S of a backend: R dealt (``r``, a backend value), S public 0/1 (``coin``, int64, R's shape),
    and ``half`` the half triples of R's bits (:class:`~mpcdp.mpc.bit_authenticated.Halves` of R's shape, or None
    in plaintext) where ``has`` (bool, R's shape) says a bit has one: a product with a dealt operand is a half
    product (:func:`mul_batch`). Each half triple must serve one product only (a second would open u − b and
    u' − b, hence u − u'): a dealt bit enters one product, or (a mux's selector, dg-auth/9) one per copy, each
    copy with its own half triple."""

    r: Any
    coin: torch.Tensor
    half: Any = None
    has: torch.Tensor | None = None

    @staticmethod
    def of(A: Arith, x: Any) -> Dealt:
        """``x`` itself if dealt; else a plaintext value as W = R (S = 0, for the circuits' plaintext twin)."""
        if isinstance(x, Dealt):
            return x
        return Dealt(x, torch.zeros(A.shape(x), dtype=torch.int64))

    def value(self, A: Arith) -> Any:
        """W = R ⊕ S in the backend (local)."""
        return xor_public(A, self.r, self.coin)

    def take(self, A: Arith, index: Any) -> Dealt:
        return Dealt(A.take(self.r, index), self.coin[index], _half_map(self.half, lambda t: t[index]),
                     None if self.has is None else self.has[index])

    def reshape(self, A: Arith, *shape: int) -> Dealt:
        return Dealt(A.reshape(self.r, *shape), self.coin.reshape(*shape),
                     _half_map(self.half, lambda t: t.reshape(*shape)),
                     None if self.has is None else self.has.reshape(*shape))

    def width(self, A: Arith) -> int:
        return A.shape(self.r)[1]

    def by_columns(self) -> Dealt:
        """The parties' dealt bits with every tensor stored column by column (same values): the prefix and carry
        chains take one column of a word per round, then contiguous instead of one element per row."""
        r = BitShared(_column_major(self.r.value), _column_major(self.r.mac))
        return Dealt(r, _column_major(self.coin),
                     _half_map(self.half, _column_major), None if self.has is None else _column_major(self.has))



@dataclasses.dataclass(frozen=True)
class DealtHot:
    """The one-hot of w bits W = R ⊕ S per row: ``hot`` the dealt one-hot of R (a backend value (n, 2^w)), ``coin``
    S (public 0/1 int64, (n, w), least significant first). W's one-hot is H's columns permuted by S: column a is
    [R ⊕ S = a] = H[a ⊕ S] — local, no product (against :func:`one_hot`'s 2^w − 2)."""

    hot: Any
    coin: torch.Tensor

    def one_hot(self, A: Arith) -> Any:
        n, w = self.coin.shape
        s = (self.coin << torch.arange(w)).sum(1)
        columns = torch.arange(1 << w).reshape(1, -1) ^ s.reshape(-1, 1)
        return A.take(self.hot, (torch.arange(n).reshape(-1, 1), columns))


def _column_major(t: torch.Tensor) -> torch.Tensor:
    return t.T.contiguous().T


def _half_map(half: Any, fn) -> Any:
    if half is None:
        return None
    return bit_authenticated.Halves(BitShared(fn(half.b.value), fn(half.b.mac)), BitShared(fn(half.c.value), fn(half.c.mac)))


def one_hot(A: Arith, bits: Any) -> Any:
    """(n, 2^w): column a is [the w bits (n, w), least significant first, spell a]; 2^w − 2 products."""
    n, w = A.shape(bits)
    first = A.take(bits, (slice(None), slice(0, 1)))
    hot = A.cat([not_bit(A, first), first], 1)
    for j in range(1, w):
        width = 1 << j
        (high,) = mul_batch(A, [(hot, A.expand(A.take(bits, (slice(None), slice(j, j + 1))), n, width))])
        hot = A.cat([A.sub(hot, high), high], 1)
    return hot


def selector_columns(w: int) -> list[int]:
    """The bit each product of a w-bit mux selects by, level after level (2^(w−1) by bit 0, then 2^(w−2) by bit
    1, ...): a :class:`Dealt` selector of a job of :func:`mux_levels` has these columns (2^w − 1)."""
    return [level for level in range(w) for _ in range(1 << (w - 1 - level))]


def mux_levels(A: Arith, jobs: Sequence[tuple[Any, Any]]) -> list[Any]:
    """For each job (bits (n, w), entries (n, 2^w)): entries[:, a] at a = the bits' value, all jobs' levels
    batched (one round per level of the widest job; 2^w − 1 products per job). Bits given as :class:`Dealt`
    (n, 2^w − 1) in :func:`selector_columns`' order (each product's own copy of its bit, with its own half
    triple) make every product a half product."""
    tables = [entries for _, entries in jobs]
    widths = [(A.shape(bits.r)[1] + 1).bit_length() - 1 if isinstance(bits, Dealt) else A.shape(bits)[1]
              for bits, _ in jobs]
    for level in range(max(widths)):
        live = [i for i, w in enumerate(widths) if w > level]
        pairs = []
        for i in live:
            even = A.take(tables[i], (slice(None), slice(0, None, 2)))
            odd = A.take(tables[i], (slice(None), slice(1, None, 2)))
            bits, count = jobs[i][0], A.shape(even)[1]
            if isinstance(bits, Dealt):  # this level's copies: columns from (2^w − 1) − (2^(w − level) − 1)
                start = (1 << widths[i]) - (1 << (widths[i] - level))
                pairs.append((A.sub(odd, even), bits.take(A, (slice(None), slice(start, start + count)))))
                continue
            bit = A.take(bits, (slice(None), slice(level, level + 1)))
            pairs.append((A.expand(bit, *A.shape(even)), A.sub(odd, even)))
        for i, moved in zip(live, mul_batch(A, pairs)):
            tables[i] = A.add(A.take(tables[i], (slice(None), slice(0, None, 2))), moved)
    return [A.reshape(t, A.shape(t)[0]) for t in tables]


def and_all(A: Arith, bits: list[Any]) -> Any:
    """The AND of bit vectors of one shape: a tree, ⌈log2 b⌉ rounds."""
    while len(bits) > 1:
        pairs = [(bits[i], bits[i + 1]) for i in range(0, len(bits) - 1, 2)]
        bits = mul_batch(A, pairs) + ([bits[-1]] if len(bits) % 2 else [])
    return bits[0]
