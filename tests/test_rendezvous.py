"""The rendezvous store: where it listens, what it accepts, what it refuses, and how a run of another size
or an endpoint outside the run's network is named."""

import socket
import struct
import time

import pytest

from mpcdp.errors import ConfigError, ConfigMismatchError, PeerLost, PeerTimeout, ProtocolViolation
from mpcdp.runtime.harness import free_port
from mpcdp.transport import rendezvous
from mpcdp.transport.credentials import LinkSecurity, make_deployment


@pytest.fixture
def store(own_rendezvous):
    port = free_port()
    server = rendezvous.StoreServer(port, processes=4)
    client = rendezvous.StoreClient("127.0.0.1", port, timeout_s=5.0)
    rendezvous._store, rendezvous._run = client, rendezvous.Run(rank=0, processes=4, secure=False)
    yield port, client  # the process's rendezvous state is put back by own_rendezvous (conftest)
    server.close()


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
    rendezvous.publish_report(1, 2, "timeout")
    assert rendezvous.read_reports(4) == {1: rendezvous.Report(1, 2, "timeout")}
    with pytest.raises(PeerLost, match="another process of the run stopped"):
        rendezvous.endpoints([2], processes=4, timeout_s=30.0, dealer=3)


def test_a_malformed_endpoint_or_request_is_refused(store, tmp_path):
    port, client = store
    with pytest.raises(ConfigError, match="malformed value for mpcdp/endpoint/1"):
        client.set(rendezvous.ENDPOINT_PREFIX + "1", "not-an-address 1 4")
    raw = socket.create_connection(("127.0.0.1", port))
    raw.sendall(struct.pack("<I", 1 << 30))  # a length beyond the limit: the store closes the connection
    raw.settimeout(5.0)
    assert b'"error"' in raw.recv(4096) and raw.recv(1) == b""
    raw = socket.create_connection(("127.0.0.1", port))
    payload = b"\x80\x04\x95"  # a pickle's first bytes, not JSON
    raw.sendall(struct.pack("<I", len(payload)) + payload)
    raw.settimeout(5.0)
    assert b'"error"' in raw.recv(4096) and raw.recv(1) == b""
    assert client.get("mpcdp/anything") == b""  # the store itself is still up
    # a store that checks nothing on write (a file store, torchrun's agent store): the reader refuses it
    file_store = __import__("torch.distributed", fromlist=["FileStore"]).FileStore(str(tmp_path / "f"), 1)
    file_store.set(rendezvous.ENDPOINT_PREFIX + "1", "not-an-address 1 4")
    rendezvous._store = file_store
    with pytest.raises(ProtocolViolation, match="no valid endpoint for rank 1") as info:
        rendezvous.endpoints([1], processes=4, timeout_s=1.0)
    assert info.value.party == 1


def test_a_store_for_loopback_listens_on_loopback_only(store):
    port, _ = store
    assert rendezvous._store.link.getpeername() == ("127.0.0.1", port)
    with pytest.raises(ConnectionRefusedError):  # another address of this host: nobody listens there
        socket.create_connection(("127.0.0.2", port), timeout=2.0)
    assert rendezvous.bind_address("127.0.0.1") == "127.0.0.1"
    assert rendezvous.bind_address("localhost") == "127.0.0.1"


def test_a_rendezvous_host_that_is_not_this_hosts_listens_where_the_route_leaves(capfd):
    chosen = rendezvous.bind_address("192.0.2.1")  # TEST-NET-1: never a local address
    assert chosen != "0.0.0.0" and rendezvous._is_local(chosen)
    assert "192.0.2.1" in capfd.readouterr().err


