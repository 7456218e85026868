"""What TLS on mpcdp's links costs: bytes and time with and without it, measured in one run.

    .venv/bin/python -m benchmarks.links [--repeats 2]

Two workloads, each run plain (``MPCDP_INSECURE_LINKS=1``, knowingly) and over TLS 1.3 as every local run is by
default (the launcher's throwaway deployment, :func:`mpcdp.runtime.harness.throwaway_deployment`), alternating so
that machine drift hits both alike:

* a9a DDP-SRM (`protocols/quickstart-a9a.toml`, secure; the README's main job): the training's wall time
  (``wall_s``: the processes' start, links, handshake, noise pre-sampling and online steps), the in-MPC noise
  pre-sampling and online times, the bytes the kernel sent on the busiest party's links (frames plus TLS records
  and handshakes) and the bytes the dealer sent;
* the MNIST-CNN cost harness (`mpcdp cost --model mnist-cnn`, dgauss noise for every layer): the same two
  numbers per section (noise, release), summed over layers.

Local processes on loopback; every link changes, the dealer's included.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import warnings

from benchmarks import recording
from mpcdp.errors import InsecureSettingWarning
from mpcdp.jobs.report import markdown_table


def _training(protocol: str) -> dict:
    from mpcdp.jobs.train import plan_from, run_plan

    report = run_plan(plan_from(protocol, backend="mpc"), curve=False)
    return {"links": report["links"], "bytes": report["link_wire_bytes_per_party"],
            "dealer_bytes": report["dealer_bytes"], "wall_s": report["wall_s"], "presample_s": report["presample_s"],
            "online_s": report["online_s"]}


def _cost(model: str, parties: int) -> dict:
    from mpcdp.config import MpcConfig
    from mpcdp.jobs.cost import MODELS, cost_job, cost_party
    from mpcdp.runtime.harness import run_job

    config = MpcConfig(parties=parties, timeout_s=1800.0)
    result = run_job(cost_party, config, args=(MODELS[model], "dgauss", 1.0), job=cost_job(model, "dgauss", 1.0))
    out = {}
    for section in ("noise", "release"):
        out[f"{section}_bytes"] = max(sum(layer[section]["kernel_link_sent"] for layer in party)
                                      for party in result.values)
        out[f"{section}_s"] = max(sum(layer[section]["wall_s"] for layer in party) for party in result.values)
    assert result.dealer is not None  # the default provider's dealer reports its bytes
    out["dealer_bytes"] = result.dealer["bytes_sent"]
    return out


def _set_mode(mode: str) -> None:
    """Plain links (knowingly) or TLS, for the runs this process launches next."""
    if mode == "plain":
        os.environ["MPCDP_INSECURE_LINKS"] = "1"
    else:
        os.environ.pop("MPCDP_INSECURE_LINKS", None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--protocol", default="protocols/quickstart-a9a.toml")
    parser.add_argument("--model", default="mnist-cnn")
    parser.add_argument("--out", default="benchmarks/results/links")
    ns = parser.parse_args(argv)
    warnings.simplefilter("ignore", InsecureSettingWarning)  # the plain runs are plain knowingly, to compare
    command = ("python -m benchmarks.links " + " ".join(argv if argv is not None else sys.argv[1:])).strip()
    os.environ.pop("MPCDP_CREDENTIALS", None)  # TLS: each run's own throwaway deployment, as `mpcdp train` makes
    runs: dict[str, list[dict]] = {"plain": [], "tls": []}
    for mode in ("plain", "tls"):  # warm-up, not recorded: the process server's start and first imports
        _set_mode(mode)
        _training(ns.protocol)
    for _ in range(ns.repeats):
        for mode in ("plain", "tls"):
            _set_mode(mode)
            runs[mode].append({"training": _training(ns.protocol), "cost": _cost(ns.model, 3)})
    os.environ.pop("MPCDP_INSECURE_LINKS", None)

    def med(mode: str, part: str, key: str) -> float:
        return statistics.median(r[part][key] for r in runs[mode])

    rows = []
    for part, key, what in (("training", "bytes", "a9a DDP-SRM: bytes on the busiest party's links"),
                            ("training", "dealer_bytes", "a9a DDP-SRM: bytes the dealer sent"),
                            ("training", "wall_s", "a9a DDP-SRM: training wall s"),
                            ("training", "presample_s", "a9a DDP-SRM: noise pre-sampling s"),
                            ("training", "online_s", "a9a DDP-SRM: online s"),
                            ("cost", "noise_bytes", f"{ns.model} cost, noise: bytes (busiest party)"),
                            ("cost", "noise_s", f"{ns.model} cost, noise: s"),
                            ("cost", "release_bytes", f"{ns.model} cost, release: bytes (busiest party)"),
                            ("cost", "release_s", f"{ns.model} cost, release: s"),
                            ("cost", "dealer_bytes", f"{ns.model} cost: bytes the dealer sent")):
        plain, tls = med("plain", part, key), med("tls", part, key)
        fmt = (lambda v: f"{v:,.0f}") if "bytes" in key else (lambda v: f"{v:.3f}")
        rows.append([what, fmt(plain), fmt(tls), f"{tls / plain:.3f}"])
    assert all(r["training"]["links"] == "TLSv1.3" for r in runs["tls"])
    assert all(r["training"]["links"] == "plain TCP" for r in runs["plain"])
    markdown = (f"# TLS 1.3 on mpcdp's links: cost against plain TCP\n\nCommand: `{command}`. Three parties and the "
                f"dealer as local processes; median of {ns.repeats} alternating runs per mode, after one unrecorded warm-up run of each. Bytes: what the kernel "
                f"sent on the data parties' links (frames, TLS records and handshakes), and what the dealer sent on its "
                f"links to them; every link is TLS in the TLS mode.\n\n"
                + markdown_table(["measure", "plain", "TLS", "TLS ÷ plain"], rows))
    recording.record(ns.out, markdown, {"command": command, "runs": runs, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
