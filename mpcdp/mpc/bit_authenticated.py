"""Authenticated bits with SPDZ2k's k = 1 (the bit domain of circuit dg-auth/9): partial openings of one bit and the
batched check that verifies them; daBits across to :mod:`mpcdp.mpc.authenticated`'s Z_2^128.

Security model: :mod:`mpcdp.mpc.authenticated`'s (security with abort against any set of deviating data parties;
the dealer honest and colluding with nobody). Nothing opened here is returned as checked: every bit
:func:`open_bits` opens joins this party's pending list, and the caller must run :func:`bit_check` before any
opened bit (or anything computed from one) is used to decide anything visible or is output.

The domain (Cramer, Damgård, Escudero, Scholl, Xing, "SPDZ2k", CRYPTO 2018, with k = 1, s = 47 over Z_2^48:
:data:`~mpcdp.adapter.auth_bits.MAC_BITS`). A bit x is a :class:`BitShared`: every party's value share x_i and MAC
share m_i, one int64 word each (computed mod 2^64, read mod 2^48), with Σ x_i = x̂ whose LOW BIT is the bit (the
upper bits are "don't care") and Σ m_i ≡ α_b·x̂ mod 2^48 under the bit key α_b = Σ α_b,i (:class:`~mpcdp.adapter.auth_bits.BitKey`). XOR is addition, NOT and XOR with a public bit add a
public value (party 0 to its value share, every party α_b,i·c to its MAC share), AND with a public bit is a
scaling: all local (the low bit of a sum or product of integers depends only on their low bits). AND of two
secret bits (:func:`multiply`) is a Beaver product with a dealt bit triple
(:class:`~mpcdp.adapter.auth_bits.BitTriples`): only the low bits of ε = x − a and δ = y − b are opened, each
party sending bit 0 of its shares packed 64 to a word (XOR-summed over the run's opening plan), and
z = c + ε̃·b + δ̃·a + ε̃δ̃ ≡ x·y (mod 2) whatever the upper bits of x − a are; z's MAC shares are the same linear
function of a's, b's and c's. When one factor is a bit the dealer dealt, it comes with a half triple (b, c ≡ r·b)
and the product opens only u − b's low bit (:func:`multiply_dealt`: r plays a's part, so no ε and no a).

The check (:func:`bit_check`) of the n bits x̃_j opened since the last one, with [[z_j]] = [[x_j]] − x̃_j (whose
value is even exactly when x̃_j is right): (1) a coin every party committed to before any part was opened
(:mod:`mpcdp.mpc.coin`), drawn after the opened bits are fixed, gives λ = :data:`PARITY_CHECKS` rows of public
bits b_tj; (2) the parties open, in full (64 bits), y_t = Σ_j b_tj·[[z_j]] + 2·[[r_t]] for dealt [[r_t]] nobody
knows (:class:`~mpcdp.adapter.auth_bits.BitRandoms`: 2·r_t hides every bit of y_t above bit 0, and bit 0 of an
honest y_t is 0); (3) a y_t with bit 0 set is a failure; (4) SPDZ2k's batched MAC check on the y_t, as
:func:`mpcdp.mpc.authenticated.mac_check`: a second committed coin, drawn only after the y_t are opened (a
cheater that knew it before could choose errors on two odd rows whose combination vanishes), gives λ words χ_t;
commitments to σ_i = Σ_t χ_t·(m_i(y_t) − α_b,i·y_t) mod 2^48 with the digest of this party's view, then σ_i with its
nonce; Σ σ_i ≢ 0 mod 2^48 is a failure).

Soundness (``mpcdp/README.md``, "Authenticated bits"). Let Δ_j be the error a deviation puts on opened bit j (its
sent bits, or its shares through other material). If some Δ_j is odd, each y_t carries the error Σ_j b_tj·Δ_j,
odd with probability 1/2 independently over the λ rows of the coin, which the cheater sees only after it fixed
the Δ_j: every row even with probability 2^-λ. An odd row must then be corrected by an odd error on the opened
y_t, which passes SPDZ2k's check with probability at most 2^(−s+log2(s+1)) = 2^-41.42 for s = 47 (the key α_b is
uniform mod 2^48). A single row, as the check of SPDZ2k's partial openings with k ≥ s would use, is NOT enough
at k = 1: a flipped bit would pass whenever its coefficient is even, with probability 1/2. Per check:
2^-λ + 2^-41.42 = 2^-41.40 for λ = 48, plus SHA-256's binding: an effective s of 41.4 ≥ 40 (dg-auth/2 carried
64-bit MACs, s = 63, 2^-47.99; the 16 MAC bits above 2^48 cost party 0 a quarter of every bit-domain reply and
added 6.6 bits of soundness above the 40 issue 48 asks for). A deviation that changes only bits above 2^47 of
a share changes nothing any value or check reads: the run releases the honest output. Tested at a reduced λ
and s in the deviation harness's vectorised model (``tests/deviation_harness.py``, ``bit_model_check``;
``tests/test_bit_authenticated.py``).

Cost per party, m parties: a product, one XOR opening of 2 bits packed (2/64 words per product; 1 round for 2
parties, 2 for more) and 18⅛ bytes from the dealer to the reply's receiver (the MAC shares of a, b, c, 6 bytes each, and one
bit of c's value share); a half product (:func:`multiply_dealt`) one opened bit and 12⅛ bytes; a dealt bit 6
bytes; a daBit 38 bytes and one opened bit. The check: λ·n bit-times-word products locally (twice: values and MACs), one opening of λ words (6λ dealt bytes for the 2·r_t), two coin rounds and the
commitment and σ rounds of SPDZ2k's check (four rounds), independent of n.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import weakref
from typing import Sequence

import numpy as np
import torch

from mpcdp.adapter.auth_bits import MAC_BITS, BitKey, BitRandoms, BitShares, BitTriples, DaBits, MaskBits, OneHots
from mpcdp.adapter.bit_words import pack_bits, unpack_bits
from mpcdp.mpc import authenticated
from mpcdp.mpc.authenticated import AuthShared, _commitment, _fail, _words, opened_checked
from mpcdp.mpc.context import MpcContext
from mpcdp.randomness import secure_key

S_BITS = MAC_BITS - 1
"""s of the bit domain: MAC bits above the one value bit (k = 1, k + s = :data:`~mpcdp.adapter.auth_bits.MAC_BITS`)."""
_MAC_MASK = (1 << MAC_BITS) - 1

PARITY_CHECKS = 48
"""λ: rows of the check's parity combinations (each halves a flipped bit's chance to pass)."""

_DOMAIN = b"mpcdp/bit-check/1"
_CHUNK = 1 << 14  # columns of the coin's bit matrix unpacked at a time (λ·_CHUNK floats, in cache)


@dataclasses.dataclass(frozen=True)
class BitShared:
    """This party's shares of authenticated bits: value and MAC words of one shape (the bit is the value's low
    bit). Only :func:`open_bits` opens it."""

    value: torch.Tensor
    mac: torch.Tensor

    def __add__(self, other: BitShared) -> BitShared:
        return BitShared(self.value + other.value, self.mac + other.mac)

    def __sub__(self, other: BitShared) -> BitShared:
        return BitShared(self.value - other.value, self.mac - other.mac)

    def scale(self, words: torch.Tensor) -> BitShared:
        """c·x for public int64 words c (broadcast); local."""
        return BitShared(self.value * words, self.mac * words)

    def __getitem__(self, index) -> BitShared:
        return BitShared(self.value[index], self.mac[index])

    def __repr__(self) -> str:
        return f"BitShared(shape={tuple(self.value.shape)})"


class _Session:
    """This party's bit key share, the bits opened since the last check (as the check reads them: per opening
    (n_p, 2), this party's value share less the opened bit on party 0 and its MAC share less α_b·bit, computed
    when it is opened, so the shares themselves need not be kept) and the digest of its view."""

    def __init__(self, alpha: torch.Tensor):
        self.alpha = alpha
        self.pending: list[tuple[torch.Tensor]] = []
        self.view = hashlib.sha256(_DOMAIN)

    def note_public(self, label: str, words: torch.Tensor) -> None:
        self.view.update(label.encode() + b"\0" + words.contiguous().numpy().astype("<i8").tobytes())


_SESSIONS: weakref.WeakKeyDictionary[MpcContext, _Session] = weakref.WeakKeyDictionary()


def _session(ctx: MpcContext) -> _Session:
    """This run's bit-domain state; the first call fetches this party's bit key share (all parties together)."""
    if ctx.config.security != "malicious":
        raise RuntimeError("authenticated bits run under `security` 'malicious' only")
    if ctx not in _SESSIONS:
        _SESSIONS[ctx] = _Session(BitKey.fetch())
    return _SESSIONS[ctx]


def dealt_bits(ctx: MpcContext, n: int) -> BitShared:
    """n uniform bits dealt by the dealer (:class:`~mpcdp.adapter.auth_bits.BitShares`; the dealer knows them, no
    data party does), after the bit key. 6 bytes per bit to the reply's receiver (``auth_bits.ROTATING``)."""
    _session(ctx)
    value, mac, _ = BitShares.fetch(n)
    return BitShared(value, mac)


