"""Every record mpcdp writes says where it came from: the mpcdp version, the date and the commit (with whether
tracked files differed from it), in its JSON and in the line its table ends with. Every record under
benchmarks/results/ does (those made before were stamped from git history by benchmarks/restamp.py), and names
the current mechanism, accountant and in-MPC circuit ids unless it is marked stale in its JSON and at the top
of its table."""

import json
import pathlib
import re
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


def test_a_record_is_made_with_local_changes_only_when_code_differs_not_other_records(tmp_path):
    """Records written earlier in the same checkout (benchmarks/results/) are outputs, not the code that
    measured: they leave ``modified`` False; a changed tracked file anywhere else sets it."""
    from mpcdp.jobs.report import provenance

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    (tmp_path / "benchmarks" / "results" / "r.md").write_text("# before\n")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("init", "-q")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    assert provenance(tmp_path)["modified"] is False
    (tmp_path / "benchmarks" / "results" / "r.md").write_text("# after\n")
    assert provenance(tmp_path)["modified"] is False
    (tmp_path / "code.py").write_text("x = 2\n")
    assert provenance(tmp_path)["modified"] is True


def test_a_record_that_sampled_no_noise_in_the_mpc_claims_no_circuit(tmp_path):
    """The default mechanism's circuit is stamped on a record of secure runs, and not on one that sampled no
    noise inside the MPC (an accounting table, a plaintext reference, a noiseless secure sum): a new circuit
    leaves such a record current."""
    from mpcdp.noise.secure_gaussian import CIRCUIT

    sampled = write_record(str(tmp_path / "sampled"), {"x": 1.0}, "# table\n")
    plain = write_record(str(tmp_path / "plain"), {"x": 1.0}, "# table\n", in_mpc_noise=False)
    assert sampled["record"]["circuit"] == CIRCUIT and f"In-MPC circuit (secure runs): {CIRCUIT}." in sampled["markdown"]
    assert "circuit" not in plain["record"] and "In-MPC circuit" not in plain["markdown"]
    assert "circuit" not in json.loads((tmp_path / "plain.json").read_text())


