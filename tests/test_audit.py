"""The opening audit: what a DDP-SRM run lets the parties see.

Three data parties and the dealer (with the ``honest-majority`` provider, the three parties alone) run
DDP-SRM (paper 002, Algorithm 2) through the real party path with
noise sampled inside the MPC. Every value that became plaintext passed through MpcContext's one choke point;
the test checks the record is exactly: the handshake's public configuration and data check, masked protocol
values (uniform
64-bit words), the sampler's accept bits, and the released noisy v_p — opened to the three data parties, never
to the dealer — and that no opened word equals the encoding of a party's local gradient terms, of their
noiseless sum, or of the noise.
"""

import math

import numpy as np

import pytest
import torch
from scipy import stats

from mpcdp.data.registry import load
from mpcdp.data.split import split_indices
from mpcdp.learning.backends import NoiseLevels
from mpcdp.learning.dpsrm import Shard, SrmParameters
from mpcdp.mpc.context import OPENING_KINDS
from mpcdp.runtime.harness import run_parties
from party_jobs import audited_srm

# The masks, shares and dealt words tested below are fresh every run (OS keys, the dealer's material): each
# uniformity test is at family-wise α = 1e-6 over its bits, and the file holds 21 such families over the two
# providers (masked, B2A and 7 packed labels each; the reshared shares of 3 parties under honest-majority), so a
# correct tree fails it with probability <= 2.1e-5 (2.1e-4 at the 1e-5 used before). An unmasked opening fails
# at its constant high bits: a binomial test of n > 100 equal bits has p < 2^-99.
STEPS, DIM = 2, 30
PACKED = ("-b2a", "dg-piece", "-group", "-chunks", "-flags", "-supers")  # k-bit openings: B2A, one-hot windows


@pytest.fixture(scope="module", params=["dealer", "honest-majority"])
def audit(request):
    """The audited run with each provider: with the dealer, and with parties 0-2 making the material."""
    from mpcdp.config import MpcConfig

    data = load("breast-cancer")
    x, y = torch.from_numpy(data.x_train).double(), torch.from_numpy(data.y_train).double()
    shards = [Shard(j, x[i], y[i]) for j, i in enumerate(split_indices(len(y), 3, seed=0))]
    params = SrmParameters(steps=STEPS, batch=5, batch0=10, seed=1)
    return run_parties(audited_srm, MpcConfig(parties=3, provider=request.param, timeout_s=90.0),
                       party_args=[(s, params, NoiseLevels.for_sigmas(0.5, 0.5, dim=DIM), DIM) for s in shards])


def _words(values) -> torch.Tensor:
    return values.reshape(-1).to(torch.int64)


def test_only_masked_values_accept_bits_and_releases_are_opened(audit):
    for rank, party in enumerate(audit):
        kinds = {kind for _, _, _, kind, _ in party["openings"]}
        assert kinds <= set(OPENING_KINDS)
        public = [label for label, _, _, kind, _ in party["openings"] if kind == "public"]
        assert public == ["handshake: configuration fingerprint and description", "training data check"]
        releases = [(label, n) for label, n, _, kind, _ in party["openings"] if kind == "release"]
        assert releases == [(f"v_p[{t}]", DIM + 1) for t in range(STEPS + 1)]  # d values + the validity flag
        comparisons = [(label, v) for label, _, _, kind, v in party["openings"] if kind == "comparison"]
        assert comparisons and {label for label, _ in comparisons} == {"dg-first-bits", "dg-accept-bits"}
        words = torch.cat([_words(v) for _, v in comparisons])  # first-factor and accept bits, 64 to a word
        bits = ((words.unsqueeze(1) >> torch.arange(64)) & 1).reshape(-1)
        assert 0 < int(bits.sum()) < bits.numel()  # both outcomes occurred
        # per pass, under every provider: the committed coin, every member's commitment (4 words) and then its
        # part and nonce (8 words)
        coins = [(label, n) for label, n, _, kind, _ in party["openings"] if kind == "coin"]
        assert coins and not party["tables"] and coins[:2] == [("dg-coin (commitments)", 4), ("dg-coin", 8)]
        assert set(coins) == {("dg-coin (commitments)", 4), ("dg-coin", 8)}
        masked = {label for label, _, _, kind, _ in party["openings"] if kind == "masked"}
        assert masked and all(label.startswith("dg-") for label in masked)
        assert all(recipients == (0, 1, 2) for _, _, recipients, kind, _ in party["openings"] if kind != "share"), \
            "an opening went to fewer than all data parties or to the dealer"
        # honest-majority: the sampler's multiplications reshare (one share per value, to this party alone) in
        # place of Beaver openings; with the dealer nothing is reshared
        shares = {(label, recipients) for label, _, recipients, kind, _ in party["openings"] if kind == "share"}
        assert all(label.startswith("dg-") and recipients == (rank,) for label, recipients in shares)
        assert bool(shares) == (party["provider"] == "honest-majority")
        assert "dg-rest-window" not in masked  # the dealer's tables are the view audit's planted leak only


