"""The authenticated secure sum (``security = "malicious"``) beside the semi-honest one, and with every party's input
checked against its L2 bound inside the MPC (``malicious + bounded``): bytes, rounds, time.

    .venv/bin/python -m benchmarks.malicious_sum --protocol protocols/malicious-sum-cost.toml

For each number of parties m and vector length d of the protocol's grid, both security settings run in the same
invocation, one after the other, through the aggregation job's own path (:func:`mpcdp.jobs.aggregate.reveal_aggregate`:
validation handshake, inputs, opening, and under ``"malicious"`` the authenticated inputs and the batched MAC check,
:mod:`mpcdp.mpc.authenticated`):

* bytes sent per party (mean over parties) on the parties' links, from the kernel's TCP counters (TLS included), and
  per summed element;
* the dealer's bytes (its links' kernel counters, keys included), per summed element;
* rounds as the context counts them, and the wall time of the sum (median over repeats, slowest party);
* the floor: one bandwidth-optimal opening of d shares, 2(m−1)/m · 8d bytes per party.

Every party's vector is a standard normal one scaled to 0.9 of the grid's ``input_bound`` (an L2 norm, as a
clipped gradient is); ``malicious + bounded`` (:mod:`mpcdp.mpc.bounded`) runs for the dims of ``bounded_dims`` only,
with ``bounded_repeats`` repeats (one authenticated square per element and contributor, its witness input as bits).
"""

from __future__ import annotations

import statistics
import sys
import time

import torch

from benchmarks import recording
from mpcdp.config import MpcConfig, covers_malicious
from mpcdp.jobs.aggregate import reveal_aggregate
from mpcdp.jobs.report import machine_line
from mpcdp.runtime.harness import run_job
from mpcdp.transport.wire import WireMeter

SECURITY = ("semi-honest", "malicious")
BOUNDED = "malicious + bounded"


@covers_malicious
def bench_party(ctx, dim: int, repeats: int, norm: float, bounded: bool):
    local = torch.randn(dim, dtype=torch.float64)
    local = local * (0.9 * norm / float(local.norm()))
    seconds, sent, rounds = [], [], []
    for _ in range(repeats):
        meter, before = WireMeter(), ctx.rounds
        start = time.perf_counter()
        with meter:
            reveal_aggregate(ctx, local, norm if bounded else None)
        seconds.append(time.perf_counter() - start)
        sent.append(meter.bytes_sent)
        rounds.append(ctx.rounds - before)
    last = {o.label: o.bytes_sent for o in ctx.openings}  # the last repeat's, by label
    return {"s": statistics.median(seconds), "bytes": statistics.median(sent), "rounds": rounds[-1],
            "release_bytes": last["aggregate"], "input_bytes": last.get("aggregate (masked inputs)", 0)}


def run(protocol: dict) -> list[dict]:
    grid, mpc = protocol["grid"], protocol["mpc"]
    table = []
    for parties in grid["parties"]:
        for dim in grid["dims"]:
            row: dict = {"parties": parties, "dim": dim, "floor_bytes": 2 * (parties - 1) / parties * 8 * dim}
            settings = [*SECURITY, *([BOUNDED] if dim in grid["bounded_dims"] else [])]
            for setting in settings:
                print(f"m = {parties}, d = {dim}, {setting} ...", file=sys.stderr, flush=True)
                security, bounded = ("malicious", True) if setting == BOUNDED else (setting, False)
                repeats = grid["bounded_repeats"] if bounded else grid["repeats"]
                config = MpcConfig(parties=parties, security=security, **mpc)
                result = run_job(bench_party, config, args=(dim, repeats, grid["input_bound"], bounded))
                per_party = result.values
                dealer = (result.dealer or {}).get("bytes_sent")
                row[setting] = {
                    "bytes_per_party": sum(p["bytes"] for p in per_party) / parties,
                    "bytes_per_element": sum(p["bytes"] for p in per_party) / parties / dim,
                    "dealer_bytes_per_element": dealer / dim / repeats if dealer else None,
                    "rounds": per_party[0]["rounds"],
                    "release_bytes_per_party": sum(p["release_bytes"] for p in per_party) / parties,
                    "input_bytes_per_party": sum(p["input_bytes"] for p in per_party) / parties,
                    "seconds": max(p["s"] for p in per_party),
                }
            row["bytes_ratio"] = row["malicious"]["bytes_per_party"] / row["semi-honest"]["bytes_per_party"]
            row["time_ratio"] = row["malicious"]["seconds"] / row["semi-honest"]["seconds"]
            row["release_floor_ratio"] = {s: row[s]["release_bytes_per_party"] / row["floor_bytes"] for s in SECURITY}
            if BOUNDED in row:
                row["bounded_bytes_ratio"] = row[BOUNDED]["bytes_per_party"] / row["semi-honest"]["bytes_per_party"]
                row["bounded_time_ratio"] = row[BOUNDED]["seconds"] / row["semi-honest"]["seconds"]
            table.append(row)
    return table


