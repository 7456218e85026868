"""Secure aggregation, the in-MPC noise samplers and their per-layer cost, on this host: ``mpcdp aggregate``,
``mpcdp noise``, ``mpcdp cost`` (each command's parser beside its handler)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

from mpcdp import providers
from mpcdp.errors import ConfigError
from mpcdp.validation import check_integer, check_number
from mpcdp.cli.options import (_config, _provider_help, _add_mpc_options, add_malicious_sampler, add_openings,
                               bar_on_progress)


def _aggregate_parser(sub: argparse._SubParsersAction) -> None:
    """``mpcdp aggregate``: local m-party secure aggregation (:func:`_cmd_aggregate`)."""
    agg = sub.add_parser("aggregate", help="local m-party secure aggregation, checked against plaintext")
    _add_mpc_options(agg, parties_required=False)
    agg.add_argument("--dim", type=int, default=123, help="length of each party's vector")
    agg.add_argument("--seed", type=int, default=None,
                     help="seed the parties' demo vectors (default: OS randomness)")
    agg.add_argument("--input-bound", type=float, default=None, metavar="B",
                     help="with --security malicious: check every party's vector against the L2 bound B inside "
                          "the MPC before the sum is opened; a party outside it stops the run, named")
    agg.set_defaults(func=_cmd_aggregate, parties=3)


def _cmd_aggregate(ns: argparse.Namespace) -> int:
    from mpcdp.jobs.aggregate import aggregate_job, aggregate_party, check, check_input_bound
    from mpcdp.runtime.harness import run_parties

    check_integer(ns.dim, "--dim")
    config = _config(ns, ns.parties)
    check_input_bound(config.security, ns.input_bound)
    import time

    start = time.perf_counter()
    results = run_parties(aggregate_party, config, args=(ns.dim, ns.seed, None, ns.input_bound),
                          job=aggregate_job(ns.dim, ns.input_bound))
    summary = check(results, config.precision_bits)
    summary["provider"], summary["security"] = config.provider, config.security
    summary["wall_s"] = round(time.perf_counter() - start, 3)
    print(json.dumps(summary))
    return 0 if summary["max_abs_error"] <= summary["error_bound"] and summary["all_parties_agree"] else 1


def _noise_parser(sub: argparse._SubParsersAction) -> None:
    """``mpcdp noise``: the in-MPC Gaussian samplers, validated (:func:`_cmd_noise`)."""
    from mpcdp.learning.mechanisms import MECHANISMS

    noise = sub.add_parser("noise", help="draw Gaussian noise inside the MPC and validate it against N(0, σ²)")
    _add_mpc_options(noise, parties_required=False)
    noise.add_argument("--samples", type=int, default=100_000)
    noise.add_argument("--mode", choices=list(MECHANISMS), default="dgauss",
                       help="; ".join(f"{name}: {s.summary}" for name, s in MECHANISMS.items()))
    noise.add_argument("--sigma", type=float, default=1.0)
    noise.add_argument("--chunk", type=int, default=50_000, help="samples per sampling call")
    noise.add_argument("--alpha", type=float, default=1e-3, help="family-wise level of the validation")
    noise.add_argument("--noise-committee", type=int, default=3, metavar="C",
                       help="dgauss: parties 0..C-1 sample (default 3). With the dealer the noise is known to the "
                            "dealer with any one of them or to all of them together, so C = --parties makes every "
                            "data party a member; under honest-majority C is 3 (any two of parties 0-2). The JSON "
                            "says it as `noise_known_to`")
    noise.add_argument("--seed", type=int, default=None,
                       help="reproducible (insecure) party randomness; default: OS CSPRNG. For dgauss it fixes "
                            "the candidates only: the accept decisions also use dealt words XOR the committee's "
                            "coin, fresh every run")
    noise.add_argument("--out", default=None, help="save the opened samples to this .npy file")
    noise.set_defaults(func=_cmd_noise, parties=3)


def _audit_views_parser(sub: argparse._SubParsersAction) -> None:
    """``mpcdp audit views``: each role's view tested against the noise (:func:`_cmd_audit_views`)."""
    views = sub.add_parser("audit-views", prog="mpcdp audit views",
                           help="`mpcdp audit views`: run the in-MPC sampler and training releases, record each "
                                "role's whole view (the dealer's included) and test it against the released noise",
                           description="Run the in-MPC discrete Gaussian as one-sample calls, then training releases "
                                       "(noise sampled in MPC, added to every party's private input, the sum "
                                       "opened), with real party processes (and the dealer); record each role's "
                                       "whole view — what it draws, holds, receives and can count, every share "
                                       "it receives in a release's opening — open each call's noise for this "
                                       "audit only, and test every view against it (permutation tests, each "
                                       "role at level --alpha, its power stated). Prints one JSON line "
                                       "{\"roles\": [{\"role\", \"verdict\", \"statistic\", \"p\", \"power\"}, ...]}; "
                                       "exit 1 when a role is dependent.")
    views.add_argument("--parties", type=int, default=3, help="number of data parties m")
    views.add_argument("--provider", choices=["dealer", "honest-majority"], default="dealer")
    views.add_argument("--noise-committee", type=int, default=3, metavar="C", help="parties 0..C-1 sample")
    views.add_argument("--calls", type=int, default=400,
                       help="one-sample calls of the sampler (each a pass): more calls, more power")
    views.add_argument("--releases", type=int, default=None,
                       help="training releases after the sampler's calls (0: none; else >= 20, >= 10 under "
                            "--security malicious; default 100, 20 under malicious): more, more power")
    views.add_argument("--dim", type=int, default=8, help="coordinates of each release's noisy vector")
    views.add_argument("--sigma", type=float, default=16.0, help="the noise's σ in grid units (>= 16)")
    views.add_argument("--alpha", type=float, default=1e-4, help="each role's level (Bonferroni over its statistics)")
    views.add_argument("--security", choices=["semi-honest", "malicious"], default="semi-honest",
                       help="'malicious': audit the authenticated sampler (dg-auth; every data party samples, "
                            "the dealer provider; --noise-committee is not used) and MAC-checked training releases")
    add_malicious_sampler(views)
    add_openings(views)
    views.add_argument("--plant-leak", default=None, metavar="ROLE",
                       help="give ROLE a known dependence, which the audit must report: 'dealer' (the dealer's "
                            "own-word factor tables of circuit dg-mpc/5), 'party J' for a member J (factor words "
                            "equal to the committee's coin, which every member then holds) or 'release' (party 1 "
                            "sends its release share without its pairwise masks, to party 0); under --security "
                            "malicious, 'dealer' (no coin: the candidates' bits are the dealer's), 'window' (the "
                            "muxes' masks 0: every party opens the windows themselves), 'release' "
                            "(party 1 sends its release input without its dealt mask, to party 0) or 'witness' "
                            "(with --bound, implied: party 1 sends its norm witness bits without its dealt bit "
                            "masks, to every other party)")
    views.add_argument("--bound", action="store_true",
                       help="under --security malicious: audit the bounded release training runs use (each party's "
                            "term checked inside the MPC against a clipping bound, its witness input as "
                            "authenticated bits: the bits every party receives, the check's openings and σ, the "
                            "dealer's bit masks and requests)")
    views.add_argument("--out", default=None, help="also write the JSON report to this file")
    views.set_defaults(func=_cmd_audit_views)


