"""What each ``mpcdp`` command does once its arguments are parsed (the parser is in :mod:`mpcdp.cli`)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from mpcdp import providers
from mpcdp.config import MpcConfig
from mpcdp.errors import ConfigError
from mpcdp.validation import check_integer, check_number
from mpcdp.cli.own_data_commands import (_check_own_data_options, _cmd_train_own_data, _features,
                                         _own_data_outputs, _own_sources)


def _config(ns: argparse.Namespace, parties: int) -> MpcConfig:
    return MpcConfig(parties=parties, provider=ns.provider or providers.DEFAULT, insecure_dev=ns.insecure_dev,
                     precision_bits=ns.precision_bits, timeout_s=120.0 if ns.timeout is None else ns.timeout,
                     link_delay_ms=getattr(ns, "link_delay_ms", 0.0), reproducible=ns.reproducible)


def _cmd_aggregate(ns: argparse.Namespace) -> int:
    from mpcdp.jobs.aggregate import aggregate_party, check
    from mpcdp.runtime.harness import run_parties

    check_integer(ns.dim, "--dim")
    config = _config(ns, ns.parties)
    import time

    start = time.perf_counter()
    results = run_parties(aggregate_party, config, args=(ns.dim, ns.seed),
                          job={"name": "aggregate", "dim": ns.dim})
    summary = check(results, config.precision_bits)
    summary["provider"] = config.provider
    summary["wall_s"] = round(time.perf_counter() - start, 3)
    print(json.dumps(summary))
    return 0 if summary["max_abs_error"] <= summary["error_bound"] and summary["all_parties_agree"] else 1


def _cmd_noise(ns: argparse.Namespace) -> int:
    import time

    import numpy as np
    from tqdm import tqdm

    from mpcdp.learning.mechanisms import NoiseSpec, sample_noise
    from mpcdp.noise.rou import ACCEPTANCE
    from mpcdp.noise.validate import validate_normal

    check_integer(ns.samples, "--samples")
    chunk = max(1, min(ns.samples, ns.chunk))
    if ns.mode == "plaintext":
        start = time.perf_counter()
        block = sample_noise(None, NoiseSpec(sigma=ns.sigma, mode="plaintext", seed=ns.seed), (ns.samples,))
        values, wall = block.values.numpy(), time.perf_counter() - start
        summary = {"parties": 0, "bytes_by_party": [], "bytes_per_party": 0, "dealer_bytes": 0, "total_bytes": 0,
                   "bytes_per_sample": 0.0, "rounds": 0, "support": block.support}
        accepted = candidates = None
    else:
        from mpcdp.jobs.noise import cost_summary, noise_party
        from mpcdp.runtime.harness import run_job

        config = _config(ns, ns.parties)
        with tqdm(total=ns.samples, unit="sample", desc=f"{ns.mode} in MPC", file=sys.stderr) as bar:
            def progress(done: int, total: int) -> None:
                bar.update(done - bar.n)

            result = run_job(noise_party, config, args=(ns.samples, ns.mode, ns.sigma, ns.seed, chunk),
                             job={"name": "noise", "samples": ns.samples, "mode": ns.mode, "sigma": ns.sigma,
                                  "chunk": chunk}, progress=progress)
        first = result.values[0]
        values, wall = first["values"], max(r["wall_s"] for r in result.values)
        summary = cost_summary(result.values, result.dealer, ns.samples)
        accepted, candidates = first["accepted"], first["candidates"]
    if ns.out:
        np.save(ns.out, values)
    support = summary["support"] if np.isfinite(summary["support"]) else None
    check = validate_normal(values, sigma=ns.sigma, alpha=ns.alpha, support=support,
                            accepted=accepted if ns.mode == "rou" else None, candidates=candidates,
                            acceptance=ACCEPTANCE if ns.mode == "rou" else None)
    report = {
        "mode": ns.mode, "samples": int(values.size), "sigma": ns.sigma, "mean": check.mean, "std": check.std,
        "ks_statistic": check.ks_statistic, "ks_pvalue": check.ks_pvalue, "max_abs": check.max_abs,
        "acceptance_rate": accepted / candidates if candidates else None,
        **summary, "wall_s": round(wall, 3), "us_per_sample": 1e6 * wall / values.size,
        "validation": "passed" if check.passed else "; ".join(check.failures),
    }
    print(json.dumps(report))
    return 0 if check.passed else 1


def _cmd_privacy(ns: argparse.Namespace) -> int:
    import math

    from mpcdp.accounting.dpsrm import epsilon_for, noise_for
    from mpcdp.accounting.events import DpSrmSetting
    from mpcdp.accounting.paper import paper_epsilon, theorem41_sigmas

    check_number(ns.epsilon, "--epsilon", low=0)
    setting = DpSrmSetting(n=tuple(ns.n), batch=tuple(ns.batch), batch0=tuple(ns.batch0), steps=ns.steps,
                           c1=ns.c1, c2=ns.c2, gamma=ns.gamma)
    check_integer(ns.dim, "--dim")
    from mpcdp.jobs.train import srm_noise

    released = srm_noise(setting, ns.dim, ns.epsilon, ns.delta)
    noise = noise_for(setting, ns.epsilon, ns.delta)
    paper_eps, paper_alpha = paper_epsilon(setting, noise.sigma0, noise.sigma, ns.delta)
    theorem = theorem41_sigmas(setting, ns.epsilon, ns.delta)
    theorem_cert = epsilon_for(setting, theorem.sigma0, theorem.sigma, ns.delta)
    fmt = lambda x: "∞" if math.isinf(x) else f"{x:.4g}"  # noqa: E731
    cert = released.certificate
    pieces = cert.pieces
    rows = [
        (f"released on the grid (d = {ns.dim}): ε = accountant {pieces['epsilon_accountant']:.6f} + residual "
         f"{pieces['epsilon_residual']:.2g}", released.releases[0].sigma, released.releases[1].sigma,
         f"{cert.epsilon:.4f} (RDP would print {pieces['epsilon_rdp']:.4f})"),
        ("continuous Gaussian, same target (PLD, replace-one, WOR)", noise.sigma0, noise.sigma,
         f"{noise.certificate.epsilon:.4f} (RDP would print {noise.certificate.pieces['epsilon_rdp']:.4f})"),
        ("paper's Lemma 3.7 + 3.9 for the same noise", noise.sigma0, noise.sigma,
         f"{fmt(paper_eps)}" + (f" (α = {paper_alpha})" if paper_alpha else " (no α in Lemma 3.7's range)")),
        (f"paper's Theorem 4.1 noise for ε = {ns.epsilon} (β = {theorem.beta:.3f}, conditions "
         f"{'hold' if theorem.conditions_hold else 'FAIL'}); certified ε:", theorem.sigma0, theorem.sigma,
         f"{theorem_cert.epsilon:.4f}"),
    ]
    print(f"DP-SRM/DDP-SRM: n = {list(setting.n)}, b0 = {list(setting.batch0)}, b = {list(setting.batch)}, "
          f"T = {setting.steps}, C1 = {setting.c1}, C2 = {setting.c2}, γ = {setting.gamma}, δ = {ns.delta}")
    print(f"{'':<80} {'σ0':>11} {'σ':>11}   ε")
    for label, s0, s1, eps in rows:
        print(f"{label:<80} {s0:>11.4e} {s1:>11.4e}   {eps}")
    print(f"δ = {cert.delta:.6g} released: subsampled Gaussian {pieces['delta_gaussian']:.6g} + truncation "
          f"{pieces['delta_truncation']:.3g} + residual {pieces['delta_residual']:.3g}")
    for kind in pieces["releases"]:
        print(f"  {kind['kind']}: grid 2^-{kind['precision']}, Δ = {kind['sensitivity']:.6g} → Δ_int = "
              f"{kind['sensitivity_units']} units, σ = {kind['sigma_units']:.1f} units, noise multiplier "
              f"{kind['noise_multiplier']:.6g} (rounding overhead {kind['rounding_overhead']:.2g})")
    print(f"  mechanism: {pieces['mechanism']}; accountant: {pieces['accountant']}; {pieces['accountant_core']}")
    print(json.dumps({
        "epsilon_released": cert.epsilon, "delta_released": cert.delta,
        **{key: pieces[key] for key in ("epsilon_accountant", "epsilon_rdp", "epsilon_residual", "delta_gaussian",
                                        "delta_truncation", "delta_residual", "mechanism", "accountant",
                                        "accountant_core")},
        "release_grid": pieces["releases"],
        "sigma0_released": released.releases[0].sigma, "sigma_released": released.releases[1].sigma,
        "epsilon_target": ns.epsilon, "delta": ns.delta, "sigma0": noise.sigma0, "sigma": noise.sigma,
        "noise_multiplier0": setting.noise_multipliers(noise.sigma0, noise.sigma)[0],
        "noise_multiplier": setting.noise_multipliers(noise.sigma0, noise.sigma)[1], "nu": noise.nu,
        "epsilon_certified": noise.certificate.epsilon,
        "epsilon_rdp_continuous": noise.certificate.pieces["epsilon_rdp"],
        "epsilon_paper_lemma37": None if math.isinf(paper_eps) else paper_eps,
        "theorem41_sigma0": theorem.sigma0, "theorem41_sigma": theorem.sigma, "theorem41_beta": theorem.beta,
        "theorem41_conditions_hold": theorem.conditions_hold,
        "theorem41_epsilon_certified": theorem_cert.epsilon}))
    return 0


def warm_parties_for(argv: list[str]) -> None:
    """For ``mpcdp train``: start the parties' fork server before anything heavy is imported (its imports
    then overlap this process's own), unless the run is plainly simulated."""
    from mpcdp.runtime.process_server import start_process_server

    if wants_warm_parties(argv):
        start_process_server()


