"""Per-example gradients of paper 002's MNIST CNN (torch.func vmap of grad): float32 against float64 network
arithmetic, one thread, in one run (the ratio is what the float32 choice in mpcdp.learning.cnn rests on).

    .venv/bin/python -m benchmarks.cnn_speed [--out benchmarks/results/cnn-speed]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch
from torch.func import grad, vmap

from benchmarks.recording import record
from mpcdp.data.mnist import load_mnist_5k
from mpcdp.learning.paper_networks import MNIST_CNN


def per_example_seconds(dtype: torch.dtype, batch: int, repeats: int) -> float:
    data = load_mnist_5k()
    x = torch.from_numpy(data.x_train[:batch]).to(dtype)
    y = torch.from_numpy(data.y_train[:batch]).long()
    theta = MNIST_CNN.init(0).to(dtype)

    def one(t, xi, yi):
        return torch.nn.functional.cross_entropy(MNIST_CNN.forward(MNIST_CNN.unflatten(t), xi.unsqueeze(0)),
                                                 yi.unsqueeze(0))

    fn = vmap(grad(one), in_dims=(None, 0, 0))
    fn(theta, x[:8], y[:8])  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(theta, x, y)
        times.append(time.perf_counter() - start)
    return statistics.median(times) / batch


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="benchmarks/results/cnn-speed")
    parser.add_argument("--repeats", type=int, default=5)
    ns = parser.parse_args(argv)
    torch.set_num_threads(1)
    rows = []
    for batch in (256, 512):
        f64 = per_example_seconds(torch.float64, batch, ns.repeats)
        f32 = per_example_seconds(torch.float32, batch, ns.repeats)
        rows.append({"batch": batch, "float64_ms": f64 * 1e3, "float32_ms": f32 * 1e3, "ratio": f64 / f32})
    command = "python -m benchmarks.cnn_speed " + " ".join(argv if argv is not None else sys.argv[1:])
    lines = ["# MNIST CNN per-example gradients: float64 vs float32 network arithmetic (1 thread)", "",
             f"Command: `{command.strip()}`; median of {ns.repeats} repeats; torch.func vmap(grad).", "",
             "| batch | float64 ms/example | float32 ms/example | float64 ÷ float32 |", "|---|---|---|---|"]
    lines += [f"| {r['batch']} | {r['float64_ms']:.3f} | {r['float32_ms']:.3f} | {r['ratio']:.2f}× |" for r in rows]
    record(ns.out, "\n".join(lines) + "\n", {"command": command.strip(), "rows": rows}, in_mpc_noise=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
