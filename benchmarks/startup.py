"""Where a secure run's time goes: starting the processes against the protocol, measured in one run.

    .venv/bin/python -m benchmarks.startup [--repeats 3] [--sweep-run/--no-sweep-run]

* the main job as a user runs it (``mpcdp train protocols/quickstart-a9a.toml``, its own interpreter):
  the command's whole time split into the launcher's preparation (data, noise calibration, certificate),
  the training (``wall_s``: parties started → result; of it ``setup_s`` is forking the processes from the
  preloaded server, links, handshake and collecting the results), the evaluation, and the rest
  (interpreter start, imports, exit);
* the quick start ``repeats`` times in one launcher (a sweep's situation: the fork server is warm);
* torch threads per party process: the quick start with ``MPCDP_THREADS`` = the default (cores divided
  among the processes) against every process taking every core, alternating;
* one secure run of the uneven-parties sweep (``protocols/uneven-a9a.toml``: 16 parties + the dealer,
  WD-DP, u = 9, 1,000 releases): set-up against the run's wall time;
* a secure aggregation of d = 1,000 at 3, 16 and 64 parties: launch-to-result wall time against the
  protocol's own time (:func:`benchmarks.scale.aggregate`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from benchmarks import recording
from benchmarks.scale import aggregate
from mpcdp.jobs.report import markdown_table

TIMES = ("wall_s", "setup_s", "presample_s", "online_s")


def _cli_run(protocol: str) -> dict:
    with tempfile.TemporaryFile("w+") as out:  # a file, not a pipe: the time is the command's until it exits
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "mpcdp.cli", "train", protocol], stdout=out,
                       stderr=subprocess.DEVNULL, check=True)
        total = time.perf_counter() - start
        out.seek(0)
        report = json.loads(out.read().strip().splitlines()[-1])
    timing = {key: report[key] for key in ("prepare_s", *TIMES, "evaluate_s")}
    return {"command_s": total, **timing,
            "rest_s": total - timing["prepare_s"] - timing["wall_s"] - timing["evaluate_s"]}


def _in_process(plan, threads: str | None = None) -> dict:
    from mpcdp.jobs.train import run_plan

    before = os.environ.get("MPCDP_THREADS")
    if threads is not None:
        os.environ["MPCDP_THREADS"] = threads
    try:
        report = run_plan(plan, curve=False)
    finally:
        if before is None:
            os.environ.pop("MPCDP_THREADS", None)
        else:
            os.environ["MPCDP_THREADS"] = before
    return {key: report[key] for key in TIMES}


def _share(run: dict) -> str:
    return f"{run['setup_s'] / run['wall_s']:.0%}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--protocol", default="protocols/quickstart-a9a.toml")
    parser.add_argument("--sweep-protocol", default="protocols/uneven-a9a.toml")
    parser.add_argument("--sweep-run", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--parties", default="3,16,64")
    parser.add_argument("--out", default="benchmarks/results/startup")
    ns = parser.parse_args(argv)
    command = ("python -m benchmarks.startup " + " ".join(argv if argv is not None else sys.argv[1:])).strip()
    from mpcdp.jobs.train import plan_from
    from mpcdp.runtime.process_server import threads_per_process

    cli = [_cli_run(ns.protocol) for _ in range(ns.repeats)]
    plan = plan_from(ns.protocol, backend="mpc")
    warm = [_in_process(plan) for _ in range(ns.repeats)]
    cores = os.cpu_count() or 1
    default_threads = threads_per_process(plan.parties + 1)
    threads: dict[str, list[dict]] = {"default": [], "every core": []}
    for _ in range(ns.repeats):
        threads["default"].append(_in_process(plan))
        threads["every core"].append(_in_process(plan, str(cores)))
    sweep_run = None
    if ns.sweep_run:
        sweep_plan = plan_from(ns.sweep_protocol, backend="mpc", size_ratio=9, algorithm="wd-dp")
        sweep_run = _in_process(sweep_plan)
    sizes = [int(m) for m in ns.parties.split(",")]
    aggregations = [aggregate(m, 1000, None, 600.0) for m in sizes]

    def median(runs: list[dict], key: str) -> float:
        return statistics.median(r[key] for r in runs)

    cli_keys = ("command_s", "prepare_s", "wall_s", "setup_s", "presample_s", "online_s", "evaluate_s", "rest_s")
    cli_rows = [[f"run {i + 1}", *(f"{r[k]:.2f}" for k in cli_keys), _share(r)] for i, r in enumerate(cli)]
    cli_rows.append(["median", *(f"{median(cli, k):.2f}" for k in cli_keys),
                     f"{median(cli, 'setup_s') / median(cli, 'wall_s'):.0%}"])
    warm_rows = [[f"run {i + 1}", *(f"{r[k]:.2f}" for k in TIMES), _share(r)] for i, r in enumerate(warm)]
    warm_rows.append(["median", *(f"{median(warm, k):.2f}" for k in TIMES),
                      f"{median(warm, 'setup_s') / median(warm, 'wall_s'):.0%}"])
    thread_rows = [[name, str(default_threads if name == "default" else cores),
                    *(f"{median(runs, k):.2f}" for k in TIMES)] for name, runs in threads.items()]
    ratio = {k: median(threads["every core"], k) / median(threads["default"], k) for k in ("presample_s", "online_s",
                                                                                           "wall_s")}
    agg_rows = [[str(a["parties"]), f"{a['wall_s']:.2f}", f"{a['protocol_s']:.3f}",
                 f"{a['wall_s'] - a['protocol_s']:.2f}", f"{a['bytes_busiest'] / a['bytes_mean']:.2f}"]
                for a in aggregations]
    markdown = (
        f"# Start-up against protocol time\n\nCommand: `{command}`. This machine ({cores} cores); every party and "
        f"the dealer is its own process, forked from one server that imported torch, CrypTen and mpcdp once.\n\n"
        f"## The main job as a user runs it (`mpcdp train {ns.protocol}`, secure, 3 parties)\n\n"
        + markdown_table(["run", "command s", "preparation s", "training s", "of it set-up s", "noise pre-sampling s",
                          "online s", "evaluation s", "rest s", "set-up share"], cli_rows)
        + "\n\npreparation: data, noise calibration and the certificate, in the launcher; training: parties started "
          "→ result (`wall_s`); rest: interpreter start, imports, exit.\n\n"
        f"## The quick start {ns.repeats} times in one launcher (the fork server warm)\n\n"
        + markdown_table(["run", "training s", "set-up s", "noise pre-sampling s", "online s", "set-up share"],
                         warm_rows)
        + f"\n\n## Torch threads per party process (quick start, medians of {ns.repeats} alternating runs)\n\n"
        + markdown_table(["threads", "per process", "training s", "set-up s", "noise pre-sampling s", "online s"],
                         thread_rows)
        + f"\n\nEvery process taking every core ÷ the default: pre-sampling {ratio['presample_s']:.2f}×, online "
          f"{ratio['online_s']:.2f}×, training {ratio['wall_s']:.2f}×.\n\n")
    if sweep_run is not None:
        markdown += (f"## One secure run of the uneven-parties sweep ({ns.sweep_protocol}, 16 parties, WD-DP, u = 9)"
                     "\n\n" + markdown_table(["training s", "set-up s", "noise pre-sampling s", "online s",
                                              "set-up share"],
                                             [[*(f"{sweep_run[k]:.2f}" for k in TIMES), _share(sweep_run)]])
                     + "\n\n")
    markdown += ("## Secure aggregation, d = 1,000\n\n"
                 + markdown_table(["m", "launch → result s", "protocol s", "start-up and teardown s",
                                   "busiest ÷ mean bytes"], agg_rows))
    recording.record(ns.out, markdown, {"command": command, "cli": cli, "quickstart": warm, "threads": threads,
                                        "default_threads": default_threads, "cores": cores,
                                        "sweep_run": sweep_run, "aggregation": aggregations})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
