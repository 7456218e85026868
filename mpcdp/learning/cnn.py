"""A network as one flat parameter vector with per-example gradients (:class:`CnnSpec`).

Networks come from ``nn.Module`` s (:func:`mpcdp.learning.modules.from_module`): paper 002's CNNs
(:mod:`mpcdp.learning.paper_networks`) and any user's.

A model's parameters travel as one flat float64 vector θ (the order of :attr:`CnnSpec.layers`), so the
DP machinery that works on vectors — clipping over all layers jointly, secure aggregation, one noise pool —
applies unchanged; :meth:`CnnSpec.unflatten` gives the tensors back. Per-example gradients of the
network's loss (cross-entropy unless the spec says otherwise) come from ``torch.func`` (vmap of grad over the batch), never a Python loop over examples.

The network's own arithmetic (forward pass, per-example gradients) runs in float32, PyTorch's and Opacus'
default and 1.8–3.7× faster here than float64 (benchmarks/results/cnn-speed.md); everything the privacy
argument rests on — clipping, sums, secure aggregation, noise — stays in float64 (gradients are returned as
float64).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch.func import grad, vmap

from mpcdp.errors import ConfigError, InputError
from mpcdp.learning.clipping import clip_rows


COMPUTE_DTYPE = torch.float32


@dataclasses.dataclass(frozen=True)
class CnnSpec:
    """A network: its parameter tensors (name, shape) in flat order, its input shape, its forward pass
    (parameters by name, batch → outputs) and its loss (outputs, labels → mean over the batch).

    ``start``: θ⁰ for every seed (a module's own initial parameters, :func:`mpcdp.learning.modules.from_module`);
    None: PyTorch's default initialisation from a seeded generator (:meth:`init`)."""

    name: str
    layers: tuple[tuple[str, tuple[int, ...]], ...]
    input_shape: tuple[int, ...]
    forward: Callable[[dict[str, torch.Tensor], torch.Tensor], torch.Tensor]
    criterion: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = F.cross_entropy
    start: torch.Tensor | None = dataclasses.field(default=None, compare=False, repr=False)

    kind = "cnn"
    feature_rows = False

    @property
    def dim(self) -> int:
        return sum(math.prod(shape) for _, shape in self.layers)

    @staticmethod
    def labels(values) -> torch.Tensor:
        """Class indices as int64 (a copy: the values may be a read-only array)."""
        return torch.tensor(np.asarray(values), dtype=torch.long)

    def dimension(self, x: torch.Tensor) -> int:
        return self.dim

    def check_inputs(self, shape: tuple[int, ...], dataset: str) -> None:
        if tuple(shape) != self.input_shape:
            raise ConfigError(f"`model` {self.name!r} takes inputs of shape {self.input_shape}; dataset {dataset!r} "
                              f"has {tuple(shape)}.")

    @staticmethod
    def optimum(x: torch.Tensor, y: torch.Tensor) -> None:
        """No reference optimum for a non-convex network (reports leave the gap out)."""
        return None

    def unflatten(self, theta: torch.Tensor) -> dict[str, torch.Tensor]:
        """The parameter tensors (views into θ) by name."""
        if theta.shape != (self.dim,):
            raise InputError(f"`theta` for {self.name} must have shape ({self.dim},). Found {tuple(theta.shape)}.")
        out, start = {}, 0
        for name, shape in self.layers:
            size = math.prod(shape)
            out[name] = theta[start:start + size].reshape(shape)
            start += size
        return out

    def flatten(self, params: dict[str, torch.Tensor]) -> torch.Tensor:
        return torch.cat([params[name].reshape(-1) for name, _ in self.layers])

    def init(self, seed: int = 0) -> torch.Tensor:
        """θ⁰: :attr:`start` if set, else PyTorch's default initialisation (uniform ±1/√fan_in) from a generator
        seeded with ``seed``."""
        if self.start is not None:
            return self.start.clone()
        generator = torch.Generator().manual_seed(seed)
        params, fan_in = {}, 1
        for name, shape in self.layers:
            if len(shape) > 1:  # a weight; the bias after it shares its fan-in
                fan_in = math.prod(shape[1:])
            bound = 1 / math.sqrt(fan_in)
            params[name] = (torch.rand(shape, generator=generator, dtype=torch.float64) * 2 - 1) * bound
        return self.flatten(params)

    def initial_theta(self, dim: int, seed: int = 0) -> torch.Tensor:
        """θ⁰ for the training loops (:meth:`init`); ``dim`` must be this network's."""
        if dim != self.dim:
            raise InputError(f"`dim` for {self.name} must be {self.dim}. Found {dim}.")
        return self.init(seed)

    def logits(self, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Class scores (float32) for a batch x of shape (n, *input_shape)."""
        return self.forward(self.unflatten(theta.to(COMPUTE_DTYPE)), x.to(COMPUTE_DTYPE))

    def loss(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """The loss over the batch (by default mean cross-entropy; labels y: int64 class indices), as float64."""
        return self.criterion(self.logits(theta, x), y).to(torch.float64)

    def error_rate(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> float:
        with torch.no_grad():
            return float((self.logits(theta, x).argmax(1) != y).to(torch.float64).mean())

    def per_example_gradients(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """∇_θ loss(θ; x_i, y_i) for every example: shape (n, dim)."""
        if x.shape[1:] != self.input_shape:
            raise InputError(f"`x` for {self.name} must have shape (n, {', '.join(map(str, self.input_shape))}). "
                             f"Found {tuple(x.shape)}.")

        def one(theta_, xi, yi):
            return self.criterion(self.forward(self.unflatten(theta_), xi.unsqueeze(0)), yi.unsqueeze(0))

        gradients = vmap(grad(one), in_dims=(None, 0, 0), randomness="different")(
            theta.to(COMPUTE_DTYPE), x.to(COMPUTE_DTYPE), y)
        return gradients.to(torch.float64)

    def clipped_gradient_sum(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, bound: float) -> torch.Tensor:
        """Σ_i clip_C(∇_θ loss(θ; x_i, y_i)), clipping over all layers jointly (DP-SGD's local term)."""
        return clip_rows(self.per_example_gradients(theta, x, y), bound).sum(0)

    def per_example_gradients_at(self, thetas: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Per-example gradients at every θ_k (rows of ``thetas``): shape (k, n, dim)."""
        return torch.stack([self.per_example_gradients(theta, x, y) for theta in thetas])
