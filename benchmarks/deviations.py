"""The deviation harness's long sweep (issue 48): random deviations of one party under ``security = "malicious"``,
counted per job, stage, kind and outcome, and the MAC check's success rate at a reduced s.

    .venv/bin/python -m benchmarks.deviations --parties 3 5

The harness (tests/deviation_harness.py) simulates every data party in one process on mpcdp's own protocol code
and alters one message of one party (or its dealt material). Jobs: ``sum`` (the authenticated sum released, 3
values), ``bounded`` (the release with bounded inputs, 3 values), ``full`` (1 sample of dg-auth/9, bounded
inputs, the noise added, the release: every stage) and ``full, fewer-rounds`` (the same with dg-auth/10,
``malicious_sampler = "fewer-rounds"``). Outcomes per honest party: ``mac`` (its MAC check failed),
``peer`` (stopped as another party stopped), ``same`` (released the honest output), ``no effect`` (the message
was unchanged), and for the cheater's own masked input ``substituted``, ``bound``, ``flag``. Any other outcome
(a different release) stops the sweep with the deviation that caused it. Then the vectorised model of the check
(:func:`deviation_harness.model_check`): per kind and s, how often a deviation that changed an opened value passed,
against SPDZ2k's bound (s+1)·2^-s.
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import random
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))

import deviation_harness as H  # noqa: E402 - the harness lives with the tests
from mpcdp.jobs.report import write_record  # noqa: E402
from mpcdp.noise.auth_gaussian import CIRCUIT, CIRCUITS  # noqa: E402


def stage(label: str) -> str:
    """The stage a send's label or a fetched kind belongs to."""
    if "MAC-check" in label:
        return "MAC check"
    if label.startswith("dg-auth-accept"):
        return "sampler: accept bits"
    if label.startswith("dg-auth-first"):
        return "sampler: first-factor bits"
    if label.startswith("dg-auth-a2b"):
        return "sampler: a2b mask"
    if label.startswith("dg-auth-select"):
        return "sampler: window masks"
    if label.startswith("dg-auth"):
        return "sampler: products"
    if "bound check" in label:
        return "bound checks"
    if label.endswith(H.SUBSTITUTION):
        return "masked inputs"
    if label.startswith("Auth") or label == "MacKey":
        return f"material: {label}"
    return "release"


def sweep(m: int, name: str, trials: int, seed: int) -> tuple[dict, float]:
    jobs = {"sum": H.sum_job(3, seed), "bounded": H.bounded_job(3, seed), "full": H.full_job(1, seed),
            "full, fewer-rounds": H.full_job(1, seed, sampler="fewer-rounds")}
    job, rng = jobs[name], random.Random(seed)
    honest, sends, fetches = H.events(m, job, seed)
    counts: collections.Counter = collections.Counter()
    start = time.perf_counter()
    for _ in range(trials):
        deviation = H.random_deviation(rng, m, len(sends), len(fetches))
        for outcome in H.trial(m, job, seed, deviation, honest):
            counts[stage(deviation.label), deviation.kind, outcome] += 1
    return dict(counts), time.perf_counter() - start


def run(parties: list[int], trials: dict[str, int], model_trials: int, seed: int) -> dict:
    rows = []
    for m in parties:
        for name, n in trials.items():
            counts, seconds = sweep(m, name, n, seed)
            rows.append({"parties": m, "job": name, "deviations": n, "seconds": round(seconds, 1),
                         "counts": [{"stage": s, "kind": k, "outcome": o, "honest_parties": c}
                                    for (s, k, o), c in sorted(counts.items())]})
            print(f"m = {m} {name}: {n} deviations in {seconds:.0f} s", flush=True)
    model = []
    for s in (6, 8, 64):
        for m in parties:
            for kind in H.MODEL_KINDS:
                passed, changed = H.model_check(s, m, kind, model_trials, seed)
                wins = int((passed & changed).sum())
                model.append({"s": s, "parties": m, "kind": kind, "checks": model_trials,
                              "changed": int(changed.sum()), "passed_and_changed": wins,
                              "rate": wins / model_trials, "bound": (s + 1) / 2 ** s})
    return {"rows": rows, "model": model}


def markdown(record: dict, command: str) -> str:
    lines = ["# Deviations under security = 'malicious' (the harness's sweep)", "", f"`{command}`", "",
             "Every honest party's outcome per deviation (tests/deviation_harness.py; no deviation released "
             "anything but the honest output).", "",
             "| m | job | deviations | seconds | stage | kind | outcome | honest parties |", "|---|---|---|---|---|---|---|---|"]
    for row in record["rows"]:
        for c in row["counts"]:
            lines.append(f"| {row['parties']} | {row['job']} | {row['deviations']} | {row['seconds']} | "
                         f"{c['stage']} | {c['kind']} | {c['outcome']} | {c['honest_parties']} |")
    lines += ["", "The MAC check in the vectorised model: deviations that changed an opened value and passed.", "",
              "| s | m | kind | checks | changed | passed and changed | rate | bound (s+1)·2^-s |",
              "|---|---|---|---|---|---|---|---|"]
    for r in record["model"]:
        lines.append(f"| {r['s']} | {r['parties']} | {r['kind']} | {r['checks']} | {r['changed']} | "
                     f"{r['passed_and_changed']} | {r['rate']:.4g} | {r['bound']:.3g} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parties", type=int, nargs="+", default=[3, 5])
    parser.add_argument("--sum", type=int, default=1000, help="deviations of the sum job per m")
    parser.add_argument("--bounded", type=int, default=500, help="deviations of the bounded release per m")
    parser.add_argument("--full", type=int, default=20, help="deviations of the full job (sampler included) per m")
    parser.add_argument("--fewer-rounds", type=int, default=20,
                        help="deviations of the full job under malicious_sampler 'fewer-rounds' (dg-auth/10) per m")
    parser.add_argument("--model", type=int, default=100_000, help="checks per kind, s and m in the model")
    parser.add_argument("--seed", type=int, default=48)
    parser.add_argument("--out", default="benchmarks/results/deviations")
    ns = parser.parse_args(argv)
    command = ("python -m benchmarks.deviations " + " ".join(argv if argv is not None else sys.argv[1:])).strip()
    record = run(ns.parties, {"sum": ns.sum, "bounded": ns.bounded, "full": ns.full,
                              "full, fewer-rounds": ns.fewer_rounds}, ns.model, ns.seed)
    write_record(ns.out, {"command": command, "authenticated_circuit": CIRCUIT,
                          "fewer_rounds_circuit": CIRCUITS["fewer-rounds"], **record},
                 markdown(record, command))
    return 0


if __name__ == "__main__":
    sys.exit(main())
