"""The Bernoulli factors of the in-MPC discrete Gaussian (:mod:`mpcdp.noise.secure_gaussian`): which bit
groups of T each stage of a pass evaluates, and how — as a circuit on W = R ⊕ S under every provider, or
(the view audit's planted leak only, :func:`mpcdp.mpc.bernoulli.planted_dealer_tables`) from the dealer's
own-word tables — with their declared cost.

Stages: the first factor (:data:`FIRST_GROUP`) on every candidate, then the other groups, the cut (T's bits
from t = 64 up all 0) and the low bits' factor on the first factor's survivors. Each factor is the plaintext
rule's [V < TH] (:func:`mpcdp.noise.discrete_gaussian.below`) on its own uniform word; the security model of
each way is in :mod:`mpcdp.mpc.bernoulli`.
"""

from __future__ import annotations

import torch

from mpcdp.mpc import bernoulli, binary, chunk_flags, chunk_forms, ring
from mpcdp.mpc.context import MpcContext
from mpcdp.noise import discrete_gaussian as dg
from mpcdp.randomness import KeyedStream


FIRST_GROUP = 2
"""The Bernoulli factor evaluated first, on every candidate: group (F−2, 6), t's bits 1/4..8, which rejects
about 20% of the candidates (every other factor together about 3%; tests/test_discrete_gaussian.py checks the
ratio below by enumeration). Reading t's bits 4 and 8 here leaves 18 fractional bits above 2^-20 for three 6-bit
groups on the survivors (one factor fewer there than with bits 8, 4 a group of their own and 2..1/16 first, which
rejected 31%). Its pass bit is opened and only the candidates that pass go on to the other factors."""
OTHER_GROUPS = tuple(g for g in range(len(dg.GROUPS)) if g != FIRST_GROUP)
MAX_TABLE_BITS = 7  # a dealt table: 2^7 bits, two words


MAX_WINDOW_BITS = 6  # a rotated one-hot: 2^6 positions, one word


def group_windows(groups=range(len(dg.GROUPS))) -> list[tuple[int, int]]:
    """The bit windows (low, width) of T whose one-hots ``groups`` read, by low bit: the groups' windows, those
    that touch or overlap merged while together they span at most :data:`MAX_WINDOW_BITS` bits (one dealt
    one-hot word serves them all: (55, 2) and (57, 2) are read as (55, 4))."""
    windows: list[list[int]] = []  # [low, width]
    for low, width in sorted({(low, width) for low, width, _ in (dg.GROUPS[g] for g in groups)}):
        if windows and low <= windows[-1][0] + windows[-1][1] and \
                max(low + width, windows[-1][0] + windows[-1][1]) - windows[-1][0] <= MAX_WINDOW_BITS:
            windows[-1][1] = max(low + width, windows[-1][0] + windows[-1][1]) - windows[-1][0]
        else:
            windows.append([low, width])
    return [(low, width) for low, width in windows]


def _window_of(group: int, windows: list[tuple[int, int]]) -> tuple[int, tuple[int, ...]]:
    """(index in ``windows`` of the window holding ``group``'s bits, the group's thresholds by that window's
    value): entry x is the group's threshold at its own bits of x."""
    low, width, _ = dg.GROUPS[group]
    index = next(i for i, (w_low, w_width) in enumerate(windows) if w_low <= low and low + width <= w_low + w_width)
    w_low, w_width = windows[index]
    table = dg.group_thresholds()[group].tolist()
    return index, tuple(table[(x >> (low - w_low)) & ((1 << width) - 1)] for x in range(1 << w_width))


