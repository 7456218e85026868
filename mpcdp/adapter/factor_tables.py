"""The tables of :class:`mpcdp.adapter.material.FactorTables`: Bernoulli factors [V < TH] that the dealer
evaluates for every value a window of a secret word can take, so that the parties only look one up.

A factor compares V = W ⊕ TH with its threshold TH, W a uniform ``word_bits``-bit word; V < TH exactly when TH
has the top set bit of W (W = 0: never; TH = 2^word_bits: always), so it passes with probability
TH/2^word_bits (:func:`below`, the rule of :func:`mpcdp.noise.discrete_gaussian.below`). The parties hold XOR
shares of a word T. Per element the dealer draws R (a uniform word shared from the parties' dealer keys) and,
from its own private stream, one W per factor, and deals:

* for each window (low, width) of T, a table of 2^width bits: bit c is the AND of the window's factors at
  the window value a = c ⊕ r (r = R's window), where factor f reads TH_f[(a >> sub_low) mod 2^sub_width];
  the parties open c = T ⊕ R on the windows' span and each reads bit c of its share of the table, which is
  its share of the factors' AND at T's window;
* for each bit factor (low, bits, shift), whose threshold is TH = ((T >> low) mod 2^bits)·2^shift, read off
  T itself: the one-hot Q of the bit of T that TH's bit at W's top set bit is (0 if none), and the parity β
  of Q AND R's bits there; the factor is then parity(Q AND c's bits) ⊕ β, local.

Security model: the dealer knows R and every W, and never sees an opened value (c stays among the parties),
so it learns nothing of T; a party sees c = T ⊕ R, uniform, and its shares, uniform; the dealer with one
party learns the factors' outcomes, as it learns every multiplied value anyway. Declared cost per element:
party 0's share of the tables, ⌈2^width/64⌉ words per window and one word per bit factor; nothing for the
other parties (their shares come from their dealer keys).
"""

from __future__ import annotations

import torch

from mpcdp.adapter import dealer_view
from mpcdp.adapter.lanes import parity
from mpcdp.errors import ProtocolViolation
from mpcdp.randomness import KeyedStream, secure_key

MAX_WIDTH = 7  # a window's table: at most 128 bits, two words
MAX_WORD_BITS = 62


def below(w: torch.Tensor, threshold: torch.Tensor, word_bits: int) -> torch.Tensor:
    """[W ⊕ TH < TH]: TH's bit at the top set bit of W (False for W = 0), True for TH = 2^word_bits."""
    return (threshold == (1 << word_bits)) | ((w ^ threshold) < threshold)


def _refuse(what: str):
    raise ProtocolViolation(f"a factor-table request must have {what}", party=0)


