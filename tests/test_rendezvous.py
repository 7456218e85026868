"""The rendezvous store: what it accepts, what it refuses, and how a run of another size is named."""

import socket
import struct

import pytest

from mpcdp.errors import ConfigMismatchError, PeerLost, PeerTimeout, ProtocolViolation
from mpcdp.runtime.harness import free_port
from mpcdp.transport import rendezvous
from mpcdp.transport.credentials import LinkSecurity, make_deployment


@pytest.fixture
def store():
    port = free_port()
    server = rendezvous.StoreServer(port)
    client = rendezvous.StoreClient("127.0.0.1", port, timeout_s=5.0)
    previous = rendezvous._store
    rendezvous._store = client
    yield port, client
    rendezvous._store = previous
    server.listener.close()


def test_a_process_expecting_another_run_size_is_refused_naming_it(store):
    rendezvous.publish_endpoint(1, "127.0.0.1", 4000, 5)
    with pytest.raises(ConfigMismatchError, match="party 1 joined a run of 5 processes, this one expects 4"):
        rendezvous.endpoints([1], processes=4, timeout_s=2.0, dealer=3)
    rendezvous.publish_endpoint(3, "127.0.0.1", 4001, 5)
    with pytest.raises(ConfigMismatchError, match="the dealer joined a run of 5"):
        rendezvous.endpoints([3], processes=4, timeout_s=2.0, dealer=3)


def test_a_missing_process_is_named_and_a_reported_loss_stops_the_wait(store):
    with pytest.raises(PeerTimeout, match="waiting at the rendezvous for party 2"):
        rendezvous.endpoints([2], processes=4, timeout_s=0.3, dealer=3)
    _, client = store
    assert client.compare_set(rendezvous.LOST_KEY, "", "2 0") == b"2 0"
    assert client.compare_set(rendezvous.LOST_KEY, "", "1 0") == b"2 0"  # the first report counts
    with pytest.raises(PeerLost, match="party 2 did not join the run") as info:
        rendezvous.endpoints([2], processes=4, timeout_s=30.0, dealer=3)
    assert info.value.party == 2


def test_a_malformed_endpoint_or_request_is_refused(store):
    port, client = store
    client.set(rendezvous.ENDPOINT_PREFIX + "1", "not-an-address 1 4")
    with pytest.raises(ProtocolViolation, match="no valid endpoint for rank 1"):
        rendezvous.endpoints([1], processes=4, timeout_s=1.0)
    raw = socket.create_connection(("127.0.0.1", port))
    raw.sendall(struct.pack("<I", 1 << 30))  # a length beyond the limit: the store closes the connection
    raw.settimeout(5.0)
    assert raw.recv(1) == b""
    raw = socket.create_connection(("127.0.0.1", port))
    payload = b"\x80\x04\x95"  # a pickle's first bytes, not JSON
    raw.sendall(struct.pack("<I", len(payload)) + payload)
    raw.settimeout(5.0)
    assert raw.recv(1) == b""
    assert client.get("mpcdp/anything") == b""  # the store itself is still up


def test_with_credentials_a_process_may_publish_only_its_own_endpoint(tmp_path):
    keys = make_deployment(tmp_path / "keys", 2)
    port = free_port()
    server = rendezvous.StoreServer(port, LinkSecurity(keys, 0))
    try:
        one = rendezvous.StoreClient("127.0.0.1", port, security=LinkSecurity(keys, 1), timeout_s=5.0)
        one.set(rendezvous.ENDPOINT_PREFIX + "1", "127.0.0.1 4000 3")
        assert one.get(rendezvous.ENDPOINT_PREFIX + "1") == b"127.0.0.1 4000 3"
        with pytest.raises(PeerLost, match="rendezvous store"):
            one.set(rendezvous.ENDPOINT_PREFIX + "2", "127.0.0.1 4666 3")
        two = rendezvous.StoreClient("127.0.0.1", port, security=LinkSecurity(keys, 2), timeout_s=5.0)
        assert two.get(rendezvous.ENDPOINT_PREFIX + "2") == b""
        # a process without this deployment's certificate gets no answer
        other = make_deployment(tmp_path / "other", 2)
        with pytest.raises((PeerLost, ProtocolViolation)):
            rendezvous.StoreClient("127.0.0.1", port, security=LinkSecurity(other, 1), timeout_s=5.0).get("x")
    finally:
        server.listener.close()