def _circuit_passes(ctx: MpcContext, t_bits: torch.Tensor, coin: KeyedStream, groups: tuple[int, ...], *, low: bool,
                  label: str) -> tuple[list[torch.Tensor], dict[str, torch.Tensor]]:
    """XOR shares (bit 0) of the pass bit of each group in ``groups``, then (``low``) of V_low >= T_low; and
    XOR shares of the uniform word each factor used (field name -> words, for tests).

    The groups' windows of T ⊕ R are opened in one word per candidate (their span, packed), the dealt
    one-hots of R's windows (:func:`group_windows`: narrow neighbours merged) moved by them give each window's
    one-hot, and each group's right operand is a local selection from its table's forms (:func:`factor_forms`).
    Each factor's uniform W is a dealt word XOR the committee's coin
    (:func:`~mpcdp.mpc.bernoulli.coin_uniform`), and the factors are batched in one
    :func:`~mpcdp.mpc.bernoulli.bernoulli_bits`. The low bits: V_low >= T'_low at 2^-F is the complement of
    [W ⊕ TH < TH] for TH = T'_low·2^(62−F) and 62-bit W: the same probability, and the same decision as the
    plaintext rule for v_low = W >> (62 − F); its right operand is a linear map of T'_low's bits (T_low's bits
    from :data:`~mpcdp.noise.discrete_gaussian.LOW_DROP` up)."""
    n, forms = t_bits.numel(), factor_forms(groups, low=low)
    names = [f"v{g}" for g in groups] + (["v_low"] if low else [])
    rights = _right_operands(ctx, t_bits, groups, forms, low=low, label=label)
    uniform, tops = _uniform_tops(ctx, coin, names, n, forms, label=label)
    passed = bernoulli.bernoulli_bits(ctx, tops, forms, rights, dg.WORD, label=f"{label}-bern")
    bits = [passed[i * n:(i + 1) * n] for i in range(len(names))]
    if low:
        bits[-1] = ring.public_xor(ctx, bits[-1], 1)  # V_low >= T_low
    return bits, {name: uniform[i * n:(i + 1) * n] for i, name in enumerate(names)}


def _uniform_tops(ctx: MpcContext, coin: KeyedStream, names: list[str], n: int, forms: list, *, label: str
                  ) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """XOR shares of each factor's uniform word W and the top bits of W's chunks
    (:func:`~mpcdp.mpc.bernoulli.coin_tops`: never every element's chunk one-hots at once), the coin's words
    for ``names`` in order; the coin's words are freed on return, before the circuit's ANDs."""
    coin_words = coin.words(len(names) * n)
    ctx.note_draw(f"{label}-coin", {"names": list(names), "words": coin_words & ((1 << dg.WORD) - 1)})
    return bernoulli.coin_tops(ctx, coin_words, dg.WORD, [form.first_chunk for form in forms])


def _right_operands(ctx: MpcContext, t_bits: torch.Tensor, groups: tuple[int, ...], forms: list, *, low: bool,
                    label: str) -> torch.Tensor:
    """XOR shares of every factor's right operand, block after block (:func:`_circuit_passes`' order): each
    group's a local selection from its form by its window's one-hot (one rotation of the groups' windows of T,
    :func:`group_windows`), the low bits' a linear map of T's low bits. Written straight into one array (no
    per-factor copies kept next to it); the windows' one-hots are freed on return."""
    n, windows = t_bits.numel(), group_windows(groups)
    onehots = binary.rotated_one_hots(ctx, t_bits, windows, label=f"{label}-group")
    rights = torch.empty(len(forms) * n, dtype=torch.int64)
    for b, (g, form) in enumerate(zip(groups, forms)):
        rights[b * n:(b + 1) * n] = binary.select(ctx, onehots[:, _window_of(g, windows)[0]], form.right, 64)
    if low:
        rights[len(groups) * n:] = binary.select(ctx, (t_bits & dg.LOW_MASK) >> dg.LOW_DROP, forms[-1].right, 64)
    return rights


