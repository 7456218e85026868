"""Where mpcdp's randomness comes from: the OS CSPRNG, or a seed only when a run asks to be reproducible.

Every random choice on a secret path is keyed by :func:`secrets.token_bytes` (the OS CSPRNG):

* pairwise zero-sum masks — SHAKE-256 streams under 256-bit pair seeds (:mod:`mpcdp.mpc.masks`);
* the dealer's correlated randomness and CrypTen's own pseudo-random zero sharings — :class:`KeyedStream`
  under 256-bit keys, replacing CrypTen's Mersenne-Twister generators (installed by
  :mod:`mpcdp.adapter`);
* each party's random bits for the in-MPC sampler and the distributed-noise mode (:mod:`mpcdp.noise`);
* each party's mini-batches in secure training — a :class:`KeyedStream` under the party's secret
  :func:`batch_key`, read by :func:`sample_without_replacement` (:func:`batch_source`) — each owner's Laplace
  noise in paper 003's collaboration, and each node's batch order (:func:`permutation`) and noise in paper 004's
  node processes.

Mini-batches: every step draws a fresh, uniform, fixed-size batch without replacement (the scheme the
certificates account for) by a partial Fisher–Yates shuffle whose indices are rejection-sampled from 64-bit
keystream words, so each ordered batch of distinct indices has probability exactly (n − b)!/n!.

A :class:`KeyedStream` is the ChaCha20 keystream under a 256-bit key, read as one byte stream, so two holders
of a key draw the same words whatever sizes they request them in, and nobody without the key can tell them
from uniform.

Reproducibility is explicit: ``[mpc] reproducible = true`` (``MpcConfig.reproducible``) makes secure training
draw its mini-batches from the protocol's seed with NumPy's generator, exactly as the simulated backend does —
needed to compare a secure run with a simulated one batch for batch — and :func:`warn_reproducible` says so on
stderr. A seeded batch is public to anyone who knows the seed, so such a run's certificate claims no
amplification by subsampling (:mod:`mpcdp.learning.noise_modes`). Masks, dealer randomness and in-MPC noise are never
seeded by it: they do not change what is released beyond fixed-point rounding.
"""

from __future__ import annotations

import hashlib
import secrets
import sys

import numpy as np
import torch
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

KEY_BYTES = 32
_ZEROS = bytes(1 << 18)  # plaintext for keystream reads, a block at a time


def secure_key() -> bytes:
    """A fresh 256-bit key from the OS CSPRNG."""
    return secrets.token_bytes(KEY_BYTES)


def word_source(source):
    """``n -> n uniform int64 words in [0, 2^63)`` from a :class:`KeyedStream` (a CSPRNG), a NumPy generator or a
    torch generator (both seeded: reproducible and predictable, for tests and seeded experiments)."""
    if isinstance(source, KeyedStream):
        return lambda n: source.words(n).numpy() & np.int64(2**63 - 1)
    if isinstance(source, np.random.Generator):
        return lambda n: source.integers(0, 2**63 - 1, size=n, dtype=np.int64, endpoint=True)
    if isinstance(source, torch.Generator):
        return lambda n: (torch.randint(0, 2**62, (n,), generator=source, dtype=torch.int64) * 2
                          + torch.randint(0, 2, (n,), generator=source, dtype=torch.int64)).numpy()
    raise TypeError(f"no word source for {type(source).__name__}")


