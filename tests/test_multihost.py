"""Three data parties and the dealer on four emulated hosts (network namespaces joined by a bridge),
each started by `launch/host.sh` from environment variables only, as on separate machines."""

import concurrent.futures
import json
import os
import pathlib
import secrets
import shutil
import subprocess
import sys

import pytest
import torch

from mpcdp.jobs.aggregate import error_bound, local_vector

import forked

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


def _outputs(procs: list, timeout: int) -> list[str]:
    """Every process's stdout, in rank order, once each has exited 0 (its stderr tail otherwise); every
    process is killed on the way out."""
    outputs = []
    try:
        for rank, proc in enumerate(procs):
            out, err = proc.communicate(timeout=timeout)
            assert proc.returncode == 0, f"rank {rank} failed:\n{err[-3000:]}"
            outputs.append(out)
    finally:
        for proc in procs:
            proc.kill()
    return outputs


@pytest.fixture(scope="module")
def hosts():
    """Four emulated hosts for the whole module (set up once: every test leaves them as it found them)."""
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


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    """This module's credentials: a CA and a certificate per rank (`mpcdp credentials`, started once)."""
    folder = tmp_path_factory.mktemp("multihost") / "credentials"
    forked.run([str(ROOT / ".venv" / "bin" / "mpcdp"), "credentials", "--parties", str(PARTIES),
                "--out", str(folder)], check=True, capture_output=True)
    return folder


@pytest.fixture(scope="module")
def tls_aggregate(hosts, deployment, tmp_path_factory):
    """The secure aggregation over TLS, each process started by `launch/host.sh` from environment variables
    only, while party 0's host captures its link (one run, asserted by several tests): every process's
    (exit code, stdout, stderr), and the capture's TCP streams."""
    from sniff import tcp_streams

    tag, addresses = hosts
    env = {"MPCDP_IFACE": "eth-mpcdp", "MPCDP_CREDENTIALS": str(deployment)}
    results, capture = _captured_run(tag, addresses, env, 29500, tmp_path_factory.mktemp("tls") / "tls.bin", [],
                                     command=["bash", str(ROOT / "launch" / "host.sh")])
    return results, tcp_streams(capture)


@pytest.fixture(scope="module")
def plain_aggregate(hosts, tmp_path_factory):
    """The same aggregation over plain links (`--insecure-links`), captured on party 0's link: its TCP streams."""
    from sniff import tcp_streams

    tag, addresses = hosts
    _, capture = _captured_run(tag, addresses, {"MPCDP_INSECURE_LINKS": "1"}, 29505,
                                     tmp_path_factory.mktemp("plain") / "plain.bin", [])
    return tcp_streams(capture)


@pytest.fixture(scope="module")
def plain_cost(hosts, tmp_path_factory):
    """`mpcdp cost` of a layer with noise over plain links (knowingly: the byte-exact comparison with the
    declared costs is of the frames themselves), every process metering its host's interface, captured on party
    0's link: every process's JSON line, and the capture's TCP streams."""
    from sniff import tcp_streams

    tag, addresses = hosts
    args = ["--job", "cost", "--model", "logreg-ijcnn1", "--noise", "rou", "--meter-iface", "eth-mpcdp"]
    results, capture = _captured_run(tag, addresses, {"MPCDP_INSECURE_LINKS": "1"}, 29501,
                                     tmp_path_factory.mktemp("cost") / "plain.bin", args, timeout=90)
    return [json.loads(out.strip().splitlines()[-1]) for _, out, _ in results], tcp_streams(capture)


