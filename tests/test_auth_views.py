"""`mpcdp audit views --security malicious` (mpcdp.jobs.auth_views): every role's view of the authenticated
sampler (dg-auth: the dealer deals every candidate bit R and knows it, the parties know the coin S) against the
released noise, with real party processes and the dealer at m = 3; the dealer's planted leak (no coin, W = R)
is found. Each run also checks that every party's parts XORed with S decode the released sample (the views
are the run's)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import torch

from mpcdp.errors import ConfigError
from mpcdp.jobs import auth_views
from mpcdp.mpc.auth_circuits import PlainArith
from mpcdp.noise import discrete_gaussian as dg
from mpcdp.noise.auth_gaussian import MASK_BITS, candidate_circuit


def _verdicts(report):
    return {role["role"]: role["verdict"] for role in report["roles"]}


def test_decode_releases_what_the_circuit_accepts_first():
    """decode (the audit's plaintext reading of candidates' bits) gives the first candidate the authenticated
    circuit accepts, on the same bits (the circuit run on plaintext integers)."""
    plan = dg.plan_for(16.0)
    generator = torch.Generator().manual_seed(44)
    for _ in range(20):
        bits = {name: torch.randint(0, 2, (6, b), generator=generator) for name, b in dg.field_bits(plan).items()}
        value, accept = candidate_circuit(PlainArith(), plan, bits, torch.zeros(6, MASK_BITS, dtype=torch.int64))
        first = int(np.flatnonzero(accept.numpy())[0]) if accept.any() else 0
        row = np.concatenate([bits[name].numpy() for name in dg.RANDOM_FIELDS], 1)
        assert auth_views.decode(plan, row) == int(value[first])


def test_under_malicious_at_three_parties_every_roles_view_is_independent_of_the_noise():
    """The dealer (its dealt bits R and request counts), each party (the coin, its own bit parts, the accept
    bits, the masked T) and parties 0 and 1 pooling their parts: each independent at α = 1e-4 (10 one-sample
    calls; the recorded run, benchmarks/results/views.md, has more). The run's noise_known_to is the
    malicious sampler's: the dealer with any one party (R and S), or every party together."""
    report = auth_views.run_auth_views(parties=3, calls=10, sigma=16.0, alpha=1e-4, plant=None)
    assert _verdicts(report) == {"dealer": "independent", "party 0": "independent", "party 1": "independent",
                                 "party 2": "independent", "parties 0 and 1": "independent"}
    assert report["noise_known_to"] == "the dealer with any one data party, or every data party together"
    assert report["circuit"] == "dg-auth/1" and report["security"] == "malicious"
    names = {role["role"]: [s["name"] for s in role["statistics"]] for role in report["roles"]}
    assert names["dealer"] == ["dealt bits", "request sizes"]
    assert names["party 1"] == ["coin", "own bit parts", "accept bits", "masked T"]
    assert all(0 < role["power"] <= 1 and role["power_against"] for role in report["roles"])


def test_the_dealers_bits_without_the_coin_are_found_from_the_command_line(tmp_path):
    """`mpcdp audit views --security malicious --plant-leak dealer` (W = R: no coin): the dealer's dealt bits
    decode the released sample in every call, so it is dependent (10 matches in 10 calls: p ≈ 1e-5, from the
    Poisson tail at the permutation mean, which counts the matches themselves); every party and the coalition
    are not; exit 1."""
    out = tmp_path / "views.json"
    proc = subprocess.run([sys.executable, "-m", "mpcdp", "audit", "views", "--security", "malicious", "--parties",
                           "3", "--calls", "10", "--plant-leak", "dealer", "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stderr[-2000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report == json.loads(out.read_text())
    assert _verdicts(report) == {"dealer": "dependent", "party 0": "independent", "party 1": "independent",
                                 "party 2": "independent", "parties 0 and 1": "independent"}
    dealer = report["roles"][0]
    assert dealer["statistic"] == "dealt bits" and dealer["z"] > 6 and 0 < dealer["power"] <= 1


@pytest.mark.parametrize("plant", ["release", "party 1"])
def test_a_plant_the_malicious_audit_does_not_have_is_refused_before_any_process_starts(plant):
    with pytest.raises(ConfigError, match="--plant-leak under --security malicious must be 'dealer'"):
        auth_views.run_auth_views(parties=3, calls=10, sigma=16.0, alpha=1e-4, plant=plant)


def test_a_malicious_training_run_says_every_data_party_is_the_committee_whatever_noise_committee_says():
    """Under `malicious` every data party samples (the committee setting is ignored): at m = 5 with
    noise_committee = 3 the run's noise_known_to is the whole-committee sentence; semi-honest, the committee's."""
    from mpcdp.jobs.train import plan_from, plan_noise_known_to

    settings = {"noise_committee": 3}
    malicious = plan_from("protocols/quickstart-a9a.toml", parties=5, mpc={**settings, "security": "malicious"})
    semi = plan_from("protocols/quickstart-a9a.toml", parties=5, mpc=settings)
    assert plan_noise_known_to(malicious) == "the dealer with any one data party, or every data party together"
    assert plan_noise_known_to(semi).startswith("the dealer with any one of parties 0–2 (the noise committee)")
