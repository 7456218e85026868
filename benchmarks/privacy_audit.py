"""The empirical privacy audit over the protocols that ship: lower bounds next to the certified ε.

    .venv/bin/python -m benchmarks.privacy_audit [--protocol protocols/privacy-audit.toml]

Runs every ``[[audit]]`` of the protocol (an `mpcdp audit`: protocol, backend, setting, canaries or runs)
and every ``[[broken]]`` (the same white-box audit with the simulated mechanism deliberately broken,
:func:`mpcdp.jobs.audit.broken_mechanism`). Per row: the lower bound at the stated confidence, the certified
ε of the audited run, their ratio, and the guesses' accuracy with its two-sided 95% Clopper–Pearson interval
(secure and simulated audits of one protocol agree when those intervals overlap). Writes
benchmarks/results/privacy-audit.md and .json.
"""

from __future__ import annotations

import argparse
import sys
import tomllib

from scipy import stats

from benchmarks import recording
from mpcdp.jobs.audit import broken_mechanism, run_audit
from mpcdp.jobs.report import markdown_table
from mpcdp.jobs.train import plan_from


def _interval(correct: int, guesses: int) -> tuple[float, float]:
    if guesses == 0:
        return 0.0, 1.0
    low = stats.beta.ppf(0.025, correct, guesses - correct + 1) if correct > 0 else 0.0
    high = stats.beta.ppf(0.975, correct + 1, guesses - correct) if correct < guesses else 1.0
    return float(low), float(high)


def _audit(entry: dict, parties: int, confidence: float, timeout_s: float = 3600.0) -> dict:
    backend = entry.get("backend", "simulated")
    plan = plan_from(entry["protocol"], backend=backend, parties=int(entry.get("parties", parties)))
    plan = plan.with_mpc(timeout_s=timeout_s)
    report = run_audit(plan, backend=backend, setting=entry.get("setting", "white-box"),
                       canaries=int(entry.get("canaries", 1000)), runs=int(entry.get("runs", 1)),
                       confidence=confidence, seed=entry.get("seed"))
    report["accuracy_interval"] = _interval(report["correct"], report["guesses"])
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--protocol", default="protocols/privacy-audit.toml")
    parser.add_argument("--out", default="benchmarks/results/privacy-audit")
    ns = parser.parse_args(argv)
    command = ("python -m benchmarks.privacy_audit " + " ".join(argv if argv is not None else sys.argv[1:])).strip()
    with open(ns.protocol, "rb") as handle:
        protocol = tomllib.load(handle)
    confidence, parties = float(protocol.get("confidence", 0.95)), int(protocol.get("parties", 3))
    timeout_s = float(protocol.get("timeout_s", 3600))
    reports = [_audit(entry, parties, confidence, timeout_s) for entry in protocol.get("audit", [])]
    for entry in protocol.get("broken", []):
        with broken_mechanism(entry["bug"]):
            report = _audit({"protocol": entry["protocol"], "canaries": entry.get("canaries", 1000)}, parties,
                            confidence)
        report["bug"] = entry["bug"]
        reports.append(report)
    rows = []
    for r in reports:
        how = f"{r['canaries']} canaries, one run" if r["method"] == "one run" else f"{r['runs']} runs, 1 canary each"
        low, high = r["accuracy_interval"]
        rows.append([r["protocol"], f"{r['algorithm']} (m = {r['parties']})", r["backend"], r["setting"], how, r.get("bug", "—"),
                     f"{r['correct']} / {r['guesses']} ({low:.2f}–{high:.2f})", f"{r['epsilon_lower']:.3f}",
                     f"{r['epsilon_certified']:.4f}", f"{r['tightness']:.2f}",
                     "**yes**" if r["epsilon_lower"] > r["epsilon_certified"] else "no", f"{r['wall_s']:.0f}"])
    markdown = (f"# Empirical privacy audit: lower bounds next to the certified ε\n\nCommand: `{command}`\n\n"
                f"{parties} parties unless the row's algorithm says otherwise (DP-SGD: 4, its batch of 100 split evenly); lower bounds at {100 * confidence:.0f}% confidence (one run: Steinke, Nasr and "
                f"Jagielski 2023; many runs: Clopper–Pearson on a held-out half). 'correct / guesses': the guesses "
                f"the bound used, with the accuracy's two-sided 95% Clopper–Pearson interval.\n\n"
                + markdown_table(["protocol", "algorithm", "backend", "setting", "audit", "mechanism broken",
                                  "correct / guesses (95% CI)", "ε lower bound", "ε certified", "lower ÷ certified",
                                  "contradicts the certificate", "s"], rows))
    recording.record(ns.out, markdown, {"command": command,
                                        "reports": [{k: v for k, v in r.items() if k not in ("scores", "signs")}
                                                    for r in reports]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
