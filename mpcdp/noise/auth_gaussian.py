"""The discrete Gaussian of :mod:`mpcdp.noise.discrete_gaussian` sampled inside the MPC with every opening
checked (``[mpc] security = "malicious"``, issue 48): circuit dg-auth/2.

Security model (:mod:`mpcdp.mpc.authenticated`): any set of data parties may deviate arbitrarily; the dealer is
honest and colludes with nobody. Two authenticated domains: every bit lives in the k = 1 bit domain of
:mod:`mpcdp.mpc.bit_authenticated` (an element of Z_2^64 whose low bit is the value, 64-bit MACs, s = 63; AND a
Beaver product opening two bits, 24⅛ bytes dealt), the candidate's integers (n, n², T) in SPDZ2k's Z_2^128 of
:mod:`mpcdp.mpc.authenticated` (s = 64). Both checks — the bit check (λ = 48 parity rows, then SPDZ2k's check on
them: 2^-47.99) and the batched MAC check (2^-57.9) — run before the accept bits are opened, and the bit check
again right after, before they choose which candidates are kept: a party that deviates anywhere in the sampler
makes every honest party stop with the MAC line before any noise is used or output. Every data party samples
(no committee): a smaller committee would let its members change the noise without any MAC to catch them.

The rule is the plaintext rule of :func:`~mpcdp.noise.discrete_gaussian.accept` on the same candidate bits,
so the output pmf is exactly :func:`~mpcdp.noise.discrete_gaussian.exact_log_pmf`'s. Per candidate, in
:func:`candidate_circuit` (written once over :class:`Domains`: the parties' two authenticated backends, or
plaintext, so a test runs the same code on plaintext bits against the rule):

  1. Random fields (:data:`~mpcdp.noise.discrete_gaussian.RANDOM_FIELDS`): each bit is a dealt bit-domain bit R
     (:class:`mpcdp.adapter.auth_bits.BitShares`) XOR the committee's committed coin S (public to the parties,
     never to the dealer; noted in every party's view of both domains, so a coin that differs between parties
     fails the next check): no single role knows a candidate's bits (issue 44: the dealer knows R, each party S).
  2. Piece: the one-hot of the index (62 bit products), the piece indicators I_j a public selection.
  3. Crossing: I_j, the point's bits and the sign into Z_2^128 by daBits
     (:func:`~mpcdp.mpc.bit_authenticated.to_arithmetic`, one opened bit and 40 dealt bytes each). n as in
     dg-auth/1: n_j = M_j − s·(2M_j + 1), n = Σ I_j·n_j (10 products, 2 rounds); T = G·n² + Σ Λ_j·I_j (1 product).
  4. T's bits: an edaBit (:class:`mpcdp.adapter.auth_bits.EdaBits`: 64 bit-domain bits r_i and [[r]] = Σ 2^i·r_i);
     c = T − r opened in Z_2^128 (uniform) and T = c + r by a ripple carry in the bit domain (one product per
     bit: 61 rounds), with each factor word's prefix OR from its top bit in the same rounds.
  5. Factor g: TH's bit at the word's top set bit, selected by a mux on T's window; the low factor
     [V_low < T_low] over T_low's 32 bits (as dg-auth/1, all in the bit domain).
  6. Accept = AND of the seven factors, NOT the low factor and T's bits 59..61 all 0 (10 bit products).
  7. Bit check and MAC check; open the accept bits (one bit each); bit check; keep the accepted candidates' n
     (authenticated in Z_2^128, secret).

Cost per candidate (:func:`products_per_candidate`): 873 bit products (2 bits opened, 24⅛ bytes dealt each),
11 products in Z_2^128 (4 words opened, 96 bytes dealt each), 530 dealt bits (8 bytes each), one edaBit
(8·68 bytes), 5 + (k + 3) + 1 daBits (40 bytes and one opened bit each); measured in
benchmarks/results/noise-malicious.md. Not optimised further: the first factor's early drop, which the
semi-honest circuit uses, would save about a fifth.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from typing import Any, Callable

import torch

from mpcdp.adapter.auth_bits import EdaBits
from mpcdp.mpc import authenticated, bit_authenticated
from mpcdp.mpc.auth_circuits import (AuthArith, Arith, BitArith, PlainArith, and_all, mul_batch, mux_levels,
                                     not_bit, one_hot, xor_public)
from mpcdp.mpc.authenticated import AuthShared
from mpcdp.mpc.bit_authenticated import BitShared
from mpcdp.mpc.context import MpcContext
from mpcdp.noise import discrete_gaussian as dg

CIRCUIT = ("dg-auth/2: bits in SPDZ2k's k = 1 domain (low bit of Z_2^64, s = 63; AND opens 2 bits, 24⅛ dealt bytes; "
           "checked by 48 parity rows and SPDZ2k's check), integers in Z_2^128 (s = 64), daBits and an edaBit between "
           "them; dealt bits XOR the committed coin, T's bits by a ripple carry on an opened mask, factors by the "
           "top set bit's one-hot and a mux, both checks before the accept bits and the bit check after")
MASK_BITS = 64
MAX_PASS = 1 << 12  # candidates per pass: bounds a pass's memory (≈ 900 products each)
_COIN_DOMAIN = b"mpcdp/noise-coin-auth"


@dataclasses.dataclass
class Domains:
    """The circuit's backends: ``bits`` (the k = 1 bit domain, or plaintext), ``arith`` (Z_2^128, or plaintext)
    and ``to_arith`` (a bit-domain value of any shape into ``arith``: daBits, or the low bit in plaintext)."""

    bits: Arith
    arith: Arith
    to_arith: Callable[[Any], Any]

    @staticmethod
    def plain(bits: Arith | None = None) -> Domains:
        """Plaintext twins (the tests', the product count's); ``bits`` e.g. a :class:`PlainBits`."""
        return Domains(bits or PlainArith(), PlainArith(), lambda x: x & 1)


class PlainBits(PlainArith):
    """Plaintext bits as the bit domain holds them: a product's upper 63 bits are random ("don't care"), so a
    circuit that reads anything but low bits fails the plaintext rule test."""

    def __init__(self, seed: int = 0):
        self.generator = torch.Generator().manual_seed(seed)

    def mul(self, x, y):
        noise = torch.randint(-(1 << 62), 1 << 62, x.shape, generator=self.generator, dtype=torch.int64)
        return super().mul(x, y) + 2 * noise

    def open(self, x, *, label):
        return x & 1


def _column(A: Arith, x: Any, i: int) -> Any:
    return A.take(x, (slice(None), i))


def _columns(A: Arith, x: Any, start: int, stop: int) -> Any:
    return A.take(x, (slice(None), slice(start, stop)))


def _exponent(D: Domains, plan: dg.DiscreteGaussianPlan, fields: dict[str, Any]) -> tuple[Any, Any]:
    """(n, T) of every candidate from its field bits (steps 2–3): the index's one-hot in the bit domain, the
    piece indicators, the point's bits and the sign crossed into ``D.arith``."""
    k, pieces, B = plan.k, dg.PIECES, D.bits
    hot = one_hot(B, fields["index"])  # (n, 64)
    select = torch.zeros(1 << dg.INDEX_BITS, pieces, dtype=torch.int64)
    select[torch.arange(1 << dg.INDEX_BITS), torch.from_numpy(plan.index_table())] = 1
    n = B.shape(hot)[0]
    point_bits = B.shape(fields["point"])[1]
    crossed = D.to_arith(B.cat([B.combine(hot, select), fields["point"], B.reshape(fields["sign"], n, 1)], 1))
    A = D.arith
    indicators = A.take(crossed, (slice(None), slice(0, pieces)))  # (n, 5): I_j
    point = A.take(crossed, (slice(None), slice(pieces, pieces + point_bits)))
    widths = [k] + [k + j - 1 for j in range(1, pieces)]
    powers = torch.zeros(k + 3, pieces, dtype=torch.int64)
    for j, width in enumerate(widths):
        powers[:width, j] = 1 << torch.arange(width)
    offsets = torch.tensor([0] + [1 << (k + j - 1) for j in range(1, pieces)], dtype=torch.int64)
    m = A.plus(A.combine(point, powers), offsets)  # M_j (j >= 1), P_0 (j = 0)
    sign = A.expand(A.take(crossed, (slice(None), slice(pieces + point_bits, pieces + point_bits + 1))), n, pieces)
    (signed,) = mul_batch(A, [(sign, m)])
    per_piece = A.add(A.add(m, A.scale(signed, torch.tensor([0] + [-2] * (pieces - 1)))),
                      A.scale(sign, torch.tensor([-(1 << k)] + [-1] * (pieces - 1))))
    (chosen,) = mul_batch(A, [(indicators, per_piece)])
    value = A.total(chosen, 1)
    (square,) = mul_batch(A, [(value, value)])
    lam = A.reshape(A.combine(indicators, torch.tensor(plan.Lambda, dtype=torch.int64).reshape(pieces, 1)), n)
    return value, A.add(A.scale(square, plan.G), lam)


