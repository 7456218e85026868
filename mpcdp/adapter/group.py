"""The data parties' torch.distributed group as CrypTen set it up: who this party is, and the two plain
collectives the adapter itself needs (public metadata and key exchange only)."""

from __future__ import annotations

import os
from typing import Any

import torch
import torch.distributed as dist

from mpcdp.adapter.compat import comm


def rank() -> int:
    return comm.get().get_rank()


def world_size() -> int:
    return comm.get().get_world_size()


def main_group():
    """The torch.distributed group of the data parties (the dealer is not in it)."""
    return comm.get().main_group


def rendezvous() -> str:
    """The rendezvous this process joined with (``tcp://HOST:PORT``, ``env://`` or ``file://...``)."""
    return os.environ.get("RENDEZVOUS", "env://")


def all_gather_object(obj: Any) -> list:
    """Every data party's ``obj`` in rank order (pickled over the data parties' group)."""
    out: list = [None] * world_size()
    dist.all_gather_object(out, obj, group=main_group())
    return out


def exchange_pairwise(outgoing: dict[int, torch.Tensor], incoming: dict[int, torch.Tensor]) -> None:
    """Send ``outgoing[j]`` to party j and receive into ``incoming[j]`` from party j, all at once."""
    group = main_group()
    requests = [dist.isend(t, dst=j, group=group) for j, t in outgoing.items()]
    requests += [dist.irecv(t, src=j, group=group) for j, t in incoming.items()]
    for request in requests:
        request.wait()
