"""The dealer and the dealer-free ``honest-majority`` provider side by side, in one run, alternating.

    .venv/bin/python -m benchmarks.providers [--samples 100000] [--repeats 2] [--protocol protocols/quickstart-a9a.toml]

1. The in-MPC discrete Gaussian (3 parties, ``--samples`` draws, σ = 1): sampling wall time, bytes every data
   party sent plus the dealer's, bytes and requests per kind of material, material rounds.
2. DDP-SRM on a9a (the quick start, secure): wall time, pre-sampling and online time, busiest party's bytes,
   the dealer's bytes, test error and certified ε.

Each measurement alternates the providers ``--repeats`` times on the same machine; the ratios are
honest-majority ÷ dealer. Writes benchmarks/results/providers.md and .json.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from benchmarks import recording
from mpcdp.jobs.report import markdown_table

PROVIDERS = ("dealer", "honest-majority")


def gaussian_party(ctx, samples: int, sigma: float) -> dict:
    """Draw ``samples`` discrete Gaussians inside the MPC (never opened); what it cost this party."""
    from mpcdp.learning.mechanisms import NoiseSpec, sample_noise
    from mpcdp.transport import costs

    start = time.perf_counter()
    with costs.section() as ledger:
        block = sample_noise(ctx, NoiseSpec(sigma=sigma, mode="dgauss"), (samples,))
    return {"wall_s": time.perf_counter() - start, "ledger": ledger.to_dict(), "accepted": block.stats["accepted"],
            "candidates": block.stats["candidates"]}


def _gaussian(provider: str, samples: int) -> dict:
    from mpcdp.config import MpcConfig
    from mpcdp.runtime.harness import run_job

    run = run_job(gaussian_party, MpcConfig(parties=3, provider=provider, timeout_s=1800.0), args=(samples, 1.0),
                  job={"name": "providers-gaussian", "samples": samples})
    ledgers = [v["ledger"] for v in run.values]
    dealer = (run.dealer or {}).get("bytes_sent", 0)
    parties = sum(ledger["bytes_sent"] - ledger["dealer_request_bytes"] for ledger in ledgers)
    requested = sum(ledger["dealer_request_bytes"] for ledger in ledgers)
    kinds = sorted({k for ledger in ledgers for k in ledger["material_requests"]})
    return {"provider": provider, "samples": samples, "wall_s": max(v["wall_s"] for v in run.values),
            "party_bytes": parties, "dealer_bytes": dealer + requested,
            "bytes_per_sample": (parties + dealer + requested) / samples,
            "busiest_party_bytes": max(ledger["bytes_sent"] for ledger in ledgers),
            "rounds": ledgers[0]["rounds"], "material_rounds": max(ledger["material_rounds"] for ledger in ledgers),
            "material": {k: {"requests": ledgers[0]["material_requests"].get(k, 0),
                             "bytes": sum(ledger["material_bytes"].get(k, 0) for ledger in ledgers)}
                         for k in kinds},
            "acceptance": run.values[0]["accepted"] / run.values[0]["candidates"]}


def _training(provider: str, protocol: str, seed: int) -> dict:
    from mpcdp.jobs.train import plan_from, run_plan

    plan = plan_from(protocol, backend="mpc", seed=seed)
    plan = plan.with_mpc(provider=provider)
    report = run_plan(plan, curve=False)
    return {"provider": provider, "seed": seed, **{k: report[k] for k in (
        "wall_s", "setup_s", "presample_s", "online_s", "bytes_per_party", "dealer_bytes", "test_error", "epsilon")}}


def _mean(rows: list[dict], key: str) -> float:
    return statistics.fmean(r[key] or 0 for r in rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--protocol", default="protocols/quickstart-a9a.toml")
    parser.add_argument("--out", default="benchmarks/results/providers")
    ns = parser.parse_args(argv)
    command = ("python -m benchmarks.providers " + " ".join(argv if argv is not None else sys.argv[1:])).strip()
    gaussian = [_gaussian(p, ns.samples) for _ in range(ns.repeats) for p in PROVIDERS]
    training = [_training(p, ns.protocol, seed) for seed in range(ns.repeats + 1) for p in PROVIDERS]
    by = {p: ([g for g in gaussian if g["provider"] == p], [t for t in training if t["provider"] == p])
          for p in PROVIDERS}
    g_rows, t_rows = [], []
    for p in PROVIDERS:
        gs, ts = by[p]
        g_rows.append([p, f"{_mean(gs, 'wall_s'):.2f}", f"{1e6 * _mean(gs, 'wall_s') / ns.samples:.1f}",
                       f"{_mean(gs, 'bytes_per_sample'):,.0f}", f"{_mean(gs, 'party_bytes') / 1e6:.1f}",
                       f"{_mean(gs, 'dealer_bytes') / 1e6:.1f}", f"{_mean(gs, 'busiest_party_bytes') / 1e6:.1f}",
                       f"{gs[0]['rounds']}", f"{gs[0]['material_rounds']}"])
        t_rows.append([p, f"{_mean(ts, 'wall_s'):.2f}", f"{_mean(ts, 'presample_s'):.2f}",
                       f"{_mean(ts, 'online_s'):.2f}", f"{_mean(ts, 'bytes_per_party') / 1e6:.1f}",
                       f"{_mean(ts, 'dealer_bytes') / 1e6:.1f}", f"{_mean(ts, 'test_error'):.4f}",
                       f"{ts[0]['epsilon']:.5f}"])

    def ratio(rows_of, key):
        return _mean(rows_of("honest-majority"), key) / _mean(rows_of("dealer"), key)

    g_of, t_of = (lambda p: by[p][0]), (lambda p: by[p][1])
    kinds = sorted({k for g in gaussian for k in g["material"]})
    k_rows = [[k, *(f"{by[p][0][0]['material'].get(k, {}).get('requests', 0)} / "
                    f"{by[p][0][0]['material'].get(k, {}).get('bytes', 0) / ns.samples:,.1f}" for p in PROVIDERS)]
              for k in kinds]
    markdown = (
        f"# Correlated randomness: the dealer vs the dealer-free honest-majority provider\n\nCommand: `{command}`\n\n"
        f"Same machine, one run, the providers alternating ({ns.repeats} repeats of the sampler, {ns.repeats + 1} "
        f"seeds of the training). Bytes: TCP payload every data party sent (the generators' material messages "
        f"included) plus everything on the dealer's links (both directions).\n\n"
        f"## In-MPC discrete Gaussian, 3 parties, {ns.samples:,} samples, σ = 1\n\n"
        + markdown_table(["provider", "wall s", "µs / sample", "bytes / sample", "party MB (all)", "dealer MB",
                          "busiest party MB", "rounds", "material rounds"], g_rows)
        + f"\nhonest-majority ÷ dealer: time {ratio(g_of, 'wall_s'):.2f}×, bytes per sample "
          f"{ratio(g_of, 'bytes_per_sample'):.2f}× (goal ≤ 1.5× each).\n\n"
          "Material per kind (first run): requests / bytes per sample that the parties sent to get it (the "
          "dealer's replies are in the dealer column above).\n\n"
        + markdown_table(["kind", *PROVIDERS], k_rows)
        + f"\n## DDP-SRM on a9a (`{ns.protocol}`, secure)\n\n"
        + markdown_table(["provider", "wall s", "pre-sampling s", "online s", "busiest party MB", "dealer MB",
                          "test error", "certified ε"], t_rows)
        + f"\nhonest-majority ÷ dealer: wall time {ratio(t_of, 'wall_s'):.2f}×, pre-sampling "
          f"{ratio(t_of, 'presample_s'):.2f}×.\n")
    recording.record(ns.out, markdown, {"command": command, "gaussian": gaussian, "training": training})
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
