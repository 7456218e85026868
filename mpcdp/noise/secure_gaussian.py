"""The discrete Gaussian of :mod:`mpcdp.noise.discrete_gaussian`, sampled inside the MPC.

The noise committee (parties 0..c−1, :meth:`~mpcdp.mpc.context.MpcContext.committee_members`) samples; the
other parties take no part and receive one public message (the committee's counts). Who can learn a noise
value (:func:`noise_known_to` says it per run, and every run's JSON carries it as ``noise_known_to``):

* ``dealer`` (Beaver multiplication with the dealer's material): the dealer together with any one member
  (it knows every Beaver mask), or every member together. Nobody else: no single party, no coalition
  missing a member, not the dealer alone or with non-members. With c < m the members 0..c−1 together are
  such a coalition without the other data parties: ``noise_committee = m`` makes every data party a member.
* ``honest-majority`` (the committee is parties 0–2; among exactly those three it multiplies by replicated
  resharing, :class:`~mpcdp.mpc.ring.ReplicatedProducts`, with no material): any two of parties 0–2, with or
  without others; no single one of them, with any number of parties 3..m−1. One member sees another
  member's share of each factor, re-randomised by a zero sharing from a key it lacks (kind ``share``).

What each role's view holds, and why it is independent of the released noise (``mpcdp audit views`` tests
each against the noise):

* A candidate's piece and point (:data:`MEMBER_FIELDS`) are the XOR of every member's private random bits:
  no member alone knows a candidate.
* Every Bernoulli factor's uniform word is W = R ⊕ S (:func:`mpcdp.mpc.bernoulli.coin_uniform`): R a dealt
  rotation pair's word, known to the dealer (without one, to the generators jointly), S from the committee's
  coin (:meth:`~mpcdp.mpc.context.MpcContext.common_stream`: every member commits to its part before any
  part is opened, opening kind ``coin``), known to the members and never to the dealer. So no single role
  knows W, and whether a factor passes at a value is hidden from each.
* Only each candidate's first-factor bit and accept bit are opened (to the members): candidates are
  independent, a candidate dropped or rejected is discarded, and one that is kept has the target
  distribution whatever the other bits are. The counts they give (a pass's survivors and accepted
  candidates, which the dealer can read off its request sizes and the non-members receive) are functions of
  those bits only, so they are independent of the kept values too.
* The dealer's own draws (every mask, one-hot and R) are uniform and independent of the candidates.

All arithmetic is exact on shares. The shares then get a sharing of zero added on every party, so each
party's share is uniform. Circuit dg-mpc/5 read the factors from tables the dealer made from its own words:
cheap, but the dealer knew every candidate's pass set (the released candidate is one that passed); it is
kept only as the view audit's planted leak (:func:`mpcdp.mpc.bernoulli.planted_dealer_tables`).

Steps per pass of n candidates. Each is an exact integer protocol from :mod:`mpcdp.mpc.ring`,
:mod:`mpcdp.mpc.binary` or :mod:`mpcdp.mpc.bernoulli`, and together they are the rule of
:func:`~mpcdp.noise.discrete_gaussian.accept`:
  1. Random fields: each member draws its share of the piece and point fields from the OS CSPRNG (no
     communication); the members commit to and open the coin's key (4 + 8 words each way).
  2. Piece: the one-hot word of the 6-bit index from a dealt rotation pair (the index ⊕ R opened, packed ten
     to a word); piece indicators and the piece's base, mask and sign extension are local selections (nine
     pieces, :data:`~mpcdp.noise.discrete_gaussian.LAYOUT`).
  3. Candidate word: n = B ⊕ (point AND M) ⊕ (sign AND E); only 5 bits per candidate need the AND (the
     point's 4 high bits AND M's, sign AND [j >= 1]: the other bits of M and E are the same for every piece),
     one AND level, twelve candidates to a word.
  4. B2A of x = n + 2^(k+5) (n's word with its sign bit flipped, x < 2^(k+6)) by a ripple carry on a bounded
     mask (:func:`mpcdp.mpc.ripple.b2a_by_ripple`): r < 2^(k+6) dealt XOR- and additively shared with a carry
     bit ρ, y = x + r by c_(i+1) = maj(x_i, r_i, c_i), one AND per bit on bit columns (64 candidates to a
     word), k+6 rounds; then one opening of bit columns, k+13 words per 64 candidates: y mod 2^(k+6), the carry
     out XOR ρ and I_1..I_8 XOR dealt bits (the dealer sends the receiver each such bit's share only to the
     bits that matter: the carry out mod 2^(58−k), I_j mod 2^(62−t) for Λ_j − Λ_0 = 2^t·odd). x = y − r +
     2^(k+6)·carry and n = x − 2^(k+5), exact in Z_2^64. n² with no multiplication of its own (dg-mpc/11; before,
     one Beaver square per candidate, an opening of n ring elements): the dealer also deals r² and ρ·r
     (:class:`mpcdp.adapter.BoundedMaskSquares`), and x² = y² − 2y·r + r² + 2^(k+7)·(y·c − c·r) + 2^(2k+12)·c
     with c·r = ε·r + (1 − 2ε)·ρ·r (ε = carry ⊕ ρ, opened) is linear in them with public coefficients, needed
     only mod 2^w, w = 62 − v for G = 2^v·odd (:func:`square_width`: r² mod 2^w, ρ·r mod 2^(w−k−7)); then
     n² = x² − 2^(k+6)·x + 2^(2k+10). Under replicated arithmetic (honest-majority, parties 0–2) a square is one
     resharing of a word per member, cheaper than generating the squares, so n² stays one replicated square.
     T = n²·G + Λ_j (T < 2^62). dg-mpc/9 converted n's word's bits one by one, each bit i's share mod 2^(64−i)
     dealt: 1,353 bits per candidate at k = 16 against 347 in dg-mpc/10 (r, the ANDs, the five dealt bits),
     for k+5 more rounds.
  5. T to binary (:func:`mpcdp.mpc.binary.to_binary_by_chunks`): c = T − r opened, r a dealt ring element
     with the one-hots of its 4-bit chunks; each chunk's one-hot rotated by c's chunk gives, locally, the
     chunk sum and whether it generates or propagates a carry; the carries from a 4-level Sklansky prefix on
     bit columns (:mod:`mpcdp.mpc.carry_prefix`: each level opens only the 20, 14, 10 and 8 bits per candidate
     it multiplies, 64 candidates to a word; dg-mpc/10's Kogge–Stone on 16-bit lanes opened 32 at each level),
     then one AND level adds them (its three shifted products land on disjoint bits: one merged dealt word per
     candidate).
  6. The first factor (group (F−2, 6), t's bits 1/4..8: it rejects about 15% of the candidates, all the
     others and the cut together about 8%), on every candidate: the dealt one-hot of R's window moved by the opened
     window, the threshold's right operand a local selection, and [V < TH] by one-hot decoding of W's top
     set bit and three AND levels (:func:`mpcdp.mpc.bernoulli.bernoulli_bits`; the super-chunks' one-hots
     four candidates to a word). Its pass bit is opened, 64 to a word, and the candidates that fail it are
     dropped.
  7. The other factors and the cut (T's bits from t = 64 up all 0), on the survivors only: the other
     groups' windows (two to a word: three 6-bit fractional windows and the pair's 2-bit one at 57,
     :func:`~mpcdp.noise.gaussian_factors.group_windows`) and the same circuit, batched. TH's bit at
     W's top in each chunk is a bilinear form of two one-hots (the chunk's top bit and the window's value),
     evaluated by a least-rank GF(2) factorisation of each table's chunk (:mod:`mpcdp.mpc.chunk_forms`,
     :func:`~mpcdp.noise.gaussian_factors.factor_forms`): 109 ANDs per survivor for the 6 factors (92 for
     the five groups, whose entries can have 162 bits set, and 17 for the low bits' 22; 129 with t's bits 8, 4
     a group of their own, dg-mpc/11 174, dg-mpc/8 291 bits), packed one after another across 64 survivors at a
     time, ≈ 1.70 words per survivor (the first factor's 46 instead of 62: ≈ 0.72 words per candidate); the
     picks only on the chunks and super-chunks whose bit can be nonzero (56 and 17 bits per survivor instead of
     96 and 24). The other factors' thresholds are multiples of 2^d (d = 16 to 21; the first factor's, down to
     2^39.3, are the nearest integers: :mod:`mpcdp.noise.dg_thresholds`), so their low chunks are dead. W's chunks below a factor's lowest threshold bit
     (:attr:`~mpcdp.mpc.chunk_forms.ChunkForms.first_chunk`) get no one-hot
     (:func:`~mpcdp.mpc.bernoulli.coin_uniform`; the decision is the same, tests/test_chunk_forms.py), and every
     rotation pair's one-hots come in only the bytes their windows use
     (:func:`~mpcdp.adapter.bit_words.pack_one_hots`).
  8. Accept = AND of the factors: 4 AND levels over 10 bits, each opening only the bits still needed (the
     even bits and the odd ones, 5, 3, 2 and 1 bits per survivor, packed across survivors,
     :func:`~mpcdp.mpc.binary.all_bits_tree`). Open it, 64 candidates to a word.
  9. Keep the accepted n, still secret-shared. Draw a new pass for the shortfall.

Declared cost (:func:`declared_cost`, checked against the counters in tests/test_discrete_gaussian.py for
both providers): per pass of n candidates of which s ≈ 0.86n pass the first factor, the coin's two public
exchanges among the members (32 and 64 bytes each way) and 27 + (k+6) communication steps with the dealer
(≈ 13.6n ring elements or words at k = 16: n² opens nothing), 28 + (k+6) under honest-majority (≈ 14.6n, its
replicated square n of them). With the dealer every step is an opening, and with each factor stage's
coin_uniform and flags' rotations and the ripple's bounded masks 28 requests for material. Under honest-majority
the 17 + (k+6) multiplication steps (≈ 10.9n) are resharings, one round each and one word per element per
member, the other 11 (≈ 3.7n) openings, and 14 requests for material remain (one-hot words ≈ 11.1n +
24.9s, bounded masks n, b2a_bits 7n). Measured bytes and time per sample: benchmarks/results/noise-exact.md; where
they go, step by step: ``python -m benchmarks.noise_breakdown``.
"""

