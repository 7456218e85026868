"""`mpcdp noise`: draw noise inside the MPC, open it for validation only, and measure what it cost.

Opening the noise defeats its purpose; this job exists to validate the sampler against N(0, σ²) and to
measure its cost. The sampling is metered on its own (bytes each party sent, rounds, wall time), apart from
the validation openings; :func:`cost_summary` adds up what every process measured.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from mpcdp.config import covers_malicious_unless
from mpcdp.mpc import authenticated
from mpcdp.mpc.context import MpcContext
from mpcdp.transport.wire import WireMeter
from mpcdp.learning.mechanisms import MECHANISMS, NoiseSpec, sample_noise


def _uncovered_mode(samples: int, mode: str, *rest: Any) -> str | None:
    """What ``security = "malicious"`` does not cover among :func:`noise_party`'s arguments: a noise mode whose
    draw does not MAC-check every opening."""
    return None if getattr(MECHANISMS[mode], "authenticated", False) else f"noise mode {mode!r}"


@covers_malicious_unless(_uncovered_mode)
def noise_party(ctx: MpcContext, samples: int, mode: str, sigma: float, seed: int | None,
                chunk: int) -> dict[str, Any]:
    """Draw ``samples`` noise values of ``mode`` in chunks, metering each draw, and open them for validation.
    Under ``security = "malicious"`` only a mechanism whose draw MAC-checks every opening runs (the launchers
    refuse the others before any process starts), and the validation opening is MAC-checked too."""
    meter, rounds, opened, candidates, accepted = WireMeter(), 0, [], 0, 0
    wall = cpu = 0.0
    for start in range(0, samples, chunk):
        n = min(chunk, samples - start)
        spec = NoiseSpec(sigma=sigma, mode=mode, seed=None if seed is None else seed + start)
        rounds_before = ctx.rounds
        begin, begin_cpu = time.perf_counter(), time.process_time()
        with meter:
            block = sample_noise(ctx, spec, (n,))
        wall += time.perf_counter() - begin
        cpu += time.process_time() - begin_cpu
        rounds += ctx.rounds - rounds_before
        candidates += block.stats.get("candidates", 0)
        accepted += block.stats.get("accepted", 0)
        if isinstance(block.values, authenticated.AuthShared):
            values = authenticated.reveal_checked(ctx, block.values, label="noise-validation",
                                                  reason="validation of the sampler only")
        else:
            values = ctx.reveal(block.shared, label="noise-validation", reason="validation of the sampler only")
        if ctx.rank == 0:
            opened.append(values.numpy())
        ctx.progress(start + n, samples)
    return {"values": np.concatenate(opened) if opened else None, "bytes_sent": meter.bytes_sent,
            "rounds": rounds, "wall_s": wall, "cpu_s": cpu, "candidates": candidates, "accepted": accepted,
            "sigma": block.sigma, "support": block.support, "event": repr(block.event)}


def cost_summary(parties: list[dict[str, Any]], dealer: dict[str, Any] | None, samples: int) -> dict[str, Any]:
    """What the sampling cost, from every process's own ledger: each party's bytes (``bytes_by_party``, rank
    order; None if a party could not meter them), the busiest party's, the dealer's (0 without one), and the
    true total — every party's plus the dealer's, not the busiest party's times m (parties send unequal
    amounts under a dealer-free provider) — and that total per sample; the CPU each process spent per
    sample: every party while it sampled (``cpu_us_per_sample_by_party``) and the dealer while it made the
    replies (``dealer_cpu_us_per_sample``; None without a dealer)."""
    sent = [r["bytes_sent"] for r in parties]
    metered = None not in sent
    dealer_bytes = (dealer or {}).get("bytes_sent") or 0
    total = sum(sent) + dealer_bytes if metered else None
    dealer_cpu = (dealer or {}).get("cpu_s")
    return {"parties": len(parties), "bytes_by_party": sent, "bytes_per_party": max(sent) if metered else None,
            "dealer_bytes": dealer_bytes, "total_bytes": total,
            "bytes_per_sample": None if total is None else total / samples,
            "rounds": max(r["rounds"] for r in parties), "support": parties[0]["support"],
            "cpu_us_per_sample_by_party": [round(1e6 * r["cpu_s"] / samples, 2) for r in parties],
            "dealer_cpu_us_per_sample": None if dealer_cpu is None else round(1e6 * dealer_cpu / samples, 2)}
