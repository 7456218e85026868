"""A mechanism's record carries what the rest of mpcdp asks of it — its in-MPC sampling cost (the estimate and
the default time-out), its circuit (every record's stamp), who draws it (`noise_known_to`) and, for a comparison
sampler, the acceptance rate `mpcdp noise` checks — so no code outside the registry branches on its name."""

from __future__ import annotations

import ast
import dataclasses
import math
import pathlib

import pytest

from mpcdp.errors import ConfigError
from mpcdp.jobs.estimate import estimate_plan
from mpcdp.jobs.report import write_record
from mpcdp.jobs.train import plan_from, plan_noise, plan_noise_known_to, run_plan
from mpcdp.learning import mechanisms
from mpcdp.learning.mechanisms import MECHANISMS, NoiseChoice
from mpcdp.noise import discrete_gaussian as dg

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROTOCOL = "protocols/smoke-breast-cancer.toml"
# where a mechanism's name may be compared or looked up: the registry itself and the samplers it registers
REGISTRY_FILES = {"mpcdp/learning/mechanisms.py", "mpcdp/noise/modes.py"}


@pytest.fixture
def renamed_dgauss():
    """The discrete Gaussian's record again under another name: everything it declares, nothing named "dgauss"."""
    copy = dataclasses.replace(MECHANISMS["dgauss"], name="dgauss-renamed", id="dgauss-renamed/1")
    mechanisms.register(copy)
    try:
        yield copy
    finally:
        MECHANISMS.pop(copy.name)


def _estimate(mode: str):
    plan = dataclasses.replace(plan_from(PROTOCOL, backend="mpc"), noise=NoiseChoice(mode))
    sizes, dim = (190, 190, 189), 31
    return estimate_plan(plan, plan_noise(plan, sizes, dim), dim)


def test_the_estimate_takes_the_sampling_cost_from_the_record_not_from_the_name(renamed_dgauss):
    """Before the record declared its cost, any mechanism not named "dgauss" was estimated to sample for free
    (and so got the shortest default time-out)."""
    original, renamed = _estimate("dgauss"), _estimate(renamed_dgauss.name)
    assert renamed.party_bytes == original.party_bytes and renamed.dealer_bytes == original.dealer_bytes
    assert renamed.presample_s == original.presample_s > 0
    free = _estimate("distributed")  # drawn by each party in plaintext: nothing sampled inside the MPC
    assert free.presample_s == 0 and max(free.party_bytes) < max(original.party_bytes)


def test_a_record_is_stamped_with_its_mechanisms_circuit(renamed_dgauss, tmp_path):
    written = write_record(str(tmp_path / "r"), {"x": 1}, "# t\n", mechanism=renamed_dgauss.id)["record"]
    assert written["mechanism"] == renamed_dgauss.id and written["circuit"] == renamed_dgauss.circuit
    plain = write_record(str(tmp_path / "d"), {"x": 1}, "# t\n", mechanism=MECHANISMS["distributed"].id)["record"]
    assert "circuit" not in plain  # distributed noise runs no protocol of its own inside the MPC


def test_who_could_learn_the_noise_follows_the_records_drawn_by(renamed_dgauss):
    plan = dataclasses.replace(plan_from(PROTOCOL, backend="mpc", parties=5), noise=NoiseChoice(renamed_dgauss.name))
    assert "(the noise committee)" in plan_noise_known_to(plan)


def test_a_record_must_say_who_draws_its_noise():
    with pytest.raises(Exception, match="`drawn_by` must be one of"):
        dataclasses.replace(MECHANISMS["rou"], name="nobody-draws", drawn_by="the moon")


