"""A failing, killed or silent party ends the run quickly with an error that names it; bad input and
mismatched configurations are refused on every party before any share is sent."""

import re
import tempfile
import time

import pytest
import torch

from mpcdp.errors import ConfigMismatchError, InputError, PartyFailed
from mpcdp.runtime.harness import run_parties
from party_jobs import hang_at, killed_mid_protocol, progress_slowly, raise_at, sum_once, sum_several


def _fails(fn, config, **kwargs) -> tuple[PartyFailed, float]:
    start = time.monotonic()
    with pytest.raises(PartyFailed) as info:
        run_parties(fn, config, **kwargs)
    return info.value, time.monotonic() - start


def test_a_raising_party_is_named_with_its_traceback(config_for):
    err, elapsed = _fails(raise_at, config_for(3), args=(1,))
    assert err.party == 1
    assert "party 1 failed" in str(err)
    assert "deliberate failure injected at party 1" in str(err)
    assert "Traceback" in str(err) and "raise_at" in str(err)
    assert elapsed < 90  # ended by the failure, not by the 90 s timeout (this run may start the fork server)


def test_a_party_killed_mid_protocol_is_named(config_for):
    err, elapsed = _fails(killed_mid_protocol, config_for(3), args=(2,))
    assert err.party == 2
    assert "party 2 failed" in str(err) and "SIGKILL" in str(err)
    statuses = {r.rank: r.status for r in err.reports}
    assert statuses[2] == "died"
    assert elapsed < 90  # the others see the closed connection; nobody waits for the 90 s timeout


def test_a_silent_party_times_out_instead_of_hanging(config_for):
    err, elapsed = _fails(hang_at, config_for(3, timeout_s=12.0), args=(1,))
    # the others entered the opening; party 1 never got past the handshake of the aggregation
    assert err.party == 1
    first = str(err).splitlines()[0]
    said = re.fullmatch(r"party 1 went silent: no progress for (\d+) s at step 1 \(exchange\), longer than "
                        r"timeout_s = 12 s; if one step of this run takes that long, raise `timeout_s` "
                        r"\(\[mpc\] timeout_s in the protocol, or --timeout\)", first)
    # party 1's silence counts from its own last step, before the others' last: "1\d s" left a loaded host 7 s
    assert said is not None and int(said.group(1)) >= 12, first
    # ended by the 12 s timeout, not hanging (pytest's 300 s): 15 s for the start, the others' steps and the
    # teardown was missable at 3-4x slower; 40 s still tells a timeout from a hang
    assert elapsed < 12.0 + 40.0


def test_a_run_that_keeps_making_progress_is_not_stopped_for_its_length(config_for):
    """Liveness, not a wall clock: 16 openings, 0.5 s apart, take twice the 4 s time-out and finish."""
    start = time.monotonic()
    result = run_parties(progress_slowly, config_for(3, timeout_s=4.0), args=(16, 0.5))
    assert time.monotonic() - start > 8.0
    assert result == [3.0 * 16] * 3


def test_config_mismatch_is_refused_before_any_share(config_for):
    jobs = [{"name": "sum", "dim": 4}, {"name": "sum", "dim": 4}, {"name": "sum", "dim": 5}]
    err, _ = _fails(sum_once, config_for(3), args=(torch.ones(4),), party_jobs=jobs)
    assert err.party == 2
    assert "ConfigMismatchError" in str(err)
    assert "`dim`: party 0 = 4, party 1 = 4, party 2 = 5" in str(err)
    assert "checked before any share was sent" in str(err)


def test_shape_mismatch_names_the_field_and_parties(config_for):
    args = [(torch.ones(4),), (torch.ones(4),), (torch.ones(3),)]
    err, _ = _fails(sum_once, config_for(3), party_args=args)
    assert err.party == 2
    assert "`local` shapes differ between parties: party 0 = (4,), party 1 = (4,), party 2 = (3,)" in str(err)


@pytest.mark.parametrize("bad, text", [
    (torch.tensor([1.0, float("nan"), 2.0]), "contains 1 NaN/Inf entries"),
    (torch.tensor([1.0, 2.0, float("inf")]), "contains 1 NaN/Inf entries"),
    (torch.ones(0), "is empty"),
    (torch.full((3,), 1e15), "·weight has entries beyond the fixed-point limit |value| <= 3.518e+13"),
])
def test_bad_input_names_the_party_on_every_party(bad, text, config_for):
    args = [(torch.ones(3),), (bad,)]
    err, _ = _fails(sum_once, config_for(2), party_args=args)
    assert err.party == 1
    assert f"party 1: `local`{'' if text.startswith('·') else ' '}{text}" in str(err)
    # every party raised the same clear error (none of them hung or sent a share), and it carries none of
    # party 1's values (only the field, the party and the limit)
    assert all(r.error_type == "InputError" for r in err.reports if r.role == "party")
    for value in ("1e+15", "1000000000000000", ": nan", ": inf", "index"):
        assert value not in (err.reports[0].message or ""), value


def test_errors_keep_their_types_in_process():
    # the same errors are ValueErrors for callers who do not know mpcdp
    assert issubclass(InputError, ValueError) and issubclass(ConfigMismatchError, ValueError)


