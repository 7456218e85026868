"""Each role's view of the in-MPC sampler and of training releases against the noise (`mpcdp audit views`), recorded.

    .venv/bin/python -m benchmarks.views --protocol protocols/views.toml

For every ``[[runs]]`` entry (provider, parties, planted leak or none): the audit of
:mod:`mpcdp.jobs.views` with ``calls`` one-sample calls and ``releases`` training releases of ``dim``
coordinates (:mod:`mpcdp.jobs.release_views`) at σ = ``sigma`` grid units and level ``alpha`` per role; a run
with ``security = "malicious"`` audits the authenticated sampler and MAC-checked releases instead
(:mod:`mpcdp.jobs.auth_views`, :mod:`mpcdp.jobs.auth_release_views`; with ``bound = true``, the bounded releases
of :mod:`mpcdp.jobs.auth_bounded_views`). A run may name its own ``calls``,
``releases`` and ``dim`` (else ``[audit]``'s). The first table lists the runs, each with its own calls,
releases, parties, provider, security level, wall time, the load average when it started and its provenance;
the second, each role's verdict, its most significant statistic, p and the stated power; the third, each
role's most significant release statistic, whose shares it received and the dealer's requests during the
releases. ``--keep-recorded`` re-runs only the runs the record does not already hold with the same settings and
the current circuit.
"""

from __future__ import annotations

import sys
import time

from benchmarks import recording
from mpcdp.jobs import release_views
from mpcdp.jobs.auth_views import run_auth_views
from mpcdp.jobs.views import run_views


def _run(run: dict, a: dict) -> dict:
    """One ``[[runs]]`` entry's audit (its own ``calls``, ``releases`` and ``dim`` where it names them), with its
    wall time, the load average when it started and its provenance."""
    import os

    from mpcdp.jobs.report import provenance

    calls, releases, dim = (run.get(key, a[key]) for key in ("calls", "releases", "dim"))
    load = os.getloadavg()[0]
    start = time.perf_counter()
    if run.get("security") == "malicious":
        report = run_auth_views(parties=run["parties"], calls=calls, sigma=a["sigma"], alpha=a["alpha"],
                                plant=run.get("plant"), releases=releases, dim=dim, bound=run.get("bound", False),
                                sampler=run.get("malicious_sampler", "fewer-bytes"), openings=run.get("openings", "star"))
    else:
        report = run_views(parties=run["parties"], provider=run["provider"], calls=calls, sigma=a["sigma"],
                           alpha=a["alpha"], plant=run.get("plant"), releases=releases, dim=dim,
                           openings=run.get("openings", "star"))
        report["security"] = "semi-honest"
    made = provenance()
    return report | {"wall_s": round(time.perf_counter() - start, 1), "load": round(load, 1),
                     "run_recorded": {"date": made["date"], "commit": (made.get("commit") or "")[:12]}}


def _key(run: dict, plant: str | None, calls: int, releases: int, dim: int | None) -> tuple:
    return run.get("security", "semi-honest"), run["provider"], run["parties"], plant, calls, releases, \
        dim if releases else None, bool(run.get("bound")) or plant == "witness", \
        run.get("malicious_sampler", "fewer-bytes"), run.get("openings", "star")


def main(argv: list[str] | None = None) -> int:
    ns, protocol, command = recording.parse(__doc__, "protocols/views.toml", "benchmarks/results/views", argv, flags={
        "keep-recorded": "re-run only the runs the record does not hold with the same security, provider, parties, "
                         "planted leak, calls, releases and the current circuit; keep the others (each with its own "
                         "wall time, load and provenance). After a change to what a run measures, re-record "
                         "without it"})
    from mpcdp.noise.secure_gaussian import CIRCUIT as mpc_circuit

    a = protocol["audit"]
    kept = {}
    if ns.keep_recorded:
        before = recording.previous(ns.out) or {"runs": []}
        made = before.get("recorded", {})
        stamp = {"date": made.get("date"), "commit": (made.get("commit") or "")[:12]}
        kept = {_key(r, r["plant_leak"], r["calls"], r["releases"], r.get("dim")): {"run_recorded": stamp} | r
                for r in before["runs"] if r["circuit"] == _current(r, mpc_circuit)}
    runs = []
    for run in protocol["runs"]:
        key = _key(run, run.get("plant"), *(run.get(k, a[k]) for k in ("calls", "releases", "dim")))
        if key in kept:
            runs.append(kept[key])
            continue
        print(f"audit views: {run} ...", file=sys.stderr, flush=True)
        runs.append(_run(run, a))
    recording.record(ns.out, markdown(command, a, runs), {"command": command, "protocol": protocol, "runs": runs})
    return 0


def _current(run: dict, mpc_circuit: str) -> str:
    """The short id of the circuit a run of this security (and malicious sampler plan) runs now."""
    from mpcdp.noise.auth_gaussian import CIRCUITS

    if run.get("security", "semi-honest") == "semi-honest":
        return mpc_circuit.split(":")[0]
    return CIRCUITS[run.get("malicious_sampler", "fewer-bytes")].split(":")[0]


