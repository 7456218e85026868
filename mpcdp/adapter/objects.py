"""CrypTen's object messages (``send_obj``, ``recv_obj``, ``broadcast_obj``) as JSON instead of pickle, and the
dealer's allow-list of requests.

CrypTen sends Python objects between processes pickled. It uses them for party 0's requests to the dealer,
for the dealer's replies (result sizes) and for the ``terminate`` message. A restricted unpickler still
parses attacker-chosen pickle opcodes. The dealer then calls whatever method the request names, and the
``additive`` request names a torch function by string. Here:

* the three methods are replaced on CrypTen's communicator class. The same length-prefixed tensor framing
  carries UTF-8 JSON in mpcdp's public schema (:mod:`mpcdp.transport.public`): tuples and ``torch.Size``
  become lists, and nothing is unpickled. A payload above :data:`MAX_OBJECT_BYTES` or one that is not
  valid JSON is refused, naming the sender;
* :func:`check_request` is what the dealer accepts. It takes ``terminate`` or a request whose function is
  one of CrypTen's material kinds or mpcdp's own (:data:`mpcdp.adapter.material.KINDS`), with only the torch
  operations CrypTen's Beaver products use. Anything else stops the dealer with
  :class:`~mpcdp.errors.ProtocolViolation` naming party 0.

Security model: the dealer and party 0 exchange public sizes and names only; each side checks what it
reads. Cost: the JSON text of a request is a few dozen bytes longer or shorter than its pickle.
"""

from __future__ import annotations

from typing import Any

import numpy
import torch
import torch.distributed as dist

from mpcdp.errors import ProtocolViolation
from mpcdp.transport import public

MAX_OBJECT_BYTES = 1 << 20
CRYPTEN_KINDS = ("additive", "square", "binary", "wraps", "B2A")
BEAVER_OPS = ("mul", "matmul", "conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d")


def _encode(obj: Any) -> torch.Tensor:
    raw = public.encode(obj)
    return torch.from_numpy(numpy.frombuffer(raw, dtype=numpy.int8).copy())


def _decode(data: torch.Tensor, src: int) -> Any:
    return public.decode(data.numpy().tobytes(), peer=src, label="CrypTen object message")


def _size_ok(size: torch.Tensor, src: int) -> int:
    n = int(size.item())
    if not 0 < n <= MAX_OBJECT_BYTES:
        raise ProtocolViolation(f"process {src} announced an object message of {n} bytes; expected 1 to "
                                f"{MAX_OBJECT_BYTES}", party=src)
    return n


def send_obj(self, obj, dst, group=None):
    group = self.main_group if group is None else group
    arr = _encode(obj)
    size = torch.tensor(arr.numel(), dtype=torch.int32)
    requests = [dist.isend(size, dst=dst, group=group), dist.isend(arr, dst=dst, group=group)]
    for request in requests:
        request.wait()


def recv_obj(self, src, group=None):
    group = self.main_group if group is None else group
    size = torch.tensor(1, dtype=torch.int32)
    dist.irecv(size, src=src, group=group).wait()
    data = torch.empty(size=(_size_ok(size, src),), dtype=torch.int8)
    dist.irecv(data, src=src, group=group).wait()
    return _decode(data, src)


def broadcast_obj(self, obj, src, group=None):
    group = self.main_group if group is None else group
    if self.rank == src:
        arr = _encode(obj)
        dist.broadcast(torch.tensor(arr.numel(), dtype=torch.int32), src, group=group)
        dist.broadcast(arr, src, group=group)
        return public.decode(public.encode(obj), peer=src, label="CrypTen object message")
    size = torch.tensor(1, dtype=torch.int32)
    dist.broadcast(size, src, group=group)
    data = torch.empty(size=(_size_ok(size, src),), dtype=torch.int8)
    dist.broadcast(data, src, group=group)
    return _decode(data, src)


def install(communicator_class) -> None:
    """Replace the pickling object messages of CrypTen's communicator class (idempotent)."""
    communicator_class.send_obj = send_obj
    communicator_class.recv_obj = recv_obj
    communicator_class.broadcast_obj = broadcast_obj


def check_request(message: Any, allowed: tuple[str, ...]) -> None:
    """Refuse a dealer request that is not ``terminate`` or a request for an allowed kind of material."""
    def refuse(what: str):
        raise ProtocolViolation(f"party 0 sent the dealer {what}; the dealer serves only {sorted(allowed)} and "
                                f"`terminate`", party=0)

    if message == "terminate":
        return
    if not isinstance(message, dict) or set(message) != {"function", "device", "args", "kwargs"}:
        refuse("a message that is not a material request")
    function, args, kwargs = message["function"], message["args"], message["kwargs"]
    if function not in allowed:
        refuse(f"a request for {function!r}")
    if not isinstance(args, list) or not isinstance(kwargs, dict) or message["device"] not in (None, "cpu"):
        refuse(f"a request for {function!r} with malformed arguments")
    if function == "additive" and (len(args) < 3 or args[2] not in BEAVER_OPS):
        refuse(f"an `additive` request for the operation {args[2] if len(args) > 2 else None!r}")
