"""Baselines on the same data, backends and budget as DP-SRM (paper 002 §6.1, Table 2).

* DP-SGD (Abadi et al. 2016): θ ← θ − η·((1/B)·Σ_i clip_C(∇f_i(θ)) + u), batches drawn without replacement
  (accounted as such, replace-one), u ~ N(0, σ²).
* DP-GD (Wang, Ye, Xu 2017): the same with the full training set every step (exact Gaussian composition).
  Over several parties with weights n_j/n this is WD-DP (paper 000) computed inside the MPC; with weights 1/m
  (``weighting="parties"``) it is Jayaraman et al. 2018's plain averaging (see
  :mod:`mpcdp.accounting.distributed` for their sensitivities).
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
from mpcdp.learning.dpsrm import Aggregate, Shard, SrmResult
from mpcdp.learning.logreg import LOGISTIC, clipped_gradient_sum
from mpcdp.randomness import batch_source, sample_without_replacement
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
    weighting: str = "records"  # every record weighs 1/n ("records"), or every party 1/m ("parties")

    def __post_init__(self) -> None:
        require_integers(self, ("steps", "batch"))
        require_positive(self, ("c1", "learning_rate"))
        if self.full_batch and self.n_total < 1:
            raise ConfigError(f"DP-GD needs `n_total` >= 1. Found {self.n_total!r}.")
        if self.weighting not in WEIGHTINGS:
            raise ConfigError(f"`weighting` must be one of {list(WEIGHTINGS)}. Found {self.weighting!r}.")

    def term_bound(self, release: int, batch_sizes: Sequence[int], batch0_sizes: Sequence[int]) -> float:
        """The L2 norm one party's term has at most (:mod:`mpcdp.learning.term_bounds`), at every release: C1/m
        under plain averaging (weights ``parties``); C1·b/B with mini-batches (b the largest party batch, B the
        combined); C1 in full batch (the party's share n_j/n is its own record count, not given here)."""
        if self.weighting == "parties":
            return self.c1 / len(batch_sizes)
        if self.full_batch:
            return self.c1
        return self.c1 * max(batch_sizes) / sum(batch_sizes)


WEIGHTINGS = ("records", "parties")


def party_divisor(params: SgdParameters, shard: Shard, batch_sizes: Sequence[int]) -> float:
    """What party ``shard`` divides its clipped-gradient sum by: n (full batch) or B (the combined batch) when
    every record weighs the same; m·n_j (or m·b_j) under plain averaging, so its term is (1/m)·its average."""
    own = len(shard.y) if params.full_batch else params.batch
    if params.weighting == "parties":
        return float(len(batch_sizes) * own)
    return float(params.n_total if params.full_batch else sum(batch_sizes))


def run_sgd(shards: Sequence[Shard], params: SgdParameters, aggregate: Aggregate, *, dim: int,
            batch_sizes: Sequence[int], model=LOGISTIC, batch_key: int | None = None, **_unused) -> SrmResult:
    """DP-SGD (or DP-GD with ``params.full_batch``) over the shards held here; the output is the last iterate,
    or θ_R for RRPSGD (``params.random_round``). ``model``: logistic regression, or a CNN of
    :mod:`mpcdp.learning.cnn` (mini-batch only). ``batch_key``: a secret key for the mini-batch generators
    (secure training, :func:`mpcdp.randomness.batch_key`: ChaCha20 streams); None draws them from ``params.seed``."""
    if params.full_batch and model is not LOGISTIC:
        raise ConfigError(f"full-batch training is implemented for logistic regression only. Found model "
                          f"{getattr(model, 'name', model)!r}.")
    rngs = {s.party: batch_source(batch_key, params.seed + 1, s.party) for s in shards}
    if params.full_batch:  # every record of the shards held here, each row weighted by 1/(its party's divisor)
        pooled_x = torch.cat([s.x for s in shards])
        pooled_y = torch.cat([s.y for s in shards])
        pooled_sq = (pooled_x * pooled_x).sum(1)
        pooled_w = torch.cat([torch.full((len(s.y),), 1 / party_divisor(params, s, batch_sizes), dtype=torch.float64)
                              for s in shards])
    theta = model.initial_theta(dim, params.seed)
    iterates, released, norms = [theta], [], []
    for t in range(params.steps):
        if params.full_batch:
            local = clipped_gradient_sum(theta, pooled_x, pooled_y, params.c1, row_sq_norms=pooled_sq,
                                         row_weights=pooled_w)
        else:
            local = torch.zeros(dim, dtype=torch.float64)
            for s in shards:
                if params.batch > len(s.y):
                    raise ConfigError(f"`batch` {params.batch} exceeds party {s.party}'s {len(s.y)} records")
                idx = torch.from_numpy(sample_without_replacement(rngs[s.party], len(s.y), params.batch))
                local += model.clipped_gradient_sum(theta, s.x[idx], s.y[idx], params.c1) / \
                    party_divisor(params, s, batch_sizes)
        v = aggregate(t, local)
        released.append(v)
        norms.append(float(v.norm()))
        theta = theta - params.learning_rate * v
        iterates.append(theta)
    output = theta
    if params.random_round:
        output = iterates[int(np.random.default_rng([params.seed, 10_009]).integers(1, params.steps + 1))]
    return SrmResult(theta_output=output, theta_last=theta, released=released, grad_norms=norms, iterates=iterates)
