"""Checkpoints and resume: a resumed run ends with the uninterrupted run's model, its ledger counts every release
once, a checkpoint of another configuration is refused, and a run killed mid-way resumes to the end."""

import dataclasses
import json
import os
import pathlib
import shutil
import signal
import subprocess
import time

import pytest

from mpcdp.errors import ConfigError, ConfigMismatchError, PartyFailed
from mpcdp.jobs.train import plan_from, run_plan

import forked

ROOT = pathlib.Path(__file__).resolve().parents[1]
SMOKE = str(ROOT / "protocols" / "smoke-breast-cancer.toml")


def _keep_until(source: pathlib.Path, target: pathlib.Path, release: int) -> None:
    """Copy a checkpoint directory as it was after ``release`` (later files dropped)."""
    shutil.copytree(source, target)
    for path in target.glob("party-*/release-*.pt"):
        if int(path.stem.split("-")[1]) > release:
            path.unlink()


@pytest.fixture(scope="module")
def whole_run(tmp_path_factory):
    """The smoke protocol's uninterrupted run on a backend, checkpointed after every 4th release (run once per
    backend for the module; tests copy its folder before resuming from it): (plan, report, folder)."""
    runs = {}

    def of(backend: str):
        if backend not in runs:
            folder = tmp_path_factory.mktemp(f"whole-{backend}") / "a"
            plan = plan_from(SMOKE, backend=backend)
            runs[backend] = plan, run_plan(plan, curve=False, checkpoint_dir=str(folder), checkpoint_every=4), folder
        return runs[backend]
    return of


@pytest.mark.parametrize("backend", ["simulated", "mpc"])
def test_a_resumed_run_ends_with_the_uninterrupted_model(tmp_path, backend, whole_run):
    plan, whole, folder = whole_run(backend)
    steps = whole["iterations"]
    assert whole["releases"] == steps + 1 and steps > 8
    saved = sorted(int(p.stem.split("-")[1]) for p in (folder / "party-0").glob("release-*.pt"))
    assert saved == sorted({*range(3, steps + 1, 4), steps})  # after releases 4, 8, ... and the last
    _keep_until(folder, tmp_path / "b", 7)
    resumed = run_plan(plan, curve=False, checkpoint_dir=str(tmp_path / "b"), resume=True)
    assert resumed["model_sha256"] == whole["model_sha256"]
    assert resumed["test_loss"] == whole["test_loss"] and resumed["epsilon"] == whole["epsilon"]
    assert resumed["releases"] == whole["releases"]  # none counted twice, none forgotten
    if backend == "mpc":
        assert resumed["resumed_after_release"] == 7


def test_a_checkpoint_of_another_configuration_is_refused(tmp_path, whole_run):
    plan, _, folder = whole_run("simulated")  # the module's checkpointed simulated run, copied
    tmp_path = tmp_path / "copy"
    shutil.copytree(folder, tmp_path)
    other = plan_from(SMOKE, backend="simulated", epsilon=2.0)
    with pytest.raises(ConfigMismatchError, match="different configuration: .*`epsilon`: checkpoint = 3.0, "
                                                  "this run = 2.0"):
        run_plan(other, curve=False, checkpoint_dir=str(tmp_path), resume=True)
    with pytest.raises(ConfigError, match="is not empty"):
        run_plan(plan, curve=False, checkpoint_dir=str(tmp_path))
    with pytest.raises(ConfigError, match="no release is checkpointed"):
        run_plan(plan, curve=False, checkpoint_dir=str(tmp_path / "missing"), resume=True)


def test_a_foreign_checkpoint_or_changed_data_is_refused_by_the_parties_before_any_share(tmp_path, whole_run):
    from mpcdp.runtime.harness import run_job

    plan, _, folder = whole_run("mpc")  # the module's checkpointed secure run, copied
    tmp_path = tmp_path / "copy"
    shutil.copytree(folder, tmp_path)
    with pytest.raises(PartyFailed) as info:
        run_plan(plan_from(SMOKE, backend="mpc", seed=9), curve=False, checkpoint_dir=str(tmp_path), resume=True)
    assert "ConfigMismatchError" in str(info.value) and "`params.seed`: checkpoint = 0, this run = 9" in str(info.value)

    def one_record_changed(fn, config, *, party_args, **kwargs):
        shard = party_args[1][0]
        x = shard.x.clone()
        x[0, 0] += 0.25
        changed = [args if j != 1 else (dataclasses.replace(shard, x=x), *args[1:])
                   for j, args in enumerate(party_args)]
        return run_job(fn, config, party_args=changed, **kwargs)

    with pytest.raises(PartyFailed) as info:
        run_plan(plan, curve=False, checkpoint_dir=str(tmp_path), resume=True, launch=one_record_changed)
    assert info.value.party == 1 and "ConfigMismatchError" in str(info.value)
    assert "`shard_sha256`: checkpoint = " in str(info.value)


