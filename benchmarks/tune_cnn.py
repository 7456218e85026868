"""Hyper-parameter search for DDP-SRM and DP-SGD on paper 002's MNIST CNN (§6.2), simulated and central.

    .venv/bin/python -m benchmarks.tune_cnn --protocol protocols/tune-cnn.toml [--only NAME] [--out PREFIX]

The protocol lists searches: per dataset a base protocol file for each algorithm, the ε values, and a grid over
[training] fields (``c2`` sets C2 = γ together, as the paper does; ``batch0`` is 2·b unless the grid names it).
Every grid point runs at m = 1 (DP-SRM / DP-SGD; DDP-SRM's noise and batches are the same in sum) on the
tuning seeds, with its noise calibrated and certified for its own (b, b0, T, C2, γ) by dp-accounting; the table
ranks by final test error (the model every run reports, its last iterate). Like the paper, the search is not
charged to the privacy budget; the recorded comparison (benchmarks.cnn) uses other seeds.
Writes PREFIX.md and PREFIX.json (default benchmarks/results/tune-cnn).
"""

from __future__ import annotations

import itertools
import multiprocessing
import statistics
from typing import Any

from benchmarks.recording import parse, record

ALGORITHMS = ("srm", "dp-sgd")


def _run(job: tuple[str, str, str, float, dict[str, Any], int]) -> dict[str, Any]:
    import torch

    from mpcdp.jobs.train import plan_from, run_plan

    torch.set_num_threads(1)
    search, algorithm, base, epsilon, point, seed = job
    overrides = dict(point)
    if algorithm == "srm":
        overrides["gamma"] = overrides["c2"]
        overrides.setdefault("batch0", 2 * overrides["batch"])
    plan = plan_from(base, parties=1, backend="simulated", epsilon=epsilon, seed=seed, training_overrides=overrides)
    report = run_plan(plan, curve=False)
    return {"search": search, "algorithm": algorithm, "epsilon": epsilon, "seed": seed, **point,
            "certified_epsilon": report["epsilon"], "sigma": report["sigma"], "iterations": report["iterations"],
            "passes": report["data_passes"], "test_error": report["test_error"], "test_loss": report["test_loss"],
            "wall_s": report["wall_s"], "dataset": report["dataset"]}


def jobs(protocol: dict[str, Any], only: str | None) -> list[tuple]:
    out = []
    for search in protocol["search"]:
        if only and search["name"] != only:
            continue
        for algorithm in ALGORITHMS:
            if algorithm not in search["grid"]:
                continue
            grid = search["grid"][algorithm]
            keys = sorted(grid)
            for epsilon in search["epsilons"]:
                for values in itertools.product(*(grid[k] for k in keys)):
                    for seed in protocol["seeds"]:
                        out.append((search["name"], algorithm, search[algorithm], float(epsilon),
                                    dict(zip(keys, values)), seed))
    return out


def summarize(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean over the tuning seeds per (search, algorithm, ε, grid point), best first within each group."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in runs:
        point = tuple(sorted((k, r[k]) for k in ("batch", "c2", "learning_rate") if k in r))
        groups.setdefault((r["search"], r["algorithm"], r["epsilon"], point), []).append(r)
    rows = [{"search": s, "algorithm": a, "epsilon": e, **dict(point), "seeds": len(rs),
             "certified_epsilon": rs[0]["certified_epsilon"], "sigma": rs[0]["sigma"],
             "iterations": rs[0]["iterations"], "test_error": statistics.fmean(r["test_error"] for r in rs),
             "wall_s": statistics.fmean(r["wall_s"] for r in rs), "dataset": rs[0]["dataset"]}
            for (s, a, e, point), rs in groups.items()]
    return sorted(rows, key=lambda r: (r["search"], r["algorithm"], r["epsilon"], r["test_error"]))


def markdown(rows: list[dict[str, Any]], command: str, seeds: list[int]) -> str:
    lines = ["# DDP-SRM and DP-SGD hyper-parameter search on paper 002's MNIST CNN (central, simulated)", "",
             f"Command: `{command}`; tuning seeds {seeds}; δ = 1e-5, C1 = 1.5; every σ certified by the "
             "accountant of its time (see the stamp below; since `mpcdp-certify/3` the PLD accountant). σ is the noise std on the averaged gradient.", ""]
    for search in dict.fromkeys(r["search"] for r in rows):
        dataset = next(r["dataset"] for r in rows if r["search"] == search)
        lines += [f"## {dataset}", "", "Best per algorithm and ε:", "",
                  "| algorithm | ε (certified) | b | C2 = γ | step | T | σ | test error |", "|---|---|---|---|---|---|---|---|"]
        best: dict[tuple[str, Any], dict[str, Any]] = {}
        for r in rows:
            if r["search"] == search:
                best.setdefault((r["algorithm"], r["epsilon"]), r)
        for r in best.values():
            lines.append(_row(r))
        lines += ["", "Every grid point:", "",
                  "| algorithm | ε (certified) | b | C2 = γ | step | T | σ | test error |", "|---|---|---|---|---|---|---|---|"]
        lines += [_row(r) for r in rows if r["search"] == search]
        lines.append("")
    return "\n".join(lines)


def _row(r: dict[str, Any]) -> str:
    c2 = r.get("c2", "–")
    return (f"| {'dp-srm' if r['algorithm'] == 'srm' else r['algorithm']} | {r['epsilon']} "
            f"({r['certified_epsilon']:.5f}) | {r['batch']} | {c2} | {r['learning_rate']} | {r['iterations']} | "
            f"{r['sigma']:.4g} | {r['test_error']:.4f} |")


def main(argv: list[str] | None = None) -> int:
    import argparse
    import sys

    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--only")
    known, rest = pre.parse_known_args(argv if argv is not None else sys.argv[1:])
    ns, protocol, command = parse(__doc__, "protocols/tune-cnn.toml", "benchmarks/results/tune-cnn", rest)
    if known.only:
        command += f" --only {known.only}"
    todo = jobs(protocol, known.only)
    from tqdm import tqdm

    with multiprocessing.get_context("spawn").Pool(int(protocol.get("workers", 2))) as pool:
        runs = list(tqdm(pool.imap_unordered(_run, todo), total=len(todo), desc="grid"))
    rows = summarize(runs)
    out = ns.out if not known.only else f"{ns.out}-{known.only}"
    record(out, markdown(rows, command, protocol["seeds"]), {"command": command, "runs": runs, "table": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
