"""`mpcdp decentralized PROTOCOL --sweep --out PREFIX`: paper 004's accuracy against ε (its Figs. 3–4, Table II).

For every budget convention in ``[sweep] budgets`` ('model': the whole 10-class model is (ε, δ)-DP; 'per-classifier':
each one-vs-all model is, as in the paper), every noise calibration in ``[sweep] calibrations`` ('paper': eq. (4)
per update with basic composition over DP-SGD-5's five updates; 'accountant': the least noise dp-accounting
certifies for the same (ε, δ)) and every ε in ``[sweep] epsilons``, each of Algorithm 1, Algorithm 2
(Deep-Q) and DP-SGD-5 runs ``runs`` times (seeds 0…runs−1: node data split, batches, noise, controller), and the
noiseless Algorithm 1 once per seed. Reported: mean test accuracy ± standard error; for Algorithm 2 the mean over
nodes of each node's own model (the paper's output, Theorems 6–7) and, separately, the public global model's
accuracy and the share of turns that went to the global model. The paper's ordering is checked per ε with the
seed-paired differences (Deep-Q − Algorithm 1, Algorithm 1 − DP-SGD-5): "holds" when the difference exceeds two
standard errors, "tie" within, "reversed" below −2 SE. Algorithm 2's ε is not certified: its Deep-Q decisions
depend on private losses and are public (:data:`mpcdp.jobs.decentralized.DECISIONS_NOT_COVERED`); the table gives
the ε of its gradient releases only, marked so.

Then one backend check: the protocol's own point with the ``processes`` backend (every node its own OS process,
the model handed over the mesh) against the simulated run of the same seed, per method: the largest coordinate
difference of the final models (0 expected: the check runs ``reproducible``, so both draw from the same seeded
per-node generators) and the bytes a node sent.

Writes PREFIX.md, PREFIX.json and PREFIX.png.
"""

from __future__ import annotations

import dataclasses
import math
import pathlib
import statistics
from typing import Any, Callable

import numpy as np

from mpcdp.jobs.report import save_figure, write_record
from mpcdp.jobs.decentralized import METHODS, plan_from, run_method
from mpcdp.validation import check_integer

__all__ = ["run_sweep", "summarise", "ordering"]

PRIVATE = ("algorithm2", "algorithm1", "dpsgd5")
LABELS = {"algorithm1": "Algorithm 1 (fully collaborative)", "algorithm2": "Algorithm 2 (Deep-Q)",
          "dpsgd5": "DP-SGD-5", "noiseless": "Noiseless"}


def _mean_se(values: list[float]) -> tuple[float, float]:
    mean = statistics.fmean(values)
    se = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else float("nan")
    return mean, se


def run_sweep(path: str, *, out: str, runs: int | None = None,
              progress: Callable[[int, int, str], None] | None = None) -> dict[str, Any]:
    plan = plan_from(path, backend="simulated")
    sweep = plan.sweep
    epsilons = [float(e) for e in sweep.get("epsilons", [plan.epsilon])]
    settings = [(b, c) for b in sweep.get("budgets", [plan.budget])
                for c in sweep.get("calibrations", [plan.calibration])]
    runs = check_integer(runs if runs is not None else sweep.get("runs", 3), "runs", minimum=2,
                         note="standard errors need two seeds")
    todo: list[tuple[Any, Any, float | None, str, int]]  # (budget, calibration, ε: None = noiseless, method, seed)
    todo = [(b, c, e, m, s) for b, c in settings for e in epsilons for m in PRIVATE for s in range(runs)]
    todo += [(*settings[0], None, "noiseless", s) for s in range(runs)]
    results = []
    for i, (budget, calibration, eps, method, seed) in enumerate(todo):
        if progress is not None and i % 10 == 0:
            progress(i, len(todo) + len(METHODS), f"{budget}/{calibration} ε={eps} {method}")
        p = dataclasses.replace(plan, budget=budget, calibration=calibration)
        r = run_method(p, method, epsilon=eps if eps is not None else plan.epsilon, seed=seed)
        keep: dict[str, Any]
        keep = {k: r[k] for k in ("method", "seed", "budget", "calibration", "epsilon", "epsilon_certified",
                                  "epsilon_all_classes", "epsilon_not_certified_because",
                                  "epsilon_gradient_releases_only", "epsilon_all_classes_gradient_releases_only",
                                  "grad_noise_std", "updates", "accuracy", "wall_s") if k in r}
        if method == "algorithm2":
            keep.update({k: r[k] for k in ("accuracy_global", "accuracy_local", "global_fraction")})
        results.append(keep)
        dataset_name, per_node, delta = r["dataset"], r["per_node"], r["delta"]
    backends: list[dict[str, Any]] = []
    for method in METHODS:
        if progress is not None:
            progress(len(todo) + len(backends), len(todo) + len(METHODS), f"processes {method}")
        secure = run_method(dataclasses.replace(plan, mpc=plan.mpc.replaced(reproducible=True)), method,
                            backend="processes")
        local = run_method(plan, method, backend="simulated")
        diff = float(np.max(np.abs(secure["w"] - local["w"])))
        if method == "algorithm2":
            diff = max(diff, max(float(np.max(np.abs(a - b))) for a, b in
                                 zip(secure["local_models"], local["local_models"])))
        backends.append({"method": method, "max_abs_difference": diff, "accuracy": secure["accuracy"],
                         "wall_s": secure["wall_s"], "simulated_wall_s": local["wall_s"],
                         "bytes_per_node": secure["bytes_per_node"]})
    if progress is not None:
        progress(len(todo) + len(METHODS), len(todo) + len(METHODS), "done")
    summary = summarise(results, settings, epsilons)
    record = {"protocol": path, "plan": dataclasses.asdict(plan), "dataset": dataset_name, "per_node": per_node,
              "delta": delta, "runs_per_point": runs, "summary": summary,
              "ordering": ordering(results, settings, epsilons), "backends": backends, "runs": results}
    return write_record(out, record, markdown(record), plot)


