"""A user's own ``nn.Module`` named on the command line: ``--model FILE.py:Class`` with ``--model-arg NAME=VALUE``
(its constructor's keyword arguments) and ``--classes C``, so that ``mpcdp train``, ``mpcdp compare``, the dry run
and ``mpcdp party`` train the same module as ``mpcdp.train(module, ...)``.

The file is code the user chose to run on their own host, as a ``--plugin`` is: its folder goes on ``sys.path``
and it is imported under its file name, so the party processes of a local run (which take this process's
``sys.path``) import the same class when they receive the module. Nothing from a peer names a file.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import pathlib
import sys
from typing import Any

from mpcdp.errors import ConfigError


def add_module_options(parser: argparse.ArgumentParser, *, model_option: bool = True) -> None:
    """``--model FILE.py:Class`` (unless the command has its own ``--model``), ``--model-arg``, ``--classes``."""
    if model_option:
        parser.add_argument("--model", default=None, metavar="FILE.py:CLASS",
                            help="with --data: train your own nn.Module, class CLASS of FILE.py (constructed with "
                                 "the --model-arg keywords), as mpcdp.train does; default: the protocol's model")
    parser.add_argument("--model-arg", action="append", default=[], metavar="NAME=VALUE",
                        help="with --model FILE.py:CLASS: a keyword of its constructor (VALUE a Python literal, "
                             "else a string); repeat for several")
    parser.add_argument("--classes", type=int, default=None,
                        help="with --model FILE.py:CLASS: the number of classes (default: its output width)")


def is_module_spec(text: Any) -> bool:
    """Whether ``text`` names a class in a Python file (``FILE.py:Class``) rather than an mpcdp model."""
    return isinstance(text, str) and ".py:" in text


def user_module(spec: str, arguments: list[str]) -> Any:
    """The ``nn.Module`` that ``spec`` (``FILE.py:Class``) names, constructed with ``arguments`` (``NAME=VALUE``).

    Raises:
        ConfigError: a malformed spec or argument, a file that does not exist or does not import, no such class,
            a class that is not an ``nn.Module``, or a constructor that refuses the arguments (naming each).
    """
    from torch import nn

    path_text, _, class_name = spec.rpartition(":")
    if not path_text.endswith(".py") or not class_name.isidentifier():
        raise ConfigError(f"`--model` must be FILE.py:Class. Found {spec!r}.")
    path = pathlib.Path(path_text).expanduser().resolve()
    if not path.is_file():
        raise ConfigError(f"`--model` file {path_text!r} does not exist.")
    module = _import_file(path)
    cls = getattr(module, class_name, None)
    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        raise ConfigError(f"`--model` {spec!r}: {path.name} has no nn.Module class {class_name!r}.")
    kwargs = dict(_keyword(text) for text in arguments)
    try:
        return cls(**kwargs)
    except Exception as exc:  # noqa: BLE001 - the user's constructor: say what it said
        raise ConfigError(f"`--model` {spec!r} cannot be constructed with {kwargs}: {type(exc).__name__}: "
                          f"{str(exc)[:300]}") from None


def _import_file(path: pathlib.Path) -> Any:
    """Import ``path`` under its file name with its folder on ``sys.path`` (refusing a name that another module
    already holds)."""
    name = path.stem
    if not name.isidentifier():
        raise ConfigError(f"`--model` file {path.name!r}: its name must be a Python identifier (it is imported).")
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        module = importlib.import_module(name)
    except Exception as exc:  # noqa: BLE001 - the user's file: say what it said
        raise ConfigError(f"`--model` file {path.name!r} does not import: {type(exc).__name__}: {exc}") from None
    found = pathlib.Path(getattr(module, "__file__", "") or "").resolve()
    if found != path:
        raise ConfigError(f"`--model` file {path.name!r}: the name {name!r} is already another module's ({found}); "
                          f"rename the file.")
    return module


def _keyword(text: str) -> tuple[str, Any]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip().isidentifier():
        raise ConfigError(f"`--model-arg` must be NAME=VALUE. Found {text!r}.")
    try:
        return name.strip(), ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return name.strip(), value
