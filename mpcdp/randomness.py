"""Where mpcdp's randomness comes from: the OS CSPRNG, or a seed only when a run asks to be reproducible.

Every random choice on a secret path is keyed by :func:`secrets.token_bytes` (the OS CSPRNG):

* pairwise zero-sum masks — SHAKE-256 streams under 256-bit pair seeds (:mod:`mpcdp.mpc.masks`);
* the dealer's correlated randomness and CrypTen's own pseudo-random zero sharings — :class:`KeyedStream`
  under 256-bit keys, replacing CrypTen's Mersenne-Twister generators (installed by
  :mod:`mpcdp.backends.crypten_backend`);
* each party's random bits for the in-MPC sampler and the distributed-noise mode (:mod:`mpcdp.noise`);
* each party's mini-batch sampling in secure training (:func:`batch_key`), each owner's Laplace noise in
  paper 003's collaboration and each node's noise in paper 004's node processes.

A :class:`KeyedStream` is SHAKE-256(key ‖ block index) read as one byte stream, so two holders of a key draw
the same words whatever sizes they request them in, and nobody without the key can tell them from uniform
(SHAKE-256 as a PRF, 256-bit keys).

Reproducibility is explicit: ``[mpc] reproducible = true`` (``MpcConfig.reproducible``) makes secure training
draw its mini-batches from the protocol's seed — needed to compare a secure run with a simulated one batch for
batch — and :func:`warn_reproducible` says so on stderr. Masks, dealer randomness and in-MPC noise are never
seeded by it: they do not change what is released beyond fixed-point rounding.
"""

from __future__ import annotations

import hashlib
import secrets
import sys

import numpy as np
import torch

KEY_BYTES = 32
_BLOCK = 1 << 16


def secure_key() -> bytes:
    """A fresh 256-bit key from the OS CSPRNG."""
    return secrets.token_bytes(KEY_BYTES)


class KeyedStream:
    """Uniform 64-bit words from SHAKE-256(key ‖ block) read as one stream (consumption-order determined)."""

    def __init__(self, key: bytes, domain: bytes = b"mpcdp/keyed-stream"):
        if len(key) < 16:
            raise ValueError(f"`key` must have at least 16 bytes. Found {len(key)}.")
        self._key = bytes(key)
        self._domain = domain
        self._block = 0
        self._buffer = b""
        self.words_drawn = 0

    def _blocks(self, count: int) -> bytes:
        out = []
        for _ in range(count):
            xof = hashlib.shake_256(self._domain + b"|" + self._key + self._block.to_bytes(8, "little"))
            out.append(xof.digest(_BLOCK))
            self._block += 1
        return b"".join(out)

    def read(self, nbytes: int) -> bytes:
        if nbytes > len(self._buffer):
            missing = nbytes - len(self._buffer)
            self._buffer += self._blocks(-(-missing // _BLOCK))
        out, self._buffer = self._buffer[:nbytes], self._buffer[nbytes:]
        return out

    def words(self, n: int) -> torch.Tensor:
        """n uniform int64 words (the whole ring Z_2^64, as two's complement)."""
        self.words_drawn += int(n)
        raw = np.frombuffer(self.read(8 * int(n)), dtype="<i8").astype(np.int64)
        return torch.from_numpy(raw)

    def uniform(self, n: int) -> torch.Tensor:
        """n float64 values uniform on [0, 1), 53 random bits each."""
        return ((self.words(n) >> 11) & ((1 << 53) - 1)).to(torch.float64) * 2.0**-53

    def bits(self, n: int, bitlength: int) -> torch.Tensor:
        """n uniform integers in [0, 2^bitlength) (bitlength < 64), one word each."""
        if not 1 <= bitlength < 64:
            raise ValueError(f"`bitlength` must be in [1, 63]. Found {bitlength}.")
        return self.words(n) & ((1 << bitlength) - 1)


def batch_key() -> int:
    """A 128-bit key for a party's mini-batch generator in secure training (unpredictable to the others)."""
    return secrets.randbits(128)


def warn_reproducible(what: str) -> None:
    """Say, once per call site, that a run uses seeded (predictable) randomness."""
    print(f"mpcdp: WARNING: reproducible mode: {what} come from the protocol's seed and are predictable — "
          f"for experiments that compare runs, not for real data.", file=sys.stderr)