def dealt_one_hots(ctx: MpcContext, n: int, w: int) -> BitShared:
    """n dealt one-hot vectors (n, 2^w) at uniform indices that no data party knows
    (:class:`~mpcdp.adapter.auth_bits.OneHots`): 2^w·6⅛ bytes per vector to party 0."""
    _session(ctx)
    value, mac = OneHots.fetch(n, w)
    return BitShared(value, mac)


@dataclasses.dataclass(frozen=True)
class Halves:
    """This party's shares of half triples on dealt bits r (:func:`multiply_dealt`): b uniform, c ≡ r·b (mod 2),
    one of each per dealt bit that has one."""

    b: BitShared
    c: BitShared


def dealt_rows(ctx: MpcContext, n: int, width: int, halves: list[int], *,
               masks: bool = False) -> tuple[BitShared, Halves | None]:
    """n rows of ``width`` dealt uniform bits ((n, width)) and the half triples of the bits in columns ``halves``
    ((n, len(halves)) each, a column listed k times with k; None without), one request: 6 bytes per bit and 12⅛
    per half triple to the reply's receiver (``auth_bits.ROTATING``: the member with the fewest reply elements so
    far). ``masks``: as :class:`~mpcdp.adapter.auth_bits.MaskBits` (masks of secret bits, not candidate bits)."""
    _session(ctx)
    value, mac, half = (MaskBits if masks else BitShares).fetch(n, width, halves or None)
    bits = BitShared(value.reshape(n, width), mac.reshape(n, width))
    return bits, None if half is None else _halves(half, n, len(halves))


