"""The parties agree in public on what their data is before any share moves.

Every party sends its :meth:`~mpcdp.data.party_file.PartyData.description` (schema hash, record shape,
label set, record count) to every other party — one round of public metadata, recorded in the run's audit
record — and every party checks the same things on the same list, so a mismatch is refused on every party
with the same message, naming the party and the field. Cost: 1 round, (m − 1) JSON messages of ~200 bytes.
"""

from __future__ import annotations

from mpcdp.errors import ConfigMismatchError, InputError
from mpcdp.mpc.context import MpcContext, describe_mismatch

AGREED = ("schema_sha256", "record_shape", "labels")


def agree_on_data(ctx: MpcContext, description: dict) -> list[int]:
    """Check that every party's data has this party's schema, record shape and label set; return every
    party's record count n_j in rank order.

    Raises:
        ConfigMismatchError: the parties' schemas, record shapes or label sets differ (naming the fields and
            the first party that differs from party 0).
        InputError: a party holds no records (naming it).
    """
    everyone = ctx.exchange_public(description, label="data agreement: schema, record shape, labels, counts")
    text, odd = describe_mismatch([{key: d.get(key) for key in AGREED} for d in everyone])
    if text:
        raise ConfigMismatchError(f"the parties' data differ (party {odd} first): {text}", party=odd)
    sizes = [d.get("records") for d in everyone]
    for rank, n in enumerate(sizes):
        if not isinstance(n, int) or n < 1:
            raise InputError(f"party {rank} holds no records (`records` = {n!r})", party=rank)
    return sizes
