"""The masks of :class:`mpcdp.adapter.material.ChunkOneHots`, by the dealer and by the three generators; and the
generators' rotation pairs (:class:`~mpcdp.adapter.material.OneHotPairs`, :func:`generated_pairs`).

A mask is a uniform ring element r, additively shared, with the one-hot of each 4-bit chunk r_i of r that covers
its low ``bits`` bits (:func:`chunk_windows`) in a 16-bit lane, four chunks to a word, XOR-shared. The dealer
draws r and computes the one-hots (:func:`served`). The generators (:mod:`.replicated`) make r chunk by chunk
from their components (:func:`generated`): with A, B, D the replicated words of components 1, 2 and 0,
ρ_i = (a_i + b_i + d_i) mod 16 and r = ρ + 2^(4q)·h (q chunks, h a replicated ring element), so
ρ = A + B + D − 16·Σ_i 16^i·(w'_i + w''_i) with the wraps out of each chunk: w'_i = [a_i + b_i >= 16], known
to generator 1 (it holds A and B), and w''_i = [s_i + d_i >= 16], s_i = (a_i + b_i) mod 16. Generator 1 sends
the one-hots of s masked; generators 0 and 2 rotate their shares by D (:func:`rotate_lanes`), which gives the
one-hots of ρ's chunks and XOR shares of w'' (the parity of a lane above 16 − d_i); w'' goes into the ring as
:meth:`~.replicated.ReplicatedSource.arithmetic_bits` does.

Security model: as :mod:`.replicated` — each message is masked by a component its receiver lacks (generator 0
receives onehot(s) ⊕ σ, σ from component 2; generator 1 receives w'' ⊕ τ's share and the ring elements
u − α, τ and α from component 0), so one generator's view is independent of r. Declared cost per element with q
chunks: the dealer: ⌈q/4⌉ words to party 0; the generators: two rounds, ⌈q/4⌉ words from generator 1 to
generator 0 and one word from generator 2 to generator 1, then q ring elements from generator 0 to generator 1
(16 for 62 or 64 bits, where a bit-by-bit conversion of r takes 62 or 64).
"""

from __future__ import annotations

import torch

from mpcdp.adapter import replicated
from mpcdp.adapter.lanes import check_windows, chunk_values, moved_one_hots, packed_one_hots, rotate_lanes

CHUNK_BITS = 4  # a chunk; its one-hot fills a 16-bit lane
CHUNK_LANE = 16


def chunk_windows(bits: int) -> list[tuple[int, int]]:
    """The 4-bit chunks (low, 4) that cover the low ``bits`` bits of a word (the top one may reach past them)."""
    return [(low, CHUNK_BITS) for low in range(0, bits, CHUNK_BITS)]


def check_chunk_bits(bits) -> int:
    """``bits`` of a :class:`~.material.ChunkOneHots` request: an integer in [1, 64]."""
    from mpcdp.errors import ProtocolViolation

    if not (isinstance(bits, int) and not isinstance(bits, bool) and 1 <= bits <= 64):
        raise ProtocolViolation(f"`bits` of a chunk one-hot request must be an integer in [1, 64]. "
                                f"Found {str(bits)[:20]}", party=0)
    return bits


