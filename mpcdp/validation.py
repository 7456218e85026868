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


def read_protocol(path: str, tables: tuple[str, ...] = ()) -> dict:
    """A protocol file as a dict; a missing, unreadable or malformed file, a missing table of ``tables`` or any
    of the usual tables that is not a table (``training = 3``) is a ConfigError naming it."""
    import tomllib

    try:
        with open(path, "rb") as fh:
            protocol = tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"protocol file {str(path)!r} does not exist.") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"protocol file {str(path)!r} cannot be read: {error}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"protocol {str(path)!r} is not valid TOML: {error}") from None
    for table in tables:
        if table not in protocol:
            raise ConfigError(f"protocol {str(path)!r} lacks the [{table}] table")
    for table in ("training", "privacy", "owners", "run", "deepq", "mpc", "sweep", *tables):
        if table in protocol and not isinstance(protocol[table], dict):
            raise ConfigError(f"`{table}` in {str(path)!r} must be a table. Found {protocol[table]!r}.")
    return protocol


def check_number(value, field: str, *, low: float | None = None, high: float | None = None,
                 low_open: bool = True, high_open: bool = True) -> float:
    """``value`` as a float: a finite real number (not a bool or a string) inside the stated interval."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if ok and low is not None:
        ok = value > low if low_open else value >= low
    if ok and high is not None:
        ok = value < high if high_open else value <= high
    if not ok:
        lo = "" if low is None else ("(" if low_open else "[") + f"{low:g}"
        hi = "" if high is None else f"{high:g}" + (")" if high_open else "]")
        rule = (f"in {lo}, {hi}" if low is not None and high is not None
                else f"> {low:g}" if low is not None and low_open else f">= {low:g}" if low is not None
                else f"< {high:g}")
        raise ConfigError(f"`{field}` must be a finite number {rule}. Found {value!r}.")
    return float(value)


def check_integer(value, field: str, *, minimum: int = 1) -> int:
    """``value`` as an int >= ``minimum`` (a bool, a float or a string is refused)."""
    if not (isinstance(value, int) and not isinstance(value, bool) and value >= minimum):
        raise ConfigError(f"`{field}` must be an integer >= {minimum}. Found {value!r}.")
    return value


def check_choice(value, field: str, allowed) -> str:
    """``value`` if it is one of ``allowed``, else a ConfigError naming the field, the choices and the value."""
    if not isinstance(value, str) or value not in allowed:
        raise ConfigError(f"`{field}` must be one of {list(allowed)}. Found {value!r}.")
    return value
