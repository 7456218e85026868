"""The authenticated sampler's dealt material as its circuit holds it (:mod:`mpcdp.noise.auth_gaussian`, circuit
dg-auth/9): the half triples of dealt bits spread to their columns, the edaBits that mask T (step 4) and the
muxes' window masks; and the view audit's planted leaks on them (never in a run).

Security model: that of :mod:`mpcdp.mpc.authenticated` (the dealer honest and colluding with nobody); nothing here
opens or sends anything: it reshapes what :mod:`mpcdp.adapter.auth_bits` deals. Cost: the edaBit's, 6·64 + 32
bytes per candidate, and 61 half triples (12⅛ bytes each), dealt to one party.
"""

from __future__ import annotations

import torch

from mpcdp.adapter.auth_bits import EdaBits
from mpcdp.mpc import bit_authenticated
from mpcdp.mpc.auth_circuits import Dealt
from mpcdp.mpc.authenticated import AuthShared
from mpcdp.mpc.bit_authenticated import BitShared
from mpcdp.mpc.context import MpcContext
from mpcdp.mpc.plants import planting
from mpcdp.noise import discrete_gaussian as dg

MASK_BITS = 64
"""Bits of each candidate's edaBit (T has 62)."""


def spread(half: bit_authenticated.Halves | None, n: int, width: int, columns: list[int]) -> Dealt:
    """Half triples for ``columns`` of (n, width) dealt bits, spread to the full width (zero shares where a bit
    has none, never multiplied: ``has`` says which have one), each written once (the other columns zeroed); only
    ``half`` and ``has`` of the result are used (``r`` and ``coin`` are zero views), both stored column by column
    as :meth:`Dealt.by_columns` keeps them (its copies of them, and of their column slices, are then no-ops)."""
    has = torch.zeros(width, n, dtype=torch.bool)
    has[columns] = True
    others, index = torch.nonzero(~has.any(1) if n == 0 else ~has[:, 0]).reshape(-1), torch.tensor(columns, dtype=torch.long)
    zero, parts = torch.zeros((), dtype=torch.int64).expand(n, width), []
    for share in () if half is None else (half.b, half.c):
        value, mac = torch.empty(width, n, dtype=torch.int64), torch.empty(width, n, dtype=torch.int64)
        value[others], mac[others] = 0, 0
        value.index_copy_(0, index, share.value.T.contiguous()), mac.index_copy_(0, index, share.mac.T.contiguous())
        parts.append(BitShared(value.T, mac.T))
    return Dealt(BitShared(zero, zero), zero, bit_authenticated.Halves(*parts) if half is not None else None, has.T)


def eda_mask(ctx: MpcContext, n: int) -> tuple[Dealt, AuthShared]:
    """n dealt edaBits of 64 bits: (their bits (n, 64) in the bit domain, dealt with a half triple on bits
    1..61 (the carry chain's products), r (n,) in Z_2^128)."""
    halves = list(range(1, dg.WORD))
    (value, mac), (r_value, r_mac), half = EdaBits.fetch(n, MASK_BITS, halves)
    (b, b_mac), (c, c_mac) = half
    k = len(halves)
    full = spread(bit_authenticated.Halves(BitShared(b.reshape(n, k), b_mac.reshape(n, k)),
                                            BitShared(c.reshape(n, k), c_mac.reshape(n, k))), n, MASK_BITS, halves)
    bits = Dealt(BitShared(value, mac), torch.zeros(n, MASK_BITS, dtype=torch.int64), full.half, full.has)
    return bits.by_columns(), AuthShared(r_value, r_mac, 0)


PLANTED: set[str] = set()
"""The view audit's planted leaks in force in this process (never in a run): "no coin", "open windows"."""



def planted_no_coin():
    """The view audit's planted dealer leak (``mpcdp audit views --security malicious --plant-leak dealer``):
    the coin is all zeros, so every candidate bit is the dealer's R (W = R without the coin)."""
    return planting(PLANTED, "no coin")


def planted_open_windows():
    """The view audit's planted party leak (``--plant-leak window``): every mux's mask ρ is 0 and its half
    triples' c = ρ·b too (every MAC still holds), so window ⊕ ρ opens the window itself to every party."""
    return planting(PLANTED, "open windows")


def window_masks(ctx: MpcContext, n: int, width: int, columns: list[int]):
    """The muxes' dealt masks ρ ((n, width), :class:`~mpcdp.adapter.auth_bits.MaskBits`) with a half triple per
    entry of ``columns`` (:func:`mpcdp.mpc.bit_authenticated.dealt_rows`); zeros under the planted leak."""
    rho, half = bit_authenticated.dealt_rows(ctx, n, width, columns, masks=True)
    if "open windows" not in PLANTED:
        return rho, half
    zero = lambda x: BitShared(torch.zeros_like(x.value), torch.zeros_like(x.mac))  # noqa: E731
    return zero(rho), None if half is None else bit_authenticated.Halves(half.b, zero(half.c))
