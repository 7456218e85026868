"""Noise and certified ε for full-batch distributed gradient perturbation: Jayaraman et al. 2018 and WD-DP
(paper 000), with one noise draw on the aggregate per step, or WD-DP's Algorithm 1 as written (local noise).

Every step each party j computes its average clipped gradient g_j = (1/n_j)·Σ_i clip_G(∇f_i(θ)) and the parties
release Σ_j w_j·g_j + u, u ~ N(0, σ²I). Replacing one record of party j moves g_j by at most 2G/n_j, so the
release has replace-one L2 sensitivity Δ = max_j 2G·w_j/n_j:

* ``jayaraman`` — plain averaging, w_j = 1/m: Δ = 2G/(m·n_min). A small party sets the noise for everyone.
* ``wd-dp`` — paper 000's weights w_j = n_j/n: Δ = 2G/n whatever the split (every record weighs 1/n). This is
  central DP-GD (Wang, Ye, Xu 2017) on the pooled data, computed by the parties together.
With equal splits (n_j = n/m) the two coincide exactly.

Calibration (``calibration``):
* ``certified`` (default) — the least σ whose exact ε is the target: T Gaussian releases compose to μ-GDP with
  μ = √T·Δ/σ (:mod:`mpcdp.accounting.certify`).
* ``paper`` — the σ each paper prescribes, then certified exactly (the reported ε is what that σ really gives):
  Jayaraman's public code, zCDP: σ = √(2T)·G/(m·n_min·(√(ln(1/δ) + ε) − √ln(1/δ))); WD-DP Theorem 1,
  σ² = c·G²·T·ln(1/δ)/(n²ε²) with c = 16 (the constant its moments-accountant proof yields).

WD-DP's Algorithm 1 *as written* (``local``): each party runs T noisy gradient steps on its own data,
θ ← θ − η(∇L_{D_j}(θ) + z), and releases θ_T^(j); the server averages them with weights n_j/n. The released
local model of party j is a post-processing of T Gaussian releases of sensitivity 2G/n_j, so party j's
records get μ_j = √T·(2G/n_j)/σ_j and the run certifies max_j ε(μ_j). With Theorem 1's σ (computed from the
total n) that is far above the target for every party, worst for the smallest; calibrating every σ_j to
2G/n_j (``certified``) is what makes the local variant meet the target.
"""

from __future__ import annotations

import dataclasses
import math

from mpcdp.accounting.certify import Certificate, calibrate, certify, check_delta, gdp_epsilon
from mpcdp.accounting.events import full_batch_gaussian_event
from mpcdp.errors import ConfigError
from mpcdp.validation import check_choice, check_integer, check_number

SCHEMES = ("jayaraman", "wd-dp")
CALIBRATIONS = ("certified", "paper")
THEOREM1_C = 16.0


def _check_sizes(sizes: tuple[int, ...]) -> None:
    if not sizes:
        raise ConfigError("`party_sizes` is empty: at least one party is needed")
    for j, n_j in enumerate(sizes):
        check_integer(n_j, "party_sizes", where=f" (party {j})")


def party_weights(scheme: str, sizes: tuple[int, ...]) -> tuple[float, ...]:
    """w_j that multiplies party j's average gradient: 1/m (``jayaraman``) or n_j/n (``wd-dp``)."""
    check_choice(scheme, "scheme", SCHEMES)
    _check_sizes(sizes)
    if scheme == "jayaraman":
        return tuple(1.0 / len(sizes) for _ in sizes)
    n = sum(sizes)
    return tuple(n_j / n for n_j in sizes)


def aggregation_sensitivity(scheme: str, sizes: tuple[int, ...], bound: float) -> float:
    """Replace-one L2 sensitivity of Σ_j w_j·g_j: max_j 2G·w_j/n_j."""
    check_number(bound, "c1", low=0, where=" (the gradient bound G)")
    return max(2 * bound * w / n_j for w, n_j in zip(party_weights(scheme, sizes), sizes))


def full_batch_noise_for(sensitivity: float, steps: int, epsilon: float, delta: float) -> tuple[float, Certificate]:
    """The least σ whose exact (μ-GDP) ε for T full-batch Gaussian releases of ``sensitivity`` is <= ``epsilon``."""
    check_delta(delta)
    check_integer(steps, "steps")
    # ε grows with μ = √T·Δ/σ: calibrate 1/μ, the noise per unit of √T·Δ
    inverse_mu = calibrate(lambda nu: gdp_epsilon(1 / nu, delta), epsilon, guess=1.0, rtol=1e-6)
    sigma = math.sqrt(steps) * sensitivity * inverse_mu
    return sigma, certify(full_batch_gaussian_event(sigma, sensitivity, steps), delta)


def jayaraman_code_sigma(sizes: tuple[int, ...], steps: int, bound: float, epsilon: float, delta: float) -> float:
    """σ of Jayaraman et al.'s public code (zCDP composition, converted with the classic bound)."""
    log_inv = math.log(1 / delta)
    return math.sqrt(2 * steps) * bound / (len(sizes) * min(sizes) * (math.sqrt(log_inv + epsilon)
                                                                          - math.sqrt(log_inv)))


