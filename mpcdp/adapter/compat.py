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
* ``crypten.nn.from_pytorch`` exports the model with ``torch.onnx.export``, whose default is now the
  ``torch.export``-based exporter (``dynamo=True``), which needs ``onnxscript``; CrypTen's converter reads the
  TorchScript exporter's graphs. :func:`install_onnx_export` makes CrypTen's export pass ``dynamo=False``, and
  gives the graph back the duplicate initializers that exporter now merges (CrypTen cannot read the merge).
* ``crypten.load``, ``crypten.load_from_party`` and the tuple provider's ``load_cache`` call ``torch.load``,
  which since torch 2.6 unpickles with ``weights_only=True`` and refuses every CrypTen class (and the
  ``frozenset`` keys of the tuple cache), so nothing ``crypten.save`` wrote loads back.
  :func:`install_allow_listed_loads` keeps ``weights_only=True`` and allow-lists the classes CrypTen's files
  hold (:func:`loadable_classes`). Never ``weights_only=False``: that unpickles, and so runs, whatever a file
  names. Security model: torch's weights-only unpickler rebuilds tensors, plain containers and objects of the
  allow-listed classes only (created with ``__new__`` and given their saved state, or the class called with
  values from the file), so a file cannot run code of its own choosing; one that names any other global is
  refused with one line naming it.
"""

from __future__ import annotations

import importlib
import io
import os
import pickle
import re
import sys
import warnings
from typing import Any

import onnx
import torch

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
    import crypten.common.serial as serial  # noqa: E402
    import crypten.gradients as gradients  # noqa: E402
    import crypten.mpc.primitives.arithmetic as arithmetic  # noqa: E402
    import crypten.mpc.primitives.binary as binary  # noqa: E402
    import crypten.nn.onnx_converter as onnx_converter  # noqa: E402
    from crypten.mpc.provider import provider as tuple_provider  # noqa: E402
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


def install_onnx_export() -> None:
    """Make ``crypten.nn.from_pytorch`` export with torch's TorchScript exporter (idempotent): CrypTen's own
    export arguments (``crypten/nn/onnx_converter.py``, ``_export_pytorch_model``) plus ``dynamo=False``, without
    torch's warning that this exporter is the legacy one (mpcdp chooses it: CrypTen's converter needs it), and
    the graph given back its duplicate initializers (:func:`restore_duplicate_initializers`)."""
    if getattr(onnx_converter._export_pytorch_model, "_mpcdp", False):
        return

    def export(f, pytorch_model, dummy_input):
        exported = io.BytesIO()
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="You are using the legacy TorchScript-based ONNX export")
            warnings.filterwarnings("ignore", message="The feature will be removed",  # the same exporter's logging
                                    category=DeprecationWarning)
            torch.onnx.export(pytorch_model, dummy_input, exported,  # type: ignore[arg-type]  # takes a file too
                              do_constant_folding=False, export_params=True,
                              input_names=["input"], operator_export_type=torch.onnx.OperatorExportTypes.ONNX,
                              output_names=["output"], opset_version=onnx_converter._OPSET_VERSION, dynamo=False)
        model = onnx.load_from_string(exported.getvalue())
        restore_duplicate_initializers(model.graph)
        f.write(model.SerializeToString())
        return f

    setattr(export, "_mpcdp", True)  # noqa: B010 - a marker on a function: installed once
    onnx_converter._export_pytorch_model = export
    onnx_converter.numpy_helper = _WritableArrays()


class _WritableArrays:
    """``onnx.numpy_helper`` for CrypTen's converter, whose ``torch.from_numpy(numpy_helper.to_array(t))`` got
    read-only arrays over the model's bytes (torch warned it may write to them): each array is copied first."""

    def __getattr__(self, name: str) -> Any:
        return getattr(onnx.numpy_helper, name)

    @staticmethod
    def to_array(tensor: Any, *args: Any, **kwargs: Any) -> Any:
        return onnx.numpy_helper.to_array(tensor, *args, **kwargs).copy()


def restore_duplicate_initializers(graph) -> int:
    """Undo torch's exporter keeping one initializer of several with equal values (two zero biases, a batch
    norm's weight and running variance, all ones) and feeding the others from it through ``Identity`` nodes:
    CrypTen's converter has no ``Identity`` op (its issue #455) and makes one parameter of each initializer, as
    the exporters it was written for gave them. Each ``Identity`` of an initializer becomes a copy of that
    initializer under the node's output name again; other ``Identity`` nodes stay (and CrypTen refuses them, as
    it would). Returns how many were restored."""
    initializers = {tensor.name: tensor for tensor in graph.initializer}
    duplicates = [node for node in graph.node
                  if node.op_type == "Identity" and len(node.input) == 1 and node.input[0] in initializers]
    for node in duplicates:
        copy = onnx.TensorProto()
        copy.CopyFrom(initializers[node.input[0]])
        copy.name = node.output[0]
        graph.initializer.append(copy)
        graph.node.remove(node)
    return len(duplicates)


install_onnx_export()


