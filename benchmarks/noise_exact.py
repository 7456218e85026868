"""Exact discrete Gaussian (``dgauss``) against ratio-of-uniforms (``rou``) inside the MPC: cost per sample.

    .venv/bin/python -m benchmarks.noise_exact --protocol protocols/noise-exact.toml

For each mode, ``repeats`` separate runs of ``samples`` draws at ``parties`` parties (one sampling call each,
alternating the modes so both see the same machine load). Each run records the bytes of every party and of
the dealer (kernel TCP counters; the total adds them all), the rounds, the slowest party's wall time and the
busiest party's CPU time of the call. The draws are opened *for validation only* and checked against
N(0, σ²) at α = 0.001. Then ``dgauss`` at each of ``[committee] parties``: the noise committee's cost, which
should not grow with m; and under each ``[settings] runs`` entry (provider, committee size).
"""

from __future__ import annotations

import os
import platform
import sys

from benchmarks import recording
from mpcdp.config import MpcConfig
from mpcdp.jobs.noise import noise_party
from mpcdp.noise.secure_gaussian import CIRCUIT
from mpcdp.noise.validate import validate_normal
from mpcdp.runtime.harness import run_job


def measure(config: MpcConfig, mode: str, samples: int, sigma: float) -> dict:
    result = run_job(noise_party, config, args=(samples, mode, sigma, None, samples),
                     job={"name": "noise", "mode": mode, "samples": samples})
    first = result.values[0]
    busiest = max(r["bytes_sent"] for r in result.values)
    total = sum(r["bytes_sent"] for r in result.values) + (result.dealer or {}).get("bytes_sent", 0)
    wall = max(r["wall_s"] for r in result.values)
    cpu = max(r["cpu_s"] for r in result.values)
    dealer_cpu = (result.dealer or {}).get("cpu_s")
    check = validate_normal(first["values"], sigma=sigma, alpha=1e-3)
    return {"mode": mode, "busiest_party_bytes_per_sample": busiest / samples,
            "dealer_bytes_per_sample": (result.dealer or {}).get("bytes_sent", 0) / samples,
            "total_bytes_per_sample": total / samples, "rounds": max(r["rounds"] for r in result.values),
            "us_per_sample": 1e6 * wall / samples, "cpu_us_per_sample": 1e6 * cpu / samples,
            "cpu_us_per_sample_by_party": [round(1e6 * r["cpu_s"] / samples, 2) for r in result.values],
            "dealer_cpu_us_per_sample": None if dealer_cpu is None else 1e6 * dealer_cpu / samples,
            "parties": config.parties, "acceptance": first["accepted"] / first["candidates"],
            "validation": "passed" if check.passed else "; ".join(check.failures)}


def main(argv: list[str] | None = None) -> int:
    ns, protocol, command = recording.parse(__doc__, "protocols/noise-exact.toml", "benchmarks/results/noise-exact", argv)
    c = protocol["cost"]
    load_before = os.getloadavg()[0]
    config = MpcConfig(parties=c["parties"], **protocol["mpc"])
    runs = []
    for repeat in range(c["repeats"]):
        for mode in c["modes"]:
            print(f"{mode}, run {repeat + 1} ...", file=sys.stderr, flush=True)
            runs.append(measure(config, mode, c["samples"], c["sigma"]) | {"repeat": repeat})
    committee = protocol.get("committee", {})
    scaling = []
    for m in committee.get("parties", []):
        print(f"dgauss at {m} parties ...", file=sys.stderr, flush=True)
        scaling.append(measure(MpcConfig(**{**protocol["mpc"], "parties": m}), "dgauss", committee["samples"],
                               c["sigma"]))
    settings = _by_setting(protocol, c["sigma"])
    lines = ["# Exact discrete Gaussian vs ratio-of-uniforms inside the MPC", "",
             f"Command: `{command}`  ",
             f"Machine: {platform.machine()}, 2 cores shared by {c['parties']} parties and the dealer, loopback, TLS 1.3 "
             f"links (the harness default); {c['samples']:,} samples per call, σ = {c['sigma']}. "
             f"Host load average (1 min) {load_before:.1f} at the start and {os.getloadavg()[0]:.1f} at the end (a "
             "shared 2-core host: wall and CPU times scale with it, bytes do not).", "",
             f"In-MPC circuit: {CIRCUIT}.", "", *_moved(protocol),
             *_table(runs, "mode"), "",
             "`rou` is the ratio-of-uniforms sampler on 17-bit uniforms, whose output has holes in its tails.",
             "`dgauss` is the exact discrete Gaussian with a pmf enumerated in tests/test_discrete_gaussian.py.", ""]
    if scaling:
        lines += ["## The noise committee: `dgauss` at more parties", "",
                  f"{committee['samples']:,} samples per call; parties 0–2 sample (`noise_committee` = 3), the "
                  "others wait and add a sharing of zero. Total = every party's bytes plus the dealer's.", "",
                  *_table(scaling, "parties"), ""]
    if settings:
        lines += ["## By provider and committee size", "",
                  f"{protocol['settings']['samples']:,} samples per call at {c['parties']} parties. The committee's "
                  "size and the provider decide who can learn the noise (each run's `noise_known_to`; "
                  "mpcdp/README.md, threat model): with the dealer, the dealer and one member, or every member; "
                  "under honest-majority, any two of parties 0–2.", "", *_table(settings, "setting"), ""]
    recording.record(ns.out, "\n".join(lines), {"command": command, "protocol": protocol, "runs": runs,
                                                 "committee": scaling, "settings": settings, "circuit": CIRCUIT,
                                                 "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)]})
    return 0


def _moved(protocol: dict) -> list[str]:
    """The protocol's note on what moved against the previous record (``moved``), as a paragraph."""
    return [protocol["moved"], ""] if protocol.get("moved") else []


def _by_setting(protocol: dict, sigma: float) -> list[dict]:
    """``dgauss`` under each ``[settings] runs`` entry (a provider and a committee size) at the protocol's
    party count."""
    settings = protocol.get("settings", {})
    runs = []
    for provider, size in settings.get("runs", []):
        print(f"dgauss, {provider}, committee of {size} ...", file=sys.stderr, flush=True)
        config = MpcConfig(**{**protocol["mpc"], "parties": protocol["cost"]["parties"], "provider": provider,
                              "noise_committee": size})
        runs.append(measure(config, "dgauss", settings["samples"], sigma) | {"setting": f"{provider}, c = {size}"})
    return runs


def _table(runs: list[dict], first: str) -> list[str]:
    """The rows of ``runs`` as a markdown table whose first column is ``first`` (mode or parties)."""
    lines = [f"| {first} | busiest party B/sample | dealer B/sample | total B/sample | rounds | µs/sample (wall) | "
             "CPU µs/sample (busiest party) | CPU µs/sample (dealer) | acceptance | validation (α = 0.001) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        dealer_cpu = "–" if r.get("dealer_cpu_us_per_sample") is None else f"{r['dealer_cpu_us_per_sample']:.1f}"
        lines.append(f"| {r[first]} | {r['busiest_party_bytes_per_sample']:,.0f} | {r['dealer_bytes_per_sample']:,.0f} | "
                     f"{r['total_bytes_per_sample']:,.0f} | {r['rounds']} | {r['us_per_sample']:.1f} | "
                     f"{r['cpu_us_per_sample']:.1f} | {dealer_cpu} | {r['acceptance']:.4f} | {r['validation']} |")
    return lines


if __name__ == "__main__":
    sys.exit(main())
