"""The noise committee: parties 0..c−1 sample the in-MPC noise, the others wait, and every party's share is
re-randomised by a sharing of zero before the noise enters a release.

Real party processes (and the dealer). Checked: what a member and a non-member see while the noise is made
(the opening audit of a committee), that the committee's bytes do not grow with m, that the noise is the
exact sampler's (χ² against the enumerated pmf), that every party's final share looks uniform, and that a
committee other than the three generators is refused without a dealer.
"""

import numpy as np
import pytest
import torch
from scipy import stats

from mpcdp.config import MpcConfig
from mpcdp.errors import ConfigError
from mpcdp.noise import discrete_gaussian as dg
from mpcdp.runtime.harness import run_parties
from party_jobs import committee_noise

COUNT, SIGMA = 3000, 40.0


@pytest.fixture(scope="module")
def runs():
    return {m: run_parties(committee_noise, MpcConfig(parties=m, timeout_s=120.0), args=(COUNT, SIGMA))
            for m in (3, 5)}


def test_non_members_see_nothing_of_the_sampling_and_members_see_masked_values(runs):
    five = runs[5]
    assert all(r["members"] == (0, 1, 2) for r in five)
    for rank in (3, 4):
        assert five[rank]["openings"] == [("noise committee done", (rank,), "public")]
        assert int(five[rank]["stats"]["accepted"]) == int(five[0]["stats"]["accepted"])  # public counts only
    for rank in (0, 1, 2):
        sampling = [o for o in five[rank]["openings"] if o[0].startswith("dg-")]
        assert sampling and all(recipients == (0, 1, 2) for _, recipients, _ in sampling)
        assert {kind for _, _, kind in sampling} == {"masked", "comparison", "coin"}  # the coin: committed, then
        # opened among the members only


def test_the_committee_costs_the_same_at_five_parties_as_at_three(runs):
    """Bytes are deterministic given the public counts of each pass (candidates, first-factor survivors): at
    five parties as at three, each member sends exactly the declared cost of its passes for three parties,
    party 0 one more message per non-member that the committee is done; non-members send nothing."""
    from mpcdp.noise.secure_gaussian import declared_cost

    for m, run in runs.items():
        stats = run[0]["stats"]
        declared = declared_cost(stats["pass_candidates"], dg.plan_for(SIGMA), survivors=stats["pass_survivors"])
        assert [run[j]["bytes_sent"] for j in (1, 2)] == [declared.bytes(3, j)[0] for j in (1, 2)], m
        extra = run[0]["bytes_sent"] - declared.bytes(3, 0)[0]
        assert extra == 0 if m == 3 else 0 < extra < 400
    assert runs[5][3]["bytes_sent"] == runs[5][4]["bytes_sent"] == 0


def test_the_committees_noise_follows_the_exact_pmf(runs):
    """χ² of the 3,000 opened draws at m = 5 against the enumerated pmf, in 20 equal-mass bins, α = 5e-5 (the
    accept decisions use the dealt words XOR the coin, fresh every run: at 1e-3, used before, one correct CI run
    in 1,000 would fail here). Power at 5e-5 (noncentral χ², 19 df): a σ 15% too large gives λ = 110, power
    1 − 1.1e-5; 15% too small λ = 116, 1 − 3.1e-6 (10% too large: λ = 49.5, 0.85)."""
    plan = dg.plan_for(SIGMA)
    chunks = list(dg.exact_log_pmf(plan))
    n = np.concatenate([c[0] for c in chunks])
    p = np.exp(np.concatenate([c[1] for c in chunks]))
    cdf = np.cumsum(p)
    edges = np.searchsorted(cdf, np.linspace(0, 1, 21)[1:-1])
    x = runs[5][0]["values"].numpy()
    assert all(torch.equal(r["values"], runs[5][0]["values"]) for r in runs[5])
    observed = np.bincount(np.searchsorted(n[edges], x, side="left"), minlength=20)
    expected = np.diff(np.concatenate([[0.0], cdf[edges], [1.0]])) * x.size
    assert stats.chisquare(observed, expected).pvalue > 5e-5


def test_every_partys_share_is_a_uniform_word(runs):
    """A non-member's share is its part of a sharing of zero; a member's is masked by it too: each looks
    uniform on 64 bits (KS at α = 2e-6 each, fresh keys: family-wise 1e-5 over the 5 parties). Without the
    re-randomisation the non-members' shares would be 0 (KS distance 0.5 on 3,000 words: p < 1e-600)."""
    for party in runs[5]:
        words = party["share"].double() / 2.0**64 + 0.5
        assert stats.kstest(words.numpy(), "uniform").pvalue > 2e-6


def test_without_a_dealer_the_committee_is_the_three_generators():
    with pytest.raises(ConfigError, match="noise_committee.*Found noise_committee=4"):
        MpcConfig(parties=5, provider="honest-majority", noise_committee=4)
    with pytest.raises(ConfigError, match="noise_committee"):
        MpcConfig(parties=5, noise_committee=1)
