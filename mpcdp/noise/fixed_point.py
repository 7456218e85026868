"""The fixed-point grid of a release: which resolution 2^-p a noise level gets, and the deterministic
nearest rounding of a party's term to it. What the rounding does to the sensitivity is accounted in
:mod:`mpcdp.accounting.grid`; this module only fixes the grid so that the samplers and the protocols below the
accounting can use it.
"""

from __future__ import annotations

import math

from mpcdp.errors import ConfigError
from mpcdp.validation import check_number

SIGMA_UNITS = 2.0**21  # the noise's σ in grid units that :func:`release_precision` aims for
PRECISION_MAX = 46  # 2^(62−46)/m = 65536/m is then the largest |term| a party may input


def release_precision(sigma: float) -> int:
    """The grid 2^-p of a release whose noise has standard deviation ``sigma``: σ·2^p within a factor √2
    of 2^21 units.

    Raises:
        ConfigError: σ so small that p would exceed 46 (the terms would leave the ring), or so large that p
            would be negative.
    """
    check_number(sigma, "sigma", low=0, where=" of a release")
    p = round(math.log2(SIGMA_UNITS / sigma))
    if not 0 <= p <= PRECISION_MAX:
        raise ConfigError(f"`sigma` {sigma:.4g} needs a release grid of 2^-{p}; the grid must lie between 2^0 and "
                          f"2^-{PRECISION_MAX} (σ between {SIGMA_UNITS * 2.0**-PRECISION_MAX:.3g} and "
                          f"{SIGMA_UNITS:.3g})")
    return p


def encode(values, precision: int):
    """Each coordinate rounded to the nearest multiple of 2^-p, as int64 grid units (ties to even): the
    deterministic rounding that :func:`mpcdp.accounting.grid.integer_sensitivity` accounts for."""
    import torch

    return torch.round(torch.as_tensor(values, dtype=torch.float64) * 2.0**precision).to(torch.int64)
