"""Where a short secure run's time goes: starting the processes against the protocol, measured in one run.

    .venv/bin/python -m benchmarks.startup [--repeats 3]

* the quick start (`protocols/quickstart-a9a.toml`, secure, 3 parties + the dealer), ``repeats`` times in one
  launcher: ``wall_s`` (parties started → result) split into set-up (forking the processes from the
  preloaded server, links, handshake), in-MPC noise pre-sampling and online training. The first run also
  waits for whatever of the fork server's imports the launcher's own preparation did not hide;
* a secure aggregation of d = 1,000 at 3, 16 and 64 parties: launch-to-result wall time against the
  protocol's own time (:func:`benchmarks.scale.aggregate`).
"""

from __future__ import annotations

import argparse
import statistics
import sys

from benchmarks import recording
from benchmarks.scale import aggregate
from mpcdp.jobs.report import markdown_table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--protocol", default="protocols/quickstart-a9a.toml")
    parser.add_argument("--parties", default="3,16,64")
    parser.add_argument("--out", default="benchmarks/results/startup")
    ns = parser.parse_args(argv)
    command = ("python -m benchmarks.startup " + " ".join(argv if argv is not None else sys.argv[1:])).strip()
    from mpcdp.jobs.train import plan_from, run_plan

    runs = []
    for _ in range(ns.repeats):
        report = run_plan(plan_from(ns.protocol, backend="mpc"), curve=False)
        runs.append({key: report[key] for key in ("wall_s", "setup_s", "presample_s", "online_s")})
    rows = [[f"run {i + 1}" + (" (first)" if i == 0 else ""), f"{r['wall_s']:.2f}", f"{r['setup_s']:.2f}",
             f"{r['presample_s']:.2f}", f"{r['online_s']:.2f}", f"{r['setup_s'] / r['wall_s']:.0%}"]
            for i, r in enumerate(runs)]
    later = runs[1:] or runs
    median = {key: statistics.median(r[key] for r in later) for key in runs[0]}
    rows.append(["median of the later runs", f"{median['wall_s']:.2f}", f"{median['setup_s']:.2f}",
                 f"{median['presample_s']:.2f}", f"{median['online_s']:.2f}",
                 f"{median['setup_s'] / median['wall_s']:.0%}"])
    sizes = [int(m) for m in ns.parties.split(",")]
    aggregations = [aggregate(m, 1000, None, 600.0) for m in sizes]
    agg_rows = [[str(a["parties"]), f"{a['wall_s']:.2f}", f"{a['protocol_s']:.3f}",
                 f"{a['wall_s'] - a['protocol_s']:.2f}", f"{a['bytes_busiest'] / a['bytes_mean']:.2f}"]
                for a in aggregations]
    markdown = (f"# Start-up against protocol time\n\nCommand: `{command}`. This machine (2 cores); every party and "
                f"the dealer is its own process, forked from one server that imported torch, CrypTen and mpcdp "
                f"once.\n\n## The quick start ({ns.protocol}, secure, 3 parties)\n\n"
                + markdown_table(["run", "wall s", "set-up s", "noise pre-sampling s", "online s", "set-up share"],
                                 rows)
                + "\n\n## Secure aggregation, d = 1,000\n\n"
                + markdown_table(["m", "launch → result s", "protocol s", "start-up and teardown s",
                                  "busiest ÷ mean bytes"], agg_rows))
    recording.record(ns.out, markdown, {"command": command, "quickstart": runs, "aggregation": aggregations})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
