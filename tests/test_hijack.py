"""Nobody gets in by default: a local run (`mpcdp train`, the harness) is TLS 1.3 with a throwaway deployment,
so neither another user of the host nor a process on another host can take a party's place, read what the
parties send, or stall a party's listener (mpcdp/README.md, "Threat model").

Each attack runs against real processes: the local launcher (`mpcdp train` on a small protocol shaped like the
main job), or parties started on their own with a deployment; attackers are a forked child that drops to
user `nobody`, or the genuine party code on an emulated second host (network namespaces)."""

import json
import multiprocessing
import os
import pathlib
import queue
import secrets
import socket
import subprocess
import sys
import threading
import time

import pytest
import torch

from mpcdp.errors import InsecureSettingWarning, PartyFailed
from mpcdp.runtime.harness import free_port, run_parties
from mpcdp.transport import frames
from mpcdp.transport.gate import PER_SOURCE
from mpcdp.transport.joining import HANDSHAKE_S
import forked
from party_jobs import credentials_in_use
from sniff import tls_records_only
from test_multihost import _REASON as NETNS_UNAVAILABLE

ROOT = pathlib.Path(__file__).resolve().parents[1]
MPCDP = str(ROOT / ".venv" / "bin" / "mpcdp")
NOBODY = 65534
SMALL_PROTOCOL = """name = "hijack-target"
dataset = "breast-cancer"
[privacy]
epsilon = 3.0
delta = 1e-3
[training]
parties = 3
batch = 30
batch0 = 60
passes = 1.0
c2 = 0.5
gamma = 0.5
zeta = 0.5
seed = 0
"""


# -- the throwaway deployment -----------------------------------------------------------------------------

def test_a_local_run_keys_a_throwaway_deployment_only_its_user_can_enter_and_removes_it(config_for, tmp_path,
                                                                                      monkeypatch):
    monkeypatch.delenv("MPCDP_CREDENTIALS", raising=False)
    monkeypatch.delenv("MPCDP_INSECURE_LINKS", raising=False)
    note = tmp_path / "folder"
    seen = run_parties(credentials_in_use, config_for(3), args=(-1, str(note)))
    folders = {r["folder"] for r in seen}
    assert len(folders) == 1 and None not in folders
    assert all(r["mode"] == 0o700 and r["links"] == "TLSv1.3" for r in seen), seen
    # every rank's certificate and key, the dealer's included; the CA's key is gone (no one can mint another)
    assert seen[0]["files"] == sorted(["ca.pem", *(f"party-{r}{k}.pem" for r in range(4) for k in ("", "-key"))])
    assert not os.path.exists(folders.pop())
    # a run that fails removes its deployment too
    with pytest.raises(PartyFailed, match="deliberate failure at party 1"):
        run_parties(credentials_in_use, config_for(3), args=(1, str(note)))
    assert note.read_text() and not os.path.exists(note.read_text())


def test_plain_links_only_when_asked_for_and_then_with_a_warning(config_for, tmp_path, monkeypatch):
    monkeypatch.setenv("MPCDP_INSECURE_LINKS", "1")
    with pytest.warns(InsecureSettingWarning, match="every share.*dealer's keys.*drop --insecure-links"):
        seen = run_parties(credentials_in_use, config_for(2), args=(-1, str(tmp_path / "folder")))
    assert [(r["folder"], r["links"]) for r in seen] == [(None, "plain TCP")] * 2


# -- silent connections to a party's listener -----------------------------------------------------------

