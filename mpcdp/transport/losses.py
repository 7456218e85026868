"""Naming the party that was lost or deviated, on every surviving process, wherever it runs.

When a run fails, processes notice at different places: the one reading a garbled or unfinished frame has
direct evidence against its sender; a process blocked on a third party's link only sees *that* party close
its link when it stops — a cascade in which every process would blame its neighbour. So every process that
stops writes its own loss report into the run's rendezvous store (:mod:`.rendezvous`, hosted by party 0's
process): ``mpcdp/report/<its rank>`` = whom it suspects and on what evidence (:func:`report`), and only
then closes its links. Then (:func:`resolve`):

* a process with **direct evidence** — a frame that is not the expected one (``violation``), or a frame that
  started arriving and did not finish before the deadline or before a long silence and a close
  (``short``, :mod:`.mesh`) — names its sender, whatever anyone reports;
* any other process (its link closed, or it timed out with nothing partial) waits for the reports —
  until every process has reported or is reported gone or deviating, at most :data:`REPORT_WAIT_S` — and
  judges them (:func:`judge`). A report is its writer's word: nobody else can check that a frame was garbled
  or cut short. So the judge asks which single process can be the one that deviated (crashed, left, lied)
  if every *other* report is true (:func:`suspects`): a ``violation`` or ``short`` report names it; a
  ``closed`` report against a process that wrote no report names it (an honest process reports before it
  closes its links); a malformed report is its; a ``timeout`` fits anyone (a cascade). Never the judging
  process itself, and never the dealer, which the dealer provider already trusts not to deviate (its
  reports are taken as true).

  - **One process** fits: it is named ("party 2 was lost (noticed by …)").
  - **Several** fit and the evidence against them is their words about each other — e.g. party 2 says
    party 1 sent a garbled frame and party 1 says party 2 closed its link — : nobody is named; the line
    says who said what ("the reports cannot tell which"). A rogue that reports first therefore never gets
    an innocent party named by a third process; a genuine detection by one process is likewise only its
    word for the others (it names the sender itself).
  - **None** fits (more than one failure): the reports are weighed as before: ``violation`` > ``short`` >
    ``timeout`` > ``closed``; a ``closed`` accusation against a process that reported is explained by that
    report; an accusation by a process itself accused with evidence at least as strong is discounted; of
    what remains, the suspect with the strongest evidence from the most distinct reporters is named.

  What each process concludes, case by case (rogue R, innocent I): R sends a garbled frame to P: P names R;
  the others have only P's word, so they name R only if another process also holds direct evidence against
  R, or R's own report accuses a third process (then only R fits), else nobody. R cuts a frame short: as garbled, once P's deadline or R's close comes. R stalls
  with its links open: every process waiting on it times out and names it if nothing contradicts (a
  timeout fits anyone), cascades included. R closes its links without a report (a crash, a kill): R is
  named by every process. R reports "I got a garbled frame from I" and then closes, stays silent, or
  sends half frames (issue 45's strategies a–d): I names R (it knows it sent nothing wrong, so only R fits);
  a process holding R's unfinished frame names R; every other process names nobody. Two processes that
  accuse each other: nobody. The dealer: like any process, except that it is never a suspect when it is
  the run's dealer. One line per process in every case.

A party that refuses its own input before joining the links writes its refusal as its report
(:mod:`mpcdp.refusals`): that is the cause, whatever else was reported, and every other process stops naming it
(:func:`stopped`, :class:`~mpcdp.errors.PartyRefused`) as soon as it reads it. Data parties that refuse the
run together — their handshake or data agreement differed, and each computed the same line from what all of
them sent — write that line as their report (:func:`report_disagreement`) before they close their links, so
that the dealer, outside that agreement, stops with the same line instead of naming a lost party.

If the store is unreachable, party 0's process — its host — is gone, and party 0 is named. Party 0 keeps
the store up until the reports are in (at most :data:`LINGER_S`) and then until every other process has left
its connection to the store (at most :data:`READ_WAIT_S`), so that the others can read them (:func:`linger`).

Security model: under TLS the store lets a process write only its own report (a rogue can name only itself
as the reporter; in a plain store mpcdp does not serve, reports are sealed by their writer's key,
:mod:`.signed_values`), and every report is schema-checked by the store and by every reader (a malformed one
names its writer, never stops the reader). A report is one process's word, and the judge treats it so: no
process is named by a third on one other process's word against its own. Assumes at most one deviating
process among the data parties for naming (with more, the judge may name nobody or fall back to weighing).
Not done: frames signed by their sender, which would let a naive rogue's garbled frame be shown to others. Without credentials the store is plain and anyone who
reaches it can write a report for a rank that has not written one. Party 0 hosts the store and could rewrite
any report. Reports carry public metadata only: ranks and evidence kinds. Cost: one write and at most a few
dozen reads (of about 50 bytes) per failing process.
"""

