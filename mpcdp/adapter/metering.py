"""Counting CrypTen's own protocols and the dealer traffic like mpcdp's (:mod:`mpcdp.transport.costs`), and
the emulated delay of a slow link on every dealer round trip.

:func:`install` wraps CrypTen's tuple providers, its comparison and its communicator (once per process):
* every request for correlated randomness is recorded with its kind and element count;
* every gloo collective on the data parties' group is recorded as rounds (a ring all-reduce 2(m−1), a
  broadcast, gather or reduce 1); traffic on other groups (party 0 and the dealer) is metered as dealer
  traffic, in bytes from the kernel's TCP counters.
"""

from __future__ import annotations

import time

import torch

from mpcdp.adapter.compat import Communicator, MPCTensor, tfp_provider, ttp_provider
from mpcdp.transport import costs
from mpcdp.transport.wire import tcp_bytes

_link_delay_s = 0.0
_dealer_requests_made = 0


def set_link_delay(delay_ms: float) -> None:
    """Emulate a slow network: every dealer request waits ``delay_ms`` per message hop (mpcdp's own links,
    :mod:`mpcdp.transport.mesh`, wait once per round)."""
    global _link_delay_s
    _link_delay_s = float(delay_ms) / 1000.0


def _hop() -> None:
    """One message hop of an emulated slow link; a no-op on a real network."""
    if _link_delay_s:
        time.sleep(_link_delay_s)


def dealer_requests_made() -> int:
    """Requests this process (party 0) has sent to the dealer so far (their order matches the dealer's
    per-request byte counts)."""
    return _dealer_requests_made


def _numel(value) -> int:
    """Elements of a tensor or of a CrypTen shared tensor (its share)."""
    value = getattr(value, "share", value)
    return int(value.numel()) if torch.is_tensor(value) else 0


def install() -> None:
    """Install the counters (idempotent)."""
    counted = {"generate_additive_triple": ("mul", 2), "square": ("square", 1),
               "generate_binary_triple": ("and_words", 2), "wrap_rng": ("trunc", 0), "B2A_rng": ("b2a_bits", 0)}
    for provider in (ttp_provider.TrustedThirdParty, tfp_provider.TrustedFirstParty):
        for name, (kind, index) in counted.items():
            original = getattr(provider, name)
            if getattr(original, "_mpcdp_counted", False):
                continue

            def counting(self, *args, _original=original, _kind=kind, _index=index, **kwargs):
                result = _original(self, *args, **kwargs)
                costs.record(_kind, _numel(result[_index]))
                return result

            counting._mpcdp_counted = True
            setattr(provider, name, counting)
    if getattr(MPCTensor._ltz, "_mpcdp_counted", False):
        return

    original_ltz = MPCTensor._ltz

    def counting_ltz(self, *args, **kwargs):
        costs.record("comparison", _numel(self.share))
        return original_ltz(self, *args, **kwargs)

    counting_ltz._mpcdp_counted = True
    MPCTensor._ltz = counting_ltz

    def counting_collective(name: str, rounds_of, group_at: int | None):
        original = getattr(Communicator, name)

        def wrapped(self, *args, **kwargs):
            group = kwargs.get("group", args[group_at] if group_at is not None and len(args) > group_at else None)
            if group is None or group is self.main_group:
                costs.record_rounds(rounds_of(self.get_world_size()))
            return original(self, *args, **kwargs)

        setattr(Communicator, name, wrapped)

    counting_collective("all_reduce", lambda m: 2 * (m - 1), None)
    for name in ("broadcast", "gather", "reduce"):
        counting_collective(name, lambda m: 1, 2)

    inner = ttp_provider.TTPClient._TTPClient__TTPClient
    original_request = inner.ttp_request

    def metered_request(self, func_name, device, *args, **kwargs):
        global _dealer_requests_made
        _dealer_requests_made += 1
        _hop()
        before = tcp_bytes(exclude=costs.link_fds())[1]
        result = original_request(self, func_name, device, *args, **kwargs)
        costs.record_dealer_request(tcp_bytes(exclude=costs.link_fds())[1] - before)
        _hop()
        return result

    inner.ttp_request = metered_request
