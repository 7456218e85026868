"""Whom the processes of a failed run name: a rogue cannot move the blame by reporting first (it can report
only as itself), and a frame left unfinished names its sender whatever the sender reports."""

import pytest

from mpcdp.errors import PartyFailed
from mpcdp.runtime.harness import run_job
from mpcdp.transport import losses
from mpcdp.transport.store_values import Report
from party_jobs import forge_blame_then_garble, rogue_strategy, short_frame_then_wait


def _reports(*entries) -> dict:
    return {writer: Report(writer, suspect, kind) for writer, suspect, kind in entries}


def test_direct_evidence_outweighs_a_forged_report_and_a_cascade_of_closed_links():
    # the rogue 2 accuses party 1; party 0 saw party 2's garbage; 1 and the dealer saw party 0 close
    reports = _reports((2, 1, "violation"), (0, 2, "violation"), (1, 0, "closed"), (3, 0, "closed"))
    for me in (1, 3):
        assert losses.judge(me, reports).suspects == (2,)


def test_an_unfinished_frame_against_a_timeout_is_one_word_against_another_for_third_parties():
    # party 0 holds party 1's unfinished frame; party 1 says party 0 sent nothing: either can be the rogue
    reports = _reports((1, 0, "timeout"), (0, 1, "short"), (2, 0, "timeout"), (3, 1, "closed"))
    assert losses.suspects(2, reports, 4) == [0, 1]
    for me in (2, 3):
        verdict = losses.judge(me, reports, 4)
        assert verdict.suspects == () and verdict.disputed
    assert "the reports cannot tell which (party 0 says party 1 left a frame unfinished" in \
        losses.message(losses.judge(2, reports, 4), "party 2", "x")
    # a third process that also holds an unfinished frame from party 1 settles it
    more = _reports((1, 0, "timeout"), (0, 1, "short"), (2, 1, "short"), (3, 1, "closed"))
    assert losses.judge(3, more, 4).suspects == (1,)


def test_a_killed_party_is_named_though_more_processes_saw_a_reporter_close():
    # party 2 died without a report; 0 noticed, reported and closed; 1 and the dealer only saw 0 close
    reports = _reports((0, 2, "closed"), (1, 0, "closed"), (3, 0, "closed"))
    assert losses.judge(1, reports).suspects == (2,)
    assert losses.settled(reports, 4)  # party 2 is accused: nobody waits for its report


def test_mutual_accusations_name_nobody_and_a_report_naming_me_is_ignored():
    reports = _reports((0, 2, "violation"), (2, 0, "short"), (1, 0, "closed"), (3, 2, "closed"))
    verdict = losses.judge(3, reports, 4)
    assert verdict.suspects == () and verdict.disputed
    assert "party 0 says party 2 sent a frame that is not the expected one; party 2 says party 0 left a frame " \
        "unfinished" in losses.message(verdict, "the dealer", "x")
    assert losses.judge(0, reports, 4).suspects == (2,)  # party 0 never believes party 2's report about itself


# The rogue's strategies of issue 45 as the reports they leave (rogue 2, innocent 1, dealer 3): no third
# process names party 1; where the reports allow, party 2 is named.
ROGUE_REPORTS = {
    "a: accuse, then close every link": [(2, 1, "violation"), (1, 2, "closed"), (0, 2, "closed"), (3, 2, "closed")],
    "b: accuse, then stay silent": [(2, 1, "violation"), (1, 2, "timeout"), (0, 2, "timeout"), (3, 2, "timeout")],
    "b: accuse, then stay silent (cascade)": [(2, 1, "violation"), (1, 0, "closed"), (0, 2, "timeout"),
                                              (3, 0, "closed")],
    "c: half a frame to everyone, accuse, close": [(2, 1, "violation"), (1, 2, "short"), (0, 2, "short"),
                                                   (3, 2, "short")],
    "d: half a frame to party 1, accuse": [(2, 1, "violation"), (1, 2, "short"), (0, 1, "closed"),
                                           (3, 1, "closed")],
}


@pytest.mark.parametrize("strategy", sorted(ROGUE_REPORTS))
def test_a_rogue_that_reports_first_never_makes_a_third_process_name_its_victim(strategy):
    reports = _reports(*ROGUE_REPORTS[strategy])
    for me in (0, 3):
        verdict = losses.judge(me, reports, 4)
        assert 1 not in verdict.suspects, (me, verdict)
        if strategy.startswith("c"):
            assert verdict.suspects == (2,)
    assert losses.judge(1, reports, 4).suspects in ((), (2,))


