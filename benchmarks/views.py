"""Each role's view of the in-MPC sampler against the noise it released (`mpcdp audit views`), recorded.

    .venv/bin/python -m benchmarks.views --protocol protocols/views.toml

For every ``[[runs]]`` entry (provider, parties, planted leak or none): the audit of
:mod:`mpcdp.jobs.views` with ``calls`` one-sample calls at σ = ``sigma`` grid units and level ``alpha`` per
role; the table lists each role's verdict, its most significant statistic, p and the stated power.
"""

from __future__ import annotations

import sys
import time

from benchmarks import recording
from mpcdp.jobs.views import run_views


def main(argv: list[str] | None = None) -> int:
    ns, protocol, command = recording.parse(__doc__, "protocols/views.toml", "benchmarks/results/views", argv)
    a = protocol["audit"]
    runs = []
    for run in protocol["runs"]:
        print(f"audit views: {run} ...", file=sys.stderr, flush=True)
        start = time.perf_counter()
        report = run_views(parties=run["parties"], provider=run["provider"], calls=a["calls"], sigma=a["sigma"],
                           alpha=a["alpha"], plant=run.get("plant"))
        runs.append(report | {"wall_s": round(time.perf_counter() - start, 1)})
    lines = ["# Each role's view against the released noise (`mpcdp audit views`)", "",
             f"Command: `{command}`  ",
             f"{a['calls']} one-sample calls per run at σ = {a['sigma']} grid units; α = {a['alpha']} per role "
             "(Bonferroni over its statistics); p from the exact permutation mean and variance (Hoeffding) and a "
             "normal tail. Power: for `factor words`, against a role that holds the factors' true words "
             "(simulated in plaintext); for `counts`, against a correlation of 0.25 with x²/σ².", "",
             f"In-MPC circuit: {runs[0]['circuit']}.", "",
             "| provider | m | planted leak | role | verdict | statistic | z | p | power | wall s |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for report in runs:
        for role in report["roles"]:
            lines.append(f"| {report['provider']} | {report['parties']} | {report['plant_leak'] or '–'} | "
                         f"{role['role']} | {role['verdict']} | {role['statistic']} | {role['z']:.2f} | "
                         f"{role['p']:.2g} | {role['power']:.3f} | {report['wall_s']} |")
    recording.record(ns.out, "\n".join(lines), {"command": command, "protocol": protocol, "runs": runs})
    return 0


if __name__ == "__main__":
    sys.exit(main())