class KeyedStream:
    """Uniform 64-bit words from the ChaCha20 keystream under SHAKE-256(domain ‖ key): one stream, so two holders
    of a key draw the same words whatever sizes they request them in (consumption-order determined).

    ChaCha20 (RFC 8439, via ``cryptography``/OpenSSL) is a stream cipher whose keystream is indistinguishable
    from uniform without the key; it also runs faster here than the Mersenne Twister it replaces.
    """

    def __init__(self, key: bytes, domain: bytes = b"mpcdp/keyed-stream"):
        if len(key) < 16:
            raise ValueError(f"`key` must have at least 16 bytes. Found {len(key)}.")
        derived = hashlib.shake_256(domain + b"|" + bytes(key)).digest(32)
        self._cipher = Cipher(algorithms.ChaCha20(derived, bytes(16)), mode=None).encryptor()
        self.words_drawn = 0

    def read(self, nbytes: int) -> bytes:
        """The next ``nbytes`` bytes of the keystream."""
        return self._cipher.update(bytes(nbytes))

    def words(self, n: int) -> torch.Tensor:
        """n uniform int64 words (the whole ring Z_2^64, as two's complement): the next 8n keystream bytes, read
        little-endian, encrypted straight into the result's memory on a little-endian host."""
        self.words_drawn += int(n)
        if sys.byteorder != "little":
            return torch.from_numpy(np.frombuffer(self.read(8 * int(n)), dtype="<i8").astype(np.int64))
        out = torch.empty(int(n), dtype=torch.int64)
        memory = out.numpy().data.cast("B")
        for start in range(0, len(memory), len(_ZEROS)):
            piece = memory[start:start + len(_ZEROS)]
            self._cipher.update_into(_ZEROS[:len(piece)], piece)
        return out

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


def _uniform_indices(stream: KeyedStream, bounds: list[int]) -> list[int]:
    """One uniform integer in [0, k) per bound k (1 <= k < 2^64): a 64-bit word w, rejected while
    w >= 2^64 − (2^64 mod k) (a fresh word each time), then w mod k — exactly uniform."""
    words = np.frombuffer(stream.read(8 * len(bounds)), dtype="<u8").tolist()
    out = []
    for word, bound in zip(words, bounds):
        limit = (1 << 64) - ((1 << 64) % bound)
        while word >= limit:
            word = int.from_bytes(stream.read(8), "little")
        out.append(word % bound)
    return out


def _partial_shuffle(stream: KeyedStream, n: int, size: int) -> np.ndarray:
    """The first ``size`` entries of a Fisher–Yates shuffle of 0..n−1 (positions moved kept in a dict: O(size))."""
    moved: dict[int, int] = {}
    out = np.empty(size, dtype=np.int64)
    for i, offset in enumerate(_uniform_indices(stream, [n - i for i in range(size)])):
        j = i + offset
        out[i] = moved.get(j, j)
        moved[j] = moved.get(i, i)
    return out


def sample_without_replacement(source, n: int, size: int) -> np.ndarray:
    """``size`` distinct indices of 0..n−1, uniform over ordered samples: from a :class:`KeyedStream` (secure
    training) by a partial Fisher–Yates shuffle, or from a seeded NumPy generator (``choice(n, size,
    replace=False)``: reproducible runs and the simulated backend)."""
    if not (isinstance(n, int) and isinstance(size, int) and 0 <= size <= n):
        raise ValueError(f"`size` must be an integer in [0, n = {n}]. Found {size!r}.")
    if isinstance(source, KeyedStream):
        return _partial_shuffle(source, n, size)
    if isinstance(source, np.random.Generator):
        return source.choice(n, size=size, replace=False)
    raise TypeError(f"no batch sampler for {type(source).__name__}")


def permutation(source, n: int) -> np.ndarray:
    """A uniform permutation of 0..n−1 from a :class:`KeyedStream` or a seeded NumPy generator."""
    if isinstance(source, np.random.Generator):
        return source.permutation(n)
    return sample_without_replacement(source, n, n)


def batch_source(key: int | None, seed: int, party: int):
    """Where a party's mini-batches come from: a :class:`KeyedStream` under its secret ``key``
    (:func:`batch_key`; the stream domain names ``seed`` and ``party``, so the same key gives independent streams
    per use), or — ``key`` None, reproducible — NumPy's generator of (seed, party)."""
    if key is None:
        return np.random.default_rng([seed, party])
    return KeyedStream(int(key).to_bytes(16, "little"), b"mpcdp/batches|%d|%d" % (seed, party))


def warn_reproducible(what: str) -> None:
    """Say, once per call site, that a run uses seeded (predictable) randomness."""
    print(f"mpcdp: WARNING: reproducible mode: {what} come from the protocol's seed and are predictable — "
          f"for experiments that compare runs, not for real data.", file=sys.stderr)
