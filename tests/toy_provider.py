"""A toy correlated-randomness provider in one file, registered when imported (`mpcdp --plugin toy_provider`):
the honest-majority machinery under another name, written against the interface member by member. Used by
tests/test_provider_registry.py to run secure jobs with a provider mpcdp does not ship.

Security model: the honest-majority provider's (mpcdp.providers.HonestMajority): no dealer; parties 0, 1 and 2
make the material from replicated keys; secure while at most one of those three colludes, with any number of
the other parties; needs parties >= 3.
"""

from __future__ import annotations

from mpcdp import providers
from mpcdp.errors import ConfigError


class ToyHonestMajority:
    name = "toy-honest-majority"
    summary = "parties 0-2 make the material with the honest-majority machinery"
    has_dealer = False
    min_parties = 3
    insecure = False
    crypten_provider = "TTP"

    def __init__(self) -> None:
        self.inner = providers.HonestMajority()
        self.served: dict[str, int] = {}  # requests per kind of material, on this party

    @property
    def source(self):
        return self.inner.source

    def check(self, config) -> None:
        if config.parties < self.min_parties:
            raise ConfigError(f"`provider` {self.name!r} needs `parties` >= 3 (its parties 0-2 make the material). "
                              f"Found parties={config.parties}.")

    def start(self, mesh, kit) -> None:
        self.served = {}
        self.inner.source = kit.replicated_source(mesh)
        kit.refuse_crypten_dealer(self.name)

    def serve(self, kind, *args):
        self.served[kind.__name__] = self.served.get(kind.__name__, 0) + 1
        return self.inner.serve(kind, *args)

    def replicated_arithmetic(self, members):
        """The optional capability, as the built-in offers it (replicated multiplication among parties 0-2)."""
        return self.inner.replicated_arithmetic(members)

    def stop(self, *, orderly: bool = True) -> None:
        self.inner.stop(orderly=orderly)


providers.register(ToyHonestMajority())
