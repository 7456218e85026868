"""A party's own records, read from a file on its own host — the only data that party ever holds.

Formats (by the file's suffix):

* ``.csv`` / ``.parquet``: one record per row, the label in the declared ``label`` column, every other
  column (or the ``features`` listed) a numeric feature. Parquet needs ``pyarrow``
  (``pip install mpcdp[parquet]``).
* ``.svm`` / ``.svmlight`` / ``.libsvm`` / ``.txt``: LIBSVM/svmlight rows, read by scikit-learn's loader;
  ``features`` = the dimension every party declares (the file's largest index may be lower).
* ``.npz``: arrays ``x`` (records first, any shape after) and ``y``.

What a party tells the others (:meth:`PartyData.description`, public, compared before any share moves by
:func:`mpcdp.mpc.data_agreement.agree_on_data`): the schema (feature names and dtypes, the public schema the
parties agree on) and its SHA-256, the record shape and its record count n_j (the sampling rate and WD-DP's
weights need it); the run adds the
model's class count (:mod:`mpcdp.jobs.own_data`). No label value, no label set and nothing else about the
records leaves the host: each party checks its own labels against the model's classes
(:func:`check_labels`), refusing them locally without showing any.

A file with a NaN or Inf feature or label is refused here, locally, naming the column but neither the
value nor how many entries are affected (:class:`~mpcdp.errors.InputError`). Every refusal of a file carries
the :class:`~mpcdp.refusals.Refusal` the other parties are told (its ``refusal``: the category, the
file's name and the column), so that a run refused here stops on every process with the same line.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import pathlib
from typing import Sequence

import numpy as np

from mpcdp.errors import ConfigError, InputError
from mpcdp.refusals import refusing

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
        return schema_sha256(self.names, self.dtypes, self.x.shape[1:])

    def description(self) -> dict:
        """What this party discloses about its data (see the module docstring): no label value."""
        return {"schema_sha256": self.schema_sha256, "record_shape": list(self.x.shape[1:]),
                "records": int(len(self.y)), "names": list(self.names), "dtypes": list(self.dtypes)}


def schema_sha256(names: Sequence[str], dtypes: Sequence[str], shape: Sequence[int]) -> str:
    """The SHA-256 of a schema: feature names and dtypes in order, and the record shape."""
    schema = {"names": list(names), "dtypes": list(dtypes), "shape": [int(n) for n in shape]}
    return hashlib.sha256(json.dumps(schema, sort_keys=True).encode()).hexdigest()


def schema_difference(names: Sequence[str], dtypes: Sequence[str], other_names: Sequence[str],
                      other_dtypes: Sequence[str], *, this: str, other: str) -> tuple[int, str, str] | None:
    """Where the schema (``other_names``, ``other_dtypes``) of ``other`` first differs from this one's
    (``this``): its 1-based column position, ``other``'s column name there (this one's, where ``other``
    has fewer columns) and a sentence naming both columns — names and dtypes only, the public schema. None:
    the same columns."""
    for i, (name, dtype, theirs, their_dtype) in enumerate(zip(names, dtypes, other_names, other_dtypes)):
        if name != theirs:
            return i + 1, theirs, (f"{other}'s column {i + 1} is {_name(theirs)} where {this}'s is "
                                   f"{_name(name)}")
        if dtype != their_dtype:
            return i + 1, theirs, (f"{other}'s column {i + 1} {_name(theirs)} is {_name(their_dtype)} where "
                                   f"{this}'s is {_name(dtype)}")
    if len(names) == len(other_names):
        return None
    at = min(len(names), len(other_names))
    column = other_names[at] if len(other_names) > at else names[at]
    return at + 1, column, (f"{other} has {len(other_names)} columns where {this} has {len(names)} (column "
                            f"{at + 1} is {_name(column)})")


def _name(text: str, limit: int = 60) -> str:
    """A column name or dtype as a message shows it: quoted, escaped and cut."""
    return repr(str(text)[:limit]) + ("…" if len(str(text)) > limit else "")


def check_labels(data: PartyData, classes: int, described: str, *, values: Sequence[int] | None = None,
                 column: str | None = None) -> None:
    """Refuse, locally, records whose label is not one of the model's ``classes`` classes: the class indices
    0..classes−1, or the given ``values`` (``described``: how the error names them, with the count). The
    error names the file, the column and the classes, never a label value nor how many records are affected.

    Raises:
        InputError: a label is not a number, is NaN/Inf, or is not one of the classes.
    """
    where = f"`label` column {column!r} of {data.source!r}" if column else f"the labels of {data.source!r}"
    field = column or "label"
    y = np.asarray(data.y)
    if y.dtype.kind not in "biuf":
        raise refusing(InputError(f"{where} are not numbers: the model takes {described} (encode the classes as "
                                  f"those)"), "labels", data.source, field)
    y = y.astype(np.float64)
    if not np.isfinite(y).all():
        raise refusing(InputError(f"{where} has NaN or Inf values"), "non-finite", data.source, field)
    if values is not None:
        fits = bool(np.isin(y, np.asarray(values, dtype=np.float64)).all())
    else:
        fits = bool(((y >= 0) & (y < classes) & (y == np.floor(y))).all())
    if not fits:
        raise refusing(InputError(f"{where} has values outside {described} (the values are not shown: they are "
                                  f"this party's data)"), "labels", data.source, field)


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
        raise refusing(InputError(f"`data` ({name}) holds no records."), "empty", name)
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
        column = data.names[int(np.argmax(bad))]
        raise refusing(InputError(f"{where} has NaN or Inf values in feature column {column!r}."), "non-finite",
                       data.source, column)
    y = np.asarray(data.y)
    if y.dtype.kind in "biuf" and not np.isfinite(y.astype(np.float64)).all():
        raise refusing(InputError(f"{where} has NaN or Inf values in its label"
                                  f"{f' column {label!r}' if label else 's'}."), "non-finite", data.source,
                       label or "label")


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
        raise refusing(ConfigError(f"`data` file {str(path)!r} does not exist (or is not a file)."), "missing-file",
                       path)
    suffix = path.suffix.lower()
    if suffix in (".csv", ".parquet"):
        data = _table(path, suffix, label, features)
    elif suffix in SVMLIGHT_SUFFIXES:
        data = _svmlight(path, features)
    elif suffix == ".npz":
        data = _npz(path)
    else:
        raise refusing(ConfigError(f"`data` file {str(path)!r}: unknown format {suffix!r} (use .csv, .parquet, "
                                   f"{', '.join(SVMLIGHT_SUFFIXES)} or .npz)."), "format", path)
    if len(data.y) == 0:
        raise refusing(InputError(f"`data` file {str(path)!r} holds no records."), "empty", path)
    _refuse_non_finite(data, f"`data` file {str(path)!r}", label)
    return data


def _table(path: pathlib.Path, suffix: str, label: str | None, features) -> PartyData:
    import pandas as pd

    if label is None:
        raise ConfigError(f"`label` (the label column) is required for {suffix} file {str(path)!r}.")
    frame = _read_table(path, suffix)
    if len(frame) == 0:
        raise refusing(InputError(f"`data` file {str(path)!r} holds no records."), "empty", path)
    if label not in frame.columns:
        raise refusing(ConfigError(f"`label` column {label!r} is not in {str(path)!r} (columns: "
                                   f"{list(frame.columns)})."), "missing-column", path, label)
    if isinstance(features, int):
        raise ConfigError(f"`features` for {suffix} file {str(path)!r} must name the columns. Found {features!r}.")
    names = list(features) if features is not None else [c for c in frame.columns if c != label]
    missing = [c for c in names if c not in frame.columns]
    if missing:
        raise refusing(ConfigError(f"`features` {missing} are not columns of {str(path)!r}."), "missing-column",
                       path, missing[0])
    for column in names:
        if not pd.api.types.is_numeric_dtype(frame[column]) or pd.api.types.is_bool_dtype(frame[column]):
            raise refusing(ConfigError(f"feature column {column!r} of {str(path)!r} has dtype "
                                       f"{frame[column].dtype}: features must be numbers (encode categories "
                                       f"first)."), "not-numeric", path, column)
    y = frame[label].to_numpy()
    x = frame[names].to_numpy(dtype=np.float64)
    return PartyData(x, y, tuple(str(c) for c in names), tuple(str(frame[c].dtype) for c in names), str(path))


def _read_table(path: pathlib.Path, suffix: str):
    """The CSV or Parquet file as a DataFrame.

    Raises:
        InputError: a 0-byte file (no records); ConfigError: a file pandas cannot parse, or pyarrow missing.
    """
    import pandas as pd

    if suffix == ".parquet":
        try:
            return pd.read_parquet(path)
        except ImportError as exc:
            raise ConfigError(f"reading {str(path)!r} needs pyarrow: pip install 'mpcdp[parquet]'") from exc
        except (OSError, ValueError) as exc:
            raise refusing(ConfigError(f"`data` file {str(path)!r} is not valid Parquet ({type(exc).__name__})"),
                           "unreadable", path) from None
    try:
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise refusing(InputError(f"`data` file {str(path)!r} holds no records (it is empty)."), "empty",
                       path) from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        raise refusing(ConfigError(f"`data` file {str(path)!r} is not valid CSV ({type(exc).__name__})"),
                       "unreadable", path) from None


def _svmlight(path: pathlib.Path, features) -> PartyData:
    from sklearn.datasets import load_svmlight_file

    if features is not None and not isinstance(features, int):
        raise ConfigError(f"`features` for svmlight file {str(path)!r} is the dimension (an integer). "
                          f"Found {features!r}.")
    try:
        x, y = load_svmlight_file(str(path), n_features=features, dtype=np.float64)
    except ValueError as exc:
        raise refusing(ConfigError(f"`data` file {str(path)!r} is not valid svmlight: {exc}"), "unreadable",
                       path) from exc
    dim = x.shape[1]
    return PartyData(x.toarray(), y, tuple(f"f{i + 1}" for i in range(dim)), ("float64",) * dim, str(path))


def _npz(path: pathlib.Path) -> PartyData:
    with np.load(path, allow_pickle=False) as arrays:
        if "x" not in arrays or "y" not in arrays:
            raise refusing(ConfigError(f"`data` file {str(path)!r} must hold arrays 'x' and 'y'. Found "
                                       f"{sorted(arrays)}."), "missing-column", path, "y" if "x" in arrays else "x")
        x, y = arrays["x"], arrays["y"]
    if len(x) != len(y):
        raise refusing(InputError(f"`data` file {str(path)!r}: {len(x)} records in 'x' but {len(y)} labels in "
                                  f"'y'."), "unreadable", path)
    if x.dtype.kind not in "biuf":
        raise refusing(ConfigError(f"'x' of {str(path)!r} has dtype {x.dtype}: features must be numbers."),
                       "not-numeric", path, "x")
    width = int(np.prod(x.shape[1:]))
    return PartyData(x.astype(np.float64), y, tuple(f"x{i}" for i in range(width)), (str(x.dtype),) * width,
                     str(path))
