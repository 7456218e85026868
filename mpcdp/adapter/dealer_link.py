"""The link between the data parties and the dealer, both ends side by side.

The dealer is a process of the run like the parties: it listens, publishes its endpoint at the rendezvous
and connects to every data party over mpcdp's links (:mod:`mpcdp.transport.mesh`; TLS 1.3 with the
deployment's credentials). On that link:

* at start-up the dealer sends each party a fresh 256-bit key (one int64 frame of 4 words, ``dealer key``).
  The party's copy of CrypTen's dealer generator draws from it (:mod:`.keyed`); the dealer draws the same
  stream to compute the correlated values;
* party 0 sends requests, one JSON frame each (``dealer request``: ``{"function", "device", "args",
  "kwargs"}``, or ``"terminate"``), which the dealer checks against its allow-list
  (:func:`.objects.check_request`) before it serves anything;
* the dealer answers with the shape (JSON, ``dealer reply shape``) and party 0's share (int64,
  ``dealer reply``). Party 0 knows from its own request which shape the reply must have
  (:func:`.objects.reply_shape`) and refuses any other — and any over :data:`MAX_REPLY_ELEMENTS` — with
  :class:`~mpcdp.errors.ProtocolViolation` naming the dealer (``party`` = the dealer's rank), before it
  allocates the reply or reads a byte of it.

:class:`DealerClient` is what CrypTen reaches as ``TTPClient.get()``; :func:`serve` is the dealer's loop.

Security model: the dealer is trusted not to collude with a data party (the guide mpcdp/README.md, "Threat model"); the
link keeps the network out of the keys and of party 0's material. Declared cost per request: 3 frames
(48 bytes of headers), the request's JSON, the reply shape's JSON and 8 bytes per element of party 0's
share, plus 2 emulated hops (``link_delay_ms``); per party at start-up, one 32-byte key.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable, Protocol

import torch

from mpcdp.adapter import keyed, metering, objects
from mpcdp.adapter import dealer_view
from mpcdp.adapter import auth_bits, mac_material, material
from mpcdp.adapter.compat import ttp_provider
from mpcdp.errors import ConfigError, ProtocolViolation
from mpcdp.randomness import KEY_BYTES, secure_key
from mpcdp.transport import costs, public
from mpcdp.transport.mesh import Mesh

KEY_LABEL = "dealer key"
REQUEST_LABEL = "dealer request"
SHAPE_LABEL = "dealer reply shape"
REPLY_LABEL = "dealer reply"
MAX_REPLY_ELEMENTS = 1 << 28
_DOMAIN = b"mpcdp/dealer"


class TtpClient(Protocol):
    """CrypTen's ``TTPClient`` interface, what its providers and :mod:`.material` call on the dealer's client:
    :class:`DealerClient`, or one that refuses every request (:class:`mpcdp.adapter.session.NoDealer`)."""

    def get_generator(self, device: Any = None) -> Any: ...

    def ttp_request(self, func_name: str, device: Any, *args: Any, **kwargs: Any) -> Any: ...


class DealerClient:
    """A data party's end of its dealer link (CrypTen's ``TTPClient`` interface)."""

    def __init__(self, mesh: Mesh, dealer: int):
        self.mesh, self.dealer = mesh, dealer
        key = torch.empty(KEY_BYTES // 8, dtype=torch.int64)
        mesh.exchange({}, {dealer: key}, label=KEY_LABEL)
        self.generator = torch.Generator(device="cpu")
        self.generator_cuda = None
        keyed.register(self.generator, keyed.key_bytes(key), _DOMAIN)

    def get_generator(self, device=None) -> torch.Generator:
        return self.generator

    def ttp_request(self, func_name: str, device, *args, **kwargs) -> torch.Tensor:
        """Party 0 asks the dealer for its share of ``func_name`` material and returns it."""
        if self.mesh.rank != 0:
            raise RuntimeError("only party 0 sends requests to the dealer")
        message = {"function": func_name, "device": None if device is None else str(device), "args": list(args),
                   "kwargs": dict(kwargs)}
        expected = objects.reply_shape(message, material.KINDS + mac_material.KINDS + auth_bits.KINDS)
        if math.prod(expected) > MAX_REPLY_ELEMENTS:
            raise ConfigError(f"a dealer request for {func_name!r} of shape {list(expected)} exceeds the "
                              f"{MAX_REPLY_ELEMENTS} elements a reply may have: use smaller batches")
        metering.count_dealer_request()
        metering.hop()
        before = self.mesh.wire_bytes_sent()
        raw = self.mesh.exchange_text({self.dealer: public.encode(message)}, [self.dealer], label=REQUEST_LABEL,
                                      answer_label=SHAPE_LABEL, limit=4096)[self.dealer]  # its frames, one wait
        shape = self._check_shape(public.decode(raw, peer=self.dealer, label=SHAPE_LABEL), func_name, expected)
        result = torch.empty(shape, dtype=torch.int64)
        self.mesh.exchange({}, {self.dealer: result.view(-1)}, label=REPLY_LABEL)
        kind = func_name[len("mpcdp_"):] if func_name.startswith("mpcdp_") else f"crypten {func_name}"
        costs.record_dealer_request(self.mesh.wire_bytes_sent() - before, kind)
        metering.hop()
        return result

    def _check_shape(self, shape, func_name: str, expected: tuple[int, ...]) -> tuple[int, ...]:
        """The announced reply shape if it is the one the request asks for (which is within
        :data:`MAX_REPLY_ELEMENTS`), else :class:`~mpcdp.errors.ProtocolViolation` naming the dealer."""
        if not (isinstance(shape, list) and all(isinstance(n, int) and not isinstance(n, bool) for n in shape)
                and tuple(shape) == expected):
            raise ProtocolViolation(f"the dealer (rank {self.dealer}) announced a reply of shape {str(shape)[:80]} "
                                    f"to a {func_name!r} request, which asks for shape {list(expected)}",
                                    party=self.dealer)
        return expected

    def terminate(self) -> None:
        """Party 0 tells the dealer the run is over."""
        self.mesh.exchange_text({self.dealer: public.encode("terminate")}, [], label=REQUEST_LABEL)

    def close(self, *, orderly: bool = True) -> None:
        """Leave: party 0 tells the dealer the run is over (``orderly``), then the link closes."""
        try:
            if orderly and self.mesh.rank == 0:
                self.terminate()
        finally:
            self.mesh.close(orderly=orderly)


def install_client(client: TtpClient | None) -> None:
    """Make ``client`` what CrypTen's providers and :mod:`.material` reach as ``TTPClient.get()``."""
    ttp_provider.TTPClient._TTPClient__instance = client


