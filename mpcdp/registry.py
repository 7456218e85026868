"""Adding to and reading from mpcdp's registries (algorithms, models, training noise modes, samplers): each is a
plain ``dict`` from name to record; these two functions are the only way records go in and come out by name."""

from __future__ import annotations

from mpcdp.errors import ConfigError


def add(table: dict, name: str, record, kind: str):
    """Put ``record`` under ``name`` in ``table`` (a new name only; ``kind`` names the registry in the error)."""
    if name in table:
        raise ConfigError(f"a {kind} named {name!r} is already registered")
    table[name] = record
    return record


def find(table: dict, name, field: str):
    """The record under ``name``, or a ConfigError naming the protocol ``field``, the known names and ``name``."""
    if name not in table:
        raise ConfigError(f"`{field}` must be one of {sorted(table)}. Found {name!r}.")
    return table[name]
