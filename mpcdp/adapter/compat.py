"""Making CrypTen 0.4.1 import and behave on torch 2.13 (CPU), in-process, never by editing site-packages.

This is the only module of mpcdp that imports CrypTen; the rest of the adapter takes CrypTen's modules from
here.

* ``crypten/nn/onnx_converter.py`` imports ``torch.onnx._internal.registration``, which torch moved to
  ``torch.onnx._internal.torchscript_exporter.registration``. :func:`install_torch_compat` registers the
  old name as an alias in ``sys.modules`` before ``import crypten``. Every entry point, including processes
  started with the ``spawn`` method (which re-import everything), reaches CrypTen through this module and so
  through the alias.
* CrypTen's communicator passes no timeout to ``torch.distributed``; the default is 30 minutes.
  :func:`configure` installs the per-party timeout of :class:`mpcdp.config.MpcConfig` as torch's default
  process-group timeout before the communicator starts, so a silent peer cannot stall a party for longer.
"""

from __future__ import annotations

import datetime
import importlib
import os
import sys

import torch.distributed as dist

_LEGACY_ONNX_REGISTRATION = "torch.onnx._internal.registration"
_CURRENT_ONNX_REGISTRATION = "torch.onnx._internal.torchscript_exporter.registration"


def install_torch_compat() -> None:
    """Make ``import crypten`` work on torch 2.13 (idempotent, in-process only)."""
    if _LEGACY_ONNX_REGISTRATION in sys.modules:
        return
    try:
        importlib.import_module(_LEGACY_ONNX_REGISTRATION)
        return  # an older torch that still has the module
    except ModuleNotFoundError:
        pass
    current = importlib.import_module(_CURRENT_ONNX_REGISTRATION)
    sys.modules[_LEGACY_ONNX_REGISTRATION] = current
    parent = importlib.import_module("torch.onnx._internal")
    setattr(parent, "registration", current)


install_torch_compat()
try:
    import crypten  # noqa: E402
    import crypten.communicator as comm  # noqa: E402
    from crypten.config import cfg  # noqa: E402
    from crypten.mpc import MPCTensor  # noqa: E402
    import crypten.common.rng as rng  # noqa: E402
    import crypten.mpc.primitives.arithmetic as arithmetic  # noqa: E402
    import crypten.mpc.primitives.binary as binary  # noqa: E402
    from crypten.mpc.provider import tfp_provider  # noqa: E402
    from crypten.mpc.provider import ttp_provider  # noqa: E402
    from crypten.communicator.distributed_communicator import DistributedCommunicator as Communicator  # noqa
except ModuleNotFoundError as e:  # pragma: no cover - exercised only on a broken install
    if e.name == "crypten":
        raise ImportError(
            "CrypTen is not installed. Run `bash launch/install.sh` (it installs "
            "`pip install --no-deps crypten==0.4.1` plus CrypTen's real dependencies)."
        ) from e
    raise

PROVIDERS = {"dealer": "TTP", "tfp": "TFP"}


def configure(provider: str, precision_bits: int, timeout_s: float) -> None:
    """CrypTen's global configuration for this process, and torch's default process-group timeout."""
    if provider not in PROVIDERS:
        raise ValueError(f"`provider` must be one of {sorted(PROVIDERS)}. Found {provider!r}.")
    cfg.mpc.provider = PROVIDERS[provider]
    cfg.encoder.precision_bits = int(precision_bits)
    cfg.communicator.verbose = False
    # torch.distributed looks this module global up when a process group is created.
    dist.distributed_c10d.default_pg_timeout = datetime.timedelta(seconds=float(timeout_s))


def set_endpoint(rank: int, parties: int, rendezvous: str) -> None:
    """The environment CrypTen's DistributedCommunicator reads; without RENDEZVOUS every process would invent
    its own random file path and all of them would hang."""
    os.environ["DISTRIBUTED_BACKEND"] = "gloo"
    os.environ["RENDEZVOUS"] = rendezvous
    os.environ["WORLD_SIZE"] = str(parties)
    os.environ["RANK"] = str(rank)
