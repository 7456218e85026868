"""The CrypTen adapter is needed (plain `import crypten` fails on torch 2.13) and sufficient (through it,
CrypTen imports and runs in fresh interpreters, including spawned party processes), and it is the only
module of the project that imports crypten."""

import pytest
import os
import pathlib
import re
import subprocess
import sys

import warnings

import torch

from mpcdp.runtime.harness import run_parties
from party_jobs import sum_once

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


@pytest.mark.smoke
def test_plain_import_of_crypten_fails_on_this_torch():
    result = _python("import crypten")
    assert result.returncode != 0
    assert "torch.onnx._internal.registration" in result.stderr


@pytest.mark.smoke
def test_the_adapter_makes_crypten_import_and_compute_in_a_fresh_interpreter():
    result = _python(
        "from mpcdp import adapter as b\n"
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
    assert importers == ["mpcdp/adapter/compat.py"]


def test_importing_mpcdp_does_not_import_crypten():
    result = _python("import sys, mpcdp, mpcdp.config, mpcdp.cli; print('crypten' in sys.modules)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


@pytest.mark.smoke
def test_crypten_torch_function_dispatch_is_still_only_deprecated():
    """CrypTen's `__torch_function__` is a plain method; torch 2.13 warns it "will be an error in future".
    mpcdp's protocols do not go through it, but crypten.nn does: the day torch turns the warning into an
    error this test fails and says so (pytest also turns the warning into an error in-process)."""
    result = _python(
        "from mpcdp import adapter as b\n"
        "import sys, torch, warnings\n"
        "crypten = sys.modules['crypten']\n"
        "crypten.init_thread(0, 1)\n"
        "x = crypten.cryptensor(torch.tensor([1.0]))\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    y = torch.cat([x, x])\n"
        "print(y.get_plain_text().tolist())\n"
        "print(any('as a plain method is deprecated' in str(w.message) for w in caught))\n")
    assert result.returncode == 0, f"torch.cat on a CrypTensor now fails:\n{result.stderr[-2000:]}"
    assert result.stdout.split() == ["[1.0,", "1.0]", "True"]


def test_shared_and_crypten_tensors_convert_into_each_other_without_opening(config_for):
    """3 parties: mpcdp's secure sum becomes a CrypTen MPCTensor and back with the same share, no opening, no
    byte; CrypTen multiplies and compares it; a CrypTen input comes back as an mpcdp Shared value."""
    from party_jobs import crypten_interop

    inputs = [torch.tensor([1.5, -2.0, 0.25]), torch.tensor([0.5, 1.0, -1.0]), torch.tensor([-1.0, 0.5, 2.0])]
    results = run_parties(crypten_interop, config_for(3), party_args=[(x,) for x in inputs])
    total = sum(inputs)
    for r in results:
        trip = r["round_trip"]
        assert trip["same_share"] and trip["openings"] == 0 and trip["bytes"] == 0 and trip["rounds"] == 0
        assert trip["precision_bits"][0] == trip["precision_bits"][1]
        assert torch.allclose(r["sum"], total.double(), atol=1e-4)
        assert torch.allclose(r["squared"], (total * total).double(), atol=1e-3)
        assert r["positive"].tolist() == [float(v > 0) for v in total]
        assert torch.allclose(r["party0"], inputs[0].double(), atol=1e-4)
        assert r["opened"] == ["sum", "squared", "positive", "party 0's input"]


def test_crypten_reveal_to_one_party_and_broadcast_behave_as_crypten(config_for):
    """`get_plain_text(dst=1)` gives the value on party 1 and None elsewhere (CrypTen's reduce); broadcast
    fills every party's own tensor in place, float32 and int32 included, and returns it."""
    from party_jobs import crypten_collectives

    values = run_parties(crypten_collectives, config_for(3))
    assert values[0]["to_one"] is None and values[2]["to_one"] is None
    assert torch.allclose(values[1]["to_one"], torch.tensor([1.5, -2.25]), atol=1e-4)
    for v in values:
        assert v["same_object"] and v["batched_same"]
        assert v["mine"].dtype == torch.float32 and torch.equal(v["mine"], torch.zeros(3))
        assert v["counts"].dtype == torch.int32 and v["counts"].tolist() == [7, 9]


def test_crypten_generators_drawn_through_torch_agree_pairwise_and_differ_between_pairs(config_for):
    """As CrypTen seeds them: party i's `next` draws what party i+1's `prev` draws, and the three pairs differ
    (unseeded, every party drew the same numbers)."""
    from party_jobs import crypten_generator_draws

    values = run_parties(crypten_generator_draws, config_for(3))
    for i in range(3):
        assert torch.equal(values[i]["next"], values[(i + 1) % 3]["prev"])
    assert len({tuple(v["next"].tolist()) for v in values}) == 3


def test_crypten_save_and_load_round_trip_and_refuse_other_pickles(config_for, tmp_path):
    """torch 2.13 loads with `weights_only=True`, which refused every CrypTen class: `crypten.load` of what
    `crypten.save` wrote now gives the same shares back on every party; a file naming another global (here
    `os.system`) is still refused, in one line naming it; `crypten.load_from_party` shares a module party 0
    saved (its structure travels as JSON, not pickle), zeroed off party 0 as CrypTen does; the tuple
    provider's cache and an encrypted module's state dict load back too."""
    from party_jobs import crypten_save_load

    values = run_parties(crypten_save_load, config_for(2), args=(str(tmp_path),))
    for rank, v in enumerate(values):
        assert v["same_share"] and v["type"] == "MPCTensor"
        assert torch.allclose(v["plain"], torch.tensor([1.5, -2.25, 4.0]), atol=1e-4)
        assert "it names posix.system" in v["refusal"] and "\n" not in v["refusal"]
        assert v["module"] == "Linear" and v["src"] == 0 and v["bias_dtype"] == torch.float32
        assert torch.equal(v["weights"], torch.full((2, 3), 7.0 if rank == 0 else 0.0))
        assert v["cache_kept"] and v["state_dict_kept"]


def test_crypten_object_messages_carry_modules_as_json_and_refuse_other_classes():
    """What `broadcast_obj` sends: a module on CrypTen's allow-list, a size and typed tensors come back as they
    were (dtype, parameter, tuple), with no pickle on the wire; a class off the allow-list is refused naming
    the sender."""
    from mpcdp.adapter import object_messages
    from mpcdp.errors import ProtocolViolation
    from mpcdp.transport import public

    def through_the_wire(value):
        return object_messages.decode(public.decode(public.encode(object_messages.encode(value)), peer=1,
                                                    label="test"), peer=1)

    model = torch.nn.Linear(4, 2)
    back = through_the_wire({"model": model, "size": torch.Size([2, 3]), "counts": torch.arange(3, dtype=torch.int32)})
    assert isinstance(back["model"], torch.nn.Linear) and back["model"].in_features == 4
    assert isinstance(back["model"].weight, torch.nn.Parameter) and torch.equal(back["model"].weight, model.weight)
    assert back["size"] == (2, 3) and back["counts"].dtype == torch.int32
    forged = object_messages.encode(torch.nn.Sequential())  # torch.nn.Sequential is not on CrypTen's list
    with pytest.raises(ProtocolViolation, match="party 1 .*Sequential"):
        object_messages.decode(forged, peer=1)
    with pytest.raises(TypeError):
        object_messages.encode(os.system)


def test_crypten_from_pytorch_converts_without_onnxscript():
    """torch 2.13's `torch.onnx.export` defaults to the dynamo exporter, which needs onnxscript (not installed),
    and its TorchScript exporter merges initializers of equal values through `Identity` nodes, which CrypTen
    cannot convert (here two zero biases). Through the adapter `crypten.nn.from_pytorch` converts the model
    with a parameter for each of its own, and computes what the torch model does."""
    from mpcdp.adapter.compat import crypten

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 3))
    with torch.no_grad():
        model[0].bias.zero_()
        model[2].bias.zero_()
    x = torch.randn(5, 4)
    with warnings.catch_warnings(record=True) as seen:  # torch's exporter and CrypTen's read-only arrays: none
        warnings.simplefilter("always")
        converted = crypten.nn.from_pytorch(model, x)
    assert [str(w.message)[:80] for w in seen] == []
    assert len(list(converted.parameters())) == len(list(model.parameters())) == 4
    assert torch.allclose(converted(x), model(x), atol=1e-5)


def test_crypten_leaves_no_top_level_benchmarks_package_to_shadow_this_repositorys(tmp_path):
    """CrypTen 0.4.1's wheel installs its own benchmark scripts as a top-level package `benchmarks`;
    launch/install.sh removes it, so outside this repository's root `import benchmarks` finds nothing, not CrypTen's
    scripts in place of benchmarks/ (or of a user's package of that name)."""
    probe = "import importlib.util as u; s = u.find_spec('benchmarks'); print(s.origin if s else None)"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    found = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True,
                           check=True).stdout.strip()
    assert found == "None", found
