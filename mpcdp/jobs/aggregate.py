"""The first main job: secure aggregation of random local vectors, checked against the plaintext sum.

Each data party draws a private vector (standard normal, from a generator keyed by the OS CSPRNG unless a
seed is given for reproducibility), inputs it with :func:`mpcdp.mpc.secure_sum.secure_sum`, and all parties
open only the aggregate. As a demonstration, each party also returns its local vector to the launcher,
which checks the opened aggregate against the plaintext sum — the check, not the protocol, sees the inputs.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

import torch

from mpcdp.config import covers_malicious
from mpcdp.errors import ConfigError
from mpcdp.mpc.authenticated import input_sum, reveal_checked
from mpcdp.mpc.bounded import bounded_sum, unit_bound
from mpcdp.mpc.context import MpcContext
from mpcdp.mpc.secure_sum import checked_scaled, secure_sum
from mpcdp.transport.wire import WireMeter


def local_vector(dim: int, rank: int, seed: int | None) -> torch.Tensor:
    generator = torch.Generator()
    generator.manual_seed(secrets.randbits(63) if seed is None else seed * 1_000_003 + rank)
    return torch.randn(dim, generator=generator, dtype=torch.float64)


def check_input_bound(security: str, input_bound: float | None) -> None:
    """Refuse ``input_bound`` (the aggregation job's `--input-bound`) outside ``security = "malicious"``, in one
    line: only the authenticated sum checks it (:mod:`mpcdp.mpc.bounded`)."""
    if input_bound is not None and security != "malicious":
        raise ConfigError("`--input-bound` is checked inside the MPC under `--security malicious` only "
                          "(semi-honest parties clip their own inputs)")


def reveal_aggregate(ctx: MpcContext, vector: torch.Tensor, input_bound: float | None = None) -> torch.Tensor:
    """The opened sum of every party's ``vector``: semi-honest, or authenticated and MAC-checked under
    ``security = "malicious"`` (:mod:`mpcdp.mpc.authenticated`), where ``input_bound`` (an L2 norm) makes every
    party's vector checked against it inside the MPC before the sum is opened (:mod:`mpcdp.mpc.bounded`)."""
    check_input_bound(ctx.config.security, input_bound)
    if ctx.config.security != "malicious":
        shared = secure_sum(ctx, vector, field="local")
        return ctx.reveal(shared, label="aggregate", reason="output of the aggregation job")
    scaled = checked_scaled(ctx, vector, weight=1.0, field="local")
    bits = ctx.config.precision_bits
    encoded = ctx.encode(scaled, field="local")
    if input_bound is None:
        total = input_sum(ctx, encoded, precision=bits, label="aggregate")
    else:
        total = bounded_sum(ctx, encoded, unit_bound(input_bound, encoded.numel(), bits), precision=bits,
                            label="aggregate")
    return reveal_checked(ctx, total, label="aggregate", reason="output of the aggregation job, MAC-checked")


@covers_malicious
def aggregate_party(ctx: MpcContext, dim: int, seed: int | None = None,
                    local: list[float] | None = None, input_bound: float | None = None) -> dict[str, Any]:
    """Party function: securely aggregate this party's vector (each checked against ``input_bound`` in L2 under
    ``security = "malicious"`` when given); report what this party measured."""
    vector = torch.tensor(local, dtype=torch.float64) if local is not None else local_vector(dim, ctx.rank, seed)
    meter = WireMeter()
    start = time.perf_counter()
    with meter:
        aggregate = reveal_aggregate(ctx, vector, input_bound)
    wall_s = time.perf_counter() - start
    opening = next(o for o in ctx.openings if o.label == "aggregate")
    return {
        "rank": ctx.rank,
        "local": vector.tolist(),
        "aggregate": aggregate.tolist(),
        "bytes_sent": meter.bytes_sent,
        "opening_bytes_sent": opening.bytes_sent,
        "rounds": ctx.rounds,
        "openings": [(o.label, o.elements) for o in ctx.openings if o.kind != "public"],
        "wall_s": wall_s,
        "links": ctx.links,
    }


def aggregate_job(dim: int, input_bound: float | None) -> dict[str, Any]:
    """The job description every party compares at the handshake (the bound only when given)."""
    return {"name": "aggregate", "dim": dim, **({} if input_bound is None else {"input_bound": input_bound})}


def error_bound(parties: int, precision_bits: int) -> float:
    """Largest possible |opened − exact| per element: round-to-nearest encoding at each party."""
    return parties * 2.0 ** -(precision_bits + 1)


def check(results: list[dict[str, Any]], precision_bits: int) -> dict[str, Any]:
    """Compare the opened aggregate with the plaintext sum; summarise the parties' measurements."""
    parties = len(results)
    exact = torch.tensor([r["local"] for r in results], dtype=torch.float64).sum(0)
    opened = [torch.tensor(r["aggregate"], dtype=torch.float64) for r in results]
    agree = all(torch.equal(opened[0], o) for o in opened)
    error = (opened[0] - exact).abs().max().item()
    sent = [r["bytes_sent"] for r in results]
    return {
        "parties": parties,
        "dim": len(results[0]["local"]),
        "max_abs_error": error,
        "error_bound": error_bound(parties, precision_bits),
        "all_parties_agree": agree,
        "bytes_per_party": max(sent) if None not in sent else None,
        "opening_bytes_per_party": max(r["opening_bytes_sent"] for r in results)
        if None not in [r["opening_bytes_sent"] for r in results] else None,
        "rounds": max(r["rounds"] for r in results),
        "protocol_wall_s": max(r["wall_s"] for r in results),
    }
