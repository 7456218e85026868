"""A party that refuses its own data tells every other process why, before any link opens: the reason's
category, the file and the column, never a value. Every process, the dealer included, stops with the same one
line; the refusal travels through the rendezvous store, bounded and schema-checked on both ends; schema
mismatches across parties name the first column that differs."""

import json
import os
import re
import pathlib
import subprocess

import numpy as np
import pandas as pd
import pytest
import torch

from mpcdp.data.party_file import PartyData, load_party_file, schema_difference
from mpcdp.errors import ConfigError, PartyRefused
from mpcdp.jobs.own_data import PartySource
from mpcdp.runtime.harness import free_port
from mpcdp.refusals import MAX_NAME_BYTES, Refusal, parse_refusal, public_name, refusal_of
from mpcdp.transport.store_values import MAX_VALUE_BYTES, parse_report
import forked
from party_commands import run_party_commands

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROTOCOL = "protocols/quickstart-a9a.toml"  # logistic regression: labels -1/+1, any number of features
COLUMNS = ["age", "hours", "score"]
SECRET = 4817.25  # a value in party 1's file that must reach no process's output
NAN_COUNT = 7  # how many of party 1's records hold a NaN: a count that must not appear either
PROGRESS = re.compile(r"mpcdp (party \d+|dealer): ")  # progress lines (mpcdp.runtime.progress), not errors


def _party_files(folder: pathlib.Path, odd: str) -> list[str]:
    """Three parties' CSVs; party 1's has a NaN, a column of words, or is a 0-byte file."""
    rng = np.random.default_rng(3)
    paths = []
    for j in range(3):
        frame = pd.DataFrame(rng.normal(size=(40, 3)), columns=COLUMNS)
        frame["y"] = [1, -1] * 20
        if j == 1:
            frame.loc[frame.index[NAN_COUNT], "hours"] = SECRET
            if odd == "nan":
                frame.loc[frame.index[:NAN_COUNT], "age"] = np.nan
            elif odd == "string":
                frame["hours"] = frame["hours"].astype(object)
                frame.loc[frame.index[2], "hours"] = "Zurich-secret"
        path = folder / f"party{j}.csv"
        frame.to_csv(path, index=False)
        if j == 1 and odd == "empty":
            path.write_bytes(b"")
        paths.append(str(path))
    return paths


LINES = {"nan": "party 1 refused its data: file 'party1.csv' column 'age' has NaN or Inf values",
         "string": "party 1 refused its data: file 'party1.csv' column 'hours' is not numeric",
         "empty": "party 1 refused its data: file 'party1.csv' holds no records"}


PRIVATE = (str(SECRET), "4817", "Zurich", f" {NAN_COUNT} ")


def test_every_process_of_separate_commands_says_in_one_line_that_party_1_refused_its_file(tmp_path, deployment):
    """`mpcdp party --job train --data FILE` as on separate hosts (three parties and the dealer): party 1's
    file, with a NaN, is refused before it joins; every process exits non-zero with the one line naming
    party 1, the file and the reason's category; no process prints a value of the file, a count, a path or a
    traceback."""
    odd = "nan"
    files = _party_files(tmp_path, odd)
    env = dict(os.environ, WORLD_SIZE="3", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               MPCDP_CREDENTIALS=str(deployment))
    own = [["--data", files[rank], "--label", "y"] if rank < 3 else [] for rank in range(4)]
    done = run_party_commands([["--job", "train", "--protocol", PROTOCOL, "--timeout", "60", *own[rank]]
                               for rank in range(4)], env, 120)
    for rank, (code, out, err) in enumerate(done):
        assert code != 0, (rank, out, err)
        failure = [line for line in err.strip().splitlines() if not PROGRESS.match(line)]  # progress lines apart
        assert out == "" and failure == [f"mpcdp: the run failed: {LINES[odd]}"], (rank, err)
    everything = "".join(out + err for _, out, err in done)
    for private in (*PRIVATE, str(tmp_path)):
        assert private not in everything


@pytest.mark.parametrize("odd", ["string", "empty"])
def test_every_process_of_a_local_run_says_that_party_1_refused_its_file_and_no_value(tmp_path, odd):
    """`mpcdp.train` with one file per party on this host (each party its own process, and the dealer):
    party 1's file with a column of words, or of 0 bytes, is refused before it joins; every process stops with
    the same line, which the caller gets as :class:`PartyRefused`; no process's output holds a value."""
    import mpcdp

    files = _party_files(tmp_path, odd)
    with pytest.raises(PartyRefused) as info:
        mpcdp.train("logreg", files, label="y", protocol=PROTOCOL)
    assert str(info.value) == LINES[odd] and info.value.party == 1
    assert [(r.name, r.error_type, r.message) for r in info.value.reports] == \
        [(name, "PartyRefused", LINES[odd]) for name in ("party 0", "party 1", "party 2", "dealer")]
    shown = "".join(f"{r.message}{r.traceback}{r.log_tail}" for r in info.value.reports)
    for private in PRIVATE:
        assert private not in shown


