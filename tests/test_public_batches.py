"""A ``reproducible`` secure run draws its batches from the protocol's seed: they are public, so its certificate
claims no amplification by subsampling — same noise as the protocol calibrates, certified at sampling rate 1 —
and every path that honours the flag says so on stderr."""

from __future__ import annotations


import dp_accounting
import pytest

from mpcdp.accounting.events import without_amplification
from mpcdp.data.split import split_indices
from mpcdp.jobs.train import config_for, plan_from, plan_noise

DIM = 123


def _noise(protocol: str, backend: str, reproducible: bool):
    plan = plan_from(protocol, backend=backend)
    plan = plan.with_mpc(reproducible=reproducible)
    sizes = tuple(len(p) for p in split_indices(32561, plan.parties, ratio=plan.size_ratio, seed=plan.params.seed))
    return plan, plan_noise(plan, sizes, DIM)


@pytest.mark.parametrize("protocol", ["protocols/quickstart-a9a.toml", "protocols/quickstart-a9a-distributed.toml"])
def test_a_reproducible_secure_run_prints_no_amplified_epsilon(protocol):
    plan, secret = _noise(protocol, "mpc", False)
    _, simulated = _noise(protocol, "simulated", True)  # the simulated backend: a model of the secret-batch run
    _, public = _noise(protocol, "mpc", True)
    assert (public.levels.sigma0, public.levels.sigma) == (secret.levels.sigma0, secret.levels.sigma)
    assert simulated.certificate.epsilon == secret.certificate.epsilon <= plan.epsilon
    assert "subsampling_amplification" not in secret.report
    assert public.report["subsampling_amplification"].startswith("none: batches public")
    assert public.certificate.method.startswith("batches public")
    # the same releases on whole batches: far above the amplified ε, and at least their accountant's own ε
    assert public.certificate.epsilon > 5 * secret.certificate.epsilon
    z0, z = (kind["noise_multiplier"] for kind in public.certificate.pieces["releases"])
    whole = dp_accounting.ComposedDpEvent([dp_accounting.GaussianDpEvent(z0),
                                           dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(z),
                                                                             public.steps)])
    from mpcdp.accounting.certify import certify
    from mpcdp.accounting.wor_general import certify_general

    # in-MPC discrete Gaussians: the exact Gaussian composition; a sum of them: its RDP curve only
    accountant = certify_general if "distributed" in protocol else certify
    expected = accountant(whole, public.certificate.pieces["delta_gaussian"]).epsilon
    assert public.certificate.pieces["epsilon_accountant"] == pytest.approx(expected, rel=1e-9)


def test_without_amplification_keeps_every_release_and_drops_every_sampling_step():
    gauss = dp_accounting.GaussianDpEvent(2.0)
    event = dp_accounting.ComposedDpEvent([
        dp_accounting.SampledWithoutReplacementDpEvent(100, 10, gauss),
        dp_accounting.SelfComposedDpEvent(dp_accounting.PoissonSampledDpEvent(0.1, gauss), 7)])
    assert without_amplification(event) == dp_accounting.ComposedDpEvent(
        [gauss, dp_accounting.SelfComposedDpEvent(gauss, 7)])


def test_a_reproducible_configuration_is_warned_about(capfd):
    plan = plan_from("protocols/quickstart-a9a.toml", backend="mpc")
    config_for(plan)
    assert "reproducible mode" not in capfd.readouterr().err
    config_for(plan.with_mpc(reproducible=True))
    assert "WARNING: reproducible mode: every party's mini-batches come from the protocol's seed" in \
        capfd.readouterr().err


def test_a_reproducible_run_whose_certified_delta_exceeds_the_target_says_no_guarantee_is_certified():
    """The quick start with public batches: the unamplified ε is large and the sampler's truncation term
    e^ε·D·tail makes the certified δ vacuous; the report prints no (ε, δ) and says why. A run whose δ meets
    the target is reported as it is."""
    from mpcdp.jobs.train_report import beyond_target

    plan, public = _noise("protocols/quickstart-a9a.toml", "mpc", True)
    pieces = public.certificate.pieces
    report = {"epsilon": public.certificate.epsilon, "delta_certified": public.certificate.delta,
              "delta_truncation": pieces["delta_truncation"], "accounting": "PLD"}
    assert public.certificate.delta > 1  # the vacuous δ of issue 46
    shown = beyond_target(report, plan.delta)
    assert shown["epsilon"] is None and shown["delta_certified"] is None
    assert shown["epsilon_not_certified_because"].startswith("no meaningful guarantee is certified: the certified δ")
    assert shown["delta_unmet"] == public.certificate.delta and shown["epsilon_unmet"] == public.certificate.epsilon
    _, secret = _noise("protocols/quickstart-a9a.toml", "mpc", False)
    met = {"epsilon": secret.certificate.epsilon, "delta_certified": secret.certificate.delta, "accounting": "PLD"}
    assert beyond_target(met, plan.delta) == met
