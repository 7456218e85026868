"""What a party's own data discloses before training: never a label value nor a count of bad entries.

Labels agree by the model's class count; each party checks its own labels against those classes and refuses
a file with any other label alone, naming the column and the class count. A party with 300 distinct
"salary" labels is refused without any of them reaching any process's output; a NaN is refused naming the
column, with no count."""

import numpy as np
import pandas as pd
import pytest
import torch

from mpcdp.data.party_file import PartyData, load_party_file
from mpcdp.errors import ConfigError, InputError, PartyFailed
from mpcdp.jobs.own_data import model_classes
from mpcdp.learning.logreg import LOGISTIC
from mpcdp.learning.modules import from_module

PROTOCOL = "protocols/own-data-mlp.toml"
FEATURES = [f"a{i}" for i in range(5)]


class _Mlp(torch.nn.Module):
    def __init__(self, outputs: int = 2):
        super().__init__()
        self.layers = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, outputs))

    def forward(self, x):
        return self.layers(x)


def _party_csv(path, labels, seed):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.normal(size=(len(labels), 5)), columns=FEATURES)
    frame["salary"] = labels
    frame.to_csv(path, index=False)
    return str(path)


def _everything_reported(failure: PartyFailed) -> str:
    """The failure report and every process's message, traceback and stdout/stderr tail."""
    parts = [str(failure)]
    for report in failure.reports:
        parts += [report.message or "", report.traceback or "", report.log_tail or ""]
    return "\n".join(parts)


@pytest.mark.parametrize("kind", ["int", "float"])
def test_300_salary_labels_at_one_party_are_refused_there_and_reach_no_process_output(tmp_path, kind):
    salaries = [3_100_000 + 7_919 * i for i in range(300)]  # distinct 7-digit values
    values = salaries if kind == "int" else [s + 0.5 for s in salaries]
    binary = [0, 1] * 150
    files = [_party_csv(tmp_path / f"p{j}.csv", labels, j) for j, labels in enumerate([binary, binary, values])]
    with pytest.raises(PartyFailed) as info:
        __import__("mpcdp").train(_Mlp(), files, label="salary", protocol=PROTOCOL)
    text = _everything_reported(info.value)
    leaked = [s for s in salaries if str(s) in text]
    assert not leaked, f"{len(leaked)} salary values in the output, e.g. {leaked[:3]}"
    assert info.value.party == 2
    refusal = info.value.reports[2]
    assert refusal.error_type == "PartyRefused", refusal.message
    assert refusal.message == "party 2 refused its data: file 'p2.csv' column 'salary' has labels outside the " \
                              "model's classes"  # what every process says
    assert (f"`label` column 'salary' of {files[2]!r} has values outside the model's 2 classes, the class indices "
            f"0..1 (the values are not shown: they are this party's data)") in refusal.traceback  # its own cause


def test_a_nan_in_party_1s_file_is_refused_naming_the_column_and_no_count(tmp_path):
    rng = np.random.default_rng(5)
    files = []
    for j in range(3):
        frame = pd.DataFrame(rng.normal(size=(400, 5)), columns=FEATURES)
        frame["salary"] = [0, 1] * 200
        if j == 1:
            frame.loc[frame.index[:173], "a3"] = np.nan  # 173 records: a count that must not appear
        frame.to_csv(tmp_path / f"p{j}.csv", index=False)
        files.append(str(tmp_path / f"p{j}.csv"))
    with pytest.raises(PartyFailed) as info:
        __import__("mpcdp").train(_Mlp(), files, label="salary", protocol=PROTOCOL)
    assert info.value.party == 1
    assert info.value.reports[1].message == "party 1 refused its data: file 'p1.csv' column 'a3' has NaN or Inf values"
    assert f"`data` file {files[1]!r} has NaN or Inf values in feature column 'a3'." in info.value.reports[1].traceback
    text = _everything_reported(info.value).replace(str(tmp_path), "<tmp>")
    assert "173" not in text and "NaN" in text


def _data(y, name="mine.csv"):
    return PartyData(np.zeros((len(y), 5)), np.asarray(y), tuple(FEATURES), ("float64",) * 5, name)


def test_the_class_count_comes_from_the_declaration_or_the_output_width_and_labels_are_checked_locally():
    assert model_classes(from_module(_Mlp(3), (5,))).count == 3  # the output width
    assert model_classes(from_module(_Mlp(1), (5,))).count == 2  # one logit: a binary classifier
    assert model_classes(from_module(_Mlp(2), (5,)), declared=7).count == 7
    assert model_classes(LOGISTIC).values == (-1, 1)
    with pytest.raises(ConfigError, match="`classes` must be an integer >= 2. Found 1."):
        model_classes(from_module(_Mlp(), (5,)), declared=1)
    with pytest.raises(ConfigError, match="`classes` for logistic regression is 2"):
        model_classes(LOGISTIC, declared=3)
    three = model_classes(from_module(_Mlp(3), (5,)))
    three.check(_data([0, 2, 1, 1.0]), "salary")
    for bad in ([0, 7], [0, 1.5], [0, -4]):
        with pytest.raises(InputError, match=r"outside the model's 3 classes, the class indices 0..2 \(the values") \
                as info:
            three.check(_data(bad), "salary")
        assert str(bad[1]) not in str(info.value)
    with pytest.raises(InputError, match="are not numbers: the model takes the 2 classes of logistic regression"):
        model_classes(LOGISTIC).check(_data(["yes", "no"]), "salary")
    with pytest.raises(InputError, match="has values outside the 2 classes of logistic regression, -1 and \\+1"):
        model_classes(LOGISTIC).check(_data([1, 0]), "salary")


def test_a_file_with_a_nan_label_is_refused_naming_the_column_without_a_count(tmp_path):
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "salary": [0.0, np.nan, np.nan, 1.0]})
    frame.to_csv(tmp_path / "mine.csv", index=False)
    with pytest.raises(InputError) as info:
        load_party_file(tmp_path / "mine.csv", label="salary")
    assert str(info.value) == f"`data` file {str(tmp_path / 'mine.csv')!r} has NaN or Inf values in its label column " \
                              f"'salary'."
