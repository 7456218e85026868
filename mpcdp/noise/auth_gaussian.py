"""The discrete Gaussian of :mod:`mpcdp.noise.discrete_gaussian` sampled inside the MPC with every opening
checked (``[mpc] security = "malicious"``, issue 48): circuit dg-auth/9, or dg-auth/10 under ``[mpc]
malicious_sampler = "fewer-rounds"`` (fewer rounds for more bytes; last paragraph).

Security model (:mod:`mpcdp.mpc.authenticated`): any set of data parties may deviate arbitrarily; the dealer is
honest and colludes with nobody. Two authenticated domains: every bit lives in the k = 1 bit domain of
:mod:`mpcdp.mpc.bit_authenticated` (an int64 word read mod 2^48 whose low bit is the value, 48-bit MACs, s = 47;
AND a Beaver product opening two bits, 18⅛ bytes dealt, or, when one factor is a dealt bit, a half product
opening one bit, 12⅛ bytes dealt: :func:`~mpcdp.mpc.bit_authenticated.multiply_dealt`), the candidate's integers (n, n², T) in SPDZ2k's Z_2^128 of
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
     The index's R comes as its one-hot, dealt (:class:`mpcdp.adapter.auth_bits.OneHots`: the dealer knows R,
     no party does; its parts are every party's, as a dealt bit's). Only the first stage's fields
     (:data:`FIRST_FIELDS`: the index, the point, the sign and the first factor's word, 76 bits at σ = 16, the
     index's 6 as its one-hot) are dealt for every candidate; the other words (:data:`SECOND_FIELDS`, 258 bits)
     for the survivors of the first factor only, in step 6. A word is dealt from its bit :data:`READ_FROM` up
     (TH's lower bits are 0): v0, v1 46 bits, v3 42, v4, v5 41, v_low 42 (dg-auth/7: 62 and 53).
     One committed coin per pass, read in order: the survivors' S comes from the stream fixed before any bit of
     the pass was dealt.
  2. Piece: the one-hot of the index W = R ⊕ S, the dealt one-hot of R with its columns permuted by S (column
     a is [R = a ⊕ S]: local, :class:`~mpcdp.mpc.auth_circuits.DealtHot`; dg-auth/3 computed it in 62 bit
     products), the piece indicators I_j a public selection.
  3. n and T (:mod:`mpcdp.noise.auth_exponent`): n's two's complement word (k + 6 bits) in the bit domain, from
     the point's bits masked by the piece's width (p_b·U_b) and s·I_0 (k + 5 half products, one round; the
     piece's start bits and U_b local selections of the one-hot), then its bits and I_1..I_8 into Z_2^128 by
     daBits (:func:`~mpcdp.mpc.bit_authenticated.to_arithmetic`, one opened bit and 38 dealt bytes each), n
     local there, T = G·n² + Σ Λ_j·I_j (1 product; dg-auth/5: 2·PIECES + 1 = 19 products in Z_2^128).
  4. T's bits: an edaBit (:class:`mpcdp.adapter.auth_bits.EdaBits`: 64 bit-domain bits r_i and [[r]] = Σ 2^i·r_i);
     c = T − r opened in Z_2^128 (uniform) and T = c + r by a ripple carry in the bit domain (one product per
     bit: 61 rounds), with the first factor's word's prefix OR from its top bit in the same rounds. Every product
     here has a dealt factor (r_i; a word's bit W_i = R_i ⊕ S_i, where carry·W_i = carry·S_i + (1 − 2S_i)·(carry·R_i)):
     half products, each r_i and R_i dealt with its half triple (b, c ≡ R_i·b) and used in one product only.
  5. The first factor (:data:`FIRST`, group (F − 2, 6), t's bits 1/4..8: it rejects about 15% of the candidates,
     all the others and the cut together about 8%): TH's bit at the word's top set bit, selected by a mux on T's window.
     Every mux's window is masked by dealt bits ρ (:class:`~mpcdp.adapter.auth_bits.MaskBits`) and opened, window ⊕
     ρ (uniform: only the dealer knows ρ and it sees no opening), so each of its 2^w − 1 products is a half
     product on its own copy of a ρ bit (:func:`_selectors`; dg-auth/8: full products). Bit check and MAC check
     (both domains, everything opened so far); its pass bits opened (one bit each); bit check; the candidates
     that fail it are dropped (as dg-mpc/7's early drop).
  6. On the survivors: their other words dealt now (:data:`SECOND_FIELDS`: a second request of dealt bits per
     pass, R XOR the coin's next bits, every bit but a word's top one with its half triple), the other words'
     top-bit one-hots by prefix ORs (over the bits read: 45 rounds of half products), each factor by a masked mux
     on T's window, the low factor [V_low < T'_low] over T_low's 22 bits from 2^-42 (all in the bit domain);
     accept = AND of the other five factors, NOT the low factor and T's bits 59..61 all 0 (8 bit products).
  7. Bit check and MAC check; open the accept bits (one bit each); bit check; keep the accepted candidates' n
     (authenticated in Z_2^128, secret).

Why dealing the survivors' words after the opening is safe. Soundness: the survivors are chosen by pass bits
that the bit check verified (step 5) before they steer anything, and their words are dealt, authenticated and
XORed with the committed coin exactly as the first stage's; a party 0 that asks for another number of bits
than the survivors' breaks its own shares' correlation with the other parties' draws, and the checks before
the accept bits fail. Privacy: the dealer's second request of a pass has the survivor count as its size, a
function of the opened first-factor bits that every party sees anyway and that the dealer already saw in
dg-auth/3 (the survivors' bit triples are requested for them only); and the count is independent of the
released noise: the candidates are i.i.d., an accepted candidate always passed its first factor, and given
which candidates are accepted their values are i.i.d. draws of the target pmf, independent of the rejected
candidates' bits, which alone set the rest of the count. The view audit (``mpcdp audit views --security
malicious``, :mod:`mpcdp.jobs.auth_views`) tests the dealer's view, both requests of every pass included.

Cost (:func:`mpcdp.noise.auth_gaussian_cost.products_per_candidate`), σ = 16: per candidate 193 half bit products
(the carry 61, the first word's prefix 61, the mux 63, n's word 8); per survivor 30 full (the low factor 22, the
AND 8) and 447 half (muxes 195, five prefixes 211, v_low's 41). At the first factor's 86% pass rate: 26 full (2
bits opened, 18⅛ bytes dealt each) and 576 half products (1 bit opened, 12⅛ bytes dealt each) per candidate, 602
ANDs (dg-auth/8: 256 full and 346 half; dg-auth/7: 691); 1 product in Z_2^128 (n²: 4 words opened, 96 bytes
dealt), a dealt one-hot of 64 bits (6⅛ bytes each), 70 dealt bits per candidate (the point's k + 4 = 7, the
sign, the first word's 62) and 258 per survivor (five words, v_low's 42), 6 bytes each, the windows' masks (6
bits, 22 per survivor; opened), one edaBit (6·64 + 32 bytes, 61 half triples), (k + 6) + 8 daBits (38 bytes, one
opened bit each): 10,889 bytes dealt and 1,055 bits opened per candidate (dg-auth/8: 12,120 and 1,260); measured in
benchmarks/results/noise-malicious.md. Every bit-domain element carries a MAC share dealt to one party (6 bytes), so a
half product costs 12⅛ bytes against the semi-honest circuit's packed bits: issue 48's 2.5× is out of reach here.

dg-auth/10 (``[mpc] malicious_sampler = "fewer-rounds"``, :func:`one_decision`): the same rule and steps 1–4 with
every field of every candidate dealt in the pass's one request, so every word's prefix chain rides in the carry
chain's 61 AND layers; every factor's masked mux in the same 6 layers, then the low factor and the AND (9
products, 4 layers); one decision per pass, the accept bits, with step 7's checks around it. 178 rounds a pass
against 300 (measured; an AND layer is one opening, 2 rounds through the star: gone are the survivors' 45
prefix layers, the first decision with its checks, and the first mux's own 6 layers); per candidate 31 full and
640 half bit products and 328 dealt bits (no survivor stage): 12,008 bytes dealt and 1,132 bits opened per
candidate at σ = 16 (+10% and +7%), and every word's dealt material held at once (a larger peak of memory, whose
first touch is system CPU on the parties' host). Soundness and privacy as dg-auth/9's, with less to argue: one
request of dealt bits per pass, its size set by n alone (no survivor count reaches the dealer), and the one
opened decision checked as step 7's. The view audit runs it with ``--malicious-sampler fewer-rounds``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import torch

from mpcdp.mpc import authenticated, bit_authenticated
from mpcdp.mpc.auth_circuits import (AuthArith, Arith, BitArith, Dealt, DealtHot, PlainArith, and_all, mul_batch,
                                     mux_levels, not_bit, selector_columns, xor_public)
from mpcdp.mpc.authenticated import AuthShared
from mpcdp.mpc.bit_authenticated import BitShared
from mpcdp.mpc.context import MpcContext
from mpcdp.noise import discrete_gaussian as dg
from mpcdp.noise.auth_dealt import MASK_BITS, eda_mask, window_masks
from mpcdp.noise.auth_fields import COIN_LABELS, FIRST, FIRST_FIELDS, READ_FROM, SECOND_FIELDS, Coin, draw_fields
from mpcdp.noise.auth_exponent import exponent
from mpcdp.noise.secure_gaussian import candidates_wanted

CIRCUIT = ("dg-auth/9: dg-auth/8 with every mux's window masked by dealt bits (a half triple per product) and opened, so its products are half products (dg-auth/8: 256 full and 346 half per candidate, now 26 and 576); dg-auth/8: dg-auth/7 with each factor's word dealt and read only from its threshold table's lowest set bit up (v0, v1 from bit 16, v3 from 20, v4, v5 from 21, v_low from 2^-42: 105 dealt bits and half products fewer per survivor, 16 rounds fewer); dg-auth/7: dg-auth/6 with every party's bit-check σ share reduced mod 2^48 (the check's ring; dg-auth/6 sent its bits above 2^48, carries of party 0's dealt MAC shares); n as a two's complement word in the bit domain (the point's bits masked by the piece's width and s·I_0: k + 5 half products), its bits and I_1..I_8 crossed, n² the one product in Z_2^128 (dg-auth/5: 19 there); the plan of 9 pieces, the low factor on T's bits from 2^-42 (dgauss-grid/3; dg-auth/4 read all 32); bits in SPDZ2k's k = 1 domain (low bit of Z_2^48, s = 47, MAC shares dealt in 6 bytes; AND opens "
           "2 bits, 18⅛ dealt bytes, or 1 bit and 12⅛ bytes with a dealt factor's half triple; "
           "checked by 48 parity rows and SPDZ2k's check), integers in Z_2^128 (s = 64), daBits and an edaBit between "
           "them; dealt bits XOR the committed coin, T's bits by a ripple carry on an opened mask, factors by the "
           "top set bit's one-hot and a mux; the first factor decided, checked and opened first and its failures "
           "dropped, the other factors' words dealt for its survivors only, the index's one-hot dealt; both checks before each opened decision and the bit check after")
ONE_DECISION = ("dg-auth/10: dg-auth/9 with every field of every candidate dealt in the pass's one request, every "
                "word's prefix chain in the carry chain's rounds and every factor's mux in the same rounds, and one "
                "decision per pass (the accept bits, both checks before their opening and the bit check after): "
                "about 178 rounds a pass against 300, 12,008 bytes dealt per candidate against 10,889 at sigma = 16")
CIRCUITS = {"fewer-bytes": CIRCUIT, "fewer-rounds": ONE_DECISION}
"""The circuit of each ``[mpc] malicious_sampler`` plan (:data:`mpcdp.config.MALICIOUS_SAMPLERS`)."""
MAX_PASS = 1 << 14  # candidates per pass: bounds a pass's memory (≈ 870 products each at most; ≈ 1.05 GB per party)


@dataclasses.dataclass
class Domains:
    """The circuit's backends: ``bits`` (the k = 1 bit domain, or plaintext), ``arith`` (Z_2^128, or plaintext),
    ``to_arith`` (a bit-domain value of any shape into ``arith``: daBits, or the low bit in plaintext) and
    ``decide`` (bit-domain decision bits (n,) and a label -> the opened bits, 0/1 int64: in the parties' run
    both checks before the opening and the bit check after it, :func:`_checked_decision`); ``masks`` (n, width,
    columns -> n rows of ``width`` dealt bits and the half triples of ``columns``:
    :class:`~mpcdp.adapter.auth_bits.MaskBits`, or uniform plaintext bits and None)."""

    bits: Arith
    arith: Arith
    to_arith: Callable[[Any], Any]
    decide: Callable[[Any, str], torch.Tensor]
    masks: Callable[[int, int, list[int]], tuple[Any, Any]]

    @staticmethod
    def plain(bits: Arith | None = None) -> Domains:
        """Plaintext twins (the tests', the product count's); ``bits`` e.g. a :class:`~mpcdp.mpc.auth_circuits.PlainBits`."""
        backend, generator = bits or PlainArith(), torch.Generator().manual_seed(9)
        return Domains(backend, PlainArith(), lambda x: x & 1, lambda x, label: backend.open(x, label=label) & 1,
                       lambda n, width, _: (torch.randint(0, 2, (n, width), generator=generator), None))


def _take(A: Arith, x: Any, index: Any) -> Any:
    return x.take(A, index) if isinstance(x, Dealt) else A.take(x, index)


def _column(A: Arith, x: Any, i: int) -> Any:
    return A.take(x, (slice(None), i))


def _columns(A: Arith, x: Any, start: int, stop: int) -> Any:
    return A.take(x, (slice(None), slice(start, stop)))


def _prefix_pairs(A: Arith, prefixes: list[list[Any]], words: list[Dealt], step: int) -> tuple[list[int], list]:
    """The words still live at ``step`` and their prefix-OR products (the running OR from the top, next bit: a
    half product, the bit being dealt)."""
    live = [i for i, w in enumerate(words) if w.width(A) - 1 - step >= 0]
    return live, [(prefixes[i][-1], words[i].take(A, (slice(None), words[i].width(A) - 1 - step))) for i in live]


def _extend_prefixes(A: Arith, prefixes: list[list[Any]], words: list[Dealt], step: int, live: list[int],
                     products: list[Any]) -> None:
    for i, both in zip(live, products):
        top, bit = prefixes[i][-1], words[i].take(A, (slice(None), words[i].width(A) - 1 - step)).value(A)
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


def _first_prefixes(A: Arith, words: list[Dealt]) -> list[list[Any]]:
    """Each word's prefix chain started at its top bit (W's, no product)."""
    return [[w.take(A, (slice(None), w.width(A) - 1)).value(A)] for w in words]


def _top_one_hots(A: Arith, words: list[Any]) -> list[Any]:
    """Per word (n, L) the one-hot of its top set bit, by prefix ORs from the top (L − 1 half products each, all
    words' in the same rounds: max L − 1 rounds)."""
    if not words:
        return []
    dealt = [Dealt.of(A, w) for w in words]
    n = A.shape(dealt[0].r)[0]
    prefixes = _first_prefixes(A, dealt)
    for step in range(1, max(w.width(A) for w in dealt)):
        live, pairs = _prefix_pairs(A, prefixes, dealt, step)
        _extend_prefixes(A, prefixes, dealt, step, live, mul_batch(A, pairs))
    return _tops_from(A, n, prefixes)


def _bits_and_tops(D: Domains, T: Any, mask: tuple[Any, Any], words: list[Any]) -> tuple[Any, list[Any]]:
    """(T's 62 bits (n, 62); per word (n, L) the one-hot of its top set bit, (n, L)) (step 4), in the bit domain
    from the edaBit ``mask`` (its bits (n, 64) in the bit domain, r (n,) in ``D.arith``); the words' prefix ORs
    ride in the carry chain's rounds. Every product here has a dealt factor (r_i, a word's bit): half products."""
    A, (bits_r, r) = D.bits, mask
    mask_bits = Dealt.of(A, bits_r)
    dealt = [Dealt.of(A, w) for w in words]
    n = D.arith.shape(T)[0]
    c = D.arith.open(D.arith.sub(T, r), label="dg-auth-a2b")
    c_bits = (c.reshape(n, 1) >> torch.arange(MASK_BITS)) & 1
    r0 = mask_bits.take(A, (slice(None), 0)).value(A)
    bits = [xor_public(A, r0, c_bits[:, 0])]
    carry = A.scale(r0, c_bits[:, 0])
    prefixes = _first_prefixes(A, dealt)  # prefix ORs from each word's top bit
    for step in range(1, dg.WORD):
        ri = mask_bits.take(A, (slice(None), step))
        live, pairs = _prefix_pairs(A, prefixes, dealt, step)
        products = mul_batch(A, [(carry, ri)] + pairs)
        u = A.sub(A.add(ri.value(A), carry), A.scale(products[0], 2))  # r_i ⊕ carry_i
        bits.append(xor_public(A, u, c_bits[:, step]))
        carry = A.add(products[0], A.scale(u, c_bits[:, step]))
        _extend_prefixes(A, prefixes, dealt, step, live, products[1:])
    return A.cat([A.reshape(b, n, 1) for b in bits], 1), _tops_from(A, n, prefixes)


def _selectors(D: Domains, windows: list[Any]) -> list[Dealt]:
    """Each mux's window bits (n, w) as the :class:`Dealt` selector of :func:`mux_levels` (every product a half
    product, dg-auth/9): masked by dealt bits ρ (one request for every window, a half triple per product) and
    opened as window ⊕ ρ, uniform (only the dealer knows ρ, and it sees no opening), the coin of ρ's copies."""
    A = D.bits
    n, widths = A.shape(windows[0])[0], [A.shape(w)[1] for w in windows]
    starts = [sum(widths[:j]) for j in range(len(widths))]
    columns = [[start + c for c in selector_columns(w)] for start, w in zip(starts, widths)]
    index = torch.tensor([c for cols in columns for c in cols])
    rho, half = D.masks(n, sum(widths), index.tolist())
    opened = A.open(A.add(A.cat(windows, 1), rho), label="dg-auth-select") & 1
    has = None if half is None else torch.ones(n, index.numel(), dtype=torch.bool)
    every = Dealt(A.take(rho, (slice(None), index)), opened[:, index], half, has)
    ends = [sum(len(cols) for cols in columns[:j + 1]) for j in range(len(columns))]
    return [every.take(A, (slice(None), slice(end - len(cols), end))) for cols, end in zip(columns, ends)]


def _factor_entries(A: Arith, top: Any, table, low: int = 0) -> Any:
    """(n, 2^w): for each window value a, [W ⊕ TH[a] < TH[a]] = Σ_i f_i·TH[a]_i (1 for TH[a] = 2^62), from the
    one-hot ``top`` of the top set bit among W's bits ``low``..61 (every TH[a] but 2^62 is 0 below ``low``)."""
    th = torch.from_numpy(table).to(torch.int64)
    full = th == (1 << dg.WORD)
    matrix = ((th.reshape(1, -1) >> torch.arange(low, dg.WORD).reshape(-1, 1)) & 1) * (~full).to(torch.int64)
    return A.plus(A.combine(top, matrix), full.to(torch.int64))


def first_stage(D: Domains, plan: dg.DiscreteGaussianPlan, fields: dict[str, Any],
                mask: tuple[Any, Any]) -> tuple[Any, Any, Any]:
    """(n in ``D.arith``, T's bits (n, 62) and the first factor's bit (n,), both in ``D.bits``) of every
    candidate (module steps 2–5)."""
    value, T = exponent(D, plan, fields)
    A = D.bits
    t, (top,) = _bits_and_tops(D, T, mask, [fields[f"v{FIRST}"]])
    low, width, _ = dg.GROUPS[FIRST]
    (select,) = _selectors(D, [_columns(A, t, low, low + width)])
    (first,) = mux_levels(A, [(select, _factor_entries(A, top, dg.group_thresholds()[FIRST], READ_FROM[f"v{FIRST}"]))])
    return value, t, first


def second_stage(D: Domains, plan: dg.DiscreteGaussianPlan, fields: dict[str, Any], t: Any) -> Any:
    """The AND of every other factor, the low factor and the cut (T's bits 59..61 all 0), in the bit domain, of
    the candidates whose ``fields`` and T's bits ``t`` are given (the survivors of the first factor; module
    step 6). Consumes the words of ``fields``: removed from it when their top bits are found, so their dealt
    material is freed before the muxes (a lower peak of memory)."""
    A, others = D.bits, [g for g in range(len(dg.GROUPS)) if g != FIRST]
    tops = _top_one_hots(A, [fields.pop(f"v{g}") for g in others] + [fields.pop("v_low")])
    selectors = _selectors(D, [_columns(A, t, dg.GROUPS[g][0], dg.GROUPS[g][0] + dg.GROUPS[g][1]) for g in others])
    jobs = [(select, _factor_entries(A, top, dg.group_thresholds()[g], READ_FROM[f"v{g}"]))
            for g, top, select in zip(others, tops, selectors)]
    return _accept_of(D, jobs, tops[-1], t)


def candidate_circuit(D: Domains, plan: dg.DiscreteGaussianPlan, fields: dict[str, Any], mask: tuple[Any, Any],
                      later: Callable[[torch.Tensor], dict[str, Any]] | None = None) -> tuple[Any, torch.Tensor]:
    """(n in ``D.arith``, the opened accept bits (n,) 0/1) of every candidate, from its field bits (name -> (n,
    bits) in ``D.bits``, :func:`dg.field_bits`) and an edaBit per candidate (its 64 bits (n, 64) in ``D.bits``,
    its value (n,) in ``D.arith``): the rule of :func:`~mpcdp.noise.discrete_gaussian.accept` as a circuit
    (module steps 2–7). The first factor's bits are opened by ``D.decide`` and only the candidates that pass it
    go on; their accept bits are opened by ``D.decide`` too (a dropped candidate's is 0). ``fields`` holds the
    :data:`FIRST_FIELDS` of every candidate and, without ``later``, every field; ``later(survivors)`` (the
    survivors' indices) returns the :data:`SECOND_FIELDS` of the survivors only (the parties' run deals them
    then, module step 6)."""
    value, t, first = first_stage(D, plan, fields, mask)
    del mask  # used up: freed, with the first stage's fields when ``later`` deals the rest, before the second stage
    fields = fields if later is None else {}
    A, passed = D.bits, D.decide(first, "dg-auth-first")
    survivors, accept = torch.nonzero(passed).reshape(-1), torch.zeros_like(passed)
    if survivors.numel():
        kept = later(survivors) if later is not None else {name: _take(A, fields[name], survivors)
                                                           for name in SECOND_FIELDS}
        accept[survivors] = D.decide(second_stage(D, plan, kept, A.take(t, survivors)), "dg-auth-accept")
    return value, accept


_DECISIONS = {"dg-auth-first": "first-factor bits: a candidate that fails its first factor is dropped",
              "dg-auth-accept": "accept bits: a rejected candidate is discarded"}


def one_decision(D: Domains, plan: dg.DiscreteGaussianPlan, fields: dict[str, Any],
                 mask: tuple[Any, Any]) -> tuple[Any, torch.Tensor]:
    """:func:`candidate_circuit` as dg-auth/10 computes it (``malicious_sampler = "fewer-rounds"``): every field of
    every candidate given, every word's prefix chain in the carry chain's rounds, every factor's mux in the same
    rounds and one decision, the accept bits (``D.decide``). Consumes ``fields`` (each field removed once read)."""
    value, T = exponent(D, plan, {name: fields.pop(name) for name in ("index", "point", "sign")})
    A, groups = D.bits, range(len(dg.GROUPS))
    t, tops = _bits_and_tops(D, T, mask, [fields.pop(f"v{g}") for g in groups] + [fields.pop("v_low")])
    del mask, T
    selectors = _selectors(D, [_columns(A, t, low, low + width) for low, width, _ in dg.GROUPS])
    jobs = [(select, _factor_entries(A, top, table, READ_FROM[f"v{g}"]))
            for g, top, select, table in zip(groups, tops, selectors, dg.group_thresholds())]
    del selectors
    return value, D.decide(_accept_of(D, jobs, tops[-1], t), "dg-auth-accept")


def _accept_of(D: Domains, jobs: list, low_top: Any, t: Any) -> Any:
    """The AND of the factors the muxes of ``jobs`` select, NOT the low factor (from v_low's one-hot ``low_top``
    and T's bits ``t``) and the cut (T's bits 59..61 all 0), in the bit domain."""
    A, low = D.bits, READ_FROM["v_low"]  # v_low's one-hot starts at its bit ``low`` = LOW_DROP, the lowest of T'_low
    (low_terms,) = mul_batch(A, [(_columns(A, low_top, dg.LOW_DROP - low, dg.LOW_BITS - low),
                                  _columns(A, t, dg.LOW_DROP, dg.LOW_BITS))])
    factors = mux_levels(A, jobs)
    cut = [not_bit(A, _column(A, t, i)) for i in range(dg.F + 6, dg.WORD)]
    return and_all(A, [*factors, not_bit(A, A.total(low_terms, 1)), *cut])


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
                   lambda x, label: _checked_decision(ctx, x, label),
                   lambda n, width, columns: window_masks(ctx, n, width, columns))


