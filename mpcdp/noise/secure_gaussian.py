"""The discrete Gaussian of :mod:`mpcdp.noise.discrete_gaussian`, sampled inside the MPC.

The noise committee (parties 0..c−1, :meth:`~mpcdp.mpc.context.MpcContext.committee_members`) samples; the
other parties take no part and receive one public message (the committee's counts). Who learns a noise
value, per provider:

* ``dealer`` (Beaver multiplication with the dealer's material): the dealer with any one member, or every
  member together; nobody else — no single party, no coalition missing a member, not the dealer alone or
  with non-members.
* ``honest-majority`` (the committee is parties 0–2; among exactly those three it multiplies by replicated
  resharing, :class:`~mpcdp.mpc.ring.ReplicatedProducts`, with no material): any two of parties 0–2, with or
  without others; no single one of them, with any number of parties 3..m−1. This is the same threshold as
  with Beaver multiplication on the generators' material (two generators hold every mask): what changed is
  only how two of them would learn it (each holds two of the three shares of every factor) and what one
  sees (another member's share of each factor, re-randomised by a zero sharing from a key it lacks: uniform
  words, recorded in the opening audit as kind ``share``).
 Every random field of a candidate is the XOR
of every member's private random bits. All arithmetic is exact on shares. Only each candidate's accept bit
is opened (to the members), and that is safe: candidates are independent, and an accepted value has the
target distribution whatever the other accept bits are. The shares then get a sharing of zero added on
every party, so each party's share is uniform.

Steps per pass of n candidates. Each is an exact integer protocol from :mod:`mpcdp.mpc.ring` or
:mod:`mpcdp.mpc.binary`, and together they are the rule of :func:`~mpcdp.noise.discrete_gaussian.accept`:
  1. Random fields: each party draws its share of every field from the OS CSPRNG (no communication).
  2. Piece: the one-hot word of the 6-bit index from a dealt rotation pair (the index ⊕ R opened, packed ten
     to a word); piece indicators and the piece's base, mask and sign extension are local selections.
  3. Candidate word: n = B ⊕ (point AND M) ⊕ (sign AND E), one AND level, two candidates to a word.
  4. B2A of n's k+5 bits and of I_1..I_4 (one opening). Then n as a two's complement integer, n² (one
     Beaver square) and T = n²·G + Λ_j, all exact in Z_2^64 (T < 2^62).
  5. T to binary (:func:`mpcdp.mpc.binary.to_binary_by_chunks`): c = T − r opened, r a dealt ring element
     with the one-hots of its 4-bit chunks; each chunk's one-hot rotated by c's chunk gives, locally, the
     chunk sum and whether it generates or propagates a carry; the carries from a 4-level prefix on 16-bit
     lanes (four candidates to a word), then one AND level adds them.
  6. Group one-hots: T's group windows ⊕ R opened (27 bits, two to a word) and the dealt one-hots of R's
     windows moved by them (local); each group's threshold is a local selection.
  7. Each Bernoulli factor [V < TH] with V = W ⊕ TH (W the field's uniform word): TH's bit at the top set
     bit of W, found by three rotations of one-hots (W's 4-bit chunks, their nonzero flags, the flags of
     four chunks) and three AND levels on packed words (:func:`mpcdp.mpc.binary.bernoulli_bits`); the eight
     factors are batched. The low bits: V_low >= T_low the same way.
  8. Accept = AND of the factors and of NOT (T's bits above the cut): 4 levels, four candidates to a word.
     Open it, 64 candidates to a word.
  9. Keep the accepted n, still secret-shared. Draw a new pass for the shortfall.

Declared cost (:func:`declared_cost`, checked against the counters in tests/test_discrete_gaussian.py for
both providers): per pass of n candidates 22 steps carrying ≈ 41.1n ring elements or words (≈ 64 per
accepted sample at acceptance 0.64). With Beaver multiplication they are 22 openings and 21 dealer requests;
with replicated resharing (honest-majority, committee of parties 0–2) the 14 multiplication steps (≈ 28n) are
resharings, one round each and one word per element per member, and 7 requests for material remain.
Operations: and_words ≈ 17.25n and square n (Beaver: dealt material; replicated: none), one-hot words 59n
(239n one-hots, most four to a word), b2a_bits (k+9)n (material under both). Measured bytes and time per
sample: benchmarks/results/noise-exact.md.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from mpcdp.mpc import binary, ring
from mpcdp.transport import costs
from mpcdp.mpc.context import MpcContext
from mpcdp.noise import discrete_gaussian as dg
from mpcdp.randomness import KeyedStream, secure_key


CIRCUIT = ("dg-mpc/3: noise committee (parties 0..c-1), rotated one-hots for the piece and the T windows, "
           "Bernoulli factors by rotation-decoded top bits, packed point/accept, T to binary by rotated one-hots "
           "of 4-bit chunks and a carry prefix on packed lanes")
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


def _piece_words(ctx: MpcContext, plan: dg.SamplerPlan, fields: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """XOR shares of (the candidate's (k+5)-bit two's complement word, the piece indicator bits I_0..I_4 as
    a (n, 5) tensor).

    The index's one-hot comes from a rotation pair; each index value's piece j gives, by local selection,
    the piece's base bit B_j, point mask M_j and sign extension E_j, and the word is
    n = B ⊕ (point AND M) ⊕ (sign AND E): piece 0 is the two's complement of (sign, k low bits); piece j >= 1
    is +m or ~m = −m − 1 with m = 2^(k+j−1) + (point mod 2^(k+j−1)). One AND level of two pairs."""
    k, width = plan.k, plan.k + 5
    full = (1 << width) - 1
    onehot = binary.rotated_one_hots(ctx, fields["index"], [(0, dg.INDEX_BITS)], label="dg-piece")[:, 0]
    table = plan.index_table().tolist()
    bases = [0] + [1 << (k + j - 1) for j in range(1, dg.PIECES)]
    masks = [(1 << k) - 1] + [(1 << (k + j - 1)) - 1 for j in range(1, dg.PIECES)]
    extensions = [full ^ ((1 << k) - 1)] + [full] * (dg.PIECES - 1)
    chosen = binary.select(ctx, onehot, tuple(1 << int(j) for j in table), dg.PIECES)  # bit j: I_j
    indicators = (chosen.unsqueeze(1) >> torch.arange(dg.PIECES)) & 1
    base = binary.select(ctx, onehot, tuple(bases[j] for j in table), width)
    mask = binary.select(ctx, onehot, tuple(masks[j] for j in table), width)
    extension = binary.select(ctx, onehot, tuple(extensions[j] for j in table), width)
    sign = binary.broadcast(ctx, fields["sign"], 0)
    low, high = binary.packed_ands(ctx, {0: fields["point"], 1: mask, 2: sign, 3: extension}, [(0, 1), (2, 3)],
                                   point_lane(plan), label="dg-point")
    return (base ^ low ^ high) & full, indicators


def point_lane(plan: dg.SamplerPlan) -> int:
    """Bits per candidate word in the packed point ANDs: 32 (two to a word) while k + 5 <= 32."""
    return 32 if plan.k + 5 <= 32 else 64


def _exponent(ctx: MpcContext, plan: dg.SamplerPlan, word: torch.Tensor, indicators: torch.Tensor):
    """Additive shares of (the candidate n, T = n²·G + Λ_j), from n's XOR-shared word and piece bits."""
    k, n = plan.k, word.numel()
    packed = word
    for j in range(1, dg.PIECES):
        packed = packed | (indicators[:, j] << (k + 4 + j))
    bits = ring.b2a_bits(ctx, packed, k + 9, label="dg-b2a")
    value = ring.bits_to_value(bits[:, : k + 4]) - bits[:, k + 4] * (1 << (k + 4))
    square = ring.Products(ctx, n, 1, [(0, 0)], label="dg-square")
    square.open({0: value})
    T = ring.public_add(ctx, square.product(0, 0) * plan.G, plan.Lambda[0])
    for j in range(1, dg.PIECES):
        T = T + bits[:, k + 4 + j] * (plan.Lambda[j] - plan.Lambda[0])
    return value, T


