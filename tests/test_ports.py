"""The rendezvous port for local parties is drawn below the kernel's ephemeral range, so no outgoing connection of
another process (a second test worker's, say) can be handed it before party 0 binds it."""

import pathlib
import socket

from mpcdp.runtime.ports import FREE_PORTS, free_port


def test_the_port_is_free_and_outside_the_ephemeral_range():
    low, _ = (int(v) for v in pathlib.Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    ports = {free_port() for _ in range(20)}
    assert all(FREE_PORTS[0] <= p <= FREE_PORTS[1] < low for p in ports)
    assert len(ports) > 1  # drawn at random, not one fixed port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", ports.pop()))


def test_a_taken_port_is_not_returned(monkeypatch):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        monkeypatch.setattr("mpcdp.runtime.ports.FREE_PORTS", (port, port))
        assert free_port() != port
