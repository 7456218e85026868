"""The models ``mpcdp train`` trains, by name (protocol field ``model``), behind one interface.

Every model is an object with the interface of :class:`~mpcdp.learning.logreg.LogisticModel`: the training
loops' per-example gradients, and ``loss``, ``error_rate``, ``labels``, ``dimension``, ``check_inputs`` and
``optimum`` for runs and reports. ``kind`` ('logreg' or 'cnn') is what an algorithm record's ``models`` lists.

To extend: :func:`register` an object with that interface under a new name.
"""

from __future__ import annotations

from mpcdp import registry
from mpcdp.learning.paper_networks import NETWORKS
from mpcdp.learning.logreg import LOGISTIC

MODELS: dict[str, object] = {"logreg": LOGISTIC, **NETWORKS}


def register(name: str, model) -> None:
    """Add ``model`` under ``name`` (which must be new)."""
    registry.add(MODELS, name, model, "model")


def lookup(name: str):
    return registry.find(MODELS, name, "model")
