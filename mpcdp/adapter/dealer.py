"""The dealer process: CrypTen's TTP server (rank m, never a data party) extended with every kind of
:mod:`.material`, keyed generators, and a byte meter per request.

Security model: the dealer generates all correlated randomness and hands each party its share. It never
receives an opened value or an input share; security rests on it not colluding with any data party (with
one, it recovers every value that was multiplied; README, "Threat model").
"""

from __future__ import annotations

from mpcdp.adapter import keyed, objects
from mpcdp.adapter.compat import comm, configure, set_endpoint, ttp_provider
from mpcdp.adapter.material import KINDS
from mpcdp.transport.wire import tcp_bytes


class Dealer(ttp_provider.TTPServer):
    """CrypTen's TTP server plus the material of :data:`~.material.KINDS`, each served under the name of its
    class. ``request_bytes`` gets the bytes the dealer wrote for each request (its last message for a
    request is the broadcast of the result, so the counter is read right after it)."""

    request_bytes: list[int]

    def _setup_generators(self):
        super()._setup_generators()
        keyed.key_dealer_generators(self)
        self.terminated = False
        receive = comm.get().recv_obj

        def watched_receive(*args, **kwargs):
            message = receive(*args, **kwargs)
            objects.check_request(message, ALLOWED)
            if isinstance(message, str) and message == "terminate":
                self.terminated = True
            return message

        comm.get().recv_obj = watched_receive
        communicator = comm.get()
        original = communicator.broadcast
        sent = [tcp_bytes()[1]]

        def metered_broadcast(*args, **kwargs):
            result = original(*args, **kwargs)
            now = tcp_bytes()[1]
            self.request_bytes.append(now - sent[0])
            sent[0] = now
            return result

        communicator.broadcast = metered_broadcast


ALLOWED = objects.CRYPTEN_KINDS + tuple(kind.request_name() for kind in KINDS)

for _kind in KINDS:  # CrypTen's server looks a request up by name: serve each kind under its class's name
    setattr(Dealer, _kind.request_name(), lambda self, *args, _serve=_kind.serve: _serve(self, *args))


def run_dealer(*, parties: int, rendezvous: str, precision_bits: int, timeout_s: float) -> list[int]:
    """Run the dealer (rank ``parties``) until party 0 says ``terminate``; return the bytes it wrote to the
    network for each request, in order (TCP payload, framing included).

    Raises:
        PartyLost: a link failed before ``terminate`` (CrypTen's server loop then returns quietly); names the
            lost party (:mod:`mpcdp.transport.losses`).
    """
    configure("dealer", precision_bits, timeout_s)
    set_endpoint(parties, parties, rendezvous)
    # The server's own `crypten.init()` joins the process group as rank `parties`.
    dealer = Dealer.__new__(Dealer)
    dealer.request_bytes = []
    dealer.terminated = False
    from mpcdp.errors import PartyLost, ProtocolViolation
    from mpcdp.transport import losses

    try:
        dealer.__init__()
    except ProtocolViolation as exc:  # party 0 sent what the dealer does not serve: name it to everyone
        losses.resolve(-1, exc.party)
        raise
    if not dealer.terminated:
        lost, by = losses.resolve(parties, None)
        raise PartyLost(losses.message(lost, by, "the dealer", "its link to the parties failed before party 0 "
                                                              "said `terminate`"), party=lost)
    if comm.is_initialized():
        comm.uninit()
    return dealer.request_bytes
