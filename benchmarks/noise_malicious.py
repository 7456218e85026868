"""The authenticated in-MPC discrete Gaussian (``security = "malicious"``, circuits dg-auth/9 and, with
``malicious_sampler = "fewer-rounds"``, dg-auth/10) beside the semi-honest one (dg-mpc): bytes, rounds, time and
CPU per sample, all three in the same invocation.

    .venv/bin/python -m benchmarks.noise_malicious --parties 3 --samples 1000

Each setting runs ``mpcdp noise``'s job (:func:`mpcdp.jobs.noise.noise_party`: the sampler metered on its own,
then a validation opening, MAC-checked under ``malicious``), σ = 1 at the default precision; bytes are every
party's plus the dealer's (:func:`mpcdp.jobs.noise.cost_summary`), over the samples. Issue 48's target is
≤ 2.5× the semi-honest bytes per sample and ≤ 2× its time. With ``--link-delay-ms``, every mode runs again at each
one-way delay the transport injects per round (``MpcConfig.link_delay_ms``, dealer round trips included), as on
separate hosts: the time ratio there tends to the rounds ratio, where on this host's loopback it is the CPU's.
Every mode also runs with ``[mpc] openings = "all-to-all"`` (1 round an opening instead of the star's 2), on
loopback and at each delay. At m above the default noise committee (3 parties) the semi-honest sampler also runs
with every party in its committee, as the malicious sampler must: the ratios against that run, and each run's bytes
split into the parties' own and the dealer's, say how much of the gap any cheaper dealt material could close.
"""

from __future__ import annotations

import argparse
import os
import sys

from mpcdp.config import MpcConfig
from mpcdp.jobs.noise import cost_summary, noise_party
from mpcdp.jobs.report import machine_line, write_record
from mpcdp.noise import discrete_gaussian as dg
from mpcdp.adapter.auth_bits import BIT_BYTES, BIT_TRIPLE_BYTES, DA_BYTES, EDA_BYTES, HALF_BYTES, ONE_HOT_BYTES
from mpcdp.noise.auth_fields import FIRST_FIELDS, SECOND_FIELDS, dealt_widths
from mpcdp.noise.auth_gaussian import CIRCUIT, CIRCUITS
from mpcdp.noise.auth_gaussian_cost import dealt_breakdown as breakdown, per_candidate, products_per_candidate
from mpcdp.runtime.harness import run_job

MODES = {"semi-honest": ("semi-honest", "fewer-bytes"), "malicious": ("malicious", "fewer-bytes"),
         "fewer-rounds": ("malicious", "fewer-rounds")}
"""Each mode's (security, malicious_sampler): semi-honest, dg-auth/9 (the default plan), dg-auth/10."""


OPENINGS = "all-to-all"
"""Every mode runs again with ``[mpc] openings`` set to this (1 round an opening instead of the star's 2)."""


EVERY_PARTY = "semi-honest, every party"
"""The semi-honest sampler with every party in its noise committee (``noise_committee = m``), as the malicious
sampler always runs: a committee whose members could all deviate together would know the noise, so under
``malicious`` no committee smaller than m is offered. The default committee is 3 parties."""


def _sample(parties: int, mode: str, samples: int, sigma: float, delay_ms: float = 0.0, openings: str = "star",
            committee: int | None = None):
    """``mpcdp noise``'s job at m = ``parties`` in ``mode`` (an injected one-way delay of ``delay_ms``; its small
    openings by ``openings``; the semi-honest noise committee ``committee`` parties, the default if None)."""
    security, plan = MODES[mode]
    config = MpcConfig(parties=parties, security=security, malicious_sampler=plan, timeout_s=600,
                       link_delay_ms=delay_ms, openings=openings,
                       noise_committee=MpcConfig.noise_committee if committee is None else committee)
    return run_job(noise_party, config, args=(samples, "dgauss", sigma, None, samples))