def _select(results, **match) -> list[dict[str, Any]]:
    return sorted((r for r in results if all(r[k] == v for k, v in match.items())), key=lambda r: r["seed"])


def summarise(results: list[dict[str, Any]], settings: list[tuple[str, str]],
              epsilons: list[float]) -> list[dict[str, Any]]:
    """Mean ± SE per (budget, calibration, ε) and method."""
    rows = []
    noiseless = _mean_se([r["accuracy"] for r in _select(results, method="noiseless")])
    for budget, calibration in settings:
        for eps in epsilons:
            row: dict[str, Any] = {"budget": budget, "calibration": calibration, "epsilon": eps,
                                   "noiseless": noiseless[0]}
            for method in PRIVATE:
                rs = _select(results, method=method, budget=budget, calibration=calibration, epsilon=eps)
                row[method], row[method + "_se"] = _mean_se([r["accuracy"] for r in rs])
                if method == "algorithm2":  # its decisions are not covered: not certified
                    row["algorithm2_gradient_releases_only"] = max(r["epsilon_gradient_releases_only"] for r in rs)
                else:
                    row[method + "_certified"] = max(r["epsilon_certified"] for r in rs)
                if method == "algorithm2":
                    row["algorithm2_global"], row["algorithm2_global_se"] = _mean_se(
                        [r["accuracy_global"] for r in rs])
                    row["global_fraction"] = statistics.fmean(r["global_fraction"] for r in rs)
            rows.append(row)
    return rows


def _verdict(diffs: list[float]) -> tuple[float, float, str]:
    mean, se = _mean_se(diffs)
    verdict = "holds" if mean > 2 * se else "reversed" if mean < -2 * se else "tie"
    return mean, se, verdict


def ordering(results: list[dict[str, Any]], settings: list[tuple[str, str]],
             epsilons: list[float]) -> list[dict[str, Any]]:
    """Seed-paired differences for the paper's claim Deep-Q >= Algorithm 1 >= DP-SGD-5, per setting and ε."""
    rows = []
    for budget, calibration in settings:
        for eps in epsilons:
            acc = {m: [r["accuracy"] for r in _select(results, method=m, budget=budget, calibration=calibration,
                                                        epsilon=eps)] for m in PRIVATE}
            dq = _verdict([a - b for a, b in zip(acc["algorithm2"], acc["algorithm1"])])
            a1 = _verdict([a - b for a, b in zip(acc["algorithm1"], acc["dpsgd5"])])
            rows.append({"budget": budget, "calibration": calibration, "epsilon": eps, "deepq_minus_alg1": dq[0], "deepq_minus_alg1_se": dq[1],
                         "deepq_vs_alg1": dq[2], "alg1_minus_dpsgd5": a1[0], "alg1_minus_dpsgd5_se": a1[1],
                         "alg1_vs_dpsgd5": a1[2]})
    return rows


