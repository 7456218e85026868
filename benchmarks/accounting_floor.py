"""How far the without-replacement certificate is from what any accountant could certify, at Table 2's noise.

    .venv/bin/python -m benchmarks.accounting_floor

The certificate (:func:`mpcdp.accounting.wor_pld.pld_epsilon`) composes, step by step, the dominating pair
symmetrised in both directions. The explicit pair's floor (:func:`mpcdp.accounting.wor_bounds.floor_epsilon`:
every other record at −C, the changed record +C vs −C, one order throughout) lower-bounds what any accountant may
certify. This asks whether a worse neighbouring pair or gradient sequence raises that floor towards the
certificate, at the σ of protocols/dpsrm-a9a-eps0.2.toml and dpsrm-a9a-eps0.5.toml (z = 2.962, 1.517):

* orders mixed: a fraction f of the steps in the reverse order (record i at −C in x and +C in x'), a valid
  pair for an adaptive gradient; rigorous lower bounds, as the floor (bucketed losses, events {S >= c});
* 2-D pairs: the other records at angle θ on the clip circle, the changed record's two values antipodal
  (θ = π is the explicit pair); the output bucketed on a 2-D grid of σ/100 cells, rigorous lower bounds;
* the order chosen adaptively after every step from the loss so far (a dynamic programme on the bucketed loss;
  an estimate, not a bound): δ at the floor's ε, fixed order against adaptive.

Security model: none — public arithmetic.
"""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np
from scipy import signal, special

from benchmarks.recording import record
from mpcdp.accounting import wor_bounds, wor_pld
from mpcdp.accounting.events import DpSrmSetting, dpsrm_event
from mpcdp.jobs.report import markdown_table

TABLE2 = DpSrmSetting(n=(32561,), batch=(200,), batch0=(400,), steps=651, c1=2.0, c2=0.5, gamma=0.5)
NOISE = {"0.2": 2.962, "0.5": 1.517}  # the shipped noise multipliers of releases 1..T
DELTA, WIDTH = 1e-5, 1e-4


def _event(z: float):
    n, b, _ = TABLE2.sampling(False)
    return dpsrm_event(TABLE2, *TABLE2.sigmas_for(z * n / b))


def _epsilon(parts_p, parts_q) -> float:
    """The events' lower bound of the composition (both orders of the events)."""
    p, q = wor_bounds._compose(parts_p), wor_bounds._compose(parts_q)
    return max(wor_bounds._epsilon_from_events(p, q, DELTA), wor_bounds._epsilon_from_events(q[::-1], p[::-1], DELTA))


def mixed_orders(steps, fraction: float) -> float:
    """The floor with ``fraction`` of the later releases in the reverse order (release 0 in the forward one)."""
    parts_p, parts_q = [], []
    for step in steps:
        p, q = wor_bounds._bucket_masses(float(step.rate), step.z, WIDTH, "explicit")
        reverse = round(step.count * fraction) if step.count > 1 else 0
        for count, (a, b) in ((step.count - reverse, (p, q)), (reverse, (q[::-1], p[::-1]))):
            if count:
                parts_p.append((a, count))
                parts_q.append((b, count))
    return _epsilon(parts_p, parts_q)


def _two_d_masses(rate: float, z: float, theta: float, cells: int = 2400, span: int = 6000):
    """Bucketed loss masses under (P, Q) of the 2-D pair at angle ``theta`` (units: Δ = 2C = 1)."""
    c = 0.5
    others = c * np.array([math.cos(theta), math.sin(theta)])
    u, v = np.array([c, 0.0]) - others, np.array([-c, 0.0]) - others
    edges = np.linspace(-(12 * z + 1.5), 12 * z + 1.5, cells + 1)

    def cell(mean):
        return np.outer(np.diff(special.ndtr((edges - mean[0]) / z)), np.diff(special.ndtr((edges - mean[1]) / z)))

    base = (1 - rate) * cell(np.zeros(2))
    p, q = (base + rate * cell(u)).ravel(), (base + rate * cell(v)).ravel()
    ok = (p > 0) & (q > 0)
    loss = np.zeros_like(p)
    loss[ok] = np.log(p[ok] / q[ok])
    k = np.clip(np.rint(loss / WIDTH).astype(np.int64), -span, span) + span
    bp, bq = np.bincount(k, p, 2 * span + 1), np.bincount(k, q, 2 * span + 1)
    bp[0] += max(0.0, 1 - bp.sum())  # the grid's outside mass, at the least favourable loss for the event
    bq[-1] += max(0.0, 1 - bq.sum())
    return bp, bq


