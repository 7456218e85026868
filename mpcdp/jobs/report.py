"""The one writer of recorded results and of their tables: PREFIX.json (the numbers), PREFIX.md (the table people
read), PREFIX.png (the plot, where there is one), every record stamped with the versions of the released
mechanism and of the accountant that produced it; and the two formats every table uses (:func:`markdown_table`,
:func:`mean_pm`). Jobs and benchmarks alike write through here, and every file is written without following a link planted at
its name (:func:`write_text`, :func:`save_figure`; :mod:`mpcdp.private_files`)."""

from __future__ import annotations

import json
import pathlib
from typing import Any, Callable, Mapping


def markdown_table(header: list[str], rows: list[list[Any]]) -> str:
    """A GitHub-flavoured markdown table (cells already formatted, or formatted with ``str``)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def mean_pm(mean: float, spread: float, digits: int = 4, *, signed: bool = False) -> str:
    """``mean ± spread`` with ``digits`` decimals (``signed``: the mean with its sign)."""
    return f"{mean:{'+' if signed else ''}.{digits}f} ± {spread:.{digits}f}"


def write_text(path: str | pathlib.Path, text: str) -> None:
    """Write a public text output (UTF-8) without following a link planted at its name
    (:func:`mpcdp.private_files.write_public`)."""
    from mpcdp.private_files import write_public

    write_public(path, text.encode("utf-8"))


def save_figure(fig, path: str | pathlib.Path, *, dpi: int) -> None:
    """Save a matplotlib figure as PNG at ``path`` without following a link planted there, and close it."""
    import io

    import matplotlib.pyplot as plt

    from mpcdp.private_files import write_public

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    plt.close(fig)
    write_public(path, buffer.getvalue())


def _previous_record(path: pathlib.Path) -> dict | None:
    """The record already at ``path``, if it is one: a regular file (not a link) holding a JSON object."""
    if path.is_symlink() or not path.is_file():
        return None
    try:
        loaded = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return loaded if isinstance(loaded, dict) else None


def write_record(out: str, record: dict, text: str, plot: Callable[[dict, pathlib.Path], None] | None = None, *,
                 default: Callable[[Any], Any] | None = None, mechanism: str | None = None,
                 extra_files: Mapping[str | pathlib.Path, Callable[[dict, pathlib.Path], None]] | None = None,
                 in_mpc_noise: bool = True) -> dict[str, Any]:
    """Write the three files of ``out``; return the table, the plot's path, the record and every path written
    (``files``). The record and the table name the versions of the released mechanism and of the accountant,
    and the mechanism of the record they replace when it differs. ``mechanism``: the released mechanism's
    version (paper 003's discrete Laplace, the sampler a cost run measured); else the record's own
    ``mechanism`` (a run's, its mechanism's ``id``); else the default training mechanism's (the in-MPC discrete
    Gaussian, :data:`mpcdp.learning.mechanisms.MECHANISMS`); its record's ``circuit``, if any, is stamped too,
    unless ``in_mpc_noise`` is False: the record sampled no noise inside the MPC (accounting, plaintext
    references, a secure sum without noise, refusals), so no circuit id is claimed and a new circuit leaves it
    current. ``extra_files``: further files of the
    record (a CSV table, a plot under the name a command documents), each path written by its function from
    the stamped record, after the JSON and the table."""
    from mpcdp.accounting.released import ACCOUNTANT
    from mpcdp.learning.mechanisms import MECHANISMS, NoiseChoice, by_id

    MECHANISM = mechanism or record.get("mechanism") or MECHANISMS[NoiseChoice.mode].id  # noqa: N806 - this record's

    prefix = pathlib.Path(out)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    before = _previous_record(prefix.with_suffix(".json"))
    replaced = before.get("mechanism", "the earlier unversioned mechanism (continuous noise in float64 or "
                                       "ratio-of-uniforms, continuous sensitivity)") if before is not None else None
    record = {**record, "mechanism": MECHANISM, "accountant": ACCOUNTANT, "recorded": provenance()}
    released = by_id(MECHANISM)
    if in_mpc_noise and released is not None and released.circuit:  # the in-MPC protocol its secure runs used
        record["circuit"] = released.circuit
    if replaced is not None and replaced != MECHANISM:
        record["replaces_mechanism"] = replaced
    text = text.rstrip("\n") + "\n\n" + stamp(record)
    write_text(prefix.with_suffix(".json"), json.dumps(record, indent=1, default=default) + "\n")
    write_text(prefix.with_suffix(".md"), text)
    files = [str(prefix.with_suffix(".json")), str(prefix.with_suffix(".md"))]
    if plot is not None:
        plot(record, prefix.with_suffix(".png"))
        files.append(str(prefix.with_suffix(".png")))
    for path, write in (extra_files or {}).items():
        write(record, pathlib.Path(path))
        files.append(str(path))
    return {"markdown": text, "png": str(prefix.with_suffix(".png")) if plot else None, "record": record,
            "files": files}


RESULTS = "benchmarks/results"
"""Where recorded results live in the checkout (relative to its root)."""


def provenance(root: pathlib.Path | None = None) -> dict[str, Any]:
    """Where a record comes from: the mpcdp version, the date (UTC), and, in a git checkout, the commit and
    whether tracked files differed from it (``modified``), not counting :data:`RESULTS` (other records written
    by earlier runs of the same session are outputs, not the code that measured). ``root``: the checkout
    (default: the one holding this package)."""
    import datetime
    import importlib.metadata
    import subprocess

    root = root or pathlib.Path(__file__).resolve().parents[2]  # default: the checkout holding the mpcdp package
    try:
        version = importlib.metadata.version("mpcdp")
    except importlib.metadata.PackageNotFoundError:
        version = "not installed"
    found: dict[str, Any] = {"mpcdp_version": version,
                             "date": datetime.datetime.now(datetime.timezone.utc).date().isoformat()}
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10)
        changed = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no", "--",
                                  ".", f":(exclude){RESULTS}"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return {**found, "commit": None}
    if head.returncode != 0:
        return {**found, "commit": None}
    return {**found, "commit": head.stdout.strip(), "modified": bool(changed.stdout.strip())}


def machine_line(processes: int) -> str:
    """The machine a record was measured on, as its ``Machine:`` line says it: the architecture, the cores, the
    torch threads each of ``processes`` processes started side by side runs (the party processes', not this
    process's: :func:`mpcdp.runtime.process_server.threads_per_process`), Python and torch."""
    import os
    import platform

    import torch

    from mpcdp.runtime.process_server import threads_per_process

    threads = threads_per_process(processes)
    return (f"{platform.machine()}, {os.cpu_count()} cores, {threads} torch thread{'s' if threads > 1 else ''} per "
            f"party process, Python {platform.python_version()}, torch {torch.__version__}")


def stamp(record: dict) -> str:
    """The lines a table ends with: the mechanism and accountant versions of its record (and the in-MPC
    circuit's, for the discrete Gaussian), and the mechanism of the record it replaced when that differed."""
    text = f"Mechanism: {record['mechanism']}.\nAccountant: {record['accountant']}.\n"
    made = record.get("recorded")
    if made:
        commit = made.get("commit")
        where = f"commit {commit[:12]}{' with local changes' if made.get('modified') else ''}" if commit else \
            "outside a git checkout"
        text += f"Recorded: {made['date']}, mpcdp {made['mpcdp_version']}, {where}.\n"
    if record.get("circuit"):
        text += f"In-MPC circuit (secure runs): {record['circuit']}.\n"
    if record.get("replaces_mechanism"):
        text += f"This record replaces one made with: {record['replaces_mechanism']}.\n"
    return text