def _halves(half, n: int, k: int) -> Halves:
    (b, b_mac), (c, c_mac) = half
    return Halves(BitShared(b.reshape(n, k), b_mac.reshape(n, k)), BitShared(c.reshape(n, k), c_mac.reshape(n, k)))


def bit_key_share(ctx: MpcContext) -> torch.Tensor:
    """This party's share α_b,i of the bit key (fetched on first use; every party must call it together)."""
    return _session(ctx).alpha


def add_public(ctx: MpcContext, x: BitShared, words: torch.Tensor) -> BitShared:
    """x + c for public int64 words c (broadcast against x; XOR with a public bit c ∈ {0, 1}); local."""
    words = words.to(torch.int64).expand(x.value.shape)
    alpha = _session(ctx).alpha
    return BitShared(x.value + words if ctx.rank == 0 else x.value, x.mac + alpha * words)


def pack(bits: torch.Tensor) -> torch.Tensor:
    """Flat 0/1 int64 bits, 64 to a word (bit i of word w is bit 64·w + i)."""
    return pack_bits(bits)


def unpack(words: torch.Tensor, n: int) -> torch.Tensor:
    """The first n bits of :func:`pack`'s words (0/1 int64)."""
    return unpack_bits(words, n)


def open_bits(ctx: MpcContext, x: BitShared, *, label: str, kind: str, reason: str) -> torch.Tensor:
    """The bits of ``x`` (0/1 int64, x's shape), opened to every party by XOR of every party's low value bits
    (packed 64 to a word); pending until :func:`bit_check` passes."""
    state = _session(ctx)
    value, mac = x.value.reshape(-1), x.mac.reshape(-1)
    words = ctx._open(pack(value & 1), label=label, reason=reason, xor=True, kind=kind, checked=True)
    state.note_public(f"open {label}", words)
    bits = unpack(words, value.numel())
    state.pending.append((torch.stack([value - bits if ctx.rank == 0 else value, mac - state.alpha * bits], 1),))
    return bits.reshape(x.value.shape)


