"""CrypTen's communicator, run over mpcdp's links instead of gloo.

CrypTen's protocols (its Beaver products, its wraps-based truncation, ``crypten.randn``, the ``tfp``
provider) talk through one object, ``crypten.communicator.get()``. Its stock implementation drives
torch.distributed's gloo process group, plain TCP that carries TLS nowhere. :class:`MeshCommunicator`
implements the same methods over the data parties' :class:`~mpcdp.transport.mesh.Mesh`: every message is a
checked frame (:mod:`mpcdp.transport.frames`) on a link that is TLS 1.3 with credentials, and object
messages are JSON in mpcdp's public schema (:mod:`mpcdp.transport.public`, with the tags of
:mod:`.object_messages` for tuples, typed tensors and the modules CrypTen may deserialize), never pickle. No
gloo process group exists in an mpcdp run.

Declared cost per call (d elements, m parties; rounds are recorded in :mod:`mpcdp.transport.costs`):
``all_reduce`` is an opening (:meth:`~mpcdp.transport.mesh.Mesh.open_shares`: 1 round for 2 parties, 2
otherwise); ``reduce``, ``gather``, ``broadcast``, ``scatter``, ``all_gather``, ``send``/``recv`` and
``barrier`` are 1 round of one message per link they use. The bytes are counted as link bytes.

Security model: as CrypTen's (semi-honest parties); what changes is that the network sees no share.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.distributed import ReduceOp

from mpcdp.adapter import object_messages
from mpcdp.adapter.compat import comm
from mpcdp.adapter.objects import MAX_OBJECT_BYTES
from mpcdp.transport import costs, public
from mpcdp.transport.mesh import Mesh

_DTYPES = (torch.int64, torch.float64)


class _Done:
    """What ``isend``/``irecv`` return: the message has moved (or moves) when :meth:`wait` returns."""

    def __init__(self, flush=None):
        self._flush = flush

    def wait(self) -> None:
        if self._flush is not None:
            self._flush()
            self._flush = None

    def is_completed(self) -> bool:
        return self._flush is None


class MeshCommunicator(comm.Communicator):
    """CrypTen's communicator API for data party ``mesh.rank`` over ``mesh`` (the data parties' links)."""

    BYTES_PER_ELEMENT = 8

    def __init__(self, mesh: Mesh):
        self.mesh = mesh
        self.rank, self.world_size = mesh.rank, mesh.parties
        self._name = f"rank{self.rank}"
        self._sends: dict[int, torch.Tensor] = {}
        self._calls = 0

    # -- identity -------------------------------------------------------------------------------
    def get_rank(self) -> int:
        return self.rank

    def get_world_size(self) -> int:
        return self.world_size

    def get_ttp_rank(self) -> int:
        return self.world_size

    def set_name(self, name: str) -> None:
        self._name = str(name)

    def get_name(self) -> str:
        return self._name

    def get_distributed_backend(self) -> str:
        return "mpcdp"

    def reset_communication_stats(self) -> None:
        """CrypTen's own statistics are not kept: mpcdp's ledgers count everything (:mod:`~mpcdp.transport.costs`)."""

    def print_communication_stats(self) -> None:
        pass

    # -- helpers --------------------------------------------------------------------------------
    def _label(self, op: str) -> str:
        return f"crypten {op}"

    @staticmethod
    def _flat(tensor: torch.Tensor) -> torch.Tensor:
        if tensor.dtype not in _DTYPES:
            raise TypeError(f"mpcdp's links carry int64 and float64 tensors; CrypTen sent {tensor.dtype}")
        return tensor.detach().reshape(-1).contiguous()

    def _others(self) -> list[int]:
        return [j for j in range(self.world_size) if j != self.rank]

    def _round(self, sends: dict[int, torch.Tensor], receives: dict[int, torch.Tensor], op: str) -> None:
        sends = {**self._sends, **sends}
        self._sends = {}
        self.mesh.exchange(sends, receives, label=self._label(op))
        costs.record_rounds(1)

    # -- point to point -------------------------------------------------------------------------
    def send(self, tensor, dst):
        self._round({dst: self._flat(tensor)}, {}, "send")

    def recv(self, tensor, src=None):
        result = torch.empty_like(tensor).contiguous()
        self._round({}, {src: result.view(-1)}, "send")
        return result

    def isend(self, tensor, dst):
        if dst in self._sends:
            self._round({}, {}, "send")
        self._sends[dst] = self._flat(tensor).clone()
        return _Done(lambda: self._round({}, {}, "send") if self._sends else None)

    def irecv(self, tensor, src=None):
        target = tensor.data
        if not target.is_contiguous():
            raise ValueError("irecv needs a contiguous tensor")

        def flush():
            self._round({}, {src: target.view(-1)}, "send")

        return _Done(flush)

    # -- collectives ----------------------------------------------------------------------------
    def _batch(self, tensors: list[torch.Tensor]) -> torch.Tensor:
        return torch.cat([self._flat(t) for t in tensors]) if len(tensors) > 1 else self._flat(tensors[0])

    @staticmethod
    def _unbatch(flat: torch.Tensor, like: list[torch.Tensor]) -> list[torch.Tensor]:
        out, start = [], 0
        for t in like:
            out.append(flat[start:start + t.numel()].reshape(t.shape).clone())
            start += t.numel()
        return out

    def all_reduce(self, input, op=ReduceOp.SUM, batched=False):
        like = list(input) if batched else [input]
        flat = self._batch(like)
        if op not in (ReduceOp.SUM, ReduceOp.BXOR) or (flat.dtype != torch.int64 and op != ReduceOp.SUM):
            raise ValueError(f"all_reduce over mpcdp's links supports SUM and BXOR of int64. Found {op}.")
        if flat.dtype == torch.int64:
            opened, rounds = self.mesh.open_shares(flat, label=self._label("all_reduce"), xor=op == ReduceOp.BXOR)
            costs.record_rounds(rounds)
        else:
            opened = sum(self.all_gather(flat))
        out = self._unbatch(opened, like)
        return out if batched else out[0]

    def reduce(self, input, dst, op=ReduceOp.SUM, batched=False):
        """The sum (or XOR) of every party's ``input`` on ``dst``; None on every other party, as CrypTen's own
        communicator returns (so ``reveal(dst=j)`` / ``get_plain_text(dst=j)`` give None off ``dst``)."""
        like = list(input) if batched else [input]
        flat = self._batch(like)
        if op not in (ReduceOp.SUM, ReduceOp.BXOR):
            raise ValueError(f"reduce over mpcdp's links supports SUM and BXOR. Found {op}.")
        if self.rank != dst:
            self._round({dst: flat}, {}, "reduce")
            return None
        incoming = {j: torch.empty_like(flat) for j in self._others()}
        self._round({}, incoming, "reduce")
        total = flat.clone()
        for other in incoming.values():
            total = total ^ other if op == ReduceOp.BXOR else total + other
        out = self._unbatch(total, like)
        return out if batched else out[0]

    def gather(self, tensor, dst):
        flat = self._flat(tensor)
        if self.rank != dst:
            self._round({dst: flat}, {}, "gather")
            return [None]
        incoming = {j: torch.empty_like(flat) for j in self._others()}
        self._round({}, incoming, "gather")
        incoming[self.rank] = flat.clone()
        return [incoming[j].reshape(tensor.shape) for j in range(self.world_size)]

    def all_gather(self, tensor):
        flat = self._flat(tensor)
        incoming = {j: torch.empty_like(flat) for j in self._others()}
        self._round({j: flat for j in self._others()}, incoming, "all_gather")
        incoming[self.rank] = flat.clone()
        return [incoming[j].reshape(tensor.shape) for j in range(self.world_size)]

    def broadcast(self, input, src, group=None, batched=False):
        """``src``'s tensor(s) copied into every party's ``input`` in place, which is returned (CrypTen's
        semantics). Floating-point tensors travel as float64 and integer or boolean ones as int64: exact for
        every width, and cast back to each tensor's own dtype."""
        like = list(input) if batched else [input]
        wire = [t.detach().to(torch.float64 if t.is_floating_point() else torch.int64) for t in like]
        flat = self._batch(wire)
        if self.rank == src:
            self._round({j: flat for j in self._others()}, {}, "broadcast")
        else:
            received = torch.empty_like(flat)
            self._round({}, {src: received}, "broadcast")
            for tensor, part in zip(like, self._unbatch(received, wire)):
                tensor.data.copy_(part.to(tensor.dtype))
        return input

    def scatter(self, scatter_list, src, size=None, device=None):
        if self.rank == src:
            self._round({j: self._flat(scatter_list[j]) for j in self._others()}, {}, "scatter")
            return scatter_list[src].clone()
        if size is None:  # CrypTen's callers hand every party the list (its entries' sizes are public)
            size = scatter_list[self.rank].size()
        received = torch.empty(size=size, dtype=torch.long)
        self._round({}, {src: received.view(-1)}, "scatter")
        return received

    def barrier(self):
        self.all_gather(torch.zeros(1, dtype=torch.int64))

    # -- object messages (JSON, never pickle: :mod:`.object_messages`) ---------------------------
    def _text(self, sends: dict[int, Any], receives: list[int]) -> dict[int, Any]:
        payloads = {j: public.encode(object_messages.encode(obj)) for j, obj in sends.items()}
        raw = self.mesh.exchange_text(payloads, receives, label=self._label("object"), limit=MAX_OBJECT_BYTES)
        costs.record_rounds(1)
        return {j: object_messages.decode(public.decode(data, peer=j, label="CrypTen object message"), peer=j)
                for j, data in raw.items()}

    def send_obj(self, obj, dst, group=None):
        self._text({dst: obj}, [])

    def recv_obj(self, src, group=None):
        return self._text({}, [src])[src]

    def broadcast_obj(self, obj, src, group=None):
        """``src``'s object on every party; ``src`` gets its own ``obj`` back, as from CrypTen's communicator."""
        if self.rank == src:
            self._text({j: obj for j in self._others()}, [])
            return obj
        return self._text({}, [src])[src]


