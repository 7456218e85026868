"""Commands as real OS processes forked from a preloaded server, for tests: ``subprocess`` without the import.

A test that starts ``mpcdp party ...``, ``mpcdp train ...``, ``python -m mpcdp.cli ...`` or ``python script.py``
as a separate process pays a fresh interpreter each time: importing torch, CrypTen and mpcdp costs ~4.6 s of CPU
(twice that under load), more than most of these runs themselves. :func:`Popen` and :func:`run` start the same
command as a real process instead forked from mpcdp's own fork server (:mod:`mpcdp.runtime.process_server`, the
one a local run forks its parties from, started once per test process with :data:`~mpcdp.runtime.process_server.
PRELOAD` imported). The child then becomes what a fresh interpreter would be before it runs the command: the
whole environment given (nothing else), the working directory, ``sys.argv``, ``sys.path`` (the entry's folder,
PYTHONPATH, the installed packages), fds 0/1/2 (a pipe, a file, /dev/null or the test's own), new standard
streams, a main process of its own to multiprocessing with its own fork server as its child (forked from it
before the command runs, already holding what the server preloads, so a launcher does not pay a fresh
interpreter's import for it; a command that launches nothing leaves it idle), torch's threads as its
environment sets them, fresh seeds; then it exits as the interpreter would (non-daemon threads joined, atexit
run, streams flushed) with the command's exit code. Its pid is real: signals, kills,
``/proc`` and its children are those of a process; its exit code is the real one (a signal: minus its number).

Only the interpreter's import is shared. Keep ``subprocess`` where the subject is the interpreter or an entry
point itself (the console script, ``python -m mpcdp``, ``launch/*.sh``, torchrun).

The two objects mirror ``subprocess``: :class:`Popen` (args, pid, returncode, stdin/stdout/stderr, poll, wait,
communicate, send_signal, terminate, kill, a context manager) and :func:`run` (a ``CompletedProcess``), so a test
switches with one changed name. The command is recognised, not executed: ``.../mpcdp ARGS`` (the console script),
``python -m MODULE ARGS``, ``python -c CODE ARGS`` or ``python SCRIPT ARGS``, each also after ``ip netns exec
NAME`` (the child enters that network namespace first); anything else is refused.
"""

from __future__ import annotations

import io
import os
import pathlib
import signal
import subprocess
import sys
import threading
import time
from multiprocessing import reduction

PIPE, STDOUT, DEVNULL = subprocess.PIPE, subprocess.STDOUT, subprocess.DEVNULL


NETNS_EXEC = ["ip", "netns", "exec"]
"""A command under this prefix and a namespace's name runs in that network namespace (:func:`_enter_netns`)."""


def _netns(args: list[str]) -> tuple[str | None, list[str]]:
    """(network namespace, command) of ``ip netns exec NAME COMMAND`` ((None, args) for any other command)."""
    if args[:3] == NETNS_EXEC and len(args) > 4:
        return args[3], args[4:]
    return None, args


def _enter_netns(name: str) -> None:
    """Move this (single-threaded, just forked) process into the named network namespace, as ``ip netns exec``
    does with setns(2): its sockets, interfaces and routes are that namespace's, and so are its children's.
    (``ip netns exec`` also remounts /sys for the namespace; mpcdp reads its interfaces by ioctl, not /sys.)"""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        if libc.setns(fd, 0x40000000) != 0:  # CLONE_NEWNET
            raise OSError(ctypes.get_errno(), f"setns into network namespace {name!r}")
    finally:
        os.close(fd)


def _entry(args: list[str]) -> tuple[str, str, list[str]]:
    """(kind, what, argv) of a command: ``("mpcdp", script, argv)``, ``("module", name, argv)``,
    ``("code", source, argv)`` or ``("script", path, argv)``, with ``argv`` as ``sys.argv`` would be."""
    first = os.path.basename(args[0])
    if first == "mpcdp":
        return "mpcdp", args[0], [args[0], *args[1:]]
    if not (args[0] == sys.executable or first.startswith("python")):
        raise ValueError(f"forked: not a Python or mpcdp command (use subprocess): {args[:2]}")
    if len(args) >= 3 and args[1] == "-m":
        return "module", args[2], [args[2], *args[3:]]  # runpy puts the module's file in argv[0]
    if len(args) >= 3 and args[1] == "-c":
        return "code", args[2], ["-c", *args[3:]]
    if len(args) >= 2 and not args[1].startswith("-"):
        return "script", args[1], args[1:]
    raise ValueError(f"forked: interpreter options other than -m/-c are not supported: {args[:3]}")


