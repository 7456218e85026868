"""DP-AGD (Lee & Kifer, KDD 2018): full-batch gradient descent with an adaptive per-step privacy budget.

A central baseline of paper 002's Table 2 (plaintext, one data holder); it runs on the ``simulated``
backend only — its step-size selection evaluates the loss at every candidate step, which the paper's MPC
design has no counterpart for.

Privacy: the whole run spends at most ρ_total in zCDP under a privacy filter (Lee & Kifer's accounting; a
filter is valid for zCDP/RDP, Feldman & Zrnic 2021), certified in (ε, δ) by
:func:`mpcdp.accounting.certify.zcdp_certificate`. Adjacency: replace-one.
  * noisy gradient: Σ_i clip_C(∇f_i(θ)) + N(0, σ²) with σ = 2C/√(2ρ_ng)  (Gaussian, ρ_ng-zCDP);
  * step-size selection: exponential mechanism (Gumbel max) over candidates α ∈ Φ = {0, α_max/k, …, α_max}
    with score −Σ_i clip_B(f_i(θ − α·g̃) − f_i(θ)) (sensitivity 2B) at ε_em = √(8ρ_sel) — ρ_sel-zCDP
    (bounded-range exponential mechanism, Cesar & Rogers 2021);
  * if α = 0 wins, the gradient budget grows to (1 + growth)·ρ_ng: a fresh gradient at the extra budget,
    combined with the old one by precision weights (Lee & Kifer's GradAvg), and the selection is repeated.
The run stops before any release would overdraw ρ_total. Every α_max update uses released values only.

Security model: that accounting is for idealised noise — exact real-valued Gaussians and an exact exponential
mechanism. What the run releases is float64 noise (:func:`mpcdp.noise.modes.csprng_normal`'s Box–Muller and
:func:`_csprng_gumbel`'s float Gumbel-max), whose rounding no mpcdp certificate covers (floating-point noise can
leak, Mironov 2012). Reports therefore print no certified ε for DP-AGD: ``epsilon`` is None, and the idealised ε
is ``epsilon_idealised_noise`` with ``epsilon_not_certified_because``
(:data:`mpcdp.learning.algorithms.DPAGD_NOT_CERTIFIED`). It is a plaintext baseline, for comparison only.
"""

from __future__ import annotations

import dataclasses
import math
import secrets
from typing import Sequence

import numpy as np
import torch

from mpcdp.errors import ConfigError
from mpcdp.learning.clipping import clip_rows
from mpcdp.learning.dpsrm import Shard, SrmResult
from mpcdp.learning.logreg import per_example_gradients, per_example_losses
from mpcdp.noise.modes import csprng_normal
from mpcdp.validation import check_number, require_integers, require_positive


def _csprng_gumbel(k: int) -> np.ndarray:
    """k standard Gumbel values from 53-bit uniforms of the OS CSPRNG (selection noise is privacy noise)."""
    raw = np.frombuffer(secrets.token_bytes(8 * k), dtype="<u8")
    u = ((raw >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53
    return -np.log(-np.log(u))


@dataclasses.dataclass(frozen=True, kw_only=True)
class AgdParameters:
    """DP-AGD hyper-parameters (defaults after Lee & Kifer's experiments, scaled to a9a)."""

    rho_total: float = 0.0  # set from (ε, δ) by the caller
    c1: float = 1.0  # per-example gradient clip C
    loss_clip: float = 0.05  # per-example loss-difference clip B
    initial_steps: int = 100  # the first ρ_ng = ρ_total / initial_steps
    selection_share: float = 0.2  # ρ_sel = selection_share · ρ_ng at the start
    growth: float = 0.1  # ρ_ng ← (1 + growth)·ρ_ng when no step size helps
    candidates: int = 20
    step_max: float = 2.0  # α_max at the start
    step_update_every: int = 10  # α_max ← 1.5·(largest α chosen in the last window)
    max_steps: int = 10_000
    seed: int = 0

    def __post_init__(self) -> None:
        require_integers(self, ("initial_steps", "candidates", "step_update_every", "max_steps"))
        require_positive(self, ("c1", "loss_clip", "selection_share", "growth", "step_max"))
        check_number(self.rho_total, "rho_total", low=0, low_open=False)


@dataclasses.dataclass
class AgdResult(SrmResult):
    rho_spent: float = 0.0
    data_passes: float = 0.0


def run_dpagd(shards: Sequence[Shard], params: AgdParameters, *, dim: int) -> AgdResult:
    """DP-AGD over the pooled shards (central; plaintext noise from a CSPRNG)."""
    if params.rho_total <= 0:
        raise ConfigError(f"`rho_total` must be > 0 for DP-AGD. Found {params.rho_total!r}.")
    x = torch.cat([s.x for s in shards])
    y = torch.cat([s.y for s in shards])
    n = len(y)
    theta = torch.zeros(dim, dtype=torch.float64)
    iterates = [theta]
    released: list[torch.Tensor] = []
    norms: list[float] = []
    remaining = params.rho_total
    rho_ng = params.rho_total / params.initial_steps
    rho_sel = params.selection_share * rho_ng
    step_max, window_best, passes = params.step_max, 0.0, 0.0

    def noisy_gradient(rho: float) -> torch.Tensor:
        nonlocal passes
        passes += 1
        total = clip_rows(per_example_gradients(theta, x, y), params.c1).sum(0)
        sigma = 2 * params.c1 / math.sqrt(2 * rho)
        return (total + sigma * torch.from_numpy(csprng_normal(dim))) / n

    while remaining >= rho_ng + rho_sel and len(released) < params.max_steps:
        gradient, rho_used = noisy_gradient(rho_ng), rho_ng
        remaining -= rho_ng
        released.append(gradient)
        chosen = 0.0
        while True:
            steps = torch.linspace(0, step_max, params.candidates + 1, dtype=torch.float64)
            base = per_example_losses(theta, x, y)
            deltas = torch.stack([per_example_losses(theta - a * gradient, x, y) - base for a in steps[1:]])
            passes += 1
            scores = -deltas.clamp(-params.loss_clip, params.loss_clip).sum(1)
            scores = torch.cat([torch.zeros(1, dtype=torch.float64), scores])
            epsilon_em = math.sqrt(8 * rho_sel)
            noisy = scores.numpy() * epsilon_em / (2 * 2 * params.loss_clip) + _csprng_gumbel(len(scores))
            remaining -= rho_sel
            pick = int(np.argmax(noisy))
            if pick > 0:
                chosen = float(steps[pick])
                break
            extra = params.growth * rho_ng
            if remaining < extra + rho_sel:
                break
            fresh = noisy_gradient(extra)
            remaining -= extra
            gradient = (rho_used * gradient + extra * fresh) / (rho_used + extra)
            rho_used += extra
            rho_ng *= 1 + params.growth
            released.append(gradient)
        norms.append(float(gradient.norm()))
        theta = theta - chosen * gradient
        iterates.append(theta)
        window_best = max(window_best, chosen)
        if len(iterates) % params.step_update_every == 0 and window_best > 0:
            step_max, window_best = 1.5 * window_best, 0.0
    return AgdResult(theta_output=theta, theta_last=theta, released=released, grad_norms=norms,
                     iterates=iterates, rho_spent=params.rho_total - remaining, data_passes=passes)
