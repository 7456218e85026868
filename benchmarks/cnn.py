"""DDP-SRM vs DP-SGD on paper 002's MNIST CNN (§6.2, Fig. 3) at equal certified ε, secure vs simulated.

    .venv/bin/python -m benchmarks.cnn --protocol protocols/cnn-compare.toml [--out PREFIX] [--secure-only]

For every (dataset, ε, algorithm) the protocol names, runs ``protocols/{algorithm}-{dataset}-eps{ε}.toml``
(hyper-parameters chosen by benchmarks.tune_cnn on seed 100) in the simulated backend on ``seeds`` (or the
dataset's entry in ``seeds_for``), and the
files listed under ``secure`` also in the secure backend (real party processes, noise sampled inside the
MPC) on ``secure_seeds``. Reports:

* test error mean ± std per (dataset, ε, algorithm) with the ε dp-accounting certifies, and DDP-SRM − DP-SGD
  with its standard error (Welch);
* secure − simulated test error paired by seed (same batches, independent noise draws): mean ± standard
  error, "within seed noise" when |mean| ≤ 2·SE of the pairs or ≤ 2·SE of the simulated seeds' spread;
* time per step: the secure run's online phase and its noise pre-sampling per step, each ÷ the simulated
  run's wall time per step (same protocol, same seed, both after warm-up; process start-up apart).

Writes PREFIX.md and PREFIX.json (default benchmarks/results/cnn-compare). ``--secure-only`` re-runs the secure
runs alone and pairs them with the simulated runs already recorded there: for a change of the in-MPC circuit
only, which the simulated backend does not run (the record then lists both commands).
"""

from __future__ import annotations

import math
import multiprocessing
import statistics
from typing import Any

from benchmarks.recording import parse, previous, record

KEPT = ("protocol", "algorithm", "backend", "dataset", "parties", "epsilon", "epsilon_target", "delta", "sigma0",
        "sigma", "iterations", "data_passes", "test_error", "test_loss", "train_loss", "wall_s", "presample_s",
        "online_s", "setup_s", "bytes_per_party", "dealer_bytes")


def _run(job: tuple[str, str, int]) -> dict[str, Any]:
    import torch

    from mpcdp.jobs.train import plan_from, run_plan

    name, backend, seed = job
    if backend == "simulated":
        torch.set_num_threads(1)
    report = run_plan(plan_from(f"protocols/{name}.toml", backend=backend, seed=seed), curve=False)
    return {"name": name, "seed": seed, **{k: report.get(k) for k in KEPT}}


def _mean_std(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else math.nan)


