"""The fork server every party and dealer process of a local run is forked from.

multiprocessing's ``forkserver``: a server process imports :data:`PRELOAD` (torch, CrypTen, mpcdp) once,
then forks one child per process a run asks for — each child starts with those modules imported and no
threads, and draws every key after the fork. This module imports nothing heavy, so a command can start the
server first thing and let its imports run while the launcher loads data and calibrates noise.
"""

from __future__ import annotations

import multiprocessing

PRELOAD = ("mpcdp.adapter", "mpcdp.runtime.party", "mpcdp.mpc.context", "mpcdp.jobs.train", "torch._dynamo")


def process_context():
    """The ``forkserver`` context, whose server imports :data:`PRELOAD` once before it forks any party."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(list(PRELOAD))
    return ctx


def start_process_server() -> None:
    """Start the fork server now (idempotent); the first run then forks at once."""
    from multiprocessing import forkserver

    process_context()
    forkserver.ensure_running()
