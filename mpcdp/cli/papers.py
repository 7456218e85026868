"""Papers 003 and 004: ``mpcdp collab`` and ``mpcdp decentralized`` (each command's parser beside its handler)."""

from __future__ import annotations

import argparse
import json
import sys

from mpcdp.cli.training import _sweep_command


def _collab_parser(sub: argparse._SubParsersAction) -> None:
    """``mpcdp collab``: paper 003's Laplace gradient queries (:func:`_cmd_collab`)."""
    collab = sub.add_parser("collab", help="paper 003: owners answer gradient queries with Laplace noise; the fitness "
                                           "gap predicted (Theorems 2-3), then measured; --sweep for the figures")
    collab.add_argument("protocol")
    collab.add_argument("--backend", help="simulated, processes or mpc (mpcdp.execution)")
    collab.add_argument("--seed", type=int)
    collab.add_argument("--sweep", action="store_true", help="predicted vs measured over ε, n and owner inclusion")
    collab.add_argument("--out", help="PREFIX for the sweep's .md/.json/.png")
    collab.add_argument("--runs", type=int, help="runs per sweep point (default: the protocol's)")
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
    decentral = sub.add_parser("decentralized", help="paper 004: nodes hand a public model on, each adding its own "
                               "Gaussian noise (Algorithm 1, Deep-Q Algorithm 2, DP-SGD-5)")
    decentral.add_argument("protocol")
    decentral.add_argument("--backend", help="simulated or processes (mpcdp.execution)")
    decentral.add_argument("--method", choices=["algorithm1", "algorithm2", "dpsgd5", "noiseless"])
    decentral.add_argument("--epsilon", type=float)
    decentral.add_argument("--seed", type=int)
    decentral.add_argument("--sweep", action="store_true", help="accuracy vs ε for the three methods (table, PNG)")
    decentral.add_argument("--out", help="PREFIX for the sweep's .md/.json/.png")
    decentral.add_argument("--runs", type=int, help="seeds per sweep point (default: the protocol's)")
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