def summarize(runs: list[dict[str, Any]], protocol: dict[str, Any]) -> dict[str, Any]:
    by_name: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in runs:
        by_name.setdefault((r["name"], r["backend"]), []).append(r)
    table, comparisons = [], []
    for dataset in protocol["datasets"]:
        for epsilon in protocol["epsilons"]:
            cells = {}
            for algorithm in protocol["algorithms"]:
                rs = by_name.get((f"{algorithm}-{dataset}-eps{epsilon}", "simulated"), [])
                if not rs:
                    continue
                mean, std = _mean_std([r["test_error"] for r in rs])
                cells[algorithm] = (mean, std, len(rs))
                table.append({"dataset": rs[0]["dataset"], "epsilon_target": float(epsilon),
                              "epsilon": rs[0]["epsilon"], "algorithm": rs[0]["algorithm"],
                              "iterations": rs[0]["iterations"], "data_passes": rs[0]["data_passes"],
                              "sigma": rs[0]["sigma"], "seeds": len(rs), "test_error": mean, "test_error_std": std,
                              "wall_s": statistics.fmean(r["wall_s"] for r in rs)})
            if "ddpsrm" in cells and "dpsgd" in cells:
                (a, sa, na), (b, sb, nb) = cells["ddpsrm"], cells["dpsgd"]
                se = math.sqrt(sa ** 2 / na + sb ** 2 / nb) if na > 1 and nb > 1 else math.nan
                comparisons.append({"dataset": table[-1]["dataset"], "epsilon_target": float(epsilon),
                                    "difference": a - b, "stderr": se,
                                    "verdict": _verdict(a - b, se)})
    secure = []
    for (name, backend), rs in by_name.items():
        if backend != "mpc":
            continue
        simulated = {r["seed"]: r for r in by_name.get((name, "simulated"), [])}
        pairs = [(r, simulated[r["seed"]]) for r in rs if r["seed"] in simulated]
        if not pairs:
            continue
        diffs = [m["test_error"] - s["test_error"] for m, s in pairs]
        mean = statistics.fmean(diffs)
        pair_se = statistics.stdev(diffs) / math.sqrt(len(diffs)) if len(diffs) > 1 else math.nan
        seed_std = statistics.stdev(s["test_error"] for s in simulated.values()) if len(simulated) > 1 else math.nan
        seed_se = seed_std * math.sqrt(2 / len(diffs))
        steps = [m["iterations"] for m, _ in pairs]
        secure.append({
            "protocol": name, "algorithm": rs[0]["algorithm"], "dataset": rs[0]["dataset"], "pairs": len(pairs),
            "parties": rs[0]["parties"],
            "mpc_test_error": statistics.fmean(m["test_error"] for m, _ in pairs),
            "simulated_test_error": statistics.fmean(s["test_error"] for _, s in pairs),
            "difference": mean, "pair_stderr": pair_se, "seed_std": seed_std,
            "within_noise": bool(abs(mean) <= 2 * pair_se or abs(mean) <= 2 * seed_se),
            "online_per_step_s": statistics.fmean(m["online_s"] / t for (m, _), t in zip(pairs, steps)),
            "presample_per_step_s": statistics.fmean(m["presample_s"] / t for (m, _), t in zip(pairs, steps)),
            "simulated_per_step_s": statistics.fmean(s["wall_s"] / t for (_, s), t in zip(pairs, steps)),
            "setup_s": statistics.fmean(m["setup_s"] for m, _ in pairs),
            "bytes_per_party": statistics.fmean(m["bytes_per_party"] for m, _ in pairs),
            "dealer_bytes": statistics.fmean(m["dealer_bytes"] or 0 for m, _ in pairs),
        })
    for row in secure:
        row["online_ratio"] = row["online_per_step_s"] / row["simulated_per_step_s"]
        row["presample_ratio"] = row["presample_per_step_s"] / row["simulated_per_step_s"]
    return {"table": table, "comparisons": comparisons, "secure": secure}


def _verdict(difference: float, stderr: float) -> str:
    if math.isnan(stderr):
        return "one seed"
    if difference < -2 * stderr:
        return "DDP-SRM lower"
    if difference > 2 * stderr:
        return "DP-SGD lower"
    return "within 2 SE"


