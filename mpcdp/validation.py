"""The one set of field checks: a number in a range (:func:`check_number`), an integer (:func:`check_integer`), a
bool (:func:`check_bool`), a string (:func:`check_string`), one of a set of choices (:func:`check_choice`), a
protocol table (:func:`check_table`, :func:`read_protocol`). Every refusal is a :class:`~mpcdp.errors.ConfigError`
that names the field, the rule and the value it found, in one wording: ``"`field` must be RULE. Found VALUE."``

STYLE: a module that takes a configuration field checks it here rather than by hand (``tests/test_field_checks.py``
walks the package for hand-written numeric-type checks that raise a ConfigError)."""

from __future__ import annotations

import math
import numbers

from mpcdp.errors import ConfigError


def require_integers(obj, names: tuple[str, ...], *, minimum: int = 1) -> None:
    """Every named field of ``obj`` is an int >= ``minimum`` (:func:`check_integer`)."""
    for name in names:
        check_integer(getattr(obj, name), name, minimum=minimum)


def require_positive(obj, names: tuple[str, ...]) -> None:
    """Every named field of ``obj`` is a finite number > 0 (:func:`check_number`)."""
    for name in names:
        check_number(getattr(obj, name), name, low=0)


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
        if table in protocol:
            check_table(protocol[table], table, where=f" in {str(path)!r}")
    return protocol


def _said(note: str) -> str:
    return f" ({note})" if note else ""


def _interval(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    """The rule of an interval as a message states it: ``> 0``, ``<= 1``, ``in (0, 1]`` or nothing."""
    if low is not None and high is not None:
        return f" in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    if low is not None:
        return f" >{'' if low_open else '='} {low:g}"
    if high is not None:
        return f" <{'' if high_open else '='} {high:g}"
    return ""


def check_number(value, field: str, *, low: float | None = None, high: float | None = None,
                 low_open: bool = True, high_open: bool = True, infinite: bool = False, where: str = "",
                 note: str = "") -> float:
    """``value`` as a float: a real number (not a bool, a string or NaN; finite unless ``infinite``) inside the
    stated interval (``low``/``high``, each open unless ``low_open``/``high_open`` is False). The error names
    ``field`` (``where``: which entry, e.g. `` (owner 2)``), the rule (with ``note``, what the field means or
    how to leave it out) and the value."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and not math.isnan(value) and (
        infinite or math.isfinite(value))
    if ok and low is not None:
        ok = value > low if low_open else value >= low
    if ok and high is not None:
        ok = value < high if high_open else value <= high
    if not ok:
        kind = "a number" if infinite else "a finite number"
        raise ConfigError(f"`{field}`{where} must be {kind}{_interval(low, high, low_open, high_open)}{_said(note)}. "
                          f"Found {value!r}.")
    return float(value)


def check_integer(value, field: str, *, minimum: int = 1, maximum: int | None = None, maximum_name: str = "",
                  where: str = "", note: str = "") -> int:
    """``value`` as an int in [``minimum``, ``maximum``] (no upper end when None); a bool, a float or a string
    is refused; a numpy integer is taken. The error names ``field`` (with ``where``), the rule (the upper end
    shown as ``maximum_name = maximum`` when it is named, e.g. ``T = 8``; with ``note``) and the value."""
    if not (isinstance(value, numbers.Integral) and not isinstance(value, bool) and int(value) >= minimum
            and (maximum is None or int(value) <= maximum)):
        upper = f"{maximum_name} = {maximum}" if maximum_name else f"{maximum}"
        rule = f">= {minimum}" if maximum is None else f"in [{minimum}, {upper}]"
        raise ConfigError(f"`{field}`{where} must be an integer {rule}{_said(note)}. Found {value!r}.")
    return int(value)


def check_bool(value, field: str) -> bool:
    """``value`` if it is a bool (TOML ``true``/``false``); an int, a string or None is refused, naming ``field``
    and the value."""
    if not isinstance(value, bool):
        raise ConfigError(f"`{field}` must be a bool (true or false). Found {value!r}.")
    return value


def check_string(value, field: str, *, note: str = "") -> str:
    """``value`` if it is a string (a name, a path), else a ConfigError naming ``field`` (with ``note``, what the
    string names) and the value."""
    if not isinstance(value, str):
        raise ConfigError(f"`{field}` must be a string{_said(note)}. Found {value!r}.")
    return value


def check_choice(value, field: str, allowed, *, where: str = "", note: str = ""):
    """``value`` if it is one of ``allowed`` (names, or numbers such as an algorithm's 1 and 2) and of the same
    kind (``True`` is not the choice ``1``); else a ConfigError naming the field, the choices and the value."""
    choices = list(allowed)
    ok = any(isinstance(value, type(choice)) and isinstance(value, bool) == isinstance(choice, bool)
             and value == choice for choice in choices)
    if not ok:
        raise ConfigError(f"`{field}`{where} must be one of {choices}{_said(note)}. Found {value!r}.")
    return value


def check_table(value, field: str, *, where: str = "") -> dict:
    """``value`` if it is a table (a dict: what TOML makes of ``[field]``), else a ConfigError naming ``field``
    (``where`` says where it was read, e.g. `` in 'p.toml'``) and the value."""
    if not isinstance(value, dict):
        raise ConfigError(f"`{field}`{where} must be a table. Found {value!r}.")
    return value
