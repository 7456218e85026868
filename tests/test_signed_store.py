"""Values in a store mpcdp does not serve over TLS (torchrun's agent store, a file store) are sealed by their
writer's credential: a value written by anyone without that rank's key — a forged refusal, report or
endpoint, a value signed by another rank, a stale one — is ignored and said once as an unauthenticated
writer's; a run under the torchrun convention with a forged refusal planted for party 1 trains to the end."""

import datetime
import json
import os
import pathlib

import numpy as np
import pandas as pd
import pytest
import torch.distributed as dist

from mpcdp.errors import PeerTimeout
from mpcdp.runtime.harness import free_port
from mpcdp.transport import rendezvous, signed_values
from mpcdp.transport.credentials import LinkSecurity
from party_commands import run_party_commands

ROOT = pathlib.Path(__file__).resolve().parents[1]
FORGED_REFUSAL = json.dumps({"refused": "nan", "file": "B.csv", "field": "salary", "position": None})
RUN_ID = "signed-store-test"


@pytest.fixture
def agent(monkeypatch, own_rendezvous):
    """A store hosted as torchrun's agent hosts it, and the environment torchrun gives its workers."""
    port = free_port()
    master = dist.TCPStore("127.0.0.1", port, is_master=True, wait_for_workers=False,
                           timeout=datetime.timedelta(seconds=30))
    for name, value in {"TORCHELASTIC_USE_AGENT_STORE": "True", "MASTER_ADDR": "127.0.0.1",
                        "MASTER_PORT": str(port), "TORCHELASTIC_RUN_ID": RUN_ID,
                        "TORCHELASTIC_RESTART_COUNT": "0"}.items():
        monkeypatch.setenv(name, value)
    yield port, dist.PrefixStore(f"mpcdp/{RUN_ID}/0", master)  # rendezvous state: own_rendezvous puts it back


def _join(port: int, deployment, rank: int):
    rendezvous.open_store("env://", rank=rank, processes=4, timeout_s=5.0, security=LinkSecurity(deployment, rank))
    return rendezvous._signer


def test_a_refusal_written_without_the_ranks_key_is_ignored_and_said_once(agent, deployment, capfd):
    port, plain = agent
    _join(port, deployment, 0)
    plain.set(rendezvous.REPORT_PREFIX + "1", FORGED_REFUSAL)  # no credentials: the attack of issue 45
    assert rendezvous.read_reports(4) == {} and rendezvous.read_reports(4) == {}
    err = capfd.readouterr().err
    assert err.count("an unauthenticated writer put it there") == 1
    assert "mpcdp/report/1 in torchrun's agent store is not signed by rank 1's credential (not a signed" in err
    # rank 1 itself, with its key, writes its report: it is read; rank 2's key cannot write rank 1's
    one = signed_values.ValueSigner(LinkSecurity(deployment, 1), f"torchrun:mpcdp/{RUN_ID}/0")
    plain.set(rendezvous.REPORT_PREFIX + "1", one.seal(rendezvous.REPORT_PREFIX + "1",
                                                       '{"suspect":2,"evidence":"closed"}'))
    assert rendezvous.read_reports(4) == {1: rendezvous.Report(1, 2, "closed")}
    two = signed_values.ValueSigner(LinkSecurity(deployment, 2), f"torchrun:mpcdp/{RUN_ID}/0")
    plain.set(rendezvous.REPORT_PREFIX + "1", two.seal(rendezvous.REPORT_PREFIX + "1", FORGED_REFUSAL))
    assert rendezvous.read_reports(4) == {}
    assert "a certificate for ['mpcdp party 2'], not rank 1's" in capfd.readouterr().err


@pytest.mark.parametrize("tamper, reason", [
    (lambda e: {**e, "v": e["v"].replace("closed", "violation")}, "a signature that does not verify"),
    (lambda e: {**e, "t": e["t"] - 2 * int(signed_values.FRESH_S)}, "outside this run's window"),
    (lambda e: {**e, "c": e["c"][:40]}, "a certificate not issued by this deployment's CA"),
    (lambda e: {k: v for k, v in e.items() if k != "s"}, "not a signed envelope"),
    (lambda e: {**e, "t": True}, "fields of the wrong type")])
