"""Noise calibration for DP-SRM / DDP-SRM against the certifying accountant, both directions."""

from __future__ import annotations

import dataclasses
import warnings

from mpcdp.accounting.certify import Certificate, calibrate_event, certify, check_delta
from mpcdp.accounting.events import DpSrmSetting, dpsrm_event


@dataclasses.dataclass(frozen=True)
class DpSrmNoise:
    """Calibrated noise: σ0 for release 0, σ for releases 1..T, and the certificate they earn."""

    sigma0: float
    sigma: float
    nu: float
    certificate: Certificate


def _check(setting: DpSrmSetting, delta: float) -> None:
    check_delta(delta)
    smallest = min(setting.n)
    if delta >= 1 / smallest:
        warnings.warn(f"`delta` = {delta} is not below 1/n = {1 / smallest:.3g}: such a δ allows releasing a "
                      f"record outright", UserWarning, stacklevel=3)


def epsilon_for(setting: DpSrmSetting, sigma0: float, sigma: float, delta: float) -> Certificate:
    """The certified ε of a run with noise (σ0, σ)."""
    _check(setting, delta)
    return certify(dpsrm_event(setting, sigma0, sigma), delta)


def noise_for(setting: DpSrmSetting, epsilon: float, delta: float, *, with_rdp: bool = True) -> DpSrmNoise:
    """The least noise (σ0, σ) in the family σ0/σ = C1/C_eff whose certified ε is at most ``epsilon``.
    ``with_rdp`` False: the certificate without the RDP ε printed beside it (for callers that keep only σ)."""
    _check(setting, delta)

    nu, certificate = calibrate_event(lambda v: dpsrm_event(setting, *setting.sigmas_for(v)), epsilon, delta,
                                      guess=100.0, rtol=1e-5, with_rdp=with_rdp)
    sigma0, sigma = setting.sigmas_for(nu)
    return DpSrmNoise(sigma0, sigma, nu, certificate)
