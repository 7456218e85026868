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
from mpcdp.noise.auth_gaussian import (FIRST, FIRST_FIELDS, MASK_BITS, SECOND_FIELDS, Domains, dealt_widths, first_stage,
                                       pass_size, second_stage)


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


def products_per_candidate(plan: dg.DiscreteGaussianPlan) -> Products:
    """:class:`Products` of :func:`candidate_circuit` (counted by running its stages on plaintext)."""
    D = Domains.plain()
    B: Any = D.bits
    bits = dealt_widths(plan)
    fields: dict[str, Any] = {name: torch.zeros(1, b, dtype=torch.int64) for name, b in bits.items()}
    hot = torch.zeros(1, 1 << bits["index"], dtype=torch.int64)
    hot[0, 0] = 1
    fields["index"] = DealtHot(hot, torch.zeros(1, bits["index"], dtype=torch.int64))  # dealt, as the parties'
    _, t, _ = first_stage(D, plan, fields, (torch.zeros(1, MASK_BITS, dtype=torch.int64),
                                            torch.zeros(1, dtype=torch.int64)))
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


def dealt_breakdown(plan: dg.DiscreteGaussianPlan) -> list[tuple[str, float, float, float, float]]:
    """Per step of the circuit's docstring (mpcdp/noise/auth_gaussian.py), per candidate (survivor steps weighted by
    the first factor's pass rate): (step, full bit products, half bit products, bytes dealt (every receiver's
    replies together), bits opened by each party). A full product opens 2 bits and deals ``BIT_TRIPLE_BYTES``, a
    half product 1 bit and ``HALF_BYTES``; a dealt bit ``BIT_BYTES``; a Z_2^128 product 4 words (256 bits) and 96
    bytes; a daBit one bit and ``DA_BYTES``; the a2b opening 2 words (128 bits) (:mod:`mpcdp.adapter.auth_bits`).
    The per-pass checks (λ words each) are left out: they do not grow with the candidates."""
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
    return [(name, p, h, dealt + p * BIT_TRIPLE_BYTES + h * HALF_BYTES, opened + 2 * p + h)
            for name, p, h, dealt, opened in steps]


@functools.lru_cache(maxsize=64)
def per_candidate(plan: dg.DiscreteGaussianPlan) -> tuple[float, float]:
    """(bytes dealt, bits opened by each party) per candidate at ``plan``: :func:`dealt_breakdown`'s totals."""
    steps = dealt_breakdown(plan)
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