def _cmd_audit_views(ns: argparse.Namespace) -> int:
    from mpcdp.jobs.views import run_views

    check_integer(ns.parties, "--parties", minimum=2)
    malicious = ns.security == "malicious"
    check_integer(ns.calls, "--calls", minimum=10 if malicious else 20)
    if ns.releases is None:
        from mpcdp.jobs import auth_release_views, release_views

        ns.releases = auth_release_views.DEFAULT_RELEASES if malicious else release_views.DEFAULT_RELEASES
    check_integer(ns.releases, "--releases", minimum=0)
    if ns.malicious_sampler and not malicious:
        raise ConfigError("`--malicious-sampler` chooses the authenticated sampler's plan: it needs `--security "
                          "malicious`")
    if ns.bound and not malicious:
        raise ConfigError("`--bound` audits the bounded release of `--security malicious` (semi-honest parties clip "
                          "their own terms)")
    if malicious:
        from mpcdp.jobs.auth_views import run_auth_views

        if ns.provider != "dealer":
            raise ConfigError("`--security malicious` needs `--provider dealer` (security with abort has an honest "
                              "dealer)")
        with bar_on_progress(total=ns.calls + ns.releases, unit="call",
                              desc=f"audit views [malicious, m = {ns.parties}]") as progress:
            report = run_auth_views(parties=ns.parties, calls=ns.calls, sigma=ns.sigma, alpha=ns.alpha,
                                    plant=ns.plant_leak, releases=ns.releases, dim=ns.dim, bound=ns.bound,
                                    progress=progress, sampler=ns.malicious_sampler or "fewer-bytes",
                                    openings=ns.openings or "star")
        return _print_views(report, ns.out)
    with bar_on_progress(total=ns.calls + ns.releases, unit="call",
                          desc=f"audit views [{ns.provider}, m = {ns.parties}]") as progress:
        report = run_views(parties=ns.parties, provider=ns.provider, calls=ns.calls, sigma=ns.sigma,
                           alpha=ns.alpha, plant=ns.plant_leak, committee=ns.noise_committee,
                           releases=ns.releases, dim=ns.dim, progress=progress, openings=ns.openings or "star")
    return _print_views(report, ns.out)


def _print_views(report: dict, out: str | None) -> int:
    """Print (and with ``out`` write) the audit's report; 1 when a role is dependent."""
    text = json.dumps(report)
    if out:
        from mpcdp.private_files import write_public

        write_public(out, (text + "\n").encode("utf-8"))
    print(text)
    return 0 if all(role["verdict"] == "independent" for role in report["roles"]) else 1