def _listening_ports(pid: int) -> set[int]:
    """The TCP ports process ``pid`` listens on (its socket inodes matched against its namespace's table)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return {port for port, inode in _listeners(f"/proc/{pid}/net/tcp") if inode in inodes}


def _listeners(table: str = "/proc/net/tcp") -> list[tuple[int, str]]:
    """(port, socket inode) of every listening IPv4 TCP socket in a /proc table, in table order."""
    with open(table) as fh:
        rows = [line.split() for line in fh.readlines()[1:]]
    return [(int(row[1].split(":")[1], 16), row[9]) for row in rows if row[3] == "0A"]


def _threads(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        return int(next(line for line in fh if line.startswith("Threads:")).split()[1])


def _wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not (found := predicate()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)
    return found


@pytest.mark.parametrize("silent", [1, 50])
def test_silent_connections_to_party_0s_listener_do_not_stop_a_tls_run(silent, deployment, tmp_path):
    """Connections that never speak are closed after their own handshake deadline, off the accept path: the
    genuine parties still join, the run completes, nobody dies of an uncaught exception, and party 0 serves
    them without a thread per connection beyond the cap."""
    from mpcdp.runtime.process_server import process_context

    ctx = process_context()
    out = ctx.Queue()
    rendezvous_port = free_port()
    environ = dict(os.environ, MPCDP_CREDENTIALS=str(deployment))
    environ.pop("MPCDP_INSECURE_LINKS", None)
    logs = [tmp_path / f"rank{rank}.log" for rank in range(4)]
    from party_jobs import separate_process

    procs = [ctx.Process(target=separate_process, args=(rank, 3, f"tcp://127.0.0.1:{rendezvous_port}", 40.0,
                                                        environ, str(logs[rank]), out), daemon=True)
             for rank in range(4)]
    attackers = []
    try:
        procs[0].start()
        listener = _wait_for(lambda: _listening_ports(procs[0].pid) - {rendezvous_port}, 60, "party 0's listener")
        (port,) = listener
        before = _threads(procs[0].pid)
        for _ in range(silent):
            attacker = socket.socket()
            attacker.setblocking(False)
            attacker.connect_ex(("127.0.0.1", port))
            attackers.append(attacker)
        most = before
        for _ in range(50):  # while party 0 holds them (up to the cap) and the genuine parties have not come
            most = max(most, _threads(procs[0].pid))
            time.sleep(0.01)
        for proc in procs[1:]:
            proc.start()
        ended = {}
        while len(ended) < 4:
            most = max(most, _threads(procs[0].pid)) if procs[0].is_alive() else most
            try:
                rank, outcome, value = out.get(timeout=0.05)
                ended[rank] = outcome, value
            except queue.Empty:
                assert all(p.exitcode in (None, 0) for p in procs if p.pid), [p.exitcode for p in procs]
    finally:
        for attacker in attackers:
            attacker.close()
        for proc in procs:
            if proc.pid:
                # each has sent its result: the wait is its exit (store linger, teardown), which a loaded host can
                # stretch past 10 s; killed then, its exit code would fail the check below though nothing failed
                proc.join(timeout=60)
                proc.kill()
                proc.join(timeout=10)
    assert ended == {0: ("ok", [3.0] * 3), 1: ("ok", [3.0] * 3), 2: ("ok", [3.0] * 3), 3: ("ok", None)}, ended
    assert [p.exitcode for p in procs] == [0] * 4
    assert most - before < PER_SOURCE < 50, (before, most)  # no thread per connection
    log = logs[0].read_text()
    assert "Traceback" not in log and 1 <= log.count("refused a connection from 127.0.0.1") <= silent, log[-2000:]


# -- an unprivileged local user ---------------------------------------------------------------------------

def _ask_store(link: socket.socket, request: dict):
    """One request in the store's wire format (4-byte length, JSON); its reply, or None when it gives none."""
    body = json.dumps(request).encode()
    try:
        link.sendall(len(body).to_bytes(4, "little") + body)
        size = int.from_bytes(frames.read_exactly(link, 4), "little")
        return json.loads(frames.read_exactly(link, size)) if size <= 1 << 16 else None
    except (OSError, ValueError):
        return None


def _relay(listener: socket.socket, target: tuple[str, int], streams: list, lock: threading.Lock) -> None:
    """Accept connections meant for a party and relay them to its real listener, keeping every byte seen."""
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        server = socket.create_connection(target)
        for source, sink, direction in ((client, server, "to party"), (server, client, "from party")):
            seen = bytearray()
            with lock:
                streams.append((direction, seen))
            threading.Thread(target=_pump, args=(source, sink, seen), daemon=True).start()


def _pump(source: socket.socket, sink: socket.socket, seen: bytearray) -> None:
    while chunk := source.recv(65536):
        seen += chunk
        sink.sendall(chunk)


