"""A party's refusal of its own input, as every other process of the run learns it.

A party that refuses its own data (a NaN, a column that is not numeric, an empty file, a held-out file of
another schema, labels outside the model's classes, records the model cannot take) does so before it joins
the run's links (:mod:`mpcdp.runtime.party`). It then writes a :class:`Refusal` as its report in the
rendezvous store (:mod:`.store_values`, ``mpcdp/report/<rank>``) and leaves; every other process, the dealer
included, reads it there and stops with the same line: "party 1 refused its data: file 'B.csv' column 'age'
is not numeric".

A refusal carries the reason's category (one of :data:`CATEGORIES`, each a fixed sentence), the file's name
(its last path component, not the folder it lies in) and the field (a column name, or a record shape): the
public schema the parties agree on anyway (:mod:`mpcdp.mpc.data_agreement`), never a value of a record, a
label or a count of affected records.

Security model: the store is hostile input. A refusal is at most :data:`MAX_NAME_BYTES` of UTF-8 per name,
printable characters only, no quotes or backslashes (so it cannot forge the line's structure, a terminal
escape or a bidirectional override), a category from the fixed list and a position below
:data:`MAX_POSITION`; the store's server checks it when it is written and every reader again
(:func:`parse_refusal`). The writer cuts and replaces what does not fit (:func:`public_name`). A process
can still refuse in another's name only where the store is plain (no credentials), as with any report.
Cost: one store write of at most 256 bytes by the refusing party; one read by each other process.
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Any

CATEGORIES = {
    "missing-file": "file {file} does not exist",
    "format": "file {file} is not of a format mpcdp reads",
    "unreadable": "file {file} cannot be read",
    "empty": "file {file} holds no records",
    "missing-column": "file {file} has no column {field}",
    "not-numeric": "file {file} column {field} is not numeric",
    "non-finite": "file {file} column {field} has NaN or Inf values",
    "labels": "file {file} column {field} has labels outside the model's classes",
    "schema": "held-out file {file} has another schema than the training file (first at column {field}{at})",
    "shape": "held-out file {file} has another record shape than the training file ({field})",
    "model-input": "the model cannot take the records of file {file} (record shape {field})",
    "budget": "file {file} already spent privacy budget {field} in earlier runs (resume that run from its "
              "checkpoint folder, or give --fresh-budget to spend more)",
    "model-classes": "the model cannot train with {field} (forward, loss and one backward pass on a record of "
                     "zeros failed before any noise; give it one output per class, or a loss that takes its output)",
    "error": "it stopped before joining the run (its own output says why)",
}
PLACE = {  # a process's place in the run refused at the rendezvous (mpcdp.transport.claims): no party's data
    "world-size": "the processes were started with different WORLD_SIZE ({field}): give every process the same "
                  "number of data parties",
    "dealer": "the processes count the run's processes differently ({field}): the dealer is on for one and off for "
              "another; give every process the same `provider`",
    "rank-taken": "two processes were started with RANK {rank}: give each process its own (0..WORLD_SIZE-1 the "
                  "data parties, WORLD_SIZE the dealer)",
    "rank-beyond": "a process was started with RANK {position}, beyond WORLD_SIZE {field} (0..WORLD_SIZE-1 the "
                   "data parties, WORLD_SIZE the dealer)",
}
CATEGORIES.update(PLACE)
MAX_NAME_BYTES = 60
MAX_POSITION = 1 << 31
FIELDS = {"refused", "file", "field", "position"}
_FORBIDDEN = "'\"\\`"


@dataclasses.dataclass(frozen=True)
class Refusal:
    """Why a party refused its own input: the reason's ``category`` (:data:`CATEGORIES`), the ``file`` and the
    ``field`` (column name or record shape; "" where none applies) and the field's ``position`` (1-based,
    for a schema; None elsewhere)."""

    category: str
    file: str = ""
    field: str = ""
    position: int | None = None

    def text(self, rank: int) -> str:
        """The line every process says: "party 1 refused its data: file 'B.csv' column 'age' is not numeric"
        (``rank``: the writer's); for a place refused at the rendezvous (:data:`PLACE`), "refused at the
        rendezvous: two processes were started with RANK 1: ..."."""
        if self.category in PLACE:  # rank: the refusal's writer, or the rank its `field` names (a relayed one)
            rank = int(self.field) if self.category == "rank-taken" and self.field.isdigit() else rank
            return "refused at the rendezvous: " + PLACE[self.category].format(rank=rank, field=self.field,
                                                                               position=self.position)
        at = f", position {self.position}" if self.position is not None else ""
        reason = CATEGORIES[self.category].format(file=f"'{self.file}'", field=f"'{self.field}'", at=at)
        return f"party {rank} refused its data: {reason}"

    def value(self) -> dict[str, Any]:
        """The report's JSON object (see :func:`parse_refusal`)."""
        return {"refused": self.category, "file": self.file, "field": self.field, "position": self.position}


def public_name(text: Any, *, file: bool = False) -> str:
    """``text`` (a column name, a file's path) as a refusal may carry it: a file by its last path component;
    characters that are not printable, and quotes and backslashes, as ``?``; cut to :data:`MAX_NAME_BYTES`
    of UTF-8 (ending in ``…`` when cut)."""
    text = str(text)
    if file:
        text = pathlib.PurePath(text).name or text
    text = "".join(ch if ch.isprintable() and ch not in _FORBIDDEN else "?" for ch in text)
    if len(text.encode("utf-8")) <= MAX_NAME_BYTES:
        return text
    while len((text + "…").encode("utf-8")) > MAX_NAME_BYTES:
        text = text[:-1]
    return text + "…"


def refusal_of(category: str, file: Any = "", field: Any = "", position: int | None = None) -> Refusal:
    """A :class:`Refusal` whose names are made public (:func:`public_name`).

    Raises:
        ValueError: ``category`` is not one of :data:`CATEGORIES` (a bug, not an input).
    """
    if category not in CATEGORIES:
        raise ValueError(f"refusal category {category!r} is not one of {sorted(CATEGORIES)}")
    return Refusal(category, public_name(file, file=True), public_name(field), position)


def parse_refusal(value: Any) -> Refusal:
    """A refusal read from the store (hostile): ``{"refused", "file", "field", "position"}`` exactly.

    Raises:
        ValueError: any other object, a category not in :data:`CATEGORIES`, a name that is not a public name
            (:func:`public_name` would change it) or a position that is not null or a count.
    """
    if not isinstance(value, dict) or set(value) != FIELDS:
        raise ValueError("a refusal is not {'refused', 'file', 'field', 'position'}")
    category, position = value["refused"], value["position"]
    if not isinstance(category, str) or category not in CATEGORIES:
        raise ValueError("a refusal of an unknown category")
    for key in ("file", "field"):
        name = value[key]
        if not isinstance(name, str) or public_name(name) != name or (key == "file" and "/" in name):
            raise ValueError(f"a refusal whose `{key}` is not a public name")
    if position is not None and (isinstance(position, bool) or not isinstance(position, int)
                                 or not 0 < position < MAX_POSITION):
        raise ValueError("a refusal whose `position` is not a count")
    return Refusal(category, value["file"], value["field"], position)


def refusing(error: BaseException, category: str, file: Any = "", field: Any = "",
             position: int | None = None) -> BaseException:
    """``error`` (a local refusal of this party's input) with the :class:`Refusal` the others will be told
    as its ``refusal``; the error itself, whatever it says here, stays on this party."""
    setattr(error, "refusal", refusal_of(category, file, field, position))  # any exception type; read with getattr
    return error
