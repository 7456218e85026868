"""The main job's secure training while another local user floods every listener of the run.

    .venv/bin/python -m benchmarks.flood --protocol protocols/flood.toml   (as root: the flooder runs as nobody)

For each flood size N (the protocol's ``connections``): user ``nobody`` keeps N silent connections to every
listener of this user that appears on loopback (:mod:`benchmarks.flooder`), refilling each as it closes,
while the quick start's secure training starts and runs. Recorded: whether it finished, its wall time and
set-up time against the run without a flood in the same invocation, and how many connections the flooder
opened and saw closed (the gate, :mod:`mpcdp.transport.gate`, parks a source's connections beyond its
handshake slots and resets them after their hold time).
"""

from __future__ import annotations

import time

from benchmarks import flooder, recording
from mpcdp.jobs.report import markdown_table


def _one(plan, connections: int) -> dict:
    from mpcdp.jobs.train import run_plan

    process, counts = flooder.start_as_nobody(connections) if connections else (None, None)
    try:
        start = time.perf_counter()
        try:
            report = run_plan(plan, curve=False)
            outcome = {"finished": True, "wall_s": report["wall_s"], "setup_s": report["setup_s"]}
        except Exception as exc:  # noqa: BLE001 - a failed run is the result to record
            outcome = {"finished": False, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        outcome["command_s"] = time.perf_counter() - start
    finally:
        if process is not None:
            process.terminate()
    flood = counts.get(timeout=30) if counts is not None else {"listeners": 0, "opened": 0, "closed_by_target": 0}
    return {"connections": connections, **outcome, **flood}


def main(argv: list[str] | None = None) -> int:
    ns, spec, command = recording.parse(__doc__, "protocols/flood.toml", "benchmarks/results/flood", argv)
    from mpcdp.jobs.train import plan_from

    plan = plan_from(spec["flood"]["protocol"], backend="mpc")
    warm_up = _one(plan, 0)  # unrecorded: the invocation's first run pays the fork server's start, not a flood
    rows = [_one(plan, n) for n in spec["flood"]["connections"]]
    base = next((r for r in rows if r["connections"] == 0 and r["finished"]), None)
    table = markdown_table(
        ["silent connections per listener", "finished", "training wall s", "set-up s", "wall ÷ no flood",
         "listeners flooded", "connections the flooder opened"],
        [[f"{r['connections']:,}", "yes" if r["finished"] else f"no ({r.get('error', '')[:80]})",
          f"{r['wall_s']:.1f}" if r["finished"] else "–", f"{r['setup_s']:.1f}" if r["finished"] else "–",
          f"{r['wall_s'] / base['wall_s']:.2f}" if base and r["finished"] else "–",
          r["listeners"], f"{r['opened']:,}"] for r in rows])
    markdown = (f"# The main job's training while another user floods every listener\n\nCommand: `{command}`  \n"
                f"Training: `{spec['flood']['protocol']}` (secure, 3 parties and the dealer, TLS). The flooder runs as "
                f"user `nobody` on the same host and holds N silent connections to every listener of the "
                f"run, refilled as they close (the count includes refills, and retries at listeners that had "
                f"closed once their process had its links). Every row follows one unrecorded run without a flood "
                f"(training wall {warm_up.get('wall_s', float('nan')):.1f} s, set-up "
                f"{warm_up.get('setup_s', float('nan')):.1f} s): the invocation's first run also pays the fork "
                f"server's start.\n\n{table}\n")
    recording.record(ns.out, markdown, {"command": command, "rows": rows, "warm_up": warm_up})
    return 0 if all(r["finished"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
