"""Direct TCP links between the data parties: the transport of every mpcdp opening and public exchange.

Why not gloo for these: mpcdp's protocols run in lockstep, so both ends of every message know its size in
advance; raw TCP then carries exactly the payload. Gloo adds a 96-byte header per message and a 48-byte
receive notification from the receiver, 14% on top of an a9a-sized opening. Here the bytes on the wire are
the bytes of the shares, counted at this one choke point (and checked against the kernel's TCP counters and
an emulated host's link counters in tests/test_costs.py and benchmarks/cost_network.py). The emulated
network delay of :class:`~mpcdp.config.MpcConfig` (``link_delay_ms``) is injected here, once per round.
CrypTen's own protocols and the dealer keep using gloo.

Set-up (once per run, after the configuration handshake; public metadata only): every party listens on the
address through which it reaches the rendezvous host, the (address, port) pairs are exchanged, and party j
connects to every party i < j, announcing its rank. Links are full-duplex with Nagle's algorithm off.

Failures: a peer that closes its link raises :class:`~mpcdp.errors.PeerLost` naming it; a peer silent for
``timeout_s`` raises :class:`~mpcdp.errors.PeerTimeout` naming the parties still owed data.

Security model: the links are not encrypted or authenticated (neither are gloo's); deploy on a private
network or tunnel them. What travels is what the protocols open: uniformly masked shares and public values.
"""

from __future__ import annotations

import os
import selectors
import socket
import struct
import time
from typing import Any, Callable
from urllib.parse import urlparse

import torch

from mpcdp.errors import PeerLost, PeerTimeout
from mpcdp.transport import costs


def local_address(rendezvous: str) -> str:
    """The IP address this host uses to reach the rendezvous host (loopback for file:// rendezvous)."""
    parsed = urlparse(rendezvous)
    host = parsed.hostname if parsed.scheme == "tcp" else os.environ.get("MASTER_ADDR") if parsed.scheme == "env" \
        else None
    if not host:
        return "127.0.0.1"
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect((socket.gethostbyname(host), 9))  # UDP connect sends nothing; it only picks a route
        return probe.getsockname()[0]
    finally:
        probe.close()


