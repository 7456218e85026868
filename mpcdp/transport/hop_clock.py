"""The critical path of a section in one-way link delays: the latency term of the cost model.

The cost model (:class:`mpcdp.transport.costs.Link`) charges a link's one-way delay per hop on the longest
chain of messages each waiting for the one before. Counting rounds and dealer requests apart gets that chain
wrong once the dealer answers another party than the one that asked, or an opening's king is not the party
that waited: a request whose reply party 0 waits for, followed by a star opening through party 0, costs one
delay more than the opening (the other parties' shares travel meanwhile); the same request answered to party 1
and followed by an opening through party 2 costs two. :class:`HopClock` replays this process's communication
as it happens and keeps, for every process it hears of, the earliest hop at which that process can go on:

* a move (:meth:`move`; a round of :class:`~.mesh.Mesh` that is not part of an opening): each message arrives
  one delay after its sender was ready; a process that receives waits for its last message;
* an opening (:meth:`opening`; :meth:`~.mesh.Mesh.open_shares`): ``direct`` is one all-to-all round,
  ``scatter`` two; ``star`` — the king has the sum one delay after the latest other member was ready (or when
  it is ready itself, if later), the others one delay after that;
* a dealer request (:meth:`request`; :mod:`mpcdp.adapter.dealer_link`): the reply's receiver can go on two
  delays after the asker was ready (request and reply); the asker waits only if it is the receiver.

``blocking=True`` replays the delay that mpcdp's transport injects instead (``link_delay_ms``,
:meth:`~.mesh.Mesh._move`): a process that sends sleeps one delay before its frames leave, so its own next
step waits too (the star's king after sending the sum, party 0 after each request). That emulation is what
the emulated-host benchmark measures; the estimate for a real link is the propagation clock.

Each process keeps its own clock from its own view; party 0 asks for every piece of dealt material and takes
part in every opening, so its clock is the run's path (the cost reports read party 0's). Processes are taken
to compute in no time: the model adds the measured compute time apart. Cost: a dict update per round.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable


class HopClock:
    """The earliest hop at which each process can go on, from one process's view (the module docstring)."""

    def __init__(self, *, blocking: bool = False) -> None:
        self.blocking = blocking
        self.ready: collections.Counter[int] = collections.Counter()
        self._inside_opening = 0  # moves still to come that belong to the opening already replayed

    @property
    def hops(self) -> int:
        """The critical path so far, in one-way delays."""
        return max(self.ready.values(), default=0)

    def _all_to_all(self, members: list[int]) -> None:
        reached = max(self.ready[p] for p in members) + 1
        for p in members:
            self.ready[p] = reached

    def opening(self, plan: str, members: list[int], king: int | None, moves: int) -> None:
        """An opening among ``members`` by ``plan`` (:func:`~.costs.opening_plan`); its own ``moves`` (calls of
        :meth:`move`) that follow are part of it and not counted again."""
        if plan == "star" and king is not None:
            summed = max([self.ready[king]] + [self.ready[j] + 1 for j in members if j != king])
            self.ready[king] = summed + 1 if self.blocking else summed
            for j in members:
                if j != king:
                    self.ready[j] = summed + 1
        else:
            for _ in range(1 if plan == "direct" else 2):
                self._all_to_all(members)
        self._inside_opening = moves

    def move(self, rank: int, sends: Iterable[int], receives: Iterable[int]) -> None:
        """A round of this process (``rank``): messages to ``sends`` and from ``receives``, at once."""
        if self._inside_opening:
            self._inside_opening -= 1
            return
        to, from_ = list(sends), list(receives)
        before = {p: self.ready[p] for p in [rank, *to, *from_]}
        leaves = before[rank] + (1 if self.blocking and to else 0)  # when this process's frames leave
        arrives = leaves if self.blocking else leaves + 1  # (the injected delay is spent before they leave)
        for j in to:
            self.ready[j] = max(self.ready[j], arrives)
        self.ready[rank] = max([leaves] + [before[j] + 1 for j in from_])  # each sender sent when it was ready

    def request(self, asker: int, receiver: int) -> None:
        """A request of ``asker`` to the dealer whose reply goes to ``receiver``."""
        if self.blocking:  # the asker sleeps before its request leaves, the receiver once the reply is in
            self.ready[asker] += 1
            self.ready[receiver] = max(self.ready[receiver], self.ready[asker] + 1)
        else:
            self.ready[receiver] = max(self.ready[receiver], self.ready[asker] + 2)
