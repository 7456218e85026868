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
    """The non-private minimiser θ* of F over the rows of x, from 0: the reference of the optimal gap
    F(θ) − F(θ*). F is nonconvex through the regulariser, so the method is fixed, not just the result:

    * Newton's method (:func:`newton_optimum`) while F is strongly convex on its whole path — every Hessian it
      meets has eigenvalues >= 1e-6 — until ‖∇F‖ <= 1e-10 (a9a: 8 steps, the same F(θ*) as L-BFGS to 1e-11);
    * otherwise L-BFGS with strong Wolfe line search (:func:`lbfgs_optimum`), the method before Newton was
      tried first: a path that meets negative or vanishing curvature (a9a with unit rows, the breast-cancer
      and lending-club data, separable rows) keeps the reference it always had.

    Cost: Newton, one (d × n)·(n × d) product per step; L-BFGS, about 70 loss and gradient evaluations, and
    its first call in a process imports ``torch._dynamo`` (about 1.4 s; torch.optim does), which Newton
    avoids."""
    theta = newton_optimum(x, y, lam)
    return theta if theta is not None else lbfgs_optimum(x, y, lam)


def newton_optimum(x: torch.Tensor, y: torch.Tensor, lam: float = LAMBDA, *, tolerance: float = 1e-10,
                   curvature: float = 1e-6, max_steps: int = 50) -> torch.Tensor | None:
    """Newton's method for F from θ = 0 with Armijo backtracking; None as soon as a Hessian on the path has an
    eigenvalue below ``curvature`` (F not strongly convex there — negative curvature, or rows that a
    direction separates, whose infimum lies at infinity: the caller falls back to L-BFGS), or without ‖∇F‖ <=
    ``tolerance`` after ``max_steps``. The Hessian in closed form: (1/n)·Xᵀ·diag(s_i(1 − s_i))·X plus the
    regulariser's diagonal 2λ(1 − 3θ_k²)/(1 + θ_k²)³, with s_i = sigmoid(−y_i·x_iᵀθ); its product in float32
    (a third of the float64 time; it only sets the direction: θ*, ∇F and F stay float64)."""
    n, dim = x.shape
    x32 = x.to(torch.float32)

    def at(theta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # (margins y_i·x_iᵀθ, F(θ)) as loss()
        margins = y * (x @ theta)
        return margins, torch.nn.functional.softplus(-margins).mean() + lam * (theta**2 / (1 + theta**2)).sum()

    theta = torch.zeros(dim, dtype=torch.float64)
    margins, value = at(theta)
    for _ in range(max_steps):
        s = torch.sigmoid(-margins)
        gradient = x.T @ (-y * s) / n + lam * 2 * theta / (1 + theta**2) ** 2
        if gradient.norm() <= tolerance:
            return theta
        hessian = ((x32.T * (s * (1 - s) / n).to(torch.float32)) @ x32).to(torch.float64)
        hessian.diagonal().add_(lam * 2 * (1 - 3 * theta**2) / (1 + theta**2) ** 3)
        if torch.linalg.cholesky_ex(hessian - curvature * torch.eye(dim, dtype=torch.float64)).info != 0:
            return None  # F not strongly convex here: negative curvature, or a minimum only at infinity
        factor = torch.linalg.cholesky(hessian)
        step = torch.cholesky_solve(-gradient.unsqueeze(1), factor).squeeze(1)
        slope, t = float(gradient @ step), 1.0
        while True:  # Armijo backtracking along the Newton direction
            candidate = theta + t * step
            candidate_margins, candidate_value = at(candidate)
            if candidate_value <= value + 1e-4 * t * slope:
                break
            t /= 2
            if t < 1e-10:
                return None
        theta, margins, value = candidate, candidate_margins, candidate_value
    return None


def lbfgs_optimum(x: torch.Tensor, y: torch.Tensor, lam: float = LAMBDA) -> torch.Tensor:
    """θ* by L-BFGS with strong Wolfe line search from 0 (five runs of at most 500 iterations); for the data
    here (λ = 1e-3) it settles at a point with ‖∇F‖ < 1e-6."""
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