def deserializable_classes() -> dict[str, type]:
    """CrypTen's own allow-list for deserializing (``crypten.common.serial``), by qualified name: torch.nn's
    common layers and losses, and every class registered with ``crypten.common.serial.register_safe_class``
    (as ``crypten.load_from_party`` registers its ``model_class``). Classes only, not its rebuild functions."""
    registry = serial.RestrictedUnpickler._RestrictedUnpickler__SAFE_CLASSES  # noqa: SLF001 - CrypTen's list
    return {name: value for name, value in registry.items() if isinstance(value, type)}


def loadable_classes() -> list[type]:
    """The classes a file ``crypten.save``, ``crypten.save_from_party`` or the tuple provider's ``save_cache``
    wrote may hold: CrypTen's tensor types and their parts (shares, encoder, ptype, autograd context and the
    autograd functions a tensor's ``grad_fn`` names), every ``crypten.nn`` module, :func:`deserializable_classes`,
    and ``frozenset`` (the tuple cache's keys)."""
    parts = [frozenset, arithmetic.ArithmeticSharedTensor, binary.BinarySharedTensor, crypten.encoder.FixedPointEncoder,
             crypten.mpc.ptype, gradients.AutogradContext, *crypten.CrypTensor.__CRYPTENSOR_TYPES__.values()]
    return list(dict.fromkeys([*parts, *_subclasses(vars(gradients), gradients.AutogradFunction),
                               *_subclasses(vars(crypten.nn), crypten.nn.Module), *deserializable_classes().values()]))


def _subclasses(namespace: dict, base: type) -> list[type]:
    return [value for value in namespace.values() if isinstance(value, type) and issubclass(value, base)]


def allow_listed_load(f, **kwargs):
    """``torch.load(f, weights_only=True, **kwargs)`` with :func:`loadable_classes` allow-listed (a caller's own
    ``weights_only`` in ``kwargs``, which ``load_from_party`` passes on, is the caller's choice).

    Raises:
        pickle.UnpicklingError: ``f`` holds another global; one line names it and what to do.
    """
    kwargs.setdefault("weights_only", True)
    try:
        allowed: list[Any] = list(loadable_classes())
        with torch.serialization.safe_globals(allowed):
            return torch.load(f, **kwargs)
    except pickle.UnpicklingError as exc:
        where = repr(os.fspath(f)) if isinstance(f, (str, os.PathLike)) else "a file object"
        raise pickle.UnpicklingError(
            f"mpcdp refused to load {where}: {_what_was_refused(str(exc))}. CrypTen's files load with torch's "
            f"weights-only unpickler and CrypTen's classes allow-listed, never as arbitrary pickles: register a class "
            f"you trust with crypten.common.serial.register_safe_class, or pass your own load_closure") from None


def _what_was_refused(message: str) -> str:
    """What torch's weights-only unpickler refused, in a few words, from its several-line message."""
    named = re.search(r"GLOBAL ([\w.]+)", message)
    if named:
        return f"it names {named.group(1)}, which is not allow-listed"
    found = re.search(r"WeightsUnpickler error: ([^\n]*)", message)
    return found.group(1).strip().rstrip(".") if found else "torch's weights-only unpickler refused it"


def install_allow_listed_loads() -> None:
    """Make ``crypten.load``, ``crypten.load_from_party`` and the tuple provider's ``load_cache`` load with
    :func:`allow_listed_load` where they would call ``torch.load`` (the first two: their default
    ``load_closure``); a closure of the caller's own runs as before (idempotent)."""
    if getattr(crypten.load, "_mpcdp", False):
        return
    crypten_load, crypten_load_from_party = crypten.load, crypten.load_from_party

    def load(f, load_closure=torch.load, **kwargs):
        if load_closure is torch.load:  # CrypTen passes torch.load no kwargs
            load_closure = lambda f, **_: allow_listed_load(f)  # noqa: E731
        return crypten_load(f, load_closure=load_closure, **kwargs)

    def load_from_party(f=None, preloaded=None, encrypted=False, model_class=None, src=0, load_closure=torch.load,
                        **kwargs):
        if load_closure is torch.load:
            load_closure = allow_listed_load
        return crypten_load_from_party(f, preloaded=preloaded, encrypted=encrypted, model_class=model_class,
                                       src=src, load_closure=load_closure, **kwargs)

    load.__doc__, load_from_party.__doc__ = crypten_load.__doc__, crypten_load_from_party.__doc__
    for patched in (load, load_from_party):
        setattr(patched, "_mpcdp", True)  # noqa: B010 - a marker on a function: installed once
    crypten.load, crypten.load_from_party = load, load_from_party
    tuple_provider.TupleProvider._load_requests = _load_cached("request_cache", "_get_request_path")
    tuple_provider.TupleProvider._load_tuples = _load_cached("tuple_cache", "_get_tuple_path")


def _load_cached(attribute: str, path_of: str):
    """CrypTen's ``TupleProvider._load_requests`` / ``_load_tuples`` (``crypten/mpc/provider/provider.py``) with
    :func:`allow_listed_load` in place of ``torch.load``: the cache file is read into ``attribute``, then
    removed."""
    def load(self, filepath=None):
        filepath = getattr(self, path_of)(prefix=filepath)
        if os.path.exists(filepath):
            setattr(self, attribute, allow_listed_load(filepath))
            os.remove(filepath)
        else:
            crypten.log(f"Cache {attribute.split('_')[0]}s not loaded - File `{filepath}` not found")

    return load


install_allow_listed_loads()
