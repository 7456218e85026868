"""The CrypTen adapter is needed (plain `import crypten` fails on torch 2.13) and sufficient (through it,
CrypTen imports and runs in fresh interpreters, including spawned party processes), and it is the only
module of the project that imports crypten."""

import pathlib
import re
import subprocess
import sys

import torch

from mpcdp.runtime.harness import run_parties
from party_jobs import sum_once

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_plain_import_of_crypten_fails_on_this_torch():
    result = _python("import crypten")
    assert result.returncode != 0
    assert "torch.onnx._internal.registration" in result.stderr


def test_the_adapter_makes_crypten_import_and_compute_in_a_fresh_interpreter():
    result = _python(
        "from mpcdp.backends import crypten_backend as b\n"
        "import sys, torch\n"
        "assert 'crypten' in sys.modules\n"
        "crypten = sys.modules['crypten']\n"
        "crypten.init_thread(0, 1)\n"
        "x = crypten.cryptensor(torch.tensor([1.5, -2.25]))\n"
        "print((x + x).get_plain_text().tolist())\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[3.0, -4.5]"


def test_spawned_parties_get_the_adapter_too(config_for):
    results = run_parties(sum_once, config_for(2), party_args=[(torch.ones(3),), (torch.full((3,), 2.0),)])
    assert results[1].tolist() == [3.0, 3.0, 3.0]


def test_only_the_adapter_imports_crypten():
    pattern = re.compile(r"^\s*(import crypten|from crypten[\s.])", re.MULTILINE)
    importers = sorted(str(p.relative_to(ROOT)) for folder in ("mpcdp", "tests", "benchmarks", "launch")
                       for p in (ROOT / folder).rglob("*.py") if pattern.search(p.read_text()))
    assert importers == ["mpcdp/backends/crypten_backend.py"]


def test_importing_mpcdp_does_not_import_crypten():
    result = _python("import sys, mpcdp, mpcdp.config, mpcdp.cli; print('crypten' in sys.modules)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
