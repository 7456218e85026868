"""Start m data parties (and the dealer) as separate OS processes on this host and collect their results.

One harness for the CLI, the benchmarks and the tests:

* processes are forked from a preloaded server (multiprocessing's ``forkserver``, which imported torch,
  CrypTen and mpcdp once and started no thread of its own): a party starts in about 0.1 s instead of the 2–3 s
  an interpreter takes to import them. Each child takes the launcher's environment and working directory
  of the moment it is started, as a fresh interpreter would, and draws every key after the fork (from the
  OS CSPRNG, in :func:`mpcdp.adapter.start_party`), so no secret is shared between processes or runs;
* the rendezvous is ``tcp://127.0.0.1:PORT`` with a port the OS handed out, new for every run;
* every link and the rendezvous store are TLS 1.3, mutually authenticated, as across hosts: without a
  deployment of the user's own (``MPCDP_CREDENTIALS``) the launcher keys a throwaway one for the run
  (:func:`throwaway_deployment`), unless plain links are asked for knowingly (``MPCDP_INSECURE_LINKS=1``,
  for harnesses that compare the frames on the wire; it warns). So another user of this host cannot read,
  alter or join a local run through loopback;
* results travel through one pipe per process, read *before* any process is joined, and are plain data; each
  party's current step and progress sit in shared memory (:mod:`mpcdp.runtime.board`), polled, so steps
  cost the launcher nothing;
* every process's stdout/stderr goes to its own log file, whose tail is attached to a failure report; its
  progress lines (:mod:`mpcdp.runtime.progress`) come through its pipe and are printed by the launcher
  where :func:`~mpcdp.runtime.progress.lines_to` says (nowhere by default);
* liveness, not a wall clock: the run is stopped when no data party has made progress (a new protocol step
  or progress count on the status board) for ``MpcConfig.timeout_s``, naming the party silent the longest,
  for how long, at which step, and the setting that changes it; a run that keeps making progress is never
  stopped for its length (its estimate is shown, never used to stop it); a party that raises, exits or is killed makes the
  whole run fail promptly with :class:`~mpcdp.errors.PartyFailed`, which names the party that caused it
  and carries its traceback — the other parties' consequent "connection closed" errors are reported
  as consequences, not causes. Every child is terminated (then killed) before the harness returns.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import multiprocessing
import multiprocessing.connection
import os
import pickle
import shutil
import signal
import tempfile
import time
import warnings
from typing import Any, Callable, Iterator, Sequence

from mpcdp.config import DEFAULT_TIMEOUT_S, MpcConfig, check_covered
from mpcdp.errors import InsecureSettingWarning, PartyFailed
from mpcdp.runtime import progress
from mpcdp.runtime.board import StatusBoard
from mpcdp.runtime.endpoint import RunSettings, read_settings
from mpcdp.runtime.ports import free_port
from mpcdp.runtime.party import run_dealer_process, run_party_process
from mpcdp.runtime.process_server import run_context, threads_per_process
from mpcdp.transport.joining import INSECURE_LINKS_WARNING

_POLL_S = 0.05
_GRACE_S = 3.0  # after the first failure, time to hear from the other processes before judging (they weigh
# the loss reports for up to 2 s, party 0 keeps the store up for up to 4 s: mpcdp.transport.losses)
_LOG_TAIL_LINES = 25


@dataclasses.dataclass
class PartyReport:
    """What happened to one process of a run."""

    rank: int
    role: str  # "party" or "dealer"
    status: str = "running"  # ok | error | died | timeout | running
    exitcode: int | None = None
    error_type: str | None = None
    message: str | None = None
    traceback: str | None = None
    blamed_party: int | None = None  # an mpcdp error's `party`, when the error names one
    log_tail: str = ""
    finished_at: float | None = None
    step: int = -1  # the last communication step the party entered (-1: none yet)
    step_label: str = "starting"
    refusal: dict | None = None  # a refusing party's Refusal as JSON (mpcdp.refusals.parse_refusal reads it)

    @property
    def name(self) -> str:
        return "dealer" if self.role == "dealer" else f"party {self.rank}"

    def summary(self) -> str:
        if self.status == "died":
            sig = -self.exitcode if self.exitcode is not None and self.exitcode < 0 else None
            how = f"killed by {signal.Signals(sig).name}" if sig else f"exited with code {self.exitcode}"
            return f"{self.name}: died ({how}) without reporting a result"
        if self.status == "error":
            return f"{self.name}: {self.error_type}: {self.message}"
        return f"{self.name}: {self.status}"


def _is_consequence(report: PartyReport) -> bool:
    """An error that only says a peer went away (the symptom, not the cause)."""
    text = f"{report.error_type} {report.message}".lower()
    return any(s in text for s in ("connection closed", "connection reset", "broken pipe", "peer",
                                   "socket", "timed out", "timeout"))


def _cause(reports: list[PartyReport]) -> PartyReport | None:
    failed = [r for r in reports if r.status in ("error", "died", "timeout")]
    if not failed:
        return None
    by_time = sorted(failed, key=lambda r: r.finished_at or float("inf"))
    for report in by_time:  # an mpcdp error that names the responsible party
        if report.blamed_party is not None:
            return reports[report.blamed_party]
    died = [r for r in by_time if r.status == "died"]
    if died:
        return died[0]
    genuine = [r for r in by_time if r.status == "error" and not _is_consequence(r)]
    return (genuine or by_time)[0]


def _laggard(reports: list[PartyReport]) -> PartyReport | None:
    """The one data party that is behind all others in protocol steps, if exactly one is."""
    parties = [r for r in reports if r.role == "party"]
    lowest = min(r.step for r in parties)
    behind = [r for r in parties if r.step == lowest]
    return behind[0] if len(behind) == 1 and any(r.step > lowest for r in parties) else None


def _read_tail(path: str) -> str:
    try:
        with open(path, errors="replace") as fh:
            return "".join(fh.readlines()[-_LOG_TAIL_LINES:])
    except OSError:
        return ""


def _failure(reports: list[PartyReport], liveness: _Liveness, timed_out: bool) -> PartyFailed:
    cause = _cause(reports)
    lines = []
    if timed_out and (cause is None or cause.status == "timeout"):
        cause = _laggard(reports) or reports[liveness.silent_longest()]
    if cause is not None and cause.status in ("running", "timeout"):  # silent: stalled, or the others timed out
        lines.append(f"{cause.name} went silent: no progress for {liveness.silent_for(cause.rank):.0f} s"
                     + (f" at step {cause.step} ({cause.step_label})" if cause.role == "party" else "")
                     + f", longer than timeout_s = {liveness.limit_s:g} s; if one step of this run takes that "
                       "long, raise `timeout_s` ([mpc] timeout_s in the protocol, or --timeout)")
    elif cause is not None:
        lines.append(f"{cause.name} failed — {cause.summary().split(': ', 1)[1]}")
    if timed_out:
        running = [r for r in reports if r.status == "timeout"]
        lines.append("still running: " + ", ".join(
            f"{r.name} (at step {r.step}: {r.step_label})" if r.role == "party" else r.name for r in running))
    lines.append("status of every process:")
    lines += [f"  {r.summary()}" for r in reports]
    if cause is not None and cause.traceback:
        lines.append(f"traceback of {cause.name}:\n{cause.traceback.rstrip()}")
    if cause is not None and cause.log_tail.strip():
        lines.append(f"log tail of {cause.name}:\n{cause.log_tail.rstrip()}")
    party = cause.rank if cause is not None and cause.role == "party" else None
    return PartyFailed("\n".join(lines), party=party, reports=reports)


@dataclasses.dataclass
class RunResult:
    """The parties' return values (rank order), the dealer's report (bytes it sent) and the wall time."""

    values: list[Any]
    dealer: dict[str, Any] | None
    wall_s: float


def run_parties(fn: Callable[..., Any], config: MpcConfig, **kwargs) -> list[Any]:
    """Run ``fn(ctx, *args)`` on every data party (see :func:`run_job`); return their results in rank order."""
    return run_job(fn, config, **kwargs).values


def run_job(fn: Callable[..., Any], config: MpcConfig, *, args: Sequence[Any] = (),
            party_args: Sequence[Sequence[Any]] | None = None, job: dict[str, Any] | None = None,
            party_jobs: Sequence[dict[str, Any]] | None = None,
            progress: Callable[[int, int], None] | None = None) -> RunResult:
    """Run ``fn(ctx, *args)`` on every data party, each in its own process, and collect the results.

    Args:
        fn: a module-level function (it is imported by name in each party process) taking an
            :class:`~mpcdp.mpc.context.MpcContext` and returning plain, picklable data.
        config: the run's configuration (parties, provider, precision, timeout).
        args: arguments for every party; or ``party_args[j]`` for party j (its private inputs).
        job: public description of the job, compared across parties in the handshake (default: the
            function's qualified name). ``party_jobs[j]`` gives party j its own (to test mismatches).

    Returns:
        The parties' return values, in rank order.

    Raises:
        PartyFailed: a party raised, died or did not finish within ``config.timeout_s``.
    """
    m = config.parties
    if party_args is not None and len(party_args) != m:
        raise ValueError(f"`party_args` must have one entry per party ({m}). Found {len(party_args)}.")
    if party_jobs is not None and len(party_jobs) != m:
        raise ValueError(f"`party_jobs` must have one entry per party ({m}). Found {len(party_jobs)}.")
    default_job = job if job is not None else {"fn": f"{fn.__module__}.{fn.__qualname__}"}
    check_covered(config, fn, args, party_args)  # under security = "malicious": refused here, before any process starts
    threads_per_process(config.processes)  # a bad MPCDP_THREADS is refused here, before any process starts
    launcher: dict[str, Any] = {"environ": dict(os.environ), "cwd": os.getcwd()}
    with throwaway_deployment(read_settings(launcher["environ"]), m) as settings:
        return _launch(fn, config, settings, launcher, args=args, party_args=party_args, default_job=default_job,
                       party_jobs=party_jobs, progress=progress)


@contextlib.contextmanager
def throwaway_deployment(settings: RunSettings, parties: int) -> Iterator[RunSettings]:
    """The run's settings with a deployment keyed for this one local run, removed after it.

    Unless ``settings`` already name the user's credentials (``MPCDP_CREDENTIALS``) or allow plain links
    (``MPCDP_INSECURE_LINKS=1``, which warns here too): a CA and the certificates of ranks 0..``parties`` go into a
    fresh folder only this user may enter (``tempfile.mkdtemp``: mode 0700, keys 0600). The CA's key is deleted
    at once: the run needs only the certificates, so no one can mint another for it. The folder is removed when
    the run ends, however it ends. One deployment per run, not one per launcher process: keying costs a few
    milliseconds (a P-256 key and certificate per rank: 3 ms for 3 parties and the dealer), and a folder that
    lives only as long as its run leaves no private key on disk between runs. The folder reaches the processes
    in the settings they are started with, not in their environment.
    """
    if settings.credentials:
        yield settings
        return
    if settings.insecure_links:
        warnings.warn(f"the harness: {INSECURE_LINKS_WARNING}", InsecureSettingWarning, stacklevel=4)
        yield settings
        return
    from mpcdp.transport.credentials import make_deployment

    folder = tempfile.mkdtemp(prefix="mpcdp-keys-")
    try:
        make_deployment(folder, parties)
        os.remove(os.path.join(folder, "ca-key.pem"))
        yield dataclasses.replace(settings, credentials=folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _launch(fn: Callable[..., Any], config: MpcConfig, settings: RunSettings, launcher: dict[str, Any], *,
            args: Sequence[Any],
            party_args: Sequence[Sequence[Any]] | None, default_job: dict[str, Any],
            party_jobs: Sequence[dict[str, Any]] | None,
            progress: Callable[[int, int], None] | None) -> RunResult:
    """Start every process of the run with ``launcher``'s environment and working directory, watch them,
    and collect the results (:func:`run_job`)."""
    m = config.parties
    ctx = run_context()
    inbox = _Inbox(ctx, config.processes)
    board = StatusBoard(ctx, config.processes)
    rendezvous = f"tcp://127.0.0.1:{free_port()}"
    logdir = tempfile.mkdtemp(prefix="mpcdp-run-")
    processes, reports = _processes(ctx, config, settings, launcher, inbox, board, rendezvous, logdir, fn=fn,
                                    args=args, party_args=party_args, default_job=default_job, party_jobs=party_jobs)
    values: dict[int, Any] = {}
    relay = _ProgressRelay(board, progress)
    start = time.monotonic()
    liveness = _Liveness(board, m, config.timeout_s, start)
    collecting = gc.isenabled()
    gc.disable()  # a full collection of the launcher's heap (≈ 0.1 s) would stall taking the results
    try:
        for process in processes:
            process.start()
        inbox.started()
        liveness.restart(time.monotonic())
        failed, timed_out = _watch(processes, reports, values, inbox, relay, liveness, parties=m)
        if not failed and not timed_out:
            relay.final()
            _finish(processes, reports, time.monotonic() + config.timeout_s)
            inbox.drain(reports, values)  # the dealer's report
            return RunResult(values=[values[rank] for rank in range(m)], dealer=values.get(m),
                             wall_s=time.monotonic() - start)
        _attach_evidence(reports, board, logdir)
        raise _failure(reports, liveness, timed_out)
    finally:
        if collecting:
            gc.enable()
        _terminate(processes)
        inbox.close()
        shutil.rmtree(logdir, ignore_errors=True)  # what a failure report needed is in it already


def _processes(ctx, config: MpcConfig, settings: RunSettings, launcher: dict[str, Any], inbox: "_Inbox",
               board: StatusBoard, rendezvous: str, logdir: str, *, fn: Callable[..., Any], args: Sequence[Any],
               party_args: Sequence[Sequence[Any]] | None, default_job: dict[str, Any],
               party_jobs: Sequence[dict[str, Any]] | None) -> tuple[list[multiprocessing.Process], list[PartyReport]]:
    """The run's processes, not started yet, and a report for each, in rank order: data parties 0..m−1 (each
    with its arguments and job description), then the dealer where there is one. Each process writes its log
    to ``logdir``/rank<r>.log and its result to its own pipe of ``inbox``."""
    m = config.parties
    processes: list[multiprocessing.Process] = []
    reports: list[PartyReport] = []
    for rank in range(config.processes):
        log_path = os.path.join(logdir, f"rank{rank}.log")
        target: Callable[..., None]
        target_args: tuple[Any, ...]
        if rank < m:
            party_job = party_jobs[rank] if party_jobs is not None else default_job
            party_arg = tuple(party_args[rank]) if party_args is not None else tuple(args)
            target, target_args = run_party_process, (rank, config, settings, rendezvous, fn, party_arg, party_job,
                                                      inbox.writers[rank], board, log_path, launcher)
            reports.append(PartyReport(rank=rank, role="party"))
        else:
            target, target_args = run_dealer_process, (config, settings, rendezvous, inbox.writers[rank], log_path,
                                                       launcher)
            reports.append(PartyReport(rank=rank, role="dealer"))
        processes.append(ctx.Process(target=target, args=target_args, name=f"mpcdp-rank{rank}", daemon=True))
    return processes, reports


def _watch(processes: list, reports: list[PartyReport], values: dict[int, Any], inbox: "_Inbox",
           relay: "_ProgressRelay", liveness: "_Liveness", *, parties: int) -> tuple[bool, bool]:
    """Take the processes' messages and notice their exits until every data party has reported success, or a
    process has failed and the others have had :data:`_GRACE_S` to report (or have all stopped), or no data
    party has made progress for the run's ``timeout_s`` (``liveness``; the processes still running are then
    marked ``timeout``). Returns (a process failed, the run stalled)."""
    failed_at: float | None = None
    while True:
        inbox.drain(reports, values)
        relay.poll()
        now = time.monotonic()
        liveness.poll(now)
        _note_exits(processes, reports, values, inbox, now)
        if any(r.status in ("error", "died") for r in reports) and failed_at is None:
            failed_at = now
        parties_done = all(r.status == "ok" for r in reports[:parties])
        if parties_done or (failed_at is not None and (
                now - failed_at > _GRACE_S or all(r.status != "running" for r in reports))):
            return failed_at is not None, False
        if liveness.stalled(now):
            for report in reports:
                if report.status == "running":
                    report.status, report.finished_at = "timeout", now
            return failed_at is not None, True
        running = [p.sentinel for p, r in zip(processes, reports) if r.status == "running"]
        inbox.drain(reports, values, wait_s=_POLL_S, wake_on=running)  # an exited process is seen once


def _note_exits(processes: list, reports: list[PartyReport], values: dict[int, Any], inbox: "_Inbox",
                now: float) -> None:
    """Mark each process that has exited without reporting: a dealer that exited with code 0 is done (``ok``);
    any other such process ``died``. Its last message is taken first, in case it has just arrived."""
    for rank, process in enumerate(processes):
        report = reports[rank]
        if report.status == "running" and process.exitcode is not None:
            inbox.drain(reports, values)  # its last message may have just arrived
            if report.status == "running":
                if report.role == "dealer" and process.exitcode == 0:
                    report.status, report.finished_at = "ok", now
                else:
                    report.status, report.exitcode, report.finished_at = "died", process.exitcode, now


def _attach_evidence(reports: list[PartyReport], board: StatusBoard, logdir: str) -> None:
    """Give each report of a failed run its process's log tail and, for data parties, the last step it entered
    (from the status board), for the failure report (:func:`_failure`)."""
    for rank, report in enumerate(reports):
        report.log_tail = _read_tail(os.path.join(logdir, f"rank{rank}.log"))
        if report.role == "party":
            report.step, report.step_label = board.step(rank)


class _Liveness:
    """When each data party last made progress — a new protocol step or progress count on the status board —
    and the run's window ``limit_s`` (``timeout_s``): the run has stalled when no party has progressed for
    that long. Until every party has entered its first step (processes starting, links, handshake on a busy
    host) the window is at least :data:`~mpcdp.config.DEFAULT_TIMEOUT_S`, so a short ``timeout_s`` chosen for
    the protocol's steps does not stop a slow start. Polled by the launcher; costs the parties nothing."""

    def __init__(self, board: StatusBoard, parties: int, limit_s: float, now: float):
        self.board, self.limit_s = board, limit_s
        self.first = [(board.step(rank)[0], board.progress(rank)) for rank in range(parties)]
        self.seen = list(self.first)
        self.changed = [now] * parties
        self.started = False

    def restart(self, now: float) -> None:
        """The processes have been started (the first run also starts the fork server): count from ``now``."""
        self.changed = [now] * len(self.changed)

    def poll(self, now: float) -> None:
        for rank in range(len(self.seen)):
            mark = (self.board.step(rank)[0], self.board.progress(rank))
            if mark != self.seen[rank]:
                self.seen[rank], self.changed[rank] = mark, now
        self.started = self.started or all(seen != first for seen, first in zip(self.seen, self.first))

    def stalled(self, now: float) -> bool:
        window = self.limit_s if self.started else max(self.limit_s, DEFAULT_TIMEOUT_S)
        return now - max(self.changed) > window

    def silent_longest(self) -> int:
        """The data party whose last progress is the oldest."""
        return min(range(len(self.changed)), key=lambda rank: self.changed[rank])

    def silent_for(self, rank: int) -> float:
        """Seconds since data party ``rank`` last progressed (the dealer, rank m: since any party did)."""
        last = self.changed[rank] if rank < len(self.changed) else max(self.changed)
        return time.monotonic() - last


