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
