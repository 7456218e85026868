"""Where a party process finds the others: command-line values first, then the environment.

The environment follows torch.distributed / CrypTen conventions, so the same party code runs under any
launcher: ``RANK`` (0..m-1 for data parties, m for the dealer), ``WORLD_SIZE`` (the number m of *data*
parties, CrypTen's convention), and ``RENDEZVOUS`` (``tcp://HOST:PORT``, ``file:///path`` or ``env://``)
or ``MASTER_ADDR`` + ``MASTER_PORT`` (then ``tcp://MASTER_ADDR:MASTER_PORT``).

Under ``torchrun`` (its worker environment has ``TORCHELASTIC_RUN_ID``) the same script runs unchanged on
hosts started the torchrun way: there ``WORLD_SIZE`` counts every process torchrun started, so the data
parties are ranks 0..``WORLD_SIZE``−2 and the last rank is the dealer (with the ``honest-majority``
provider there is none, and every rank is a data party), and the rendezvous joins the store
torchrun's agent already keeps at ``MASTER_ADDR:MASTER_PORT`` (:func:`mpcdp.transport.rendezvous.open_store`).

``MPCDP_IFACE`` (or torch's ``GLOO_SOCKET_IFNAME``) picks the network interface whose address the links
listen on, on multi-homed hosts (``--iface``); without it, the interface that routes to the rendezvous host.
``MPCDP_CREDENTIALS`` names the folder of this deployment's TLS credentials (``--credentials``). A process
started on its own (``mpcdp party``, ``launch/host.sh``, ``mpcdp.train`` under ``RANK``, torchrun) has no
launcher to key a deployment for it, so it needs them, on one host as across hosts; only
``MPCDP_INSECURE_LINKS=1`` (``--insecure-links``) lets it use plain links instead, and that warns, saying what
it exposes (:data:`mpcdp.transport.joining.INSECURE_LINKS_WARNING`). The local launcher
(:mod:`mpcdp.runtime.harness`) keys a throwaway deployment for each run unless one of the two is set.
``MPCDP_NETWORK=CIDR`` declares the network inside which a process accepts the others' endpoints from a plain
(credential-less) rendezvous store (default: loopback, or the subnet of the interface it listens on;
:func:`mpcdp.transport.rendezvous.declared_network`). This module is the only place mpcdp reads them (the
rendezvous also reads torchrun's ``TORCHELASTIC_*`` variables): :func:`read_settings` turns them, and the command
line's flags, into one frozen :class:`RunSettings`, which the launcher hands to every process it starts. They
are the user's inputs only: mpcdp never writes them for its own children.
"""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, Mapping

from mpcdp.errors import ConfigError

if TYPE_CHECKING:
    from mpcdp.transport.credentials import LinkSecurity


@dataclasses.dataclass(frozen=True)
class Endpoint:
    rank: int
    parties: int
    rendezvous: str


def resolve(*, rank: int | None, parties: int | None, rendezvous: str | None,
            environ: Mapping[str, str] | None = None, dealer: bool = True, ranged: bool = True) -> Endpoint:
    """This process's rank, the number of data parties and the rendezvous. ``dealer``: whether the run has a
    dealer process (under torchrun it is one of ``WORLD_SIZE``; without one every rank is a data party).
    ``ranged=False`` leaves a rank beyond the run to the rendezvous (:func:`mpcdp.runtime.party.take_place`
    refuses it there, on every process)."""
    env = os.environ if environ is None else environ

    def pick(value, key: str, flag: str) -> int:
        if value is not None:
            return value
        if key not in env:
            raise ConfigError(f"`{flag}` is not given and the environment has no {key}.")
        try:
            return int(env[key])
        except ValueError:
            raise ConfigError(f"`{key}` must be an integer. Found {env[key]!r}.") from None

    rank_ = pick(rank, "RANK", "--rank")
    torchrun = parties is None and dealer and "TORCHELASTIC_RUN_ID" in env
    parties_ = pick(parties, "WORLD_SIZE", "--parties") - (1 if torchrun else 0)
    if torchrun and parties_ < 1:
        raise ConfigError(f"`WORLD_SIZE` under torchrun counts every process, the dealer's included, so it must be "
                          f"at least 2. Found {env['WORLD_SIZE']!r}.")
    if rendezvous is None:
        rendezvous = env.get("RENDEZVOUS")
    if rendezvous is None and "MASTER_ADDR" in env and "MASTER_PORT" in env:
        rendezvous = f"tcp://{env['MASTER_ADDR']}:{env['MASTER_PORT']}"
    if rendezvous is None:
        raise ConfigError("`--rendezvous` is not given and the environment has neither RENDEZVOUS nor "
                          "MASTER_ADDR + MASTER_PORT.")
    if not rendezvous.startswith(("tcp://", "file://", "env://")):
        raise ConfigError(f"`rendezvous` must start with tcp://, file:// or env://. Found {rendezvous!r}.")
    if parties_ < 1:
        raise ConfigError(f"`WORLD_SIZE` (the number of data parties) must be at least 1. Found {parties_}.")
    if rank_ < 0 or (ranged and rank_ > parties_ - (0 if dealer else 1)):
        raise ConfigError(f"`rank` must be in [0, {parties_}] ({parties_} = the dealer). Found {rank_}." if dealer
                          else f"`rank` must be in [0, {parties_ - 1}] (no dealer). Found {rank_}.")
    return Endpoint(rank=rank_, parties=parties_, rendezvous=rendezvous)


