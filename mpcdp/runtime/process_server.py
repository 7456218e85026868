"""The fork server every party and dealer process of a local run is forked from.

multiprocessing's ``forkserver``: a server process imports :data:`PRELOAD` (torch, CrypTen, mpcdp, dp-accounting) once,
then forks one child per process a run asks for — each child starts with those modules imported and no
threads, and draws every key after the fork. This module imports nothing heavy, so a command can start the
server first thing and let its imports run while the launcher loads data and calibrates noise.
"""

from __future__ import annotations

import multiprocessing
import os

from mpcdp.errors import ConfigError

THREADS_VARIABLE = "MPCDP_THREADS"

PRELOAD = ("mpcdp.adapter", "mpcdp.runtime.party", "mpcdp.mpc.context", "mpcdp.jobs.train", "torch._dynamo",
           "dp_accounting")
"""dp-accounting too: every noise draw returns its event, and importing dp-accounting (SciPy's signal, optimize
and stats) in each forked process cost every party about 1-2 s of CPU at its first draw (at 20,000 samples,
most of `mpcdp noise`'s CPU per sample)."""


def process_context():
    """The ``forkserver`` context, whose server imports :data:`PRELOAD` once before it forks any party."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(list(PRELOAD))
    return ctx


_started = False  # this process started the server (start_process_server)
_forked = False  # a run has forked its processes from it (run_context)


def start_process_server() -> None:
    """Start the fork server now (idempotent); the first run then forks at once."""
    from multiprocessing import forkserver

    global _started
    process_context()
    _started = True
    forkserver.ensure_running()


def run_context():
    """:func:`process_context` for a run about to fork its processes: after it, :func:`first_run_pending` is
    False."""
    global _forked
    _forked = True
    return process_context()


def first_run_pending() -> bool:
    """Whether this process started the fork server and has forked no run from it yet: that run's processes wait
    for what is left of the server's imports."""
    return _started and not _forked


def threads_per_process(processes: int) -> int:
    """torch intra-op threads for each of ``processes`` processes started side by side on this host: they
    split its cores, cores // processes (at least 1), so m parties on a small machine do not oversubscribe
    it; ``MPCDP_THREADS`` (a positive integer) sets the count instead.

    Raises:
        ConfigError: ``MPCDP_THREADS`` is not a positive integer.
    """
    chosen = os.environ.get(THREADS_VARIABLE)
    if chosen is None or chosen == "":
        return max(1, (os.cpu_count() or 1) // processes)
    if not chosen.isdigit() or int(chosen) < 1:
        raise ConfigError(f"`{THREADS_VARIABLE}` must be a positive integer (torch threads per party process). "
                          f"Found {chosen!r}.")
    return int(chosen)
