"""Paper 002 Table 2 on a9a: every algorithm, 5 seeds, in the paper's layout, plus secure vs simulated timing.

    .venv/bin/python -m benchmarks.table2 [--seeds 5] [--no-mpc]

Runs the protocol files of protocols/README.md's Table 2 rows (hyper-parameters chosen on other seeds by
benchmarks/tune_srm.py and benchmarks/tune_baselines.py) with seeds 0..S−1: non-private STORM, DP-GD,
DP-AGD, RRPSGD, DP-SGD and DP-SRM in the simulated backend (central), and DDP-SRM with m = 10 in both the
secure ``mpc`` backend and the simulated one, same seeds. Reports per ε: test loss (the paper's "test
error" column) mean (std), next to the paper's value; misclassification rate; data passes; CPU time of
training (the process's CPU seconds; for ``mpc``, wall seconds of the online phase); ‖∇F(θ)‖ on the
training set. A second table gives the secure run's wall time split into noise pre-sampling and the online
phase (and the processes' set-up: start, join, handshake, imports), divided by the simulated run's wall time
(goal: online ≤ 3×). Both backends warm torch.func up before their clocks start.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys

from benchmarks.recording import previous, record
from mpcdp.jobs.train import plan_from, run_plan

PAPER = {  # paper 002 Table 2 (a9a): test loss, data passes, CPU s, gradient norm
    ("storm", None): (0.3346, None, None, None),
    ("dp-gd", 0.2): (0.4153, 20, 1.240, 0.0950), ("dp-gd", 0.5): (0.3856, 20, 1.266, 0.0861),
    ("dp-agd", 0.2): (0.3708, 360, 95.18, 0.0431), ("dp-agd", 0.5): (0.3619, 365, 95.88, 0.0405),
    ("rrpsgd", 0.2): (0.4026, 8, 39.50, 0.2138), ("rrpsgd", 0.5): (0.3859, 10, 51.90, 0.1460),
    ("dp-srm", 0.2): (0.3598, 4, 0.6003, 0.0534), ("dp-srm", 0.5): (0.3517, 5, 0.7390, 0.0504),
    ("ddp-srm", 0.2): (0.3629, 4, 11.53, 0.0664), ("ddp-srm", 0.5): (0.3572, 5, 13.32, 0.0691),
}


def rows(with_mpc: bool) -> list[tuple[str, str]]:
    out = [("storm-a9a", "simulated")]
    for epsilon in (0.2, 0.5):
        out += [(f"{name}-a9a-eps{epsilon}", "simulated") for name in ("dpgd", "dpagd", "rrpsgd", "dpsgd", "dpsrm")]
        out += [(f"ddpsrm-a9a-eps{epsilon}", "simulated")]
        if with_mpc:
            out += [(f"ddpsrm-a9a-eps{epsilon}", "mpc")]
    return out


def _stats(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def summarize(name: str, backend: str, reports: list[dict]) -> dict:
    first = reports[0]
    epsilon = first["epsilon_target"]
    key = (first["algorithm"], None if epsilon is None else round(epsilon, 3))
    paper = PAPER.get(key, (None,) * 4)
    cpu = [r["online_s"] if backend == "mpc" else r["cpu_s"] for r in reports]
    row = {"protocol": name, "backend": backend, "algorithm": first["algorithm"], "parties": first["parties"],
           "epsilon_target": epsilon, "epsilon": first["epsilon"], "output": first["output"],
           "seeds": len(reports), "paper_test_loss": paper[0], "paper_data_passes": paper[1],
           "paper_cpu_s": paper[2], "paper_grad_norm": paper[3],
           "data_passes": statistics.fmean(r["data_passes"] for r in reports), "cpu_s": _stats(cpu),
           "wall_s": _stats([r["wall_s"] for r in reports])}
    for metric in ("test_loss", "test_error", "grad_norm", "test_loss_paper", "test_loss_last", "test_loss_average"):
        row[metric] = _stats([r[metric] for r in reports])
    if backend == "mpc":
        row["online_s"] = _stats([r["online_s"] for r in reports])
        row["presample_s"] = _stats([r["presample_s"] for r in reports])
        row["setup_s"] = _stats([r["setup_s"] for r in reports])
        row["bytes_per_party"] = statistics.fmean(r["bytes_per_party"] for r in reports)
    return row


def _pm(pair: tuple[float, float], digits: int = 4) -> str:
    return f"{pair[0]:.{digits}f} ({pair[1]:.{digits}f})"


def markdown(table: list[dict], command: str, seeds: int) -> str:
    lines = ["# Paper 002 Table 2 on a9a (δ = 1e-5)", "",
             f"Command: `{command}` — seeds 0..{seeds - 1} (hyper-parameters were chosen on seeds 100, 101; "
             "see tune-dpsrm-a9a.md and tune-baselines-a9a.md). Mean (std) over the seeds. ε is certified for every "
             "row except DP-AGD's (the PLD accountant for fixed-size batches without replacement, replace-one; "
             "exact GDP for DP-GD; DP-AGD's zCDP filter is for idealised float noise and printed as not "
             "certified). Test loss = the paper's \"test error\" column; the output rule of each row is "
             "named (paper: the algorithm's own — DP-SRM's uniformly drawn θ̃, RRPSGD's random round; average: "
             "tail average of the iterates, post-processing). CPU s: process CPU seconds of training "
             "(simulated) or online wall seconds (mpc, 10 parties + dealer on 2 cores).", ""]
    for epsilon in (None, 0.2, 0.5):
        chosen = [r for r in table if r["epsilon_target"] == epsilon]
        if not chosen:
            continue
        lines += [f"## {'non-private' if epsilon is None else f'ε = {epsilon}'}", "",
                  "| method | backend | m | output | test loss | paper | ≤ paper? | misclassification | data passes "
                  "(paper) | CPU s (paper) | gradient norm (paper) | loss: paper rule / last / average |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in chosen:
            paper = r["paper_test_loss"]
            verdict = "—" if paper is None else ("yes" if r["test_loss"][0] <= paper else
                                                 f"no (+{r['test_loss'][0] - paper:.4f})")
            lines.append(
                f"| {r['algorithm']} | {r['backend']} | {r['parties']} | {r['output']} | {_pm(r['test_loss'])} | "
                f"{paper if paper is not None else '—'} | {verdict} | {_pm(r['test_error'])} | "
                f"{r['data_passes']:.1f} ({r['paper_data_passes'] or '—'}) | {_pm(r['cpu_s'], 2)} "
                f"({r['paper_cpu_s'] or '—'}) | {_pm(r['grad_norm'])} ({r['paper_grad_norm'] or '—'}) | "
                f"{r['test_loss_paper'][0]:.4f} / {r['test_loss_last'][0]:.4f} / {r['test_loss_average'][0]:.4f} |")
        lines.append("")
    secure = [r for r in table if r["backend"] == "mpc"]
    if secure:
        lines += ["## Secure vs simulated DDP-SRM (same protocol, same seeds)", "",
                  "| protocol | simulated wall s | secure wall s | set-up s | presample s | online s | online ÷ simulated | "
                  "(presample + online) ÷ simulated | bytes per party | test loss mpc − simulated |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for r in secure:
            sim = next(s for s in table if s["protocol"] == r["protocol"] and s["backend"] == "simulated")
            base = sim["wall_s"][0]
            lines.append(
                f"| {r['protocol']} | {_pm(sim['wall_s'], 1)} | {_pm(r['wall_s'], 1)} | {_pm(r['setup_s'], 1)} | "
                f"{_pm(r['presample_s'], 1)} | "
                f"{_pm(r['online_s'], 1)} | {r['online_s'][0] / base:.2f}× | "
                f"{(r['online_s'][0] + r['presample_s'][0]) / base:.2f}× | {r['bytes_per_party'] / 1e6:.1f} MB | "
                f"{r['test_loss'][0] - sim['test_loss'][0]:+.4f} (std {sim['test_loss'][1]:.4f}) |")
        lines.append("")
    return "\n".join(lines)


def moved(table: list[dict], before: dict | None) -> str:
    """What changed against the previously recorded rows when the mechanism or the accountant changed."""
    if not before or before.get("mechanism") == table_mechanism():
        return ""
    was = before.get("mechanism") or "float64 or ratio-of-uniforms noise, continuous sensitivity"
    lines = ["", f"## Against the previous record ({was})", "",
             "| protocol | backend | certified ε before → now | test loss before → now | change |", "|---|---|---|---|---|"]
    old = {(r["protocol"], r["backend"]): r for r in before["rows"]}
    for r in table:
        o = old.get((r["protocol"], r["backend"]))
        if o is None:
            continue
        eps = "—" if r["epsilon"] is None else f"{o['epsilon']:.4f} → {r['epsilon']:.4f}"
        lines.append(f"| {r['protocol']} | {r['backend']} | {eps} | {o['test_loss'][0]:.4f} → {r['test_loss'][0]:.4f} | "
                     f"{r['test_loss'][0] - o['test_loss'][0]:+.4f} |")
    return "\n".join(lines) + "\n"


def table_mechanism() -> str:
    from mpcdp.accounting.released import MECHANISM

    return MECHANISM


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--no-mpc", action="store_true", help="skip the secure DDP-SRM rows")
    parser.add_argument("--only", nargs="+", metavar="PROTOCOL",
                        help="re-run these protocols' rows and merge them into the existing record")
    parser.add_argument("--out", default="benchmarks/results/table2-a9a")
    ns = parser.parse_args(argv)
    from tqdm import tqdm

    before = previous(ns.out)
    plan = [row for row in rows(not ns.no_mpc) if not ns.only or row[0] in ns.only]
    table, runs = [], []
    with tqdm(total=len(plan) * ns.seeds, desc="table 2") as bar:
        for name, backend in plan:
            reports = []
            for seed in range(ns.seeds):
                bar.set_postfix_str(f"{name} [{backend}] seed {seed}")
                report = run_plan(plan_from(f"protocols/{name}.toml", backend=backend, seed=seed), curve=False)
                report.pop("test_error_curve")
                reports.append(report)
                bar.update()
            runs += reports
            table.append(summarize(name, backend, reports))
    command = ("python -m benchmarks.table2 " + " ".join(argv if argv is not None else sys.argv[1:])).strip()
    commands = [command]
    if ns.only:  # merge: the new rows replace the recorded ones of the same protocol and backend
        old = json.loads(pathlib.Path(ns.out).with_suffix(".json").read_text())
        fresh = {(r["protocol"], r["backend"]) for r in table}
        table = [next((n for n in table if (n["protocol"], n["backend"]) == (r["protocol"], r["backend"])), r)
                 for r in old["rows"]]
        runs = [r for r in old["runs"] if (r["protocol"], r["backend"]) not in fresh] + runs
        commands = old.get("commands", [old["command"]]) + [command]
    record(ns.out, markdown(table, "`, then `".join(commands), ns.seeds) + moved(table, before),
           {"command": commands[0], "commands": commands, "rows": table, "runs": runs})
    return 0


if __name__ == "__main__":
    sys.exit(main())