class Mesh:
    """This party's links to every other data party (rank → connected socket)."""

    def __init__(self, rank: int, parties: int, links: dict[int, socket.socket], *, timeout_s: float,
                 delay_s: float = 0.0):
        self.rank, self.parties, self.links = rank, parties, links
        self.timeout_s, self.delay_s = timeout_s, delay_s
        self.bytes_sent = 0
        self.bytes_received = 0

    @classmethod
    def establish(cls, rank: int, parties: int, *, address: str, gather: Callable[[Any], list],
                  timeout_s: float, delay_s: float = 0.0) -> "Mesh":
        """Connect to every other party; ``gather(obj)`` returns every party's obj (a public all-gather)."""
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind((address, 0))
        listener.listen(parties)
        listener.settimeout(timeout_s)
        endpoints = gather((address, listener.getsockname()[1]))
        links: dict[int, socket.socket] = {}
        try:
            for peer in range(rank):
                link = socket.create_connection(tuple(endpoints[peer]), timeout=timeout_s)
                link.sendall(struct.pack("<i", rank))
                links[peer] = link
            for _ in range(parties - 1 - rank):
                link, _ = listener.accept()
                link.settimeout(timeout_s)
                peer = struct.unpack("<i", _read_exactly(link, 4))[0]
                if not rank < peer < parties or peer in links:
                    raise PeerLost(f"unexpected connection announcing rank {peer}", party=None)
                links[peer] = link
        except socket.timeout as exc:
            missing = sorted(set(range(parties)) - {rank} - set(links))
            raise PeerTimeout(f"Timed out after {timeout_s} s connecting the parties' links; no link to party "
                              f"{missing}", party=missing[0] if missing else None) from exc
        finally:
            listener.close()
        for link in links.values():
            link.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            link.setblocking(False)
        costs.register_links({link.fileno() for link in links.values()})
        return cls(rank, parties, links, timeout_s=timeout_s, delay_s=delay_s)

    def close(self) -> None:
        costs.register_links(set())
        for link in self.links.values():
            link.close()
        self.links = {}

    # -- one round: send to some peers and receive from some, all at once ---------------------------------
    def exchange(self, sends: dict[int, torch.Tensor], receives: dict[int, torch.Tensor]) -> None:
        """Send ``sends[j]`` to party j and fill ``receives[j]`` from party j (contiguous tensors), at once.

        One round: waits the emulated delay once, then moves every message concurrently.
        """
        if self.delay_s and sends:
            time.sleep(self.delay_s)
        out = {j: memoryview(t.numpy()).cast("B") for j, t in sends.items()}
        into = {j: memoryview(t.numpy()).cast("B") for j, t in receives.items()}
        sent = {j: 0 for j in out}
        got = {j: 0 for j in into}
        selector = selectors.DefaultSelector()

        def events(j: int) -> int:
            mask = 0
            if j in out and sent[j] < len(out[j]):
                mask |= selectors.EVENT_WRITE
            if j in into and got[j] < len(into[j]):
                mask |= selectors.EVENT_READ
            return mask

        try:
            for j in set(out) | set(into):
                if events(j):
                    selector.register(self.links[j], events(j), j)
            deadline = time.monotonic() + self.timeout_s
            while selector.get_map():
                ready = selector.select(timeout=max(0.0, deadline - time.monotonic()))
                if not ready:
                    owed = sorted(key.data for key in selector.get_map().values())
                    raise PeerTimeout(f"Timed out after {self.timeout_s} s waiting for party {owed} "
                                      f"(party {self.rank}'s link)", party=owed[0])
                for key, mask in ready:
                    j = key.data
                    try:
                        if mask & selectors.EVENT_WRITE and sent[j] < len(out[j]):
                            sent[j] += key.fileobj.send(out[j][sent[j]:])
                        if mask & selectors.EVENT_READ and got[j] < len(into[j]):
                            n = key.fileobj.recv_into(into[j][got[j]:])
                            if n == 0:
                                raise PeerLost(f"connection closed by party {j} (party {self.rank}'s link)",
                                               party=j)
                            got[j] += n
                    except (BlockingIOError, InterruptedError):
                        continue
                    except (ConnectionResetError, BrokenPipeError) as exc:
                        raise PeerLost(f"connection reset by party {j} (party {self.rank}'s link): {exc}",
                                       party=j) from exc
                    remaining = events(j)
                    if remaining:
                        selector.modify(key.fileobj, remaining, j)
                    else:
                        selector.unregister(key.fileobj)
        finally:
            selector.close()
            moved_out, moved_in = sum(sent.values()), sum(got.values())
            self.bytes_sent += moved_out
            self.bytes_received += moved_in
            costs.record_link(moved_out, moved_in)

    # -- the protocols' communication patterns ---------------------------------------------------------
    def open_shares(self, share: torch.Tensor, *, xor: bool = False) -> tuple[torch.Tensor, int]:
        """Every party's ``share`` combined (sum in Z_2^64, or XOR of words), delivered to every party;
        returns (the combination, rounds). Plans (:func:`mpcdp.transport.costs.opening_plan`):

        * ``direct`` (2 parties): each sends its share to the other. 1 round, 8d bytes each way.
        * ``star`` (up to 64 KiB): shares to party 0, which combines them and sends the result back.
          2 rounds; party 0 sends and receives (m−1)·8d bytes, the others 8d. Party 0 sees each party's
          share — one additive share, uniformly masked, like any partial sum.
        * ``scatter`` (larger): the vector is cut into m chunks; party i combines chunk i of every share
          (reduce-scatter) and sends the result to all (all-gather). 2 rounds, ≈ 2(m−1)/m·8d bytes each.
        """
        flat = share.reshape(-1).contiguous()
        plan = costs.opening_plan(flat.numel(), self.parties)
        me, m = self.rank, self.parties

        def combine(into: torch.Tensor, other: torch.Tensor) -> None:
            if xor:
                into ^= other
            else:
                into += other

        result = flat.clone()
        if plan == "direct":
            other = torch.empty_like(flat)
            self.exchange({1 - me: flat}, {1 - me: other})
            combine(result, other)
            return result.reshape(share.shape), 1
        if plan == "star":
            if me == 0:
                incoming = {j: torch.empty_like(flat) for j in range(1, m)}
                self.exchange({}, incoming)
                for buf in incoming.values():
                    combine(result, buf)
                self.exchange({j: result for j in range(1, m)}, {})
            else:
                self.exchange({0: flat}, {})
                self.exchange({}, {0: result})
            return result.reshape(share.shape), 2
        chunks = torch.tensor_split(flat, m)
        mine = chunks[me].clone()
        incoming = {j: torch.empty_like(chunks[me]) for j in range(m) if j != me}
        self.exchange({j: chunks[j] for j in incoming}, incoming)
        for buf in incoming.values():
            combine(mine, buf)
        gathered = {j: torch.empty_like(chunks[j]) for j in range(m) if j != me}
        self.exchange({j: mine for j in gathered}, gathered)
        gathered[me] = mine
        return torch.cat([gathered[j] for j in range(m)]).reshape(share.shape), 2

    def exchange_int64(self, vector: torch.Tensor) -> tuple[torch.Tensor, int]:
        """Every party's fixed-size public int64 ``vector``, stacked in rank order (1 round)."""
        vector = vector.to(torch.int64).contiguous()
        out = [vector if j == self.rank else torch.empty_like(vector) for j in range(self.parties)]
        others = [j for j in range(self.parties) if j != self.rank]
        self.exchange({j: vector for j in others}, {j: out[j] for j in others})
        return torch.stack(out), 1


def _read_exactly(link: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = link.recv(n - len(data))
        if not chunk:
            raise PeerLost("a peer closed its link during set-up", party=None)
        data += chunk
    return data
