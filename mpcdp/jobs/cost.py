"""`mpcdp cost`: what one secure aggregation with in-MPC noise costs, per model layer, measured.

For every parameter tensor of a model (shapes as in paper 002, Tables 4–6; only shapes matter, so no data
is needed) the data parties run, in separate processes:

* **noise** — ``d`` discrete Gaussians sampled inside the MPC on the release grid (``dgauss``, what training
  releases), or the comparison modes (``rou``: ratio-of-uniforms, not certifiable; ``distributed``:
  each party noises its own share; ``boxmuller``: CrypTen's ``randn``). This part needs no data and can
  run ahead of time (pre-sampling);
* **release** — the online step: the parties' local d-vectors summed inside the MPC with the noise added,
  and only the noisy aggregate opened (:func:`mpcdp.mpc.release.noisy_release`, one opening).

Every section is metered by :mod:`mpcdp.transport.costs`: operation counts by kind, rounds, each party's bytes
(kernel TCP counters), the dealer's bytes per request (metered by the dealer), wall time. Next to it: the
plaintext-simulated equivalent timed in the same run (sum of m vectors plus float64 Gaussian noise, no
bytes), the paper's Obliv-C numbers for that layer, and for a9a/ijcnn1 the published circuit rebuilt and
run on this machine kind. The LAN/WAN columns estimate wall time from the measured rounds and bytes
(:class:`mpcdp.transport.costs.Link`).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from typing import Any, Callable

import torch

from mpcdp import providers
from mpcdp.config import MpcConfig
from mpcdp.learning.paper_networks import NETWORKS
from mpcdp.transport import costs
from mpcdp.learning.mechanisms import in_mpc_modes
from mpcdp.validation import check_choice as choose

# Paper 002 parameter tensors (Tables 4–6). a9a and ijcnn1: the logistic-regression gradient.
MODELS: dict[str, list[tuple[str, tuple[int, ...]]]] = {
    "logreg-a9a": [("weight", (123,))],
    "logreg-ijcnn1": [("weight", (22,))],
    **{name: list(spec.layers) for name, spec in NETWORKS.items()},
}

# Paper 002's Obliv-C garbled circuits (5 parties' gradients, Yao): gates and Yao runtime per layer.
# Its bandwidth columns are gates × 32 bytes (reported in MiB/GiB); oblivious transfer comes on top.
OBLIVC_PAPER: dict[str, list[tuple[int, float]]] = {
    "logreg-a9a": [(53_561_000, 18.04)],
    "logreg-ijcnn1": [(9_579_500, 3.52)],
    "mnist-cnn": [(445_655_400, 94.49), (6_962_700, 1.65), (3_565_247_800, 745.12), (13_926_100, 3.05),
                  (7_130_496_300, 1493.11), (13_926_100, 3.05), (139_266_800, 28.99), (4_351_400, 1.07)],
    "cifar-cnn5": [(195_844_300, 41.96), (2_610_600, 0.73), (1_044_505_700, 219.08), (6_962_700, 1.74),
                   (20_890_127_300, 4352.29), (52_224_600, 11.07), (4_386_926_200, 914.49), (36_557_100, 7.84),
                   (365_576_600, 76.36), (4_351_400, 1.07)],
}
OBLIVC_GATE_BYTES = 32
# The same public circuit rebuilt and run on this project's machine kind (2 cores, localhost):
# AND gates, total bytes (garbler's circuit + OT, inputs, outputs), best wall time.
OBLIVC_REBUILT: dict[str, tuple[int, int, float]] = {
    "logreg-a9a": (53_561_052, 1_716_602_881 + int(3.10 * 2**20), 16.9),
    "logreg-ijcnn1": (9_579_491, 307_021_025 + int(0.60 * 2**20), 3.0),
}
SECTIONS = ("noise", "release")


def _local_gradient(shape: tuple[int, ...], rank: int, layer: int) -> torch.Tensor:
    """A stand-in for this party's clipped local gradient term (only its shape matters for the cost)."""
    generator = torch.Generator().manual_seed(1_000 * rank + layer)
    g = torch.randn(shape, generator=generator, dtype=torch.float64)
    return g / max(1.0, g.norm().item())


def _metered(ctx, run: Callable[[], Any], interface: str | None) -> tuple[Any, dict[str, Any]]:
    from mpcdp import adapter

    openings_before = len(ctx.openings)
    first_request = adapter.dealer_requests_made()
    with costs.section(interface) as ledger:
        value = run()
    record = ledger.to_dict()
    record["first_dealer_request"] = first_request
    record["openings_list"] = [(o.label, o.elements) for o in ctx.openings[openings_before:] if o.kind != "public"]
    return value, record