def serve(mesh: Mesh, dealer, allowed: tuple[str, ...],
          on_request: Callable[[int, int], None] | None = None) -> tuple[list[int], list[float]]:
    """The dealer's loop: key every party, then serve party 0's requests until ``terminate``; return the
    bytes written to the network for each request (TLS records included where links are TLS) and the CPU
    seconds this process spent making each reply. ``on_request(served, sent)``: called after each request with
    the requests served and the bytes written so far (the dealer's progress lines)."""
    parties = [j for j in mesh.links]
    keys = {j: secure_key() for j in parties}
    for j, generator in enumerate(dealer.generators):
        keyed.register(generator, keys[j], _DOMAIN)
    mesh.exchange({j: keyed.key_tensor(keys[j]) for j in parties}, {}, label=KEY_LABEL)
    request_bytes: list[int] = []
    request_cpu: list[float] = []
    while True:
        # idle time between requests is the parties' own computation: no deadline here (a party that stops
        # closes its link, which ends the wait)
        raw = mesh.exchange_text({}, [0], label=REQUEST_LABEL, limit=objects.MAX_OBJECT_BYTES, patient=True)[0]
        message = public.decode(raw, peer=0, label=REQUEST_LABEL)
        objects.check_request(message, allowed)
        if message == "terminate":
            return request_bytes, request_cpu
        before, cpu = mesh.wire_bytes_sent(), time.process_time()
        dealer.device = "cpu"
        result = getattr(dealer, message["function"])(*message["args"], **message["kwargs"])
        request_cpu.append(time.process_time() - cpu)
        dealer_view.note_request(message["function"], message["args"])
        mesh.exchange_text({0: public.encode(list(result.shape))}, [], label=SHAPE_LABEL)
        mesh.exchange({0: result.reshape(-1).contiguous()}, {}, label=REPLY_LABEL)
        request_bytes.append(mesh.wire_bytes_sent() - before)
        if on_request is not None:
            on_request(len(request_bytes), mesh.wire_bytes_sent())
