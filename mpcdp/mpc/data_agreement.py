"""The parties agree in public on what their data is before any share moves.

Every party sends its :meth:`~mpcdp.data.party_file.PartyData.description` with the model's class count
(``{"schema_sha256", "record_shape", "classes", "records"}``, and the schema itself, ``names`` and
``dtypes``: the public schema the parties agree on) to every other party — one round of public metadata,
recorded in the run's audit record — and every party checks the same things on the same list, so a mismatch
is refused on every party with the same message, naming the party and the field. A schema mismatch names the
first column that differs, by position and name ("party 2's column 6 is 'hours' where party 0's is 'a5'":
a renamed or a reordered column alike); where a party sent no schema, only the hashes' first 12 hex digits.

No label value crosses: labels agree by the class count, each party having checked its own labels against
the model's classes first (:mod:`mpcdp.jobs.own_data`). A refusal shows counts, shapes, column names and
dtypes (quoted, escaped, cut) only, and a description that is not of this form (another mpcdp version, or a
deviating peer; a schema that is not the one its hash names) is refused naming the party and the field,
without echoing what it sent. Cost: 1 round, (m − 1) JSON messages of ~150 bytes plus the column names.
"""

from __future__ import annotations

import re
from typing import Any

from mpcdp.data.party_file import schema_difference, schema_sha256
from mpcdp.errors import ConfigMismatchError, InputError
from mpcdp.mpc.context import MpcContext

AGREED = ("schema_sha256", "record_shape", "classes")
FIELDS = (*AGREED, "records")
SCHEMA = ("names", "dtypes")  # sent together or not at all
MAX_COLUMNS = 1 << 22
MAX_NAME_CHARS = 1024
_SHA256 = re.compile(r"[0-9a-f]{64}")
_MAX_RANK = 8  # record shapes: at most this many axes


def agree_on_data(ctx: MpcContext, description: dict) -> list[int]:
    """Check that every party's data has this party's schema, record shape and class count; return every
    party's record count n_j in rank order.

    Raises:
        ConfigMismatchError: a party's description is malformed, or the parties' schemas, record shapes or
            class counts differ (naming the fields and the first party that differs from party 0).
        InputError: a party holds no records (naming it).
    """
    everyone = ctx.exchange_public(description, label="data agreement: schema, record shape, classes, counts")
    for rank, other in enumerate(everyone):
        problem = malformed(other)
        if problem:
            raise ConfigMismatchError(f"party {rank}'s data description {problem} (another mpcdp version?)",
                                      party=rank)
    text, odd = differences(everyone)
    if text:
        raise ConfigMismatchError(f"the parties' data differ (party {odd} first): {text}", party=odd)
    sizes = [d["records"] for d in everyone]
    for rank, n in enumerate(sizes):
        if n < 1:
            raise InputError(f"party {rank} holds no records (`records` = {n})", party=rank)
    return sizes


def malformed(description: Any) -> str | None:
    """What is wrong with a received description (naming the field, not its value), or None."""
    if not isinstance(description, dict):
        return "is not a JSON object"
    extra = sorted(str(key)[:40] for key in description if key not in (*FIELDS, *SCHEMA))[:5]
    missing = [field for field in FIELDS if field not in description]
    if not extra and not missing and sum(field in description for field in SCHEMA) == 1:
        missing = [field for field in SCHEMA if field not in description]
    if extra or missing:
        return (f"has the fields {extra} that are not agreed" if extra else "") + \
            (" and " if extra and missing else "") + (f"lacks the fields {missing}" if missing else "")
    checks = {
        "schema_sha256": lambda v: isinstance(v, str) and _SHA256.fullmatch(v) is not None,
        "record_shape": lambda v: isinstance(v, list) and len(v) <= _MAX_RANK and all(_count(n) for n in v),
        "classes": lambda v: _count(v) and v >= 2,
        "records": _count,
    }
    for field, check in checks.items():
        if not check(description[field]):
            return f"has a malformed `{field}`"
    return _malformed_schema(description) if "names" in description else None


def _malformed_schema(description: dict) -> str | None:
    """What is wrong with a description's ``names`` and ``dtypes`` (bounded lists of strings, one per feature,
    whose hash is its ``schema_sha256``), or None."""
    width = 1
    for n in description["record_shape"]:
        width *= n
    for field in SCHEMA:
        value = description[field]
        if not (isinstance(value, list) and len(value) == width <= MAX_COLUMNS
                and all(isinstance(v, str) and len(v) <= MAX_NAME_CHARS for v in value)):
            return f"has a malformed `{field}`"
    if schema_sha256(description["names"], description["dtypes"], description["record_shape"]) \
            != description["schema_sha256"]:
        return "has a `schema_sha256` that is not its schema's"
    return None


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 62


def _shown(field: str, value: Any) -> str:
    """How a refusal shows an agreed field: a hash by its first 12 hex digits, counts and shapes as they are."""
    return f"{value[:12]}…" if field == "schema_sha256" else repr(value)


def differences(everyone: list[dict]) -> tuple[str, int]:
    """The agreed fields on which parties differ from party 0 (each party's value shown as :func:`_shown`), and
    the first party that differs."""
    lines, first = [], None
    for field in AGREED:
        values = [d[field] for d in everyone]
        odd = [rank for rank, v in enumerate(values) if v != values[0]]
        if odd:
            first = odd[0] if first is None else min(first, odd[0])
            readable = _schema_differences(everyone, odd) if field == "schema_sha256" else None
            lines.append(readable or f"`{field}`: " + ", ".join(f"party {r} = {_shown(field, v)}"
                                                                for r, v in enumerate(values)))
    return "; ".join(lines), (first if first is not None else 0)


def _schema_differences(everyone: list[dict], odd: list[int]) -> str | None:
    """The first column at which each party in ``odd`` differs from party 0's schema, where every party sent
    its schema (None: one did not, or the columns agree and only the record shape differs)."""
    if not all("names" in d for d in everyone):
        return None
    ours = everyone[0]
    found = [schema_difference(ours["names"], ours["dtypes"], everyone[r]["names"], everyone[r]["dtypes"],
                               this="party 0", other=f"party {r}") for r in odd]
    if any(d is None for d in found):
        return None
    return "the schema: " + "; ".join(d[2] for d in found if d is not None)
