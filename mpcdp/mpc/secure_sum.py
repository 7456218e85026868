"""Secure aggregation: the (public-weighted) sum of every party's private tensor, kept secret-shared.

Paper 002, Algorithm 2 (DDP-SRM), line "aggregate the parties' local gradients inside MPC"; Jayaraman et
al. (NeurIPS 2018) and WD-DP (paper 000) use the same primitive with weights 1/m or n_j/n.

Security model: semi-honest data parties, private authenticated links. The result is a fresh sharing of
Σ_j w_j·x_j; before an explicit ``ctx.reveal`` nobody learns anything about it, and opening it reveals the
aggregate only — to any coalition missing at least one party, every other party's input stays hidden
beyond what the aggregate implies (pairwise masks, :mod:`mpcdp.mpc.masks`). No dealer is involved.

Steps (every party j, in lockstep):
  1. Check the local tensor: non-empty, finite, within the fixed-point range; encode w_j·x_j to fixed
     point with round-to-nearest (|error| <= 2^-(bits+1) per element per party).
  2. Handshake (1 round, public metadata): every party sends (input problem?, digest of its shape) as
     two int64s. A problem at any party — or differing shapes — raises the same error on every party,
     naming the party and the field, before any share is sent (the details travel in one more
     exchange, on this error path only).
  3. s_j = enc(w_j·x_j) + pairwise zero-sum mask: party j's share of the aggregate. No communication.

Declared cost (:func:`declared_cost`): 1 metadata round (every party sends 2 int64 to every other), 0 bytes
of shares, no dealer material. Opening the result afterwards (:meth:`~mpcdp.transport.mesh.Mesh.open_shares`)
is 1 round between 2 parties (8d bytes each way); for more parties, while (m−1)·8d ≤ 64 KiB, a star through party 0
(2 rounds; 8d bytes sent per party, (m−1)·8d by party 0), beyond it reduce-scatter + all-gather (2 rounds,
≈ 2(m−1)/m·8d bytes per party); plus a 16-byte frame header per message.
Error of the opened aggregate: at most m·2^-(bits+1) per element (encoding only; the ring sum is exact).
"""

from __future__ import annotations

import hashlib
import math

import torch

from mpcdp.errors import ConfigMismatchError, InputError
from mpcdp.transport import costs
from mpcdp.mpc.context import MpcContext
from mpcdp.mpc.shared import Shared


def local_problem(local: torch.Tensor, weight: float, field: str) -> str | None:
    if not torch.is_tensor(local):
        return f"`{field}` must be a torch.Tensor. Found {type(local).__name__}"
    if not (local.is_floating_point() or local.dtype in (torch.int32, torch.int64)):
        return f"`{field}` must have a float or integer dtype. Found {local.dtype}"
    if local.numel() == 0:
        return f"`{field}` is empty (shape {tuple(local.shape)}): this party has nothing to contribute"
    if not (isinstance(weight, (int, float)) and math.isfinite(weight)):
        return f"`weight` must be a finite number. Found {weight!r}"
    bad = ~torch.isfinite(local.to(torch.float64))
    if bad.any():
        return f"`{field}` contains {int(bad.sum())} NaN/Inf entries"
    return None


def declared_cost() -> costs.DeclaredCost:
    """The handshake only: 1 round exchanging 2 int64 (16 bytes) with every other party; no operations."""
    return costs.DeclaredCost(exchanges=[16])


def secure_sum(ctx: MpcContext, local: torch.Tensor, *, weight: float = 1.0, field: str = "local") -> Shared:
    """Secret-share Σ_j weight_j · local_j over all parties (see the module docstring for steps and cost).

    Args:
        ctx: this party's context.
        local: this party's private tensor; every party must pass the same shape.
        weight: this party's public weight (e.g. n_j / n), applied locally before sharing.
        field: the name used for ``local`` in error messages.

    Returns:
        This party's share of the weighted sum.

    Raises:
        InputError: some party's tensor is empty, has NaN/Inf, or is out of the fixed-point range
            (raised on every party, naming the party).
        ConfigMismatchError: parties passed different shapes.
    """
    return ctx.masked_input(ctx.encode(checked_scaled(ctx, local, weight=weight, field=field), field=field))


