"""The critical path the cost model charges one link delay per hop of (mpcdp.transport.hop_clock), on
sequences whose path is known by hand, under a real link's propagation and under the transport's injected
delay (which holds each sender). The replay inside a real run is checked in tests/test_costs.py."""

import pytest

from mpcdp.transport.hop_clock import HopClock

COMMITTEE = [0, 1, 2]


def _star(clock: HopClock, king: int, members=COMMITTEE) -> None:
    clock.opening("star", members, king, 2)
    clock.move(0, [king] if king else [], [] if king else [1, 2])  # party 0's own two moves: not counted again
    clock.move(0, [] if king else [1, 2], [king] if king else [])


@pytest.mark.parametrize("blocking", [False, True])
def test_star_openings_through_one_king_cost_two_hops_each_and_only_propagation_lets_the_king_go_on_first(blocking):
    clock = HopClock(blocking=blocking)
    for n in range(1, 4):
        _star(clock, 0)
        assert clock.ready[1] == clock.ready[2] == clock.hops == 2 * n
        # the king has the sum when the last share arrives; under the injected delay it then sleeps before
        # sending it on, so it goes on with the others
        assert clock.ready[0] == (2 * n if blocking else 2 * n - 1)


def test_a_request_answered_to_the_king_that_follows_costs_one_hop_and_to_another_party_two():
    waits_for_itself = HopClock()
    waits_for_itself.request(0, 0)
    _star(waits_for_itself, 0)
    assert waits_for_itself.hops == 3  # the other parties' shares travel while party 0 waits for the dealer
    answered_to_the_king = HopClock()
    answered_to_the_king.request(0, 1)
    _star(answered_to_the_king, 1)
    assert answered_to_the_king.hops == 3
    answered_elsewhere = HopClock()
    answered_elsewhere.request(0, 1)
    _star(answered_elsewhere, 2)
    assert answered_elsewhere.hops == 4  # party 1 sends its share to the king two delays late


def test_requests_answered_to_other_parties_travel_together_and_party_0_does_not_wait():
    clock = HopClock()
    clock.request(0, 1)
    clock.request(0, 2)
    assert [clock.ready[p] for p in COMMITTEE] == [0, 2, 2]
    clock.opening("scatter", COMMITTEE, None, 2)
    assert clock.hops == 4
    held = HopClock(blocking=True)  # the injected delay: party 0 sleeps before each request leaves
    held.request(0, 1)
    held.request(0, 2)
    assert [held.ready[p] for p in COMMITTEE] == [2, 2, 3]


def test_a_send_reaches_its_receiver_a_hop_later_and_holds_the_sender_only_under_the_injected_delay():
    clock, held = HopClock(), HopClock(blocking=True)
    for c in (clock, held):
        c.move(0, [1], [])
    assert (clock.ready[0], clock.ready[1]) == (0, 1)
    assert (held.ready[0], held.ready[1]) == (1, 1)
    clock.move(0, [], [1])  # the reply: sent by party 1 when it was ready (hop 1)
    assert clock.ready[0] == 2


def test_a_direct_opening_after_a_request_costs_two_more_hops():
    clock = HopClock()
    clock.request(0, 0)
    clock.opening("direct", [0, 1], None, 1)
    assert clock.hops == 3  # party 1 gets party 0's share only once party 0 has its reply
