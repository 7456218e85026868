"""The cost model against a measured network: parties on separate emulated hosts, bandwidth-limited links.

    sudo .venv/bin/python -m benchmarks.cost_network --protocol protocols/cost-network.toml

Every data party and the dealer run in their own network namespace (``launch/netns.sh``: one veth link per
host into a bridge), started with ``mpcdp party --job cost`` exactly as on separate machines. Per link:

* ``veth``  — no shaping: checks the bytes the cost ledger reports (kernel TCP payload counters) against the
  frames that crossed each host's interface (``/sys/class/net/*/statistics``): frame bytes − TCP payload
  should be the Ethernet/IP/TCP headers, 66 bytes per packet with TCP timestamps;
* ``LAN``   — ``tc tbf`` at 1 Gbit/s on every host's egress and 0.1 ms one-way delay per round;
* ``WAN``   — ``tc tbf`` at 100 Mbit/s and 20 ms one-way delay per round.

This kernel has no ``netem`` qdisc, so the delay is injected at mpcdp's transport (``link_delay_ms``: a
process sleeps one one-way delay before each round's frames leave, the dealer before each reply), which also
holds the sender where a real link would not. For LAN and WAN the measured wall time is set against the
estimate of :class:`mpcdp.transport.costs.Link` — loopback compute time (measured in the same invocation, on
local processes) + hops × one-way delay + the busiest link's bytes at the link rate — with the hops of the
critical path under that injected delay (``emulated_hops``, :mod:`mpcdp.transport.hop_clock`), which is the
check of the replay; beside it the estimate for a real link of that delay and rate (``hops``: propagation,
senders not held), which is what the cost reports quote.
Links are plain TCP (``MPCDP_INSECURE_LINKS=1``, knowingly): the byte check is of the frames themselves, and
the emulated hosts share this machine. Needs root (``ip netns``, ``tc``).
"""

from __future__ import annotations

import json
import os
import pathlib
import secrets
import subprocess
import sys
import time

from benchmarks import recording
from mpcdp.jobs import cost_report
from mpcdp.jobs.cost import CostRun, run_cost, summarize
from mpcdp.transport.costs import Link

ROOT = pathlib.Path(__file__).resolve().parents[1]
NETNS = str(ROOT / "launch" / "netns.sh")
HEADER_BYTES = 66  # Ethernet 14 + IPv4 20 + TCP 20 + timestamp option 12
SHAPES: dict[str, tuple[Link, str] | None] = {"veth": None}  # filled from the protocol's [links]


