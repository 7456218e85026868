"""Three data parties and the dealer on four emulated hosts (network namespaces joined by a bridge),
each started by `launch/host.sh` from environment variables only, as on separate machines."""

import json
import os
import pathlib
import secrets
import shutil
import subprocess

import pytest
import torch

from mpcdp.jobs.aggregate import error_bound, local_vector

ROOT = pathlib.Path(__file__).resolve().parents[1]
PARTIES, DIM, SEED = 3, 40, 17


def _netns_unavailable() -> str | None:
    if os.geteuid() != 0:
        return "network namespaces need root (ip netns add)"
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed"
    probe = f"mpcdpprobe{secrets.token_hex(3)}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"`ip netns add` is not permitted here: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], check=False)
    return None


_REASON = _netns_unavailable()


@pytest.fixture
def hosts():
    tag = "t" + secrets.token_hex(3)
    script = str(ROOT / "launch" / "netns.sh")
    try:
        up = subprocess.run(["bash", script, "up", tag, str(PARTIES + 1)], capture_output=True, text=True,
                            check=True)
        yield tag, [line.split()[1] for line in up.stdout.splitlines()]
    finally:
        subprocess.run(["bash", script, "down", tag], check=False)
        left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert tag not in left


@pytest.mark.netns
@pytest.mark.skipif(_REASON is not None, reason=_REASON or "")
def test_parties_on_separate_hosts(hosts):
    tag, addresses = hosts
    assert addresses == [f"10.213.0.{i + 1}" for i in range(PARTIES + 1)]
    env_common = {"WORLD_SIZE": str(PARTIES), "MASTER_ADDR": addresses[0], "MASTER_PORT": "29500",
                  "MPCDP_IFACE": "eth-mpcdp"}
    procs = []
    for rank in range(PARTIES + 1):
        env = dict(os.environ, RANK=str(rank), **env_common)
        cmd = ["ip", "netns", "exec", f"{tag}-h{rank}", "bash", str(ROOT / "launch" / "host.sh"),
               "--dim", str(DIM), "--seed", str(SEED), "--timeout", "90"]
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outputs = []
    try:
        for rank, proc in enumerate(procs):
            out, err = proc.communicate(timeout=150)
            assert proc.returncode == 0, f"rank {rank} failed:\n{err[-3000:]}"
            outputs.append(out)
    finally:
        for proc in procs:
            proc.kill()
    results = [json.loads(out.strip().splitlines()[-1]) for out in outputs[:PARTIES]]
    assert outputs[PARTIES].strip() == ""  # the dealer prints nothing and sees no result
    exact = sum(local_vector(DIM, rank, SEED) for rank in range(PARTIES))
    for rank, result in enumerate(results):
        assert result["rank"] == rank
        assert torch.equal(torch.tensor(result["local"], dtype=torch.float64), local_vector(DIM, rank, SEED))
        opened = torch.tensor(result["aggregate"], dtype=torch.float64)
        assert (opened - exact).abs().max().item() <= error_bound(PARTIES, 16)
        # the opening really crossed hosts: every share went to party 0, which sent the sum to the others
        assert result["bytes_sent"] >= 8 * DIM * ((PARTIES - 1) if rank == 0 else 1)


@pytest.mark.netns
@pytest.mark.skipif(_REASON is not None, reason=_REASON or "")
def test_each_host_sees_only_the_emulated_subnet(hosts):
    tag, _ = hosts
    routes = subprocess.run(["ip", "-n", f"{tag}-h1", "route"], capture_output=True, text=True).stdout
    assert routes.split()[0] == "10.213.0.0/24" and len(routes.strip().splitlines()) == 1
    links = subprocess.run(["ip", "-n", f"{tag}-h1", "-o", "link"], capture_output=True, text=True).stdout
    assert sorted(line.split(":")[1].strip().split("@")[0] for line in links.splitlines()) == ["eth-mpcdp", "lo"]


