"""The shipped calibrations (mpcdp.learning.calibration_cache): every entry is what recomputing gives (floats to
1e-9 relative, everything else exactly), a lookup trusts an entry only under the key of the run's own inputs, and
the main job's launcher takes its certificate from the cache without importing dp-accounting, SciPy or CrypTen."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest

from mpcdp.jobs import calibrations, train
from mpcdp.learning import algorithms, calibration_cache

SHIPPED = json.loads(calibration_cache.PATH.read_text())


def test_every_protocol_the_cache_names_is_shipped_once():
    assert sorted(e["protocol"] for e in SHIPPED.values()) == sorted(calibrations.SHIPPED)


# The calibration's root finding and the PLD accountant come out different in the 11th digit on another CPU or
# another numpy / SciPy build (1.5e-10 relative seen between two machines of this kind): a recomputed entry
# must agree with the shipped one to this relative tolerance, and in everything that is not a float exactly.
REL = 1e-9


def _agrees(got, shipped, where: str) -> None:
    if isinstance(shipped, dict):
        assert isinstance(got, dict) and got.keys() == shipped.keys(), where
        for key in shipped:
            _agrees(got[key], shipped[key], f"{where}.{key}")
    elif isinstance(shipped, list):
        assert isinstance(got, list) and len(got) == len(shipped), where
        for i, (a, b) in enumerate(zip(got, shipped)):
            _agrees(a, b, f"{where}[{i}]")
    elif isinstance(shipped, float):
        assert isinstance(got, float) and got == pytest.approx(shipped, rel=REL, abs=0.0), where
    else:
        assert got == shipped, where


@pytest.mark.parametrize("key", sorted(SHIPPED))
def test_a_shipped_entry_is_what_recomputing_gives(key):
    entry = SHIPPED[key]
    assert calibration_cache.key_of(entry["inputs"]) == key == entry["key"]
    assert entry["certificate"]["epsilon"] <= entry["inputs"]["epsilon"]
    _agrees(calibrations.computed_entry(entry["protocol"]), entry, "entry")  # every piece, floats to REL


def _quickstart():
    plan = train.plan_from("protocols/quickstart-a9a.toml")
    _, x, _, parts = train.training_split(plan)
    setting = train.plan_setting(plan, tuple(len(p) for p in parts), plan.trained_model.dimension(x))
    kinds = plan.record.releases(plan.params, setting).kinds
    inputs = calibration_cache.inputs_of(plan.record.name, plan.params, setting, kinds, public_batches=False,
                                         mechanism=setting.noise.record.id)
    return plan, setting, inputs


def test_a_hit_is_the_computed_noise_and_says_so():
    plan, setting, inputs = _quickstart()
    cached = algorithms.plan_noise(plan.record, plan.params, setting)
    computed = algorithms.plan_noise(plan.record, plan.params, setting, cached=False)
    assert cached.report["certificate_from"].endswith("key " + calibration_cache.key_of(inputs))
    assert computed.report["certificate_from"] == "computed"
    _agrees(json.loads(json.dumps(dataclasses.asdict(computed.levels))),
            json.loads(json.dumps(dataclasses.asdict(cached.levels))), "levels")
    _agrees(json.loads(json.dumps(dataclasses.asdict(computed.certificate))),
            json.loads(json.dumps(dataclasses.asdict(cached.certificate))), "certificate")


@pytest.mark.parametrize("change", [{"epsilon": 0.6}, {"dp_accounting": "0.5.0"}, {"accountant": "another/1"},
                                    {"party_sizes": [10854, 10854, 10852]}, {"public_batches": True}])
def test_any_other_input_misses(change):
    _, _, inputs = _quickstart()
    assert calibration_cache.lookup(inputs) is not None
    assert calibration_cache.lookup({**inputs, **change}) is None


def test_an_entry_filed_under_another_key_is_not_trusted(tmp_path):
    _, _, inputs = _quickstart()
    key = calibration_cache.key_of(inputs)
    moved = tmp_path / "calibrations.json"
    moved.write_text(json.dumps({key: {**SHIPPED[key], "key": "0" * 64}}))
    assert calibration_cache.lookup(inputs, moved) is None
    assert calibration_cache.lookup(inputs, tmp_path / "absent.json") is None


LAUNCHER = """
import sys
from mpcdp.cli import build_parser
from mpcdp.jobs import train
build_parser()
plan = train.plan_from("protocols/quickstart-a9a.toml")
_, x, _, parts = train.training_split(plan)
noise = train.plan_noise(plan, tuple(len(p) for p in parts), plan.trained_model.dimension(x))
print(noise.report["certificate_from"])
print(sorted(m for m in ("dp_accounting", "scipy", "crypten", "mpcdp.adapter") if m in sys.modules))
"""


def test_the_main_jobs_launcher_prepares_without_dp_accounting_scipy_or_crypten():
    done = subprocess.run([sys.executable, "-c", LAUNCHER], capture_output=True, text=True, check=True)
    source, imported = done.stdout.splitlines()[-2:]
    assert source.startswith("the shipped calibrations")
    assert imported == "[]"
