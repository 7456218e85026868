"""mpcdp's :class:`~mpcdp.mpc.shared.Shared` values and CrypTen's ``MPCTensor``, converted without opening.

Both are additive shares over the ring Z_2^64 held by the same data parties, scaled by 2^bits (fixed point):
while a run is joined, CrypTen's communicator is mpcdp's links (:mod:`.communicator`) and its correlated
randomness comes from the run's dealer. A conversion re-labels this party's own share and keeps the scale,
so secure sums, noise and releases computed by mpcdp can feed CrypTen's protocols (comparisons,
multiplications, activations) and come back, with nothing revealed in between.

Cost: 0 rounds, 0 bytes, no opening (every party calls the conversion on its own share, in the same order).
Security model: the run's — semi-honest parties, a dealer that colludes with no party. What CrypTen does
with the tensor afterwards opens what its protocols open (masked values only); mpcdp's audit record
(``ctx.openings``) lists mpcdp's openings, CrypTen's traffic is in the run's byte and round counters.
"""

from __future__ import annotations

import torch

from mpcdp.adapter import communicator
from mpcdp.adapter.compat import crypten
from mpcdp.mpc.shared import Shared, share_of

_MPCTensor = crypten.mpc.MPCTensor


def to_crypten(x: Shared) -> "crypten.mpc.MPCTensor":
    """This party's share of ``x`` as a CrypTen ``MPCTensor`` (arithmetic sharing, ``x.precision_bits``
    fractional bits). Every data party must call it, on its share of the same value.

    Raises:
        RuntimeError: no mpcdp run is joined in this process.
        TypeError: ``x`` is not a Shared value.
    """
    communicator.current()
    if not isinstance(x, Shared):
        raise TypeError(f"`x` must be an mpcdp Shared value. Found {type(x).__name__}.")
    return _MPCTensor.from_shares(share_of(x).clone(), precision=x.precision_bits)


def from_crypten(tensor: "crypten.mpc.MPCTensor") -> Shared:
    """This party's share of a CrypTen ``MPCTensor`` as an mpcdp :class:`Shared` (its precision kept).
    A binary-shared tensor (after a comparison, say) is converted to arithmetic sharing first, by CrypTen's
    protocol (which costs rounds, and opens nothing).

    Raises:
        RuntimeError: no mpcdp run is joined in this process.
        TypeError: ``tensor`` is not an ``MPCTensor``.
    """
    communicator.current()
    if not isinstance(tensor, _MPCTensor):
        raise TypeError(f"`tensor` must be a crypten MPCTensor. Found {type(tensor).__name__}.")
    if tensor.ptype != crypten.mpc.arithmetic:
        tensor = tensor.to(crypten.mpc.arithmetic)
    bits = tensor.encoder._precision_bits
    return Shared(tensor.share.to(torch.int64).clone(), bits)
