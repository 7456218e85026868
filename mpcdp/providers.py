"""Where a secure run's correlated randomness comes from: the providers, one record each in :data:`PROVIDERS`.

A provider is an object with the members of :class:`Provider`. What it declares (``has_dealer``,
``min_parties``, ``insecure``) decides how many processes a run has, whom the rendezvous expects and what
:class:`~mpcdp.config.MpcConfig` refuses; its hooks run on every data party: :meth:`~Provider.check` when the
configuration is made, :meth:`~Provider.start` once the party's links are up (it sets up this party's
material source with the adapter's building blocks, :class:`mpcdp.adapter.session.SourceKit`),
:meth:`~Provider.serve` for every request of correlated randomness (each kind of :mod:`mpcdp.adapter.material`
asks the session's provider, never a global of its own), and :meth:`~Provider.stop` when the party leaves.
Nothing else in mpcdp compares a provider's name. This module imports no CrypTen and nothing above mpcdp's
foundation: ``start`` and ``serve`` get every adapter object they use as an argument.

Security model of the built-in providers (the guide mpcdp/README.md, "Threat model"):

* ``dealer`` (default; CrypTen's TTP): an extra process of rank m that is never a data party generates the
  correlated randomness and hands each party its share. It never receives an opened value or an input
  share: it holds no data and sees no opened value. Security rests on it not colluding with a party.
* ``honest-majority``: no dealer. Parties 0, 1 and 2 make the material from replicated keys
  (:mod:`mpcdp.adapter.replicated`); secure while at most one of those three colludes, with any number of the
  other parties; needs parties >= 3. Among exactly those three (the noise committee, or every party at m = 3)
  it multiplies by replicated resharing, with no material: one of them alone still sees only uniform words,
  two of them learn every value multiplied there, as two of them recover every mask anyway. CrypTen's own
  dealer-bound protocols are refused under it.
* ``tfp`` (CrypTen's default "trusted first party"): party 0 generates all correlated randomness in
  plaintext and can therefore recover every other party's inputs from the values it legitimately sees.
  Development only; :class:`~mpcdp.config.MpcConfig` refuses it without ``insecure_dev=True``.

Optional capability: ``replicated_arithmetic(members)``, an object for multiplying shares among ``members`` by
replicated resharing instead of with material (:class:`mpcdp.adapter.replicated.ReplicatedArithmetic`), or None
where the provider does not offer it for those members. :func:`mpcdp.adapter.replicated_arithmetic` asks for it
and :mod:`mpcdp.mpc.ring` picks its multiplication protocol by the answer; a provider without the member keeps
Beaver multiplication with its own material. Only a provider whose trust rests on an honest majority among
exactly those members may offer it: with it, any two of three members recover every multiplied value (with
Beaver material, a member learns nothing unless it colludes with whoever made the masks).

How to add a provider: write a class with every member of :class:`Provider` (or subclass a built-in and
change what differs) and :func:`register` an instance — one file, imported with ``mpcdp --plugin MODULE`` so
that every party process imports it too (:mod:`mpcdp.plugins`). ``register`` refuses a record that lacks a
member, naming it. The name then is a choice of ``--provider`` and of ``[mpc] provider``.
``tests/toy_provider.py`` is one: the honest-majority machinery under another name. A new provider states its
security model in its docstring; one with ``insecure`` True must refuse and warn in ``check`` as ``tfp`` does.
Its docstring also declares its cost: the processes it adds and the material bytes a request moves, between
whom (``mpcdp cost`` measures it). tests/test_provider_registry.py runs the toy through secure jobs,
``mpcdp noise``, ``mpcdp cost`` and ``mpcdp train``, and checks it gives what the built-in provider gives.
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any, Protocol, runtime_checkable

from mpcdp import registry
from mpcdp.errors import ConfigError, InsecureProviderError, InsecureSettingWarning

DEFAULT = "dealer"
CRYPTEN_PROVIDERS = ("TTP", "TFP")
"""CrypTen's own providers (its ``cfg.mpc.provider``): a dealer client (TTP) or party 0 (TFP)."""