def factor_forms(groups: tuple[int, ...], *, low: bool) -> list[chunk_forms.ChunkForms]:
    """Per factor of :func:`_circuit_passes` (``groups``, then the low bits' if ``low``), the forms its q_k are
    computed by (:mod:`mpcdp.mpc.chunk_forms`): a group's table by the value of its window in
    :func:`group_windows` (``groups``' windows), factored at least rank; the low bits' factor T'_low·2^(62−F)
    by T'_low's bits (T_low's from :data:`~mpcdp.noise.discrete_gaussian.LOW_DROP` up). 92 ANDs per survivor for the five other groups instead of the 162 bits their tables can
    have set, 46 instead of 62 for the first factor, 17 instead of 22 for the low bits."""
    windows = group_windows(groups)
    forms = [chunk_forms.table_forms(_window_of(g, windows)[1], dg.WORD) for g in groups]
    if low:
        forms.append(chunk_forms.bit_forms(dg.WORD - dg.F + dg.LOW_DROP, dg.LOW_BITS - dg.LOW_DROP, dg.WORD))
    return forms


def table_spec(groups: tuple[int, ...], *, low: bool, above: bool) -> tuple[list, list, list]:
    """(windows, factors, bit factors) of :func:`~mpcdp.mpc.bernoulli.table_factors` for ``groups``, then
    (``above``) the cut's check that T's bits from t = 64 up are 0 (a factor with threshold 2^62 or 0), then
    (``low``) the low bits' factor [V < T_low·2^(62−F)]. Windows next to each other share a table while
    together they span at most 7 bits."""
    tables = dg.group_thresholds()
    reads = [(dg.GROUPS[g][0], dg.GROUPS[g][1], [int(t) for t in tables[g]]) for g in groups]
    if above:
        reads.append((dg.F + 6, dg.ABOVE, [1 << dg.WORD] + [0] * ((1 << dg.ABOVE) - 1)))
    windows: list[list[int]] = []  # [low, width], by low bit
    for lo, width, _ in sorted(reads, key=lambda read: read[0]):
        end = max(lo + width, windows[-1][0] + windows[-1][1]) if windows else lo + width
        if windows and end - windows[-1][0] <= MAX_TABLE_BITS:
            windows[-1][1] = end - windows[-1][0]
        elif not windows or lo >= windows[-1][0] + windows[-1][1]:
            windows.append([lo, width])
        else:  # overlapping reads that a table cannot hold: not a layout the sampler has
            raise AssertionError(f"bit group at {lo} overlaps the window {windows[-1]}")
    factors = []
    for lo, width, table in reads:
        index = next(i for i, (w_lo, w_width) in enumerate(windows) if w_lo <= lo and lo + width <= w_lo + w_width)
        factors.append([index, lo - windows[index][0], width, table])
    bit_factors = [[dg.LOW_DROP, dg.LOW_BITS - dg.LOW_DROP, dg.WORD - dg.F + dg.LOW_DROP]] if low else []
    return [tuple(w) for w in windows], factors, bit_factors


