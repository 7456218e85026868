"""`mpcdp sweep PROTOCOL.toml`: paper 000's uneven-parties experiment (its Fig. 2 and Figs. 12–16).

m parties in two groups, the larger ``u`` times the smaller (level of non-average u = n_max/n_min); for every u
of the protocol's ``[sweep] size_ratios`` and every variant of ``[sweep] variants`` the training runs on
``seeds`` seeds (simulated noise) and, for the variants with a secure form, on ``mpc_seeds`` seeds with the
noise sampled inside the MPC. A variant is ``algorithm`` or ``algorithm:calibration``:

* ``wd-dp`` — weights n_j/n, one noise draw inside the MPC per step (the form that meets paper 000's Theorem 1);
* ``jayaraman`` — plain averaging of the party averages, noise from the smallest party (Jayaraman et al. 2018);
* ``dp-gd`` — the central baseline (Wang, Ye, Xu 2017) on the pooled data: one party, always simulated;
* ``wd-dp-local:paper`` / ``wd-dp-local:certified`` — paper 000's Algorithm 1 as written (local noise, local
  models released), with Theorem 1's σ (certified ε reported, far above the target) or with each party's σ
  calibrated to its own records.

Reported per (variant, backend, u): test accuracy and optimal gap F(θ) − F(θ*) (θ* the non-private optimum of
the pooled training objective), mean ± std over seeds, σ and the certified ε; a Markdown table, the JSON of
every run, and a PNG of accuracy and optimal gap versus u. Learning rates come from ``[sweep.learning_rate]``
(one value, or one per size ratio, per variant); tune them with ``python -m benchmarks.tune_uneven``.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import statistics
import sys
from typing import Any, Callable

from mpcdp.errors import ConfigError
from mpcdp.validation import check_integer, check_number, read_protocol
from mpcdp.jobs.train import plan_from, run_plan
from mpcdp.learning.algorithms import ALGORITHMS
from mpcdp.jobs.report import markdown_table, mean_pm, save_figure, stamp, write_record, write_text

CENTRAL = "dp-gd"
KEPT = ("test_error", "test_loss", "optimal_gap", "epsilon", "sigma", "sigma_by_party", "epsilon_by_party",
        "sensitivity", "party_sizes", "wall_s", "online_s", "presample_s", "setup_s", "bytes_per_party")


@dataclasses.dataclass(frozen=True)
class Variant:
    algorithm: str
    calibration: str = "certified"

    @classmethod
    def parse(cls, text: str) -> "Variant":
        algorithm, _, calibration = text.partition(":")
        if algorithm not in ALGORITHMS:
            raise ConfigError(f"`variants` entry {text!r}: unknown algorithm {algorithm!r}")
        return cls(algorithm, calibration or "certified")

    @property
    def name(self) -> str:
        return self.algorithm if self.calibration == "certified" else f"{self.algorithm}:{self.calibration}"

    @property
    def secure(self) -> bool:
        """Whether the variant has an mpc form in this sweep (the central baseline and local noise do not)."""
        return self.algorithm != CENTRAL and not ALGORITHMS[self.algorithm].central_only


@dataclasses.dataclass(frozen=True)
class SweepSpec:
    size_ratios: tuple[float, ...]
    variants: tuple[Variant, ...]
    seeds: int
    mpc_seeds: int
    learning_rates: dict[str, tuple[float, ...]]


def spec_from(path: str) -> SweepSpec:
    protocol = read_protocol(path, ("sweep",))
    sweep = protocol["sweep"]
    ratios = tuple(sweep.get("size_ratios", [1]))
    if not ratios:
        raise ConfigError(f"`size_ratios` must be a non-empty list of numbers >= 1. Found {list(ratios)!r}.")
    ratios = tuple(check_number(u, "size_ratios", low=1, low_open=False, note="each entry") for u in ratios)
    variants = tuple(Variant.parse(v) for v in sweep.get("variants", ["wd-dp", "jayaraman", CENTRAL]))
    default_rate = protocol.get("training", {}).get("learning_rate", 0.5)
    rates = {}
    for variant in variants:
        value = sweep.get("learning_rate", {}).get(variant.name, default_rate)
        value = tuple(value) if isinstance(value, list) else (value,) * len(ratios)
        if len(value) != len(ratios):
            raise ConfigError(f"`learning_rate` for {variant.name!r} has {len(value)} values for {len(ratios)} "
                              f"size ratios")
        rates[variant.name] = tuple(float(v) for v in value)
    seeds = check_integer(sweep.get("seeds", 5), "seeds", where=" in [sweep]")
    mpc_seeds = check_integer(sweep.get("mpc_seeds", 0), "mpc_seeds", minimum=0, where=" in [sweep]")
    return SweepSpec(ratios, variants, seeds, mpc_seeds, rates)


def runs_of(spec: SweepSpec, *, seeds: list[int], mpc_seeds: list[int]) -> list[tuple[Variant, str, float, float, int]]:
    """Every (variant, backend, u, learning rate, seed) the sweep trains."""
    todo = []
    for k, u in enumerate(spec.size_ratios):
        for variant in spec.variants:
            rate = spec.learning_rates[variant.name][k]
            todo += [(variant, "simulated", u, rate, seed) for seed in seeds]
            if variant.secure:
                todo += [(variant, "mpc", u, rate, seed) for seed in mpc_seeds]
    return todo


def train_one(path: str, variant: Variant, backend: str, u: float, rate: float, seed: int) -> dict[str, Any]:
    central = variant.algorithm == CENTRAL
    plan = plan_from(path, backend=backend, algorithm=variant.algorithm, size_ratio=1.0 if central else u,
                     parties=1 if central else None, seed=seed, calibration=variant.calibration,
                     training_overrides={"learning_rate": rate})
    report = run_plan(plan, curve=False)
    return {"variant": variant.name, "backend": backend, "u": u, "learning_rate": rate, "seed": seed,
            "accuracy": 1 - report["test_error"], **{k: report.get(k) for k in KEPT}}


def _mean_std(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def summarize(runs: list[dict[str, Any]]) -> dict[tuple[str, str, float], dict[str, Any]]:
    groups: dict[tuple[str, str, float], list[dict]] = {}
    for run in runs:
        groups.setdefault((run["variant"], run["backend"], run["u"]), []).append(run)
    summary = {}
    for key, members in groups.items():
        sigmas = [r["sigma"] if r["sigma"] is not None else max(r["sigma_by_party"]) for r in members]
        summary[key] = {"accuracy": _mean_std([r["accuracy"] for r in members]),
                        "optimal_gap": _mean_std([r["optimal_gap"] for r in members]),
                        "epsilon": max(r["epsilon"] for r in members), "sigma": max(sigmas),
                        "sensitivity": members[0].get("sensitivity"), "seeds": len(members),
                        "learning_rate": members[0]["learning_rate"]}
    return summary


def agreement(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Secure vs simulated, paired by seed (same split, different noise draws), per (variant, u): within seed
    noise when |mean difference| <= 2·std(differences)/√k + the simulated seed std (``mpcdp compare``'s rule)."""
    by_key: dict[tuple[str, float], dict[str, dict[int, float]]] = {}
    for run in runs:
        by_key.setdefault((run["variant"], run["u"]), {}).setdefault(run["backend"], {})[run["seed"]] = \
            run["accuracy"]
    rows = []
    for (variant, u), backends in sorted(by_key.items()):
        if "mpc" not in backends:
            continue
        seeds = sorted(set(backends["mpc"]) & set(backends["simulated"]))
        diffs = [backends["mpc"][s] - backends["simulated"][s] for s in seeds]
        if not diffs:
            continue
        mean, std = _mean_std(diffs)
        seed_std = _mean_std(list(backends["simulated"].values()))[1]
        rows.append({"variant": variant, "u": u, "pairs": len(diffs), "difference": mean, "difference_std": std,
                     "seed_std": seed_std, "within_noise": abs(mean) <= 2 * std / len(diffs) ** 0.5 + seed_std})
    return rows


