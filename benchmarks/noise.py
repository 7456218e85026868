"""In-MPC Gaussian noise: is it N(0,1) (10⁶ draws), and what does a sample cost?

    .venv/bin/python -m benchmarks.noise --protocol protocols/noise-sampler.toml

1. Validation: ``rou`` at 3 parties, 10⁶ draws opened for measurement only; KS against N(0,1) (critical value
   0.00195 at α = 0.001), mean, std, tail counts beyond 2/3/4σ against binomial intervals, max |x| against
   the declared support, acceptance rate against 0.7306.
2. Cost: for each m and batch size d, one sampling call of d samples per mode, measured in its own run:
   bytes per sample (all parties together, and the dealer separately — kernel TCP counters), rounds, and
   µs per sample (slowest party's wall time of the call). Modes side by side in the same table:
   ``rou`` (mpcdp), ``boxmuller`` (CrypTen's crypten.randn), ``distributed`` (the zero-communication floor).
"""

from __future__ import annotations

import platform
import sys
import time

import numpy as np
import torch

from benchmarks import recording
from mpcdp.config import MpcConfig
from mpcdp.jobs.noise import noise_party
from mpcdp.transport.wire import WireMeter
from mpcdp.learning.mechanisms import MECHANISMS, NoiseSpec, sample_noise
from mpcdp.noise.rou import ACCEPTANCE, support_bound
from mpcdp.noise.validate import validate_normal
from mpcdp.runtime.harness import run_job

ANCHORS = [
    ("paper 002 App. A, Obliv-C ratio-of-uniforms (rebuilt here; not Gaussian: its test never rejects)",
     "≈13.9 MB", "a9a: 0.147 s"),
    ("eprint 2025/1025, discrete Gaussian, 16 parties", "11.59 MB", "0.06 s"),
    ("Wei et al. CCS 2023, discrete Gaussian", "—", "≈2.7 ms amortized"),
]


def cost_party(ctx, mode: str, dim: int):
    meter = WireMeter()
    rounds = ctx.rounds
    start = time.perf_counter()
    with meter:
        block = sample_noise(ctx, NoiseSpec(sigma=1.0, mode=mode), (dim,))
    wall = time.perf_counter() - start
    return {"bytes": meter.bytes_sent, "rounds": ctx.rounds - rounds, "wall_s": wall,
            "candidates": block.stats.get("candidates")}


def validation(protocol: dict) -> dict:
    v, mpc = protocol["validation"], protocol["mpc"]
    config = MpcConfig(parties=v["parties"], **mpc)
    print(f"validation: {v['samples']:,} draws at {v['parties']} parties ...", file=sys.stderr, flush=True)
    result = run_job(noise_party, config, args=(v["samples"], "rou", 1.0, None, v["chunk"]))
    first = result.values[0]
    check = validate_normal(first["values"], alpha=v["alpha"], support=support_bound(16),
                            accepted=first["accepted"], candidates=first["candidates"], acceptance=ACCEPTANCE)
    return {"samples": check.samples, "mean": check.mean, "std": check.std, "ks_statistic": check.ks_statistic,
            "ks_pvalue": check.ks_pvalue, "ks_critical_0.001": 1.9495 / np.sqrt(check.samples),
            "max_abs": check.max_abs, "support": support_bound(16),
            "tails": {str(k): c for k, c in check.tail_counts.items()},
            "tails_expected": {str(k): check.samples * 2 * float(__import__("scipy").stats.norm.sf(k))
                               for k in check.tail_counts},
            "acceptance_rate": first["accepted"] / first["candidates"], "failures": check.failures}


