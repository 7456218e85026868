"""Peers that deviate on the wire cannot hurt the honest parties: every message is framed and checked, and
no peer data is ever unpickled (mpcdp/README.md, "Threat model")."""

import os
import pickle

import pytest
import torch

from mpcdp.errors import PartyFailed, ProtocolViolation
from mpcdp.runtime.harness import run_parties
from mpcdp.transport import frames, public
from party_jobs import PickleBomb, deviate_on_the_wire, every_message_on_mpcdp_links, rogue_dealer_request

ROGUE, AT = 1, 2


# With 3 parties the third (honest) party never reads the rogue's bytes itself: it must still stop, naming the rogue
# or, where it has only party 0's word against the rogue's (issue 45: the same reports as a rogue's false
# accusation), nobody — never an honest party.
@pytest.mark.parametrize("fault, parties", [("short", 2), ("long", 2), ("tag", 2), ("garbage", 2),
                                            ("pickle", 2), ("replay", 3), ("json-pickle", 2)])
def test_a_deviating_peer_stops_every_honest_party_naming_it(fault, parties, config_for, tmp_path):
    timeout = 15.0 if fault == "short" else 60.0
    with pytest.raises(PartyFailed) as info:
        run_parties(deviate_on_the_wire, config_for(parties, timeout_s=timeout),
                    args=(ROGUE, fault, AT, str(tmp_path)))
    honest = [rank for rank in range(parties) if rank != ROGUE]
    reports = {r.rank: r for r in info.value.reports}
    assert info.value.party == ROGUE, str(info.value)
    if fault == "short":  # a frame cut short looks like a slow link until the deadline, which names the rogue
        assert f"party {ROGUE} went silent" in str(info.value)
    for rank in honest if fault != "short" else ():  # the honest parties: stopped with an error that names the rogue
        report = reports[rank]
        assert report.status in ("error", "died") and report.exitcode != 0, (fault, rank, report)
        direct = rank == 0  # the party that read the rogue's bytes
        assert report.blamed_party == ROGUE if direct else report.blamed_party in (ROGUE, None), \
            (fault, rank, report.message)
        assert f"party {ROGUE}" in report.message, (fault, rank, report.message)
    if fault != "short":
        assert f"party {ROGUE} sent" in reports[0].message, reports[0].message
    # nothing was executed, and no honest party released anything from the faulty round on
    assert not (tmp_path / "executed").exists()
    expected = [str(r) for r in range(AT)]
    for rank in honest:
        released = (tmp_path / f"released-{rank}").read_text().split() if AT else []
        assert released == expected, (fault, rank, released)


def test_frame_checks_name_the_field_expected_and_found():
    incoming = frames.Incoming(4, frames.INT64, "open x", into=memoryview(bytearray(16)))
    incoming.expect(7)
    header = frames.HEADER.pack(frames.MAGIC, frames.VERSION, frames.INT64, 6, frames.tag_of("open x"), 16)
    incoming.window()[:16] = header
    with pytest.raises(ProtocolViolation, match=r"party 4 sent .* message number expected 7, found 6") as info:
        incoming.advance(16, me=0)
    assert info.value.party == 4
    retyped = frames.Incoming(4, frames.INT64, "open x", into=memoryview(bytearray(16)))
    retyped.window()[:16] = frames.HEADER.pack(frames.MAGIC, frames.VERSION, frames.FLOAT64, 0,
                                               frames.tag_of("open x"), 16)
    with pytest.raises(ProtocolViolation, match="payload type expected int64, found float64"):
        retyped.advance(16, me=0)
    good = frames.Incoming(4, frames.INT64, "open x", into=memoryview(bytearray(16)))
    good.expect(7)
    good.window()[:16] = frames.HEADER.pack(frames.MAGIC, frames.VERSION, frames.INT64, 7, frames.tag_of("open x"), 16)
    good.advance(16, me=0)
    assert not good.done and len(good.window()) == 16


@pytest.mark.parametrize("elements", [3, 8192, 8193, 100_003])
def test_a_frame_leaves_in_at_most_two_writes_and_arrives_whole(elements):
    """A small frame is one write; a large one is its header joined to the payload's first bytes, one full TLS record
    (16 KiB), then the rest straight from the tensor, uncopied. Read back in uneven pieces, the frame is the same."""
    tensor = torch.arange(elements, dtype=torch.int64) * 0x9E3779B97F4A7C15
    payload = tensor.numpy().data.cast("B")
    header = frames.header(frames.INT64, 5, "open y", len(payload))
    parts = frames.writes(header, payload)
    assert b"".join(bytes(part) for part in parts) == header + bytes(payload)
    if len(payload) <= frames.JOIN_BYTES:
        assert len(parts) == 1
    else:
        assert len(parts[0]) == frames.RECORD_BYTES and parts[1].obj is payload.obj  # the rest is a view of the tensor
    received = torch.empty_like(tensor)
    incoming = frames.Incoming(2, frames.INT64, "open y", into=received.numpy().data.cast("B"))
    incoming.expect(5)
    stream, at, step = b"".join(bytes(part) for part in parts), 0, 7
    while not incoming.done:
        window = incoming.window()
        n = min(len(window), step, len(stream) - at)
        window[:n] = stream[at:at + n]
        incoming.advance(n, me=0)
        at, step = at + n, step * 3 % 40_009 + 1
    assert at == len(stream) and torch.equal(received, tensor)


