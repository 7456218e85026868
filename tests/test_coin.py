"""The noise committee's committed coin (mpcdp.mpc.coin): every member derives the same key, the XOR of the
parts; a member that opens another part than it committed to is named; the declared cost is what is sent."""

from __future__ import annotations

import pytest
import torch

from mpcdp.errors import ProtocolViolation
from mpcdp.mpc import coin


class _Member:
    """One member's context, as much as ``committed_stream`` uses: its rank and ``members_exchange``, which
    answers each round with the other members' messages given in advance (``rounds[i][rank]``)."""

    def __init__(self, rank: int, rounds: list):
        self.rank, self.rounds, self.calls = rank, rounds, 0

    def members_exchange(self, vector, *, label, kind, reason):
        assert kind == "coin"
        round_ = self.rounds[self.calls]
        self.calls += 1
        return {j: (vector if j == self.rank else sent) for j, sent in round_.items()}


def _run(tamper=None):
    """Each member's key, with every member's two messages (commitment, part + nonce) fixed in advance the
    way ``committed_stream`` makes them: the members' draws are replayed from recorded ones."""
    import mpcdp.mpc.coin as module

    draws = {rank: (bytes([rank + 1]) * 32, bytes([rank + 101]) * 32) for rank in range(3)}
    rounds = [{}, {}]
    for rank, (part, nonce) in draws.items():
        sent = [module._words(module.commitment(b"d", "lab", rank, part, nonce)), module._words(part + nonce)]
        for i, v in enumerate(sent):
            rounds[i][rank] = (tamper or (lambda r, i, v: v))(rank, i, v)
    keys = []
    for rank in range(3):
        queue = list(draws[rank])
        original = module.secure_key
        module.secure_key = lambda q=queue: q.pop(0)
        try:
            keys.append(module.committed_stream(_Member(rank, rounds), label="lab", domain=b"d").words(4))
        finally:
            module.secure_key = original
    return keys


def test_every_member_derives_the_same_key_from_the_parts():
    keys = _run()
    assert all(torch.equal(k, keys[0]) for k in keys)
    again = _run()
    assert torch.equal(again[0], keys[0])  # a function of the parts alone


def test_a_member_that_opens_another_part_than_it_committed_to_is_named():
    def flip(rank, i, v):  # party 2 commits honestly, then opens a part with one bit flipped
        if rank == 2 and i == 1:
            v = v.clone()
            v[0] ^= 1
        return v

    with pytest.raises(ProtocolViolation, match="party 2 opened a coin part that does not match its commitment") as raised:
        _run(flip)
    assert raised.value.party == 2


def test_the_declared_cost_is_a_commitment_then_a_part_with_its_nonce():
    assert coin.coin_cost() == [32, 64]
    assert len(coin.commitment(b"d", "lab", 0, b"\0" * 32, b"\1" * 32)) == coin.COMMITMENT_BYTES
