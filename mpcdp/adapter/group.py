"""Who this party is in the run it joined (from CrypTen's communicator, which mpcdp runs over its links)."""

from __future__ import annotations

from mpcdp.adapter import communicator


def rank() -> int:
    return communicator.current().get_rank()


def world_size() -> int:
    return communicator.current().get_world_size()
