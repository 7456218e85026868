"""Option groups that several ``mpcdp`` commands share (the MPC configuration, a run's own-data files, what a run
writes, a protocol's variants), and their progress bar drawn at a run's first report."""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import Any, Callable, Iterator

from mpcdp import providers
from mpcdp.config import MALICIOUS_SAMPLERS, OPENING_PLANS, MpcConfig, resolve_mpc


def _provider_help(names: list[str]) -> str:
    """The providers ``names`` (records of :data:`mpcdp.providers.PROVIDERS`), each with what it declares."""
    described = []
    for name in names:
        record = providers.PROVIDERS[name]
        notes = [record.summary, "default" if name == providers.DEFAULT else None,
                 None if record.has_dealer else "no dealer",
                 f"m >= {record.min_parties}" if record.min_parties > 2 else None,
                 "INSECURE, needs --insecure-dev" if record.insecure else None]
        described.append(f"'{name}' ({'; '.join(note for note in notes if note)})")
    return ", ".join(described)


def _add_mpc_options(parser: argparse.ArgumentParser, *, parties_required: bool) -> None:
    parser.add_argument("--parties", type=int, required=parties_required, default=None,
                        help="number of data parties m (env WORLD_SIZE for party/dealer; under torchrun WORLD_SIZE − 1 with "
                             "a dealer)")
    parser.add_argument("--provider", choices=providers.names(), default=None,
                        help=f"correlated randomness: {_provider_help(providers.names())}; `party --job train`: "
                             f"the protocol's [mpc] provider unless given")
    parser.add_argument("--insecure-dev", action="store_true",
                        help="allow insecure development settings (prints a warning)")
    parser.add_argument("--precision-bits", type=int, default=None,
                        help="fixed-point fractional bits (default 16; `party --job train`: the protocol's [mpc] "
                             "precision_bits unless given)")
    parser.add_argument("--timeout", type=float, default=None,
                        help="liveness in seconds: the longest the run may go without any party making progress, "
                             "and a party may wait for a peer (default 120; `party --job train`: the protocol's "
                             "[mpc] timeout_s unless given); never a limit on the run's length")
    parser.add_argument("--security", choices=["semi-honest", "malicious"], default=None,
                        help="the adversary: 'semi-honest' (default) or 'malicious' (security with abort, SPDZ2k "
                             "MACs, needs the dealer; covers the secure sum, its release and `mpcdp noise --mode dgauss`, "
                             "refuses the rest)")
    add_malicious_sampler(parser)
    add_openings(parser)
    parser.add_argument("--reproducible", action="store_true",
                        help="secure training draws its mini-batches from the protocol's seed instead of the OS "
                             "CSPRNG (predictable; prints a warning): to compare runs batch for batch")


def _add_own_data_options(parser: argparse.ArgumentParser) -> None:
    """Every party's own files on this host, for a protocol without ``dataset`` (:mod:`mpcdp.jobs.own_data`)."""
    parser.add_argument("--data", nargs="+", default=None, metavar="FILE",
                        help="a protocol without `dataset`: every party's own training file, in rank order (.csv, "
                             ".parquet, svmlight, .npz), each read by its party's process only (by this process "
                             "with --backend simulated: a dry run)")
    parser.add_argument("--test", nargs="+", default=None, metavar="FILE",
                        help="with --data: every party's own held-out file, in the same order")
    parser.add_argument("--label", default=None, help="with --data: the label column (.csv, .parquet)")
    parser.add_argument("--features", default=None,
                        help="with --data: the feature columns, comma-separated (default: every other column), "
                             "or the dimension of an svmlight file")


def _add_model_outputs(parser: argparse.ArgumentParser) -> None:
    """What a run on own data writes besides its JSON line: the model and its certificate, per-round metrics."""
    parser.add_argument("--model-out", default=None, metavar="PATH",
                        help="with --data: write the released parameters (PATH, .pt) and their certificate "
                             "(PATH with .json) side by side; read back with mpcdp.load_model")
    parser.add_argument("--eval-every", type=int, default=None, metavar="K",
                        help="with --data: evaluate every K-th released iterate on each party's held-out file "
                             "(post-processing: no privacy cost)")
    parser.add_argument("--plot", default=None, metavar="PNG", help="with --eval-every: plot those metrics")


def _add_variant_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--algorithm", default=None, help="override the protocol's algorithm")
    parser.add_argument("--size-ratio", type=float, default=None,
                        help="level of non-average u = n_max/n_min: two groups of parties, the larger u times "
                             "the smaller (paper 000)")


def add_malicious_sampler(parser: argparse.ArgumentParser) -> None:
    """``--malicious-sampler``: the authenticated sampler's plan (``[mpc] malicious_sampler``)."""
    parser.add_argument("--malicious-sampler", choices=list(MALICIOUS_SAMPLERS), default=None,
                        help="under --security malicious, the sampler's plan: 'fewer-bytes' (default, dg-auth/9; one "
                             "host or a fast LAN) or 'fewer-rounds' (dg-auth/10: 178 rounds a pass instead of 300, "
                             "about 9%% more bytes; separate hosts at 0.5 ms one-way or more)")


def add_openings(parser: argparse.ArgumentParser) -> None:
    """``--openings``: how small openings travel among three or more parties (``[mpc] openings``)."""
    parser.add_argument("--openings", choices=list(OPENING_PLANS), default=None,
                        help="'star' (default: through one party, 2 rounds, the fewest messages) or 'all-to-all' "
                             "(1 round, (m-1)x the bytes of a star's member: for separate hosts, where a round's "
                             "latency costs more than the bytes)")


def given_mpc(ns: argparse.Namespace) -> dict:
    """The [mpc] settings this command line gives explicitly (they win over the protocol's, which win over the
    defaults: one precedence for every launcher)."""
    given = {"provider": ns.provider, "precision_bits": ns.precision_bits, "timeout_s": ns.timeout,
             "noise_committee": getattr(ns, "noise_committee", None),
             "link_delay_ms": getattr(ns, "link_delay_ms", 0.0) or None,
             "insecure_dev": ns.insecure_dev or None, "reproducible": ns.reproducible or None,
             "security": getattr(ns, "security", None),
             "malicious_sampler": getattr(ns, "malicious_sampler", None),
             "openings": getattr(ns, "openings", None)}
    return {key: value for key, value in given.items() if value is not None}


def _config(ns: argparse.Namespace, parties: int, protocol: str | None = None) -> MpcConfig:
    """The run's configuration for ``parties``: this command line's settings over ``protocol``'s [mpc] table
    (None: no protocol) over the defaults (:func:`mpcdp.config.resolve_mpc`)."""
    table: Any = {}
    where = ""
    if protocol:
        from mpcdp.validation import read_protocol

        table, where = read_protocol(protocol).get("mpc", {}), f" in {protocol!r}"
    return resolve_mpc(table, where, given_mpc(ns)).for_parties(parties)


@contextlib.contextmanager
def bar_on_progress(**bar: Any) -> Iterator[Callable[[int, int], None]]:
    """A progress callback whose tqdm bar (on stderr) is drawn at the first report the run's parties make: a
    run refused before any process starts (a bad plant, a bad σ, a bad setting) prints its refusal alone."""
    from tqdm import tqdm

    drawn: list[Any] = []

    def progress(done: int, total: int) -> None:
        if not drawn:
            drawn.append(tqdm(file=sys.stderr, **bar))
        drawn[0].update(done - drawn[0].n)

    try:
        yield progress
    finally:
        for shown in drawn:
            shown.close()