from __future__ import annotations

import dataclasses
import datetime
import time

from mpcdp.errors import ConfigMismatchError, PartyLost, PartyRefused, PeerLost, PeerTimeout, ProtocolViolation
from mpcdp.transport import rendezvous

REPORT_WAIT_S = 2.0
LINGER_S = 4.0
READ_WAIT_S = 30.0  # then at most this long for the others to read the reports and leave (linger)
DRAIN_S = 3.0  # after its own failed check, how long a party keeps its links open for peers finishing theirs (Mesh.close)
_READ_TIMEOUT_S = 2.0
_POLL_S = 0.1
DIRECT = ("violation", "short")
STRENGTH = {"violation": 3, "short": 3, "malformed": 3, "mac": 3, "bound": 3, "timeout": 2, "closed": 1}
PREFERENCE = {"violation": 5, "malformed": 5, "mac": 5, "bound": 5, "short": 4, "timeout": 2, "closed": 1}
WHAT = {"violation": "sent a frame that is not the expected one", "short": "left a frame unfinished",
        "malformed": "wrote a malformed loss report", "timeout": "sent nothing within the timeout",
        "closed": "closed its link", "mac": "opened a σ share that does not match its commitment",
        "bound": "contributed outside its clipping bound"}
MAC = "mac"
"""A failed MAC check (``security = "malicious"``, :class:`~mpcdp.errors.MacCheckFailed`): every honest party
detects it itself and says so in its own line (the opening, and a party only where the evidence names one);
a process that did not run the check (the dealer, a party whose link closed first) says that the parties
reporting it found a MAC check failed, unless the loss rules above name one process."""
BOUND = "bound"
"""A contribution outside its bound (``security = "malicious"``, :class:`~mpcdp.mpc.bounded.OutOfBound`): every
honest party detects it itself, naming the contributor, and is treated as a failed MAC check is."""
CHECKS = (MAC, BOUND)


@dataclasses.dataclass(frozen=True)
class Accusation:
    reporter: int
    suspect: int
    kind: str


@dataclasses.dataclass(frozen=True)
class Verdict:
    """Whom a process names: one suspect, two (each accuses the other, or equal evidence), or none."""
    suspects: tuple[int, ...] = ()
    accusations: tuple[Accusation, ...] = ()  # the evidence behind it
    own: bool = False  # this process's own direct evidence
    mutual: bool = False
    disputed: bool = False  # several processes can be the deviating one, on each other's word only
    store_lost: bool = False
    refusal: rendezvous.Report | None = None  # a party's refusal of its own input: the cause
    mac: tuple[int, ...] = ()  # the processes whose MAC check failed (this one's own, or as reported)
    disagreement: rendezvous.Report | None = None  # the data parties refused the run together: the cause

    @property
    def party(self) -> int | None:
        return self.suspects[0] if len(self.suspects) == 1 else None


def evidence_of(exc: BaseException | None) -> str:
    """The evidence kind an error is: its ``evidence`` if it carries one (:mod:`.mesh`), else by type."""
    kind = getattr(exc, "evidence", None)
    if kind in DIRECT or kind in CHECKS:
        return kind
    if isinstance(exc, ProtocolViolation):
        return "violation"
    if isinstance(exc, PeerTimeout):
        return "timeout"
    if isinstance(exc, PeerLost):
        return "closed"
    return "none"


def own_check_failed(exc: BaseException | None) -> bool:
    """Whether ``exc`` is this process's own failed MAC or bound check (its peers may still be finishing theirs)."""
    return evidence_of(exc) in CHECKS


def _suspect_of(me: int, exc: BaseException | None) -> tuple[int | None, str]:
    suspect, kind = getattr(exc, "party", None), evidence_of(exc)
    if kind in CHECKS:  # a failed MAC or bound check is evidence with or without a suspect
        valid = isinstance(suspect, int) and not isinstance(suspect, bool) and 0 <= suspect != me
        return (suspect if valid else None), kind
    if not isinstance(suspect, int) or isinstance(suspect, bool) or suspect == me or suspect < 0 or kind == "none":
        return None, "none"
    return suspect, kind


