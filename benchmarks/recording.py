"""What every benchmark shares: reading its protocol file and recording its result with the command."""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import tomllib


def parse(doc: str, protocol: str, out: str, argv: list[str] | None,
          flags: dict[str, str] | None = None) -> tuple[argparse.Namespace, dict, str]:
    """Parse --protocol/--out and the benchmark's own on/off ``flags`` (name -> help); return (namespace, the
    protocol's TOML, the command line to record)."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--protocol", default=protocol)
    parser.add_argument("--out", default=out)
    for name, text in (flags or {}).items():
        parser.add_argument(f"--{name}", action="store_true", help=text)
    ns = parser.parse_args(argv)
    with open(ns.protocol, "rb") as fh:
        loaded = tomllib.load(fh)
    spec = getattr(sys.modules["__main__"], "__spec__", None)
    module = spec.name if spec else "?"
    command = f"python -m {module} " + " ".join(argv if argv is not None else sys.argv[1:])
    return ns, loaded, command.strip()


def previous(out: str) -> dict | None:
    """The recorded payload at ``out``.json, if any (to say what moved when a result is re-recorded)."""
    path = pathlib.Path(out).with_suffix(".json")
    return json.loads(path.read_text()) if path.exists() else None


def record(out: str, markdown: str, payload: dict, *, mechanism: str | None = None, in_mpc_noise: bool = True) -> None:
    """Write ``out``.md and ``out``.json through the project's one result writer
    (:func:`mpcdp.jobs.report.write_record`, which stamps the mechanism and accountant versions), and print the
    table. ``mechanism``: the id of the sampler the benchmark measured, where that is not the in-MPC discrete
    Gaussian (write_record's default). ``in_mpc_noise``: False for a benchmark that samples no noise inside the
    MPC (its record names no in-MPC circuit)."""
    from mpcdp.jobs.report import write_record

    print(write_record(out, payload, markdown, mechanism=mechanism, in_mpc_noise=in_mpc_noise)["markdown"])
