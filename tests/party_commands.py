"""Separate ``mpcdp party`` processes as on separate hosts, for tests (one per rank, the dealer last), each forked
from the preloaded server (:mod:`forked`: a real process without a fresh interpreter's import)."""

from __future__ import annotations

import pathlib
import subprocess

import forked

ROOT = pathlib.Path(__file__).resolve().parents[1]
MPCDP = str(ROOT / ".venv" / "bin" / "mpcdp")


def run_party_commands(arguments: list[list[str]], env: dict, timeout: float,
                       commands: dict[int, list[str]] | None = None,
                       environments: dict[int, dict] | None = None) -> list[tuple[int, str, str]]:
    """Start ``mpcdp party *arguments[rank]`` for every rank at once (``env`` plus RANK, plus
    ``environments[rank]``) and wait for all; return (exit code, stdout, stderr) by rank. ``commands``: another
    command for some ranks, in place of ``mpcdp party`` (e.g. a deviating party, ``tests/rogue_party.py``).
    Every process is killed if the wait fails."""
    commands = commands or {}
    extra = environments or {}
    procs = [forked.Popen([*commands.get(rank, [MPCDP, "party"]), *args],
                          env={**env, "RANK": str(rank), **extra.get(rank, {})},
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
             for rank, args in enumerate(arguments)]
    try:
        done = [proc.communicate(timeout=timeout) for proc in procs]
    finally:
        for proc in procs:
            proc.kill()
    return [(proc.returncode, out, err) for proc, (out, err) in zip(procs, done)]
