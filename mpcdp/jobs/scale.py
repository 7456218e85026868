"""`mpcdp scale PROTOCOL.toml --parties 1 2 4 8`: one training protocol at several numbers of parties (paper 002
Fig. 3(g, h): test error against wall time for m = 1, 2, 4, 8).

Each m splits the same training data evenly over m parties (the protocol's combined batch split evenly too) and
runs the protocol's algorithm with the protocol's privacy budget; m = 1 is the central algorithm (DP-SRM for
DDP-SRM), always simulated. Per run the report keeps the certified ε, the final test error and loss, and the
test error of every iterate against the wall time it was reached at: for a secure run, noise pre-sampling
first (``presample_s``), then the online steps at their average pace (``online_s`` / steps); for a simulated
run, the run's time at the same even pace. Process start-up is not on the time axis (reported apart).
Writes PREFIX.md (table), PREFIX.json (every run) and PREFIX.png (test error vs wall time, one line per m).
"""

from __future__ import annotations

import pathlib
import statistics
from typing import Any, Callable

from mpcdp.jobs.report import save_figure, write_record
from mpcdp.validation import check_integer
from mpcdp.errors import ConfigError
from mpcdp.jobs.train import plan_from, run_plan

KEPT = ("algorithm", "backend", "dataset", "model", "parties", "epsilon", "delta", "iterations", "test_error",
        "test_loss", "wall_s", "presample_s", "online_s", "setup_s", "bytes_per_party", "dealer_bytes")


def timeline(report: dict[str, Any]) -> list[float]:
    """Wall time (s) at which each iterate θ⁰..θ^T was reached (see the module docstring)."""
    steps = report["iterations"]
    if report["backend"] == "mpc":
        start, per_step = report["presample_s"], report["online_s"] / max(1, steps)
    else:
        start, per_step = 0.0, report["wall_s"] / max(1, steps)
    return [start + per_step * i for i in range(len(report["test_error_curve"]))]


def run_scale(protocol: str, parties: list[int], *, out: str, backend: str | None = None, seeds: int = 1,
              training_overrides: dict[str, Any] | None = None,
              progress: Callable[[int, int, str], None] | None = None) -> dict[str, Any]:
    """Run ``protocol`` for every m in ``parties`` on ``seeds`` seeds; write PREFIX.md/.json/.png."""
    if not parties:
        raise ConfigError(f"`parties` needs at least one party count. Found {parties!r}.")
    for m in parties:
        check_integer(m, "parties", note="each entry")
    check_integer(seeds, "seeds")
    runs, total, done = [], len(parties) * seeds, 0
    for m in parties:
        for seed in range(seeds):
            if progress is not None:
                progress(done, total, f"m = {m}, seed {seed}")
            plan = plan_from(protocol, parties=m, seed=seed, backend="simulated" if m == 1 else backend,
                             training_overrides=training_overrides)
            report = run_plan(plan)
            runs.append({**{k: report.get(k) for k in KEPT}, "seed": seed,
                         "test_error_curve": report["test_error_curve"], "time_s": timeline(report)})
            done += 1
    if progress is not None:
        progress(done, total, "done")
    record = {"protocol": protocol, "parties": parties, "seeds": seeds, "runs": runs}
    return {**write_record(out, record, markdown(record), plot), "runs": runs}


def markdown(record: dict[str, Any]) -> str:
    first = record["runs"][0]
    algorithms = " / ".join(dict.fromkeys(r["algorithm"] for r in record["runs"]))
    lines = [f"# {algorithms} on {first['model']}, {first['dataset']}: m parties", "",
             f"Protocol `{record['protocol']}`, {record['seeds']} seed(s) per m; mean (std) over seeds. ε is what "
             "dp-accounting certifies. Times: noise pre-sampling and the online steps (secure runs), or the whole "
             "simulated run; process start-up apart.", "",
             "| m | backend | ε | steps | test error | test loss | presample s | online / run s | start-up s | "
             "MB sent per party |", "|---|---|---|---|---|---|---|---|---|---|"]
    for m in record["parties"]:
        rows = [r for r in record["runs"] if r["parties"] == m]

        def stat(key: str, digits: int = 4) -> str:
            values = [r[key] for r in rows if r.get(key) is not None]
            if not values:
                return "—"
            mean = statistics.fmean(values)
            return f"{mean:.{digits}f}" + (f" ({statistics.stdev(values):.{digits}f})" if len(values) > 1 else "")

        run_s = "online_s" if rows[0]["backend"] == "mpc" else "wall_s"
        sent = [r["bytes_per_party"] / 1e6 for r in rows if r.get("bytes_per_party")]
        lines.append(f"| {m} | {rows[0]['backend']} | {rows[0]['epsilon']:.4g} | {rows[0]['iterations']} | "
                     f"{stat('test_error')} | {stat('test_loss')} | {stat('presample_s', 2)} | {stat(run_s, 2)} | "
                     f"{stat('setup_s', 1)} | {statistics.fmean(sent) if sent else 0:.1f} |")
    return "\n".join(lines) + "\n"


def plot(record: dict[str, Any], path: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for m in record["parties"]:
        rows = [r for r in record["runs"] if r["parties"] == m]
        for i, r in enumerate(rows):
            ax.plot(r["time_s"], r["test_error_curve"], color=f"C{record['parties'].index(m)}", alpha=0.8,
                    label=f"m = {m} ({r['backend']})" if i == 0 else None)
    first = record["runs"][0]
    algorithms = " / ".join(dict.fromkeys(r["algorithm"] for r in record["runs"]))
    ax.set_xlabel("wall time (s): noise pre-sampling, then the steps")
    ax.set_ylabel("test error")
    ax.set_title(f"{algorithms}, {first['model']}, {first['dataset']}", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
