"""The dealer's allow-list of requests.

CrypTen's dealer calls whatever method a request names, and its ``additive`` request names a torch function
by string. Requests travel as JSON in mpcdp's public schema (:mod:`.dealer_link`, :mod:`mpcdp.transport.public`),
never pickled, and :func:`check_request` is what the dealer accepts: ``terminate``, or a request whose
function is one of CrypTen's material kinds or mpcdp's own (:data:`mpcdp.adapter.material.KINDS`), with
only the torch operations CrypTen's Beaver products use. Anything else stops the dealer with
:class:`~mpcdp.errors.ProtocolViolation` naming party 0.

Security model: the dealer and party 0 exchange public sizes and names only; each side checks what it
reads.
"""

from __future__ import annotations

from typing import Any

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
