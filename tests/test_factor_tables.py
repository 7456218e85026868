"""The dealer's factor tables (:mod:`mpcdp.adapter.factor_tables`): each entry is the plaintext rule
dg.below on the dealer's uniform words, exactly, and a request the tables cannot be made from is refused naming
party 0 and the field. (The in-MPC lookup is checked end to end in tests/test_discrete_gaussian.py.)"""

import numpy as np
import pytest
import torch

from mpcdp.adapter import factor_tables as ft
from mpcdp.errors import ProtocolViolation
from mpcdp.noise import discrete_gaussian as dg
from mpcdp.noise.gaussian_factors import FIRST_GROUP, OTHER_GROUPS, table_spec

SPECS = [table_spec((FIRST_GROUP,), low=False, above=False), table_spec(OTHER_GROUPS, low=True, above=True)]


def _random_words(rng, n, bits=64):
    return torch.from_numpy(rng.integers(-(2**63), 2**63 - 1, size=n, dtype=np.int64, endpoint=True)) & (
        (1 << bits) - 1 if bits < 64 else -1)


@pytest.mark.parametrize("spec", SPECS, ids=["first", "rest"])
def test_every_entry_is_the_plaintext_rule_on_the_dealers_words(spec):
    """For random masks R, uniform words W (with every top bit, W = 0 and W with only a top bit among them)
    and words T: entry c = T's window ⊕ R's of each table is the AND of dg.below over the window's factors at
    T's window, and each bit factor's parity(Q AND T's bits) is dg.below(W, T's bits · 2^shift)."""
    windows, factors, bit_factors = spec
    checked = ft.check_spec(dg.WORD, [list(w) for w in windows], factors, [list(b) for b in bit_factors])
    rng = np.random.default_rng(5)
    n = 4000
    r, t = _random_words(rng, n), _random_words(rng, n, 62)
    w = _random_words(rng, n * ft.uniforms_needed(factors, bit_factors), 62).reshape(n, -1)
    w[:62] = (torch.ones(62, 1, dtype=torch.int64) << torch.arange(62).unsqueeze(1))  # each top bit alone
    w[62:64] = 0
    w[64:1000] >>= (torch.arange(936) % 62).unsqueeze(1)  # random words with every top bit
    tables = ft.tables(r, w, checked).numpy()
    rn, tn, wn = r.numpy(), t.numpy(), w.numpy()
    column = 0
    for i, (low, width) in enumerate(windows):
        a = (tn >> low) & ((1 << width) - 1)
        c = a ^ ((rn >> low) & ((1 << width) - 1))
        entry = (tables[np.arange(n), column + c // 64] >> (c % 64)) & 1
        expected = np.ones(n, dtype=bool)
        for j, (window, sub_low, sub_width, thresholds) in enumerate(factors):
            if window == i:
                th = np.asarray(thresholds, dtype=np.int64)[(a >> sub_low) & ((1 << sub_width) - 1)]
                expected &= dg.below(wn[:, j], th, dg.WORD)
        assert np.array_equal(entry == 1, expected), (low, width)
        column += -(-(1 << width) // 64)
    for j, (low, bits, shift) in enumerate(bit_factors):
        entry = tables[:, column + j]
        part = (tn >> low) & ((1 << bits) - 1)
        parity = np.array([bin(int(x)).count("1") & 1 for x in (entry & ((1 << bits) - 1)) & part])
        assert np.array_equal(parity == 1, dg.below(wn[:, len(factors) + j], part << shift, dg.WORD))
        assert parity.sum() > 0 or bits + shift < 50  # a W whose top bit falls inside T's bits was drawn


GOOD = (62, [[32, 5]], [[0, 0, 5, [1 << 62] * 32]], [])


@pytest.mark.parametrize("args, field", [
    ((63, *GOOD[1:]), "`word_bits`"),
    ((62, [[32, 8]], GOOD[2], []), "windows"),
    ((62, [[60, 5]], GOOD[2], []), "windows"),
    ((62, GOOD[1], [[0, 0, 5, [1 << 62] * 31]], []), "factors"),
    ((62, GOOD[1], [[0, 0, 5, [(1 << 62) + 1] * 32]], []), "factors"),
    ((62, GOOD[1], [[0, 1, 5, [1 << 62] * 32]], []), "factors"),
    ((62, GOOD[1], [[1, 0, 5, [1 << 62] * 32]], []), "factors"),
    ((62, [[32, 5], [40, 2]], GOOD[2], []), "one factor per window"),
    ((62, *GOOD[1:3], [[0, 32, 31]]), "bit factors"),
    ((62, *GOOD[1:3], [[0, 32, 9]] * 5), "bit factors"),
    ((62, *GOOD[1:3], [[True, 32, 9]]), "bit factors"),
])
def test_a_request_the_tables_cannot_be_made_from_is_refused_naming_party_0(args, field):
    with pytest.raises(ProtocolViolation, match=field) as info:
        ft.check_spec(*args)
    assert info.value.party == 0


def test_a_provider_without_a_dealer_refuses_to_make_tables():
    """Their maker knows every factor's uniform word: only a dealer, which sees no opened value, may."""
    from mpcdp.adapter.material import FactorTables
    from mpcdp.errors import ConfigError

    with pytest.raises(ConfigError, match="factor tables need a dealer"):
        FactorTables.generate(None, 4, *GOOD)
