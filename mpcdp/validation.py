"""Field checks shared by the frozen configuration dataclasses (messages name the field and echo the value)."""

from __future__ import annotations

import math

from mpcdp.errors import ConfigError


def require_integers(obj, names: tuple[str, ...], *, minimum: int = 1) -> None:
    """Every named field of ``obj`` is an int >= ``minimum``."""
    for name in names:
        value = getattr(obj, name)
        if not (isinstance(value, int) and not isinstance(value, bool) and value >= minimum):
            raise ConfigError(f"`{name}` must be an integer >= {minimum}. Found {value!r}.")


def require_positive(obj, names: tuple[str, ...]) -> None:
    """Every named field of ``obj`` is a finite number > 0."""
    for name in names:
        value = getattr(obj, name)
        if not (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
                and value > 0):
            raise ConfigError(f"`{name}` must be a finite number > 0. Found {value!r}.")
