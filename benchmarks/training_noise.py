"""The two training noise modes side by side on one protocol: the exact discrete Gaussian sampled inside the MPC
(`dgauss`) and every party's own discrete Gaussian (`distributed`, private against `colluders`).

    .venv/bin/python -m benchmarks.training_noise [--protocol protocols/quickstart-a9a.toml] [--seeds 3]

Secure runs (party processes), the same seeds for both modes; per mode: certified ε and δ, the in-MPC noise
pre-sampling time, the online time, bytes sent by the busiest party and by the dealer, and the test loss.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys

from benchmarks import recording
from mpcdp.accounting.distributed_noise import MECHANISM as DISTRIBUTED_MECHANISM
from mpcdp.jobs.report import markdown_table, mean_pm
from mpcdp.jobs.train import plan_from, run_plan
from mpcdp.learning.mechanisms import NoiseChoice


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--protocol", default="protocols/quickstart-a9a.toml")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--colluders", type=int, default=1)
    parser.add_argument("--out", default="benchmarks/results/training-noise")
    ns = parser.parse_args(argv)
    command = ("python -m benchmarks.training_noise " + " ".join(argv if argv is not None else sys.argv[1:])).strip()
    rows, runs = [], []
    for choice in (NoiseChoice(), NoiseChoice("distributed", ns.colluders)):
        reports = []
        for seed in range(ns.seeds):
            plan = dataclasses.replace(plan_from(ns.protocol, backend="mpc", seed=seed), noise=choice)
            report = run_plan(plan, curve=False)
            report.pop("test_error_curve")
            reports.append(report)
        runs += reports
        mean = lambda key: statistics.fmean(r[key] for r in reports)  # noqa: E731
        spread = lambda key: statistics.stdev(r[key] for r in reports) if len(reports) > 1 else 0.0  # noqa: E731
        rows.append([choice.mode + (f" (t = {choice.colluders})" if choice.colluders else ""),
                     f"{reports[0]['epsilon']:.5f}", f"{reports[0]['delta_certified']:.4g}",
                     f"{mean('presample_s'):.3f}", f"{mean('online_s'):.3f}",
                     f"{mean('bytes_per_party') / 1e6:.2f}", f"{statistics.fmean(r['dealer_bytes'] or 0 for r in reports) / 1e6:.2f}",
                     mean_pm(mean("test_loss"), spread("test_loss"))])
    markdown = (f"# Training noise modes on `{ns.protocol}` (secure, {ns.seeds} seeds)\n\nCommand: `{command}`\n\n"
                + markdown_table(["noise mode", "certified ε", "certified δ", "pre-sampling s", "online s",
                                  "MB sent (busiest party)", "dealer MB", "test loss mean ± std"], rows)
                + f"\nThe `distributed` row's mechanism: {DISTRIBUTED_MECHANISM}; certified by RDP only "
                  "(`mpcdp.accounting.distributed_noise`). The stamp below names the `dgauss` row's.\n")
    recording.record(ns.out, markdown, {"command": command, "rows": rows, "runs": runs})
    return 0


if __name__ == "__main__":
    sys.exit(main())
