"""Making CrypTen 0.4.1 import and behave on torch 2.13 (CPU), in-process, never by editing site-packages.

This is the only module of mpcdp that imports CrypTen; the rest of the adapter takes CrypTen's modules from
here.

* ``crypten/nn/onnx_converter.py`` imports ``torch.onnx._internal.registration``, which torch moved to
  ``torch.onnx._internal.torchscript_exporter.registration``. :func:`install_torch_compat` registers the
  old name as an alias in ``sys.modules`` before ``import crypten``. Every entry point, including processes
  started with the ``spawn`` method (which re-import everything), reaches CrypTen through this module and so
  through the alias.
* CrypTen's own communicator (gloo) and its dealer server are never started: mpcdp runs CrypTen's
  protocols over its own links (:mod:`.communicator`, :mod:`.dealer_link`).
"""

from __future__ import annotations

import importlib
import sys

from mpcdp.providers import CRYPTEN_PROVIDERS


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
except ModuleNotFoundError as e:  # pragma: no cover - exercised only on a broken install
    if e.name == "crypten":
        raise ImportError(
            "CrypTen is not installed. Run `bash launch/install.sh` (it installs "
            "`pip install --no-deps crypten==0.4.1` plus CrypTen's real dependencies)."
        ) from e
    raise


def configure(crypten_provider: str, precision_bits: int, timeout_s: float) -> None:
    """CrypTen's global configuration for this process: its provider (``"TTP"``, a dealer client, or ``"TFP"``,
    party 0: :attr:`mpcdp.providers.Provider.crypten_provider`) and its fixed-point precision."""
    if crypten_provider not in CRYPTEN_PROVIDERS:
        raise ValueError(f"CrypTen's provider must be one of {list(CRYPTEN_PROVIDERS)}. Found {crypten_provider!r}.")
    cfg.mpc.provider = crypten_provider
    cfg.encoder.precision_bits = int(precision_bits)
    cfg.communicator.verbose = False