def run(parties: int, samples: int, sigma: float) -> dict:
    row: dict = {"parties": parties, "samples": samples, "sigma": sigma}
    for security in MODES:
        print(f"m = {parties}, {samples} samples, {security} ...", file=sys.stderr, flush=True)
        row[security] = _measured(_sample(parties, security, samples, sigma), samples)
    _ratios(row, ("bytes_per_sample", "wall_s"))
    row[EVERY_PARTY] = _every_party(parties, samples, sigma, row["semi-honest"])
    row[OPENINGS] = _all_to_all(parties, samples, sigma, 0.0, with_bytes=True)
    return row


def _measured(result, samples: int) -> dict:
    """One run's bytes per sample, the dealer's and each party's bytes, rounds, wall, CPU and candidates."""
    summary, first = cost_summary(result.values, result.dealer, samples), result.values[0]
    return {"bytes_per_sample": summary["bytes_per_sample"], "dealer_bytes": summary["dealer_bytes"],
            "bytes_by_party": summary["bytes_by_party"], "rounds": summary["rounds"],
            "wall_s": max(r["wall_s"] for r in result.values),
            "cpu_us_per_sample_by_party": summary["cpu_us_per_sample_by_party"],
            "dealer_cpu_us_per_sample": summary["dealer_cpu_us_per_sample"],
            "candidates": first["candidates"], "accepted": first["accepted"]}


def _every_party(parties: int, samples: int, sigma: float, default: dict) -> dict:
    """The semi-honest sampler with every party in its committee (:func:`_measured`'s fields); at m <= the
    default committee the default run already is that one."""
    if parties <= MpcConfig.noise_committee:
        return {"committee": parties, **default}
    print(f"m = {parties}, {samples} samples, semi-honest, committee of {parties} ...", file=sys.stderr, flush=True)
    return {"committee": parties, **_measured(_sample(parties, "semi-honest", samples, sigma, committee=parties),
                                              samples)}


def _byte_split(mode: dict, samples: int) -> tuple[float, float]:
    """(the parties' bytes, the dealer's bytes) per sample of one mode's run."""
    return sum(mode["bytes_by_party"]) / samples, mode["dealer_bytes"] / samples


def _all_to_all(parties: int, samples: int, sigma: float, delay_ms: float, *, with_bytes: bool = False) -> dict:
    """Every mode again with ``openings = "all-to-all"``: its wall, rounds (and bytes per sample), the malicious
    modes' ratios to semi-honest under the same openings (``wall_ratio``, ...)."""
    runs: dict = {}
    for mode in MODES:
        print(f"m = {parties}, {samples} samples, {mode}, all-to-all, {delay_ms:g} ms ...", file=sys.stderr,
              flush=True)
        result = _sample(parties, mode, samples, sigma, delay_ms, OPENINGS)
        runs[mode] = {"wall_s": max(r["wall_s"] for r in result.values),
                      "rounds": max(r["rounds"] for r in result.values)}
        if with_bytes:
            runs[mode]["bytes_per_sample"] = cost_summary(result.values, result.dealer, samples)["bytes_per_sample"]
    _ratios(runs, ("bytes_per_sample", "wall_s") if with_bytes else ("wall_s",))
    return runs


def _ratios(row: dict, keys: tuple[str, ...]) -> None:
    """Each malicious mode's ratio to semi-honest, per key (``bytes_ratio``, ``wall_ratio``; dg-auth/10's
    ``fewer_rounds_bytes_ratio``, ``fewer_rounds_wall_ratio``)."""
    for key in keys:
        name = key.split("_")[0] + "_ratio"
        row[name] = row["malicious"][key] / row["semi-honest"][key]
        row["fewer_rounds_" + name] = row["fewer-rounds"][key] / row["semi-honest"][key]


def delayed(parties: int, samples: int, sigma: float, delay_ms: float) -> dict:
    """Both modes' sampling wall (and rounds) at an injected one-way delay of ``delay_ms`` per round."""
    row: dict = {"parties": parties, "samples": samples, "delay_ms": delay_ms}
    for security in MODES:
        print(f"m = {parties}, {samples} samples, {security}, {delay_ms:g} ms ...", file=sys.stderr, flush=True)
        result = _sample(parties, security, samples, sigma, delay_ms)
        row[security] = {"wall_s": max(r["wall_s"] for r in result.values),
                         "rounds": max(r["rounds"] for r in result.values)}
    _ratios(row, ("wall_s",))
    row[OPENINGS] = _all_to_all(parties, samples, sigma, delay_ms)
    return row