def _bits_and_tops(D: Domains, T: Any, mask: tuple[Any, Any], words: list[Any]) -> tuple[Any, list[Any]]:
    """(T's 62 bits (n, 62); per word (n, L) the one-hot of its top set bit, (n, L)) (step 4), in the bit domain
    from the edaBit ``mask`` (its bits (n, 64) in the bit domain, r (n,) in ``D.arith``)."""
    A, (mask, r) = D.bits, mask
    n = D.arith.shape(T)[0]
    c = D.arith.open(D.arith.sub(T, r), label="dg-auth-a2b")
    c_bits = (c.reshape(n, 1) >> torch.arange(MASK_BITS)) & 1
    r0 = _column(A, mask, 0)
    bits = [xor_public(A, r0, c_bits[:, 0])]
    carry = A.scale(r0, c_bits[:, 0])
    prefixes = [[_column(A, w, A.shape(w)[1] - 1)] for w in words]  # prefix ORs from each word's top bit
    for step in range(1, dg.WORD):
        ri = _column(A, mask, step)
        live = [i for i, w in enumerate(words) if A.shape(w)[1] - 1 - step >= 0]
        pairs = [(ri, carry)] + [(prefixes[i][-1], _column(A, words[i], A.shape(words[i])[1] - 1 - step)) for i in live]
        products = mul_batch(A, pairs)
        u = A.sub(A.add(ri, carry), A.scale(products[0], 2))  # r_i ⊕ carry_i
        bits.append(xor_public(A, u, c_bits[:, step]))
        carry = A.add(products[0], A.scale(u, c_bits[:, step]))
        for i, both in zip(live, products[1:]):
            top, bit = prefixes[i][-1], _column(A, words[i], A.shape(words[i])[1] - 1 - step)
            prefixes[i].append(A.sub(A.add(top, bit), both))  # top OR bit
    tops = []
    for chain in prefixes:  # chain[j] is the prefix OR from the top down to bit L − 1 − j
        ordered = chain[::-1]  # bit 0 first
        diffs = [A.sub(ordered[i], ordered[i + 1]) for i in range(len(ordered) - 1)] + [ordered[-1]]
        tops.append(A.cat([A.reshape(d, n, 1) for d in diffs], 1))
    return A.cat([A.reshape(b, n, 1) for b in bits], 1), tops


