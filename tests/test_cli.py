"""`mpcdp aggregate`: a real 3-party secure aggregation that prints one JSON line."""

import json
import subprocess
import sys


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mpcdp.cli", *args], capture_output=True, text=True, timeout=300)


def test_aggregate_prints_one_checked_json_line():
    result = _run("aggregate", "--parties", "3", "--dim", "123")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1
    report = json.loads(lines[0])
    assert {"parties", "dim", "max_abs_error", "bytes_per_party", "rounds", "wall_s"} <= set(report)
    assert (report["parties"], report["dim"], report["provider"]) == (3, 123, "dealer")
    assert report["max_abs_error"] <= report["error_bound"] == 3 * 2.0**-17
    assert report["all_parties_agree"] is True
    # one metadata round + one opening; the opening alone sends at least the ring all-reduce's payload
    assert report["rounds"] == 2
    assert report["opening_bytes_per_party"] >= 2 * (3 - 1) / 3 * 8 * 123


def test_bad_arguments_are_named():
    result = _run("aggregate", "--parties", "1")
    assert result.returncode == 2
    assert "`parties` must be an integer >= 2. Found 1." in result.stderr
    result = _run("aggregate", "--dim", "0")
    assert result.returncode == 2 and "`--dim` must be >= 1. Found 0." in result.stderr
