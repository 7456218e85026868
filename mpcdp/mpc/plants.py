"""The view audit's planted leaks (``mpcdp audit views --plant-leak``): one switch for all of them.

A plant is a deliberate leak that the view audit (:mod:`mpcdp.jobs.views`, :mod:`mpcdp.jobs.auth_views`) must
report, switched on in one process for one block (on every party at once) by adding it to its module's set of
leaks in force: :mod:`.masks`, :mod:`.authenticated`, :mod:`.auth_inputs`, :mod:`.bernoulli` and
:mod:`mpcdp.noise.auth_dealt` each read their own set. A run never plants one. No protocol, no cost.
"""

from __future__ import annotations

import contextlib
from typing import Hashable, Iterator


@contextlib.contextmanager
def planting(in_force: set, leak: Hashable) -> Iterator[None]:
    """``leak`` in ``in_force`` within the block, removed however the block ends."""
    in_force.add(leak)
    try:
        yield
    finally:
        in_force.discard(leak)