def _factor_entries(A: Arith, top: Any, table) -> Any:
    """(n, 2^w): for each window value a, [W ⊕ TH[a] < TH[a]] = Σ_i f_i·TH[a]_i (1 for TH[a] = 2^62)."""
    th = torch.from_numpy(table).to(torch.int64)
    full = th == (1 << dg.WORD)
    matrix = ((th.reshape(1, -1) >> torch.arange(dg.WORD).reshape(-1, 1)) & 1) * (~full).to(torch.int64)
    return A.plus(A.combine(top, matrix), full.to(torch.int64))


def candidate_circuit(D: Domains, plan: dg.DiscreteGaussianPlan, fields: dict[str, Any],
                      mask: tuple[Any, Any]) -> tuple[Any, Any]:
    """(n in ``D.arith``, accept in ``D.bits``) of every candidate, from its field bits (name -> (n, bits) in
    ``D.bits``, :func:`dg.field_bits`) and an edaBit per candidate (its 64 bits (n, 64) in ``D.bits``, its value
    (n,) in ``D.arith``): the rule of :func:`~mpcdp.noise.discrete_gaussian.accept` as a circuit (module steps
    2–6)."""
    value, T = _exponent(D, plan, fields)
    A = D.bits
    groups = [fields[f"v{g}"] for g in range(len(dg.GROUPS))]
    t, tops = _bits_and_tops(D, T, mask, groups + [fields["v_low"]])
    jobs = [(_columns(A, t, low, low + width), _factor_entries(A, top, table))
            for (low, width, _), top, table in zip(dg.GROUPS, tops, dg.group_thresholds())]
    (low_terms,) = mul_batch(A, [(_columns(A, tops[-1], 0, dg.LOW_BITS), _columns(A, t, 0, dg.LOW_BITS))])
    factors = mux_levels(A, jobs)
    cut = [not_bit(A, _column(A, t, i)) for i in range(dg.F + 6, dg.WORD)]
    return value, and_all(A, [*factors, not_bit(A, A.total(low_terms, 1)), *cut])


def products_per_candidate(plan: dg.DiscreteGaussianPlan) -> tuple[int, int]:
    """(bit-domain products, Z_2^128 products) per candidate of :func:`candidate_circuit` (counted by running it
    on one plaintext candidate)."""
    D = Domains.plain()
    bits = dg.field_bits(plan)
    candidate_circuit(D, plan, {name: torch.zeros(1, b, dtype=torch.int64) for name, b in bits.items()},
                      (torch.zeros(1, MASK_BITS, dtype=torch.int64), torch.zeros(1, dtype=torch.int64)))
    return D.bits.products, D.arith.products  # type: ignore[attr-defined]