def wddp_theorem1_sigma(n: int, steps: int, bound: float, epsilon: float, delta: float, c: float = THEOREM1_C) -> float:
    """σ of paper 000's Theorem 1: σ² = c·G²·T·ln(1/δ)/(n²ε²)."""
    return math.sqrt(c * bound**2 * steps * math.log(1 / delta)) / (n * epsilon)


@dataclasses.dataclass(frozen=True)
class AggregateNoise:
    """σ of the one noise draw per step, the sensitivity it covers, and the ε it certifies."""

    scheme: str
    calibration: str
    sigma: float
    sensitivity: float
    certificate: Certificate


def aggregate_noise_for(scheme: str, sizes: tuple[int, ...], steps: int, bound: float, epsilon: float,
                        delta: float, *, calibration: str = "certified") -> AggregateNoise:
    """σ for ``scheme`` with noise added once per step to the aggregate (inside the MPC), and its certificate."""
    check_choice(calibration, "calibration", CALIBRATIONS)
    check_delta(delta)
    check_number(epsilon, "epsilon", low=0)
    sensitivity = aggregation_sensitivity(scheme, sizes, bound)
    if calibration == "certified":
        sigma, certificate = full_batch_noise_for(sensitivity, steps, epsilon, delta)
    else:
        sigma = (jayaraman_code_sigma(sizes, steps, bound, epsilon, delta) if scheme == "jayaraman"
                 else wddp_theorem1_sigma(sum(sizes), steps, bound, epsilon, delta))
        certificate = certify(full_batch_gaussian_event(sigma, sensitivity, steps), delta)
    return AggregateNoise(scheme, calibration, sigma, sensitivity, certificate)


@dataclasses.dataclass(frozen=True)
class LocalNoise:
    """WD-DP as written: σ_j per party and the ε each party's released local model certifies; with ``releases``,
    each party's T noisy gradients on their grid (:mod:`mpcdp.accounting.released`), σ_j the released noise."""

    calibration: str
    sigmas: tuple[float, ...]
    certificates: tuple[Certificate, ...]
    releases: tuple | None = None

    @property
    def certificate(self) -> Certificate:
        """The run's guarantee: the worst party's."""
        return max(self.certificates, key=lambda c: c.epsilon)


def local_noise_for(sizes: tuple[int, ...], steps: int, bound: float, epsilon: float, delta: float, *,
                    calibration: str = "paper", dim: int | None = None) -> LocalNoise:
    """σ_j for WD-DP's local-noise Algorithm 1: Theorem 1's σ at every party (``paper``) or each σ_j calibrated
    to party j's own sensitivity 2G/n_j (``certified``); each party's certificate either way. With ``dim``: as
    released, each gradient rounded to its grid with discrete Gaussian noise (:func:`local_releases_for`)."""
    check_choice(calibration, "calibration", CALIBRATIONS)
    _check_sizes(sizes)
    check_delta(delta)
    if dim is not None:
        return local_releases_for(sizes, steps, bound, epsilon, delta, calibration=calibration, dim=dim)
    if calibration == "paper":
        sigma = wddp_theorem1_sigma(sum(sizes), steps, bound, epsilon, delta)
        sigmas = tuple(sigma for _ in sizes)
    else:
        sigmas = tuple(full_batch_noise_for(2 * bound / n_j, steps, epsilon, delta)[0] for n_j in sizes)
    certificates = tuple(certify(full_batch_gaussian_event(s, 2 * bound / n_j, steps), delta)
                         for s, n_j in zip(sigmas, sizes))
    return LocalNoise(calibration, sigmas, certificates)


def local_releases_for(sizes: tuple[int, ...], steps: int, bound: float, epsilon: float, delta: float, *,
                       calibration: str, dim: int) -> LocalNoise:
    """:func:`local_noise_for` as released: party j's T gradients (sensitivity 2G/n_j, d coordinates) each on its
    grid with integer sensitivity and discrete Gaussian noise. ``certified``: calibrated with the sampler's
    residual reserved; ``paper``: Theorem 1's σ, certified on the grid at the target δ (the residual on top)."""
    from mpcdp.accounting.grid import GridRelease
    from mpcdp.accounting.released import ReleaseKind, calibrate_on_grid, certify_on_grid

    releases, certificates = [], []
    for j, n_j in enumerate(sizes):
        sensitivity = 2 * bound / n_j
        kinds = (ReleaseKind(f"party {j}", sensitivity, steps),)

        def event_of(sigmas, sensitivity=sensitivity):
            return full_batch_gaussian_event(sigmas[0], sensitivity, steps)

        if calibration == "paper":
            sigma = wddp_theorem1_sigma(sum(sizes), steps, bound, epsilon, delta)
            release = GridRelease(sensitivity, dim, sigma / sensitivity)
            certificate = certify_on_grid(kinds, (release,), delta, event_of)
        else:
            def calibrate(e: float, d: float, s: float = sensitivity) -> tuple[float]:
                return (full_batch_noise_for(s, steps, e, d)[0],)

            noise = calibrate_on_grid(kinds, dim, epsilon, delta, event_of=event_of, calibrate=calibrate)
            release, certificate = noise.releases[0], noise.certificate
        releases.append(release)
        certificates.append(certificate)
    return LocalNoise(calibration, tuple(r.sigma for r in releases), tuple(certificates), tuple(releases))