def markdown(rows: list[dict], command: str, delays: list[dict] | None = None) -> str:
    plan = dg.plan_for(16.0)
    products = products_per_candidate(plan)
    ands = products.full * BIT_TRIPLE_BYTES + products.half * HALF_BYTES
    floor = "; ".join(  # what the ANDs' dealt bytes alone cost per sample, against the semi-honest bytes
        f"at m = {r['parties']} the ANDs' dealt bytes alone are "
        f"{ands * r['malicious']['candidates'] / r['samples'] / r['semi-honest']['bytes_per_sample']:.1f}× "
        "the semi-honest bytes per sample" for r in rows)
    widths = dealt_widths(plan)
    one, (one_dealt, _), (per_dealt, _) = (products_per_candidate(plan, fewer_rounds=True),
                                           per_candidate(plan, True), per_candidate(plan))
    lines = [
        "# The authenticated in-MPC discrete Gaussian beside the semi-honest one",
        "",
        f"Command: `{command}`  ",
        f"Machine: {machine_line(min(r['parties'] for r in rows) + 1)}; parties are separate processes on one host "
        "(loopback, TLS), plus the dealer.",
        "",
        f"Malicious: circuit `{CIRCUIT.split(':')[0]}` (mpcdp/noise/auth_gaussian.py): per candidate "
        f"{products.first} full and {products.first_half} half bit products in SPDZ2k's k = 1 bit domain, per "
        f"survivor of the first factor ({products.survive:.1%} of the candidates) {products.second} full and "
        f"{products.second_half} half more: {products.full:.0f} full (2 bits opened, {BIT_TRIPLE_BYTES:g} bytes "
        f"dealt each) and {products.half:.0f} half (a dealt factor: 1 bit opened, {HALF_BYTES:g} bytes dealt each) "
        f"per candidate; {products.arith} product{'' if products.arith == 1 else 's'} in Z_2^128 "
        "(4 words opened, 96 bytes dealt each), "
        f"a dealt one-hot of {1 << dg.INDEX_BITS} bits ({ONE_HOT_BYTES:g} bytes each) and "
        f"{sum(widths[n] for n in FIRST_FIELDS if n != 'index')} dealt bits per candidate and "
        f"{sum(widths[n] for n in SECOND_FIELDS)} per survivor ({BIT_BYTES:g} bytes each), one 64-bit edaBit "
        f"({EDA_BYTES:g} bytes), {products.crossed} daBits ({DA_BYTES:g} bytes and one "
        "opened bit each); per pass the bit check (48 parity rows, then SPDZ2k's check) and the MAC check before the "
        "first factor's bits and before the accept bits, the bit check after each. Bytes per sample: every party's "
        "and the dealer's link counters over the samples. Issue 48's target: ≤ 2.5× bytes, ≤ 2× time — not met: "
        + floor + ".",
        "",
        f"Malicious, `malicious_sampler = \"fewer-rounds\"`: circuit `{CIRCUITS['fewer-rounds'].split(':')[0]}`, one "
        f"decision per pass: {one.full:.0f} full and {one.half:.0f} half bit products per candidate, every field dealt "
        f"up front ({sum(w for n, w in widths.items() if n != 'index')} dealt bits), {one_dealt:,.0f} bytes dealt "
        f"per candidate against {per_dealt:,.0f} (both σ = 16).",
        "",
        "| m | samples | semi-honest B/sample | malicious B/sample | ratio | wall s (sh → mal) | wall ratio | "
        "rounds (sh → mal) | dealer CPU µs/sample (sh → mal) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        sh, mal = r["semi-honest"], r["malicious"]
        lines.append(f"| {r['parties']} | {r['samples']:,} | {sh['bytes_per_sample']:,.0f} | "
                     f"{mal['bytes_per_sample']:,.0f} | {r['bytes_ratio']:.1f}× | {sh['wall_s']:.2f} → "
                     f"{mal['wall_s']:.2f} | {r['wall_ratio']:.1f}× | {sh['rounds']} → {mal['rounds']} | "
                     f"{sh['dealer_cpu_us_per_sample']} → {mal['dealer_cpu_us_per_sample']} |")
    lines += ["", "Every party samples under `malicious` (a committee whose members could all deviate together would "
              "know the noise), where the semi-honest default samples in a committee of 3 (`noise_committee`; "
              f"`{EVERY_PARTY}`: `noise_committee = m`). Bytes per sample, the parties' own + the dealer's:", "",
              "| m | semi-honest (committee of 3) | semi-honest, every party | malicious | malicious ÷ semi-honest, "
              "every party | the malicious parties' own bytes ÷ semi-honest (committee of 3) | wall s, every party "
              "(sh → mal) | wall ratio |",
              "|---|---|---|---|---|---|---|---|"]
    lines += [_split_row(r) for r in rows]
    lines += ["", "| m | fewer-rounds B/sample | ratio | wall s | wall ratio | rounds | dealer CPU µs/sample | "
              "parties' CPU µs/sample |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        one_row = r["fewer-rounds"]
        lines.append(f"| {r['parties']} | {one_row['bytes_per_sample']:,.0f} | {r['fewer_rounds_bytes_ratio']:.1f}× | "
                     f"{one_row['wall_s']:.2f} | {r['fewer_rounds_wall_ratio']:.1f}× | {one_row['rounds']} | "
                     f"{one_row['dealer_cpu_us_per_sample']} | "
                     f"{min(one_row['cpu_us_per_sample_by_party'])}–{max(one_row['cpu_us_per_sample_by_party'])} |")
    table = breakdown(plan)
    lines += ["", "Where the malicious bytes go, per candidate (σ = 16; `breakdown`: full products × 2 opened bits and "
              f"{BIT_TRIPLE_BYTES:g} dealt bytes, half products × 1 bit and {HALF_BYTES:g} bytes, plus each step's "
              "dealt material and openings):", "",
              "| step | full products | half products | dealt bytes (all receivers) | bits opened per party |",
              "|---|---|---|---|---|"]
    lines += _breakdown_rows(table)
    lines += ["", "The same for `fewer-rounds` (dg-auth/10, no survivor stage):", "",
              "| step | full products | half products | dealt bytes (all receivers) | bits opened per party |",
              "|---|---|---|---|---|"] + _breakdown_rows(breakdown(plan, fewer_rounds=True))
    lines += ["", f"With `openings = \"{OPENINGS}\"` (every small opening in 1 round from every party to every other, "
              "instead of the star's 2 through one party; ratios against semi-honest with the same openings):", "",
              "| m | semi-honest B/sample | malicious B/sample | ratio | fewer-rounds B/sample | ratio | wall s (sh, mal, "
              "fewer-rounds) | rounds (sh → mal → fewer-rounds) |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        a = r[OPENINGS]
        lines.append(f"| {r['parties']} | {a['semi-honest']['bytes_per_sample']:,.0f} | "
                     f"{a['malicious']['bytes_per_sample']:,.0f} | {a['bytes_ratio']:.1f}× | "
                     f"{a['fewer-rounds']['bytes_per_sample']:,.0f} | {a['fewer_rounds_bytes_ratio']:.1f}× | "
                     f"{a['semi-honest']['wall_s']:.2f}, {a['malicious']['wall_s']:.2f}, {a['fewer-rounds']['wall_s']:.2f} | "
                     f"{a['semi-honest']['rounds']} → {a['malicious']['rounds']} → {a['fewer-rounds']['rounds']} |")
    if delays:
        lines += ["", "Under an injected one-way delay per round (`link_delay_ms`: the transport holds each round's frames "
                  "that long before they leave, and each dealer round trip; as on separate hosts, where rounds, not this "
                  "host's CPU, set the time):", "",
                  "| m | samples | delay ms | semi-honest s | malicious s | wall ratio | fewer-rounds s | wall ratio | "
                  "rounds (sh → mal → fewer-rounds) |",
                  "|---|---|---|---|---|---|---|---|---|"]
        lines += [f"| {d['parties']} | {d['samples']:,} | {d['delay_ms']:g} | {d['semi-honest']['wall_s']:.2f} | "
                  f"{d['malicious']['wall_s']:.2f} | {d['wall_ratio']:.1f}× | {d['fewer-rounds']['wall_s']:.2f} | "
                  f"{d['fewer_rounds_wall_ratio']:.1f}× | {d['semi-honest']['rounds']} → {d['malicious']['rounds']} → "
                  f"{d['fewer-rounds']['rounds']} |" for d in delays]
        lines += ["", f"The same delays with `openings = \"{OPENINGS}\"`; \"against star\": the malicious mode's time "
                  "against semi-honest's with the default star (what a semi-honest run on those hosts takes by default):",
                  "", "| m | delay ms | semi-honest s | malicious s | wall ratio | against star | fewer-rounds s | "
                  "wall ratio | against star | rounds (sh → mal → fewer-rounds) |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        lines += [_delayed_all_to_all(d) for d in delays]
    lines += ["", f"Load average when recorded (1, 5, 15 min): {', '.join(f'{x:.1f}' for x in os.getloadavg())} "
              "(a shared 2-core host: wall times scale with it; bytes do not)."]
    return "\n".join(lines) + "\n"


def _split_row(r: dict) -> str:
    """One row of the every-party table: each run's bytes per sample as the parties' + the dealer's."""
    splits = [_byte_split(x, r["samples"]) for x in (r["semi-honest"], r[EVERY_PARTY], r["malicious"])]
    cells = " | ".join(f"{parties:,.0f} + {dealer:,.0f}" for parties, dealer in splits)
    return (f"| {r['parties']} | {cells} | {r['malicious']['bytes_per_sample'] / r[EVERY_PARTY]['bytes_per_sample']:.1f}× "
            f"| {splits[2][0] / r['semi-honest']['bytes_per_sample']:.2f}× | {r[EVERY_PARTY]['wall_s']:.2f} → "
            f"{r['malicious']['wall_s']:.2f} | {r['malicious']['wall_s'] / r[EVERY_PARTY]['wall_s']:.1f}× |")


def _delayed_all_to_all(d: dict) -> str:
    """One row of the all-to-all delay table."""
    a, star = d[OPENINGS], d["semi-honest"]["wall_s"]
    return (f"| {d['parties']} | {d['delay_ms']:g} | {a['semi-honest']['wall_s']:.2f} | {a['malicious']['wall_s']:.2f} | "
            f"{a['wall_ratio']:.1f}× | {a['malicious']['wall_s'] / star:.1f}× | {a['fewer-rounds']['wall_s']:.2f} | "
            f"{a['fewer_rounds_wall_ratio']:.1f}× | {a['fewer-rounds']['wall_s'] / star:.1f}× | "
            f"{a['semi-honest']['rounds']} → {a['malicious']['rounds']} → {a['fewer-rounds']['rounds']} |")


def _breakdown_rows(table: list) -> list[str]:
    rows = [f"| {name} | {p:,.0f} | {h:,.0f} | {dealt:,.0f} | {opened:,.0f} |" for name, p, h, dealt, opened in table]
    return rows + [f"| total | {sum(t[1] for t in table):,.0f} | {sum(t[2] for t in table):,.0f} | "
                   f"{sum(t[3] for t in table):,.0f} | {sum(t[4] for t in table):,.0f} |"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parties", type=int, nargs="+", default=[3])
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--sigma", type=float, default=1.0)
    parser.add_argument("--link-delay-ms", type=float, nargs="*", default=[],
                        help="also run both modes at each injected one-way delay per round (ms)")
    parser.add_argument("--out", default="benchmarks/results/noise-malicious")
    ns = parser.parse_args(argv)
    command = "python -m benchmarks.noise_malicious " + " ".join(argv if argv is not None else sys.argv[1:])
    rows = [run(m, ns.samples, ns.sigma) for m in ns.parties]
    delays = [delayed(m, ns.samples, ns.sigma, d) for m in ns.parties for d in ns.link_delay_ms]
    write_record(ns.out, {"command": command.strip(), "authenticated_circuit": CIRCUIT,
                          "fewer_rounds_circuit": CIRCUITS["fewer-rounds"], "rows": rows,
                          "delays": delays, "load_average": list(os.getloadavg())},
                 markdown(rows, command.strip(), delays))
    return 0


if __name__ == "__main__":
    sys.exit(main())