def _fresh_path(kind: str, what: str, cwd: str, env: dict) -> list[str]:
    """``sys.path`` as a fresh interpreter would start it: the entry's folder (the console script's, the
    script's; the working directory under ``-m``; '' under ``-c``), PYTHONPATH, then the interpreter's own
    entries (the standard library and the installed packages: those under its prefixes)."""
    first = {"mpcdp": os.path.dirname(os.path.abspath(what)), "module": cwd, "code": "",
             "script": os.path.dirname(os.path.abspath(os.path.join(cwd, what)))}[kind]
    extra = [os.path.abspath(os.path.join(cwd, p)) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    own = [p for p in sys.path if p.startswith((sys.prefix, sys.base_prefix)) and p not in extra]
    return [first, *extra, *own]


def _streams() -> None:
    """New sys.stdin/stdout/stderr over fds 0/1/2, buffered as a fresh interpreter buffers them (stdout by
    line on a terminal, by block otherwise; stderr by line)."""
    encoding = os.environ.get("PYTHONIOENCODING", "utf-8").split(":")[0] or "utf-8"
    sys.stdin = sys.__stdin__ = open(0, "r", encoding=encoding, closefd=False)
    out = open(1, "wb", closefd=False)
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(out, encoding=encoding, line_buffering=out.isatty())
    err = open(2, "wb", closefd=False)
    sys.stderr = sys.__stderr__ = io.TextIOWrapper(err, encoding=encoding, errors="backslashreplace",
                                                   line_buffering=True)


def _main_process() -> None:
    """Make this child a main process to multiprocessing, as a fresh interpreter is: no parent, no children,
    its own key, and no fork server or resource tracker of its own yet (the inherited ones' fds are closed;
    :func:`_own_fork_server` then starts its fork server, its first launch its resource tracker)."""
    import itertools
    from multiprocessing import forkserver, process, resource_tracker

    class MainProcess(process.BaseProcess):
        """multiprocessing's own main-process object (its class is deleted after use): named MainProcess,
        no parent, a new key."""

        def __init__(self):
            self._identity, self._name, self._parent_pid, self._popen, self._closed = (), "MainProcess", None, \
                None, False
            self._config = {"authkey": process.AuthenticationString(os.urandom(32)), "semprefix": "/mp"}

        def close(self):
            pass

    process._current_process = MainProcess()  # noqa: SLF001 - what a fresh interpreter has
    process._process_counter = itertools.count(1)  # noqa: SLF001
    process._parent_process = None  # noqa: SLF001
    process._children = set()  # noqa: SLF001
    server = forkserver._forkserver  # noqa: SLF001
    if server._forkserver_alive_fd is not None:  # noqa: SLF001
        os.close(server._forkserver_alive_fd)  # noqa: SLF001
    server._forkserver_address = server._forkserver_alive_fd = server._forkserver_pid = None  # noqa: SLF001
    server._inherited_fds = None  # noqa: SLF001
    server._preload_modules = ["__main__"]  # noqa: SLF001
    tracker = resource_tracker._resource_tracker  # noqa: SLF001
    if tracker._fd is not None:  # noqa: SLF001
        os.close(tracker._fd)  # noqa: SLF001
    tracker._fd = tracker._pid = None  # noqa: SLF001


_FORK_SERVER_MAIN = ("listener_fd", "alive_r", "preload", "main_path", "sys_path")
"""The parameters of ``multiprocessing.forkserver.main`` (Python 3.11–3.13.0) that :func:`_own_fork_server`
imitates ``ForkServer.ensure_running`` for; with any other, the command's first launch starts its server."""


def _own_fork_server() -> None:
    """Start the command's own fork server now, forked from this child, instead of the fresh interpreter
    multiprocessing would start at the command's first launch (importing PRELOAD again: ~4.6 s of CPU per
    launching command). This child is single-threaded, installed no handler yet and holds every module the
    server would preload (it came from :mod:`mpcdp.runtime.process_server`'s server); the server is what
    ``ForkServer.ensure_running`` makes: this command's child, listening on a fresh socket (mode 0600), ending
    when the command's end closes its "alive" pipe; a launch registers its resource tracker then, as before. A
    command that launches nothing leaves it idle until it exits."""
    import inspect
    import socket
    from multiprocessing import connection, forkserver

    server = forkserver._forkserver  # noqa: SLF001
    if list(inspect.signature(forkserver.main).parameters) != list(_FORK_SERVER_MAIN) or \
            hasattr(server, "_forkserver_authkey"):
        return  # another multiprocessing (an authenticated server, say): it starts its own at the first launch
    address = connection.arbitrary_address("AF_UNIX")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(address)
    os.chmod(address, 0o600)
    listener.listen()
    alive_r, alive_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(alive_w)
        code = 0
        try:
            forkserver.main(listener.fileno(), alive_r, [])  # serves until the command's end closes alive_w
        except SystemExit:
            pass
        except BaseException:  # noqa: BLE001 - a server that failed: its launches fail, naming it
            code = 1
        os._exit(code)
    listener.close()
    os.close(alive_r)
    server._forkserver_address, server._forkserver_alive_fd, server._forkserver_pid = address, alive_w, pid  # noqa: SLF001


def _fresh_state(env: dict) -> None:
    """What a fresh interpreter would have read from ``env`` at import or seeded at start: torch's threads
    (OMP_NUM_THREADS, else the server's default), torch's default seed, NumPy's global seed."""
    torch = sys.modules.get("torch")
    if torch is not None:
        threads = env.get("OMP_NUM_THREADS", "")
        if threads.isdigit() and int(threads) > 0:
            torch.set_num_threads(int(threads))
        torch.manual_seed(torch.initial_seed())
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()


def _execute(kind: str, what: str) -> None:
    """Run the command in this process as ``__main__`` (the console script: :func:`mpcdp.cli.run`)."""
    import runpy

    if kind == "mpcdp":
        from mpcdp.cli import run as mpcdp_run

        sys.exit(mpcdp_run())
    elif kind == "module":
        runpy.run_module(what, run_name="__main__", alter_sys=True)
    elif kind == "script":
        runpy.run_path(what, run_name="__main__")
    else:
        import __main__

        exec(compile(what, "<string>", "exec"), vars(__main__))  # noqa: S102 - `python -c CODE`


def _exit_code(exc: SystemExit) -> int:
    """The exit status the interpreter gives ``SystemExit(code)`` (printing a non-integer code)."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    print(exc.code, file=sys.stderr)
    return 1


def _child(kind: str, what: str, argv: list[str], env: dict, cwd: str, fds: list, netns: str | None) -> None:
    """The forked child: becomes the fresh process, runs the command, exits as the interpreter would."""
    if netns is not None:
        _enter_netns(netns)
    from multiprocessing import forkserver

    received = [handle.detach() for handle in fds]
    for target, fd in enumerate(received):
        os.dup2(fd, target)  # inheritable, as fds 0-2 are
    for fd in set(forkserver._forkserver._inherited_fds or []) - {0, 1, 2}:  # noqa: SLF001
        os.close(fd)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    _main_process()
    _streams()
    _fresh_state(env)
    _own_fork_server()
    sys.argv = list(argv)
    sys.path[:] = _fresh_path(kind, what, cwd, env)
    code = 0
    try:
        _execute(kind, what)
    except SystemExit as exc:
        code = _exit_code(exc)
    except BaseException:  # noqa: BLE001 - what the interpreter does with an uncaught exception
        import traceback

        traceback.print_exc()
        code = 1
    _shutdown(code)


def _shutdown(code: int) -> None:
    """End as the interpreter does: non-daemon threads joined, atexit run, streams flushed, then exit."""
    import atexit

    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()  # noqa: SLF001
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


class _Fd:
    """An fd of this process that becomes the same open file in the child (sent to the fork server with the
    request, as multiprocessing sends a pipe's)."""

    def __init__(self, fd: int):
        self.fd = fd

    def __reduce__(self):
        return _same, (reduction.DupFd(self.fd),)  # at pickling, inside Process.start(): the server's copy


def _same(handle):
    return handle


def _context():
    """mpcdp's fork-server context (its server started once per test process, PRELOAD imported)."""
    from mpcdp.runtime.process_server import process_context

    return process_context()


def _decode(data: bytes) -> str:
    """Bytes as ``subprocess`` gives them in text mode (the locale's encoding, universal newlines)."""
    import locale

    text = data.decode(locale.getpreferredencoding(False))
    return text.replace("\r\n", "\n").replace("\r", "\n")


class Popen:
    """A command forked from the preloaded server, with ``subprocess.Popen``'s interface (stdin, stdout,
    stderr: None for the test's own, PIPE, DEVNULL, STDOUT for stderr, a file object or an fd)."""

    def __init__(self, args, *, env: dict | None = None, cwd=None, stdin=None, stdout=None, stderr=None,
                 text: bool = False, universal_newlines: bool = False):
        self.args = [str(a) for a in args]
        self.text = text or universal_newlines
        netns, command = _netns(self.args)
        kind, what, argv = _entry(command)
        cwd = os.path.abspath(cwd) if cwd is not None else os.getcwd()
        env = dict(os.environ if env is None else env)
        ends, ours = self._ends(stdin, stdout, stderr)
        try:
            self._process = _context().Process(target=_child, name="forked-command", daemon=False,
                                               args=(kind, what, argv, env, str(cwd),
                                                     [_Fd(fd) for fd in ends], netns))
            self._process.start()
        finally:
            for fd in ours:
                os.close(fd)
        self.pid = self._process.pid
        self.returncode: int | None = None
        self._captured: dict[str, list[bytes]] = {}
        self._readers: list[threading.Thread] = []

    def _ends(self, stdin, stdout, stderr) -> tuple[list[int], list[int]]:
        """The child's fds 0/1/2 as fds of this process, and those to close here once it started; sets
        self.stdin/stdout/stderr to the pipes' other ends."""
        self.stdin = self.stdout = self.stderr = None
        ends, ours = [], []
        for target, spec in enumerate((stdin, stdout, stderr)):
            if spec is None:
                ends.append(target)
            elif spec == DEVNULL:
                fd = os.open(os.devnull, os.O_RDWR)
                ends.append(fd)
                ours.append(fd)
            elif spec == STDOUT and target == 2:
                ends.append(ends[1])
            elif spec == PIPE:
                read, write = os.pipe()
                child, here = (read, write) if target == 0 else (write, read)
                ends.append(child)
                ours.append(child)
                stream = open(here, "wb" if target == 0 else "rb")
                if self.text:
                    stream = io.TextIOWrapper(stream, write_through=target == 0)
                setattr(self, ("stdin", "stdout", "stderr")[target], stream)
            else:
                ends.append(spec if isinstance(spec, int) else spec.fileno())
        return ends, ours

    def poll(self) -> int | None:
        if self.returncode is None and self._process.exitcode is not None:
            self.returncode = self._process.exitcode
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        self._process.join(timeout)
        if self.poll() is None:
            raise subprocess.TimeoutExpired(self.args, timeout)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:  # the server reaps the child at once: its pid may be another's afterwards
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def _read_all(self, name: str) -> None:
        stream = getattr(self, name)
        raw = stream.buffer if isinstance(stream, io.TextIOWrapper) else stream
        chunks = self._captured[name]
        while chunk := raw.read1(65536) if hasattr(raw, "read1") else raw.read(65536):
            chunks.append(chunk)

    def communicate(self, input=None, timeout: float | None = None):
        """Write ``input``, read stdout and stderr to their ends and wait, as ``subprocess`` does (a
        timeout raises ``TimeoutExpired``; a later call goes on collecting)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self._readers:
            for name in ("stdout", "stderr"):
                if getattr(self, name) is not None:
                    self._captured[name] = []
                    self._readers.append(threading.Thread(target=self._read_all, args=(name,), daemon=True))
                    self._readers[-1].start()
            if self.stdin is not None:
                if input:
                    try:
                        self.stdin.write(input)
                    except BrokenPipeError:
                        pass
                try:
                    self.stdin.close()
                except BrokenPipeError:
                    pass
        for reader in self._readers:
            reader.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if reader.is_alive():
                raise subprocess.TimeoutExpired(self.args, timeout)
        self.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return tuple(self._collected(name) for name in ("stdout", "stderr"))

    def _collected(self, name: str):
        if name not in self._captured:
            return None
        data = b"".join(self._captured[name])
        getattr(self, name).close()
        return _decode(data) if self.text else data

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for stream in (self.stdout, self.stderr, self.stdin):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        self.wait()


def run(args, *, input=None, capture_output: bool = False, timeout: float | None = None, check: bool = False,
        stdout=None, stderr=None, **kwargs) -> subprocess.CompletedProcess:
    """``subprocess.run`` over :class:`Popen` (on a timeout the child is killed, then TimeoutExpired)."""
    if capture_output:
        stdout = stderr = PIPE
    stdin = PIPE if input is not None else kwargs.pop("stdin", None)
    with Popen(args, stdin=stdin, stdout=stdout, stderr=stderr, **kwargs) as proc:
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    if check:
        done.check_returncode()
    return done