def test_a_run_after_a_failure_works_and_neither_leaves_its_logs_behind(config_for, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the launcher keeps the parties' logs
    err, _ = _fails(raise_at, config_for(2), args=(0,))
    assert "deliberate failure injected at party 0" in str(err)  # the log tail was read before the clean-up
    results = run_parties(sum_several, config_for(2), party_args=[([torch.ones(2)],), ([torch.ones(2)],)])
    assert results[0]["opened"][0].tolist() == [2.0, 2.0]
    assert list(tmp_path.glob("mpcdp-run-*")) == []


def test_without_the_harness_a_silent_peer_times_out_every_blocking_operation(deployment):
    """On separate hosts no harness watches: the per-party timeout reaches every blocking operation, and
    the error names the silent party. The three processes are forked from the preloaded server (no
    interpreter start-up each), but nothing of the harness runs in them: each is given only its deployment
    (no launcher keys them one) and runs run_party / run_dealer as a process on its own host does. Once the
    dealer has stopped, the silent party is killed (its host's operator would): party 0 has concluded by then
    (the dealer names it as the one who noticed), and its store stops waiting for that party to leave, at most
    losses.READ_WAIT_S = 30 s, at once."""
    from mpcdp.runtime.harness import free_port
    from mpcdp.runtime.process_server import process_context
    from party_jobs import standalone_process

    ctx = process_context()
    out = ctx.Queue()
    rendezvous = f"tcp://127.0.0.1:{free_port()}"
    procs = [ctx.Process(target=standalone_process, args=(rank, 2, rendezvous, 6.0, 1, out, str(deployment)),
                         daemon=True) for rank in range(3)]
    for proc in procs:
        proc.start()
    try:
        ended = {}
        while 0 not in ended or 2 not in ended:
            rank, kind, elapsed, message = out.get(timeout=90)
            ended[rank] = kind, elapsed, message
            if rank == 2:
                procs[1].kill()
        # party 1 sleeps; party 0 gives up waiting for its share of the opening
        kind, elapsed, message = ended[0]
        assert kind == "PeerTimeout" and "Timed out" in message and "party 1" in message
        assert 6.0 <= elapsed < 6.0 + 60  # handshake + mask setup, then the 6 s wait
        # the dealer has no deadline of its own between requests: it stops when party 0 does, naming party 1
        kind, _, message = ended[2]
        assert kind == "PartyLost" and "party 1 was lost (noticed by party 0)" in message, ended[2]
    finally:
        for proc in procs:
            proc.kill()


def test_progress_reaches_the_launcher_and_ends_at_the_total(config_for):
    from mpcdp.runtime.harness import run_job
    from party_jobs import count_with_progress

    seen = []
    run = run_job(count_with_progress, config_for(3), args=(40,), progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (40, 40)
    assert all(total == 40 for _, total in seen) and [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert run.values[0] >= 80  # every step counted on the shared board path (handshake + opening per tick)


def test_processes_forked_from_the_preloaded_server_draw_fresh_keys(config_for):
    """Parties are forked from one fork server (its imports done once): every party of every run still draws
    its own keys after the fork, so no two processes, in one run or across runs, share a secret stream."""
    from mpcdp.runtime.harness import run_parties
    from party_jobs import first_secret_words

    runs = [run_parties(first_secret_words, config_for(3)) for _ in range(2)]
    words = [tuple(r[kind]) for run in runs for r in run for kind in ("local", "dealer")]
    assert len(set(words)) == len(words) == 12
    assert len({r["pid"] for run in runs for r in run}) == 6


def test_after_a_failed_run_the_next_run_starts_from_the_same_server(config_for):
    """A run that fails ends with the usual named error; the fork server it came from stays usable, and the
    next run on it completes."""
    with pytest.raises(PartyFailed, match="party 1 failed"):
        run_parties(raise_at, config_for(3), args=(1,))
    sums = run_parties(sum_once, config_for(3), args=(torch.ones(3),))
    assert all(torch.equal(s, torch.full((3,), 3.0, dtype=s.dtype)) for s in sums)


def test_parties_start_with_dp_accounting_imported(config_for):
    """Every noise draw returns a dp-accounting event: imported in each forked party, it cost every party about
    1-2 s of CPU at its first draw; the fork server imports it once instead."""
    from party_jobs import dp_accounting_imported

    assert run_parties(dp_accounting_imported, config_for(2)) == [True, True]


def test_parties_on_one_host_split_its_cores_unless_told_otherwise_and_reuse_freed_memory(config_for, monkeypatch):
    import os

    from mpcdp.errors import ConfigError
    from party_jobs import threads_and_refaults, torch_threads

    from mpcdp.runtime.harness import run_job

    monkeypatch.delenv("MPCDP_THREADS", raising=False)
    run = run_job(threads_and_refaults, config_for(3))
    assert [v["threads"] for v in run.values] == [max(1, os.cpu_count() // 4)] * 3  # 3 parties + dealer
    # a freed 64 MiB block is reused without a page fault (glibc maps and unmaps it afresh by default: 16,385)
    assert all(v["refaults"] < 100 for v in run.values)
    assert run.dealer["torch_threads"] == max(1, os.cpu_count() // 4)  # the dealer too (it spun every core's thread)
    monkeypatch.setenv("MPCDP_THREADS", "3")
    assert run_parties(torch_threads, config_for(2)) == [3, 3]
    monkeypatch.setenv("MPCDP_THREADS", "two")
    with pytest.raises(ConfigError, match="MPCDP_THREADS.*'two'"):
        run_parties(torch_threads, config_for(2))
