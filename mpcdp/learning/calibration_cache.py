"""Calibrated noise and its certificate for the shipped protocols, shipped as data (``calibrations.json``).

A run's noise calibration and certificate (:func:`mpcdp.learning.algorithms.plan_noise`) are a pure function of
its privacy inputs: the algorithm and its parameters, the party sizes, the model's dimension, (ε, δ), the data
passes, the calibration rule, the noise mode, its release kinds, whether the batches are public, and the
versions of the mechanism, the accountant, dp-accounting and mpcdp. :func:`key_of` hashes every one of them
(SHA-256 of their canonical JSON). For the shipped protocols as ``mpcdp train`` runs them by default the
result is stored here under that key, so the main job does not compose dp-accounting's privacy loss
distributions (about 1.2 s of CPU) nor import dp-accounting and SciPy (about 1 s) before its parties start.

Trust: the file is package data, as trusted as the code beside it; nothing is cached at run time and nothing
is read from elsewhere. A lookup returns an entry only when its stored key equals the key of the run's own
inputs, recomputed from them; any other entry (another input, a new accountant or dp-accounting version) is
ignored and the run calibrates as usual. tests/test_calibration_cache.py recomputes every shipped entry and
requires it to equal what is stored, its floats to 1e-9 relative (another CPU or numpy / SciPy build moves the
11th digit of the calibration's root finding and the PLD accountant). Regenerate after a change of the accountant or the
mechanism: ``python -m mpcdp.jobs.calibrations`` (:mod:`mpcdp.jobs.calibrations`).

Cost: reading the JSON and one SHA-256, well under 10 ms.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import json
from pathlib import Path
from typing import Any, Sequence

from mpcdp.accounting.basics import Certificate
from mpcdp.accounting.grid import GridRelease
from mpcdp.noise import discrete_gaussian as dg

PATH = Path(__file__).with_name("calibrations.json")


def inputs_of(algorithm: str, params: Any, setting: Any, kinds: Sequence[Any], *, public_batches: bool,
              mechanism: str) -> dict:
    """Every input of a run's calibration and certificate, as JSON (what :func:`key_of` hashes)."""
    from mpcdp.accounting.released import ACCOUNTANT

    return {"algorithm": algorithm, "params": dataclasses.asdict(params), "party_sizes": list(setting.sizes),
            "dim": setting.dim, "epsilon": setting.epsilon, "delta": setting.delta, "passes": setting.passes,
            "calibration": setting.calibration, "noise": dataclasses.asdict(setting.noise),
            "kinds": [[k.name, k.sensitivity, k.rows] for k in kinds], "public_batches": public_batches,
            "mechanism": mechanism, "accountant": ACCOUNTANT,
            "dp_accounting": importlib.metadata.version("dp-accounting"), "mpcdp": _version("mpcdp")}


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:  # run from a source tree: a key no shipped entry has
        return "not installed"


def key_of(inputs: dict) -> str:
    """SHA-256 of ``inputs`` as canonical JSON (sorted keys, no spaces; floats as Python writes them, exactly)."""
    text = json.dumps(inputs, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def lookup(inputs: dict, path: Path = PATH) -> tuple[str, tuple[GridRelease, ...], Certificate] | None:
    """(key, releases, certificate) stored for ``inputs``, or None: no entry under their key."""
    key = key_of(inputs)
    try:
        entries = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    entry = entries.get(key)
    if entry is None or entry.get("key") != key:
        return None
    releases = tuple(GridRelease(r["sensitivity"], r["dim"], r["noise_multiplier"]) for r in entry["releases"])
    return key, releases, Certificate(**entry["certificate"])


def entry_of(inputs: dict, releases: Sequence[GridRelease], certificate: Certificate, protocol: str) -> dict:
    """What is stored for one run (refused for a release whose sampler is not the shipped discrete Gaussian:
    the stored form does not name a sampler)."""
    if any(r.sampler != dg.DISCRETE_GAUSSIAN for r in releases):
        raise ValueError("only releases of the shipped discrete Gaussian sampler are cached")
    return {"key": key_of(inputs), "protocol": protocol, "inputs": inputs,
            "releases": [{"sensitivity": r.sensitivity, "dim": r.dim, "noise_multiplier": r.noise_multiplier}
                         for r in releases],
            "certificate": json.loads(json.dumps(dataclasses.asdict(certificate)))}