def _sh(*cmd: str) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def run_on_hosts(model: str, parties: int, shape: str, port: int) -> tuple[CostRun, float]:
    """One `mpcdp cost` run with every process on its own emulated host; returns (CostRun, wall seconds)."""
    tag = "c" + secrets.token_hex(3)
    link = SHAPES[shape]
    delay_ms = 0.0 if link is None else link[0].rtt_s / 2 * 1000
    try:
        addresses = [line.split()[1] for line in _sh("bash", NETNS, "up", tag, str(parties + 1)).splitlines()]
        if link is not None:
            for rank in range(parties + 1):
                _sh("ip", "netns", "exec", f"{tag}-h{rank}", "tc", "qdisc", "add", "dev", "eth-mpcdp", "root", "tbf",
                    "rate", f"{int(link[0].bits_per_s)}bit", "burst", link[1], "latency", "1s")
        # plain links, knowingly: the byte check compares the ledger with the frames on the wire (TLS would
        # add its records), and the hosts are namespaces of this one machine
        env_common = {"WORLD_SIZE": str(parties), "MASTER_ADDR": addresses[0], "MASTER_PORT": str(port),
                      "MPCDP_INSECURE_LINKS": "1"}
        procs = []
        start = time.perf_counter()
        for rank in range(parties + 1):
            cmd = ["ip", "netns", "exec", f"{tag}-h{rank}", str(ROOT / ".venv" / "bin" / "mpcdp"), "party",
                   "--iface", "eth-mpcdp", "--job", "cost", "--model", model, "--noise", "rou",
                   "--link-delay-ms", str(delay_ms), "--meter-iface", "eth-mpcdp", "--timeout", "600"]
            procs.append(subprocess.Popen(cmd, env=dict(os.environ, RANK=str(rank), **env_common),
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        outputs = []
        for rank, proc in enumerate(procs):
            out, err = proc.communicate(timeout=900)
            if proc.returncode != 0:
                raise RuntimeError(f"rank {rank} failed:\n{err[-3000:]}")
            outputs.append(json.loads(out.strip().splitlines()[-1]))
        wall = time.perf_counter() - start
    finally:
        subprocess.run(["bash", NETNS, "down", tag], check=False)
    run = summarize(model, parties, "rou", 1.0, delay_ms, outputs[:parties], outputs[parties], wall,
                    where=f"one emulated host per process (network namespaces, veth + bridge), link {shape}")
    return run, wall


def link_check(run) -> list[dict]:
    """Per party: TCP payload the ledger saw vs frames on its interface, over the measured sections."""
    out = []
    for rank in range(run.parties):
        tcp = frames = packets = 0
        for layer in run.layers:
            for section in ("noise", "release"):
                s = layer[section]
                iface = s["interface"][rank]
                tcp += s["tcp_sent"][rank]
                frames += iface["tx_bytes"]
                packets += iface["tx_packets"]
        out.append({"rank": rank, "tcp_payload_sent": tcp, "frame_bytes_sent": frames, "packets": packets,
                    "headers_per_packet": (frames - tcp) / packets if packets else None})
    return out


def main(argv: list[str] | None = None) -> int:
    ns, protocol, command = recording.parse(__doc__, "protocols/cost-network.toml", "benchmarks/results/cost-network",
                                            argv)
    for name, link in protocol["links"].items():
        SHAPES[name] = (Link(name, float(link["rate"]), float(link["rtt"])), link["burst"])
    ns.models, ns.parties = protocol["grid"]["models"], protocol["grid"]["parties"]
    if os.geteuid() != 0:
        print("needs root: ip netns and tc", file=sys.stderr)
        return 2
    lines = ["# The cost model against emulated separate hosts", "",
             f"Command: `{command}`  ",
             f"{ns.parties} data parties + the dealer, each in its own network namespace joined by veth links to a "
             "bridge (`launch/netns.sh`). LAN: `tc tbf` 1 Gbit/s per host + 0.1 ms one-way delay per round; WAN: "
             "100 Mbit/s + 20 ms (the delay is injected at mpcdp's transport, this kernel having no `netem`: "
             "a process sleeps one delay before each round's frames leave, so the sender waits too). "
             "Estimate = loopback compute time (same model, local processes, measured just before) + "
             "hops × one-way delay + busiest link's bytes ÷ rate, hops being the critical path of rounds and "
             "dealer requests as they wait on each other, replayed by party 0 as the run goes "
             "(mpcdp.transport.hop_clock). Checked here: the path under the injected delay (*injected hops*). "
             "A real link of that delay and rate does not hold the sender: its estimate (*real-link s*, from "
             "*hops*) is what the cost reports quote.", ""]
    record: dict[str, list[dict]] = {"runs": []}
    for model in ns.models:
        local = run_cost(model, ns.parties, "rou")
        local_total = cost_report.rows(local)[-1]
        lines += [f"## {model}", "",
                  f"Loopback (local processes): {local_total['total_s']:.3f} s for {local_total['rounds']} rounds, "
                  f"{local_total['dealer_requests']} dealer requests ({local_total['hops']} hops), "
                  f"{local_total['total_bytes'] / 1e6:.3f} MB in "
                  "total.", "",
                  "| link | measured s | estimated s | measured / estimated | real-link s | rounds "
                  "| dealer requests | injected hops | hops | busiest link MB |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for shape in SHAPES:
            run, wall = run_on_hosts(model, ns.parties, shape, 29700 + len(record["runs"]))
            total = cost_report.rows(run)[-1]
            hops, injected = total["hops"], total["emulated_hops"]  # this run's paths (its own draws)
            link_bytes = sum(layer[s]["link_bytes_max"] for layer in run.layers for s in ("noise", "release"))
            shaped = SHAPES[shape]
            if shaped is None:
                estimate = real_link = None
                check = link_check(run)
            else:
                estimate, real_link = (shaped[0].time_s(hops=h, bytes_max_party=link_bytes,
                                                        compute_s=local_total["total_s"])
                                       for h in (injected, hops))
            measured = total["total_s"]
            lines.append(f"| {shape} | {measured:.3f} | {'—' if estimate is None else f'{estimate:.3f}'} | "
                         f"{'—' if estimate is None else f'{measured / estimate:.2f}'} | "
                         f"{'—' if real_link is None else f'{real_link:.3f}'} | {total['rounds']} | "
                         f"{total['dealer_requests']} | {injected} | {hops} | {link_bytes / 1e6:.3f} |")
            record["runs"].append({"model": model, "link": shape, "measured_s": measured, "estimate_s": estimate,
                                   "real_link_estimate_s": real_link, "rounds": total["rounds"],
                                   "dealer_requests": total["dealer_requests"], "hops": hops, "injected_hops": injected,
                                   "link_bytes": link_bytes, "process_wall_s": wall, "run": run.to_dict()})
        lines += ["", "Bytes on the unshaped veth links (all measured sections): TCP payload the cost ledger "
                  "counted vs frame bytes the interface sent.", "",
                  "| party | TCP payload sent | frame bytes sent | packets | (frames − payload) / packet |",
                  "|---|---|---|---|---|"]
        for c in check:
            lines.append(f"| {c['rank']} | {c['tcp_payload_sent']:,} | {c['frame_bytes_sent']:,} | {c['packets']:,} | "
                         f"{c['headers_per_packet']:.2f} |")
        record["runs"][-len(SHAPES)]["link_check"] = check
        lines.append("")
    lines.append(f"A header of {HEADER_BYTES} bytes per packet (Ethernet 14 + IPv4 20 + TCP 20 + timestamps 12) "
                 "accounts for the difference when the ledger's counts are exact.")
    recording.record(ns.out, "\n".join(lines) + "\n", record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
