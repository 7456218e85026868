"""Reference points for a9a's Table 2 numbers: the non-private optimum and where per-example clipping stops.

    .venv/bin/python -m benchmarks.a9a_reference

* The non-private optimum of paper 002's objective (logistic loss + λ·Σθ²/(1+θ²), λ = 1e-3) on the
  training set (:func:`mpcdp.learning.logreg.optimum`): its test objective (the paper's "test error"
  column), the regulariser's share, the misclassification rate.
* The fixed point of non-private full-batch gradient descent on per-example gradients clipped to C (the
  mean of clip_C(∇f_i)), for C ∈ {1, 2} (§6.1's clip and the one the Table 2 files use): every algorithm
  that clips at C and adds zero-mean noise drifts towards this point, not towards the optimum, so its test
  objective is a floor for them (up to luck).
  a9a rows have 13–14 ones (‖x‖ ∈ [3.32, 3.74]), so C = 1 clips almost every example's gradient.
"""

from __future__ import annotations

import argparse
import sys

import torch

from benchmarks.recording import record
from mpcdp.data.registry import load
from mpcdp.learning.clipping import clip_rows
from mpcdp.learning.logreg import LAMBDA, error_rate, loss, optimum, per_example_gradients


def clipped_fixed_point(x: torch.Tensor, y: torch.Tensor, c: float, steps: int, rate: float) -> torch.Tensor:
    theta = torch.zeros(x.shape[1], dtype=torch.float64)
    for _ in range(steps):
        theta = theta - rate * clip_rows(per_example_gradients(theta, x, y), c).mean(0)
    return theta


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--out", default="benchmarks/results/a9a-reference")
    ns = parser.parse_args(argv)
    data = load("a9a")
    x, y = torch.from_numpy(data.x_train).double(), torch.from_numpy(data.y_train).double()
    x_test, y_test = torch.from_numpy(data.x_test).double(), torch.from_numpy(data.y_test).double()
    norms = x.norm(dim=1)

    def regulariser(theta: torch.Tensor) -> float:
        return LAMBDA * float((theta**2 / (1 + theta**2)).sum())

    rows = []
    best = optimum(x, y)
    rows.append({"point": "non-private optimum (Newton; L-BFGS agrees to 1e-11)",
                 "test_objective": loss(best, x_test, y_test).item(),
                 "regulariser": regulariser(best), "test_error": error_rate(best, x_test, y_test),
                 "train_objective": loss(best, x, y).item()})
    for c in (1.0, 2.0):
        theta = clipped_fixed_point(x, y, c, ns.steps, rate=4.0)
        rows.append({"point": f"clipped GD fixed point, C = {c:g} ({ns.steps} steps, rate 4)",
                     "test_objective": loss(theta, x_test, y_test).item(), "regulariser": regulariser(theta),
                     "test_error": error_rate(theta, x_test, y_test), "train_objective": loss(theta, x, y).item()})
    command = ("python -m benchmarks.a9a_reference " + " ".join(argv if argv is not None else sys.argv[1:])).strip()
    lines = ["# a9a reference points for paper 002 Table 2", "", f"Command: `{command}`. Row norms of the training "
             f"features: {norms.min().item():.3f} … {norms.max().item():.3f}.", "",
             "| point | test objective | of which regulariser | misclassification | train objective |",
             "|---|---|---|---|---|"]
    lines += [f"| {r['point']} | {r['test_objective']:.4f} | {r['regulariser']:.4f} | {r['test_error']:.4f} | "
              f"{r['train_objective']:.4f} |" for r in rows]
    record(ns.out, "\n".join(lines) + "\n", {"command": command, "rows": rows}, in_mpc_noise=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
