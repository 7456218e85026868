"""Independent cross-check of every shipped protocol's certificate, recomputed from its printed parameters.

For every training protocol (and every variant and size ratio of a sweep) the certificate the run would print
is recomputed here with dp-accounting and scipy directly, not through mpcdp's calibrators or event builders:
* the printed integer sensitivity covers the rounding: (Δ_int − Δ·2^p)² >= d, in exact rational arithmetic;
* the released noise multiplier is σ_units/Δ_int from the printed grid;
* the accountant's ε at the printed δ_gaussian, for that noise multiplier, plus the printed residual, is at
  most the printed ε, and the printed δ pieces add up to at most the protocol's δ. Full-batch runs: the μ-GDP
  curve in closed form. Batches without replacement: the PLD accountant's δ(ε) for the event rebuilt here (the
  accountant itself is checked against brute force and an independent bound in tests/test_wor_pld.py), and the
  printed RDP comparison value equals dp-accounting's own RDP accountant on that event;
* the printed residual is at least 2·D·η for the sampler plans of the printed σ_units.
"""

from __future__ import annotations

import fractions
import math
import pathlib

import dp_accounting
import pytest
from dp_accounting import rdp
from scipy import stats

from mpcdp.data.registry import load
from mpcdp.data.split import split_indices
from mpcdp.accounting import wor_pld
from mpcdp.jobs.train import FULL_BATCH, plan_from, plan_noise
from mpcdp.learning.paper_networks import NETWORKS
from mpcdp.noise import discrete_gaussian as dg
from mpcdp.validation import read_protocol

PROTOCOLS = pathlib.Path(__file__).resolve().parent.parent / "protocols"
ORDERS = [*range(2, 33), 36, 40, 44, 48, 56, 64, 80, 96, 128, 192, 256]  # the orders mpcdp prints ε_rdp at


def _cases():
    """(protocol file, algorithm override, size-ratio override) for every private training run shipped."""
    cases = []
    for path in sorted(PROTOCOLS.glob("*.toml")):
        spec = read_protocol(str(path))
        algorithm = spec.get("algorithm", "srm")
        if "training" not in spec or "privacy" not in spec or algorithm in ("storm", "dp-agd", "wd-dp-local"):
            continue  # not private, or private without an MPC release (checked in test_accounting.py)
        if "dataset" not in spec:
            continue  # the parties' own files: certified for their counts by each run (tests/test_own_data.py)
        if spec.get("noise", {}).get("mode", "dgauss") != "dgauss":
            continue  # distributed noise: tests/test_distributed_noise.py
        sweep = spec.get("sweep", {})
        variants = [v for v in sweep.get("variants", [algorithm]) if not v.startswith("wd-dp-local")]
        ratios = sweep.get("size_ratios", [None])
        cases += [(path.name, v, r) for v in variants for r in ratios]
    return cases


CASES = _cases()


@pytest.fixture(scope="module")
def shapes():
    cache = {}

    def of(dataset: str, model: str | None):
        if (dataset, model) not in cache:
            data = load(dataset)
            dim = NETWORKS[model].dim if model and model != "logreg" else data.x_train.shape[1]
            cache[dataset, model] = (len(data.y_train), dim)
        return cache[dataset, model]
    return of


