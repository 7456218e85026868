"""CSPRNG-keyed streams in place of CrypTen's Mersenne-Twister generators.

CrypTen draws every random ring element from ``torch.Generator`` objects: Mersenne Twister (MT19937) seeded
with 64 bits, namely the dealer's generator shared with each party (seeded by the dealer's default torch
generator) and each party's ``prev``/``next``/``local``/``global`` generators (seeded from ``os.urandom``).
MT19937 is not a cryptographic generator (its state follows from 624 outputs) and 64-bit seeds are below the
128-bit margin. :func:`install` replaces both of CrypTen's drawing functions (``crypten.common.rng`` and
the providers' copies). mpcdp creates the generators itself: every one gets a 256-bit key from the OS
CSPRNG, sent on mpcdp's links (the dealer sends each party its key, :mod:`.dealer_link`; parties send the
``prev``/``next`` keys and party 0 the ``global`` key, :func:`key_party_generators`), and draws from a
:class:`~mpcdp.randomness.KeyedStream`. :func:`unkeyed_draws` counts draws that still reached a Mersenne Twister (none on mpcdp's paths;
tested).

Cost: one 32-byte key per dealer link, one round of 32-byte keys between neighbouring parties and one
broadcast of 32 bytes at start-up.
"""

from __future__ import annotations

import torch

from mpcdp.adapter.compat import arithmetic, binary, crypten, rng, tfp_provider, ttp_provider
from mpcdp.randomness import KEY_BYTES, KeyedStream, secure_key
from mpcdp.transport.mesh import Mesh

_KEYED: dict[int, KeyedStream] = {}
_unkeyed_draws = 0
_mt_ring = rng.generate_random_ring_element
_mt_kbit = rng.generate_kbit_random_tensor


def unkeyed_draws() -> int:
    """Random draws in this process that went to a Mersenne-Twister generator (0 on mpcdp's paths)."""
    return _unkeyed_draws


def keyed_words() -> int:
    """Words this process drew from keyed streams in place of CrypTen's generators."""
    return sum(stream.words_drawn for stream in _KEYED.values())


def _shape(size) -> tuple[int, ...]:
    return (int(size),) if isinstance(size, int) else tuple(int(s) for s in size)


def _stream_for(generator, kwargs) -> KeyedStream | None:
    if generator is None:
        device = torch.device(kwargs.get("device") or "cpu")
        generator = crypten.generators.get("local", {}).get(device)
    return _KEYED.get(id(generator)) if generator is not None else None


def ring(size, ring_size=(2**64), generator=None, **kwargs):
    """Uniform ring elements of ``size`` from ``generator``'s keyed stream (CrypTen's signature)."""
    global _unkeyed_draws
    stream = _stream_for(generator, kwargs)
    if stream is None or ring_size != 2**64:
        _unkeyed_draws += 1
        return _mt_ring(size, ring_size=ring_size, generator=generator, **kwargs)
    shape = _shape(size)
    return stream.words(int(torch.Size(shape).numel())).reshape(shape)


def kbit(size, bitlength=None, generator=None, **kwargs):
    """Uniform ``bitlength``-bit words of ``size`` from ``generator``'s keyed stream (CrypTen's signature)."""
    global _unkeyed_draws
    if bitlength is None or bitlength == 64:
        return ring(size, generator=generator, **kwargs)
    stream = _stream_for(generator, kwargs)
    if stream is None:
        _unkeyed_draws += 1
        return _mt_kbit(size, bitlength=bitlength, generator=generator, **kwargs)
    shape = _shape(size)
    return stream.bits(int(torch.Size(shape).numel()), bitlength).reshape(shape)


def key_tensor(key: bytes) -> torch.Tensor:
    """A 32-byte key as 4 int64 words (how keys travel in frames)."""
    return torch.frombuffer(bytearray(key), dtype=torch.int64).clone()


def key_bytes(tensor: torch.Tensor) -> bytes:
    return tensor.to(torch.int64).numpy().astype("<i8").tobytes()


def torch_seed(key: bytes, domain: bytes) -> int:
    """A 63-bit seed for the torch generator itself, derived from its key (SHA-256): code that draws from a
    CrypTen generator through torch directly (``torch.randint(..., generator=g)``) gets what CrypTen's seeding
    gives — the same numbers on the two parties sharing a pairwise key, other numbers elsewhere — though from
    Mersenne Twister, not the keyed stream (mpcdp's paths never draw so: :func:`unkeyed_draws`)."""
    import hashlib

    return int.from_bytes(hashlib.sha256(domain + b"/torch-seed\0" + key).digest()[:8], "little") >> 1


def register(generator: torch.Generator, key: bytes, domain: bytes) -> None:
    """Make ``generator``'s draws come from the keyed stream of ``key`` in ``domain``."""
    _KEYED[id(generator)] = KeyedStream(key, domain)


def install() -> None:
    """Route CrypTen's two drawing functions through keyed streams (idempotent)."""
    for module in (rng, ttp_provider, tfp_provider, arithmetic, binary):
        if hasattr(module, "generate_random_ring_element"):
            module.generate_random_ring_element = ring
        if hasattr(module, "generate_kbit_random_tensor"):
            module.generate_kbit_random_tensor = kbit


def key_party_generators(mesh: Mesh) -> None:
    """Create this party's CrypTen ``prev``/``next``/``local``/``global`` generators and key them (1 round
    on ``mesh``: a 32-byte key to the next party, one from the previous, and party 0's global key to all)."""
    me, parties = mesh.rank, mesh.parties
    next_key, local_key = secure_key(), secure_key()
    outgoing = {(me + 1) % parties: key_tensor(next_key)}
    if me == 0:
        global_key = secure_key()
        for j in range(1, parties):
            outgoing[j] = torch.cat([outgoing[j], key_tensor(global_key)]) if j in outgoing else key_tensor(global_key)
    # one message per link: party 1 gets its prev key and the global key from party 0 in one frame
    receives = {}
    for j in range(parties):
        if j == me:
            continue
        words = (KEY_BYTES // 8) * ((j == (me - 1) % parties) + (j == 0))
        if words:
            receives[j] = torch.empty(words, dtype=torch.int64)
    mesh.exchange(outgoing, receives, label="party keys")
    prev_words = receives[(me - 1) % parties]
    prev_key = key_bytes(prev_words[:KEY_BYTES // 8])
    if me == 0:
        keys_global = global_key
    else:
        keys_global = key_bytes(receives[0][-(KEY_BYTES // 8):])
    keys = {"prev": prev_key, "next": next_key, "local": local_key, "global": keys_global}
    device = torch.device("cpu")
    for name, key in keys.items():
        generator = torch.Generator(device=device)
        crypten.generators[name] = {device: generator}
        # prev of party i and next of party i − 1 hold the same key and must draw the same stream
        domain = b"mpcdp/party-pair" if name in ("prev", "next") else b"mpcdp/party-" + name.encode()
        register(generator, key, domain)
        generator.manual_seed(torch_seed(key, domain))