@dataclasses.dataclass(frozen=True)
class LinkSettings:
    """How this process's links are made: its TLS credentials (or None), whether plain links are allowed
    (``--insecure-links``), and the interface to listen on (None: the one that routes to the rendezvous host)."""
    security: LinkSecurity | None
    insecure: bool
    iface: str | None


@dataclasses.dataclass(frozen=True)
class RunSettings:
    """What every process of a run needs besides its :class:`~mpcdp.config.MpcConfig`, decided once by whoever
    starts it and handed to each process as this one object (never through environment variables written for
    the children).

    Attributes:
        credentials: the deployment's TLS credentials folder (``--credentials`` / ``MPCDP_CREDENTIALS``; the local
            launcher's throwaway deployment), or None.
        insecure_links: plain links allowed (``--insecure-links`` / ``MPCDP_INSECURE_LINKS=1``; warns).
        iface: the interface whose address the links listen on (``--iface`` / ``MPCDP_IFACE`` /
            ``GLOO_SOCKET_IFNAME``), or None for the one that routes to the rendezvous host.
        network: the declared network of a plain run (``MPCDP_NETWORK``), or None.
        plugins: the ``--plugin`` modules every process imports before its job (and ``MPCDP_PLUGINS``).
    """

    credentials: str | None = None
    insecure_links: bool = False
    iface: str | None = None
    network: str | None = None
    plugins: tuple[str, ...] = ()

    def links(self, rank: int) -> LinkSettings:
        """This rank's :class:`LinkSettings` (its :class:`~mpcdp.transport.credentials.LinkSecurity` loaded
        from :attr:`credentials`)."""
        from mpcdp.transport.credentials import LinkSecurity

        return LinkSettings(security=LinkSecurity(self.credentials, rank) if self.credentials else None,
                            insecure=self.insecure_links, iface=self.iface)


def read_settings(environ: Mapping[str, str] | None = None, *, credentials: str | None = None,
                  insecure_links: bool = False, iface: str | None = None,
                  plugins: tuple[str, ...] = ()) -> RunSettings:
    """The run's :class:`RunSettings`: the command line's values (the keyword arguments) first, then the
    user's environment (see the module docstring) — the one place mpcdp reads those variables."""
    from mpcdp import plugins as plugin_modules

    env = os.environ if environ is None else environ
    listed = [*plugin_modules.listed(env), *plugins]
    return RunSettings(credentials=str(credentials) if credentials else env.get("MPCDP_CREDENTIALS") or None,
                       insecure_links=insecure_links or env.get("MPCDP_INSECURE_LINKS", "") == "1",
                       iface=iface or env.get("MPCDP_IFACE") or env.get("GLOO_SOCKET_IFNAME") or None,
                       network=network_setting(env), plugins=tuple(dict.fromkeys(listed)))


def network_setting(environ: Mapping[str, str] | None = None) -> str | None:
    """``MPCDP_NETWORK``, the declared network of a plain run (an IPv4 CIDR such as ``10.0.0.0/16``), or None.

    Raises:
        ConfigError: it is not an IPv4 network.
    """
    import ipaddress

    env = os.environ if environ is None else environ
    value = env.get("MPCDP_NETWORK") or None
    if value is not None:
        try:
            ipaddress.IPv4Network(value, strict=False)
        except ValueError:
            raise ConfigError(f"`MPCDP_NETWORK` must be an IPv4 network such as 10.0.0.0/16. Found {value!r}.") from None
    return value
