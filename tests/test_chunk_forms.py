"""The chunk forms of :mod:`mpcdp.mpc.chunk_forms` against their definition: for every table entry v and every
top-bit position p (chunk k = p // 4 nonzero, its top bit at p), the forms' parity of chunk k is bit p of
TH[v], and the top bit is [TH[v] = 2^bits]; their ranks are the least any free change allows (an independent
brute force over every change), on the sampler's tables and on random ones. No MPC here: the circuit that uses
them is checked bit for bit against the plaintext rule in tests/test_discrete_gaussian.py."""

import random

import pytest

from mpcdp.mpc import chunk_forms
from mpcdp.noise import discrete_gaussian as dg
from mpcdp.noise import gaussian_factors as gf


def _unsigned(word: int) -> int:
    return word & ((1 << 64) - 1)


def _q(form: chunk_forms.ChunkForms, left: int, right: int) -> int:
    """The chunk bits the circuit computes from one left and one right operand (plaintext): the products'
    chunk parities XOR both operands' corrections."""
    left, right = _unsigned(left), _unsigned(right)
    products, q = left & right & ((1 << form.rank) - 1), 0
    for j in range(form.rank):
        if (products >> j) & 1:
            q ^= form.chunk_of[j]
    return q ^ (((left ^ right) >> form.rank) & ((1 << form.chunks) - 1))


