"""Checkpoints of a DDP-SRM run, one directory per party, and resuming from them.

What a party stores (``DIR/party-<rank>/release-<k>.pt``, every ``every`` releases and after the last):
the loop's state right after release k (θ, v_p, the iterates and released values so far — all public, they left
the MPC), the privacy ledger (which releases were made, the run's certified ε, δ and σ), this party's *own*
secrets needed to continue exactly: its mini-batch key and its shares of the in-MPC noise rows still to be used
(a share alone is uniformly random; all parties' shares together are the noise), and the fingerprint of the
run's configuration. Who can read it: the party itself only — a checkpoint directory must stay on the party's
own disk, like its data. Writes are atomic (a temporary file, then ``os.replace``): a process killed while
writing leaves the previous checkpoint intact.

Resuming: every party loads the newest release that *all* parties have checkpointed (agreed in one public
exchange of release numbers), refuses a checkpoint written by a different configuration (naming every field
that differs and both values) before any share moves, and continues the loop after that release: same
batches, same noise shares, same public values — so the model equals the uninterrupted run's. The ledger is
carried over, so no release is counted twice or forgotten.
"""

from __future__ import annotations

import os
import pathlib
import re
from typing import Any

import torch

from mpcdp.config import fingerprint
from mpcdp.errors import ConfigError, ConfigMismatchError

_NAME = re.compile(r"release-(\d{6})\.pt$")


def party_dir(directory: str | os.PathLike, rank: int) -> pathlib.Path:
    return pathlib.Path(directory) / f"party-{rank}"


class Checkpointer:
    """Saves one party's checkpoints every ``every`` releases (and after the last one, ``total``)."""

    def __init__(self, directory: str | os.PathLike, rank: int, *, every: int, total: int,
                 description: dict[str, Any]):
        if not (isinstance(every, int) and not isinstance(every, bool) and every >= 1):
            raise ConfigError(f"`checkpoint_every` must be an integer >= 1. Found {every!r}.")
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
        self.folder.mkdir(parents=True, exist_ok=True)
        payload = {"state": state, "secrets": self.secrets, "description": self.description,
                   "fingerprint": self.fingerprint,
                   "ledger": {**self.ledger, "releases": list(range(releases))}}
        final = self.folder / f"release-{releases - 1:06d}.pt"
        temporary = final.with_suffix(".tmp")
        with open(temporary, "wb") as fh:
            torch.save(payload, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temporary, final)


def available(directory: str | os.PathLike, rank: int) -> list[int]:
    """Release numbers this party has complete checkpoints of (ascending)."""
    folder = party_dir(directory, rank)
    if not folder.is_dir():
        return []
    return sorted(int(m.group(1)) for p in folder.iterdir() if (m := _NAME.search(p.name)))


def load(directory: str | os.PathLike, rank: int, release: int, description: dict[str, Any]) -> dict:
    """This party's checkpoint after ``release``; refused if another configuration wrote it."""
    path = party_dir(directory, rank) / f"release-{release:06d}.pt"
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
