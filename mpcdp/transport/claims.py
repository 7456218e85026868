"""Each process's claim of its place in a run, published first at the rendezvous and compared there.

A process started on its own (``mpcdp party``, :func:`mpcdp.train` under ``RANK``, torchrun) takes its place
from its settings: ``RANK`` and ``WORLD_SIZE`` (:mod:`mpcdp.runtime.endpoint`) and whether the run has a dealer
(its ``provider``). Before it reads its data or builds its plan — and, for ``mpcdp party`` at a ``tcp://``
rendezvous, before it imports torch — it writes that claim into the run's store
(``mpcdp/claim/<rank>`` = ``'parties processes nonce'``, :func:`~.store_values.parse_claim`) and waits for every
other rank's (:func:`settle`), so that a process given the wrong setting is refused, naming the setting, on
every process as soon as both claims are in — not at the timeout, and not with a consequence of the wrong
setting (a batch that does not split over the parties it thinks it has):

* **another WORLD_SIZE** (or a dealer on for one and off for the other): each process that reads a claim
  unlike its own says "the processes were started with different WORLD_SIZE (rank 1: 4, rank 0: 3) ...";
* **a RANK taken twice**: the store keeps a key's first value and refuses another (without a store server —
  torchrun's agent store, a file store — the second value is read back instead), so the second claimer
  learns it at once, and writes why as its rank's report, which every process polls while it waits;
* **a RANK beyond WORLD_SIZE**: the process refuses itself; its claim stays in the store, where the others,
  waiting for the rank it should have had, read claims of up to :data:`STRAYS` ranks above theirs and refuse
  the run naming RANK.

Each refusal is also written as the detecting process's report (:mod:`mpcdp.refusals`), so a process already
past its own wait — at the links' rendezvous — stops with the same line; party 0, the store's host, keeps the
store up until the processes still to come have reported (at most ``timeout_s``), so that one that starts
late reads why too — also when it learns of the refusal from another process's report. A relayed "RANK taken
twice" names the rank in its ``field``, so that it names that rank whoever relays it. The line names ranks, settings and
counts only (public); a claim carries a random nonce only to tell two claimers of one rank apart.

Security model: as the store's (:mod:`.rendezvous`): under TLS a process writes only its own rank's claim; in a
plain store anyone who reaches it can claim a rank first, which stops the run at once with a line instead of
at the timeout (denial of service was possible there before). Every claim read is schema-checked.
Cost: per process one write and P reads of about 30 bytes, then a poll of the missing claims every 20 ms and
of the reports and stray claims every 0.25 s until all are in (at most ``timeout_s``).
"""

from __future__ import annotations

import dataclasses
import datetime
import secrets
import time

from mpcdp.errors import ConfigError, ConfigMismatchError, PeerLost, PeerTimeout, ProtocolViolation
from mpcdp.refusals import PLACE, Refusal, refusal_of
from mpcdp.transport import rendezvous
from mpcdp.transport.store_values import CLAIM_PREFIX, CLAIM_STRAYS, parse_claim

STRAYS = CLAIM_STRAYS
_SLOW_POLL_S = 0.25
_STORE_GONE_S = 5.0
_GRACE_S = 2.0  # party 0, after every claimer reported: a twin's refusal fills its rank's report for both


@dataclasses.dataclass(frozen=True)
class Claim:
    """A process's place as it was started: its ``rank``, the run's data ``parties`` (WORLD_SIZE) and
    ``processes`` (with the dealer), and a random ``nonce`` that tells two claimers of one rank apart."""

    rank: int
    parties: int
    processes: int
    nonce: str
    timeout_s: float = 0.0  # how long party 0 keeps the store up after a refusal, for the others to read it

    def value(self) -> str:
        return f"{self.parties} {self.processes} {self.nonce}"


