"""The ``mpcdp`` command: the argument parser and the entry point; what each command does is in
:mod:`mpcdp.cli.commands`.

``aggregate`` / ``noise`` / ``cost``  secure aggregation, the in-MPC noise samplers, and their per-layer cost, on
    this host (spawned processes + dealer), checked and printed as one JSON line.
``train`` / ``compare`` / ``sweep`` / ``scale``  training from a protocol file (any registered algorithm, model and
    noise mode), secure and simulated, once, over seeds, over party sizes, over party counts.
``collab`` / ``decentralized``  papers 003 and 004.
``audit``  plant canaries in a training run and lower-bound ε from what it released (:mod:`mpcdp.jobs.audit`).
``privacy``  calibrate DP-SRM/DDP-SRM noise and certify its ε on the release grid.
``party``  one process of a run on this host, finding the others by ``--rendezvous`` or the environment (RANK,
    WORLD_SIZE, RENDEZVOUS / MASTER_ADDR+MASTER_PORT), for separate hosts; rank m is the dealer (under
    torchrun, whose WORLD_SIZE counts the dealer: the last rank).

``--plugin MODULE`` imports a module that registers algorithms, models, noise modes or providers first
(:mod:`mpcdp.plugins`), before the parser is built: what it registers can be named on the command line.
To add a command: a function here that adds its subparser and registers its function
(``_<command>_parser(sub)``, beside the others), a call to it in :func:`build_parser`, and the function in
:mod:`mpcdp.cli.commands`.
"""

from __future__ import annotations

import argparse
import sys
import warnings

from mpcdp import plugins, providers
from mpcdp.errors import MpcdpError, PartyFailed


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
    parser.add_argument("--precision-bits", type=int, default=16, help="fixed-point fractional bits")
    parser.add_argument("--timeout", type=float, default=None,
                        help="per-party timeout in seconds (default 120; `party --job train`: the protocol's "
                             "[mpc] timeout_s, else one that follows the run's estimate)")
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

from mpcdp.cli.commands import (  # noqa: E402
    _cmd_aggregate,
    _cmd_audit,
    _cmd_collab,
    _cmd_compare,
    _cmd_cost,
    _cmd_credentials,
    _cmd_decentralized,
    _cmd_noise,
    _cmd_party,
    _cmd_privacy,
    _cmd_scale,
    _cmd_sweep,
    _cmd_train,
    warm_parties_for)


def build_parser() -> argparse.ArgumentParser:
    """The ``mpcdp`` parser: the global options, then one subparser per command, in the order of ``--help``."""
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
    _aggregate_parser(sub)
    _noise_parser(sub)
    _train_parser(sub)
    _audit_parser(sub)
    _compare_parser(sub)
    _sweep_parser(sub)
    _scale_parser(sub)
    _collab_parser(sub)
    _decentralized_parser(sub)
    _privacy_parser(sub)
    _party_parser(sub)
    _credentials_parser(sub)
    _cost_parser(sub)
    return parser


def _aggregate_parser(sub: argparse._SubParsersAction) -> None:
    """``mpcdp aggregate``: local m-party secure aggregation (:func:`~mpcdp.cli.commands._cmd_aggregate`)."""
    agg = sub.add_parser("aggregate", help="local m-party secure aggregation, checked against plaintext")
    _add_mpc_options(agg, parties_required=False)
    agg.add_argument("--dim", type=int, default=123, help="length of each party's vector")
    agg.add_argument("--seed", type=int, default=None,
                     help="seed the parties' demo vectors (default: OS randomness)")
    agg.set_defaults(func=_cmd_aggregate, parties=3)


