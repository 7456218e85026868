"""Datasets by name: what ships here, what a user brings, and clear errors for the rest."""

from __future__ import annotations

import functools
import pathlib

import numpy as np

from mpcdp.data.adult import Dataset, load_a9a
from mpcdp.errors import ConfigError

NOT_SHIPPED = {"ijcnn1", "covtype", "mnist-full", "cifar10", "cifar-10"}


def load_breast_cancer(*, test_fraction: float = 0.2, seed: int = 0) -> Dataset:
    """WDBC breast cancer (569 × 30) from scikit-learn, standardised on the training split, labels ±1."""
    from sklearn.datasets import load_breast_cancer as sklearn_breast_cancer

    data = sklearn_breast_cancer()
    order = np.random.default_rng(seed).permutation(len(data.target))
    cut = int(round(len(order) * (1 - test_fraction)))
    x, y = data.data.astype(np.float64), np.where(data.target == 1, 1.0, -1.0)
    train, test = order[:cut], order[cut:]
    mean, std = x[train].mean(0), x[train].std(0) + 1e-12
    scale = lambda a: ((a - mean) / std).astype(np.float32)  # noqa: E731
    return Dataset("breast cancer (WDBC, scikit-learn)", scale(x[train]), y[train].astype(np.float32),
                   scale(x[test]), y[test].astype(np.float32), "sklearn.datasets.load_breast_cancer")


def load_svmlight(train: str | pathlib.Path, test: str | pathlib.Path | None = None, *,
                  n_features: int | None = None) -> Dataset:
    """Any LIBSVM/svmlight file (e.g. a user's ijcnn1); labels mapped to ±1."""
    from sklearn.datasets import load_svmlight_file

    for path in (train, test):
        if path is not None and not pathlib.Path(path).is_file():
            raise ConfigError(f"svmlight file not found: {str(path)!r}")
    x_train, y_train = load_svmlight_file(str(train), n_features=n_features)
    if test is not None:
        x_test, y_test = load_svmlight_file(str(test), n_features=x_train.shape[1])
    else:
        x_test, y_test = x_train[:0], y_train[:0]
    to_pm = lambda y: np.where(y > 0, 1.0, -1.0).astype(np.float32)  # noqa: E731
    return Dataset(f"svmlight:{pathlib.Path(train).name}", x_train.toarray().astype(np.float32), to_pm(y_train),
                   x_test.toarray().astype(np.float32), to_pm(y_test), str(train))


def load(name: str) -> Dataset:
    """A dataset by name: 'a9a', 'breast-cancer', 'mnist-5k' and 'fashion-mnist' (images, :mod:`mpcdp.data.mnist`),
    'lending-club' (interest-rate regression) and 'lending-club-class' (good/bad loans, ±1) from
    :mod:`mpcdp.data.lending_club`, or
    'svmlight:TRAIN[,TEST]' (kept in memory after the first load in a process, so sweeps parse each file once;
    treat the arrays as read-only)."""
    return _load_cached(name)


@functools.lru_cache(maxsize=4)
def _load_cached(name: str) -> Dataset:
    if name == "a9a":
        return load_a9a()
    if name == "breast-cancer":
        return load_breast_cancer()
    if name in ("lending-club", "lending-club-class"):
        from mpcdp.data.lending_club import load_lending_club

        return load_lending_club(task="interest-rate" if name == "lending-club" else "class")
    if name == "mnist-5k":
        from mpcdp.data.mnist import load_mnist_5k

        return load_mnist_5k()
    if name == "fashion-mnist":
        from mpcdp.data.mnist import load_fashion_mnist

        return load_fashion_mnist()
    if name.startswith("svmlight:"):
        train, _, test = name[len("svmlight:"):].partition(",")
        return load_svmlight(train, test or None)
    if name.lower() in NOT_SHIPPED:
        raise ConfigError(f"dataset {name!r} is not shipped in any installable package here; bring the LIBSVM "
                          f"file and use 'svmlight:/path/to/{name}[,/path/to/{name}.t]'.")
    raise ConfigError(f"unknown dataset {name!r}: use 'a9a', 'breast-cancer', 'mnist-5k', 'fashion-mnist', "
                      f"'lending-club', 'lending-club-class' or 'svmlight:TRAIN[,TEST]'.")
