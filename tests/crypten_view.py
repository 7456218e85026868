"""A test instrument: what one party held in plaintext while CrypTen's protocols ran (security tests)."""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Iterator

import torch

from mpcdp.adapter.compat import comm, tfp_provider, ttp_provider


@dataclasses.dataclass
class PartyView:
    """Plaintext this party held while a protocol ran: correlated-randomness material it generated
    locally (``generated``) and every value an opening delivered to it (``opened``)."""

    generated: list[torch.Tensor] = dataclasses.field(default_factory=list)
    opened: list[torch.Tensor] = dataclasses.field(default_factory=list)


@contextlib.contextmanager
def record_view() -> Iterator[PartyView]:
    """Record this party's view of the CrypTen protocols run inside the block (for security tests).

    Under ``tfp``, party 0's ``generated`` holds the plaintext Beaver triples; under ``dealer`` it holds
    only this party's own pseudo-random shares of them.
    """
    view = PartyView()
    originals = {mod: mod.generate_random_ring_element for mod in (tfp_provider, ttp_provider)}
    communicator = comm.get()
    original_all_reduce = communicator.all_reduce

    def recording_generator(original):
        def generate(*args, **kwargs):
            value = original(*args, **kwargs)
            view.generated.append(value.clone())
            return value
        return generate

    def recording_all_reduce(*args, **kwargs):
        value = original_all_reduce(*args, **kwargs)
        for tensor in (value if isinstance(value, list) else [value]):
            view.opened.append(tensor.clone())
        return value

    try:
        for mod, original in originals.items():
            mod.generate_random_ring_element = recording_generator(original)
        communicator.all_reduce = recording_all_reduce
        yield view
    finally:
        for mod, original in originals.items():
            mod.generate_random_ring_element = original
        del communicator.all_reduce