def pooled_difference(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """mpc − simulated accuracy over every (variant, u, seed) pair: mean, standard error, |mean| <= 2·SE."""
    simulated = {(r["variant"], r["u"], r["seed"]): r["accuracy"] for r in runs if r["backend"] == "simulated"}
    diffs = [r["accuracy"] - simulated[(r["variant"], r["u"], r["seed"])] for r in runs
             if r["backend"] == "mpc" and (r["variant"], r["u"], r["seed"]) in simulated]
    if not diffs:
        return {"pairs": 0, "mean": 0.0, "stderr": 0.0, "within_noise": None}
    mean, std = _mean_std(diffs)
    stderr = std / len(diffs) ** 0.5
    return {"pairs": len(diffs), "mean": mean, "stderr": stderr, "within_noise": abs(mean) <= 2 * stderr}


def rerender(out: str) -> dict[str, Any]:
    """Rebuild PREFIX.md and PREFIX.png from PREFIX.json (no training)."""
    prefix = pathlib.Path(out)
    payload = json.loads(prefix.with_suffix(".json").read_text())
    spec = spec_from(payload["protocol"])
    header = {k: payload[k] for k in ("protocol", "name", "dataset", "parties", "epsilon", "delta", "steps", "c1",
                                      "features", "command")}
    runs = payload["runs"]
    summary = summarize(runs)
    checks = agreement(runs)
    markdown = render(header, spec, summary, checks, runs)
    if "mechanism" in payload:
        markdown = markdown.rstrip("\n") + "\n\n" + stamp(payload)
    write_text(prefix.with_suffix(".md"), markdown)
    payload.update(summary=[{"variant": k[0], "backend": k[1], "u": k[2], **v} for k, v in summary.items()],
                   agreement=checks, pooled_agreement=pooled_difference(runs))
    write_text(prefix.with_suffix(".json"), json.dumps(payload, indent=1) + "\n")
    plot(header, spec, summary, prefix.with_suffix(".png"))
    return {"markdown": markdown, "png": str(prefix.with_suffix(".png")), **payload}


def run_sweep(path: str, *, out: str, seeds: int | None = None, mpc_seeds: int | None = None,
              command: str | None = None, progress: Callable[[int, int, str], None] | None = None) -> dict[str, Any]:
    spec = spec_from(path)
    seed_list = list(range(spec.seeds if seeds is None else seeds))
    mpc_list = list(range(spec.mpc_seeds if mpc_seeds is None else mpc_seeds))
    todo = runs_of(spec, seeds=seed_list, mpc_seeds=mpc_list)
    runs = []
    for i, (variant, backend, u, rate, seed) in enumerate(todo):
        if progress:
            progress(i, len(todo), f"{variant.name} {backend} u={u:g} seed {seed}")
        runs.append(train_one(path, variant, backend, u, rate, seed))
    if progress:
        progress(len(todo), len(todo), "done")
    plan = plan_from(path, backend="simulated")
    header = {"protocol": path, "name": plan.name, "dataset": plan.dataset, "parties": plan.parties,
              "epsilon": plan.epsilon, "delta": plan.delta, "steps": plan.params.steps, "c1": plan.params.c1,
              "features": "rows scaled to unit L2 norm" if plan.normalize_rows else "as shipped",
              "command": command or f"mpcdp sweep {path} --out {out}"}
    summary = summarize(runs)
    checks = agreement(runs)
    markdown = render(header, spec, summary, checks, runs)
    payload = {**header, "size_ratios": list(spec.size_ratios), "variants": [v.name for v in spec.variants],
               "summary": [{"variant": k[0], "backend": k[1], "u": k[2], **v} for k, v in summary.items()],
               "agreement": checks, "pooled_agreement": pooled_difference(runs), "runs": runs}
    written = write_record(out, payload, markdown, lambda _, png: plot(header, spec, summary, png))
    return {"markdown": written["markdown"], "png": written["png"], **written["record"]}


def render(header: dict, spec: SweepSpec, summary: dict, checks: list[dict], runs: list[dict]) -> str:
    ratios = spec.size_ratios
    from mpcdp.data.registry import load

    name = load(header["dataset"]).name
    lines = [f"# Uneven parties (paper 000 Fig. 2): {name}, m = {header['parties']}, ε = {header['epsilon']:g}, "
             f"δ = {header['delta']:g}, T = {header['steps']}, G = C = {header['c1']:g}", "",
             f"Command: `{header['command']}`. Protocol: `{header['protocol']}`. Features: {header['features']}.",
             "Each cell: mean ± std over seeds (simulated: seeds 0…k−1 with noise from the OS CSPRNG; mpc: the same "
             "splits with the noise sampled inside the MPC). `dp-gd` is the central baseline on the pooled data "
             "(one party; u does not change it).", ""]
    for metric, title in (("accuracy", "Test accuracy"),
                          ("optimal_gap", "Optimal gap F(θ) − F(θ*) on the training set")):
        lines += [f"## {title}", "", "| variant | backend | " + " | ".join(f"u = {u:g}" for u in ratios) + " |",
                  "|---|---|" + "---|" * len(ratios)]
        for variant in spec.variants:
            for backend in ("simulated", "mpc"):
                cells = [summary.get((variant.name, backend, u)) for u in ratios]
                if not any(cells):
                    continue
                lines.append(f"| {variant.name} | {backend} | " + " | ".join(
                    "—" if c is None else mean_pm(*c[metric]) + f" (n={c['seeds']})" * (backend == "mpc")
                    for c in cells) + " |")
        lines.append("")
    lines += ["## Noise and certified ε (simulated runs; the mpc runs use the same σ)", "",
              "| variant | " + " | ".join(f"u = {u:g}: σ / certified ε / η" for u in ratios) + " |",
              "|---|" + "---|" * len(ratios)]
    for variant in spec.variants:
        cells = [summary.get((variant.name, "simulated", u)) for u in ratios]
        lines.append(f"| {variant.name} | " + " | ".join(
            "—" if c is None else f"{c['sigma']:.4g} / {c['epsilon']:.4g} / {c['learning_rate']:g}" for c in cells)
            + " |")
    lines += ["", "σ: the per-coordinate noise std of each step (local variants: the largest party σ_j); certified ε:"
              " the exact μ-GDP conversion (local variants: the worst party's).", ""]
    wd = [summary[("wd-dp", "simulated", u)] for u in ratios if ("wd-dp", "simulated", u) in summary]
    jay = [summary[("jayaraman", "simulated", u)] for u in ratios if ("jayaraman", "simulated", u) in summary]
    lines += ["## Acceptance", ""]
    if len(wd) == len(ratios) and 1.0 in ratios:
        base = wd[ratios.index(1.0)]["accuracy"][0]
        spread = max(abs(c["accuracy"][0] - base) for c in wd)
        lines.append(f"- WD-DP accuracy: largest |acc(u) − acc(1)| = {100 * spread:.2f} points "
                     f"({'within' if spread <= 0.01 else 'NOT within'} 1 point).")
    if len(jay) == len(ratios) and 1.0 in ratios:
        base = jay[ratios.index(1.0)]["accuracy"][0]
        lines.append("- Jayaraman accuracy: acc(1) − acc(u) = " + ", ".join(
            f"{100 * (base - c['accuracy'][0]):.2f} (u = {u:g})" for u, c in zip(ratios, jay)) + " points.")
    if checks:
        inside = sum(c["within_noise"] for c in checks)
        lines.append(f"- Secure vs simulated accuracy, paired by seed: {inside} of {len(checks)} (variant, u) "
                     f"cells within seed noise (|mean diff| <= 2·std/√k + seed std).")
        pooled = pooled_difference(runs)
        lines.append(f"- Pooled over every secure run: mpc − simulated accuracy "
                     f"{mean_pm(pooled['mean'], pooled['stderr'], signed=True)} (standard error, {pooled['pairs']} pairs; "
                     f"{'within' if pooled['within_noise'] else 'NOT within'} 2 standard errors of 0).")
        lines += ["", markdown_table(
            ["variant", "u", "pairs", "mpc − simulated accuracy", "seed std", "within"],
            [[c["variant"], f"{c['u']:g}", c["pairs"], mean_pm(c["difference"], c["difference_std"], signed=True),
              f"{c['seed_std']:.4f}", "yes" if c["within_noise"] else "NO"] for c in checks]).rstrip("\n")]
    mpc = [r for r in runs if r["backend"] == "mpc"]
    if mpc:
        lines += ["", f"Secure runs: online {statistics.fmean(r['online_s'] for r in mpc):.1f} s, noise pre-sampling "
                  f"{statistics.fmean(r['presample_s'] for r in mpc):.1f} s, process set-up "
                  f"{statistics.fmean(r['setup_s'] for r in mpc):.1f} s, "
                  f"{statistics.fmean(r['bytes_per_party'] for r in mpc) / 1e6:.1f} MB per party (means over "
                  f"{len(mpc)} runs)."]
    return "\n".join(lines) + "\n"


def plot(header: dict, spec: SweepSpec, summary: dict, path: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    ratios = list(spec.size_ratios)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for index, variant in enumerate(spec.variants):
        worst = max((c["epsilon"] for (v, b, _), c in summary.items() if v == variant.name), default=0.0)
        for backend, style in (("simulated", "-o"), ("mpc", "s")):
            cells = [summary.get((variant.name, backend, u)) for u in ratios]
            points = [(u, c) for u, c in zip(ratios, cells) if c is not None]
            if not points:
                continue
            label = variant.name + (" (mpc)" if backend == "mpc" else "")
            if worst > header["epsilon"] * 1.001:
                label += f" (certified ε up to {worst:.2g})"
            for ax, metric in zip(axes, ("accuracy", "optimal_gap")):
                xs = [u for u, _ in points]
                ys = [c[metric][0] for _, c in points]
                errs = [c[metric][1] for _, c in points]
                ax.errorbar(xs, ys, yerr=errs, fmt=style, capsize=3, label=label, color=colours[index % len(colours)],
                            fillstyle="none" if backend == "mpc" else "full", alpha=0.85,
                            markersize=8 if backend == "mpc" else 5)
    axes[0].set_ylabel("test accuracy")
    axes[1].set_ylabel("optimal gap F(θ) − F(θ*)")
    axes[1].set_yscale("log")
    for ax in axes:
        ax.set_xlabel("level of non-average u = n_max / n_min")
        ax.set_xticks(ratios)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{header['name']}: m = {header['parties']}, ε = {header['epsilon']:g}, δ = {header['delta']:g}")
    fig.tight_layout()
    save_figure(fig, path, dpi=120)


def main_progress() -> Callable[[int, int, str], None]:
    from tqdm import tqdm

    bar = tqdm(total=1, unit="run", file=sys.stderr)

    def update(done: int, total: int, what: str) -> None:
        bar.total = total
        bar.set_description(what)
        bar.update(done - bar.n)
        if done == total:
            bar.close()

    return update
