"""Papers 003 and 004: ``mpcdp collab`` and ``mpcdp decentralized`` (each command's parser beside its handler)."""

from __future__ import annotations

import argparse
import json
import sys

from mpcdp.errors import ConfigError


def _paper_parser(sub: argparse._SubParsersAction, name: str, *, summary: str, backends: str, sweep: str,
                  runs: str) -> argparse.ArgumentParser:
    """A paper's command with the options both share: the protocol, --backend, --seed, and --sweep with its
    --out and --runs."""
    parser = sub.add_parser(name, help=summary)
    parser.add_argument("protocol")
    parser.add_argument("--backend", help=f"{backends} (mpcdp.execution)")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--sweep", action="store_true", help=sweep)
    parser.add_argument("--out", help="PREFIX for the sweep's .md/.json/.png")
    parser.add_argument("--runs", type=int, help=f"{runs} (default: the protocol's)")
    return parser


def _sweep_command(ns: argparse.Namespace, run_sweep) -> int:
    """`--sweep --out PREFIX [--runs N]` of `collab` and `decentralized`: run, print the table and the paths."""
    from mpcdp.jobs.sweep import main_progress

    if not ns.out:
        raise ConfigError("`--sweep` needs `--out PREFIX` (where the table, JSON and PNG go).")
    result = run_sweep(ns.protocol, out=ns.out, runs=ns.runs, progress=main_progress())
    print(result["markdown"], file=sys.stderr)
    print(json.dumps({"table": ns.out + ".md", "runs": ns.out + ".json", "plot": result["png"]}))
    return 0


def _collab_parser(sub: argparse._SubParsersAction) -> None:
    """``mpcdp collab``: paper 003's Laplace gradient queries (:func:`_cmd_collab`)."""
    collab = _paper_parser(sub, "collab", summary="paper 003: owners answer gradient queries with Laplace noise; the "
                           "fitness gap predicted (Theorems 2-3), then measured; --sweep for the figures",
                           backends="simulated, processes or mpc",
                           sweep="predicted vs measured over ε, n and owner inclusion", runs="runs per sweep point")
    collab.set_defaults(func=_cmd_collab)


def _cmd_collab(ns: argparse.Namespace) -> int:
    if ns.sweep:
        from mpcdp.jobs.collab_sweep import run_sweep

        return _sweep_command(ns, run_sweep)
    from mpcdp.jobs.collab import plan_from, prediction, problem_of, run_plan

    plan = plan_from(ns.protocol, backend=ns.backend, seed=ns.seed)
    predicted = prediction(plan, problem_of(plan))
    bound = "n/a" if predicted["bound"] is None else f"{predicted['bound']:.4g}"
    print(f"predicted before training (Theorem {predicted['theorem']}): gap <= {bound}; "
          f"collaboration score √Σ1/ε²/n = {predicted['score']:.4g}", file=sys.stderr)
    report = run_plan(plan)
    report.pop("final")
    print(json.dumps(report))
    return 0


def _decentralized_parser(sub: argparse._SubParsersAction) -> None:
    """``mpcdp decentralized``: paper 004's hand-on training (:func:`_cmd_decentralized`)."""
    decentral = _paper_parser(sub, "decentralized", summary="paper 004: nodes hand a public model on, each adding its "
                              "own Gaussian noise (Algorithm 1, Deep-Q Algorithm 2, DP-SGD-5)",
                              backends="simulated or processes",
                              sweep="accuracy vs ε for the three methods (table, PNG)", runs="seeds per sweep point")
    decentral.add_argument("--method", choices=["algorithm1", "algorithm2", "dpsgd5", "noiseless"])
    decentral.add_argument("--epsilon", type=float)
    decentral.set_defaults(func=_cmd_decentralized)


def _cmd_decentralized(ns: argparse.Namespace) -> int:
    if ns.sweep:
        from mpcdp.jobs.decentralized_sweep import run_sweep

        return _sweep_command(ns, run_sweep)
    from mpcdp.jobs.decentralized import plan_from, run_method

    plan = plan_from(ns.protocol, backend=ns.backend, seed=ns.seed, epsilon=ns.epsilon,
                     methods=ns.method and [ns.method])
    for method in plan.methods:
        report = run_method(plan, method)
        for key in ("w", "local_models"):
            report.pop(key, None)
        print(json.dumps(report))
    return 0
