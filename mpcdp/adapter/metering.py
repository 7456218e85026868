"""Counting CrypTen's own protocols like mpcdp's (:mod:`mpcdp.transport.costs`), and the emulated delay of
a slow link on every dealer round trip.

:func:`install` wraps CrypTen's tuple providers and its comparison (once per process): every request for
correlated randomness is recorded with its kind and element count. CrypTen's messages are counted where
they move (:mod:`.communicator`: rounds and link bytes; :mod:`.dealer_link`: dealer requests and bytes).
"""

from __future__ import annotations

import time

import torch

from mpcdp.adapter.compat import MPCTensor, tfp_provider, ttp_provider
from mpcdp.transport import costs

_link_delay_s = 0.0
_dealer_requests_made = 0


def set_link_delay(delay_ms: float) -> None:
    """Emulate a slow network: every dealer request waits ``delay_ms`` per message hop (mpcdp's own links,
    :mod:`mpcdp.transport.mesh`, wait once per round)."""
    global _link_delay_s
    _link_delay_s = float(delay_ms) / 1000.0


def hop() -> None:
    """One message hop of an emulated slow link; a no-op on a real network."""
    if _link_delay_s:
        time.sleep(_link_delay_s)


def count_dealer_request() -> None:
    global _dealer_requests_made
    _dealer_requests_made += 1


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

            setattr(counting, "_mpcdp_counted", True)  # (read with getattr above)
            setattr(provider, name, counting)
    if getattr(MPCTensor._ltz, "_mpcdp_counted", False):
        return

    original_ltz = MPCTensor._ltz

    def counting_ltz(self, *args, **kwargs):
        costs.record("comparison", _numel(self.share))
        return original_ltz(self, *args, **kwargs)

    setattr(counting_ltz, "_mpcdp_counted", True)
    MPCTensor._ltz = counting_ltz