def _party_pid(launcher: int, rank: int) -> int:
    """The pid of data party ``rank`` of a running local launch: the parties and the dealer are forked, in rank
    order, by the launcher's fork server. Found before the moment to kill it, the kill is not late by two
    pgrep runs (a loaded host could pass the next checkpoint meanwhile)."""
    server = subprocess.run(["pgrep", "-f", "-P", str(launcher), "forkserver"], capture_output=True,
                            text=True).stdout.split()
    assert len(server) == 1, server
    return sorted(int(p) for p in subprocess.run(["pgrep", "-P", server[0]], capture_output=True,
                                                 text=True).stdout.split())[rank]


def test_a_run_killed_after_a_checkpoint_resumes_to_the_end(tmp_path):
    protocol = tmp_path / "long.toml"
    # 15 ms of emulated latency per round, so that the poll below sees release 13 before checkpoint 23; half a
    # pass at batch 9 is 25 steps (checkpoints after releases 11, 23 and the last): resumed, it runs 14 more
    protocol.write_text(pathlib.Path(SMOKE).read_text().replace("passes = 1.0", "passes = 0.5")
                        .replace("batch = 30", "batch = 9").replace("batch0 = 60", "batch0 = 18")
                        .replace("[mpc]", "[mpc]\nlink_delay_ms = 15.0"))
    folder = tmp_path / "ckpt"
    mpcdp = str(ROOT / ".venv" / "bin" / "mpcdp")
    first = forked.Popen([mpcdp, "train", str(protocol), "--checkpoint", str(folder), "--checkpoint-every", "12"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline, victim = time.monotonic() + 120, None
        # killed once every party checkpointed release 11 and some party opened release 13 (not checkpointed)
        while not (all((folder / f"party-{r}" / "release-000011.pt").exists() for r in range(3))
                   and any(folder.glob("party-*/opened-000013.pt"))):
            assert first.poll() is None, "the run ended before its first checkpoint"
            assert time.monotonic() < deadline
            if victim is None and all((folder / f"party-{r}").exists() for r in range(3)):
                victim = _party_pid(first.pid, 1)  # found ahead: the kill then follows the poll at once
            time.sleep(0.05)
        os.kill(victim if victim is not None else _party_pid(first.pid, 1), signal.SIGKILL)
        assert first.wait(timeout=60) != 0
    finally:
        first.kill()
        first.wait()
    opened_before = {int(p.stem.split("-")[1]) for p in folder.glob("party-*/opened-*.pt")}
    done = forked.run([mpcdp, "train", str(protocol), "--resume", str(folder)], capture_output=True, text=True,
                      timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["resumed_after_release"] >= 11
    # every release opened before the kill and after the checkpoint is served again, none is opened again
    after = report["resumed_after_release"]
    assert report["re_served_releases"] == sorted(t for t in opened_before if t > after)
    assert {12, 13} <= set(report["re_served_releases"])
    opened_now = {int(label[4:-1]) for label in report["opened_releases"]}  # labels "v_p[t]"
    assert not opened_now & opened_before, sorted(opened_now & opened_before)
    assert sorted(opened_now | set(report["re_served_releases"])) == list(range(after + 1, report["releases"]))
    assert report["releases"] == report["iterations"] + 1
    fresh = run_plan(plan_from(str(protocol), backend="simulated"), curve=False)  # the same certificate
    assert report["epsilon"] == fresh["epsilon"] and report["iterations"] == fresh["iterations"]


def test_a_write_that_dies_half_way_leaves_the_previous_checkpoint(tmp_path, monkeypatch):
    """Checkpoints are written to a temporary name and renamed: a write cut off mid-way (here: torch.save
    raising after part of the file is out) leaves the previous release as the newest complete checkpoint."""
    import torch

    from mpcdp.learning import checkpoint

    description = {"run": "x"}
    saver = checkpoint.Checkpointer(tmp_path, 0, every=1, total=5, description=description)
    state = {"releases": 1, "theta": torch.zeros(3)}
    saver(state)
    real_save = torch.save

    def dying_save(obj, fh):
        fh.write(b"partial bytes of a checkpoint")
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", dying_save)
    with pytest.raises(OSError, match="disk full"):
        saver({**state, "releases": 2})
    monkeypatch.setattr(torch, "save", real_save)
    assert checkpoint.available(tmp_path, 0) == [0]
    assert checkpoint.load(tmp_path, 0, 0, description)["state"]["releases"] == 1


def test_every_launcher_checks_its_checkpoint_flags_as_one_record(tmp_path, capsys):
    """`--checkpoint` and `--resume` naming different folders are refused by the shipped-data command as by
    the own-data one (one check, :class:`mpcdp.jobs.keeping.Keeping`), before any data is read; a
    checkpoint interval defaults to a tenth of the run."""
    from mpcdp.cli import main
    from mpcdp.jobs.keeping import Keeping

    a, b = tmp_path / "a", tmp_path / "b"
    argv = ["train", "protocols/quickstart-a9a.toml", "--backend", "simulated", "--checkpoint", str(a),
            "--resume", str(b)]
    assert main(argv) == 2
    assert f"`--checkpoint` '{a}' and `--resume` '{b}' differ" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="differ: a resumed run keeps saving"):
        Keeping.from_flags(str(a), str(b))
    assert Keeping.from_flags(None, str(a)) == Keeping(str(a), None, True)
    assert (Keeping(str(a)).every_of(95), Keeping(str(a)).every_of(5), Keeping(str(a), 7).every_of(95)) == (9, 1, 7)