def _local_attacker(host: str, report, stop) -> None:
    """As user `nobody` on the emulated ``host``: find the run's store among the listeners that appear there (it
    answers a store request), read party 0's endpoint, point it at a relay of its own, and relay whatever comes;
    report what the store answered and what the relay saw."""
    import ctypes

    netns = os.open(f"/var/run/netns/{host}", os.O_RDONLY)
    assert ctypes.CDLL(None, use_errno=True).setns(netns, 0x40000000) == 0  # CLONE_NEWNET
    "127.0.0.1".encode("idna")  # load what resolving an address needs while its files are still readable
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)
    replies, streams, lock, probed = [], [], threading.Lock(), {p for p, _ in _listeners()}
    report.send("ready")
    deadline = time.monotonic() + 120
    while not stop.is_set() and time.monotonic() < deadline and not replies:
        for port in [p for p, _ in _listeners() if p not in probed]:
            probed.add(port)
            replies += _redirect_endpoint_0(port, streams, lock)
        time.sleep(0.002)
    stop.wait(300)
    with lock:
        report.send({"replies": replies, "streams": [(d, bytes(s)) for d, s in streams]})


def _redirect_endpoint_0(port: int, streams: list, lock: threading.Lock) -> list[dict]:
    """If a store listens at ``port``: wait for party 0's endpoint, relay it and point the store at the relay;
    every answer the store gave."""
    try:
        link = socket.create_connection(("127.0.0.1", port), timeout=5)
    except OSError:
        return []
    answers = []
    for _ in range(2000):
        reply = _ask_store(link, {"op": "get", "key": "mpcdp/endpoint/0"})
        if not isinstance(reply, dict):
            return answers  # not a store that talks to strangers
        answers.append(reply)
        if reply.get("value"):
            host, target, processes = reply["value"].split()
            relay = socket.create_server(("127.0.0.1", 0))
            threading.Thread(target=_relay, args=(relay, (host, int(target)), streams, lock), daemon=True).start()
            answers.append(_ask_store(link, {"op": "set", "key": "mpcdp/endpoint/0",
                                             "value": f"127.0.0.1 {relay.getsockname()[1]} {processes}"}))
            return answers
        time.sleep(0.001)
    return answers


def _plain_frames(direction: str, stream: bytes) -> int:
    """How many mpcdp frames in the clear start a frame boundary of a relayed stream (a link opens with the
    connecting rank's 4-byte announcement)."""
    at, found = (4 if direction == "to party" else 0), 0
    while at + frames.HEADER_BYTES <= len(stream) and stream[at:at + 2] == frames.MAGIC:
        found += 1
        at += frames.HEADER_BYTES + frames.HEADER.unpack_from(stream, at)[5]
    return found


@pytest.mark.netns
@pytest.mark.skipif(NETNS_UNAVAILABLE is not None, reason=NETNS_UNAVAILABLE or "")
def test_an_unprivileged_local_user_can_neither_redirect_nor_read_a_local_run(tmp_path):
    """`mpcdp train` as the README runs the main job, on a host (an emulated one: only this run's listeners are
    there) where user `nobody` tries to take party 0's place through the rendezvous and relay its links."""
    protocol = tmp_path / "small.toml"
    protocol.write_text(SMALL_PROTOCOL)
    tag = "l" + secrets.token_hex(3)
    script = str(ROOT / "launch" / "netns.sh")
    fork = multiprocessing.get_context("fork")
    report, theirs = fork.Pipe()
    stop = fork.Event()
    attacker = None
    try:
        subprocess.run(["bash", script, "up", tag, "1"], check=True, capture_output=True)
        attacker = fork.Process(target=_local_attacker, args=(f"{tag}-h0", theirs, stop), daemon=True)
        attacker.start()
        assert report.poll(30) and report.recv() == "ready"
        env = {k: v for k, v in os.environ.items() if k not in ("MPCDP_CREDENTIALS", "MPCDP_INSECURE_LINKS")}
        run = forked.run(["ip", "netns", "exec", f"{tag}-h0", MPCDP, "train", str(protocol)], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=240)
        stop.set()
        assert report.poll(30)
        seen = report.recv()
    finally:
        stop.set()
        if attacker is not None:
            attacker.join(timeout=10)
            attacker.kill()
        subprocess.run(["bash", script, "down", tag], check=False)
    # the store gave the attacker nothing (no endpoint to redirect) and nothing reached it through a relay
    assert seen["replies"] == [], seen["replies"]
    assert all(_plain_frames(d, s) == 0 and tls_records_only(s) for d, s in seen["streams"]), \
        [(d, s[:24]) for d, s in seen["streams"]]
    # the honest run finished unharmed, over TLS (or stopped naming the problem)
    if run.returncode == 0:
        assert json.loads(run.stdout.strip().splitlines()[-1])["links"] == "TLSv1.3"
    else:
        assert "refused" in run.stderr or "party" in run.stderr, run.stderr[-2000:]