def multiply(ctx: MpcContext, x: BitShared, y: BitShared, *, label: str) -> BitShared:
    """x AND y (elementwise, one shape) by a dealt bit triple (module docstring): the low bits of ε and δ opened
    (2 bits per product, packed), 18⅛ bytes per product from the dealer to the reply's receiver."""
    if x.value.shape != y.value.shape:
        raise ValueError("cannot multiply authenticated bits of different shapes")
    shape = x.value.shape
    xv, xm, yv, ym = x.value.reshape(-1), x.mac.reshape(-1), y.value.reshape(-1), y.mac.reshape(-1)
    n = xv.numel()
    _session(ctx)  # the bit key first: the dealer deals bit material only after it
    (a, a_mac), (b, b_mac), (c, c_mac) = BitTriples.fetch(n)
    masked = BitShared(torch.cat([xv - a, yv - b]), torch.cat([xm - a_mac, ym - b_mac]))
    opened = open_bits(ctx, masked, label=f"{label} (ε, δ)", kind="masked",
                       reason="low bits of x − a and y − b for a dealt bit triple nobody knows: uniform")
    e, d = opened[:n], opened[n:]
    z = BitShared(c + e * b + d * a, c_mac + e * b_mac + d * a_mac)
    return _reshape(add_public(ctx, z, e * d), shape)


def multiply_dealt(ctx: MpcContext, x: BitShared | None, y: BitShared | None,
                   parts: Sequence[tuple[BitShared, BitShared, Halves]], *,
                   label: str) -> tuple[BitShared | None, list[BitShared]]:
    """(x AND y by dealt bit triples, as :func:`multiply` (None without x), and for each part (u, r, half) u AND r
    for **dealt** bits r with their half triples (b, c ≡ r·b mod 2, :class:`Halves`; each used once)), in ONE
    opening of low bits: ε, δ of the full triples and δ' = u − b of the half ones. u ≡ b + δ̃' (mod 2), so u·r ≡
    c + δ̃'·r: z = c + δ̃'·r, its MAC the same combination of c's and r's, nothing public to add. A half triple is a
    Beaver triple whose a is r itself: r is uniform and known to nobody but the dealer, like a, so nothing else is
    opened; b is uniform and unknown, so δ̃' is a uniform bit. Soundness as :func:`multiply`'s: δ̃' is pending until
    :func:`bit_check`, and a wrong δ̃' or wrong shares of b, c or r break the MAC relation of what it opened or of
    z. Cost per half product: one opened bit and 12⅛ dealt bytes (the full product's 2 bits and 18⅛: no ε, no a's
    MAC). Only the opened differences are joined, not the parts' r, b and c."""
    n = 0 if x is None else x.value.numel()
    if x is not None and (y is None or x.value.shape != y.value.shape):
        raise ValueError("cannot multiply authenticated bits of different shapes")
    if any(u.value.shape != r.value.shape or half.b.value.shape != u.value.shape for u, r, half in parts):
        raise ValueError("a dealt product needs one dealt bit and one half triple per factor")
    _session(ctx)
    values, macs = [], []
    if n:
        (a, a_mac), (b, b_mac), (c, c_mac) = BitTriples.fetch(n)
        assert x is not None and y is not None
        values += [x.value.reshape(-1) - a, y.value.reshape(-1) - b]
        macs += [x.mac.reshape(-1) - a_mac, y.mac.reshape(-1) - b_mac]
    for u, _, half in parts:
        values.append((u.value - half.b.value).reshape(-1))
        macs.append((u.mac - half.b.mac).reshape(-1))
    opened = open_bits(ctx, BitShared(torch.cat(values), torch.cat(macs)), label=f"{label} (ε, δ)", kind="masked",
                       reason="low bits of x − a, y − b and u − b' for dealt (half) triples nobody knows: uniform")
    full = None
    if x is not None and n:
        e, d = opened[:n], opened[n:2 * n]
        z = BitShared(c + e * b + d * a, c_mac + e * b_mac + d * a_mac)
        full = _reshape(add_public(ctx, z, e * d), x.value.shape)
    out, at = [], 2 * n
    for u, r, half in parts:
        dh = opened[at:at + u.value.numel()].reshape(u.value.shape)
        at += u.value.numel()
        out.append(BitShared(half.c.value + dh * r.value, half.c.mac + dh * r.mac))
    return full, out


