"""Picking a rendezvous port for parties started on one machine (:mod:`mpcdp.runtime.harness`, tests)."""

from __future__ import annotations

import random
import socket

FREE_PORTS = (20000, 32767)  # below Linux's ephemeral range (32768-60999): no outgoing connection is given one


def free_port() -> int:
    """A TCP port that is free now, drawn at random below the ephemeral range. A port the OS hands out for
    port 0 is an ephemeral one: between this call and party 0's bind, any process's outgoing connection may
    be given it (seen with two test workers: "Address already in use"); a random port below that range is
    only taken by another listener picking the same one."""
    rng = random.SystemRandom()
    for _ in range(100):
        port = rng.randint(*FREE_PORTS)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
