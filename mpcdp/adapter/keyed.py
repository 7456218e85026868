"""CSPRNG-keyed streams in place of CrypTen's Mersenne-Twister generators.

CrypTen draws every random ring element from ``torch.Generator`` objects: Mersenne Twister (MT19937) seeded
with 64 bits, namely the dealer's generator shared with each party (seeded by the dealer's default torch
generator) and each party's ``prev``/``next``/``local``/``global`` generators (seeded from ``os.urandom``).
MT19937 is not a cryptographic generator (its state follows from 624 outputs) and 64-bit seeds are below the
128-bit margin. :func:`install` replaces all of them through CrypTen's own hooks: its two drawing functions
in ``crypten.common.rng`` and the providers' generator set-up. Every such generator gets a 256-bit key from
the OS CSPRNG (the dealer sends each party its key next to CrypTen's seed; parties exchange ``prev``/``next``
keys and party 0 broadcasts the ``global`` key) and draws from a :class:`~mpcdp.randomness.KeyedStream`
instead. :func:`unkeyed_draws` counts draws that still reached a Mersenne Twister (none on mpcdp's paths;
tested).

Cost: one 32-byte key per dealer link, one round of 32-byte keys between neighbouring parties and one
broadcast of 32 bytes at start-up.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from mpcdp.adapter import group
from mpcdp.adapter.compat import arithmetic, binary, comm, crypten, rng, tfp_provider, ttp_provider
from mpcdp.randomness import KEY_BYTES, KeyedStream, secure_key

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


def _key_tensor(key: bytes) -> torch.Tensor:
    return torch.frombuffer(bytearray(key), dtype=torch.int64).clone()


def _key_bytes(tensor: torch.Tensor) -> bytes:
    return tensor.to(torch.int64).numpy().astype("<i8").tobytes()


def install() -> None:
    """Route CrypTen's two drawing functions through keyed streams and key the dealer clients' generators
    (idempotent)."""
    for module in (rng, ttp_provider, tfp_provider, arithmetic, binary):
        if hasattr(module, "generate_random_ring_element"):
            module.generate_random_ring_element = ring
        if hasattr(module, "generate_kbit_random_tensor"):
            module.generate_kbit_random_tensor = kbit
    inner = ttp_provider.TTPClient._TTPClient__TTPClient
    if getattr(inner._setup_generators, "_mpcdp_keyed", False):
        return
    crypten_setup = inner._setup_generators

    def keyed_client_setup(self):
        crypten_setup(self)  # CrypTen's 64-bit seed, kept so its protocol is unchanged
        key = torch.empty(KEY_BYTES // 8, dtype=torch.int64)
        dist.irecv(tensor=key, src=comm.get().get_ttp_rank(), group=self.ttp_group).wait()
        _KEYED[id(self.generator)] = KeyedStream(_key_bytes(key), b"mpcdp/dealer")

    keyed_client_setup._mpcdp_keyed = True
    inner._setup_generators = keyed_client_setup


def key_dealer_generators(dealer) -> None:
    """Dealer side of the key set-up: a fresh 256-bit key per party, sent on the dealer's own link."""
    keys = [secure_key() for _ in dealer.generators]
    requests = [dist.isend(tensor=_key_tensor(key), dst=i, group=dealer.ttp_group) for i, key in enumerate(keys)]
    for generator, key in zip(dealer.generators, keys):
        _KEYED[id(generator)] = KeyedStream(key, b"mpcdp/dealer")
    for request in requests:
        request.wait()


def key_party_generators() -> None:
    """Re-key this party's ``prev``/``next``/``local``/``global`` generators (1 round: a 32-byte key to the
    next party, one from the previous; party 0 broadcasts the global key)."""
    me, parties = group.rank(), group.world_size()
    next_key, local_key = secure_key(), secure_key()
    incoming = torch.empty(KEY_BYTES // 8, dtype=torch.int64)
    group.exchange_pairwise({(me + 1) % parties: _key_tensor(next_key)}, {(me - 1) % parties: incoming})
    global_key = _key_tensor(secure_key() if me == 0 else bytes(KEY_BYTES))
    dist.broadcast(global_key, src=0, group=group.main_group())
    keys = {"prev": _key_bytes(incoming), "next": next_key, "local": local_key, "global": _key_bytes(global_key)}
    for name, key in keys.items():
        for generator in crypten.generators[name].values():
            # prev of party i and next of party i − 1 hold the same key and must draw the same stream
            domain = b"mpcdp/party-pair" if name in ("prev", "next") else b"mpcdp/party-" + name.encode()
            _KEYED[id(generator)] = KeyedStream(key, domain)
