"""Paper 002 §6.1's model: logistic regression with the nonconvex regulariser λ·Σ θ²/(1 + θ²), λ = 0.001.

f_i(θ) = log(1 + exp(−y_i·x_iᵀθ)) + λ·Σ_k θ_k²/(1 + θ_k²),   y_i ∈ {−1, +1}.

Per-example gradients are computed for a whole batch at once with ``torch.func`` (vmap of grad), never with a
Python loop over examples. The per-example regulariser gradient is included in every f_i, as in the paper's
finite-sum objective F = (1/n)·Σ f_i.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.func import grad, vmap

from mpcdp.errors import InputError

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


class LogisticModel:
    """This module's model behind the interface every model shares (:mod:`mpcdp.learning.models`; also
    :class:`mpcdp.learning.cnn.CnnSpec`): for the training loops ``initial_theta(dim, seed)``,
    ``per_example_gradients(θ, x, y)``, ``per_example_gradients_at(θs, x, y)``, ``clipped_gradient_sum(θ, x, y, C)``
    (here in closed form); for runs and reports ``loss``, ``error_rate``, ``labels``, ``dimension``,
    ``check_inputs`` and ``optimum`` (the reference of the optimality gap; None where there is none)."""

    name = "logreg"
    kind = "logreg"

    def __reduce__(self) -> str:
        return "LOGISTIC"  # pickled as a reference to the module's one instance, so `model is LOGISTIC` holds
    feature_rows = True  # inputs are feature rows (``normalize_rows`` applies)
    loss = staticmethod(loss)
    error_rate = staticmethod(error_rate)

    @staticmethod
    def labels(values) -> torch.Tensor:
        """±1 labels as float64."""
        return torch.tensor(np.asarray(values), dtype=torch.float64)  # a copy: the values may be read-only

    @staticmethod
    def dimension(x: torch.Tensor) -> int:
        return int(x.shape[1])

    @staticmethod
    def check_inputs(shape: tuple[int, ...], dataset: str) -> None:
        from mpcdp.errors import ConfigError

        if len(shape) != 1:
            raise ConfigError(f"dataset {dataset!r} holds images of shape {tuple(shape)}: logistic regression takes "
                              f"feature rows; set `model` to a network for images.")

    @staticmethod
    def optimum(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return optimum(x, y)

    @staticmethod
    def initial_theta(dim: int, seed: int = 0) -> torch.Tensor:
        """θ⁰ = 0 (paper 002 §6.1)."""
        return torch.zeros(dim, dtype=torch.float64)

    per_example_gradients = staticmethod(per_example_gradients)
    per_example_gradients_at = staticmethod(per_example_gradients_at)

    @staticmethod
    def clipped_gradient_sum(theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, bound: float) -> torch.Tensor:
        return clipped_gradient_sum(theta, x, y, bound)


LOGISTIC = LogisticModel()


def clipped_gradient_sum(theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, bound: float,
                         lam: float = LAMBDA, *, row_sq_norms: torch.Tensor | None = None,
                         row_weights: torch.Tensor | None = None) -> torch.Tensor:
    """Σ_i clip_C(∇f_i(θ)) over the rows of x in closed form — equal to
    ``clip_rows(per_example_gradients(θ, x, y), C).sum(0)`` without materialising the (batch, d) gradients.

    ∇f_i(θ) = a_i·x_i + r(θ) with a_i = −y_i·sigmoid(−y_i·x_iᵀθ) and r the regulariser's gradient (the same for
    every i), so ‖∇f_i‖² = a_i²‖x_i‖² + 2a_i·x_iᵀr + ‖r‖² and the clipped sum is Xᵀ(s·a) + (Σ s_i)·r with
    s_i = min(1, C/‖∇f_i‖): one (n, d)×(d, 2) and one (d, n)×(n,) product instead of a (batch, d) tensor
    (full-batch a9a: ~20× faster). ``row_sq_norms``: the ‖x_i‖², when the caller keeps them across steps;
    ``row_weights``: w_i multiplying each clipped row (Σ_i w_i·clip_C(∇f_i(θ))), e.g. 1/n_j for party j's rows.
    Batched: θ of shape (k, d) with x (k, n, d) and y (k, n) gives k sums at once (k models on k datasets).
    """
    if not bound > 0:
        raise InputError(f"`gradients` clipping bound must be > 0. Found {bound!r}.")
    if row_sq_norms is None:
        row_sq_norms = (x * x).sum(-1)
    r = lam * 2 * theta / (1 + theta**2) ** 2
    products = x @ torch.stack([theta, r], -1)
    a = -y * torch.sigmoid(-y * products[..., 0])
    norms_sq = a * a * row_sq_norms + 2 * a * products[..., 1] + (r * r).sum(-1, keepdim=True)
    if not torch.isfinite(norms_sq).all():
        bad = int((~torch.isfinite(norms_sq)).sum())
        raise InputError(f"`gradients` has {bad} rows with NaN/Inf entries")
    scale = torch.clamp(bound / norms_sq.clamp(min=1e-60).sqrt(), max=1.0)
    if row_weights is not None:
        scale = scale * row_weights
    return ((scale * a).unsqueeze(-2) @ x).squeeze(-2) + scale.sum(-1, keepdim=True) * r


def optimum(x: torch.Tensor, y: torch.Tensor, lam: float = LAMBDA) -> torch.Tensor:
    """The non-private minimiser θ* of F over the rows of x (L-BFGS with strong Wolfe line search, from 0): the
    reference of the optimal gap F(θ) − F(θ*). F is nonconvex through the regulariser; for the data here
    (λ = 1e-3) L-BFGS settles at a point with ‖∇F‖ < 1e-6."""
    theta = torch.zeros(x.shape[1], dtype=torch.float64, requires_grad=True)
    solver = torch.optim.LBFGS([theta], max_iter=500, line_search_fn="strong_wolfe", tolerance_grad=1e-10,
                               tolerance_change=1e-12)

    def closure():
        solver.zero_grad()
        value = loss(theta, x, y, lam)
        value.backward()
        return value

    for _ in range(5):
        solver.step(closure)
    return theta.detach()


def warm_up() -> None:
    """Run the vectorized gradient once on a tiny batch: torch.func's first call imports torch._dynamo
    (seconds), which belongs to process set-up, not to the timed training."""
    per_example_gradients_at(torch.zeros(2, 1, dtype=torch.float64), torch.zeros(1, 1, dtype=torch.float64),
                             torch.ones(1, dtype=torch.float64))
