"""Tables, CSV, JSON and a plot from a :class:`~mpcdp.jobs.cost.CostRun`.

One row per parameter tensor, plus totals: mpcdp's measured counts, bytes, rounds and time (noise sampling
and the online release apart), the plaintext-simulated equivalent, paper 002's Obliv-C numbers for the same
layer (Tables 4–6; 5 parties) and, for a9a and ijcnn1, the published circuit rebuilt on this machine kind;
ratios; and estimated wall time on a LAN and a WAN from the measured rounds and bytes.
"""

from __future__ import annotations

import csv
import io
import json
import pathlib
import platform
from typing import Any

from mpcdp import providers
from mpcdp.jobs.report import save_figure, write_text
from mpcdp.jobs.cost import OBLIVC_GATE_BYTES, OBLIVC_PAPER, OBLIVC_REBUILT, CostRun
from mpcdp.transport.costs import LAN, WAN, WORD_BITS

OP_COLUMNS = ("mul", "square", "and_words", "trunc", "b2a_bits", "comparison", "random_bits", "openings",
              "opened_elements")


def rows(run: CostRun) -> list[dict[str, Any]]:
    """Flat per-layer rows and a final ``total`` row (all numbers; None where not applicable)."""
    out = []
    paper = OBLIVC_PAPER.get(run.model)
    rebuilt = OBLIVC_REBUILT.get(run.model)
    for index, layer in enumerate(run.layers):
        noise, release = layer["noise"], layer["release"]
        row: dict[str, Any] = {"layer": layer["layer"], "shape": "×".join(map(str, layer["shape"])),
                               "elements": layer["elements"]}
        for kind in OP_COLUMNS:
            row[kind] = noise["ops"][kind] + release["ops"][kind]
        row["bit_ands"] = WORD_BITS * row["and_words"]
        row["trunc_redo"] = noise["ops"]["trunc_redo"] + release["ops"]["trunc_redo"]
        row["rounds"] = noise["rounds"] + release["rounds"]
        row["online_rounds"] = release["rounds"]
        row["dealer_requests"] = noise["dealer_requests"] + release["dealer_requests"]
        row["hops"] = _hops(noise) + _hops(release)
        row["emulated_hops"] = _hops(noise, "emulated_hops") + _hops(release, "emulated_hops")
        row["bytes_sent_max_party"] = max(a + b for a, b in zip(noise["bytes_sent"], release["bytes_sent"]))
        row["bytes_received_max_party"] = max(a + b for a, b in zip(noise["bytes_received"],
                                                                     release["bytes_received"]))
        row["dealer_bytes"] = noise["dealer_bytes"] + release["dealer_bytes"]
        row["total_bytes"] = noise["total_bytes"] + release["total_bytes"]
        row["online_bytes"] = release["total_bytes"]
        # the floor of one opening of the d-vector: every plan (star, scatter, direct) moves 2(m−1) shares
        # of it in total; the release opens d + 1 elements (its validation flag rides along)
        row["online_payload"] = 16 * (run.parties - 1) * layer["elements"]
        row["noise_s"] = noise["wall_s"]
        row["online_s"] = release["wall_s"]
        row["total_s"] = noise["wall_s"] + release["wall_s"]
        row["plaintext_s"] = layer["plaintext_s"]
        row["secure_over_plaintext"] = row["total_s"] / layer["plaintext_s"] if layer["plaintext_s"] else None
        link_bytes = noise["link_bytes_max"] + release["link_bytes_max"]
        for link in (LAN, WAN):
            row[f"{link.name.lower()}_s"] = link.time_s(hops=row["hops"], bytes_max_party=link_bytes,
                                                        compute_s=row["total_s"])
        row["candidates"] = layer["noise_stats"].get("candidates")
        if paper:
            gates, seconds = paper[index]
            row.update(oblivc_gates=gates, oblivc_bytes=gates * OBLIVC_GATE_BYTES, oblivc_s=seconds)
            row["oblivc_bytes_ratio"] = row["oblivc_bytes"] / row["total_bytes"] if row["total_bytes"] else None
            row["oblivc_time_ratio"] = seconds / row["total_s"]
        if rebuilt:
            gates, total_bytes, seconds = rebuilt
            row.update(rebuilt_gates=gates, rebuilt_bytes=total_bytes, rebuilt_s=seconds,
                       rebuilt_bytes_ratio=total_bytes / row["total_bytes"] if row["total_bytes"] else None,
                       rebuilt_time_ratio=seconds / row["total_s"])
        out.append(row)
    out.append(_total(out))
    return out


