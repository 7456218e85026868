"""CrypTen's own unit tests: fetched from PyPI by whoever runs them, and run in one mpcdp party process.

The tests are never kept in this repository. CrypTen 0.4.1's source distribution on PyPI holds its ``test/``
folder; :func:`fetch_suite` downloads it through PyPI's JSON simple index (PEP 691), checks its SHA-256
against the digest the protocol pins, and unpacks ``test/`` alone into a cache folder. ``pip download
crypten==0.4.1 --no-deps --no-binary :all:`` cannot fetch it: pip prepares an sdist's metadata before it
saves it, and this sdist's ``setup.py`` reads a ``requirements.txt`` the sdist does not ship.

:func:`run_in_party` is the job each data party of an mpcdp run executes: every listed test method of
CrypTen's ``MultiProcessTestCase`` classes, called in this process with CrypTen already joined to mpcdp's
run (its communicator, generators and dealer: :mod:`mpcdp.adapter`), instead of CrypTen's own launcher
(which forks its parties and forms a gloo group). After each test the parties exchange their outcomes in
rounds labelled with the test's name, so a party that fell out of step with the others stops the run there
(a :class:`~mpcdp.errors.ProtocolViolation` or a time-out) instead of mixing one test's messages into the
next; the launcher then resumes after that test (:mod:`benchmarks.crypten_suite`).
"""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import io
import json
import pathlib
import sys
import tarfile
import time
import traceback
import unittest
import urllib.request

STATUSES = ("pass", "skip", "fail", "error")  # worst last: a test's outcome is its worst party's
_REASON_CHARS = 2000


# -- fetching --------------------------------------------------------------------------------------------------
def fetch_suite(source: dict, cache: pathlib.Path) -> pathlib.Path:
    """CrypTen's ``test/`` folder from the sdist ``source`` names (``index``, ``file``, ``sha256``), unpacked
    under ``cache`` (downloaded once; later calls reuse it)."""
    target = cache / source["sha256"][:16]
    folder = target / "test"
    if (folder / "__init__.py").exists():
        return folder
    data = _download(source)
    _unpack_tests(data, target)
    return folder


def _download(source: dict) -> bytes:
    """The sdist's bytes, checked against the pinned digest (and the index's)."""
    request = urllib.request.Request(source["index"], headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=60) as reply:
        files = json.load(reply)["files"]
    entry = next((f for f in files if f["filename"] == source["file"]), None)
    if entry is None:
        raise RuntimeError(f"{source['index']} lists no {source['file']}")
    if entry["hashes"].get("sha256") != source["sha256"]:
        raise RuntimeError(f"{source['file']}: the index's SHA-256 is not the pinned {source['sha256']}")
    with urllib.request.urlopen(entry["url"], timeout=120) as reply:
        data = reply.read()
    if hashlib.sha256(data).hexdigest() != source["sha256"]:
        raise RuntimeError(f"{source['file']}: the downloaded bytes do not have the pinned SHA-256")
    return data


def _unpack_tests(data: bytes, target: pathlib.Path) -> None:
    """Extract the sdist's ``<name>/test/`` members only, as ``target/test`` (tarfile's ``data`` filter:
    no absolute paths, links out of the folder or device files)."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        members = []
        for member in archive.getmembers():
            parts = pathlib.PurePosixPath(member.name).parts
            if len(parts) > 2 and parts[1] == "test" and (member.isfile() or member.isdir()):
                member.name = "/".join(parts[1:])
                members.append(member)
        target.mkdir(parents=True, exist_ok=True)
        archive.extractall(target, members=members, filter="data")


# -- loading ---------------------------------------------------------------------------------------------------
class _ProcessGroupSeen:
    """What CrypTen's test helpers see as ``torch.distributed`` (:func:`load_classes`)."""

    @staticmethod
    def is_initialized() -> bool:
        return True


def load_classes(suite: str, files: dict[str, str]) -> dict[str, type]:
    """``files`` (test module -> TestCase class name) as classes, imported from the folder ``suite`` as the
    package ``test`` that CrypTen's tests import each other from (whatever the folder is called).

    CrypTen's launcher forms a gloo process group in every party, and its helper ``get_random_linear``
    (``test/multiprocess_test_case.py``) broadcasts party 0's random weights only when ``torch.distributed``
    says one exists. An mpcdp run has none (CrypTen's messages go over mpcdp's links), so that helper module
    is told one exists, as under CrypTen's launcher; CrypTen's library never asks."""
    if getattr(sys.modules.get("test"), "__path__", [None])[0] != suite:
        for name in [n for n in sys.modules if n == "test" or n.startswith("test.")]:
            del sys.modules[name]  # the standard library's regression tests, or another suite
        spec = importlib.util.spec_from_file_location("test", pathlib.Path(suite) / "__init__.py",
                                                      submodule_search_locations=[suite])
        assert spec is not None and spec.loader is not None  # a file location always gives a spec and loader
        package = importlib.util.module_from_spec(spec)
        sys.modules["test"] = package
        spec.loader.exec_module(package)
        helpers = importlib.import_module("test.multiprocess_test_case")  # CrypTen's, told a process group exists
        helpers.dist = _ProcessGroupSeen()  # type: ignore[attr-defined]  # replaces its torch.distributed
    return {module: getattr(importlib.import_module(f"test.{module}"), name) for module, name in files.items()}


def test_ids(classes: dict[str, type]) -> list[str]:
    """Every test method of each class as ``module.Class.method``, in unittest's order."""
    loader = unittest.TestLoader()
    return [f"{module}.{cls.__name__}.{name}" for module, cls in classes.items()
            for name in loader.getTestCaseNames(cls)]


