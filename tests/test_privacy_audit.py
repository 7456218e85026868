"""The empirical privacy audit: its bounds are the papers' statistics, it catches a broken mechanism, and it
never contradicts the certificate of the real one — simulated, and through the secure party processes."""

import dataclasses
import json
import math
import pathlib

import numpy as np
import pytest
from scipy import special

from mpcdp.accounting import audit_bounds
from mpcdp.jobs.audit import BUGS, broken_mechanism, run_audit
from mpcdp.jobs.train import plan_from
from mpcdp.learning import mechanisms

ROOT = pathlib.Path(__file__).resolve().parents[1]
QUICKSTART = "protocols/quickstart-a9a.toml"
FULL_BATCH = """name = "audit-dpgd"
dataset = "breast-cancer"
algorithm = "dp-gd"
[privacy]
epsilon = 0.3
delta = 1e-5
[training]
parties = 3
passes = 3
c1 = 1.0
learning_rate = 0.5
seed = 0
"""


def test_the_one_run_bound_is_steinke_et_al_s_binomial_test():
    """All r = 100 guesses right, δ = 0: the p-value is q^100 with q = e^ε/(1+e^ε), so the bound at 95% solves
    q^100 = 0.05 exactly."""
    bound = audit_bounds.one_run(np.r_[np.arange(50) + 100.0, -np.arange(50) - 100.0], np.r_[[1] * 50, [-1] * 50],
                                 delta=0.0, confidence=0.95, guess_counts=[50])
    assert bound.guesses == 100 and bound.correct == 100
    assert bound.epsilon == pytest.approx(special.logit(0.05 ** (1 / 100)), abs=1e-5)
    assert audit_bounds.one_run_p_value(1000, 100, 100, 1.0, 1e-5) > audit_bounds.one_run_p_value(1000, 100, 100,
                                                                                                  1.0, 0.0)


def test_clopper_pearson_with_no_error_is_exact():
    assert audit_bounds.clopper_pearson_upper(0, 20, 0.025) == pytest.approx(1 - 0.025 ** (1 / 20), abs=1e-12)
    assert audit_bounds.clopper_pearson_upper(20, 20, 0.025) == 1.0


@pytest.mark.parametrize("true_eps, holds", [(0.5, True), (4.0, False)])
def test_the_one_run_bound_on_randomized_response_stays_below_the_truth_and_has_power(true_eps, holds):
    """ε-DP randomized response on 2,000 canaries (seeded): the 95% bound stays below the true ε (it may fail
    with probability ≤ 5% by the theorem; with this seed it does not) and, at ε = 4, rises above 1."""
    rng = np.random.default_rng(3)
    signs = rng.choice([-1, 1], size=2000)
    kept = rng.random(2000) < special.expit(true_eps)
    scores = np.where(kept, signs, -signs) + rng.normal(0, 1e-3, size=2000)  # tie-breaking jitter
    bound = audit_bounds.one_run(scores, signs, delta=0.0, confidence=0.95)
    assert bound.epsilon <= true_eps
    assert (bound.epsilon < 1.0) if holds else (bound.epsilon > 1.0)


@pytest.mark.parametrize("bug", BUGS)
def test_a_broken_mechanism_is_caught_its_lower_bound_exceeds_the_certified_epsilon(bug):
    with broken_mechanism(bug):
        report = run_audit(plan_from(QUICKSTART, backend="simulated"), canaries=1000, seed=1)
    assert report["epsilon_lower"] > report["epsilon_certified"], report
    assert mechanisms.MECHANISMS["dgauss"].simulated_rows.__name__ != "rows"  # intact again after the block


def test_the_real_mechanism_never_contradicts_its_certificate_simulated_or_secure():
    """The same audit on the simulated backend and through the secure party processes (party 0 plants the
    canaries, noise sampled inside the MPC): each lower bound is at most the certified ε. The simulated run is
    seeded (the same verdict every run); the secure run's noise is fresh, so its bound is at 99.9% confidence:
    with 400 canaries only k = 200 guesses a side can then pass ε = 0.5 (289 of 400 right), which guesses right
    with probability q each do with probability 2e-7 at q = 0.6 and 1.5e-5 at q = e^0.5/(1 + e^0.5) = 0.622 (a
    mechanism exactly as leaky as certified; the recorded audits guess about half right). At 95%, used before,
    k = 10 passes with 18 of 20 right: 2.2e-4 at q = 0.5, 7.7e-3 at q = 0.6. A run without noise (every guess
    right) would still give a bound above ε = 0.5."""
    plan = plan_from(QUICKSTART, backend="simulated")
    simulated = run_audit(plan, backend="simulated", canaries=1000, seed=2)
    secure = run_audit(dataclasses.replace(plan, backend="mpc"), backend="mpc", canaries=400, seed=2,
                       confidence=0.999)
    for report in (simulated, secure):
        assert 0.0 <= report["epsilon_lower"] <= report["epsilon_certified"] <= plan.epsilon
        assert len(report["scores"]) == report["canaries"] and set(report["signs"]) == {-1, 1}
    assert secure["backend"] == "mpc" and math.isfinite(secure["epsilon_certified"])


def test_many_runs_catch_a_mechanism_without_noise_and_pass_the_real_one(tmp_path):
    protocol = tmp_path / "dpgd.toml"
    protocol.write_text(FULL_BATCH)
    plan = plan_from(str(protocol), backend="simulated")
    real = run_audit(plan, runs=40, seed=5)
    assert real["method"] == "many runs" and real["epsilon_lower"] <= real["epsilon_certified"]
    with broken_mechanism("noise omitted"):
        broken = run_audit(plan, runs=40, seed=5)
    assert broken["epsilon_lower"] > broken["epsilon_certified"], broken


def test_the_black_box_audit_scores_the_final_model_and_stays_below_the_certificate():
    report = run_audit(plan_from(QUICKSTART, backend="simulated"), setting="black-box", canaries=200, seed=4)
    assert report["setting"] == "black-box" and 0.0 <= report["epsilon_lower"] <= report["epsilon_certified"]


def test_mpcdp_audit_writes_its_table_record_and_plot(tmp_path, capsys, monkeypatch):
    """`mpcdp audit`: the entry point runs in this process (its exit status, stdout and --out are its logic; a
    second interpreter would only import torch again; tests/test_cli.py runs commands in their own)."""
    from mpcdp.cli import main

    monkeypatch.chdir(ROOT)
    code = main(["audit", QUICKSTART, "--canaries", "300", "--seed", "1", "--out", str(tmp_path / "audit")])
    out = capsys.readouterr()
    assert code == 0, out.err[-2000:]
    line = json.loads(out.out.strip().splitlines()[-1])
    record = json.loads((tmp_path / "audit.json").read_text())
    assert record["epsilon_lower"] == line["epsilon_lower"] and len(record["scores"]) == 300
    assert "ε lower bound (95%)" in (tmp_path / "audit.md").read_text()
    assert (tmp_path / "audit.png").stat().st_size > 1000