def _noise_parser(sub: argparse._SubParsersAction) -> None:
    """``mpcdp noise``: the in-MPC Gaussian samplers, validated (:func:`~mpcdp.cli.commands._cmd_noise`)."""
    from mpcdp.learning.mechanisms import MECHANISMS

    noise = sub.add_parser("noise", help="draw Gaussian noise inside the MPC and validate it against N(0, σ²)")
    _add_mpc_options(noise, parties_required=False)
    noise.add_argument("--samples", type=int, default=100_000)
    noise.add_argument("--mode", choices=list(MECHANISMS), default="dgauss",
                       help="; ".join(f"{name}: {s.summary}" for name, s in MECHANISMS.items()))
    noise.add_argument("--sigma", type=float, default=1.0)
    noise.add_argument("--chunk", type=int, default=50_000, help="samples per sampling call")
    noise.add_argument("--alpha", type=float, default=1e-3, help="family-wise level of the validation")
    noise.add_argument("--seed", type=int, default=None,
                       help="reproducible (insecure) party randomness; default: OS CSPRNG")
    noise.add_argument("--out", default=None, help="save the opened samples to this .npy file")
    noise.set_defaults(func=_cmd_noise, parties=3)


def _train_parser(sub: argparse._SubParsersAction) -> None:
    """``mpcdp train``: training from a protocol file (:func:`~mpcdp.cli.commands._cmd_train`)."""
    train = sub.add_parser("train", help="training from a protocol file: any registered algorithm (srm = DP-SRM / "
                                           "DDP-SRM, storm, dp-sgd, rrpsgd, dp-gd, dp-agd, jayaraman, wd-dp, "
                                           "wd-dp-local), noise mode ([noise] mode = dgauss | distributed) and model")
    train.add_argument("protocol", help="a protocols/*.toml file")
    train.add_argument("--backend", choices=["mpc", "simulated"], default=None)
    train.add_argument("--parties", type=int, default=None)
    train.add_argument("--epsilon", type=float, default=None)
    train.add_argument("--seed", type=int, default=None)
    train.add_argument("--checkpoint", default=None, metavar="DIR",
                       help="save every party's state under DIR (each party its own folder; DP-SRM and STORM)")
    train.add_argument("--checkpoint-every", type=int, default=None, metavar="K",
                       help="releases between checkpoints (default: a tenth of the run)")
    train.add_argument("--resume", default=None, metavar="DIR",
                       help="continue from the newest release every party saved under DIR (same protocol and "
                            "options; a checkpoint of another configuration is refused)")
    train.add_argument("--reproducible", action="store_true",
                       help="secure backend: mini-batches from the protocol's seed (predictable; warns), as in "
                            "the simulated run")
    train.add_argument("--provider", choices=providers.names(insecure=False), default=None,
                       help=f"secure backend: where correlated randomness comes from (overrides [mpc] provider): "
                            f"{_provider_help(providers.names(insecure=False))}")
    _add_variant_options(train)
    _add_own_data_options(train)
    _add_model_outputs(train)
    train.set_defaults(func=_cmd_train)


def _audit_parser(sub: argparse._SubParsersAction) -> None:
    """``mpcdp audit``: canaries planted in a run, ε lower-bounded (:func:`~mpcdp.cli.commands._cmd_audit`)."""
    audit = sub.add_parser("audit", help="measure privacy: plant canaries, train, and lower-bound ε from what the run "
                                         "released, next to the certified ε")
    audit.add_argument("protocol", help="a protocols/*.toml file")
    audit.add_argument("--backend", choices=["mpc", "simulated"], default="simulated")
    audit.add_argument("--setting", choices=["white-box", "black-box"], default="white-box",
                       help="white-box: gradient canaries, every release observed; black-box: canary records, "
                            "the final model only")
    audit.add_argument("--canaries", type=int, default=1000, help="canaries of the one-run audit")
    audit.add_argument("--runs", type=int, default=1, help="1: the one-run audit; more: one canary per run")
    audit.add_argument("--confidence", type=float, default=0.95)
    audit.add_argument("--seed", type=int, default=None, help="the planting party's coins (default: OS entropy)")
    audit.add_argument("--timeout", type=float, default=None,
                       help="secure backend: per-party timeout in seconds (overrides [mpc] timeout_s; the canary "
                            "coordinates' noise is sampled inside the MPC too)")
    audit.add_argument("--out", default=None, help="also write PREFIX.md, .json and .png")
    audit.set_defaults(func=_cmd_audit)


