"""`mpcdp collab PROTOCOL --sweep --out PREFIX`: paper 003's predictions against measurements (its Figs. 3–6).

Three measurements, every point averaged over ``runs`` seeds of the owners' Laplace noise (simulated backend;
the secure backends give the same models for the same seeds, checked once per sweep and recorded):

1. **Over ε** (equal budgets ε_1 = … = ε_N, sizes fixed) and **over n** (equal sizes, budget fixed), for each
   algorithm: the privacy part of the fitness gap, E[f(θ)] − f(θ_∞), θ_∞ the same run without noise (ε = ∞),
   f the cost on the owners' pooled data. Theorem 2 (Algorithm 1) says it is ∝ 1/(n²ε²); Theorem 3 (Algorithm 2)
   bounds it by ∝ 1/(nε). Reported: the log-log slopes fitted over ε and over n, Theorem 2's bound itself,
   and a prediction made before training — one calibration point (the protocol's own sizes and budget),
   then c/(n²ε²) everywhere else — with its measured/predicted ratio at every point.
2. **Whom to include** (§IV-A.3, Fig. 6): owners 2…N fixed (small or large, conservative or generous), owner 1
   with each (n_1, ε_1) of a grid; collaboration_score (√Σ1/ε_ℓ² / n, the quantity Theorems 2–3 depend on)
   predicts whether adding owner 1 helps; measured: relative fitness ψ with and without owner 1 (both evaluated
   on the pooled data of all owners, θ* its optimum). The table counts agreements.
3. **Backends**: the protocol's own point with the ``processes`` and ``mpc`` backends (owners as party processes)
   against the simulated run with the same seed: largest coordinate difference of the final models.

Writes PREFIX.md, PREFIX.json and PREFIX.png.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import pathlib
import statistics
import warnings
from typing import Any, Callable

import numpy as np

from mpcdp.accounting.laplace import MECHANISM as LAPLACE_MECHANISM
from mpcdp.jobs.report import save_figure, write_record
from mpcdp.errors import ConfigError, InsecureSettingWarning
from mpcdp.validation import check_integer, read_protocol
from mpcdp.jobs.collab import CollabPlan, plan_from, problem_of, run_plan
from mpcdp.learning.collab import nonprivate_optimum, pooled_cost
from mpcdp.learning.collab_prediction import collaboration_score


@dataclasses.dataclass(frozen=True)
class SweepSpec:
    runs: int
    epsilons: tuple[float, ...]
    sizes: tuple[int, ...]
    algorithms: dict[int, dict[str, Any]]
    scenarios: dict[str, Any]
    backends: tuple[str, ...]


def spec_from(path: str) -> SweepSpec:
    sweep = read_protocol(path).get("sweep")
    if not sweep:
        raise ConfigError(f"protocol {path!r} has no [sweep] table")
    runs = check_integer(sweep.get("runs", 20), "runs", minimum=2, where=" in [sweep]")
    epsilons, sizes = tuple(float(e) for e in sweep.get("epsilons", ())), tuple(sweep.get("sizes", ()))
    if len(epsilons) < 2 or len(sizes) < 2:
        raise ConfigError(f"[sweep] `epsilons` and `sizes` need at least 2 values each. Found {list(epsilons)} "
                          f"and {list(sizes)}.")
    algorithms = {int(k.removeprefix("algorithm")): dict(v) for k, v in sweep.items() if k.startswith("algorithm")}
    if not algorithms or any(a not in (1, 2) for a in algorithms):
        raise ConfigError(f"[sweep] needs [sweep.algorithm1] and/or [sweep.algorithm2] tables. Found "
                          f"{sorted(algorithms)}.")
    return SweepSpec(runs, epsilons, sizes, algorithms, dict(sweep.get("scenarios", {})),
                     tuple(sweep.get("backends", ())))


def run_sweep(path: str, *, out: str, runs: int | None = None,
              progress: Callable[[int, int, str], None] | None = None) -> dict[str, Any]:
    spec = spec_from(path)
    if runs is not None:
        spec = dataclasses.replace(spec, runs=runs)
    base = plan_from(path, backend="simulated")
    owners = len(base.sizes)
    todo: list[tuple[str, CollabPlan, CollabPlan | None]] = []
    for algorithm, hyper in spec.algorithms.items():
        plan = plan_from(path, backend="simulated", algorithm=algorithm, overrides=hyper)
        base_n, base_eps = plan.sizes[0], plan.epsilons[0]
        for eps in spec.epsilons:
            todo += [(f"a{algorithm}/eps", dataclasses.replace(plan, epsilons=(eps,) * owners, seed=s), None)
                     for s in range(spec.runs)]
        for n in spec.sizes:
            todo += [(f"a{algorithm}/n", dataclasses.replace(plan, sizes=(n,) * owners, epsilons=(base_eps,) * owners,
                                                              seed=s), None) for s in range(spec.runs)]
        for n in sorted(set(spec.sizes) | {base_n}):  # noiseless references
            todo.append((f"a{algorithm}/ref", dataclasses.replace(plan, sizes=(n,) * owners,
                                                                   epsilons=(math.inf,) * owners, seed=0), None))
    scenario_jobs = _scenario_jobs(base, spec)
    todo += scenario_jobs
    results: list[dict[str, Any]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureSettingWarning)  # every run is seeded, on purpose
        for i, (kind, plan, evaluated_as) in enumerate(todo):
            if progress is not None and i % 25 == 0:
                progress(i, len(todo) + len(spec.backends), kind)
            full = evaluated_as or plan
            report = run_plan(plan, f_star=_optimum(full.dataset, full.cost, full.l2, full.sizes, full.offset),
                              evaluation=_owners(full) if evaluated_as is not None else None)
            results.append({"kind": kind, **{k: report[k] for k in ("algorithm", "sizes", "epsilons", "seed", "gap",
                                                                     "psi", "f", "f_star", "prediction")}})
    backends: list[dict[str, Any]] = []
    for backend in spec.backends:
        if progress is not None:
            progress(len(todo) + len(backends), len(todo) + len(spec.backends), backend)
        secure = run_plan(dataclasses.replace(base, backend=backend))
        simulated = run_plan(base)
        backends.append({"backend": backend, "max_abs_difference": float(np.max(np.abs(
            np.array(secure["final"]) - np.array(simulated["final"])))), "psi": secure["psi"],
            "psi_simulated": simulated["psi"], "wall_s": secure["wall_s"], "online_s": secure.get("online_s"),
            "bytes_per_party": secure.get("bytes_per_party"), "rounds": secure.get("rounds")})
    if progress is not None:
        progress(len(todo) + len(spec.backends), len(todo) + len(spec.backends), "done")
    record = {"protocol": path, "base": dataclasses.asdict(base), "spec": dataclasses.asdict(spec),
              "scaling": scaling(results, spec, base), "scenarios": scenarios(results),
              "backends": backends, "runs": results}
    return write_record(out, record, markdown(record, problem_of(base).data_name), plot, default=_jsonable,
                        mechanism=LAPLACE_MECHANISM)


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    return str(value)


def _reference_plan(dataset: str, cost: str, l2: float, sizes: tuple[int, ...], offset: int) -> CollabPlan:
    return CollabPlan(name="reference", dataset=dataset, cost=cost, algorithm=1, backend="simulated", sizes=sizes,
                      epsilons=(math.inf,) * len(sizes), steps=2, xi=1.0, l2=l2, offset=offset)


@functools.lru_cache(maxsize=64)
def _optimum(dataset: str, cost: str, l2: float, sizes: tuple[int, ...], offset: int) -> float:
    """f(θ*) on the pooled data of owners of these sizes (cached: many runs share it)."""
    plan = _reference_plan(dataset, cost, l2, sizes, offset)
    owners = problem_of(plan).owners
    cost_fn = plan.cost_function()
    return pooled_cost(cost_fn, owners, nonprivate_optimum(owners, cost_fn))


def _owners(plan: CollabPlan):
    return problem_of(plan).owners


def _scenario_jobs(base: CollabPlan, spec: SweepSpec) -> list[tuple[str, CollabPlan, CollabPlan]]:
    s = spec.scenarios
    if not s:
        return []
    jobs = []
    others = len(base.sizes) - 1
    for n_other in s["other_sizes"]:
        for eps_other in s["other_epsilons"]:
            for n1 in s["owner1_sizes"]:
                for eps1 in s["owner1_epsilons"]:
                    with_owner = dataclasses.replace(base, sizes=(n1,) + (n_other,) * others,
                                                     epsilons=(eps1,) + (eps_other,) * others)
                    without = dataclasses.replace(base, sizes=(n_other,) * others, epsilons=(eps_other,) * others)
                    # owners 2..N alone keep their own rows (those after owner 1's n_1): only owner 1 leaves;
                    # both are evaluated on the pooled data of all owners
                    without = dataclasses.replace(without, offset=n1)
                    for seed in range(spec.runs):
                        jobs.append(("scenario/with", dataclasses.replace(with_owner, seed=seed), with_owner))
                        jobs.append(("scenario/without", dataclasses.replace(without, seed=seed), with_owner))
    return jobs


def scaling(results: list[dict[str, Any]], spec: SweepSpec, base: CollabPlan) -> list[dict[str, Any]]:
    """Per algorithm: mean privacy gap per ε and per n, fitted log-log slopes, one-point-calibrated prediction."""
    out = []
    for algorithm in spec.algorithms:
        refs = {tuple(r["sizes"]): r["gap"] for r in results if r["kind"] == f"a{algorithm}/ref"}
        points = []
        for axis in ("eps", "n"):
            groups: dict[tuple, list[dict[str, Any]]] = {}
            for r in results:
                if r["kind"] == f"a{algorithm}/{axis}":
                    groups.setdefault((tuple(r["sizes"]), tuple(r["epsilons"])), []).append(r)
            for (sizes, epsilons), rs in sorted(groups.items()):
                gaps = [r["gap"] for r in rs]
                excess = statistics.fmean(gaps) - refs[sizes]
                points.append({"axis": axis, "n": sizes[0], "epsilon": epsilons[0], "runs": len(rs),
                               "gap": statistics.fmean(gaps), "gap_noiseless": refs[sizes], "excess": excess,
                               "excess_stderr": statistics.stdev(gaps) / math.sqrt(len(gaps)),
                               "psi": statistics.fmean(r["psi"] for r in rs), "bound": rs[0]["prediction"]["bound"]})
        anchor = next(p for p in points if p["axis"] == "eps" and p["epsilon"] == base.epsilons[0])
        c = anchor["excess"] * (anchor["n"] * anchor["epsilon"]) ** 2
        for p in points:
            p["predicted"] = c / (p["n"] * p["epsilon"]) ** 2
            p["ratio"] = p["excess"] / p["predicted"]
        slope = {axis: _slope([p[key] for p in points if p["axis"] == axis],
                              [p["excess"] for p in points if p["axis"] == axis])
                 for axis, key in (("eps", "epsilon"), ("n", "n"))}
        out.append({"algorithm": algorithm, "points": points, "slope_epsilon": slope["eps"], "slope_n": slope["n"],
                    "calibration": {"n": anchor["n"], "epsilon": anchor["epsilon"], "c": c}})
    return out


def _slope(xs: list[float], ys: list[float]) -> float:
    keep = [(x, y) for x, y in zip(xs, ys) if y > 0]
    if len(keep) < 2:
        return math.nan
    lx, ly = np.log([k[0] for k in keep]), np.log([k[1] for k in keep])
    return float(np.polyfit(lx, ly, 1)[0])


def scenarios(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """ψ with and without owner 1 per (owners 2.. size and ε, owner 1 size and ε): every "without" run is listed
    right after its "with" twin (same seed), so the two lists pair up in order."""
    withs = [r for r in results if r["kind"] == "scenario/with"]
    withouts = [r for r in results if r["kind"] == "scenario/without"]
    groups: dict[tuple, dict[str, list[float]]] = {}
    for w, wo in zip(withs, withouts):
        key = (w["sizes"][1], w["epsilons"][1], w["sizes"][0], w["epsilons"][0])
        group = groups.setdefault(key, {"with": [], "without": []})
        group["with"].append(w["psi"])
        group["without"].append(wo["psi"])
    rows = []
    for (n_other, eps_other, n1, eps1), g in sorted(groups.items()):
        others = len(withs[0]["sizes"]) - 1
        score_with = collaboration_score([n1] + [n_other] * others, [eps1] + [eps_other] * others)
        score_without = collaboration_score([n_other] * others, [eps_other] * others)
        psi_with, psi_without = statistics.fmean(g["with"]), statistics.fmean(g["without"])
        predicted, measured = score_with < score_without, psi_with < psi_without
        rows.append({"other_size": n_other, "other_epsilon": eps_other, "owner1_size": n1, "owner1_epsilon": eps1,
                     "score_with": score_with, "score_without": score_without, "psi_with": psi_with,
                     "psi_without": psi_without, "predicted_include": predicted, "measured_include": measured,
                     "agree": predicted == measured})
    return rows


def markdown(record: dict[str, Any], data_name: str) -> str:
    base = record["base"]
    lines = [f"# Paper 003: predicted vs measured fitness gap — {data_name}", "",
             f"Protocol `{record['protocol']}`: {len(base['sizes'])} owners, cost {base['cost']}, T = {base['steps']}, "
             f"Ξ = {base['xi']}; every point the mean of {record['spec']['runs']} runs (seeds of the owners' Laplace "
             "noise), simulated backend. Gap = f(θ) − f(θ*) on the owners' pooled data; privacy part = mean gap − the "
             "same run's gap without noise.", ""]
    for s in record["scaling"]:
        cal = s["calibration"]
        lines += [f"## Algorithm {s['algorithm']}", "",
                  f"Fitted log-log slope of the privacy part: over ε **{s['slope_epsilon']:.2f}**, over n "
                  f"**{s['slope_n']:.2f}** (Theorem 2: −2 and −2; Theorem 3 bounds Algorithm 2 by −1 and −1). "
                  f"Prediction before training: c/(n²ε²) with c from one point (n = {cal['n']} per owner, "
                  f"ε = {cal['epsilon']:g}).", "",
                  "| axis | n per owner | ε per owner | privacy part of the gap ± SE | predicted c/(n²ε²) | measured ÷ "
                  "predicted | Theorem 2 bound | ψ |", "|---|---|---|---|---|---|---|---|"]
        for p in s["points"]:
            lines.append(f"| {p['axis']} | {p['n']} | {p['epsilon']:g} | {p['excess']:.4g} ± {p['excess_stderr']:.2g} | "
                         f"{p['predicted']:.4g} | {p['ratio']:.2f} | {_bound(p['bound'])} | "
                         f"{p['psi']:.4g} |")
        lines.append("")
    if record["scenarios"]:
        agree = sum(r["agree"] for r in record["scenarios"])
        lines += ["## Whom to include (paper 003 §IV-A.3)", "",
                  f"Prediction (include owner 1 when it lowers √Σ1/ε²/n) agrees with the measured ψ in **{agree} of "
                  f"{len(record['scenarios'])}** settings.", "",
                  "| owners 2.. n, ε | owner 1 n, ε | score with / without | ψ with | ψ without | predicted | measured |",
                  "|---|---|---|---|---|---|---|"]
        for r in record["scenarios"]:
            lines.append(f"| {r['other_size']}, {r['other_epsilon']:g} | {r['owner1_size']}, {r['owner1_epsilon']:g} | "
                         f"{r['score_with'] / r['score_without']:.3f} | {r['psi_with']:.4g} | {r['psi_without']:.4g} | "
                         f"{'include' if r['predicted_include'] else 'exclude'} | "
                         f"{'include' if r['measured_include'] else 'exclude'} |")
        lines.append("")
    if record["backends"]:
        lines += ["## Owners as party processes", "", "| backend | max |θ − θ_simulated| | ψ | ψ simulated | online s | "
                  "bytes sent (busiest) | rounds |", "|---|---|---|---|---|---|---|"]
        for b in record["backends"]:
            lines.append(f"| {b['backend']} | {b['max_abs_difference']:.3g} | {b['psi']:.5g} | {b['psi_simulated']:.5g} | "
                         f"{b['online_s']:.2f} | {b['bytes_per_party']} | {b['rounds']} |")
        lines.append("")
    return "\n".join(lines)


def _bound(value: float | None) -> str:
    return "–" if value is None else f"{value:.3g}"


def plot(record: dict[str, Any], path: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = 2 + bool(record["scenarios"])
    fig, axes = plt.subplots(1, panels, figsize=(5 * panels, 4))
    for s in record["scaling"]:
        for ax, axis, key, label in ((axes[0], "eps", "epsilon", "ε per owner"), (axes[1], "n", "n", "n per owner")):
            pts = [p for p in s["points"] if p["axis"] == axis]
            xs = [p[key] for p in pts]
            ax.errorbar(xs, [p["excess"] for p in pts], yerr=[p["excess_stderr"] for p in pts], fmt="o",
                        label=f"Algorithm {s['algorithm']} measured")
            ax.plot(xs, [p["predicted"] for p in pts], "--", label=f"Algorithm {s['algorithm']} predicted c/(n²ε²)")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel(label)
            ax.set_ylabel("E f(θ) − f(θ without noise)")
    axes[0].legend(fontsize=7)
    axes[0].set_title("over ε (n fixed)")
    axes[1].set_title("over n (ε fixed)")
    if record["scenarios"]:
        ax = axes[2]
        rs = record["scenarios"]
        ax.scatter([r["score_with"] / r["score_without"] for r in rs], [r["psi_with"] / r["psi_without"] for r in rs],
                   c=["tab:green" if r["agree"] else "tab:red" for r in rs])
        ax.axhline(1, color="grey", lw=0.5)
        ax.axvline(1, color="grey", lw=0.5)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("predicted: score with ÷ without owner 1")
        ax.set_ylabel("measured: ψ with ÷ without owner 1")
        ax.set_title("whom to include (green: prediction right)")
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