def wants_warm_parties(argv: list[str]) -> bool:
    """Whether ``argv`` is an ``mpcdp train`` whose run may be secure (the command line or the protocol file
    says nothing else): its parties are worth starting early."""
    import tomllib

    early = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    early.add_argument("--plugin", action="append")  # the global option before the command
    early.add_argument("command", nargs="?")
    early.add_argument("protocol", nargs="?")
    early.add_argument("--backend")
    try:
        known, _ = early.parse_known_args(argv)
    except argparse.ArgumentError:  # the full parser names the problem
        return False
    if known.command != "train" or not known.protocol:
        return False
    try:
        with open(known.protocol, "rb") as fh:
            declared = tomllib.load(fh).get("backend")
    except (OSError, tomllib.TOMLDecodeError):
        declared = None  # plan_from names the problem
    return (known.backend or declared) != "simulated"


def _cmd_train(ns: argparse.Namespace) -> int:
    from mpcdp.jobs.train import plan_from, run_plan
    from mpcdp.runtime import progress

    _check_own_data_options(ns)
    if ns.data:
        return _cmd_train_own_data(ns)
    plan = plan_from(ns.protocol, backend=ns.backend, parties=ns.parties, epsilon=ns.epsilon, seed=ns.seed,
                     algorithm=ns.algorithm, size_ratio=ns.size_ratio)
    if ns.reproducible:
        plan = dataclasses.replace(plan, mpc={**plan.mpc, "reproducible": True})
    if ns.provider:
        plan = dataclasses.replace(plan, mpc={**plan.mpc, "provider": ns.provider})
    if ns.resume and ns.checkpoint and ns.checkpoint != ns.resume:
        raise ConfigError(f"`--checkpoint` {ns.checkpoint!r} and `--resume` {ns.resume!r} differ: a resumed run "
                          f"keeps saving into the directory it resumes from")
    print(f"mpcdp: {plan.name} [{plan.backend}, {plan.parties} parties]", file=sys.stderr, flush=True)
    with progress.lines_to(sys.stderr):  # the estimate, then every party's progress in words
        report = run_plan(plan, checkpoint_dir=ns.resume or ns.checkpoint, checkpoint_every=ns.checkpoint_every,
                          resume=bool(ns.resume))
    report.pop("test_error_curve")
    print(json.dumps(report))
    return 0


