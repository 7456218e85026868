"""Authenticated inputs of words with their squares and of bits (``security = "malicious"``), for checks on each
party's own input (:mod:`mpcdp.mpc.bounded`): every party's words and witness bits in one round.

Security model and MACs: :mod:`mpcdp.mpc.authenticated`'s (any set of data parties may deviate; the dealer is
honest and colludes with nobody).

* Words (as :func:`~mpcdp.mpc.authenticated.input_vectors`): the dealer deals every owner o an authenticated mask
  [[r_o]] only o knows among the parties; o sends d = x − r_o mod 2^k to every party (uniform) and all set
  [[x]] = [[r_o]] + d. With ``squared``, the dealer also deals [[r_o²]]
  (:class:`~mpcdp.adapter.square_masks.AuthMaskSquares`) and all set [[x²]] = [[r_o²]] + 2d·[[r_o]] + d²: the
  square of the very element [[x]] (r_o + d in Z_2^(k+s)), exact and MAC-consistent, with no opening. So nothing
  about x² is ever opened before a MAC check (an authenticated square pair's ε = x − a would be: an error a
  deviating party adds to ε turns x² into (x + δ)², and a check on x² opened before ε is MAC-checked would show
  it 2δ·x).
* Bits (:func:`input_bits`): the dealer deals o an authenticated [[r_o]] whose r_o is a bit only o knows among
  the parties (and the dealer, which never sees d); o sends the bit d = β ⊕ r_o (packed 64 to a word) and all set
  [[β]] = d + (1 − 2d)·[[r_o]], a bit by construction whatever o sends (:class:`BitInputs` keeps them unformed).

A deviating o may send any d: that is its input (input substitution); one that sends different parties
different d fails the view comparison of the next :func:`~mpcdp.mpc.authenticated.mac_check` (every d is in
each party's view digest). Cost: one round, (m−1)·8·(n + ⌈b/64⌉) bytes per party for n words and b bits; from
the dealer to party 0, 32·m bytes per word (64·m with its square) and per bit.
"""

from __future__ import annotations

import dataclasses

import torch

from mpcdp.adapter.limbs import Wide, mul_wide
from mpcdp.adapter.mac_material import RING, AuthBitMasks, AuthMasks
from mpcdp.adapter.square_masks import AuthMaskSquares
from mpcdp.mpc import dealt_ahead
from mpcdp.mpc.authenticated import AuthShared, _Session, _session, _stacked, add_constant, add_public, add_public_wide
from mpcdp.mpc.context import MpcContext
from mpcdp.mpc.plants import planting

_UNMASKED_BITS: set[int] = set()  # the view audit's planted leaks in force in this process (never in a run)


def input_bits(ctx: MpcContext, bits: torch.Tensor, *, label: str) -> list[AuthShared]:
    """Every party inputs its own 0/1 vector ``bits`` (same length everywhere), each party's as authenticated values
    that are bits by construction, in rank order: with a dealt [[r_o]] whose r_o is a bit only o (and the dealer) knows
    (:class:`~mpcdp.adapter.mac_material.AuthBitMasks`), o sends d = β ⊕ r_o packed 64 to a word (uniform: r_o is),
    and all set [[β]] = d + (1 − 2d)·[[r_o]]. d is a bit as sent and r_o one as dealt, so [[β]] is a bit whatever
    o sends (an input substitution at most); a sender that sends different parties different d fails the view
    comparison of the next check. One round: (m−1)·8·⌈n/64⌉ bytes per party."""
    return input_words_and_bits(ctx, torch.zeros(0, dtype=torch.int64), bits, precision=0, label=label)[1].formed(ctx)


@dataclasses.dataclass(frozen=True)
class BitInputs:
    """Every owner's input bits [[β]] = d + ``scale``·[[r]] (scale = 1 − 2d) as rows by owner, not yet formed: a
    caller that needs only public combinations Σ_i c_i·β_i (:mod:`mpcdp.mpc.bounded`) folds c into the scale
    (:func:`mpcdp.mpc.bounded.weighted_bits`) instead of forming every [[β]]; local either way."""

    d: torch.Tensor  # (m, b) the public bits each owner sent
    scale: torch.Tensor  # (m, b) 1 − 2d (0 under the planted leak: [[β]] = d)
    masks: AuthShared  # (m, b) the dealt [[r]]

    def formed(self, ctx: MpcContext) -> list[AuthShared]:
        values = add_constant(ctx, self.masks.mul_public(self.scale), self.d)
        return [values[o] for o in range(self.d.shape[0])]


