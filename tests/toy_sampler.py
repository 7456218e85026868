"""A toy noise sampler in one file, registered when imported (`mpcdp --plugin toy_sampler`): the exact discrete
Gaussian under another name, a comparison-only record of the one registry. Used by tests/test_registry.py to name
a plugin's sampler on the command line."""

from __future__ import annotations

from mpcdp.learning import mechanisms

mechanisms.register(mechanisms.MechanismRecord(
    name="toy-dgauss", id="toy-dgauss/1", summary="the discrete Gaussian, registered by a plugin",
    draw=mechanisms.MECHANISMS["dgauss"].draw, training=False))