def _cmd_audit(ns: argparse.Namespace) -> int:
    from tqdm import tqdm

    from mpcdp.jobs import audit
    from mpcdp.jobs.train import plan_from

    check_number(ns.confidence, "--confidence", low=0, high=1)
    plan = plan_from(ns.protocol, backend=ns.backend)
    if ns.timeout is not None:
        plan = dataclasses.replace(plan, mpc={**plan.mpc, "timeout_s": ns.timeout})
    with tqdm(total=ns.runs, unit="run", desc=f"audit {plan.name} [{ns.backend}, {ns.setting}]", file=sys.stderr) as bar:
        report = audit.run_audit(plan, backend=ns.backend, setting=ns.setting, canaries=ns.canaries, runs=ns.runs,
                                 confidence=ns.confidence, seed=ns.seed,
                                 progress=lambda done, total: bar.update(done - bar.n))
    if ns.out:
        command = "mpcdp " + " ".join(sys.argv[1:]) if sys.argv[1:2] == ["audit"] else None
        written = audit.write(report, ns.out, command)
        print(written["markdown"], file=sys.stderr)
    print(json.dumps({k: v for k, v in report.items() if k not in ("scores", "signs")}))
    return 0


def _cmd_compare(ns: argparse.Namespace) -> int:
    from mpcdp.jobs.compare import compare

    _check_own_data_options(ns)
    own_data, parties = None, ns.parties
    if ns.data:
        from mpcdp.jobs.own_data_simulated import OwnFiles

        own_data = OwnFiles(tuple(_own_sources(ns)))
        parties = len(ns.data)
    summary = compare(ns.protocol, seeds=ns.seeds, parties=parties, epsilon=ns.epsilon, out=ns.out,
                      algorithm=ns.algorithm, size_ratio=ns.size_ratio, own_data=own_data)
    print(summary["table"], file=sys.stderr)
    summary.pop("table")
    print(json.dumps(summary))
    return 0


