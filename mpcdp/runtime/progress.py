"""Progress in words: one line per phase of a party's run ("sampling noise 41,000 / 712,348", "training step
120 / 205"), rate-limited so that a long run's log stays short.

Two sides:

* **a party** reports through the module functions :func:`phase`, :func:`advance` and :func:`note` (no-ops
  when no reporter is installed, so library code may call them anywhere). :func:`reporting` installs a
  :class:`PhaseLines` for the duration of a run (:func:`mpcdp.runtime.party.run_party` does): a party started
  on its own writes its lines to its stderr; a party process of the local harness sends them to the launcher
  through its result pipe (:mod:`mpcdp.runtime.harness`);
* **the launcher** of a local run prints what its parties send only while :func:`lines_to` names a stream
  (the API and the CLI do; sweeps, benchmarks and tests stay quiet). A run is stopped only when no party
  makes progress for ``timeout_s`` (:mod:`mpcdp.runtime.harness`), never for its length: the estimate a party
  prints is shown, not used to stop it.

Rate: a phase's first line at once, then at most one line per :data:`INTERVAL_S`, and its last line (done =
total). A line carries public counts only (samples, steps), never a data value.
"""

from __future__ import annotations

import contextlib
import sys
import time
from typing import Callable, Iterator, TextIO

INTERVAL_S = 5.0

_reporter: "PhaseLines | None" = None
_launcher_stream: TextIO | None = None


class PhaseLines:
    """Rate-limited progress lines of one process, each prefixed with ``who`` ("mpcdp party 1")."""

    def __init__(self, who: str, write: Callable[[str], None], *, interval_s: float = INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic):
        self.who, self.write, self.interval_s, self.clock = who, write, interval_s, clock
        self.name: str | None = None
        self.total = 0
        self.done = 0
        self.shown_at = float("-inf")

    def phase(self, name: str, total: int, done: int = 0) -> None:
        """Enter phase ``name`` of ``total`` units: its first line is written at once."""
        self.name, self.total, self.shown_at = name, int(total), float("-inf")
        self.advance(done)

    def advance(self, done: int) -> None:
        """``done`` units of the current phase are done: a line if the last was long enough ago, or if the
        phase is complete."""
        if self.name is None:
            return
        self.done = int(done)
        now = self.clock()
        if now - self.shown_at >= self.interval_s or self.done >= self.total:
            self.shown_at = now
            self.write(f"{self.who}: {self.name} {self.done:,} / {self.total:,}")
            if self.done >= self.total:
                self.name = None  # a completed phase says nothing more

    def note(self, text: str) -> None:
        """One line that is not a phase's (joined, the estimate, ...)."""
        self.write(f"{self.who}: {text}")

    def now_and_then(self, text: str) -> None:
        """A line of a running count without a known total (what the dealer has served): written if the last
        line was written at least :attr:`interval_s` ago."""
        now = self.clock()
        if now - self.shown_at >= self.interval_s:
            self.shown_at = now
            self.write(f"{self.who}: {text}")


def dealer_lines(reporter: PhaseLines) -> Callable[[int, int], None]:
    """The dealer's progress (:func:`mpcdp.runtime.party.run_dealer`): called with (requests served, bytes
    sent) after each request, it writes at most one line per :data:`INTERVAL_S` ("served 1,204 requests of
    party 0, 12.3 MB"); public counts only, what the run's report shows anyway."""
    def served(requests: int, sent: int) -> None:
        reporter.now_and_then(f"served {requests:,} requests of party 0, {size(sent)}")

    return served


def size(count: int) -> str:
    """A byte count in words: "12.3 MB"."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} B"


def phase(name: str, total: int, done: int = 0) -> None:
    """This process enters phase ``name`` (see :meth:`PhaseLines.phase`); nothing without a reporter."""
    if _reporter is not None:
        _reporter.phase(name, total, done)


def advance(done: int) -> None:
    if _reporter is not None:
        _reporter.advance(done)


def advance_by(count: int) -> None:
    """``count`` more units of the current phase are done."""
    if _reporter is not None:
        _reporter.advance(_reporter.done + count)


def note(text: str) -> None:
    if _reporter is not None:
        _reporter.note(text)


@contextlib.contextmanager
def reporting(reporter: PhaseLines) -> Iterator[PhaseLines]:
    """Install ``reporter`` as this process's for the block."""
    global _reporter
    previous, _reporter = _reporter, reporter
    try:
        yield reporter
    finally:
        _reporter = previous


def to_stderr(who: str) -> PhaseLines:
    """Lines written to this process's stderr, flushed (a party started on its own)."""
    def write(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    return PhaseLines(who, write)


@contextlib.contextmanager
def lines_to(stream: TextIO | None) -> Iterator[None]:
    """While the block runs, the local harness prints its parties' progress lines to ``stream`` (None:
    nowhere), and estimates printed in the launcher go there too (:func:`launcher_line`)."""
    global _launcher_stream
    previous, _launcher_stream = _launcher_stream, stream
    try:
        yield
    finally:
        _launcher_stream = previous


def launcher_line(line: str) -> None:
    """Print ``line`` where :func:`lines_to` says (nothing outside it)."""
    if _launcher_stream is not None:
        print(line, file=_launcher_stream, flush=True)


def showing() -> bool:
    """Whether a launcher stream is set (:func:`lines_to`)."""
    return _launcher_stream is not None