def _store():
    store = rendezvous.current()
    if store is None:
        raise RuntimeError("no rendezvous joined")
    store.set_timeout(datetime.timedelta(seconds=_READ_TIMEOUT_S))
    return store


def report(me: int, exc: BaseException | None) -> None:
    """Write this process's loss report (whom ``exc`` names, on what evidence); never raises: a store that
    refuses or is gone is noticed by :func:`resolve`."""
    suspect, kind = _suspect_of(me, exc)
    try:
        _store()
        rendezvous.publish_report(me, suspect, kind)
    except Exception:  # noqa: BLE001 - the store's host is gone, or it refused: resolve() says whom to name
        pass


def report_disagreement(me: int, line: str) -> None:
    """Write this data party's refusal of the run that the data parties agreed on (``line``: their handshake or
    data agreement differed) as its report, for the dealer; never raises (a store that is gone cannot be told)."""
    try:
        _store()
        rendezvous.publish_disagreement(me, line)
    except Exception:  # noqa: BLE001 - the store's host is gone, or it refused: nobody left to tell
        pass


def resolve(me: int, exc: BaseException | None) -> Verdict:
    """Whom this process names after ``exc``: its own direct evidence at once, else the run's reports."""
    suspect, kind = _suspect_of(me, exc)
    if kind in DIRECT and suspect is not None:  # (direct evidence always names a suspect: _suspect_of)
        return Verdict((suspect,), (Accusation(me, suspect, kind),), own=True)
    if kind in CHECKS:  # this party's own check failed: its line says so, naming whom the evidence names
        named = () if suspect is None else (suspect,)
        return Verdict(named, tuple(Accusation(me, s, kind) for s in named), own=True, mac=(me,))
    info = rendezvous.run()
    try:
        _store()
    except Exception:  # noqa: BLE001 - no rendezvous joined at all: nothing to agree through
        return _alone(me, suspect, kind)
    if info is None:
        return _alone(me, suspect, kind)
    deadline = time.monotonic() + REPORT_WAIT_S
    while True:
        try:
            reports = rendezvous.read_reports(info.processes)
        except Exception:  # noqa: BLE001 - the store's host, party 0's process, is gone
            return Verdict((0,), store_lost=True) if me != 0 else _alone(me, suspect, kind)
        if settled(reports, info.processes) or _refusal(reports) or _disagreement(reports) \
                or time.monotonic() > deadline:
            break
        time.sleep(_POLL_S)
    try:  # once more: a report read in this pass may answer one written while the pass read others
        reports = rendezvous.read_reports(info.processes)
    except Exception:  # noqa: BLE001 - the store went with its host: judge what was read
        pass
    return judge(me, reports, info.processes, info.dealer)


def _alone(me: int, suspect: int | None, kind: str) -> Verdict:
    return Verdict() if suspect is None else Verdict((suspect,), (Accusation(me, suspect, kind),))


def settled(reports: dict, processes: int) -> bool:
    """Whether no report is still to come: every process has reported, or is reported gone or deviating (a
    process accused only of a timeout may be alive, about to report what it saw)."""
    gone = {r.suspect for r in reports.values() if isinstance(r, rendezvous.Report) and r.evidence != "timeout"}
    return all(rank in reports or rank in gone for rank in range(processes))


def _accusations(me: int, reports: dict) -> list[Accusation]:
    """The reports as accusations, less those naming ``me``; a malformed report accuses its writer (``me``
    read it)."""
    found = []
    for writer, rep in reports.items():
        if not isinstance(rep, rendezvous.Report):
            if writer != me:
                found.append(Accusation(me, writer, "malformed"))
        elif rep.suspect is not None and rep.suspect not in (me, writer):
            found.append(Accusation(writer, rep.suspect, rep.evidence))
    return found


def _refusal(reports: dict) -> rendezvous.Report | None:
    """The refusal among the reports (the lowest writer's, if several parties refused), or None."""
    refused = [r for _, r in sorted(reports.items()) if isinstance(r, rendezvous.Report) and r.refusal is not None]
    return refused[0] if refused else None


def _disagreement(reports: dict) -> rendezvous.Report | None:
    """The data parties' refusal of the run among the reports (the lowest writer's), or None."""
    said = [r for _, r in sorted(reports.items()) if isinstance(r, rendezvous.Report) and r.reason is not None]
    return said[0] if said else None