def _check_table(form: chunk_forms.ChunkForms, table: tuple[int, ...], bits: int) -> None:
    for v, threshold in enumerate(table):
        right = _unsigned(form.right[v])
        assert right >> (form.top + 1) == 0
        assert (right >> form.top) & 1 == (threshold >> bits) & 1
        for p in range(bits):
            q = _q(form, form.left[p], right)
            assert (q >> (p // 4)) & 1 == (threshold >> p) & 1, (v, p)
            assert q & ~form.chunk_mask == 0  # the picks read the chunks of chunk_mask only
    assert all(_unsigned(entry) >> form.top == 0 for entry in form.left)


def _sampler_tables() -> list[tuple[int, tuple[int, ...]]]:
    """(group, its table by the value of its window) for the first factor and the other groups."""
    out = []
    for groups in ((gf.FIRST_GROUP,), gf.OTHER_GROUPS):
        windows = gf.group_windows(groups)
        out += [(g, gf._window_of(g, windows)[1]) for g in groups]
    return out


def _rank(rows: list[int]) -> int:
    """GF(2) rank by elimination on the lowest set bit (another order than the module's)."""
    rank, rows = 0, [r for r in rows if r]
    while rows:
        pivot = rows.pop()
        low = pivot & -pivot
        rows = [r ^ pivot if r & low else r for r in rows]
        rows = [r for r in rows if r]
        rank += 1
    return rank


def _chunk_ranks(form: chunk_forms.ChunkForms) -> list[int]:
    return [form.chunk_of.count(1 << k) for k in range(form.chunks)]


def _columns(table: tuple[int, ...], low: int, width: int) -> list[int]:
    return [sum(((t >> (low + i)) & 1) << v for v, t in enumerate(table)) for i in range(width)]


@pytest.mark.parametrize("group, table", _sampler_tables(), ids=lambda x: str(x) if isinstance(x, int) else "")
def test_the_sampler_tables_forms_give_every_bit_and_never_raise_a_chunks_rank(group, table):
    form = chunk_forms.table_forms(table, dg.WORD)
    _check_table(form, table, dg.WORD)
    plain = [_rank(_columns(table, 4 * k, min(4, dg.WORD - 4 * k))) for k in range(form.chunks)]
    assert all(r <= p for r, p in zip(_chunk_ranks(form), plain))
    assert form.rank <= chunk_forms.union_bits(table, dg.WORD)


def test_the_free_changes_lower_the_sampler_tables_ranks():
    """The five other groups and the first factor: the forms need fewer ANDs than the plain ranks, which need
    fewer than the bits the entries can have set."""
    forms = {g: chunk_forms.table_forms(table, dg.WORD) for g, table in _sampler_tables()}
    plain = {g: sum(_rank(_columns(table, 4 * k, min(4, dg.WORD - 4 * k))) for k in range(16))
             for g, table in _sampler_tables()}
    union = {g: chunk_forms.union_bits(table, dg.WORD) for g, table in _sampler_tables()}
    others = gf.OTHER_GROUPS
    assert sum(forms[g].rank for g in others) < sum(plain[g] for g in others) < sum(union[g] for g in others)
    assert forms[gf.FIRST_GROUP].rank < plain[gf.FIRST_GROUP]


@pytest.mark.parametrize("seed", range(6))
def test_random_tables_forms_give_every_bit(seed):
    """Random 62-bit tables of 2..64 entries, some entries 2^62 (always pass) and some 0."""
    rng = random.Random(seed)
    size = rng.choice([2, 5, 16, 64])
    table = tuple(rng.choice([1 << 62, 0, rng.getrandbits(62), rng.getrandbits(20) << 30]) for _ in range(size))
    form = chunk_forms.table_forms(table, dg.WORD)
    _check_table(form, table, dg.WORD)


@pytest.mark.parametrize("seed", range(8))
def test_each_chunks_rank_is_the_least_over_every_free_change(seed):
    """Small tables (8 entries, 2 chunks): every a (per chunk bit) and every b (per entry, not only those in
    the columns' span) tried; the forms' rank of each chunk is the least of them."""
    rng = random.Random(100 + seed)
    table = tuple(rng.getrandbits(8) for _ in range(8))
    form = chunk_forms.table_forms(table, 8)
    _check_table(form, table, 8)
    ones = (1 << len(table)) - 1
    for k, rank in enumerate(_chunk_ranks(form)):
        columns = _columns(table, 4 * k, 4)
        least = min(_rank([c ^ (ones if (a >> i) & 1 else 0) ^ b for i, c in enumerate(columns)])
                    for a in range(16) for b in range(1 << len(table)))
        assert rank == least


def _mapped(table: tuple[int, ...], bits: int) -> int:
    """The linear map ``table`` (entry i: the image of bit i) applied to ``bits``."""
    out = 0
    for i, image in enumerate(table):
        if (bits >> i) & 1:
            out ^= _unsigned(image)
    return out


@pytest.mark.parametrize("low, width, bits", [(dg.WORD - dg.F + dg.LOW_DROP, dg.LOW_BITS - dg.LOW_DROP, dg.WORD), (8, 8, 62), (3, 57, 62),
                                              (50, 11, 61), (0, 1, 62)])
def test_the_callers_bits_forms_give_every_bit_with_one_and_fewer_per_whole_chunk(low, width, bits):
    """Thresholds x·2^low for the caller's shared bits x (the sampler's low bits' factor first): every
    chunk whose possible top positions all hold a bit of x needs one AND fewer than its bits."""
    rng = random.Random(low * 100 + width)
    form = chunk_forms.bit_forms(low, width, bits)
    whole = sum(1 for k in range(-(-bits // 4))
                if all(low <= p < low + width for p in range(4 * k, min(4 * k + 4, bits))))
    assert form.rank == width - whole
    for x in [0, (1 << width) - 1] + [rng.getrandbits(width) for _ in range(30)]:
        threshold, right = x << low, _mapped(form.right, x)
        assert (right >> form.top) & 1 == 0
        for p in range(bits):
            q = _q(form, form.left[p], right)
            assert (q >> (p // 4)) & 1 == (threshold >> p) & 1
            assert q & ~form.chunk_mask == 0


@pytest.mark.parametrize("call", [lambda: chunk_forms.table_forms((1, 2), 63),
                                  lambda: chunk_forms.table_forms(tuple(range(65)), 62),
                                  lambda: chunk_forms.bit_forms(50, 20, 62)])
def test_layouts_that_do_not_fit_a_word_are_refused(call):
    with pytest.raises(ValueError):
        call()


@pytest.mark.parametrize("provider", ["dealer", "honest-majority"])
def test_the_circuit_decides_as_the_rule_with_w_s_top_bit_in_every_chunk_the_dead_ones_included(provider):
    """The Bernoulli circuit on words chosen so that W's top set bit falls at every position 0..61 (and W = 0),
    for every factor of the sampler, with random table entries and low bits: each bit is the plaintext rule's
    dg.below (a uniform W puts its top bit in a chunk below the factor's :attr:`~chunk_forms.ChunkForms.first_chunk`
    with probability about 2^-54, so the sampler's decision test never sees it; here half the words do). The
    words are the coin itself (the view audit's planted member words: R = 0), so the test chooses them."""
    import numpy as np
    import torch

    from mpcdp.config import MpcConfig
    from mpcdp.runtime.harness import run_parties
    from party_jobs import crafted_bernoulli

    groups = (gf.FIRST_GROUP, *gf.OTHER_GROUPS)
    forms = [*gf.factor_forms((gf.FIRST_GROUP,), low=False), *gf.factor_forms(gf.OTHER_GROUPS, low=True)]
    assert {form.first_chunk for form in forms} == {0, 4, 5}  # dead chunks in every factor but the first (its
    # thresholds are the nearest integers), at two depths
    rng = random.Random(44)
    tops = [None] + list(range(dg.WORD))
    per = 4 * len(tops)
    words = [0 if p is None else (1 << p) | rng.getrandbits(p) for _ in range(4) for p in tops]
    words = torch.tensor(words * len(forms), dtype=torch.int64)
    tables = [gf._window_of(gf.FIRST_GROUP, gf.group_windows((gf.FIRST_GROUP,)))[1]] + [
        gf._window_of(g, gf.group_windows(gf.OTHER_GROUPS))[1] for g in gf.OTHER_GROUPS]  # by the window's value
    entries = torch.tensor([rng.randrange(len(tables[b])) for b in range(len(groups)) for _ in range(per)] + [0] * per)
    lows = torch.tensor([0] * (len(groups) * per) + [rng.getrandbits(dg.LOW_BITS - dg.LOW_DROP) for _ in range(per)])
    results = run_parties(crafted_bernoulli, MpcConfig(parties=3, provider=provider, timeout_s=120.0),
                          args=(words, entries, lows))
    expected = []
    for b in range(len(forms)):
        rows = slice(b * per, (b + 1) * per)
        th = (np.array([int(tables[b][e]) for e in entries[rows]], dtype=np.int64) if b < len(groups)
              else lows[rows].numpy() << (dg.WORD - dg.F + dg.LOW_DROP))
        expected.append(dg.below(words[rows].numpy(), th, dg.WORD))
    for opened in results:
        assert np.array_equal(opened.numpy().astype(bool), np.concatenate(expected))


def test_coin_tops_are_the_tops_of_coin_uniforms_one_hots_run_by_run():
    """:func:`~mpcdp.mpc.bernoulli.coin_tops` (the sampler's way: each run's one-hots made, read and freed before
    the next) against its definition: under the planted member words (R = 0) every party's shares equal
    coin_uniform's W and :func:`~mpcdp.mpc.bernoulli._tops` of its one-hots word for word; with dealt R, the
    opened tops are W's chunks' top-bit one-hots (bits 4k..4k+3) and zero flags (bit k) for the chunks from
    the block's first chunk up, 0 below it (its lanes get no one-hot). Blocks of the sampler's first chunks
    (several runs, dead chunks) and one run of first chunk 0; W's top bit in every chunk and W = 0 both occur."""
    import torch

    from mpcdp.config import MpcConfig
    from mpcdp.runtime.harness import run_parties
    from party_jobs import coin_tops_both_ways

    rng = random.Random(4444)
    per = 4 * (dg.WORD + 1)
    words = [0 if p < 0 else (1 << p) | rng.getrandbits(p) for _ in range(4) for p in range(-1, dg.WORD)]
    cases = [[form.first_chunk for form in gf.factor_forms(gf.OTHER_GROUPS, low=True)], [0]]
    assert len(set(cases[0])) > 1
    for first_chunks in cases:
        coin = torch.tensor(words * len(first_chunks), dtype=torch.int64)
        for planted, (uniform, t1, zero) in run_parties(coin_tops_both_ways, MpcConfig(parties=3, timeout_s=120.0),
                                                        args=(coin, first_chunks)):
            for mine, theirs in zip(planted[:3], planted[3:]):
                assert torch.equal(mine, theirs)
            for i, (w, top, flags) in enumerate(zip(uniform.tolist(), t1.tolist(), zero.tolist())):
                first = first_chunks[i // per]
                chunks = [(w >> (4 * k)) & 0xF for k in range(16)]
                want_top = sum((1 << (c.bit_length() - 1) if c else 0) << (4 * k)
                               for k, c in enumerate(chunks) if k >= first)
                want_zero = sum(1 << k for k, c in enumerate(chunks) if k >= first and c == 0)
                assert (_unsigned(top), flags) == (want_top, want_zero)