def group_windows() -> list[tuple[int, int]]:
    """The distinct bit windows (low, width) of T that the groups read, in first-use order."""
    windows: list[tuple[int, int]] = []
    for low, width, _ in dg.GROUPS:
        if (low, width) not in windows:
            windows.append((low, width))
    return windows


def _factors(ctx: MpcContext, plan: dg.SamplerPlan, t_bits: torch.Tensor, fields: dict[str, torch.Tensor]):
    """XOR shares of every factor's pass bit, packed in a word: bit g for group g, then the low bits, then
    the cut (t < 64)."""
    n, groups, windows = t_bits.numel(), len(dg.GROUPS), group_windows()
    onehots = binary.rotated_one_hots(ctx, t_bits, windows, label="dg-group")
    thresholds = [binary.select(ctx, onehots[:, windows.index((low, width))], tuple(table.tolist()), dg.WORD + 1)
                  for (low, width, _), table in zip(dg.GROUPS, dg.group_thresholds())]
    uniform = torch.cat([fields[f"v{g}"] for g in range(groups)] + [fields["v_low"]])
    threshold = torch.cat(thresholds + [t_bits & ((1 << dg.LOW_BITS) - 1)])
    passed = binary.bernoulli_bits(ctx, uniform, threshold, dg.WORD, label="dg-bern")
    factors = torch.zeros(n, dtype=torch.int64)
    for g in range(groups):
        factors = factors | (passed[g * n:(g + 1) * n] << g)
    factors = factors | (ring.public_xor(ctx, passed[groups * n:], 1) << groups)  # V_low >= T_low
    above = (t_bits >> (dg.F + 6)) & ((1 << dg.ABOVE) - 1)  # bits of t at 64 and above: must be 0
    return factors | (ring.public_xor(ctx, above, (1 << dg.ABOVE) - 1) << (groups + 1))


