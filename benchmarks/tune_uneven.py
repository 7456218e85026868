"""Learning rates for the uneven-parties sweep (paper 000 Fig. 2), chosen on tuning seeds, never the reported ones.

    .venv/bin/python -m benchmarks.tune_uneven --protocol protocols/uneven-a9a.toml \
        --out benchmarks/results/tune-uneven-a9a [--seeds 100 101] [--rates 0.01 0.05 0.1 0.5 1 2 4]

For every variant of the protocol's [sweep] and every size ratio u, the simulated run at every learning rate of
the grid (paper 000 picks η by cross-validation from {0.01, 0.05, 0.1, 0.5, 1}; the default grid adds 2 and 4),
on the tuning seeds; the rate with the highest mean test accuracy wins (ties: the lower optimal gap). The central
baseline (dp-gd) does not depend on u and is tuned once. Prints two [sweep.learning_rate] tables to paste into
the protocol: one rate per (variant, u), and one rate per variant (the best mean accuracy averaged over every u —
for data where the seed noise swamps the differences between rates). Tuning on test accuracy follows the
paper; it is not charged to the privacy budget. ``--rerender`` rebuilds the tables from the recorded JSON.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys

from tqdm import tqdm

from benchmarks.recording import record
from mpcdp.jobs.sweep import CENTRAL, spec_from, train_one


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--protocol", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--seeds", type=int, nargs="+", default=[100, 101])
    parser.add_argument("--rates", type=float, nargs="+", default=[0.01, 0.05, 0.1, 0.5, 1, 2, 4])
    parser.add_argument("--rerender", action="store_true", help="rebuild the tables from OUT.json, train nothing")
    ns = parser.parse_args(argv)
    spec = spec_from(ns.protocol)
    cells = []
    for variant in spec.variants:
        ratios = spec.size_ratios[:1] if variant.algorithm == CENTRAL else spec.size_ratios
        cells += [(variant, u, rate) for u in ratios for rate in ns.rates]
    if ns.rerender:
        recorded = json.loads(pathlib.Path(ns.out).with_suffix(".json").read_text())
        return _render(ns, spec, recorded["rows"], recorded["command"])
    rows = []
    with tqdm(total=len(cells) * len(ns.seeds), unit="run", file=sys.stderr) as bar:
        for variant, u, rate in cells:
            bar.set_description(f"{variant.name} u={u:g} η={rate:g}")
            runs = []
            for seed in ns.seeds:
                runs.append(train_one(ns.protocol, variant, "simulated", u, rate, seed))
                bar.update()
            rows.append({"variant": variant.name, "u": u, "learning_rate": rate,
                         "accuracy": statistics.fmean(r["accuracy"] for r in runs),
                         "accuracy_std": statistics.stdev(r["accuracy"] for r in runs) if len(runs) > 1 else 0.0,
                         "optimal_gap": statistics.fmean(r["optimal_gap"] for r in runs)})
    command = ("python -m benchmarks.tune_uneven " + " ".join(argv if argv is not None else sys.argv[1:])).strip()
    return _render(ns, spec, rows, command)


def _render(ns: argparse.Namespace, spec, rows: list[dict], command: str) -> int:
    best: dict[str, dict[float, dict]] = {}
    for row in rows:
        current = best.setdefault(row["variant"], {}).get(row["u"])
        if current is None or (row["accuracy"], -row["optimal_gap"]) > (current["accuracy"], -current["optimal_gap"]):
            best[row["variant"]][row["u"]] = row
    lines = [f"# Learning-rate tuning for `{ns.protocol}`", "",
             f"Command: `{command}`. Tuning seeds {ns.seeds}; simulated backend; mean test accuracy (± std) and "
             "mean optimal gap per learning rate. **Bold**: the chosen rate.", "",
             "| variant | u | " + " | ".join(f"η = {r:g}" for r in ns.rates) + " |",
             "|---|---|" + "---|" * len(ns.rates)]
    for variant in spec.variants:
        for u in sorted(best.get(variant.name, {})):
            cells_ = []
            for rate in ns.rates:
                row = next(r for r in rows if r["variant"] == variant.name and r["u"] == u and r["learning_rate"] == rate)
                text = f"{row['accuracy']:.4f} ± {row['accuracy_std']:.4f} / {row['optimal_gap']:.3g}"
                cells_.append(f"**{text}**" if best[variant.name][u] is row else text)
            lines.append(f"| {variant.name} | {u:g} | " + " | ".join(cells_) + " |")
    snippet = ["[sweep.learning_rate]"]
    for variant in spec.variants:
        chosen = best[variant.name]
        values = [chosen[u]["learning_rate"] for u in sorted(chosen)]
        if variant.algorithm == CENTRAL:
            snippet.append(f'"{variant.name}" = {values[0]:g}')
        else:
            snippet.append(f'"{variant.name}" = [{", ".join(f"{v:g}" for v in values)}]')
    pooled = ["[sweep.learning_rate]"]
    for variant in spec.variants:
        mine = [r for r in rows if r["variant"] == variant.name]
        rates = sorted({r["learning_rate"] for r in mine})
        score = {rate: statistics.fmean(r["accuracy"] for r in mine if r["learning_rate"] == rate) for rate in rates}
        pooled.append(f'"{variant.name}" = {max(rates, key=lambda rate: score[rate]):g}  # mean accuracy over u '
                      f'{max(score.values()):.4f}')
    edge = [f"{v} u={u:g}" for v, by_u in best.items() for u, r in by_u.items()
            if r["learning_rate"] in (min(ns.rates), max(ns.rates))]
    lines += ["", "Chosen per (variant, u):", "", "```toml", *snippet, "```", "",
              f"Choices at the grid's edge: {', '.join(edge) if edge else 'none'}.", "",
              "Chosen per variant (best accuracy averaged over every u):", "", "```toml", *pooled, "```"]
    record(ns.out, "\n".join(lines) + "\n", {"command": command, "rows": rows, "snippet": "\n".join(snippet),
                                            "pooled": "\n".join(pooled)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
