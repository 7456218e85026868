"""Keys, checkpoints and journals are private from their first byte: another user racing to open every new
file never opens one, folders are made 0700, and a folder another user owns or can write is refused naming it.

The other user is simulated by a forked child that takes uid/gid 65534 ('nobody'): these tests need root.
"""

import os
import pathlib
import shutil
import stat
import tempfile

import pytest
import torch

from mpcdp.errors import ConfigError
from mpcdp.learning.checkpoint import Checkpointer, load
from mpcdp.transport.credentials import make_deployment

NOBODY = 65534
GENERATIONS = 60
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="simulating another user needs root")


class OtherUser:
    """A forked child running as uid 65534 that, until stopped, tries in a tight loop to open the ``known``
    names in ``folders`` and, every few rounds, every file it lists there (it never reads a byte).
    ``stop()`` returns the names of the regular files it opened and whether it could list a folder at all."""

    def __init__(self, folders, known=()):
        self.known = tuple(known)
        self.stop_read, self.stop_write = os.pipe()
        self.out_read, out_write = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the other user
            os.close(self.stop_write)
            os.close(self.out_read)
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            os.set_blocking(self.stop_read, False)
            opened, listed = self._race([str(f) for f in folders])
            os.write(out_write, ("\n".join([str(listed), *sorted(opened)])).encode())
            os._exit(0)
        os.close(out_write)
        os.close(self.stop_read)

    def _race(self, folders):
        opened, listed, rounds = set(), False, 0
        while True:
            rounds += 1
            for folder in folders:
                names = self.known
                if rounds % 16 == 0:
                    try:
                        names = os.listdir(folder)
                    except OSError:
                        continue
                    listed = True
                for name in names:
                    try:
                        descriptor = os.open(os.path.join(folder, name), os.O_RDONLY | os.O_NONBLOCK)
                    except OSError:
                        continue
                    if stat.S_ISREG(os.fstat(descriptor).st_mode):
                        opened.add(name)
                    os.close(descriptor)
            try:
                if os.read(self.stop_read, 1) == b"":
                    return opened, listed
            except BlockingIOError:
                pass

    def stop(self):
        os.close(self.stop_write)
        chunks = []
        while chunk := os.read(self.out_read, 65536):
            chunks.append(chunk)
        os.close(self.out_read)
        os.waitpid(self.pid, 0)
        listed, *opened = b"".join(chunks).decode().split("\n")
        return set(filter(None, opened)), listed == "True"


@pytest.fixture
def visible_tmp():
    """A temporary folder another user can reach (pytest's own sit under a root-only 0700 folder)."""
    path = pathlib.Path(tempfile.mkdtemp(prefix="mpcdp-private-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _readable_folder(path: pathlib.Path) -> pathlib.Path:
    """A folder of this user that others may list but not write (accepted): the race then depends on each
    file's own mode only."""
    path.mkdir(mode=0o755)
    path.chmod(0o755)
    return path


@needs_root
def test_no_key_can_be_opened_by_another_user_at_any_moment_of_many_generations(visible_tmp):
    out = _readable_folder(visible_tmp / "keys")
    keys = ["ca-key.pem", *(f"party-{rank}-key.pem" for rank in range(3))]
    other = OtherUser([out], known=keys)
    try:
        for _ in range(GENERATIONS):
            make_deployment(out, 2)
            for path in out.iterdir():  # each generation creates its files afresh
                path.unlink()
        make_deployment(out, 2)
    finally:
        opened, listed = other.stop()
    assert listed and {"ca.pem", "party-0.pem"} <= opened  # the racer works: it opens the public certificates
    assert not [name for name in opened if "key" in name], opened
    for path in out.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == (0o600 if "key" in path.name else 0o644), path.name


def _checkpointer(directory, total=40):
    saver = Checkpointer(directory, 0, every=1, total=total, description={"run": "test"})
    saver.secrets = {"batch_key": torch.arange(4), "noise_shares": torch.randn(50)}
    return saver


@needs_root
def test_checkpoints_and_journals_cannot_be_opened_by_another_user_while_written_or_after(visible_tmp):
    directory = _readable_folder(visible_tmp / "ckpt")
    folder = _readable_folder(directory / "party-0")
    saver = _checkpointer(directory)
    other = OtherUser([directory, folder])
    try:
        for release in range(40):
            saver.journal(release, torch.randn(8))
            saver({"releases": release + 1, "theta": torch.randn(8)})
    finally:
        opened, listed = other.stop()
    assert listed and not opened, opened
    names = {p.name for p in folder.iterdir()}
    assert {"release-000039.pt", "opened-000039.pt"} <= names and not [n for n in names if n.endswith(".tmp")]
    assert {stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir()} == {0o600}


def test_folders_that_mpcdp_makes_are_0700_at_every_level(tmp_path):
    make_deployment(tmp_path / "a" / "b" / "keys", 2)
    saver = _checkpointer(tmp_path / "runs" / "ckpt", total=1)
    saver({"releases": 1, "theta": torch.zeros(2)})
    for folder in ("a", "a/b", "a/b/keys", "runs", "runs/ckpt", "runs/ckpt/party-0"):
        assert stat.S_IMODE((tmp_path / folder).stat().st_mode) == 0o700, folder
    assert stat.S_IMODE((tmp_path / "runs/ckpt/party-0/release-000000.pt").stat().st_mode) == 0o600


@needs_root
def test_a_folder_owned_by_another_user_is_refused_naming_it_and_its_owner(tmp_path):
    foreign = tmp_path / "theirs"
    foreign.mkdir(mode=0o700)
    os.chown(foreign, NOBODY, NOBODY)
    with pytest.raises(ConfigError, match=f"folder '{foreign}' is owned by uid {NOBODY}, not by this user"):
        make_deployment(foreign, 2)
    with pytest.raises(ConfigError, match=f"folder '{foreign}' is owned by uid {NOBODY}"):
        _checkpointer(foreign, total=1)({"releases": 1, "theta": torch.zeros(2)})
    assert list(foreign.iterdir()) == []


def test_a_folder_others_can_write_or_a_link_is_refused_and_a_checkpoint_is_not_read_from_one(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o775)
    with pytest.raises(ConfigError, match=f"folder '{shared}' is writable by other users \\(mode 0775\\)"):
        make_deployment(shared, 2)
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere")
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    with pytest.raises(ConfigError, match=f"folder '{link}' is a symbolic link"):
        make_deployment(link, 2)
    directory = tmp_path / "ckpt"
    _checkpointer(directory, total=1)({"releases": 1, "theta": torch.zeros(2)})
    load(directory, 0, 0, {"run": "test"})
    (directory / "party-0").chmod(0o777)  # someone could have put a file there since: it is not unpickled
    with pytest.raises(ConfigError, match="party-0' is writable by other users"):
        load(directory, 0, 0, {"run": "test"})