@dataclasses.dataclass
class AuthPass:
    """One pass: the opened (MAC-checked) accept bits and the candidates' authenticated values."""

    accepted: torch.Tensor
    value: AuthShared


def authenticated_pass(ctx: MpcContext, plan: dg.DiscreteGaussianPlan, n: int) -> AuthPass:
    """Draw n candidates and decide them (module steps 1–7). dg-auth/9 (``malicious_sampler = "fewer-bytes"``): the
    first stage's fields dealt for every candidate (held by the circuit alone, which frees them with the edaBits once
    used), the second stage's for the survivors of the first factor only, after its checked opening. dg-auth/10
    (``"fewer-rounds"``): every field of every candidate dealt in one request, one decision (:func:`one_decision`)."""
    D = _domains(ctx)
    coin = Coin(ctx)
    if ctx.config.malicious_sampler == "fewer-rounds":  # dg-auth/10: every field dealt now, one decision
        every = draw_fields(ctx, D.bits, plan, dg.RANDOM_FIELDS, n, coin, COIN_LABELS[0])
        value, accept = one_decision(D, plan, every, eda_mask(ctx, n))
        return AuthPass(accept == 1, value)

    def later(survivors: torch.Tensor) -> dict[str, Any]:
        return draw_fields(ctx, D.bits, plan, SECOND_FIELDS, survivors.numel(), coin, COIN_LABELS[1])

    value, accept = candidate_circuit(D, plan, draw_fields(ctx, D.bits, plan, FIRST_FIELDS, n, coin, COIN_LABELS[0]),
                                      eda_mask(ctx, n), later)
    return AuthPass(accept == 1, value)


def pass_size(plan: dg.DiscreteGaussianPlan, need: float) -> int:
    """Candidates a pass draws for ``need`` more samples: the semi-honest sampler's count
    (:func:`~mpcdp.noise.secure_gaussian.candidates_wanted`), at most :data:`MAX_PASS`."""
    return min(int(candidates_wanted(plan, need)), MAX_PASS)


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
        n = pass_size(plan, need)
        result = authenticated_pass(ctx, plan, n)
        stats["candidates"] += n
        stats["passes"] += 1
        stats["accepted"] += int(result.accepted.sum())
        index = torch.nonzero(result.accepted).reshape(-1)[:need]
        kept.append(AuthArith(ctx, "").take(result.value, index))
        have += index.numel()
    return AuthArith(ctx, "").cat(kept, 0)
