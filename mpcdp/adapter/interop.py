"""CrypTen's ``MPCTensor`` made from, and read back into, this party's raw ring share — the adapter side of
:mod:`mpcdp.mpc.crypten_interop` (which works on mpcdp's ``Shared`` values).

Both sides are additive shares over Z_2^64 held by the same data parties with a fixed-point scale 2^bits;
while a run is joined, CrypTen's communicator is mpcdp's links (:mod:`.communicator`) and its correlated
randomness comes from the run's dealer. Cost: 0 rounds, 0 bytes, no opening — except turning a
binary-shared tensor into an arithmetic one, which is CrypTen's conversion protocol (rounds, no opening).
"""

from __future__ import annotations

import torch

from mpcdp.adapter import communicator
from mpcdp.adapter.compat import crypten


def mpc_tensor(share: torch.Tensor, precision_bits: int):
    """A CrypTen ``MPCTensor`` (arithmetic sharing) whose share on this party is ``share``.

    Raises:
        RuntimeError: no mpcdp run is joined in this process.
    """
    communicator.current()
    return crypten.mpc.MPCTensor.from_shares(share.clone(), precision=precision_bits)


def is_mpc_tensor(value) -> bool:
    return isinstance(value, crypten.mpc.MPCTensor)


def share_and_precision(tensor) -> tuple[torch.Tensor, int]:
    """This party's int64 share of ``tensor`` (arithmetic sharing; a binary-shared tensor is converted first)
    and its fractional bits.

    Raises:
        RuntimeError: no mpcdp run is joined in this process.
    """
    communicator.current()
    if tensor.ptype != crypten.mpc.arithmetic:
        tensor = tensor.to(crypten.mpc.arithmetic)
    return tensor.share.to(torch.int64).clone(), int(tensor.encoder._precision_bits)