def cost(protocol: dict) -> tuple[list[dict], list[dict]]:
    c, mpc = protocol["cost"], protocol["mpc"]
    rows = []
    for parties in c["parties"]:
        for dim in c["dims"]:
            for mode in c["modes"]:
                print(f"cost: m={parties} d={dim} {mode} ...", file=sys.stderr, flush=True)
                result = run_job(cost_party, MpcConfig(parties=parties, **mpc), args=(mode, dim))
                party_bytes = sum(r["bytes"] for r in result.values)
                dealer_bytes = (result.dealer or {}).get("bytes_sent", 0)
                wall = max(r["wall_s"] for r in result.values)
                rows.append({"parties": parties, "dim": dim, "mode": mode,
                             "party_bytes_per_sample": party_bytes / dim,
                             "dealer_bytes_per_sample": dealer_bytes / dim,
                             "total_bytes_per_sample": (party_bytes + dealer_bytes) / dim,
                             "rounds": max(r["rounds"] for r in result.values),
                             "us_per_sample": 1e6 * wall / dim})
    plain = []
    for dim in c["dims"]:
        start = time.perf_counter()
        sample_noise(None, NoiseSpec(sigma=1.0, mode="plaintext"), (dim,))
        plain.append({"dim": dim, "us_per_sample": 1e6 * (time.perf_counter() - start) / dim})
    return rows, plain


def markdown(val: dict, rows: list[dict], plain: list[dict], command: str) -> str:
    lines = ["# In-MPC Gaussian noise: validation and cost", "", f"Command: `{command}`  ",
             f"Machine: {platform.machine()}, 2 cores shared by all parties and the dealer, Python "
             f"{platform.python_version()}, torch {torch.__version__}; one process per party plus the dealer, loopback.",
             "", "## Validation: ratio-of-uniforms, 3 parties", "",
             f"{val['samples']:,} draws. KS statistic {val['ks_statistic']:.5f} (critical value at α = 0.001: "
             f"{val['ks_critical_0.001']:.5f}; p = {val['ks_pvalue']:.3f}); mean {val['mean']:+.5f}; std "
             f"{val['std']:.5f}; max |x| {val['max_abs']:.3f} (declared support {val['support']:.3f}); "
             f"acceptance rate {val['acceptance_rate']:.4f} (theory 0.7306).", "",
             "| beyond | observed | expected |", "|---|---|---|"]
    for k in val["tails"]:
        lines.append(f"| {k}σ | {val['tails'][k]} | {val['tails_expected'][k]:.1f} |")
    lines.append("")
    lines.append(f"Validation at family-wise α = 0.001: **{'passed' if not val['failures'] else 'FAILED: ' + '; '.join(val['failures'])}**.")
    lines += ["", "## Cost per sample", "",
              "Bytes are measured (kernel TCP counters of every party and of the dealer), per sample drawn, "
              "for one call drawing d samples; µs = slowest party's wall time of that call / d. Rounds "
              "(communication phases: 1 per opening for 2 parties, 2 for more) are counted at mpcdp's opening "
              "choke point; CrypTen's own Box–Muller does not pass through it (n/a here; `mpcdp cost --noise "
              "boxmuller` counts its rounds).",
              "",
              "| m | d | mode | parties B/sample | dealer B/sample | total B/sample | rounds | µs/sample |",
              "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['parties']} | {r['dim']:,} | {r['mode']} | {r['party_bytes_per_sample']:,.0f} | "
                     f"{r['dealer_bytes_per_sample']:,.0f} | {r['total_bytes_per_sample']:,.0f} | "
                     f"{'n/a' if r['mode'] == 'boxmuller' else r['rounds']} | "
                     f"{r['us_per_sample']:,.1f} |")
    lines += ["", "Plaintext (simulated) sampling: " + ", ".join(
        f"d = {p['dim']:,}: {p['us_per_sample']:.3f} µs/sample" for p in plain) + ".", "",
        "## Reference numbers (not like-for-like: other protocols, dealers, precision)", "",
        "| system | bytes / sample | time / sample |", "|---|---|---|"]
    lines += [f"| {name} | {b} | {t} |" for name, b, t in ANCHORS]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ns, protocol, command = recording.parse(__doc__, "protocols/noise-sampler.toml", "benchmarks/results/noise", argv)
    val = validation(protocol)
    rows, plain = cost(protocol)
    recording.record(ns.out, markdown(val, rows, plain, command),
                     {"command": command, "validation": val, "cost": rows, "plaintext": plain},
                     mechanism=MECHANISMS["rou"].id)  # what it validates; its cost rows name their modes
    return 0 if not val["failures"] else 1


if __name__ == "__main__":
    sys.exit(main())
