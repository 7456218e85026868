"""Where the in-MPC discrete Gaussian's bytes and CPU go: a per-step breakdown of one ``dgauss`` draw.

    .venv/bin/python -m benchmarks.noise_breakdown --parties 3 --samples 20000

Every party draws ``samples`` values (σ in grid units of the ``mpcdp noise`` default, precision 16) in one
call, as ``mpcdp noise --mode dgauss`` does. Each communication step of the sampler is attributed to a step
of :mod:`mpcdp.noise.secure_gaussian`'s docstring by its label (:data:`STEPS`):

* party bytes: what each party's links carried for the step's openings and exchanges (each opening's
  ``bytes_sent``, frame headers included, TLS not: so the total is a little below the kernel's count,
  which is printed beside it);
* dealer bytes: what the dealer wrote for each request (its own per-request count, TLS included), each
  request attributed to the step that comes next on party 0 (the step that uses the material);
* CPU: every party's process time from the end of its previous step to the end of this one (the local work
  that prepares the step, then the step itself), and the dealer's CPU per request.

A measuring tool, not a record: it prints a table (and ``--json``) and writes nothing to the repository.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from typing import Any

STEPS = (("coin", ("dg-coin",)), ("piece", ("dg-piece",)), ("candidate word", ("dg-point",)),
         ("B2A of n (ripple carry) and I_1..I_8", ("dg-b2a",)), ("n² (replicated square)", ("dg-square",)), ("T to binary", ("dg-a2b",)),
         ("first factor", ("dg-first",)), ("other factors", ("dg-rest",)), ("accept", ("dg-accept",)))
"""(docstring step, label prefixes of its communication steps), in the sampler's order."""
WARM_UP = 200  # samples drawn before the metered call: one-time work (the plan, cached tables) is not counted


def step_of(label: str) -> str:
    """The docstring step a communication step's label belongs to ("other" if none)."""
    for name, prefixes in STEPS:
        if any(label.startswith(prefix) for prefix in prefixes):
            return name
    return "other"


def _metered_party(ctx, samples: int, sigma: float) -> dict[str, Any]:
    """One party: draw ``samples`` dgauss values in one call, noting every communication step's label, bytes and
    CPU, and (party 0) every dealer request with the step count at which it was made."""
    from mpcdp.adapter import dealer_link
    from mpcdp.learning.mechanisms import NoiseSpec, sample_noise
    from mpcdp.transport.wire import WireMeter

    steps: list[tuple[str, float, int]] = []  # (label, CPU at its end, bytes)
    requests: list[tuple[str, int]] = []  # (function, index of the next step)
    original_open, original_exchange = ctx._open, ctx.members_exchange
    original_request = dealer_link.DealerClient._ask

    def timed(original):
        def run(*args, label: str, **kwargs):
            before = len(ctx.openings)
            out = original(*args, label=label, **kwargs)
            sent = sum(o.bytes_sent or 0 for o in ctx.openings[before:])
            steps.append((label, time.process_time(), sent))
            return out
        return run

    def request(self, message, receiver):
        requests.append((message["message"]["function"], len(steps)))
        return original_request(self, message, receiver)

    meter = WireMeter()
    sample_noise(ctx, NoiseSpec(sigma=sigma, mode="dgauss"), (WARM_UP,))  # one-time work (plans, caches) apart
    ctx._open, ctx.members_exchange = timed(original_open), timed(original_exchange)
    dealer_link.DealerClient._ask = request  # type: ignore[method-assign]  # metered while it samples
    try:
        start_cpu = time.process_time()
        with meter:
            block = sample_noise(ctx, NoiseSpec(sigma=sigma, mode="dgauss"), (samples,))
        end_cpu = time.process_time()
    finally:
        ctx._open, ctx.members_exchange = original_open, original_exchange
        dealer_link.DealerClient._ask = original_request  # type: ignore[method-assign]  # the original back
    return {"steps": steps, "requests": requests, "start_cpu": start_cpu, "end_cpu": end_cpu,
            "bytes_sent": meter.bytes_sent, "candidates": block.stats.get("candidates", 0),
            "survivors": sum(block.stats.get("pass_survivors", [])), "k": None}


