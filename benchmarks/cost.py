"""Per-layer cost tables for every model of paper 002 (Tables 4–6) at 2, 3 and 5 parties.

    python -m benchmarks.cost --protocol protocols/cost-tables.toml [--out benchmarks/results/cost-summary]
    python -m benchmarks.cost --rerender        # rebuild every table, plot and the summary from the JSON records

For each (model, m) of the protocol's grid this runs `mpcdp cost` and writes
benchmarks/results/cost/<model>-m<m>-<noise>.{md,csv,json,png}; then the comparison noise modes for the
protocol's [compare] model; then OUT.md/OUT.json: one line per run with the totals and the cost goals.
"""

from __future__ import annotations

import json
import os
import sys

from benchmarks import recording
from mpcdp.jobs import cost_report
from mpcdp.jobs.cost import run_cost, run_step_cost


def main(argv: list[str] | None = None) -> int:
    rerender = argv is not None and "--rerender" in argv or argv is None and "--rerender" in sys.argv[1:]
    if rerender:
        argv = [a for a in (argv if argv is not None else sys.argv[1:]) if a != "--rerender"]
    ns, protocol, command = recording.parse(__doc__, "protocols/cost-tables.toml", "benchmarks/results/cost-summary",
                                            argv)
    if rerender:
        with open(f"{ns.out}.json") as fh:
            command = json.load(fh)["command"]
    grid, compare = protocol["grid"], protocol.get("compare", {})
    folder = os.path.join(os.path.dirname(ns.out) or ".", "cost")
    os.makedirs(folder, exist_ok=True)
    plan = [(model, m, grid["noise"]) for model in grid["models"] for m in grid["parties"]]
    plan += [(compare["model"], compare["parties"], mode) for mode in compare.get("noise", [])]
    summary = ["# Cost of one secure aggregation + in-MPC noise per layer: all models", "",
               f"Command: `{command}` (one `mpcdp cost` run per line; per-layer tables, CSV, JSON and plots in "
               "[cost/](cost/)).  ",
               "Totals over the model's layers. 'total MB' = every data party's sent bytes + the dealer's traffic "
               "(both directions); 'sent/party' = the busiest party. Obliv-C = paper 002, Tables 4–6 (5 parties, "
               "gates × 32 bytes, OT not included). LAN/WAN: estimated from the measured compute, the critical "
               "path's hops (rounds and dealer requests as they wait on each other, mpcdp.transport.hop_clock) "
               "and bytes (1 Gbit/s, 0.2 ms RTT; 100 Mbit/s, 40 ms RTT; checked against emulated hosts in "
               "[cost-network.md](cost-network.md)). online/opening: the online step's bytes over those of one "
               "opening of the d-vector, 2(m−1)·8d.", "",
               "| model | m | noise | d | total MB | sent/party MB | dealer MB | rounds | dealer req | hops "
               "| noise s | online s | online/opening | LAN s | WAN s | Obliv-C MB | Obliv-C / mpcdp bytes |",
               "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    goals, records = [], []
    for index, (model, parties, noise) in enumerate(plan):
        print(f"[{index + 1}/{len(plan)}] {model}, {parties} parties, noise {noise}", file=sys.stderr, flush=True)
        prefix = os.path.join(folder, f"{model}-m{parties}-{noise}")
        if rerender:
            cost_report.rerender(prefix)
            run = cost_report.load(prefix)
        else:
            run = run_cost(model, parties, noise, sigma=grid.get("sigma", 1.0))
            cost_report.write(run, prefix, f"mpcdp cost --model {model} --parties {parties} --noise {noise} "
                                           f"--out {prefix}")
        total = cost_report.rows(run)[-1]
        records.append({"model": model, "parties": parties, "noise": noise, "total": total})
        oblivc = total.get("oblivc_bytes")
        assert oblivc is not None, f"paper 002 gives no Obliv-C numbers for {model}"
        summary.append(
            f"| {model} | {parties} | {noise} | {total['elements']:,} | {total['total_bytes'] / 1e6:,.3f} | "
            f"{total['bytes_sent_max_party'] / 1e6:,.3f} | {total['dealer_bytes'] / 1e6:,.3f} | {total['rounds']:,} | "
            f"{total['dealer_requests']:,} | {total['hops']:,} | {total['noise_s']:.3f} | {total['online_s']:.4f} | "
            f"{total['online_bytes'] / total['online_payload']:.3f} | {total['lan_s']:.2f} | {total['wan_s']:.2f} | "
            f"{oblivc / 1e6:,.0f} | {oblivc / total['total_bytes']:,.0f}× |")
        goals += [f"{model}, m = {parties}, {noise}: {line}" for line in cost_report.goals(run)
                  if not line.startswith("online") or (parties == 5 and noise == "dgauss")]
    steps = [] if rerender else _steps(protocol.get("step", {}), grid.get("sigma", 1.0))
    if rerender:
        with open(f"{ns.out}.json") as fh:
            steps = json.load(fh).get("steps", [])
    summary += _step_table(steps)
    summary += ["", "## Goals", ""] + [f"- {line}" for line in goals]
    recording.record(ns.out, "\n".join(summary) + "\n", {"command": command, "runs": records, "steps": steps})
    return 0


def _steps(step: dict, sigma: float) -> list[dict]:
    """One training step of each of the protocol's [step] models at each party count, as training runs it."""
    out = []
    for model in step.get("models", []):
        for parties in step.get("parties", []):
            print(f"one step: {model}, {parties} parties", file=sys.stderr, flush=True)
            out.append(run_step_cost(model, parties, sigma=sigma))
    return out


def _step_table(steps: list[dict]) -> list[str]:
    """The rows of the one-step runs: the noise of every layer drawn in one call, then one release."""
    if not steps:
        return []
    lines = ["", "## One training step: every layer's noise in one call, one release", "",
             "As training runs a step (`mpcdp.jobs.cost.run_step_cost`): the whole model's d noise values drawn "
             "inside the MPC by one call (the noise committee, parties 0–2), then the noisy sum of the d-vector "
             "released in one opening. Total = every party's sent bytes + the dealer's.", "",
             "| model | m | d | noise total MB | noise dealer MB | noise rounds | release MB | release rounds | "
             "noise B per value |", "|---|---|---|---|---|---|---|---|---|"]
    for r in steps:
        noise, release = r["noise"], r["release"]
        lines.append(f"| {r['model']} | {r['parties']} | {r['elements']:,} | {noise['total_bytes'] / 1e6:,.1f} | "
                     f"{noise['dealer_bytes'] / 1e6:,.1f} | {noise['rounds']} | {release['total_bytes'] / 1e6:,.3f} | "
                     f"{release['rounds']} | {noise['total_bytes'] / r['elements']:,.0f} |")
    return lines


if __name__ == "__main__":
    sys.exit(main())