def test_debug_shows_the_traceback_of_a_refusal_that_no_other_process_hears_of(tmp_path):
    """One party alone, its rendezvous unreachable (nobody hosts it): it refuses its 0-byte file before
    joining anything, says that the others could not be told, and shows a traceback only with --debug."""
    files = _party_files(tmp_path, "empty")
    env = dict(os.environ, RANK="1", WORLD_SIZE="3", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    command = [str(ROOT / ".venv" / "bin" / "mpcdp"), "party", "--insecure-links", "--job", "train", "--protocol",
               PROTOCOL, "--timeout", "1", "--data", files[1], "--label", "y"]
    quiet = forked.run(command, env=env, capture_output=True, text=True, cwd=ROOT, timeout=120)
    loud = forked.run([*command, "--debug"], env=env, capture_output=True, text=True, cwd=ROOT, timeout=120)
    lines = [line for line in quiet.stderr.splitlines() if "InsecureSettingWarning" not in line
             and not PROGRESS.match(line)]
    assert quiet.returncode != 0 and len(lines) == 1 and "Traceback" not in quiet.stderr
    assert lines[0].startswith(f"mpcdp: the run failed: {LINES['empty']} (the other processes could not be told: "
                               f"PeerTimeout")
    assert loud.returncode != 0 and "Traceback" in loud.stderr and "EmptyDataError" not in loud.stderr
    assert "holds no records (it is empty)" in loud.stderr  # the local error, chained under the refusal


class _Mlp(torch.nn.Module):  # the README's width, not the files'
    def __init__(self, features: int = 123):
        super().__init__()
        self.layers = torch.nn.Sequential(torch.nn.Linear(features, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))

    def forward(self, x):
        return self.layers(x)


def test_a_model_of_another_input_width_is_refused_by_every_party_before_any_party_connects(tmp_path):
    """`mpcdp.train(Mlp(123), files)` on files of 3 features: each party tries the model on one record of its
    own shape before it joins, and refuses it there — no party enters a single step of the protocol."""
    import mpcdp

    files = _party_files(tmp_path, "none")
    for path in files:  # the network's labels: the class indices 0 and 1
        frame = pd.read_csv(path)
        frame["y"] = (frame["y"] > 0).astype(int)
        frame.to_csv(path, index=False)
    with pytest.raises(PartyRefused) as info:
        mpcdp.train(_Mlp(), files, label="y", protocol="protocols/own-data-mlp.toml")
    line = "party 0 refused its data: the model cannot take the records of file 'party0.csv' (record shape '(3,)')"
    assert str(info.value) == line
    assert info.value.refusal == Refusal("model-input", "party0.csv", "(3,)")  # carried to the caller
    with pytest.raises(PartyRefused) as dry:  # the dry run refuses with the same line and refusal
        mpcdp.train(_Mlp(), files, label="y", protocol="protocols/own-data-mlp.toml", backend="simulated")
    assert str(dry.value) == line and dry.value.refusal == info.value.refusal
    parties = [r for r in info.value.reports if r.role == "party"]
    assert all(r.error_type == "PartyRefused" and r.blamed_party == r.rank for r in parties)  # each its own
    assert all(r.step == -1 for r in parties)  # no party entered any protocol step: none joined
    dealer = [r for r in info.value.reports if r.role == "dealer"][0]
    assert dealer.error_type == "PartyRefused" and dealer.message.startswith("party ")


def test_a_held_out_file_of_another_schema_is_refused_naming_the_first_column_that_differs(tmp_path):
    files = _party_files(tmp_path, "none")
    frame = pd.read_csv(files[0])
    frame[["hours", "age", "score", "y"]].to_csv(tmp_path / "held.csv", index=False)  # reordered
    with pytest.raises(ConfigError, match="the held-out file's column 1 is 'hours' where the training file's is "
                                          "'age'") as info:
        PartySource(files[0], str(tmp_path / "held.csv"), "y").load()
    assert info.value.refusal.text(0) == ("party 0 refused its data: held-out file 'held.csv' has another schema "
                                          "than the training file (first at column 'hours', position 1)")


def _data(names, dtypes=None):
    return PartyData(np.zeros((2, len(names))), np.zeros(2), tuple(names), tuple(dtypes or ["float64"] * len(names)),
                     "mine.csv")


def test_schema_differences_name_the_first_column_by_position_and_name():
    ours = _data(["age", "hours", "score"])
    cases = {("age", "weekly", "score"): "party 2's column 2 is 'weekly' where party 0's is 'hours'",  # renamed
             ("hours", "age", "score"): "party 2's column 1 is 'hours' where party 0's is 'age'",  # reordered
             ("age", "hours"): "party 2 has 2 columns where party 0 has 3 (column 3 is 'score')"}
    for names, text in cases.items():
        theirs = _data(names)
        assert schema_difference(ours.names, ours.dtypes, theirs.names, theirs.dtypes, this="party 0",
                                 other="party 2")[2] == text
    retyped = _data(["age", "hours", "score"], ["float64", "int64", "float64"])
    assert schema_difference(ours.names, ours.dtypes, retyped.names, retyped.dtypes, this="party 0",
                             other="party 2")[2] == "party 2's column 2 'hours' is 'int64' where party 0's is 'float64'"
    assert schema_difference(ours.names, ours.dtypes, ours.names, ours.dtypes, this="a", other="b") is None


def test_the_parties_agreement_names_a_renamed_or_reordered_column_instead_of_hashes(config_for):
    from party_jobs import agree_or_refuse
    from mpcdp.runtime.harness import run_parties

    ours = {**_data(["age", "hours", "score"]).description(), "classes": 2}
    renamed = {**_data(["age", "weekly", "score"]).description(), "classes": 2}
    reordered = {**_data(["hours", "age", "score"]).description(), "classes": 2}
    results = run_parties(agree_or_refuse, config_for(3), party_args=[(ours,), (renamed,), (reordered,)])
    assert {r["message"] for r in results} == {
        "the parties' data differ (party 1 first): the schema: party 1's column 2 is 'weekly' where party 0's is "
        "'hours'; party 2's column 1 is 'hours' where party 0's is 'age'"}
    assert all(r["party"] == 1 for r in results)
    forged = {**ours, "names": ["age", "hours", "other"]}  # a schema that is not the one its hash names
    results = run_parties(agree_or_refuse, config_for(3), party_args=[(ours,), (ours,), (forged,)])
    assert all(r["party"] == 2 and "`schema_sha256` that is not its schema's" in r["message"] for r in results)


def test_a_refusal_in_the_store_is_bounded_and_schema_checked_by_writer_and_reader():
    refusal = refusal_of("not-numeric", "/home/alice/private folder/B.csv", "age")
    assert refusal.file == "B.csv"  # the file's name, not where it lies
    assert refusal.text(1) == "party 1 refused its data: file 'B.csv' column 'age' is not numeric"
    report = parse_report(json.dumps(refusal.value(), ensure_ascii=False), 1)
    assert report.refusal == refusal and report.suspect is None and report.evidence == "refused"
    hostile = refusal_of("non-finite", "x.csv", "a'b\x1b[31m\u202e" + "é" * 100)
    assert "'" not in hostile.field and "\x1b" not in hostile.field and "\u202e" not in hostile.field
    assert len(hostile.field.encode()) <= MAX_NAME_BYTES
    assert len(json.dumps(hostile.value(), ensure_ascii=False).encode()) <= MAX_VALUE_BYTES
    assert public_name(hostile.field) == hostile.field  # what the writer makes, the reader accepts
    good = refusal.value()
    for bad in ({**good, "refused": "anything"}, {**good, "field": "a'b"}, {**good, "field": "x" * 61},
                {**good, "file": "../B.csv"}, {**good, "position": -1}, {**good, "position": True},
                {**good, "extra": 1}, {k: v for k, v in good.items() if k != "position"}, {**good, "field": 3}):
        with pytest.raises(ValueError):
            parse_refusal(bad)
        with pytest.raises(ValueError):
            parse_report(json.dumps(bad), 1)
    with pytest.raises(ValueError):
        refusal_of("no such category")
    assert Refusal("empty", "B.csv").text(2) == "party 2 refused its data: file 'B.csv' holds no records"


def test_the_store_refuses_a_malformed_refusal_and_keeps_a_good_one():
    from mpcdp.transport.store import StoreClient, StoreServer
    from mpcdp.transport.store_values import REPORT_PREFIX

    server = StoreServer(free_port(), processes=4)
    try:
        client = StoreClient("127.0.0.1", server.address[1], timeout_s=5)
        good = json.dumps(refusal_of("empty", "B.csv").value(), ensure_ascii=False)
        client.set(f"{REPORT_PREFIX}1", good)
        assert server.values[f"{REPORT_PREFIX}1"] == good
        with pytest.raises(ConfigError, match="a malformed value for mpcdp/report/2: a refusal whose `field`"):
            client.set(f"{REPORT_PREFIX}2", json.dumps({**refusal_of("empty", "B.csv").value(), "field": "a\"b"}))
        assert f"{REPORT_PREFIX}2" not in server.values
    finally:
        server.close()


def test_a_file_refused_locally_carries_the_refusal_the_others_are_told(tmp_path):
    (tmp_path / "zero.csv").write_bytes(b"")
    (tmp_path / "words.csv").write_text("age,y\nold,1\nyoung,-1\n")
    expected = {"zero.csv": Refusal("empty", "zero.csv"), "words.csv": Refusal("not-numeric", "words.csv", "age"),
                "absent.csv": Refusal("missing-file", "absent.csv")}
    for name, refusal in expected.items():
        with pytest.raises((ConfigError, ValueError)) as info:
            load_party_file(tmp_path / name, label="y")
        assert info.value.refusal == refusal, name