def cost_party(ctx, layers: list[tuple[str, tuple[int, ...]]], noise: str, sigma: float,
               interface: str | None = None) -> list[dict[str, Any]]:
    """Party function: for each layer, sample d Gaussians (``noise`` mode) then release the noisy sum.
    ``interface``: also meter that network interface (for runs on emulated hosts)."""
    from mpcdp.mpc.release import noisy_release
    from mpcdp.learning.mechanisms import NoiseSpec, sample_noise

    spec = NoiseSpec(sigma=sigma, mode=noise)
    # warm-up (first calls pay for lazy initialisation): not reported
    warm = sample_noise(ctx, spec, (4,))
    noisy_release(ctx, torch.zeros(4, dtype=torch.float64), warm.shared, shape=(4,), label="warm-up")
    out = []
    for index, (name, shape) in enumerate(layers):
        d = math.prod(shape)
        local = _local_gradient((d,), ctx.rank, index)
        block, noise_record = _metered(ctx, lambda: sample_noise(ctx, spec, (d,)), interface)
        _, release_record = _metered(ctx, lambda: noisy_release(ctx, local, block.shared, shape=(d,),
                                                                label=f"release {name}"), interface)
        out.append({"layer": name, "shape": list(shape), "elements": d, "noise": noise_record,
                    "release": release_record, "noise_stats": dict(block.stats)})
        ctx.progress(index + 1, len(layers))
    return out


def step_party(ctx, layers: list[tuple[str, tuple[int, ...]]], noise: str, sigma: float) -> dict[str, Any]:
    """Party function: one training step as training runs it — every layer's noise drawn in one call, then the
    whole model's noisy sum released in one opening; each metered (:func:`_metered`)."""
    from mpcdp.mpc.release import noisy_release
    from mpcdp.learning.mechanisms import NoiseSpec, sample_noise

    spec = NoiseSpec(sigma=sigma, mode=noise)
    warm = sample_noise(ctx, spec, (4,))
    noisy_release(ctx, torch.zeros(4, dtype=torch.float64), warm.shared, shape=(4,), label="warm-up")
    d = sum(math.prod(shape) for _, shape in layers)
    local = _local_gradient((d,), ctx.rank, 0)
    block, noise_record = _metered(ctx, lambda: sample_noise(ctx, spec, (d,)), None)
    _, release_record = _metered(ctx, lambda: noisy_release(ctx, local, block.shared, shape=(d,), label="release step"),
                                 None)
    return {"elements": d, "noise": noise_record, "release": release_record, "noise_stats": dict(block.stats)}


def run_step_cost(model: str, parties: int, noise: str = "dgauss", *, sigma: float = 1.0, timeout_s: float = 1800.0,
                  provider: str = providers.DEFAULT) -> dict[str, Any]:
    """One step of ``model`` (all layers' noise in one call, one release) on ``parties`` local processes: the
    noise and release sections as :func:`run_cost` summarises them, every party's and the dealer's bytes."""
    from mpcdp.runtime.harness import run_job

    check_choice(model, noise)
    config = MpcConfig(parties=parties, timeout_s=timeout_s, provider=provider)
    result = run_job(step_party, config, args=(MODELS[model], noise, sigma),
                     job={**cost_job(model, noise, sigma), "fn": "cost-step"})
    reply_bytes = (result.dealer or {}).get("request_bytes", [])
    out = {"model": model, "parties": parties, "noise": noise, "provider": provider,
           "elements": result.values[0]["elements"], "noise_stats": result.values[0]["noise_stats"]}
    for section in SECTIONS:
        out[section] = _section_summary([v[section] for v in result.values], reply_bytes)
    return out


def plaintext_seconds(parties: int, d: int, sigma: float, repeats: int = 5) -> float:
    """The simulated equivalent: sum of m float64 vectors plus N(0, σ²) noise (CSPRNG), median time."""
    from mpcdp.noise.modes import csprng_normal

    vectors = [torch.randn(d, dtype=torch.float64) for _ in range(parties)]
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        total = torch.stack(vectors).sum(0) + torch.from_numpy(csprng_normal(d)) * sigma
        times.append(time.perf_counter() - start)
    del total
    return statistics.median(times)