def test_reshared_shares_are_uniform_words(audit):
    """What a party receives in a resharing (honest-majority only) is another member's share re-randomised by
    a sharing of zero from a key it lacks: each bit set with probability 1/2 (binomial test per bit,
    family-wise α = 1e-6), packed lane words included. A share sent without that mask fails at the bits
    above a packed value's lanes, which are 0 (p ≈ 0)."""
    for party in audit:
        received = [_words(v) for _, _, _, kind, v in party["openings"] if kind == "share"]
        if not received:
            assert not any(kind == "share" for _, _, _, kind, _ in audit[0]["openings"])
            continue
        words = torch.cat(received)
        assert words.numel() > 2000
        for bit in range(64):
            ones = int(((words >> bit) & 1).sum())
            assert stats.binomtest(ones, words.numel(), 0.5).pvalue > 1e-6 / 64, f"bit {bit}: {ones} set"


def test_masked_openings_are_uniform_words(audit):
    """Every 64-bit masked word has each bit set with probability 1/2 (two-sided binomial test per bit,
    family-wise α = 1e-6 over 64 bits: the masks are fresh every run, so a small α keeps false alarms
    negligible). A protocol opening an unmasked fixed-point value fails this at its high bits, which are all 0
    or all 1 for small numbers (p ≈ 0)."""
    full = [v for label, _, _, kind, v in audit[0]["openings"]
            if kind == "masked" and not label.endswith(PACKED)]  # k-bit words, tested apart
    words = torch.cat([_words(v) for v in full])
    n = words.numel()
    assert n > 150  # honest-majority reshares its multiplications: its masked full words are the A2B masks
    alpha = 1e-6 / 64
    for bit in range(64):
        ones = int(((words >> bit) & 1).sum())
        assert stats.binomtest(ones, n, 0.5).pvalue > alpha, f"bit {bit}: {ones} of {n} set"


def test_b2a_openings_are_bit_columns_uniform_on_every_candidates_bits(audit):
    """B2A opens y = X + R mod 2^K, the carry out ⊕ ρ and the piece bits ⊕ R' as bit columns (dg-mpc/11): per pass
    f = K + PIECES rows of ⌈n/64⌉ words (as many as the pass's first-factor bits, 64 candidates to a word), bit j
    of a row's word c being candidate 64c + j's. Every row's bits over the pass's candidates are set with
    probability 1/2 (binomial test per row, family-wise α = 1e-6, fresh masks every run); the last word's bits
    past the candidates are 0, so they are left out (the last candidate is found as the highest bit set in any
    row: a candidate whose f >= 14 opened bits are all 0 is missed with probability 2^-f)."""
    from mpcdp.noise import discrete_gaussian as dg

    openings = [(label, _words(v)) for label, _, _, kind, v in audit[0]["openings"]
                if kind in ("masked", "comparison") and label in ("dg-b2a", "dg-first-bits")]
    rows: dict[int, list] = {}
    for (label, words), (following, columns) in zip(openings, openings[1:]):
        if label != "dg-b2a":
            continue
        assert following == "dg-first-bits" and words.numel() % columns.numel() == 0
        f = words.numel() // columns.numel()
        assert dg.PIECES + 2 <= f <= 64
        bits = np.unpackbits(words.reshape(f, -1).numpy().view(np.uint8), axis=1, bitorder="little")
        used = int(np.nonzero(bits.any(0))[0].max()) + 1
        assert used > bits.shape[1] - 64, "a whole column word of padding"
        for i in range(f):
            rows.setdefault(i, []).append(bits[i, :used])
    assert rows and sum(len(r) for r in rows[0]) > 100
    for i, chunks in rows.items():
        ones, n = int(sum(int(c.sum()) for c in chunks)), sum(len(c) for c in chunks)
        assert stats.binomtest(ones, n, 0.5).pvalue > 1e-6 / len(rows), f"row {i}: {ones} of {n} set"


