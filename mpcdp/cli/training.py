"""Training from a protocol file and what is measured of it: ``mpcdp train``, ``audit``, ``compare``, ``sweep``,
``scale``, ``privacy`` (each command's parser beside its handler)."""

from __future__ import annotations

import argparse
import json
import sys

from mpcdp import providers
from mpcdp.validation import check_integer, check_number
from mpcdp.cli.options import (_provider_help, _add_own_data_options, _add_model_outputs, _add_variant_options,
                               add_malicious_sampler, add_openings)
from mpcdp.cli.own_data_commands import _check_own_data_options, _cmd_train_own_data, _own_sources, keeping_of, own_model
from mpcdp.cli.user_module import add_module_options


def warm_parties_for(argv: list[str]) -> None:
    """For ``mpcdp train``: start the parties' fork server before anything heavy is imported (its imports
    then overlap this process's own), unless the run is plainly simulated."""
    from mpcdp.runtime.process_server import start_process_server

    if wants_warm_parties(argv):
        start_process_server()


def wants_warm_parties(argv: list[str]) -> bool:
    """Whether ``argv`` is an ``mpcdp train`` whose run may be secure (the command line or the protocol file
    says nothing else) and whose protocol file reads and has valid [mpc] settings: its parties are worth
    starting early. A protocol the run will refuse (a misspelt setting, bad TOML) starts nothing, so its
    one-line refusal costs no party start-up."""
    from mpcdp.config import resolve_mpc
    from mpcdp.errors import ConfigError
    from mpcdp.validation import read_protocol

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
        protocol = read_protocol(known.protocol)
        resolve_mpc(protocol.get("mpc", {}), "")
    except ConfigError:  # the run refuses it, naming the problem
        return False
    return (known.backend or protocol.get("backend")) != "simulated"


def _train_parser(sub: argparse._SubParsersAction) -> None:
    """``mpcdp train``: training from a protocol file (:func:`_cmd_train`)."""
    train = sub.add_parser("train", help="training from a protocol file: any registered algorithm (srm = DP-SRM / "
                                           "DDP-SRM, storm, dp-sgd, rrpsgd, dp-gd, dp-agd, jayaraman, wd-dp, "
                                           "wd-dp-local), noise mode ([noise] mode = dgauss | distributed) and model")
    train.add_argument("protocol", help="a protocols/*.toml file")
    train.add_argument("--backend", choices=["mpc", "simulated"], default=None)
    train.add_argument("--parties", type=int, default=None)
    train.add_argument("--epsilon", type=float, default=None)
    train.add_argument("--seed", type=int, default=None)
    train.add_argument("--checkpoint", default=None, metavar="DIR",
                       help="save every party's state under DIR (each party its own folder; DP-SRM and STORM; "
                            "shipped data or --data)")
    train.add_argument("--fresh-budget", action="store_true",
                       help="with --data: run although a party's records already spent privacy budget in an "
                            "earlier run (each party's ledger; refused without it, saying what was spent)")
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
    train.add_argument("--security", choices=["semi-honest", "malicious"], default=None,
                       help="the adversary (overrides [mpc] security): 'malicious' trains with the authenticated in-MPC "
                            "sampler and MAC-checked releases (security with abort; dgauss noise, mpc backend, no "
                            "checkpoints; about 15x the semi-honest sampler's bytes per sample)")
    add_malicious_sampler(train)
    add_openings(train)
    _add_variant_options(train)
    _add_own_data_options(train)
    add_module_options(train)
    _add_model_outputs(train)
    train.set_defaults(func=_cmd_train)


def _cmd_train(ns: argparse.Namespace) -> int:
    from mpcdp.jobs.train import plan_from, run_plan
    from mpcdp.runtime import progress

    _check_own_data_options(ns)
    if ns.data:
        return _cmd_train_own_data(ns)
    plan = plan_from(ns.protocol, backend=ns.backend, parties=ns.parties, epsilon=ns.epsilon, seed=ns.seed,
                     algorithm=ns.algorithm, size_ratio=ns.size_ratio,
                     mpc={"reproducible": ns.reproducible or None, "provider": ns.provider,
                          "security": ns.security, "malicious_sampler": ns.malicious_sampler,
                          "openings": ns.openings})
    keeping = keeping_of(ns)
    print(f"mpcdp: {plan.name} [{plan.backend}, {plan.parties} parties]", file=sys.stderr, flush=True)
    with progress.lines_to(sys.stderr):  # the estimate, then every party's progress in words
        report = run_plan(plan, checkpoint_dir=keeping.checkpoint_dir, checkpoint_every=keeping.every,
                          resume=keeping.resume, curve=False)  # the JSON line has no per-iterate curve
    report.pop("test_error_curve")
    print(json.dumps(report))
    return 0


def _audit_parser(sub: argparse._SubParsersAction) -> None:
    """``mpcdp audit``: canaries planted in a run, ε lower-bounded (:func:`_cmd_audit`)."""
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