# -- a process on another host ----------------------------------------------------------------------------

REMOTE_ATTACKER = """
import socket, sys
accepted = []
original = socket.socket.accept
def accept(self):
    link, origin = original(self)
    if origin[0] != self.getsockname()[0]:  # not its own client (as rank 0 it also hosts a store of its own)
        print("ACCEPTED", origin[0], flush=True)
    return link, origin
socket.socket.accept = accept
from mpcdp.config import MpcConfig
from mpcdp.runtime.party import run_party
import party_jobs
print("ready", flush=True)
port = int(sys.stdin.readline())
try:
    value = run_party(rank=0, config=MpcConfig(parties=3, timeout_s=8.0), rendezvous=f"tcp://{sys.argv[1]}:{port}",
                      fn=party_jobs.sum_once, args=(party_jobs.torch.ones(3),), job={"fn": "sum_once"})
    print("RESULT", value, flush=True)
except BaseException as exc:
    print("REFUSED", type(exc).__name__, str(exc)[:300], flush=True)
"""


@pytest.mark.netns
@pytest.mark.skipif(NETNS_UNAVAILABLE is not None, reason=NETNS_UNAVAILABLE or "")
def test_a_process_on_another_host_cannot_take_party_0s_place(tmp_path):
    """`mpcdp train` run the README's way on one emulated host; on another, the genuine party code (plain links,
    knowingly) joins its rendezvous as party 0 as soon as the store listens: no honest process connects to it,
    it receives no result, and the honest run finishes over TLS (or stops, naming the problem)."""
    tag = "h" + secrets.token_hex(3)
    script = str(ROOT / "launch" / "netns.sh")
    protocol = tmp_path / "small.toml"
    protocol.write_text(SMALL_PROTOCOL)
    env = {k: v for k, v in os.environ.items() if k not in ("MPCDP_CREDENTIALS", "MPCDP_INSECURE_LINKS")}
    attacker = honest = None
    try:
        subprocess.run(["bash", script, "up", tag, "2"], check=True, capture_output=True)
        attacker = forked.Popen(["ip", "netns", "exec", f"{tag}-h1", sys.executable, "-c", REMOTE_ATTACKER,
                                 "10.213.0.1"], env=dict(env, MPCDP_INSECURE_LINKS="1",
                                                         PYTHONPATH=str(ROOT / "tests")),
                                cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        assert attacker.stdout.readline().strip() == "ready"
        honest = forked.Popen(["ip", "netns", "exec", f"{tag}-h0", MPCDP, "train", str(protocol)], env=env,
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # once `ip netns exec` has become the launcher, its socket table is the honest host's
        _wait_for(lambda: "python" in os.readlink(f"/proc/{honest.pid}/exe"), 30, "the launcher")
        store = _wait_for(lambda: [p for p, _ in _listeners(f"/proc/{honest.pid}/net/tcp")], 120,
                          "the run's store")[0]
        attacker.stdin.write(f"{store}\n")
        attacker.stdin.flush()
        seen, _ = attacker.communicate(timeout=120)
        out, err = honest.communicate(timeout=240)
    finally:
        for proc in (attacker, honest):
            if proc is not None:
                proc.kill()
        subprocess.run(["bash", script, "down", tag], check=False)
    assert "ACCEPTED" not in seen and "RESULT" not in seen and "REFUSED" in seen, seen
    if honest.returncode == 0:
        assert json.loads(out.strip().splitlines()[-1])["links"] == "TLSv1.3"
    else:
        assert "refused" in err or "party 0" in err, err[-2000:]