def two_d(steps, theta: float) -> float:
    masses = [(_two_d_masses(float(s.rate), s.z, theta), s.count) for s in steps]
    return _epsilon([(m[0], n) for m, n in masses], [(m[1], n) for m, n in masses])


def adaptive_delta(steps, epsilon: float) -> tuple[float, float]:
    """(fixed order, adaptive order) δ at ``epsilon``: E_P[(1 − e^(ε − L))+] by backward induction on the
    bucketed loss L (the bucket's centre standing for its losses: an estimate)."""
    grid = np.arange(-int(4 / WIDTH), int(4 / WIDTH) + 1) * WIDTH
    fixed = adaptive = np.maximum(0.0, -np.expm1(epsilon - grid))
    for step in reversed(steps):
        p, q = wor_bounds._bucket_masses(float(step.rate), step.z, WIDTH, "explicit")
        for _ in range(step.count):
            fixed = signal.fftconvolve(fixed, p[::-1], mode="same")
            adaptive = np.maximum(signal.fftconvolve(adaptive, p[::-1], mode="same"),
                                  signal.fftconvolve(adaptive, q, mode="same"))
    middle = len(grid) // 2
    return float(fixed[middle]), float(adaptive[middle])


def measure(label: str, z: float) -> dict:
    event = _event(z)
    steps = wor_pld.steps_of(event)
    certificate, floor = wor_pld.pld_epsilon(event, DELTA), wor_bounds.floor_epsilon(event, DELTA, width=WIDTH)
    print(f"ε = {label}: mixed orders ...", file=sys.stderr, flush=True)
    mixed = {f: mixed_orders(steps, f) for f in (0.0, 0.25, 0.5)}
    print(f"ε = {label}: 2-D pairs ...", file=sys.stderr, flush=True)
    planar = {t: two_d(steps, t * math.pi) for t in (1.0, 0.75, 0.5)}
    print(f"ε = {label}: adaptive order ...", file=sys.stderr, flush=True)
    fixed, adaptive = adaptive_delta(steps, floor)
    return {"epsilon_target": label, "z": z, "certificate": certificate, "floor": floor,
            "mixed": {str(k): v for k, v in mixed.items()}, "two_d": {str(k): v for k, v in planar.items()},
            "delta_fixed_at_floor": fixed, "delta_adaptive_at_floor": adaptive}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="benchmarks/results/accounting-floor")
    ns = parser.parse_args(argv)
    runs = [measure(label, z) for label, z in NOISE.items()]
    rows = []
    for r in runs:
        best = max(r["floor"], *r["mixed"].values(), *r["two_d"].values())
        rows.append([r["epsilon_target"], r["z"], f"{r['certificate']:.5f}", f"{r['floor']:.5f}",
                     " / ".join(f"{v:.5f}" for v in r["mixed"].values()),
                     " / ".join(f"{v:.5f}" for v in r["two_d"].values()),
                     f"{r['delta_fixed_at_floor']:.3e} → {r['delta_adaptive_at_floor']:.3e}",
                     f"{r['certificate'] / best:.3f}"])
    command = ("python -m benchmarks.accounting_floor " + " ".join(argv if argv is not None else sys.argv[1:])).strip()
    text = "\n".join([
        "# The without-replacement certificate against lower bounds, at Table 2's noise", "",
        f"Command: `{command}`. δ = 1e-5; loss buckets of {WIDTH}; the shipped σ of the DP-SRM/DDP-SRM a9a files.", "",
        markdown_table(["ε target", "z", "certificate", "explicit pair's floor",
                        "orders mixed f = 0 / 0.25 / 0.5", "2-D pairs θ = π / 0.75π / 0.5π",
                        "δ at the floor's ε: fixed → adaptive order (estimate)", "certificate ÷ best bound"], rows),
        "Every rigorous lower bound tried is at most the explicit pair's floor: mixing the orders or moving the "
        "other records off the changed record's line lowers it. Choosing the order adaptively raises δ at the "
        "floor's ε by a few per cent only, worth well under 1% of ε. The certificate's distance from the floor is "
        "therefore the cost of composing the pair symmetrised in both directions, which every per-step "
        "dominating-pair accountant pays (mpcdp/accounting/wor_pld.py).", ""])
    record(ns.out, text, {"command": command, "runs": runs}, in_mpc_noise=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