def test_a_plain_endpoint_outside_the_runs_network_is_refused_naming_its_rank(store):
    _, client = store
    client.set(rendezvous.ENDPOINT_PREFIX + "1", "10.9.9.9 4000 4")  # e.g. written by a process outside the run
    client.set(rendezvous.ENDPOINT_PREFIX + "2", "127.0.0.1 4001 4")
    with pytest.raises(ProtocolViolation, match="endpoint for party 1 outside this run's network 127.0.0.0/8") as info:
        rendezvous.endpoints([1, 2], processes=4, timeout_s=2.0, listening="127.0.0.1")
    assert info.value.party == 1
    assert rendezvous.endpoints([2], processes=4, timeout_s=2.0, listening="127.0.0.1") == {2: ("127.0.0.1", 4001)}
    try:
        rendezvous.declare_network("10.9.0.0/16")  # MPCDP_NETWORK
        with pytest.warns(UserWarning, match="plain TCP"):
            assert rendezvous.endpoints([1], processes=4, timeout_s=2.0, listening="10.9.0.5") == {1: ("10.9.9.9", 4000)}
    finally:
        rendezvous.declare_network(None)
    # with credentials the links check every peer's certificate: the address is not restricted
    rendezvous._run.secure = True
    assert rendezvous.endpoints([1], processes=4, timeout_s=2.0, listening="127.0.0.1") == {1: ("10.9.9.9", 4000)}


def test_the_declared_network_is_an_ipv4_cidr():
    from mpcdp.runtime.endpoint import network_setting

    assert network_setting({"MPCDP_NETWORK": "10.0.0.0/16"}) == "10.0.0.0/16"
    assert network_setting({}) is None
    with pytest.raises(ConfigError, match="`MPCDP_NETWORK` must be an IPv4 network.*'ten'"):
        network_setting({"MPCDP_NETWORK": "ten"})


def test_with_credentials_a_process_may_write_only_its_own_endpoint_and_report(tmp_path):
    keys = make_deployment(tmp_path / "keys", 2)
    port = free_port()
    server = rendezvous.StoreServer(port, LinkSecurity(keys, 0), processes=3)
    try:
        one = rendezvous.StoreClient("127.0.0.1", port, security=LinkSecurity(keys, 1), timeout_s=5.0)
        one.set(rendezvous.ENDPOINT_PREFIX + "1", "127.0.0.1 4000 3")
        assert one.get(rendezvous.ENDPOINT_PREFIX + "1") == b"127.0.0.1 4000 3"
        with pytest.raises(ConfigError, match="rank 1 may not write mpcdp/endpoint/2"):
            one.set(rendezvous.ENDPOINT_PREFIX + "2", "127.0.0.1 4666 3")
        with pytest.raises(ConfigError, match="rank 1 may not write mpcdp/report/0"):
            one.set(rendezvous.REPORT_PREFIX + "0", '{"suspect":2,"evidence":"violation"}')
        one.set(rendezvous.REPORT_PREFIX + "1", '{"suspect":2,"evidence":"violation"}')  # its own: reconnects
        two = rendezvous.StoreClient("127.0.0.1", port, security=LinkSecurity(keys, 2), timeout_s=5.0)
        assert two.get(rendezvous.ENDPOINT_PREFIX + "2") == b""
        # a process without this deployment's certificate gets no answer
        other = make_deployment(tmp_path / "other", 2)
        with pytest.raises((PeerLost, ProtocolViolation)):
            rendezvous.StoreClient("127.0.0.1", port, security=LinkSecurity(other, 1), timeout_s=5.0).get("x")
        # the store refused it too, naming the failed handshake: its thread writes that line once the client has
        # given up, so the test waits for it (StoreServer.shown keeps a line once written) rather than let it come
        # after the test, where it was printed uncaptured under load
        deadline, refused = time.monotonic() + 30.0, "refused a connection from 127.0.0.1: its TLS handshake failed"
        while not any(refused in line for line in server.shown) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert any(refused in line for line in server.shown), server.shown
        # the line party 0 writes to stderr, as the store kept it (capturing the store thread's stderr once came
        # back empty in CI; tests/test_hijack.py reads such lines from a real party 0's log)
        assert any("refused a connection from rank 1 (127.0.0.1): rank 1 may not write mpcdp/endpoint/2" in line
                   for line in server.shown), server.shown
    finally:
        server.close()