@pytest.mark.netns
@pytest.mark.skipif(_REASON is not None, reason=_REASON or "")
def test_parties_on_separate_hosts(hosts, tls_aggregate):
    _, addresses = hosts
    assert addresses == [f"10.213.0.{i + 1}" for i in range(PARTIES + 1)]
    outputs = [out for _, out, _ in tls_aggregate[0]]  # every process exited 0 (_captured_run)
    results = [json.loads(out.strip().splitlines()[-1]) for out in outputs[:PARTIES]]
    assert outputs[PARTIES].strip() == ""  # the dealer prints nothing and sees no result
    exact = sum(local_vector(DIM, rank, SEED) for rank in range(PARTIES))
    for rank, result in enumerate(results):
        assert result["rank"] == rank and result["links"] == "TLSv1.3"
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
def test_cost_ledger_bytes_match_what_crossed_each_hosts_link(plain_cost):
    """`mpcdp cost` with every party and the dealer on its own host: the TCP payload the cost ledger counted is
    what each host's interface sent, less 66 header bytes (Ethernet, IPv4, TCP with timestamps) per packet, to
    within a few option bytes — far less than any message — and the online release is the declared opening."""
    from mpcdp.jobs.cost import summarize
    from mpcdp.transport import costs

    outputs, _ = plain_cost
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
def test_training_on_separate_hosts_equals_the_local_run(hosts, tmp_path, deployment):
    """`mpcdp party --job train` on four emulated hosts whose links are rate-limited (tc tbf, 50 Mbit/s) with
    5 ms injected one-way latency per round ends with the model of the same protocol run locally, bit for
    bit: without noise (STORM) and with seeded batches the secure sum is exact arithmetic in the ring."""
    from mpcdp.jobs.train import plan_from, run_plan

    tag, addresses = hosts
    protocol = tmp_path / "hosts.toml"
    protocol.write_text(TRAIN_PROTOCOL)
    env_common = {"WORLD_SIZE": str(PARTIES), "MASTER_ADDR": addresses[0], "MASTER_PORT": "29502",
                  "MPCDP_CREDENTIALS": str(deployment)}
    try:
        for rank in range(PARTIES + 1):
            subprocess.run(["ip", "netns", "exec", f"{tag}-h{rank}", "tc", "qdisc", "add", "dev", "eth-mpcdp",
                            "root", "tbf", "rate", "50mbit", "burst", "64kb", "latency", "1s"], check=True)
        procs = []
        for rank in range(PARTIES + 1):
            cmd = ["ip", "netns", "exec", f"{tag}-h{rank}", str(ROOT / ".venv" / "bin" / "mpcdp"), "party",
                   "--iface", "eth-mpcdp", "--job", "train", "--protocol", str(protocol), "--link-delay-ms", "5",
                   "--timeout", "120"]
            procs.append(forked.Popen(cmd, env=dict(os.environ, RANK=str(rank), **env_common),
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        outputs = _outputs(procs, 200)
    finally:  # the hosts are the module's: the next test gets unlimited links again
        for rank in range(PARTIES + 1):
            subprocess.run(["ip", "netns", "exec", f"{tag}-h{rank}", "tc", "qdisc", "del", "dev", "eth-mpcdp",
                            "root"], check=False, capture_output=True)
    hosted = [json.loads(out.strip().splitlines()[-1]) for out in outputs[:PARTIES]]
    local = run_plan(plan_from(str(protocol)), curve=False)
    for rank, report in enumerate(hosted):
        assert report["rank"] == rank and report["bytes_per_party"] > 0
        assert report["model_sha256"] == local["model_sha256"]
        assert report["test_loss"] == local["test_loss"]


def _aggregate_on_hosts(tag: str, addresses: list[str], env_by_rank: list[dict], port: int, timeout: int = 20,
                        extra: tuple[str, ...] = (), command: list[str] | None = None):
    """``mpcdp party`` (or ``command``, e.g. launch/host.sh) on every emulated host; (exit code, stdout,
    stderr) by rank."""
    start = subprocess.Popen if command else forked.Popen  # launch/host.sh is a shell script: its own test
    command = command or [str(ROOT / ".venv" / "bin" / "mpcdp"), "party", "--iface", "eth-mpcdp"]
    procs = []
    for rank in range(PARTIES + 1):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(PARTIES), MASTER_ADDR=addresses[0],
                   MASTER_PORT=str(port), **env_by_rank[rank])
        cmd = ["ip", "netns", "exec", f"{tag}-h{rank}", *command, "--dim", str(DIM), "--seed", str(SEED),
               "--timeout", str(timeout), *extra]
        procs.append(start(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    def finished(proc) -> tuple[int, str, str]:
        out, err = proc.communicate(timeout=timeout + 60)
        return proc.returncode, out, err

    try:  # every process's pipes read at once: one waited on first must not block another on a full pipe
        with concurrent.futures.ThreadPoolExecutor(len(procs)) as pool:
            return list(pool.map(finished, procs))
    finally:
        for proc in procs:
            proc.kill()


@pytest.mark.netns
@pytest.mark.skipif(_REASON is not None, reason=_REASON or "")
def test_a_process_without_the_deployments_credentials_cannot_join(hosts, deployment, tmp_path):
    """Party 2's host holds a certificate for rank 2, but of another deployment: the others refuse its
    connection, no share reaches it, and every process stops naming party 2. (Plain links across hosts without
    `--insecure-links`: tests/test_wire.py.)"""
    from mpcdp.transport.credentials import make_deployment

    tag, addresses = hosts
    other = make_deployment(tmp_path / "other", PARTIES)  # as `mpcdp credentials` makes them (the fixture's)
    envs = [{"MPCDP_CREDENTIALS": str(deployment)} for _ in range(PARTIES + 1)]
    envs[2] = {"MPCDP_CREDENTIALS": str(other)}
    results = _aggregate_on_hosts(tag, addresses, envs, 29503, timeout=6)
    for rank in range(PARTIES):
        code, out, err = results[rank]
        assert code != 0 and "aggregate" not in out, (rank, out, err[-2000:])
        assert "party 2" in err, (rank, err[-2000:])
    assert "refused a connection from 10.213.0.3" in results[0][2] + results[1][2]


def _captured_run(tag: str, addresses: list[str], env: dict, port: int, capture: pathlib.Path,
                  extra: list[str], timeout: int = 60, command: list[str] | None = None) -> tuple[list, bytes]:
    """Run a job on the emulated hosts while party 0's host (rendezvous, dealer requests, every link)
    captures its link; every process's (exit code, stdout, stderr), once all exited 0, and the capture."""
    sniffer = forked.Popen(["ip", "netns", "exec", f"{tag}-h0", sys.executable, str(ROOT / "tests" / "sniff.py"),
                            "eth-mpcdp", str(capture)], stdout=subprocess.PIPE, text=True)
    try:
        assert sniffer.stdout.readline().strip() == "capturing"
        results = _aggregate_on_hosts(tag, addresses, [env] * (PARTIES + 1), port, timeout=timeout, extra=extra,
                                      command=command)
        assert all(code == 0 for code, _, _ in results), [err[-1500:] for _, _, err in results]
    finally:
        sniffer.kill()
        sniffer.wait()
    return results, capture.read_bytes()


@pytest.mark.netns
@pytest.mark.skipif(_REASON is not None, reason=_REASON or "")
def test_no_opened_value_crosses_the_wire_in_the_clear(plain_aggregate, tls_aggregate):
    """A packet capture on party 0's link: over plain links (`--insecure-links`) the opened sum's ring words
    are on the wire (so the capture can see them); over TLS they are not, nor any 8 consecutive bytes of them."""
    exact = sum(torch.round(local_vector(DIM, rank, SEED) * 2.0**16).to(torch.int64) for rank in range(PARTIES))
    words = exact.numpy().astype("<i8").tobytes()
    assert words in b"".join(plain_aggregate.values())
    sealed = b"".join(tls_aggregate[1].values())
    assert len(sealed) > len(words)
    assert not any(words[i:i + 8] in sealed for i in range(0, len(words), 8))


@pytest.mark.netns
@pytest.mark.skipif(_REASON is not None, reason=_REASON or "")
def test_every_byte_on_the_wire_is_inside_tls(hosts, deployment, tmp_path, plain_cost, plain_aggregate):
    """`mpcdp cost` of a layer with its noise sampled in MPC (dealer material: keys, requests and party 0's
    shares; CrypTen's and mpcdp's openings) on the emulated hosts with credentials: in the capture on party
    0's link, every TCP stream (the links to both parties and the dealer, and the rendezvous store's
    connections) is TLS records from its first byte to its last. Over plain links the same check fails (the
    module's plain runs: the cost job with noise, and the aggregation)."""
    from sniff import tcp_streams, tls_records_only

    tag, addresses = hosts
    noisy = ["--job", "cost", "--model", "logreg-ijcnn1", "--noise", "dgauss"]
    sealed = tcp_streams(_captured_run(tag, addresses, {"MPCDP_CREDENTIALS": str(deployment)}, 29507,
                                       tmp_path / "tls.bin", noisy)[1])
    peers = {k[2] if k[0] == addresses[0] else k[0] for k in sealed}
    assert peers == set(addresses[1:]), peers  # party 0 talked to both parties and the dealer
    assert sum(1 for k in sealed if 29507 in (k[1], k[3])) >= 2 * 3  # the store's connections, both ways
    assert all(tls_records_only(stream) for stream in sealed.values()), \
        [k for k, v in sealed.items() if not tls_records_only(v)]
    for plain in (plain_cost[1], plain_aggregate):
        assert plain and not any(tls_records_only(v) for v in plain.values())


def _party_csvs(rows_per_party: int, test_rows: int) -> tuple[list[str], list[str], tuple]:
    """a9a's first rows as one training CSV text per party and a held-out CSV text per party (0/1 labels in
    `income_over_50k`), with the arrays they hold."""
    import numpy as np

    from mpcdp.data.registry import load

    data = load("a9a")
    header = ",".join([*(f"a{i}" for i in range(data.x_train.shape[1])), "income_over_50k"])

    def text(x, y):
        rows = np.column_stack([x, (y > 0)]).astype(int)
        return header + "\n" + "\n".join(",".join(map(str, r)) for r in rows) + "\n"

    train = [slice(j * rows_per_party, (j + 1) * rows_per_party) for j in range(PARTIES)]
    test = [slice(j * test_rows, (j + 1) * test_rows) for j in range(PARTIES)]
    return ([text(data.x_train[t], data.y_train[t]) for t in train],
            [text(data.x_test[t], data.y_test[t]) for t in test], (data, train))


def _example_on_hosts(tag: str, private: pathlib.Path, files: list[tuple[str, str]], launch: list[list[str]],
                      args: list[str], env: dict) -> list[dict]:
    """launch/own_data_example.py on every emulated host, started by ``launch[rank]`` (e.g. torchrun's
    arguments before the script); each party's CSVs are written from its stdin into a tmpfs mounted in its
    own process's private mount namespace, at a path where every other process sees an empty folder.
    Returns every process's last JSON line, once all exited 0."""
    script = str(ROOT / "launch" / "own_data_example.py")
    procs = []
    for rank in range(PARTIES + 1):
        if rank < PARTIES:
            shell = (f"mount -t tmpfs tmpfs {private} && head -c {len(files[rank][0])} > {private}/mine.csv && "
                     f"cat > {private}/test.csv && exec {' '.join(launch[rank])} {script} {private}/mine.csv "
                     f"--test {private}/test.csv {' '.join(args)}")
            cmd = ["ip", "netns", "exec", f"{tag}-h{rank}", "unshare", "--mount", "--propagation", "private",
                   "sh", "-c", shell]
        else:  # the dealer's host runs the same script (it reads no file)
            cmd = ["ip", "netns", "exec", f"{tag}-h{rank}", *launch[rank], script, "none.csv", *args]
        procs.append(subprocess.Popen(cmd, env=dict(os.environ, **env(rank)), cwd=ROOT, stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for rank, proc in enumerate(procs):  # every party gets its files before any is waited for
        proc.stdin.write("".join(files[rank]) if rank < PARTIES else "")
        proc.stdin.close()
        proc.stdin = None
    outputs = _outputs(procs, 300)
    assert list(private.iterdir()) == []  # no party's file was ever visible outside its own process
    return [json.loads(out.strip().splitlines()[-1]) for out in outputs]


@pytest.mark.netns
@pytest.mark.skipif(_REASON is not None, reason=_REASON or "")
def test_three_hosts_train_a_users_mlp_each_on_a_csv_no_other_process_can_see(hosts, deployment, tmp_path):
    """launch/own_data_example.py on three emulated hosts, each party's training and held-out CSVs visible to
    its own process only: a user's MLP, secure DDP-SRM over TLS, the same released model on every host, ε
    certified, each party's own held-out metrics and the parties' weighted mean reported."""
    tag, addresses = hosts
    train, test, _ = _party_csvs(2000, 500)
    protocol = tmp_path / "own.toml"
    # 4 steps (a tenth of a pass): 5 releases of the MLP's 2,018 noised coordinates, sampled in the MPC
    protocol.write_text((ROOT / "protocols" / "own-data-mlp.toml").read_text().replace("passes = 1.0", "passes = 0.1"))
    private = tmp_path / "private"
    private.mkdir()
    env = {"WORLD_SIZE": str(PARTIES), "MASTER_ADDR": addresses[0], "MASTER_PORT": "29509",
           "MPCDP_IFACE": "eth-mpcdp", "MPCDP_CREDENTIALS": str(deployment)}
    results = _example_on_hosts(tag, private, list(zip(train, test)), [[sys.executable]] * (PARTIES + 1),
                                ["--protocol", str(protocol)], lambda rank: dict(env, RANK=str(rank)))
    assert results[PARTIES] == {"role": "dealer"}
    parties = results[:PARTIES]
    assert all(r["records"] == [2000, 2000, 2000] for r in parties)
    assert len({r["theta_sha256"] for r in parties}) == 1
    assert all(0 < r["epsilon"] <= 1.0 and r["delta"] == 1e-5 for r in parties)
    own = [r["held_out"]["own"] for r in parties]
    assert [o["test_records"] for o in own] == [500] * PARTIES
    assert all(0.0 <= o["test_error"] <= 1.0 and o["test_loss"] > 0 for o in own)
    mean = parties[0]["held_out"]["mean"]  # equal counts: the weighted mean is the plain mean
    assert all(r["held_out"]["mean"] == mean for r in parties)
    assert mean["test_error"] == pytest.approx(sum(o["test_error"] for o in own) / PARTIES, abs=1e-4)


@pytest.mark.netns
@pytest.mark.skipif(_REASON is not None, reason=_REASON or "")
def test_torchrun_on_each_host_trains_the_users_mlp_to_the_shipped_paths_model_bit_for_bit(hosts, deployment,
                                                                                           tmp_path):
    """The same example started the torchrun way on each of the four emulated hosts (static rendezvous at the
    first host, WORLD_SIZE counting the dealer, mpcdp joining torchrun's store), noise off and batches drawn
    from the protocol's seed: its model equals, byte for byte, the shipped path's (mpc_party given the same
    shards in one launcher)."""
    import functools
    import hashlib
    import importlib

    from mpcdp.config import MpcConfig
    from mpcdp.jobs.train import plan_from, plan_noise
    from mpcdp.learning.backends import NoiseLevels, mpc_party
    from mpcdp.learning.dpsrm import Shard
    from mpcdp.learning.modules import from_module
    from mpcdp.runtime.harness import run_parties

    tag, addresses = hosts
    train, test, (data, rows) = _party_csvs(1000, 200)
    protocol = tmp_path / "own.toml"
    protocol.write_text((ROOT / "protocols" / "own-data-mlp.toml").read_text()
                        .replace("passes = 1.0", "passes = 0.25") + "reproducible = true\n")
    private = tmp_path / "private"
    private.mkdir()
    torchrun = [[str(ROOT / ".venv" / "bin" / "torchrun"), "--nnodes", str(PARTIES + 1), "--node_rank", str(rank),
                 "--nproc_per_node", "1", "--master_addr", addresses[0], "--master_port", "29510"]
                for rank in range(PARTIES + 1)]
    env = {"MPCDP_IFACE": "eth-mpcdp", "MPCDP_CREDENTIALS": str(deployment)}
    results = _example_on_hosts(tag, private, list(zip(train, test)), torchrun,
                                ["--protocol", str(protocol), "--no-noise"], lambda rank: env)
    assert results[PARTIES] == {"role": "dealer"}
    assert all(r["epsilon"] is None and r["records"] == [1000] * PARTIES for r in results[:PARTIES])

    example = importlib.import_module("launch.own_data_example")  # by name: the party processes unpickle it
    torch.manual_seed(0)
    model = from_module(example.SmallMlp(data.x_train.shape[1]), (data.x_train.shape[1],))
    plan = plan_from(str(protocol), backend="mpc")
    x = torch.from_numpy(data.x_train).double()
    shards = [Shard(j, x[r], model.labels((data.y_train[r] > 0).astype(int))) for j, r in enumerate(rows)]
    params = plan_noise(plan, (1000,) * PARTIES, model.dim).params
    runner = functools.partial(plan.record.runner, model=model)
    shipped = run_parties(mpc_party, MpcConfig(parties=PARTIES, reproducible=True),
                          party_args=[(s, params, NoiseLevels.none(), model.dim, runner) for s in shards])
    theta = shipped[0]["result"].output(plan.output)
    assert {r["theta_sha256"] for r in results[:PARTIES]} == {hashlib.sha256(theta.numpy().tobytes()).hexdigest()}
