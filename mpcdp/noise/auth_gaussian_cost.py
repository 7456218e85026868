"""The declared cost of the authenticated sampler's circuit (:mod:`mpcdp.noise.auth_gaussian`, dg-auth/9): its
bit-domain products per candidate and per survivor, full and half, its products in Z_2^128 and its daBits (steps
2–3 apart too), counted by running its stages on plaintext,
and the first factor's pass rate by the plaintext rule (which candidates survive, for the view audit too); from
them the bytes dealt and bits opened per candidate, step by step (:func:`dealt_breakdown`), and the passes a
draw of a given count makes (:func:`passes`): what ``mpcdp train --security malicious`` estimates before it starts.
Nothing here runs under MPC or sees a share."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import numpy as np
import torch

from mpcdp.adapter.auth_bits import BIT_BYTES, BIT_TRIPLE_BYTES, DA_BYTES, EDA_BYTES, HALF_BYTES, ONE_HOT_BYTES
from mpcdp.mpc.auth_circuits import DealtHot
from mpcdp.noise import discrete_gaussian as dg
from mpcdp.noise.auth_exponent import exponent
from mpcdp.noise.auth_fields import FIRST, FIRST_FIELDS, SECOND_FIELDS, WORD_FIELDS, dealt_widths
from mpcdp.noise.auth_gaussian import MASK_BITS, Domains, first_stage, one_decision, pass_size, second_stage


@dataclasses.dataclass(frozen=True)
class Products:
    """Bit-domain products per candidate (``first``, every candidate) and per survivor of the first factor
    (``second``), each split into full products (two secret factors: a dealt triple) and half products
    (``first_half``, ``second_half``: one factor a dealt bit with its half triple), Z_2^128 products per
    candidate (``arith``), and the first factor's pass rate ``survive`` at the plan (the plaintext rule on 2^16
    candidates of a fixed seed); of them, steps 2–3's (n's word and its crossing: :func:`exponent`) bit products
    ``exponent_full`` and ``exponent_half`` and its daBits ``crossed`` per candidate."""

    first: int
    second: int
    arith: int
    survive: float
    first_half: int = 0
    second_half: int = 0
    exponent_full: int = 0
    exponent_half: int = 0
    crossed: int = 0

    @property
    def full(self) -> float:
        """Expected full bit-domain products per candidate."""
        return self.first + self.survive * self.second

    @property
    def half(self) -> float:
        """Expected half bit-domain products per candidate."""
        return self.first_half + self.survive * self.second_half

    @property
    def bits(self) -> float:
        """Expected bit-domain products (ANDs) per candidate, full and half."""
        return self.full + self.half


def _one_candidate(plan: dg.DiscreteGaussianPlan) -> tuple[dict[str, Any], tuple[torch.Tensor, torch.Tensor]]:
    """One plaintext candidate's fields (the index as a dealt one-hot, as the parties') and edaBit."""
    bits = dealt_widths(plan)
    fields: dict[str, Any] = {name: torch.zeros(1, b, dtype=torch.int64) for name, b in bits.items()}
    hot = torch.zeros(1, 1 << bits["index"], dtype=torch.int64)
    hot[0, 0] = 1
    fields["index"] = DealtHot(hot, torch.zeros(1, bits["index"], dtype=torch.int64))
    return fields, (torch.zeros(1, MASK_BITS, dtype=torch.int64), torch.zeros(1, dtype=torch.int64))


def products_per_candidate(plan: dg.DiscreteGaussianPlan, fewer_rounds: bool = False) -> Products:
    """:class:`Products` of :func:`candidate_circuit` (counted by running its stages on plaintext); with
    ``fewer_rounds``, of :func:`~mpcdp.noise.auth_gaussian.one_decision` (dg-auth/10: every product in ``first``,
    ``survive`` 1: no candidate is dropped before the end)."""
    D = Domains.plain()
    B: Any = D.bits
    fields, mask = _one_candidate(plan)
    if fewer_rounds:
        one_decision(D, plan, dict(fields), mask)
        full, half, crossed = exponent_cost(plan, fields)
        return Products(B.products, 0, D.arith.products, 1.0, B.halves, 0, full, half, crossed)  # type: ignore[attr-defined]
    _, t, _ = first_stage(D, plan, fields, mask)
    first, first_half = B.products, B.halves
    second_stage(D, plan, fields, t)
    full, half, crossed = exponent_cost(plan, fields)
    return Products(first, B.products - first, D.arith.products, first_pass_rate(plan),  # type: ignore[attr-defined]
                    first_half, B.halves - first_half, full, half, crossed)


def exponent_cost(plan: dg.DiscreteGaussianPlan, fields: dict[str, Any]) -> tuple[int, int, int]:
    """(full bit products, half bit products, daBits) per candidate of steps 2–3 (:func:`exponent`, one
    candidate's ``fields`` on plaintext)."""
    D, crossed = Domains.plain(), []

    def to_arith(x: torch.Tensor) -> torch.Tensor:
        crossed.append(x.numel())
        return x & 1

    D.to_arith = to_arith
    exponent(D, plan, fields)
    B: Any = D.bits
    return B.products, B.halves, sum(crossed)


def first_factor_passes(plan: dg.DiscreteGaussianPlan, fields: dict[str, np.ndarray]) -> np.ndarray:
    """Whether each candidate passes the first factor (the plaintext rule on its fields' values, at least
    :data:`FIRST_FIELDS`; bool (n,))."""
    values, piece = dg.candidate_values(plan, fields)
    T = dg.exponent(plan, values, piece)
    (low, width, _), table = dg.GROUPS[FIRST], dg.group_thresholds()[FIRST]
    th = table[(T >> low) & ((1 << width) - 1)]
    return ((fields[f"v{FIRST}"] ^ th) < th) | (th == 1 << dg.WORD)


def first_pass_rate(plan: dg.DiscreteGaussianPlan, n: int = 1 << 16) -> float:
    """The first factor's pass rate among uniform candidates (the plaintext rule, a fixed seed)."""
    rng = np.random.default_rng(48)
    fields = {name: rng.integers(0, 1 << b, n, dtype=np.int64) for name, b in dg.field_bits(plan).items()}
    return float(first_factor_passes(plan, fields).mean())


def dealt_breakdown(plan: dg.DiscreteGaussianPlan,
                    fewer_rounds: bool = False) -> list[tuple[str, float, float, float, float]]:
    """Per step of the circuit's docstring (mpcdp/noise/auth_gaussian.py), per candidate (survivor steps weighted by
    the first factor's pass rate): (step, full bit products, half bit products, bytes dealt (every receiver's
    replies together), bits opened by each party). A full product opens 2 bits and deals ``BIT_TRIPLE_BYTES``, a
    half product 1 bit and ``HALF_BYTES``; a dealt bit ``BIT_BYTES``; a Z_2^128 product 4 words (256 bits) and 96
    bytes; a daBit one bit and ``DA_BYTES``; the a2b opening 2 words (128 bits) (:mod:`mpcdp.adapter.auth_bits`).
    The per-pass checks (λ words each) are left out: they do not grow with the candidates. ``fewer_rounds``:
    dg-auth/10's steps (:func:`_one_decision_steps`)."""
    if fewer_rounds:
        return _priced(_one_decision_steps(plan))
    products = products_per_candidate(plan)
    widths = dealt_widths(plan)
    hot, word = 1 << dg.INDEX_BITS, widths[f"v{FIRST}"] - 1
    window = dg.GROUPS[FIRST][1]
    mux = (1 << window) - 1
    others = sum(width for g, (_, width, _) in enumerate(dg.GROUPS) if g != FIRST)  # their windows' mask bits
    first_bits = sum(widths[name] for name in FIRST_FIELDS if name != "index")
    second_bits = sum(widths[name] for name in SECOND_FIELDS)
    steps: list[tuple[str, float, float, float, float]] = [
        ("1. the first stage's fields but the index (dealt bits, every candidate)", 0, 0,
         first_bits * BIT_BYTES, 0),
        ("2. piece: the index's one-hot, dealt", 0, 0, hot * ONE_HOT_BYTES, 0),
        ("3. n's word (bit domain), crossing, n², T in Z_2^128", products.exponent_full, products.exponent_half,
         products.crossed * DA_BYTES + products.arith * 96, products.crossed + products.arith * 256),
        ("4. T's bits: edaBit, carry chain, the first word's prefix", 0, 2 * word, EDA_BYTES, 128),
        ("5. the first factor's mux (its window masked and opened), its opened bit", 0, mux, window * BIT_BYTES,
         window + 1)]
    assert sum(p for _, p, _, _, _ in steps) == products.first, (steps, products)
    assert sum(h for _, _, h, _, _ in steps) == products.first_half, (steps, products)
    survive = products.survive
    steps.append((f"6. survivors ({survive:.0%}): their fields (dealt bits), five prefixes, v_low's, masked muxes, low "
                  "factor, AND", survive * products.second, survive * products.second_half,
                  survive * (second_bits + others) * BIT_BYTES, survive * (1 + others)))
    return _priced(steps)


def _priced(steps: list[tuple[str, float, float, float, float]]) -> list[tuple[str, float, float, float, float]]:
    """Each step's bytes dealt and bits opened with its products' (a full product 2 bits opened and
    ``BIT_TRIPLE_BYTES`` dealt, a half product 1 bit and ``HALF_BYTES``)."""
    return [(name, p, h, dealt + p * BIT_TRIPLE_BYTES + h * HALF_BYTES, opened + 2 * p + h)
            for name, p, h, dealt, opened in steps]


def _one_decision_steps(plan: dg.DiscreteGaussianPlan) -> list[tuple[str, float, float, float, float]]:
    """dg-auth/10's steps per candidate, before their products' bytes and bits (:func:`dealt_breakdown`)."""
    products = products_per_candidate(plan, fewer_rounds=True)
    widths = dealt_widths(plan)
    prefixes = sum(widths[name] - 1 for name in WORD_FIELDS)  # every word's bits but its top
    windows = sum(width for _, width, _ in dg.GROUPS)  # the muxes' mask bits, one per window bit
    muxes = sum((1 << width) - 1 for _, width, _ in dg.GROUPS)
    steps: list[tuple[str, float, float, float, float]] = [
        ("1. every field but the index (dealt bits)", 0, 0,
         sum(width for name, width in widths.items() if name != "index") * BIT_BYTES, 0),
        ("2. piece: the index's one-hot, dealt", 0, 0, (1 << dg.INDEX_BITS) * ONE_HOT_BYTES, 0),
        ("3. n's word (bit domain), crossing, n², T in Z_2^128", products.exponent_full, products.exponent_half,
         products.crossed * DA_BYTES + products.arith * 96, products.crossed + products.arith * 256),
        ("4. T's bits: edaBit, carry chain, every word's prefix chain", 0, dg.WORD - 1 + prefixes, EDA_BYTES, 128),
        ("5. the muxes (every window masked and opened)", 0, muxes, windows * BIT_BYTES, windows)]
    half = products.half - sum(step[2] for step in steps)
    assert half == 0, (steps, products)  # every half product is in steps 3–5
    steps.append(("6. the low factor, the AND, the opened accept bit", products.full - products.exponent_full, 0, 0, 1))
    return steps


@functools.lru_cache(maxsize=64)
def per_candidate(plan: dg.DiscreteGaussianPlan, fewer_rounds: bool = False) -> tuple[float, float]:
    """(bytes dealt, bits opened by each party) per candidate at ``plan``: :func:`dealt_breakdown`'s totals
    (``fewer_rounds``: dg-auth/10's)."""
    steps = dealt_breakdown(plan, fewer_rounds)
    return sum(step[3] for step in steps), sum(step[4] for step in steps)


def passes(plan: dg.DiscreteGaussianPlan, count: int) -> list[int]:
    """The candidates of each pass :func:`~mpcdp.noise.auth_gaussian.sample_authenticated` draws for ``count``
    values, each pass accepting its expected share (``plan.acceptance``)."""
    drawn: list[int] = []
    have = 0.0
    while count - have >= 0.5:
        need = count - have
        n = pass_size(plan, need)
        drawn.append(n)
        have += min(need, n * plan.acceptance)
    return drawn
