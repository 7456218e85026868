"""Whom the processes of a failed run name: a rogue cannot move the blame by reporting first (it can report
only as itself), and a frame left unfinished names its sender whatever the sender reports."""

import pytest

from mpcdp.errors import PartyFailed
from mpcdp.runtime.harness import run_job
from mpcdp.transport import losses
from mpcdp.transport.store_values import Report
from party_jobs import forge_blame_then_garble, short_frame_then_wait


def _reports(*entries) -> dict:
    return {writer: Report(writer, suspect, kind) for writer, suspect, kind in entries}


def test_direct_evidence_outweighs_a_forged_report_and_a_cascade_of_closed_links():
    # the rogue 2 accuses party 1; party 0 saw party 2's garbage; 1 and the dealer saw party 0 close
    reports = _reports((2, 1, "violation"), (0, 2, "violation"), (1, 0, "closed"), (3, 0, "closed"))
    for me in (1, 3):
        assert losses.judge(me, reports).suspects == (2,)


def test_an_unfinished_frame_outweighs_the_senders_own_timeout():
    reports = _reports((1, 0, "timeout"), (0, 1, "short"), (2, 0, "timeout"), (3, 1, "closed"))
    assert losses.judge(2, reports).suspects == (1,)
    assert losses.judge(3, reports).suspects == (1,)


def test_a_killed_party_is_named_though_more_processes_saw_a_reporter_close():
    # party 2 died without a report; 0 noticed, reported and closed; 1 and the dealer only saw 0 close
    reports = _reports((0, 2, "closed"), (1, 0, "closed"), (3, 0, "closed"))
    assert losses.judge(1, reports).suspects == (2,)
    assert losses.settled(reports, 4)  # party 2 is accused: nobody waits for its report


def test_mutual_accusations_of_equal_strength_name_both_and_a_report_naming_me_is_ignored():
    reports = _reports((0, 2, "violation"), (2, 0, "short"), (1, 0, "closed"), (3, 2, "closed"))
    verdict = losses.judge(3, reports)
    assert verdict.suspects == (0, 2) and verdict.mutual
    assert "party 0 or party 2 was lost: each accuses the other" in losses.message(verdict, "the dealer", "x")
    assert losses.judge(0, reports).suspects == (2,)  # party 0 never believes party 2's report about itself


def test_a_malformed_report_names_its_writer():
    reports = {1: "a malformed loss report (not JSON)", 0: Report(0, None, "none")}
    assert losses.judge(2, reports).suspects == (1,)
    assert losses.judge(1, reports).suspects == ()


def _honest_reports_name(err: PartyFailed, rogue: int) -> None:
    for report in err.reports:
        if report.rank == rogue:
            continue
        assert report.status == "error", (report.rank, report.summary())
        assert report.blamed_party == rogue, (report.rank, report.message)
        assert f"party {rogue}" in report.message, (report.rank, report.message)


@pytest.fixture
def credentials(tmp_path, monkeypatch):
    from mpcdp.transport.credentials import make_deployment

    monkeypatch.setenv("MPCDP_CREDENTIALS", str(make_deployment(tmp_path / "keys", 3)))


def test_a_rogue_that_reports_first_naming_another_and_sends_garbage_is_named(config_for, credentials):
    """Party 2 writes a report naming party 1, then sends party 0 garbage: party 0, party 1 and the dealer
    all stop non-zero naming party 2 (under TLS it cannot write anyone's report but its own)."""
    with pytest.raises(PartyFailed) as info:
        run_job(forge_blame_then_garble, config_for(3, timeout_s=60.0), args=(2, 1, 1))
    _honest_reports_name(info.value, 2)
    assert "party 2 sent a message that is not the expected one" in info.value.reports[0].message


@pytest.mark.parametrize("rogue_timeout", [2.5, None], ids=["its-own-timeout-fires", "reports-and-waits"])
def test_a_rogue_that_cuts_a_frame_short_and_blames_party_0_is_named(config_for, credentials, rogue_timeout):
    """Party 1 announces its share's frame to party 0, sends 8 bytes less and waits; with a shorter timeout
    of its own it stops first, reporting party 0 (or writes that report itself). Every honest process names
    party 1."""
    with pytest.raises(PartyFailed) as info:
        run_job(short_frame_then_wait, config_for(3, timeout_s=60.0), args=(1, 1, 5.0, rogue_timeout))
    _honest_reports_name(info.value, 1)
    assert "party 1 left a frame unfinished" in info.value.reports[0].message
