"""The estimate printed before a secure run against what the run measured: bytes per party, the dealer's bytes
and the time from the parties' start to their result (:mod:`mpcdp.jobs.estimate`).

    .venv/bin/python -m benchmarks.estimate [--out benchmarks/results/estimate] [--records 3000,1500,2000]

Two runs, each as a user starts it, in this launcher:

* the quick start (``protocols/quickstart-a9a.toml``, what ``bash launch/local.sh`` runs): shipped a9a,
  logistic regression, 3 parties and the dealer;
* an own-data MLP run (``protocols/own-data-mlp.toml`` through :func:`mpcdp.train`): a9a's training rows split
  into one CSV per party (``--records``), launch/own_data_example.py's ``SmallMlp`` (123 → 16 → 2).

Ratios are measured ÷ estimated; the acceptance band is [0.5, 2]. The host's load average is recorded with
each run: timings on a shared machine vary with what else runs.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile

import pandas as pd
import torch

from benchmarks import recording
from mpcdp.jobs.report import markdown_table

QUICKSTART = "protocols/quickstart-a9a.toml"
OWN_DATA = "protocols/own-data-mlp.toml"


def quickstart() -> dict:
    """The quick start with the secure backend; its report's estimate and measurements."""
    from mpcdp.jobs.train import plan_from, run_plan

    report = run_plan(plan_from(QUICKSTART), curve=False)
    measured = {"bytes_per_party": report["bytes_per_party"], "dealer_bytes": report["dealer_bytes"],
                "seconds": report["wall_s"], "presample_s": report["presample_s"], "online_s": report["online_s"],
                "setup_s": report["setup_s"]}
    return {"run": "quick start (quickstart-a9a, 3 parties)", "estimate": report["estimate"], "measured": measured,
            "load": os.getloadavg()[0]}


def _party_files(folder: str, records: list[int]) -> list[str]:
    """a9a's first training rows, ``records[j]`` of them for party j, as CSVs with a 0/1 label column."""
    from mpcdp.data.registry import load

    data = load("a9a")
    paths, start = [], 0
    for j, count in enumerate(records):
        frame = pd.DataFrame(data.x_train[start:start + count], columns=[f"f{i}" for i in range(data.x_train.shape[1])])
        frame["income_over_50k"] = (data.y_train[start:start + count] > 0).astype(int)
        paths.append(os.path.join(folder, f"party{j}.csv"))
        frame.to_csv(paths[-1], index=False)
        start += count
    return paths


def own_data(records: list[int]) -> dict:
    """The own-data MLP run through :func:`mpcdp.train` on this host; its costs' estimate and measurements."""
    import mpcdp

    example = importlib.import_module("launch.own_data_example")  # by name: the parties unpickle the module
    with tempfile.TemporaryDirectory() as folder:
        files = _party_files(folder, records)
        torch.manual_seed(0)
        result = mpcdp.train(example.SmallMlp(123), files, label="income_over_50k", protocol=OWN_DATA,
                             fresh_budget=True)  # a benchmark reruns on the same records
    costs = result.costs
    measured = {"bytes_per_party": max(costs["party_bytes"]), "dealer_bytes": costs["dealer_bytes"],
                "seconds": costs["wall_s"], "presample_s": costs["presample_s"], "online_s": costs["online_s"],
                "setup_s": costs["setup_s"]}
    return {"run": f"own-data MLP (own-data-mlp, {len(records)} parties of {', '.join(map(str, records))} records)",
            "estimate": costs["estimate"], "measured": measured, "load": os.getloadavg()[0]}


def _ratio(measured: float, estimated: float) -> float:
    return measured / estimated if estimated else float("nan")


def table(runs: list[dict]) -> str:
    rows = []
    for run in runs:
        est, got = run["estimate"], run["measured"]
        for what, key in (("bytes per party", "bytes_per_party"), ("dealer bytes", "dealer_bytes"),
                          ("time s (parties' start → result)", "seconds"), ("noise sampling s", "presample_s"),
                          ("training steps s", "online_s"), ("set-up s", "setup_s")):
            ratio = _ratio(got[key], est[key])
            fmt = "{:,.0f}" if "bytes" in key else "{:.2f}"
            rows.append([run["run"], what, fmt.format(est[key]), fmt.format(got[key]), f"{ratio:.2f}",
                         "yes" if 0.5 <= ratio <= 2 else "no", f"{run['load']:.1f}"])
    return markdown_table(["run", "quantity", "estimated", "measured", "measured ÷ estimated", "within 2×",
                           "load average"], rows)


def _contention_note(runs: list[dict]) -> str:
    """What to make of the time rows when they miss the band: the load the host was under."""
    missed = [r for r in runs if not 0.5 <= _ratio(r["measured"]["seconds"], r["estimate"]["seconds"]) <= 2]
    if not missed:
        return ""
    load = max(r["load"] for r in runs)
    return (f"\nThe time rows miss the 2× band in this recording: the host ran other jobs (load average up to "
            f"{load:.1f} on {os.cpu_count()} cores), and every part of the run slowed alike; the rates are those "
            "of the uncontended recorded runs, so on a busy host the estimate is a floor. The bytes do not depend "
            "on the load.\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="benchmarks/results/estimate")
    parser.add_argument("--records", default="3000,1500,2000")
    ns = parser.parse_args(argv)
    command = "python -m benchmarks.estimate " + " ".join(argv if argv is not None else sys.argv[1:])
    records = [int(n) for n in ns.records.split(",")]
    runs = [quickstart(), own_data(records)]
    markdown = (f"# The estimate printed before a run against the run\n\nCommand: `{command.strip()}`  \n"
                f"Machine: {os.cpu_count()} cores shared with other jobs (the load average, 1 min, is in the last "
                f"column: timings were taken under that contention), loopback, TLS 1.3 links, every party and the "
                f"dealer its own process.\n\n{table(runs)}\n"
                "Bytes: the declared costs (mpcdp.jobs.estimate) against the kernel's counts. Time: the declared "
                "bytes at rates calibrated from the recorded runs on this machine kind (noise-exact.md, "
                "startup.md), against the run's wall time from the parties' start to their result.\n"
                f"{_contention_note(runs)}")
    recording.record(ns.out, markdown, {"command": command.strip(), "runs": runs})


if __name__ == "__main__":
    main()
