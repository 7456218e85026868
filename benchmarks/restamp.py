"""One-off: stamp the records made before records said where they came from, from git history; and mark a record
stale by the one convention.

    .venv/bin/python -m benchmarks.restamp [PREFIX.json ...]          # default: every benchmarks/results/**/*.json
    .venv/bin/python -m benchmarks.restamp --stale PREFIX "REASON"

Records written since :func:`mpcdp.jobs.report.write_record` stamps provenance carry ``recorded`` (mpcdp version,
date, commit, local changes). For a record without it this adds, from git history, the commit that last changed
what the record holds (commits that only added or changed its ``stale`` note are skipped: they measured
nothing), that commit's date (UTC), the mpcdp version in pyproject.toml at that commit, ``modified: false`` and
``from_history: true`` (stamped afterwards, not by the run), and the matching ``Recorded: …`` line in its table
(after the ``Accountant:`` line where the table has one, else at its end). Nothing measured changes; a record
that has ``recorded`` is left alone, so running it again changes nothing.

``--stale``: the record's JSON gets ``stale`` (the reason) as its first field and its table a first line
``> **Stale**: REASON`` (replacing an earlier one): the mark tests/test_records.py accepts in place of current
mechanism, accountant and circuit ids.
"""

from __future__ import annotations

import argparse
import datetime
import json
import pathlib
import subprocess
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
STALE_PREFIX = "> **Stale**: "
IGNORED = ("stale", "recorded")  # what a commit may change without making a new measurement


def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)


def _content_at(commit: str, relative: str) -> object:
    """The record at ``commit`` without the notes added afterwards; None where the file is absent or unreadable."""
    shown = git("show", f"{commit}:{relative}")
    if shown.returncode != 0:
        return None
    try:
        loaded = json.loads(shown.stdout)
    except ValueError:
        return None
    return {k: v for k, v in loaded.items() if k not in IGNORED} if isinstance(loaded, dict) else loaded


def recording_commit(path: pathlib.Path) -> str:
    """The newest commit that changed what ``path`` holds (not only its ``stale`` or ``recorded`` fields)."""
    relative = path.resolve().relative_to(ROOT).as_posix()
    commits = git("log", "--format=%H", "--", relative).stdout.split()
    if not commits:
        raise SystemExit(f"{relative}: not in git history (commit it first, or re-run its command)")
    for commit in commits:
        if _content_at(commit, relative) != _content_at(f"{commit}^", relative):
            return commit
    return commits[-1]


def history_provenance(path: pathlib.Path) -> dict:
    """``recorded`` for a record made before records stamped it, from the commit that made it."""
    commit = recording_commit(path)
    when = datetime.datetime.fromisoformat(git("log", "-1", "--format=%cI", commit).stdout.strip())
    project = tomllib.loads(git("show", f"{commit}:pyproject.toml").stdout)
    return {"mpcdp_version": project["project"]["version"],
            "date": when.astimezone(datetime.timezone.utc).date().isoformat(),
            "commit": commit, "modified": False, "from_history": True}


def recorded_line(made: dict) -> str:
    """The table's line for ``made``: :func:`mpcdp.jobs.report.stamp`'s, saying when it was stamped afterwards."""
    line = f"Recorded: {made['date']}, mpcdp {made['mpcdp_version']}, commit {made['commit'][:12]}"
    return line + (" (stamped from git history)." if made.get("from_history") else ".")


def _write_json(path: pathlib.Path, record: dict) -> None:
    path.write_text(json.dumps(record, indent=1) + "\n")


def _with_recorded_line(text: str, line: str) -> str:
    lines = text.rstrip("\n").split("\n")
    accountant = [i for i, each in enumerate(lines) if each.startswith("Accountant: ")]
    if accountant:
        lines.insert(accountant[-1] + 1, line)
    else:
        lines += ["", line]
    return "\n".join(lines) + "\n"


def restamp(path: pathlib.Path) -> bool:
    """Stamp one record from history; False when it needs nothing (already stamped, or not a record)."""
    record = json.loads(path.read_text())
    if not isinstance(record, dict):
        print(f"{path}: not a JSON object, left alone", file=sys.stderr)
        return False
    if "recorded" in record:
        return False
    made = history_provenance(path)
    keys = list(record)
    at = keys.index("accountant") + 1 if "accountant" in keys else len(keys)
    _write_json(path, {**{k: record[k] for k in keys[:at]}, "recorded": made, **{k: record[k] for k in keys[at:]}})
    table = path.with_suffix(".md")
    if table.is_file():
        table.write_text(_with_recorded_line(table.read_text(), recorded_line(made)))
    return True


def prefix_of(name: str | pathlib.Path) -> pathlib.Path:
    """A record's path without ``.json`` or ``.md`` (names may hold other dots)."""
    path = pathlib.Path(name)
    return path.with_suffix("") if path.suffix in (".json", ".md") else path


def mark_stale(prefix: pathlib.Path, reason: str) -> None:
    """Mark the record at ``prefix`` stale: ``stale`` first in its JSON, ``> **Stale**: reason`` atop its table."""
    path = prefix.parent / f"{prefix.name}.json"
    record = json.loads(path.read_text())
    _write_json(path, {"stale": reason, **{k: v for k, v in record.items() if k != "stale"}})
    table = prefix.parent / f"{prefix.name}.md"
    text = table.read_text()
    if text.startswith(STALE_PREFIX):
        text = text.split("\n", 1)[1].lstrip("\n")
    table.write_text(f"{STALE_PREFIX}{reason}\n\n{text}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("records", nargs="*", help="record files (default: every benchmarks/results/**/*.json)")
    parser.add_argument("--stale", nargs=2, metavar=("PREFIX", "REASON"), help="mark one record stale")
    ns = parser.parse_args(argv)
    if ns.stale:
        mark_stale(prefix_of(ns.stale[0]), ns.stale[1])
        return 0
    paths = [pathlib.Path(p) for p in ns.records] or sorted(RESULTS.rglob("*.json"))
    stamped = [p for p in paths if restamp(p)]
    print(f"stamped {len(stamped)} of {len(paths)} records from git history")
    return 0


if __name__ == "__main__":
    sys.exit(main())