_SUMMED = set(OP_COLUMNS) | {"elements", "bit_ands", "trunc_redo", "rounds", "online_rounds", "dealer_requests",
                             "hops", "emulated_hops",
                             "bytes_sent_max_party", "bytes_received_max_party", "dealer_bytes", "total_bytes",
                             "online_bytes", "online_payload", "noise_s", "online_s", "total_s", "plaintext_s",
                             "lan_s", "wan_s", "candidates", "oblivc_gates", "oblivc_bytes", "oblivc_s",
                             "rebuilt_gates", "rebuilt_bytes", "rebuilt_s"}


def _hops(section: dict[str, Any], key: str = "hops") -> int:
    """The section's critical path in one-way delays (party 0's, :mod:`mpcdp.transport.hop_clock`; ``key``
    "emulated_hops": under the transport's injected delay); a record made before the path was kept charges
    every round and dealer request one delay, as the model then did."""
    hops = section.get(key)
    return section["rounds"] + section["dealer_requests"] if hops is None else hops


def _total(layer_rows: list[dict[str, Any]]) -> dict[str, Any]:
    total: dict[str, Any] = {"layer": "total", "shape": ""}
    for key in layer_rows[0]:
        if key in _SUMMED:
            values = [r.get(key) for r in layer_rows]
            total[key] = None if any(v is None for v in values) else sum(values)
    total["secure_over_plaintext"] = total["total_s"] / total["plaintext_s"] if total["plaintext_s"] else None
    if "oblivc_bytes" in total and total["oblivc_bytes"] is not None:
        total["oblivc_bytes_ratio"] = total["oblivc_bytes"] / total["total_bytes"]
        total["oblivc_time_ratio"] = total["oblivc_s"] / total["total_s"]
    if total.get("rebuilt_bytes") is not None:
        total["rebuilt_bytes_ratio"] = total["rebuilt_bytes"] / total["total_bytes"]
        total["rebuilt_time_ratio"] = total["rebuilt_s"] / total["total_s"]
    return total


def _n(value: Any, digits: int = 0) -> str:
    if value is None:
        return "—"
    if isinstance(value, float) and not digits:
        return f"{value:,.3g}" if abs(value) < 100 else f"{value:,.0f}"
    return f"{value:,.{digits}f}" if digits else f"{value:,}"


def _mb(value: Any) -> str:
    return "—" if value is None else f"{value / 1e6:,.3f}"