def _cmd_sweep(ns: argparse.Namespace) -> int:
    from mpcdp.jobs.sweep import main_progress, rerender, run_sweep

    command = "mpcdp " + " ".join(sys.argv[1:]) if sys.argv[1:2] == ["sweep"] else None
    if ns.rerender:
        result = rerender(ns.out)
    else:
        result = run_sweep(ns.protocol, out=ns.out, seeds=ns.seeds, mpc_seeds=ns.mpc_seeds, command=command,
                           progress=main_progress())
    print(result["markdown"], file=sys.stderr)
    print(json.dumps({"table": ns.out + ".md", "runs": ns.out + ".json", "plot": result["png"],
                      "agreement": result["agreement"]}))
    return 0


def _cmd_cost(ns: argparse.Namespace) -> int:
    from tqdm import tqdm

    from mpcdp.jobs import cost_report
    from mpcdp.jobs.cost import MODELS, run_cost

    if ns.rerender:
        if not ns.out:
            raise ConfigError("`--rerender` needs `--out PREFIX` (the run recorded in PREFIX.json).")
        paths = cost_report.rerender(ns.out)
        print("wrote " + ", ".join(paths.values()), file=sys.stderr)
        return 0
    check_integer(ns.parties, "--parties", minimum=2)
    check_number(ns.sigma, "--sigma", low=0)
    bar = tqdm(total=len(MODELS[ns.model]), unit="layer", file=sys.stderr, desc=f"{ns.model} ({ns.parties} parties)")

    def progress(done: int, total: int) -> None:
        bar.update(done - bar.n)

    run = run_cost(ns.model, ns.parties, ns.noise, sigma=ns.sigma, link_delay_ms=ns.link_delay_ms,
                   timeout_s=ns.timeout, progress=progress, provider=ns.provider)
    bar.close()
    command = "mpcdp " + " ".join(sys.argv[1:]) if sys.argv[1:2] == ["cost"] else None
    print(cost_report.markdown(run, command))
    for line in cost_report.goals(run):
        print("- " + line)
    if ns.out:
        paths = cost_report.write(run, ns.out, command)
        print("wrote " + ", ".join(paths.values()), file=sys.stderr)
    return 0


def _cmd_scale(ns: argparse.Namespace) -> int:
    from mpcdp.jobs.scale import run_scale
    from mpcdp.jobs.sweep import main_progress

    result = run_scale(ns.protocol, ns.parties, out=ns.out, backend=ns.backend, seeds=ns.seeds,
                       progress=main_progress())
    print(result["markdown"], file=sys.stderr)
    print(json.dumps({"table": ns.out + ".md", "runs": ns.out + ".json", "plot": result["png"]}))
    return 0


def _sweep_command(ns: argparse.Namespace, run_sweep) -> int:
    """`--sweep --out PREFIX [--runs N]` of `collab` and `decentralized`: run, print the table and the paths."""
    from mpcdp.jobs.sweep import main_progress

    if not ns.out:
        raise ConfigError("`--sweep` needs `--out PREFIX` (where the table, JSON and PNG go).")
    result = run_sweep(ns.protocol, out=ns.out, runs=ns.runs, progress=main_progress())
    print(result["markdown"], file=sys.stderr)
    print(json.dumps({"table": ns.out + ".md", "runs": ns.out + ".json", "plot": result["png"]}))
    return 0


def _cmd_collab(ns: argparse.Namespace) -> int:
    if ns.sweep:
        from mpcdp.jobs.collab_sweep import run_sweep

        return _sweep_command(ns, run_sweep)
    from mpcdp.jobs.collab import plan_from, prediction, problem_of, run_plan

    plan = plan_from(ns.protocol, backend=ns.backend, seed=ns.seed)
    predicted = prediction(plan, problem_of(plan))
    bound = "n/a" if predicted["bound"] is None else f"{predicted['bound']:.4g}"
    print(f"predicted before training (Theorem {predicted['theorem']}): gap <= {bound}; "
          f"collaboration score √Σ1/ε²/n = {predicted['score']:.4g}", file=sys.stderr)
    report = run_plan(plan)
    report.pop("final")
    print(json.dumps(report))
    return 0