def _reshape(x: BitShared, shape) -> BitShared:
    return BitShared(x.value.reshape(shape), x.mac.reshape(shape))


def to_arithmetic(ctx: MpcContext, x: BitShared, *, label: str) -> AuthShared:
    """[[x]] in :mod:`mpcdp.mpc.authenticated`'s Z_2^128 (value exactly 0 or 1, precision 0) by a dealt daBit r:
    the bit c = x ⊕ r is opened (uniform; pending until :func:`bit_check`), then [[x]] = c + (1 − 2c)·[[r]].
    A wrong c (a deviation) is caught by the next :func:`bit_check`, before anything computed from it is opened.
    Cost: one opened bit and 40 bytes from the dealer per bit."""
    shape = x.value.shape
    flat = _reshape(x, (-1,))
    authenticated.mac_key_share(ctx)  # both keys before the daBits: their dealer needs both
    _session(ctx)
    (rv, rm), (av, am) = DaBits.fetch(flat.value.numel())
    c = open_bits(ctx, flat + BitShared(rv, rm), label=f"{label} (x ⊕ r)", kind="masked",
                  reason="a bit XOR a dealt daBit nobody knows: uniform")
    r = AuthShared(av, am, 0)
    out = authenticated.add_constant(ctx, r.mul_public(1 - 2 * c), c)
    return AuthShared(out.value.reshape(*shape), out.mac.reshape(*shape), 0)


