"""The discrete Gaussian of :mod:`mpcdp.noise.discrete_gaussian`, sampled inside the MPC.

No data party, no coalition missing one data party, and not the dealer learns a noise value. Every random
field of a candidate is the XOR of every party's private random bits. All arithmetic is exact on shares.
Only each candidate's accept bit is opened, and that is safe: candidates are independent, and an accepted
value has the target distribution whatever the other accept bits are.

Steps per pass of n candidates. Each is an exact integer protocol from :mod:`mpcdp.mpc.ring` or
:mod:`mpcdp.mpc.binary`, and they are the same rules as :func:`~mpcdp.noise.discrete_gaussian.accept`:
  1. Random fields: each party draws its share of every field from the OS CSPRNG (no communication).
  2. Piece: one-hot of the 6-bit index (3 AND levels); piece indicators I_j are parities (local).
  3. Candidate word: n = ⊕_j I_j·(piece j's layout of the point and the sign), which takes one level of word
     ANDs.
  4. B2A of n's k+5 bits and of I_1..I_4 (one opening). Then n as a two's complement integer, n² (one
     Beaver square) and T = n²·G + Λ_j, all exact in Z_2^64 (T < 2^62).
  5. T to binary: an opening masked by a dealer ring element and a 62-bit adder (6 prefix levels).
  6. For each bit group: the one-hot of its bits selects the threshold (local parities); then V_g < TH
     (secret against secret, 6 prefix levels); all groups are batched. The low bits: V_low >= T_low.
  7. Accept = AND of the comparison results and of NOT (T's bits above the cut) (4 levels). Open it.
  8. Keep the accepted n, still secret-shared. Draw a new pass for the shortfall.

Declared cost (:func:`declared_cost`, checked against the counters in tests/test_costs.py): per pass of n
candidates 28 openings carrying 196n ring elements or words (≈ 300 words per accepted sample at acceptance
0.66), 25 dealer requests; dealer material for and_words 140n, b2a_bits (k+9)n, square n, a2b n. Measured
bytes and time per sample: benchmarks/results/noise.md.
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
    a (n, 5) tensor)."""
    k = plan.k
    onehot = binary.one_hot(ctx, fields["index"], dg.INDEX_BITS, label="dg-piece")
    table = plan.index_table()
    chosen = binary.select(ctx, onehot, tuple(1 << int(piece) for piece in table), dg.PIECES)  # bit j: I_j
    indicators = (chosen.unsqueeze(1) >> torch.arange(dg.PIECES)) & 1
    width = k + 5
    full = (1 << width) - 1
    point, sign = fields["point"], fields["sign"]
    masks, bases, extensions = [], [], []
    for j in range(dg.PIECES):
        if j == 0:
            masks.append((1 << k) - 1)
            bases.append(0)
            extensions.append(full ^ ((1 << k) - 1))
        else:
            top = 1 << (k + j - 1)
            masks.append(top - 1)
            bases.append(top)
            extensions.append(full)
    spread = [binary.broadcast(ctx, indicators[:, j], 0) for j in range(dg.PIECES)]
    extension = sum_xor([s & e for s, e in zip(spread, extensions)])  # ⊕_j I_j·SE_j (local)
    base = sum_xor([s & b for s, b in zip(spread, bases)])
    # variables: 0..4 = spread I_j, 5 = point, 6 = spread sign, 7 = extension
    pairs = [(j, 5, 0) for j in range(dg.PIECES)] + [(6, 7, 0)]
    ands = ring.ShiftedAnds(ctx, point.numel(), 8, pairs, label="dg-point")
    ands.open({**{j: spread[j] for j in range(dg.PIECES)}, 5: point, 6: binary.broadcast(ctx, sign, 0),
               7: extension})
    word = base ^ ands.product(6, 7, 0)
    for j in range(dg.PIECES):
        word = word ^ (ands.product(j, 5, 0) & masks[j])
    return word & full, indicators


def sum_xor(words: list[torch.Tensor]) -> torch.Tensor:
    out = words[0]
    for w in words[1:]:
        out = out ^ w
    return out


