"""How fast a wrong WORLD_SIZE or RANK is refused on every process (issue 47).

    python -m benchmarks.claims_refusal [--repeats 3]

Four ``python -m mpcdp party --job train --protocol protocols/quickstart-a9a.toml`` processes started at once
on this host as on separate hosts (RANK, WORLD_SIZE, MASTER_ADDR/MASTER_PORT in their environment, TLS links
with a deployment's credentials from ``mpcdp credentials``; 3 data parties and the dealer, ``--timeout 300``):

* **wrong WORLD_SIZE**: ranks 0..3, rank 1 started with WORLD_SIZE 4;
* **duplicate RANK**: ranks 0, 1, 1, 3 (rank 2 missing, two processes of RANK 1).

For every process: the time from its own start to the moment its refusal line reached stderr, and to its
exit; for the run, from the last process's start to the last exit. Beside them, measured in the same run: a
bare interpreter (``python -c pass``) and the bare import of torch and mpcdp's adapter, each start to exit.
The target: every process refuses within 10 s of its start. The machine's load is recorded as it was.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from benchmarks import recording

TARGET_S = 10.0
PROTOCOL = "protocols/quickstart-a9a.toml"
LINE = re.compile(r"refused at the rendezvous: .*(WORLD_SIZE|RANK)")
SCENARIOS = {"wrong WORLD_SIZE": ([0, 1, 2, 3], {1: {"WORLD_SIZE": "4"}}),
             "duplicate RANK": ([0, 1, 1, 3], {})}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wall(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


class _Process:
    """One ``mpcdp party`` process: its start, the moment its refusal line arrived, its exit and its stderr."""

    def __init__(self, rank: int, env: dict) -> None:
        self.rank = rank
        self.start = time.perf_counter()
        self.proc = subprocess.Popen([sys.executable, "-m", "mpcdp", "party", "--job", "train", "--protocol",
                                      PROTOCOL, "--timeout", "300"], env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.refused_at: float | None = None
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))
            if self.refused_at is None and LINE.search(line):
                self.refused_at = time.perf_counter()

    def wait(self, timeout: float) -> dict:
        code = self.proc.wait(timeout=timeout)
        end = time.perf_counter()
        self.reader.join(5)
        refusal = next((line for line in self.lines if LINE.search(line)), None)
        return {"rank": self.rank, "exit_code": code, "start": self.start, "end": end,
                "refused_s": None if self.refused_at is None else self.refused_at - self.start,
                "exit_s": end - self.start, "line": refusal if refusal is not None else self.lines[-1:]}


def scenario(ranks: list[int], extra: dict[int, dict], credentials: str) -> dict:
    """Start one process per entry of ``ranks`` at once and time each one's refusal."""
    env = dict(os.environ, WORLD_SIZE="3", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()),
               MPCDP_CREDENTIALS=credentials)
    procs = [_Process(rank, {**env, "RANK": str(rank), **extra.get(i, {})}) for i, rank in enumerate(ranks)]
    try:
        done = [p.wait(timeout=400) for p in procs]
    finally:
        for p in procs:
            p.proc.kill()
    last_start, last_end = max(d["start"] for d in done), max(d["end"] for d in done)
    for d in done:
        d.pop("start"), d.pop("end")
    return {"processes": done, "last_start_to_last_exit_s": last_end - last_start,
            "every_process_refused": all(d["refused_s"] is not None and d["exit_code"] != 0 for d in done)}


def markdown(command: str, runs: dict[str, list[dict]], interpreter: list[float], bare: list[float],
             load: tuple[list[float], list[float]]) -> str:
    from mpcdp.jobs.report import markdown_table

    rows = []
    for name, repeats in runs.items():
        for i, run in enumerate(repeats):
            for p in run["processes"]:
                refused = "—" if p["refused_s"] is None else f"{p['refused_s']:.2f}"
                rows.append([name, str(i + 1), str(p["rank"]), refused, f"{p['exit_s']:.2f}",
                             f"{run['last_start_to_last_exit_s']:.2f}"])
    worst = max((p["refused_s"] or float("inf")) for repeats in runs.values() for run in repeats
                for p in run["processes"])
    every = all(run["every_process_refused"] for repeats in runs.values() for run in repeats)
    verdict = ("met" if every and worst <= TARGET_S else "not met") + f": the slowest refusal {worst:.2f} s"
    lines = {name: repeats[0]["processes"][0]["line"] for name, repeats in runs.items()}
    return (f"# A wrong WORLD_SIZE or RANK refused on every process\n\nCommand: `{command}`. Four `python -m mpcdp "
            f"party --job train --protocol {PROTOCOL} --timeout 300` processes started at once on this host, "
            f"TLS links with `mpcdp credentials`' deployment: wrong WORLD_SIZE (ranks 0-3, rank 1 with WORLD_SIZE "
            f"4), duplicate RANK (ranks 0, 1, 1, 3). This machine: {os.cpu_count()} cores, shared; load average "
            f"{load[0][0]:.1f} at the start, {load[1][0]:.1f} at the end.\n\n"
            f"**Target: every process refuses within {TARGET_S:g} s of its start: {verdict}.**\n\n"
            + markdown_table(["case", "run", "RANK", "start → refusal line s", "start → exit s",
                              "last start → last exit s"], rows)
            + f"\n\nBeside them, in the same run (medians of {len(bare)}): a bare interpreter (`python -c pass`) "
              f"{statistics.median(interpreter):.2f} s, the bare import (`python -c \"import torch; import "
              f"mpcdp.adapter\"`) {statistics.median(bare):.2f} s, each start to exit. Each process claims its "
              f"place at the rendezvous before it imports torch (mpcdp.transport.claims); party 0, the store's "
              f"host, stays up until every claimer has reported, then 2 s more for the last reader.\n\n"
            + "".join(f"Party 0's line ({name}): `{line}`\n\n" for name, line in lines.items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default="benchmarks/results/claims-refusal")
    ns = parser.parse_args(argv)
    command = ("python -m benchmarks.claims_refusal " + " ".join(argv if argv is not None else sys.argv[1:])).strip()
    from mpcdp.transport.credentials import make_deployment

    load_start = list(os.getloadavg())
    interpreter, bare = [], []
    runs: dict[str, list[dict]] = {name: [] for name in SCENARIOS}
    with tempfile.TemporaryDirectory() as folder:
        credentials = str(make_deployment(os.path.join(folder, "credentials"), 5))
        for _ in range(ns.repeats):
            interpreter.append(_wall([sys.executable, "-c", "pass"]))
            bare.append(_wall([sys.executable, "-c", "import torch; import mpcdp.adapter"]))
            for name, (ranks, extra) in SCENARIOS.items():
                runs[name].append(scenario(ranks, extra, credentials))
    load = (load_start, list(os.getloadavg()))
    text = markdown(command, runs, interpreter, bare, load)
    recording.record(ns.out, text, {"command": command, "protocol": PROTOCOL, "cores": os.cpu_count(),
                                    "load_average": {"start": load[0], "end": load[1]}, "target_s": TARGET_S,
                                    "bare_interpreter_s": interpreter, "bare_import_s": bare, "runs": runs},
                     in_mpc_noise=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