def first_factor(ctx: MpcContext, t_bits: torch.Tensor, coin: KeyedStream | None
                  ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """XOR shares (bit 0) of the first factor's pass bit, and what the test of the decisions reads: with the
    dealer's tables (``coin`` None) the table words and their mask, else the factor's uniform words."""
    if coin is None:
        return _table_stage(ctx, t_bits, (FIRST_GROUP,), low=False, above=False, label="dg-first")
    (first,), uniform = _circuit_passes(ctx, t_bits, coin, (FIRST_GROUP,), low=False, label="dg-first")
    return first, uniform


def _table_stage(ctx: MpcContext, t_bits: torch.Tensor, groups: tuple[int, ...], *, low: bool, above: bool,
                 label: str) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The factors of ``groups`` (and the cut's check, and the low bits' factor) by dealt tables: their pass
    bits packed in a word (one bit per window, then NOT [V_low < T_low·2^(62−F)]), and the tables' shares."""
    windows, factors, bit_factors = table_spec(groups, low=low, above=above)
    bits, mask, tables = bernoulli.table_factors(ctx, t_bits, dg.WORD, windows, factors, bit_factors, label=label)
    if low:
        bits[:, -1] = ring.public_xor(ctx, bits[:, -1], 1)  # V_low >= T_low
    packed = torch.zeros(t_bits.numel(), dtype=torch.int64)
    for i in range(bits.shape[1]):
        packed |= bits[:, i] << i
    return packed, {"mask": mask, "tables": tables}


def other_factors(ctx: MpcContext, t_bits: torch.Tensor, coin: KeyedStream | None) -> tuple[torch.Tensor, int, dict]:
    """XOR shares of the pass bits of every factor but the first, packed in a word, their count, and what the
    test of the decisions reads. With the dealer's tables (``coin`` None): one bit per table window (the cut's
    check is in the top one), then the low bits. Otherwise one bit per group of :data:`OTHER_GROUPS`, then
    the low bits, then the cut (t's bits at 64 and above all 0)."""
    if coin is None:
        packed, seen = _table_stage(ctx, t_bits, OTHER_GROUPS, low=True, above=True, label="dg-rest")
        return packed, other_factor_bits(tables=True), seen
    factors = torch.zeros(t_bits.numel(), dtype=torch.int64)
    passes, uniform = _circuit_passes(ctx, t_bits, coin, OTHER_GROUPS, low=True, label="dg-rest")
    for i, bit in enumerate(passes):
        factors = factors | (bit << i)
    above = (t_bits >> (dg.F + 6)) & ((1 << dg.ABOVE) - 1)
    packed = factors | (ring.public_xor(ctx, above, (1 << dg.ABOVE) - 1) << len(passes))
    return packed, other_factor_bits(tables=False), uniform


def other_factor_bits(*, tables: bool) -> int:
    """Pass bits :func:`other_factors` packs in a word (what the accept AND reads)."""
    if tables:
        return len(table_spec(OTHER_GROUPS, low=True, above=True)[0]) + 1
    return len(OTHER_GROUPS) + 1 + dg.ABOVE


def _factor_steps(e: int, forms: list) -> list[tuple[int, bool, bool]]:
    return [(size, multiplication, True) for size, multiplication in bernoulli.declared_cost_bernoulli(e, forms)[0]]


def _factor_ops(e: int, forms: list) -> dict[str, int]:
    """The factors' operations: :func:`~mpcdp.mpc.bernoulli.bernoulli_bits` and their uniform words'
    :func:`~mpcdp.mpc.bernoulli.coin_uniform` (the one-hots of each factor's chunks from its first)."""
    ops = dict(bernoulli.declared_cost_bernoulli(e, forms)[1])
    ops["one_hot_words"] += bernoulli.declared_cost_coin_uniform(e, dg.WORD, [form.first_chunk for form in forms])[0]
    return ops


def _span(groups: tuple[int, ...]) -> int:
    """Bits of T spanned by the windows of ``groups`` (what their rotation opens per candidate)."""
    windows = group_windows(groups)
    return max(low + width for low, width in windows) - min(low for low, _ in windows)


def stage_cost(e: int, *, first: bool, tables: bool) -> tuple[list[tuple[int, bool, bool]], dict[str, int], int]:
    """The declared cost of a stage on e candidates (the first factor, or the others): (elements, is a
    multiplication, needs a request for material under Beaver multiplication) of each communication step;
    operations; and requests for material that open nothing (the circuit's coin_uniform: one per run of factors
    with the same first chunk)."""
    groups = (FIRST_GROUP,) if first else OTHER_GROUPS
    if tables:
        windows, _, bit_factors = table_spec(groups, low=not first, above=not first)
        opened, dealt = bernoulli.declared_cost_table_factors(e, windows, bit_factors)
        return [(opened, False, True)], {"table_words": dealt}, 0
    from mpcdp.adapter.bit_words import one_hot_reply_words  # here: the launcher's cost estimate must not import CrypTen

    forms = factor_forms(groups, low=not first)  # the low bits' factor with the others
    ops = dict(_factor_ops(len(forms) * e, forms))
    ops["one_hot_words"] += one_hot_reply_words(e, group_windows(groups), 64)
    silent = bernoulli.declared_cost_coin_uniform(len(forms) * e, dg.WORD, [form.first_chunk for form in forms])[1]
    silent += chunk_flags.declared_cost_flags(len(forms) * e, forms)[2] - 1  # the flags' rotation: a request per run
    return [(-(-e // (64 // _span(groups))), False, True), *_factor_steps(len(forms) * e, forms)], ops, silent
