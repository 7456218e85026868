"""Privacy accounting: reference values, the paper's bound against the certifying one, calibration."""

import math
import warnings

import dp_accounting
import pytest
from dp_accounting import rdp

from mpcdp.accounting.certify import certify, certify_rdp, gdp_epsilon
from mpcdp.accounting.dpsrm import epsilon_for, noise_for
from mpcdp.accounting.events import DpSrmSetting, dpsrm_event, full_batch_gaussian_event, laplace_event
from mpcdp.accounting.paper import lemma37_rdp, paper_epsilon, theorem41_sigmas
from mpcdp.errors import ConfigError

A9A = DpSrmSetting(n=32561, batch=100, batch0=200, steps=1627)


@pytest.mark.smoke
def test_reference_composition_from_the_accounting_note():
    # n = 32561; release 0: b0 = 200 at z = 2.0; then 1302 releases of b = 100 at z = 1.0
    setting = DpSrmSetting(n=32561, batch=100, batch0=200, steps=1302)
    sigma0, sigma = 2.0 * 2 * setting.c1 / 200, 1.0 * 2 * setting.c_eff / 100
    assert setting.noise_multipliers(sigma0, sigma) == pytest.approx((2.0, 1.0))
    rdp_cert = certify_rdp(dpsrm_event(setting, sigma0, sigma), 1e-5)
    assert rdp_cert.epsilon == pytest.approx(1.2677, abs=1e-4) and rdp_cert.order == 11
    # the certificate is the PLD accountant's; the note's RDP value is printed beside it
    cert = certify(dpsrm_event(setting, sigma0, sigma), 1e-5)
    assert cert.method.startswith("PLD") and cert.pieces["epsilon_rdp"] == rdp_cert.epsilon
    assert cert.epsilon < 0.6 * rdp_cert.epsilon


@pytest.fixture(scope="module")
def a9a_noise():
    return noise_for(A9A, 0.5, 1e-5)


def test_calibration_needs_less_noise_than_the_rdp_reference_nu_671(a9a_noise):
    """The accounting note's RDP calibration of this setting is ν = 671 (σ0 = 4.12e-2, σ = 8.21e-4); at that
    noise RDP certifies exactly the target, and the PLD certificate reaches it with ≈ 0.62× the noise."""
    from mpcdp.accounting.certify import calibrate

    rdp_nu = calibrate(lambda v: certify_rdp(dpsrm_event(A9A, *A9A.sigmas_for(v)), 1e-5).epsilon, 0.5,
                       guess=100.0, rtol=1e-5)
    assert rdp_nu == pytest.approx(671, rel=2e-3)
    assert A9A.sigmas_for(rdp_nu) == pytest.approx((4.12e-2, 8.21e-4), rel=2e-3)
    assert 0.55 * rdp_nu < a9a_noise.nu < 0.7 * rdp_nu
    assert a9a_noise.certificate.epsilon <= 0.5 < certify_rdp(dpsrm_event(A9A, a9a_noise.sigma0, a9a_noise.sigma),
                                                               1e-5).epsilon


def test_calibration_round_trip_is_safe_and_tight(a9a_noise):
    eps = epsilon_for(A9A, a9a_noise.sigma0, a9a_noise.sigma, 1e-5).epsilon
    assert eps <= 0.5
    assert eps >= 0.5 * (1 - 1e-4)  # within the stated tolerance of the target
    # 1% less noise would break the target: the calibration is the least noise, not merely enough
    assert epsilon_for(A9A, a9a_noise.sigma0 * 0.99, a9a_noise.sigma * 0.99, 1e-5).epsilon > 0.5


def test_calibration_without_the_rdp_comparison_finds_the_same_noise(a9a_noise):
    """``with_rdp=False`` (the training path, which keeps only σ) leaves out the RDP ε printed for comparison
    and nothing else."""
    lean = noise_for(A9A, 0.5, 1e-5, with_rdp=False)
    assert (lean.nu, lean.sigma0, lean.sigma) == (a9a_noise.nu, a9a_noise.sigma0, a9a_noise.sigma)
    assert lean.certificate.epsilon == a9a_noise.certificate.epsilon
    assert "epsilon_rdp" in a9a_noise.certificate.pieces and "epsilon_rdp" not in lean.certificate.pieces


