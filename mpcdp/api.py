"""``mpcdp.train``: a party trains a model on its own data with the other parties, secure and certified.

In the idiom of Opacus' ``PrivacyEngine`` and Flower's client: a user passes a model (any ``nn.Module``, or
an mpcdp model name), their data file and a protocol, and gets back the trained model and its privacy
certificate. Every party reads only its own file (:mod:`mpcdp.jobs.own_data`).

* ``data`` one file: this host's party of a run across hosts. Where the run is comes from the environment, as
  with ``torchrun``: ``RANK`` (this party), ``WORLD_SIZE`` (the number m of data parties),
  ``MASTER_ADDR``/``MASTER_PORT`` (party 0's host) or ``RENDEZVOUS``; the dealer is one more process with
  ``RANK`` = m, on a host of its own: the same script (``train`` then serves as the dealer and returns None)
  or ``mpcdp party``. Started by ``torchrun`` itself, ``WORLD_SIZE`` counts the dealer too (m + 1) and the
  last rank is the dealer (:mod:`mpcdp.runtime.endpoint`). ``MPCDP_CREDENTIALS`` gives the deployment's TLS
  credentials.
* ``data`` a list of files: every party on this host, each in its own process reading only its file (to
  try a deployment out before spreading it over hosts).
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Any, Sequence

import torch


@dataclasses.dataclass
class TrainResult:
    """The trained model (the caller's ``nn.Module`` with the released parameters loaded, or θ for an mpcdp
    model), its certificate (ε at δ, None without noise) and the held-out metrics: this party's own
    (``held_out["own"]``) and the parties' count-weighted mean (``held_out["mean"]``)."""

    model: Any
    theta: torch.Tensor
    epsilon: float | None
    delta: float | None
    held_out: dict
    parties_records: list[int]
    certificate: dict | None
    reports: list[dict]


def train(model, data, *, protocol: str,
          label: str | None = None, features: Sequence[str] | int | None = None,
          test=None, loss=None, classes: int | None = None,
          epsilon: float | None = None, seed: int | None = None, noise: bool = True) -> TrainResult | None:
    """Train ``model`` on the parties' own data as ``protocol`` says (algorithm, ε, δ, steps; its dataset is
    not read).

    Args:
        model: an ``nn.Module`` (trained through ``torch.func.functional_call``; cross-entropy unless ``loss``
            is given; labels the class indices 0..C−1) or the name of an mpcdp model (``"logreg"``: labels
            −1/+1).
        data: this party's file or ``torch.utils.data.Dataset`` of (features, label) pairs, or a list of one per
            party (see the module docstring).
        protocol: the protocol file (TOML) — the same on every party.
        label, features: how to read the files (:func:`mpcdp.data.party_file.load_party_file`).
        test: this party's held-out file (or one per party).
        loss: (outputs, labels) → mean loss, for an ``nn.Module``.
        classes: C, the number of classes of an ``nn.Module`` (default: the width of its output for one record;
            a single output counts as 2). Every party checks its own labels against 0..C−1 and refuses a file
            with another label locally, without showing it; the parties agree on C alone, never on label values
            (:mod:`mpcdp.jobs.own_data`).
        epsilon, seed: override the protocol's.
        noise: False trains without noise (nothing certified; for comparisons).

    Returns:
        :class:`TrainResult` (None on the dealer's process). Raises :class:`~mpcdp.errors.PartyRefused` (one line,
        every process) where a party refused its input, else :class:`~mpcdp.errors.PartyFailed` or the party's error.
    """
    from torch import nn

    from mpcdp.errors import ConfigError, PartyFailed
    from mpcdp.jobs.own_data import ModuleRecipe, PartySource, as_refusal, run_own_data, run_own_data_here
    from mpcdp.jobs.train import plan_from
    from mpcdp.learning import models

    features = tuple(features) if features is not None and not isinstance(features, int) else features
    if isinstance(model, nn.Module):
        trained = ModuleRecipe(model, loss, classes)
    elif isinstance(model, str):
        if classes is not None:
            raise ConfigError(f"`classes` is for an nn.Module; the mpcdp model {model!r} has its own. Found "
                              f"{classes!r}.")
        trained = models.lookup(model)
    else:
        raise ConfigError(f"`model` must be an nn.Module or an mpcdp model name. Found {type(model).__name__}.")
    local = isinstance(data, (list, tuple))
    if local:
        files = [_records(f) for f in data]
        tests = [None] * len(files) if test is None else [_records(t) for t in test]
        if len(tests) != len(files):
            raise ConfigError(f"`test` must give one file per party ({len(files)}). Found {len(tests)}.")
        plan = plan_from(protocol, backend="mpc", parties=len(files), epsilon=epsilon, seed=seed)
        try:
            values = run_own_data(plan, [PartySource(f, t, label, features) for f, t in zip(files, tests)],
                                  trained, noise=noise)
        except PartyFailed as failure:  # a party that refused its own input: its one line, on every process
            raise as_refusal(failure) from None
        mine = values[0]
    else:
        from mpcdp.runtime.endpoint import resolve

        from mpcdp.jobs.train import protocol_provider

        endpoint = resolve(rank=None, parties=None, rendezvous=None, dealer=protocol_provider(protocol).has_dealer)
        plan = plan_from(protocol, backend="mpc", parties=endpoint.parties, epsilon=epsilon, seed=seed)
        if endpoint.rank == endpoint.parties:  # this host is the dealer's: it serves, and trains nothing
            from mpcdp.jobs.train import config_for
            from mpcdp.runtime.party import run_dealer

            run_dealer(config=config_for(plan), rendezvous=endpoint.rendezvous)
            return None
        source = PartySource(_records(data), _records(test), label, features)
        mine = run_own_data_here(plan, source, trained, rank=endpoint.rank, rendezvous=endpoint.rendezvous,
                                 noise=noise)
        values = [mine]
    theta = mine["theta"]
    if isinstance(model, nn.Module):
        _load(model, theta)
    return TrainResult(model if isinstance(model, nn.Module) else theta, theta, mine["epsilon"], mine["delta"],
                       mine["held_out"], mine["sizes"], mine["certificate"], values)


def _records(data):
    """A file's path as a string, or the records of a Dataset held here
    (:func:`~mpcdp.data.party_file.from_dataset`)."""
    from mpcdp.data.party_file import from_dataset

    if data is None or isinstance(data, str):
        return data
    if isinstance(data, pathlib.Path):
        return str(data)
    return from_dataset(data)


def _load(module, theta: torch.Tensor) -> None:
    """Put the released θ into ``module``'s trainable parameters (in ``named_parameters`` order)."""
    start = 0
    with torch.no_grad():
        for parameter in (p for p in module.parameters() if p.requires_grad):
            size = parameter.numel()
            parameter.copy_(theta[start:start + size].reshape(parameter.shape).to(parameter.dtype))
            start += size
