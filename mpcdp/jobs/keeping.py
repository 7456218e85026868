"""How a run is kept across failures: its checkpoint folder, how often it saves, whether it resumes.

One record for every launcher (``mpcdp train`` on a shipped dataset or on the parties' own files,
``mpcdp party``, ``mpcdp.train``), checked once: a resume names its folder, ``checkpoint_every`` is a
positive integer, a fresh run refuses a folder that already holds a run (it would mix two runs' states), and
``--checkpoint`` and ``--resume`` name the same folder. Nothing here reads or writes a checkpoint
(:mod:`mpcdp.learning.checkpoint` does); ``fresh_budget`` is the privacy ledger's consent
(:mod:`mpcdp.jobs.budget`), kept here because it travels with the same options.
"""

from __future__ import annotations

import dataclasses
import pathlib

from mpcdp.errors import ConfigError
from mpcdp.validation import check_integer


@dataclasses.dataclass(frozen=True)
class Keeping:
    """``checkpoint_dir`` (this party's checkpoints, on its own disk; None: none), ``every`` (releases
    between checkpoints; None: :meth:`every_of` a run's length), ``resume`` (continue the run saved there
    instead of starting one), ``fresh_budget`` (start a run over records that earlier runs already spent
    privacy budget on)."""

    checkpoint_dir: str | None = None
    every: int | None = None
    resume: bool = False
    fresh_budget: bool = False

    def __post_init__(self) -> None:
        if self.resume and not self.checkpoint_dir:
            raise ConfigError("`resume` continues a run from its checkpoint folder: give the folder.")
        if self.every is not None:
            check_integer(self.every, "checkpoint_every")
        if self.checkpoint_dir and not self.resume:
            folder = pathlib.Path(self.checkpoint_dir)
            if folder.exists() and any(folder.iterdir()):
                raise ConfigError(f"checkpoint directory {self.checkpoint_dir!r} is not empty: resume from it "
                                  f"(`--resume`) or choose a new one")

    @classmethod
    def from_flags(cls, checkpoint: str | None, resume: str | None, every: int | None = None,
                   fresh_budget: bool = False) -> "Keeping":
        """The command line's ``--checkpoint DIR`` / ``--resume DIR`` (the same folder if both are given)."""
        if resume and checkpoint and checkpoint != resume:
            raise ConfigError(f"`--checkpoint` {checkpoint!r} and `--resume` {resume!r} differ: a resumed run "
                              f"keeps saving into the directory it resumes from")
        return cls(resume or checkpoint, every, bool(resume), fresh_budget)

    def every_of(self, releases: int) -> int:
        """Releases between checkpoints for a run of ``releases``: as given, or a tenth of the run."""
        return self.every if self.every is not None else max(1, releases // 10)
