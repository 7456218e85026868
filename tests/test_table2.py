"""benchmarks.table2's secure rows under both securities (issue 48: Table 2 ε = 0.5 at m = 10 recorded
semi-honest and malicious): the option, the rows it plans, the summary of fake reports, the ε check, the merge
into a recorded table and the timing tables split by security. No run: every report here is made up."""

from __future__ import annotations

import pytest

from benchmarks import table2


def report(protocol: str, backend: str, seed: int, *, loss: float, epsilon: float = 0.4997, **extra) -> dict:
    secure = {"online_s": 7.0, "presample_s": 1.0, "setup_s": 2.0, "bytes_per_party": 2e7, "dealer_bytes": 5e7}
    return {"protocol": protocol, "backend": backend, "seed": seed, "algorithm": "ddp-srm", "parties": 10,
            "epsilon_target": 0.5, "epsilon": epsilon, "output": "last", "data_passes": 4.0, "cpu_s": 10.0,
            "wall_s": 5.0 if backend == "simulated" else 10.0, "test_loss": loss, "test_error": 0.16, "grad_norm": 0.05,
            "test_loss_paper": loss, "test_loss_last": loss, "test_loss_average": loss,
            **(secure if backend == "mpc" else {}), **extra}


def test_the_secure_rows_run_once_per_security_and_both_by_default():
    ns = table2.parse(["--only", "ddpsrm-a9a-eps0.5"])
    assert ns.security == ("semi-honest", "malicious") and ns.backend == ("simulated", "mpc")
    planned = [r for r in table2.rows(True, ns.security, ns.backend) if r[0] in ns.only]
    assert planned == [("ddpsrm-a9a-eps0.5", "simulated", None), ("ddpsrm-a9a-eps0.5", "mpc", "semi-honest"),
                       ("ddpsrm-a9a-eps0.5", "mpc", "malicious")]
    ns = table2.parse(["--security", "malicious", "--backend", "mpc", "--seeds", "2"])
    assert table2.rows(True, ns.security, ns.backend) == [("ddpsrm-a9a-eps0.2", "mpc", "malicious"),
                                                          ("ddpsrm-a9a-eps0.5", "mpc", "malicious")]
    assert all(r[2] is None for r in table2.rows(False)) and len(table2.rows(False)) == 13


@pytest.mark.parametrize("argv, named", [(["--security", "byzantine"], "--security"),
                                         (["--only", "ddpsrm-a9a-eps0.7"], "--only"),
                                         (["--seeds", "0"], "--seeds")])
def test_bad_options_are_refused_in_one_line_naming_the_option(argv, named, capsys):
    with pytest.raises(SystemExit):
        table2.parse(argv)
    assert named in capsys.readouterr().err.strip().splitlines()[-1]


def test_a_row_summarises_its_seeds_and_refuses_seeds_with_different_epsilon():
    reports = [report("p", "mpc", s, loss=v) for s, v in enumerate([0.34, 0.36])]
    row = table2.summarize("p", "mpc", reports, "malicious")
    assert row["security"] == "malicious" and row["seeds"] == 2 and row["test_loss"][0] == pytest.approx(0.35)
    assert row["dealer_bytes"] == 5e7 and row["presample_s"] == (1.0, 0.0)
    with pytest.raises(AssertionError, match="different ε"):
        table2.summarize("p", "mpc", [reports[0], {**reports[1], "epsilon": 0.4998}], "malicious")


def test_the_rows_of_one_protocol_must_certify_the_same_epsilon():
    rows = [table2.summarize("p", "simulated", [report("p", "simulated", 0, loss=0.35)]),
            table2.summarize("p", "mpc", [report("p", "mpc", 0, loss=0.35)], "semi-honest"),
            table2.summarize("p", "mpc", [report("p", "mpc", 0, loss=0.35)], "malicious")]
    rows[1]["epsilon"] += 1e-10  # recorded at another commit: the certificate's float sums, not another ε
    table2.check_same_epsilon(rows)
    uncertified = [table2.summarize("q", "simulated", [report("q", "simulated", 0, loss=0.34, epsilon=None)])]
    table2.check_same_epsilon(uncertified)  # not certified (non-private STORM, DP-AGD): nothing to compare
    with pytest.raises(AssertionError, match="q: the rows certify different ε"):
        table2.check_same_epsilon(uncertified + [{**uncertified[0], "backend": "mpc", "epsilon": 0.5}])
    rows[2]["epsilon"] = 0.4998
    with pytest.raises(AssertionError, match="p: the rows certify different ε"):
        table2.check_same_epsilon(rows)


