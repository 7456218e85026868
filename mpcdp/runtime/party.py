"""What one process of a run does, whether the harness spawned it or a launcher on another host started it.

A data party joins the network (the rendezvous, then TLS or loopback links to every other process, with
CrypTen's communicator running over them), runs the handshake (:meth:`mpcdp.mpc.context.MpcContext.join`),
runs the job and leaves. The dealer joins as rank m and serves correlated randomness until party 0 tells it
to stop.

Local checks first: a job function may carry ``before_joining`` (:func:`checks_before_joining`), which takes
the job's arguments and returns those to run it with (its files read, its model built and tried). It runs
before this party joins anything. If it refuses, the party joins the rendezvous store only, writes its
refusal there for every other process to read (:mod:`mpcdp.refusals`) and leaves, raising
:class:`~mpcdp.errors.PartyRefused`; the others, waiting for its link at the rendezvous, raise the same.
"""

from __future__ import annotations

import ctypes
import gc
import os
import pickle
import sys
import traceback
from typing import Any, Callable, NoReturn, Sequence

from mpcdp import plugins
from mpcdp.config import MpcConfig
from mpcdp.errors import ConfigError, ConfigMismatchError, MpcdpError, PartyLost, PartyRefused, PeerLost, PeerTimeout
from mpcdp.runtime import progress
from mpcdp.runtime.endpoint import Endpoint, RunSettings, read_settings
from mpcdp.runtime.process_server import threads_per_process
from mpcdp.transport import losses, rendezvous as rendezvous_store
from mpcdp.refusals import Refusal, refusal_of
from mpcdp.transport.rendezvous import declare_network


_settings: RunSettings | None = None


def current_settings() -> RunSettings | None:
    """The settings of the run this process serves in (None before :func:`run_party` / :func:`run_dealer`)."""
    return _settings


def _use(settings: RunSettings | None) -> RunSettings:
    global _settings
    _settings = read_settings() if settings is None else settings
    return _settings


def run_party(*, rank: int, config: MpcConfig, rendezvous: str, fn: Callable[..., Any], args: Sequence[Any],
              job: dict[str, Any], on_step: Callable[[int, str], None] | None = None,
              on_progress: Callable[[int, int], None] | None = None,
              announce: Callable[[BaseException], None] | None = None,
              settings: RunSettings | None = None, reporter: progress.PhaseLines | None = None) -> Any:
    """Join as data party ``rank``, run ``fn(ctx, *args)``, leave; return its result.

    ``settings``: the run's links, network and plugins (:class:`~mpcdp.runtime.endpoint.RunSettings`; None: read
    from this process's environment, for a process started on its own). ``reporter``: where the run's progress
    lines go (:mod:`mpcdp.runtime.progress`; None: this process's stderr, as ``mpcdp party <rank>``).

    On an exception the process leaves without the orderly goodbye (its peers see the connection close).
    When a peer is lost or deviates, this party closes its links at once, agrees with the others on whom
    to name, calls ``announce(error)`` (the launcher learns of it then), and only then, on party 0, keeps
    the rendezvous store up a moment for the others before raising.
    """
    from mpcdp import adapter
    from mpcdp.config import check_covered
    from mpcdp.mpc.context import MpcContext

    check_covered(config, fn, args)  # under security = "malicious", a job whose openings are not MAC-checked never starts
    ctx = mesh = None
    reporter = reporter if reporter is not None else progress.to_stderr(f"mpcdp party {rank}")
    try:
        with progress.reporting(reporter):
            settings = _use(settings)
            declare_network(settings.network)
            args = _checked(rank, config, rendezvous, settings, fn, args, announce)
            reporter.note(f"joining a run of {config.parties} parties")
            mesh = adapter.start_party(rank=rank, config=config, rendezvous_url=rendezvous,
                                       links=settings.links(rank))
            ctx = MpcContext.join(config=config, job=job, mesh=mesh, on_step=on_step, on_progress=on_progress)
            reporter.note("every party agrees on the run; starting")
            value = fn(ctx, *args)
    except ConfigMismatchError as exc:  # the parties refused the run together: tell the dealer why, then stop
        _stop_on_disagreement(rank, exc, announce, mesh)
    except (PeerLost, PeerTimeout) as exc:  # a link closed or timed out, or a peer deviated (ProtocolViolation)
        _stop_on_loss(rank, exc, str(exc), announce, ctx, config.timeout_s)
    except RuntimeError as exc:  # the rendezvous store failed: the peer is not named
        if isinstance(exc, MpcdpError) or not _network_failure(exc):
            raise
        _stop_on_loss(rank, exc, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
                      announce, ctx, config.timeout_s)
    ctx.close()
    try:
        adapter.stop_party()  # party 0 tells the dealer to stop
    except PeerLost as exc:
        raise PartyLost(f"party {rank} stopped: the dealer was lost before the run's end — {exc}",
                        party=exc.party) from exc
    return value