from __future__ import annotations

import collections
import dataclasses
import math

import numpy as np
import torch

from mpcdp.mpc import bernoulli, binary, ring, ripple
from mpcdp.transport import costs
from mpcdp.mpc.coin import coin_cost
from mpcdp.mpc.context import MpcContext
from mpcdp.noise import discrete_gaussian as dg
from mpcdp.noise import gaussian_factors as factors
from mpcdp.randomness import KeyedStream, secure_key

MEMBER_FIELDS = ("index", "point", "sign")
"""The random fields each member draws privately (XOR-combined): the candidate's piece and point. The
Bernoulli factors' uniform words are dealt words XOR the committee's coin instead."""


CIRCUIT = ("dg-mpc/12: dgauss-grid/3's thresholds (multiples of 2^d) and low factor (T's bits from 2^-42), "
           "the plan of 9 pieces (narrow where ρ falls fastest), noise committee (parties 0..c-1), rotated one-hots for the piece, the factor that rejects "
           "most first and its failures dropped, Bernoulli factors by rotation-decoded top bits of dealt words XOR "
           "the committee's committed coin under every provider (no single role knows a factor's word), TH's bit at "
           "the top by least-rank GF(2) forms of each table chunk (ANDs = the ranks, packed across factors) and the "
           "picks only on chunks whose bit can be set, narrow neighbouring windows on one one-hot, the point's AND "
           "on 5 bits, the candidate word made additive by a ripple carry on a bounded mask (one AND per bit on "
           "packed bit columns) with its carry out and the piece bits as dealt bits in one opening of bit columns, "
           "n² from the opened sum and dealt r², r·carry-bit with no opening (a replicated square among parties "
           "0-2 under honest-majority), packed "
           "accept, T to binary by rotated one-hots of 4-bit chunks, a Sklansky carry prefix on bit columns and one "
           "merged product for the carries' add, W's chunks below every threshold's lowest set bit not decoded nor "
           "flagged (each factor's chunk flags from its first chunk, opened bit after bit), rotation "
           "pairs' one-hots dealt in the bytes their windows use; replicated resharing among parties 0-2 under "
           "honest-majority")