def _security(report: dict) -> str:
    """A run's security level, with its malicious sampler's plan and its openings where not the default."""
    plan, openings = report.get("malicious_sampler", "fewer-bytes"), report.get("openings", "star")
    notes = [note for note, default in ((plan, "fewer-bytes"), (openings, "star")) if note != default]
    return report["security"] + (f" ({', '.join(notes)})" if notes else "")


def _run_line(report: dict) -> str:
    made = report.get("run_recorded")
    when = f"{made['date']}, {made['commit']}" if made else "–"
    releases = f"{report['releases']} × d = {report.get('dim', '–')}{_bounded(report)}" if report["releases"] \
        else "0"
    return (f"| {_security(report)} | {report['provider']} | {report['parties']} | {report['noise_committee']} | "
            f"{report['calls']} | {releases} | {report['plant_leak'] or '–'} | {report['circuit']} | "
            f"{report['wall_s']} | {report.get('load', '–')} | {when} |")


def _bounded(report: dict) -> str:
    return f", bounded (‖x‖ ≤ {report['bound']:.4g})" if report.get("bound") else ""


def markdown(command: str, a: dict, runs: list[dict]) -> str:
    """The record's table: the runs (each with its own calls, releases, parties, provider and security), each
    role's verdict, each role's most significant release statistic, and who could learn each run's noise."""
    lines = ["# Each role's view against the released noise (`mpcdp audit views`)", "",
             f"Command: `{command}`  ",
             f"Every run at σ = {a['sigma']} grid units and α = {a['alpha']} per role (Bonferroni over all its "
             "statistics, the sampler's and the releases'); each run's own number of one-sample calls, training "
             "releases (each of d coordinates), parties, provider and security level are in the first table and in "
             "every row. p from the exact permutation mean and variance (Hoeffding) and a normal tail. Power: for "
             "`factor words`, against a role that holds the factors' true words (simulated in plaintext); for "
             "`counts`, against a correlation of 0.25 with x²/σ²; release power, the smallest over the role's "
             "release statistics, against a correlation of 0.25 per coordinate with the statistic's target. Under "
             "`security = malicious` (the authenticated sampler, every data party samples, then MAC-checked "
             "releases: `mpcdp.jobs.auth_release_views`; `bounded`: with the norm check training runs use, "
             "`mpcdp.jobs.auth_bounded_views`): for the match statistics (`dealt bits`, `coin`, `own "
             "bit parts`, `pooled bit parts`), p from the Poisson tail at the permutation mean and power against a "
             "role that knows the candidates' bits in 25% of the calls; for counts as above. `load`: the 1-minute "
             "load average when the run started (the machine is shared; wall times scale with it).", "",
             "| security | provider | m | committee | calls | releases | planted leak | circuit | wall s | load "
             "| recorded |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    lines += [_run_line(report) for report in runs]
    lines += ["", "| security | provider | m | calls | releases | planted leak | role | verdict | statistic | z | p "
              "| power |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for report in runs:
        for role in report["roles"]:
            lines.append(f"| {_security(report)} | {report['provider']} | {report['parties']} | {report['calls']} | "
                         f"{report['releases']}{_bounded(report)} | {report['plant_leak'] or '–'} | {role['role']} | "
                         f"{role['verdict']} | "
                         f"{role['statistic']} | {role['z']:.2f} | {role['p']:.2g} | {role['power']:.3f} |")
    lines += ["", "Training releases (statistics named `release: …`; they use no released value). Release power: "
              "against a correlation of 0.25 per coordinate with the statistic's target, the smallest over the "
              "role's release statistics (a scalar one's where the role has one: the dealer's request count, "
              "under malicious each σ share, one number per release, nearly powerless at 20 releases), and that "
              "of a statistic over all d coordinates (a received share, a noise share, a mask) at the role's "
              "Bonferroni level:", "",
              "| security | provider | m | releases × d | planted leak | role | received shares from | dealer "
              "requests | release statistic | z | p | release power (smallest) | power, a d-coordinate statistic |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for report in runs:
        for role in report["roles"]:
            found = [s for s in role["statistics"] if s["name"].startswith("release: ")]
            if not found:
                continue
            worst = min(found, key=lambda s: s["p"])
            senders = ", ".join(f"party {j}" for j in role.get("release_received_from", [])) or "–"
            lines.append(f"| {_security(report)} | {report['provider']} | {report['parties']} | "
                         f"{report['releases']} × {report.get('dim', '–')}{_bounded(report)} | "
                         f"{report['plant_leak'] or '–'} | "
                         f"{role['role']} | {senders} | "
                         f"{role.get('release_requests', '–')} | {worst['name'][len('release: '):]} | "
                         f"{worst['z']:.2f} | {worst['p']:.2g} | {role['release_power']:.3f} | "
                         f"{release_views.power(report['dim'], report['releases'], report['alpha'], len(role['statistics'])):.3f} |")
    lines += ["", "Who could learn the noise (each run's `noise_known_to`):", ""]
    lines += sorted({f"- {r['security']}, {r['provider']}, m = {r['parties']}: {r['noise_known_to']}" for r in runs})
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
