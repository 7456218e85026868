"""The suite's hand-out order (tests/conftest.py, tests/file_seconds.py): test files longest first, each whole."""

import math
import pathlib
import tomllib

from file_seconds import TABLE, longest_first, seconds, summed

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_this_sessions_files_come_longest_first_each_whole(request):
    """The collected order here (every xdist worker collects the same): files by recorded seconds, descending,
    a file the table does not know before the rest, and no file's tests split."""
    table = seconds()
    files = [item.path.name for item in request.session.items]
    runs = [name for i, name in enumerate(files) if i == 0 or files[i - 1] != name]
    assert len(runs) == len(set(runs)), "a file's tests are split"
    weights = [table.get(name, math.inf) for name in runs]
    assert weights == sorted(weights, reverse=True)


def test_xdist_keeps_the_collection_order():
    """Without --no-loadscope-reorder xdist hands out files by test count, not in this order."""
    addopts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    assert "--dist loadfile" in addopts and "--no-loadscope-reorder" in addopts.split()


def test_the_table_names_only_test_files_that_exist():
    stale = [name for name in seconds() if not (TABLE.parent / name).is_file()]
    assert not stale and all(s >= 0 for s in seconds().values())


def test_unknown_files_go_first_and_ties_keep_their_order():
    table = {"a.py": 5.0, "b.py": 50.0, "c.py": 5.0}
    assert longest_first(["a.py", "c.py", "new.py", "b.py"], table) == ["new.py", "b.py", "a.py", "c.py"]
    assert longest_first(["c.py", "a.py"], table) == ["c.py", "a.py"]


def test_a_durations_report_sums_per_file():
    report = ["12.50s call     tests/test_x.py::test_one[1]", "0.25s setup    tests/test_x.py::test_one[1]",
              "3.00s teardown tests/test_y.py::test_two", "(12 durations < 0.005s hidden.)", "1.00s call  other"]
    assert summed(report) == {"test_x.py": 12.75, "test_y.py": 3.0}
