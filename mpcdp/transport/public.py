"""Public metadata between parties in one fixed schema: JSON, never pickle.

What parties exchange in the clear is configuration descriptions, shapes, flags, problem descriptions and,
for the plain-learner baselines, noisy tensors. :func:`encode` writes it as UTF-8 JSON. JSON's own types
are allowed: null, booleans, numbers, strings, lists and objects with string keys. Tuples become lists. A
torch tensor of int64 or float64 becomes ``{"$tensor": {"dtype", "shape", "data"}}``, where data is the
little-endian bytes in base64. :func:`decode` accepts exactly that and nothing else. It refuses any other
shape of payload with :class:`~mpcdp.errors.ProtocolViolation`, naming the peer. Decoding never runs code,
so a pickled object from a peer is only text that fails to parse.
"""

from __future__ import annotations

import base64
import json
import math
from typing import Any

import torch

from mpcdp.errors import ProtocolViolation

_DTYPES = {"int64": torch.int64, "float64": torch.float64}
_MAX_DEPTH = 32


def _plain(value: Any) -> Any:
    if torch.is_tensor(value):
        name = {torch.int64: "int64", torch.float64: "float64"}.get(value.dtype)
        if name is None:
            value, name = value.to(torch.float64), "float64"
        raw = value.detach().contiguous().numpy().astype("<" + ("i8" if name == "int64" else "f8")).tobytes()
        return {"$tensor": {"dtype": name, "shape": list(value.shape), "data": base64.b64encode(raw).decode()}}
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise TypeError(f"public metadata needs string keys. Found {sorted(map(repr, value))}.")
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"public metadata must be JSON types or tensors. Found {type(value).__name__}.")


def encode(value: Any) -> bytes:
    """``value`` as UTF-8 JSON (see the module docstring for what may be in it)."""
    return json.dumps(_plain(value), separators=(",", ":"), allow_nan=True).encode("utf-8")


def _tensor(spec: Any) -> torch.Tensor:
    if not isinstance(spec, dict) or set(spec) != {"dtype", "shape", "data"} or spec["dtype"] not in _DTYPES:
        raise ValueError("a $tensor needs exactly dtype (int64|float64), shape and data")
    shape = spec["shape"]
    if not isinstance(shape, list) or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0
                                              for n in shape):
        raise ValueError(f"a $tensor's shape must be a list of sizes; found {shape!r}")
    raw = base64.b64decode(spec["data"], validate=True)
    count = math.prod(shape)
    if len(raw) != 8 * count:
        raise ValueError(f"a $tensor of shape {shape} needs {8 * count} bytes; found {len(raw)}")
    dtype = _DTYPES[spec["dtype"]]
    return torch.frombuffer(bytearray(raw), dtype=dtype).reshape(shape).clone()


def _restore(value: Any, depth: int = 0) -> Any:
    if depth > _MAX_DEPTH:
        raise ValueError(f"nested deeper than {_MAX_DEPTH} levels")
    if isinstance(value, dict):
        if "$tensor" in value:
            if len(value) != 1:
                raise ValueError("a $tensor object has no other keys")
            return _tensor(value["$tensor"])
        return {k: _restore(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_restore(v, depth + 1) for v in value]
    return value


def decode(payload: bytes, *, peer: int, label: str) -> Any:
    """The value party ``peer`` sent at step ``label``; raises ProtocolViolation naming it if the payload is
    not the schema's JSON."""
    try:
        return _restore(json.loads(payload.decode("utf-8")))
    except (UnicodeDecodeError, ValueError, RecursionError, TypeError) as exc:
        raise ProtocolViolation(f"party {peer} sent public metadata at step {label!r} that is not mpcdp's JSON "
                                f"schema ({type(exc).__name__}: {str(exc)[:120]}); {len(payload)} bytes refused",
                                party=peer) from None