def _side_by_side(summary: dict, semi: Any, samples: int, wall: float) -> dict:
    """The semi-honest run's cost next to the malicious one's (``mpcdp noise --security malicious``)."""
    from mpcdp.jobs.noise import cost_summary

    other = cost_summary(semi.values, semi.dealer, samples)
    semi_wall = max(r["wall_s"] for r in semi.values)
    ratio = (summary["bytes_per_sample"] / other["bytes_per_sample"]
             if summary["bytes_per_sample"] and other["bytes_per_sample"] else None)
    return {"semi_honest_bytes_per_sample": other["bytes_per_sample"], "bytes_ratio_to_semi_honest": ratio,
            "semi_honest_wall_s": round(semi_wall, 3),
            "wall_ratio_to_semi_honest": wall / semi_wall if semi_wall else None}


def _cmd_noise(ns: argparse.Namespace) -> int:
    import time

    import numpy as np

    from mpcdp.learning.mechanisms import MECHANISMS, NoiseSpec, sample_noise
    from mpcdp.noise.validate import validate_normal
    from mpcdp.noise.who_knows import noise_known_to

    check_integer(ns.samples, "--samples")
    chunk = max(1, min(ns.samples, ns.chunk))
    mechanism = MECHANISMS[ns.mode]
    summary: dict  # of the plaintext run, or cost_summary's
    if not mechanism.in_mpc:  # drawn here, in plaintext
        start = time.perf_counter()
        block = sample_noise(None, NoiseSpec(sigma=ns.sigma, mode=ns.mode, seed=ns.seed), (ns.samples,))
        values, wall = block.plain.numpy(), time.perf_counter() - start
        summary = {"parties": 0, "bytes_by_party": [], "bytes_per_party": 0, "dealer_bytes": 0, "total_bytes": 0,
                   "bytes_per_sample": 0.0, "rounds": 0, "support": block.support, "cpu_us_per_sample_by_party": [],
                   "dealer_cpu_us_per_sample": None}
        accepted = candidates = None
    else:
        from mpcdp.jobs.noise import cost_summary, noise_party
        from mpcdp.runtime.harness import run_job

        config = _config(ns, ns.parties)
        runs = [config] + ([dataclasses.replace(config, security="semi-honest")] if config.security == "malicious" else [])
        results = []
        for run in runs:  # under security = "malicious", the semi-honest run next to it: its cost, side by side
            with bar_on_progress(total=ns.samples, unit="sample", desc=f"{ns.mode} in MPC ({run.security})") as progress:
                results.append(run_job(noise_party, run, args=(ns.samples, ns.mode, ns.sigma, ns.seed, chunk),
                                       job={"name": "noise", "samples": ns.samples, "mode": ns.mode,
                                            "sigma": ns.sigma, "chunk": chunk}, progress=progress))
        result = results[0]
        first = result.values[0]
        values, wall = first["values"], max(r["wall_s"] for r in result.values)
        summary = cost_summary(result.values, result.dealer, ns.samples)
        summary["security"] = config.security
        if len(results) > 1:
            summary.update(_side_by_side(summary, results[1], ns.samples, wall))
        accepted, candidates = first["accepted"], first["candidates"]
    if ns.out:
        import io

        from mpcdp.private_files import write_public

        buffer = io.BytesIO()
        np.save(buffer, values)
        write_public(ns.out if str(ns.out).endswith(".npy") else f"{ns.out}.npy", buffer.getvalue())
    support = summary["support"] if np.isfinite(summary["support"]) else None
    acceptance = getattr(mechanism, "acceptance", None)  # a sampler that states its acceptance rate has it checked
    check = validate_normal(values, sigma=ns.sigma, alpha=ns.alpha, support=support,
                            accepted=accepted if acceptance is not None else None, candidates=candidates,
                            acceptance=acceptance)
    report = {
        "mode": ns.mode, "samples": int(values.size), "sigma": ns.sigma, "mean": check.mean, "std": check.std,
        "ks_statistic": check.ks_statistic, "ks_pvalue": check.ks_pvalue, "max_abs": check.max_abs,
        "acceptance_rate": accepted / candidates if candidates else None,
        **summary, "noise_known_to": noise_known_to(drawn_by=mechanism.drawn_by, provider=ns.provider,
                                                    parties=ns.parties,
                                                    committee=ns.noise_committee if summary.get(
                                                        "security") != "malicious" else ns.parties),
        "wall_s": round(wall, 3), "us_per_sample": 1e6 * wall / values.size,
        "validation": "passed" if check.passed else "; ".join(check.failures),
    }
    print(json.dumps(report))
    return 0 if check.passed else 1


def _cost_parser(sub: argparse._SubParsersAction) -> None:
    """``mpcdp cost``: per-layer cost of secure aggregation + in-MPC noise (:func:`_cmd_cost`)."""
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