def test_public_metadata_is_json_and_a_pickle_is_refused_unexecuted(tmp_path):
    value = {"shape": (3, 4), "problem": None, "x": torch.tensor([1.5, -0.0, float("inf")], dtype=torch.float64),
             "n": torch.arange(3)}
    back = public.decode(public.encode(value), peer=1, label="t")
    assert back["shape"] == [3, 4] and back["problem"] is None
    assert torch.equal(back["x"], value["x"]) and torch.equal(back["n"], value["n"])
    marker = tmp_path / "executed"
    for payload in (pickle.dumps(PickleBomb(str(marker))), b'{"$tensor": {"dtype": "float64", "shape": [2], "data": "AA=="}}',
                    b"[" * 10_000, b"\xff\xfe"):
        with pytest.raises(ProtocolViolation, match="party 3 sent public metadata"):
            public.decode(payload, peer=3, label="t")
    assert not marker.exists()
    with pytest.raises(TypeError, match="JSON types or tensors"):
        public.encode({"f": os.getcwd})


def test_the_dealer_accepts_only_its_kinds_and_beaver_operations():
    from mpcdp.adapter.dealer import ALLOWED
    from mpcdp.adapter.objects import check_request

    check_request("terminate", ALLOWED)
    check_request({"function": "additive", "device": None, "args": [[2], [2], "mul"], "kwargs": {}}, ALLOWED)
    check_request({"function": "mpcdp_Products", "device": None, "args": [4, 2, [[0, 1]]], "kwargs": {}}, ALLOWED)
    for bad, what in (({"function": "_setup_generators", "device": None, "args": [], "kwargs": {}}, "_setup_generators"),
                      ({"function": "additive", "device": None, "args": [[2], [2], "save"], "kwargs": {}}, "save"),
                      ({"function": "square"}, "not a material request"), ([1, 2], "not a material request")):
        with pytest.raises(ProtocolViolation, match=f"party 0 sent the dealer .*{what}") as info:
            check_request(bad, ALLOWED)
        assert info.value.party == 0


@pytest.mark.parametrize("what", ["pickle", "operation"])
def test_the_dealer_refuses_what_it_does_not_serve_naming_party_0(what, config_for, tmp_path):
    with pytest.raises(PartyFailed) as info:
        run_parties(rogue_dealer_request, config_for(2, timeout_s=60.0), args=(what, str(tmp_path)))
    dealer = info.value.reports[-1]
    assert dealer.role == "dealer" and dealer.status in ("error", "died") and dealer.exitcode != 0, dealer
    assert dealer.error_type == "ProtocolViolation" and dealer.blamed_party == 0, dealer
    assert "party 0 sent" in dealer.message
    assert not (tmp_path / "executed").exists()
    # where party 0 then stops (its request failed), the honest party stops too, naming party 0 as agreed
    # through the rendezvous store; a party 0 that stays connected is named at the timeout instead
    if what != "pickle":
        assert info.value.reports[1].blamed_party == 0, info.value.reports[1]


def test_tls_carries_every_message_and_gives_exact_results(config_for, tmp_path, monkeypatch):
    """With credentials every link is TLS 1.3, the dealer's included; CrypTen's protocols run over them with no
    torch.distributed process group; the sum is exact and the product within fixed-point error."""
    from mpcdp.transport.credentials import make_deployment

    from mpcdp.runtime.harness import run_job

    monkeypatch.setenv("MPCDP_CREDENTIALS", str(make_deployment(tmp_path / "keys", 3)))
    run = run_job(every_message_on_mpcdp_links, config_for(3), args=(6,))
    sealed = run.values
    # the dealer's report: what it sent for each request (a triple, then the wraps), and in all (its keys too)
    assert len(run.dealer["request_bytes"]) == 2 and min(run.dealer["request_bytes"]) > 6 * 8
    assert run.dealer["bytes_sent"] > sum(run.dealer["request_bytes"])
    assert [(r["links"], r["dealer_link"], r["process_group"]) for r in sealed] == [("TLSv1.3", "TLSv1.3", False)] * 3
    x = torch.linspace(-2.0, 2.0, 6, dtype=torch.float64)
    for r in sealed:
        assert torch.equal(r["sum"], torch.arange(6, dtype=torch.float64) * 6)
        assert (r["product"] - x * x.flip(0)).abs().max().item() <= 4 * 2.0**-16


@pytest.mark.parametrize("address", ["10.213.0.2", "127.0.0.1"])
def test_plain_links_are_refused_without_the_flag_on_one_host_as_across_hosts(address):
    """Without credentials a process started on its own refuses plain links, over loopback too (another user of
    the host could relay them); `--insecure-links` goes on, warning what it exposes and how to close it."""
    from mpcdp.errors import ConfigError
    from mpcdp.transport.mesh import Mesh

    def never(*_):
        raise AssertionError("no address may be published before the refusal")

    with pytest.raises(ConfigError, match="must be authenticated.*--credentials DIR.*--insecure-links"):
        Mesh.establish(1, 3, address=address, locate=never, timeout_s=1.0)
    # with the flag it warns and goes on (to bind the address, or to publish it)
    with pytest.warns(UserWarning, match="plain TCP.*every share.*dealer's keys.*released.*rendezvous.*"
                                         "drop --insecure-links"), pytest.raises((AssertionError, OSError)):
        Mesh.establish(1, 3, address=address, locate=never, timeout_s=1.0, insecure=True)
