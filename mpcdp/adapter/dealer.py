"""The dealer process: CrypTen's TTP material (its methods, not its server loop) extended with every kind of
:mod:`.material`, on keyed generators, served over mpcdp's links (:mod:`.dealer_link`).

Security model: the dealer generates all correlated randomness and hands each party its share. It never
receives an opened value or an input share; security rests on it not colluding with any data party (with
one, it recovers every value that was multiplied; the guide mpcdp/README.md, "Threat model").
"""

from __future__ import annotations

from typing import Callable

import torch

from mpcdp.adapter import dealer_link, objects
from mpcdp.adapter.compat import configure, ttp_provider
from mpcdp.errors import PeerLost, ProtocolViolation
from mpcdp.transport import losses, rendezvous
from mpcdp.transport.credentials import LinkSecurity
from mpcdp.transport.joining import local_address
from mpcdp.transport.mesh import Mesh


class Dealer(ttp_provider.TTPServer):
    """CrypTen's TTP material methods plus the material of :data:`~.material.KINDS` and the authenticated
    material of :data:`~.bounded_masks.KINDS`, :data:`~.mac_material.KINDS`, :data:`~.auth_bits.KINDS` and :data:`~.square_masks.KINDS`, each
    served under the name of its class, drawing from one keyed generator per party (never started as CrypTen's server)."""

    def __init__(self, parties: int):  # noqa: D107 - CrypTen's __init__ would join a gloo group; not called
        self.device = "cpu"
        self.generators = [torch.Generator(device="cpu") for _ in range(parties)]
        self.generators_cuda = [None] * parties
        self.receivers = dealer_link.Receivers(range(parties))  # scoped with the generators (CommitteeScope)
        self.explicit = 0  # the index among the generators of the party the reply is for

    def _get_generators(self, device=None):
        """The generators, the reply's receiver's first: CrypTen's ``remove_rank`` draws leave out the first, so
        the reply is the receiver's share and every other party's is drawn from its key; each generator still
        draws the same values in the same order (sums and XORs do not depend on the order of their terms)."""
        generators = super()._get_generators(device=device)
        return generators[self.explicit:] + generators[:self.explicit]


KINDS = dealer_link.REQUEST_KINDS
ALLOWED = objects.CRYPTEN_KINDS + tuple(kind.request_name() for kind in KINDS)

for _kind in KINDS:  # a request names its kind: serve each kind under its class's name
    setattr(Dealer, _kind.request_name(), lambda self, *args, _serve=_kind.serve: _serve(self, *args))


def run_dealer(*, parties: int, rendezvous_url: str, precision_bits: int, timeout_s: float,
               security: LinkSecurity | None = None, insecure: bool = False, iface: str | None = None,
               on_request: Callable[[int, int], None] | None = None) -> tuple[list[int], int, list[float]]:
    """Run the dealer (rank ``parties``) until party 0 says ``terminate``; return the bytes it wrote to the
    network for each request, in order, and in all (its links' kernel counters, keys and TLS included), and
    the CPU seconds it spent on each request's reply. ``on_request``: as :func:`.dealer_link.serve`'s.

    Raises:
        PartyLost: a link closed before ``terminate``, naming the lost party (:mod:`mpcdp.transport.losses`).
        PartyRefused: a party refused its own input before the links were up, naming it and why.
        ProtocolViolation: party 0 sent what the dealer does not serve, or a frame that is not the expected one.
    """
    configure("TTP", precision_bits, timeout_s)  # CrypTen's dealer methods
    rank = parties
    rendezvous.open_store(rendezvous_url, rank=rank, processes=parties + 1, timeout_s=timeout_s,
                          security=security)
    try:
        links = Mesh.establish(rank, parties + 1, address=local_address(rendezvous_url, iface), timeout_s=timeout_s,
                               security=security, insecure=insecure, dealer=rank)
    except PeerLost as exc:  # a process stopped before the links were up (a party refused its input?)
        if isinstance(exc, ProtocolViolation):
            raise
        losses.report(rank, exc)
        raise losses.stopped(losses.resolve(rank, exc), "the dealer", str(exc)) from exc
    mesh = Mesh(rank, parties + 1, links, timeout_s=timeout_s, counted=False, dealer=rank)
    try:
        request_bytes, request_cpu = dealer_link.serve(mesh, Dealer(parties), ALLOWED, on_request)
        return request_bytes, mesh.wire_bytes_sent(), request_cpu
    except PeerLost as exc:  # ProtocolViolation included: report it (first), close, then name whom to blame
        losses.report(rank, exc)
        mesh.close(orderly=False)
        verdict = losses.resolve(rank, exc)
        if isinstance(exc, ProtocolViolation):
            raise
        raise losses.stopped(verdict, "the dealer", str(exc)) from exc
    finally:
        mesh.close()
