"""`mpcdp noise`: draw noise inside the MPC, open it for validation only, and measure what it cost.

Opening the noise defeats its purpose; this job exists to validate the sampler against N(0, σ²) and to
measure its cost. The sampling is metered on its own (bytes each party sent, rounds, wall time), apart from
the validation openings.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from mpcdp.mpc.context import MpcContext
from mpcdp.transport.wire import WireMeter
from mpcdp.noise.modes import NoiseSpec, sample_noise


def noise_party(ctx: MpcContext, samples: int, mode: str, sigma: float, seed: int | None,
                chunk: int) -> dict[str, Any]:
    meter, rounds, opened, candidates, accepted = WireMeter(), 0, [], 0, 0
    wall = 0.0
    for start in range(0, samples, chunk):
        n = min(chunk, samples - start)
        spec = NoiseSpec(sigma=sigma, mode=mode, seed=None if seed is None else seed + start)
        rounds_before = ctx.rounds
        begin = time.perf_counter()
        with meter:
            block = sample_noise(ctx, spec, (n,))
        wall += time.perf_counter() - begin
        rounds += ctx.rounds - rounds_before
        candidates += block.stats.get("candidates", 0)
        accepted += block.stats.get("accepted", 0)
        values = ctx.reveal(block.values, label="noise-validation", reason="validation of the sampler only")
        if ctx.rank == 0:
            opened.append(values.numpy())
        ctx.progress(start + n, samples)
    return {"values": np.concatenate(opened) if opened else None, "bytes_sent": meter.bytes_sent,
            "rounds": rounds, "wall_s": wall, "candidates": candidates, "accepted": accepted,
            "sigma": block.sigma, "support": block.support, "event": repr(block.event)}
