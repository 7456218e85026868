"""Pairwise zero-sum masks: inputting a value into the MPC costs no communication.

Security model: semi-honest parties, private authenticated links. Every pair of data parties (i, j), i < j,
shares a 256-bit seed drawn by party i from the OS CSPRNG (:mod:`secrets`) and sent to j once per run
(1 round, 32 bytes per pair). The mask stream of a pair for one use is SHAKE-256(seed ‖ nonce), read as
int64 ring elements; party i adds it and party j subtracts it, so the masks of all parties sum to 0 in
Z_2^64. A party's masked input s_j = x_j + Σ_k ±PRG(seed_jk, nonce) is uniformly random to any coalition
that misses one of j's pair seeds, i.e. to every coalition that does not contain *all* other parties —
the property of Bonawitz et al. (CCS 2017) pairwise masking, and stronger than CrypTen's ring-neighbour
zero sharing, where two parties that are both neighbours of j know j's mask.

Cost: establishing seeds — 1 round, m(m−1)/2 messages of 32 bytes; each zero sharing — 0 bytes,
(m−1)·numel·8 bytes of SHAKE-256 output computed locally.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Callable

import numpy as np
import torch

from mpcdp.mpc.plants import planting

SEED_BYTES = 32
_UNMASKED: set[int] = set()  # the view audit's planted leak in force in this process (never in a run)


def _stream(seed: bytes, nonce: int, numel: int) -> torch.Tensor:
    xof = hashlib.shake_256(seed + nonce.to_bytes(8, "little") + b"mpcdp/zero-share")
    raw = np.frombuffer(xof.digest(8 * numel), dtype="<i8")
    return torch.from_numpy(raw.astype(np.int64, copy=True))


class PairwiseMasks:
    """This party's pair seeds and the zero sharings derived from them."""

    def __init__(self, rank: int, parties: int, seeds: dict[int, bytes]):
        expected = set(range(parties)) - {rank}
        if set(seeds) != expected:
            raise ValueError(f"party {rank} needs a seed with each of {sorted(expected)}; has {sorted(seeds)}")
        self.rank = rank
        self.parties = parties
        self._seeds = dict(seeds)
        self._nonce = 0

    @classmethod
    def establish(cls, rank: int, parties: int,
                  exchange: Callable[[dict[int, torch.Tensor], dict[int, torch.Tensor]], None]) -> "PairwiseMasks":
        """Agree on pair seeds: the lower rank of each pair draws the seed and sends it (1 round)."""
        words = SEED_BYTES // 8
        own = {j: secrets.token_bytes(SEED_BYTES) for j in range(rank + 1, parties)}
        outgoing = {j: torch.from_numpy(np.frombuffer(seed, dtype="<i8").astype(np.int64)) for j, seed in own.items()}
        incoming = {j: torch.zeros(words, dtype=torch.int64) for j in range(rank)}
        exchange(outgoing, incoming)
        seeds = dict(own)
        seeds.update({j: t.numpy().astype("<i8").tobytes() for j, t in incoming.items()})
        return cls(rank, parties, seeds)

    def zero_share(self, shape: torch.Size | tuple[int, ...]) -> torch.Tensor:
        """This party's share of a fresh sharing of zero (all parties must call in the same order)."""
        numel = int(np.prod(shape)) if len(shape) else 1
        nonce = self._nonce
        self._nonce += 1
        total = torch.zeros(numel, dtype=torch.int64)
        for j, seed in self._seeds.items():
            if _UNMASKED and (self.rank in _UNMASKED or j in _UNMASKED):
                continue  # the planted leak: this pair's mask dropped on both ends (the sum is still 0)
            stream = _stream(seed, nonce, numel)
            if self.rank < j:
                total += stream
            else:
                total -= stream
        return total.reshape(shape)


def planted_unmasked(party: int):
    """Within the block, in this process, every zero sharing leaves out the pairs of ``party``: its share is
    no longer masked (the others' masks still cancel, so every sum is unchanged). **A planted leak**: a
    party's masked input is then its input (plus its noise share) in the clear to whoever receives it. Only
    the view audit (``mpcdp audit views --plant-leak release``, :mod:`mpcdp.jobs.views`) uses it, on every
    party at once, to show that it detects such a share; a run never does."""
    return planting(_UNMASKED, party)
