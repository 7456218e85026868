"""A data party's life in a secure run: joining (the rendezvous, its links to every other process, CrypTen's
communicator over them, keyed generators, then the run's provider sets up its material source), the two
CrypTen protocols mpcdp calls directly, and leaving.

Which provider, and what it sets up, is the provider's record (:mod:`mpcdp.providers`); this module only
offers the building blocks (:class:`SourceKit`) and never compares a provider's name."""

from __future__ import annotations

from typing import Any

import torch

from mpcdp.adapter import communicator, dealer_link, group, keyed, metering, replicated
from mpcdp.adapter.compat import MPCTensor, cfg, configure, crypten
from mpcdp.config import MpcConfig
from mpcdp.errors import ConfigError
from mpcdp.transport import rendezvous
from mpcdp.transport.joining import local_address
from mpcdp.transport.mesh import Mesh


class NoDealer:
    """What CrypTen reaches as its dealer under a provider without one (``honest-majority``): there is none,
    so CrypTen's own protocols that need dealer material (its Beaver products, its truncation for > 2
    parties, its Box–Muller) are refused, naming the provider; mpcdp's protocols take their material from
    the provider (:mod:`.replicated`)."""

    def __init__(self, provider: str):
        self.provider = provider

    def _refuse(self, what: str):
        raise ConfigError(f"CrypTen's own {what} needs dealer material, and `provider` is {self.provider!r} "
                          f"(no dealer). mpcdp's integer protocols (mpcdp.mpc.ring) run on it; use the "
                          f"'dealer' provider for CrypTen's.")

    def get_generator(self, device=None):
        self._refuse("protocol")

    def ttp_request(self, func_name: str, device, *args, **kwargs):
        self._refuse(f"`{func_name}` protocol")


class SourceKit:
    """The building blocks a provider's :meth:`~mpcdp.providers.Provider.start` sets up this party's material
    source with, once every link of the run is up. Whatever it installs, :func:`stop_party` uninstalls."""

    def __init__(self, *, rank: int, processes: int, links: dict, dealer: int | None, timeout_s: float):
        self.rank, self.processes, self.links, self.dealer = rank, processes, links, dealer
        self.timeout_s = timeout_s

    def connect_dealer(self) -> dealer_link.DealerClient:
        """This party's end of its link to the dealer (rank m; the provider declares ``has_dealer``): it receives
        its 256-bit key, and becomes what CrypTen and :mod:`.material` reach as the dealer."""
        if self.dealer is None:
            raise ConfigError("a provider without a dealer process (`has_dealer` False) asked for the dealer's link")
        mesh = Mesh(self.rank, self.processes, {self.dealer: self.links[self.dealer]}, timeout_s=self.timeout_s,
                    counted=False, dealer=self.dealer)
        client = dealer_link.DealerClient(mesh, self.dealer)
        dealer_link.install_client(client)
        return client

    def replicated_source(self, mesh: Mesh) -> replicated.ReplicatedSource:
        """The dealer-free keys of parties 0, 1 and 2 over ``mesh`` (one round; :mod:`.replicated`), metered."""
        source = replicated.ReplicatedSource.establish(mesh)
        replicated.install(source)
        return source

    def refuse_crypten_dealer(self, provider: str) -> None:
        """Make CrypTen's dealer one that refuses every request, naming ``provider`` (:class:`NoDealer`)."""
        dealer_link.install_client(NoDealer(provider))


def start_party(*, rank: int, config: MpcConfig, rendezvous_url: str, links: Any) -> Mesh:
    """Join the run as data party ``rank`` of ``config.parties``; return the links to the other data parties.

    Blocks until every process (the dealer too, for a provider with one) has connected; then the run's provider
    (``config.provider_record``, a record of :data:`mpcdp.providers.PROVIDERS`) sets up this party's material
    source (:meth:`~mpcdp.providers.Provider.start`: the dealer's key, or the generators' keys of
    ``honest-majority``). ``links`` (:class:`mpcdp.runtime.endpoint.LinkSettings`): how the links are secured
    and where they listen (:meth:`~mpcdp.transport.mesh.Mesh.establish`). ``config.link_delay_ms`` > 0 emulates a
    slow network (once per round on the links, twice per dealer request).
    """
    record = config.provider_record
    parties, timeout_s, link_delay_ms = config.parties, config.timeout_s, config.link_delay_ms
    security, insecure, iface = links.security, links.insecure, links.iface
    metering.set_link_delay(link_delay_ms)
    configure(record.crypten_provider, config.precision_bits, timeout_s)
    dealer = parties if record.has_dealer else None
    processes = config.processes
    rendezvous.open_store(rendezvous_url, rank=rank, processes=processes, timeout_s=timeout_s,
                          security=security)
    links = Mesh.establish(rank, processes, address=local_address(rendezvous_url, iface), timeout_s=timeout_s,
                           security=security, insecure=insecure, dealer=dealer)
    mesh = Mesh(rank, parties, {j: link for j, link in links.items() if j != dealer}, timeout_s=timeout_s,
                delay_s=link_delay_ms / 1000.0, dealer=dealer, all_to_all=config.openings == "all-to-all")
    communicator.install(communicator.MeshCommunicator(mesh))
    keyed.key_party_generators(mesh)
    group.use_provider(record)
    record.start(mesh, SourceKit(rank=rank, processes=processes, links=links, dealer=dealer, timeout_s=timeout_s))
    return mesh


def stop_party(*, orderly: bool = True) -> None:
    """Leave the run: what the kit installed is uninstalled, then the provider stops (with a dealer: party 0
    tells it to stop, ``orderly``, and the dealer link closes)."""
    record = group.use_provider(None)
    dealer_link.install_client(None)
    replicated.install(None)
    communicator.uninstall()
    if record is not None:
        record.stop(orderly=orderly)


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
