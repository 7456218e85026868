"""Paper 002 §6.2's convolutional networks as ordinary ``nn.Module`` s, trained through the same path as a
user's module (:func:`mpcdp.learning.modules.from_module`).

Layer shapes exactly as paper 002's Tables 5 and 6 (the parameter tensors that secure aggregation sums and
noises one by one):

* ``mnist-cnn`` (Table 5): conv 16×1×8×8 (stride 2, padding 3) → tanh → max-pool 2 (stride 1) → conv
  32×16×4×4 (stride 2) → tanh → max-pool 2 (stride 1) → flatten 512 → fc 32×512 → tanh → fc 10×32, with
  biases; 28×28 grey images. 26,010 parameters.
* ``cifar-cnn5`` (Table 6, LeNet-5 shapes): conv 6×3×5×5 → tanh → max-pool 2 → conv 16×6×5×5 → tanh →
  max-pool 2 → flatten 400 → fc 120×400 → tanh → fc 84×120 → tanh → fc 10×84, with biases; 32×32 colour
  images. 62,006 parameters.

Their θ⁰ is PyTorch's default initialisation drawn from the run's seed (``seeded_start``), as the recorded
results were made; the modules are built on the ``meta`` device, so building them draws nothing from torch's
global generator.
"""

from __future__ import annotations

import torch
from torch import nn

from mpcdp.learning.modules import from_module


class MnistCnn(nn.Module):
    """Paper 002 Table 5."""

    def __init__(self, device: str | torch.device | None = None):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 8, stride=2, padding=3, device=device)
        self.conv2 = nn.Conv2d(16, 32, 4, stride=2, device=device)
        self.fc1 = nn.Linear(512, 32, device=device)
        self.fc2 = nn.Linear(32, 10, device=device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = nn.functional.max_pool2d(torch.tanh(self.conv1(x)), 2, 1)
        h = nn.functional.max_pool2d(torch.tanh(self.conv2(h)), 2, 1)
        return self.fc2(torch.tanh(self.fc1(h.flatten(1))))


class LeNet5(nn.Module):
    """Paper 002 Table 6 (LeNet-5 shapes, tanh)."""

    def __init__(self, device: str | torch.device | None = None):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5, device=device)
        self.conv2 = nn.Conv2d(6, 16, 5, device=device)
        self.fc1 = nn.Linear(400, 120, device=device)
        self.fc2 = nn.Linear(120, 84, device=device)
        self.fc3 = nn.Linear(84, 10, device=device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = nn.functional.max_pool2d(torch.tanh(self.conv1(x)), 2)
        h = nn.functional.max_pool2d(torch.tanh(self.conv2(h)), 2)
        h = torch.tanh(self.fc1(h.flatten(1)))
        return self.fc3(torch.tanh(self.fc2(h)))


MNIST_CNN = from_module(MnistCnn(device="meta"), (1, 28, 28), name="mnist-cnn", seeded_start=True)
CIFAR_CNN5 = from_module(LeNet5(device="meta"), (3, 32, 32), name="cifar-cnn5", seeded_start=True)

NETWORKS = {spec.name: spec for spec in (MNIST_CNN, CIFAR_CNN5)}
