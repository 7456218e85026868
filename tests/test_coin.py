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


def _ahead_keys(tamper=None):
    """Each member's key of a coin committed ahead (coin.Ahead, coin.open_ahead), and the members' parts: the
    commitments kept as if they had travelled inside another message, then the parts opened in one round
    (``tamper`` alters what a member opens)."""
    members = [coin.Ahead(rank, label="lab", domain=b"d") for rank in range(3)]
    commitments = {rank: ahead.words() for rank, ahead in enumerate(members)}
    opened = {rank: coin._words(ahead.part + ahead.nonce) for rank, ahead in enumerate(members)}
    rounds = [{rank: (tamper or (lambda r, v: v))(rank, v) for rank, v in opened.items()}]
    keys = []
    for rank, ahead in enumerate(members):
        ahead.keep(commitments)
        keys.append(coin.open_ahead(_Member(rank, rounds), ahead).words(4))
    return keys, members


def test_a_coin_committed_ahead_costs_one_round_and_every_member_derives_the_xor_of_the_parts():
    keys, members = _ahead_keys()
    assert all(torch.equal(k, keys[0]) for k in keys)
    xor = bytes(a ^ b ^ c for a, b, c in zip(*(m.part for m in members)))
    assert torch.equal(keys[0], coin.KeyedStream(xor, domain=b"d").words(4))


def test_a_member_that_opens_another_part_than_it_committed_to_ahead_is_named_and_an_uncommitted_coin_is_refused():
    def flip(rank, v):
        if rank == 1:
            v = v.clone()
            v[2] ^= 1 << 40
        return v

    with pytest.raises(ProtocolViolation, match="party 1 opened a coin part that does not match") as raised:
        _ahead_keys(flip)
    assert raised.value.party == 1
    with pytest.raises(RuntimeError, match="was not committed to by every member"):
        coin.open_ahead(_Member(0, [{}]), coin.Ahead(0, label="lab", domain=b"d"))