def _rdp_epsilon(event, delta: float) -> float:
    accountant = rdp.RdpAccountant(orders=ORDERS, neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    accountant.compose(event)
    return accountant.get_epsilon(delta)


def _check_pld(event, pieces: dict) -> float:
    """The without-replacement event rebuilt from the printed grid: the PLD accountant's δ at the printed ε is
    within the printed δ, and the printed RDP comparison value is dp-accounting's own for this event."""
    assert pieces["accountant_method"].startswith("PLD") and pieces["accountant_core"] == wor_pld.ACCOUNTANT
    epsilon, delta = pieces["epsilon_accountant"], pieces["delta_gaussian"]
    assert wor_pld.pld_delta(event, epsilon) <= delta * (1 + 1e-9)
    assert pieces["epsilon_rdp"] == pytest.approx(_rdp_epsilon(event, delta), rel=1e-9)
    assert epsilon < pieces["epsilon_rdp"]
    return epsilon


def _gdp_delta(mu: float, epsilon: float) -> float:
    return stats.norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * stats.norm.cdf(-epsilon / mu - mu / 2)


def test_every_private_training_protocol_is_covered():
    names = {name for name, _, _ in CASES}
    assert {"quickstart-a9a.toml", "ddpsrm-a9a-eps0.5.toml", "ddpsrm-mnist5k-eps3.toml", "dpsgd-mnist5k-eps3.toml",
            "uneven-a9a.toml", "dpgd-a9a-eps0.5.toml", "ddpsrm-fashion-eps3.toml"} <= names
    assert len(CASES) >= 25


@pytest.mark.parametrize("name, algorithm, ratio", CASES, ids=[f"{n}:{a}:{r}" for n, a, r in CASES])
def test_the_printed_certificate_holds_for_the_released_grid(name, algorithm, ratio, shapes):
    plan = plan_from(str(PROTOCOLS / name), algorithm=algorithm, size_ratio=ratio)
    n, dim = shapes(plan.dataset, plan.model)
    sizes = tuple(len(p) for p in split_indices(n, plan.parties, ratio=plan.size_ratio, seed=plan.params.seed))
    noise = plan_noise(plan, sizes, dim)
    certificate = noise.certificate
    pieces = certificate.pieces
    grid = pieces["releases"]
    # 1. the integer sensitivity covers Δ·2^p + √d, exactly
    for kind in grid:
        assert kind["dim"] == dim
        scaled = fractions.Fraction(kind["sensitivity"]) * 2 ** kind["precision"]
        assert kind["sensitivity_units"] > scaled and (kind["sensitivity_units"] - scaled) ** 2 >= dim, kind
    z = [kind["sigma_units"] / kind["sensitivity_units"] for kind in grid]
    coordinates = dim * sum(kind["rows"] for kind in grid)
    assert pieces["noise_coordinates"] == coordinates
    # 2. the accountant, rebuilt from the printed grid
    delta_gaussian, steps = pieces["delta_gaussian"], noise.steps
    if plan.algorithm in FULL_BATCH:
        mu = math.sqrt(steps) / z[0]
        assert _gdp_delta(mu, pieces["epsilon_accountant"]) <= delta_gaussian * (1 + 1e-9)
        epsilon = pieces["epsilon_accountant"]
    elif plan.algorithm in ("dp-sgd", "rrpsgd"):
        j = max(range(len(sizes)), key=lambda i: plan.params.batch / sizes[i])  # equal batches: the smallest party
        step = dp_accounting.SampledWithoutReplacementDpEvent(sizes[j], plan.params.batch,
                                                              dp_accounting.GaussianDpEvent(z[0]))
        epsilon = _check_pld(dp_accounting.SelfComposedDpEvent(step, steps), pieces)
    else:
        j = max(range(len(sizes)), key=lambda i: 1 / sizes[i])
        first = dp_accounting.SampledWithoutReplacementDpEvent(sizes[j], noise.params.batch0,
                                                               dp_accounting.GaussianDpEvent(z[0]))
        later = dp_accounting.SampledWithoutReplacementDpEvent(sizes[j], noise.params.batch,
                                                               dp_accounting.GaussianDpEvent(z[1]))
        epsilon = _check_pld(dp_accounting.ComposedDpEvent([first, dp_accounting.SelfComposedDpEvent(later, steps)]),
                             pieces)
    # 3. the residual covers every opened coordinate at the worst η of the printed plans
    eta = max(dg.plan_for(kind["sigma_units"]).eta_rounded for kind in grid)
    assert pieces["epsilon_residual"] >= 2 * coordinates * eta * (1 - 1e-6)
    assert epsilon + pieces["epsilon_residual"] <= certificate.epsilon * (1 + 1e-9)
    if plan.calibration == "certified":
        assert certificate.epsilon <= plan.epsilon
    total_delta = delta_gaussian + pieces["delta_truncation"] + pieces["delta_residual"]
    assert total_delta == pytest.approx(certificate.delta, rel=1e-12) and certificate.delta <= plan.delta