def test_packed_window_openings_are_uniform_on_their_lanes(audit):
    """The one-hot windows open V ⊕ R on each value's own bits only, ⌊64/w⌋ values to a word (the chunk flags
    bit after bit, :mod:`mpcdp.mpc.chunk_flags`): every opened
    bit inside a lane is set with probability 1/2 (binomial test per bit, family-wise α = 1e-6), and the bits
    above the last lane are 0."""
    circuit = (("dg-first-group", 60), ("dg-rest-group", 52),  # the rest's windows span 26 bits: two lanes
               *[(f"dg-{stage}-bern-{step}", width) for stage in ("first", "rest")
                 for step, width in (("flags", 64), ("supers", 64))])
    for label, width in (("dg-piece", 60), *circuit):
        words = torch.cat([_words(v) for lab, _, _, kind, v in audit[0]["openings"] if lab == label])
        assert words.numel() > 10
        assert width == 64 or (int(words.min()) >= 0 and int(words.max()) < 2**width)
        for bit in range(width):
            ones = int(((words >> bit) & 1).sum())
            assert stats.binomtest(ones, words.numel(), 0.5).pvalue > 1e-6 / width, f"{label} bit {bit}"


def test_no_opened_word_is_a_secret(audit):
    """No opened word equals the fixed-point encoding of any party's local terms, their noiseless sum or the
    noise (a uniform 64-bit word hits one of these few hundred values with probability ~2^-55). The k-bit
    B2A words and the accept bits live in small ranges, so they are checked by the tests above instead."""
    locals_ = torch.stack([party["locals"] for party in audit])  # (parties, releases, d)
    noise = audit[0]["noise"]
    secrets = torch.cat([locals_.reshape(-1), locals_.sum(0).reshape(-1), noise.reshape(-1)])
    encoded = set()
    for bits in {audit[0]["precision_bits"], *audit[0]["grids"]}:  # the run's precision and every release grid
        encoded |= set(torch.round(secrets * 2.0**bits).to(torch.int64).tolist()) - {0}
    assert len(encoded) > 200
    for party in audit:
        opened = set()
        for label, _, _, kind, values in party["openings"]:
            if kind in ("share", "coin") or (kind == "masked" and not label.endswith(PACKED)):
                opened |= set(_words(values).tolist())
        assert not opened & encoded


def test_no_draw_reaches_a_mersenne_twister(audit):
    """Every random word of the dealer protocols and of CrypTen's zero sharings came from a keyed stream."""
    for party in audit:
        assert party["unkeyed_draws"] == 0
        assert party["keyed_words"] > 1_000  # the sampler really drew from them


def test_the_release_is_the_sum_plus_the_noise_and_nothing_less(audit):
    """Every opened v_p is exactly Σ_j round(2^p·local_j) + N in units of its release grid 2^-p (the
    mechanism the accountant certifies, bit for bit): the noise went in before the opening, so the
    noiseless sum was never opened, and each party's term was rounded to the grid of its release kind."""
    locals_ = torch.stack([party["locals"] for party in audit])  # (parties, releases, d)
    grids = audit[0]["grids"]
    assert len(grids) == STEPS + 1 and grids[0] != audit[0]["precision_bits"]
    for t in range(STEPS + 1):
        bits = grids[t]
        raw = [v for label, _, _, kind, v in audit[0]["openings"] if label == f"v_p[{t}]"][0].to(torch.int64)
        terms = torch.round(locals_[:, t] * 2.0**bits).to(torch.int64).sum(0)
        noise_units = torch.round(audit[0]["noise"][t] * 2.0**bits).to(torch.int64)
        assert torch.equal(audit[0]["noise"][t] * 2.0**bits, noise_units.to(torch.float64))  # on the grid
        assert torch.equal(raw[:DIM], terms + noise_units), f"release {t}"
        assert raw[DIM] == 0  # no party flagged its input
        assert noise_units.abs().max() > 2**19  # the noise (≈ 2^21 units) is really there
    release0 = [v for label, _, _, kind, v in audit[0]["openings"] if label == "v_p[0]"][0]
    assert math.isclose(float(audit[0]["released"][0][0]), float(release0[0]) * 2.0**-grids[0], abs_tol=1e-12)
