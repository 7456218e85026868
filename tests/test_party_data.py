"""A party's own file: formats, the errors that name the field (never a label value nor a count of bad
entries), the local check of labels against the model's classes, and the public agreement on schema, record
shape and class count that every party checks before any share moves."""

import numpy as np
import pandas as pd
import pytest

from mpcdp.data.party_file import load_party_file
from mpcdp.errors import ConfigError, InputError
from mpcdp.runtime.harness import run_parties


def _csv(path, rows=4, **columns):
    frame = pd.DataFrame({"age": np.arange(rows, dtype=float) + 30, "income": np.linspace(1, 2, rows),
                          "label": [0, 1] * (rows // 2), **columns})
    frame.to_csv(path, index=False)
    return path


def test_a_csv_with_a_label_column_gives_features_labels_and_a_public_description(tmp_path):
    data = load_party_file(_csv(tmp_path / "mine.csv"), label="label")
    assert data.x.shape == (4, 2) and data.x.dtype == np.float64 and data.names == ("age", "income")
    description = data.description()
    assert description == {"schema_sha256": data.schema_sha256, "record_shape": [2], "records": 4,
                           "names": ["age", "income"], "dtypes": ["float64", "float64"]}  # the schema, no labels
    other = load_party_file(_csv(tmp_path / "theirs.csv", rows=6), label="label")
    assert other.schema_sha256 == data.schema_sha256  # the schema, not the records, is hashed
    reordered = load_party_file(tmp_path / "mine.csv", label="label", features=["income", "age"])
    assert reordered.schema_sha256 != data.schema_sha256


@pytest.mark.parametrize("kwargs, extra, error, text", [
    ({}, {}, ConfigError, "`label` .* is required"),
    ({"label": "outcome"}, {}, ConfigError, "`label` column 'outcome' is not in"),
    ({"label": "label", "features": ["age", "weight"]}, {}, ConfigError, r"`features` \['weight'\]"),
    ({"label": "label"}, {"city": ["a", "b", "c", "d"]}, ConfigError,
     "feature column 'city' .* has dtype .*: features must be numbers"),
    ({"label": "label"}, {"blood": [1.0, np.nan, 2.0, np.inf]}, InputError,
     "has NaN or Inf values in feature column 'blood'.$"),
    ({"label": "outcome"}, {"outcome": [0.0, np.nan, 1.0, np.inf]}, InputError,
     "has NaN or Inf values in its label column 'outcome'.$"),
])
def test_a_bad_csv_is_refused_naming_the_field(tmp_path, kwargs, extra, error, text):
    path = _csv(tmp_path / "mine.csv", **extra)
    with pytest.raises(error, match=text):
        load_party_file(path, **kwargs)


def test_svmlight_npz_and_parquet_files_and_unknown_or_empty_ones(tmp_path):
    svm = tmp_path / "mine.svm"
    svm.write_text("1 1:0.5 3:1\n-1 2:2\n")
    data = load_party_file(svm, features=5)
    assert data.x.shape == (2, 5) and data.x[0].tolist() == [0.5, 0, 1, 0, 0]
    assert data.y.tolist() == [1, -1]
    np.savez(tmp_path / "images.npz", x=np.zeros((3, 1, 4, 4), dtype=np.float32), y=np.array([0, 2, 1]))
    images = load_party_file(tmp_path / "images.npz")
    assert images.description()["record_shape"] == [1, 4, 4] and images.y.tolist() == [0, 2, 1]
    np.savez(tmp_path / "nan.npz", x=np.zeros((3, 2)), y=np.array([0.0, np.nan, 1.0]))
    with pytest.raises(InputError, match="has NaN or Inf values in its labels.$"):
        load_party_file(tmp_path / "nan.npz")
    frame = pd.DataFrame({"a": [1.0, 2.0], "label": [0, 1]})
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        frame.to_csv(tmp_path / "t.parquet")  # any bytes: the reader is missing before it looks at them
        with pytest.raises(ConfigError, match="needs pyarrow"):
            load_party_file(tmp_path / "t.parquet", label="label")
    else:
        frame.to_parquet(tmp_path / "t.parquet")
        assert load_party_file(tmp_path / "t.parquet", label="label").x.tolist() == [[1.0], [2.0]]
    (tmp_path / "data.xlsx").write_text("")
    with pytest.raises(ConfigError, match="unknown format '.xlsx'"):
        load_party_file(tmp_path / "data.xlsx")
    (tmp_path / "empty.csv").write_text("age,label\n")
    with pytest.raises(InputError, match="holds no records"):
        load_party_file(tmp_path / "empty.csv", label="label")
    with pytest.raises(ConfigError, match="does not exist"):
        load_party_file(tmp_path / "absent.csv", label="label")


def test_the_parties_agree_on_schema_shape_and_labels_or_every_party_refuses_naming_the_first_odd_one(config_for):
    from party_jobs import agree_or_refuse

    base = {"schema_sha256": "a" * 64, "record_shape": [2], "classes": 2, "records": 10}
    agreed = run_parties(agree_or_refuse, config_for(3), party_args=[({**base, "records": n},) for n in (10, 20, 5)])
    assert [r["sizes"] for r in agreed] == [[10, 20, 5]] * 3
    cases = [("schema_sha256", "b" * 64, "ConfigMismatchError"), ("classes", 3, "ConfigMismatchError"),
             ("record_shape", [3], "ConfigMismatchError"), ("records", 0, "InputError"),
             ("labels", [0, 1], "ConfigMismatchError")]  # a description with label values is refused
    descriptions = [[base, base, {**base, field: value}] for field, value, _ in cases]
    for (field, value, kind), args in zip(cases, descriptions):
        results = run_parties(agree_or_refuse, config_for(3), party_args=[(d,) for d in args])
        assert {r["error"] for r in results} == {kind}, field  # refused on every party
        assert all(r["party"] == 2 and field in r["message"] and r["message"] == results[0]["message"]
                   for r in results), results[0]["message"]
        assert "a" * 13 not in results[0]["message"] and "b" * 13 not in results[0]["message"]  # hash prefixes only
