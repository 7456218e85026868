"""Many parties and long vectors: secure aggregation and DDP-SRM at 16–48 parties, d = 10⁷ with peak memory.

    .venv/bin/python -m benchmarks.scale --protocol protocols/scale.toml

Three parts, all on this machine (2 cores, 24 GiB; every party and the dealer is its own OS process):

* aggregation at m parties (``[aggregation]``): launch-to-result wall time, the protocol's own time (slowest
  party), bytes sent per party (mean and busiest, kernel TCP counters) next to the floor 2(m−1)/m·8d, the
  largest error against the plaintext sum (recomputed here from the parties' seeded vectors), and the peak RSS of
  a party process;
* DDP-SRM training at m parties (``[training]``, a protocol with its batch scaled to m): noiseless STORM secure
  vs simulated with the same batches (largest |Δθ|: fixed-point error only) and DP-SRM with in-MPC noise (wall
  time, test error next to the simulated run's);
* d = 10⁷ at 3 parties (``[long]``): :func:`mpcdp.mpc.secure_sum.reveal_sum` in chunks of 2^20 against one
  piece: peak RSS per party during the aggregation (VmHWM after resetting it through ``/proc/self/clear_refs``),
  its excess over the RSS just before (the process with its input vector), and wall time.

``--parts`` runs a subset (``aggregation``, ``training``, ``long``) and keeps the other parts of an existing
result file, recording the command of each part.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import platform
import resource
import sys
import time
from typing import Any

import torch

from benchmarks import recording
from mpcdp.config import MpcConfig
from mpcdp.jobs.aggregate import local_vector
from mpcdp.mpc.secure_sum import reveal_sum
from mpcdp.transport.wire import WireMeter
from mpcdp.runtime.harness import run_job

SEED = 11


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _status_mb(field: str) -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _reset_peak() -> None:
    """Start a fresh peak-RSS window (Linux: writing 5 to clear_refs resets VmHWM to the current RSS)."""
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")


def aggregation_party(ctx, dim: int, chunk: int | None):
    """Aggregate this party's seeded vector; report time, bytes, peak memory and (party 0) the result."""
    vector = local_vector(dim, ctx.rank, SEED)
    _reset_peak()
    before = _status_mb("VmRSS")  # the process with its input, before the aggregation
    meter = WireMeter()
    start = time.perf_counter()
    with meter:
        total = reveal_sum(ctx, vector, chunk=chunk if chunk else dim)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "bytes": meter.bytes_sent, "rss_mb": _status_mb("VmHWM"), "rss_before_mb": before,
            "rounds": ctx.rounds, "total": total if ctx.rank == 0 else None}


def _plain_sum(dim: int, parties: int) -> torch.Tensor:
    total = torch.zeros(dim, dtype=torch.float64)
    for rank in range(parties):
        total += local_vector(dim, rank, SEED)
    return total


def aggregate(parties: int, dim: int, chunk: int | None, timeout_s: float) -> dict:
    start = time.perf_counter()
    run = run_job(aggregation_party, MpcConfig(parties=parties, timeout_s=timeout_s), args=(dim, chunk),
                  job={"name": "scale-aggregation", "dim": dim, "chunk": chunk})
    wall = time.perf_counter() - start
    values = run.values
    error = float((values[0]["total"] - _plain_sum(dim, parties)).abs().max())
    sent = [v["bytes"] for v in values]
    return {"parties": parties, "dim": dim, "chunk": chunk, "wall_s": wall,
            "protocol_s": max(v["seconds"] for v in values), "bytes_mean": sum(sent) / parties,
            "bytes_busiest": max(sent), "floor_bytes": 2 * (parties - 1) / parties * 8 * dim,
            "rounds": max(v["rounds"] for v in values), "max_abs_error": error,
            "error_bound": parties * 2.0 ** -17, "rss_mb_max": max(v["rss_mb"] for v in values),
            "rss_above_mb_max": max(v["rss_mb"] - v["rss_before_mb"] for v in values)}


def training(protocol: str, parties: int, per_party_batch: int) -> dict:
    from mpcdp.jobs.train import plan_from, run_plan

    overrides = {"batch": per_party_batch * parties, "batch0": 2 * per_party_batch * parties}
    out: dict[str, Any] = {"parties": parties}
    for algorithm in ("storm", "srm"):
        secure = plan_from(protocol, parties=parties, algorithm=algorithm, backend="mpc",
                           training_overrides=overrides)
        secure = secure.with_mpc(reproducible=True, timeout_s=900)
        simulated = dataclasses.replace(secure, backend="simulated")
        start = time.perf_counter()
        a = run_plan(secure, curve=False)
        wall = time.perf_counter() - start
        b = run_plan(simulated, curve=False)
        out[algorithm] = {"wall_s": wall, "online_s": a["online_s"], "presample_s": a["presample_s"],
                          "setup_s": a["setup_s"], "test_error": a["test_error"], "test_error_simulated": b["test_error"],
                          "test_loss": a["test_loss"], "test_loss_simulated": b["test_loss"],
                          "steps": a["iterations"], "epsilon": b["epsilon"],  # secret batches; the reproducible run's: unamplified
                          "epsilon_reproducible": a["epsilon"], "bytes_per_party": a["bytes_per_party"],
                          "same_model_bytes": a["model_sha256"] == b["model_sha256"]}
    return out


