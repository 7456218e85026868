"""How long each test file takes, for the order xdist's workers get them in (tests/conftest.py).

``--dist loadfile`` (pyproject.toml) hands out whole files, in collection order once xdist's own reorder (by test
count) is off. A long file with few tests then no longer comes last, where one worker would run it while the
other idles: the files go longest first (the classic longest-processing-time rule), the short ones fill the end.

The weights are file_seconds.json: setup + call + teardown of a file's tests, summed from a ``--durations=0``
run. Only their order matters. Refresh them after a file's time changes much::

    .venv/bin/python -m pytest -p no:cacheprovider --durations=0 > run.txt
    .venv/bin/python tests/file_seconds.py run.txt
"""

from __future__ import annotations

import json
import math
import pathlib
import re
import sys

TABLE = pathlib.Path(__file__).with_name("file_seconds.json")
_LINE = re.compile(r"\s*([\d.]+)s (?:setup|call|teardown)\s+tests/([^:]+)::")


def seconds() -> dict[str, float]:
    """The recorded seconds of each test file (by file name)."""
    return json.loads(TABLE.read_text())["seconds"]


def summed(lines) -> dict[str, float]:
    """Seconds per test file from the lines of a ``--durations=0`` report."""
    totals: dict[str, float] = {}
    for line in lines:
        found = _LINE.match(line)
        if found:
            totals[found[2]] = totals.get(found[2], 0.0) + float(found[1])
    return totals


def longest_first(files: list[str], table: dict[str, float]) -> list[str]:
    """``files`` by recorded seconds, longest first; a file the table does not know first of all (it may be
    long); equal weights keep their order."""
    return sorted(files, key=lambda name: -table.get(name, math.inf))


def refresh(report: pathlib.Path) -> None:
    """Rewrite the table from a ``--durations=0`` report (every test file; one under 5 ms in all: 0)."""
    totals = summed(report.read_text().splitlines())
    files = sorted(p.name for p in TABLE.parent.glob("test_*.py"))
    table = {name: round(totals.get(name, 0.0), 1) for name in sorted(files, key=lambda f: -totals.get(f, 0.0))}
    record = json.loads(TABLE.read_text())
    record["seconds"] = table
    TABLE.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    refresh(pathlib.Path(sys.argv[1]))