def bounded_markdown(table: list[dict], grid: dict) -> list[str]:
    """The bounded-input check's rows: bytes per element side by side in the three settings."""
    lines = [
        "",
        f"## With bounded inputs (`--input-bound {grid['input_bound']}`, `mpcdp.mpc.bounded`)",
        "",
        f"Each party's vector is checked inside the MPC against ‖x‖ <= {grid['input_bound']} (p = 16: "
        "S = ⌈2^16·B + √d/2⌉² grid units², 18 bits per coordinate, about 34 slack bits) before the sum is "
        "opened: the vector authenticated one by one and its witness input as bits, one authenticated square "
        "per element and contributor, the checks opened and MAC-checked, then the sum. Repeats per cell: "
        f"{grid['bounded_repeats']}. Dealer: per summed element, over the run.",
        "",
        "| m | d | B/element: semi-honest | malicious | malicious + bounded | bounded / semi-honest | "
        "dealer B/element (bounded) | rounds (sh → mal → bounded) | ms (sh → mal → bounded) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in table:
        if BOUNDED not in r:
            continue
        sh, mal, bd = r["semi-honest"], r["malicious"], r[BOUNDED]
        lines.append(
            f"| {r['parties']} | {r['dim']:,} | {sh['bytes_per_element']:.1f} | {mal['bytes_per_element']:.1f} | "
            f"{bd['bytes_per_element']:,.1f} | {r['bounded_bytes_ratio']:.0f}× | "
            f"{bd['dealer_bytes_per_element']:,.0f} | {sh['rounds']} → {mal['rounds']} → {bd['rounds']} | "
            f"{1e3 * sh['seconds']:.1f} → {1e3 * mal['seconds']:.1f} → {1e3 * bd['seconds']:,.0f} |")
    return lines


def markdown(table: list[dict], command: str, repeats: int) -> str:
    lines = [
        "# The authenticated secure sum beside the semi-honest one",
        "",
        f"Command: `{command}` (repeats per cell: {repeats})  ",
        f"Machine: {machine_line(min(r['parties'] for r in table) + 1)}; parties are separate processes on one host "
        "(loopback, TLS), plus the dealer.",
        "",
        "One sum = the aggregation job's path: validation handshake, inputs, opening (and under `malicious` the "
        "authenticated inputs, the opening of x + 2^64·r in full and the batched MAC check). Bytes per party: "
        "mean over parties, kernel TCP counters on the parties' links (TLS included); dealer: its links' "
        "counters over the whole run (keys included) per summed element. Floor: 2(m−1)/m · 8d. Times: medians, "
        "slowest party, both settings in the same invocation. Release / floor: the opening of the sum alone "
        "(label `aggregate`: frames' payloads and headers as the links count them, mean over parties) over the "
        "floor; inputs / floor: under `malicious` the opening of the masked inputs Σ(x_o − r_o) (semi-honest "
        "inputs cost nothing).",
        "",
        "| m | d | floor B | semi-honest B/party | malicious B/party | ratio | B/element (sh → mal) | "
        "dealer B/element (sh → mal) | rounds (sh → mal) | ms (sh → mal) | release / floor (sh → mal) | "
        "inputs / floor (mal) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in table:
        sh, mal = r["semi-honest"], r["malicious"]
        dealer = " → ".join("–" if x["dealer_bytes_per_element"] is None else f"{x['dealer_bytes_per_element']:.1f}"
                            for x in (sh, mal))
        lines.append(
            f"| {r['parties']} | {r['dim']:,} | {r['floor_bytes']:,.0f} | {sh['bytes_per_party']:,.0f} | "
            f"{mal['bytes_per_party']:,.0f} | {r['bytes_ratio']:.2f} | {sh['bytes_per_element']:.1f} → "
            f"{mal['bytes_per_element']:.1f} | {dealer} | {sh['rounds']} → {mal['rounds']} | "
            f"{1e3 * sh['seconds']:.1f} → {1e3 * mal['seconds']:.1f} | "
            f"{r['release_floor_ratio']['semi-honest']:.2f} → {r['release_floor_ratio']['malicious']:.2f} | "
            f"{mal['input_bytes_per_party'] / r['floor_bytes']:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ns, protocol, command = recording.parse(__doc__, "protocols/malicious-sum-cost.toml",
                                            "benchmarks/results/malicious-sum", argv)
    table = run(protocol)
    grid = protocol["grid"]
    text = markdown(table, command, grid["repeats"]) + "\n".join(bounded_markdown(table, grid)) + "\n"
    recording.record(ns.out, text, {"command": command, "rows": table}, in_mpc_noise=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
