"""The data parties' torch.distributed group as CrypTen set it up: who this party is, and the one plain
collective mpcdp needs from it: a fixed-size int64 all-gather for the links' listening addresses (public;
no pickled object ever crosses it)."""

from __future__ import annotations

import os
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


def all_gather_int64(vector: torch.Tensor) -> torch.Tensor:
    """Every data party's int64 ``vector`` of the same fixed length, stacked in rank order."""
    vector = vector.to(torch.int64).contiguous()
    out = [torch.empty_like(vector) for _ in range(world_size())]
    dist.all_gather(out, vector, group=main_group())
    return torch.stack(out)


def exchange_pairwise(outgoing: dict[int, torch.Tensor], incoming: dict[int, torch.Tensor]) -> None:
    """Send ``outgoing[j]`` to party j and receive into ``incoming[j]`` from party j, all at once (over gloo)."""
    group = main_group()
    requests = [dist.isend(t, dst=j, group=group) for j, t in outgoing.items()]
    requests += [dist.irecv(t, src=j, group=group) for j, t in incoming.items()]
    for request in requests:
        request.wait()