def breakdown(values: list[dict], dealer: dict | None, samples: int) -> dict[str, Any]:
    """Per docstring step: party bytes, dealer bytes, party CPU (busiest party) and dealer CPU, per sample."""
    names = [name for name, _ in STEPS] + ["other"]
    party_bytes: collections.Counter[str] = collections.Counter()
    party_cpu = {name: [0.0] * len(values) for name in names}
    for rank, v in enumerate(values):
        previous = v["start_cpu"]
        for label, cpu, sent in v["steps"]:
            name = step_of(label)
            party_bytes[name] += sent
            party_cpu[name][rank] += cpu - previous
            previous = cpu
        party_cpu["other"][rank] += v["end_cpu"] - previous
    dealer_bytes: collections.Counter[str] = collections.Counter()
    dealer_cpu: collections.Counter[str] = collections.Counter()  # seconds (floats) per step
    labels = [label for label, _, _ in values[0]["steps"]]
    sent, cpu = (dealer or {}).get("request_bytes", []), (dealer or {}).get("request_cpu_s", [])
    kinds: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for (function, at), b, c in zip(values[0]["requests"], sent[-len(values[0]["requests"]):] if sent else [],
                                    cpu[-len(values[0]["requests"]):] if cpu else []):
        name = step_of(labels[at]) if at < len(labels) else "other"
        dealer_bytes[name] += b
        dealer_cpu[name] += c
        kinds[name][function.replace("mpcdp_", "")] += b
    rows = []
    for name in names:
        rows.append({"step": name, "party_bytes": party_bytes[name] / samples,
                     "dealer_bytes": dealer_bytes[name] / samples,
                     "total_bytes": (party_bytes[name] + dealer_bytes[name]) / samples,
                     "busiest_party_cpu_us": 1e6 * max(party_cpu[name]) / samples,
                     "party_cpu_us": [round(1e6 * c / samples, 2) for c in party_cpu[name]],
                     "dealer_cpu_us": 1e6 * dealer_cpu[name] / samples,
                     "dealer_bytes_by_kind": {k: round(b / samples, 1) for k, b in kinds[name].items()}})
    return {"samples": samples, "candidates": values[0]["candidates"], "survivors": values[0]["survivors"],
            "kernel_party_bytes": sum(v["bytes_sent"] for v in values) / samples,
            "dealer_bytes_all": sum(sent) / samples if sent else 0.0,
            "party_cpu_us": [round(1e6 * (v["end_cpu"] - v["start_cpu"]) / samples, 2) for v in values],
            "dealer_cpu_us_all": 1e6 * sum(cpu) / samples if cpu else 0.0, "rows": rows}


def table(result: dict[str, Any]) -> str:
    lines = ["| step | party B/sample | dealer B/sample | total B/sample | CPU µs/sample (busiest party) | "
             "CPU µs/sample (dealer) |", "|---|---|---|---|---|---|"]
    for row in result["rows"]:
        lines.append(f"| {row['step']} | {row['party_bytes']:,.0f} | {row['dealer_bytes']:,.0f} | "
                     f"{row['total_bytes']:,.0f} | {row['busiest_party_cpu_us']:.1f} | {row['dealer_cpu_us']:.1f} |")
    rows = result["rows"]
    lines.append(f"| all (links) | {sum(r['party_bytes'] for r in rows):,.0f} | "
                 f"{sum(r['dealer_bytes'] for r in rows):,.0f} | "
                 f"{sum(r['total_bytes'] for r in rows):,.0f} | {max(result['party_cpu_us']):.1f} | "
                 f"{result['dealer_cpu_us_all']:.1f} |")
    lines.append(f"\nkernel count: parties {result['kernel_party_bytes']:,.0f} B/sample (TLS included), dealer "
                 f"{result['dealer_bytes_all']:,.0f}; {result['candidates']:,} candidates, {result['survivors']:,} "
                 f"first-factor survivors for {result['samples']:,} samples")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from mpcdp.config import MpcConfig
    from mpcdp.runtime.harness import run_job

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parties", type=int, default=3)
    parser.add_argument("--samples", type=int, default=20000)
    parser.add_argument("--sigma", type=float, default=1.0)
    parser.add_argument("--provider", default="dealer")
    parser.add_argument("--json", action="store_true")
    ns = parser.parse_args(argv)
    config = MpcConfig(parties=ns.parties, provider=ns.provider, precision_bits=16, timeout_s=600)
    result = run_job(_metered_party, config, args=(ns.samples, ns.sigma),
                     job={"name": "noise-breakdown", "samples": ns.samples})
    out = breakdown(result.values, result.dealer, ns.samples)
    print(json.dumps(out, indent=1) if ns.json else table(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
