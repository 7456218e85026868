"""Who this party is in the run it joined (from CrypTen's communicator, which mpcdp runs over its links), and
the provider its correlated randomness comes from."""

from __future__ import annotations

from mpcdp.adapter import communicator
from mpcdp.providers import Provider

_provider: Provider | None = None


def rank() -> int:
    return communicator.current().get_rank()


def world_size() -> int:
    return communicator.current().get_world_size()


def provider() -> Provider:
    """The provider of the run this party joined (:func:`mpcdp.adapter.session.start_party`): every kind of
    material (:mod:`.material`) is served by it."""
    if _provider is None:
        raise RuntimeError("no secure run on this process: a data party joins one (mpcdp.adapter.start_party) "
                           "before it asks for correlated randomness")
    return _provider


def use_provider(record: Provider | None) -> Provider | None:
    """Make ``record`` this party's provider (None: the party left); return the one it replaces."""
    global _provider
    previous, _provider = _provider, record
    return previous
