"""WD-DP's Algorithm 1 as written (paper 000): local noisy training, then one weighted model average.

Every party j starts from θ⁰ = 0 and runs T full-batch steps on its own data alone,
    θ ← θ − η·((1/n_j)·Σ_i clip_G(∇f_i(θ)) + z),   z ~ N(0, σ_j²·I),
then the server returns θ^(c) = Σ_j (n_j/n)·θ_T^(j). Each local model leaves its party, so its records are
protected only by that party's own noise: see :class:`mpcdp.accounting.distributed.LocalNoise` for the ε this
really certifies. Simulation only (one process holds every shard): there is no secure step to run — the
aggregation is of released models.

The iterates reported are the weighted averages Σ_j (n_j/n)·θ_t^(j) (what the server would return after t
steps), so the usual output rules and error curves apply.
"""

from __future__ import annotations

from typing import Sequence

import torch

from mpcdp.errors import ConfigError
from mpcdp.learning.baselines import SgdParameters
from mpcdp.learning.dpsrm import Shard, SrmResult
from mpcdp.learning.logreg import clipped_gradient_sum
from mpcdp.noise.modes import csprng_normal


def run_local_then_average(shards: Sequence[Shard], params: SgdParameters, sigmas: Sequence[float], *, dim: int,
                           noise_seed: int | None = None) -> SrmResult:
    """Algorithm 1 of paper 000 over ``shards`` (party j adds N(0, sigmas[j]²) to each of its T gradients).

    ``noise_seed``: reproducible noise for tests; None draws from the OS CSPRNG.
    """
    if len(sigmas) != len(shards):
        raise ConfigError(f"`sigmas` needs one entry per party: {len(sigmas)} for {len(shards)} parties")
    sizes = [len(s.y) for s in shards]
    if min(sizes) < 1:
        raise ConfigError(f"party {sizes.index(min(sizes))} has no records")
    n = sum(sizes)
    weights = [n_j / n for n_j in sizes]
    trajectories = []
    for j, (shard, sigma) in enumerate(zip(shards, sigmas)):
        noise = torch.from_numpy(csprng_normal(params.steps * dim, seed=noise_seed, stream=shard.party)
                                 ).reshape(params.steps, dim) * sigma
        row_sq_norms = (shard.x * shard.x).sum(1)
        theta = torch.zeros(dim, dtype=torch.float64)
        path = [theta]
        for t in range(params.steps):
            gradient = clipped_gradient_sum(theta, shard.x, shard.y, params.c1, row_sq_norms=row_sq_norms) / sizes[j]
            theta = theta - params.learning_rate * (gradient + noise[t])
            path.append(theta)
        trajectories.append(torch.stack(path))
    averaged = sum(w * path for w, path in zip(weights, trajectories))
    iterates = list(averaged.unbind(0))
    finals = [path[-1] for path in trajectories]
    return SrmResult(theta_output=iterates[-1], theta_last=iterates[-1], released=finals,
                     grad_norms=[float(f.norm()) for f in finals], iterates=iterates)
