"""Secret-shared values that refuse to become plaintext implicitly.

A :class:`Shared` holds this party's additive share (in Z_2^64, fixed point) of a value nobody knows.
``bool()``, ``int()``, ``float()``, indexing into Python numbers, iteration and NumPy conversion raise
:class:`~mpcdp.errors.SecretDisclosureError`; ``repr`` shows the shape only. The only road to plaintext is
``ctx.reveal(x, reason=...)`` (:mod:`mpcdp.mpc.context`), which every party must call together and which
is recorded as an opening.
"""

from __future__ import annotations

import torch

from mpcdp.errors import SecretDisclosureError

_HOW_TO_REVEAL = ("a Shared value is secret-shared among the parties and has no plaintext here; open it "
                  "explicitly with ctx.reveal(x, reason=...) on every party (see mpcdp/README.md, 'Threat model')")


class Shared:
    """This party's share of a secret tensor (fixed point with ``precision_bits`` fractional bits).

    Sums and differences of Shared values, and products with public *integers*, are local and exact.
    """

    __slots__ = ("_share", "precision_bits")
    __array_priority__ = 1000  # make numpy defer to our __r*__ methods and hence to the refusal

    def __init__(self, share: torch.Tensor, precision_bits: int):
        if share.dtype != torch.int64:
            raise TypeError(f"`share` must be an int64 tensor of ring elements. Found {share.dtype}.")
        self._share = share
        self.precision_bits = precision_bits

    # -- public metadata -------------------------------------------------------------------------
    @property
    def shape(self) -> torch.Size:
        return self._share.shape

    def numel(self) -> int:
        return self._share.numel()

    def __len__(self) -> int:
        return len(self._share)

    def __repr__(self) -> str:
        return f"Shared(shape={tuple(self.shape)}, precision_bits={self.precision_bits})"

    # -- local linear algebra ----------------------------------------------------------------------
    def _check_compatible(self, other: "Shared") -> None:
        if other.precision_bits != self.precision_bits or other.shape != self.shape:
            raise ValueError(f"cannot combine {self!r} with {other!r}")

    def __add__(self, other: "Shared") -> "Shared":
        if isinstance(other, int) and other == 0:  # lets builtin sum() start from 0
            return self
        if not isinstance(other, Shared):
            return NotImplemented
        self._check_compatible(other)
        return Shared(self._share + other._share, self.precision_bits)

    __radd__ = __add__

    def __sub__(self, other: "Shared") -> "Shared":
        if not isinstance(other, Shared):
            return NotImplemented
        self._check_compatible(other)
        return Shared(self._share - other._share, self.precision_bits)

    def __neg__(self) -> "Shared":
        return Shared(-self._share, self.precision_bits)

    def reshape(self, *shape) -> "Shared":
        """The same secret with another (public) shape."""
        return Shared(self._share.reshape(*shape), self.precision_bits)

    def select_row(self, index: int) -> "Shared":
        """Row ``index`` (a public index) of a shared matrix."""
        return Shared(self._share[index], self.precision_bits)

    def scale_by_int(self, k: int) -> "Shared":
        """Multiply by a public integer (local, exact in the ring)."""
        if not isinstance(k, int) or isinstance(k, bool):
            raise TypeError(f"`k` must be a Python int. Found {type(k).__name__}.")
        return Shared(self._share * k, self.precision_bits)

    # -- implicit disclosure is refused --------------------------------------------------------------
    def _refuse(self, *_args, **_kwargs):
        raise SecretDisclosureError(_HOW_TO_REVEAL)

    __bool__ = _refuse
    __int__ = _refuse
    __float__ = _refuse
    __complex__ = _refuse
    __index__ = _refuse
    __iter__ = _refuse
    __array__ = _refuse
    __getitem__ = _refuse
    __eq__ = _refuse
    __lt__ = _refuse
    __le__ = _refuse
    __gt__ = _refuse
    __ge__ = _refuse
    __hash__ = None  # type: ignore[assignment]
    __reduce__ = _refuse  # no pickling a share off to another process by accident


def share_of(x: Shared) -> torch.Tensor:
    """This party's raw share (for protocol implementations inside mpcdp.mpc only)."""
    return x._share
