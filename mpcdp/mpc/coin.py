"""The noise committee's coin: a key every member commits to before any part of it is opened.

Each member draws 256 fresh bits (its part) and a 256-bit nonce from the OS CSPRNG and first sends every other
member its commitment, SHA-256 of (the stream's domain, its label, the member's rank, part, nonce),
length-prefixed: one round, all-to-all, 32 bytes each way. Only once it holds every member's commitment does
it send its part and nonce (one round, 64 bytes each way), and it checks every other member's pair against
that member's commitment; a mismatch stops it with :class:`~mpcdp.errors.ProtocolViolation` naming the member.
The key is the XOR of the parts. No relay sees a part before sending its own, and every part is bound before
any is seen, so no member (party 0 included) can choose the key: it is uniform if one member draws honestly.
Semi-honest members learn nothing beyond the key; a member that opens another part than it committed to is
named (SHA-256's binding). Opening kind ``coin``, among the members only.

Declared cost (:func:`coin_cost`): two public all-to-all exchanges among the members, 32 then 64 bytes per
member and direction; 2 rounds.

Committed ahead (:class:`Ahead`, :func:`open_ahead`): a check that draws a coin at a known later point (the MAC
checks of :mod:`mpcdp.mpc.authenticated`) may send the commitment earlier, inside a message of its own that goes
all-to-all anyway (:meth:`Ahead.words`), and keep what every member sent (:meth:`Ahead.keep`); the coin then
costs only the opening round. Nothing changes for its security: every part is still bound before any is seen,
and no part is opened before the caller opens it — after the values the coin is to check are fixed — so the key
is as unpredictable at that point as a coin committed just before (a commitment hides its part). A coin
committed ahead that is never opened (the run's last) reveals nothing.
"""

from __future__ import annotations

import hashlib

import numpy as np
import torch

from mpcdp.errors import ProtocolViolation
from mpcdp.randomness import KeyedStream, secure_key

COMMITMENT_BYTES, OPENING_BYTES = 32, 64  # per member and message, each way
_REASON = "the noise committee's coin: committed parts, opened among the members only"


def coin_cost() -> list[int]:
    """The committed coin's public exchanges among the members (bytes each, in order): the commitments, then
    the parts with their nonces."""
    return [COMMITMENT_BYTES, OPENING_BYTES]


def commitment(domain: bytes, label: str, rank: int, part: bytes, nonce: bytes) -> bytes:
    """SHA-256 of member ``rank``'s coin ``part`` under ``nonce``, bound to the stream's domain and label
    (each input length-prefixed, so no two inputs share an encoding)."""
    digest = hashlib.sha256(b"mpcdp/coin-commitment/1")
    for item in (domain, label.encode(), rank.to_bytes(4, "big"), part, nonce):
        digest.update(len(item).to_bytes(4, "big") + item)
    return digest.digest()


def _words(raw: bytes) -> torch.Tensor:
    return torch.from_numpy(np.frombuffer(raw, dtype="<i8").astype(np.int64))


class Ahead:
    """This member's part of a coin committed before it is needed (module docstring): fresh part and nonce from
    the OS CSPRNG, its commitment under ``label`` and ``domain``, and, once :meth:`keep` has them, every member's
    commitment."""

    def __init__(self, rank: int, *, label: str, domain: bytes):
        self.label, self.domain = label, domain
        self.part, self.nonce = secure_key(), secure_key()
        self.commitments: dict[int, torch.Tensor] | None = None
        self.mine = _words(commitment(domain, label, rank, self.part, self.nonce))

    def words(self) -> torch.Tensor:
        """The 4 int64 words of this member's commitment, to send to every other member with another message."""
        return self.mine

    def keep(self, commitments: dict[int, torch.Tensor]) -> None:
        """Every member's commitment words (rank -> the 4 words it sent this party; its own included)."""
        self.commitments = {j: words.reshape(-1)[:4].clone() for j, words in commitments.items()}


def open_ahead(ctx, ahead: Ahead) -> KeyedStream:
    """The stream of a coin committed ahead (:class:`Ahead`, its commitments kept): one round, the parts and
    nonces, each checked against its member's commitment (a mismatch names the member), the key their XOR."""
    if ahead.commitments is None:
        raise RuntimeError(f"the coin {ahead.label!r} was not committed to by every member")
    parts = ctx.members_exchange(_words(ahead.part + ahead.nonce), label=ahead.label, kind="coin", reason=_REASON)
    return _key(ctx, parts, ahead.commitments, label=ahead.label, domain=ahead.domain)


def _key(ctx, parts: dict[int, torch.Tensor], commitments: dict[int, torch.Tensor], *, label: str,
         domain: bytes) -> KeyedStream:
    key = torch.zeros(4, dtype=torch.int64)
    for j, opened in parts.items():
        raw = opened.numpy().astype("<i8").tobytes()
        if j != ctx.rank and not torch.equal(_words(commitment(domain, label, j, raw[:32], raw[32:])), commitments[j]):
            raise ProtocolViolation(f"party {j} opened a coin part that does not match its commitment ({label})",
                                    party=j)
        key ^= opened[:4]
    return KeyedStream(key.numpy().astype("<i8").tobytes(), domain=domain)


def committed_stream(ctx, *, label: str, domain: bytes) -> KeyedStream:
    """The committee's common stream for this party (:class:`~mpcdp.mpc.context.MpcContext` ``ctx``, inside a
    committee scope or among every party): commit, open, check, XOR (module docstring)."""
    part, nonce = secure_key(), secure_key()
    mine = _words(commitment(domain, label, ctx.rank, part, nonce))
    commitments = ctx.members_exchange(mine, label=f"{label} (commitments)", kind="coin", reason=_REASON)
    parts = ctx.members_exchange(_words(part + nonce), label=label, kind="coin", reason=_REASON)
    return _key(ctx, parts, commitments, label=label, domain=domain)
