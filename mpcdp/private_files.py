"""Files that hold a party's secrets — deployment keys, checkpoints (mini-batch key, noise shares) and
journals — private to the user who writes them from the first byte.

* A folder that holds such files is created with mode 0700 (each missing level on the way, with
  ``os.mkdir(path, 0o700)``). An existing one is used only if it is a real directory (not a symbolic link)
  owned by this process's user and writable by no one else (no group or world write bit): another user
  who could write into it could swap a file, or plant a link where a key will be written. It may be
  readable by others: every secret file in it is 0600 itself, and what else is there is public
  (certificates). A folder failing this is refused with a :class:`~mpcdp.errors.ConfigError` naming the
  folder and, for a foreign owner, the owner's uid.
* A secret file is written to a fresh temporary name in its folder, created by ``os.open`` with
  ``O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW`` and mode 0600 — no other user can open it at any moment, no
  mode is changed afterwards — flushed to disk (checkpoints and journals), then moved over the final name
  with ``os.replace`` (atomic: a process killed while writing leaves the previous file intact, or none).

Public outputs — results, records, plots, saved models, samples (:func:`write_public`) — are written the same
way with mode 0644 and no ``fsync``: never through a link or file that another user planted at the final
name (``os.replace`` replaces a link there, never the file it points to), in any folder the user names.

Files read as credentials are checked like secret folders (:func:`check_private_file`): not a link, a regular
file of this user that no other user can write, and a secret one (a key) readable by no other user.

Security model: confidentiality of these files against other local users of the host (not against root,
nor against the same user), and integrity of what mpcdp writes and of the credentials it reads against them.
Cost: one ``fsync`` per durable file written.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import secrets
import stat
from typing import BinaryIO, Iterator

from mpcdp.errors import ConfigError

PRIVATE_FILE_MODE = 0o600
PUBLIC_FILE_MODE = 0o644
PRIVATE_FOLDER_MODE = 0o700
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def private_folder(folder: str | os.PathLike, *, what: str) -> pathlib.Path:
    """``folder``, created 0700 (with every missing parent) if it is missing, else checked as the module
    docstring says; ``what`` names its role in errors (e.g. "`--out`").

    Raises:
        ConfigError: the folder is a link or not a directory, is owned by another user (naming the uid), or
            is writable by its group or by everyone.
    """
    path = pathlib.Path(folder)
    missing = []
    probe = path
    while not os.path.lexists(probe) and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for level in reversed(missing):
        try:
            os.mkdir(level, PRIVATE_FOLDER_MODE)
        except FileExistsError:  # made by another process meanwhile: checked below like any existing folder
            pass
    check_private_folder(path, what=what)
    return path


def check_private_folder(path: str | os.PathLike, *, what: str) -> None:
    """Refuse an existing folder that another user owns or can write (see the module docstring), before
    secrets are read from it or written to it.

    Raises:
        ConfigError: naming the folder (and a foreign owner's uid).
    """
    path = pathlib.Path(path)
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise ConfigError(f"{what} folder {str(path)!r} cannot be used: {exc.strerror}") from None
    if stat.S_ISLNK(info.st_mode):
        raise ConfigError(f"{what} folder {str(path)!r} is a symbolic link: give the real folder (a link could "
                          f"be pointed elsewhere by whoever owns it)")
    if not stat.S_ISDIR(info.st_mode):
        raise ConfigError(f"{what} folder {str(path)!r} is not a directory")
    if info.st_uid != os.geteuid():
        raise ConfigError(f"{what} folder {str(path)!r} is owned by uid {info.st_uid}, not by this user (uid "
                          f"{os.geteuid()}): another user could read or replace the secrets written there")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise ConfigError(f"{what} folder {str(path)!r} is writable by other users (mode "
                          f"{stat.S_IMODE(info.st_mode):04o}): they could swap the files written there; use a "
                          f"folder of your own (`chmod go-w` it, or let mpcdp create it with mode 0700)")


@contextlib.contextmanager
def private_writer(final: str | os.PathLike, *, mode: int = PRIVATE_FILE_MODE,
                   durable: bool = True) -> Iterator[BinaryIO]:
    """A binary file to write ``final``'s new content to: created with ``mode`` (0600 unless the content is
    public) under a fresh temporary name in the same folder, flushed to disk if ``durable`` (a crash of the
    host then leaves the old or the new content, never an empty file), and moved over ``final`` when the
    block ends without an error (else removed). The folder must have passed :func:`private_folder`."""
    final = pathlib.Path(final)
    temporary = final.with_name(f".{final.name}.{secrets.token_hex(8)}.tmp")
    descriptor = os.open(temporary, _CREATE, mode)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            yield handle
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(temporary, final)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def write_private(final: str | os.PathLike, data: bytes, *, mode: int = PRIVATE_FILE_MODE,
                  durable: bool = True) -> None:
    """Write ``data`` to ``final`` atomically, created with ``mode`` (see :func:`private_writer`)."""
    with private_writer(final, mode=mode, durable=durable) as handle:
        handle.write(data)


def write_public(final: str | os.PathLike, data: bytes) -> None:
    """Write a public output ``final`` (mode 0644) without following a link or opening a file planted at its
    name: a fresh temporary name created with ``O_EXCL | O_NOFOLLOW``, then ``os.replace`` (see the module
    docstring). Not flushed to disk: a crash may lose it, never half-write it."""
    write_private(final, data, mode=PUBLIC_FILE_MODE, durable=False)


def check_private_file(path: str | os.PathLike, *, what: str, secret: bool) -> None:
    """Refuse a file read as a credential unless it is a regular file (not a link) of this user that no other
    user can write, and, if ``secret``, that no other user can read.

    Raises:
        ConfigError: naming ``what``, the file and what is wrong (a foreign owner's uid, the mode).
    """
    path = pathlib.Path(path)
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise ConfigError(f"{what} file {str(path)!r} cannot be read: {exc.strerror}") from None
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISREG(info.st_mode):
        raise ConfigError(f"{what} file {str(path)!r} is {'a symbolic link' if stat.S_ISLNK(info.st_mode) else 'not a regular file'}: "
                          f"give the file itself")
    if info.st_uid != os.geteuid():
        raise ConfigError(f"{what} file {str(path)!r} is owned by uid {info.st_uid}, not by this user (uid "
                          f"{os.geteuid()}): another user could have replaced it")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise ConfigError(f"{what} file {str(path)!r} is writable by other users (mode "
                          f"{stat.S_IMODE(info.st_mode):04o}): `chmod go-w` it")
    if secret and info.st_mode & (stat.S_IRGRP | stat.S_IROTH):
        raise ConfigError(f"{what} file {str(path)!r} is a private key readable by other users (mode "
                          f"{stat.S_IMODE(info.st_mode):04o}): `chmod 600` it")
