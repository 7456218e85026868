"""Noise calibration for the baselines, certified like DP-SRM's (see :mod:`mpcdp.accounting.certify`).

DP-SGD: T releases of a batch sampled without replacement, replace-one sensitivity 2C/B (B the combined
batch), the party with the largest rate b_j/n_j deciding. DP-GD: T full-batch Gaussian releases with
sensitivity 2C/n, composed exactly (μ-GDP).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import dp_accounting

from mpcdp.accounting.certify import Certificate, calibrate_event, check_delta
from mpcdp.accounting.distributed import full_batch_noise_for


def dpsgd_event(n: tuple[int, ...], batch: tuple[int, ...], steps: int, c: float, sigma: float):
    import dp_accounting

    j = max(range(len(n)), key=lambda i: batch[i] / n[i])
    z = sigma * sum(batch) / (2 * c)
    step = dp_accounting.SampledWithoutReplacementDpEvent(n[j], batch[j], dp_accounting.GaussianDpEvent(z))
    return dp_accounting.SelfComposedDpEvent(step, steps)


def dpsgd_noise_for(n: tuple[int, ...], batch: tuple[int, ...], steps: int, c: float, epsilon: float,
                    delta: float) -> tuple[float, Certificate]:
    """The least σ whose certified ε for DP-SGD is at most ``epsilon``."""
    check_delta(delta)
    scale = 2 * c / sum(batch)

    z, certificate = calibrate_event(lambda v: dpsgd_event(n, batch, steps, c, v * scale), epsilon, delta,
                                     guess=1.0, rtol=1e-5)
    return z * scale, certificate


def dpgd_noise_for(n_total: int, steps: int, c: float, epsilon: float, delta: float) -> tuple[float, Certificate]:
    """The least σ whose exact (μ-GDP) ε for T full-batch Gaussian steps is at most ``epsilon``."""
    return full_batch_noise_for(2 * c / n_total, steps, epsilon, delta)
