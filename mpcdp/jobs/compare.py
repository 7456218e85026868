"""`mpcdp compare`: the same training with secure (mpc) and with simulated noise, on the same seeds.

Both backends run the same algorithm on the same batches (seeded per party: the secure runs are made
``reproducible``, with its warning); they differ in where the sum and the noise happen, so their results should differ by seed-to-seed noise only.
Both use the same noise; the secure runs' batches follow the public seed, so their reports certify that noise
without amplification by subsampling (``epsilon_mpc_reproducible``), and ``epsilon`` is the protocol's
certificate with secret batches (the simulated runs'). Reported: mean ± std over
seeds of test error, test loss and wall time per backend, the paired difference, whether it is within
seed noise (|mean difference| <= 2·std of the differences/√k + the pooled seed std), and a PNG of test error
over iterations for both backends (mean over seeds). The record (DIR/compare.json, DIR/compare.md) goes through
:func:`mpcdp.jobs.report.write_record`, stamped with the mechanism of the runs compared.
"""

from __future__ import annotations

import pathlib
import statistics
from typing import Any

import numpy as np

from mpcdp.jobs.report import save_figure, write_record
from mpcdp.jobs.train import plan_from, run_plan

METRICS = ("test_error", "test_loss", "test_error_last", "test_loss_last", "test_loss_average", "optimal_gap", "wall_s")


def _mean_std(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def compare(protocol: str, *, seeds: int, parties: int | None = None, epsilon: float | None = None,
            out: str = "compare-out", algorithm: str | None = None, size_ratio: float | None = None,
            own_data=None) -> dict[str, Any]:
    """``own_data``: every party's files, for a protocol without ``dataset``
    (:class:`~mpcdp.jobs.own_data_simulated.OwnFiles`: the parties' mean held-out metrics are compared)."""
    run, metrics = (run_plan, METRICS) if own_data is None else (own_data.run, own_data.metrics)
    runs: dict[str, list[dict]] = {"mpc": [], "simulated": []}
    for seed in range(seeds):
        for backend in runs:
            plan = plan_from(protocol, backend=backend, parties=parties, epsilon=epsilon, seed=seed,
                             algorithm=algorithm, size_ratio=size_ratio)
            if backend == "mpc":
                plan = plan.with_mpc(reproducible=True)
            runs[backend].append(run(plan))
    summary: dict[str, Any] = {"protocol": protocol, "seeds": seeds, "epsilon": runs["simulated"][0]["epsilon"],
                               "epsilon_mpc_reproducible": runs["mpc"][0]["epsilon"],
                               "parties": runs["mpc"][0]["parties"]}
    if own_data is not None:  # each secure seed was a run over the parties' records, in their ledgers
        summary["ledger_runs"] = seeds
    lines = [f"{'metric':<26}{'mpc':>22}{'simulated':>22}{'difference':>22}  within seed noise"]
    for metric in metrics:
        a = [r[metric] for r in runs["mpc"]]
        b = [r[metric] for r in runs["simulated"]]
        diffs = [x - y for x, y in zip(a, b)]
        (ma, sa), (mb, sb), (md, sd) = _mean_std(a), _mean_std(b), _mean_std(diffs)
        within = abs(md) <= 2 * sd / max(1, len(diffs)) ** 0.5 + max(sa, sb) if metric != "wall_s" else None
        summary[metric] = {"mpc": [ma, sa], "simulated": [mb, sb], "difference": [md, sd], "within_noise": within}
        lines.append(f"{metric:<26}{ma:>13.4f} ± {sa:<6.4f}{mb:>13.4f} ± {sb:<6.4f}{md:>13.4f} ± {sd:<6.4f}  "
                     f"{'' if within is None else ('yes' if within else 'NO')}")
    folder = pathlib.Path(out)
    plot = folder / "test_error.png"
    summary["plot"] = str(plot)
    curves = {k: np.array([r["test_error_curve"] for r in v]) for k, v in runs.items()}
    table = "\n".join(lines)
    write_record(str(folder / "compare"), {"summary": summary, "runs": runs}, f"```\n{table}\n```\n",
                 mechanism=mechanism_of(runs, plan),
                 extra_files={plot: lambda _record, path: _plot(curves, path, protocol)})
    summary["table"] = table
    return summary


def mechanism_of(runs: dict[str, list[dict]], plan) -> str:
    """The version of the noise the compared runs released: each run's ``mechanism`` (one, or every distinct
    one joined), else the version of the plan's noise mode."""
    from mpcdp.learning.mechanisms import MECHANISMS

    stamped = sorted({r["mechanism"] for backend in runs.values() for r in backend if r.get("mechanism")})
    return "; ".join(stamped) if stamped else MECHANISMS[plan.noise.mode].id


def _plot(curves: dict[str, np.ndarray], path: pathlib.Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for backend, values in curves.items():
        mean = values.mean(0)
        ax.plot(mean, label=f"{backend} (mean of {len(values)} seeds)")
        if len(values) > 1:
            std = values.std(0)
            ax.fill_between(range(len(mean)), mean - std, mean + std, alpha=0.2)
    ax.set_xlabel("iteration")
    ax.set_ylabel("test error (misclassification)")
    ax.set_title(pathlib.Path(title).stem)
    ax.legend()
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
