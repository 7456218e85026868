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
record shape, the label set, and its record count n_j (the sampling rate and WD-DP's weights need it).
Nothing else about the records leaves the host.
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
        """What this party discloses about its data (see the module docstring)."""
        labels = sorted({_plain(v) for v in np.unique(self.y)})
        return {"schema_sha256": self.schema_sha256, "record_shape": list(self.x.shape[1:]), "labels": labels,
                "records": int(len(self.y))}


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
    if not np.isfinite(data.x.reshape(len(data.x), -1)).all():
        raise InputError(f"`data` ({name}) has NaN or Inf features.")
    return data


def _plain(value):
    """A label as JSON has it: an integer where it is one, else a float or a string."""
    value = value.item() if hasattr(value, "item") else value
    if isinstance(value, (bool, int, float)):
        return int(value) if float(value).is_integer() else float(value)
    return str(value)


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
        InputError: no records, or a NaN/Inf feature or label (naming the column and how many rows).
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
    bad = ~np.isfinite(data.x.reshape(len(data.x), -1)).all(axis=1)
    if bad.any():
        raise InputError(f"`data` file {str(path)!r}: {int(bad.sum())} records have NaN or Inf features.")
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
    if y.dtype.kind in "fc" and not np.isfinite(y).all():
        raise InputError(f"`label` column {label!r} of {str(path)!r}: {int((~np.isfinite(y)).sum())} rows are "
                         f"NaN or Inf.")
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