_installed: MeshCommunicator | None = None


def install(communicator: MeshCommunicator) -> None:
    """Make ``communicator`` the one every CrypTen module reaches through ``crypten.communicator.get()``."""
    global _installed
    _installed = communicator


def uninstall() -> None:
    global _installed
    _installed = None


def current() -> MeshCommunicator:
    if _installed is None:
        raise RuntimeError("no mpcdp run joined in this process (CrypTen's communicator is not installed)")
    return _installed


def _patch_crypten() -> None:
    """Route ``crypten.communicator.get/is_initialized/uninit`` to :func:`current` while an mpcdp run is
    joined; CrypTen's own communicators (``crypten.init``, ``crypten.init_thread``) work as before otherwise
    (once per process)."""
    if getattr(comm.get, "_mpcdp", False):
        return
    crypten_get, crypten_is_initialized, crypten_uninit = comm.get, comm.is_initialized, comm.uninit

    def get():
        return _installed if _installed is not None else crypten_get()

    def is_initialized() -> bool:
        return _installed is not None or crypten_is_initialized()

    def uninit():
        if _installed is not None:
            uninstall()
        else:
            crypten_uninit()

    setattr(get, "_mpcdp", True)  # (read with getattr above)
    comm.get, comm.is_initialized, comm.uninit = get, is_initialized, uninit


_patch_crypten()
