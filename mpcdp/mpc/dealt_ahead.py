"""Dealt material for repeated calls of the same shape, asked for once: the releases' masks under
``security = "malicious"``.

A training run opens one release per step, and every release asks the dealer for the same kinds of material of
the same public sizes (its input masks with their squares, its bit masks, its opening's masks): one round trip to
the dealer per kind and release, each waiting for the dealer's process to wake, compute and reply. Within
:func:`ahead` (``uses`` calls still to come, public: the releases left of this shape), the first :func:`fetch`
of a kind with arguments ``(n, ...)`` asks for ``n·uses`` elements in ONE request and keeps the rest; each later
fetch of the same kind and arguments takes the next n elements, in order, with no request. Every data party
makes the same fetches in the same order (their arguments and ``uses`` are public), so all of them, and the
dealer, draw and deal the batch at the same point of their keyed streams. Every kind fetched so deals element by
element, independently (:mod:`mpcdp.adapter.mac_material`, :mod:`mpcdp.adapter.square_masks`): elements
i·n .. (i+1)·n of the batch are a fresh draw of that kind for n elements, which the i-th fetch uses, and no
other.

Security: unchanged. Material dealt before it is used is SPDZ's preprocessing model: it is independent of every
input, each mask is fresh and used by one fetch only, and the dealer deals the same elements (fewer, larger
requests of public sizes; :mod:`mpcdp.adapter.dealer_view` notes them as asked). A slice is taken only for the
exact kind and arguments it was dealt for; what a run does not use (it stopped early, or a resumed run's
releases were opened before) dies with its context.

Declared cost: per kind and arguments, one request for ``n·uses`` elements instead of ``uses`` requests of n (the
same elements and bytes from the dealer; ``uses − 1`` fewer round trips and request frames); nothing else.
"""

from __future__ import annotations

import contextlib
import dataclasses
import weakref
from typing import Any, Callable, Iterator, TypeVar, cast

import torch

from mpcdp.adapter.limbs import Wide
from mpcdp.mpc.context import MpcContext

T = TypeVar("T")

MAX_ELEMENTS = 1 << 18
"""At most this many elements (n·uses) in one request made ahead: fewer uses are asked for at once above it."""


@dataclasses.dataclass
class _Batch:
    """One draw of ``uses`` fetches' material (n elements each) and the next fetch's index in it: each slice is
    cut when it is taken, not all when the batch is dealt."""

    batch: Any
    n: int
    uses: int
    next: int = 1

    def take(self) -> Any:
        index, self.next = self.next, self.next + 1
        return _slice(self.batch, self.n, index * self.n)

    def __bool__(self) -> bool:
        return self.next < self.uses


@dataclasses.dataclass
class _Stock:
    uses: list[int] = dataclasses.field(default_factory=list)  # the open :func:`ahead` blocks' uses, innermost last
    kept: dict[tuple[Any, int], _Batch] = dataclasses.field(default_factory=dict)  # (fetch, n) -> the rest


_STOCKS: weakref.WeakKeyDictionary[MpcContext, _Stock] = weakref.WeakKeyDictionary()


def _stock(ctx: MpcContext) -> _Stock:
    if ctx not in _STOCKS:
        _STOCKS[ctx] = _Stock()
    return _STOCKS[ctx]


@contextlib.contextmanager
def ahead(ctx: MpcContext, uses: int) -> Iterator[None]:
    """Within the block, :func:`fetch` asks for ``uses`` fetches' material at once (``uses`` ≥ 1, the same public
    count on every data party)."""
    if uses < 1:
        raise ValueError(f"`uses` must be >= 1. Found {uses}.")
    stock = _stock(ctx)
    stock.uses.append(uses)
    try:
        yield
    finally:
        stock.uses.pop()


def fetch(ctx: MpcContext, draw: Callable[[int], T], n: int) -> T:
    """``draw(n)`` (a kind's ``fetch``, e.g. ``AuthMasks.fetch``): from what an earlier call of the same ``draw``
    and n kept, else (within :func:`ahead`) from one ``draw(n·uses)``, whose first n elements are returned and
    the rest kept in order. ``draw``'s result must hold only 1-D tensors of its n elements, in tuples, lists and
    :class:`~mpcdp.adapter.limbs.Wide` pairs."""
    stock = _stock(ctx)
    key = (draw, n)
    kept = stock.kept.get(key)
    if kept:
        return cast(T, kept.take())
    uses = min(stock.uses[-1] if stock.uses else 1, max(1, MAX_ELEMENTS // max(n, 1)))
    if uses == 1 or n == 0:
        return draw(n)
    batch = draw(n * uses)
    stock.kept[key] = _Batch(batch, n, uses)
    return cast(T, _slice(batch, n, 0))


def _slice(value: Any, n: int, start: int) -> Any:
    """Elements ``start .. start + n`` of every tensor in ``value`` (a batch's layout, :func:`fetch`)."""
    if isinstance(value, torch.Tensor):
        if value.dim() != 1:
            raise TypeError(f"material fetched ahead must be 1-D tensors; found shape {tuple(value.shape)}")
        return value[start:start + n]
    if isinstance(value, Wide):
        return Wide(_slice(value.lo, n, start), _slice(value.hi, n, start))
    if isinstance(value, (tuple, list)):
        return type(value)(_slice(v, n, start) for v in value)
    raise TypeError(f"material fetched ahead holds a {type(value).__name__}")