class _ProgressRelay:
    """Passes data party 0's progress (done, total) from the status board to the caller's
    ``progress`` callback, once per change; nothing when there is no callback."""

    def __init__(self, board: StatusBoard, progress: Callable[[int, int], None] | None):
        self.board, self.progress = board, progress
        self.shown = (0, 0)

    def poll(self) -> None:
        """While the run goes on: report the progress if it changed and the run's length is known."""
        if self.progress is not None and self.board.progress(0) != self.shown and self.board.progress(0)[1] > 0:
            self.shown = self.board.progress(0)
            self.progress(*self.shown)

    def final(self) -> None:
        """Once every party has finished: report the last progress if it was not shown yet."""
        if self.progress is not None and self.board.progress(0) != self.shown:
            self.progress(*self.board.progress(0))


class _Inbox:
    """One pipe from each process to the launcher: no lock shared between writers and no feeder thread, so a
    message is read as soon as it is written, and the launcher wakes on a message or a process's exit."""

    def __init__(self, ctx, count: int):
        pairs = [ctx.Pipe(duplex=False) for _ in range(count)]
        self.readers = {rank: reader for rank, (reader, _) in enumerate(pairs)}
        self.writers = [writer for _, writer in pairs]

    def started(self) -> None:
        """The processes hold their ends now; the launcher's copies would hide a writer's end of file."""
        for writer in self.writers:
            writer.close()

    def drain(self, reports: list[PartyReport], values: dict[int, Any], *, wait_s: float = 0.0,
              wake_on: Sequence[int] = ()) -> None:
        """Take every message that has arrived; with ``wait_s`` > 0, first wait up to that long for a message
        or for one of the ``wake_on`` sentinels."""
        if wait_s > 0:
            multiprocessing.connection.wait([*self.readers.values(), *wake_on], timeout=wait_s)
        for rank, reader in list(self.readers.items()):
            try:
                while reader.poll():
                    message = reader.recv()
                    if not self._progress_message(message):
                        _take(message, reports, values)
            except (EOFError, OSError):  # the process closed its end (it exits after its one message)
                reader.close()
                del self.readers[rank]

    def _progress_message(self, message) -> bool:
        """Handle a party's progress line (printed where :func:`~mpcdp.runtime.progress.lines_to` says); False
        for any other message."""
        kind = message[0]
        if kind == "line" and isinstance(message[2], str):
            progress.launcher_line(message[2][:300])
        return kind == "line"

    def close(self) -> None:
        for end in [*self.readers.values(), *self.writers]:
            end.close()
        self.readers.clear()


def _take(message, reports: list[PartyReport], values: dict[int, Any]) -> None:
    kind, rank = message[0], message[1]
    report = reports[rank]
    report.finished_at = time.monotonic()
    if kind == "ok":
        report.status = "ok"
        values[rank] = pickle.loads(message[2])
    else:
        _, _, report.error_type, report.message, report.traceback, report.blamed_party, report.refusal = message
        report.status = "error"


def _finish(processes: list, reports: list[PartyReport], deadline: float) -> None:
    """Let processes that reported success exit on their own (briefly), recording their exit codes."""
    for process, report in zip(processes, reports):
        process.join(timeout=max(0.1, min(10.0, deadline - time.monotonic())))
        report.exitcode = process.exitcode


def _terminate(processes: list) -> None:
    alive = [p for p in processes if p.is_alive()]
    for process in alive:
        process.terminate()
    stop = time.monotonic() + 3.0
    for process in alive:
        process.join(timeout=max(0.0, stop - time.monotonic()))
    for process in processes:
        if process.is_alive():
            process.kill()
            process.join(timeout=3.0)
