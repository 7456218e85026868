"""SIGKILL one party at a random point of a secure training run.

Every other process — the other parties and the dealer, each started on its own as on separate hosts — exits
non-zero within 60 s naming the lost party; and under the local launcher (`mpcdp train`) the launcher names it
and leaves no process behind, zombie or alive.
"""

import os
import pathlib
import random
import re
import signal
import subprocess
import threading
import time

import pytest

import forked

from mpcdp.runtime.harness import free_port

ROOT = pathlib.Path(__file__).resolve().parents[1]
MPCDP = str(ROOT / ".venv" / "bin" / "mpcdp")
PARTIES = 3
PROTOCOL = """name = "kill-test"
dataset = "breast-cancer"
[privacy]
epsilon = 3.0
delta = 1e-3
[training]
parties = 3
batch = 6
batch0 = 12
passes = 1.0   # ≈ 76 steps of ≥ 2 message hops at 25 ms each (link_delay_ms below): ≥ 3.8 s of training
c2 = 0.5
gamma = 0.5
zeta = 0.5
seed = 0
"""


class Process:
    """A started process with its stderr collected as it comes (by a daemon thread: :meth:`text` is what it has
    read so far; :meth:`all_text` waits for the stream's end, the sync point for reading what it wrote last)."""

    def __init__(self, cmd, env, start=forked.Popen):
        self.popen = start(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.pump = threading.Thread(target=self._pump, daemon=True)
        self.pump.start()

    def _pump(self):  # raw chunks: progress bars rewrite their line with \r and never end it
        while chunk := os.read(self.popen.stderr.fileno(), 4096):
            self.lines.append(chunk.decode(errors="replace"))

    def text(self) -> str:
        return "".join(self.lines)

    def all_text(self, timeout: float = 60.0) -> str:
        """Everything the process wrote to stderr: the pipe's end of file comes once the process and every
        child holding its stderr are gone (a process that exited may not have been read to its end yet)."""
        self.pump.join(timeout)
        assert not self.pump.is_alive(), "stderr still open: a process holding it is still running"
        return self.text()


def _wait_for(predicate, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def _alive_or_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "X"
    except FileNotFoundError:
        return False


def _process_name(pid: int) -> str:
    with open(f"/proc/{pid}/comm") as fh:
        return fh.read().strip()


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    fields = fh.read().split(")")[-1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


@pytest.fixture(params=["dealer", "honest-majority"])
def protocol(tmp_path, request):
    """The protocol file, with each provider (no dealer process under `honest-majority`)."""
    path = tmp_path / "kill.toml"
    # the emulated latency makes the run outlast the kill (≤ 2 s after the handshake) on any machine, with a
    # fifth of the noise to sample first
    path.write_text(PROTOCOL + f'[mpc]\nprovider = "{request.param}"\nlink_delay_ms = 25.0\n')
    return str(path), request.param


def test_separate_processes_name_the_killed_party(protocol, deployment):
    protocol, provider = protocol
    processes = PARTIES + (provider == "dealer")
    rng = random.Random()
    victim, delay = rng.randrange(PARTIES), rng.uniform(0.0, 2.0)
    port = str(free_port())
    procs = [Process([MPCDP, "party", "--job", "train", "--protocol", protocol, "--timeout", "120"],
                     dict(os.environ, RANK=str(rank), WORLD_SIZE=str(PARTIES), MASTER_ADDR="127.0.0.1",
                          MASTER_PORT=port, MPCDP_CREDENTIALS=str(deployment)))
             for rank in range(processes)]
    try:
        _wait_for(lambda: all("joined; training" in p.text() for p in procs[:PARTIES]), 180)
        time.sleep(delay)
        assert procs[victim].popen.poll() is None, "the run ended before the kill: make it longer"
        procs[victim].popen.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        for rank, proc in enumerate(procs):
            if rank == victim:
                continue
            code = proc.popen.wait(timeout=60)
            assert time.monotonic() - killed < 60
            who = "the dealer" if rank == PARTIES else f"party {rank}"
            assert code != 0, f"{who} exited 0 after party {victim} was killed (delay {delay:.2f} s)"
            text = proc.all_text()  # read to its end: its last line may still be in the pipe after wait()
            assert f"party {victim} was lost" in text, (victim, rank, text[-600:])
    finally:
        for proc in procs:
            proc.popen.kill()
            proc.popen.wait()


def test_the_local_launcher_names_the_killed_party_and_leaves_no_process(protocol):
    protocol, _ = protocol
    rng = random.Random()
    victim, delay = rng.randrange(PARTIES), rng.uniform(0.0, 1.0)
    # a fresh interpreter: the subject is the launcher's whole process tree and its teardown
    launcher = Process([MPCDP, "train", protocol], dict(os.environ), start=subprocess.Popen)
    try:
        # a party's progress line says its training steps have begun: the parties are releasing v_p
        _wait_for(lambda: re.search(r"training step [\d,]+ / [\d,]+", launcher.text()) is not None, 180)
        time.sleep(delay)
        # the launcher's children (its fork server, a resource tracker) and the fork server's: the parties and
        # the dealer, each named by its rank (/proc/PID/comm)
        children = _children(launcher.popen.pid)
        server = [pid for pid in children if "forkserver" in open(f"/proc/{pid}/cmdline").read()]
        assert len(server) == 1, children
        children += _children(server[0])
        assert launcher.popen.poll() is None, "the run ended before the kill: make it longer"
        ranks = {_process_name(pid): pid for pid in _children(server[0])}
        assert f"mpcdp-rank{victim}" in ranks, ranks
        os.kill(ranks[f"mpcdp-rank{victim}"], signal.SIGKILL)
        killed = time.monotonic()
        code = launcher.popen.wait(timeout=60)
        assert time.monotonic() - killed < 60
        assert code != 0
        # the bound is generous: the claim is that no process is left, not how fast a loaded host reaps them
        _wait_for(lambda: not any(_alive_or_zombie(pid) for pid in children), 60)
        text = launcher.all_text()  # every holder of its stderr is gone: read to its end
        assert f"party {victim} failed" in text, text[-800:]
    finally:
        launcher.popen.kill()
        launcher.popen.wait()
