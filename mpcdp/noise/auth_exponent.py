"""Steps 2–3 of the authenticated sampler (:mod:`mpcdp.noise.auth_gaussian`, circuit dg-auth/9): a candidate's
piece indicators and its value n as a two's complement word in the bit domain, crossed into Z_2^128, where
n² and T = G·n² + Λ_j are computed. Written once over the circuit's :class:`~mpcdp.noise.auth_gaussian.Domains`
(the parties' authenticated backends, or plaintext; :class:`Domains` here names the part used).

Security model: the sampler's (any set of data parties may deviate, the dealer honest and colluding with
nobody). Every product is an authenticated one (bit domain: checked by the bit check; Z_2^128: by the MAC
check), every crossing a daBit whose opened bit is uniform; all are checked before any decision is opened.

The word. With W's one-hot H (n, 64) and the piece table, every piece property is a public selection of H,
local in the bit domain (H has one 1 per row, so a sum of its entries is their XOR): U_b = [point bit b lies
inside the piece's width], L_b = bit b of the piece's start, I_j. The magnitude m = start_j + (point mod
width_j) has bits m_b = p_b·U_b ⊕ L_b (the width divides the start: the two never share a bit). Piece j >= 1 is
+m or −m − 1 = ¬m, so n_b = m_b ⊕ s; piece 0 is the two's complement of (s, the point's k low bits), n_b = m_b
below bit k and s from bit k up, i.e. n_b = m_b ⊕ s ⊕ [b < k]·(s·I_0). In the k = 1 bit domain a sum's low bit
is the XOR (:class:`~mpcdp.mpc.auth_circuits.BitArith`), so only p_b·U_b and s·I_0 are products: k + 5 of them
in one round. The k + 6 bits of n and I_1..I_8 cross by daBits (I_0 = 1 − Σ_{j>=1} I_j); in Z_2^128
n = Σ_{b<k+5} 2^b·n_b − 2^(k+5)·n_(k+5) and Λ_j·I_j are local, and n² is the one product there.

Cost per candidate: k + 5 bit-domain products (half products where the point's and the sign's bits are dealt
with a half triple: one opened bit, 12⅛ dealt bytes each), PIECES − 1 + k + 6 daBits (one opened bit, 38 dealt
bytes each), one product in Z_2^128 (dg-auth/5: 2·PIECES + 1 = 19 products there, no bit product).
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

import torch

from mpcdp.mpc.auth_circuits import Arith, Dealt, DealtHot, mul_batch, one_hot
from mpcdp.noise import discrete_gaussian as dg


class Domains(Protocol):
    """What steps 2–3 use of :class:`mpcdp.noise.auth_gaussian.Domains`: the bit domain, Z_2^128 and the crossing."""

    @property
    def bits(self) -> Arith: ...

    @property
    def arith(self) -> Arith: ...

    @property
    def to_arith(self) -> Callable[[Any], Any]: ...


def _tables(plan: dg.DiscreteGaussianPlan, point_bits: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Public selections of W's one-hot (64 rows, one per index value): the point bits inside the piece's width
    (64, point_bits), the start's bits (64, k + 6) and the indicators I_1..I_8 (64, PIECES − 1)."""
    piece = torch.from_numpy(plan.index_table())
    widths = torch.tensor([mask.bit_length() for mask in plan.point_masks()], dtype=torch.int64)
    starts = torch.tensor(plan.piece_starts(), dtype=torch.int64)
    inside = (torch.arange(point_bits).reshape(1, -1) < widths[piece].reshape(-1, 1)).to(torch.int64)
    start_bits = (starts[piece].reshape(-1, 1) >> torch.arange(word_bits(plan))) & 1
    indicators = (piece.reshape(-1, 1) == torch.arange(1, dg.PIECES).reshape(1, -1)).to(torch.int64)
    return inside, start_bits, indicators


def word_bits(plan: dg.DiscreteGaussianPlan) -> int:
    """Bits of n's two's complement word: k + 6 (candidates lie in [−32·2^k, 32·2^k))."""
    return dg.field_bits(plan)["point"] + 2


def _value_bits(D: Domains, plan: dg.DiscreteGaussianPlan, hot: Any, point: Dealt, sign: Dealt) -> Any:
    """n's two's complement bits (n, k + 6) in the bit domain (module docstring): k + 5 half products (the point's
    and the sign's bits dealt), one round."""
    B = D.bits
    n, point_bits, width = B.shape(hot)[0], point.width(B), word_bits(plan)
    inside, start_bits, _ = _tables(plan, point_bits)
    first = B.combine(hot, (torch.from_numpy(plan.index_table()) == 0).to(torch.int64).reshape(-1, 1))  # I_0 (n, 1)
    masked, both = mul_batch(B, [(B.combine(hot, inside), point), (first, sign)])  # p_b·U_b, s·I_0
    spread = torch.eye(point_bits, width, dtype=torch.int64)  # the point's bits into the word's low bits
    below_k = (torch.arange(width) < point_bits - dg.POINT_EXTRA).to(torch.int64)
    flip = B.add(B.expand(sign.value(B), n, width), B.scale(B.expand(both, n, width), below_k))
    return B.add(B.add(B.combine(masked, spread), B.combine(hot, start_bits)), flip)


def exponent(D: Domains, plan: dg.DiscreteGaussianPlan, fields: dict[str, Any]) -> tuple[Any, Any]:
    """(n, T) of every candidate in ``D.arith`` from its field bits (steps 2–3 of the sampler): the index's
    one-hot in the bit domain, n's word there, its bits and the indicators I_1..I_8 crossed into ``D.arith``."""
    B = D.bits
    index = fields["index"]  # the parties': a dealt one-hot; plaintext bits: computed (2^w − 2 products)
    hot = index.one_hot(B) if isinstance(index, DealtHot) else one_hot(B, index)  # (n, 64)
    n = B.shape(hot)[0]
    point, sign = (Dealt.of(B, fields[name]) for name in ("point", "sign"))  # plaintext: W = R, no coin
    bits = _value_bits(D, plan, hot, point, sign.reshape(B, n, 1))
    width = word_bits(plan)
    _, _, indicators = _tables(plan, point.width(B))
    crossed = D.to_arith(B.cat([bits, B.combine(hot, indicators)], 1))
    A = D.arith
    weights = torch.tensor([1 << b for b in range(width - 1)] + [-(1 << (width - 1))], dtype=torch.int64)
    value = A.reshape(A.combine(A.take(crossed, (slice(None), slice(0, width))), weights.reshape(-1, 1)), n)
    (square,) = mul_batch(A, [(value, value)])
    lam = torch.tensor(plan.Lambda, dtype=torch.int64)
    others = A.take(crossed, (slice(None), slice(width, width + dg.PIECES - 1)))
    lam_term = A.plus(A.reshape(A.combine(others, (lam[1:] - lam[0]).reshape(-1, 1)), n), lam[0])
    return value, A.add(A.scale(square, plan.G), lam_term)
