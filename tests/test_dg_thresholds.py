"""The sampler's literal thresholds (mpcdp.noise.dg_thresholds, dgauss-grid/3) re-derived against mpmath at 300
bits: each is the nearest multiple of 2^d to 2^62·exp(−t/root) within 2^-42, d the largest shift that keeps it
(the first factor's group, down to 2^39.3, has none: its nearest integers, within 2^-40.5), the A,B pair's product
within 2^-45 of 2^124·e^(−16a), zero exactly where t >= 48 (no hole, the cut), and the η bound the plan states
covers them."""

import math

import mpmath
import pytest

from mpcdp.noise import discrete_gaussian as dg
from mpcdp.noise.dg_thresholds import THRESHOLDS

mpmath.mp.prec = 300
SHIFTS = {2: 0, 3: 20, 4: 21, 5: 21, 0: 16, 1: 16}  # the design's d per group (the pair at 2^16)
NEAREST_INTEGERS = 2  # the first factor's group: no shift keeps 2^-42


def ideal(g: int, a: int, root: int | None = None):
    low, _, group_root = dg.GROUPS[g]
    return mpmath.exp(-mpmath.mpf(a) * mpmath.mpf(2) ** (low - dg.F) / (root or group_root)) * mpmath.mpf(2) ** dg.WORD


def t_of(g: int, a: int) -> float:
    return a * 2.0 ** (dg.GROUPS[g][0] - dg.F)


def test_every_table_is_its_groups_multiples_of_2_to_the_d_zero_exactly_at_the_cut():
    assert len(THRESHOLDS) == len(dg.GROUPS) and len(dg.group_thresholds()) == len(dg.GROUPS)
    for g, ((shift, units), table) in enumerate(zip(THRESHOLDS, dg.group_thresholds())):
        assert shift == SHIFTS[g] and len(units) == 1 << dg.GROUPS[g][1]
        assert units[0] << shift == 1 << dg.WORD  # a = 0: always passes
        for a, (unit, th) in enumerate(zip(units, table.tolist())):
            assert th == unit << shift and 0 <= th <= 1 << dg.WORD
            assert (th == 0) == (t_of(g, a) >= dg.CUT)  # the cut, and no hole inside the support


def rounding_error(g: int, shift: int) -> float:
    """max_a |ln(TH/ideal)| over group g's entries rounded to the nearest multiple of 2^shift (inf if one is 0)."""
    worst = 0.0
    for a in range(1 << dg.GROUPS[g][1]):
        unit = int(mpmath.nint(ideal(g, a) / 2**shift))
        if unit == 0:
            return math.inf
        worst = max(worst, abs(float(mpmath.log((unit << shift) / ideal(g, a)))))
    return worst


@pytest.mark.parametrize("g", [g for g in range(len(dg.GROUPS)) if g not in dg.PAIR])
def test_each_groups_threshold_is_the_nearest_multiple_at_the_largest_shift_within_2_to_the_minus_42(g):
    shift, units = THRESHOLDS[g]
    worst = 0.0
    for a, unit in enumerate(units):
        if unit:
            assert unit == int(mpmath.nint(ideal(g, a) / 2**shift))
            worst = max(worst, abs(float(mpmath.log((unit << shift) / ideal(g, a)))))
    if g == NEAREST_INTEGERS:  # no shift keeps 2^-42: the nearest integers, within half a unit of 2^39.3
        assert shift == 0 and 2.0**-42 < worst <= 2.0**-40.5
    else:
        assert worst <= 2.0**-42
    assert all(rounding_error(g, d) > 2.0**-42 for d in range(shift + 1, dg.WORD))  # no larger shift keeps 2^-42
    table_error = max(abs(math.log(th / dg._ideal(g, a))) for a, th in enumerate(dg.group_thresholds()[g].tolist()) if th)
    assert abs(table_error - worst) <= 2.0**-50  # the float64 score the bound sums is the exact one


def test_the_pairs_product_is_e_to_the_minus_16a_within_2_to_the_minus_45():
    first, second = (THRESHOLDS[g][1] for g in dg.PAIR)
    shift = THRESHOLDS[dg.PAIR[0]][0]
    worst = 0.0
    for a, (x, y) in enumerate(zip(first, second)):
        if x and y:
            target = mpmath.exp(-mpmath.mpf(a) * mpmath.mpf(2) ** (dg.GROUPS[dg.PAIR[0]][0] - dg.F)) * mpmath.mpf(2) ** 124
            worst = max(worst, abs(float(mpmath.log(mpmath.mpf((x << shift) * (y << THRESHOLDS[dg.PAIR[1]][0])) / target))))
    assert 0 < worst <= 2.0**-45
    assert abs(dg.pair_error() - worst) <= 2.0**-50
    alone = max(abs(float(mpmath.log((x << shift) / ideal(0, a)))) for a, x in enumerate(first) if x)
    assert alone > 2.0**-10  # neither factor is a square root alone: scoring them one by one would be wrong


def test_the_stated_eta_covers_the_exact_errors():
    exact = sum(max(abs(float(mpmath.log((u << s) / ideal(g, a)))) for a, u in enumerate(units) if u)
                for g, (s, units) in enumerate(THRESHOLDS) if g not in dg.PAIR)
    assert dg._threshold_error() >= exact + dg.pair_error()
    plan = dg.plan_for(445.3)
    low = 2.0 ** (dg.LOW_DROP - dg.F)  # the low factor's dropped bits alone
    assert 2 * (exact + low) <= plan.eta_dg <= 4e-12  # 3.5e-12 (the first factor's 2^-40.5 is most of it)
