"""A toy noise sampler in one file, registered when imported (`mpcdp --plugin toy_sampler`): the exact discrete
Gaussian under another name. Used by tests/test_registry.py to name a plugin's sampler on the command line."""

from __future__ import annotations

from mpcdp.noise import modes

modes.register(modes.Sampler("toy-dgauss", "the discrete Gaussian, registered by a plugin", modes.SAMPLERS["dgauss"].draw))
