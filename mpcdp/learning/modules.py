"""Any ``torch.nn.Module`` as an mpcdp model: its parameters one flat vector θ, per-example gradients by
``vmap(grad)`` over ``torch.func.functional_call``.

A user's network needs no change: :func:`from_module` reads its trainable parameters (in
``named_parameters`` order), runs its own ``forward`` with θ's slices in their place, and takes a loss of
(outputs, labels) — cross-entropy unless told otherwise. The result has the interface of every mpcdp model
(:mod:`mpcdp.learning.models`), so DDP-SRM, DP-SGD and WD-DP train it as they train paper 002's CNNs, which
are built the same way (:mod:`mpcdp.learning.paper_networks`).

Refused, with the reason: layers whose output for one example depends on the other examples of the batch
(batch normalisation in any form) — a per-example gradient would then not be one example's, so clipping
would bound nothing and the sensitivity the accountant uses would not hold; and layers that keep running
statistics of the data outside the released parameters (an instance norm with ``track_running_stats``).
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call

from mpcdp.errors import ConfigError
from mpcdp.learning.cnn import CnnSpec


class ModuleForward:
    """``module``'s own forward with the given parameters in place of its own (picklable, so a model travels to
    the party processes with its run)."""

    def __init__(self, module: nn.Module):
        self.module = module

    def __call__(self, params: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        return functional_call(self.module, params, (x,), strict=False)


def _refusal(name: str, layer: nn.Module) -> str | None:
    if isinstance(layer, nn.modules.batchnorm._BatchNorm):
        return (f"layer {name!r} ({type(layer).__name__}) normalises each example with statistics of the whole "
                f"batch, so an example's gradient depends on the other examples and clipping it bounds nothing "
                f"(use GroupNorm or LayerNorm, which work per example)")
    if isinstance(layer, nn.modules.instancenorm._InstanceNorm) and layer.track_running_stats:
        return (f"layer {name!r} ({type(layer).__name__}) keeps running statistics of the data outside the "
                f"released parameters (set track_running_stats=False)")
    return None


def check_module(module: nn.Module) -> None:
    """Refuse a module that per-example gradients cannot describe (see the module docstring).

    Raises:
        ConfigError: naming the first offending layer and why.
    """
    if not isinstance(module, nn.Module):
        raise ConfigError(f"`model` must be a torch.nn.Module. Found {type(module).__name__}.")
    for name, layer in module.named_modules():
        reason = _refusal(name or type(module).__name__, layer)
        if reason is not None:
            raise ConfigError(f"`model` cannot be trained with per-example clipping: {reason}.")
    if not any(p.requires_grad for p in module.parameters()):
        raise ConfigError("`model` has no trainable parameters.")


def from_module(module: nn.Module, input_shape: tuple[int, ...], *, name: str | None = None,
                loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = F.cross_entropy,
                seeded_start: bool = False) -> CnnSpec:
    """``module`` as an mpcdp model taking inputs of ``input_shape`` (one example, without the batch axis).

    Args:
        module: the network; its trainable parameters are what the parties train (frozen ones stay as they are).
        input_shape: one example's shape, e.g. (1, 28, 28) or (features,).
        name: the model's name in reports (default: the module's class name).
        loss: (outputs of a batch, labels) → the batch's mean loss.
        seeded_start: θ⁰ from PyTorch's default initialisation drawn from the run's seed (the paper's CNNs),
            instead of the module's own current parameters.

    Raises:
        ConfigError: the module mixes examples or keeps statistics of the data (:func:`check_module`).
    """
    check_module(module)
    trained = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
    layers = tuple((n, tuple(p.shape)) for n, p in trained)

    start = None if seeded_start else torch.cat([p.detach().reshape(-1).to(torch.float64) for _, p in trained])
    return CnnSpec(name or type(module).__name__, layers, tuple(input_shape), ModuleForward(module), loss, start)
