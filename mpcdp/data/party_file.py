"""A party's own records, read from a file on its own host — the only data that party ever holds.

Formats (by the file's suffix):

* ``.csv`` / ``.parquet``: one record per row, the label in the declared ``label`` column, every other
  column (or the ``features`` listed) a numeric feature. Parquet needs ``pyarrow``
  (``pip install mpcdp[parquet]``).
* ``.svm`` / ``.svmlight`` / ``.libsvm`` / ``.txt``: LIBSVM/svmlight rows, read by scikit-learn's loader;
  ``features`` = the dimension every party declares (the file's largest index may be lower).
* ``.npz``: arrays ``x`` (records first, any shape after) and ``y``.

What a party tells the others (:meth:`PartyData.description`, public, compared before any share moves by
:func:`mpcdp.mpc.data_agreement.agree_on_data`): the schema's SHA-256 (feature names, dtypes, record shape), the
record shape and its record count n_j (the sampling rate and WD-DP's weights need it); the run adds the
model's class count (:mod:`mpcdp.jobs.own_data`). No label value, no label set and nothing else about the
records leaves the host: each party checks its own labels against the model's classes
(:func:`check_labels`), refusing them locally without showing any.

A file with a NaN or Inf feature or label is refused here, locally, naming the column but neither the
value nor how many entries are affected (:class:`~mpcdp.errors.InputError`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import pathlib
from typing import Sequence

import numpy as np

from mpcdp.errors import ConfigError, InputError

SVMLIGHT_SUFFIXES = (".svm", ".svmlight", ".libsvm", ".txt")


@dataclasses.dataclass(frozen=True)
class PartyData:
    """Features (float64, records first), labels, the schema (feature names and dtypes) and the file."""

    x: np.ndarray
    y: np.ndarray
    names: tuple[str, ...]
    dtypes: tuple[str, ...]
    source: str

    @property
    def schema_sha256(self) -> str:
        schema = {"names": list(self.names), "dtypes": list(self.dtypes), "shape": list(self.x.shape[1:])}
        return hashlib.sha256(json.dumps(schema, sort_keys=True).encode()).hexdigest()

    def description(self) -> dict:
        """What this party discloses about its data (see the module docstring): no label value."""
        return {"schema_sha256": self.schema_sha256, "record_shape": list(self.x.shape[1:]),
                "records": int(len(self.y))}


def check_labels(data: PartyData, classes: int, described: str, *, values: Sequence[int] | None = None,
                 column: str | None = None) -> None:
    """Refuse, locally, records whose label is not one of the model's ``classes`` classes: the class indices
    0..classes−1, or the given ``values`` (``described``: how the error names them, with the count). The
    error names the file, the column and the classes, never a label value nor how many records are affected.

    Raises:
        InputError: a label is not a number, is NaN/Inf, or is not one of the classes.
    """
    where = f"`label` column {column!r} of {data.source!r}" if column else f"the labels of {data.source!r}"
    y = np.asarray(data.y)
    if y.dtype.kind not in "biuf":
        raise InputError(f"{where} are not numbers: the model takes {described} (encode the classes as those)")
    y = y.astype(np.float64)
    if not np.isfinite(y).all():
        raise InputError(f"{where} has NaN or Inf values")
    if values is not None:
        fits = np.isin(y, np.asarray(values, dtype=np.float64)).all()
    else:
        fits = bool(((y >= 0) & (y < classes) & (y == np.floor(y))).all())
    if not fits:
        raise InputError(f"{where} has values outside {described} (the values are not shown: they are this "
                         f"party's data)")


def from_dataset(dataset, name: str = "a torch Dataset") -> PartyData:
    """The records of a ``torch.utils.data.Dataset`` (or any sequence of (features, label) pairs) held in this
    process, as :class:`PartyData` (features flattened to float64 after their own shape is kept)."""
    import torch

    try:
        pairs = [dataset[i] for i in range(len(dataset))]
    except TypeError as exc:
        raise ConfigError(f"`data` must be a file or a Dataset of (features, label) pairs. Found "
                          f"{type(dataset).__name__}.") from exc
    if not pairs:
        raise InputError(f"`data` ({name}) holds no records.")
    x = torch.stack([torch.as_tensor(features) for features, _ in pairs])
    y = np.asarray([torch.as_tensor(label).item() for _, label in pairs])
    width = int(np.prod(x.shape[1:]))
    data = PartyData(x.to(torch.float64).numpy(), y, tuple(f"x{i}" for i in range(width)),
                     (str(x.dtype).replace("torch.", ""),) * width, name)
    _refuse_non_finite(data, f"`data` ({name})")
    return data


def _refuse_non_finite(data: PartyData, where: str, label: str | None = None) -> None:
    """A NaN/Inf feature or label refused, naming the first such column (no count, no value)."""
    rows = data.x.reshape(len(data.x), -1)
    bad = ~np.isfinite(rows).all(axis=0)
    if bad.any():
        raise InputError(f"{where} has NaN or Inf values in feature column {data.names[int(np.argmax(bad))]!r}.")
    y = np.asarray(data.y)
    if y.dtype.kind in "biuf" and not np.isfinite(y.astype(np.float64)).all():
        raise InputError(f"{where} has NaN or Inf values in its label{f' column {label!r}' if label else 's'}.")


def load_party_file(path: str | pathlib.Path, *, label: str | None = None,
                    features: Sequence[str] | int | None = None) -> PartyData:
    """This party's records from ``path`` (see the module docstring for the formats).

    Args:
        path: the file.
        label: the label column (CSV, Parquet; required there).
        features: the feature columns in order (CSV, Parquet; default: every other column), or the dimension
            (svmlight).

    Raises:
        ConfigError: unknown format, missing file, label column or feature column, a non-numeric feature.
        InputError: no records, or a NaN/Inf feature or label (naming the column; neither the value nor how
            many entries).
    """
    path = pathlib.Path(path)
    if not path.is_file():
        raise ConfigError(f"`data` file {str(path)!r} does not exist (or is not a file).")
    suffix = path.suffix.lower()
    if suffix in (".csv", ".parquet"):
        data = _table(path, suffix, label, features)
    elif suffix in SVMLIGHT_SUFFIXES:
        data = _svmlight(path, features)
    elif suffix == ".npz":
        data = _npz(path)
    else:
        raise ConfigError(f"`data` file {str(path)!r}: unknown format {suffix!r} (use .csv, .parquet, "
                          f"{', '.join(SVMLIGHT_SUFFIXES)} or .npz).")
    if len(data.y) == 0:
        raise InputError(f"`data` file {str(path)!r} holds no records.")
    _refuse_non_finite(data, f"`data` file {str(path)!r}", label)
    return data


def _table(path: pathlib.Path, suffix: str, label: str | None, features) -> PartyData:
    import pandas as pd

    if label is None:
        raise ConfigError(f"`label` (the label column) is required for {suffix} file {str(path)!r}.")
    if suffix == ".parquet":
        try:
            frame = pd.read_parquet(path)
        except ImportError as exc:
            raise ConfigError(f"reading {str(path)!r} needs pyarrow: pip install 'mpcdp[parquet]'") from exc
    else:
        frame = pd.read_csv(path)
    if len(frame) == 0:
        raise InputError(f"`data` file {str(path)!r} holds no records.")
    if label not in frame.columns:
        raise ConfigError(f"`label` column {label!r} is not in {str(path)!r} (columns: {list(frame.columns)}).")
    if isinstance(features, int):
        raise ConfigError(f"`features` for {suffix} file {str(path)!r} must name the columns. Found {features!r}.")
    names = list(features) if features is not None else [c for c in frame.columns if c != label]
    missing = [c for c in names if c not in frame.columns]
    if missing:
        raise ConfigError(f"`features` {missing} are not columns of {str(path)!r}.")
    for column in names:
        if not pd.api.types.is_numeric_dtype(frame[column]) or pd.api.types.is_bool_dtype(frame[column]):
            raise ConfigError(f"feature column {column!r} of {str(path)!r} has dtype {frame[column].dtype}: "
                              f"features must be numbers (encode categories first).")
    y = frame[label].to_numpy()
    x = frame[names].to_numpy(dtype=np.float64)
    return PartyData(x, y, tuple(str(c) for c in names), tuple(str(frame[c].dtype) for c in names), str(path))


def _svmlight(path: pathlib.Path, features) -> PartyData:
    from sklearn.datasets import load_svmlight_file

    if features is not None and not isinstance(features, int):
        raise ConfigError(f"`features` for svmlight file {str(path)!r} is the dimension (an integer). "
                          f"Found {features!r}.")
    try:
        x, y = load_svmlight_file(str(path), n_features=features, dtype=np.float64)
    except ValueError as exc:
        raise ConfigError(f"`data` file {str(path)!r} is not valid svmlight: {exc}") from exc
    dim = x.shape[1]
    return PartyData(x.toarray(), y, tuple(f"f{i + 1}" for i in range(dim)), ("float64",) * dim, str(path))


def _npz(path: pathlib.Path) -> PartyData:
    with np.load(path, allow_pickle=False) as arrays:
        if "x" not in arrays or "y" not in arrays:
            raise ConfigError(f"`data` file {str(path)!r} must hold arrays 'x' and 'y'. Found {sorted(arrays)}.")
        x, y = arrays["x"], arrays["y"]
    if len(x) != len(y):
        raise InputError(f"`data` file {str(path)!r}: {len(x)} records in 'x' but {len(y)} labels in 'y'.")
    if x.dtype.kind not in "biuf":
        raise ConfigError(f"'x' of {str(path)!r} has dtype {x.dtype}: features must be numbers.")
    width = int(np.prod(x.shape[1:]))
    return PartyData(x.astype(np.float64), y, tuple(f"x{i}" for i in range(width)), (str(x.dtype),) * width,
                     str(path))
