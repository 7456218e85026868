"""The local table lookup of the exact sampler (:func:`mpcdp.mpc.binary.select`): bit for bit the parity
definition on every share word, not only on one-hot ones (the parties' shares are arbitrary words)."""

import random

import pytest
import torch

from mpcdp.mpc import binary


def _by_parity(words: torch.Tensor, table: tuple[int, ...], bits: int) -> torch.Tensor:
    """Bit b of the result: the parity of (word AND the positions whose entry has bit b)."""
    out = torch.zeros_like(words)
    for b in range(bits):
        mask = binary._signed(sum(1 << j for j, v in enumerate(table) if (v >> b) & 1))
        x = words & mask
        for shift in (32, 16, 8, 4, 2, 1):
            x = x ^ (x >> shift)
        out |= (x & 1) << b
    return out


@pytest.mark.parametrize("entries, bits", [(5, 5), (64, 64), (64, 63), (33, 17), (1, 1)])
def test_select_equals_the_parity_definition_on_any_share_word(entries, bits):
    rng = random.Random(entries * 100 + bits)
    table = tuple(rng.getrandbits(bits) for _ in range(entries))
    words = torch.tensor([binary._signed(rng.getrandbits(64)) for _ in range(4000)] + [0, -1, 1, -(2**63)],
                         dtype=torch.int64)
    assert torch.equal(binary.select(None, words, table, bits), _by_parity(words, table, bits))


def test_a_one_hot_word_selects_its_entry_and_shares_xor_to_it():
    table = tuple(range(100, 164))
    v = torch.arange(64)
    onehot = torch.tensor([binary._signed(1 << int(i)) for i in v], dtype=torch.int64)
    assert binary.select(None, onehot, table, 8).tolist() == [t & 0xFF for t in table]
    rng = random.Random(1)
    other = torch.tensor([binary._signed(rng.getrandbits(64)) for _ in v], dtype=torch.int64)
    shares = (onehot ^ other, other)  # two parties' XOR shares of the one-hot words
    assert torch.equal(binary.select(None, shares[0], table, 8) ^ binary.select(None, shares[1], table, 8),
                       torch.tensor([t & 0xFF for t in table]))


def test_more_than_64_entries_are_refused():
    with pytest.raises(ValueError, match="at most 64 entries"):
        binary.select(None, torch.zeros(1, dtype=torch.int64), tuple(range(65)), 8)
