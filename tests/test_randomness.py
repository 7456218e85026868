"""Who holds the randomness: keyed streams from the OS CSPRNG in place of CrypTen's Mersenne Twisters."""

import numpy as np
import pytest
import torch
from scipy import stats

from mpcdp.config import MpcConfig
from mpcdp.errors import ConfigError
from mpcdp.randomness import KeyedStream, secure_key

# The statistical tests below read streams under fixed keys, so each runs the same draws every time: a test
# at α = 0.001 on fresh keys would fail one run in a thousand with nothing wrong. Fresh keys by default are
# tested apart (test_a_keyed_stream_does_not_depend_on_how_it_is_read, tests/test_failures.py).
FIXED_KEYS = [bytes([i]) * 32 for i in range(1, 5)]


def test_a_keyed_stream_does_not_depend_on_how_it_is_read():
    key = secure_key()
    whole = KeyedStream(key).words(70_000)  # crosses a 64 KiB block boundary
    parts = KeyedStream(key)
    pieces = torch.cat([parts.words(n) for n in (1, 6, 9_000, 60_993)])
    assert torch.equal(whole, pieces)
    assert not torch.equal(whole, KeyedStream(secure_key()).words(70_000))
    assert not torch.equal(whole, KeyedStream(key, b"another domain").words(70_000))


def test_keyed_words_are_the_keystream_bytes_read_little_endian():
    key = secure_key()
    n = 70_000  # more than one block of the words' reads
    expected = np.frombuffer(KeyedStream(key).read(8 * n), dtype="<i8")
    assert KeyedStream(key).words(n).tolist() == expected.tolist()


def test_keyed_words_are_uniform_bit_by_bit():
    """Each of the 64 bits is set with probability 1/2: binomial test per bit, family-wise α = 0.001."""
    words = KeyedStream(FIXED_KEYS[0]).words(40_000)
    for bit in range(64):
        ones = int(((words >> bit) & 1).sum())
        assert stats.binomtest(ones, words.numel(), 0.5).pvalue > 0.001 / 64, f"bit {bit}"
    small = KeyedStream(FIXED_KEYS[1]).bits(40_000, 5)
    assert int(small.min()) == 0 and int(small.max()) == 31
    counts = torch.bincount(small, minlength=32).numpy()
    assert stats.chisquare(counts).pvalue > 0.001  # α = 0.001


def test_short_keys_and_bad_widths_are_refused():
    with pytest.raises(ValueError, match="`key` must have at least 16 bytes"):
        KeyedStream(b"short")
    with pytest.raises(ValueError, match="`bitlength`"):
        KeyedStream(secure_key()).bits(3, 64)


def test_reproducible_is_a_checked_flag():
    assert MpcConfig(parties=2).reproducible is False
    with pytest.raises(ConfigError, match=r"`reproducible` must be a bool \(true or false\). Found 'yes'"):
        MpcConfig(parties=2, reproducible="yes")


def test_csprng_laplace_noise_has_the_declared_scale():
    """Paper 003's owners draw their discrete Laplace noise from a keyed ChaCha20 stream: KS test of
    20,000 draws at t = 2^20 against Laplace(0, t) (the discrete pmf is within 1e-6 of its density at that
    scale), α = 0.001."""
    from mpcdp.noise import discrete_laplace

    t = 2**20
    w = discrete_laplace.sample(t, 20_000, discrete_laplace.words_from(KeyedStream(FIXED_KEYS[2]))).astype(float)
    assert stats.kstest(w, "laplace", args=(0.0, t)).pvalue > 0.001
    u = KeyedStream(FIXED_KEYS[3]).uniform(20_000).numpy()
    assert u.min() >= 0.0 and u.max() < 1.0 and stats.kstest(u, "uniform").pvalue > 0.001


def test_collab_owners_key_their_noise_by_the_csprng_without_a_seed():
    from mpcdp.jobs.collab import noise_generators

    sources = noise_generators(None, 3)
    assert all(isinstance(s, KeyedStream) for s in sources)
    assert len({tuple(s.words(4).tolist()) for s in sources}) == 3


def test_csprng_batches_are_uniform_over_ordered_samples():
    """Every ordered batch of b = 3 distinct indices of n = 5 has probability exactly (n − b)!/n! = 1/60: a
    chi-square goodness-of-fit test at α = 0.001 over 60 000 batches (fixed key: the same draws every run)."""
    import itertools

    import numpy as np

    from mpcdp.randomness import sample_without_replacement

    n, b, draws = 5, 3, 60_000
    outcomes = {batch: i for i, batch in enumerate(itertools.permutations(range(n), b))}
    stream = KeyedStream(FIXED_KEYS[1], b"mpcdp/batches|0|0")
    counts = np.zeros(len(outcomes))
    for _ in range(draws):
        counts[outcomes[tuple(int(i) for i in sample_without_replacement(stream, n, b))]] += 1
    assert stats.chisquare(counts, np.full(len(outcomes), draws / len(outcomes))).pvalue > 0.001
    whole = [sample_without_replacement(stream, 7, 7) for _ in range(50)]
    assert all(sorted(p.tolist()) == list(range(7)) for p in whole)


def test_secure_batches_follow_the_key_and_reproducible_ones_the_seed():
    """Secure training's batches come from the ChaCha20 stream under the party's secret key (same key, same
    batches: a checkpoint resumes exactly; another key or use, other batches); a reproducible run's from NumPy's
    generator of (seed, party), bit for bit the simulated backend's."""
    import numpy as np

    from mpcdp.randomness import KeyedStream as Stream, batch_key, batch_source, sample_without_replacement

    key = batch_key()
    first = sample_without_replacement(batch_source(key, 4, 1), 1000, 20)
    again = sample_without_replacement(batch_source(key, 4, 1), 1000, 20)
    assert isinstance(batch_source(key, 4, 1), Stream) and np.array_equal(first, again)
    assert not np.array_equal(again, sample_without_replacement(batch_source(key, 5, 1), 1000, 20))
    assert not np.array_equal(again, sample_without_replacement(batch_source(batch_key(), 4, 1), 1000, 20))
    seeded = batch_source(None, 4, 1)
    assert np.array_equal(sample_without_replacement(seeded, 1000, 20),
                          np.random.default_rng([4, 1]).choice(1000, size=20, replace=False))
    with pytest.raises(ValueError, match="`size` must be an integer in \\[0, n = 3\\]. Found 4"):
        sample_without_replacement(seeded, 3, 4)