@runtime_checkable
class Provider(Protocol):
    """A source of correlated randomness for a secure run (the interface every record of :data:`PROVIDERS`
    has; checked member by member when it is registered).

    Attributes:
        name: what ``MpcConfig(provider=...)``, ``[mpc] provider`` and ``--provider`` call it.
        summary: who makes the material, in a few words (help texts, cost reports).
        has_dealer: the run has mpcdp's dealer process, rank m (:mod:`mpcdp.adapter.dealer`), besides the m
            data parties; the rendezvous then expects m + 1 processes.
        min_parties: the fewest data parties it works with (>= 2).
        insecure: a development setting: refused without ``insecure_dev=True``.
        crypten_provider: the CrypTen provider (one of :data:`CRYPTEN_PROVIDERS`) that CrypTen's own
            protocols (its Beaver products, its truncation, its Box–Muller) use on the parties.
    """

    name: str
    summary: str
    has_dealer: bool
    min_parties: int
    insecure: bool
    crypten_provider: str

    def check(self, config: Any) -> None:
        """Refuse (ConfigError, InsecureProviderError) an :class:`~mpcdp.config.MpcConfig` this provider
        cannot run, and warn about an insecure one; called once its own fields are valid."""

    def start(self, mesh: Any, kit: Any) -> None:
        """Set up this data party's material source, once its links are up: ``mesh`` the links to the
        other data parties, ``kit`` the adapter's building blocks (:class:`mpcdp.adapter.session.SourceKit`)."""

    def serve(self, kind: Any, *args: Any) -> Any:
        """This party's shares of ``kind``'s material (a :class:`mpcdp.adapter.material.Material` class) for
        ``args``; every data party calls it together, in the same order."""

    def stop(self, *, orderly: bool = True) -> None:
        """Leave: close what :meth:`start` opened (``orderly``: the run ended normally)."""


MEMBERS: tuple[str, ...] = (*Provider.__annotations__,
                            *(name for name, value in vars(Provider).items()
                              if inspect.isfunction(value) and not name.startswith("_")))
"""Every member :func:`register` checks a record for: the attributes, then the hooks."""

OPTIONAL: tuple[str, ...] = ("replicated_arithmetic",)
"""Capabilities a record may have (each a method; see the module docstring)."""

_TYPES = {"name": (str, "a string"), "summary": (str, "a string"), "has_dealer": (bool, "a bool"),
          "min_parties": (int, "an integer"), "insecure": (bool, "a bool"), "crypten_provider": (str, "a string")}

PROVIDERS: dict[str, Provider] = {}


def register(record: Provider) -> Provider:
    """Add ``record`` under its name (a new name only), after checking it has every member of
    :class:`Provider`, each of the right kind.

    Raises:
        ConfigError: a member is missing or wrong (named), or the name is taken.
    """
    label = repr(getattr(record, "name", type(record).__name__))
    missing = [member for member in MEMBERS if not hasattr(record, member)]
    if missing:
        raise ConfigError(f"a provider must have every member of mpcdp.providers.Provider: {label} lacks "
                          f"{', '.join(f'`{member}`' for member in missing)}")
    for member, (kind, what) in _TYPES.items():
        value = getattr(record, member)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ConfigError(f"a provider's `{member}` must be {what}: {label} has {value!r}")
    for member in (*MEMBERS, *OPTIONAL):
        if member not in _TYPES and hasattr(record, member) and not callable(getattr(record, member)):
            raise ConfigError(f"a provider's `{member}` must be a method: {label} has {getattr(record, member)!r}")
    if not record.name or record.min_parties < 2 or record.crypten_provider not in CRYPTEN_PROVIDERS:
        raise ConfigError(f"a provider needs a name, `min_parties` >= 2 and `crypten_provider` in "
                          f"{list(CRYPTEN_PROVIDERS)}: {label} has min_parties={record.min_parties}, "
                          f"crypten_provider={record.crypten_provider!r}")
    return registry.add(PROVIDERS, record.name, record, "provider")


def lookup(name: Any) -> Provider:
    """The provider registered as ``name``, or a ConfigError naming ``provider``, the known names and ``name``."""
    if not isinstance(name, str):
        raise ConfigError(f"`provider` must be one of {sorted(PROVIDERS)}. Found {name!r}.")
    return registry.find(PROVIDERS, name, "provider")


def names(*, insecure: bool = True) -> list[str]:
    """The registered names, in the order they were registered (without the insecure ones if ``insecure`` is
    False)."""
    return [name for name, record in PROVIDERS.items() if insecure or not record.insecure]


def check_declared(record: Provider, config: Any) -> None:
    """What ``record`` declares, enforced whatever its own :meth:`~Provider.check` does (called after it)."""
    if config.parties < record.min_parties:
        raise ConfigError(f"`provider` {record.name!r} needs `parties` >= {record.min_parties}. "
                          f"Found parties={config.parties}.")
    if record.insecure and not config.insecure_dev:
        raise InsecureProviderError(f"`provider` {record.name!r} is insecure; it needs the explicit development "
                                    f"flag `insecure_dev=True` (CLI: --insecure-dev). Found insecure_dev=False.")


