"""Adding to and reading from mpcdp's registries (algorithms, models, mechanisms, providers): each is a
plain ``dict`` from name to record; :func:`add` and :func:`find` are the only way records go in and come out by
name, and :func:`check_members` checks a record against its registry's written ``typing.Protocol``."""

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


def members(interface: type) -> tuple[str, ...]:
    """Every member of a ``typing.Protocol`` ``interface``: its annotated attributes, then its public properties
    (read-only attributes) and methods, in the order written."""
    import inspect

    return (*getattr(interface, "__annotations__", {}),
            *(name for name, value in vars(interface).items()
              if (inspect.isfunction(value) or isinstance(value, property)) and not name.startswith("_")))


def check_members(record, interface: type, types: dict[str, type], kind: str) -> None:
    """Refuse ``record`` unless it has every member of ``interface``: the attributes in ``types`` of that type,
    every other member callable (a ConfigError naming the record and the member)."""
    label = repr(getattr(record, "name", type(record).__name__))
    missing = [m for m in members(interface) if not hasattr(record, m)]
    if missing:
        raise ConfigError(f"a {kind} must have every member of {interface.__module__}.{interface.__name__}: {label} "
                          f"lacks {', '.join(f'`{m}`' for m in missing)}")
    for member in members(interface):
        value = getattr(record, member)
        kind_of = types.get(member)
        if kind_of is not None and (not isinstance(value, kind_of) or (kind_of is not bool and isinstance(value, bool))):
            raise ConfigError(f"a {kind}'s `{member}` must be a {kind_of.__name__}: {label} has {value!r}")
        if kind_of is None and not callable(value):
            raise ConfigError(f"a {kind}'s `{member}` must be callable: {label} has {value!r}")