def checked_scaled(ctx: MpcContext, local: torch.Tensor, *, weight: float, field: str) -> torch.Tensor:
    """``weight · local`` once every party's tensor passed steps 1–2 of the module docstring (the handshake of
    validation flags and shape digests); the same refusals as :func:`secure_sum`, on every party."""
    problem = local_problem(local, weight, field)
    shape = tuple(local.shape) if torch.is_tensor(local) else None
    if problem is None:
        scaled = local.to(torch.float64) * float(weight)
        if scaled.abs().max().item() > ctx.max_abs_input:
            problem = (f"`{field}`·weight has entries beyond the fixed-point limit |value| <= "
                       f"{ctx.max_abs_input:.4g}")
    digest = int.from_bytes(hashlib.sha256(repr(shape).encode()).digest()[:8], "little", signed=True)
    summary = ctx.exchange_fixed(torch.tensor([int(problem is not None), digest], dtype=torch.int64),
                                 label="validation flag and shape digest")
    if not summary[:, 0].any() and bool((summary[:, 1] == summary[0, 1]).all()):
        return scaled
    everyone = ctx.exchange_public({"shape": shape, "problem": problem}, label="validation detail (error path)")
    for rank, info in enumerate(everyone):
        if info["problem"] is not None:
            raise InputError(f"party {rank}: {info['problem']}", party=rank)
    shapes = [tuple(info["shape"]) if info["shape"] is not None else None for info in everyone]
    if any(s != shapes[0] for s in shapes):
        odd = next(r for r, s in enumerate(shapes) if s != shapes[0])
        listing = ", ".join(f"party {r} = {s}" for r, s in enumerate(shapes))
        raise ConfigMismatchError(f"`{field}` shapes differ between parties: {listing}", party=odd)
    raise AssertionError("the handshake flagged a difference that the details do not show")


CHUNK_ELEMENTS = 1 << 20


def reveal_sum(ctx: MpcContext, local: torch.Tensor, *, weight: float = 1.0, field: str = "local",
               label: str = "aggregate", reason: str = "output of the aggregation",
               chunk: int | None = None) -> torch.Tensor:
    """Open Σ_j weight_j · local_j (float64, ``local``'s shape) to every party, ``chunk`` elements at a time.

    Each chunk is its own :func:`secure_sum` and opening, written into the output as it arrives, so a party's
    memory beyond its input and the output is O(chunk) instead of several copies of the whole vector.
    Default: chunks of :data:`CHUNK_ELEMENTS` (2^20) for tensors above that, one piece otherwise. The result
    equals the one-piece opening bit for bit (the ring sum of each element is the same). Cost: per chunk one
    validation round and one opening (see the module docstring); the bytes add up to the one-piece ones.
    """
    if chunk is None:
        chunk = CHUNK_ELEMENTS
    if not (isinstance(chunk, int) and not isinstance(chunk, bool) and chunk >= 1):
        raise ValueError(f"`chunk` must be an integer >= 1. Found {chunk!r}.")
    flat = local.reshape(-1) if torch.is_tensor(local) else local
    n = flat.numel() if torch.is_tensor(flat) else 0
    # every party agrees on the number of chunks through the first chunk's shape check
    pieces = max(1, -(-n // chunk))
    out = torch.empty(n, dtype=torch.float64)
    for k in range(pieces):
        part = flat[k * chunk:(k + 1) * chunk] if torch.is_tensor(flat) else flat
        shared = secure_sum(ctx, part, weight=weight, field=field)
        name = label if pieces == 1 else f"{label} [{k + 1}/{pieces}]"
        out[k * chunk:k * chunk + part.numel()] = ctx.reveal(shared, label=name, reason=reason)
        del shared
    return out.reshape(local.shape)