def markdown(run: CostRun, command: str | None = None) -> str:
    """The report as Markdown: settings, operation counts, bytes and time, comparisons, totals."""
    table = rows(run)
    head = [f"# Cost per layer: {run.model}, {run.parties} parties, noise `{run.noise}`", ""]
    if command:
        head.append(f"Command: `{command}`  ")
    provider = providers.lookup(getattr(run, "provider", providers.DEFAULT))
    who = ("one process per party plus the dealer" if provider.has_dealer else
           f"one process per party, no dealer (provider `{provider.name}`: {provider.summary}; their messages "
           f"for it are party bytes)")
    head += [f"Machine: {platform.machine()}, Python {platform.python_version()}; {run.where}; {who}. σ = {run.sigma}; injected one-way delay {run.link_delay_ms} ms per round. "
             f"Process start-up and handshake ({run.setup_s:.1f} s) are not in the per-layer times.", "",
             "Per layer the parties sample d Gaussians inside the MPC (**noise**, data-independent, can run ahead) "
             "and then release Σ local + noise in one opening (**online**). Counts are elements (bit-ANDs = 64 × "
             "AND words); rounds are communication phases between data parties; dealer requests are round "
             "trips of party 0 to the dealer (fetched on demand); the LAN/WAN estimates charge one one-way delay per "
             "hop of the critical path (`hops`: rounds and requests as they wait on each other, "
             "mpcdp.transport.hop_clock). Bytes are counted where mpcdp's links move them and from the kernel's TCP counters for the "
             "dealer's and CrypTen's links (payload, no TCP/IP headers); 'per party' is the busiest party, dealer "
             "traffic apart; 'total' adds every party's sent bytes and the dealer traffic (both directions).", "",
             "## Operations", "",
             "| layer | shape | d | mul | square | AND words | bit-ANDs | trunc (redone) | B2A bits | cmp | random bits "
             "| openings | opened elems | rounds | dealer req | hops |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in table:
        head.append(f"| {r['layer']} | {r['shape']} | {_n(r['elements'])} | {_n(r['mul'])} | {_n(r['square'])} | "
                    f"{_n(r['and_words'])} | {_n(r['bit_ands'])} | {_n(r['trunc'])} ({_n(r['trunc_redo'])}) | "
                    f"{_n(r['b2a_bits'])} | {_n(r['comparison'])} | {_n(r['random_bits'])} | {_n(r['openings'])} | "
                    f"{_n(r['opened_elements'])} | {_n(r['rounds'])} | {_n(r['dealer_requests'])} | {_n(r['hops'])} |")
    head += ["", "## Bytes and time", "",
             "| layer | sent/party MB | received/party MB | dealer MB | total MB | online B | online/opening | noise s | "
             "online s | total s | plaintext s | secure/plain | LAN s | WAN s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in table:
        head.append(f"| {r['layer']} | {_mb(r['bytes_sent_max_party'])} | {_mb(r['bytes_received_max_party'])} | "
                    f"{_mb(r['dealer_bytes'])} | "
                    f"{_mb(r['total_bytes'])} | {_n(r['online_bytes'])} | "
                    f"{r['online_bytes'] / r['online_payload']:.3f} | {r['noise_s']:.3f} | {r['online_s']:.4f} | "
                    f"{r['total_s']:.3f} | {r['plaintext_s']:.2e} | {_n(r['secure_over_plaintext'])} | "
                    f"{r['lan_s']:.3f} | {r['wan_s']:.2f} |")
    if "oblivc_gates" in table[0]:
        head += ["", "## Next to paper 002's Obliv-C circuit (5 parties, Yao; bytes = gates × 32, OT not included)",
                 "", "| layer | Obliv-C gates | Obliv-C MB | Obliv-C s | mpcdp total MB | mpcdp s | bytes ratio | "
                 "time ratio |" + (" rebuilt here MB | rebuilt s | bytes ratio | time ratio |" if "rebuilt_bytes" in
                                   table[0] else ""),
                 "|---|---|---|---|---|---|---|---|" + ("---|---|---|---|" if "rebuilt_bytes" in table[0] else "")]
        for r in table:
            line = (f"| {r['layer']} | {_n(r['oblivc_gates'])} | {_mb(r['oblivc_bytes'])} | {_n(r['oblivc_s'])} | "
                    f"{_mb(r['total_bytes'])} | {r['total_s']:.3f} | {r['oblivc_bytes_ratio']:,.0f}× | "
                    f"{r['oblivc_time_ratio']:,.0f}× |")
            if "rebuilt_bytes" in r:
                line += (f" {_mb(r['rebuilt_bytes'])} | {r['rebuilt_s']} | {r['rebuilt_bytes_ratio']:,.0f}× | "
                         f"{r['rebuilt_time_ratio']:,.0f}× |")
            head.append(line)
        head += ["", "The Obliv-C circuit's noise is not Gaussian: rebuilt and run, its rejection test never fired "
                 "(1,080 of 1,080 samples were the unrejected candidate; KS D = 0.32 against N(0, σ²)), so its gate "
                 "count is a lower bound for a correct sampler of that design. mpcdp's samplers reject per "
                 "coordinate: the discrete Gaussian's pmf is enumerated exactly (tests/test_discrete_gaussian.py; "
                 "its in-MPC cost in benchmarks/results/noise-exact.md), and the comparison samplers pass a "
                 "10⁶-draw KS test (benchmarks/results/noise.md)."]
    return "\n".join(head) + "\n"


def write(run: CostRun, prefix: str, command: str | None = None, *, mechanism: str | None = None) -> dict[str, str]:
    """Write PREFIX.md, PREFIX.csv, PREFIX.json and PREFIX.png through :func:`mpcdp.jobs.report.write_record`,
    stamped with ``mechanism``, by default the version of the sampler measured (:func:`mechanism_of`); return
    their paths."""
    from mpcdp.jobs.report import write_record

    table = rows(run)
    out = pathlib.Path(prefix)
    paths = {kind: str(out.with_suffix(f".{kind}")) for kind in ("md", "csv", "json", "png")}
    write_record(prefix, {"command": command, "run": run.to_dict(), "rows": table}, markdown(run, command),
                 lambda _record, path: plot(run, table, str(path)), mechanism=mechanism or mechanism_of(run),
                 extra_files={paths["csv"]: lambda _record, path: _write_csv(table, path)})
    return paths


def mechanism_of(run: CostRun) -> str:
    """The version of the sampler ``run`` measured: its noise mode's ``id``
    (:data:`mpcdp.learning.mechanisms.MECHANISMS`)."""
    from mpcdp.learning.mechanisms import MECHANISMS

    return MECHANISMS[run.noise].id


def _write_csv(table: list[dict[str, Any]], path: pathlib.Path) -> None:
    keys = list(dict.fromkeys(k for r in table for k in r))
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=keys)
    writer.writeheader()
    writer.writerows(table)
    write_text(path, text.getvalue())


def plot(run: CostRun, table: list[dict[str, Any]], path: str) -> None:
    """Log-scale bars per layer: bytes and wall time, mpcdp vs Obliv-C (paper, rebuilt) vs plaintext."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    layers = table[:-1]
    x = np.arange(len(layers))
    fig, axes = plt.subplots(1, 2, figsize=(max(8, 1.6 * len(layers) + 4), 4.2))
    series_bytes = [("mpcdp (total traffic)", [r["total_bytes"] for r in layers], "tab:blue")]
    series_time = [("mpcdp (noise + online)", [r["total_s"] for r in layers], "tab:blue"),
                   ("plaintext simulation", [r["plaintext_s"] for r in layers], "tab:green")]
    if "oblivc_bytes" in layers[0]:
        series_bytes.append(("Obliv-C, paper", [r["oblivc_bytes"] for r in layers], "tab:red"))
        series_time.append(("Obliv-C, paper", [r["oblivc_s"] for r in layers], "tab:red"))
    if "rebuilt_bytes" in layers[0]:
        series_bytes.append(("Obliv-C, rebuilt here", [r["rebuilt_bytes"] for r in layers], "tab:orange"))
        series_time.append(("Obliv-C, rebuilt here", [r["rebuilt_s"] for r in layers], "tab:orange"))
    for ax, series, label in ((axes[0], series_bytes, "bytes"), (axes[1], series_time, "wall time (s)")):
        width = 0.8 / len(series)
        for i, (name, values, colour) in enumerate(series):
            ax.bar(x + (i - (len(series) - 1) / 2) * width, values, width, label=name, color=colour)
        ax.set_yscale("log")
        ax.set_xticks(x, [r["layer"] for r in layers], rotation=30, ha="right", fontsize=8)
        ax.set_ylabel(label)
        ax.legend(fontsize=7)
    fig.suptitle(f"{run.model}: one secure aggregation + in-MPC noise per layer, {run.parties} parties, "
                 f"noise {run.noise}", fontsize=10)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)


def goals(run: CostRun) -> list[str]:
    """The project's stated cost goals that apply to this run, with the measured value and a verdict."""
    from mpcdp.learning.mechanisms import NoiseChoice

    total = rows(run)[-1]
    out = []
    if run.model == "logreg-a9a" and run.parties == 5 and run.noise == NoiseChoice.mode:
        out.append(f"a9a, 5 parties, {run.noise} (the training noise), noise on demand: {total['total_bytes'] / 1e6:.3f} MB total traffic "
                   f"(goal ≤ 2 MB: {'met' if total['total_bytes'] <= 2e6 else 'MISSED'}), {total['total_s']:.3f} s "
                   f"(goal ≤ 2 s: {'met' if total['total_s'] <= 2 else 'MISSED'})")
    if run.model == "mnist-cnn" and run.parties == 5:
        out.append(f"MNIST CNN, all layers, 5 parties: {total['total_bytes'] / 1e6:.1f} MB "
                   f"(goal ≤ 200 MB: {'met' if total['total_bytes'] <= 200e6 else 'MISSED'})")
    ratio = total["online_bytes"] / total["online_payload"]
    worst = max(rows(run)[:-1], key=lambda r: r["online_bytes"] / r["online_payload"])
    out.append(f"online step (noise pre-sampled): {total['online_bytes']:,} bytes = {ratio:.4f}× the bytes of one "
               f"opening of the model's d-vector (goal ≤ 1.1×: {'met' if ratio <= 1.1 else 'MISSED'}); released "
               f"layer by layer, each opening carries one extra element, the validation flag (largest share: "
               f"{worst['layer']}, d = {worst['elements']}, {worst['online_bytes'] / worst['online_payload']:.3f}×)")
    return out


def load(prefix: str) -> CostRun:
    """The run recorded in PREFIX.json."""
    with open(pathlib.Path(prefix).with_suffix(".json")) as fh:
        return CostRun(**json.load(fh)["run"])


def rerender(prefix: str) -> dict[str, str]:
    """Rebuild PREFIX.md, .csv and .png from PREFIX.json (after a change of presentation, not of numbers; the
    recorded mechanism stamp is kept)."""
    with open(pathlib.Path(prefix).with_suffix(".json")) as fh:
        record = json.load(fh)
    return write(CostRun(**record["run"]), prefix, record.get("command"), mechanism=record.get("mechanism"))
