"""The models ``mpcdp train`` trains, by name (protocol field ``model``), behind one written interface,
:class:`Model`.

Shipped: logistic regression (:data:`mpcdp.learning.logreg.LOGISTIC`) and paper 002's CNNs
(:mod:`mpcdp.learning.paper_networks`); any ``torch.nn.Module`` becomes a model through
:func:`mpcdp.learning.modules.from_module`. ``kind`` ('logreg' or 'cnn') is what an algorithm record's
``models`` lists.

To extend: :func:`register` an object with every member of :class:`Model` under a new name (checked when it is
registered; a missing member is refused by name). A model holds no data: it is the arithmetic the parties run
on their own records, so it states no security model of its own and adds no traffic.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import torch

from mpcdp import registry
from mpcdp.learning.paper_networks import NETWORKS
from mpcdp.learning.logreg import LOGISTIC


@runtime_checkable
class Model(Protocol):
    """A model the training loops and the reports use (every record of :data:`MODELS` has these members; θ is
    one flat float64 vector of :meth:`dimension` entries).

    Attributes:
        name: its name in reports.
        kind: 'logreg' (feature rows, labels ±1) or 'cnn' (a network, labels the class indices), matched
            against an algorithm record's ``models``.
        feature_rows: its inputs are feature rows (the protocol's ``normalize_rows`` applies).
    """

    # read-only (a frozen dataclass or a class attribute will do); checked by type when registered (_TYPES)
    @property
    def name(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def feature_rows(self) -> bool: ...

    def labels(self, values: Any) -> torch.Tensor:
        """A dataset's labels (an array or a list) as the loss takes them."""

    def dimension(self, x: torch.Tensor) -> int:
        """The length of θ for inputs ``x`` (a batch)."""

    def check_inputs(self, shape: tuple[int, ...], dataset: str) -> None:
        """Refuse (ConfigError naming ``dataset``) records of one-record ``shape`` that this model cannot take."""

    def initial_theta(self, dim: int, seed: int = 0) -> torch.Tensor:
        """θ⁰ for the training loops."""

    def per_example_gradients(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """∇f_i(θ) for every record i of the batch: shape (n, dim), float64."""

    def per_example_gradients_at(self, thetas: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Per-example gradients at every row of ``thetas``: shape (k, n, dim)."""

    def clipped_gradient_sum(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
                             bound: float) -> torch.Tensor:
        """Σ_i clip_bound(∇f_i(θ)) over the batch: shape (dim,)."""

    def loss(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """The mean loss over the batch (a float64 scalar tensor)."""

    def error_rate(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> float:
        """The misclassification rate over the batch."""

    def optimum(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor | None:
        """The non-private minimiser (the reference of the optimality gap), or None where there is none."""


_TYPES = {"name": str, "kind": str, "feature_rows": bool}

MODELS: dict[str, Model] = {}


def check(model: Any) -> Model:
    """Refuse ``model`` unless it has every member of :class:`Model` (a ConfigError naming what it lacks)."""
    registry.check_members(model, Model, _TYPES, "model")
    return model


def register(name: str, model: Model) -> Model:
    """Add ``model`` under ``name`` (which must be new), after checking it has every member of :class:`Model`."""
    return registry.add(MODELS, name, check(model), "model")


def lookup(name: str) -> Model:
    return registry.find(MODELS, name, "model")


register("logreg", LOGISTIC)
for _name, _network in NETWORKS.items():
    register(_name, _network)
