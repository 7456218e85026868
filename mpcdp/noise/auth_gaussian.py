"""The discrete Gaussian of :mod:`mpcdp.noise.discrete_gaussian` sampled inside the MPC with every opening
checked (``[mpc] security = "malicious"``, issue 48): circuit dg-auth/3.

Security model (:mod:`mpcdp.mpc.authenticated`): any set of data parties may deviate arbitrarily; the dealer is
honest and colludes with nobody. Two authenticated domains: every bit lives in the k = 1 bit domain of
:mod:`mpcdp.mpc.bit_authenticated` (an int64 word read mod 2^48 whose low bit is the value, 48-bit MACs, s = 47;
AND a Beaver product opening two bits, 18⅛ bytes dealt), the candidate's integers (n, n², T) in SPDZ2k's Z_2^128 of
:mod:`mpcdp.mpc.authenticated` (s = 64). Both checks — the bit check (λ = 48 parity rows, then SPDZ2k's check on
them: 2^-41.4) and the batched MAC check (2^-57.9) — run before the first factor's bits and before the accept
bits are opened, and the bit check again right after each, before they choose which candidates go on or are
kept: a party that deviates anywhere in the sampler makes every honest party stop with the MAC line before any
noise is used or output. Every data party samples
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
     (:func:`~mpcdp.mpc.bit_authenticated.to_arithmetic`, one opened bit and 38 dealt bytes each). n as in
     dg-auth/1: n_j = M_j − s·(2M_j + 1), n = Σ I_j·n_j (10 products, 2 rounds); T = G·n² + Σ Λ_j·I_j (1 product).
  4. T's bits: an edaBit (:class:`mpcdp.adapter.auth_bits.EdaBits`: 64 bit-domain bits r_i and [[r]] = Σ 2^i·r_i);
     c = T − r opened in Z_2^128 (uniform) and T = c + r by a ripple carry in the bit domain (one product per
     bit: 61 rounds), with the first factor's word's prefix OR from its top bit in the same rounds.
  5. The first factor (:data:`FIRST`, group (F − 4, 6): it rejects about 32% of the candidates, all the others
     and the cut together about 5%): TH's bit at the word's top set bit, selected by a mux on T's window.
     Bit check and MAC check (both domains, everything opened so far); its pass bits opened (one bit each); bit
     check; the candidates that fail it are dropped (as dg-mpc/7's early drop; the dropped candidates' other
     factor words were dealt with the rest, so the dealer's record of a pass stays one request of bits).
  6. On the survivors: the other words' top-bit one-hots by prefix ORs (61 rounds), each factor by a mux on T's
     window, the low factor [V_low < T_low] over T_low's 32 bits (as dg-auth/1, all in the bit domain);
     accept = AND of the other six factors, NOT the low factor and T's bits 59..61 all 0 (9 bit products).
  7. Bit check and MAC check; open the accept bits (one bit each); bit check; keep the accepted candidates' n
     (authenticated in Z_2^128, secret).

Cost (:func:`products_per_candidate`), σ = 16: 247 bit products per candidate (the index's one-hot 62, the
carry 61, the first word's prefix 61, its mux 63) and 625 per survivor (six prefixes 366, v_low's 52, muxes 166,
the low factor 32, the AND 9): 673 per candidate at the first factor's 68% pass rate (dg-auth/2: 873), each
2 bits opened and 18⅛ bytes dealt; 11 products in Z_2^128 (4 words opened, 96 bytes dealt each), 501 dealt bits
(6 bytes each), one edaBit (6·64 + 32 bytes), 5 + (k + 3) + 1 daBits (38 bytes and one opened bit each); measured
in benchmarks/results/noise-malicious.md. Where the bytes go (per candidate, dealt to party 0): the prefix ORs
≈ 63% of the bit products, the muxes ≈ 25%; every bit-domain element carries a MAC share dealt to party 0
(6 bytes: dg-auth/2 dealt 8, with s = 63), so a product costs 18⅛ bytes against the semi-honest circuit's packed
bits: not optimised further.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from typing import Any, Callable

import numpy as np
import torch

from mpcdp.adapter.auth_bits import EdaBits
from mpcdp.mpc import authenticated, bit_authenticated
from mpcdp.mpc.auth_circuits import (AuthArith, Arith, BitArith, PlainArith, and_all, mul_batch, mux_levels,
                                     not_bit, one_hot, xor_public)
from mpcdp.mpc.authenticated import AuthShared
from mpcdp.mpc.bit_authenticated import BitShared
from mpcdp.mpc.context import MpcContext
from mpcdp.noise import discrete_gaussian as dg

CIRCUIT = ("dg-auth/3: bits in SPDZ2k's k = 1 domain (low bit of Z_2^48, s = 47, MAC shares dealt in 6 bytes; AND opens "
           "2 bits, 18⅛ dealt bytes; "
           "checked by 48 parity rows and SPDZ2k's check), integers in Z_2^128 (s = 64), daBits and an edaBit between "
           "them; dealt bits XOR the committed coin, T's bits by a ripple carry on an opened mask, factors by the "
           "top set bit's one-hot and a mux; the first factor decided, checked and opened first and its failures "
           "dropped; both checks before each opened decision and the bit check after")
MASK_BITS = 64
MAX_PASS = 1 << 12  # candidates per pass: bounds a pass's memory (≈ 870 products each at most)
_COIN_DOMAIN = b"mpcdp/noise-coin-auth"


@dataclasses.dataclass
class Domains:
    """The circuit's backends: ``bits`` (the k = 1 bit domain, or plaintext), ``arith`` (Z_2^128, or plaintext),
    ``to_arith`` (a bit-domain value of any shape into ``arith``: daBits, or the low bit in plaintext) and
    ``decide`` (bit-domain decision bits (n,) and a label -> the opened bits, 0/1 int64: in the parties' run
    both checks before the opening and the bit check after it, :func:`_checked_decision`)."""

    bits: Arith
    arith: Arith
    to_arith: Callable[[Any], Any]
    decide: Callable[[Any, str], torch.Tensor]

    @staticmethod
    def plain(bits: Arith | None = None) -> Domains:
        """Plaintext twins (the tests', the product count's); ``bits`` e.g. a :class:`PlainBits`."""
        backend = bits or PlainArith()
        return Domains(backend, PlainArith(), lambda x: x & 1, lambda x, label: backend.open(x, label=label) & 1)


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


def _prefix_pairs(A: Arith, prefixes: list[list[Any]], words: list[Any], step: int) -> tuple[list[int], list]:
    """The words still live at ``step`` and their prefix-OR products (the running OR from the top, next bit)."""
    live = [i for i, w in enumerate(words) if A.shape(w)[1] - 1 - step >= 0]
    return live, [(prefixes[i][-1], _column(A, words[i], A.shape(words[i])[1] - 1 - step)) for i in live]


def _extend_prefixes(A: Arith, prefixes: list[list[Any]], words: list[Any], step: int, live: list[int],
                     products: list[Any]) -> None:
    for i, both in zip(live, products):
        top, bit = prefixes[i][-1], _column(A, words[i], A.shape(words[i])[1] - 1 - step)
        prefixes[i].append(A.sub(A.add(top, bit), both))  # top OR bit


def _tops_from(A: Arith, n: int, prefixes: list[list[Any]]) -> list[Any]:
    """Per word (n, L) the one-hot of its top set bit from its prefix ORs (chain[j]: from the top down to bit
    L − 1 − j): consecutive differences, local."""
    tops = []
    for chain in prefixes:
        ordered = chain[::-1]  # bit 0 first
        diffs = [A.sub(ordered[i], ordered[i + 1]) for i in range(len(ordered) - 1)] + [ordered[-1]]
        tops.append(A.cat([A.reshape(d, n, 1) for d in diffs], 1))
    return tops


def _top_one_hots(A: Arith, words: list[Any]) -> list[Any]:
    """Per word (n, L) the one-hot of its top set bit, by prefix ORs from the top (L − 1 products each, all
    words' in the same rounds: max L − 1 rounds)."""
    if not words:
        return []
    n = A.shape(words[0])[0]
    prefixes = [[_column(A, w, A.shape(w)[1] - 1)] for w in words]
    for step in range(1, max(A.shape(w)[1] for w in words)):
        live, pairs = _prefix_pairs(A, prefixes, words, step)
        _extend_prefixes(A, prefixes, words, step, live, mul_batch(A, pairs))
    return _tops_from(A, n, prefixes)


def _bits_and_tops(D: Domains, T: Any, mask: tuple[Any, Any], words: list[Any]) -> tuple[Any, list[Any]]:
    """(T's 62 bits (n, 62); per word (n, L) the one-hot of its top set bit, (n, L)) (step 4), in the bit domain
    from the edaBit ``mask`` (its bits (n, 64) in the bit domain, r (n,) in ``D.arith``); the words' prefix ORs
    ride in the carry chain's rounds."""
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
        live, pairs = _prefix_pairs(A, prefixes, words, step)
        products = mul_batch(A, [(ri, carry)] + pairs)
        u = A.sub(A.add(ri, carry), A.scale(products[0], 2))  # r_i ⊕ carry_i
        bits.append(xor_public(A, u, c_bits[:, step]))
        carry = A.add(products[0], A.scale(u, c_bits[:, step]))
        _extend_prefixes(A, prefixes, words, step, live, products[1:])
    return A.cat([A.reshape(b, n, 1) for b in bits], 1), _tops_from(A, n, prefixes)


def _factor_entries(A: Arith, top: Any, table) -> Any:
    """(n, 2^w): for each window value a, [W ⊕ TH[a] < TH[a]] = Σ_i f_i·TH[a]_i (1 for TH[a] = 2^62)."""
    th = torch.from_numpy(table).to(torch.int64)
    full = th == (1 << dg.WORD)
    matrix = ((th.reshape(1, -1) >> torch.arange(dg.WORD).reshape(-1, 1)) & 1) * (~full).to(torch.int64)
    return A.plus(A.combine(top, matrix), full.to(torch.int64))


FIRST = 3
"""The first factor (group (F − 4, 6): t's bits 1/16..2): it rejects about 32% of the candidates, every other
factor and the cut together about 5%; decided and opened first, and the candidates that fail it dropped."""


def first_stage(D: Domains, plan: dg.DiscreteGaussianPlan, fields: dict[str, Any],
                mask: tuple[Any, Any]) -> tuple[Any, Any, Any]:
    """(n in ``D.arith``, T's bits (n, 62) and the first factor's bit (n,), both in ``D.bits``) of every
    candidate (module steps 2–5)."""
    value, T = _exponent(D, plan, fields)
    A = D.bits
    t, (top,) = _bits_and_tops(D, T, mask, [fields[f"v{FIRST}"]])
    low, width, _ = dg.GROUPS[FIRST]
    (first,) = mux_levels(A, [(_columns(A, t, low, low + width), _factor_entries(A, top, dg.group_thresholds()[FIRST]))])
    return value, t, first


def second_stage(A: Arith, plan: dg.DiscreteGaussianPlan, fields: dict[str, Any], t: Any) -> Any:
    """The AND of every other factor, the low factor and the cut (T's bits 59..61 all 0), in the bit domain, of
    the candidates whose ``fields`` and T's bits ``t`` are given (the survivors of the first factor; module
    step 6)."""
    others = [g for g in range(len(dg.GROUPS)) if g != FIRST]
    tops = _top_one_hots(A, [fields[f"v{g}"] for g in others] + [fields["v_low"]])
    jobs = [(_columns(A, t, dg.GROUPS[g][0], dg.GROUPS[g][0] + dg.GROUPS[g][1]),
             _factor_entries(A, top, dg.group_thresholds()[g])) for g, top in zip(others, tops)]
    (low_terms,) = mul_batch(A, [(_columns(A, tops[-1], 0, dg.LOW_BITS), _columns(A, t, 0, dg.LOW_BITS))])
    factors = mux_levels(A, jobs)
    cut = [not_bit(A, _column(A, t, i)) for i in range(dg.F + 6, dg.WORD)]
    return and_all(A, [*factors, not_bit(A, A.total(low_terms, 1)), *cut])


def candidate_circuit(D: Domains, plan: dg.DiscreteGaussianPlan, fields: dict[str, Any],
                      mask: tuple[Any, Any]) -> tuple[Any, torch.Tensor]:
    """(n in ``D.arith``, the opened accept bits (n,) 0/1) of every candidate, from its field bits (name -> (n,
    bits) in ``D.bits``, :func:`dg.field_bits`) and an edaBit per candidate (its 64 bits (n, 64) in ``D.bits``,
    its value (n,) in ``D.arith``): the rule of :func:`~mpcdp.noise.discrete_gaussian.accept` as a circuit
    (module steps 2–7). The first factor's bits are opened by ``D.decide`` and only the candidates that pass it
    go on; their accept bits are opened by ``D.decide`` too (a dropped candidate's is 0)."""
    value, t, first = first_stage(D, plan, fields, mask)
    A = D.bits
    passed = D.decide(first, "dg-auth-first")
    survivors = torch.nonzero(passed).reshape(-1)
    accept = torch.zeros_like(passed)
    if survivors.numel():
        kept = {name: A.take(bits, survivors) for name, bits in fields.items()}
        accept[survivors] = D.decide(second_stage(A, plan, kept, A.take(t, survivors)), "dg-auth-accept")
    return value, accept


@dataclasses.dataclass(frozen=True)
class Products:
    """Bit-domain products per candidate (``first``, every candidate) and per survivor of the first factor
    (``second``), Z_2^128 products per candidate (``arith``), and the first factor's pass rate ``survive`` at
    the plan (the plaintext rule on 2^16 candidates of a fixed seed)."""

    first: int
    second: int
    arith: int
    survive: float

    @property
    def bits(self) -> float:
        """Expected bit-domain products per candidate."""
        return self.first + self.survive * self.second


def products_per_candidate(plan: dg.DiscreteGaussianPlan) -> Products:
    """:class:`Products` of :func:`candidate_circuit` (counted by running its stages on plaintext)."""
    D = Domains.plain()
    bits = dg.field_bits(plan)
    fields = {name: torch.zeros(1, b, dtype=torch.int64) for name, b in bits.items()}
    _, t, _ = first_stage(D, plan, fields, (torch.zeros(1, MASK_BITS, dtype=torch.int64),
                                            torch.zeros(1, dtype=torch.int64)))
    first = D.bits.products  # type: ignore[attr-defined]
    second_stage(D.bits, plan, fields, t)
    return Products(first, D.bits.products - first, D.arith.products,  # type: ignore[attr-defined]
                    first_pass_rate(plan))


def first_pass_rate(plan: dg.DiscreteGaussianPlan, n: int = 1 << 16) -> float:
    """The first factor's pass rate among uniform candidates (the plaintext rule, a fixed seed)."""
    rng = np.random.default_rng(48)
    fields = {name: rng.integers(0, 1 << b, n, dtype=np.int64) for name, b in dg.field_bits(plan).items()}
    values, piece = dg.candidate_values(plan, fields)
    T = dg.exponent(plan, values, piece)
    (low, width, _), table = dg.GROUPS[FIRST], dg.group_thresholds()[FIRST]
    th = table[(T >> low) & ((1 << width) - 1)]
    return float((((fields[f"v{FIRST}"] ^ th) < th) | (th == 1 << dg.WORD)).mean())


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


_DECISIONS = {"dg-auth-first": "first-factor bits: a candidate that fails its first factor is dropped",
              "dg-auth-accept": "accept bits: a rejected candidate is discarded"}


def _checked_decision(ctx: MpcContext, x: BitShared, label: str) -> torch.Tensor:
    """Decision bits opened with every check around them: the bit check and the MAC check of everything opened
    so far (both domains) before the opening, the bit check of the opening itself after it and before the bits
    steer anything (which candidates go on, or are kept)."""
    what = label.removeprefix("dg-auth-").replace("first", "first-factor")
    bit_authenticated.bit_check(ctx, label=f"dg-auth (before the {what} bits)")
    authenticated.mac_check(ctx, label=f"dg-auth (before the {what} bits)")
    opened = bit_authenticated.open_bits(ctx, x, label=label, kind="comparison", reason=_DECISIONS[label])
    bit_authenticated.bit_check(ctx, label=label)
    return opened


def _domains(ctx: MpcContext) -> Domains:
    return Domains(BitArith(ctx, "dg-auth-bits"), AuthArith(ctx, "dg-auth"),
                   lambda x: bit_authenticated.to_arithmetic(ctx, x, label="dg-auth-cross"),
                   lambda x, label: _checked_decision(ctx, x, label))


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
    return AuthPass(accept == 1, value)


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