class Dealer:
    """``dealer``: an extra process of rank m that is never a data party generates the correlated randomness
    and hands each party its share (:mod:`mpcdp.adapter.dealer`, over :mod:`mpcdp.adapter.dealer_link`). It
    never receives an opened value or an input share. Security rests on it not colluding with a party (with
    one, it recovers every value that was multiplied)."""

    name = "dealer"
    summary = "the dealer, a separate process of rank m, makes the material"
    has_dealer = True
    min_parties = 2
    insecure = False
    crypten_provider = "TTP"

    def __init__(self) -> None:
        self.client = None

    def check(self, config: Any) -> None:
        """Nothing beyond :class:`~mpcdp.config.MpcConfig`'s own fields."""

    def start(self, mesh: Any, kit: Any) -> None:
        self.client = kit.connect_dealer()  # receives this party's key; CrypTen's TTP client from now on

    def serve(self, kind: Any, *args: Any) -> Any:
        return kind.from_dealer(*args)

    def stop(self, *, orderly: bool = True) -> None:
        client, self.client = self.client, None
        if client is not None:
            client.close(orderly=orderly)  # party 0 tells the dealer to stop (``orderly``)


class HonestMajority:
    """``honest-majority``: no dealer. Parties 0, 1 and 2 make the material from replicated keys
    (:mod:`mpcdp.adapter.replicated`); secure while at most one of those three colludes, with any number of
    the other parties; needs parties >= 3. Among exactly those three it offers replicated arithmetic
    (:meth:`replicated_arithmetic`). CrypTen's own dealer-bound protocols are refused under it."""

    name = "honest-majority"
    summary = "parties 0-2 make the material"
    has_dealer = False
    min_parties = 3
    insecure = False
    crypten_provider = "TTP"  # CrypTen's dealer client is one that refuses (kit.refuse_crypten_dealer)

    def __init__(self) -> None:
        self.source = None

    def check(self, config: Any) -> None:
        if config.parties < self.min_parties:
            raise ConfigError(f"`provider` {self.name!r} needs `parties` >= {self.min_parties} (three of them make "
                              f"the correlated randomness). Found parties={config.parties}.")
        if config.parties > 3 and getattr(config, "noise_committee", 3) != 3:
            raise ConfigError(f"`noise_committee` under provider {self.name!r} is its three generators, parties 0, "
                              f"1 and 2: 3. Found noise_committee={config.noise_committee}.")

    def start(self, mesh: Any, kit: Any) -> None:
        self.source = kit.replicated_source(mesh)  # one round of keys
        kit.refuse_crypten_dealer(self.name)

    def serve(self, kind: Any, *args: Any) -> Any:
        if self.source is None:
            raise RuntimeError(f"provider {self.name!r} has not started on this party")
        return self.source.serve(kind, *args)

    def replicated_arithmetic(self, members: tuple[int, ...]) -> Any:
        """Multiplication by replicated resharing for a computation among exactly parties 0, 1 and 2 (the
        honest majority this provider's trust rests on; :mod:`mpcdp.adapter.replicated`), else None."""
        return None if self.source is None else self.source.replicated_arithmetic(tuple(members))

    def stop(self, *, orderly: bool = True) -> None:
        self.source = None


class TrustedFirstParty:
    """``tfp`` (CrypTen's default "trusted first party"): party 0 generates all correlated randomness in
    plaintext and can therefore recover every other party's inputs from the values it legitimately sees.
    Development only: refused without ``insecure_dev=True``, and a warning whenever it is used. mpcdp's own
    integer protocols do not run on it."""

    name = "tfp"
    summary = "party 0 makes the material and can recover every other party's inputs"
    has_dealer = False
    min_parties = 2
    insecure = True
    crypten_provider = "TFP"

    def check(self, config: Any) -> None:
        if not config.insecure_dev:
            raise InsecureProviderError(
                "`provider` 'tfp' lets party 0 recover every other party's inputs; it needs the explicit "
                "development flag `insecure_dev=True` (CLI: --insecure-dev). Found provider='tfp', "
                "insecure_dev=False.")
        # stacklevel: this hook, MpcConfig.__post_init__, its __init__, then whoever made the configuration
        warnings.warn("INSECURE: provider 'tfp' — party 0 generates all correlated randomness and can "
                      "recover every other party's inputs. Development only.",
                      InsecureSettingWarning, stacklevel=4)

    def start(self, mesh: Any, kit: Any) -> None:
        """Nothing to set up: CrypTen's TFP provider makes its material on party 0."""

    def serve(self, kind: Any, *args: Any) -> Any:
        raise RuntimeError(f"mpcdp's integer protocols need the `dealer` provider (configured: "
                           f"{self.crypten_provider}).")

    def stop(self, *, orderly: bool = True) -> None:
        """Nothing to close."""


for _record in (Dealer(), HonestMajority(), TrustedFirstParty()):
    register(_record)
