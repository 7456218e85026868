"""One process of a run on this host, and a deployment's credentials: ``mpcdp party`` and ``mpcdp credentials``
(each command's parser beside its handler)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from mpcdp import providers
from mpcdp.errors import ConfigError
from mpcdp.cli.options import _add_mpc_options, _add_model_outputs, given_mpc
from mpcdp.config import resolve_mpc
from mpcdp.validation import read_protocol
from mpcdp.cli.own_data_commands import _features, _own_data_outputs, keeping_of, own_model
from mpcdp.cli.user_module import add_module_options, is_module_spec


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
    party.add_argument("--dim", type=int, default=123)
    party.add_argument("--seed", type=int, default=None)
    party.add_argument("--input-bound", type=float, default=None, metavar="B",
                       help="for --job aggregate with --security malicious: every party's vector is checked "
                            "against the L2 bound B inside the MPC (every process must get the same)")
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
    party.add_argument("--model", default=None,
                       help="for --job train with --data: your own nn.Module as FILE.py:CLASS (as `mpcdp train "
                            "--model`); for --job cost: the model whose layers are costed (default logreg-a9a)")
    add_module_options(party, model_option=False)
    party.add_argument("--checkpoint", default=None, metavar="DIR",
                       help="with --job train --data: save this party's state under DIR (on its own disk)")
    party.add_argument("--checkpoint-every", type=int, default=None, metavar="K",
                       help="releases between checkpoints (default: a tenth of the run)")
    party.add_argument("--resume", default=None, metavar="DIR",
                       help="with --job train --data: continue the run saved under DIR (every party resumes)")
    party.add_argument("--fresh-budget", action="store_true",
                       help="with --job train --data: run although this party's records already spent privacy "
                            "budget in an earlier run (its ledger)")
    party.add_argument("--noise", default="dgauss",
                       help="for --job cost: an in-MPC noise mode (checked when the job starts, so that the process "
                            "claims its place before it imports the noise modes and torch)")
    party.add_argument("--sigma", type=float, default=1.0)
    party.add_argument("--link-delay-ms", type=float, default=0.0,
                       help="emulated one-way latency per round (every process must get the same)")
    party.add_argument("--meter-iface", default=None,
                       help="for --job cost: also meter this network interface's frame counters")


def _party_parser(sub: argparse._SubParsersAction) -> None:
    """``mpcdp party``: one process of a run, for separate hosts (:func:`_cmd_party`)."""
    party = sub.add_parser("party", help="one process of `aggregate` (rank m: the dealer), for separate hosts")
    _add_mpc_options(party, parties_required=False)
    _add_party_link_options(party)
    _add_party_job_options(party)
    party.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="on an error, print its traceback too (by default: one line saying why, the same "
                            "on every process where a party refused its own data)")
    party.set_defaults(func=_cmd_party)


def _check_party_model(ns: argparse.Namespace) -> None:
    """``--model`` names your own module (FILE.py:CLASS) for ``--job train --data``, and a costed model by
    name for ``--job cost``; anything else is refused in one line instead of being read as the other."""
    if ns.model is None:
        return
    if ns.job == "cost" and is_module_spec(ns.model):
        raise ConfigError(f"`--model` {ns.model!r} is a module: `--job cost` costs a model by name "
                          f"(`mpcdp cost --help` lists them).")
    if ns.job == "train" and not is_module_spec(ns.model):
        raise ConfigError(f"`--model` {ns.model!r}: for `--job train` give your own module as FILE.py:CLASS "
                          f"(with `--data`); the protocol names its own model otherwise.")
    if ns.job == "train" and not ns.data:
        raise ConfigError(f"`--model` {ns.model!r} trains your module on the parties' own files: give this "
                          f"party's with `--data`.")
    if ns.job == "aggregate":
        raise ConfigError("`--model` is for `--job train` (your module) or `--job cost` (a costed model).")


def _cmd_party(ns: argparse.Namespace) -> int:
    from mpcdp.runtime.endpoint import read_settings, resolve
    from mpcdp.runtime.party import run_dealer, run_party, take_place

    protocol = ns.protocol if ns.job == "train" else None  # its [mpc] table, under this command line's settings
    table = read_protocol(protocol).get("mpc", {}) if protocol else {}
    mpc = resolve_mpc(table, f" in {protocol!r}" if protocol else "", given_mpc(ns))
    if ns.input_bound is not None and ns.job != "aggregate":
        raise ConfigError(f"`--input-bound` is for `--job aggregate`. Found `--job {ns.job}`.")
    if ns.input_bound is not None:  # (the aggregation job imports torch: only when there is a bound to check)
        from mpcdp.jobs.aggregate import check_input_bound

        check_input_bound(mpc.security, ns.input_bound)
    endpoint = resolve(rank=ns.rank, parties=ns.parties, rendezvous=ns.rendezvous,
                       dealer=providers.lookup(mpc.provider).has_dealer, ranged=False)
    if endpoint.rank != endpoint.parties:  # the dealer trains nothing and costs nothing: it ignores `--model`
        _check_party_model(ns)  # before the process takes its place at the rendezvous
    settings = read_settings(credentials=ns.credentials, insecure_links=ns.insecure_links, iface=ns.iface)
    config = mpc.for_parties(endpoint.parties)
    take_place(endpoint, config, settings)  # RANK and WORLD_SIZE compared at the rendezvous, before anything else
    if endpoint.rank == endpoint.parties:
        if not config.provider_record.has_dealer:
            raise ConfigError(f"rank {endpoint.rank} is the dealer's, but `provider` is {config.provider!r}.")
        dealer_report = run_dealer(config=config, rendezvous=endpoint.rendezvous, settings=settings)
        if ns.job == "cost":  # the per-request bytes are needed to attribute dealer traffic to layers
            print(json.dumps(dealer_report))
        return 0
    if ns.data and ns.job != "train":
        raise ConfigError(f"`--data` is for `--job train`. Found `--job {ns.job}`.")
    outputs = [flag for flag, value in (("--model-out", ns.model_out), ("--eval-every", ns.eval_every),
                                        ("--plot", ns.plot)) if value is not None]
    if outputs and not ns.data:
        raise ConfigError(f"`{outputs[0]}` is for `--job train --data FILE` (a party's own data).")
    if ns.plot and ns.eval_every is None:
        raise ConfigError("`--plot` draws the per-round metrics: give `--eval-every K` too.")
    if ns.job == "train":
        from mpcdp.jobs.train import host_launcher, plan_from, run_plan
        from mpcdp.runtime import progress

        if not ns.protocol:
            raise ConfigError("`--protocol` is required with `--job train`.")
        # the command line's settings, else the protocol's, else the defaults (a time-out: one that follows
        # the estimate), as `mpcdp train` resolves them
        plan = plan_from(ns.protocol, backend="mpc", parties=endpoint.parties, seed=ns.seed, mpc=given_mpc(ns))
        if ns.data:
            from mpcdp.jobs.own_data import PartySource, report, run_own_data_here
            from mpcdp.jobs.own_data_results import check_every

            plan = dataclasses.replace(plan, eval_every=check_every(ns.eval_every))
            model = own_model(ns, plan)
            values = run_own_data_here(plan, PartySource(ns.data, ns.test, ns.label, _features(ns.features)),
                                       model, rank=endpoint.rank, rendezvous=endpoint.rendezvous,
                                       settings=settings, keeping=keeping_of(ns))
            result = report(values)
            _own_data_outputs(ns, plan, [values], result, model)
        else:
            with progress.lines_to(sys.stderr):  # this host's estimate (its progress: run_party's own lines)
                result = run_plan(plan, curve=False,
                                  launch=host_launcher(endpoint.rank, endpoint.rendezvous, settings))
            result.pop("test_error_curve", None)
        result["rank"] = endpoint.rank
    elif ns.job == "cost":
        from mpcdp.jobs.cost import MODELS, check_choice, cost_job, cost_party

        ns.model = ns.model or "logreg-a9a"
        check_choice(ns.model, ns.noise)
        result = run_party(rank=endpoint.rank, config=config, rendezvous=endpoint.rendezvous, fn=cost_party,
                           args=(MODELS[ns.model], ns.noise, ns.sigma, ns.meter_iface),
                           job=cost_job(ns.model, ns.noise, ns.sigma), settings=settings)
    else:
        from mpcdp.jobs.aggregate import aggregate_job, aggregate_party

        result = run_party(rank=endpoint.rank, config=config, rendezvous=endpoint.rendezvous, fn=aggregate_party,
                           args=(ns.dim, ns.seed, None, ns.input_bound), job=aggregate_job(ns.dim, ns.input_bound),
                           settings=settings)
    print(json.dumps(result))
    return 0


def _credentials_parser(sub: argparse._SubParsersAction) -> None:
    """``mpcdp credentials``: a deployment's CA and certificates (:func:`_cmd_credentials`)."""
    keys = sub.add_parser("credentials", help="key a deployment: a CA and a TLS certificate for each rank "
                                              "(ranks 0..m-1 the parties, m the dealer)")
    keys.add_argument("--parties", type=int, required=True, help="m, the number of data parties")
    keys.add_argument("--out", required=True, help="folder to write ca.pem, ca-key.pem and party-<rank>[-key].pem")
    keys.add_argument("--name", default="mpcdp deployment", help="the deployment's name (certificate organisation)")
    keys.set_defaults(func=_cmd_credentials)


def _cmd_credentials(ns: argparse.Namespace) -> int:
    from mpcdp.transport.credentials import make_deployment

    folder = make_deployment(ns.out, ns.parties, name=ns.name)
    print(f"mpcdp: credentials for ranks 0..{ns.parties} (rank {ns.parties} = the dealer) in {folder}/. Give each "
          f"host ca.pem and its own party-<rank>.pem and party-<rank>-key.pem; keep ca-key.pem on none of them.")
    return 0