def take_place(endpoint: Endpoint, config: MpcConfig, settings: RunSettings | None = None) -> None:
    """A process started on its own (``mpcdp party``, :func:`mpcdp.train` under ``RANK``) claims its place —
    RANK, WORLD_SIZE, a dealer or none — at the rendezvous before it reads its data or builds its plan, and
    waits until every rank has claimed the same run (:func:`mpcdp.transport.claims.settle`): a wrong
    WORLD_SIZE or RANK is refused on every process, naming the setting, as soon as both claims are in.
    ``endpoint`` may hold a rank beyond the run (:func:`~mpcdp.runtime.endpoint.resolve` with
    ``ranged=False``). Where the rendezvous cannot be reached within ``config.timeout_s``, nothing is claimed:
    the party's own checks and the links' rendezvous say what is wrong.

    Raises:
        ConfigMismatchError: this or another process claims another place (naming WORLD_SIZE or RANK).
        ConfigError: this rank is beyond the run and the rendezvous cannot be reached.
        PeerTimeout: a rank made no claim within ``config.timeout_s``.
    """
    from mpcdp.transport import claims

    settings = _use(settings)
    declare_network(settings.network)
    beyond = endpoint.rank >= config.processes
    try:
        rendezvous_store.open_store(endpoint.rendezvous, rank=endpoint.rank, processes=config.processes,
                                    timeout_s=config.timeout_s, security=settings.links(endpoint.rank).security)
    except (PeerTimeout, PeerLost, MpcdpError) as exc:
        if beyond:
            raise ConfigError(f"`rank` must be in [0, {config.processes - 1}]. Found {endpoint.rank}.") from exc
        if isinstance(exc, (PeerTimeout, PeerLost)):
            return  # nobody to claim a place with: the local checks run, and joining says who is missing
        raise
    claims.settle(endpoint.rank, config.parties, config.processes, config.timeout_s)


def checks_before_joining(check: Callable[..., Sequence[Any]]):
    """Give a job function its local checks: ``check(*args)`` runs before the party joins the run and
    returns the arguments to run the job with (see the module docstring)."""
    def mark(fn):
        fn.before_joining = check
        return fn
    return mark


def _checked(rank: int, config: MpcConfig, rendezvous: str, settings: RunSettings, fn, args: Sequence[Any],
             announce: Callable[[BaseException], None] | None = None):
    """``fn``'s arguments once its local checks passed (:func:`checks_before_joining`; none: as they are).

    Raises:
        PartyRefused: a check refused (the others were told through the store, :func:`_refuse`).
    """
    check = getattr(fn, "before_joining", None)
    if check is None:
        return args
    try:
        return tuple(check(*args))
    except Exception as exc:  # noqa: BLE001 - every refusal is told to the others, a bug's too
        raise _refuse(rank, config, rendezvous, settings, exc, announce) from exc


