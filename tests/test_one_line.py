"""One line, everywhere (issue 47): a refusal through `mpcdp.train` is one mpcdp exception whose message is the
line, without the library's or the parties' tracebacks unless `debug=True`; the dealer says the data parties'
reason when they refuse the run together, and prints what it serves; a wrong WORLD_SIZE or RANK is refused at
the rendezvous, naming the setting, on every process (claims published first and compared)."""

import os
import pathlib
import re
import subprocess
import sys
import traceback

import numpy as np
import pandas as pd
import pytest

from mpcdp.errors import ConfigError, ConfigMismatchError, PartyFailed, PartyRefused
from mpcdp.refusals import refusal_of
from mpcdp.runtime import progress
from mpcdp.runtime.harness import free_port
from mpcdp.transport import claims, losses, rendezvous
from mpcdp.transport.store_values import MAX_VALUE_BYTES, disagreement_value, parse_claim, parse_report, public_line
from party_commands import run_party_commands

PROTOCOL = "protocols/own-data-mlp.toml"
MPCDP = pathlib.Path(__file__).resolve().parents[1] / "mpcdp"


def _files(folder: pathlib.Path, rows: int = 40, rename: str | None = None) -> list[str]:
    """Three parties' CSVs of 3 features and 0/1 labels; party 1's column 'hours' renamed to ``rename``."""
    rng = np.random.default_rng(5)
    paths = []
    for j in range(3):
        frame = pd.DataFrame(rng.normal(size=(rows, 3)), columns=["age", "hours", "score"])
        frame["y"] = [0, 1] * (rows // 2)
        if j == 1 and rename:
            frame = frame.rename(columns={"hours": rename})
        frame.to_csv(folder / f"p{j}.csv", index=False)
        paths.append(str(folder / f"p{j}.csv"))
    return paths


class _Mlp:
    @staticmethod
    def make():
        import torch

        return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))


def _library_frames(error: BaseException) -> list[str]:
    """The frames of mpcdp's own modules in ``error``'s traceback, other than its entry points."""
    frames = traceback.extract_tb(error.__traceback__)
    return [f.filename for f in frames if pathlib.Path(f.filename).is_relative_to(MPCDP)
            and pathlib.Path(f.filename).name not in ("api.py", "__init__.py")]


def test_a_refusal_through_the_api_is_its_one_line_without_the_librarys_traceback_unless_debug(tmp_path):
    """The dry run's refusal of a batch larger than a party's records: a ConfigError whose traceback ends in
    `mpcdp.train`; with debug=True it still reaches down to the check that raised it."""
    import mpcdp

    files = _files(tmp_path)
    with pytest.raises(ConfigError) as quiet:
        mpcdp.train(_Mlp.make(), files, label="y", protocol=PROTOCOL, backend="simulated")
    assert "\n" not in str(quiet.value) and "`batch`" in str(quiet.value)
    assert _library_frames(quiet.value) == [] and quiet.value.__cause__ is None and quiet.value.__suppress_context__
    with pytest.raises(ConfigError) as loud:
        mpcdp.train(_Mlp.make(), files, label="y", protocol=PROTOCOL, backend="simulated", debug=True)
    assert str(loud.value) == str(quiet.value) and _library_frames(loud.value)


def test_a_clean_dry_run_through_the_api_warns_nothing(tmp_path):
    import warnings

    import mpcdp

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the run
        result = mpcdp.train(_Mlp.make(), _files(tmp_path, rows=200), label="y", protocol=PROTOCOL,
                             backend="simulated")
    assert result.epsilon is not None


def test_a_failed_run_in_one_line_keeps_its_party_reports_and_details():
    full = PartyFailed("party 2 failed — ConfigMismatchError: differ\nstatus of every process:\n  party 0: ok",
                       party=2, reports=["r0", "r1"])
    short = full.one_line()
    assert str(short) == short.line == "party 2 failed — ConfigMismatchError: differ" and short.party == 2
    assert short.reports == ["r0", "r1"] and short.details == "status of every process:\n  party 0: ok"
    refusal = refusal_of("empty", "p1.csv")
    refused = PartyRefused(refusal.text(1), party=1, refusal=refusal, reports=["r"]).one_line()
    assert isinstance(refused, PartyRefused) and refused.refusal == refusal and refused.details == ""


