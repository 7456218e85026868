"""The shipped calibrations (:mod:`mpcdp.learning.calibration_cache`) computed from the shipped protocols:
``python -m mpcdp.jobs.calibrations`` (from the repository root) recomputes every entry of :data:`SHIPPED` as
``mpcdp train PROTOCOL`` runs it and rewrites ``mpcdp/learning/calibrations.json``; the test of the cache
compares every stored entry with :func:`computed_entry`.

Cost: a9a read and split, then dp-accounting's calibration and certificate, about 2 s per protocol.
"""

from __future__ import annotations

import json

from mpcdp.jobs import train
from mpcdp.learning import algorithms, calibration_cache

SHIPPED = ("protocols/quickstart-a9a.toml", "protocols/quickstart-a9a-distributed.toml")


def computed_entry(protocol: str) -> dict:
    """The entry of ``protocol`` as ``mpcdp train PROTOCOL`` runs it, calibrated and certified now."""
    plan = train.plan_from(protocol)
    _, x, _, parts = train.training_split(plan)
    setting = train.plan_setting(plan, tuple(len(p) for p in parts), plan.trained_model.dimension(x))
    public = train.public_batches(plan)
    noise = algorithms.plan_noise(plan.record, plan.params, setting, public_batches=public, cached=False)
    assert noise.certificate is not None, f"{protocol}: no private release to cache"
    kinds = plan.record.releases(plan.params, setting).kinds  # type: ignore[misc]
    inputs = calibration_cache.inputs_of(plan.record.name, plan.params, setting, kinds, public_batches=public,
                                         mechanism=setting.noise.record.id)
    return calibration_cache.entry_of(inputs, noise.levels.releases, noise.certificate, protocol)


def main() -> int:
    """Recompute every entry of :data:`SHIPPED` and rewrite the shipped file (run from the repository root)."""
    entries = {}
    for protocol in SHIPPED:
        entry = computed_entry(protocol)
        entries[entry["key"]] = entry
    calibration_cache.PATH.write_text(json.dumps(entries, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(entries)} entries to {calibration_cache.PATH}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