"""The version of the in-MPC protocol (not of the distribution, which :data:`mpcdp.learning.mechanisms` names):
cost records say which circuit they measured."""
PUBLIC_COUNTS = ("candidates", "passes", "accepted")  # what the committee tells the other parties
MAX_PASS = 1 << 17  # candidates per pass: bounds the memory of a pass (≈ 1 GiB) for any count


def party_words(rng: np.random.Generator | None):
    """This party's source of uniform int64 words: a fresh ChaCha20 stream under an OS-CSPRNG key, or (tests
    only) a seeded generator."""
    if rng is None:
        stream = KeyedStream(secure_key(), domain=b"mpcdp/noise-candidates")
        return lambda n: stream.words(n).numpy()
    return lambda n: rng.integers(-(2**63), 2**63 - 1, size=n, dtype=np.int64, endpoint=True)


def _piece_words(ctx: MpcContext, plan: dg.DiscreteGaussianPlan, fields: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """XOR shares of (the candidate's (k+6)-bit two's complement word, the piece indicator bits I_0..I_6 as
    a (n, 7) tensor).

    The index's one-hot comes from a rotation pair; each index value's piece j gives, by local selection,
    the piece's base bits B_j, point mask M_j and whether j >= 1, and the word is
    n = B ⊕ (point AND M) ⊕ (sign AND E): piece 0 is the two's complement of (sign, its k+1 low bits); piece
    j >= 1 is +m or ~m = −m − 1 with m = B_j + (point mod its width) (B_j a multiple of the width, so + is ⊕).
    Only 5 bits per candidate need an AND: M's k low bits are 1 for every piece (the narrowest is 2^k wide),
    so point AND M is the point's k low bits next to (its 4 high bits AND M's); E's bits from k+1 up are 1
    for every piece, so sign AND E is the sign there and sign AND [j >= 1] on piece 0's k+1 low bits. One AND
    level of one pair of 5-bit values, twelve candidates to a word."""
    k, width = plan.k, plan.k + dg.WORD_EXTRA  # the layout's radius is 2^(WORD_EXTRA − 1) units
    full, low_k, low_e = (1 << width) - 1, (1 << k) - 1, plan.point_masks()[0]  # low_e: piece 0's bits
    high_bits = (1 << dg.POINT_EXTRA) - 1
    onehot = binary.rotated_one_hots(ctx, fields["index"], [(0, dg.INDEX_BITS)], label="dg-piece")[:, 0]
    table = plan.index_table().tolist()
    bases = [0] + plan.piece_starts()[1:]
    masks = plan.point_masks()
    chosen, base, high_masks = binary.select_fields(ctx, onehot, [
        (tuple(1 << int(j) for j in table), dg.PIECES),  # bit j: I_j
        (tuple(bases[j] for j in table), width),
        (tuple(((masks[j] >> k) & high_bits) | (int(j >= 1) << dg.POINT_EXTRA) for j in table), POINT_LANE)])
    indicators = (chosen.unsqueeze(1) >> torch.arange(dg.PIECES)) & 1
    sign = fields["sign"] & 1
    (anded,) = binary.packed_ands(ctx, {0: ((fields["point"] >> k) & high_bits) | (sign << dg.POINT_EXTRA),
                                        1: high_masks}, [(0, 1)], POINT_LANE, label="dg-point")
    low = (fields["point"] & low_k) | ((anded & high_bits) << k)
    high = (binary.broadcast(ctx, sign, 0) & (full ^ low_e)) | (binary.broadcast(ctx, anded, dg.POINT_EXTRA) & low_e)
    return (base ^ low ^ high) & full, indicators


POINT_LANE = dg.POINT_EXTRA + 1
"""Bits per candidate in the point's packed AND (its 4 high bits and the sign): twelve candidates to a word."""


def _exponent(ctx: MpcContext, plan: dg.DiscreteGaussianPlan, word: torch.Tensor, indicators: torch.Tensor):
    """Additive shares of (the candidate n, T = n²·G + Λ_j), from n's XOR-shared word and piece bits.

    x = n + 2^(k+5) (the word with its sign bit flipped: x < 2^(k+6)) becomes additive, exact in Z_2^64, by a
    ripple carry on a bounded mask (:func:`mpcdp.mpc.ripple.b2a_by_ripple`), and I_1..I_8 by dealt bits in the
    same last opening (:func:`b2a_widths`); then n = x − 2^(k+5) and n² = x² − 2^(k+6)·x + 2^(2k+10), x² from the
    opened y and the dealt squares with Beaver multiplication (:func:`square_width`), or one replicated square
    of n among exactly parties 0–2; then T."""
    k, dealt = plan.k, ripple.squares_dealt(ctx)
    top = k + dg.WORD_EXTRA - 1  # n's sign bit
    flipped = ring.public_xor(ctx, word, 1 << top)
    pieces = torch.zeros_like(word)
    for j in range(1, dg.PIECES):
        pieces = pieces | (indicators[:, j] << (j - 1))
    lifted = ripple.b2a_by_ripple(ctx, flipped, top + 1, pieces, dg.PIECES - 1, b2a_widths(plan), label="dg-b2a",
                                  square_width=square_width(plan) if dealt else 0)
    value = ring.public_add(ctx, lifted.value, -(1 << top))
    if lifted.square is not None:
        square = ring.public_add(ctx, lifted.square - (lifted.value << (top + 1)), 1 << (2 * top))
    else:
        products = ring.Products(ctx, word.numel(), 1, [(0, 0)], label="dg-square")
        products.open({0: value})
        square = products.product(0, 0)
    T = ring.public_add(ctx, square * plan.G, plan.Lambda[0])
    for j in range(1, dg.PIECES):
        T = T + lifted.bits[:, j - 1] * (plan.Lambda[j] - plan.Lambda[0])
    return value, T


def square_width(plan: dg.DiscreteGaussianPlan) -> int:
    """The bits of n² that T = n²·G + Λ_j (read mod 2^62) depends on: 62 − v, G = 2^v·odd (at least 1)."""
    twos = (plan.G & -plan.G).bit_length() - 1
    return max(1, 62 - twos)


def b2a_widths(plan: dg.DiscreteGaussianPlan) -> list[int]:
    """The bits of each dealt-bit conversion's shares that matter (:func:`mpcdp.mpc.ripple.b2a_by_ripple`'s
    ``widths``): the ripple's carry out (weight 2^(k+6) in n, which is kept exact in Z_2^64) mod 2^(64−k−6);
    the piece bit I_j (times Λ_j − Λ_0 = 2^t·odd in T, which is read mod 2^62) mod 2^(62−t)."""
    def twos(x: int) -> int:
        return (x & -x).bit_length() - 1 if x else 62

    return [64 - (plan.k + dg.WORD_EXTRA)] + [max(1, 62 - twos(int(plan.Lambda[j]) - int(plan.Lambda[0])))
                                  for j in range(1, dg.PIECES)]


def b2a_reply_words(plan: dg.DiscreteGaussianPlan, n: int, *, squares: bool = True) -> int:
    """Words of the dealer's packed reply of dealt bits to its receiver for n candidates: I_1..I_8 with
    ``squares`` (the carry's bit comes with the bounded masks), else the carry out and I_1..I_8: the widths of
    :func:`b2a_widths` packed one after another, :data:`~mpcdp.adapter.lanes.WORD_BITS_GROUP` candidates at a
    time (:class:`mpcdp.adapter.material.WordBits`)."""
    from mpcdp.adapter.material import WordBits

    widths = b2a_widths(plan)[1:] if squares else b2a_widths(plan)
    rows, words = WordBits.reply_shape(n, len(widths), widths)
    return rows * words


def bounded_reply_words(plan: dg.DiscreteGaussianPlan, n: int) -> int:
    """Words of the dealer's packed reply of bounded masks with squares to its receiver for n candidates
    (:class:`mpcdp.adapter.BoundedMaskSquares`: r, the carry's bit, r² and ρ·r at their widths)."""
    from mpcdp.adapter.bounded_masks import BoundedMaskSquares

    rows, words = BoundedMaskSquares.reply_shape(n, plan.k + dg.WORD_EXTRA, square_width(plan))
    return rows * words


SURVIVAL_OVER_ACCEPTANCE = 1.105
"""Expected fraction of candidates that pass the first factor, over the acceptance: the other factors and
the cut pass with probability about 0.905 (the ratio is 1.099–1.109 by enumeration at σ from 16 to 6.6·10^4
units). Used only to estimate a pass's cost before it runs."""


@dataclasses.dataclass
class PassResult:
    """One pass: the public accept mask, additive shares of every candidate's value, the candidates that
    passed the first factor (public to the committee, like the accept bits), and what a test of the decisions
    reads (XOR shares; name -> words): without the dealer's tables the Bernoulli factors' uniform words (the
    first factor's for every candidate, the others' for the survivors in order); with them each stage's
    factor bits."""

    accepted: torch.Tensor
    value: torch.Tensor
    kept: torch.Tensor
    uniform: dict[str, torch.Tensor]

    @property
    def survivors(self) -> int:
        return int(self.kept.numel())


def _candidates(ctx: MpcContext, plan: dg.DiscreteGaussianPlan, n: int, words) -> PassResult:
    """Draw n candidates; return the pass's accept mask, value shares and first-factor survivors.

    Opening the first factor's bit is safe for the same reason as opening the accept bit: a candidate that
    fails it is discarded, and one that passes every factor reveals only that it was accepted."""
    coin, value, t_bits = _candidate_words(ctx, plan, n, words)
    first, seen = factors.first_factor(ctx, t_bits, coin)
    passed = binary.open_packed(ctx, first, 1, label="dg-first-bits", kind="comparison") == 1
    keep = torch.nonzero(passed).reshape(-1)
    accepted = torch.zeros(n, dtype=torch.bool)
    uniform = {f"first-{name}" if coin is None else name: v for name, v in seen.items()}
    if keep.numel():
        bits, width, rest = factors.other_factors(ctx, t_bits[keep], coin)
        uniform.update({f"rest-{name}" if coin is None else name: v for name, v in rest.items()})
        accept = binary.all_bits_tree(ctx, bits, width, label="dg-accept")
        accepted[keep] = binary.open_packed(ctx, accept, 1, label="dg-accept-bits", kind="comparison") == 1
    return PassResult(accepted, value, keep, uniform)


def _candidate_words(ctx: MpcContext, plan: dg.DiscreteGaussianPlan, n: int, words
                     ) -> tuple[KeyedStream | None, torch.Tensor, torch.Tensor]:
    """Steps 1-5 of a pass of n candidates: (the committee's coin, None with the dealer's tables; additive
    shares of each candidate's value; XOR shares of T's bits). The fields, the piece words and T are freed on
    return, before the factors (a lower peak of memory)."""
    costs.record("random_bits", n * _member_bits(plan))
    drawn = dg.draw_fields(plan, n, words, MEMBER_FIELDS)
    ctx.note_draw("dg-fields", drawn)
    fields = {name: torch.from_numpy(v) for name, v in drawn.items()}
    coin = None if bernoulli.tables_dealt() else ctx.common_stream(label="dg-coin", domain=b"mpcdp/noise-coin")
    word, indicators = _piece_words(ctx, plan, fields)
    del drawn, fields
    value, T = _exponent(ctx, plan, word, indicators)
    del word, indicators
    return coin, value, binary.to_binary_by_chunks(ctx, T, 62, label="dg-a2b")


def expected_survivors(plan: dg.DiscreteGaussianPlan, n: int) -> int:
    """The expected number of a pass's n candidates that pass the first factor (for estimates)."""
    return min(n, math.ceil(n * plan.acceptance * SURVIVAL_OVER_ACCEPTANCE))


def _pass_steps(plan: dg.DiscreteGaussianPlan, n: int, s: int, *, tables: bool, replicated: bool = False
                ) -> tuple[list[tuple[int, bool, bool]], collections.Counter, int]:
    """(elements, is a multiplication, needs a request for material under Beaver multiplication) of every
    communication step of a pass of n candidates of which s pass the first factor, in order; the pass's
    operation counts; and its requests for material that open nothing (each stage's coin_uniform and the
    bounded masks). ``replicated``: n² by a replicated square (a step) instead of the dealt squares (none)."""
    from mpcdp.adapter.bit_words import one_hot_reply_words  # here: the launcher's cost estimate must not import CrypTen

    point_words = -(-n // (64 // POINT_LANE))
    a2b_openings, a2b_ops, _ = binary.declared_cost_by_chunks(n, 62)
    b2a_steps, b2a_ops, b2a_silent = ripple.declared_cost(n, plan.k + dg.WORD_EXTRA, dg.PIECES - 1, squares=not replicated)
    ops = collections.Counter({"and_words": point_words + a2b_ops["and_words"],
                               "one_hot_words": a2b_ops["one_hot_words"] + one_hot_reply_words(n, [(0, dg.INDEX_BITS)], 64),
                               "b2a_reply_words": b2a_reply_words(plan, n, squares=not replicated),
                               "random_bits": _member_bits(plan) * n})
    ops.update(b2a_ops)
    square = [(n, True, True)] if replicated else []
    prefix = [(size, True, level == 0) for level, size in enumerate(a2b_openings[1:-1])]  # one request for all
    if replicated:
        ops["square"] = n
    else:
        ops["bounded_reply_words"] = bounded_reply_words(plan, n)
    steps = [(-(-n // (64 // dg.INDEX_BITS)), False, True), (2 * point_words, True, True), *b2a_steps, *square,
             (a2b_openings[0], False, True), *prefix, (a2b_openings[-1], True, True)]
    first_steps, first_ops, silent = factors.stage_cost(n, first=True, tables=tables)
    silent += b2a_silent
    steps += [*first_steps, (-(-n // 64), False, False)]
    ops.update(first_ops)
    if s:
        rest_steps, rest_ops, rest_silent = factors.stage_cost(s, first=False, tables=tables)
        accept_levels = binary.declared_cost_all_bits_tree(s, factors.other_factor_bits(tables=tables))
        steps += [*rest_steps, *[(size, True, True) for size in accept_levels], (-(-s // 64), False, False)]
        ops.update(rest_ops)
        ops["and_words"] += sum(accept_levels) // 2
        silent += rest_silent
    return steps, ops, silent


def _member_bits(plan: dg.DiscreteGaussianPlan) -> int:
    bits = dg.field_bits(plan)
    return sum(bits[name] for name in MEMBER_FIELDS)


def declared_cost(candidates: list[int], plan: dg.DiscreteGaussianPlan, *, survivors: list[int] | None = None,
                  replicated: bool = False, tables: bool = False) -> costs.DeclaredCost:
    """The declared cost of :func:`sample_discrete_gaussian`: one pass per entry of ``candidates``, of which
    ``survivors`` pass the first factor (default: :func:`expected_survivors`, for estimates).

    ``tables``: the factors come from the dealer's tables (only the view audit's planted leak,
    :func:`~mpcdp.mpc.bernoulli.planted_dealer_tables`); otherwise (every run) they are the circuit of
    :func:`~mpcdp.mpc.bernoulli.bernoulli_bits`.

    Per pass of n candidates and s survivors, with ⌈x⌉ the packed word counts, the communication steps in
    order are: (circuit only) the committed coin, two public exchanges among the members
    (:func:`~mpcdp.mpc.coin.coin_cost`: 32 then 64 bytes each way); piece index ⌈n/10⌉; point AND 2⌈n/12⌉
    (:data:`POINT_LANE`); the B2A's ripple, k+6 ANDs of 2⌈n/64⌉, then its opening of bit columns (k+13)⌈n/64⌉
    (:func:`mpcdp.mpc.ripple.declared_cost`); (``replicated`` only) the square n; A2B (:func:`~mpcdp.mpc.binary.declared_cost_by_chunks`) mask n,
    then its 4 carry levels' 20, 14, 10 and 8 columns of ⌈n/64⌉ words (their material in one request) and n for
    the carries' AND (ANDs); the first factor's stage, its pass bits
    ⌈n/64⌉; then, if s > 0, the other factors' stage, the accept AND's levels
    (:func:`~mpcdp.mpc.binary.declared_cost_all_bits_tree`) and the accept bits ⌈s/64⌉. The stages
    (:func:`~mpcdp.noise.gaussian_factors.stage_cost`): with tables one opening each, the first factor's window
    ⌈n/10⌉ and T ⊕ R for the others s, and 3 accept levels (5 bits: 2⌈s/21⌉, 2⌈s/32⌉, 2⌈s/64⌉); as a circuit
    the windows ⌈n/10⌉ and ⌈s/2⌉, :func:`~mpcdp.mpc.bernoulli.bernoulli_bits` on n and 6s elements (flags
    from each factor's first chunk, packed bit after bit, (16/64)n and (68/64)s (:mod:`mpcdp.mpc.chunk_flags`), super-flags ⌈e/16⌉, the forms' AND ≈ 2·(46/64)n for the first factor and ≈ 2·(109/64)s for the
    others' ranks packed across 64 elements, :func:`~mpcdp.mpc.run_streams.run_words`; picks on the chunks and
    super-chunks whose bit can be nonzero, ≈ 2·(16/64)n and 2·(4/64)n, ≈ 2·(56/64)s and 2·(17/64)s), and 4
    accept levels (10 bits: 2⌈s/12⌉, 2⌈s/21⌉, 2⌈s/32⌉, 2⌈s/64⌉). At acceptance 0.78 (s ≈ 0.86n): with tables 16
    + (k+6) steps, ≈ 5.4n elements; as a circuit 27 + (k+6) steps, ≈ 13.6n at k = 16 (replicated: 28 + (k+6),
    ≈ 14.6n), 16 + (k+6) of them (replicated 17 + (k+6), ≈ 10.9n) multiplications.

    With Beaver multiplication (``replicated`` False: the dealer, or honest-majority outside a committee of
    exactly parties 0–2) every step is an opening, and each one but the coin, the two sets of public bits and
    the ripple's and the carry prefix's steps after their first needs a request for material, as do the
    ripple's bounded masks and each circuit stage's coin_uniform, one per run of its factors with the same
    first chunk (:func:`~mpcdp.mpc.bernoulli.declared_cost_coin_uniform`), and each circuit stage's flags' rotation
    beyond its first run (:func:`~mpcdp.mpc.chunk_flags.declared_cost_flags`). With the honest-majority
    provider's replicated arithmetic (``replicated``: a committee of exactly parties 0–2) each multiplication
    is a resharing of the same element count (each member sends them to one other member, 1 round instead of
    an opening's 2) and needs no material. Operations: and_words ⌈n/12⌉ + (k+6)⌈n/64⌉ + 42⌈n/64⌉ + n + the accept
    levels (+ Σ(the forms' AND words + the picks' words) over a circuit's two stages); one_hot_words a2b + n
    (+ for a circuit the windows' one-hots, W's chunks' from each factor's first chunk and the flags' 1.25n + 5.5s,
    in words as :func:`~mpcdp.adapter.bit_words.one_hot_reply_words` deals them: 6.125n + 24.875s on the sampler's tables); table_words n + 5s (tables); bounded_masks n (without ``replicated``
    with the squares, the dealer's reply packed in bounded_reply_words, :func:`bounded_reply_words`); b2a_bits 6n,
    7n with ``replicated`` (the dealer's reply packed in b2a_reply_words ≈ n·Σ widths/64, :func:`b2a_reply_words`);
    square n (``replicated`` only); random_bits (6 + (k+4) + 1)n
    (what each member draws privately: :data:`MEMBER_FIELDS`). Star openings' kings rotate: the i-th has member
    i mod k as king (its bytes, :meth:`~mpcdp.transport.costs.DeclaredCost.bytes`).
    """
    survivors = survivors if survivors is not None else [expected_survivors(plan, n) for n in candidates]
    cost = costs.DeclaredCost(kings_rotate=True)  # the committee's star kings rotate (MpcContext.committee)
    for n, s in zip(candidates, survivors, strict=True):
        steps, ops, silent = _pass_steps(plan, n, s, tables=tables, replicated=replicated)
        cost.ops.update(ops)
        if not tables:
            cost.exchanges.extend(coin_cost())
        for size, multiplication, material in steps:
            if multiplication and replicated:
                cost.reshare(size)
            else:
                cost.open(size)
                cost.dealer_requests += material
        cost.dealer_requests += silent
    return cost


def candidates_wanted(plan: dg.DiscreteGaussianPlan, need: float) -> float:
    """Candidates a pass draws for ``need`` more samples: the expected count plus a margin of 4√need + 8, so a
    second pass is rare (public: it depends on the plan's acceptance and on accept bits already opened)."""
    return need / plan.acceptance + 4 * math.sqrt(need) + 8


def sample_discrete_gaussian(ctx: MpcContext, count: int, plan: dg.DiscreteGaussianPlan, *,
                             rng: np.random.Generator | None = None, stats: dict | None = None) -> torch.Tensor:
    """Additive shares (int64, grid units) of ``count`` i.i.d. draws of the sampler of ``plan``.

    The noise committee (:meth:`~mpcdp.mpc.context.MpcContext.committee_members`: parties 0..c−1) samples;
    the other parties wait and hold 0; then every party adds its share of a sharing of zero (pairwise keys,
    no communication), so each party's share is uniform and the committee's shares do not stand out. With
    m <= c every party samples and nobody waits.

    Args:
        ctx: this party's context (provider ``dealer`` or ``honest-majority``).
        count: number of samples.
        plan: the sampler's public constants (:func:`~mpcdp.noise.discrete_gaussian.plan_for`).
        rng: a seeded generator for this party's random fields (:data:`MEMBER_FIELDS`: the candidates):
            reproducible, so *insecure*. None (default) draws them from a ChaCha20 stream under an OS-CSPRNG
            key. The accept decisions also use the Bernoulli factors' words (dealt words XOR the committee's
            coin), which no seed fixes.
        stats: filled with public counts: candidates, passes, accepted (on the committee), samples.
    """
    if count < 1:
        raise ValueError(f"`count` must be >= 1. Found {count}.")
    stats = stats if stats is not None else {}
    for key in ("candidates", "passes", "accepted", "samples"):
        stats.setdefault(key, 0)
    stats.setdefault("pass_candidates", [])
    stats.setdefault("pass_survivors", [])
    members = ctx.committee_members()
    everyone = len(members) == ctx.parties
    if ctx.rank in members:
        with ctx.committee(members):
            shares = _committee_samples(ctx, count, plan, party_words(rng), stats)
        if not everyone:
            ctx.committee_done(members, {key: stats[key] for key in PUBLIC_COUNTS}, label="noise committee done")
    else:
        counts = ctx.wait_for_committee(members, label="noise committee done")
        for key in PUBLIC_COUNTS:
            stats[key] = counts.get(key, 0)
        shares = torch.zeros(count, dtype=torch.int64)
    stats["samples"] += count
    return shares if everyone else ctx.rerandomised(shares)


def _committee_samples(ctx: MpcContext, count: int, plan: dg.DiscreteGaussianPlan, words, stats: dict) -> torch.Tensor:
    """The committee's passes until ``count`` candidates are accepted; their additive shares."""
    kept, have = [], 0
    while have < count:
        need = count - have
        n = min(int(candidates_wanted(plan, need)), MAX_PASS)
        result = _candidates(ctx, plan, n, words)
        stats["candidates"] += n
        stats["passes"] += 1
        stats["pass_candidates"].append(n)
        stats["pass_survivors"].append(result.survivors)
        stats["accepted"] += int(result.accepted.sum())
        index = torch.nonzero(result.accepted).reshape(-1)[:need]
        kept.append(result.value[index])
        have += index.numel()
    return torch.cat(kept)
