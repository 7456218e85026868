"""A mechanism's record carries what the rest of mpcdp asks of it — its in-MPC sampling cost (the estimate and
the default time-out), its circuit (every record's stamp), who draws it (`noise_known_to`) and, for a comparison
sampler, the acceptance rate `mpcdp noise` checks — so no code outside the registry branches on its name."""

from __future__ import annotations

import ast
import dataclasses
import pathlib

import pytest

from mpcdp.jobs.estimate import estimate_plan
from mpcdp.jobs.report import write_record
from mpcdp.jobs.train import plan_from, plan_noise, plan_noise_known_to
from mpcdp.learning import mechanisms
from mpcdp.learning.mechanisms import MECHANISMS, NoiseChoice

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
