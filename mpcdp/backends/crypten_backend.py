"""The one module of mpcdp that imports CrypTen.

Everything CrypTen keeps in globals — the ``cfg`` singleton, the communicator behind ``comm.get()``, the
``crypten.generators`` PRNG table, the tuple provider chosen by a config string — is touched here and
nowhere else. The rest of mpcdp talks to this module through plain functions and sees CrypTen tensors
only as opaque handles inside :class:`mpcdp.mpc.shared.Shared`.

Compatibility (CrypTen 0.4.1 on torch 2.13, CPU), applied in-process, never by editing site-packages:

* ``crypten/nn/onnx_converter.py`` imports ``torch.onnx._internal.registration``, which torch moved to
  ``torch.onnx._internal.torchscript_exporter.registration``. :func:`install_torch_compat` registers the
  old name as an alias in ``sys.modules`` before ``import crypten``. Because this module is the only
  importer of crypten, every entry point — including processes started with the ``spawn`` method,
  which re-import everything — goes through the alias.
* CrypTen's communicator passes no timeout to ``torch.distributed``; the default is 30 minutes. The
  per-party timeout of :class:`mpcdp.config.MpcConfig` is installed as torch's default process-group
  timeout before the communicator starts, so a silent peer cannot stall a party for longer.

Security model of the providers (see README, "Threat model"):

* ``dealer`` (CrypTen's TTP): an extra process of rank m that is never a data party generates the
  correlated randomness (Beaver triples, binary triples, wraps, B2A bits) and hands each party its share.
  It never receives an opened value or an input share. Security rests on it not colluding with a party.
* ``tfp`` (CrypTen's default "trusted first party"): party 0 generates all correlated randomness in
  plaintext and can therefore recover every other party's inputs from the values it legitimately sees.
  Development only; :class:`mpcdp.config.MpcConfig` refuses it without ``insecure_dev=True``.

Randomness: CrypTen draws every random ring element from ``torch.Generator`` objects — Mersenne Twister
(MT19937) seeded with 64 bits: the dealer's generator shared with each party (seeded by the dealer's default
torch generator) and each party's ``prev``/``next``/``local``/``global`` generators (seeded from
``os.urandom``). MT19937 is not a cryptographic generator (its state follows from 624 outputs) and 64-bit
seeds are below the 128-bit margin. :func:`_install_keyed_randomness` replaces all of them through CrypTen's
own hooks — its two drawing functions in ``crypten.common.rng`` and the providers' generator set-up: every
such generator gets a 256-bit key from the OS CSPRNG (the dealer sends each party its key next to CrypTen's
seed; parties exchange ``prev``/``next`` keys and party 0 broadcasts the ``global`` key) and draws from a
:class:`~mpcdp.randomness.KeyedStream` instead. :func:`unkeyed_draws` counts draws that still reached a
Mersenne Twister (none on mpcdp's paths; tested).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import importlib
import os
import sys
import time
from typing import Any, Iterator

import torch
import torch.distributed as dist

from mpcdp.transport import costs
from mpcdp.transport.wire import tcp_bytes
from mpcdp.randomness import KEY_BYTES, KeyedStream, secure_key

_LEGACY_ONNX_REGISTRATION = "torch.onnx._internal.registration"
_CURRENT_ONNX_REGISTRATION = "torch.onnx._internal.torchscript_exporter.registration"


def install_torch_compat() -> None:
    """Make ``import crypten`` work on torch 2.13 (idempotent, in-process only)."""
    if _LEGACY_ONNX_REGISTRATION in sys.modules:
        return
    try:
        importlib.import_module(_LEGACY_ONNX_REGISTRATION)
        return  # an older torch that still has the module
    except ModuleNotFoundError:
        pass
    current = importlib.import_module(_CURRENT_ONNX_REGISTRATION)
    sys.modules[_LEGACY_ONNX_REGISTRATION] = current
    parent = importlib.import_module("torch.onnx._internal")
    setattr(parent, "registration", current)


install_torch_compat()
try:
    import crypten  # noqa: E402
    import crypten.communicator as _comm  # noqa: E402
    from crypten.config import cfg as _cfg  # noqa: E402
    from crypten.mpc import MPCTensor as _MPCTensor  # noqa: E402
    import crypten.common.rng as _rng  # noqa: E402
    import crypten.mpc.primitives.arithmetic as _arithmetic  # noqa: E402
    import crypten.mpc.primitives.binary as _binary  # noqa: E402
    from crypten.mpc.provider import tfp_provider as _tfp_provider  # noqa: E402
    from crypten.mpc.provider import ttp_provider as _ttp_provider  # noqa: E402
    from crypten.communicator.distributed_communicator import DistributedCommunicator as _Communicator  # noqa
except ModuleNotFoundError as e:  # pragma: no cover - exercised only on a broken install
    if e.name == "crypten":
        raise ImportError(
            "CrypTen is not installed. Run `bash launch/install.sh` (it installs "
            "`pip install --no-deps crypten==0.4.1` plus CrypTen's real dependencies)."
        ) from e
    raise

PROVIDERS = {"dealer": "TTP", "tfp": "TFP"}


def _configure(provider: str, precision_bits: int, timeout_s: float) -> None:
    if provider not in PROVIDERS:
        raise ValueError(f"`provider` must be one of {sorted(PROVIDERS)}. Found {provider!r}.")
    _cfg.mpc.provider = PROVIDERS[provider]
    _cfg.encoder.precision_bits = int(precision_bits)
    _cfg.communicator.verbose = False
    # torch.distributed looks this module global up when a process group is created.
    dist.distributed_c10d.default_pg_timeout = datetime.timedelta(seconds=float(timeout_s))


def _set_endpoint(rank: int, parties: int, rendezvous: str) -> None:
    # CrypTen's DistributedCommunicator reads exactly these variables; without RENDEZVOUS every
    # process would invent its own random file path and all of them would hang.
    os.environ["DISTRIBUTED_BACKEND"] = "gloo"
    os.environ["RENDEZVOUS"] = rendezvous
    os.environ["WORLD_SIZE"] = str(parties)
    os.environ["RANK"] = str(rank)


def start_party(*, rank: int, parties: int, rendezvous: str, provider: str, precision_bits: int,
                timeout_s: float, link_delay_ms: float = 0.0) -> None:
    """Join the run as data party ``rank`` of ``parties`` (blocks until every process has joined).

    ``link_delay_ms`` > 0 emulates a slow network: every dealer request waits that long per message hop
    (mpcdp's own links, :mod:`mpcdp.transport.mesh`, once per round).
    """
    global _link_delay_s
    _link_delay_s = float(link_delay_ms) / 1000.0
    _configure(provider, precision_bits, timeout_s)
    _set_endpoint(rank, parties, rendezvous)
    crypten.init()
    _key_party_generators()


def run_dealer(*, parties: int, rendezvous: str, precision_bits: int, timeout_s: float) -> list[int]:
    """Run the dealer (CrypTen's TTP server, rank ``parties``) until party 0 says ``terminate``; return the
    bytes it wrote to the network for each request, in order (TCP payload, framing included).

    Returns normally when party 0 says ``terminate``. If a party dies, CrypTen's server loop sees a
    RuntimeError from the transport and returns quietly; then this raises
    :class:`~mpcdp.errors.PartyLost` naming the lost party (:mod:`mpcdp.transport.losses`).
    """
    _configure("dealer", precision_bits, timeout_s)
    _set_endpoint(parties, parties, rendezvous)
    # The server's own `crypten.init()` joins the process group as rank `parties`.
    dealer = _Dealer.__new__(_Dealer)
    dealer.request_bytes = []
    dealer.terminated = False
    dealer.__init__()
    if not dealer.terminated:  # CrypTen's server loop ends quietly when a link fails: say who was lost
        from mpcdp.errors import PartyLost
        from mpcdp.transport import losses

        lost, by = losses.resolve(parties, None)
        raise PartyLost(losses.message(lost, by, "the dealer", "its link to the parties failed before party 0 "
                                                              "said `terminate`"), party=lost)
    if _comm.is_initialized():
        _comm.uninit()
    return dealer.request_bytes


def _share_bits(bits: int) -> int | None:
    """Width of XOR shares of a `bits`-bit value (CrypTen draws at most 62-bit or full 64-bit words)."""
    return bits if bits <= 62 else None


def _shift(x: torch.Tensor, s: int) -> torch.Tensor:
    """x shifted left by s (s >= 0) or arithmetically right by −s; commutes with XOR sharing."""
    return x << s if s >= 0 else x >> (-s)


class _Dealer(_ttp_provider.TTPServer):
    """CrypTen's TTP server plus the correlated randomness mpcdp's own integer protocols use.

    Each method returns party 0's share; parties 1..m−1 derive theirs from the generators they share with
    the dealer, drawing in exactly the order used here (see the ``dealer_*`` client functions below).
    ``request_bytes`` gets the bytes the dealer wrote for each request (its last message for a request is
    the broadcast of the result, so the counter is read right after it).
    """

    request_bytes: list[int]

    def _setup_generators(self):
        super()._setup_generators()
        _key_dealer_generators(self)
        self.terminated = False
        receive = _comm.get().recv_obj

        def watched_receive(*args, **kwargs):
            message = receive(*args, **kwargs)
            if isinstance(message, str) and message == "terminate":
                self.terminated = True
            return message

        _comm.get().recv_obj = watched_receive
        communicator = _comm.get()
        original = communicator.broadcast
        sent = [tcp_bytes()[1]]

        def metered_broadcast(*args, **kwargs):
            result = original(*args, **kwargs)
            now = tcp_bytes()[1]
            self.request_bytes.append(now - sent[0])
            sent[0] = now
            return result

        communicator.broadcast = metered_broadcast

    def mpcdp_word_bits(self, n: int, k: int):
        # R: a random k-bit word per element, XOR-shared; plus arithmetic shares of each of its k bits.
        word = self._get_binary_PRSS((n,), bitlength=k)
        bits = (word.unsqueeze(1) >> torch.arange(k)) & 1
        return bits - self._get_additive_PRSS((n, k), remove_rank=True)

    def mpcdp_masked_bits(self, n: int, bits: int):
        # r: a uniform ring element (the sum of every party's pseudo-random share) and its low `bits` bits,
        # XOR-shared.
        r = self._get_additive_PRSS((n,))
        return (r & ((1 << bits) - 1)) ^ self._get_binary_PRSS((n,), bitlength=_share_bits(bits), remove_rank=True)

    def mpcdp_products(self, n: int, variables: int, pairs: list[tuple[int, int]]):
        # A uniform mask per variable and the product of the masks of every requested pair.
        a = self._get_additive_PRSS((n, variables))
        c = torch.stack([a[:, u] * a[:, v] for u, v in pairs], 1)
        return c - self._get_additive_PRSS((n, len(pairs)), remove_rank=True)

    def mpcdp_and_shifted(self, n: int, variables: int, pairs: list[tuple[int, int, int]]):
        # A uniform 64-bit mask per variable and, per pair (u, v, s), mask_u AND (mask_v shifted by s).
        a = self._get_binary_PRSS((n, variables))
        c = torch.stack([a[:, u] & _shift(a[:, v], s) for u, v, s in pairs], 1)
        return c ^ self._get_binary_PRSS((n, len(pairs)), remove_rank=True)

    def mpcdp_trunc_pair(self, n: int, shift: int):
        # r uniform on the ring and floor(r / 2^shift) with r read as unsigned.
        r = self._get_additive_PRSS((n,))
        high = (r >> shift) & ((1 << (64 - shift)) - 1)
        return high - self._get_additive_PRSS((n,), remove_rank=True)


# -- counting CrypTen's own protocols and the dealer traffic (installed once, at import) -----------------

def _numel(value) -> int:
    """Elements of a tensor or of a CrypTen shared tensor (its share)."""
    value = getattr(value, "share", value)
    return int(value.numel()) if torch.is_tensor(value) else 0


def _install_counters() -> None:
    """Wrap CrypTen's tuple providers, its comparison and its communicator so that CrypTen's protocols are
    counted like mpcdp's own (:mod:`mpcdp.transport.costs`), and meter party 0's requests to the dealer."""
    counted = {"generate_additive_triple": ("mul", 2), "square": ("square", 1),
               "generate_binary_triple": ("and_words", 2), "wrap_rng": ("trunc", 0), "B2A_rng": ("b2a_bits", 0)}
    for provider in (_ttp_provider.TrustedThirdParty, _tfp_provider.TrustedFirstParty):
        for name, (kind, index) in counted.items():
            original = getattr(provider, name)
            if getattr(original, "_mpcdp_counted", False):
                continue

            def counting(self, *args, _original=original, _kind=kind, _index=index, **kwargs):
                result = _original(self, *args, **kwargs)
                costs.record(_kind, _numel(result[_index]))
                return result

            counting._mpcdp_counted = True
            setattr(provider, name, counting)

    original_ltz = _MPCTensor._ltz

    def counting_ltz(self, *args, **kwargs):
        costs.record("comparison", _numel(self.share))
        return original_ltz(self, *args, **kwargs)

    _MPCTensor._ltz = counting_ltz

    # CrypTen opens with gloo collectives: a ring all-reduce is 2(m−1) rounds; a broadcast, a gather to one
    # party or a reduce is 1. Traffic on other groups (party 0 and the dealer) is metered as dealer traffic.
    def counting_collective(name: str, rounds_of, group_at: int | None):
        original = getattr(_Communicator, name)

        def wrapped(self, *args, **kwargs):
            group = kwargs.get("group", args[group_at] if group_at is not None and len(args) > group_at else None)
            if group is None or group is self.main_group:
                costs.record_rounds(rounds_of(self.get_world_size()))
            return original(self, *args, **kwargs)

        setattr(_Communicator, name, wrapped)

    counting_collective("all_reduce", lambda m: 2 * (m - 1), None)
    for name in ("broadcast", "gather", "reduce"):
        counting_collective(name, lambda m: 1, 2)

    inner = _ttp_provider.TTPClient._TTPClient__TTPClient
    original_request = inner.ttp_request

    def metered_request(self, func_name, device, *args, **kwargs):
        global _dealer_requests_made
        _dealer_requests_made += 1
        _hop()
        before = tcp_bytes(exclude=costs.link_fds())[1]
        result = original_request(self, func_name, device, *args, **kwargs)
        costs.record_dealer_request(tcp_bytes(exclude=costs.link_fds())[1] - before)
        _hop()
        return result

    inner.ttp_request = metered_request


_dealer_requests_made = 0


def dealer_requests_made() -> int:
    """Requests this process (party 0) has sent to the dealer so far (their order matches the dealer's
    per-request byte counts)."""
    return _dealer_requests_made


_install_counters()


# -- CSPRNG-keyed streams in place of CrypTen's Mersenne-Twister generators ----------------------------------

_KEYED: dict[int, KeyedStream] = {}
_unkeyed_draws = 0
_mt_ring = _rng.generate_random_ring_element
_mt_kbit = _rng.generate_kbit_random_tensor


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


def _keyed_ring(size, ring_size=(2**64), generator=None, **kwargs):
    global _unkeyed_draws
    stream = _stream_for(generator, kwargs)
    if stream is None or ring_size != 2**64:
        _unkeyed_draws += 1
        return _mt_ring(size, ring_size=ring_size, generator=generator, **kwargs)
    shape = _shape(size)
    return stream.words(int(torch.Size(shape).numel())).reshape(shape)


def _keyed_kbit(size, bitlength=None, generator=None, **kwargs):
    global _unkeyed_draws
    if bitlength is None or bitlength == 64:
        return _keyed_ring(size, generator=generator, **kwargs)
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


def _install_keyed_randomness() -> None:
    """Route CrypTen's two drawing functions through keyed streams and key the dealer's generators."""
    for module in (_rng, _ttp_provider, _tfp_provider, _arithmetic, _binary):
        if hasattr(module, "generate_random_ring_element"):
            module.generate_random_ring_element = _keyed_ring
        if hasattr(module, "generate_kbit_random_tensor"):
            module.generate_kbit_random_tensor = _keyed_kbit
    inner = _ttp_provider.TTPClient._TTPClient__TTPClient
    if getattr(inner._setup_generators, "_mpcdp_keyed", False):
        return
    crypten_setup = inner._setup_generators

    def keyed_client_setup(self):
        crypten_setup(self)  # CrypTen's 64-bit seed, kept so its protocol is unchanged
        key = torch.empty(KEY_BYTES // 8, dtype=torch.int64)
        dist.irecv(tensor=key, src=_comm.get().get_ttp_rank(), group=self.ttp_group).wait()
        _KEYED[id(self.generator)] = KeyedStream(_key_bytes(key), b"mpcdp/dealer")

    keyed_client_setup._mpcdp_keyed = True
    inner._setup_generators = keyed_client_setup


def _key_dealer_generators(dealer) -> None:
    """Dealer side of the key set-up: a fresh 256-bit key per party, sent on the dealer's own link."""
    keys = [secure_key() for _ in dealer.generators]
    requests = [dist.isend(tensor=_key_tensor(key), dst=i, group=dealer.ttp_group) for i, key in enumerate(keys)]
    for generator, key in zip(dealer.generators, keys):
        _KEYED[id(generator)] = KeyedStream(key, b"mpcdp/dealer")
    for request in requests:
        request.wait()


def _key_party_generators() -> None:
    """Re-key this party's ``prev``/``next``/``local``/``global`` generators (1 round: a 32-byte key to the
    next party, one from the previous; party 0 broadcasts the global key)."""
    me, parties = rank(), world_size()
    next_key, local_key = secure_key(), secure_key()
    incoming = torch.empty(KEY_BYTES // 8, dtype=torch.int64)
    exchange_pairwise({(me + 1) % parties: _key_tensor(next_key)}, {(me - 1) % parties: incoming})
    global_key = _key_tensor(secure_key() if me == 0 else bytes(KEY_BYTES))
    dist.broadcast(global_key, src=0, group=main_group())
    keys = {"prev": _key_bytes(incoming), "next": next_key, "local": local_key, "global": _key_bytes(global_key)}
    for name, key in keys.items():
        for generator in crypten.generators[name].values():
            # prev of party i and next of party i − 1 hold the same key and must draw the same stream
            domain = b"mpcdp/party-pair" if name in ("prev", "next") else b"mpcdp/party-" + name.encode()
            _KEYED[id(generator)] = KeyedStream(key, domain)


_install_keyed_randomness()


def _dealer_generator():
    if _cfg.mpc.provider != "TTP":
        raise RuntimeError("mpcdp's integer protocols need the `dealer` provider "
                           f"(configured: {_cfg.mpc.provider}).")
    return _ttp_provider.TTPClient.get().get_generator()


def _from_dealer(function: str, *args):
    return _ttp_provider.TTPClient.get().ttp_request(function, None, *args)


def dealer_word_bits(n: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Shares of n random k-bit words R: (XOR share of R, shape (n,); additive shares of its bits, (n, k))."""
    costs.record("b2a_bits", n * k)
    generator = _dealer_generator()
    word = _keyed_kbit((n,), bitlength=k, generator=generator)
    bits = _from_dealer("mpcdp_word_bits", n, k) if rank() == 0 else _keyed_ring((n, k), generator=generator)
    return word, bits


def dealer_masked_bits(n: int, bits: int, *, kind: str = "comparison") -> tuple[torch.Tensor, torch.Tensor]:
    """Shares of n uniform ring elements r: (additive share of r; XOR share of r mod 2^bits). ``kind``: the
    operation counted (a comparison or a conversion to binary)."""
    costs.record(kind, n)
    generator = _dealer_generator()
    r = _keyed_ring((n,), generator=generator)
    low = _from_dealer("mpcdp_masked_bits", n, bits) if rank() == 0 else _keyed_kbit((n,), bitlength=_share_bits(bits),
                                                                                 generator=generator)
    return r, low


def dealer_trunc_pairs(n: int, shift: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Shares of n uniform ring elements r and of floor(r / 2^shift) (r unsigned)."""
    costs.record("trunc", n)
    generator = _dealer_generator()
    r = _keyed_ring((n,), generator=generator)
    high = _from_dealer("mpcdp_trunc_pair", n, shift) if rank() == 0 else _keyed_ring((n,), generator=generator)
    return r, high


def dealer_products(n: int, variables: int, pairs: list[tuple[int, int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Shares of a uniform mask per variable, (n, variables), and of mask_u·mask_v per pair, (n, pairs)."""
    squares = sum(1 for u, v in pairs if u == v)
    costs.record("square", n * squares, calls=int(squares > 0))
    costs.record("mul", n * (len(pairs) - squares), calls=int(len(pairs) > squares))
    generator = _dealer_generator()
    a = _keyed_ring((n, variables), generator=generator)
    c = _from_dealer("mpcdp_products", n, variables, list(pairs)) if rank() == 0 else \
        _keyed_ring((n, len(pairs)), generator=generator)
    return a, c


def dealer_and_shifted(n: int, variables: int, pairs: list[tuple[int, int, int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """XOR shares of a uniform word mask per variable and of mask_u AND shift(mask_v, s) per pair."""
    costs.record("and_words", n * len(pairs))
    generator = _dealer_generator()
    a = _keyed_kbit((n, variables), generator=generator)
    c = _from_dealer("mpcdp_and_shifted", n, variables, list(pairs)) if rank() == 0 else \
        _keyed_kbit((n, len(pairs)), generator=generator)
    return a, c


def shift_word(x: torch.Tensor, s: int) -> torch.Tensor:
    return _shift(x, s)






def stop_party() -> None:
    """Leave the run (party 0 also tells the dealer to terminate)."""
    if _comm.is_initialized():
        crypten.uninit()


def rank() -> int:
    return _comm.get().get_rank()


def world_size() -> int:
    return _comm.get().get_world_size()


def main_group():
    """The torch.distributed group of the data parties (the dealer is not in it)."""
    return _comm.get().main_group


def all_gather_object(obj: Any) -> list:
    """Every data party's ``obj`` in rank order (pickled over the data parties' group)."""
    out: list = [None] * world_size()
    dist.all_gather_object(out, obj, group=main_group())
    return out


def exchange_pairwise(outgoing: dict[int, torch.Tensor], incoming: dict[int, torch.Tensor]) -> None:
    """Send ``outgoing[j]`` to party j and receive into ``incoming[j]`` from party j, all at once."""
    group = main_group()
    requests = [dist.isend(t, dst=j, group=group) for j, t in outgoing.items()]
    requests += [dist.irecv(t, src=j, group=group) for j, t in incoming.items()]
    for request in requests:
        request.wait()






# -- emulated network delay for the dealer's round trips (mpcdp's own links: mpcdp.transport.mesh) -----------

_link_delay_s = 0.0


def _hop() -> None:
    """One message hop of an emulated slow link (``link_delay_ms``); a no-op on a real network."""
    if _link_delay_s:
        time.sleep(_link_delay_s)


def rendezvous() -> str:
    """The rendezvous this process joined with (``tcp://HOST:PORT``, ``env://`` or ``file://...``)."""
    return os.environ.get("RENDEZVOUS", "env://")


def beaver_multiply(share_x: torch.Tensor, share_y: torch.Tensor, precision_bits: int) -> torch.Tensor:
    """This party's share of x·y (element-wise) by CrypTen's Beaver protocol with the configured provider.

    Cost: 1 round opening ε = x − a and δ = y − b (2n ring elements), then truncation by 2^bits — local
    for 2 parties, CrypTen's wraps protocol (a dealer `wrap_rng` + 1 more opening) for more.
    """
    x = _MPCTensor.from_shares(share_x, precision=precision_bits)
    y = _MPCTensor.from_shares(share_y, precision=precision_bits)
    return (x * y).share


def crypten_randn(n: int, *, sigma: float, precision_bits: int) -> torch.Tensor:
    """This party's share of σ·crypten.randn(n) (CrypTen's Box–Muller; for comparison only)."""
    if _cfg.encoder.precision_bits != precision_bits:
        raise ValueError(f"CrypTen runs at {_cfg.encoder.precision_bits} fractional bits, not {precision_bits}")
    return (crypten.randn(n) * float(sigma)).share


@dataclasses.dataclass
class PartyView:
    """Plaintext this party held while a protocol ran: correlated-randomness material it generated
    locally (``generated``) and every value an opening delivered to it (``opened``)."""

    generated: list[torch.Tensor] = dataclasses.field(default_factory=list)
    opened: list[torch.Tensor] = dataclasses.field(default_factory=list)


@contextlib.contextmanager
def record_view() -> Iterator[PartyView]:
    """Record this party's view of the CrypTen protocols run inside the block (for security tests).

    Under ``tfp``, party 0's ``generated`` holds the plaintext Beaver triples; under ``dealer`` it holds
    only this party's own pseudo-random shares of them.
    """
    view = PartyView()
    originals = {mod: mod.generate_random_ring_element for mod in (_tfp_provider, _ttp_provider)}
    communicator = _comm.get()
    original_all_reduce = communicator.all_reduce

    def recording_generator(original):
        def generate(*args, **kwargs):
            value = original(*args, **kwargs)
            view.generated.append(value.clone())
            return value
        return generate

    def recording_all_reduce(*args, **kwargs):
        value = original_all_reduce(*args, **kwargs)
        for tensor in (value if isinstance(value, list) else [value]):
            view.opened.append(tensor.clone())
        return value

    try:
        for mod, original in originals.items():
            mod.generate_random_ring_element = recording_generator(original)
        communicator.all_reduce = recording_all_reduce
        yield view
    finally:
        for mod, original in originals.items():
            mod.generate_random_ring_element = original
        del communicator.all_reduce
