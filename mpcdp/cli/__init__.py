"""mpcdp: distributed differentially private learning over secure multi-party computation.

The ``mpcdp`` command: the entry point and the parser, built from each command's own parser function, which
sits beside the command's handler in the module of its job (:mod:`.measure`, :mod:`.training`, :mod:`.papers`,
:mod:`.hosts`; shared option groups in :mod:`.options`).

``aggregate`` / ``noise`` / ``cost``  secure aggregation, the in-MPC noise samplers, and their per-layer cost, on
    this host (spawned processes + dealer), checked and printed as one JSON line.
``train`` / ``compare`` / ``sweep`` / ``scale``  training from a protocol file (any registered algorithm, model and
    noise mode), secure and simulated, once, over seeds, over party sizes, over party counts.
``collab`` / ``decentralized``  papers 003 and 004.
``audit``  plant canaries in a training run and lower-bound ε from what it released (:mod:`mpcdp.jobs.audit`).
``audit views``  record each role's whole view of the in-MPC sampler, the dealer's included, and test it against
    the released noise (:mod:`mpcdp.jobs.views`).
``privacy``  calibrate DP-SRM/DDP-SRM noise and certify its ε on the release grid.
``party``  one process of a run on this host, finding the others by ``--rendezvous`` or the environment (RANK,
    WORLD_SIZE, RENDEZVOUS / MASTER_ADDR+MASTER_PORT), for separate hosts; rank m is the dealer (under
    torchrun, whose WORLD_SIZE counts the dealer: the last rank).

``--plugin MODULE`` imports a module that registers algorithms, models, noise modes or providers first
(:mod:`mpcdp.plugins`), before the parser is built: what it registers can be named on the command line.
To add a command: in the module of its job, ``_<command>_parser(sub)`` (adds its subparser and registers
its handler) beside ``_cmd_<command>`` (the handler), and a call to the parser function in :func:`build_parser`.
"""

from __future__ import annotations

import argparse
import sys
import warnings

from mpcdp import plugins
from mpcdp.errors import MpcdpError, PartyFailed
from mpcdp.cli.hosts import _credentials_parser, _party_parser
from mpcdp.cli.measure import _aggregate_parser, _audit_views_parser, _cost_parser, _noise_parser
from mpcdp.cli.papers import _collab_parser, _decentralized_parser
from mpcdp.cli.training import (_audit_parser, _compare_parser, _privacy_parser, _scale_parser,
                                _sweep_parser, _train_parser, warm_parties_for)


PARSERS = (("aggregate", _aggregate_parser), ("noise", _noise_parser), ("train", _train_parser),
           ("audit", _audit_parser), ("audit-views", _audit_views_parser), ("compare", _compare_parser),
           ("sweep", _sweep_parser), ("scale", _scale_parser), ("collab", _collab_parser),
           ("decentralized", _decentralized_parser), ("privacy", _privacy_parser), ("party", _party_parser),
           ("credentials", _credentials_parser), ("cost", _cost_parser))
