"""Paper 002 Table 2 on a9a: every algorithm, 5 seeds, in the paper's layout, plus secure vs simulated timing.

    .venv/bin/python -m benchmarks.table2 [--seeds 5] [--no-mpc] [--security semi-honest malicious]
        [--backend simulated mpc] [--only PROTOCOL ...]

Runs the protocol files of protocols/README.md's Table 2 rows (hyper-parameters chosen on other seeds by
benchmarks/tune_srm.py and benchmarks/tune_baselines.py) with seeds 0..S−1: non-private STORM, DP-GD,
DP-AGD, RRPSGD, DP-SGD and DP-SRM in the simulated backend (central), and DDP-SRM with m = 10 in both the
secure ``mpc`` backend and the simulated one, same seeds. The secure rows run once per ``--security``
(``semi-honest`` and ``malicious``, issue 48: MACs on every opening, each party's term checked against its
clipping bound; default both), a row each, with the same seeds and — asserted — the same certified ε as the
simulated row. Reports per ε: test loss (the paper's "test error" column) mean (std), next to the paper's
value; misclassification rate; data passes; CPU time of training (the process's CPU seconds; for ``mpc``, wall
seconds of the online phase); ‖∇F(θ)‖ on the training set. A second table gives each secure run's wall time
split into noise pre-sampling and the online phase (and the processes' set-up: start, join, handshake,
imports), divided by the simulated run's wall time (goal: online ≤ 3×), with the bytes every party and the
dealer sent; a third divides malicious by semi-honest. Both backends warm torch.func up before their clocks
start. ``--only`` re-runs the named protocols' rows (of the chosen backends and securities) and merges them
into the existing record, keeping every other row.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import sys
from typing import Any

from benchmarks.recording import previous, record

SECURITIES = ("semi-honest", "malicious")
BACKENDS = ("simulated", "mpc")
PAPER = {  # paper 002 Table 2 (a9a): test loss, data passes, CPU s, gradient norm
    ("storm", None): (0.3346, None, None, None),
    ("dp-gd", 0.2): (0.4153, 20, 1.240, 0.0950), ("dp-gd", 0.5): (0.3856, 20, 1.266, 0.0861),
    ("dp-agd", 0.2): (0.3708, 360, 95.18, 0.0431), ("dp-agd", 0.5): (0.3619, 365, 95.88, 0.0405),
    ("rrpsgd", 0.2): (0.4026, 8, 39.50, 0.2138), ("rrpsgd", 0.5): (0.3859, 10, 51.90, 0.1460),
    ("dp-srm", 0.2): (0.3598, 4, 0.6003, 0.0534), ("dp-srm", 0.5): (0.3517, 5, 0.7390, 0.0504),
    ("ddp-srm", 0.2): (0.3629, 4, 11.53, 0.0664), ("ddp-srm", 0.5): (0.3572, 5, 13.32, 0.0691),
}

Row = tuple[str, str, "str | None"]  # (protocol, backend, security: None for the simulated backend)


def rows(with_mpc: bool, securities: tuple[str, ...] = SECURITIES,
         backends: tuple[str, ...] = BACKENDS) -> list[Row]:
    """The runs of Table 2 in the paper's order: (protocol, backend, security); the secure DDP-SRM rows once per
    security in ``securities``; only the rows of ``backends``."""
    out: list[Row] = [("storm-a9a", "simulated", None)]
    for epsilon in (0.2, 0.5):
        out += [(f"{name}-a9a-eps{epsilon}", "simulated", None)
                for name in ("dpgd", "dpagd", "rrpsgd", "dpsgd", "dpsrm", "ddpsrm")]
        if with_mpc:
            out += [(f"ddpsrm-a9a-eps{epsilon}", "mpc", security) for security in securities]
    return [row for row in out if row[1] in backends]


def key(row: dict) -> Row:
    """A recorded row's or run's identity: the secure rows recorded before issue 48 carry no ``security`` and
    were semi-honest."""
    return (row["protocol"], row["backend"], (row.get("security") or "semi-honest") if row["backend"] == "mpc" else None)


def _stats(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def summarize(name: str, backend: str, reports: list[dict], security: str | None = None) -> dict:
    """One table row from the seeds' reports; refuses reports whose certified ε differ (a row is one
    mechanism at one ε, whatever the seed)."""
    first = reports[0]
    epsilon = first["epsilon_target"]
    if any(r["epsilon"] != first["epsilon"] for r in reports):
        raise AssertionError(f"{name} [{backend}]: the seeds certified different ε: {[r['epsilon'] for r in reports]}")
    key_ = (first["algorithm"], None if epsilon is None else round(epsilon, 3))
    paper = PAPER.get(key_, (None,) * 4)
    cpu = [r["online_s"] if backend == "mpc" else r["cpu_s"] for r in reports]
    row = {"protocol": name, "backend": backend, "security": security, "algorithm": first["algorithm"],
           "parties": first["parties"], "epsilon_target": epsilon, "epsilon": first["epsilon"],
           "output": first["output"], "seeds": len(reports), "paper_test_loss": paper[0],
           "paper_data_passes": paper[1], "paper_cpu_s": paper[2], "paper_grad_norm": paper[3],
           "data_passes": statistics.fmean(r["data_passes"] for r in reports), "cpu_s": _stats(cpu),
           "wall_s": _stats([r["wall_s"] for r in reports])}
    for metric in ("test_loss", "test_error", "grad_norm", "test_loss_paper", "test_loss_last", "test_loss_average"):
        row[metric] = _stats([r[metric] for r in reports])
    if backend == "mpc":
        for timing in ("online_s", "presample_s", "setup_s"):
            row[timing] = _stats([r[timing] for r in reports])
        row["bytes_per_party"] = statistics.fmean(r["bytes_per_party"] for r in reports)
        row["dealer_bytes"] = statistics.fmean(r["dealer_bytes"] for r in reports)
    return row


EPSILON_RTOL = 1e-6  # certified ε of one protocol recomputed at another commit moved by ~1e-10 (float sums)


def check_same_epsilon(table: list[dict]) -> None:
    """Every row of one protocol — simulated, semi-honest and malicious — certifies the same ε (the security
    changes how the noise is made, never which noise): raise naming the protocol otherwise. Rows recorded by
    different commands may differ in the last digits of the certificate's float arithmetic, never by
    :data:`EPSILON_RTOL` of ε."""
    for protocol in dict.fromkeys(r["protocol"] for r in table):
        found = {key(r): r["epsilon"] for r in table if r["protocol"] == protocol}
        values = [v for v in found.values() if v is not None]  # None: not certified (non-private, DP-AGD)
        if (values and len(values) != len(found)) or (values and max(values) - min(values) > EPSILON_RTOL * max(values)):
            raise AssertionError(f"{protocol}: the rows certify different ε: {found}")


def missing(table: list[dict]) -> list[Row]:
    """The rows of the whole table (every security) that the record lacks."""
    have = {key(r) for r in table}
    return [row for row in rows(True) if row not in have]


def _pm(pair: tuple[float, float] | list[float], digits: int = 4) -> str:
    return f"{pair[0]:.{digits}f} ({pair[1]:.{digits}f})"


def _security(r: dict) -> str:
    return key(r)[2] or "—"


def markdown(table: list[dict], command: str, seeds: int, runs: list[dict] | None = None) -> str:
    """The record's text: one table per ε in the paper's layout (a row per backend and security), then the
    secure runs' timing and bytes by security, and malicious ÷ semi-honest."""
    counts = sorted({r["seeds"] for r in table})
    fewer = "" if counts == [seeds] else " (the `seeds` column says how many seeds each row has: seeds 0..k−1)"
    lines = ["# Paper 002 Table 2 on a9a (δ = 1e-5)", "",
             f"Command: `{command}` — seeds 0..{max(counts) - 1}{fewer} (hyper-parameters were chosen on seeds "
             "100, 101; see tune-dpsrm-a9a.md and tune-baselines-a9a.md). Mean (std) over the seeds. ε is "
             "certified for every row except DP-AGD's (the PLD accountant for fixed-size batches without "
             "replacement, replace-one; exact GDP for DP-GD; DP-AGD's zCDP filter is for idealised float noise and "
             "printed as not certified); the simulated and both secure DDP-SRM rows certify the same ε (checked). "
             "Test loss = the paper's \"test error\" column; the output rule of each row is "
             "named (paper: the algorithm's own — DP-SRM's uniformly drawn θ̃, RRPSGD's random round; average: "
             "tail average of the iterates, post-processing). CPU s: process CPU seconds of training "
             "(simulated) or online wall seconds (mpc, 10 parties + dealer on 2 cores). security: the secure "
             "run's adversary (`[mpc] security`; malicious = security with abort, MACs on every opening and each "
             "party's term checked against its clipping bound).", ""]
    for epsilon in (None, 0.2, 0.5):
        chosen = [r for r in table if r["epsilon_target"] == epsilon]
        if not chosen:
            continue
        lines += [f"## {'non-private' if epsilon is None else f'ε = {epsilon}'}", "",
                  "| method | backend | security | m | seeds | output | test loss | paper | ≤ paper? | misclassification "
                  "| data passes (paper) | CPU s (paper) | gradient norm (paper) | loss: paper rule / last / average |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in chosen:
            paper = r["paper_test_loss"]
            verdict = "—" if paper is None else ("yes" if r["test_loss"][0] <= paper else
                                                 f"no (+{r['test_loss'][0] - paper:.4f})")
            lines.append(
                f"| {r['algorithm']} | {r['backend']} | {_security(r)} | {r['parties']} | {r['seeds']} | "
                f"{r['output']} | {_pm(r['test_loss'])} | "
                f"{paper if paper is not None else '—'} | {verdict} | {_pm(r['test_error'])} | "
                f"{r['data_passes']:.1f} ({r['paper_data_passes'] or '—'}) | {_pm(r['cpu_s'], 2)} "
                f"({r['paper_cpu_s'] or '—'}) | {_pm(r['grad_norm'])} ({r['paper_grad_norm'] or '—'}) | "
                f"{r['test_loss_paper'][0]:.4f} / {r['test_loss_last'][0]:.4f} / {r['test_loss_average'][0]:.4f} |")
        lines.append("")
    lines += secure_tables(table, runs or [])
    absent = missing(table)
    if absent:
        lines += ["Not recorded: " + ", ".join(f"{p} [{b}{', ' + s if s else ''}]" for p, b, s in absent) + ".", ""]
    return "\n".join(lines)


def simulated_loss(table: list[dict], runs: list[dict], protocol: str, seeds: int) -> tuple[float, float]:
    """The simulated row's test loss (mean, std) on seeds 0..seeds−1 (the secure row's seeds), from the recorded
    runs (in seed order) where they are there, else the row's."""
    sim = [r for r in runs if key(r) == (protocol, "simulated", None)]
    if len(sim) >= seeds:
        return _stats([r["test_loss"] for r in sim[:seeds]])
    row = next(s for s in table if key(s) == (protocol, "simulated", None))
    return row["test_loss"][0], row["test_loss"][1]


def _mb(value: float | None) -> str:
    return "—" if value is None else f"{value / 1e6:,.1f} MB"


def secure_tables(table: list[dict], runs: list[dict]) -> list[str]:
    """The secure rows' wall split, bytes and loss against the simulated row (same seeds), a row per security;
    then malicious ÷ semi-honest for every protocol recorded under both."""
    secure = [r for r in table if r["backend"] == "mpc"]
    if not secure:
        return []
    lines = ["## Secure vs simulated DDP-SRM (same protocol, same seeds)", "",
             "| protocol | security | seeds | simulated wall s | secure wall s | set-up s | noise sampling s | online s | "
             "online ÷ simulated | (sampling + online) ÷ simulated | bytes per party | dealer bytes | "
             "test loss mpc − simulated |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in secure:
        sim = next(s for s in table if key(s) == (r["protocol"], "simulated", None))
        base = sim["wall_s"][0]
        loss = simulated_loss(table, runs, r["protocol"], r["seeds"])
        lines.append(
            f"| {r['protocol']} | {_security(r)} | {r['seeds']} | {_pm(sim['wall_s'], 1)} | {_pm(r['wall_s'], 1)} | "
            f"{_pm(r['setup_s'], 1)} | {_pm(r['presample_s'], 1)} | {_pm(r['online_s'], 1)} | "
            f"{r['online_s'][0] / base:.2f}× | {(r['online_s'][0] + r['presample_s'][0]) / base:.2f}× | "
            f"{_mb(r['bytes_per_party'])} | {_mb(r.get('dealer_bytes'))} | "
            f"{r['test_loss'][0] - loss[0]:+.4f} (std {loss[1]:.4f}) |")
    lines.append("")
    pairs = [(r, m) for r in secure if _security(r) == "semi-honest"
             for m in secure if key(m) == (r["protocol"], "mpc", "malicious")]
    if pairs:
        lines += ["## Malicious ÷ semi-honest (same protocol, same seeds)", "",
                  "| protocol | seeds (sh / mal) | noise sampling | online | set-up | secure wall | bytes per party | "
                  "dealer bytes | test loss mal − sh |", "|---|---|---|---|---|---|---|---|---|"]
        for sh, mal in pairs:
            dealer = ("—" if not sh.get("dealer_bytes") or mal.get("dealer_bytes") is None
                      else f"{mal['dealer_bytes'] / sh['dealer_bytes']:.1f}×")
            lines.append(
                f"| {sh['protocol']} | {sh['seeds']} / {mal['seeds']} | "
                + " | ".join(f"{mal[t][0] / sh[t][0]:.1f}×" for t in ("presample_s", "online_s", "setup_s", "wall_s"))
                + f" | {mal['bytes_per_party'] / sh['bytes_per_party']:.1f}× | {dealer} | "
                f"{mal['test_loss'][0] - sh['test_loss'][0]:+.4f} |")
        lines.append("")
    return lines


def moved(table: list[dict], before: dict | None) -> str:
    """Every row's certified ε and test loss against the previously recorded rows when the mechanism changed."""
    if not before or before.get("mechanism") == table_mechanism():
        return ""
    was = before.get("mechanism") or "float64 or ratio-of-uniforms noise, continuous sensitivity"
    lines = ["", f"## Against the previous record ({was})", "",
             "| protocol | backend | certified ε before → now | test loss before → now | change |", "|---|---|---|---|---|"]
    old = {key(r): r for r in before["rows"]}
    for r in table:
        o = old.get(key(r))
        if o is None:
            continue
        eps = "—" if r["epsilon"] is None else f"{o['epsilon']:.4f} → {r['epsilon']:.4f}"
        lines.append(f"| {r['protocol']} | {r['backend']} | {eps} | {o['test_loss'][0]:.4f} → {r['test_loss'][0]:.4f} | "
                     f"{r['test_loss'][0] - o['test_loss'][0]:+.4f} |")
    return "\n".join(lines) + "\n"


def _circuit_id(circuit: str | None) -> str:
    return (circuit or "").split(":")[0]


def previous_secure(before: dict | None) -> dict | None:
    """The DDP-SRM rows of the last record made with another in-MPC circuit, to say what moved: taken from
    ``before`` when its circuit is not today's, else carried over from ``before`` (so a record re-made in
    several ``--only`` commands keeps the comparison)."""
    if not before:
        return None
    if _circuit_id(before.get("circuit")) == _circuit_id(table_circuit()):
        return before.get("previous_secure")
    return {"circuit": before.get("circuit"), "recorded": before.get("recorded"),
            "rows": [r for r in before["rows"] if r["algorithm"] == "ddp-srm"]}


def against(table: list[dict], prev: dict | None) -> str:
    """The DDP-SRM rows (both backends, every security recorded before) against ``prev``
    (:func:`previous_secure`): bytes per party, noise sampling and online time, test loss."""
    if not prev:
        return ""
    old = {key(r): r for r in prev["rows"]}
    pairs = [(r, old[key(r)]) for r in table if key(r) in old]
    if not pairs:
        return ""
    commit = ((prev.get("recorded") or {}).get("commit") or "?")[:12]
    lines = ["", f"## DDP-SRM against the previous record (circuit {_circuit_id(prev['circuit'])}, commit {commit}"
             f" → {_circuit_id(table_circuit())})", "",
             "| protocol | backend | security | seeds before → now | bytes per party | noise sampling s | online s | "
             "test loss (std now) |", "|---|---|---|---|---|---|---|---|"]
    for r, o in pairs:
        secure = r["backend"] == "mpc"
        lines.append(
            f"| {r['protocol']} | {r['backend']} | {_security(r)} | {o['seeds']} → {r['seeds']} | "
            + (f"{_mb(o['bytes_per_party'])} → {_mb(r['bytes_per_party'])} | {o['presample_s'][0]:.1f} → "
               f"{r['presample_s'][0]:.1f} | {o['online_s'][0]:.1f} → {r['online_s'][0]:.1f}" if secure else "— | — | —")
            + f" | {o['test_loss'][0]:.4f} → {r['test_loss'][0]:.4f} ({r['test_loss'][1]:.4f}) |")
    return "\n".join(lines) + "\n"


def table_mechanism() -> str:
    from mpcdp.accounting.released import MECHANISM

    return MECHANISM


def table_circuit() -> str:
    """The semi-honest in-MPC circuit of the released mechanism (what write_record stamps as ``circuit``)."""
    from mpcdp.learning.mechanisms import MECHANISMS, NoiseChoice

    return MECHANISMS[NoiseChoice.mode].circuit or ""


def merge(old: dict, table: list[dict], runs: list[dict]) -> tuple[list[dict], list[dict]]:
    """The recorded rows with this command's rows in their place (a row new to the record goes after the last
    recorded row of its protocol), and the recorded runs of every row not re-run followed by this command's."""
    fresh = {key(r): r for r in table}
    merged = [fresh.pop(key(r), r) for r in old["rows"]]
    for row in fresh.values():
        at = max((i for i, r in enumerate(merged) if r["protocol"] == row["protocol"]), default=len(merged) - 1)
        merged.insert(at + 1, row)
    kept = [r for r in old["runs"] if key(r) not in {key(t) for t in table}]
    return merged, kept + runs


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--no-mpc", action="store_true", help="skip the secure DDP-SRM rows")
    parser.add_argument("--security", nargs="+", choices=SECURITIES, default=list(SECURITIES),
                        help="the securities of the secure DDP-SRM rows, a row each (default: both)")
    parser.add_argument("--backend", nargs="+", choices=BACKENDS, default=list(BACKENDS),
                        help="run only these backends' rows (with --only: keep the others from the record)")
    parser.add_argument("--only", nargs="+", metavar="PROTOCOL",
                        help="re-run these protocols' rows and merge them into the existing record")
    parser.add_argument("--out", default="benchmarks/results/table2-a9a")
    parser.add_argument("--reuse", nargs="+", metavar="JSONL", default=[],
                        help="take the reports an earlier command kept (its OUT.partial-PID.jsonl) for their row and "
                             "seed instead of running them again")
    ns = parser.parse_args(argv)
    if ns.seeds < 1:
        parser.error(f"--seeds must be at least 1. Found {ns.seeds}.")
    known = {r[0] for r in rows(True)}
    unknown = [p for p in ns.only or () if p not in known]
    if unknown:
        parser.error(f"--only: {unknown} are not Table 2 protocols (one of {sorted(known)})")
    ns.security = tuple(dict.fromkeys(ns.security))
    ns.backend = tuple(dict.fromkeys(ns.backend))
    return ns


def load_kept(paths: list[str]) -> dict[tuple[Row, int], dict]:
    """The reports an earlier command kept (its ``out.partial-PID.jsonl``, :func:`run_rows`' ``keep``) by (row,
    seed), to be taken instead of run again."""
    kept: dict[tuple[Row, int], dict] = {}
    for path in paths:
        for line in pathlib.Path(path).read_text().splitlines():
            report = json.loads(line)
            name, backend, security = report.pop("row")
            kept[((name, backend, security), report["seed"])] = report
    return kept


def run_rows(plan: list[Row], seeds: int, keep: pathlib.Path | None = None,
             kept: dict[tuple[Row, int], dict] | None = None) -> tuple[list[dict], list[dict]]:
    """Run every row of ``plan`` on seeds 0..seeds−1; return (the table's rows, every run's report). ``keep``:
    a JSON-lines file each report is appended to as it comes (a long secure run is not lost if the record
    cannot be written); ``kept``: reports of earlier commands (:func:`load_kept`), taken for their row and seed."""
    from tqdm import tqdm

    from mpcdp.jobs.train import plan_from, run_plan

    table: list[dict] = []
    runs: list[dict] = []
    with tqdm(total=len(plan) * seeds, desc="table 2") as bar:
        for name, backend, security in plan:
            reports = []
            for seed in range(seeds):
                bar.set_postfix_str(f"{name} [{backend}{', ' + security if security else ''}] seed {seed}")
                mpc: dict[str, Any] = {"security": security} if security else {}
                report = (kept or {}).get(((name, backend, security), seed))
                if report is None:
                    report = run_plan(plan_from(f"protocols/{name}.toml", backend=backend, seed=seed, mpc=mpc),
                                      curve=False)
                    report.pop("test_error_curve")
                report["seed"] = seed
                if backend == "simulated":  # the security of a run without MPC is no property of it
                    report.pop("security", None)
                reports.append(report)
                if keep is not None:
                    with keep.open("a") as fh:
                        fh.write(json.dumps({"row": [name, backend, security], **report}, default=str) + "\n")
                bar.update()
            runs += reports
            table.append(summarize(name, backend, reports, security))
    return table, runs


def main(argv: list[str] | None = None) -> int:
    ns = parse(argv)
    before = previous(ns.out)
    plan = [row for row in rows(not ns.no_mpc, ns.security, ns.backend) if not ns.only or row[0] in ns.only]
    load_before = os.getloadavg()
    keep = pathlib.Path(f"{ns.out}.partial-{os.getpid()}.jsonl")
    table, runs = run_rows(plan, ns.seeds, keep, load_kept(ns.reuse))
    command = ("python -m benchmarks.table2 " + " ".join(argv if argv is not None else sys.argv[1:])).strip()
    load = {"command": command, "load_average_before": [round(x, 1) for x in load_before],
            "load_average_after": [round(x, 1) for x in os.getloadavg()]}
    commands, loads = [command], [load]
    if ns.only:  # merge: the new rows replace the recorded ones of the same protocol, backend and security
        old = json.loads(pathlib.Path(ns.out).with_suffix(".json").read_text())
        table, runs = merge(old, table, runs)
        commands = old.get("commands", [old["command"]]) + [command]
        loads = old.get("load_average", []) + loads
    check_same_epsilon(table)
    from mpcdp.noise.auth_gaussian import CIRCUIT

    prev = previous_secure(before)
    text = markdown(table, "`, then `".join(commands), ns.seeds, runs) + moved(table, before) + against(table, prev)
    text += "\nHost load average (1, 5, 15 min) before → after each command (a shared 2-core host: wall times scale with it, bytes do not):\n\n"
    text += "".join(f"* `{x['command']}`: {x['load_average_before']} → {x['load_average_after']}\n" for x in loads)
    if any(key(r)[2] == "malicious" for r in table):
        text += f"\nAuthenticated in-MPC circuit (the malicious rows): {CIRCUIT}.\n"
    payload = {"command": commands[0], "commands": commands, "authenticated_circuit": CIRCUIT,
               "load_average": loads, "rows": table,
               "runs": runs, **({"previous_secure": prev} if prev else {})}
    record(ns.out, text, payload)
    keep.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