def test_the_local_run_fails_in_one_line_and_its_dealer_says_the_parties_reason(tmp_path, capfd):
    """Party 1's file has another column name: the parties refuse the run in their data agreement. The caller
    gets one line; the dealer's own report says the parties' line, not that party 0 was lost; the dealer
    printed that it serves the run."""
    import mpcdp

    files = _files(tmp_path, rows=200, rename="hrs")
    with pytest.raises(PartyFailed) as info:
        mpcdp.train(_Mlp.make(), files, label="y", protocol=PROTOCOL)
    line = str(info.value)
    assert "\n" not in line and "the schema: party 1's column 2 is 'hrs' where party 0's is 'hours'" in line
    assert "status of every process" in info.value.details
    dealer = [r for r in info.value.reports if r.role == "dealer"][0]
    assert dealer.error_type == "ConfigMismatchError", dealer.message
    assert dealer.message.startswith("the dealer stopped: the data parties refused the run — the parties' data "
                                     "differ (party 1 first): the schema"), dealer.message
    assert "mpcdp dealer: serving a run of 3 parties" in capfd.readouterr().err


def test_a_disagreement_report_is_one_bounded_printable_line():
    long = "the parties' data differ: " + "x\u202e" * 400 + "\nsecond line"
    line = public_line(long)
    assert "\n" not in line and "\u202e" not in line and line.endswith("…")
    assert len(disagreement_value(line).encode("utf-8")) <= MAX_VALUE_BYTES
    assert parse_report(disagreement_value(line), 2) == rendezvous.Report(2, None, "disagreed", reason=line)
    with pytest.raises(ValueError):
        parse_report(disagreement_value("two\nlines"), 2)
    reports = {0: parse_report(disagreement_value("the schema differs"), 0), 3: rendezvous.Report(3, 0, "closed")}
    verdict = losses.judge(3, reports, 4, dealer=3)
    assert str(losses.stopped(verdict, "the dealer", "closed")) == \
        "the dealer stopped: the data parties refused the run — the schema differs"


def test_the_dealers_progress_lines_count_what_it_served_at_a_modest_rate():
    lines, now = [], [0.0]
    served = progress.dealer_lines(progress.PhaseLines("mpcdp dealer", lines.append, clock=lambda: now[0]))
    for count in range(1, 2001):
        now[0] = count * 0.01  # 100 requests a second for 20 s
        served(count, count * 1500)
    assert lines[0] == "mpcdp dealer: served 1 requests of party 0, 1.5 kB"
    assert len(lines) == 4 and lines[-1] == "mpcdp dealer: served 1,501 requests of party 0, 2.3 MB"


@pytest.fixture
def claim_store(own_rendezvous):
    """Party 0's store of a run of 3 data parties and the dealer, joined here as rank 0 (plain, on loopback);
    ``write(key, value)`` writes as another process would. The process's rendezvous state (the run, too) is
    put back afterwards (conftest's ``own_rendezvous``)."""
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    rendezvous.open_store(url, rank=0, processes=4, timeout_s=5.0)
    other = rendezvous.StoreClient("127.0.0.1", port, timeout_s=5.0)
    yield other.set
    rendezvous._server.close()


def test_a_claim_of_another_world_size_is_refused_naming_it_and_told_to_the_others(claim_store):
    write = claim_store
    write("mpcdp/claim/1", "4 5 00000000000000aa")  # rank 1 was started with WORLD_SIZE 4
    with pytest.raises(ConfigMismatchError, match=r"refused at the rendezvous: the processes were started with "
                                                  r"different WORLD_SIZE \(rank 1: 4, rank 0: 3\)"):
        claims.settle(0, 3, 4, timeout_s=2.0)
    report = rendezvous.read_reports(4)[0]  # told to every process waiting, as rank 0's report
    assert report.refusal == refusal_of("world-size", field="rank 1: 4, rank 0: 3")
    assert parse_claim("3 4 00000000000000aa") == (3, 4, "00000000000000aa")


def test_a_second_claimer_of_a_rank_is_refused_and_tells_the_first(claim_store):
    write = claim_store
    write("mpcdp/claim/2", "3 4 00000000000000bb")  # the first process of rank 2
    with pytest.raises(ConfigMismatchError, match="two processes were started with RANK 2"):
        claims.settle(2, 3, 4, timeout_s=30.0)
    assert rendezvous.read_reports(4)[2].refusal == refusal_of("rank-taken", field="2")


