"""Shipped datasets and splitting them among parties."""

import numpy as np
import pytest

from mpcdp.data.adult import CUTS, _attributes, _encode, adult_directory, load_a9a
from mpcdp.data.registry import load, load_svmlight
from mpcdp.data.split import party_sizes, split_indices
from mpcdp.errors import ConfigError

BLOCKS = [5, 8, 5, 16, 5, 7, 14, 6, 5, 2, 2, 2, 5, 41]  # a9a's one-hot blocks, in adult.names order
CONTINUOUS = {0, 2, 4, 10, 11, 12}


@pytest.fixture(scope="module")
def a9a():
    return load_a9a()


def test_a9a_matches_libsvm_shape_and_counts(a9a):
    assert a9a.x_train.shape == (32561, 123) and a9a.x_test.shape == (16281, 123)
    # LIBSVM's a9a has 451,592 non-zeros: 14 per row minus the 4,262 missing values of adult.data
    assert int(a9a.x_train.sum()) == 451_592
    assert int((a9a.y_train > 0).sum()) == 7_841 and int((a9a.y_test > 0).sum()) == 3_846
    assert set(np.unique(a9a.x_train)) == {0.0, 1.0}


def test_a9a_is_one_hot_per_attribute(a9a):
    start = 0
    for block, width in enumerate(BLOCKS):
        per_row = a9a.x_train[:, start:start + width].sum(1)
        assert per_row.max() == 1
        if block in CONTINUOUS:
            assert per_row.min() == 1  # binned values are never missing
        start += width
    assert start == 123


def _encoded_row_by_row(path, attributes):
    """The a9a encoding spelt out one row and one field at a time (the oracle of the vectorised encoder)."""
    widths = [len(values) if values is not None else len(CUTS[name]) + 1 for name, values in attributes]
    rows = [line for line in path.read_text().splitlines() if line and not line.startswith("|")]
    x, y = np.zeros((len(rows), sum(widths)), dtype=np.float32), np.zeros(len(rows), dtype=np.float32)
    for i, row in enumerate(rows):
        fields = [field.strip() for field in row.split(",")]
        offset = 0
        for (name, values), width, field in zip(attributes, widths, fields):
            if field != "?":
                x[i, offset + (values.index(field) if values is not None
                               else int(np.searchsorted(CUTS[name], float(field))))] = 1.0
            offset += width
        y[i] = 1.0 if fields[-1].rstrip(".") == ">50K" else -1.0
    return x, y


def test_a9a_encoding_equals_the_row_by_row_encoding(a9a):
    directory = adult_directory()
    attributes = _attributes(directory / "adult.names")
    for name, (x, y) in (("adult.data", (a9a.x_train, a9a.y_train)), ("adult.test", (a9a.x_test, a9a.y_test))):
        expected_x, expected_y = _encoded_row_by_row(directory / name, attributes)
        assert x.dtype == expected_x.dtype == np.float32 and y.dtype == np.float32
        assert np.array_equal(x, expected_x) and np.array_equal(y, expected_y), name


def test_a9a_encoding_refuses_unknown_values_and_short_rows(tmp_path):
    attributes = _attributes(adult_directory() / "adult.names")
    good = ("39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 2174, 0, "
            "40, ?, <=50K")
    (tmp_path / "ok.data").write_text(good + "\n")
    x, y = _encode(tmp_path / "ok.data", attributes)
    assert x.sum() == 13 and y.tolist() == [-1.0]  # the missing country sets no feature
    (tmp_path / "unknown.data").write_text(good.replace("State-gov", "Moon-gov") + "\n")
    with pytest.raises(ConfigError, match="unknown.data: attribute 'workclass' has a value adult.names does not list"):
        _encode(tmp_path / "unknown.data", attributes)
    (tmp_path / "short.data").write_text(good + "\n" + good.rsplit(",", 1)[0] + "\n")
    with pytest.raises(ConfigError, match="short.data: a row without 15 comma-separated fields"):
        _encode(tmp_path / "short.data", attributes)


def test_breast_cancer_and_unknown_datasets():
    data = load("breast-cancer")
    assert data.x_train.shape[1] == 30 and len(data.y_train) + len(data.y_test) == 569
    assert abs(float(data.x_train.mean())) < 1e-5
    with pytest.raises(ConfigError, match="'ijcnn1' is not shipped.*svmlight:/path/to/ijcnn1"):
        load("ijcnn1")
    with pytest.raises(ConfigError, match="unknown dataset 'adult2'"):
        load("adult2")
    with pytest.raises(ConfigError, match="svmlight file not found"):
        load("svmlight:/nonexistent/file")


def test_svmlight_file_round_trip(tmp_path):
    from sklearn.datasets import dump_svmlight_file

    x = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]])
    dump_svmlight_file(x, np.array([1, 0]), str(tmp_path / "tiny"))
    data = load_svmlight(tmp_path / "tiny", n_features=3)
    assert np.allclose(data.x_train, x) and data.y_train.tolist() == [1.0, -1.0]


@pytest.mark.parametrize("n, parties, ratio", [(32561, 10, 1.0), (32561, 16, 9.0), (569, 16, 5.0), (100, 3, 3.0)])
def test_party_split(n, parties, ratio):
    sizes = party_sizes(n, parties, ratio=ratio)
    assert sum(sizes) == n and len(sizes) == parties
    assert max(sizes) / min(sizes) == pytest.approx(ratio, rel=0.05 if n > 1000 else 0.15)
    parts = split_indices(n, parties, ratio=ratio, seed=1)
    assert sorted(np.concatenate(parts).tolist()) == list(range(n))


def test_party_split_errors():
    with pytest.raises(ConfigError, match="`ratio` \\(n_max/n_min\\) must be >= 1. Found 0.5."):
        party_sizes(100, 4, ratio=0.5)
    with pytest.raises(ConfigError, match="cannot give every one of 16 parties a record"):
        party_sizes(10, 16, ratio=9.0)
