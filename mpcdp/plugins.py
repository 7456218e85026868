"""Modules that extend mpcdp's registries (algorithms, models, noise modes), imported by name.

``mpcdp --plugin MODULE`` imports MODULE before the command runs and records it in the environment variable
``MPCDP_PLUGINS``, so that every party process the run starts (which inherits the environment) imports it
too before it touches a registry. A plugin is code the user chose to run on their own host; nothing from a
peer names one.
"""

from __future__ import annotations

import importlib
import os

from mpcdp.errors import ConfigError

ENVIRONMENT = "MPCDP_PLUGINS"


def _listed() -> list[str]:
    return [name for name in os.environ.get(ENVIRONMENT, "").split(",") if name]


def load(modules: list[str]) -> None:
    """Import ``modules`` and add them to :data:`ENVIRONMENT` for the processes started from here."""
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise ConfigError(f"`--plugin` {name!r} cannot be imported: {exc}") from None
    listed = _listed()
    os.environ[ENVIRONMENT] = ",".join(listed + [name for name in modules if name not in listed])


def load_from_environment() -> None:
    """Import every module :data:`ENVIRONMENT` names (in a party process, before it runs its job)."""
    load(_listed())
