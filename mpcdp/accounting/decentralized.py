"""Paper 004's accounting (Jin, He, Dai, decentralized DP without-replacement SGD): the sensitivity of one node's
update (Lemma 4, eq. (6); Lemma 5 for Algorithm 2), the paper's noise (Theorem 1, eq. (4)), and the certificate
of the released bits: dp-accounting's PLD accountant over the Gaussian releases one example reaches, plus the
sampler's residual over every noise coordinate a run opens (:mod:`mpcdp.accounting.grid`).

The mechanism and the argument are in :mod:`mpcdp.learning.decentralized`; this module only computes.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import dp_accounting
    from dp_accounting import pld, rdp

from mpcdp.accounting.grid import SIGMA_UNITS, Residual, eta_bound, reserve
from mpcdp.errors import ConfigError
from mpcdp.noise.discrete_gaussian import plan_for
from mpcdp.validation import check_choice, check_integer, check_number

BUDGETS = ("model", "per-classifier")
CALIBRATIONS = ("paper", "accountant")


def lipschitz_constant(lam: float = 0.0, radius: float | None = None) -> float:
    """L of the loss (2) on unit-norm rows (§II, Example): 1 if λ = 0, else 1 + λR (R = 1/λ when not given)."""
    check_number(lam, "lam", low=0, low_open=False, where=" (λ)")
    if lam == 0:
        return 1.0
    radius = 1.0 / lam if radius is None else radius
    check_number(radius, "radius", low=0)
    return 1.0 + lam * radius


def update_sensitivity(*, eta: float, lipschitz: float, batch_size: int, classes: int = 1) -> float:
    """Δ = √classes·2ηL/b: L2 distance between the steps on two neighbouring mini-batches (Lemma 4, eq. (6));
    ``classes`` > 1 for a joint budget over that many one-vs-all columns."""
    check_number(eta, "eta", low=0)
    check_number(lipschitz, "lipschitz", low=0)
    check_integer(batch_size, "batch_size")
    check_integer(classes, "classes")
    return math.sqrt(classes) * 2.0 * eta * lipschitz / batch_size


def gaussian_c(delta: float) -> float:
    """c = √(2 ln(1.25/δ)) of Theorem 1."""
    check_number(delta, "delta", low=0, high=1)
    return math.sqrt(2.0 * math.log(1.25 / delta))


def step_noise_std(*, epsilon: float, delta: float, eta: float, lipschitz: float, batch_size: int,
                   classes: int = 1) -> float:
    """σ = c·Δ/ε (eq. (4) with Δ of eq. (6)): the per-coordinate std of the released step noise η_t·N_t."""
    check_number(epsilon, "epsilon", low=0)
    return gaussian_c(delta) * update_sensitivity(eta=eta, lipschitz=lipschitz, batch_size=batch_size,
                                                  classes=classes) / epsilon


def gradient_noise_std(*, epsilon: float, delta: float, lipschitz: float, batch_size: int, classes: int = 1) -> float:
    """Per-coordinate std of N_t in eq. (5): σ/η_t = √classes·2·L·c/(b·ε)."""
    return step_noise_std(epsilon=epsilon, delta=delta, eta=1.0, lipschitz=lipschitz, batch_size=batch_size,
                          classes=classes)


@dataclasses.dataclass(frozen=True)
class PrivacyCertificate:
    """dp-accounting's certificate for one example: ``uses`` Gaussian releases with ``noise_multiplier`` = σ/Δ.

    ``epsilon`` (PLD accountant, pessimistic discretisation) is the guarantee; ``epsilon_rdp`` is the looser RDP
    figure. ``epsilon_all_classes`` is ε of the K-model release when the budget is per classifier (else = epsilon).
    """

    epsilon: float
    epsilon_rdp: float
    delta: float
    noise_multiplier: float
    uses: int
    target_epsilon: float
    epsilon_all_classes: float
    epsilon_residual: float = 0.0
    delta_truncation: float = 0.0
    delta_residual: float = 0.0
    noise_coordinates: int = 0

    @property
    def epsilon_released(self) -> float:
        """The guarantee of the released bits: the accountant's ε plus the sampler's residual."""
        return self.epsilon + self.epsilon_residual

    @property
    def delta_released(self) -> float:
        return self.delta + self.delta_truncation + self.delta_residual

    @property
    def certified(self) -> bool:
        return self.epsilon_released <= self.target_epsilon


def _pld_epsilon(noise_multiplier: float, uses: int, delta: float) -> float:
    # Noise multiplier σ/Δ with Δ the *replace-one* distance: the pair analysed, N(0, σ²) vs N(Δ, σ²), is exactly
    # the replace-one pair of Lemma 4; the relation label only tells the accountant to take Δ as given.
    from dp_accounting import pld
    import dp_accounting

    accountant = pld.PLDAccountant(dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE)
    accountant.compose(dp_accounting.GaussianDpEvent(noise_multiplier), uses)
    return float(accountant.get_epsilon(delta))


@functools.lru_cache(maxsize=1024)
def certify(noise_multiplier: float, *, uses: int, delta: float, target_epsilon: float,
            classes: int = 1) -> PrivacyCertificate:
    """Certify ``uses`` composed Gaussian releases of one example at total ``delta`` (PLD and RDP accountants).

    ``classes`` > 1 (per-classifier budget): the K-model release composes K·uses releases, reported separately.
    """
    from dp_accounting import rdp
    import dp_accounting

    check_number(noise_multiplier, "noise_multiplier", low=0)
    check_integer(uses, "uses")
    check_integer(classes, "classes")
    check_number(delta, "delta", low=0, high=1)
    check_number(target_epsilon, "epsilon", low=0)
    eps = _pld_epsilon(noise_multiplier, uses, delta)
    rdp_accountant = rdp.RdpAccountant()
    rdp_accountant.compose(dp_accounting.GaussianDpEvent(noise_multiplier), uses)
    eps_all = eps if classes == 1 else _pld_epsilon(noise_multiplier, uses * classes, delta)
    return PrivacyCertificate(eps, float(rdp_accountant.get_epsilon(delta)), delta, noise_multiplier, uses,
                              target_epsilon, eps_all)


@functools.lru_cache(maxsize=256)
def calibrated_noise_multiplier(epsilon: float, delta: float, *, uses: int) -> float:
    """The smallest z = σ/Δ whose ``uses``-fold composed Gaussian certifies (ε, δ) with dp-accounting's PLD
    accountant (its calibrate_dp_mechanism bisection)."""
    from dp_accounting import pld
    import dp_accounting

    check_number(epsilon, "epsilon", low=0)
    check_number(delta, "delta", low=0, high=1)
    check_integer(uses, "uses")

    def accountant():
        return pld.PLDAccountant(dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE)

    event = lambda z: dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(z), uses)  # noqa: E731
    lowest, highest = 0.3, 500.0  # below 0.3 the PLD grid explodes; no (ε, δ) here needs either end
    if _pld_epsilon(lowest, uses, delta) <= epsilon or _pld_epsilon(highest, uses, delta) > epsilon:
        raise ConfigError(f"`epsilon` = {epsilon!r} at δ = {delta:g} needs a noise multiplier outside "
                          f"[{lowest}, {highest}]; calibration='accountant' does not cover it.")
    return float(dp_accounting.calibrate_dp_mechanism(
        accountant, event, epsilon, delta, dp_accounting.ExplicitBracketInterval(lowest, highest), tol=1e-4))


def noise_and_certificate(epsilon, delta, *, uses: int, lipschitz: float, batch_size: int, classes: int,
                          budget: str, private: bool = True, calibration: str = "paper", coordinates: int = 1):
    """(per-coordinate std of N_t, certificate) for ``uses`` noisy updates per example, the run opening
    ``coordinates`` noise values in all (updates × d × K; the sampler's residual is over all of them).

    ``calibration="paper"``: each update (ε/uses, δ/uses)-DP by eq. (4), c = √(2 ln(1.25·uses/δ)) (Theorem 1 and
    basic composition; refused where that σ and the residual do not certify ε). ``"accountant"``: the smallest noise
    multiplier whose composition dp-accounting certifies at what is left of (ε, δ) after the residual.
    """
    if not private:
        return 0.0, None
    check_number(epsilon, "epsilon", low=0)
    check_number(delta, "delta", low=0, high=1)
    check_choice(budget, "budget", BUDGETS)
    check_choice(calibration, "calibration", CALIBRATIONS)
    joint = classes if budget == "model" else 1
    check_integer(coordinates, "coordinates")
    epsilon_left, delta_left = reserve(epsilon, delta, coordinates)
    if calibration == "paper":
        per_eps, per_delta = epsilon / uses, delta / uses
        z = gaussian_c(per_delta) / per_eps  # σ/Δ, the same for every step
    else:
        z = calibrated_noise_multiplier(epsilon_left, delta_left, uses=uses)
    std = z * update_sensitivity(eta=1.0, lipschitz=lipschitz, batch_size=batch_size, classes=joint)
    cert = with_residual(certify(z, uses=uses, delta=delta_left, target_epsilon=epsilon,
                                 classes=1 if budget == "model" else classes), coordinates)
    if not cert.certified:
        raise ConfigError(f"`epsilon` = {epsilon!r} is outside Theorem 1's range: the paper's σ certifies only "
                          f"ε = {cert.epsilon:.4g} (dp-accounting PLD). Lower `epsilon` or use "
                          f"calibration='accountant'.")
    return std, cert


def with_residual(cert: PrivacyCertificate, coordinates: int) -> PrivacyCertificate:
    """``cert`` plus the sampler's residual over ``coordinates`` opened noise values, at the largest η any release
    grid can have (:func:`~mpcdp.accounting.grid.eta_bound`: every step's σ is ≈ 2^21 units)."""
    extra = Residual(coordinates, eta_bound(), plan_for(SIGMA_UNITS / math.sqrt(2)).truncated_mass * 1.01)
    pieces = extra.delta_pieces(cert.epsilon, cert.delta)
    return dataclasses.replace(cert, epsilon_residual=extra.epsilon, noise_coordinates=coordinates,
                               delta_truncation=pieces["delta_truncation"], delta_residual=pieces["delta_residual"])


def smoothness(lam: float = 0.0) -> float:
    """μ of the loss (2) on unit-norm rows: the logistic term's Hessian is at most ¼·xxᵀ, plus λ."""
    return 0.25 + lam


def algorithm2_noise(epsilon: float | None, delta: float, *, eta: float, lam: float, radius: float | None,
                     batch_size: int, classes: int, budget: str, calibration: str = "paper", coordinates: int = 1):
    """(grad noise std, certificate of its gradient releases only — the Deep-Q decisions are not covered, so
    reports print it as not certified) of Algorithm 2: Lemma 5 bounds one global release's sensitivity by
    max_k 2η_k·L/b — the same Δ as Algorithm 1 — provided η <= 1/(2μ); each example then reaches exactly one
    global release (the first global update after its mini-batch), so the certificate is Algorithm 1's."""
    check_number(eta, "eta", low=0)
    limit = 1.0 / (2.0 * smoothness(lam))
    if eta > limit:
        raise ConfigError(f"`eta` must be <= 1/(2μ) = {limit:.4g} for Lemma 5's sensitivity bound. Found {eta!r}.")
    return noise_and_certificate(epsilon, delta, uses=1, lipschitz=lipschitz_constant(lam, radius),
                                 batch_size=batch_size, classes=classes, budget=budget, private=epsilon is not None,
                                 calibration=calibration, coordinates=coordinates)