def _int(value, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def check_spec(word_bits, windows, factors, bit_factors) -> tuple:
    """The request's spec, checked: ``word_bits`` in [1, 62]; ``windows`` 1..16 pairs (low, width) inside a
    64-bit word, width <= 7; ``factors`` 0..64 lists [window, sub_low, sub_width, thresholds] with the
    sub-window inside the window and 2^sub_width thresholds in [0, 2^word_bits], each window with at least
    one; ``bit_factors`` 0..4 triples (low, bits, shift) with bits + shift <= word_bits inside a word."""
    if not _int(word_bits, 1, MAX_WORD_BITS):
        _refuse(f"`word_bits` in [1, {MAX_WORD_BITS}]. Found {str(word_bits)[:20]}")
    if not (isinstance(windows, list) and 1 <= len(windows) <= 16 and all(
            isinstance(w, list) and len(w) == 2 and _int(w[1], 1, MAX_WIDTH) and _int(w[0], 0, 64 - w[1])
            for w in windows)):
        _refuse(f"1 to 16 windows [low, width <= {MAX_WIDTH}] inside a word. Found {str(windows)[:60]}")
    if not (isinstance(factors, list) and len(factors) <= 64):
        _refuse(f"at most 64 factors. Found {str(factors)[:60]}")
    checked = []
    for f in factors:
        ok = isinstance(f, list) and len(f) == 4 and _int(f[0], 0, len(windows) - 1)
        ok = ok and _int(f[2], 1, MAX_WIDTH) and _int(f[1], 0, windows[f[0]][1] - f[2])
        ok = ok and isinstance(f[3], list) and len(f[3]) == 1 << f[2] and all(
            _int(t, 0, 1 << word_bits) for t in f[3])
        if not ok:
            _refuse(f"factors [window, sub_low, sub_width, 2^sub_width thresholds in [0, 2^{word_bits}]] with the "
                    f"sub-window inside the window. Found {str(f)[:60]}")
        checked.append((f[0], f[1], f[2], tuple(f[3])))
    if {f[0] for f in checked} != set(range(len(windows))):
        _refuse(f"at least one factor per window. Found {len(checked)} factors for {len(windows)} windows")
    if not (isinstance(bit_factors, list) and len(bit_factors) <= 4 and all(
            isinstance(b, list) and len(b) == 3 and _int(b[1], 1, word_bits) and _int(b[2], 0, word_bits - b[1])
            and _int(b[0], 0, 64 - b[1]) for b in bit_factors)):
        _refuse(f"at most 4 bit factors [low, bits, shift] with bits + shift <= {word_bits}. "
                f"Found {str(bit_factors)[:60]}")
    return (int(word_bits), [tuple(w) for w in windows], checked, [tuple(b) for b in bit_factors])


def table_words(windows) -> list[int]:
    """Words of each window's table: ⌈2^width/64⌉."""
    return [-(-(1 << width) // 64) for _, width in windows]


def reply_words(windows, bit_factors) -> int:
    """Words per element: every window's table, then one per bit factor."""
    return sum(table_words(windows)) + len(bit_factors)


def uniforms_needed(factors, bit_factors) -> int:
    """Uniform words W per element: one per factor and per bit factor."""
    return len(factors) + len(bit_factors)


def _top_bit(w: torch.Tensor, word_bits: int) -> torch.Tensor:
    """Position of the top set bit of each word (−1 for 0), exactly."""
    powers = torch.ones(word_bits, dtype=torch.int64) << torch.arange(word_bits)
    return (w.unsqueeze(1) >= powers).sum(1) - 1


def _pack_bits(bits: torch.Tensor) -> torch.Tensor:
    """(n, 64·k) booleans to (n, k) words, bit j of word i the column 64i + j (columns padded with 0)."""
    n, size = bits.shape
    words = -(-size // 64)
    padded = torch.zeros((n, 64 * words), dtype=torch.int64)
    padded[:, :size] = bits.to(torch.int64)
    weights = torch.ones(64, dtype=torch.int64) << torch.arange(64)
    return (padded.reshape(n, words, 64) * weights).sum(2)  # disjoint bits: the sum is their OR


def tables(r: torch.Tensor, w: torch.Tensor, spec: tuple) -> torch.Tensor:
    """(n, :func:`reply_words`) plaintext table words for masks ``r`` (n,) and uniform words ``w``
    (n, :func:`uniforms_needed`), factors first in spec order, then bit factors."""
    word_bits, windows, factors, bit_factors = spec
    n = r.shape[0]
    out = []
    for i, (low, width) in enumerate(windows):
        size = 1 << width
        values = torch.arange(size, dtype=torch.int64)
        moved = values.unsqueeze(0) ^ ((r >> low) & (size - 1)).unsqueeze(1)  # c -> a = c ⊕ r
        passed = torch.ones((n, size), dtype=torch.bool)
        for j, (window, sub_low, sub_width, thresholds) in enumerate(factors):
            if window == i:
                th = torch.tensor(thresholds, dtype=torch.int64)[(moved >> sub_low) & ((1 << sub_width) - 1)]
                passed &= below(w[:, j].unsqueeze(1), th, word_bits)
        out.append(_pack_bits(passed))
    for j, (low, bits, shift) in enumerate(bit_factors):
        q = _top_bit(w[:, len(factors) + j], word_bits) - shift  # TH's bit at W's top bit is T's bit q
        inside = (q >= 0) & (q < bits)
        one_hot = torch.where(inside, torch.ones_like(q) << q.clamp(0, 63), torch.zeros_like(q))
        beta = parity(one_hot & ((r >> low) & ((1 << bits) - 1)))
        out.append((one_hot | (beta << 63)).unsqueeze(1))
    return torch.cat(out, 1)


ROWS_PER_BLOCK = 1 << 13  # rows per block of the dealer's tables (bounds its temporaries)


def served(dealer, n: int, word_bits, windows, factors, bit_factors) -> torch.Tensor:
    """The dealer's side: party 0's share of the tables, (n, :func:`reply_words`). R comes from the parties'
    keyed generators (all of them XOR-combined); each W from the dealer's private stream."""
    spec = check_spec(word_bits, windows, factors, bit_factors)
    r = dealer._get_binary_PRSS((n,))
    stream = getattr(dealer, "private_stream", None)
    if stream is None:
        stream = dealer.private_stream = KeyedStream(secure_key(), domain=b"mpcdp/dealer-factor-uniforms")
    k = uniforms_needed(spec[2], spec[3])
    blocks, drawn = [], []
    for start in range(0, n, ROWS_PER_BLOCK):
        rows = min(ROWS_PER_BLOCK, n - start)
        w = stream.words(rows * k).reshape(rows, k) & ((1 << spec[0]) - 1)
        drawn.append(w)
        blocks.append(tables(r[start:start + rows], w, spec))
    y = torch.cat(blocks) if blocks else torch.zeros((0, reply_words(spec[1], spec[3])), dtype=torch.int64)
    dealer_view.note_draw(r=r, w=torch.cat(drawn) if drawn else torch.zeros((0, k), dtype=torch.int64))
    return y ^ dealer._get_binary_PRSS(tuple(y.shape), remove_rank=True)