def test_party_0_relays_a_taken_rank_under_its_own_report_still_naming_that_rank(claim_store):
    """Party 0 learns from rank 2's report that RANK 2 was taken twice and writes the same refusal as its own
    report (the store's host waits for every claimer's): a process that reads report 0 first names RANK 2."""
    write = claim_store
    for rank in (1, 2, 3):
        write(f"mpcdp/claim/{rank}", f"3 4 {rank:016x}")
    rendezvous.publish_refusal(2, refusal_of("rank-taken", field="2"))  # the second claimer of rank 2
    for rank in (1, 3):
        rendezvous.publish_refusal(rank, refusal_of("rank-taken", field="2"))  # the others read it
    with pytest.raises(ConfigMismatchError, match="two processes were started with RANK 2"):
        claims.settle(0, 3, 4, timeout_s=10.0)
    relayed = rendezvous.read_reports(4)[0].refusal
    assert relayed is not None and "RANK 2:" in relayed.text(0)


def test_a_rank_beyond_world_size_is_refused_by_those_waiting_for_the_missing_rank(claim_store):
    write = claim_store
    for rank in (1, 3):
        write(f"mpcdp/claim/{rank}", f"3 4 {rank:016x}")
    write("mpcdp/claim/5", "3 4 0000000000000005")  # RANK 5 where rank 2 should be
    with pytest.raises(ConfigMismatchError, match=r"a process was started with RANK 5, beyond WORLD_SIZE 3"):
        claims.settle(0, 3, 4, timeout_s=2.0)


def test_mpcdp_party_claims_its_place_before_it_imports_torch():
    """What `mpcdp party` does before it claims its place (the parser, the protocol's [mpc] table, the
    endpoint, the claim's modules) imports no torch: a wrong WORLD_SIZE or RANK is refused within seconds of
    the interpreter's start, not after torch's import."""
    script = ("import sys; from mpcdp.cli import parse_arguments; "
              "ns = parse_arguments(['party', '--job', 'train', '--protocol', 'protocols/quickstart-a9a.toml', "
              "'--rank', '1', '--parties', '3', '--rendezvous', 'tcp://127.0.0.1:1']); "
              "import mpcdp.runtime.party, mpcdp.runtime.endpoint, mpcdp.transport.claims; "
              "print(sorted(m for m in ('torch', 'numpy', 'crypten') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                          cwd=MPCDP.parent)
    assert done.stdout.strip() == "[]"


def test_every_process_refuses_a_rank_started_twice_naming_it(deployment):
    """Four `mpcdp party` processes, RANK 1 twice and rank 2 missing: every one stops naming RANK 1 — party 0,
    the store's host, keeps the store up until the others have read why (long before the timeout of 300 s;
    the wait below is 200 s)."""
    env = dict(os.environ, WORLD_SIZE="3", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               MPCDP_CREDENTIALS=str(deployment))
    command = ["--job", "train", "--protocol", "protocols/quickstart-a9a.toml", "--timeout", "300"]
    done = run_party_commands([command] * 4, env, 200, environments={2: {"RANK": "1"}})
    for i, (code, out, err) in enumerate(done):
        assert code != 0 and "refused at the rendezvous: two processes were started with RANK 1:" in err \
            and "Traceback" not in err, (i, err)


def test_every_separate_process_refuses_a_wrong_world_size_at_the_rendezvous(tmp_path, deployment):
    """`mpcdp party --job train --data` on three processes and the dealer, party 1 given WORLD_SIZE 4: every
    process stops naming WORLD_SIZE — long before the rendezvous's timeout of 300 s (the wait below is 200 s) —
    and none says the batch does not split."""
    files = _files(tmp_path, rows=200)
    env = dict(os.environ, WORLD_SIZE="3", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               MPCDP_CREDENTIALS=str(deployment))
    own = [["--data", files[rank], "--label", "y"] if rank < 3 else [] for rank in range(4)]
    commands = [["--job", "train", "--protocol", "protocols/quickstart-a9a.toml", "--timeout", "300", *own[rank]]
                for rank in range(4)]
    done = run_party_commands(commands, env, 200, environments={1: {"WORLD_SIZE": "4"}})
    line = re.compile(r"mpcdp: refused at the rendezvous: the processes were started with different WORLD_SIZE "
                      r"\(rank \d: [34], rank \d: [34]\)")
    for rank, (code, out, err) in enumerate(done):
        assert code != 0 and line.search(err) and "split" not in err and "Traceback" not in err, (rank, err)