@dataclasses.dataclass
class CostRun:
    """Everything one `mpcdp cost` run measured (plain data: see :meth:`to_dict`)."""

    model: str
    parties: int
    noise: str
    sigma: float
    link_delay_ms: float
    layers: list[dict[str, Any]]
    setup_s: float
    where: str = "local processes, loopback"
    provider: str = providers.DEFAULT

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _section_summary(per_party: list[dict[str, Any]], reply_bytes: list[int]) -> dict[str, Any]:
    """Combine the parties' records of one section: counts (identical on every party), bytes, time. Each party's
    own link to the dealer is taken out of its bytes (the replies go to the party the dealer picks,
    :data:`mpcdp.adapter.auth_bits.ROTATING`; the requests come from party 0); the section's dealer bytes are
    its requests and the dealer's count of its replies to them (``reply_bytes``, one per request of the run):
    a party's link also carries the dealer's goodbye at the run's end, which a slow party's last section sees."""
    zero = per_party[0]
    first, count = zero["first_dealer_request"], zero["dealer_requests"]
    replies = sum(reply_bytes[first:first + count])
    to_dealer = sum(r["dealer_sent"] for r in per_party)
    sent = [r["bytes_sent"] - r["dealer_sent"] for r in per_party]
    received = [r["bytes_received"] - r["dealer_received"] for r in per_party]
    link = [max(r["bytes_sent"], r["bytes_received"]) for r in per_party]  # what each party's link carries
    return {
        "ops": zero["ops"], "calls": zero["calls"], "rounds": zero["rounds"], "hops": zero.get("hops"),
        "emulated_hops": zero.get("emulated_hops"),
        "ops_agree": all(r["ops"] == zero["ops"] and r["rounds"] == zero["rounds"] for r in per_party),
        "openings": zero["openings_list"],
        "bytes_sent": sent, "bytes_received": received, "bytes_max_party": max(max(sent), max(received)),
        "link_bytes_max": max(link),
        "dealer_requests": count, "dealer_to_parties": replies, "parties_to_dealer": to_dealer,
        "dealer_received": [r["dealer_received"] for r in per_party],
        "dealer_bytes": replies + to_dealer, "total_bytes": sum(sent) + replies + to_dealer,
        "wall_s": max(r["wall_s"] for r in per_party),
        "interface": [r.get("interface") for r in per_party],
        "tcp_sent": [r["bytes_sent"] for r in per_party], "tcp_received": [r["bytes_received"] for r in per_party],
    }


def summarize(model: str, parties: int, noise: str, sigma: float, link_delay_ms: float,
              values: list[list[dict[str, Any]]], dealer_report: dict[str, Any] | None, wall_s: float,
              where: str = "local processes, loopback", provider: str = providers.DEFAULT) -> CostRun:
    """Turn the parties' per-layer records (each party's bytes with its own link to the dealer's apart) and the
    dealer's per-request reply bytes into a :class:`CostRun`."""
    reply_bytes = (dealer_report or {}).get("request_bytes", [])
    measured_s, rows = 0.0, []
    for index, (name, shape) in enumerate(MODELS[model]):
        per_party = [party_values[index] for party_values in values]
        row = {"layer": name, "shape": list(shape), "elements": math.prod(shape),
               "noise_stats": per_party[0]["noise_stats"]}
        for section in SECTIONS:
            row[section] = _section_summary([p[section] for p in per_party], reply_bytes)
            measured_s += row[section]["wall_s"]
        row["plaintext_s"] = plaintext_seconds(parties, row["elements"], sigma)
        rows.append(row)
    return CostRun(model=model, parties=parties, noise=noise, sigma=sigma, link_delay_ms=link_delay_ms,
                   layers=rows, setup_s=max(0.0, wall_s - measured_s), where=where, provider=provider)


def check_choice(model: str, noise: str) -> None:
    choose(model, "model", sorted(MODELS))
    choose(noise, "noise", in_mpc_modes())


def run_cost(model: str, parties: int, noise: str = "dgauss", *, sigma: float = 1.0, link_delay_ms: float = 0.0,
             timeout_s: float = 1800.0, progress: Callable[[int, int], None] | None = None,
             provider: str = providers.DEFAULT) -> CostRun:
    """Run the per-layer cost measurement on ``parties`` local processes (plus the dealer, with that provider;
    under ``honest-majority`` the generators' material messages count as party bytes)."""
    from mpcdp.runtime.harness import run_job

    check_choice(model, noise)
    config = MpcConfig(parties=parties, timeout_s=timeout_s, link_delay_ms=link_delay_ms, provider=provider)
    result = run_job(cost_party, config, args=(MODELS[model], noise, sigma), job=cost_job(model, noise, sigma),
                     progress=progress)
    return summarize(model, parties, noise, sigma, link_delay_ms, result.values, result.dealer, result.wall_s,
                     provider=provider)


def cost_job(model: str, noise: str, sigma: float) -> dict[str, Any]:
    """The public job description the parties compare in the handshake."""
    return {"fn": "cost", "model": model, "noise": noise, "sigma": sigma}
