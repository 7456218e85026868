import pytest
import torch

from mpcdp.config import MpcConfig

# One intra-op thread in the test process, as in every party process on this suite's machine (mpcdp.runtime.party
# splits the cores): the suite's two xdist workers share two cores, and a second torch thread per worker only
# spins against the other worker and the parties. Measured under load on the small tensors the in-process tests
# use: test_baselines' 14 simulated DP-SGD runs 65.5 s -> 10.8 s, 26.4 -> 11.2 s of CPU. Party processes set
# their own count after the fork (tests/test_failures.py checks it), so this changes no run's configuration.
torch.set_num_threads(1)


def _worker_ports() -> None:
    """Each xdist worker draws its rendezvous ports (:func:`mpcdp.runtime.ports.free_port`, called at run start
    in this process) from its own slice of the range: a port one worker drew and has not bound yet cannot be
    drawn by the other (1 in 12,768 per concurrent pair otherwise). Commands a test starts as processes of their
    own draw from the whole range, as users' do."""
    import os

    from mpcdp.runtime import ports

    worker, count = os.environ.get("PYTEST_XDIST_WORKER", ""), os.environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    if not (worker.startswith("gw") and worker[2:].isdigit() and count.isdigit() and int(count) > 1):
        return
    low, high = ports.FREE_PORTS
    width = (high - low + 1) // int(count)
    start = low + int(worker[2:]) * width
    ports.FREE_PORTS = (start, start + width - 1)


_worker_ports()


def pytest_collection_modifyitems(config, items):
    """Test files longest first (tests/file_seconds.py): xdist's `--dist loadfile` hands whole files to its workers
    in this order, so the run ends on short files and no worker idles long at the end. A file's own tests keep
    their order; so does the file order where the table has no say (ties)."""
    from file_seconds import longest_first, seconds

    files = list(dict.fromkeys(item.path.name for item in items))
    rank = {name: i for i, name in enumerate(longest_first(files, seconds()))}
    items.sort(key=lambda item: rank[item.path.name])


@pytest.fixture(scope="session", autouse=True)
def session_privacy_ledger(tmp_path_factory):
    """A privacy ledger (mpcdp.jobs.budget) for the whole session, under every module-scoped fixture that trains:
    the user's real ledger is never touched."""
    import os

    before = os.environ.get("MPCDP_LEDGER")
    os.environ["MPCDP_LEDGER"] = str(tmp_path_factory.mktemp("ledger-session"))
    yield
    if before is None:
        os.environ.pop("MPCDP_LEDGER", None)
    else:
        os.environ["MPCDP_LEDGER"] = before


@pytest.fixture(autouse=True)
def own_privacy_ledger(session_privacy_ledger, tmp_path_factory, monkeypatch):
    """Every test its own privacy ledger, in this process and the ones it starts: tests reuse the same records."""
    folder = tmp_path_factory.mktemp("ledger")
    monkeypatch.setenv("MPCDP_LEDGER", str(folder))
    return folder


@pytest.fixture
def config_for():
    """MpcConfig with the dealer (the default provider) and a test-sized timeout."""
    def make(parties: int, **kwargs) -> MpcConfig:
        kwargs.setdefault("timeout_s", 90.0)
        return MpcConfig(parties=parties, **kwargs)
    return make


@pytest.fixture
def deployment(tmp_path):
    """Credentials for processes a test starts on their own, as on separate hosts (no launcher keys a deployment
    for them): a CA and the certificates of ranks 0..5 (a rank m = the dealer for up to 5 parties), made as
    `mpcdp credentials` makes them. Pass it as MPCDP_CREDENTIALS or `--credentials`."""
    from mpcdp.transport.credentials import make_deployment

    return make_deployment(tmp_path / "credentials", 5)


@pytest.fixture
def own_rendezvous(monkeypatch):
    """This process's rendezvous state (:mod:`mpcdp.transport.rendezvous`'s module globals: the store joined,
    the store served, the run, the signer, the forged keys said, the declared network) for the test alone, put
    back afterwards: a test that joins a store in this process leaves nothing to the next test of its worker."""
    from mpcdp.transport import rendezvous

    for name in ("_store", "_server", "_run", "_signer", "_network", "_opened"):
        monkeypatch.setattr(rendezvous, name, getattr(rendezvous, name))
    monkeypatch.setattr(rendezvous, "_forged", {})
    return rendezvous
