"""What a run on the parties' own data reports beyond the model: the most exposed party (whose sampling rate
decides ε), per-round metrics — every k-th released iterate evaluated on each party's own held-out file — and
a plot of them.

Which iterates: θᵗ for t = 0, k, 2k, … and the last one, T (θᵗ is computed from the releases v_p⁰..v_pᵗ⁻¹
alone, so every party holds the same θᵗ). Each party evaluates them on its own held-out file (test loss
and error per point); the parties' count-weighted mean of those metrics is opened by one secure sum of
2·(points) + 1 numbers, as the final held-out mean is (:func:`mpcdp.jobs.own_data._held_out`).

Privacy: evaluating released iterates is post-processing of the releases, so it costs no privacy budget (ε
is unchanged) — the held-out records are not training records and enter no release. Disclosed beyond the
run's releases: the count-weighted mean test loss and error at every evaluated iterate (the same kind of
aggregate as the final held-out mean). Each party's own curve stays with it.
"""

from __future__ import annotations

import pathlib
from typing import Any, Sequence

import numpy as np
import torch

from mpcdp.jobs.report import save_figure
from mpcdp.data.party_file import PartyData
from mpcdp.jobs.train_report import unit_rows
from mpcdp.validation import check_integer


def most_exposed_party(params, sizes: Sequence[int]) -> dict[str, Any] | None:
    """The party whose records the run samples most often, which decides ε: every party draws a batch of the
    same per-party size b at every release, so party j's records are sampled at rate b/n_j and the smallest
    party's rate is the largest (ties: the lowest rank, as the accountant's event,
    :meth:`mpcdp.accounting.events.DpSrmSetting.sampling`). Public: computed from the record counts the
    parties agree on and the protocol. None for a full-batch algorithm (every record in every release)."""
    batch = getattr(params, "batch", None)
    if not batch or getattr(params, "full_batch", False):
        return None
    rates = [batch / n for n in sizes]
    j = max(range(len(sizes)), key=rates.__getitem__)
    exposed = {"party": j, "records": int(sizes[j]), "batch": batch, "sampling_rate": rates[j]}
    batch0 = getattr(params, "batch0", None)
    if batch0:
        exposed["sampling_rate_release0"] = batch0 / sizes[j]
    return exposed


def check_every(every: Any) -> int | None:
    """``eval_every``: None (no per-round metrics) or an integer >= 1, refused naming the field and value."""
    return None if every is None else check_integer(every, "eval_every")


def points(steps: int, every: int) -> list[int]:
    """The iterates evaluated in a run of ``steps`` releases after release 0: 0, k, 2k, … and ``steps``."""
    return sorted(set(range(0, steps + 1, every)) | {steps})


def own_metrics(model, thetas: Sequence[torch.Tensor], test: PartyData, normalize_rows: bool) -> torch.Tensor:
    """Test loss and error of every θ in ``thetas`` on ``test`` (rows at unit norm if the plan says so):
    a (len(thetas), 2) tensor."""
    x, y = torch.tensor(test.x, dtype=torch.float64), model.labels(np.array(test.y))
    if normalize_rows:
        x = unit_rows(x)
    return torch.tensor([[float(model.loss(theta, x, y)), float(model.error_rate(theta, x, y))] for theta in thetas],
                        dtype=torch.float64)


def _curve(releases: list[int], own: torch.Tensor | None, mean: torch.Tensor | None, every: int) -> dict[str, Any]:
    """The curve as plain JSON: the evaluated iterates and each party's own and the parties' mean metrics."""
    def columns(values):
        return None if values is None else {"test_loss": values[:, 0].tolist(), "test_error": values[:, 1].tolist()}

    return {"every": every, "iterates": releases, "own": columns(own), "mean": columns(mean)}


def secure_curve(ctx, model, result, test: PartyData | None, plan) -> dict[str, Any] | None:
    """This party's curve (``plan.eval_every``; None when it is not set) and the parties' count-weighted mean
    curve, opened by one secure sum (see the module docstring)."""
    from mpcdp.mpc.secure_sum import secure_sum

    if plan.eval_every is None:
        return None
    releases = points(len(result.iterates) - 1, plan.eval_every)
    if test is None:
        own, local = None, torch.zeros(2 * len(releases) + 1, dtype=torch.float64)
    else:
        own = own_metrics(model, [result.iterates[t] for t in releases], test, plan.normalize_rows)
        local = torch.cat([(len(test.y) * own).reshape(-1), torch.tensor([float(len(test.y))], dtype=torch.float64)])
    total = ctx.reveal(secure_sum(ctx, local, field="held-out metrics per round"), label="held-out metrics per round",
                       reason="count-weighted mean of the parties' test metrics at the evaluated iterates")
    count = float(total[-1])
    mean = None if count < 0.5 else total[:-1].reshape(-1, 2) / count
    return _curve(releases, own, mean, plan.eval_every)


def plaintext_curves(model, result, tests: Sequence[PartyData | None], plan) -> list[dict[str, Any] | None]:
    """Every party's curve and the count-weighted mean, computed in this process (the simulated run)."""
    if plan.eval_every is None:
        return [None] * len(tests)
    releases = points(len(result.iterates) - 1, plan.eval_every)
    thetas = [result.iterates[t] for t in releases]
    owns = [None if t is None else own_metrics(model, thetas, t, plan.normalize_rows) for t in tests]
    counts = [0 if t is None else len(t.y) for t in tests]
    mean = None if not sum(counts) else sum((n * o for n, o in zip(counts, owns) if o is not None),
                                            torch.zeros((), dtype=torch.float64)) / sum(counts)
    return [_curve(releases, own, mean, plan.eval_every) for own in owns]


def plot_curve(curve: dict[str, Any], path: str | pathlib.Path, title: str) -> str:
    """A PNG of ``curve`` (test error and test loss against the iterate; this party's own and the parties'
    mean) at ``path``; returns the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for ax, metric in zip(axes, ("test_error", "test_loss")):
        for who, style in (("own", "-"), ("mean", "--")):
            if curve.get(who) is not None:
                label = "this party's held-out file" if who == "own" else "parties' count-weighted mean"
                ax.plot(curve["iterates"], curve[who][metric], style, marker="o", markersize=3, label=label)
        ax.set_xlabel("iterate t (after t releases)")
        ax.set_ylabel(metric.replace("_", " "))
        ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    return str(path)
