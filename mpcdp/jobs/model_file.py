"""A trained model on disk: the released parameters and their certificate side by side.

``save(path, ...)`` writes two files:

* ``NAME.pt`` — a ``torch.save`` dictionary of tensors only: ``"theta"``, the released parameters as one flat
  float64 vector (the trainable parameters of an ``nn.Module`` in ``parameters()`` order, or an mpcdp model's
  θ), and, for an ``nn.Module``, ``"state_dict"``, the module's state with those parameters loaded. It is read
  back with ``torch.load(..., weights_only=True)``, which restores tensors and refuses any other object.
* ``NAME.json`` — what the parameters are and what they certify (format ``"mpcdp-model"``, ``version`` 1):
  ``theta_sha256`` (SHA-256 of θ's float64 bytes, the ``model_sha256`` of ``mpcdp train``'s reports, binding
  the two files), ``parameters`` (θ's length), ``layers`` (an ``nn.Module``'s trainable parameters: name and
  shape), ``protocol``, ``algorithm``, ``model``, ``backend`` (``"mpc"``: secure; ``"simulated"``: a dry run),
  ``noise_mode``, ``output`` (the output rule), ``epsilon`` and ``delta`` (None: trained without noise,
  nothing certified), ``certificate`` (ε, δ, the accounting method and its pieces), ``mechanism`` and
  ``accountant`` (the released mechanism's and the accountant's version ids), ``sigma0``/``sigma``,
  ``parties_records`` (every party's record count), ``most_exposed_party``, and ``held_out_mean`` and
  ``metrics_mean`` (the parties' count-weighted mean test metrics, final and per round).

Only what every party of the run learned is written: each party's own held-out metrics stay in the result
object, so the pair of files can be handed on as they are. ``load(path)`` reads both, checks that the tensor
file is the one the JSON describes, and returns a :class:`SavedModel`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import pathlib
from typing import Any

import torch

from mpcdp.private_files import write_public
from mpcdp.errors import ConfigError

FORMAT, VERSION = "mpcdp-model", 1


def paths(path: str | pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """(the tensor file, the JSON) for ``path``: ``NAME.pt`` as given (``.pt`` added when it has no suffix)
    and ``NAME.json`` beside it."""
    path = pathlib.Path(path)
    if path.suffix == ".json":
        raise ConfigError(f"model path {str(path)!r} names the JSON half: give the tensor file, e.g. "
                          f"{str(path.with_suffix('.pt'))!r}")
    tensors = path if path.suffix else path.with_name(path.name + ".pt")
    return tensors, tensors.with_suffix(".json")


def theta_sha256(theta: torch.Tensor) -> str:
    return hashlib.sha256(theta.detach().to(torch.float64).contiguous().numpy().tobytes()).hexdigest()


def save(path: str | pathlib.Path, theta: torch.Tensor, described: dict[str, Any], *,
         module: torch.nn.Module | None = None) -> tuple[str, str]:
    """Write θ (and ``module``'s state) and ``described`` with θ's hash (see the module docstring); returns the
    two paths written."""
    tensors, sidecar = paths(path)
    theta = theta.detach().to(torch.float64).reshape(-1).clone()
    payload: dict[str, Any] = {"theta": theta}
    layers = None
    if module is not None:
        payload["state_dict"] = {k: v.detach().clone() for k, v in module.state_dict().items()}
        layers = [[name, list(p.shape)] for name, p in module.named_parameters() if p.requires_grad]
    tensors.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    write_public(tensors, buffer.getvalue())  # never through a link planted at either name
    record = {"format": FORMAT, "version": VERSION, "tensors": tensors.name, "theta_sha256": theta_sha256(theta),
              "parameters": int(theta.numel()), "layers": layers, **described}
    write_public(sidecar, (json.dumps(record, indent=1, default=_plain) + "\n").encode("utf-8"))
    return str(tensors), str(sidecar)


def _plain(value: Any) -> Any:
    """JSON for what a certificate's pieces may hold besides plain types (tensors, tuples, dataclasses)."""
    if torch.is_tensor(value):
        return value.tolist()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return str(value)


@dataclasses.dataclass
class SavedModel:
    """A model read back by :func:`load`: θ, the module's state (None for an mpcdp model), the JSON record
    (``info``: certificate, protocol, …) and ``model``, the module given to :func:`load` with θ loaded."""

    theta: torch.Tensor
    state_dict: dict[str, torch.Tensor] | None
    info: dict[str, Any]
    model: Any = None

    @property
    def epsilon(self) -> float | None:
        return self.info.get("epsilon")

    @property
    def delta(self) -> float | None:
        return self.info.get("delta")

    @property
    def certificate(self) -> dict | None:
        return self.info.get("certificate")


def load(path: str | pathlib.Path, module: torch.nn.Module | None = None) -> SavedModel:
    """Read a model saved by :func:`save` (``path``: the tensor file, or its name without ``.pt``); with
    ``module``, load θ into its trainable parameters.

    Raises:
        ConfigError: a file is missing or not of this format, the tensor file is not the one its JSON
            describes (θ's hash differs), or ``module`` has another number of trainable parameters.
    """
    tensors, sidecar = paths(path)
    for needed in (tensors, sidecar):
        if not needed.is_file():
            raise ConfigError(f"model file {str(needed)!r} does not exist (a saved model is NAME.pt and NAME.json)")
    try:
        info = json.loads(sidecar.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{str(sidecar)!r} is not a model description: {type(exc).__name__}") from None
    if not isinstance(info, dict) or info.get("format") != FORMAT or info.get("version") != VERSION:
        raise ConfigError(f"{str(sidecar)!r} is not an {FORMAT} version {VERSION} description")
    try:
        payload = torch.load(tensors, weights_only=True, map_location="cpu")
    except Exception as exc:  # noqa: BLE001 - any unreadable or non-tensor content: name the file
        raise ConfigError(f"{str(tensors)!r} is not a saved model's tensor file: {type(exc).__name__}") from None
    theta = payload.get("theta") if isinstance(payload, dict) else None
    if not torch.is_tensor(theta) or theta_sha256(theta) != info.get("theta_sha256"):
        raise ConfigError(f"{str(tensors)!r} does not hold the parameters {str(sidecar)!r} describes "
                          f"(`theta_sha256` differs): the two files are not of one save")
    saved = SavedModel(theta, payload.get("state_dict"), info)
    if module is not None:
        load_into(module, theta)
        saved.model = module
    return saved


def load_into(module: torch.nn.Module, theta: torch.Tensor) -> None:
    """Put θ into ``module``'s trainable parameters (in ``parameters()`` order).

    Raises:
        ConfigError: ``module`` has another number of trainable parameters than θ.
    """
    trainable = [p for p in module.parameters() if p.requires_grad]
    count = sum(p.numel() for p in trainable)
    if count != theta.numel():
        raise ConfigError(f"`module` {type(module).__name__} has {count} trainable parameters; the saved model has "
                          f"{theta.numel()}")
    start = 0
    with torch.no_grad():
        for parameter in trainable:
            size = parameter.numel()
            parameter.copy_(theta[start:start + size].reshape(parameter.shape).to(parameter.dtype))
            start += size