def test_the_store_says_in_one_request_which_ranks_wrote_a_key_and_refuses_another_family(store):
    port, client = store
    assert client.written(rendezvous.ENDPOINT_PREFIX) == set()
    rendezvous.publish_endpoint(1, "127.0.0.1", 4000, 4)
    rendezvous.publish_endpoint(3, "127.0.0.1", 4001, 4)
    rendezvous.publish_report(2, None, "none")
    assert client.written(rendezvous.ENDPOINT_PREFIX) == {1, 3}
    assert client.written(rendezvous.REPORT_PREFIX) == {2}
    assert rendezvous.written_ranks(rendezvous.ENDPOINT_PREFIX, 2) == {1}  # ranks below 2 only
    with pytest.raises(ConfigError, match="written 'mpcdp/secret/'"):  # not a family of the schema
        client.written("mpcdp/secret/")
    raw = socket.create_connection(("127.0.0.1", port))
    payload = b'{"op":"written","key":"mpcdp/endpoint/","extra":1}'  # a field too many: refused, closed
    raw.sendall(struct.pack("<I", len(payload)) + payload)
    raw.settimeout(5.0)
    assert b'"error"' in raw.recv(4096) and raw.recv(1) == b""
    assert client.written(rendezvous.REPORT_PREFIX) == {2}  # the store itself is still up


def test_a_process_waiting_for_many_asks_the_store_a_bounded_number_of_times_per_poll(own_rendezvous, monkeypatch):
    """65 processes, 64 of them not there: each poll is one request (the ranks with an endpoint), plus one
    per check of the loss reports; reading every missing rank's key at every poll (64 requests each) made
    the set-up of a 64-party run quadratic. A rank that writes late is still found, and read once."""
    port = free_port()
    server = rendezvous.StoreServer(port, processes=65)
    client = rendezvous.StoreClient("127.0.0.1", port, timeout_s=5.0)
    rendezvous._store, rendezvous._run = client, rendezvous.Run(rank=0, processes=65, secure=False)
    poll_s = rendezvous.poll_s
    requests, polls = _counted(client, monkeypatch)
    assert poll_s(65) > poll_s(16) == poll_s(3) == 0.02  # polls further apart beyond 16 processes
    try:
        with pytest.raises(PeerTimeout, match="waiting at the rendezvous for party 1"):
            rendezvous.endpoints(list(range(1, 65)), processes=65, timeout_s=0.5)
        assert len(polls) >= 3 and len(requests) <= 2 * (len(polls) + 1)
        requests.clear()
        rendezvous.publish_endpoint(7, "127.0.0.1", 4007, 65)
        with pytest.raises(PeerTimeout, match="for party 9"):
            rendezvous.endpoints([7, 9], processes=65, timeout_s=0.3)
        assert sum(r.get("key") == rendezvous.ENDPOINT_PREFIX + "7" for r in requests) == 2  # its write, one read
    finally:
        server.close()


def test_a_claim_wait_among_many_asks_the_store_a_bounded_number_of_times_per_poll(own_rendezvous, monkeypatch):
    """`mpcdp party`'s wait for every claim (:mod:`mpcdp.transport.claims`), 65 processes and only rank 0 there:
    each poll is one request for the claims written, plus the report and stray checks' one each."""
    from mpcdp.transport import claims

    port = free_port()
    rendezvous.open_store(f"tcp://127.0.0.1:{port}", rank=0, processes=65, timeout_s=5.0)
    requests, polls = _counted(rendezvous._store, monkeypatch)
    try:
        with pytest.raises(PeerTimeout, match="waiting at the rendezvous for party 1's claim"):
            claims.settle(0, 64, 65, timeout_s=0.5)
        gets = [r for r in requests if r["op"] == "get"]
        assert len(polls) >= 3 and len(requests) <= 3 * (len(polls) + 2) and len(gets) <= 2, (len(polls), len(requests))
    finally:
        rendezvous._server.close()


def _counted(client, monkeypatch) -> tuple[list, list]:
    """The requests ``client`` makes of its store and the polls of a waiting process, as they happen."""
    requests: list = []
    polls: list = []
    exchange, poll_s = client._exchange, rendezvous.poll_s
    monkeypatch.setattr(client, "_exchange", lambda request: requests.append(request) or exchange(request))
    monkeypatch.setattr(rendezvous, "poll_s", lambda processes: polls.append(processes) or poll_s(processes))
    return requests, polls
