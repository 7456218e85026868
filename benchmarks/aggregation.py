"""Secure aggregation cost: bytes per party, rounds and wall time next to the floor and the plaintext sum.

    .venv/bin/python -m benchmarks.aggregation --protocol protocols/aggregation-cost.toml

For each number of parties m (separate processes + the dealer) and vector length d of the protocol's grid
(m ∈ {2, 3, 5}, d ∈ {123, 10⁴, 10⁶} in ``protocols/aggregation-cost.toml``):

* bytes sent per party (mean over parties, and the busiest party), measured from the kernel's TCP counters
  (:mod:`mpcdp.transport.wire`) — for the opening alone and for the whole aggregation (the shape/validation
  handshake included);
* the floor: opening one d-element shared vector once with a bandwidth-optimal all-reduce, where inputting
  costs nothing (pairwise zero-sum masks): each party must send 2(m−1)/m · 8d bytes;
* protocol rounds as counted by the context (metadata handshake + opening: 1 + 1 for 2 parties, 1 + 2 for
  more — through party 0, or reduce-scatter + all-gather once party 0 would relay more than 64 KiB);
* wall time of the secure aggregation (median over repeats, slowest party) and, in the same run, of the
  plaintext-simulated equivalent (one process sums the m vectors with torch).
"""

from __future__ import annotations

import statistics
import sys
import time

import torch

from benchmarks import recording
from mpcdp.config import MpcConfig
from mpcdp.jobs.report import machine_line
from mpcdp.mpc.secure_sum import secure_sum
from mpcdp.transport.wire import WireMeter
from mpcdp.runtime.harness import run_parties

def bench_party(ctx, dims, repeats):
    rows = []
    for dim in dims:
        local = torch.randn(dim, dtype=torch.float64)
        secure_s, total_bytes, open_bytes = [], [], []
        for _ in range(repeats):
            meter = WireMeter()
            rounds_before = ctx.rounds
            start = time.perf_counter()
            with meter:
                shared = secure_sum(ctx, local)
                ctx.reveal(shared, label="aggregate", reason="benchmark")
            secure_s.append(time.perf_counter() - start)
            total_bytes.append(meter.bytes_sent)
            open_bytes.append(ctx.openings[-1].bytes_sent)
        rows.append({"dim": dim, "secure_s": statistics.median(secure_s), "rounds": ctx.rounds - rounds_before,
                     "bytes": max(total_bytes), "open_bytes": max(open_bytes)})
    return rows


def plain_sum_seconds(parties: int, dim: int, repeats: int) -> float:
    """The plaintext-simulated equivalent: one process sums the m vectors (median of repeats)."""
    vectors = [torch.randn(dim, dtype=torch.float64) for _ in range(parties)]
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        torch.stack(vectors).sum(0)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def floor_bytes(parties: int, dim: int) -> float:
    return 2 * (parties - 1) / parties * 8 * dim


def run(protocol: dict) -> list[dict]:
    grid, mpc = protocol["grid"], protocol["mpc"]
    table = []
    for parties in grid["parties"]:
        print(f"m = {parties} ...", file=sys.stderr, flush=True)
        config = MpcConfig(parties=parties, **mpc)
        results = run_parties(bench_party, config, args=(grid["dims"], grid["repeats"]))
        for k, dim in enumerate(grid["dims"]):
            per_party = [r[k] for r in results]
            row = {
                "parties": parties, "dim": dim,
                "floor_bytes": floor_bytes(parties, dim),
                "open_bytes_per_party": sum(p["open_bytes"] for p in per_party) / parties,
                "open_bytes_busiest": max(p["open_bytes"] for p in per_party),
                "bytes_per_party": sum(p["bytes"] for p in per_party) / parties,
                "rounds": per_party[0]["rounds"],
                "secure_s": max(p["secure_s"] for p in per_party),
                "plain_s": plain_sum_seconds(parties, dim, grid["repeats"]),
            }
            row["open_vs_floor"] = row["open_bytes_per_party"] / row["floor_bytes"]
            row["total_vs_floor"] = row["bytes_per_party"] / row["floor_bytes"]
            row["secure_vs_plain_time"] = row["secure_s"] / row["plain_s"]
            table.append(row)
    return table


def markdown(table: list[dict], command: str, repeats: int) -> str:
    lines = [
        "# Secure aggregation: bytes, rounds, time",
        "",
        f"Command: `{command}` (repeats per cell: {repeats})  ",
        f"Machine: {machine_line(min(r['parties'] for r in table) + 1)}; parties are separate processes on one host "
        "(loopback), plus the dealer.",
        "",
        "Floor = 2(m−1)/m · 8d bytes per party: one bandwidth-optimal all-reduce of the d-element shares, inputs "
        "free (pairwise zero-sum masks). Bytes are measured (kernel TCP counters), not estimated; per party = "
        "the mean over parties (party 0 relays small openings: its own column). "
        "`open` = the opening alone; `total` adds the 1-round shape/validation handshake. Times are medians, "
        "slowest party; the plaintext column is the simulated equivalent (one process sums the m vectors with "
        "torch), timed in the same run right after the parties finish.",
        "",
        "| m | d | floor B | open B/party | open/floor | busiest party B | total B/party | total/floor | rounds | "
        "secure ms | plain ms | secure/plain |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in table:
        lines.append(
            f"| {r['parties']} | {r['dim']:,} | {r['floor_bytes']:,.0f} | {r['open_bytes_per_party']:,.0f} | "
            f"{r['open_vs_floor']:.3f} | {r['open_bytes_busiest']:,} | {r['bytes_per_party']:,.0f} | "
            f"{r['total_vs_floor']:.3f} | {r['rounds']} | "
            f"{1e3 * r['secure_s']:.2f} | {1e3 * r['plain_s']:.3f} | {r['secure_vs_plain_time']:.0f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ns, protocol, command = recording.parse(__doc__, "protocols/aggregation-cost.toml",
                                            "benchmarks/results/aggregation", argv)
    table = run(protocol)
    recording.record(ns.out, markdown(table, command, protocol["grid"]["repeats"]),
                     {"command": command, "rows": table}, in_mpc_noise=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