@pytest.mark.parametrize("tau", [0.001, 0.003, 0.01])
@pytest.mark.parametrize("z", [0.9, 1.0, 2.0, 4.0])
def test_lemma37_is_an_upper_bound_inside_its_range_and_infinite_outside(tau, z):
    n = 100_000
    b = int(tau * n)
    inside = outside = 0
    for alpha in range(2, 64):
        accountant = rdp.RdpAccountant(orders=[alpha], neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
        accountant.compose(dp_accounting.SampledWithoutReplacementDpEvent(n, b, dp_accounting.GaussianDpEvent(z)))
        true_rdp = float(accountant._rdp[0])
        paper = lemma37_rdp(alpha, b / n, z)
        if math.isfinite(paper):
            inside += 1
            assert paper >= true_rdp * (1 - 1e-9), (alpha, paper, true_rdp)
        else:
            outside += 1
            z2 = z * z
            assert z2 < 0.7 or alpha > 2 * z2 * math.log(1 / (tau * alpha * (1 + z2))) / 3 + 1
    assert inside >= 1 and outside >= 1


def test_paper_accountant_cannot_certify_small_epsilon_and_theorem41_over_noises(a9a_noise):
    eps, alpha = paper_epsilon(A9A, a9a_noise.sigma0, a9a_noise.sigma, 1e-5)
    assert eps > 0.5 and alpha is not None  # Lemma 3.7's α range forces a large log(1/δ)/(α−1)
    theorem = theorem41_sigmas(A9A, 0.5, 1e-5)
    assert theorem.sigma > a9a_noise.sigma  # ε (not ε²) in Theorem 4.1: more noise than needed here
    assert epsilon_for(A9A, theorem.sigma0, theorem.sigma, 1e-5).epsilon < 0.5


def test_tiny_noise_is_outside_lemma37_range():
    eps, alpha = paper_epsilon(A9A, 1e-4, 1e-6, 1e-5)
    assert math.isinf(eps) and alpha is None


def test_uneven_parties_with_equal_batches_account_at_the_smallest_partys_rate():
    uneven = DpSrmSetting(n=(1000, 9000), batch=(50, 50), batch0=(100, 100), steps=100)
    assert uneven.sampling(False)[:2] == (1000, 50) and uneven.sampling(True)[:2] == (1000, 100)
    pooled = DpSrmSetting(n=10000, batch=100, batch0=200, steps=100)
    # same combined batch and noise: the uneven split is accounted at rate 5% instead of 1%
    eps_uneven = epsilon_for(uneven, 0.05, 0.002, 1e-5).epsilon
    eps_pooled = epsilon_for(pooled, 0.05, 0.002, 1e-5).epsilon
    assert eps_uneven > 2 * eps_pooled


@pytest.mark.smoke
def test_gaussian_composition_is_exact_gdp():
    # T Gaussians at z: μ = √T/z; compare with the closed form δ(ε) at the returned ε
    cert = certify(full_batch_gaussian_event(sigma=2.0, sensitivity=0.5, steps=100), 1e-5)
    mu = math.sqrt(100) / 4.0
    assert gdp_epsilon(mu, 1e-5) == pytest.approx(cert.epsilon)
    from scipy.stats import norm
    delta_at = norm.cdf(-cert.epsilon / mu + mu / 2) - math.exp(cert.epsilon) * norm.cdf(-cert.epsilon / mu - mu / 2)
    assert delta_at <= 1e-5 and delta_at > 0.999e-5


def test_laplace_composes_linearly():
    cert = certify(laplace_event(scale=4.0, l1_sensitivity=0.5, steps=20), 1e-5)
    assert cert.epsilon == pytest.approx(20 * 0.5 / 4.0) and cert.delta == 0.0


@pytest.mark.parametrize("kwargs, text", [
    ({"n": 100, "batch": 200, "batch0": 10, "steps": 5}, "`batch` must be an integer in [1, n = 100]. Found 200."),
    ({"n": 100, "batch": 10, "batch0": 10, "steps": 0}, "`steps` must be an integer >= 1. Found 0."),
    ({"n": (100, 50), "batch": (10,), "batch0": (10, 10), "steps": 5}, "need one entry per party"),
])
def test_bad_settings_are_named(kwargs, text):
    with pytest.raises(ConfigError) as info:
        DpSrmSetting(**kwargs)
    assert text in str(info.value)


def test_bad_epsilon_and_delta_are_named():
    with pytest.raises(ConfigError, match=r"`epsilon` must be a finite number > 0. Found 0"):
        noise_for(A9A, 0.0, 1e-5)
    with pytest.raises(ConfigError, match=r"`delta` must be a finite number in \(0, 1\). Found 1.0"):
        noise_for(A9A, 0.5, 1.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        epsilon_for(DpSrmSetting(n=100, batch=10, batch0=10, steps=2), 1.0, 1.0, 0.02)
    assert any("not below 1/n" in str(w.message) for w in caught)


@pytest.mark.parametrize("rho", [1e-4, 1.5e-3, 0.05])
def test_zcdp_certificate_sits_between_the_gaussian_exact_value_and_the_classic_bound(rho):
    from mpcdp.accounting.certify import zcdp_certificate

    delta = 1e-5
    certified = zcdp_certificate(rho, delta).epsilon
    # a Gaussian with μ = √(2ρ) is ρ-zCDP, so no conversion valid for every ρ-zCDP mechanism can beat its exact ε
    assert certified >= gdp_epsilon(math.sqrt(2 * rho), delta)
    # Bun & Steinke (2016), Prop. 1.3: ρ-zCDP ⇒ (ρ + 2√(ρ log(1/δ)), δ)-DP; the RDP conversion is at least as good
    assert certified <= rho + 2 * math.sqrt(rho * math.log(1 / delta))


def test_zcdp_budget_round_trip():
    from mpcdp.accounting.certify import zcdp_budget_for, zcdp_certificate

    rho, cert = zcdp_budget_for(0.2, 1e-5)
    assert 0.19999 < cert.epsilon <= 0.2
    assert zcdp_certificate(rho * 1.001, 1e-5).epsilon > 0.2  # the largest budget, not just a safe one
    with pytest.raises(ConfigError, match="`rho` must be a finite number > 0. Found -1"):
        zcdp_certificate(-1, 1e-5)


@pytest.mark.parametrize("q", [1e-4, 3e-3, 0.05, 0.3, 0.9])
def test_the_calibration_path_gives_dp_accountings_rdp_bit_for_bit(q):
    """One table of forward differences for every order gives the library's per-order values exactly (the
    calibration search would otherwise land on another σ than ``certify`` would)."""
    import numpy as np
    from dp_accounting.rdp import rdp_privacy_accountant as library

    from mpcdp.accounting.certify import RDP_ORDERS
    from mpcdp.accounting.wor_rdp import wor_gaussian_rdp

    for z in (0.3, 0.8, 1.5, 4.0, 30.0, 900.0):
        expected = library._compute_rdp_sample_wor_gaussian(q, z, RDP_ORDERS)
        assert np.array_equal(wor_gaussian_rdp(q, z, RDP_ORDERS), expected), (q, z)


def test_the_calibration_epsilon_equals_certify_and_other_events_fall_back():
    from mpcdp.accounting.certify import RDP_ORDERS
    from mpcdp.accounting.wor_rdp import calibration_epsilon

    for sigma0, sigma in ((4e-2, 8e-4), (1e-2, 3e-4), (0.2, 5e-3)):
        event = dpsrm_event(A9A, sigma0, sigma)
        assert calibration_epsilon(event, 1e-5, RDP_ORDERS) == certify_rdp(event, 1e-5).epsilon
    assert calibration_epsilon(full_batch_gaussian_event(1.0, 0.1, 10), 1e-5, RDP_ORDERS) is None
    assert calibration_epsilon(dpsrm_event(A9A, 4e-2, 8e-4), 1e-5, [2, 3.5]) is None


def test_events_outside_the_pld_accountant_are_calibrated_on_certify_itself():
    """A full-batch Gaussian event goes through the generic search: the least ν whose exact (μ-GDP)
    certificate meets the target."""
    from mpcdp.accounting.certify import calibrate_event

    nu, cert = calibrate_event(lambda v: full_batch_gaussian_event(v, 0.1, 50), 1.0, 1e-5, guess=1.0, rtol=1e-6)
    assert cert.method.startswith("exact Gaussian") and 1.0 * (1 - 1e-5) <= cert.epsilon <= 1.0
    assert certify(full_batch_gaussian_event(nu * 0.999, 0.1, 50), 1e-5).epsilon > 1.0
