"""Providers are records of one registry (mpcdp.providers): a toy provider in one file (tests/toy_provider.py),
loaded as a plugin, runs real secure jobs — party processes, `mpcdp noise`, `mpcdp cost` and `mpcdp train` —
and gives exactly what the built-in honest-majority provider gives where it must; a record that lacks a member
of the interface is refused, naming the member."""

import importlib
import json
import subprocess
import sys

import pytest
import torch

from mpcdp import cli, plugins, providers
from mpcdp.config import MpcConfig
from mpcdp.errors import ConfigError, InsecureProviderError
from mpcdp.runtime.harness import run_job
import forked
from party_jobs import material_and_provider

TOY = "toy-honest-majority"
N = 200


@pytest.fixture(autouse=True)
def toy(monkeypatch):
    """The toy provider registered (imported as `--plugin toy_provider` imports it) in a copy of the registry:
    after the test, neither it nor anything else the test registered is left in this process's registry."""
    monkeypatch.setattr(providers, "PROVIDERS", dict(providers.PROVIDERS))
    sys.modules.pop("toy_provider", None)
    try:
        yield importlib.import_module("toy_provider")
    finally:
        sys.modules.pop("toy_provider", None)


@pytest.fixture
def main(monkeypatch, capsys):
    """`mpcdp --plugin toy_provider ARGS` in this process; its exit code and the last line it printed."""
    monkeypatch.setenv(plugins.ENVIRONMENT, "")

    def run(*args: str) -> tuple[int, str, str]:
        code = cli.main(["--plugin", "toy_provider", *args])
        out = capsys.readouterr()
        assert code == 0, out.err[-3000:]
        return code, out.out, out.err
    return run


class Complete:
    """Every member of the interface (a record that changes nothing: for the refusals below)."""

    name = "complete"
    summary = "nobody"
    has_dealer = False
    min_parties = 2
    insecure = False
    crypten_provider = "TTP"

    def check(self, config):
        pass

    def start(self, mesh, kit):
        pass

    def serve(self, kind, *args):
        raise RuntimeError("serves nothing")

    def stop(self, *, orderly=True):
        pass


def test_the_toy_is_a_provider_like_the_built_ins_and_configurations_ask_it():
    record = providers.PROVIDERS[TOY]
    assert isinstance(record, providers.Provider) and providers.lookup(TOY) is record
    assert providers.names()[:3] == ["dealer", "honest-majority", "tfp"] and TOY in providers.names()
    assert TOY in providers.names(insecure=False) and "tfp" not in providers.names(insecure=False)
    config = MpcConfig(parties=3, provider=TOY)
    assert config.provider_record is record and config.processes == 3  # no dealer process
    assert MpcConfig(parties=3).processes == 4
    with pytest.raises(ConfigError, match=r"^`provider` 'toy-honest-majority' needs `parties` >= 3 .*Found parties=2"):
        MpcConfig(parties=2, provider=TOY)
    with pytest.raises(ConfigError, match=r"`provider` must be one of \['dealer', 'honest-majority', 'tfp', "
                                          r"'toy-honest-majority'\]. Found 'nobody'."):
        MpcConfig(parties=3, provider="nobody")


def _lacking(*missing: str):
    """A record with every member of :class:`Complete` except ``missing``."""
    return type("Lacking", (), {key: value for key, value in vars(Complete).items()
                                if not key.startswith("__") and key not in missing})()


@pytest.mark.parametrize("missing", providers.MEMBERS)
def test_a_record_missing_a_member_is_refused_naming_it(missing):
    with pytest.raises(ConfigError, match=f"lacks `{missing}`$"):
        providers.register(_lacking(missing))
    assert "complete" not in providers.PROVIDERS


def test_a_record_with_a_wrong_member_or_a_taken_name_is_refused():
    def record(**members):
        return type("Variant", (Complete,), members)()

    with pytest.raises(ConfigError, match="lacks `serve`, `stop`$"):
        providers.register(_lacking("serve", "stop"))
    with pytest.raises(ConfigError, match=r"`has_dealer` must be a bool: 'complete' has 'no'"):
        providers.register(record(has_dealer="no"))
    with pytest.raises(ConfigError, match=r"`min_parties` must be an integer: 'complete' has True"):
        providers.register(record(min_parties=True))
    with pytest.raises(ConfigError, match=r"`check` must be a method: 'complete' has None"):
        providers.register(record(check=None))
    with pytest.raises(ConfigError, match=r"`crypten_provider` in \['TTP', 'TFP'\]"):
        providers.register(record(crypten_provider="TTC"))
    with pytest.raises(ConfigError, match="a provider named 'toy-honest-majority' is already registered"):
        providers.register(record(name=TOY))
    assert set(providers.PROVIDERS) == {"dealer", "honest-majority", "tfp", TOY}


def test_what_a_provider_declares_is_enforced_whatever_its_check_does():
    providers.register(type("Four", (Complete,), {"name": "four", "min_parties": 4})())
    providers.register(type("Loose", (Complete,), {"name": "loose", "insecure": True})())
    with pytest.raises(ConfigError, match=r"^`provider` 'four' needs `parties` >= 4. Found parties=3.$"):
        MpcConfig(parties=3, provider="four")
    assert MpcConfig(parties=4, provider="four").processes == 4
    with pytest.raises(InsecureProviderError, match=r"^`provider` 'loose' is insecure; .*insecure_dev=True"):
        MpcConfig(parties=3, provider="loose")