def _cmd_audit(ns: argparse.Namespace) -> int:
    from mpcdp.cli.options import bar_on_progress
    from mpcdp.jobs import audit
    from mpcdp.jobs.train import plan_from

    check_number(ns.confidence, "--confidence", low=0, high=1)
    plan = plan_from(ns.protocol, backend=ns.backend, mpc={"timeout_s": ns.timeout})
    with bar_on_progress(total=ns.runs, unit="run", desc=f"audit {plan.name} [{ns.backend}, {ns.setting}]") as progress:
        report = audit.run_audit(plan, backend=ns.backend, setting=ns.setting, canaries=ns.canaries, runs=ns.runs,
                                 confidence=ns.confidence, seed=ns.seed, progress=progress)
    if ns.out:
        command = "mpcdp " + " ".join(sys.argv[1:]) if sys.argv[1:2] == ["audit"] else None
        written = audit.write(report, ns.out, command)
        print(written["markdown"], file=sys.stderr)
    print(json.dumps({k: v for k, v in report.items() if k not in ("scores", "signs")}))
    return 0


def _compare_parser(sub: argparse._SubParsersAction) -> None:
    """``mpcdp compare``: secure against simulated noise, over seeds (:func:`_cmd_compare`)."""
    compare = sub.add_parser("compare", help="the same training with secure and with simulated noise, over seeds")
    compare.add_argument("protocol")
    compare.add_argument("--seeds", type=int, default=5)
    compare.add_argument("--parties", type=int, default=None)
    compare.add_argument("--epsilon", type=float, default=None)
    compare.add_argument("--out", default="compare-out", help="folder for the PNG plot and the JSON record")
    _add_variant_options(compare)
    _add_own_data_options(compare)
    add_module_options(compare)
    compare.add_argument("--fresh-budget", action="store_true",
                         help="with --data: run although a party's records already spent privacy budget in an "
                              "earlier run (every secure seed is a run recorded in each party's ledger)")
    compare.set_defaults(func=_cmd_compare)


def _cmd_compare(ns: argparse.Namespace) -> int:
    from mpcdp.jobs.compare import compare

    _check_own_data_options(ns)
    own_data, parties = None, ns.parties
    if ns.data:
        from mpcdp.jobs.own_data_simulated import OwnFiles, ledger_line

        own_data = OwnFiles(tuple(_own_sources(ns)), model=own_model(ns, None), fresh_budget=ns.fresh_budget)
        parties = len(ns.data)
        print(ledger_line(ns.seeds), file=sys.stderr, flush=True)
    summary = compare(ns.protocol, seeds=ns.seeds, parties=parties, epsilon=ns.epsilon, out=ns.out,
                      algorithm=ns.algorithm, size_ratio=ns.size_ratio, own_data=own_data)
    print(summary["table"], file=sys.stderr)
    summary.pop("table")
    print(json.dumps(summary))
    return 0


def _sweep_parser(sub: argparse._SubParsersAction) -> None:
    """``mpcdp sweep``: paper 000's uneven-parties sweep (:func:`_cmd_sweep`)."""
    sweep = sub.add_parser("sweep", help="paper 000's uneven-parties sweep: accuracy and optimal gap versus "
                                         "u = n_max/n_min for WD-DP, Jayaraman and the central baseline")
    sweep.add_argument("protocol", help="a protocol file with a [sweep] table, e.g. protocols/uneven-a9a.toml")
    sweep.add_argument("--out", required=True, help="output prefix: writes PREFIX.md, PREFIX.json, PREFIX.png")
    sweep.add_argument("--seeds", type=int, default=None, help="simulated seeds (default: the protocol's)")
    sweep.add_argument("--mpc-seeds", type=int, default=None, help="secure seeds (default: the protocol's)")
    sweep.add_argument("--rerender", action="store_true", help="rebuild PREFIX.md and PREFIX.png from PREFIX.json")
    sweep.set_defaults(func=_cmd_sweep)


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


def _scale_parser(sub: argparse._SubParsersAction) -> None:
    """``mpcdp scale``: one protocol over party counts (:func:`_cmd_scale`)."""
    scale = sub.add_parser("scale", help="one protocol at m = 1, 2, 4, 8 parties: test error against wall time "
                                         "(paper 002 Fig. 3(g, h))")
    scale.add_argument("protocol", help="a protocols/*.toml file (its batch must split evenly over every m)")
    scale.add_argument("--parties", type=int, nargs="+", default=[1, 2, 4, 8])
    scale.add_argument("--backend", choices=["mpc", "simulated"], default=None,
                       help="for m >= 2 (default: the protocol's); m = 1 is always the central, simulated run")
    scale.add_argument("--seeds", type=int, default=1)
    scale.add_argument("--out", required=True, help="output prefix: writes PREFIX.md, PREFIX.json, PREFIX.png")
    scale.set_defaults(func=_cmd_scale)


def _cmd_scale(ns: argparse.Namespace) -> int:
    from mpcdp.jobs.scale import run_scale
    from mpcdp.jobs.sweep import main_progress

    result = run_scale(ns.protocol, ns.parties, out=ns.out, backend=ns.backend, seeds=ns.seeds,
                       progress=main_progress())
    print(result["markdown"], file=sys.stderr)
    print(json.dumps({"table": ns.out + ".md", "runs": ns.out + ".json", "plot": result["png"]}))
    return 0


def _privacy_parser(sub: argparse._SubParsersAction) -> None:
    """``mpcdp privacy``: DP-SRM/DDP-SRM noise calibrated and certified (:func:`_cmd_privacy`)."""
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
    assert noise.certificate.pieces is not None  # (the accountant's certificate)
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