def judge(me: int, reports: dict, processes: int | None = None, dealer: int | None = None) -> Verdict:
    """Whom this process (``me``) names from the run's reports (the rules in the module docstring): a
    refusal's writer; else the one process that can be the deviating one (:func:`suspects`); else, where
    several can, nobody if the reports' evidence against them is only their words about each other, or the
    reports weighed."""
    refused = _refusal(reports)
    if refused is not None and refused.writer != me:
        return Verdict((refused.writer,), refusal=refused)
    disagreed = _disagreement(reports)
    if disagreed is not None and disagreed.writer != me:
        return Verdict(disagreement=disagreed)
    possible = suspects(me, reports, processes, dealer)
    if len(possible) == 1:
        h = possible[0]
        return Verdict((h,), tuple(a for a in _accusations(me, reports) if a.suspect == h))
    weighed = _weigh(me, reports)
    if possible and weighed.suspects and (
            not set(weighed.suspects) <= set(possible)
            or any(a.kind in DIRECT and a.reporter in possible for a in weighed.accusations)):
        weighed = Verdict((), weighed.accusations, disputed=True)
    failed = tuple(sorted(w for w, r in reports.items() if isinstance(r, rendezvous.Report) and r.evidence == MAC))
    if failed and not weighed.disputed and not weighed.suspects:  # nothing else said: the MAC failure is the cause
        return Verdict((), mac=failed)
    return weighed


def suspects(me: int, reports: dict, processes: int | None = None, dealer: int | None = None) -> list[int]:
    """The processes that can be the one that deviated (crashed, left or lied), given that every other
    process's report is true: a frame that is not the expected one or left unfinished (``violation``,
    ``short``) came from it, a link closed by a process that wrote no report was its (an honest process reports
    before it closes its links), and only it writes a malformed report; a timeout fits any (a cascade). Never
    ``me``, and never the ``dealer``: the dealer provider's model already trusts it not to deviate, so its
    reports are taken as true. Empty: no single process explains the reports (the reports are then weighed)."""
    seen = {me, *reports, *(r.suspect for r in reports.values() if isinstance(r, rendezvous.Report)
                            and r.suspect is not None)}
    ranks = processes if processes is not None else max(seen) + 1
    return [h for h in range(ranks) if h not in (me, dealer) and _explains(h, reports)]


def _explains(h: int, reports: dict) -> bool:
    for writer, rep in reports.items():
        if writer == h:
            continue  # the deviating process's own report may say anything
        if not isinstance(rep, rendezvous.Report):
            return False  # a malformed report: only the deviating process writes one
        if rep.suspect is None or rep.suspect == h:
            continue
        if rep.evidence in DIRECT or rep.evidence in CHECKS or (
                rep.evidence == "closed" and rep.suspect not in reports):
            return False
    return True


def _weigh(me: int, reports: dict) -> Verdict:
    """The reports weighed by evidence and reporters (the module docstring's fallback)."""
    live = [a for a in _accusations(me, reports) if not (a.kind == "closed" and a.suspect in reports)]
    if not live:
        return Verdict()

    def discounted(a: Accusation) -> bool:
        return any(b.suspect == a.reporter and STRENGTH[b.kind] >= STRENGTH[a.kind] for b in live)

    valid = [a for a in live if not discounted(a)]
    candidates: list[tuple[tuple, tuple[int, ...], tuple[Accusation, ...], bool]] = []
    for suspect in {a.suspect for a in valid}:
        against = tuple(a for a in valid if a.suspect == suspect)
        key = (max(PREFERENCE[a.kind] for a in against), len({a.reporter for a in against}))
        candidates.append((key, (suspect,), against, False))
    for a in live:
        for b in live:
            if a.reporter < b.reporter and (a.reporter, a.suspect) == (b.suspect, b.reporter) \
                    and STRENGTH[a.kind] == STRENGTH[b.kind]:
                key = (max(PREFERENCE[a.kind], PREFERENCE[b.kind]), 1)
                candidates.append((key, tuple(sorted((a.suspect, b.suspect))), (a, b), True))
    if not candidates:
        return Verdict()
    best = max(key for key, *_ in candidates)
    chosen = [c for c in candidates if c[0] == best]
    suspects = tuple(sorted({s for c in chosen for s in c[1]}))
    return Verdict(suspects, tuple(a for c in chosen for a in c[2]), mutual=any(c[3] for c in chosen))


