"""tests/forked.py: a command forked from the preloaded server is the process a fresh interpreter would be."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

import forked

PROBE = """
import json, multiprocessing, os, sys, torch
print(json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "env": dict(os.environ), "path0": sys.path[0],
                  "threads": torch.get_num_threads(), "main": multiprocessing.current_process().name,
                  "parent": multiprocessing.parent_process() is None, "input": sys.stdin.read()}))
print("to stderr", file=sys.stderr)
sys.exit(7)
"""


def test_the_child_has_the_given_environment_directory_arguments_and_streams(tmp_path):
    env = {"PATH": os.environ["PATH"], "OMP_NUM_THREADS": "1", "PROBE": "yes"}
    done = forked.run([sys.executable, "-c", PROBE, "one", "two"], input="typed", capture_output=True, text=True,
                      env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 7 and done.stderr == "to stderr\n"
    seen = json.loads(done.stdout)
    assert seen["argv"] == ["-c", "one", "two"] and seen["cwd"] == str(tmp_path) and seen["path0"] == ""
    assert seen["env"] == env and seen["threads"] == 1 and seen["input"] == "typed"
    assert seen["main"] == "MainProcess" and seen["parent"]  # multiprocessing sees a main process, no parent


def test_a_signal_ends_the_child_as_it_ends_a_process_and_a_timeout_raises():
    proc = forked.Popen([sys.executable, "-c", "import time; time.sleep(600)"], stdout=subprocess.PIPE)
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(timeout=0.5)
    assert proc.poll() is None and os.path.exists(f"/proc/{proc.pid}")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) == -signal.SIGTERM
    assert proc.communicate() == (b"", None)


def test_the_console_script_runs_the_command_and_refuses_other_programs():
    done = forked.run([os.path.join(os.path.dirname(sys.executable), "mpcdp"), "--version"], capture_output=True,
                      text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("mpcdp ")
    with pytest.raises(ValueError, match="not a Python or mpcdp command"):
        forked.Popen(["bash", "-c", "true"])


LAUNCHER = """
import json, os, sys
from mpcdp.runtime.process_server import process_context

def report(queue):
    queue.put((os.getppid(), os.environ.get("PROBE"), sys.argv))

if __name__ == "__main__":
    ctx = process_context()
    queue = ctx.Queue()
    child = ctx.Process(target=report, args=(queue,))
    child.start()
    server, probe, argv = queue.get(timeout=120)
    child.join()
    with open(f"/proc/{server}/stat") as fh:
        server_parent = int(fh.read().split(")")[-1].split()[1])
    with open(f"/proc/{server}/cmdline") as fh:
        cmdline = fh.read()
    print(json.dumps({"me": os.getpid(), "server": server, "server_parent": server_parent, "probe": probe,
                      "argv": argv, "forkserver": "forkserver" in cmdline, "exit": child.exitcode}))
"""


def test_a_launching_command_forks_its_processes_from_its_own_fork_server_which_ends_with_it(tmp_path):
    """The command's fork server (started by forked.py, not by a fresh interpreter) is the command's child, named
    forkserver in its command line as multiprocessing's is; a process it forks has the command's environment and
    main module; the server is gone once the command has exited."""
    script = tmp_path / "launch.py"
    script.write_text(LAUNCHER)
    env = {"PATH": os.environ["PATH"], "PROBE": "given"}
    done = forked.run([sys.executable, str(script), "x"], capture_output=True, text=True, env=env, cwd=tmp_path,
                      timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout)
    assert seen["server_parent"] == seen["me"] and seen["server"] != seen["me"] and seen["forkserver"]
    assert seen["probe"] == "given" and seen["exit"] == 0 and seen["argv"][1:] == ["x"]
    deadline = time.monotonic() + 60
    while _running(seen["server"]):
        assert time.monotonic() < deadline, "the command's fork server outlived the command"
        time.sleep(0.05)


def _running(pid: int) -> bool:
    """The process exists and has not ended (a zombie has)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False
