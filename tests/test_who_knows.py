"""Who could learn a run's noise (mpcdp.noise.who_knows): the sentence for every provider, committee and mode,
and in a training run's report."""

from __future__ import annotations

import pytest

from mpcdp.learning.mechanisms import MECHANISMS
from mpcdp.noise.who_knows import noise_known_to


@pytest.mark.parametrize("kwargs, expected", [
    (dict(drawn_by=MECHANISMS["dgauss"].drawn_by, provider="dealer", parties=3), "the dealer with any one data party, or every data party "
                                                         "together"),
    (dict(drawn_by=MECHANISMS["dgauss"].drawn_by, provider="dealer", parties=5, committee=5), "the dealer with any one data party, or every "
                                                                      "data party together"),
    (dict(drawn_by=MECHANISMS["dgauss"].drawn_by, provider="dealer", parties=5),
     "the dealer with any one of parties 0–2 (the noise committee), or parties 0–2 together, who then know it "
     "without parties 3–4 (noise_committee = 5 makes every data party a member)"),
    (dict(drawn_by=MECHANISMS["dgauss"].drawn_by, provider="dealer", parties=3, committee=2),
     "the dealer with any one of parties 0 and 1 (the noise committee), or parties 0 and 1 together, who then "
     "know it without party 2 (noise_committee = 3 makes every data party a member)"),
    (dict(drawn_by=MECHANISMS["dgauss"].drawn_by, provider="honest-majority", parties=6),
     "any two of parties 0–2 together (with or without others); not one of them alone, with any number of the "
     "other parties"),
    (dict(drawn_by=MECHANISMS["rou"].drawn_by, provider="dealer", parties=5), "the dealer with any one data party, or every data party "
                                                      "together"),  # every party samples rou
    (dict(drawn_by=MECHANISMS["distributed"].drawn_by, provider="dealer", parties=4, colluders=1),
     "all 4 data parties together (each adds its own share in plaintext; the certificate covers any 1 of them)"),
    (dict(drawn_by=MECHANISMS["dgauss"].drawn_by, provider="dealer", parties=3, backend="simulated"),
     "this process: the noise is drawn in plaintext"),
])
def test_who_could_learn_the_noise(kwargs, expected):
    assert noise_known_to(**kwargs) == expected


def test_a_training_report_says_who_could_learn_its_noise():
    """The quick start's plan, secure and simulated, and with a committee smaller than m."""
    import dataclasses

    from mpcdp.jobs.train import plan_from, plan_noise_known_to

    plan = plan_from("protocols/quickstart-a9a.toml", backend="mpc")
    assert plan_noise_known_to(plan) == "the dealer with any one data party, or every data party together"
    assert plan_noise_known_to(plan_from("protocols/quickstart-a9a.toml", backend="simulated")).startswith(
        "this process")
    wider = dataclasses.replace(plan, parties=5, mpc=plan.mpc.replaced(noise_committee=3))
    assert "without parties 3–4" in plan_noise_known_to(wider)
