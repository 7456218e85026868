"""The in-MPC ratio-of-uniforms sampler produces N(0, σ²) (3 parties, 2·10⁵ draws, fixed seeds, α = 1e-3)."""

import numpy as np
import pytest

from mpcdp.noise.rou import ACCEPTANCE, sampled_sigma, support_bound, truncated_mass
from mpcdp.noise.validate import validate_normal
from mpcdp.runtime.harness import run_parties
from party_jobs import rou_samples

N = 200_000
ALPHA = 1e-3


@pytest.fixture(scope="module")
def draws():
    from mpcdp.config import MpcConfig

    results = run_parties(rou_samples, MpcConfig(parties=3, timeout_s=600), args=(N, 1.0, 20261122))
    return results


def test_samples_are_standard_normal(draws):
    r = draws[0]
    x = r["values"].numpy()
    assert x.size == N
    check = validate_normal(x, alpha=ALPHA, support=support_bound(16), accepted=r["accepted"],
                            candidates=r["candidates"], acceptance=ACCEPTANCE)
    assert check.passed, check.failures
    # every party opened the same values
    assert all(np.array_equal(d["values"].numpy(), x) for d in draws)


def test_the_validation_has_power_against_a_1_percent_wrong_sigma(draws):
    x = draws[0]["values"].numpy()
    wrong = validate_normal(x * 1.02, alpha=ALPHA)
    assert not wrong.passed and any(f.startswith("std") for f in wrong.failures)
    wrong = validate_normal(x * 1.01, alpha=ALPHA)
    assert not wrong.passed


def test_only_masked_values_and_accept_bits_are_opened(draws):
    labels = {label for label, _ in draws[0]["openings"]}
    allowed = {"rou-prefix-or", "rou-b2a", "rou-mul", "rou-trunc", "rou-accept-mask", "rou-accept-prefix",
               "rou-accept-result", "rou-recip", "rou-quotient", "noise-validation",
               "rou-trunc-redo"}  # a truncation redone with a fresh mask (public, rare)
    assert labels <= allowed, labels - allowed
    # the only opening of the noise itself is the test's own validation reveal
    assert [e for label, e in draws[0]["openings"] if label == "noise-validation"] == [N]


def test_declared_support_and_sigma():
    assert support_bound(16) == pytest.approx(6.8654, abs=1e-4)
    assert truncated_mass(16) < 1e-11
    for sigma in (0.001, 1.0, 3.7, 4096.0):
        assert sigma <= sampled_sigma(sigma) <= sigma * (1 + 1.2e-7)


def test_a_presampled_block_is_consumed_row_by_row(config_for):
    from party_jobs import noisy_aggregation_steps
    import torch

    steps, dim, sigma = 6, 400, 0.5
    g = torch.Generator().manual_seed(4)
    rows = [torch.randn(steps, dim, generator=g, dtype=torch.float64) for _ in range(2)]
    results = run_parties(noisy_aggregation_steps, config_for(2), party_args=[(rows[0], sigma), (rows[1], sigma)])
    noise = (results[0]["released"] - (rows[0] + rows[1])).numpy()
    assert validate_normal(noise.ravel(), sigma=sigma, alpha=ALPHA, support=support_bound(16)).passed
    # its output grid has holes in the tails (tests/test_discrete_gaussian.py): no accountant may take it
    assert results[0]["event"] == "UnsupportedDpEvent()"
    # the only plaintext released: one noisy aggregate per step (the handshakes are public metadata)
    released = [label for label in results[0]["openings"] if label.startswith("noisy")]
    assert released == [f"noisy-aggregate-{t}" for t in range(steps)]
