"""CrypTen's object messages (``broadcast_obj``, ``send_obj``, ``recv_obj``) in mpcdp's public JSON, never pickled:
JSON values, tuples, sets, tensors with their dtype, and the torch modules CrypTen lets itself deserialize.

CrypTen sends sizes this way, and ``crypten.load_from_party`` sends the object it loaded at its source party —
a tensor, or a module with its parameters zeroed — to every other party. CrypTen pickles them, and its
receivers unpickle with its restricted unpickler, which rebuilds only the classes on CrypTen's allow-list
(``crypten.common.serial``: torch.nn's common layers and losses, and the classes registered with
``register_safe_class``; ``load_from_party`` registers its ``model_class``). Here a value becomes the public
schema's JSON (:mod:`mpcdp.transport.public`) with tags for what JSON lacks:

* ``{"$tuple": [...]}``, ``{"$set": [...]}``, ``{"$odict": [[key, value], ...]}`` (string keys);
* ``{"$typed": {"kind", "dtype", "requires_grad", "shape", "data"}}``: a tensor or parameter with its own dtype
  (exact: the values travel as int64 or float64, ``data`` null for an all-zero tensor);
* ``{"$module": {"class", "state"}}``: a torch module, its class named and its ``__dict__`` encoded.

Security model: decoding runs no code of the sender's choosing. A module's class is looked up by name in this
party's own copy of CrypTen's allow-list, never imported; the module is created without its ``__init__`` and
given the decoded state (``Module.__setstate__``, as unpickling does); any other tag, dtype or class is refused
as a :class:`~mpcdp.errors.ProtocolViolation` naming the sender, and so are all-zero tensors (which travel as a
shape) of more than :data:`MAX_ZERO_ELEMENTS` elements in one message. So the same objects arrive as with
CrypTen's own communicator, and no pickle crosses a link.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import torch

from mpcdp.adapter.compat import deserializable_classes
from mpcdp.errors import ProtocolViolation

_DTYPES = {str(dtype).removeprefix("torch."): dtype for dtype in (
    torch.float64, torch.float32, torch.float16, torch.bfloat16,
    torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool)}
_MAX_DEPTH = 32
MAX_ZERO_ELEMENTS = 1 << 24  # what one message's all-zero tensors may allocate (a zeroed model of 16M parameters)


def class_name(cls: type) -> str:
    """A class's name as CrypTen's allow-list keys it (``module.QualifiedName``)."""
    return f"{cls.__module__}.{cls.__qualname__}"


def encode(value: Any) -> Any:
    """``value`` as the public schema's JSON types (see the module docstring).

    Raises:
        TypeError: ``value`` holds something else (a function, a hook, an arbitrary object).
    """
    if isinstance(value, torch.nn.Module):
        return {"$module": {"class": class_name(type(value)), "state": _encode_keys(vars(value))}}
    if torch.is_tensor(value):
        return {"$typed": _encode_tensor(value)}
    if isinstance(value, OrderedDict):
        return {"$odict": [[key, encode(item)] for key, item in _encode_keys(value).items()]}
    if isinstance(value, dict):
        return _encode_keys(value)
    if isinstance(value, tuple):
        return {"$tuple": [encode(item) for item in value]}
    if isinstance(value, (set, frozenset)):
        return {"$set": [encode(item) for item in value]}
    if isinstance(value, list):
        return [encode(item) for item in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"CrypTen's object messages over mpcdp's links carry JSON values, tensors and the torch modules "
                    f"CrypTen may deserialize. Found {type(value).__name__}.")


def _encode_keys(mapping: dict) -> dict:
    if not all(isinstance(key, str) and not key.startswith("$") for key in mapping):
        raise TypeError(f"an object message's dictionaries need string keys not starting with '$'. Found "
                        f"{sorted(map(repr, mapping))[:5]}.")
    return {key: encode(item) for key, item in mapping.items()}


def _encode_tensor(tensor: torch.Tensor) -> dict:
    name = str(tensor.dtype).removeprefix("torch.")
    if name not in _DTYPES:
        raise TypeError(f"an object message's tensors are one of {sorted(_DTYPES)}. Found {tensor.dtype}.")
    data = tensor.detach()
    wire = data.to(torch.float64 if data.is_floating_point() else torch.int64)
    return {"kind": "parameter" if isinstance(tensor, torch.nn.Parameter) else "tensor", "dtype": name,
            "requires_grad": bool(tensor.requires_grad), "shape": list(tensor.shape),
            "data": wire.reshape(-1) if bool(data.any()) else None}


def decode(value: Any, *, peer: int) -> Any:
    """What party ``peer`` sent, from the public schema's JSON (:func:`encode`'s output, decoded by
    :func:`mpcdp.transport.public.decode`).

    Raises:
        ProtocolViolation: a tag, dtype, shape or class this party does not accept, or all-zero tensors of more
            than :data:`MAX_ZERO_ELEMENTS` elements in all; names ``peer``.
    """
    try:
        return _Decoder().decode(value, 0)
    except (TypeError, ValueError, KeyError, RuntimeError) as exc:
        raise ProtocolViolation(f"party {peer} sent a CrypTen object message this party refuses "
                                f"({type(exc).__name__}: {str(exc)[:200]})", party=peer) from None


class _Decoder:
    """One message's decoding; ``zeros_left`` bounds what its all-zero tensors (sent as a shape only) may
    allocate."""

    def __init__(self):
        self.zeros_left = MAX_ZERO_ELEMENTS
        self.tags = {"$tuple": lambda items, depth: tuple(self.items(items, depth)),
                     "$set": lambda items, depth: set(self.items(items, depth)),
                     "$odict": self.pairs, "$typed": self.tensor, "$module": self.module}

    def decode(self, value: Any, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            raise ValueError(f"nested deeper than {_MAX_DEPTH} levels")
        if isinstance(value, list):
            return [self.decode(item, depth + 1) for item in value]
        if not isinstance(value, dict):
            return value
        tags = [key for key in value if key.startswith("$")]
        if not tags:
            return {key: self.decode(item, depth + 1) for key, item in value.items()}
        if len(value) != 1 or tags[0] not in self.tags:
            raise ValueError(f"unknown or mixed tags {sorted(tags)[:5]}")
        return self.tags[tags[0]](value[tags[0]], depth + 1)

    def pairs(self, pairs: Any, depth: int) -> OrderedDict:
        if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 and isinstance(p[0], str)
                                                  for p in pairs):
            raise ValueError("$odict holds [key, value] pairs with string keys")
        return OrderedDict((key, self.decode(item, depth + 1)) for key, item in pairs)

    def items(self, items: Any, depth: int) -> list:
        if not isinstance(items, list):
            raise ValueError("$tuple and $set hold a list")
        return [self.decode(item, depth + 1) for item in items]

    def tensor(self, spec: Any, depth: int) -> torch.Tensor:
        if not isinstance(spec, dict) or set(spec) != {"kind", "dtype", "requires_grad", "shape", "data"}:
            raise ValueError("$typed needs exactly kind, dtype, requires_grad, shape and data")
        if spec["kind"] not in ("tensor", "parameter"):
            raise ValueError(f"$typed kind is 'tensor' or 'parameter', not {str(spec['kind'])[:40]!r}")
        dtype, shape, data = _DTYPES[spec["dtype"]], torch.Size(spec["shape"]), spec["data"]
        if data is None:
            self.zeros_left -= shape.numel()
            if self.zeros_left < 0:
                raise ValueError(f"all-zero tensors of more than {MAX_ZERO_ELEMENTS:,} elements in one message")
            tensor = torch.zeros(shape, dtype=dtype)
        elif torch.is_tensor(data) and data.dim() == 1 and data.numel() == shape.numel():
            tensor = data.to(dtype).reshape(shape)
        else:
            raise ValueError(f"$typed data must be a flat tensor of {shape.numel()} values")
        if spec["kind"] == "parameter":
            return torch.nn.Parameter(tensor, requires_grad=bool(spec["requires_grad"]))
        return tensor.requires_grad_(bool(spec["requires_grad"]))

    def module(self, spec: Any, depth: int) -> torch.nn.Module:
        if not isinstance(spec, dict) or set(spec) != {"class", "state"} or not isinstance(spec["state"], dict):
            raise ValueError("$module needs exactly class and a state object")
        cls = deserializable_classes().get(spec["class"])
        if cls is None or not issubclass(cls, torch.nn.Module):
            raise ValueError(f"{str(spec['class'])[:120]!r} is not a module class CrypTen may deserialize here "
                             f"(crypten.common.serial.register_safe_class)")
        module = cls.__new__(cls)
        module.__setstate__(self.decode(spec["state"], depth + 1))
        return module