def settle(rank: int, parties: int, processes: int, timeout_s: float) -> None:
    """Publish this process's claim in the store it joined (:func:`~.rendezvous.open_store`) and wait until
    every rank 0..``processes``−1 has claimed the same run.

    Raises:
        ConfigMismatchError: another process claims another WORLD_SIZE (or dealer), this RANK too, or a RANK
            beyond WORLD_SIZE, or a process refused the run for one of these reasons (the same line).
        PeerTimeout: a rank made no claim within ``timeout_s``, naming it.
    """
    mine = Claim(rank, parties, processes, secrets.token_hex(8), timeout_s)
    store = rendezvous.current()
    if store is not None:  # the store is up (joined): one that goes away is told within seconds, not timeout_s
        store.set_timeout(datetime.timedelta(seconds=min(timeout_s, _STORE_GONE_S)))
    try:
        _wait(mine)
    except PeerLost as exc:
        if isinstance(exc, ProtocolViolation):
            raise
        raise PeerLost(f"the rendezvous failed while this process waited for the others' claims of their places: "
                       f"party 0's process went away, or another process was started with RANK {rank} too and "
                       f"holds this rank's connection to it ({exc})", party=0) from None
    finally:
        if store is not None:
            store.set_timeout(datetime.timedelta(seconds=timeout_s))


def _wait(mine: Claim) -> None:
    """:func:`settle`'s publishing and waiting."""
    rank, processes, timeout_s = mine.rank, mine.processes, mine.timeout_s
    if not _publish(mine):  # the rank in `field`: another process that relays this line names it too
        _refuse(mine, refusal_of("rank-taken", field=str(rank)))
    if rank >= processes:
        raise ConfigMismatchError(Refusal("rank-beyond", field=str(mine.parties), position=rank).text(rank))
    found = {rank: mine}
    deadline = time.monotonic() + timeout_s
    slow_at = time.monotonic()
    while len(found) < processes:
        present = rendezvous.written_ranks(CLAIM_PREFIX, processes)
        for other in range(processes):
            claim = None if other in found or (present is not None and other not in present) else _read(other)
            if claim is not None:
                found[other] = _compared(mine, claim)
        if time.monotonic() >= slow_at:
            _check_reports(mine)
            _check_strays(mine)
            slow_at = time.monotonic() + _SLOW_POLL_S  # from the checks' end: a slow store is not asked more
        if len(found) < processes and time.monotonic() > deadline:
            missing = [r for r in range(processes) if r not in found]
            who = "the dealer" if missing[0] == mine.parties else f"party {missing[0]}"
            _report_missing(mine, missing[0])
            raise PeerTimeout(f"Timed out after {timeout_s:g} s waiting at the rendezvous for {who}'s claim of its "
                              f"place (RANK {missing[0]} was not started, or cannot reach the rendezvous)",
                              party=missing[0])
        time.sleep(rendezvous.poll_s(processes))
    _check_reports(mine)


def _publish(mine: Claim) -> bool:
    """Write ``mine``; False if another process holds this rank's claim already."""
    key = f"{CLAIM_PREFIX}{mine.rank}"
    try:
        rendezvous.write_value(key, mine.value())
    except ConfigError:  # the store keeps the first value of a key and refused ours
        return False
    held = _read(mine.rank)
    return held is None or held.nonce == mine.nonce