def _refuse(rank: int, config: MpcConfig, rendezvous_url: str, settings: RunSettings, exc: BaseException,
            announce: Callable[[BaseException], None] | None) -> PartyRefused:
    """Tell every other process why this party refuses its input (``exc``'s ``refusal``; another error as
    category ``error``), through the rendezvous store only — no link is opened — and return the error to
    raise, ``announce``-d first. Party 0, which hosts the store, then keeps it up until every process has
    reported, at most the run's ``timeout_s``. Cost: one connection to the store and one write of at most
    256 bytes."""
    refusal = getattr(exc, "refusal", None) or refusal_of("error")
    text = refusal.text(rank)
    try:
        rendezvous_store.open_store(rendezvous_url, rank=rank, processes=config.processes,
                                    timeout_s=config.timeout_s, security=settings.links(rank).security)
        rendezvous_store.publish_refusal(rank, refusal)
        told = True
    except Exception as failure:  # noqa: BLE001 - the store is unreachable or refused: say so, still refuse
        first = str(failure).splitlines()[0] if str(failure) else ""
        text += f" (the other processes could not be told: {type(failure).__name__}: {first[:200]})"
        told = False
    error = PartyRefused(text, party=rank, refusal=refusal)
    error.__cause__ = exc  # the local error, for --debug and the launcher's report
    if announce is not None:
        announce(error)
    if told:
        losses.linger(rank, wait_s=config.timeout_s)
    return error


def _network_failure(exc: RuntimeError) -> bool:
    """A transport error from torch.distributed's store, the rendezvous (not a bug in the job's own code)."""
    text = str(exc)
    return (type(exc).__name__ in ("DistError", "DistNetworkError", "DistStoreError")
            or "gloo" in text or "Connection" in text or "connection" in text)


def _stop_on_loss(rank: int, exc: BaseException, detail: str,
                  announce: Callable[[BaseException], None] | None, ctx, timeout_s: float) -> NoReturn:
    """Agree with the others on whom to name (:mod:`mpcdp.transport.losses`) and stop, naming it.

    This party's report goes into the store first; then its links close, so that the parties waiting on it
    notice at once (and find its report already there); then it weighs the reports, unless it holds direct
    evidence of its own. A timeout that the reports confirm (or cannot contradict) is raised as it is; else
    the error names the party the reports point to (:class:`~mpcdp.errors.PartyRefused` where a party refused
    its input). Party 0 then keeps the store up for the others (after a refusal, until all have reported, at
    most ``timeout_s``: a process may join late)."""
    from mpcdp import adapter

    losses.report(rank, exc)
    if ctx is not None:  # after its own failed check, its last message must still reach the honest others
        ctx.close(orderly=False, drain_s=losses.DRAIN_S if losses.own_check_failed(exc) else 0.0)
    adapter.stop_party(orderly=False)
    verdict = losses.resolve(rank, exc)
    if isinstance(exc, PeerTimeout) and verdict.refusal is None and not verdict.disputed \
            and verdict.suspects in ((), (exc.party,)):
        error: BaseException = exc
    else:
        error = losses.stopped(verdict, f"party {rank}", detail)
        error.__cause__ = exc
    if announce is not None:
        announce(error)
    losses.linger(rank, wait_s=timeout_s if verdict.refusal is not None else losses.LINGER_S)
    if error is exc:
        raise exc
    raise error from exc


def _stop_on_disagreement(rank: int, exc: ConfigMismatchError, announce: Callable[[BaseException], None] | None,
                          mesh) -> NoReturn:
    """Stop after the data parties refused the run together (``exc``: their handshake or data agreement
    differed, the same line on each): write that line as this party's report (:mod:`mpcdp.transport.losses`)
    before closing the links, so that the dealer, whose link closes next, says it too; party 0 keeps the store
    up until the dealer has read it (at most :data:`~mpcdp.transport.losses.LINGER_S`). Cost: one store write
    of at most 256 bytes per party."""
    from mpcdp import adapter

    if mesh is not None:  # joined the store: a mismatch at the rendezvous itself has nothing more to tell
        losses.report_disagreement(rank, str(exc))
        mesh.close(orderly=False)
        adapter.stop_party(orderly=False)
    if announce is not None:
        announce(exc)
    if mesh is not None:
        losses.linger(rank)
    raise exc


