"""Paper 002 §6.1's model: logistic regression with the nonconvex regulariser λ·Σ θ²/(1 + θ²), λ = 0.001.

f_i(θ) = log(1 + exp(−y_i·x_iᵀθ)) + λ·Σ_k θ_k²/(1 + θ_k²),   y_i ∈ {−1, +1}.

Per-example gradients are computed for a whole batch at once with ``torch.func`` (vmap of grad), never with a
Python loop over examples. The per-example regulariser gradient is included in every f_i, as in the paper's
finite-sum objective F = (1/n)·Σ f_i.
"""

from __future__ import annotations

import torch
from torch.func import grad, vmap

LAMBDA = 1e-3


def example_loss(theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, lam: float = LAMBDA) -> torch.Tensor:
    """f_i(θ) for one example."""
    margin = y * (x @ theta)
    return torch.nn.functional.softplus(-margin) + lam * (theta**2 / (1 + theta**2)).sum()


def loss(theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, lam: float = LAMBDA) -> torch.Tensor:
    """F(θ) = mean of f_i over the rows of x."""
    margins = y * (x @ theta)
    return torch.nn.functional.softplus(-margins).mean() + lam * (theta**2 / (1 + theta**2)).sum()


def per_example_losses(theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, lam: float = LAMBDA) -> torch.Tensor:
    """f_i(θ) for every row i of x: shape (batch,)."""
    margins = y * (x @ theta)
    return torch.nn.functional.softplus(-margins) + lam * (theta**2 / (1 + theta**2)).sum()


def error_rate(theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> float:
    """Misclassification rate of sign(xᵀθ) (a zero score counts as +1)."""
    predictions = torch.where(x @ theta >= 0, 1.0, -1.0).to(y.dtype)
    return float((predictions != y).to(torch.float64).mean())


_per_example = vmap(grad(example_loss), in_dims=(None, 0, 0, None))


def per_example_gradients(theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
                          lam: float = LAMBDA) -> torch.Tensor:
    """∇f_i(θ) for every row i of x: shape (batch, d)."""
    return _per_example(theta, x, y, lam)


_at_several = vmap(_per_example, in_dims=(0, None, None, None))


def per_example_gradients_at(thetas: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
                             lam: float = LAMBDA) -> torch.Tensor:
    """∇f_i(θ_k) for every θ_k (rows of ``thetas``) and every row i of x, in one call: shape (k, batch, d).
    DP-SRM needs the same batch at θᵗ⁺¹ and θᵗ each step."""
    return _at_several(thetas, x, y, lam)


def warm_up() -> None:
    """Run the vectorized gradient once on a tiny batch: torch.func's first call imports torch._dynamo
    (seconds), which belongs to process set-up, not to the timed training."""
    per_example_gradients_at(torch.zeros(2, 1, dtype=torch.float64), torch.zeros(1, 1, dtype=torch.float64),
                             torch.ones(1, dtype=torch.float64))