def _compare_parser(sub: argparse._SubParsersAction) -> None:
    """``mpcdp compare``: secure against simulated noise, over seeds (:func:`~mpcdp.cli.commands._cmd_compare`)."""
    compare = sub.add_parser("compare", help="the same training with secure and with simulated noise, over seeds")
    compare.add_argument("protocol")
    compare.add_argument("--seeds", type=int, default=5)
    compare.add_argument("--parties", type=int, default=None)
    compare.add_argument("--epsilon", type=float, default=None)
    compare.add_argument("--out", default="compare-out", help="folder for the PNG plot and the JSON record")
    _add_variant_options(compare)
    _add_own_data_options(compare)
    compare.set_defaults(func=_cmd_compare)


def _sweep_parser(sub: argparse._SubParsersAction) -> None:
    """``mpcdp sweep``: paper 000's uneven-parties sweep (:func:`~mpcdp.cli.commands._cmd_sweep`)."""
    sweep = sub.add_parser("sweep", help="paper 000's uneven-parties sweep: accuracy and optimal gap versus "
                                         "u = n_max/n_min for WD-DP, Jayaraman and the central baseline")
    sweep.add_argument("protocol", help="a protocol file with a [sweep] table, e.g. protocols/uneven-a9a.toml")
    sweep.add_argument("--out", required=True, help="output prefix: writes PREFIX.md, PREFIX.json, PREFIX.png")
    sweep.add_argument("--seeds", type=int, default=None, help="simulated seeds (default: the protocol's)")
    sweep.add_argument("--mpc-seeds", type=int, default=None, help="secure seeds (default: the protocol's)")
    sweep.add_argument("--rerender", action="store_true", help="rebuild PREFIX.md and PREFIX.png from PREFIX.json")
    sweep.set_defaults(func=_cmd_sweep)


def _scale_parser(sub: argparse._SubParsersAction) -> None:
    """``mpcdp scale``: one protocol over party counts (:func:`~mpcdp.cli.commands._cmd_scale`)."""
    scale = sub.add_parser("scale", help="one protocol at m = 1, 2, 4, 8 parties: test error against wall time "
                                         "(paper 002 Fig. 3(g, h))")
    scale.add_argument("protocol", help="a protocols/*.toml file (its batch must split evenly over every m)")
    scale.add_argument("--parties", type=int, nargs="+", default=[1, 2, 4, 8])
    scale.add_argument("--backend", choices=["mpc", "simulated"], default=None,
                       help="for m >= 2 (default: the protocol's); m = 1 is always the central, simulated run")
    scale.add_argument("--seeds", type=int, default=1)
    scale.add_argument("--out", required=True, help="output prefix: writes PREFIX.md, PREFIX.json, PREFIX.png")
    scale.set_defaults(func=_cmd_scale)


def _collab_parser(sub: argparse._SubParsersAction) -> None:
    """``mpcdp collab``: paper 003's Laplace gradient queries (:func:`~mpcdp.cli.commands._cmd_collab`)."""
    collab = sub.add_parser("collab", help="paper 003: owners answer gradient queries with Laplace noise; the fitness "
                                           "gap predicted (Theorems 2-3), then measured; --sweep for the figures")
    collab.add_argument("protocol")
    collab.add_argument("--backend", help="simulated, processes or mpc (mpcdp.execution)")
    collab.add_argument("--seed", type=int)
    collab.add_argument("--sweep", action="store_true", help="predicted vs measured over ε, n and owner inclusion")
    collab.add_argument("--out", help="PREFIX for the sweep's .md/.json/.png")
    collab.add_argument("--runs", type=int, help="runs per sweep point (default: the protocol's)")
    collab.set_defaults(func=_cmd_collab)


def _decentralized_parser(sub: argparse._SubParsersAction) -> None:
    """``mpcdp decentralized``: paper 004's hand-on training (:func:`~mpcdp.cli.commands._cmd_decentralized`)."""
    decentral = sub.add_parser("decentralized", help="paper 004: nodes hand a public model on, each adding its own "
                               "Gaussian noise (Algorithm 1, Deep-Q Algorithm 2, DP-SGD-5)")
    decentral.add_argument("protocol")
    decentral.add_argument("--backend", help="simulated or processes (mpcdp.execution)")
    decentral.add_argument("--method", choices=["algorithm1", "algorithm2", "dpsgd5", "noiseless"])
    decentral.add_argument("--epsilon", type=float)
    decentral.add_argument("--seed", type=int)
    decentral.add_argument("--sweep", action="store_true", help="accuracy vs ε for the three methods (table, PNG)")
    decentral.add_argument("--out", help="PREFIX for the sweep's .md/.json/.png")
    decentral.add_argument("--runs", type=int, help="seeds per sweep point (default: the protocol's)")
    decentral.set_defaults(func=_cmd_decentralized)