def run_dealer(*, config: MpcConfig, rendezvous: str, settings: RunSettings | None = None,
               reporter: progress.PhaseLines | None = None) -> dict[str, Any]:
    """Serve as the dealer (rank ``config.parties``) until the parties are done; report what it sent, in
    total and per request (in the order party 0 made them). ``settings`` as for :func:`run_party`;
    ``reporter``: where its progress lines go (None: this process's stderr, as ``mpcdp dealer``): what it
    serves, at most one line per :data:`~mpcdp.runtime.progress.INTERVAL_S`."""
    import time

    from mpcdp import adapter

    settings = _use(settings)
    links = settings.links(config.parties)
    declare_network(settings.network)
    start = time.perf_counter()
    if os.environ.get(RECORD_DEALER_VIEW) == "1":  # the view audit's dealer (mpcdp.jobs.views)
        adapter.record_dealer_view()
    reporter = reporter if reporter is not None else progress.to_stderr("mpcdp dealer")
    reporter.note(f"serving a run of {config.parties} parties")
    request_bytes, bytes_sent, request_cpu = adapter.run_dealer(
        parties=config.parties, rendezvous_url=rendezvous, precision_bits=config.precision_bits,
        timeout_s=config.timeout_s, security=links.security, insecure=links.insecure, iface=links.iface,
        on_request=progress.dealer_lines(reporter))
    reporter.note(f"done: served {len(request_bytes):,} requests of party 0, {progress.size(bytes_sent)}")
    report = {"bytes_sent": bytes_sent, "wall_s": time.perf_counter() - start, "request_bytes": request_bytes,
              "request_cpu_s": request_cpu, "cpu_s": sum(request_cpu), "torch_threads": torch_threads()}
    if adapter.recorded_dealer_view() is not None:
        report["view"] = adapter.recorded_dealer_view()
    return report


RECORD_DEALER_VIEW = "MPCDP_RECORD_DEALER_VIEW"
"""Set to 1 in the launcher's environment, the dealer records its view for ``mpcdp audit views``."""


def _redirect_output(log_path: str) -> None:
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0), 0o600)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _share_the_cores(processes: int) -> None:
    """Set this process's torch intra-op threads (:func:`~mpcdp.runtime.process_server.threads_per_process`)."""
    import torch

    torch.set_num_threads(threads_per_process(processes))


KEPT_FREE_BYTES = 512 << 20
"""What :func:`_reuse_freed_memory` lets the C allocator keep: blocks up to this size come from its heap, and
freed memory up to this much stays there for reuse."""


def _reuse_freed_memory() -> None:
    """Let glibc's allocator keep large freed blocks for reuse instead of handing them back to the kernel.

    A sampling pass allocates and frees tensors of up to tens of MB; by default glibc maps each such block
    afresh and unmaps it when freed, so every reuse pays a page fault and the zeroing of each 4 KiB page as
    system CPU (issue 44: about half the parties' minor faults at 10^5 samples, ≈ 1–3 µs of CPU per sample).
    With M_MMAP_THRESHOLD and M_TRIM_THRESHOLD at :data:`KEPT_FREE_BYTES` they come from the heap and stay
    there: the process's resident memory stays near its peak (a pass's, bounded by
    :data:`~mpcdp.noise.secure_gaussian.MAX_PASS`). Nothing changes what is computed or sent. A C library
    without ``mallopt`` (not glibc) is left as it is."""
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt(-3, KEPT_FREE_BYTES)  # M_MMAP_THRESHOLD
    mallopt(-1, KEPT_FREE_BYTES)  # M_TRIM_THRESHOLD


def torch_threads() -> int:
    """This process's torch intra-op threads (what :func:`_share_the_cores` set; a dealer report carries it)."""
    import torch

    return torch.get_num_threads()


def _send(results, message: tuple) -> None:
    try:
        results.send(message)
    except OSError:  # the launcher is gone: nobody is left to tell
        pass


def _report_error(results, rank: int, exc: BaseException) -> None:
    """Tell the launcher how this process failed; a refusal's :class:`~mpcdp.refusals.Refusal` goes with it as
    its plain JSON value, so the launcher's error carries it too."""
    blamed = getattr(exc, "party", None)
    refusal = getattr(exc, "refusal", None)
    _send(results, ("error", rank, type(exc).__name__, str(exc), "".join(traceback.format_exception(exc)),
                    blamed if isinstance(blamed, int) else None,
                    refusal.value() if isinstance(refusal, Refusal) else None))


