"""Checkpoints of a DDP-SRM run, one directory per party, and resuming from them.

What a party stores (``DIR/party-<rank>/release-<k>.pt``, every ``every`` releases and after the last):
the loop's state right after release k (θ, v_p, the iterates and released values so far — all public, they left
the MPC), the privacy ledger (which releases were made, the run's certified ε, δ and σ), this party's *own*
secrets needed to continue exactly: its mini-batch key and its shares of the in-MPC noise rows still to be used
(a share alone is uniformly random; all parties' shares together are the noise), and the fingerprint of the
run's configuration. Who can read it: the party itself only — a checkpoint directory must stay on the party's
own disk, like its data. ``DIR`` and ``DIR/party-<rank>`` are created with mode 0700, or, if they exist, must
be directories of this user that no other user can write (else :class:`~mpcdp.errors.ConfigError` naming the
folder); every checkpoint and journal is created 0600 under a temporary name, then moved into place with
``os.replace`` (:mod:`mpcdp.private_files`): no other user can open it at any moment, and a process killed
while writing leaves the previous checkpoint intact. Checkpoints and journals are read back only from
folders that pass the same check, so a file another user could have placed there is never loaded.

Every opened release is also journaled, whether or not a checkpoint follows it
(``DIR/party-<rank>/opened-<k>.pt``, public values). The run's fingerprint binds the configuration and
the SHA-256 of the party's own shard.

Resuming: every party loads the newest release that *all* parties have checkpointed (agreed in one public
exchange of release numbers). It refuses a checkpoint written by a different configuration or over
different data before any share moves, naming every field that differs and both values. It then continues
the loop after that release with the same batches, the same noise shares and the same public values, so
the model equals the uninterrupted run's. A release that any party journaled after that checkpoint was
opened already. It is not opened again: the parties exchange their journaled values (public) and re-serve
them, so no noise row ever masks two different sums. The ledger is carried over, so no release is counted
twice or forgotten.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import re
from typing import Any

import torch

from mpcdp.config import fingerprint
from mpcdp.errors import ConfigError, ConfigMismatchError
from mpcdp.private_files import check_private_folder, private_folder, private_writer
from mpcdp.validation import check_integer

_NAME = re.compile(r"release-(\d{6})\.pt$")
_OPENED = re.compile(r"opened-(\d{6})\.pt$")


def shard_digest(x: torch.Tensor, y: torch.Tensor) -> str:
    """SHA-256 of a party's training records (features as float64, labels, shapes): binds a checkpoint to
    the data it was computed on."""
    h = hashlib.sha256()
    for t in (x, y):
        t = t.detach().to(torch.float64).contiguous()
        h.update(repr(tuple(t.shape)).encode())
        h.update(t.numpy().tobytes())
    return h.hexdigest()


def _atomic_save(obj: Any, final: pathlib.Path) -> None:
    """``obj`` saved to ``final``: a file private from creation, replaced atomically."""
    with private_writer(final) as handle:
        torch.save(obj, handle)


def _private_party_dir(directory: str | os.PathLike, rank: int) -> pathlib.Path:
    """``DIR/party-<rank>``, created 0700 (``DIR`` too) or checked (see the module docstring)."""
    private_folder(directory, what="checkpoint")
    return private_folder(party_dir(directory, rank), what="checkpoint")


def party_dir(directory: str | os.PathLike, rank: int) -> pathlib.Path:
    return pathlib.Path(directory) / f"party-{rank}"


class Checkpointer:
    """Saves one party's checkpoints every ``every`` releases (and after the last one, ``total``)."""

    def __init__(self, directory: str | os.PathLike, rank: int, *, every: int, total: int,
                 description: dict[str, Any]):
        check_integer(every, "checkpoint_every")
        self.directory, self.rank = directory, rank
        self.folder = party_dir(directory, rank)
        self.every, self.total = every, total
        self.description = description
        self.fingerprint = fingerprint(description)
        self.secrets: dict[str, Any] = {}  # this party's own: batch key, remaining noise shares
        self.ledger: dict[str, Any] = {}

    def __call__(self, state: dict) -> None:
        releases = state["releases"]
        if releases % self.every and releases != self.total:
            return
        self.folder = _private_party_dir(self.directory, self.rank)
        payload = {"state": state, "secrets": self.secrets, "description": self.description,
                   "fingerprint": self.fingerprint,
                   "ledger": {**self.ledger, "releases": list(range(releases))}}
        _atomic_save(payload, self.folder / f"release-{releases - 1:06d}.pt")

    def journal(self, release: int, value: torch.Tensor) -> None:
        """Record that release ``release`` was opened with ``value`` (before the loop uses it)."""
        self.folder = _private_party_dir(self.directory, self.rank)
        _atomic_save(value.detach().to(torch.float64).clone(), self.folder / f"opened-{release:06d}.pt")


def journaled(directory: str | os.PathLike, rank: int, after: int) -> dict[int, torch.Tensor]:
    """The releases after ``after`` that this party journaled as opened (release number → value)."""
    folder = party_dir(directory, rank)
    if not folder.is_dir():
        return {}
    check_private_folder(folder, what="checkpoint")
    found = {}
    for path in folder.iterdir():
        m = _OPENED.search(path.name)
        if m and int(m.group(1)) > after:
            found[int(m.group(1))] = torch.load(path, weights_only=True)
    return found


def available(directory: str | os.PathLike, rank: int) -> list[int]:
    """Release numbers this party has complete checkpoints of (ascending)."""
    folder = party_dir(directory, rank)
    if not folder.is_dir():
        return []
    return sorted(int(m.group(1)) for p in folder.iterdir() if (m := _NAME.search(p.name)))


def load(directory: str | os.PathLike, rank: int, release: int, description: dict[str, Any]) -> dict:
    """This party's checkpoint after ``release``; refused if another configuration wrote it."""
    path = party_dir(directory, rank) / f"release-{release:06d}.pt"
    for folder in (pathlib.Path(directory), path.parent):  # a file another user could plant is never unpickled
        if folder.is_dir():
            check_private_folder(folder, what="checkpoint")
    try:
        payload = torch.load(path, weights_only=False)
    except FileNotFoundError:
        raise ConfigError(f"no checkpoint {str(path)!r} to resume from") from None
    except Exception as error:  # noqa: BLE001 - a truncated or foreign file
        raise ConfigError(f"checkpoint {str(path)!r} cannot be read: {error}") from None
    if payload.get("fingerprint") != fingerprint(description):
        from mpcdp.mpc.context import describe_mismatch

        detail, _ = describe_mismatch([payload.get("description", {}), description])
        detail = detail.replace("party 0 =", "checkpoint =").replace("party 1 =", "this run =")
        raise ConfigMismatchError(f"checkpoint {str(path)!r} was written by a different configuration: {detail}",
                                  party=rank)
    ledger = payload["ledger"]["releases"]
    if ledger != list(range(release + 1)):
        raise ConfigError(f"checkpoint {str(path)!r} has a broken privacy ledger: releases {ledger}")
    return payload
