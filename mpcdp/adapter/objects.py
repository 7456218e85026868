"""The dealer's allow-list of requests.

CrypTen's dealer calls whatever method a request names, and its ``additive`` request names a torch function
by string. Requests travel as JSON in mpcdp's public schema (:mod:`.dealer_link`, :mod:`mpcdp.transport.public`),
never pickled, and :func:`check_request` is what the dealer accepts: ``terminate``, or a request whose
function is one of CrypTen's material kinds or mpcdp's own (:data:`mpcdp.adapter.material.KINDS`), with
only the torch operations CrypTen's Beaver products use. Anything else stops the dealer with
:class:`~mpcdp.errors.ProtocolViolation` naming party 0.

Party 0, in turn, knows from its own request what shape the reply must have (:func:`reply_shape`: the
shapes CrypTen's TTP methods return for their arguments, and each material kind's ``reply_shape``), and
refuses a reply announcing any other before it allocates anything (:mod:`.dealer_link`).

Security model: the dealer and party 0 exchange public sizes and names only; each side checks what it
reads.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from mpcdp.errors import ProtocolViolation

MAX_OBJECT_BYTES = 1 << 20
CRYPTEN_KINDS = ("additive", "square", "binary", "wraps", "B2A")
BEAVER_OPS = ("mul", "matmul", "conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d")


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


def reply_shape(message: dict, kinds: tuple = ()) -> tuple[int, ...]:
    """The shape of the share the dealer must return for party 0's own ``message`` (a request that
    :func:`check_request` accepts): CrypTen's ``square``/``wraps``/``B2A`` return their size, ``binary`` the
    broadcast of its two sizes, ``additive`` the result of its torch operation on tensors of its two sizes
    (computed on the meta device: shapes only, nothing allocated), mpcdp's material ``kinds`` (the classes of
    :data:`mpcdp.adapter.material.KINDS`, passed in: this module sits below the material) their ``reply_shape``.

    Raises:
        ValueError: the request is not one this function knows (party 0's own request: a bug, not a peer's).
    """
    function, args, kwargs = message["function"], message["args"], message["kwargs"]
    if function in ("square", "wraps", "B2A"):
        return _sizes(args[0])
    if function == "binary":
        return tuple(torch.broadcast_shapes(_sizes(args[0]), _sizes(args[1])))
    if function == "additive":
        if len(args) < 3 or args[2] not in BEAVER_OPS:
            raise ValueError(f"an `additive` dealer request is for one of {list(BEAVER_OPS)}. Found "
                             f"{args[2] if len(args) > 2 else None!r}")
        a, b = (torch.empty(_sizes(size), device="meta") for size in args[:2])
        return tuple(getattr(torch, args[2])(a, b, *args[3:], **kwargs).shape)
    for kind in kinds:
        if function == kind.request_name():
            return tuple(int(n) for n in kind.reply_shape(*args, **kwargs))
    raise ValueError(f"no reply shape is known for a dealer request for {function!r}")


def check_columns(width: Any, halves: Any) -> None:
    """Party 0's ``halves`` (a request's argument, hostile input): None or a list of at most 64·width column
    indices in [0, width). Raises ValueError (the dealer refuses the request, naming party 0)."""
    if not isinstance(width, int) or isinstance(width, bool) or width < 0:
        raise ValueError(f"width must be a non-negative integer. Found {str(width)[:40]}")
    if halves is not None and (not isinstance(halves, list) or len(halves) > 64 * width or not all(
            isinstance(c, int) and not isinstance(c, bool) and 0 <= c < width for c in halves)):
        raise ValueError(f"halves must list at most {64 * width} columns in [0, {width}). Found {str(halves)[:60]}")


def _sizes(size: Any) -> tuple[int, ...]:
    shape = tuple(size)
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape) or \
            math.prod(shape) > 1 << 62:
        raise ValueError(f"a dealer request's size must be a list of non-negative integers. Found {str(size)[:80]}")
    return shape