# -- running in a party ----------------------------------------------------------------------------------------
class _Outcome(unittest.TestResult):
    """One test's outcome on this party: its status and, unless it passed, the reason (the exception's last
    traceback lines, or the skip's reason)."""

    def __init__(self):
        super().__init__()
        self.status, self.reason, self.raised = "pass", "", None

    def _note(self, status: str, err) -> None:
        if STATUSES.index(status) > STATUSES.index(self.status):
            self.status = status
            self.reason = "".join(traceback.format_exception(*err))[-_REASON_CHARS:]
            self.raised = err[1]

    def addFailure(self, test, err):  # noqa: N802 - unittest's name
        self._note("fail", err)

    def addError(self, test, err):  # noqa: N802 - unittest's name
        self._note("error", err)

    def addSubTest(self, test, subtest, err):  # noqa: N802 - unittest's name
        if err is not None:
            self._note("fail" if issubclass(err[0], test.failureException) else "error", err)

    def addSkip(self, test, reason):  # noqa: N802 - unittest's name
        if self.status == "pass":
            self.status, self.reason = "skip", str(reason)


class _NoQueues:
    """What CrypTen's test case gets as its multiprocessing context: its ``setUp`` makes a queue for its own
    launcher's results, which no one reads here."""

    @staticmethod
    def Queue():  # noqa: N802 - multiprocessing's name
        return None


def _case(cls: type, method: str, rank: int, parties: int) -> unittest.TestCase:
    """``cls(method)`` as CrypTen's launcher makes it in party ``rank``'s process, with ``world_size`` the
    run's: ``MultiProcessTestCase.setUp`` resets it to its default, 2, for every class but ``Test3PC``."""
    case = cls(method)
    case.rank, case.processes, case.mp_context = rank, [], _NoQueues()
    set_up = case.setUp

    def set_up_in_run():
        set_up()
        case.world_size = parties

    case.setUp = set_up_in_run
    return case


def _reset(crypten, cfg, baseline) -> None:
    """CrypTen's global state as the run started, before every test (CrypTen's launcher gives each test a
    fresh process with the parent's configuration): the configuration, autograd on, the default tensor type,
    and each tuple provider neither tracing nor holding cached requests or tuples (``test_tuple_cache`` leaves
    empty lists cached, from which later tests' requests would pop)."""
    cfg.set_config(copy.deepcopy(baseline))
    crypten.CrypTensor.set_grad_enabled(True)
    crypten.set_default_cryptensor_type("mpc")
    for provider in vars(crypten.mpc)["__SUPPORTED_PROVIDERS"].values():
        provider.tracing, provider.request_cache, provider.tuple_cache = False, [], {}


def run_one(test: str, classes: dict[str, type], rank: int, parties: int) -> dict:
    """Run ``test`` (``module.Class.method``) in this party; its status, reason and seconds. An mpcdp network
    error (a peer lost, out of step or silent) is re-raised: the run cannot go on."""
    from mpcdp.errors import PeerLost, PeerTimeout

    module, _, method = test.split(".")
    outcome, start = _Outcome(), time.perf_counter()
    _case(classes[module], method, rank, parties).run(outcome)
    if isinstance(outcome.raised, (PeerLost, PeerTimeout)):
        raise outcome.raised
    return {"status": outcome.status, "reason": outcome.reason, "seconds": round(time.perf_counter() - start, 3)}


def combined(test: str, everyone: list[dict]) -> dict:
    """One test's outcome over every party: its worst party's status and reason (the lowest rank's among
    equals), each party's status, and the slowest party's seconds."""
    worst = max(range(len(everyone)), key=lambda r: (STATUSES.index(everyone[r]["status"]), -r))
    return {"test": test, "status": everyone[worst]["status"], "reason": everyone[worst]["reason"],
            "party": worst, "statuses": [o["status"] for o in everyone],
            "seconds": max(o["seconds"] for o in everyone)}


def run_in_party(ctx, suite: str, files: dict[str, str], tests: list[str], log: str | None) -> list[dict]:
    """The job of every data party: run ``tests`` in order, exchange each one's outcome with the other parties,
    and return the combined outcomes. Two rounds per test, labelled with it: the outcomes, then a round that
    says every party has them (a party can finish the first while another refuses what it read). Party 0 notes
    in the JSON-lines file ``log`` each test it starts and each outcome, so the launcher knows in which test a
    run that fails stopped. Each test finished is a step of the run's progress (liveness: the run stops only
    when no party makes progress for the protocol's ``timeout_s``)."""
    from mpcdp.adapter.compat import cfg, crypten
    from mpcdp.runtime import progress

    classes = load_classes(suite, files)
    baseline, outcomes = copy.deepcopy(cfg.config), []
    progress.phase("CrypTen's tests", len(tests))
    for test in tests:
        _note(log, ctx.rank, {"started": test})
        _reset(crypten, cfg, baseline)
        mine = run_one(test, classes, ctx.rank, ctx.parties)
        outcome = combined(test, ctx.exchange_public(mine, label=f"crypten suite: {test}"))
        ctx.exchange_public(None, label=f"crypten suite: {test}: every party has every outcome")
        _note(log, ctx.rank, outcome)
        outcomes.append(outcome)
        progress.advance(len(outcomes))
    return outcomes


def _note(log: str | None, rank: int, line: dict) -> None:
    if rank == 0 and log is not None:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(line) + "\n")
