"""Naming the party that was lost, on every surviving process, wherever it runs.

When a party dies, the others notice at different places: the one reading from its link sees it close, but a
party blocked on a third party's link sees *that* party go away when it gives up — a cascade in which every
process would blame its own neighbour. So the first process to notice a loss writes "party j, noticed by i"
into the run's rendezvous key-value store (:mod:`.rendezvous`, hosted by party 0's process, which
every process including the dealer already reaches), with compare-and-set so that only the first report
counts; every process that stops on a network failure reads that key and names party j. If the store itself
is unreachable, party 0's process — its host — is gone, and party 0 is named. Party 0 keeps the store up for
:data:`LINGER_S` seconds after a failure so that the others can read it.

Public metadata only: who was lost and who noticed. Cost: one store round trip per failing process.
"""

from __future__ import annotations

import datetime
import time

from mpcdp.transport import rendezvous

KEY = rendezvous.LOST_KEY
LINGER_S = 3.0
_READ_TIMEOUT_S = 2.0


def _store():
    store = rendezvous.current()
    if store is None:
        raise RuntimeError("no rendezvous joined")
    store.set_timeout(datetime.timedelta(seconds=_READ_TIMEOUT_S))
    return store


def resolve(me: int, noticed: int | None) -> tuple[int | None, int | None]:
    """Agree on the lost party: report ``noticed`` (the party whose link failed here; None if unknown) unless
    someone reported first; return (lost party, the process that noticed it), or (None, None) if unknown."""
    try:
        store = _store()
    except Exception:  # noqa: BLE001 - no process group at all: nothing to agree through
        return noticed, me if noticed is not None else None
    deadline = time.monotonic() + _READ_TIMEOUT_S
    while True:
        try:
            if noticed is not None:
                current = store.compare_set(KEY, "", f"{noticed} {me}").decode()
            elif store.check([KEY]):
                current = store.get(KEY).decode()
            else:
                current = ""
        except Exception:  # noqa: BLE001 - the store's host, party 0's process, is gone
            return (0, None) if me != 0 else (noticed, me)
        if current:
            lost, by = (int(v) for v in current.split())
            return lost, by
        if time.monotonic() > deadline:
            return None, None
        time.sleep(0.1)  # someone else may be about to report


def linger(rank: int) -> None:
    """Party 0 hosts the store: keep it up briefly after a failure so that the others can read the report."""
    if rank == 0:
        time.sleep(LINGER_S)


def message(lost: int | None, by: int | None, me: str, detail: str) -> str:
    if lost is None:
        return f"{me} stopped: a party of the run was lost or left without finishing ({detail})"
    seen = "" if by is None else (" (noticed by the dealer)" if by < 0 else f" (noticed by party {by})")
    return f"{me} stopped: party {lost} was lost{seen} — {detail}"