def _flush_and_exit(results, code: int) -> None:
    results.close()  # the message is in the pipe before the process is seen to exit
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # skip interpreter teardown: the store's threads of a failed run must not keep us alive


def _freeze_inherited_objects() -> None:
    """Exclude the objects this process inherited from the fork server (torch, CrypTen, mpcdp) from garbage
    collection: a full collection would otherwise walk all of them (≈ 0.1 s) in the middle of the protocol,
    and touch every inherited page."""
    gc.freeze()


def _take_launcher_state(launcher: dict | None) -> None:
    """Start from the launcher's environment and working directory of the moment it started this process
    (a forked process would otherwise keep those of the fork server)."""
    if launcher:
        os.environ.clear()
        os.environ.update(launcher["environ"])
        os.chdir(launcher["cwd"])


def _name_process(name: str) -> None:
    """Give this process the OS name ``name`` (Linux ``prctl(PR_SET_NAME)``, at most 15 bytes), so ``ps``,
    ``top`` and /proc/PID/comm tell the forked parties apart; a no-op where the call is missing."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(15, ctypes.c_char_p(name.encode()[:15]), 0, 0, 0)  # PR_SET_NAME
    except (OSError, AttributeError):
        pass


def run_party_process(rank: int, config: MpcConfig, settings: RunSettings, rendezvous: str, fn, args, job, results,
                      board, log_path: str, launcher: dict | None = None):
    """Entry point of a data-party process started by :mod:`mpcdp.runtime.harness`: steps and progress go
    to the shared :class:`~mpcdp.runtime.board.StatusBoard`, the result or the error through ``results``."""
    _freeze_inherited_objects()
    _name_process(f"mpcdp-rank{rank}")
    _take_launcher_state(launcher)
    _redirect_output(log_path)
    plugins.load(settings.plugins)  # the registries' extensions the launcher loaded (`mpcdp --plugin`)
    _share_the_cores(config.processes)  # after the plugins: a plugin's provider says whether a dealer runs
    _reuse_freed_memory()

    def on_step(step: int, label: str) -> None:
        board.note_step(rank, step, label)

    def on_progress(done: int, total: int) -> None:
        board.note_progress(rank, done, total)

    announced: list[BaseException] = []

    def announce(error: BaseException) -> None:
        _report_error(results, rank, error)
        announced.append(error)

    reporter = progress.PhaseLines(f"mpcdp party {rank}", lambda line: _send(results, ("line", rank, line)))
    try:
        value = run_party(rank=rank, config=config, rendezvous=rendezvous, fn=fn, args=args, job=job,
                          on_step=on_step, on_progress=on_progress, announce=announce, settings=settings,
                          reporter=reporter)
    except BaseException as exc:  # noqa: BLE001 - everything goes back to the harness
        traceback.print_exc()
        if not announced:
            _report_error(results, rank, exc)
        _flush_and_exit(results, 1)
    try:
        # Plain bytes: tensors must not travel as shared-memory handles that die with this process.
        payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # noqa: BLE001
        _report_error(results, rank, TypeError(f"party {rank}'s result is not picklable: {exc}"))
        _flush_and_exit(results, 1)
    _send(results, ("ok", rank, payload))
    _flush_and_exit(results, 0)


def run_dealer_process(config: MpcConfig, settings: RunSettings, rendezvous: str, results, log_path: str,
                       launcher: dict | None = None):
    """Entry point of the dealer process started by :mod:`mpcdp.runtime.harness`."""
    _freeze_inherited_objects()
    rank = config.parties
    _name_process(f"mpcdp-rank{rank}")
    _take_launcher_state(launcher)
    _redirect_output(log_path)
    _share_the_cores(config.processes)  # as every party: its default (every core) would spin idle threads
    _reuse_freed_memory()
    reporter = progress.PhaseLines("mpcdp dealer", lambda line: _send(results, ("line", rank, line)))
    try:
        report = run_dealer(config=config, rendezvous=rendezvous, settings=settings, reporter=reporter)
    except BaseException as exc:  # noqa: BLE001
        traceback.print_exc()
        _report_error(results, rank, exc)
        _flush_and_exit(results, 1)
    _send(results, ("ok", rank, pickle.dumps(report)))
    _flush_and_exit(results, 0)
