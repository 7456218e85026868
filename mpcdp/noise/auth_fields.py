"""The authenticated sampler's random fields as its parties hold them (:mod:`mpcdp.noise.auth_gaussian`, circuits
dg-auth/9 and dg-auth/10): which bits of each field are dealt (:data:`READ_FROM`, :func:`dealt_widths`), which the
first stage reads, and a pass's draw of them: dealt bits R, XOR the committed coin S (:class:`Coin`).

Security model: that of :mod:`mpcdp.mpc.authenticated` (the dealer honest and colluding with nobody): the dealer
knows R and never S, each party knows S and never R (issue 44); nothing here opens anything. Cost: one dealt
one-hot of the index (64 bits, 6⅛ bytes each) and 6 bytes per dealt bit, 12⅛ per half triple, to one party.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from mpcdp.mpc import authenticated, bit_authenticated
from mpcdp.mpc.auth_circuits import Arith, Dealt, DealtHot, xor_public
from mpcdp.mpc.context import MpcContext
from mpcdp.noise import discrete_gaussian as dg
from mpcdp.noise.auth_dealt import PLANTED, spread

_COIN_DOMAIN = b"mpcdp/noise-coin-auth"
COIN_LABELS = ("dg-auth-coin", "dg-auth-coin-survivors")
"""The coin's bits as each party's view notes them: the first stage's (every candidate; dg-auth/10: every
field), the survivors' (dg-auth/9)."""


def _lowest_set_bit(table) -> int:
    """The lowest bit set in any entry of a threshold table but 2^62 (always passes) and 0 (never)."""
    entries = [int(x) for x in table if 0 < int(x) < 1 << dg.WORD]
    return min((x & -x).bit_length() - 1 for x in entries) if entries else dg.WORD


READ_FROM = {**{f"v{g}": _lowest_set_bit(table) for g, table in enumerate(dg.group_thresholds())}, "v_low": dg.LOW_DROP}
"""Each word's lowest bit the circuit reads (dg-auth/8). A factor is TH's bit at W's top set bit (:func:`dg.below`)
and TH's bits below this one are 0 in every entry (v_low: T'_low's below 2^-42), so W's lower bits decide nothing
(neither dealt nor read): the top set bit of the bits read is W's own when W has one there, else the factor is 0
(the low factor 1), as the rule on the whole word. v0, v1: 16, the first factor's 0, v3 20, v4, v5 21, v_low 11."""


def dealt_widths(plan: dg.DiscreteGaussianPlan) -> dict[str, int]:
    """Bits of each random field the circuit is dealt: :func:`dg.field_bits` less the words' bits below
    :data:`READ_FROM` (a word's bits ``READ_FROM[name]`` and up, lowest first)."""
    return {name: bits - READ_FROM.get(name, 0) for name, bits in dg.field_bits(plan).items()}


FIRST = 2
"""The first factor (group (F − 2, 6): t's bits 1/4..8): it rejects about 15% of the candidates, every other
factor and the cut together about 8%; decided and opened first, and the candidates that fail it dropped."""
FIRST_FIELDS = tuple(name for name in dg.RANDOM_FIELDS if name in ("index", "point", "sign", f"v{FIRST}"))
"""The fields the first stage reads (the candidate's value and the first factor's word): dealt for every candidate."""
SECOND_FIELDS = tuple(name for name in dg.RANDOM_FIELDS if name not in FIRST_FIELDS)
"""The other factors' words and v_low: dealt only for the survivors of the first factor (module step 6)."""
WORD_FIELDS = tuple(name for name in dg.RANDOM_FIELDS if name.startswith("v"))
"""The factors' words and v_low: every bit but the top one is a prefix-OR product's dealt factor."""
DEALT_FIELDS = WORD_FIELDS + ("point", "sign")
"""The fields held as :class:`Dealt` (R with a half triple per multiplied bit, and the coin S): the words, and the
point's and the sign's bits (each the dealt factor of one product of n's word: :mod:`mpcdp.noise.auth_exponent`)."""


class Coin:
    """A pass's committed coin: one stream every party derives alike, read in order (the first stage's bits,
    then the survivors')."""

    def __init__(self, ctx: MpcContext):
        self.ctx = ctx
        self.stream = ctx.common_stream(label="dg-auth-coin", domain=_COIN_DOMAIN)

    def bits(self, n: int, width: int, label: str) -> torch.Tensor:
        """(n, width) public bits of the coin, noted in this party's view of both domains (and, with
        ``ctx.keep_values``, kept under ``label`` for the view audit)."""
        words = self.stream.words(math.ceil(n * width / 64))
        if "no coin" in PLANTED:
            words = torch.zeros_like(words)
        authenticated.note_public(self.ctx, label, words)
        bit_authenticated.note_public(self.ctx, label, words)
        bits = (words.reshape(-1, 1) >> torch.arange(64)) & 1
        bits = bits.reshape(-1)[: n * width].reshape(n, width)
        self.ctx.note_draw(label, bits)
        return bits


def draw_fields(ctx: MpcContext, A: Arith, plan: dg.DiscreteGaussianPlan, names: tuple[str, ...], n: int,
                 coin: Coin, label: str) -> dict[str, Any]:
    """The fields ``names`` of n candidates, each R XOR the coin's next bits S: the index (when asked) as
    :class:`DealtHot`, a dealt one-hot of R (one request, first); the others dealt bits (one request), as
    :class:`Dealt` (:data:`DEALT_FIELDS`): a factor word with a half triple on every bit but its top (each bit's
    one prefix-OR product), the point and the sign on every bit (each bit's one product in n's word)."""
    widths = dealt_widths(plan)
    dealt_names = [name for name in names if name != "index"]
    hot = bit_authenticated.dealt_one_hots(ctx, n, widths["index"]) if "index" in names else None
    width = sum(widths[name] for name in dealt_names)
    halves: list[int] = []
    at = 0
    for name in dealt_names:
        if name in DEALT_FIELDS:
            halves += range(at, at + widths[name] - (name in WORD_FIELDS))
        at += widths[name]
    dealt, half = bit_authenticated.dealt_rows(ctx, n, width, halves)
    s = coin.bits(n, sum(widths[name] for name in names), label)  # every field's, in ``names`` order
    full = spread(half, n, width, halves)
    assert full.has is not None
    fields: dict[str, Any] = {}
    at, at_s = 0, 0
    for name in names:
        coins = s[:, at_s:at_s + widths[name]]
        at_s += widths[name]
        if name == "index":
            fields[name] = DealtHot(hot, coins)
            continue
        cols = (slice(None), slice(at, at + widths[name]))
        if name in DEALT_FIELDS:
            bits = Dealt(A.take(dealt, cols), coins, full.take(A, cols).half, full.has[cols])
            fields[name] = bits.by_columns() if name in WORD_FIELDS else bits
        else:
            fields[name] = xor_public(A, A.take(dealt, cols), coins)
        at += widths[name]
    return fields