def _candidates(ctx: MpcContext, plan: dg.SamplerPlan, n: int, words) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw n candidates; return (public accept mask, additive shares of each candidate's value)."""
    costs.record("random_bits", n * sum(dg.field_bits(plan).values()))
    fields = {name: torch.from_numpy(v) for name, v in dg.draw_fields(plan, n, words).items()}
    word, indicators = _piece_words(ctx, plan, fields)
    value, T = _exponent(ctx, plan, word, indicators)
    t_bits = binary.to_binary_by_chunks(ctx, T, 62, label="dg-a2b")
    factors = _factors(ctx, plan, t_bits, fields)
    accept = binary.all_bits_packed(ctx, factors, len(dg.GROUPS) + 1 + dg.ABOVE, label="dg-accept")
    opened = binary.open_packed(ctx, accept, 1, label="dg-accept-bits", kind="comparison")
    return opened == 1, value


def declared_cost(candidates: list[int], plan: dg.SamplerPlan, *, replicated: bool = False) -> costs.DeclaredCost:
    """The declared cost of :func:`sample_discrete_gaussian`: one pass per entry of ``candidates``.

    Per pass of n candidates, with c = 8 Bernoulli factors (7 groups and the low bits; e = cn elements of
    :func:`~mpcdp.mpc.binary.bernoulli_bits`), w = 6 distinct group windows, L = :func:`point_lane` and ⌈x⌉
    the packed word counts, the communication steps in order are: piece index ⌈n/10⌉; point ANDs
    4⌈n/(64/L)⌉; B2A n; square n; A2B (:func:`~mpcdp.mpc.binary.declared_cost_by_chunks`) mask n, then
    2⌈n/4⌉ at each of its 4 carry levels and n for the carries' AND (ANDs); group windows ⌈n/2⌉; the factors'
    chunks e, their flags ⌈e/4⌉ and super-flags ⌈e/16⌉; T1 AND TH 2e; the packed picks 2⌈e/4⌉ and 2⌈e/16⌉
    (ANDs); accept 4 AND levels of ⌈n/4⌉; the accept bits ⌈n/64⌉. That is 22 steps and ≈ 41.1n elements;
    14 of them, ≈ 28n elements, are multiplications (the point, the square, the carries, T1 AND TH, the
    picks, the accept levels).

    With Beaver multiplication (``replicated`` False: the dealer, or honest-majority outside a committee of
    exactly parties 0–2) every step is an opening and each multiplication a material request: 22 openings,
    21 requests. With the honest-majority provider's replicated arithmetic (``replicated``: a committee of
    exactly parties 0–2) each multiplication is a resharing of the same element count (each member sends
    them to one other member, 1 round instead of an opening's 2) and needs no material: 8 openings
    (≈ 13.1n elements), 14 resharings (≈ 28n), 7 requests.
    Operations: and_words 2⌈n/(64/L)⌉ + 7⌈n/4⌉ + 3n + e + ⌈e/4⌉ + ⌈e/16⌉ + 4⌈n/4⌉; one_hot_words (dealt words of
    one-hots) (4 + 1 + w + 6c)n; b2a_bits (k+9)n; square n; random_bits (6 + (k+3) + 1 + 7·62 + 53)n.
    """
    k, c = plan.k, len(dg.GROUPS) + 1
    accept_levels = binary.levels(len(dg.GROUPS) + 1 + dg.ABOVE)
    point_words = lambda n: -(-n // (64 // point_lane(plan)))  # noqa: E731
    random_bits = sum(dg.field_bits(plan).values())
    cost = costs.DeclaredCost()
    for n in candidates:
        e = c * n
        accept_words = -(-n // (64 // (1 << accept_levels)))
        a2b_openings, a2b_ops, a2b_requests = binary.declared_cost_by_chunks(n, 62)
        cost.ops.update({"and_words": 2 * point_words(n) + a2b_ops["and_words"] + e + -(-e // 4) + -(-e // 16)
                         + accept_levels * accept_words,
                         "one_hot_words": a2b_ops["one_hot_words"] + (1 + len(group_windows()) + 6 * c) * n,
                         "b2a_bits": (k + 9) * n, "square": n, "random_bits": random_bits * n})
        a2b = [(a2b_openings[0], False), *[(size, True) for size in a2b_openings[1:]]]
        steps = [(-(-n // (64 // dg.INDEX_BITS)), False), (4 * point_words(n), True), (n, False), (n, True),
                 *a2b, (-(-n // 2), False), (e, False), (-(-e // 4), False),
                 (-(-e // 16), False), (2 * e, True), (2 * -(-e // 4), True), (2 * -(-e // 16), True),
                 *[(accept_words, True)] * accept_levels, (-(-n // 64), False)]
        for size, multiplication in steps:
            if multiplication and replicated:
                cost.reshare(size)
            else:
                cost.open(size)
        # one request for material per step but the last (the accept bits are opened without a mask)
        cost.dealer_requests += len(steps) - 1 - (sum(m for _, m in steps) if replicated else 0)
    return cost


def candidates_wanted(plan: dg.SamplerPlan, need: int) -> float:
    """Candidates a pass draws for ``need`` more samples: the expected count plus a margin of 4√need + 8, so a
    second pass is rare (public: it depends on the plan's acceptance and on accept bits already opened)."""
    return need / plan.acceptance + 4 * math.sqrt(need) + 8


def sample_discrete_gaussian(ctx: MpcContext, count: int, plan: dg.SamplerPlan, *,
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
        rng: a seeded generator for this party's random fields: reproducible, so *insecure*. None (default)
            draws them from a ChaCha20 stream under an OS-CSPRNG key.
        stats: filled with public counts: candidates, passes, accepted (on the committee), samples.
    """
    if count < 1:
        raise ValueError(f"`count` must be >= 1. Found {count}.")
    stats = stats if stats is not None else {}
    for key in ("candidates", "passes", "accepted", "samples"):
        stats.setdefault(key, 0)
    stats.setdefault("pass_candidates", [])
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


def _committee_samples(ctx: MpcContext, count: int, plan: dg.SamplerPlan, words, stats: dict) -> torch.Tensor:
    """The committee's passes until ``count`` candidates are accepted; their additive shares."""
    kept, have = [], 0
    while have < count:
        need = count - have
        n = min(int(candidates_wanted(plan, need)), MAX_PASS)
        accepted, value = _candidates(ctx, plan, n, words)
        stats["candidates"] += n
        stats["passes"] += 1
        stats["pass_candidates"].append(n)
        stats["accepted"] += int(accepted.sum())
        index = torch.nonzero(accepted).reshape(-1)[:need]
        kept.append(value[index])
        have += index.numel()
    return torch.cat(kept)
