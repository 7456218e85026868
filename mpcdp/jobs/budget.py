"""The privacy ledger of a party's own data across runs: which runs opened releases over these records and the ε
each run certified, so that a new run over data that already spent budget is refused unless the user asks to
spend more, and a resumed run (the same run, from its checkpoint) is not counted twice.

Where: one folder per deployment host, ``MPCDP_LEDGER`` or ``~/.local/state/mpcdp/ledger``, created 0700 (another
user can neither read nor plant an entry: :mod:`mpcdp.private_files`); one JSON file per (data, run), named by
the SHA-256 of the party's training records and the run's fingerprint, rewritten atomically after every
release this party opens. An entry holds public values only: the protocol's name, the run's certified (ε, δ), the
releases it has opened (each once: a release re-served after a restart is not opened again) out of its total, the
training file's name and the dates.

Accounting across runs is basic composition: the ε of every earlier run that opened at least one release adds
up (a run that opened any release is counted in full, a conservative choice: its certificate is for the whole
run). Security model: the ledger is this party's own record on its own disk, like its data and checkpoints; it
is never sent to another party. Cost: one small file write per release.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import pathlib
from typing import Any

from mpcdp.errors import ConfigError
from mpcdp.private_files import check_private_folder, private_folder, write_private

ENVIRONMENT = "MPCDP_LEDGER"
_ENTRY_BYTES = 64 * 1024  # an entry larger than this is not one mpcdp wrote


def ledger_folder() -> pathlib.Path:
    """This host's ledger folder (``MPCDP_LEDGER``, else ``~/.local/state/mpcdp/ledger``), created private."""
    configured = os.environ.get(ENVIRONMENT) or str(pathlib.Path.home() / ".local" / "state" / "mpcdp" / "ledger")
    return private_folder(configured, what="privacy ledger")


@dataclasses.dataclass(frozen=True)
class Spent:
    """What earlier runs over one party's records spent: ``runs`` (protocol, ε, δ, releases opened, total, file,
    started) of every run that opened a release."""

    runs: tuple[dict[str, Any], ...]

    @property
    def epsilon(self) -> float:
        return sum(float(run["epsilon"]) for run in self.runs)

    @property
    def delta(self) -> float:
        return sum(float(run["delta"]) for run in self.runs)

    def describe(self) -> str:
        """"ε = 0.999 (δ = 1e-05) in 1 earlier run: own-data-mlp, 23 of 66 releases opened, started 2026-11-29"."""
        parts = [f"{run['protocol']}, {len(run['opened'])} of {run['releases']} releases opened, started "
                 f"{run['started']}" for run in self.runs]
        return (f"ε = {self.epsilon:.4g} (δ = {self.delta:.3g}) in {len(self.runs)} earlier "
                f"run{'s' if len(self.runs) != 1 else ''}: " + "; ".join(parts))


def spent(data_digest: str, *, except_run: str | None = None) -> Spent:
    """What the runs recorded for the records of ``data_digest`` spent (those that opened a release), leaving out
    the run ``except_run`` (the one being resumed)."""
    folder = ledger_folder() / data_digest[:32]
    if not folder.is_dir():
        return Spent(())
    check_private_folder(folder, what="privacy ledger")
    runs = []
    for path in sorted(folder.glob("*.json")):
        entry = _read(path)
        if entry is not None and entry["opened"] and entry["run"] != except_run:
            runs.append(entry)
    return Spent(tuple(runs))


def _read(path: pathlib.Path) -> dict[str, Any] | None:
    try:
        raw = path.read_bytes()[:_ENTRY_BYTES + 1]
        entry = json.loads(raw) if len(raw) <= _ENTRY_BYTES else None
    except (OSError, ValueError):
        return None
    keys = {"run", "protocol", "epsilon", "delta", "releases", "opened", "file", "started"}
    return entry if isinstance(entry, dict) and keys <= set(entry) and isinstance(entry["opened"], list) else None


class RunEntry:
    """This run's entry for this party's records: created when the run's noise is agreed (before any release),
    a release added each time this party opens one (:meth:`opened`)."""

    def __init__(self, data_digest: str, run: str, *, protocol: str, epsilon: float, delta: float, releases: int,
                 file: str):
        folder = private_folder(ledger_folder() / data_digest[:32], what="privacy ledger")
        self.path = folder / f"{run[:32]}.json"
        earlier = _read(self.path) if self.path.exists() else None
        today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
        self.entry: dict[str, Any] = earlier if earlier is not None and earlier["run"] == run else {
            "run": run, "protocol": protocol, "epsilon": float(epsilon), "delta": float(delta),
            "releases": int(releases), "opened": [], "file": file, "started": today}
        self.entry["updated"] = today
        self._write()

    def opened(self, release: int) -> None:
        """Record that this party opened ``release`` (once)."""
        if release not in self.entry["opened"]:
            self.entry["opened"] = sorted([*self.entry["opened"], int(release)])
            self._write()

    def _write(self) -> None:
        write_private(self.path, json.dumps(self.entry, sort_keys=True).encode())


def run_key(checkpoint_dir: str | None) -> str:
    """The ledger's name for a run: its checkpoint folder's (so that resuming it continues its entry), else a
    fresh random one (a run without a checkpoint cannot be resumed)."""
    import hashlib
    import secrets

    if checkpoint_dir is None:
        return secrets.token_hex(32)
    return hashlib.sha256(str(pathlib.Path(checkpoint_dir).resolve()).encode()).hexdigest()


def data_digest(x: Any, y: Any) -> str:
    """SHA-256 of a party's training records as read (features, labels, their shapes and dtypes)."""
    import hashlib

    import numpy as np

    h = hashlib.sha256()
    for array in (np.ascontiguousarray(x), np.ascontiguousarray(y)):
        h.update(f"{array.dtype.str}{array.shape}".encode())
        h.update(array.tobytes())
    return h.hexdigest()


def check_budget(digest: str, *, file: str, fresh_budget: bool, resuming: str | None) -> None:
    """Refuse a run over records that earlier runs already spent budget on, unless ``fresh_budget`` (the user
    asks to spend more) — except the run being resumed (``resuming``: its :func:`run_key`), not counted again.

    Raises:
        ConfigError: budget already spent, naming the file, what was spent and how to go on; it carries a
            ``budget`` refusal (:mod:`mpcdp.refusals`) for the other processes.
    """
    from mpcdp.refusals import refusing

    before = spent(digest, except_run=resuming)
    if before.runs and not fresh_budget:
        raise refusing(ConfigError(
            f"file {file!r} already spent {before.describe()}. Resume that run from its checkpoint folder "
            f"(`--resume DIR`), or give `--fresh-budget` (mpcdp.train(fresh_budget=True)) to spend more: the total "
            f"by basic composition is then ε = {before.epsilon:.4g} plus this run's"), "budget", file,
            f"ε = {before.epsilon:.4g}")