def linger(rank: int, wait_s: float = LINGER_S) -> None:
    """Party 0 hosts the store: keep it up until every report is in (at most ``wait_s``), then until every
    other process has read them and left (:func:`_readers_left`)."""
    if rank != 0:
        return
    info = rendezvous.run()
    if info is None:
        return
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            if settled(rendezvous.read_reports(info.processes), info.processes):
                break
        except Exception:  # noqa: BLE001 - its own store failed: nothing left to wait for
            return
        time.sleep(_POLL_S)
    _readers_left()


def _readers_left(wait_s: float = READ_WAIT_S) -> None:
    """Wait until no other process holds a connection to party 0's store — each closes its own when it exits,
    after reading the reports — at most ``wait_s`` (a process that stalls with its connection open). A process
    that found the store gone would name party 0 (:func:`resolve`): under load a survivor can take seconds
    between writing its report and reading the others', so a fixed moment is not enough. Where the store
    cannot tell who is connected (no credentials), a moment (1 s)."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        holders = rendezvous.store_holders()
        if holders is None:
            time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))
            return
        if not holders - {0}:
            return
        time.sleep(_POLL_S)


def stopped(verdict: Verdict, me: str, detail: str) -> PartyLost | PartyRefused | ConfigMismatchError:
    """The error a process raises when it stops after a loss: :class:`~mpcdp.errors.PartyRefused` with the
    refusing party's line (the same on every process) if a party refused its input,
    :class:`~mpcdp.errors.ConfigMismatchError` with the data parties' line if they refused the run together
    (the dealer says why they left), else :class:`~mpcdp.errors.PartyLost` with :func:`message`."""
    if verdict.disagreement is not None:
        return ConfigMismatchError(f"{me} stopped: the data parties refused the run — {verdict.disagreement.reason}")
    if verdict.refusal is not None:
        refusal = verdict.refusal
        assert refusal.refusal is not None  # a verdict's refusal is a report that carries one (_refusal)
        return PartyRefused(refusal.refusal.text(refusal.writer), party=refusal.writer, refusal=refusal.refusal)
    return PartyLost(message(verdict, me, detail), party=verdict.party)


def message(verdict: Verdict, me: str, detail: str) -> str:
    """What a process says when it stops after a loss: whom it names, on whose word, and its own detail."""
    info = rendezvous.run()

    def who(rank: int) -> str:
        return rendezvous.who(rank, info.dealer if info is not None else None)

    if verdict.mac and verdict.own:
        return f"{me} stopped: {detail}"
    if verdict.mac:  # (its own detail is only the link that closed after the failure: not said, it names no one)
        names = [who(r) for r in verdict.mac]
        said = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        return (f"{me} stopped: a MAC check failed ({said} found it): a party deviated from the protocol; nothing "
                f"was released (security = 'malicious')")
    if verdict.store_lost:
        return f"{me} stopped: party 0 was lost (the rendezvous store it hosts is unreachable) — {detail}"
    if verdict.disputed:
        words = "; ".join(f"{who(a.reporter)} says {who(a.suspect)} {WHAT[a.kind]}" for a in verdict.accusations)
        return (f"{me} stopped: a process deviated or was lost, and the reports cannot tell which ({words}; only "
                f"their own word, which no other process can check) — {detail}")
    if not verdict.suspects:
        return f"{me} stopped: a party of the run was lost or left without finishing ({detail})"
    checked = sorted({a.reporter for a in verdict.accusations if a.kind == BOUND})
    if checked and len(verdict.suspects) == 1:  # the parties' own bound checks named it: say so, not "lost"
        said = " and ".join(who(r) for r in checked)
        return (f"{me} stopped: {who(verdict.suspects[0])} contributed outside its clipping bound ({said} found "
                f"it); nothing was released (security = 'malicious')")
    if verdict.own:
        return f"{me} stopped: {who(verdict.suspects[0])} was lost (noticed by {me}) — {detail}"
    evidence = "; ".join(f"{who(a.reporter)}: {who(a.suspect)} {WHAT[a.kind]}" for a in verdict.accusations)
    if len(verdict.suspects) > 1:
        named = " or ".join(who(s) for s in verdict.suspects)
        why = "each accuses the other" if verdict.mutual else "equal evidence against each"
        return f"{me} stopped: {named} was lost: {why} ({evidence}) — {detail}"
    reporters = sorted({a.reporter for a in verdict.accusations})
    noticed = " and ".join(who(r) for r in reporters)
    return f"{me} stopped: {who(verdict.suspects[0])} was lost (noticed by {noticed}) — reports: {evidence}; " \
           f"here: {detail}"
