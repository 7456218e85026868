"""A genuine party always gets through: another local user holding 200 silent connections to every listener
of a run (each party's link listener and the rendezvous store), refilled as they close, cannot stop it; the
gate serves each source's handshakes apart (:mod:`mpcdp.transport.gate`)."""

import os
import socket
import time

import pytest
import torch

from benchmarks import flooder
from mpcdp.config import MpcConfig
from mpcdp.runtime.harness import run_job
from mpcdp.transport.gate import Gate
from party_jobs import sum_once


def _pairs(n: int, listener: socket.socket) -> list[tuple[socket.socket, socket.socket]]:
    out = []
    for _ in range(n):
        client = socket.create_connection(listener.getsockname())
        out.append((client, listener.accept()))
    return out


def test_a_flooding_user_fills_its_own_slots_and_another_users_connection_is_admitted():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    gate = Gate(4, hold_s=0.2, who="test")
    mine = _pairs(6, listener)
    admitted = gate.sort([accepted for _, accepted in mine])
    me = f"127.0.0.1 uid {os.getuid()}"
    assert [source for _, _, source in admitted] == [me] * 4 and gate.held[me] == 2
    promoted = gate.release(me)  # one handshake ends: the oldest parked one takes its place
    assert promoted and promoted[0][0] is mine[4][1][0]
    time.sleep(0.25)
    gate.expire()  # the last parked one is past its hold time: reset
    with pytest.raises(ConnectionResetError):
        mine[5][0].recv(1)
    assert gate.parked_total == 0
    gate.close()
    listener.close()


def _hold_port_as_nobody(port: int, destinations: list[tuple[str, int]], ready, stop) -> None:
    os.setgid(flooder.NOBODY)
    os.setuid(flooder.NOBODY)
    held = []
    for destination in destinations:
        link = socket.socket()
        link.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        link.bind(("127.0.0.1", port))
        link.connect(destination)
        held.append(link)
    ready.set()
    stop.wait(60)


def test_another_users_sockets_on_the_same_local_port_do_not_make_a_genuine_connection_theirs():
    """The kernel gives one local port to sockets bound for different destinations, so user `nobody` can hold
    sockets whose own end is a genuine connection's (here 40 of them, bound to that port and connected to
    other listeners). The gate still finds the genuine connection's own user: it matches the whole address
    pair in the kernel's table. (Matching the port alone took the table's last row with that port, nobody's
    in 40 of 41 orders, and parked the genuine connection behind nobody's slots until its hold time.)"""
    import multiprocessing

    listener, others = socket.socket(), [socket.socket() for _ in range(40)]
    for each in (listener, *others):
        each.bind(("127.0.0.1", 0))
        each.listen(64)
    genuine = socket.socket()
    genuine.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    genuine.bind(("127.0.0.1", 0))
    port = genuine.getsockname()[1]
    ctx = multiprocessing.get_context("fork")
    ready, stop = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold_port_as_nobody, args=(port, [o.getsockname() for o in others], ready, stop))
    holder.start()
    try:
        assert ready.wait(30), "the holder did not connect"
        genuine.connect(listener.getsockname())
        accepted = listener.accept()
        with open("/proc/net/tcp") as table:
            sharing = [row.split()[7] for row in table.readlines()[1:] if row.split()[1].endswith(f":{port:04X}")]
        assert sharing.count(str(flooder.NOBODY)) == 40 and sharing.count(str(os.getuid())) == 1  # the collision
        admitted = Gate(4, hold_s=0.2, who="test").sort([accepted])
        assert [source for _, _, source in admitted] == [f"127.0.0.1 uid {os.getuid()}"]
    finally:
        stop.set()
        holder.join(30)
        for each in (listener, genuine, *others):
            each.close()


def test_a_run_started_while_another_user_floods_every_listener_finishes():
    """User `nobody` keeps 200 silent connections to every listener of this user that appears on loopback,
    refilling each as it closes; a secure sum over TLS (3 parties and the dealer) still finishes."""
    process, counts = flooder.start_as_nobody(200)  # returns once the flooder knows the listeners already there
    try:
        result = run_job(sum_once, MpcConfig(parties=3, timeout_s=120.0), args=(torch.ones(3),))
    finally:
        process.terminate()
    flood = counts.get(timeout=30)
    assert [r.tolist() for r in result.values[:3]] == [[3.0] * 3] * 3
    assert flood["listeners"] >= 5 and flood["opened"] >= 5 * 200, flood  # it did hold them