_PLANTED = False  # the view audit's planted leak: no coin, so a candidate's bits are the dealt bits R


@contextlib.contextmanager
def planted_no_coin():
    """The view audit's planted dealer leak (``mpcdp audit views --security malicious --plant-leak dealer``):
    the coin is all zeros, so every candidate bit is the dealer's R (W = R without the coin). Never in a run."""
    global _PLANTED
    _PLANTED = True
    try:
        yield
    finally:
        _PLANTED = False


def _coin_bits(ctx: MpcContext, n: int, width: int) -> torch.Tensor:
    """(n, width) public bits of the committed coin, noted in this party's view (and, with ``ctx.keep_values``,
    kept for the view audit)."""
    stream = ctx.common_stream(label="dg-auth-coin", domain=_COIN_DOMAIN)
    words = stream.words(math.ceil(n * width / 64))
    if _PLANTED:
        words = torch.zeros_like(words)
    authenticated.note_public(ctx, "dg-auth-coin", words)
    bit_authenticated.note_public(ctx, "dg-auth-coin", words)
    bits = (words.reshape(-1, 1) >> torch.arange(64)) & 1
    bits = bits.reshape(-1)[: n * width].reshape(n, width)
    ctx.note_draw("dg-auth-coin", bits)
    return bits


def _mask(ctx: MpcContext, n: int) -> tuple[BitShared, AuthShared]:
    """n dealt edaBits of 64 bits: (their bits (n, 64) in the bit domain, r (n,) in Z_2^128)."""
    (value, mac), (r_value, r_mac) = EdaBits.fetch(n, MASK_BITS)
    return BitShared(value, mac), AuthShared(r_value, r_mac, 0)


def _domains(ctx: MpcContext) -> Domains:
    return Domains(BitArith(ctx, "dg-auth-bits"), AuthArith(ctx, "dg-auth"),
                   lambda x: bit_authenticated.to_arithmetic(ctx, x, label="dg-auth-cross"))


@dataclasses.dataclass
class AuthPass:
    """One pass: the opened (MAC-checked) accept bits and the candidates' authenticated values."""

    accepted: torch.Tensor
    value: AuthShared


def authenticated_pass(ctx: MpcContext, plan: dg.DiscreteGaussianPlan, n: int) -> AuthPass:
    """Draw n candidates and decide them (module steps 1–7)."""
    D = _domains(ctx)
    bits = dg.field_bits(plan)
    width = sum(bits.values())
    dealt = bit_authenticated.dealt_bits(ctx, n * width)
    drawn = xor_public(D.bits, D.bits.reshape(dealt, n, width), _coin_bits(ctx, n, width))
    fields, at = {}, 0
    for name in dg.RANDOM_FIELDS:
        fields[name] = _columns(D.bits, drawn, at, at + bits[name])
        at += bits[name]
    value, accept = candidate_circuit(D, plan, fields, _mask(ctx, n))
    bit_authenticated.bit_check(ctx, label="dg-auth (before the accept bits)")
    authenticated.mac_check(ctx, label="dg-auth (before the accept bits)")
    opened = bit_authenticated.open_bits(ctx, accept, label="dg-auth-accept", kind="comparison",
                                         reason="accept bits: a rejected candidate is discarded")
    bit_authenticated.bit_check(ctx, label="dg-auth-accept")
    return AuthPass(opened == 1, value)


def sample_authenticated(ctx: MpcContext, count: int, plan: dg.DiscreteGaussianPlan, *,
                         stats: dict | None = None) -> AuthShared:
    """Authenticated shares (grid units, precision 0) of ``count`` i.i.d. draws of the sampler of ``plan``,
    every party sampling (module docstring); ``stats`` gets the public counts (candidates, passes, accepted)."""
    if count < 1:
        raise ValueError(f"`count` must be >= 1. Found {count}.")
    authenticated.mac_key_share(ctx)  # the MAC keys first: the dealer deals authenticated material only after them
    bit_authenticated.bit_key_share(ctx)
    stats = stats if stats is not None else {}
    for key in ("candidates", "passes", "accepted"):
        stats.setdefault(key, 0)
    kept: list[AuthShared] = []
    have = 0
    while have < count:
        need = count - have
        n = min(int(need / plan.acceptance + 4 * math.sqrt(need) + 8), MAX_PASS)
        result = authenticated_pass(ctx, plan, n)
        stats["candidates"] += n
        stats["passes"] += 1
        stats["accepted"] += int(result.accepted.sum())
        index = torch.nonzero(result.accepted).reshape(-1)[:need]
        kept.append(AuthArith(ctx, "").take(result.value, index))
        have += index.numel()
    return AuthArith(ctx, "").cat(kept, 0)