def _candidates(ctx: MpcContext, plan: dg.SamplerPlan, n: int, words) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw n candidates; return (public accept mask, additive shares of each candidate's value)."""
    costs.record("random_bits", n * sum(dg.field_bits(plan).values()))
    fields = {name: torch.from_numpy(v) for name, v in dg.draw_fields(plan, n, words).items()}
    k = plan.k
    word, indicators = _piece_words(ctx, plan, fields)
    packed = word
    for j in range(1, dg.PIECES):
        packed = packed | (indicators[:, j] << (k + 4 + j))
    bits = ring.b2a_bits(ctx, packed, k + 9, label="dg-b2a")
    value = ring.bits_to_value(bits[:, : k + 4]) - bits[:, k + 4] * (1 << (k + 4))
    square = ring.Products(ctx, n, 1, [(0, 0)], label="dg-square")
    square.open({0: value})
    T = square.product(0, 0) * plan.G
    T = ring.public_add(ctx, T, plan.Lambda[0])
    for j in range(1, dg.PIECES):
        T = T + bits[:, k + 4 + j] * (plan.Lambda[j] - plan.Lambda[0])
    t_bits = binary.to_binary(ctx, T, 62, label="dg-a2b")
    # every comparison of the candidate in one batch: the groups' V_g < TH_g, then V_low < T_low
    thresholds = []
    onehots = binary.one_hot(ctx, torch.cat([(t_bits >> low) & ((1 << width) - 1) for low, width, _ in dg.GROUPS]),
                             6, label="dg-group")
    for g, table in enumerate(dg.group_thresholds()):
        thresholds.append(binary.select(ctx, onehots[g * n:(g + 1) * n], tuple(table.tolist()), dg.WORD + 1))
    left = torch.cat([fields[f"v{g}"] for g in range(len(dg.GROUPS))] + [fields["v_low"]])
    right = torch.cat(thresholds + [t_bits & ((1 << dg.LOW_BITS) - 1)])
    lt = binary.less_than(ctx, left, right, dg.WORD + 1, label="dg-lt")
    groups = len(dg.GROUPS)
    factors = torch.zeros(n, dtype=torch.int64)
    for g in range(groups):
        factors = factors | (lt[g * n:(g + 1) * n] << g)
    factors = factors | (ring.public_xor(ctx, lt[groups * n:], 1) << groups)  # V_low >= T_low
    above = (t_bits >> (dg.F + 6)) & ((1 << dg.ABOVE) - 1)  # bits of t at 64 and above: must be 0
    cut_ok = ring.public_xor(ctx, above, (1 << dg.ABOVE) - 1)
    factors = factors | (cut_ok << (groups + 1))
    accept = binary.all_bits(ctx, factors, groups + 1 + dg.ABOVE, label="dg-accept")
    (opened,) = ctx.open_masked([accept], label="dg-accept-bits", xor=True, kind="comparison")
    return opened == 1, value


def declared_cost(candidates: list[int], plan: dg.SamplerPlan) -> costs.DeclaredCost:
    """The declared cost of :func:`sample_discrete_gaussian`: one pass per entry of ``candidates``.

    Per pass of n candidates, with c = 7 comparisons and an accept word of 10 bits (4 AND levels), the
    openings in order are: piece one-hot 6n, 3n, n; point ANDs 8n; B2A n; square n; A2B mask n, then
    2n at each of its 6 carry levels; group one-hots 36n, 18n, 6n; comparisons c·2n (x AND y), then c·2n
    at each of 6 prefix levels; accept 4 levels of n; the accept bits n. That is 28 openings and 196n
    elements.
    Operations: and_words 140n = one-hots 5n·(1 + 6), point 6n, adder 11n, comparisons 7n + 77n, accept 4n;
    b2a_bits (k+9)n; square n; a2b n; random_bits (6 + (k+3) + 1 + 6·62 + 54)n. Dealer requests: 25.
    """
    k = plan.k
    groups = len(dg.GROUPS)
    c = groups + 1
    adder, prefix = binary.levels(62), binary.levels(dg.WORD + 1)
    accept_levels = binary.levels(groups + 1 + dg.ABOVE)
    random_bits = sum(dg.field_bits(plan).values())
    cost = costs.DeclaredCost()
    for n in candidates:
        cost.ops.update({"and_words": 5 * n * (1 + groups) + 6 * n + (2 * adder - 1) * n + c * n
                         + c * (2 * prefix - 1) * n + accept_levels * n,
                         "b2a_bits": (k + 9) * n, "square": n, "a2b": n, "random_bits": random_bits * n})
        cost.open(6 * n, 3 * n, n, 8 * n, n, n, n, *[2 * n] * adder, 6 * groups * n, 3 * groups * n, groups * n,
                  2 * c * n, *[2 * c * n] * prefix, *[n] * accept_levels, n)
        cost.dealer_requests += 2 + 1 + 1 + 1 + (1 + adder) + 2 + 1 + prefix + accept_levels
    return cost


def sample_discrete_gaussian(ctx: MpcContext, count: int, plan: dg.SamplerPlan, *,
                             rng: np.random.Generator | None = None, stats: dict | None = None) -> torch.Tensor:
    """Additive shares (int64, grid units) of ``count`` i.i.d. draws of the sampler of ``plan``.

    Args:
        ctx: this party's context (provider ``dealer``).
        count: number of samples.
        plan: the sampler's public constants (:func:`~mpcdp.noise.discrete_gaussian.plan_for`).
        rng: a seeded generator for this party's random fields: reproducible, so *insecure*. None (default)
            draws them from a ChaCha20 stream under an OS-CSPRNG key.
        stats: filled with public counts: candidates, passes, accepted.
    """
    if count < 1:
        raise ValueError(f"`count` must be >= 1. Found {count}.")
    words = party_words(rng)
    stats = stats if stats is not None else {}
    for key in ("candidates", "passes", "accepted", "samples"):
        stats.setdefault(key, 0)
    stats.setdefault("pass_candidates", [])
    kept, have = [], 0
    while have < count:
        need = count - have
        n = min(int(need / plan.acceptance + 4 * math.sqrt(need) + 8), MAX_PASS)
        accepted, value = _candidates(ctx, plan, n, words)
        stats["candidates"] += n
        stats["passes"] += 1
        stats["pass_candidates"].append(n)
        stats["accepted"] += int(accepted.sum())
        index = torch.nonzero(accepted).reshape(-1)[:need]
        kept.append(value[index])
        have += index.numel()
    stats["samples"] += count
    return torch.cat(kept)
