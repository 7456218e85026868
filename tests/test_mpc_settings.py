"""One precedence for a run's [mpc] settings on every launcher (command line > protocol > default): a misspelt
key is refused in one line before any data is read, on both backends; `mpcdp train` and separate `mpcdp party
--job train` processes run with the protocol's settings, and every run's JSON shows the resolved ones."""

import json
import os
import pathlib
import subprocess

import pytest

from mpcdp.config import MPC_SETTINGS, MpcConfig, MpcSettings, resolve_mpc
from mpcdp.errors import ConfigError
from mpcdp.runtime.harness import free_port
import forked
from party_commands import run_party_commands

ROOT = pathlib.Path(__file__).resolve().parents[1]
MPCDP = str(ROOT / ".venv" / "bin" / "mpcdp")
PROTOCOL = """name = "mpc-settings-test"
{dataset}algorithm = "dp-sgd"
[privacy]
epsilon = 0.5
delta = 1e-3
[training]
parties = 3
batch = 30
passes = 1
c1 = 1.0
learning_rate = 0.1
seed = 0
[mpc]
{mpc}
"""


def _protocol(tmp_path, mpc: str, dataset: str = 'dataset = "breast-cancer"\n') -> str:
    path = tmp_path / "p.toml"
    path.write_text(PROTOCOL.format(dataset=dataset, mpc=mpc))
    return str(path)


def test_a_misspelt_key_names_itself_and_the_nearest_setting():
    with pytest.raises(ConfigError, match=r"\[mpc\] `provder` in x is not a setting; did you mean `provider`\?"):
        resolve_mpc({"provder": "dealer"}, " in x")
    with pytest.raises(ConfigError, match="must be a table"):
        resolve_mpc("dealer", "")
    with pytest.raises(ConfigError, match=r"\[mpc\] `noise_comittee` \(given\) is not a setting; did you mean "
                                          r"`noise_committee`"):
        resolve_mpc({}, "", {"noise_comittee": 2})
    with pytest.raises(ConfigError, match=r"\[mpc\] in x: `precision_bits` must be an integer in \[8, 24\]"):
        resolve_mpc({"precision_bits": 40}, " in x")
    assert set(resolve_mpc({}, "").settings()) == set(MPC_SETTINGS)


def test_one_precedence_command_line_over_protocol_over_default():
    table = {"noise_committee": 2, "precision_bits": 20, "provider": "honest-majority"}
    resolved = resolve_mpc(table, " in x", {"precision_bits": 18, "provider": None})  # None: not given
    assert (resolved.noise_committee, resolved.precision_bits, resolved.provider) == (2, 18, "honest-majority")
    assert resolved.timeout_s == MpcSettings().timeout_s and resolved.link_delay_ms == MpcSettings().link_delay_ms
    config = resolved.for_parties(3)
    assert isinstance(config, MpcConfig) and config.timeout_s == 120.0 and config.precision_bits == 18
    assert set(MPC_SETTINGS) == {f for f in config.to_dict() if f != "parties"}  # every setting, and no other
    with pytest.raises(ConfigError, match="needs `parties` >= 3"):  # the provider's checks need the count
        resolved.for_parties(2)


