"""WD-DP's Algorithm 1 as written (paper 000): local noisy training, then one weighted model average.

Every party j starts from θ⁰ = 0 and runs T full-batch steps on its own data alone,
    θ ← θ − η·((1/n_j)·Σ_i clip_G(∇f_i(θ)) + z),   z ~ N(0, σ_j²·I),
each noisy gradient formed on party j's release grid: (round(2^p·g) + N)·2^-p with N the exact discrete Gaussian
of :mod:`mpcdp.noise.discrete_gaussian` and the rounding in the integer sensitivity
(:func:`mpcdp.accounting.distributed.local_releases_for`), so the certificate is about these bits; then the server returns θ^(c) = Σ_j (n_j/n)·θ_T^(j). Each local model leaves its party, so its records are
protected only by that party's own noise: see :class:`mpcdp.accounting.distributed.LocalNoise` for the ε this
really certifies. Simulation only (one process holds every shard): there is no secure step to run — the
aggregation is of released models.

The iterates reported are the weighted averages Σ_j (n_j/n)·θ_t^(j) (what the server would return after t
steps), so the usual output rules and error curves apply.
"""

from __future__ import annotations

from typing import Sequence

import torch

from mpcdp.accounting.grid import GridRelease, encode
from mpcdp.errors import ConfigError
from mpcdp.learning.baselines import SgdParameters
from mpcdp.learning.dpsrm import Shard, SrmResult
from mpcdp.learning.logreg import clipped_gradient_sum
from mpcdp.noise.discrete_gaussian import plan_of, sample_plain


def run_local_then_average(shards: Sequence[Shard], params: SgdParameters, releases: Sequence[GridRelease | None],
                           *, dim: int, noise_seed: int | None = None) -> SrmResult:
    """Algorithm 1 of paper 000 over ``shards``: party j's T gradients released on ``releases[j]``'s grid with
    its discrete Gaussian noise (None: no noise, exact gradients).

    ``noise_seed``: reproducible noise for tests; None draws from the OS CSPRNG.
    """
    if len(releases) != len(shards):
        raise ConfigError(f"`releases` needs one entry per party: {len(releases)} for {len(shards)} parties")
    sizes = [len(s.y) for s in shards]
    if min(sizes) < 1:
        raise ConfigError(f"party {sizes.index(min(sizes))} has no records")
    n = sum(sizes)
    weights = [n_j / n for n_j in sizes]
    trajectories = []
    for j, (shard, release) in enumerate(zip(shards, releases)):
        if release is not None:
            if release.dim != dim:
                raise ConfigError(f"`releases` (party {j}) is for d = {release.dim}; the model has d = {dim}")
            units, _ = sample_plain(plan_of(release), params.steps * dim, seed=noise_seed, stream=shard.party)
            noise = torch.from_numpy(units).reshape(params.steps, dim)
        row_sq_norms = (shard.x * shard.x).sum(1)
        theta = torch.zeros(dim, dtype=torch.float64)
        path = [theta]
        for t in range(params.steps):
            gradient = clipped_gradient_sum(theta, shard.x, shard.y, params.c1, row_sq_norms=row_sq_norms) / sizes[j]
            if release is not None:  # the noisy gradient on its grid, in units of 2^-p
                gradient = (encode(gradient, release.precision) + noise[t]).to(torch.float64) * 2.0**-release.precision
            theta = theta - params.learning_rate * gradient
            path.append(theta)
        trajectories.append(torch.stack(path))
    averaged = sum((w * path for w, path in zip(weights, trajectories)), torch.zeros((), dtype=torch.float64))
    iterates = list(averaged.unbind(0))
    finals = [path[-1] for path in trajectories]
    return SrmResult(theta_output=iterates[-1], theta_last=iterates[-1], released=finals,
                     grad_norms=[float(f.norm()) for f in finals], iterates=iterates)
