"""Every record mpcdp writes says where it came from: the mpcdp version, the date and the commit (with whether
tracked files differed from it), in its JSON and in the line its table ends with."""

import json
import pathlib
import subprocess

import mpcdp
from mpcdp.jobs.report import write_record

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_a_record_names_the_version_date_and_commit_it_was_made_at(tmp_path):
    out = write_record(str(tmp_path / "r"), {"x": 1.0}, "# table\n")
    made = json.loads((tmp_path / "r.json").read_text())["recorded"]
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert made["mpcdp_version"] == mpcdp.__version__ and len(made["date"]) == 10
    assert made["commit"] == (head or None) and isinstance(made.get("modified", False), bool)
    assert f"Recorded: {made['date']}, mpcdp {mpcdp.__version__}, " in out["markdown"]
    if head:
        assert f"commit {head[:12]}" in out["markdown"]