def test_a_failed_mac_check_is_its_own_line_and_names_only_whom_the_loss_rules_name():
    from mpcdp.errors import MacCheckFailed
    from mpcdp.transport.store_values import parse_report

    # every party found the MAC check failed and said so, naming nobody; the dealer saw their links close
    reports = _reports((0, None, "mac"), (1, None, "mac"), (2, None, "mac"))
    verdict = losses.judge(3, reports, 4, dealer=3)
    assert verdict.suspects == () and verdict.mac == (0, 1, 2)
    assert losses.message(verdict, "the dealer", "connection closed by party 1") == (
        "the dealer stopped: a MAC check failed (party 0, party 1 and party 2 found it): a party deviated from "
        "the protocol; nothing was released (security = 'malicious')")
    # a party's own failed check: its line at once, naming a party only where the evidence names one
    own = losses.resolve(2, MacCheckFailed("v_p", "its σ share does not match its commitment", party=1))
    assert own.own and own.mac == (2,) and own.suspects == (1,)
    assert losses.message(own, "party 2", str(MacCheckFailed("v_p", "x", party=1))) == (
        "party 2 stopped: the MAC check of opening 'v_p' failed: party 1 deviated from the protocol (x); nothing "
        "was released (security = 'malicious')")
    # a mac report does not hide what the loss rules establish: a party that died without a report
    died = _reports((0, 2, "closed"), (1, None, "mac"), (3, 0, "closed"))
    assert losses.judge(1, died, 4, dealer=3).suspects == (2,)
    # nor a dispute: a rogue that claims a failed check against a frame party 0 holds is one word against another
    garbled = _reports((0, 2, "violation"), (2, None, "mac"), (1, 2, "closed"))
    verdict = losses.judge(1, garbled, 4, dealer=3)
    assert verdict.disputed and not verdict.mac and losses.judge(0, garbled, 4, dealer=3).suspects == (2,)
    assert parse_report('{"suspect": null, "evidence": "mac"}', 1) == Report(1, None, "mac")
    with pytest.raises(ValueError, match="evidence without a suspect"):
        parse_report('{"suspect": null, "evidence": "violation"}', 1)


def test_a_failed_bound_check_is_named_as_such_by_the_dealer_and_by_the_party_that_found_it():
    from mpcdp.mpc.bounded import OutOfBound
    from mpcdp.transport.store_values import parse_report

    # parties 0 and 2 found party 1's contribution outside its bound; party 1 (the rogue) names nobody
    reports = _reports((0, 1, "bound"), (2, 1, "bound"), (1, None, "bound"))
    verdict = losses.judge(3, reports, 4, dealer=3)
    assert verdict.suspects == (1,)
    assert losses.message(verdict, "the dealer", "connection closed by party 0") == (
        "the dealer stopped: party 1 contributed outside its clipping bound (party 0 and party 2 found it); nothing "
        "was released (security = 'malicious')")
    own = losses.resolve(2, OutOfBound("v_p", 1))
    assert own.own and own.suspects == (1,)
    assert losses.message(own, "party 2", str(OutOfBound("v_p", 1))) == (
        "party 2 stopped: party 1's contribution to release 'v_p' is outside its clipping bound (security = "
        "'malicious')")
    assert parse_report('{"suspect": null, "evidence": "bound"}', 1) == Report(1, None, "bound")


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
def test_a_rogue_that_cuts_a_frame_short_and_blames_party_0_is_named_by_its_victim_and_the_victim_by_nobody(
        config_for, credentials, rogue_timeout):
    """Party 1 announces its share's frame to party 0, sends 8 bytes less and waits; with a shorter timeout
    of its own it stops first, reporting party 0 (or writes that report itself). Party 0, which holds the
    unfinished frame, names party 1; the others have only the two parties' words and name neither, and no
    process names party 0."""
    with pytest.raises(PartyFailed) as info:
        run_job(short_frame_then_wait, config_for(3, timeout_s=60.0), args=(1, 1, 5.0, rogue_timeout))
    reports = {r.rank: r for r in info.value.reports}
    assert reports[0].blamed_party == 1 and "party 1 left a frame unfinished" in reports[0].message
    for rank in (2, 3):
        assert reports[rank].status == "error" and reports[rank].blamed_party in (None, 1), reports[rank].message
        assert "party 0 was lost" not in reports[rank].message


@pytest.mark.parametrize("strategy", ["a", "b", "c", "d"])
def test_a_rogue_that_reports_first_and_then_leaves_stalls_or_cuts_frames_never_gets_its_victim_named(
        config_for, credentials, strategy):
    """Issue 45's strategies, the rogue (party 2) the real party code with its sends wrapped, the innocent
    party 1: (a) report party 1, close every link, exit 0; (b) report, stay silent, links open; (c) half a
    frame to every party, 1 s, report, close; (d) half a frame to party 1 only, report, close. No honest
    process names party 1; one holding an unfinished frame of party 2 names party 2, and party 1, which knows
    the accusation is false, names party 2 (the only process that can have deviated if party 1 did not)."""
    with pytest.raises(PartyFailed) as info:
        run_job(rogue_strategy, config_for(3, timeout_s=60.0), args=(strategy, 2, 1, 1, 5.0))
    for report in info.value.reports:
        if report.rank == 2:
            continue
        assert report.status == "error", (report.rank, report.summary())
        assert report.blamed_party != 1 and "party 1 was lost" not in report.message, (report.rank, report.message)
        if "party 2 left a frame unfinished" in report.message:
            assert report.blamed_party == 2, (report.rank, report.message)
    assert next(r for r in info.value.reports if r.rank == 1).blamed_party == 2
