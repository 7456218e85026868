"""Element-wise product of two shared tensors (Beaver's protocol with the run's provider).

Security model: semi-honest parties; correlated randomness from the dealer (default) — the opened values
ε = x − a and δ = y − b are uniformly random to every party because no data party knows the dealer's
a, b. Under the insecure ``tfp`` provider party 0 generates a and b and learns x and y from ε and δ.

Steps: 1. get shares of a triple (a, b, c = a·b) from the provider; 2. open ε and δ together; 3. each
party computes its share of c + ε·b + δ·a (+ ε·δ at one party); 4. truncate by 2^bits.
Declared cost: 1 opening of 2n ring elements over mpcdp's links (CrypTen's all-reduce,
:mod:`mpcdp.adapter.communicator`: 1 round for 2 parties, 2 otherwise), + CrypTen's truncation: local for 2
parties, a dealer `wrap_rng` and a gather of n elements at party 0 (1 round) for more; dealer: n triples.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mpcdp import adapter
from mpcdp.transport import costs
from mpcdp.mpc.context import MpcContext
from mpcdp.mpc.shared import Shared, share_of


def multiply(ctx: MpcContext, x: Shared, y: Shared) -> Shared:
    from mpcdp import adapter

    if x.shape != y.shape:
        raise ValueError(f"`x` and `y` must have the same shape. Found {tuple(x.shape)} and {tuple(y.shape)}.")
    ctx.note_step("multiply")
    with ctx.wire, costs.section() as ledger:
        product = adapter.beaver_multiply(share_of(x), share_of(y), ctx.config.precision_bits)
    ctx.rounds += ledger.rounds
    return Shared(product, ctx.config.precision_bits)