def _read(rank: int) -> Claim | None:
    raw = rendezvous.read_value(f"{CLAIM_PREFIX}{rank}", rank)
    if raw is None:
        return None
    try:
        parties, processes, nonce = parse_claim(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None  # a malformed claim (the store checks each on write): as if not there yet
    return Claim(rank, parties, processes, nonce)  # (another process's: no timeout of its own here)


def _compared(mine: Claim, theirs: Claim) -> Claim:
    """``theirs`` if it claims the run ``mine`` does; else the run is refused, naming the setting."""
    if theirs.parties != mine.parties:
        field = f"rank {theirs.rank}: {theirs.parties}, rank {mine.rank}: {mine.parties}"
        _refuse(mine, refusal_of("world-size", field=field))
    if theirs.processes != mine.processes:
        field = f"rank {theirs.rank}: {theirs.processes}, rank {mine.rank}: {mine.processes}"
        _refuse(mine, refusal_of("dealer", field=field))
    return theirs


def _check_reports(mine: Claim) -> None:
    """Stop with the line of a process that refused the run (its place, or its own input) while this one
    waited — this rank's report too: this process wrote none yet, so a second claimer of its rank did."""
    for writer, report in sorted(rendezvous.read_reports(mine.processes).items()):
        if isinstance(report, rendezvous.Report) and report.refusal is not None:
            _tell(mine.rank, report.refusal)  # this process has read it (party 0 waits for that)
            if mine.rank == 0 and report.refusal.category in PLACE:  # the store's host: up until the other
                _linger(mine, everyone=report.refusal.category in ("world-size", "dealer"))  # claimers read it
            raise ConfigMismatchError(report.refusal.text(writer), party=writer)


def _check_strays(mine: Claim) -> None:
    """Refuse the run if a process claimed a rank beyond this one's WORLD_SIZE (it left a rank missing)."""
    present = rendezvous.written_ranks(CLAIM_PREFIX, mine.processes + STRAYS)
    for rank in range(mine.processes, mine.processes + STRAYS):
        if (present is None or rank in present) and rendezvous.read_value(f"{CLAIM_PREFIX}{rank}", rank) is not None:
            _refuse(mine, refusal_of("rank-beyond", field=str(mine.parties), position=rank))


def _refuse(mine: Claim, refusal: Refusal) -> None:
    """Write ``refusal`` as this process's report (every other process polls them) and raise it; party 0, the
    store's host, first keeps the store up until the others have reported (:func:`_linger`; at most the run's
    ``timeout_s``)."""
    _tell(mine.rank, refusal)
    if mine.rank == 0:
        _linger(mine, everyone=refusal.category in ("world-size", "dealer"))
    raise ConfigMismatchError(refusal.text(mine.rank), party=mine.rank)


def _report_missing(mine: Claim, missing: int) -> None:
    """Before this process stops for a rank that never claimed its place: its loss report (suspecting that
    rank, on a timeout), and for party 0, the store's host, the store kept up until every process that did
    claim has reported too — so that each of them names the missing rank on its own time-out instead of
    losing the store first (:func:`_linger`; at most the run's ``timeout_s``)."""
    try:
        rendezvous.publish_report(mine.rank, missing, "timeout")
    except Exception:  # noqa: BLE001 - the store went away or a twin of this rank reported: nothing to add
        pass
    if mine.rank == 0:
        _linger(mine, everyone=False)


def _tell(rank: int, refusal: Refusal) -> None:
    try:
        rendezvous.publish_refusal(rank, refusal)
    except Exception:  # noqa: BLE001 - a report key written already (this rank's twin's): the others see that one
        pass


def _linger(mine: Claim, *, everyone: bool) -> None:
    """Party 0: wait until every rank of the run (``everyone``: each is started, only with another setting;
    else every rank whose claim is in the store — a RANK taken twice or beyond leaves a rank that never
    comes) has written its report, at most ``mine.timeout_s``, so that a process that starts late reads why."""
    deadline = time.monotonic() + mine.timeout_s
    while time.monotonic() < deadline:
        try:
            reports = rendezvous.read_reports(mine.processes)
            present = None if everyone else rendezvous.written_ranks(CLAIM_PREFIX, mine.processes)
            claimed = [r for r in range(mine.processes) if everyone or (r in present if present is not None else
                       rendezvous.read_value(f"{CLAIM_PREFIX}{r}", r) is not None)]
        except Exception:  # noqa: BLE001 - its own store failed: nobody left to wait for
            return
        if all(r in reports for r in claimed):
            time.sleep(_GRACE_S)  # a moment for the last reader (the first claimer of a rank taken twice)
            return
        time.sleep(_SLOW_POLL_S)
