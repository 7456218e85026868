"""A data party's life in a secure run: joining (CrypTen's communicator, the provider, re-keyed generators),
the two CrypTen protocols mpcdp calls directly, and leaving."""

from __future__ import annotations

import torch

from mpcdp.adapter import keyed, metering
from mpcdp.adapter.compat import MPCTensor, cfg, comm, configure, crypten, set_endpoint


def start_party(*, rank: int, parties: int, rendezvous: str, provider: str, precision_bits: int,
                timeout_s: float, link_delay_ms: float = 0.0) -> None:
    """Join the run as data party ``rank`` of ``parties`` (blocks until every process has joined).

    ``link_delay_ms`` > 0 emulates a slow network (:func:`.metering.set_link_delay`).
    """
    metering.set_link_delay(link_delay_ms)
    configure(provider, precision_bits, timeout_s)
    set_endpoint(rank, parties, rendezvous)
    crypten.init()
    keyed.key_party_generators()


def stop_party() -> None:
    """Leave the run (party 0 also tells the dealer to terminate)."""
    if comm.is_initialized():
        crypten.uninit()


def beaver_multiply(share_x: torch.Tensor, share_y: torch.Tensor, precision_bits: int) -> torch.Tensor:
    """This party's share of x·y (element-wise) by CrypTen's Beaver protocol with the configured provider.

    Cost: 1 round opening ε = x − a and δ = y − b (2n ring elements), then truncation by 2^bits — local
    for 2 parties, CrypTen's wraps protocol (a dealer `wrap_rng` + 1 more opening) for more.
    """
    x = MPCTensor.from_shares(share_x, precision=precision_bits)
    y = MPCTensor.from_shares(share_y, precision=precision_bits)
    return (x * y).share


def crypten_randn(n: int, *, sigma: float, precision_bits: int) -> torch.Tensor:
    """This party's share of σ·crypten.randn(n) (CrypTen's Box–Muller; for comparison only)."""
    if cfg.encoder.precision_bits != precision_bits:
        raise ValueError(f"CrypTen runs at {cfg.encoder.precision_bits} fractional bits, not {precision_bits}")
    return (crypten.randn(n) * float(sigma)).share
