"""A data party's life in a secure run: joining (the rendezvous, its links to every other process, CrypTen's
communicator over them, keyed generators, the dealer link), the two CrypTen protocols mpcdp calls directly,
and leaving."""

from __future__ import annotations

import torch

from mpcdp.adapter import communicator, dealer_link, keyed, metering, replicated
from mpcdp.adapter.compat import MPCTensor, cfg, configure, crypten
from mpcdp.errors import ConfigError
from mpcdp.transport import rendezvous
from mpcdp.transport.credentials import LinkSecurity
from mpcdp.transport.joining import local_address
from mpcdp.transport.mesh import Mesh

_dealer: dealer_link.DealerClient | None = None


class NoDealer:
    """What CrypTen reaches as its dealer under the ``honest-majority`` provider: there is none, so CrypTen's
    own protocols that need dealer material (its Beaver products, its truncation for > 2 parties, its
    Box–Muller) are refused, naming the provider; mpcdp's protocols take their material from
    :mod:`.replicated`."""

    def _refuse(self, what: str):
        raise ConfigError(f"CrypTen's own {what} needs dealer material, and `provider` is 'honest-majority' "
                          f"(no dealer). mpcdp's integer protocols (mpcdp.mpc.ring) run on it; use the "
                          f"'dealer' provider for CrypTen's.")

    def get_generator(self, device=None):
        self._refuse("protocol")

    def ttp_request(self, func_name: str, device, *args, **kwargs):
        self._refuse(f"`{func_name}` protocol")


def start_party(*, rank: int, parties: int, rendezvous_url: str, provider: str, precision_bits: int,
                timeout_s: float, link_delay_ms: float = 0.0, security: LinkSecurity | None = None,
                insecure: bool = False, iface: str | None = None) -> Mesh:
    """Join the run as data party ``rank`` of ``parties``; return the links to the other data parties.

    Blocks until every process (the dealer too, for the ``dealer`` provider) has connected; under
    ``honest-majority`` the parties then exchange the generators' keys (:mod:`.replicated`). ``security`` and
    ``insecure``: how the links are secured (:meth:`~mpcdp.transport.mesh.Mesh.establish`).
    ``link_delay_ms`` > 0 emulates a slow network (once per round on the links, twice per dealer request).
    """
    global _dealer
    metering.set_link_delay(link_delay_ms)
    configure(provider, precision_bits, timeout_s)
    dealer = parties if provider == "dealer" else None
    processes = parties + (dealer is not None)
    rendezvous.open_store(rendezvous_url, rank=rank, processes=processes, timeout_s=timeout_s,
                          security=security)
    links = Mesh.establish(rank, processes, address=local_address(rendezvous_url, iface), timeout_s=timeout_s,
                           security=security, insecure=insecure, dealer=dealer)
    mesh = Mesh(rank, parties, {j: link for j, link in links.items() if j != dealer}, timeout_s=timeout_s,
                delay_s=link_delay_ms / 1000.0, dealer=dealer)
    communicator.install(communicator.MeshCommunicator(mesh))
    keyed.key_party_generators(mesh)
    if dealer is not None:
        dealer_mesh = Mesh(rank, processes, {dealer: links[dealer]}, timeout_s=timeout_s, counted=False,
                           dealer=dealer)
        _dealer = dealer_link.DealerClient(dealer_mesh, dealer)
        dealer_link.install_client(_dealer)
    if provider == "honest-majority":
        replicated.install(replicated.ReplicatedSource.establish(mesh))
        dealer_link.install_client(NoDealer())
    return mesh


def stop_party(*, orderly: bool = True) -> None:
    """Leave the run: party 0 tells the dealer to stop (``orderly``), and the dealer link closes."""
    global _dealer
    client, _dealer = _dealer, None
    dealer_link.install_client(None)
    replicated.install(None)
    communicator.uninstall()
    if client is not None:
        try:
            if orderly and client.mesh.rank == 0:
                client.terminate()
        finally:
            client.mesh.close(orderly=orderly)


def beaver_multiply(share_x: torch.Tensor, share_y: torch.Tensor, precision_bits: int) -> torch.Tensor:
    """This party's share of x·y (element-wise) by CrypTen's Beaver protocol with the configured provider.

    Cost: 1 opening of ε = x − a and δ = y − b (2n ring elements), then truncation by 2^bits — local
    for 2 parties, CrypTen's wraps protocol (a dealer `wrap_rng` + 1 gather to party 0) for more.
    """
    x = MPCTensor.from_shares(share_x, precision=precision_bits)
    y = MPCTensor.from_shares(share_y, precision=precision_bits)
    return (x * y).share


def crypten_randn(n: int, *, sigma: float, precision_bits: int) -> torch.Tensor:
    """This party's share of σ·crypten.randn(n) (CrypTen's Box–Muller; for comparison only)."""
    if cfg.encoder.precision_bits != precision_bits:
        raise ValueError(f"CrypTen runs at {cfg.encoder.precision_bits} fractional bits, not {precision_bits}")
    return (crypten.randn(n) * float(sigma)).share
