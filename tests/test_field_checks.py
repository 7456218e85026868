"""Field checks go through :mod:`mpcdp.validation`, so every refusal of a bad number, integer, flag, choice or table
reads the same: the field, the rule and the value.

The rule the walk enforces, read from the syntax tree of every module under mpcdp/ but validation.py: no ``if``
whose test calls ``isinstance(value, T)`` with ``T`` a numeric or bool type (``int``, ``float``, ``bool``,
``numbers.Real``/``Integral``/``Number``, ``np.integer``/``np.floating``, or a tuple holding one) raises a
:class:`~mpcdp.errors.ConfigError` in its body: that is a hand-written field check, and
:func:`~mpcdp.validation.check_number`, :func:`~mpcdp.validation.check_integer` or
:func:`~mpcdp.validation.check_bool` says it. Checks of hostile bytes from peers raise ProtocolViolation and are
not field checks; they are not matched. A deliberate exception is listed in :data:`EXCEPTIONS` with its reason; a
listed one that no longer matches fails the test, so the list cannot go stale."""

from __future__ import annotations

import ast
import math
import pathlib

import numpy as np
import pytest

from mpcdp.errors import ConfigError
from mpcdp.validation import (check_bool, check_choice, check_integer, check_number, check_string, check_table,
                              read_protocol)

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mpcdp"
NUMERIC_TYPES = {"int", "float", "bool", "complex", "Real", "Integral", "Number", "integer", "floating"}

# "path:function" (path relative to the repository root) -> why its numeric-type test may stay hand-written.
_REGISTRY = ("a registered record's members checked against its interface's types: the error names the record "
             "and the member, and the type comes from a table, not a configuration field")
EXCEPTIONS: dict[str, str] = {
    "mpcdp/registry.py:check_members": _REGISTRY,
    "mpcdp/providers.py:register": _REGISTRY,
    "mpcdp/data/party_file.py:_table": ("`features` is told apart by its kind (column names for a table file, a "
                                        "dimension for svmlight): an int here is the wrong kind for the format"),
    "mpcdp/data/party_file.py:_svmlight": ("`features` for svmlight is the dimension: a list of column names is the "
                                           "wrong kind for the format, refused by its kind as in `_table`"),
}


def _numeric_type(node: ast.AST) -> bool:
    if isinstance(node, ast.Tuple):
        return any(_numeric_type(element) for element in node.elts)
    if isinstance(node, ast.Name):
        return node.id in NUMERIC_TYPES
    return isinstance(node, ast.Attribute) and node.attr in NUMERIC_TYPES


def _numeric_isinstance(test: ast.AST) -> bool:
    return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance"
               and len(node.args) == 2 and _numeric_type(node.args[1]) for node in ast.walk(test))


def _raises_config_error(body: list[ast.stmt]) -> bool:
    for statement in body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Raise) and node.exc is not None:
                called = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                if isinstance(called, ast.Name) and called.id == "ConfigError":
                    return True
    return False


def hand_written_checks(source: str, relative: str) -> list[str]:
    """"path:function" (a method as Class.method; "path:<module>" at top level) of every ``if`` in ``source`` that
    tests a value's numeric type and raises a ConfigError, once per ``if``."""
    found: list[str] = []

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = where
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = child.name if where == "<module>" else f"{where}.{child.name}"
            elif isinstance(child, ast.If) and _numeric_isinstance(child.test) and _raises_config_error(child.body):
                found.append(f"{relative}:{where}")
            visit(child, name)

    visit(ast.parse(source, filename=relative), "<module>")
    return found


def package_checks() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative != "mpcdp/validation.py":
            found += hand_written_checks(path.read_text(encoding="utf-8"), relative)
    return found


def test_the_rule_catches_a_hand_written_check():
    clone = ("def f(steps):\n"
             "    if not (isinstance(steps, int) and not isinstance(steps, bool) and steps >= 1):\n"
             "        raise ConfigError(f'`steps` must be an integer >= 1. Found {steps!r}.')\n"
             "    if isinstance(steps, str):\n"
             "        raise ConfigError('not numeric: not a field check of this rule')\n"
             "    if not isinstance(steps, (numbers.Real, np.integer)):\n"
             "        raise ProtocolViolation('a peer sent a bad count', party=1)\n")
    assert hand_written_checks(clone, "x.py") == ["x.py:f"]


