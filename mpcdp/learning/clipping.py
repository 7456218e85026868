"""Per-example clipping (Abadi et al. 2016), and DP-SRM's clipping of gradient *differences* (paper 002,
Remark 4.3): ‖∇f_i(θ_t) − ∇f_i(θ_{t−1})‖ is clipped to C2 directly — clipping each gradient to C1 and
subtracting would only bound the difference by 2·C1."""

from __future__ import annotations

import torch

from mpcdp.errors import InputError


def clip_rows(rows: torch.Tensor, bound: float, *, field: str = "gradients") -> torch.Tensor:
    """Scale every row of a (batch, d) tensor to L2 norm at most ``bound`` (rows already inside are kept)."""
    if not bound > 0:
        raise InputError(f"`{field}` clipping bound must be > 0. Found {bound!r}.")
    if not torch.isfinite(rows).all():
        bad = int((~torch.isfinite(rows)).any(1).sum())
        raise InputError(f"`{field}` has {bad} rows with NaN/Inf entries")
    norms = rows.norm(dim=1, keepdim=True)
    return rows * torch.clamp(bound / torch.clamp(norms, min=1e-30), max=1.0)


def clipped_differences(current: torch.Tensor, previous: torch.Tensor, bound: float) -> torch.Tensor:
    """Per-example ∇f_i(θ_t) − ∇f_i(θ_{t−1}), each clipped to L2 norm ``bound`` (C2)."""
    if current.shape != previous.shape:
        raise InputError(f"`current` and `previous` gradients differ in shape: {tuple(current.shape)} vs "
                         f"{tuple(previous.shape)}")
    return clip_rows(current - previous, bound, field="gradient differences")
