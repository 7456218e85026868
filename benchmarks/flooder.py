"""Silent connections to every new listener of a user on 127.0.0.1, refilled as they close: what an
unprivileged local user can do to a run (issue 45). Run it as another user (``subprocess.Popen(...,
user="nobody")``); it writes one JSON line of counts to stdout when it stops (SIGTERM, or ``--seconds``).

    python -m benchmarks.flooder --uid 0 --connections 200 --seconds 300
"""

from __future__ import annotations

import argparse
import json
import resource
import selectors
import signal
import socket
import time


def listeners(uid: int) -> set[int]:
    """Ports of IPv4 TCP sockets listening on 127.0.0.1 or 0.0.0.0 owned by ``uid``."""
    found = set()
    with open("/proc/net/tcp") as fh:
        for line in fh.readlines()[1:]:
            row = line.split()
            address, port = row[1].split(":")
            if row[3] == "0A" and int(row[7]) == uid and address in ("0100007F", "00000000"):
                found.add(int(port, 16))
    return found


def flood(uid: int, per_listener: int, seconds: float, ready=None) -> dict:
    """Flood every listener of ``uid`` that appears after the start; ``ready()`` (if given) is called once the
    listeners already there are known: a listener opened after that is flooded."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    old = listeners(uid)
    if ready is not None:
        ready()
    selector = selectors.DefaultSelector()
    held: dict[int, set[socket.socket]] = {}
    opened = closed = failed = 0
    stop = time.monotonic() + seconds
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    next_scan = 0.0
    while not stopping and time.monotonic() < stop:
        now = time.monotonic()
        if now >= next_scan:
            next_scan = now + 0.02
            for port in listeners(uid) - old:
                held.setdefault(port, set())
        for port, socks in held.items():
            while len(socks) < per_listener:
                s = socket.socket()
                s.setblocking(False)
                try:
                    s.connect_ex(("127.0.0.1", port))
                    selector.register(s, selectors.EVENT_READ, port)
                except OSError:
                    s.close()
                    failed += 1
                    break
                socks.add(s)
                opened += 1
        for key, _ in selector.select(timeout=0.01):
            conn, port = key.fileobj, key.data
            assert isinstance(conn, socket.socket)  # the selector holds only the sockets registered above
            try:
                data = conn.recv(4096)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                data = b""
            if not data:
                selector.unregister(conn)
                conn.close()
                held[port].discard(conn)
                closed += 1
    return {"listeners": len(held), "opened": opened, "closed_by_target": closed, "failed": failed}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--uid", type=int, required=True)
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=300.0)
    args = parser.parse_args()
    print(json.dumps(flood(args.uid, args.connections, args.seconds)), flush=True)


NOBODY = 65534


def _as_user(uid: int, target: int, per_listener: int, seconds: float, out, ready) -> None:
    import os

    os.setgid(NOBODY)
    os.setuid(uid)
    out.put(flood(target, per_listener, seconds, ready=ready.set))


def start_as_nobody(per_listener: int, seconds: float = 600.0, ready_s: float = 60.0):
    """A forked process that drops to user ``nobody`` and floods every new listener of this process's user
    (:func:`flood`); returns (process, queue that gets its counts once it is sent SIGTERM) once the flooder
    knows the listeners already there (a fixed pause could end before it did, on a loaded host: the run's
    own listeners would then count as old and go unflooded)."""
    import multiprocessing
    import os

    ctx = multiprocessing.get_context("fork")
    out, ready = ctx.Queue(), ctx.Event()
    process = ctx.Process(target=_as_user, args=(NOBODY, os.getuid(), per_listener, seconds, out, ready),
                          daemon=True)
    process.start()
    if not ready.wait(ready_s):
        process.kill()
        raise RuntimeError(f"the flooder was not ready within {ready_s} s")
    return process, out