def test_no_hand_written_numeric_field_check_outside_validation():
    found = set(package_checks())
    stale = sorted(set(EXCEPTIONS) - set(found))
    assert not stale, f"listed exceptions that no longer match: {stale}"
    unlisted = sorted(set(found) - set(EXCEPTIONS))
    assert not unlisted, f"hand-written numeric field checks (use mpcdp.validation): {unlisted}"


@pytest.mark.parametrize("call, message", [
    (lambda: check_number(0, "eta", low=0), "`eta` must be a finite number > 0. Found 0."),
    (lambda: check_number(True, "eta", low=0), "`eta` must be a finite number > 0. Found True."),
    (lambda: check_number("1", "eta"), "`eta` must be a finite number. Found '1'."),
    (lambda: check_number(math.inf, "eta", low=0), "`eta` must be a finite number > 0. Found inf."),
    (lambda: check_number(math.nan, "epsilons", low=0, infinite=True, where=" (owner 2)", note="inf: no privacy"),
     "`epsilons` (owner 2) must be a number > 0 (inf: no privacy). Found nan."),
    (lambda: check_number(1.0, "delta", low=0, high=1), "`delta` must be a finite number in (0, 1). Found 1.0."),
    (lambda: check_number(-1, "lam", low=0, low_open=False), "`lam` must be a finite number >= 0. Found -1."),
    (lambda: check_number(2, "rate", high=1, high_open=False), "`rate` must be a finite number <= 1. Found 2."),
    (lambda: check_integer(3.0, "steps"), "`steps` must be an integer >= 1. Found 3.0."),
    (lambda: check_integer(False, "seed", minimum=0), "`seed` must be an integer >= 0. Found False."),
    (lambda: check_integer(40, "precision_bits", minimum=8, maximum=24),
     "`precision_bits` must be an integer in [8, 24]. Found 40."),
    (lambda: check_bool(1, "normalize_rows"), "`normalize_rows` must be a bool (true or false). Found 1."),
    (lambda: check_bool("yes", "reproducible"), "`reproducible` must be a bool (true or false). Found 'yes'."),
    (lambda: check_choice(True, "algorithm", (1, 2)), "`algorithm` must be one of [1, 2]. Found True."),
    (lambda: check_choice("x", "mode", {"dgauss": 0, "rou": 1}, where=" in [noise]"),
     "`mode` in [noise] must be one of ['dgauss', 'rou']. Found 'x'."),
    (lambda: check_string(3, "dataset", note="a dataset name"), "`dataset` must be a string (a dataset name). Found 3."),
    (lambda: check_table(3, "training", where=" in 'p.toml'"), "`training` in 'p.toml' must be a table. Found 3."),
])
def test_each_helper_names_the_field_the_rule_and_the_value(call, message):
    with pytest.raises(ConfigError) as info:
        call()
    assert str(info.value) == message


def test_the_helpers_return_the_value_they_accept():
    assert check_number(3, "x") == 3.0 and isinstance(check_number(3, "x"), float)
    assert check_number(math.inf, "epsilon", low=0, infinite=True) == math.inf
    assert check_integer(np.int64(5), "sizes") == 5 and type(check_integer(np.int64(5), "sizes")) is int
    assert check_bool(False, "flag") is False
    assert check_choice(2, "algorithm", (1, 2)) == 2 and check_choice("rou", "mode", {"rou": 1}) == "rou"
    assert check_table({"a": 1}, "training") == {"a": 1} and check_string("a9a", "dataset") == "a9a"


def test_a_protocol_table_that_is_not_a_table_is_refused(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text("training = 3\n")
    with pytest.raises(ConfigError, match=r"`training` in '.*p\.toml' must be a table\. Found 3\."):
        read_protocol(str(path))