def _privacy_parser(sub: argparse._SubParsersAction) -> None:
    """``mpcdp privacy``: DP-SRM/DDP-SRM noise calibrated and certified (:func:`~mpcdp.cli.commands._cmd_privacy`)."""
    privacy = sub.add_parser("privacy", help="calibrate DP-SRM/DDP-SRM noise and certify its ε")
    privacy.add_argument("--epsilon", type=float, required=True)
    privacy.add_argument("--delta", type=float, required=True)
    privacy.add_argument("--n", type=int, nargs="+", required=True, help="records per party")
    privacy.add_argument("--batch", type=int, nargs="+", required=True, help="batch per party, steps 1..T")
    privacy.add_argument("--batch0", type=int, nargs="+", required=True, help="batch per party, step 0")
    privacy.add_argument("--steps", type=int, required=True, help="T")
    privacy.add_argument("--c1", type=float, default=1.0, help="gradient clipping norm")
    privacy.add_argument("--c2", type=float, default=0.01, help="gradient-difference clipping norm")
    privacy.add_argument("--gamma", type=float, default=0.01, help="STORM momentum parameter")
    privacy.add_argument("--dim", type=int, default=123, help="d, the model's parameters (a9a logistic: 123)")
    privacy.set_defaults(func=_cmd_privacy)


def _party_parser(sub: argparse._SubParsersAction) -> None:
    """``mpcdp party``: one process of a run, for separate hosts (:func:`~mpcdp.cli.commands._cmd_party`)."""
    party = sub.add_parser("party", help="one process of `aggregate` (rank m: the dealer), for separate hosts")
    _add_mpc_options(party, parties_required=False)
    _add_party_link_options(party)
    _add_party_job_options(party)
    party.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="on an error, print its traceback too (by default: one line saying why, the same "
                            "on every process where a party refused its own data)")
    party.set_defaults(func=_cmd_party)


def _add_party_link_options(party: argparse.ArgumentParser) -> None:
    """``mpcdp party``'s place in the run: its rank, the rendezvous, its interface and its link credentials."""
    party.add_argument("--rank", type=int, default=None, help="this process's rank; m = the dealer (env RANK)")
    party.add_argument("--rendezvous", default=None, help="tcp://HOST:PORT of rank 0 (env RENDEZVOUS)")
    party.add_argument("--iface", default=None,
                       help="network interface whose address the links listen on (env MPCDP_IFACE)")
    party.add_argument("--credentials", default=None,
                       help="folder of this deployment's TLS credentials (`mpcdp credentials`): ca.pem and this "
                            "rank's party-<rank>.pem and key; env MPCDP_CREDENTIALS")
    party.add_argument("--insecure-links", action="store_true",
                       help="use plain TCP links without credentials, on one host as across hosts: anyone who "
                            "reaches them can read and alter every share, the dealer's keys and the release "
                            "(warns; env MPCDP_INSECURE_LINKS=1)")


def _add_party_job_options(party: argparse.ArgumentParser) -> None:
    """``mpcdp party``'s job (``--job``) and the options of each job: the demo, training and the cost."""
    from mpcdp.learning.mechanisms import in_mpc_modes

    party.add_argument("--dim", type=int, default=123)
    party.add_argument("--seed", type=int, default=None)
    party.add_argument("--job", choices=["aggregate", "train", "cost"], default="aggregate",
                       help="what to run: the aggregation demo (default), this host's party of `mpcdp train "
                            "--protocol P` (secure backend), or one process of `mpcdp cost`")
    party.add_argument("--protocol", default=None, help="for --job train: the protocol file (the same on every "
                                                        "host)")
    party.add_argument("--data", default=None,
                       help="for --job train: this party's own training file (.csv, .parquet, svmlight, .npz), read "
                            "by this process only; the protocol's dataset is then not read")
    party.add_argument("--test", default=None, help="with --data: this party's own held-out file")
    party.add_argument("--label", default=None, help="with --data: the label column (.csv, .parquet)")
    party.add_argument("--features", default=None,
                       help="with --data: the feature columns, comma-separated (default: every other column), "
                            "or the dimension of an svmlight file")
    _add_model_outputs(party)
    party.add_argument("--model", default="logreg-a9a", help="for --job cost: the model whose layers are costed")
    party.add_argument("--noise", choices=in_mpc_modes(), default="dgauss")
    party.add_argument("--sigma", type=float, default=1.0)
    party.add_argument("--link-delay-ms", type=float, default=0.0,
                       help="emulated one-way latency per round (every process must get the same)")
    party.add_argument("--meter-iface", default=None,
                       help="for --job cost: also meter this network interface's frame counters")