def _name_comparisons(path: pathlib.Path, names: set[str]) -> list[str]:
    """Each place in ``path`` that compares with a mechanism's name or looks one up by a literal name."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        literals: list[ast.expr] = []
        if isinstance(node, ast.Compare):
            literals = [node.left, *node.comparators]
        elif isinstance(node, ast.Subscript):
            literals = [node.slice]
        for literal in literals:
            if isinstance(literal, ast.Constant) and literal.value in names:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_code_outside_the_registry_branches_on_a_mechanisms_name():
    names = set(MECHANISMS)
    found = [hit for path in sorted((ROOT / "mpcdp").rglob("*.py"))
             if str(path.relative_to(ROOT)) not in REGISTRY_FILES for hit in _name_comparisons(path, names)]
    assert not found, "branches on a mechanism's name (declare it on the record instead):\n" + "\n".join(found)


@pytest.fixture
def toy_grid():
    """tests/toy_grid_mechanism.py's record (the rounded Gaussian, a sampler plan of its own), registered."""
    import toy_grid_mechanism

    mechanisms.register(toy_grid_mechanism.RECORD)
    try:
        yield toy_grid_mechanism
    finally:
        MECHANISMS.pop(toy_grid_mechanism.NAME)


def test_a_mechanism_with_its_own_sampler_plan_is_calibrated_certified_and_estimated_unedited(toy_grid):
    """The grid (GridRelease), the one calibrate/certify path, the certificate's release pieces, the reported σ
    and the estimate read a mechanism's sampler only through its record and the GridPlan interface: a plan that
    is not the discrete Gaussian's goes through them as it is."""
    plan = dataclasses.replace(plan_from(PROTOCOL, backend="mpc"), noise=NoiseChoice(toy_grid.NAME))
    sizes, dim = (190, 190, 189), 31
    noise = plan_noise(plan, sizes, dim)
    pieces = noise.certificate.pieces
    assert pieces["mechanism"] == toy_grid.RECORD.id and pieces["epsilon_residual"] == 0.0
    assert noise.certificate.epsilon <= plan.epsilon and noise.certificate.delta <= plan.delta
    for release, kind in zip(noise.levels.releases, pieces["releases"], strict=True):
        own = release.plan
        assert isinstance(own, toy_grid.RoundedPlan) and release.sampler is toy_grid.SAMPLER
        assert own.sigma == own.steps / 64 >= release.sigma_units
        assert dg.plan_for(release.sigma_units).sigma != own.sigma  # the discrete Gaussian's would differ
        assert release.sigma == own.sigma * 2.0**-release.precision and kind["sigma_units"] == own.sigma
    assert noise.levels.sigmas == tuple(r.sigma for r in noise.levels.releases)
    estimate = estimate_plan(plan, noise, dim)
    assert estimate.presample_s == 0 and estimate.party_bytes == _estimate("distributed").party_bytes
    with pytest.raises(ConfigError, match="runs the discrete Gaussian sampler; the release's sampler is 'rounded"):
        MECHANISMS["dgauss"].sampler_passes(noise.levels.later, 10)  # the boundary: dgauss code refuses it


def test_a_mechanism_with_its_own_sampler_plan_trains_and_is_stamped(toy_grid, tmp_path):
    """A whole simulated run with the toy's noise (its rows, its plan's σ in the report) and its record's stamp."""
    plan = dataclasses.replace(plan_from(PROTOCOL, backend="simulated"), noise=NoiseChoice(toy_grid.NAME))
    report = run_plan(plan, curve=False)
    assert report["mechanism"] == toy_grid.RECORD.id and report["epsilon"] <= plan.epsilon
    grid = report["release_grid"][-1]
    assert grid["sigma_units"] == math.ceil(grid["noise_multiplier"] * grid["sensitivity_units"] * 64) / 64
    assert report["sigma"] == grid["sigma"] == grid["sigma_units"] * 2.0**-grid["precision"]
    written = write_record(str(tmp_path / "r"), {"x": 1}, "# t\n", mechanism=toy_grid.RECORD.id)["record"]
    assert written["mechanism"] == toy_grid.RECORD.id and "circuit" not in written