def markdown(result: dict, commands: dict) -> str:
    made = "; ".join(f"{part}: `{cmd}`" for part, cmd in commands.items())
    lines = ["# Many parties and long vectors", "", f"Commands — {made}", "",
             f"Machine: {platform.machine()}, {torch.get_num_threads()} torch threads in the launcher, "
             "2 cores, 24 GiB; every party and the dealer is an OS process on this machine.", "",
             "## Secure aggregation at m parties", "",
             "| m | d | wall s (launch → result) | protocol s | bytes/party (mean) | busiest party | floor | rounds | "
             "max error | bound | peak RSS/party MB |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["aggregation"]:
        lines.append(f"| {r['parties']} | {r['dim']:,} | {r['wall_s']:.1f} | {r['protocol_s']:.3f} | "
                     f"{r['bytes_mean']:,.0f} | {r['bytes_busiest']:,} | {r['floor_bytes']:,.0f} | {r['rounds']} | "
                     f"{r['max_abs_error']:.2e} | {r['error_bound']:.2e} | {r['rss_mb_max']:.0f} |")
    lines += ["", "## DDP-SRM training at m parties (a9a, reproducible batches)", "",
              "| m | algorithm | steps | wall s | setup s | noise pre-sampling s | online s | test error (secure / "
              "simulated) | test loss secure − simulated | ε certified | bytes/party |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for t in result["training"]:
        for algorithm in ("storm", "srm"):
            r = t[algorithm]
            eps = "—" if r["epsilon"] is None else f"{r['epsilon']:.3f}"
            lines.append(f"| {t['parties']} | {algorithm} | {r['steps']} | {r['wall_s']:.1f} | {r['setup_s']:.1f} | "
                         f"{r['presample_s']:.1f} | {r['online_s']:.1f} | {r['test_error']:.4f} / "
                         f"{r['test_error_simulated']:.4f} | {r['test_loss'] - r['test_loss_simulated']:+.1e} | "
                         f"{eps} | {r['bytes_per_party']:,} |")
    lines += ["", "STORM has no noise: secure and simulated differ by the fixed-point encoding of the sums only. "
              "DP-SRM's secure noise is sampled inside the MPC and the simulated run's in plaintext, so their "
              "losses differ by their noise draws."]
    lines += ["", "## d = 10⁷ at 3 parties: chunked against one piece", "",
              "| chunk | wall s (launch → result) | protocol s | peak RSS/party MB | above the RSS before MB | "
              "bytes/party | max error |", "|---|---|---|---|---|---|---|"]
    for r in result["long"]:
        chunk = "one piece" if r["chunk"] == r["dim"] else f"{r['chunk']:,}"
        lines.append(f"| {chunk} | "
                     f"{r['wall_s']:.1f} | {r['protocol_s']:.2f} | {r['rss_mb_max']:.0f} | {r['rss_above_mb_max']:.0f} | "
                     f"{r['bytes_mean']:,.0f} | {r['max_abs_error']:.2e} |")
    lines += ["", result["bears"], ""]
    return "\n".join(lines)


PARTS = ("aggregation", "training", "long")


def run(protocol: dict, parts=PARTS, previous: dict | None = None) -> dict:
    agg, train, long = protocol["aggregation"], protocol["training"], protocol["long"]
    result = {part: (previous or {}).get(part, []) for part in PARTS}
    if "aggregation" in parts:
        result["aggregation"] = [aggregate(m, dim, None, agg["timeout_s"]) for m in agg["parties"]
                                 for dim in agg["dims"]]
    if "training" in parts:
        result["training"] = [training(train["protocol"], m, train["per_party_batch"]) for m in train["parties"]]
    if "long" in parts:
        result["long"] = [aggregate(long["parties"], long["dim"], chunk, agg["timeout_s"])
                          for chunk in (long["dim"], long["chunk"])]
    result["bears"] = protocol["notes"]["bears"]
    return result


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parts: tuple[str, ...] = PARTS
    if "--parts" in argv:
        at = argv.index("--parts")
        parts = tuple(argv[at + 1].split(","))
        del argv[at:at + 2]
    ns, protocol, command = recording.parse(__doc__, "protocols/scale.toml", "benchmarks/results/scale", argv)
    if parts != PARTS:
        command += " --parts " + ",".join(parts)
    previous = None
    if parts != PARTS and pathlib.Path(ns.out).with_suffix(".json").exists():
        previous = json.loads(pathlib.Path(ns.out).with_suffix(".json").read_text())
    result = run(protocol, parts, previous)
    commands = dict((previous or {}).get("commands", {}))
    commands.update({part: command for part in parts})
    recording.record(ns.out, markdown(result, commands), {"commands": commands, **result})
    return 0


if __name__ == "__main__":
    sys.exit(main())
