"""Baselines on the same data, backends and budget as DP-SRM (paper 002 §6.1, Table 2).

* DP-SGD (Abadi et al. 2016): θ ← θ − η·((1/B)·Σ_i clip_C(∇f_i(θ)) + u), batches drawn without replacement
  (accounted as such, replace-one), u ~ N(0, σ²).
* DP-GD (Wang, Ye, Xu 2017): the same with the full training set every step (exact Gaussian composition).
* RRPSGD (Zhang et al. 2017, "random round private SGD"): DP-SGD's noisy steps, output θ_R with R drawn
  uniformly from 1..T independently of the data (Ghadimi & Lan's random stopping), so it is accounted as T
  steps of DP-SGD. The paper accounts it with strong composition; mpcdp certifies it with the same RDP
  accountant as DP-SGD, which can only help the baseline.
* DP-AGD (Lee & Kifer 2018) lives in :mod:`mpcdp.learning.dpagd` (its adaptive budget does not fit a fixed σ).
* STORM (Cutkosky & Orabona 2019): DP-SRM's estimator without noise — the non-private reference; run it with
  :func:`mpcdp.learning.dpsrm.run_srm` and zero noise.
Each runner has DP-SRM's signature so both backends (:mod:`mpcdp.learning.backends`) run it unchanged.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np
import torch

from mpcdp.errors import ConfigError
from mpcdp.learning.clipping import clip_rows
from mpcdp.learning.dpsrm import Aggregate, Shard, SrmResult
from mpcdp.learning.logreg import per_example_gradients
from mpcdp.validation import require_integers, require_positive


@dataclasses.dataclass(frozen=True, kw_only=True)
class SgdParameters:
    """DP-SGD / DP-GD hyper-parameters. ``batch`` is per party (ignored by DP-GD, which uses every record)."""

    steps: int
    batch: int = 1
    c1: float = 1.0
    learning_rate: float = 0.5
    seed: int = 0
    full_batch: bool = False
    n_total: int = 0  # every party's records together (public), the DP-GD divisor
    random_round: bool = False  # RRPSGD: output θ_R, R uniform on 1..T

    def __post_init__(self) -> None:
        require_integers(self, ("steps", "batch"))
        require_positive(self, ("c1", "learning_rate"))
        if self.full_batch and self.n_total < 1:
            raise ConfigError(f"DP-GD needs `n_total` >= 1. Found {self.n_total!r}.")


def run_sgd(shards: Sequence[Shard], params: SgdParameters, aggregate: Aggregate, *, dim: int,
            batch_sizes: Sequence[int], **_unused) -> SrmResult:
    """DP-SGD (or DP-GD with ``params.full_batch``) over the shards held here; the output is the last iterate,
    or θ_R for RRPSGD (``params.random_round``)."""
    divisor = float(params.n_total if params.full_batch else sum(batch_sizes))
    rngs = {s.party: np.random.default_rng([params.seed + 1, s.party]) for s in shards}
    theta = torch.zeros(dim, dtype=torch.float64)
    iterates, released, norms = [theta], [], []
    for t in range(params.steps):
        local = torch.zeros(dim, dtype=torch.float64)
        for s in shards:
            if params.full_batch:
                x, y = s.x, s.y
            else:
                if params.batch > len(s.y):
                    raise ConfigError(f"`batch` {params.batch} exceeds party {s.party}'s {len(s.y)} records")
                idx = torch.from_numpy(rngs[s.party].choice(len(s.y), size=params.batch, replace=False))
                x, y = s.x[idx], s.y[idx]
            local += clip_rows(per_example_gradients(theta, x, y), params.c1).sum(0)
        v = aggregate(t, local / divisor)
        released.append(v)
        norms.append(float(v.norm()))
        theta = theta - params.learning_rate * v
        iterates.append(theta)
    output = theta
    if params.random_round:
        output = iterates[int(np.random.default_rng([params.seed, 10_009]).integers(1, params.steps + 1))]
    return SrmResult(theta_output=output, theta_last=theta, released=released, grad_norms=norms, iterates=iterates)