"""Each command and its parser function, in the order of ``--help``."""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``mpcdp`` parser: the global options, then one subparser per command, in the order of ``--help``;
    ``command``: that command's subparser only (a command's parser may import what its choices need — the
    noise modes import torch — and ``mpcdp party`` claims its place before it imports torch)."""
    from mpcdp import __version__

    parser = argparse.ArgumentParser(prog="mpcdp", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"mpcdp {__version__}")
    parser.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                        help="import MODULE first (repeatable): a module that registers algorithms, models, noise "
                             "modes or providers (mpcdp.learning.algorithms, .models, .mechanisms, "
                             "mpcdp.providers)")
    parser.add_argument("--debug", action="store_true",
                        help="on an error, print its traceback too (by default: one line saying why)")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, add in PARSERS:
        if command is None or name == command:
            add(sub)
    return parser


def named_plugins(argv: list[str]) -> list[str]:
    """The modules ``argv`` names with ``--plugin``, read before the parser is built."""
    early = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    early.add_argument("--plugin", action="append", default=[])
    known, _ = early.parse_known_args(argv)
    return known.plugin


def _command_at(argv: list[str]) -> int | None:
    """Where in ``argv`` its command stands: its first word that is no global option or a global option's
    value (None: no command)."""
    i = 0
    while i < len(argv):
        if argv[i] == "--plugin":  # the global option that takes a value
            i += 2
            continue
        if not argv[i].startswith("-"):
            return i
        i += 1
    return None


def command_of(argv: list[str]) -> str | None:
    """The command ``argv`` names (:func:`_command_at`)."""
    i = _command_at(argv)
    return None if i is None else argv[i]


def views_command(argv: list[str]) -> list[str]:
    """``argv`` with ``audit views`` as the one command ``audit-views`` (the two words name it; ``audit``
    alone takes a protocol file)."""
    i = _command_at(argv)
    if i is not None and argv[i] == "audit" and argv[i + 1:i + 2] == ["views"]:
        return [*argv[:i], "audit-views", *argv[i + 2:]]
    return argv


def parse_arguments(argv: list[str]) -> argparse.Namespace:
    """``argv`` parsed once the plugins it names are loaded, so that the algorithms, models and samplers they
    register are choices of the command line like mpcdp's own.

    Raises:
        ConfigError: a plugin cannot be imported.
        SystemExit: argparse refused the command line (it has printed why).
    """
    plugins.load(named_plugins(argv))
    argv = views_command(argv)
    named = command_of(argv)
    ns = build_parser(named if named in dict(PARSERS) else None).parse_args(argv)
    plugins.load(ns.plugin)  # an abbreviated `--plug`, which only the full parser reads
    return ns


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        plugins.load(named_plugins(argv))
    except MpcdpError as exc:
        print(f"mpcdp: {exc}", file=sys.stderr)
        return 2
    try:
        warm_parties_for(argv)
    except SystemExit:  # a command line the real parser will explain
        pass
    try:
        ns = parse_arguments(argv)
    except MpcdpError as exc:
        print(f"mpcdp: {exc}", file=sys.stderr)
        return 2
    original_format = warnings.formatwarning
    warnings.formatwarning = lambda message, category, *_args, **_kw: f"mpcdp: {category.__name__}: {message}\n"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            return ns.func(ns)
    except PartyFailed as exc:  # one line: who failed and why; with --debug every process's report too
        _debug(ns)
        print(f"mpcdp: the run failed: {exc if getattr(ns, 'debug', False) else exc.line}", file=sys.stderr)
        return 3
    except MpcdpError as exc:
        _debug(ns)
        print(f"mpcdp: {exc}", file=sys.stderr)
        return 2
    except (RuntimeError, OSError) as exc:  # the network: a peer vanished, stalled or never came
        if ns.command != "party":
            raise
        _debug(ns)
        print(f"mpcdp party: this process's run failed — {type(exc).__name__}: {exc}", file=sys.stderr)
        return 3
    finally:
        warnings.formatwarning = original_format


def run() -> None:
    """The ``mpcdp`` command as a process (the console script, ``python -m mpcdp``): :func:`main`, then an exit
    that skips the interpreter's teardown. Every atexit handler still runs (multiprocessing's clean-up of the
    fork server's socket folder, temporary directories, logging), the other non-daemon threads are joined
    and stdout and stderr flushed, as a normal exit does; what is skipped is only the freeing, module by
    module, of everything torch, CrypTen, SciPy and dp-accounting built — 1-3 s of CPU in a launcher that
    imported them, more than the main job's whole training. Call :func:`main` instead to stay in Python."""
    import atexit
    import os
    import threading

    code = main()
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()  # noqa: SLF001 - what interpreter shutdown runs first, run here
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more to say
            pass
    os._exit(code)


def _debug(ns: argparse.Namespace) -> None:
    """With ``--debug``, the traceback of the error being handled (before its one line)."""
    if getattr(ns, "debug", False):
        import traceback

        traceback.print_exc()