def markdown(summary: dict[str, Any], command: str, protocol: dict[str, Any]) -> str:
    lines = ["# DDP-SRM vs DP-SGD on paper 002's MNIST CNN, secure vs simulated", "",
             f"Command: `{command}`. Simulated seeds {protocol['seeds']} "
             f"({', '.join(f'{d}: {s}' for d, s in protocol.get('seeds_for', {}).items()) or 'every dataset'}), "
             f"secure seeds {protocol['secure_seeds']}; "
             "δ = 1e-5; every ε certified by the PLD accountant for fixed-size batches without replacement "
             "(replace-one, `mpcdp-certify/3`); "
             "hyper-parameters from benchmarks.tune_cnn on seed 100. Test error = misclassification rate of the "
             "last iterate on the dataset's test split.", "",
             "## Test error at equal certified ε (simulated backend, 4 parties)", "",
             "| dataset | ε target (certified) | algorithm | T | passes | σ | test error mean ± std | seeds |",
             "|---|---|---|---|---|---|---|---|"]
    for r in summary["table"]:
        lines.append(f"| {r['dataset']} | {r['epsilon_target']:g} ({r['epsilon']:.5f}) | {r['algorithm']} | "
                     f"{r['iterations']} | {r['data_passes']:.2f} | {r['sigma']:.4g} | {r['test_error']:.4f} ± "
                     f"{r['test_error_std']:.4f} | {r['seeds']} |")
    lines += ["", "DDP-SRM − DP-SGD test error (negative: DDP-SRM better), Welch standard error:", "",
              "| dataset | ε | difference | SE | verdict |", "|---|---|---|---|---|"]
    for c in summary["comparisons"]:
        lines.append(f"| {c['dataset']} | {c['epsilon_target']:g} | {c['difference']:+.4f} | {c['stderr']:.4f} | "
                     f"{c['verdict']} |")
    if summary["secure"]:
        lines += ["", "## Secure (mpc) vs simulated, paired by seed", "",
                  "| protocol | m | pairs | mpc error | simulated error | mpc − simulated ± SE | seed std | within noise |",
                  "|---|---|---|---|---|---|---|---|"]
        for s in summary["secure"]:
            lines.append(f"| {s['protocol']} | {s['parties']} | {s['pairs']} | {s['mpc_test_error']:.4f} | "
                         f"{s['simulated_test_error']:.4f} | {s['difference']:+.4f} ± {s['pair_stderr']:.4f} | "
                         f"{s['seed_std']:.4f} | {'yes' if s['within_noise'] else 'NO'} |")
        lines += ["", "Time per step (2 shared cores; the secure run's processes share them):", "",
                  "| protocol | simulated s/step | mpc online s/step | ÷ simulated | mpc noise pre-sampling s/step | "
                  "÷ simulated | set-up s | MB sent by busiest party | dealer MB |", "|---|---|---|---|---|---|---|---|---|"]
        for s in summary["secure"]:
            lines.append(f"| {s['protocol']} | {s['simulated_per_step_s']:.3f} | {s['online_per_step_s']:.3f} | "
                         f"{s['online_ratio']:.2f}× | {s['presample_per_step_s']:.3f} | {s['presample_ratio']:.2f}× | "
                         f"{s['setup_s']:.1f} | {s['bytes_per_party'] / 1e6:.1f} | {s['dealer_bytes'] / 1e6:.1f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ns, protocol, command = parse(__doc__, "protocols/cnn-compare.toml", "benchmarks/results/cnn-compare", argv,
                                  {"secure-only": "re-run the secure runs only and pair them with the recorded "
                                                  "simulated ones (when only the in-MPC circuit changed)"})
    seeds_for = protocol.get("seeds_for", {})
    simulated = [(f"{a}-{d}-eps{e}", "simulated", s) for d in protocol["datasets"] for e in protocol["epsilons"]
                 for a in protocol["algorithms"] for s in seeds_for.get(d, protocol["seeds"])]
    simulated.sort(key=lambda job: ("fashion" not in job[0], "ddpsrm" not in job[0]))  # longest first
    secure = [(n, "mpc", s) for n in protocol.get("secure", []) for s in protocol["secure_seeds"]]
    from tqdm import tqdm

    commands = [command]
    if ns.secure_only:
        before = previous(ns.out)
        assert before is not None, f"--secure-only pairs with the recorded {ns.out}.json, and there is none"
        runs = [r for r in before["runs"] if r["backend"] == "simulated"]
        commands = before.get("commands", [before["command"]]) + [command]
    else:
        with multiprocessing.get_context("spawn").Pool(int(protocol.get("workers", 2))) as pool:
            runs = list(tqdm(pool.imap_unordered(_run, simulated), total=len(simulated), desc="simulated"))
    for job in tqdm(secure, desc="secure"):  # party processes use every core: one secure run at a time
        runs.append(_run(job))
    summary = summarize(runs, protocol)
    record(ns.out, markdown(summary, "`, then `".join(commands), protocol),
           {"command": commands[0], "commands": commands, "runs": runs, **summary})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
