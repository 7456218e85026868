"""The error hierarchy of mpcdp.

Every error a user can cause names the field and the value it found. Subclasses also inherit the
builtin they specialise, so ``except ValueError`` keeps working for callers that do not know mpcdp.
"""

from __future__ import annotations


class MpcdpError(Exception):
    """Base class of every error mpcdp raises on purpose.

    ``party`` names the data party (rank) whose input or configuration caused the error, when one can be
    named; the party runtime uses it to report the cause of a failed run.
    """

    def __init__(self, *args, party: int | None = None):
        super().__init__(*args)
        self.party = party


class ConfigError(MpcdpError, ValueError):
    """A configuration field is invalid (the message names the field and the value)."""


class InputError(MpcdpError, ValueError):
    """A party's input is unusable: NaN/Inf, empty, out of the fixed-point range, wrong shape."""


class ConfigMismatchError(MpcdpError, ValueError):
    """Parties were started with different configurations or tensor shapes.

    Raised on every party during the start-of-protocol handshake, before any share is sent.
    """


class SecretDisclosureError(MpcdpError, TypeError):
    """A secret-shared value was used where plaintext is needed (``bool``, ``float``, iteration...).

    The only way to plaintext is an explicit, counted ``ctx.reveal(x, reason=...)``.
    """


class InsecureProviderError(MpcdpError, ValueError):
    """An insecure development setting was requested without the explicit opt-in flag."""


class PartyFailed(MpcdpError, RuntimeError):
    """A party of a multi-party run failed, died or timed out.

    Attributes:
        party: the rank of the party that failed first (the cause), or None if none can be singled out.
        reports: one ``PartyReport`` per process (data parties and the dealer), in rank order.
    """

    def __init__(self, message: str, *, party: int | None, reports: list):
        super().__init__(message, party=party)
        self.reports = reports
        self.line, _, self.details = message.partition("\n")  # who failed and why; the launcher's report

    def one_line(self) -> "PartyFailed":
        """This failure with its first line (:attr:`line`: who failed and why) as its whole message, the same
        ``party`` and ``reports``; :attr:`details` (every process's status, the cause's traceback and log tail)
        stay readable on it. What :func:`mpcdp.train` and the command line show unless asked to debug."""
        short = _copy_as(self, self.line)
        short.details = self.details
        return short


class PeerLost(MpcdpError, ConnectionError):
    """Another party closed or reset its link in the middle of a run (``party`` names it)."""


class ProtocolViolation(PeerLost):
    """Another party sent a message that is not the one the protocol expects here: wrong length, step, type
    or message number, or bytes that are not an mpcdp frame (``party`` names the sender). The run stops as
    if that party were lost."""

    evidence: str | None = None  # a direct-evidence kind other than "violation" ("short"): losses.evidence_of


class MacCheckFailed(ProtocolViolation):
    """A MAC check under ``security = "malicious"`` failed (:mod:`mpcdp.mpc.authenticated`): some party deviated
    from the protocol, and nothing opened since the last check was released. ``label`` names the opening;
    ``party`` names a party only where the evidence identifies it (a σ share that does not match its sender's
    commitment), else None. Every honest party detects it itself; its line says so
    (:mod:`mpcdp.transport.losses`), not that a party was lost."""

    evidence = "mac"

    def __init__(self, label: str, why: str, *, party: int | None = None):
        self.label, self.why = label, why
        super().__init__(mac_line(label, why, party), party=party)


def mac_line(label: str, why: str, party: int | None = None) -> str:
    """The one line of a failed MAC check: which opening, why, whom the evidence names, that nothing left."""
    culprit = f"party {party} deviated from the protocol" if party is not None else \
        "a party deviated from the protocol"
    return (f"the MAC check of opening {label!r} failed: {culprit} ({why}); nothing was released "
            f"(security = 'malicious')")


class PeerTimeout(MpcdpError, TimeoutError):
    """Another party sent nothing for the configured ``timeout_s`` (``party`` names the first one owed)."""


class InsecureSettingWarning(UserWarning):
    """Emitted once per process whenever an insecure development setting is in force."""


class PartyLost(MpcdpError, ConnectionError):
    """This process stopped because a party of the run was lost (``party`` names the one lost first, as the
    processes agreed through the rendezvous store; None when nobody could tell)."""


class PartyRefused(PartyFailed):
    """A data party refused its own input before the run began (a NaN, a column that is not numeric, an empty
    file, a held-out file of another schema, labels outside the model's classes, records the model cannot
    take). Every process of the run, the dealer included, raises it with the same one-line message naming the
    party, the file and the reason's category, never a value (:mod:`mpcdp.refusals`).

    Attributes:
        party: the refusing party's rank.
        refusal: the :class:`~mpcdp.refusals.Refusal` (category, file, field), or None.
        reports: one ``PartyReport`` per process where this process launched the run, else empty.
    """

    def __init__(self, message: str, *, party: int | None, refusal=None, reports: list | None = None):
        super().__init__(message, party=party, reports=list(reports or []))
        self.refusal = refusal


def _copy_as(error: PartyFailed, message: str) -> PartyFailed:
    """``error`` (a :class:`PartyFailed` or :class:`PartyRefused`) with another message, its attributes kept."""
    if isinstance(error, PartyRefused):
        return PartyRefused(message, party=error.party, refusal=error.refusal, reports=error.reports)
    return PartyFailed(message, party=error.party, reports=error.reports)