def test_the_typo_protocol_is_refused_in_one_line_before_any_data_is_read(tmp_path, capsys):
    """The parties' own files do not exist: had anything been read first, that would be the error. The secure
    backend as a started command (it warms its parties first: still one line); the simulated one through the
    command's entry point in this process (:func:`mpcdp.cli.main`: the exit status and the line are its logic)."""
    from mpcdp.cli import main

    path = _protocol(tmp_path, 'provder = "dealer"', dataset="")
    missing = [str(tmp_path / f"absent{j}.csv") for j in range(3)]
    expected = [f"mpcdp: [mpc] `provder` in {path!r} is not a setting; did you mean `provider`? [mpc] takes "
                f"{', '.join(MPC_SETTINGS)}."]
    done = forked.run([MPCDP, "train", path, "--backend", "mpc", "--data", *missing, "--label", "y"],
                      capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == expected
    assert main(["train", path, "--backend", "simulated", "--data", *missing, "--label", "y"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == expected


def test_mpcdp_train_and_separate_party_processes_run_with_the_protocols_settings(tmp_path, deployment):
    # a quarter pass (4 steps): the settings the runs show are what is tested, not the training
    path = _protocol(tmp_path, "noise_committee = 2\nprecision_bits = 20")
    pathlib.Path(path).write_text(pathlib.Path(path).read_text().replace("passes = 1\n", "passes = 0.25\n"))
    local = forked.run([MPCDP, "train", path], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert local.returncode == 0, local.stderr[-2000:]
    shown = json.loads(local.stdout.strip().splitlines()[-1])["mpc"]
    assert (shown["noise_committee"], shown["precision_bits"], shown["provider"]) == (2, 20, "dealer")

    env = dict(os.environ, WORLD_SIZE="3", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               MPCDP_CREDENTIALS=str(deployment))
    done = run_party_commands([["--job", "train", "--protocol", path, "--timeout", "300"]] * 4, env, 600)
    for rank, (code, _, err) in enumerate(done):
        assert code == 0, (rank, err[-2000:])
    for _, out, _ in done[:3]:
        shown = json.loads(out.strip().splitlines()[-1])["mpc"]
        assert (shown["noise_committee"], shown["precision_bits"]) == (2, 20), shown


def test_the_packages_public_functions_show_their_parameters_and_import_nothing_heavy():
    import inspect
    import sys

    import mpcdp
    from mpcdp import api

    for name in ("train", "load_model"):
        ours, theirs = inspect.signature(getattr(mpcdp, name)), inspect.signature(getattr(api, name))
        assert list(ours.parameters) == list(theirs.parameters), name
        assert [p.kind for p in ours.parameters.values()] == [p.kind for p in theirs.parameters.values()], name
        assert [p.default for p in ours.parameters.values()] == [p.default for p in theirs.parameters.values()]
    fresh = subprocess.run([sys.executable, "-c", "import sys, mpcdp; print('torch' in sys.modules)"],
                           capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert fresh.stdout.strip() == "False", fresh.stderr


def test_security_is_a_setting_and_malicious_needs_the_dealer():
    assert MpcSettings().security == "semi-honest"  # the default keeps every semi-honest path as it was
    resolved = resolve_mpc({"security": "semi-honest"}, " in x", {"security": "malicious"})
    assert resolved.security == "malicious" and resolved.for_parties(3).to_dict()["security"] == "malicious"
    with pytest.raises(ConfigError, match=r"\[mpc\] in x: `security` must be one of \['semi-honest', 'malicious'\]"):
        resolve_mpc({"security": "byzantine"}, " in x")
    with pytest.raises(ConfigError) as refused:
        resolve_mpc({"provider": "honest-majority", "security": "malicious"}, " in x")
    line = str(refused.value)
    assert "\n" not in line and "`security` 'malicious'" in line and "`provider` 'honest-majority'" in line


def test_security_on_the_command_line_is_one_more_given_setting():
    from mpcdp.cli import build_parser
    from mpcdp.cli.options import given_mpc

    for argv in (["aggregate", "--security", "malicious"], ["party", "--security", "malicious"]):
        assert given_mpc(build_parser().parse_args(argv))["security"] == "malicious", argv
    assert "security" not in given_mpc(build_parser().parse_args(["aggregate"]))  # not given: the protocol's
    assert build_parser().parse_args(["train", "p.toml", "--security", "malicious"]).security == "malicious"


def test_the_malicious_samplers_plan_is_a_setting_checked_on_its_own_and_against_the_security():
    """``malicious_sampler`` (issue 48's two circuits): one of its plans, named when wrong; "fewer-rounds" only
    under ``security = "malicious"`` (the semi-honest sampler has one plan), from a table, from the command line
    (``--malicious-sampler``, which wins over the table), or from the launcher's own keywords."""
    with pytest.raises(ConfigError, match=r"`malicious_sampler` must be one of \['fewer-bytes', 'fewer-rounds'\]\. "
                                          r"Found 'fewest'"):
        resolve_mpc({"security": "malicious", "malicious_sampler": "fewest"}, " in x")
    with pytest.raises(ConfigError, match=r"`malicious_sampler` 'fewer-rounds' applies under `security` "
                                          r"'malicious' only"):
        MpcConfig(parties=3, malicious_sampler="fewer-rounds")
    table = {"security": "malicious", "malicious_sampler": "fewer-rounds"}
    assert resolve_mpc(table, " in x").malicious_sampler == "fewer-rounds"
    assert resolve_mpc(table, " in x", {"malicious_sampler": "fewer-bytes"}).malicious_sampler == "fewer-bytes"
    assert MpcSettings().malicious_sampler == "fewer-bytes"
    from mpcdp.cli.options import given_mpc
    from mpcdp.cli import build_parser

    ns = build_parser().parse_args(["noise", "--security", "malicious", "--malicious-sampler", "fewer-rounds"])
    assert given_mpc(ns)["malicious_sampler"] == "fewer-rounds"


def test_parties_that_disagree_on_the_openings_are_refused_naming_the_setting(deployment):
    """`mpcdp party --job aggregate` as 3 data parties and the dealer, party 2 given `--openings all-to-all` and
    the others the default star: an opening would deadlock (party 2 waits for shares the others send the king
    only), so the handshake refuses the run before any share moves, naming the setting and each party's value;
    every process exits non-zero and prints nothing on stdout."""
    env = dict(os.environ, WORLD_SIZE="3", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               MPCDP_CREDENTIALS=str(deployment))
    plain = ["--job", "aggregate", "--dim", "8", "--timeout", "60"]
    done = run_party_commands([plain, plain, plain + ["--openings", "all-to-all"], plain], env, 300)
    for rank, (code, out, err) in enumerate(done):
        assert code != 0 and out == "", (rank, code, out[-2000:])
    said = "\n".join(err for _, _, err in done[:3])
    assert ("parties run different configurations (checked before any share was sent): `mpc.openings`: party 0 = "
            "'star', party 1 = 'star', party 2 = 'all-to-all'") in said, said[-3000:]


def test_the_openings_plan_is_a_setting_named_when_wrong_and_given_on_the_command_line():
    """``[mpc] openings``: "star" (default) or "all-to-all", under either security; a wrong value is one line
    naming the setting and where it came from; ``--openings`` wins over the protocol's table."""
    with pytest.raises(ConfigError, match=r"^\[mpc\] in x: `openings` must be one of \['star', 'all-to-all'\]\. "
                                          r"Found 'ring'\.$"):
        resolve_mpc({"openings": "ring"}, " in x")
    assert MpcSettings().openings == "star"
    assert resolve_mpc({"openings": "all-to-all", "security": "malicious"}, " in x").openings == "all-to-all"
    assert resolve_mpc({"openings": "all-to-all"}, " in x", {"openings": "star"}).openings == "star"
    from mpcdp.cli import build_parser
    from mpcdp.cli.options import given_mpc

    for argv in (["noise", "--parties", "3", "--openings", "all-to-all"], ["party", "--openings", "all-to-all"]):
        assert given_mpc(build_parser().parse_args(argv))["openings"] == "all-to-all", argv
    assert build_parser().parse_args(["train", "p.toml", "--openings", "all-to-all"]).openings == "all-to-all"