def test_merging_keeps_old_rows_and_replaces_or_adds_by_protocol_backend_and_security():
    def row(protocol, backend, security=None, loss=0.35):
        made = table2.summarize(protocol, backend, [report(protocol, backend, 0, loss=loss)], security)
        if security is None and backend == "mpc":  # recorded before issue 48: no security field, semi-honest
            made.pop("security")
        return made

    old = {"rows": [row("a", "simulated"), row("p", "simulated"), row("p", "mpc"), row("q", "simulated")],
           "runs": [report("p", "mpc", 0, loss=0.35), report("p", "simulated", 0, loss=0.35)]}
    new = [row("p", "mpc", "semi-honest", 0.30), row("p", "mpc", "malicious", 0.31)]
    merged, runs = table2.merge(old, new, [report("p", "mpc", 0, loss=0.30, security="semi-honest")])
    assert [table2.key(r) for r in merged] == [("a", "simulated", None), ("p", "simulated", None),
                                               ("p", "mpc", "semi-honest"), ("p", "mpc", "malicious"),
                                               ("q", "simulated", None)]
    assert merged[2]["test_loss"][0] == 0.30  # the old semi-honest row replaced, not duplicated
    assert [(r["backend"], r["test_loss"]) for r in runs] == [("simulated", 0.35), ("mpc", 0.30)]


def test_the_timing_tables_split_by_security_and_divide_malicious_by_semi_honest():
    name = "ddpsrm-a9a-eps0.5"
    sims = [report(name, "simulated", s, loss=v) for s, v in enumerate([0.340, 0.350, 0.360])]
    shs = [report(name, "mpc", s, loss=0.352) for s in range(3)]
    mals = [report(name, "mpc", 0, loss=0.339, presample_s=30.0, online_s=14.0, bytes_per_party=5e8,
                   dealer_bytes=5e9)]
    table = [table2.summarize(name, "simulated", sims), table2.summarize(name, "mpc", shs, "semi-honest"),
             table2.summarize(name, "mpc", mals, "malicious")]
    text = table2.markdown(table, "python -m benchmarks.table2", 3, sims + shs + mals)
    sh_line = next(x for x in text.splitlines() if x.startswith(f"| {name} | semi-honest | 3 |"))
    mal_line = next(x for x in text.splitlines() if x.startswith(f"| {name} | malicious | 1 |"))
    assert "20.0 MB | 50.0 MB | +0.0020 (std 0.0100)" in sh_line
    # the malicious row ran seed 0 only: its loss is set against the simulated run of seed 0 (0.340)
    assert "500.0 MB | 5,000.0 MB | -0.0010 (std 0.0000)" in mal_line
    ratio = next(x for x in text.splitlines() if x.startswith(f"| {name} | 3 / 1 |"))
    assert ratio == f"| {name} | 3 / 1 | 30.0× | 2.0× | 1.0× | 1.0× | 25.0× | 100.0× | -0.0130 |"
    assert "| ddp-srm | mpc | malicious | 10 | 1 | last |" in text and "| ddp-srm | simulated | — | 10 | 3 |" in text
    absent = next(x for x in text.splitlines() if x.startswith("Not recorded: "))
    assert "storm-a9a [simulated]" in absent and "ddpsrm-a9a-eps0.2 [mpc, malicious]" in absent
    assert "ddpsrm-a9a-eps0.5 [mpc" not in absent


def test_what_moved_is_kept_across_merges_until_the_circuit_changes():
    name = "ddpsrm-a9a-eps0.5"
    old_row = table2.summarize(name, "mpc", [report(name, "mpc", 0, loss=0.345)])
    old_row.pop("security")
    before = {"circuit": "dg-mpc/5: ...", "recorded": {"commit": "69ffe2864b8a3ea6"}, "rows": [old_row]}
    prev = table2.previous_secure(before)
    assert prev["circuit"].startswith("dg-mpc/5") and prev["rows"] == [old_row]
    now = table2.summarize(name, "mpc", [report(name, "mpc", 0, loss=0.346, bytes_per_party=3e7)], "semi-honest")
    text = table2.against([now], prev)
    assert "circuit dg-mpc/5, commit 69ffe2864b8a →" in text
    assert f"| {name} | mpc | semi-honest | 1 → 1 | 20.0 MB → 30.0 MB | 1.0 → 1.0 | 7.0 → 7.0 | 0.3450 → 0.3460" in text
    # the next --only command reads a record of today's circuit: the comparison is carried over, not lost
    today = {"circuit": table2.table_circuit(), "rows": [now], "previous_secure": prev}
    assert table2.previous_secure(today) is prev


def test_reports_kept_by_an_earlier_command_are_taken_by_row_and_seed(tmp_path):
    import json

    kept = tmp_path / "table2.partial-1.jsonl"
    kept.write_text("".join(json.dumps({"row": ["p", "mpc", "malicious"], **report("p", "mpc", s, loss=0.3 + s)}) + "\n"
                            for s in range(2)))
    found = table2.load_kept([str(kept)])
    assert sorted(found) == [(("p", "mpc", "malicious"), 0), (("p", "mpc", "malicious"), 1)]
    table, runs = table2.run_rows([("p", "mpc", "malicious")], 2, tmp_path / "again.jsonl", found)
    assert table[0]["test_loss"][0] == pytest.approx(0.8) and [r["seed"] for r in runs] == [0, 1]
    assert len((tmp_path / "again.jsonl").read_text().splitlines()) == 2
