"""mpcdp's :class:`~mpcdp.mpc.shared.Shared` values and CrypTen's ``MPCTensor``, converted without opening.

Both are additive shares over the ring Z_2^64 held by the same data parties, scaled by 2^bits: a conversion
re-labels this party's own share and keeps the scale, so secure sums, noise and releases computed by mpcdp
can feed CrypTen's protocols (comparisons, multiplications, activations) and come back, with nothing
revealed in between. Every data party calls the conversion on its own share, in the same order.

Cost: 0 rounds, 0 bytes, no opening (a binary-shared CrypTen tensor is first turned arithmetic by CrypTen's
protocol: rounds, no opening). Security model: the run's — semi-honest parties, a dealer that colludes with
no party; what CrypTen does with the tensor afterwards opens what its protocols open (masked values only),
and its traffic is in the run's byte and round counters; ``ctx.openings`` lists mpcdp's openings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mpcdp.adapter import interop
from mpcdp.mpc.shared import Shared, share_of


def to_crypten(x: Shared):
    """This party's share of ``x`` as a CrypTen ``MPCTensor`` with ``x.precision_bits`` fractional bits.

    Raises:
        TypeError: ``x`` is not a Shared value.
        RuntimeError: no mpcdp run is joined in this process.
    """
    from mpcdp.adapter import interop

    if not isinstance(x, Shared):
        raise TypeError(f"`x` must be an mpcdp Shared value. Found {type(x).__name__}.")
    return interop.mpc_tensor(share_of(x), x.precision_bits)


def from_crypten(tensor) -> Shared:
    """This party's share of a CrypTen ``MPCTensor`` as a :class:`Shared` value (its precision kept).

    Raises:
        TypeError: ``tensor`` is not an ``MPCTensor``.
        RuntimeError: no mpcdp run is joined in this process.
    """
    from mpcdp.adapter import interop

    if not interop.is_mpc_tensor(tensor):
        raise TypeError(f"`tensor` must be a crypten MPCTensor. Found {type(tensor).__name__}.")
    share, bits = interop.share_and_precision(tensor)
    return Shared(share, bits)
