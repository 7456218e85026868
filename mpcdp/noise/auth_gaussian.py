"""The discrete Gaussian of :mod:`mpcdp.noise.discrete_gaussian` sampled inside the MPC with every opening
MAC-checked (``[mpc] security = "malicious"``, issue 48): circuit dg-auth/1.

Security model (:mod:`mpcdp.mpc.authenticated`): any set of data parties may deviate arbitrarily; the dealer is
honest and colludes with nobody. Every value, bits included, is an authenticated element of Z_2^64 with SPDZ2k
MACs over Z_2^128 (s = 64), every product an authenticated Beaver multiplication whose ε and δ join the pending
MAC check, and the batched MAC check (:func:`~mpcdp.mpc.authenticated.mac_check`) runs before the accept bits
are opened and again right after, before they choose which candidates are kept: a party that deviates
anywhere in the sampler makes every honest party stop with the MAC line before any noise is used or output
(a soundness error of at most 2^-57.9 per check, SPDZ2k's bound at s = 64). Every data party samples (no
committee): a smaller committee would let its members change the noise without any MAC to catch them.

The rule is the plaintext rule of :func:`~mpcdp.noise.discrete_gaussian.accept` on the same candidate bits,
so the output pmf is exactly :func:`~mpcdp.noise.discrete_gaussian.exact_log_pmf`'s. Per candidate, in
:func:`candidate_circuit` (written once for the parties' authenticated shares and for plaintext, so a test
runs the same code on plaintext bits against the rule):

  1. Random fields (:data:`~mpcdp.noise.discrete_gaussian.RANDOM_FIELDS`: index 6 bits, point k+3, sign 1,
     the seven factors' 62-bit words, the low word's 53): each bit is a dealt authenticated bit R
     (:class:`mpcdp.adapter.auth_bits.AuthBits`) XOR the committee's committed coin S (public to the parties,
     never to the dealer; noted in every party's view, so a coin that differs between parties fails the next
     check): no single role knows a candidate's bits (issue 44: the dealer knows R, each party S).
  2. Piece: the one-hot of the index (62 products), the piece indicators I_j a public selection.
  3. n: n_0 = P_0 − 2^k·s, n_j = M_j − s·(2M_j + 1) (M_j = 2^(k+j−1) + the point's low k+j−1 bits);
     n = Σ I_j·n_j (10 products, 2 rounds). T = G·n² + Σ Λ_j·I_j (1 product).
  4. T's bits: 64 dealt bits r_i give [[r]] = Σ 2^i·[[r_i]]; c = T − r is opened (uniform) and T = c + r by a
     ripple carry on public c (one product per bit: 61 rounds). In the same rounds, each factor word's prefix OR
     from its top bit (61 products per 62-bit word, 52 for the low word): f_i = pre_i − pre_(i+1) is the
     one-hot of the word's top set bit.
  5. Factor g (window a_g of T): [W ⊕ TH < TH] is TH's bit at W's top set bit, so for every window value a
     the factor is Σ_i f_i·TH_g[a]_i (linear; 1 where TH_g[a] = 2^62), and a mux tree on a_g's bits selects
     it (2^w − 1 products). The low factor [V_low < T_low] is Σ_i f_i·t_i over T_low's 32 bits (32 products).
  6. Accept = AND of the seven factors, NOT the low factor and T's bits 59..61 all 0 (10 products).
  7. MAC check; open the accept bits; MAC check; keep the accepted candidates' n (authenticated, secret).

Cost per candidate (:func:`products_per_candidate`): 884 authenticated products (each 4 words opened, 96 bytes
dealt) and 530 + 64 dealt bits (32 bytes each, for σ = 1 at 16 bits); measured at m = 3, 1,000 samples:
366 kB per sample against the semi-honest circuit's 2.65 kB (138×; wall 39×;
benchmarks/results/noise-malicious.md), about 87 openings (174 rounds) per pass, two MAC checks. Not
optimised: correctness and soundness first (the first factor's early drop, which the semi-honest circuit uses,
would save about a fifth).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from typing import Any

import torch

from mpcdp.adapter.auth_bits import AuthBits
from mpcdp.mpc import authenticated
from mpcdp.mpc.auth_circuits import (AuthArith, Arith, PlainArith, and_all, mul_batch, mux_levels, not_bit,
                                     one_hot, xor_public)
from mpcdp.mpc.authenticated import AuthShared
from mpcdp.mpc.context import MpcContext
from mpcdp.noise import discrete_gaussian as dg

CIRCUIT = ("dg-auth/1: every bit an authenticated element of Z_2^64 (SPDZ2k MACs over Z_2^128, s = 64), dealt bits "
           "XOR the committed coin, authenticated Beaver products, T's bits by a ripple carry on an opened mask, "
           "factors by the top set bit's one-hot and a mux, MAC check before and after the accept bits")
MASK_BITS = 64
MAX_PASS = 1 << 12  # candidates per pass: bounds a pass's memory (≈ 900 products each)
_COIN_DOMAIN = b"mpcdp/noise-coin-auth"


def _column(A: Arith, x: Any, i: int) -> Any:
    return A.take(x, (slice(None), i))


def _columns(A: Arith, x: Any, start: int, stop: int) -> Any:
    return A.take(x, (slice(None), slice(start, stop)))


def _exponent(A: Arith, plan: dg.DiscreteGaussianPlan, fields: dict[str, Any]) -> tuple[Any, Any]:
    """(n, T) of every candidate from its field bits (steps 2–3)."""
    k, pieces = plan.k, dg.PIECES
    hot = one_hot(A, fields["index"])  # (n, 64)
    select = torch.zeros(1 << dg.INDEX_BITS, pieces, dtype=torch.int64)
    select[torch.arange(1 << dg.INDEX_BITS), torch.from_numpy(plan.index_table())] = 1
    indicators = A.combine(hot, select)  # (n, 5): I_j
    widths = [k] + [k + j - 1 for j in range(1, pieces)]
    powers = torch.zeros(k + 3, pieces, dtype=torch.int64)
    for j, width in enumerate(widths):
        powers[:width, j] = 1 << torch.arange(width)
    offsets = torch.tensor([0] + [1 << (k + j - 1) for j in range(1, pieces)], dtype=torch.int64)
    m = A.plus(A.combine(fields["point"], powers), offsets)  # M_j (j >= 1), P_0 (j = 0)
    n = A.shape(hot)[0]
    sign = A.expand(fields["sign"], n, pieces)
    (signed,) = mul_batch(A, [(sign, m)])
    per_piece = A.add(A.add(m, A.scale(signed, torch.tensor([0] + [-2] * (pieces - 1)))),
                      A.scale(sign, torch.tensor([-(1 << k)] + [-1] * (pieces - 1))))
    (chosen,) = mul_batch(A, [(indicators, per_piece)])
    value = A.total(chosen, 1)
    (square,) = mul_batch(A, [(value, value)])
    lam = A.reshape(A.combine(indicators, torch.tensor(plan.Lambda, dtype=torch.int64).reshape(pieces, 1)), n)
    return value, A.add(A.scale(square, plan.G), lam)


def _bits_and_tops(A: Arith, T: Any, mask: Any, words: list[Any]) -> tuple[Any, list[Any]]:
    """(T's 62 bits (n, 62); per word (n, L) the one-hot of its top set bit, (n, L)) (step 4)."""
    n = A.shape(T)[0]
    powers = torch.ones(MASK_BITS, 1, dtype=torch.int64) << torch.arange(MASK_BITS).reshape(-1, 1)
    r = A.reshape(A.combine(mask, powers), n)  # [[r]] = Σ 2^i·[[r_i]]: an edaBit from 64 dealt bits
    c = A.open(A.sub(T, r), label="dg-auth-a2b")
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


def candidate_circuit(A: Arith, plan: dg.DiscreteGaussianPlan, fields: dict[str, Any], mask: Any) -> tuple[Any, Any]:
    """(n, accept) of every candidate, from its field bits (name -> (n, bits), :func:`dg.field_bits`) and 64
    mask bits (n, 64): the rule of :func:`~mpcdp.noise.discrete_gaussian.accept` as a circuit (module steps 2–6)."""
    value, T = _exponent(A, plan, fields)
    groups = [fields[f"v{g}"] for g in range(len(dg.GROUPS))]
    t, tops = _bits_and_tops(A, T, mask, groups + [fields["v_low"]])
    jobs = [(_columns(A, t, low, low + width), _factor_entries(A, top, table))
            for (low, width, _), top, table in zip(dg.GROUPS, tops, dg.group_thresholds())]
    (low_terms,) = mul_batch(A, [(_columns(A, tops[-1], 0, dg.LOW_BITS), _columns(A, t, 0, dg.LOW_BITS))])
    factors = mux_levels(A, jobs)
    cut = [not_bit(A, _column(A, t, i)) for i in range(dg.F + 6, dg.WORD)]
    return value, and_all(A, [*factors, not_bit(A, A.total(low_terms, 1)), *cut])


def products_per_candidate(plan: dg.DiscreteGaussianPlan) -> int:
    """Authenticated products per candidate of :func:`candidate_circuit` (counted by running it on one
    plaintext candidate)."""
    A = PlainArith()
    bits = dg.field_bits(plan)
    candidate_circuit(A, plan, {name: torch.zeros(1, b, dtype=torch.int64) for name, b in bits.items()},
                      torch.zeros(1, MASK_BITS, dtype=torch.int64))
    return A.products


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
    bits = (words.reshape(-1, 1) >> torch.arange(64)) & 1
    bits = bits.reshape(-1)[: n * width].reshape(n, width)
    ctx.note_draw("dg-auth-coin", bits)
    return bits


def _dealt_bits(n: int, width: int) -> AuthShared:
    value, mac = AuthBits.fetch(n * width)
    return AuthShared(value.reshape(n, width), mac.reshape(n, width), 0)


@dataclasses.dataclass
class AuthPass:
    """One pass: the opened (MAC-checked) accept bits and the candidates' authenticated values."""

    accepted: torch.Tensor
    value: AuthShared


def authenticated_pass(ctx: MpcContext, plan: dg.DiscreteGaussianPlan, n: int) -> AuthPass:
    """Draw n candidates and decide them (module steps 1–7)."""
    A = AuthArith(ctx, "dg-auth")
    bits = dg.field_bits(plan)
    width = sum(bits.values())
    drawn = xor_public(A, _dealt_bits(n, width), _coin_bits(ctx, n, width))
    fields, at = {}, 0
    for name in dg.RANDOM_FIELDS:
        fields[name] = _columns(A, drawn, at, at + bits[name])
        at += bits[name]
    value, accept = candidate_circuit(A, plan, fields, _dealt_bits(n, MASK_BITS))
    authenticated.mac_check(ctx, label="dg-auth (before the accept bits)")
    opened = authenticated.open_values(ctx, accept, label="dg-auth-accept", kind="comparison",
                                       reason="accept bits: a rejected candidate is discarded")
    authenticated.mac_check(ctx, label="dg-auth-accept")
    return AuthPass(opened == 1, value)


def sample_authenticated(ctx: MpcContext, count: int, plan: dg.DiscreteGaussianPlan, *,
                         stats: dict | None = None) -> AuthShared:
    """Authenticated shares (grid units, precision 0) of ``count`` i.i.d. draws of the sampler of ``plan``,
    every party sampling (module docstring); ``stats`` gets the public counts (candidates, passes, accepted)."""
    if count < 1:
        raise ValueError(f"`count` must be >= 1. Found {count}.")
    authenticated.mac_key_share(ctx)  # the MAC key first: the dealer deals authenticated material only after it
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
