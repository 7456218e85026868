"""The declared cost of the authenticated sampler's circuit (:mod:`mpcdp.noise.auth_gaussian`, dg-auth/7): its
bit-domain products per candidate and per survivor, full and half, its products in Z_2^128 and its daBits (steps
2–3 apart too), counted by running its stages on plaintext,
and the first factor's pass rate by the plaintext rule (which candidates survive, for the view audit too).
Nothing here runs under MPC or sees a share."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch

from mpcdp.mpc.auth_circuits import DealtHot
from mpcdp.noise import discrete_gaussian as dg
from mpcdp.noise.auth_exponent import exponent
from mpcdp.noise.auth_gaussian import FIRST, MASK_BITS, Domains, first_stage, second_stage


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
    bits = dg.field_bits(plan)
    fields: dict[str, Any] = {name: torch.zeros(1, b, dtype=torch.int64) for name, b in bits.items()}
    hot = torch.zeros(1, 1 << bits["index"], dtype=torch.int64)
    hot[0, 0] = 1
    fields["index"] = DealtHot(hot, torch.zeros(1, bits["index"], dtype=torch.int64))  # dealt, as the parties'
    _, t, _ = first_stage(D, plan, fields, (torch.zeros(1, MASK_BITS, dtype=torch.int64),
                                            torch.zeros(1, dtype=torch.int64)))
    first, first_half = B.products, B.halves
    second_stage(D.bits, plan, fields, t)
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
