"""The other noise modes behind the same interface, each with the event that describes it."""

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from mpcdp.config import MpcConfig
from mpcdp.errors import ConfigError, InsecureSettingWarning
from mpcdp.learning.mechanisms import NoiseSpec, sample_noise
from mpcdp.noise.modes import BOXMULLER_SUPPORT
from mpcdp.noise.validate import validate_normal
from mpcdp.runtime.harness import run_parties
from party_jobs import noise_modes

ALPHA = 1e-3


@pytest.fixture(autouse=True)
def _quiet_seed_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureSettingWarning)
        yield


def test_distributed_noise_sums_to_sigma_and_each_party_adds_its_share():
    parties, t, n, sigma = 3, 1, 100_000, 2.0
    results = run_parties(noise_modes, MpcConfig(parties=parties, timeout_s=300),
                          args=("distributed", n, sigma, t, 5))
    total = results[0]["values"].numpy()
    assert validate_normal(total, sigma=sigma * math.sqrt(parties / (parties - t)), alpha=ALPHA).passed
    for r in results:  # each party's own contribution: N(0, σ²/(m − t))
        assert validate_normal(r["own"], sigma=sigma / math.sqrt(parties - t), alpha=ALPHA).passed
    # any t = 1 colluder removes its part and still faces variance σ²
    without_0 = total - results[0]["own"]
    assert validate_normal(without_0, sigma=sigma, alpha=ALPHA, support=None).passed
    assert results[0]["event"] == f"GaussianDpEvent(noise_multiplier={sigma})"
    assert "noise-validation" in results[0]["openings"] and len(results[0]["openings"]) == 1  # zero comm


def test_boxmuller_runs_and_is_declared_unsupported():
    results = run_parties(noise_modes, MpcConfig(parties=2, timeout_s=300), args=("boxmuller", 50_000, 1.0, 0, 3))
    x = results[0]["values"].numpy()
    assert results[0]["event"] == "UnsupportedDpEvent()"
    assert results[0]["support"] == BOXMULLER_SUPPORT  # nominal: exact Box–Muller on 16-bit uniforms
    # CrypTen's randn is roughly N(0,1) (its approximations add ≈1.5% std and can pass the nominal support:
    # values up to 5.3 have been seen), which is why no accountant may accept its event
    assert np.isfinite(x).all() and 0.95 < x.std() < 1.06 and np.abs(x).max() < 8


def test_plaintext_mode_needs_no_mpc_and_is_exactly_normal():
    block = sample_noise(None, NoiseSpec(sigma=3.0, sensitivity=2.0, mode="plaintext", seed=9), (400, 500))
    assert block.values.shape == (400, 500)
    assert validate_normal(block.values.numpy().ravel(), sigma=3.0, alpha=ALPHA).passed
    assert repr(block.event) == "GaussianDpEvent(noise_multiplier=1.5)"
    assert block.row(3).shape == (500,)


@pytest.mark.parametrize("kwargs, text", [
    ({"sigma": 0.0}, "`sigma` must be a finite number > 0. Found 0.0."),
    ({"sigma": 1.0, "mode": "laplace"}, "`mode` must be one of"),
    ({"sigma": 1.0, "sensitivity": -1}, "`sensitivity` must be a finite number > 0. Found -1."),
    ({"sigma": 1.0, "uniform_bits": 12}, "`uniform_bits` must be an integer in [16, 18]. Found 12."),
])
def test_bad_specs_are_named(kwargs, text):
    with pytest.raises(ConfigError) as info:
        NoiseSpec(**kwargs)
    assert text in str(info.value)


def test_seeded_noise_warns():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        NoiseSpec(sigma=1.0, seed=1)
    assert any(issubclass(w.category, InsecureSettingWarning) for w in caught)


def test_csprng_normal_is_normal():
    from mpcdp.noise.modes import csprng_normal

    assert stats.kstest(csprng_normal(100_000, seed=11), "norm").pvalue > ALPHA  # fixed draws: cannot flake
    fresh = csprng_normal(1000)  # the default draws from the OS CSPRNG: every call differs
    assert not np.array_equal(fresh, csprng_normal(1000)) and np.isfinite(fresh).all()


def test_rou_noise_is_unbiased_at_a_few_grid_cells_per_sigma():
    """σ = 2^-10 at 12 fractional bits: 4 grid cells per σ, so a rounding bias of half a cell (σ/8) would be
    12 standard errors on 10⁴ draws. Two-sided z-test of the mean against 0, α = 1e-4."""
    n, sigma = 10_000, 2.0**-10
    results = run_parties(noise_modes, MpcConfig(parties=2, timeout_s=300, precision_bits=12),
                          args=("rou", n, sigma, 0, 11))
    x = results[0]["values"].numpy()
    z = x.mean() / (x.std() / math.sqrt(n))
    assert abs(z) < stats.norm.isf(1e-4 / 2), z
