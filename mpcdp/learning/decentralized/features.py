"""Paper 004's features (§VI): images flattened, PCA to 50 dimensions fitted on the public test images only,
rows normalised to the unit sphere."""

from __future__ import annotations

import numpy as np

from mpcdp.errors import ConfigError, InputError
from mpcdp.validation import check_integer

PCA_DIMS = 50


def fit_pca(x_public: np.ndarray, dims: int = PCA_DIMS) -> tuple[np.ndarray, np.ndarray]:
    """(mean, components (D × dims)) of a PCA fitted on *public* rows (here: the test split's images)."""
    check_integer(dims, "dims")
    x = np.asarray(x_public, dtype=np.float64).reshape(len(x_public), -1)
    if x.shape[0] == 0:
        raise InputError("`x_public` (the PCA's public rows) is empty.")
    if dims > min(x.shape):
        raise ConfigError(f"`dims` must be <= min(rows, columns) = {min(x.shape)} of the public data. Found {dims}.")
    mean = x.mean(axis=0)
    _, _, vt = np.linalg.svd(x - mean, full_matrices=False)
    return mean, vt[:dims].T


def _to_unit_sphere(z: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(z, axis=1, keepdims=True)
    return z / np.where(norms > 0, norms, 1.0)


def prepare_features(x_train, x_test, *, dims: int = PCA_DIMS) -> tuple[np.ndarray, np.ndarray]:
    """§VI features: flatten, PCA (fitted on ``x_test`` only, see the module docstring) to ``dims``, unit-norm rows.

    Returns float64 arrays (n_train, dims) and (n_test, dims) with every row of norm 1 (0 for a row at the mean).
    """
    mean, components = fit_pca(x_test, dims)
    project = lambda a: _to_unit_sphere(  # noqa: E731
        (np.asarray(a, dtype=np.float64).reshape(len(a), -1) - mean) @ components)
    return project(x_train), project(x_test)
