"""The link between the data parties and the dealer, both ends side by side.

The dealer is a process of the run like the parties: it listens, publishes its endpoint at the rendezvous
and connects to every data party over mpcdp's links (:mod:`mpcdp.transport.mesh`; TLS 1.3 with the
deployment's credentials). On that link:

* at start-up the dealer sends each party a fresh 256-bit key (one int64 frame of 4 words, ``dealer key``).
  The party's copy of CrypTen's dealer generator draws from it (:mod:`.keyed`); the dealer draws the same
  stream to compute the correlated values;
* party 0 sends requests, one JSON frame each (``dealer request``: ``{"function", "device", "args",
  "kwargs"}``, or ``"terminate"``), which the dealer checks against its allow-list
  (:func:`.objects.check_request`) and, for mpcdp's kinds, its arguments (int64 integers, null, or lists of
  them; each kind's ``reply_shape`` checks their ranges) and its reply's shape (at most
  :data:`MAX_REPLY_ELEMENTS`) before it serves anything (:func:`_elements`): else a
  :class:`~mpcdp.errors.ProtocolViolation` naming party 0;
* the dealer answers the request's receiver with the shape (JSON, ``dealer reply shape``) and the receiver's
  share (int64, ``dealer reply``). The receiver is party 0 for CrypTen's kinds and the authenticated ones;
  for the kinds of :data:`.material.ROTATING` it is the member the material is scoped to that has received the
  fewest reply elements so far (:class:`Receivers`, kept in step by the dealer and every member from public
  shapes only), so no one member decrypts and unpacks every reply; the other members draw their shares from
  their keys, as before. The receiver knows from the request (which every member computes) which shape the
  reply must have (:func:`.objects.reply_shape`) and refuses any other — and any over
  :data:`MAX_REPLY_ELEMENTS` — with :class:`~mpcdp.errors.ProtocolViolation` naming the dealer (``party`` =
  the dealer's rank), before it allocates the reply or reads a byte of it.

:class:`DealerClient` is what CrypTen reaches as ``TTPClient.get()``; :func:`serve` is the dealer's loop.

Security model: the dealer is trusted not to collude with a data party (the guide mpcdp/README.md, "Threat model"); the
link keeps the network out of the keys and of the receivers' material. An explicit share is a uniform additive
(or XOR) share whichever member receives it. Declared cost per request: 3 frames (48 bytes of headers), the
request's JSON (from party 0), the reply shape's JSON and 8 bytes per element of the receiver's share (to
the receiver), plus 2 emulated hops (``link_delay_ms``); per party at start-up, one 32-byte key.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable, Protocol

import torch

from mpcdp.adapter import keyed, metering, objects
from mpcdp.adapter import dealer_view
from mpcdp.adapter import auth_bits, bounded_masks, mac_material, material, square_masks
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


class Receivers:
    """Who receives the dealer's reply to each rotating request: among the members the material is scoped to
    (``members``, party 0 first), the one that has received the fewest reply elements so far in this scope (the
    first such in rank order on a tie). The dealer and every member keep one, in step: a member takes part in
    every request of its scope, a party off a committee in none of the committee's, and the counts are of
    public shapes."""

    def __init__(self, members):
        self.members = list(members)
        self._loads: dict[tuple[int, ...], list[int]] = {}

    def next(self, elements: int) -> int:
        """The receiver (its rank) of the next rotating request, whose reply has ``elements`` elements."""
        loads = self._loads.setdefault(tuple(self.members), [0] * len(self.members))
        index = min(range(len(loads)), key=lambda i: (loads[i], i))
        loads[index] += elements
        return self.members[index]


REQUEST_KINDS = material.KINDS + bounded_masks.KINDS + mac_material.KINDS + auth_bits.KINDS + square_masks.KINDS
"""Every mpcdp kind of material a request may name: its reply's shape is the kind's ``reply_shape``."""


def _message(func_name: str, device: Any, args: tuple, kwargs: dict) -> dict[str, Any]:
    """A request as it goes on the link, and the reply shape it asks for (checked against the allow-list's limits)."""
    message = {"function": func_name, "device": None if device is None else str(device), "args": list(args),
               "kwargs": dict(kwargs)}
    expected = objects.reply_shape(message, REQUEST_KINDS)
    if math.prod(expected) > MAX_REPLY_ELEMENTS:
        raise ConfigError(f"a dealer request for {func_name!r} of shape {list(expected)} exceeds the "
                          f"{MAX_REPLY_ELEMENTS} elements a reply may have: use smaller batches")
    return {"message": message, "expected": expected}


class DealerClient:
    """A data party's end of its dealer link (CrypTen's ``TTPClient`` interface)."""

    def __init__(self, mesh: Mesh, dealer: int):
        self.mesh, self.dealer = mesh, dealer
        key = torch.empty(KEY_BYTES // 8, dtype=torch.int64)
        mesh.exchange({}, {dealer: key}, label=KEY_LABEL)
        self.generator = torch.Generator(device="cpu")
        self.generator_cuda = None
        keyed.register(self.generator, keyed.key_bytes(key), _DOMAIN)
        self.receivers = Receivers(j for j in range(mesh.parties) if j != dealer)

    def get_generator(self, device=None) -> torch.Generator:
        return self.generator

    def ttp_request(self, func_name: str, device, *args, **kwargs) -> torch.Tensor:
        """Party 0 asks the dealer for ``func_name`` material and returns its share (a kind whose reply is
        party 0's: CrypTen's and the authenticated ones)."""
        share = self._ask(_message(func_name, device, args, kwargs), 0)
        assert share is not None
        return share

    def dealt(self, func_name: str, draw: Callable[[], torch.Tensor], *args,
              reply: Callable[[torch.Tensor], Any] | None = None) -> Any:
        """Every member: its share of a rotating request's material (:class:`Receivers`). Party 0 sends the
        request; the receiver gets its share from the dealer (passed through ``reply``); every other member
        draws its share with ``draw`` from its keyed generator, at the same point of its stream as the dealer."""
        request = _message(func_name, None, args, {})
        receiver = self.receivers.next(math.prod(request["expected"]))
        share = None
        if self.mesh.rank == 0:
            share = self._ask(request, receiver)
        elif self.mesh.rank == receiver:
            raw = self.mesh.exchange_text({}, [self.dealer], label=SHAPE_LABEL, limit=4096)[self.dealer]
            share = self._reply(raw, func_name, request["expected"])
        if share is None:
            return draw()
        return share if reply is None else reply(share)

    def _ask(self, request: dict[str, Any], receiver: int) -> torch.Tensor | None:
        """Party 0 sends ``request`` (:func:`_message`); returns the reply if party 0 is its ``receiver``."""
        if self.mesh.rank != 0:
            raise RuntimeError("only party 0 sends requests to the dealer")
        func_name = request["message"]["function"]
        metering.count_dealer_request()
        metering.hop()
        before, encoded = self.mesh.wire_bytes_sent(), public.encode(request["message"])
        result = None
        if receiver != 0:
            self.mesh.exchange_text({self.dealer: encoded}, [], label=REQUEST_LABEL)
        else:
            raw = self.mesh.exchange_text({self.dealer: encoded}, [self.dealer], label=REQUEST_LABEL,
                                          answer_label=SHAPE_LABEL, limit=4096)[self.dealer]  # its frames, one wait
            result = self._reply(raw, func_name, request["expected"])
        costs.record_dealer_request(self.mesh.wire_bytes_sent() - before, _kind(func_name), receiver=receiver)
        return result

    def _reply(self, raw: bytes, func_name: str, expected: tuple[int, ...]) -> torch.Tensor:
        """The reply after its announced shape ``raw``: checked against ``expected`` before it is read."""
        shape = self._check_shape(public.decode(raw, peer=self.dealer, label=SHAPE_LABEL), func_name, expected)
        result = torch.empty(shape, dtype=torch.int64)
        self.mesh.exchange({}, {self.dealer: result.view(-1)}, label=REPLY_LABEL)
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


def _elements(message: dict) -> int:
    """The elements of the reply party 0's request asks for (its shape checked as serving would; an mpcdp kind's
    arguments first: each an int64 integer, null or a list of them), at most :data:`MAX_REPLY_ELEMENTS`."""
    def words(x: Any) -> bool:  # an int64, or null, or a list of such (windows: lists of pairs)
        if isinstance(x, list):
            return all(words(y) for y in x)
        return x is None or (isinstance(x, int) and not isinstance(x, bool) and -(1 << 63) <= x < 1 << 63)

    try:
        if message["function"].startswith("mpcdp_") and (message["kwargs"] or not words(message["args"])):
            raise ValueError("arguments must be int64 integers, null or lists of them, and no keywords")
        shape = objects.reply_shape(message, REQUEST_KINDS)
        if any(d < 0 for d in shape) or math.prod(shape) > MAX_REPLY_ELEMENTS:
            raise ValueError(f"a reply of shape {list(shape)[:4]} (at most {MAX_REPLY_ELEMENTS} elements)")
        return math.prod(shape)
    except (TypeError, ValueError, IndexError, KeyError) as exc:
        raise ProtocolViolation(f"party 0 sent the dealer a {message['function']!r} request with malformed "
                                f"arguments: {str(exc)[:80]}", party=0) from exc


def _kind(func_name: str) -> str:
    return func_name[len("mpcdp_"):] if func_name.startswith("mpcdp_") else f"crypten {func_name}"


def install_client(client: TtpClient | None) -> None:
    """Make ``client`` what CrypTen's providers and :mod:`.material` reach as ``TTPClient.get()``."""
    ttp_provider.TTPClient._TTPClient__instance = client


ROTATING = frozenset(kind.request_name() for kind in material.ROTATING + bounded_masks.ROTATING + auth_bits.ROTATING)
"""The requests whose receiver rotates (:class:`Receivers`)."""


def serve(mesh: Mesh, dealer, allowed: tuple[str, ...],
          on_request: Callable[[int, int], None] | None = None) -> tuple[list[int], list[float]]:
    """The dealer's loop: key every party, then serve party 0's requests (each reply to its receiver,
    :class:`Receivers`) until ``terminate``; return the
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
        elements = _elements(message)
        receiver = dealer.receivers.next(elements) if message["function"] in ROTATING else 0
        dealer.explicit = dealer.receivers.members.index(receiver)  # whose share is the reply (the others draw)
        result = getattr(dealer, message["function"])(*message["args"], **message["kwargs"])
        request_cpu.append(time.process_time() - cpu)
        dealer_view.note_request(message["function"], message["args"])
        mesh.exchange_text({receiver: public.encode(list(result.shape))}, [], label=SHAPE_LABEL)
        mesh.exchange({receiver: result.reshape(-1).contiguous()}, {}, label=REPLY_LABEL)
        request_bytes.append(mesh.wire_bytes_sent() - before)
        if on_request is not None:
            on_request(len(request_bytes), mesh.wire_bytes_sent())