@pytest.mark.netns
@pytest.mark.skipif(_REASON is not None, reason=_REASON or "")
def test_cost_ledger_bytes_match_what_crossed_each_hosts_link(hosts):
    """`mpcdp cost` with every party and the dealer on its own host: the TCP payload the cost ledger counted is
    what each host's interface sent, less 66 header bytes (Ethernet, IPv4, TCP with timestamps) per packet, to
    within a few option bytes — far less than any message — and the online release is the declared opening."""
    from mpcdp.jobs.cost import summarize
    from mpcdp.transport import costs

    tag, addresses = hosts
    env_common = {"WORLD_SIZE": str(PARTIES), "MASTER_ADDR": addresses[0], "MASTER_PORT": "29501"}
    procs = []
    for rank in range(PARTIES + 1):
        cmd = ["ip", "netns", "exec", f"{tag}-h{rank}", str(ROOT / ".venv" / "bin" / "mpcdp"), "party",
               "--iface", "eth-mpcdp", "--job", "cost", "--model", "logreg-ijcnn1", "--noise", "rou", "--meter-iface", "eth-mpcdp",
               "--timeout", "90"]
        procs.append(subprocess.Popen(cmd, env=dict(os.environ, RANK=str(rank), **env_common),
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outputs = []
    try:
        for rank, proc in enumerate(procs):
            out, err = proc.communicate(timeout=150)
            assert proc.returncode == 0, f"rank {rank} failed:\n{err[-3000:]}"
            outputs.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for proc in procs:
            proc.kill()
    run = summarize("logreg-ijcnn1", PARTIES, "rou", 1.0, 0.0, outputs[:PARTIES], outputs[PARTIES], 0.0)
    layer = run.layers[0]
    for rank in range(PARTIES):  # over both measured sections (a segment may leave just after a section ends)
        frames = sum(layer[s]["interface"][rank]["tx_bytes"] for s in ("noise", "release"))
        packets = sum(layer[s]["interface"][rank]["tx_packets"] for s in ("noise", "release"))
        payload = sum(layer[s]["tcp_sent"][rank] for s in ("noise", "release"))
        # 66 header bytes per packet; a few more where a packet carries extra TCP options (seen: 4 bytes once)
        assert packets > 0 and abs(frames - payload - 66 * packets) <= 64, (rank, frames - payload, packets)
    # the online release crossed the hosts as declared: one opening of d + 1 = 23 elements through party 0
    assert layer["release"]["bytes_sent"] == [costs.opening_bytes([23], PARTIES, r)[0] for r in range(PARTIES)]


TRAIN_PROTOCOL = """name = "hosts-storm"
dataset = "breast-cancer"
algorithm = "storm"
[privacy]
epsilon = 1.0
delta = 1e-3
[training]
parties = 3
batch = 30
batch0 = 60
passes = 1.0
c2 = 0.5
gamma = 0.5
zeta = 0.5
seed = 4
[mpc]
reproducible = true
"""


@pytest.mark.netns
@pytest.mark.skipif(_REASON is not None, reason=_REASON or "")
def test_training_on_separate_hosts_equals_the_local_run(hosts, tmp_path):
    """`mpcdp party --job train` on four emulated hosts whose links are rate-limited (tc tbf, 50 Mbit/s) with
    5 ms injected one-way latency per round ends with the model of the same protocol run locally, bit for
    bit: without noise (STORM) and with seeded batches the secure sum is exact arithmetic in the ring."""
    from mpcdp.jobs.train import plan_from, run_plan

    tag, addresses = hosts
    protocol = tmp_path / "hosts.toml"
    protocol.write_text(TRAIN_PROTOCOL)
    for rank in range(PARTIES + 1):
        subprocess.run(["ip", "netns", "exec", f"{tag}-h{rank}", "tc", "qdisc", "add", "dev", "eth-mpcdp", "root",
                        "tbf", "rate", "50mbit", "burst", "64kb", "latency", "1s"], check=True)
    env_common = {"WORLD_SIZE": str(PARTIES), "MASTER_ADDR": addresses[0], "MASTER_PORT": "29502"}
    procs = []
    for rank in range(PARTIES + 1):
        cmd = ["ip", "netns", "exec", f"{tag}-h{rank}", str(ROOT / ".venv" / "bin" / "mpcdp"), "party",
               "--iface", "eth-mpcdp", "--job", "train", "--protocol", str(protocol), "--link-delay-ms", "5",
               "--timeout", "120"]
        procs.append(subprocess.Popen(cmd, env=dict(os.environ, RANK=str(rank), **env_common),
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outputs = []
    try:
        for rank, proc in enumerate(procs):
            out, err = proc.communicate(timeout=200)
            assert proc.returncode == 0, f"rank {rank} failed:\n{err[-3000:]}"
            outputs.append(out)
    finally:
        for proc in procs:
            proc.kill()
    hosted = [json.loads(out.strip().splitlines()[-1]) for out in outputs[:PARTIES]]
    local = run_plan(plan_from(str(protocol)), curve=False)
    for rank, report in enumerate(hosted):
        assert report["rank"] == rank and report["bytes_per_party"] > 0
        assert report["model_sha256"] == local["model_sha256"]
        assert report["test_loss"] == local["test_loss"]
