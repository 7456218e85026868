"""Modules that extend mpcdp's registries (algorithms, models, noise modes), imported by name.

``mpcdp --plugin MODULE`` imports MODULE before the command runs and records it (:func:`loaded`); the run's
:class:`~mpcdp.runtime.endpoint.RunSettings` carries the list to every party process it starts, which imports
them before it touches a registry. ``MPCDP_PLUGINS`` (comma-separated) names plugins from the user's
environment, for processes started on their own. A plugin is code the user chose to run on their own host;
nothing from a peer names one.
"""

from __future__ import annotations

import importlib
import os

from mpcdp.errors import ConfigError

ENVIRONMENT = "MPCDP_PLUGINS"


_LOADED: list[str] = []


def listed(environ=None) -> list[str]:
    """The modules this process loaded (:func:`load`), then those the environment's :data:`ENVIRONMENT` names."""
    env = os.environ if environ is None else environ
    return list(dict.fromkeys([*_LOADED, *(name for name in env.get(ENVIRONMENT, "").split(",") if name)]))


def load(modules) -> None:
    """Import ``modules`` and record them, for the processes started from here (:func:`listed`)."""
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise ConfigError(f"`--plugin` {name!r} cannot be imported: {exc}") from None
        if name not in _LOADED:
            _LOADED.append(name)