def input_words_and_bits(ctx: MpcContext, encoded: torch.Tensor, bits: torch.Tensor, *, precision: int,
                         label: str, squared: bool = False) -> tuple[list[AuthShared], BitInputs, list[AuthShared]]:
    """:func:`input_vectors`' words ``encoded`` and :func:`input_bits`' bits ``bits`` of every party, in ONE round
    (each party's masked words, then its masked bits packed, in one message): (the words, the bits, the words'
    squares), the words and squares in rank order. ``squared``: the words' masks come with their squares
    (:class:`~mpcdp.adapter.square_masks.AuthMaskSquares`) and [[x²]] = [[r²]] + 2d·[[r]] + d² for every word
    (local: no opening), else no squares. (m−1)·8·(n + ⌈b/64⌉) bytes per party."""
    state = _session(ctx)
    flat, bit_flat = encoded.reshape(-1).to(torch.int64), bits.reshape(-1).to(torch.int64) & 1
    n, b = flat.numel(), bit_flat.numel()
    own, masks, mask_squares = _word_masks(ctx, n, squared)
    own_bits, bit_masks = dealt_ahead.fetch(ctx, AuthBitMasks.fetch, b)
    if own is not None:
        ctx.note_draw(f"own input mask: {label}", own.lo)  # r_o and its bits, for the view audit (a no-op in a run)
    ctx.note_draw(f"own bit masks: {label}", own_bits)
    padded = torch.zeros(-(-b // 64) * 64, dtype=torch.int64)
    padded[:b] = bit_flat if ctx.rank in _UNMASKED_BITS else (bit_flat ^ own_bits) & 1
    mine = [flat - own.lo] if own is not None else []
    sent = ctx.members_exchange(torch.cat(mine + [(padded.reshape(-1, 64) << torch.arange(64)).sum(1)]),
                                label=f"{label} (masked inputs)", kind="masked",
                                reason="words minus dealt masks and bits XOR dealt mask bits, only the input's owner "
                                       "knows each mask: uniform")
    for owner in range(ctx.parties):
        state.note_public(f"input {owner}", sent[owner])
    received = torch.stack([sent[owner] for owner in range(ctx.parties)])  # every owner's row at once
    words, squares = _masked_words(ctx, state, masks, mask_squares, received[:, :n], precision)
    d = ((received[:, n:].reshape(ctx.parties, -1, 1) >> torch.arange(64)) & 1).reshape(ctx.parties, -1)[:, :b]
    scale = 1 - 2 * d
    scale[sorted(_UNMASKED_BITS)] = 0  # planted: [[β]] = d, public
    return words, BitInputs(d, scale, AuthShared(*_stacked(bit_masks), 0)), squares


def _word_masks(ctx: MpcContext, n: int, squared: bool):
    """(own r, every owner's [[r_o]], every owner's [[r_o²]] or []) for n words; (None, [], []) for none. Fetched
    through :mod:`.dealt_ahead`, as the bit masks: a training release's are dealt for the releases left at once."""
    if not n:
        return None, [], []
    if squared:
        return dealt_ahead.fetch(ctx, AuthMaskSquares.fetch, n)
    return (*dealt_ahead.fetch(ctx, AuthMasks.fetch, n), [])


def _masked_words(ctx: MpcContext, state: _Session, masks: list, mask_squares: list, d: torch.Tensor,
                  precision: int) -> tuple[list[AuthShared], list[AuthShared]]:
    """Every owner's [[x]] = [[r]] + d and, with ``mask_squares``, [[x²]] = [[r²]] + 2d·[[r]] + d² (exact mod
    2^(k+s) for the element r + d, precision doubled), from the masked words ``d`` (rows by owner); local."""
    if not masks:
        return [], []
    r_both = _stacked_pair(masks)
    value, mac = add_public(RING, state.alpha, ctx.rank, r_both[0], r_both[1], d)
    words = [AuthShared(value[o], mac[o], precision) for o in range(ctx.parties)]
    if not mask_squares:
        return words, []
    s_both = _stacked_pair(mask_squares)
    twice = RING.scale(d, r_both)  # d·[[r]], value and MAC shares in one scaling
    both = RING.add(s_both, RING.add(twice, twice))
    value, mac = add_public_wide(RING, state.alpha, ctx.rank, both[0], both[1], Wide(*mul_wide(d, d)))
    return words, [AuthShared(value[o], mac[o], 2 * precision) for o in range(ctx.parties)]


def _stacked_pair(pairs: list) -> Wide:
    """Every owner's (value, MAC) shares (flat, one length) as one (2, owners, n) element: value rows, then MAC
    rows, one stack per limb (``[0]`` and ``[1]`` are :func:`~.authenticated._stacked`'s two matrices)."""
    def rows(limb: str) -> torch.Tensor:
        return torch.stack([getattr(v, limb) for v, _ in pairs] + [getattr(m, limb) for _, m in pairs])

    return Wide(rows("lo"), rows("hi")).reshape(2, len(pairs), -1)


def planted_unmasked_bits(party: int):
    """Within the block, in this process, :func:`input_words_and_bits` leaves out ``party``'s dealt bit masks:
    that party sends its bits β themselves as d and every party sets [[β]] = d, a public constant (so the bits,
    the checks on them and their MACs are unchanged). **A planted leak**: every other party then receives that
    party's witness bits, which give its contribution away. Only the view audit (``mpcdp audit views --security
    malicious --plant-leak witness``, :mod:`mpcdp.jobs.auth_release_views`) uses it, on every party at once;
    a run never does."""
    return planting(_UNMASKED_BITS, party)