def chunk_words(bits: int) -> int:
    """Words of one-hots per element for the chunks of ``bits`` bits: ⌈⌈bits/4⌉/4⌉."""
    return -(-len(chunk_windows(bits)) // 4)


def chunk_one_hots(word: torch.Tensor, chunks: int) -> torch.Tensor:
    """(n, ⌈chunks/4⌉): the one-hot of each of the first ``chunks`` 4-bit chunks of each word, chunk i in word
    i // 4, lane i % 4 (the lanes past them: the one-hot of 0) (plaintext)."""
    values = chunk_values(word, chunks)
    lanes = (torch.ones_like(values) << values) << (CHUNK_LANE * (torch.arange(values.shape[1]) % 4))
    return lanes.reshape(word.shape[0], -1, 4).sum(2)


def _rotated_hots(hots: torch.Tensor, word: torch.Tensor, chunks: int) -> torch.Tensor:
    """Every lane of ``hots`` (n, ⌈chunks/4⌉; chunk i in word i // 4, lane i % 4) rotated by chunk i of ``word``."""
    values = chunk_values(word, chunks)
    return torch.stack([rotate_lanes(hots[:, k], values[:, 4 * k:4 * k + 4]) for k in range(hots.shape[1])], 1)


def _wrap_bits(hots: torch.Tensor, word: torch.Tensor, chunks: int) -> torch.Tensor:
    """Bit i: the parity of lane i of ``hots`` over positions >= 16 − (chunk i of ``word``) — on a share of the
    one-hot of s_i, a share of [s_i + word_i >= 16] (local, GF(2)-linear)."""
    values = chunk_values(word, chunks)
    out = torch.zeros(hots.shape[0], dtype=torch.int64)
    for i in range(chunks):
        top = ((torch.ones_like(values[:, i]) << values[:, i]) - 1) << (16 - values[:, i])
        lane = (hots[:, i // 4] >> (16 * (i % 4))) & top
        for s in (8, 4, 2, 1):
            lane = lane ^ (lane >> s)
        out |= (lane & 1) << i
    return out


def _sum_chunks(x: torch.Tensor, y: torch.Tensor, chunks: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(the word of the chunks (x_i + y_i) mod 16, bit i of the other [x_i + y_i >= 16]) (plaintext)."""
    total = chunk_values(x, chunks) + chunk_values(y, chunks)
    digits = ((total & 0xF) << (CHUNK_BITS * torch.arange(total.shape[1]))).sum(1)
    wraps = ((total >> CHUNK_BITS) << torch.arange(total.shape[1])).sum(1)
    return digits, wraps


def _chunk_weights(chunks: int) -> torch.Tensor:
    """16^(i+1) mod 2^64 for chunk i (the place of a wrap out of chunk i)."""
    return torch.tensor([1 << (CHUNK_BITS * (i + 1)) if CHUNK_BITS * (i + 1) < 64 else 0 for i in range(chunks)],
                        dtype=torch.int64)


def _generated_chunk_masks(source: replicated.ReplicatedSource, parts: dict[int, torch.Tensor],
                           chunks: int) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """This generator's summands (None off the generators) of (ρ, the one-hots of ρ's chunks) for the replicated
    words A = parts[1], B = parts[2], D = parts[0] (generator g holds components g and g + 1) and ρ the word of
    the chunks ρ_i = (a_i + b_i + d_i) mod 16, as ρ = A + B + D − 16·Σ_i 16^i·(w'_i + w''_i) with the wraps
    w'_i = [a_i + b_i >= 16] and w''_i = [s_i + d_i >= 16], s_i = (a_i + b_i) mod 16.

    Generator 1 (holds A, B) knows s and w'. Round 1: it sends generator 0 onehot(s) ⊕ σ (σ from component 2);
    generator 2 sends generator 1 its share β2 ⊕ τ of w'' (τ from component 0). Generators 0 and 2 rotate their
    shares by d (they hold D): XOR shares of the one-hots of ρ; their parities above 16 − d_i are XOR shares
    β0, β2 of w''_i. Round 2: w''_i = u ⊕ q with u = β0 ⊕ τ (generator 0) and q = β2 ⊕ τ (generators 1 and 2)
    goes into the ring as :meth:`~.replicated.ReplicatedSource.arithmetic_bits` does (one ring element per
    chunk, generator 0 to generator 1). Each message is masked by a component its receiver lacks."""
    g = source.generator
    if g is None:
        return None, None
    n, words = next(iter(parts.values())).numel(), -(-chunks // 4)
    sigma = source.draw(2, n * words)  # generators 1 and 2
    tau = source.draw(0, n, bits=chunks)  # generators 0 and 2
    alpha = source.draw(0, n * chunks)
    weights = _chunk_weights(chunks)
    if g == 1:
        assert sigma is not None
        s, wraps = _sum_chunks(parts[1], parts[2], chunks)
        v = chunk_one_hots(s, chunks) ^ sigma.reshape(n, words)
        q, e = torch.empty(n, dtype=torch.int64), torch.empty(n * chunks, dtype=torch.int64)
        source.mesh.exchange({0: v.reshape(-1).contiguous()}, {2: q}, label=replicated.BITS_LABEL)
        source.mesh.exchange({}, {0: e}, label=replicated.BITS_LABEL)
        q = _bits(q, chunks)
        converted = q - 2 * e.reshape(n, chunks) * q
        return parts[1] - ((_bits(wraps, chunks) + converted) * weights).sum(1), torch.zeros((n, words),
                                                                                             dtype=torch.int64)
    if g == 0:
        assert tau is not None and alpha is not None
        v = torch.empty(n * words, dtype=torch.int64)
        source.mesh.exchange({}, {1: v}, label=replicated.BITS_LABEL)
        v = v.reshape(n, words)
        u = _bits(_wrap_bits(v, parts[0], chunks) ^ tau, chunks)
        source.mesh.exchange({1: (u.reshape(-1) - alpha).contiguous()}, {}, label=replicated.BITS_LABEL)
        return parts[0] - (u * weights).sum(1), _rotated_hots(v, parts[0], chunks)
    assert sigma is not None and tau is not None and alpha is not None
    share = sigma.reshape(n, words)
    q = _wrap_bits(share, parts[0], chunks) ^ tau
    source.mesh.exchange({1: q.contiguous()}, {}, label=replicated.BITS_LABEL)
    converted = -2 * alpha.reshape(n, chunks) * _bits(q, chunks)
    return parts[2] - (converted * weights).sum(1), _rotated_hots(share, parts[0], chunks)


def _bits(word: torch.Tensor, count: int) -> torch.Tensor:
    """(n, count): bits 0..count−1 of each word."""
    return (word.unsqueeze(1) >> torch.arange(count)) & 1


def served(dealer, n: int, bits: int) -> torch.Tensor:
    """The dealer's side: party 0's share of the one-hots of the chunks of r, r the sum of every party's keyed
    ring element, (n, :func:`chunk_words`)."""
    chunks = len(chunk_windows(check_chunk_bits(bits)))
    hots = chunk_one_hots(dealer._get_additive_PRSS((n,)), chunks)
    return hots ^ dealer._get_binary_PRSS(tuple(hots.shape), remove_rank=True)


def generated(source: replicated.ReplicatedSource, n: int, bits: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The generators' side: this party's (additive share of r, XOR share of the one-hots of r's chunks)."""
    chunks = len(chunk_windows(check_chunk_bits(bits)))
    width = CHUNK_BITS * chunks
    parts = source.random((n,), bits=width)
    high = source.random((n,)) if width < 64 else {}
    value, hots = _generated_chunk_masks(source, parts, chunks)
    if value is not None and high:
        own_high = source.own(high)
        assert own_high is not None  # (value is not None: a generator)
        value = value + (own_high << width)
    return source.additive(value, (n,)), source.xor(hots, (n, -(-chunks // 4)))


def generated_pairs(source: replicated.ReplicatedSource, n: int, windows: list, lane: int = 64):
    """:class:`~.material.OneHotPairs` made by the three generators in one round (its docstring says how)."""
    windows = check_windows(windows, lane)
    parts = source.random((n,))
    g, w = source.generator, -(-len(windows) // (64 // lane))
    summand = None
    if g is not None:
        s = source.draw(2, n * w)  # component 2: generators 1 and 2; None on generator 0
        if g == 1:
            assert s is not None
            u = moved_one_hots(packed_one_hots(parts[2], windows, lane), parts[1], windows, lane)
            source.mesh.exchange({0: (u.reshape(-1) ^ s).contiguous()}, {}, label=replicated.BITS_LABEL)
            summand = torch.zeros((n, w), dtype=torch.int64)
        elif g == 0:
            v = torch.empty(n * w, dtype=torch.int64)
            source.mesh.exchange({}, {1: v}, label=replicated.BITS_LABEL)
            summand = moved_one_hots(v.reshape(n, w), parts[0], windows, lane)
        else:
            assert s is not None
            summand = moved_one_hots(s.reshape(n, w), parts[0], windows, lane)
    return source.xor(source.own(parts), (n,)), source.xor(summand, (n, w))
