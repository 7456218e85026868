"""Per-process status that the harness reads without any message: the step each party is at, its label, and
its progress, in shared memory.

Parties update it at every communication step (a handful of memory stores, no system call), so a run of
thousands of steps costs the launcher nothing; the harness polls it for the progress bar and reads it when a
run fails or stalls, to say who is behind and where. Writes are not atomic across fields: the board is for
diagnostics and display, never for protocol decisions.
"""

from __future__ import annotations

_LABEL_BYTES = 96


class StatusBoard:
    """Step, step label and (done, total) progress for each of ``processes`` ranks."""

    def __init__(self, mp_context, processes: int):
        self._steps = mp_context.Array("q", processes, lock=False)
        self._progress = mp_context.Array("q", 2 * processes, lock=False)
        self._labels = mp_context.Array("c", _LABEL_BYTES * processes, lock=False)
        for rank in range(processes):
            self._steps[rank] = -1

    def note_step(self, rank: int, step: int, label: str) -> None:
        raw = label.encode("utf-8", "replace")[:_LABEL_BYTES]
        start = rank * _LABEL_BYTES
        self._labels[start:start + _LABEL_BYTES] = raw.ljust(_LABEL_BYTES, b"\0")
        self._steps[rank] = step

    def note_progress(self, rank: int, done: int, total: int) -> None:
        self._progress[2 * rank + 1] = total
        self._progress[2 * rank] = done

    def step(self, rank: int) -> tuple[int, str]:
        start = rank * _LABEL_BYTES
        label = bytes(self._labels[start:start + _LABEL_BYTES]).rstrip(b"\0").decode("utf-8", "replace")
        return int(self._steps[rank]), label or "starting"

    def progress(self, rank: int) -> tuple[int, int]:
        return int(self._progress[2 * rank]), int(self._progress[2 * rank + 1])
