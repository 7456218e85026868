"""A run on the parties' own data survives a lost party: it resumes from the same checkpoint folder with the
uninterrupted run's certified ε, each party's privacy ledger counts every release once, and a new run over the
same records without the checkpoint is refused in one line that says what was spent."""

from __future__ import annotations

import json
import os
import pathlib
import re
import signal
import subprocess
import time

import numpy as np
import pandas as pd

import forked

ROOT = pathlib.Path(__file__).resolve().parents[1]
MPCDP = str(ROOT / ".venv" / "bin" / "mpcdp")


def _files(folder: pathlib.Path) -> list[str]:
    rng = np.random.default_rng(11)
    paths = []
    for j in range(3):
        x = rng.normal(size=(300, 4))
        frame = pd.DataFrame(x, columns=["a", "b", "c", "d"])
        frame["y"] = np.where(x[:, 0] - x[:, 2] > 0, 1, -1)
        paths.append(str(folder / f"p{j}.csv"))
        frame.to_csv(paths[-1], index=False)
    return paths


def _protocol(folder: pathlib.Path) -> str:
    """The shipped own-data protocol, longer (about 15 releases: checkpoints after 4, 9 and the last) and with
    15 ms per message hop, so that a poll sees the run between two checkpoints."""
    text = (ROOT / "protocols" / "own-data-mlp.toml").read_text()
    text = text.replace("passes = 1.0", "passes = 2.0").replace('[mpc]', '[mpc]\nlink_delay_ms = 15.0')
    path = folder / "long.toml"
    path.write_text(text)
    return str(path)


def _party_pid(launcher: int, rank: int) -> int:
    """The pid of data party ``rank`` of a running local launch (forked in rank order by its fork server)."""
    server = subprocess.run(["pgrep", "-f", "-P", str(launcher), "forkserver"], capture_output=True,
                            text=True).stdout.split()
    assert len(server) == 1, server
    return sorted(int(p) for p in subprocess.run(["pgrep", "-P", server[0]], capture_output=True,
                                                 text=True).stdout.split())[rank]


def _kill_one_party_after(first: forked.Popen, folder: pathlib.Path, release: int) -> None:
    """SIGKILL party 1 once every party checkpointed ``release`` and some party opened ``release`` + 2. Its pid
    is found ahead (once every party made its folder), so the kill follows the poll at once: two pgrep runs
    after it could let a loaded host pass the next checkpoint."""
    deadline, victim = time.monotonic() + 240, None
    while not (all((folder / f"party-{r}" / f"release-{release:06d}.pt").exists() for r in range(3))
               and any(folder.glob(f"party-*/opened-{release + 2:06d}.pt"))):
        assert first.poll() is None, "the run ended before the checkpoint: " + first.stderr.read()[-2000:]
        assert time.monotonic() < deadline
        if victim is None and all((folder / f"party-{r}").exists() for r in range(3)):
            victim = _party_pid(first.pid, 1)
        time.sleep(0.05)
    os.kill(victim if victim is not None else _party_pid(first.pid, 1), signal.SIGKILL)


def test_a_lost_party_resumes_without_spending_epsilon_twice(tmp_path, own_privacy_ledger, capsys):
    files, protocol, folder = _files(tmp_path), _protocol(tmp_path), tmp_path / "ckpt"
    own = ["--data", *files, "--label", "y"]
    first = forked.Popen([MPCDP, "train", protocol, *own, "--checkpoint", str(folder), "--checkpoint-every", "5"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _kill_one_party_after(first, folder, 4)
        assert first.wait(timeout=120) != 0
    finally:
        first.kill()
        first.wait()
    # a new run over the same records, without the checkpoint: refused on every process, saying what was spent
    again = forked.run([MPCDP, "train", protocol, *own], capture_output=True, text=True, timeout=300)
    assert again.returncode != 0
    line = again.stderr.strip().splitlines()[-1]
    assert re.fullmatch(r"mpcdp: the run failed: party \d refused its data: file 'p\d\.csv' already spent "
                        r"privacy budget 'ε = 0\.\d+' in earlier runs \(resume that run from its checkpoint folder, or give "
                        r"--fresh-budget to spend more\)", line), again.stderr[-2000:]
    assert len(again.stderr.strip().splitlines()) <= 5  # the line, and the parties' and the dealer's progress lines
    assert "sampling noise" not in again.stderr  # refused before any party joined
    # the same run, resumed from its folder: it completes, re-serving what was opened, with the same ε
    done = forked.run([MPCDP, "train", protocol, *own, "--resume", str(folder)], capture_output=True,
                      text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["resumed_after_release"] >= 4 and report["re_served_releases"]
    from mpcdp.cli import main  # the dry run starts no process: its certificate, in this process

    capsys.readouterr()
    assert main(["train", protocol, *own, "--backend", "simulated"]) == 0
    assert report["epsilon"] == json.loads(capsys.readouterr().out.strip().splitlines()[-1])["epsilon"]
    # each party's ledger: this one run, every release opened exactly once
    entries = [json.loads(path.read_text()) for path in own_privacy_ledger.glob("*/*.json")]
    assert len(entries) == 3 and {pathlib.Path(e["file"]).name for e in entries} == {"p0.csv", "p1.csv", "p2.csv"}
    for entry in entries:
        assert entry["opened"] == list(range(entry["releases"])) and entry["releases"] == report["releases"]
        assert entry["epsilon"] == report["epsilon"]