def _credentials_parser(sub: argparse._SubParsersAction) -> None:
    """``mpcdp credentials``: a deployment's CA and certificates (:func:`~mpcdp.cli.commands._cmd_credentials`)."""
    keys = sub.add_parser("credentials", help="key a deployment: a CA and a TLS certificate for each rank "
                                              "(ranks 0..m-1 the parties, m the dealer)")
    keys.add_argument("--parties", type=int, required=True, help="m, the number of data parties")
    keys.add_argument("--out", required=True, help="folder to write ca.pem, ca-key.pem and party-<rank>[-key].pem")
    keys.add_argument("--name", default="mpcdp deployment", help="the deployment's name (certificate organisation)")
    keys.set_defaults(func=_cmd_credentials)


def _cost_parser(sub: argparse._SubParsersAction) -> None:
    """``mpcdp cost``: per-layer cost of secure aggregation + in-MPC noise (:func:`~mpcdp.cli.commands._cmd_cost`)."""
    from mpcdp.learning.mechanisms import in_mpc_modes

    cost = sub.add_parser("cost", help="per-layer cost of secure aggregation + in-MPC noise: operation counts, "
                                       "bytes, rounds, time, next to plaintext and paper 002's Obliv-C tables")
    cost.add_argument("--model", choices=["logreg-a9a", "logreg-ijcnn1", "mnist-cnn", "cifar-cnn5"],
                      default="logreg-a9a", help="parameter shapes of paper 002's Tables 4–6")
    cost.add_argument("--parties", type=int, default=5)
    cost.add_argument("--noise", choices=in_mpc_modes(), default="dgauss")
    cost.add_argument("--sigma", type=float, default=1.0, help="noise standard deviation (does not change the cost)")
    cost.add_argument("--link-delay-ms", type=float, default=0.0,
                      help="emulated one-way latency per round, injected at mpcdp's transport")
    cost.add_argument("--timeout", type=float, default=1800.0, help="per-party timeout in seconds")
    cost.add_argument("--provider", choices=providers.names(insecure=False), default=providers.DEFAULT,
                      help=f"correlated randomness: {_provider_help(providers.names(insecure=False))}")
    cost.add_argument("--out", default=None, help="also write PREFIX.md, .csv, .json and .png")
    cost.add_argument("--rerender", action="store_true", help="rebuild PREFIX.md, .csv and .png from PREFIX.json")
    cost.set_defaults(func=_cmd_cost)


def named_plugins(argv: list[str]) -> list[str]:
    """The modules ``argv`` names with ``--plugin``, read before the parser is built."""
    early = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    early.add_argument("--plugin", action="append", default=[])
    known, _ = early.parse_known_args(argv)
    return known.plugin


def parse_arguments(argv: list[str]) -> argparse.Namespace:
    """``argv`` parsed once the plugins it names are loaded, so that the algorithms, models and samplers they
    register are choices of the command line like mpcdp's own.

    Raises:
        ConfigError: a plugin cannot be imported.
        SystemExit: argparse refused the command line (it has printed why).
    """
    plugins.load(named_plugins(argv))
    ns = build_parser().parse_args(argv)
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
    except PartyFailed as exc:
        _debug(ns)
        print(f"mpcdp: the run failed: {exc}", file=sys.stderr)
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



def _debug(ns: argparse.Namespace) -> None:
    """With ``--debug``, the traceback of the error being handled (before its one line)."""
    if getattr(ns, "debug", False):
        import traceback

        traceback.print_exc()