def _combinations(rows: torch.Tensor, pieces: list[torch.Tensor]) -> torch.Tensor:
    """Σ_j b_tj·v_j mod 2^64 for the coin's bit matrix (packed words, (λ, ⌈n/64⌉)) and the int64 vectors v, k of
    them, given as ``pieces`` laid end to end ((n_p, k) each, Σ n_p = n, element j of every vector in row j):
    (λ, k). Exact: each word split into eight 8-bit limbs, summed by a float32 matrix product per chunk of at most
    2^14 columns (every partial sum < 2^14·2^8 = 2^22, float32's exact range), accumulated in int64 and recombined
    mod 2^64. Each piece's limbs are its own bytes ((n_p, 8k): a chunk of them is one contiguous block, converted
    to float32 by a plain copy), so the pieces are never joined into one copy of all n; each chunk's bits (from
    any bit offset of the packed rows) and limbs go into two buffers reused across chunks (small enough to stay in
    cache)."""
    k, lam = pieces[0].shape[1], rows.shape[0]
    packed = rows.contiguous().numpy().astype("<i8", copy=False).view(np.uint8)  # (λ, 8·⌈n/64⌉): bit j of row t
    total = torch.zeros(lam, 8 * k, dtype=torch.int64)
    bits_buffer = torch.empty(lam, _CHUNK, dtype=torch.float32)
    limbs_buffer = torch.empty(_CHUNK, 8 * k, dtype=torch.float32)
    offset = 0
    for piece in pieces:
        n = piece.shape[0]
        limbs = torch.from_numpy(piece.contiguous().numpy().astype("<i8", copy=False).view(np.uint8)
                                 .reshape(n, 8 * k))  # limb l of v_i(j) at [j, 8i + l]
        for start in range(0, n, _CHUNK):
            size = min(n - start, _CHUNK)
            first = offset + start
            bits = np.unpackbits(packed[:, first // 8: math.ceil((first + size) / 8)], axis=-1,
                                 bitorder="little")[:, first % 8: first % 8 + size]
            bits_buffer[:, :size].copy_(torch.from_numpy(bits))
            limbs_buffer[:size].copy_(limbs[start:start + size])
            total += (bits_buffer[:, :size] @ limbs_buffer[:size]).to(torch.int64)
        offset += n
    return (total.reshape(lam, k, 8) << (8 * torch.arange(8))).sum(-1)


def _runs(pieces: Sequence[tuple[torch.Tensor, ...]]) -> list[tuple[torch.Tensor, ...]]:
    """``pieces`` (tuples of tensors with equally many rows) in order, each consecutive run of pieces shorter than a
    chunk joined into one, tensor by tensor (a long piece stays as it is, uncopied)."""
    runs: list[tuple[torch.Tensor, ...]] = []
    short: list[tuple[torch.Tensor, ...]] = []
    length = 0  # of the short pieces not yet joined

    def join() -> None:
        if short:
            runs.append(tuple(torch.cat(parts) for parts in zip(*short)))
            short.clear()

    for piece in pieces:
        if piece[0].shape[0] >= _CHUNK:
            join()
            length = 0
            runs.append(piece)
        else:
            short.append(piece)
            length += piece[0].shape[0]
            if length >= _CHUNK:
                join()
                length = 0
    join()
    return runs


def bit_check(ctx: MpcContext, *, label: str) -> None:
    """Check every bit opened since the last check (module docstring); raise
    :class:`~mpcdp.errors.MacCheckFailed` on a failure, on every honest party. Eight rounds (two committed coins
    of two rounds each, the parities' opening, commitments, σ), independent of how many bits are checked."""
    state = _session(ctx)
    if not state.pending:
        return
    pieces = [piece for (piece,) in _runs(state.pending)]  # each opening's (n_p, 2), short ones joined
    state.pending.clear()
    n, rows = sum(p.shape[0] for p in pieces), PARITY_CHECKS
    stream = ctx.common_stream(label=f"{label}: bit-check rows", domain=_DOMAIN)
    matrix = stream.words(rows * math.ceil(n / 64)).reshape(rows, -1)
    combined = _combinations(matrix, pieces)
    r_value, r_mac = BitRandoms.fetch(rows)
    y_share, y_mac = combined[:, 0] + 2 * r_value, combined[:, 1] + 2 * r_mac
    y = opened_checked(ctx, y_share, label=f"{label}: bit-check parities", kind="masked",
                       reason="parity combinations of opened bits' shares masked by 2·r for dealt r: only bit 0, "
                              "0 when honest, is not uniform")
    state.note_public("parities", y)
    digest, state.view = _words(state.view.digest()), hashlib.sha256(_DOMAIN)
    if bool((y & 1).any()):
        raise _fail(label, "a share or an opened value was altered")
    # χ only now, after the y_t are fixed: a cheater that knew χ before opening could pick errors on two odd
    # rows whose χ-combination vanishes mod 2^48 and pass the MAC check with certainty
    chi = ctx.common_stream(label=f"{label}: bit-check coin", domain=_DOMAIN).words(rows)
    # σ_i in Z_2^48, SPDZ2k's ring: its bits above 2^48 (sums of party 0's dealt MAC shares, each in [0, 2^48),
    # as integers) would carry their carries, which depend on α_b·x̂ and lie outside the check's proof
    mine = ((chi * (y_mac - state.alpha * y)).sum() & _MAC_MASK).reshape(1)
    mine_words, nonce = torch.cat([mine, torch.zeros(1, dtype=torch.int64)]), secure_key()
    bound = ctx.members_exchange(torch.cat([_commitment(label, ctx.rank, mine_words, nonce), digest]),
                                 label=f"{label}: bit-check commitments", kind="public",
                                 reason="commitments to the σ shares and digests of every party's view")
    if any(not torch.equal(words[4:], digest) for words in bound.values()):
        raise _fail(label, "parties received different opened bits")
    parts = ctx.members_exchange(torch.cat([mine_words, _words(nonce)]), label=f"{label}: bit-check σ",
                                 kind="masked", reason="σ shares, uniform words that sum to 0")
    total = torch.zeros((), dtype=torch.int64)
    for j, words in parts.items():
        if not torch.equal(_commitment(label, j, words[:2], words[2:].numpy().astype("<i8").tobytes()), bound[j][:4]):
            raise _fail(label, "its σ share does not match its commitment", party=j)
        total = total + words[0]
    if int(total) & _MAC_MASK != 0:
        raise _fail(label, "a share or an opened value was altered")


def note_public(ctx: MpcContext, label: str, words: torch.Tensor) -> None:
    """Add public ``words`` this party computed (e.g. a committed coin) to its bit-domain view digest."""
    _session(ctx).note_public(label, words.reshape(-1).to(torch.int64))
