"""Each role's view of the in-MPC sampler and of training releases against the noise (`mpcdp audit views`), recorded.

    .venv/bin/python -m benchmarks.views --protocol protocols/views.toml

For every ``[[runs]]`` entry (provider, parties, planted leak or none): the audit of
:mod:`mpcdp.jobs.views` with ``calls`` one-sample calls and ``releases`` training releases of ``dim``
coordinates (:mod:`mpcdp.jobs.release_views`) at σ = ``sigma`` grid units and level ``alpha`` per role; a run
with ``security = "malicious"`` audits the authenticated sampler instead (:mod:`mpcdp.jobs.auth_views`, its own
``calls``, no releases); the
first table lists each role's verdict, its most significant statistic, p and the stated power; the second,
each role's most significant release statistic, whose shares it received and the dealer's requests during
the releases.
"""

from __future__ import annotations

import sys
import time

from benchmarks import recording
from mpcdp.jobs.auth_views import run_auth_views
from mpcdp.jobs.views import run_views


def main(argv: list[str] | None = None) -> int:
    ns, protocol, command = recording.parse(__doc__, "protocols/views.toml", "benchmarks/results/views", argv)
    a = protocol["audit"]
    runs = []
    for run in protocol["runs"]:
        print(f"audit views: {run} ...", file=sys.stderr, flush=True)
        start = time.perf_counter()
        if run.get("security") == "malicious":
            report = run_auth_views(parties=run["parties"], calls=run["calls"], sigma=a["sigma"], alpha=a["alpha"],
                                    plant=run.get("plant"))
        else:
            report = run_views(parties=run["parties"], provider=run["provider"], calls=a["calls"], sigma=a["sigma"],
                               alpha=a["alpha"], plant=run.get("plant"), releases=a["releases"], dim=a["dim"])
            report["security"] = "semi-honest"
        runs.append(report | {"wall_s": round(time.perf_counter() - start, 1)})
    lines = ["# Each role's view against the released noise (`mpcdp audit views`)", "",
             f"Command: `{command}`  ",
             f"{a['calls']} one-sample calls and {a['releases']} training releases of d = {a['dim']} per run at "
             f"σ = {a['sigma']} grid units; α = {a['alpha']} per role (Bonferroni over all its statistics, the "
             "sampler's and the release's); p from the exact permutation mean and variance (Hoeffding) and a "
             "normal tail. Power: for `factor words`, against a role that holds the factors' true words "
             "(simulated in plaintext); for `counts`, against a correlation of 0.25 with x²/σ²; release power, "
             "the smallest over the role's release statistics, against a correlation of 0.25 per coordinate with "
             "the statistic's target. Under `security = malicious` (the authenticated sampler, every data party "
             "samples; each run's own number of calls, no releases): for the match statistics (`dealt bits`, "
             "`coin`, `own bit parts`, `pooled bit parts`), p from the Poisson tail at the permutation mean and "
             "power against a role that knows the candidates' bits in 25% of the calls; for counts as above.", "",
             "In-MPC circuits: " + ", ".join(sorted({r["circuit"] for r in runs})) + ".", "",
             "| security | provider | m | calls | planted leak | role | verdict | statistic | z | p | power | wall s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for report in runs:
        for role in report["roles"]:
            lines.append(f"| {report['security']} | {report['provider']} | {report['parties']} | {report['calls']} | "
                         f"{report['plant_leak'] or '–'} | {role['role']} | {role['verdict']} | {role['statistic']} | {role['z']:.2f} | "
                         f"{role['p']:.2g} | {role['power']:.3f} | {report['wall_s']} |")
    lines += ["", "Training releases (statistics named `release: …`; they use no released value):", "",
              "| provider | m | planted leak | role | received shares from | dealer requests | release statistic "
              "| z | p | release power |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for report in runs:
        for role in report["roles"]:
            found = [s for s in role["statistics"] if s["name"].startswith("release: ")]
            if not found:
                continue
            worst = min(found, key=lambda s: s["p"])
            senders = ", ".join(f"party {j}" for j in role.get("release_received_from", [])) or "–"
            lines.append(f"| {report['provider']} | {report['parties']} | {report['plant_leak'] or '–'} | "
                         f"{role['role']} | {senders if role['kind'] != 'dealer' else '–'} | "
                         f"{role.get('release_requests', '–')} | {worst['name'][len('release: '):]} | "
                         f"{worst['z']:.2f} | {worst['p']:.2g} | {role['release_power']:.3f} |")
    lines += ["", "Who could learn the noise (each run's `noise_known_to`):", ""]
    lines += sorted({f"- {r['security']}, {r['provider']}, m = {r['parties']}: {r['noise_known_to']}" for r in runs})
    recording.record(ns.out, "\n".join(lines), {"command": command, "protocol": protocol, "runs": runs})
    return 0


if __name__ == "__main__":
    sys.exit(main())