def test_a_tampered_stale_or_foreign_envelope_is_unauthenticated(deployment, tmp_path, tamper, reason):
    from mpcdp.transport.credentials import make_deployment

    signer = signed_values.ValueSigner(LinkSecurity(deployment, 1), "torchrun:x")
    key = rendezvous.REPORT_PREFIX + "1"
    envelope = json.loads(signer.seal(key, '{"suspect":2,"evidence":"closed"}'))
    assert signer.open(key, 1, json.dumps(envelope).encode()) == '{"suspect":2,"evidence":"closed"}'
    with pytest.raises(signed_values.Unauthenticated, match=reason):
        signer.open(key, 1, json.dumps(tamper(envelope)).encode())
    with pytest.raises(signed_values.Unauthenticated, match="signature that does not verify"):  # another key
        signer.open(rendezvous.REPORT_PREFIX + "2", 1, json.dumps(envelope).encode())
    other = signed_values.ValueSigner(LinkSecurity(make_deployment(tmp_path / "other", 2), 1), "torchrun:x")
    with pytest.raises(signed_values.Unauthenticated, match="not issued by this deployment's CA"):
        signer.open(key, 1, other.seal(key, '{"suspect":2,"evidence":"closed"}').encode())


def test_a_forged_endpoint_is_ignored_and_a_timeout_it_causes_names_no_party(agent, deployment, capfd):
    port, plain = agent
    _join(port, deployment, 0)
    plain.set(rendezvous.ENDPOINT_PREFIX + "1", "127.0.0.1 4000 4")
    with pytest.raises(PeerTimeout, match="no endpoint signed by party 1 arrived, and an unauthenticated writer") \
            as info:
        rendezvous.endpoints([1], processes=4, timeout_s=1.0, dealer=3)
    assert info.value.party is None
    one = signed_values.ValueSigner(LinkSecurity(deployment, 1), f"torchrun:mpcdp/{RUN_ID}/0")
    plain.set(rendezvous.ENDPOINT_PREFIX + "1", one.seal(rendezvous.ENDPOINT_PREFIX + "1", "127.0.0.1 4001 4"))
    assert rendezvous.endpoints([1], processes=4, timeout_s=1.0, dealer=3) == {1: ("127.0.0.1", 4001)}
    assert "unauthenticated writer" in capfd.readouterr().err


def _party_files(folder: pathlib.Path) -> list[str]:
    rng = np.random.default_rng(5)
    paths = []
    for j in range(3):
        frame = pd.DataFrame(rng.normal(size=(120, 3)), columns=["age", "hours", "score"])
        frame["y"] = [1, -1] * 60
        frame.to_csv(folder / f"party{j}.csv", index=False)
        paths.append(str(folder / f"party{j}.csv"))
    return paths


def test_a_torchrun_run_with_a_forged_refusal_for_party_1_trains_to_the_end(agent, deployment, tmp_path):
    """Four `mpcdp party` processes the torchrun way (WORLD_SIZE counting the dealer, joining the agent's
    store) with credentials; before they start, a process without credentials writes a refusal for party 1
    under the run's key prefix. Every process ignores it, says so, and finishes; nobody names party 1."""
    port, plain = agent
    plain.set(rendezvous.REPORT_PREFIX + "1", FORGED_REFUSAL)
    files = _party_files(tmp_path)
    env = dict(os.environ, WORLD_SIZE="4", MPCDP_CREDENTIALS=str(deployment))
    own = [["--data", files[rank], "--label", "y"] if rank < 3 else [] for rank in range(4)]
    done = run_party_commands([["--job", "train", "--protocol", "protocols/quickstart-a9a.toml", "--timeout", "120",
                                *own[rank]] for rank in range(4)], env, 240)
    for rank, (code, out, err) in enumerate(done):
        assert code == 0, (rank, out, err[-3000:])
        assert "party 1 refused" not in err and "salary" not in out + err
    assert any("an unauthenticated writer put it there" in err for _, _, err in done)
