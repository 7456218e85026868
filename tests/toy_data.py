"""Small synthetic data shared by the paper-004 tests."""

import numpy as np


def blobs(n=600, d=8, classes=3, seed=0):
    """``classes`` Gaussian clusters in d dimensions, rows on the unit sphere; labels 0..classes−1."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(classes, d)) * 3
    y = rng.integers(classes, size=n)
    x = centres[y] + rng.normal(size=(n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True), y