def markdown(record: dict[str, Any]) -> str:
    plan = record["plan"]
    lines = [f"# Paper 004: accuracy vs ε — {record['dataset']}", "",
             f"Command: `mpcdp decentralized {record['protocol']} --sweep --out PREFIX` ({record['runs_per_point']} "
             f"seeds per point). {plan['nodes']} nodes × {record['per_node']} examples, b = {plan['batch_size']}, "
             f"η = {plan['eta']} (Algorithms 1–2; DP-SGD-5: 1/√t, {plan['visits']} passes), λ = {plan['lam']}, "
             f"δ = {record['delta']:.3g}, PCA-50 unit-norm features, one-vs-all logistic, one pass. Test accuracy, "
             "mean ± standard error; Algorithm 2: mean over nodes of each node's own model, then the public global "
             "model and the share of turns spent on it.", ""]
    for setting in dict.fromkeys((r["budget"], r["calibration"]) for r in record["summary"]):
        lines += [f"## Budget: {setting[0]}, calibration: {setting[1]}", "",
                  "| ε | Deep-Q (node models) | Deep-Q global | global turns | Algorithm 1 | DP-SGD-5 | noiseless | "
                  "ε certified (Alg. 1 / DP-SGD-5) | Deep-Q ε, gradient releases only (decisions not covered: "
                  "not certified) |", "|---|---|---|---|---|---|---|---|---|"]
        for r in (r for r in record["summary"] if (r["budget"], r["calibration"]) == setting):
            lines.append(f"| {r['epsilon']:g} | {r['algorithm2']:.3f} ± {r['algorithm2_se']:.3f} | "
                         f"{r['algorithm2_global']:.3f} ± {r['algorithm2_global_se']:.3f} | "
                         f"{r['global_fraction']:.2f} | {r['algorithm1']:.3f} ± {r['algorithm1_se']:.3f} | "
                         f"{r['dpsgd5']:.3f} ± {r['dpsgd5_se']:.3f} | {r['noiseless']:.3f} | "
                         f"{r['algorithm1_certified']:.4g} / {r['dpsgd5_certified']:.4g} | "
                         f"{r['algorithm2_gradient_releases_only']:.4g} |")
        lines.append("")
    lines += ["## The paper's ordering (Deep-Q ≥ Algorithm 1 ≥ DP-SGD-5), seed-paired", "",
              "| budget | calibration | ε | Deep-Q − Alg. 1 | verdict | Alg. 1 − DP-SGD-5 | verdict |",
              "|---|---|---|---|---|---|---|"]
    for o in record["ordering"]:
        lines.append(f"| {o['budget']} | {o['calibration']} | {o['epsilon']:g} | {o['deepq_minus_alg1']:+.3f} ± "
                     f"{o['deepq_minus_alg1_se']:.3f} | {o['deepq_vs_alg1']} | {o['alg1_minus_dpsgd5']:+.3f} ± "
                     f"{o['alg1_minus_dpsgd5_se']:.3f} | {o['alg1_vs_dpsgd5']} |")
    lines += ["", "## Nodes as separate processes (protocol's own ε and seed, reproducible)", "",
              r"| method | max \|Δw\| vs simulated | accuracy | wall s (processes / simulated) | bytes sent per node |",
              "|---|---|---|---|---|"]
    for b in record["backends"]:
        lines.append(f"| {b['method']} | {b['max_abs_difference']:.3g} | {b['accuracy']:.3f} | "
                     f"{b['wall_s']:.1f} / {b['simulated_wall_s']:.2f} | {b['bytes_per_node']:,} |")
    return "\n".join(lines) + "\n"


def plot(record: dict[str, Any], path: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    settings = list(dict.fromkeys((r["budget"], r["calibration"]) for r in record["summary"]))
    columns = min(2, len(settings))
    rows_n = math.ceil(len(settings) / columns)
    fig, axes = plt.subplots(rows_n, columns, figsize=(5.5 * columns, 4 * rows_n), squeeze=False)
    for ax, setting in zip(axes.flat, settings):
        rows = [r for r in record["summary"] if (r["budget"], r["calibration"]) == setting]
        xs = [r["epsilon"] for r in rows]
        for method in PRIVATE:
            ax.errorbar(xs, [r[method] for r in rows], yerr=[2 * r[method + "_se"] for r in rows], marker="o",
                        capsize=3, label=LABELS[method])
        ax.plot(xs, [r["algorithm2_global"] for r in rows], ":", color="tab:blue", label="Deep-Q global model")
        ax.axhline(rows[0]["noiseless"], color="grey", ls="--", label="Noiseless")
        ax.set_xscale("log")
        ax.set_xlabel("ε")
        ax.set_ylabel("test accuracy")
        ax.set_title(f"{record['dataset'].split(' (')[0]} — budget: {setting[0]}, calibration: {setting[1]}",
                     fontsize=9)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