def _cmd_decentralized(ns: argparse.Namespace) -> int:
    if ns.sweep:
        from mpcdp.jobs.decentralized_sweep import run_sweep

        return _sweep_command(ns, run_sweep)
    from mpcdp.jobs.decentralized import plan_from, run_method

    plan = plan_from(ns.protocol, backend=ns.backend, seed=ns.seed, epsilon=ns.epsilon,
                     methods=ns.method and [ns.method])
    for method in plan.methods:
        report = run_method(plan, method)
        for key in ("w", "local_models"):
            report.pop(key, None)
        print(json.dumps(report))
    return 0


def _cmd_credentials(ns: argparse.Namespace) -> int:
    from mpcdp.transport.credentials import make_deployment

    folder = make_deployment(ns.out, ns.parties, name=ns.name)
    print(f"mpcdp: credentials for ranks 0..{ns.parties} (rank {ns.parties} = the dealer) in {folder}/. Give each "
          f"host ca.pem and its own party-<rank>.pem and party-<rank>-key.pem; keep ca-key.pem on none of them.")
    return 0


def _cmd_party(ns: argparse.Namespace) -> int:
    from mpcdp.jobs.aggregate import aggregate_party
    from mpcdp.runtime.endpoint import read_settings, resolve
    from mpcdp.runtime.party import run_party

    from mpcdp.runtime.party import run_dealer

    if ns.provider is None and ns.job == "train" and ns.protocol:  # the protocol says, unless the command does
        from mpcdp.jobs.train import protocol_provider

        ns.provider = protocol_provider(ns.protocol).name
    endpoint = resolve(rank=ns.rank, parties=ns.parties, rendezvous=ns.rendezvous,
                       dealer=providers.lookup(ns.provider or providers.DEFAULT).has_dealer)
    settings = read_settings(credentials=ns.credentials, insecure_links=ns.insecure_links, iface=ns.iface)
    config = _config(ns, endpoint.parties)
    if endpoint.rank == endpoint.parties:
        if not config.provider_record.has_dealer:
            raise ConfigError(f"rank {endpoint.rank} is the dealer's, but `provider` is {config.provider!r}.")
        report = run_dealer(config=config, rendezvous=endpoint.rendezvous, settings=settings)
        if ns.job == "cost":  # the per-request bytes are needed to attribute dealer traffic to layers
            print(json.dumps(report))
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
        plan = plan_from(ns.protocol, backend="mpc", parties=endpoint.parties, seed=ns.seed)
        mpc = config.to_dict()
        mpc.pop("parties")
        mpc.pop("timeout_s")  # the command's, else the protocol's, else one that follows the estimate
        timeout = ns.timeout if ns.timeout is not None else plan.mpc.get("timeout_s")
        if timeout is not None:
            mpc["timeout_s"] = timeout
        mpc["reproducible"] = config.reproducible or bool(plan.mpc.get("reproducible", False))
        plan = dataclasses.replace(plan, mpc=mpc)
        if ns.data:
            from mpcdp.jobs.own_data import PartySource, report, run_own_data_here
            from mpcdp.jobs.own_data_results import check_every

            plan = dataclasses.replace(plan, eval_every=check_every(ns.eval_every))
            values = run_own_data_here(plan, PartySource(ns.data, ns.test, ns.label, _features(ns.features)),
                                       plan.trained_model, rank=endpoint.rank, rendezvous=endpoint.rendezvous,
                                       settings=settings)
            result = report(values)
            _own_data_outputs(ns, plan, [values], result)
        else:
            with progress.lines_to(sys.stderr):  # this host's estimate (its progress: run_party's own lines)
                result = run_plan(plan, curve=False,
                                  launch=host_launcher(endpoint.rank, endpoint.rendezvous, settings))
            result.pop("test_error_curve", None)
        result["rank"] = endpoint.rank
    elif ns.job == "cost":
        from mpcdp.jobs.cost import MODELS, check_choice, cost_job, cost_party

        check_choice(ns.model, ns.noise)
        result = run_party(rank=endpoint.rank, config=config, rendezvous=endpoint.rendezvous, fn=cost_party,
                           args=(MODELS[ns.model], ns.noise, ns.sigma, ns.meter_iface),
                           job=cost_job(ns.model, ns.noise, ns.sigma), settings=settings)
    else:
        result = run_party(rank=endpoint.rank, config=config, rendezvous=endpoint.rendezvous, fn=aggregate_party,
                           args=(ns.dim, ns.seed), job={"name": "aggregate", "dim": ns.dim}, settings=settings)
    print(json.dumps(result))
    return 0