def test_a_records_machine_line_names_the_party_processes_threads_not_the_launchers(monkeypatch):
    """Party processes split the cores (cores // processes, at least 1) unless ``MPCDP_THREADS`` sets the count;
    the line says theirs, whatever this process runs (the records said "2 torch threads" when parties ran 1)."""
    import os

    import torch

    from mpcdp.jobs.report import machine_line

    monkeypatch.delenv("MPCDP_THREADS", raising=False)
    torch_threads = torch.get_num_threads()
    split = max(1, (os.cpu_count() or 1) // 4)
    assert f", {split} torch thread{'s' if split > 1 else ''} per party process, " in machine_line(4)
    monkeypatch.setenv("MPCDP_THREADS", "3")
    assert ", 3 torch threads per party process, " in machine_line(4)
    assert torch.get_num_threads() == torch_threads


RESULTS = ROOT / "benchmarks" / "results"
STALE_LINE = "> **Stale**: "


def current_ids() -> tuple[set[str], str, str, str]:
    """The mechanism ids a record may name (every registered way of making noise and paper 003's discrete
    Laplace), the accountant's, the discrete Gaussian's and its in-MPC circuit's."""
    from mpcdp.accounting.laplace import MECHANISM as LAPLACE
    from mpcdp.accounting.released import ACCOUNTANT
    from mpcdp.learning.mechanisms import MECHANISMS
    from mpcdp.noise.secure_gaussian import CIRCUIT

    return {m.id for m in MECHANISMS.values()} | {LAPLACE}, ACCOUNTANT, MECHANISMS["dgauss"].id, CIRCUIT


def short(version) -> str:
    """An id's name and version (``dg-mpc/5``, ``mpcdp-certify/2``), or what stands in its place."""
    return re.match(r"[^\s:]*", version).group() or repr(version[:40]) if isinstance(version, str) else "missing"


def old_ids(record: dict) -> list[str]:
    """What in ``record`` is not current: its mechanism, accountant or (discrete Gaussian) circuit id."""
    mechanisms, accountant, dgauss, circuit = current_ids()
    found = []
    if record.get("mechanism") not in mechanisms:
        found.append(f"mechanism {short(record.get('mechanism'))} is not a current id "
                     f"({', '.join(sorted(short(m) for m in mechanisms))})")
    if record.get("accountant") != accountant:
        found.append(f"accountant {versus(record.get('accountant'), accountant)}")
    if record.get("mechanism") == dgauss and "circuit" in record and record["circuit"] != circuit:
        found.append(f"circuit {versus(record['circuit'], circuit)}")
    found += [f"{where} {versus(old, new)}" for where, old, new in sampler_circuits(record, circuit)
              if short(old) != short(new)]
    return found


def sampler_circuits(record: dict, circuit: str) -> list[tuple[str, str, str]]:
    """(where, the id recorded, the current id) for every other in-MPC circuit id ``record`` names: its
    ``authenticated_circuit`` (the malicious sampler's) and each of its runs' ``circuit``, semi-honest or
    authenticated (an id of the ``dg-auth`` family is compared with the current circuit of its plan,
    ``malicious_sampler``'s: dg-auth/10 for a run of "fewer-rounds" and a ``fewer_rounds_circuit``, the default
    plan's otherwise)."""
    from mpcdp.noise.auth_gaussian import CIRCUITS

    named = [(key, record[key]) for key in ("authenticated_circuit", "fewer_rounds_circuit") if key in record]
    runs = record.get("runs") if isinstance(record.get("runs"), list) else []
    named += [(f"runs[{i}].circuit", run["circuit"]) for i, run in enumerate(runs)
              if isinstance(run, dict) and isinstance(run.get("circuit"), str)]
    fewer = {"fewer_rounds_circuit"} | {f"runs[{i}].circuit" for i, run in enumerate(runs)
                                       if isinstance(run, dict) and run.get("malicious_sampler") == "fewer-rounds"}
    return [(where, old, (CIRCUITS["fewer-rounds"] if where in fewer else CIRCUITS["fewer-bytes"])
             if short(old).startswith("dg-auth/") else circuit) for where, old in named]


def versus(old, new: str) -> str:
    """``old is not new`` by their short ids, in full where those agree (a dependency's version moved)."""
    return f"{short(old)} is not {short(new)}" if short(old) != short(new) else f"{old!r} is not {new!r}"


def record_problems(path: pathlib.Path, root: pathlib.Path = ROOT) -> list[str]:
    """Why the record at ``path`` fails the stamp check (empty when it passes); files named relative to ``root``."""
    name = path.relative_to(root).as_posix()
    record = json.loads(path.read_text())
    if not isinstance(record, dict):
        return [f"{name}: not a JSON object (a record is one)"]
    problems = []
    made = record.get("recorded") or {}
    if not re.fullmatch(r"[0-9a-f]{40}", str(made.get("commit"))):
        problems.append(f"{name}: recorded.commit is not a 40-hex commit: {made.get('commit')!r}")
    if not made.get("mpcdp_version") or not re.fullmatch(r"\d{4}-\d\d-\d\d", str(made.get("date"))):
        problems.append(f"{name}: recorded lacks mpcdp_version or date: {made!r}")
    table = path.with_suffix(".md")
    text = table.read_text() if table.is_file() else ""
    if made.get("commit") and table.is_file() and \
            f"Recorded: {made.get('date')}, mpcdp {made.get('mpcdp_version')}, commit {made['commit'][:12]}" not in text:
        problems.append(f"{table.relative_to(root).as_posix()}: no 'Recorded: …' line matching its JSON")
    old = old_ids(record)
    if old:
        stale = isinstance(record.get("stale"), str) and record["stale"].strip()
        marked = text.startswith(STALE_LINE)
        if not (stale and marked):
            missing = " and ".join(what for what, ok in (("a `stale` string in its JSON", stale),
                                                         (f"a first line {STALE_LINE!r} in its .md", marked)) if not ok)
            problems.append(f"{name}: {'; '.join(old)} — and it lacks {missing}")
    return problems


def test_every_recorded_result_says_where_it_came_from_and_is_current_or_marked_stale():
    records = sorted(RESULTS.rglob("*.json"))
    assert records, f"no records under {RESULTS}"
    problems = [problem for path in records for problem in record_problems(path)]
    assert not problems, "\n".join(problems)


def test_the_stamp_check_names_the_file_and_the_old_id(tmp_path):
    """A current record with an old accountant and no stale mark fails, naming the file and the accountant;
    marking it stale at both ends passes it."""
    _, accountant, dgauss, circuit = current_ids()
    path = tmp_path / "r.json"
    made = {"mpcdp_version": "0.1.0", "date": "2026-11-29", "commit": "a" * 40, "modified": False}
    record = {"x": 1, "mechanism": dgauss, "accountant": "mpcdp-certify/2 (old)", "recorded": made,
              "circuit": circuit}
    path.write_text(json.dumps(record))
    path.with_suffix(".md").write_text(f"# t\n\nRecorded: 2026-11-29, mpcdp 0.1.0, commit {'a' * 12}.\n")
    problems = record_problems(path, tmp_path)
    assert len(problems) == 1 and problems[0].startswith(f"r.json: accountant mpcdp-certify/2 is not {short(accountant)}")
    path.write_text(json.dumps({"stale": "Stale since accountant mpcdp-certify/3: ...", **record}))
    assert "lacks a first line" in record_problems(path, tmp_path)[0]
    path.with_suffix(".md").write_text(f"{STALE_LINE}Stale since ...\n\n" + path.with_suffix(".md").read_text())
    assert record_problems(path, tmp_path) == []
    path.write_text(json.dumps({**record, "accountant": accountant, "circuit": "dg-mpc/5: ..."}))
    assert f"circuit dg-mpc/5 is not {short(circuit)}" in record_problems(path, tmp_path)[0]
    from mpcdp.noise.auth_gaussian import CIRCUIT as AUTHENTICATED

    path.write_text(json.dumps({**record, "accountant": accountant, "authenticated_circuit": "dg-auth/1: ..."}))
    assert f"authenticated_circuit dg-auth/1 is not {short(AUTHENTICATED)}" in record_problems(path, tmp_path)[0]
    path.write_text(json.dumps({**record, "accountant": accountant, "authenticated_circuit": AUTHENTICATED,
                                "runs": [{"circuit": circuit}, {"circuit": "dg-auth/2: ..."}]}))
    assert f"runs[1].circuit dg-auth/2 is not {short(AUTHENTICATED)}" in record_problems(path, tmp_path)[0]
    path.write_text(json.dumps({**record, "accountant": accountant, "authenticated_circuit": AUTHENTICATED,
                                "runs": [{"circuit": AUTHENTICATED, "malicious_sampler": "fewer-rounds"}]}))
    assert f"runs[0].circuit {short(AUTHENTICATED)} is not dg-auth/10" in record_problems(path, tmp_path)[0]