def test_the_command_line_takes_the_plugins_provider_and_refuses_it_without_the_plugin(monkeypatch):
    monkeypatch.setenv(plugins.ENVIRONMENT, "")
    for argv in (["aggregate"], ["noise"], ["cost"], ["train", "protocols/smoke-breast-cancer.toml"],
                 ["party", "--job", "train"]):
        ns = cli.parse_arguments(["--plugin", "toy_provider", *argv, "--provider", TOY])
        assert ns.provider == TOY, argv
    with pytest.raises(SystemExit):  # an insecure provider is no choice of train's (it has no --insecure-dev)
        cli.parse_arguments(["train", "protocols/smoke-breast-cancer.toml", "--provider", "tfp"])
    alone = forked.run([sys.executable, "-m", "mpcdp.cli", "aggregate", "--provider", TOY],
                       capture_output=True, text=True, timeout=120)
    assert alone.returncode == 2 and f"invalid choice: '{TOY}'" in alone.stderr


def test_party_processes_take_every_material_from_the_toy_with_no_dealer(monkeypatch):
    monkeypatch.setenv(plugins.ENVIRONMENT, "toy_provider")  # the party processes register it too
    run = run_job(material_and_provider, MpcConfig(parties=3, provider=TOY, timeout_s=90.0), args=(N,))
    assert run.dealer is None and len(run.values) == 3
    for value in run.values:
        assert value["provider"] == TOY and value["served"] == {"Products": 1, "MaskedBits": 1}
    a, c = (sum(v["products"][i] for v in run.values) for i in (0, 1))
    assert torch.equal(c[:, 0], a[:, 0] * a[:, 1])
    r = sum(v["masked"][0] for v in run.values)
    low = run.values[0]["masked"][1] ^ run.values[1]["masked"][1] ^ run.values[2]["masked"][1]
    assert torch.equal(r & ((1 << 40) - 1), low)


def test_mpcdp_noise_with_the_toy_runs_the_built_in_providers_protocol(main, tmp_path):
    """The toy runs honest-majority's protocol: the same rounds, no dealer, and bytes within 5% of the built-in's
    (they depend on how many candidates pass the sampler's first factor: public counts, about ±0.5%). The
    samples themselves differ: the Bernoulli factors' words are dealt words XOR the committee's coin, fresh in
    every run whatever --seed fixes. Either run needs a second pass with probability < 1e-5 (a 4.4σ shortfall of
    accepted candidates), the one way the rounds could differ. The toy's samples are validated as a gross check,
    at α = 1e-6 (fresh words: the default 1e-3 would fail one correct CI run in 1,000): its std check still
    rejects a σ 40% too large on the 400 samples with power 1 − 7e-6 (the sampler's distribution is tested
    exactly in tests/test_discrete_gaussian.py)."""
    reports = {}
    for name in ("honest-majority", TOY):
        out = tmp_path / f"{name}.npy"
        _, stdout, _ = main("noise", "--parties", "3", "--provider", name, "--samples", "400", "--seed", "7",
                            "--alpha", "1e-6", "--out", str(out))
        reports[name] = json.loads(stdout.strip().splitlines()[-1])
    built_in, toy = reports["honest-majority"], reports[TOY]
    assert toy["validation"] == "passed" and toy["dealer_bytes"] == 0 == built_in["dealer_bytes"]
    assert toy["rounds"] == built_in["rounds"]
    assert abs(toy["total_bytes"] / built_in["total_bytes"] - 1) < 0.05


def test_mpcdp_cost_with_the_toy_reports_no_dealer_and_names_it(main, tmp_path):
    prefix = tmp_path / "toy-cost"
    _, stdout, _ = main("cost", "--model", "logreg-ijcnn1", "--parties", "3", "--provider", TOY,
                        "--out", str(prefix))
    assert (f"one process per party, no dealer (provider `{TOY}`: parties 0-2 make the material with the "
            f"honest-majority machinery; their messages for it are party bytes)") in stdout
    record = json.loads((tmp_path / "toy-cost.json").read_text())
    assert record["run"]["provider"] == TOY
    total = record["rows"][-1]
    assert total["dealer_requests"] == 0 and total["dealer_bytes"] == 0 and total["bit_ands"] > 0


def test_mpcdp_train_with_the_toy_trains_and_certifies(main):
    """The test error is on fresh randomness (noise and batch keys from the OS CSPRNG; the toy provider deals
    the material, the sampler's output distribution is the built-in one). `tests/utility_draws.py smoke`: 0.055 ±
    0.010 over 2,000 draws, at most 0.088; < 0.2: α 7e-13 per run under a lognormal fit (normal 1e-45). Defect: no
    training (θ = 0) errs 0.412 on breast cancer's test rows: power 1."""
    _, stdout, _ = main("train", "protocols/smoke-breast-cancer.toml", "--provider", TOY)
    report = json.loads(stdout.strip().splitlines()[-1])
    assert report["provider"] == TOY and report["backend"] == "mpc" and report["dealer_bytes"] is None
    assert report["epsilon"] <= 3.0 and report["test_error"] < 0.2
