"""`mpcdp decentralized PROTOCOL`: paper 004's decentralized DP without-replacement SGD as a run.

Methods (paper 004 §VI): ``algorithm1`` (fully collaborative: the global model goes round the nodes, every turn a
noisy update), ``algorithm2`` (Deep-Q: each node's controller picks a local or a global update), ``dpsgd5`` (the
baseline: a public random walk, each update (ε/5, δ/5)-DP, five passes), ``noiseless`` (Algorithm 1 without noise).

Backends: ``simulated`` runs every node in this process. ``processes`` runs every node as its own OS process (the
party runtime: spawned processes, a TCP mesh); the global model is handed from node to node over the mesh — the
only thing a node ever sends — in the order every node derives from public facts (the node sizes and, for DP-SGD-5,
the walk's public seed). Both backends draw every node's batches and noise from that node's own generator, so the
same seed gives the same models (tested).

Protocol file (TOML): ``dataset`` ('mnist-5k' or 'fashion-mnist'), ``[run]`` nodes, batch_size, eta, lam, budget
('model' or 'per-classifier', see :mod:`mpcdp.learning.decentralized`), calibration ('paper': eq. (4) per
update, basic composition; 'accountant': the least noise dp-accounting certifies), epsilon, delta (default 1/n², §VI), visits,
method(s), seed, backend; ``[deepq]`` the controller's settings (:class:`~mpcdp.learning.deepq.DeepQSettings`);
``[sweep]`` epsilons, runs, budgets (see :mod:`mpcdp.jobs.decentralized_sweep`); ``[mpc]`` the runtime's settings.

Security model: honest-but-curious nodes; the global model after every update is public (the paper's assumption).
Each node's data is protected by the Gaussian noise it adds itself; certificates come from dp-accounting.
Randomness: the simulation and ``reproducible`` node processes use numpy PCG64 generators seeded from the
protocol's seed — reproducible, not a CSPRNG; otherwise each node process keys its batch order and noise by the
OS CSPRNG (ChaCha20 streams, :mod:`mpcdp.randomness`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from typing import Any, Sequence

import numpy as np

from mpcdp.accounting.released import ACCOUNTANT
from mpcdp.config import MpcSettings, resolve_mpc
from mpcdp.errors import ConfigError
from mpcdp.execution import PROCESSES, SIMULATED, backend_for
from mpcdp.validation import check_choice, check_integer, check_number, read_protocol
from mpcdp.learning import decentralized as dec, mechanisms
from mpcdp.learning.deepq import DeepQSettings

__all__ = ["METHODS", "BACKENDS", "DecentralizedPlan", "plan_from", "features", "run_method", "turn_order",
           "node_party"]

METHODS = ("algorithm1", "algorithm2", "dpsgd5", "noiseless")
BACKENDS = (SIMULATED, PROCESSES)
DATASETS = ("mnist-5k", "fashion-mnist")
# The mechanism every node's release uses (the exact discrete Gaussian on its grid): its record's id stamps reports.
NOISE = "dgauss"
_RUN_FIELDS = {"nodes", "batch_size", "eta", "lam", "budget", "epsilon", "delta", "visits", "methods", "seed",
               "backend", "per_node", "calibration"}


@dataclasses.dataclass(frozen=True)
class DecentralizedPlan:
    name: str
    dataset: str
    nodes: int
    batch_size: int
    eta: float
    lam: float
    budget: str
    epsilon: float
    delta: float | None
    visits: int
    methods: tuple[str, ...]
    seed: int
    backend: str
    per_node: int | None = None
    calibration: str = "paper"
    deepq: dict = dataclasses.field(default_factory=dict)
    mpc: MpcSettings = dataclasses.field(default_factory=MpcSettings)  # resolved once (resolve_mpc)
    sweep: dict = dataclasses.field(default_factory=dict)

    def settings(self) -> DeepQSettings:
        return DeepQSettings(**self.deepq)

    @property
    def parties(self) -> int:
        """The nodes, one party each (the processes backend)."""
        return self.nodes


def plan_from(path: str, **overrides: Any) -> DecentralizedPlan:
    """Read and check a protocol file; keyword arguments (None = keep) override [run] fields."""
    protocol = read_protocol(path)
    settings = resolve_mpc(protocol.get("mpc", {}), f" in {path!r}")  # a misspelt setting, before anything else
    settings.refuse_uncovered("paper 004's decentralized training")
    run = dict(protocol.get("run", {}))
    unknown = sorted(set(run) - _RUN_FIELDS)
    if unknown:
        raise ConfigError(f"[run] {', '.join(f'`{k}`' for k in unknown)} in {path!r} is not a parameter of paper "
                          f"004's runs; they take {sorted(_RUN_FIELDS)}.")
    run.update({k: v for k, v in overrides.items() if v is not None})
    dataset = check_choice(protocol.get("dataset"), "dataset", DATASETS)
    methods = run.get("methods", list(METHODS))
    methods = (methods,) if isinstance(methods, str) else tuple(methods)
    for m in methods:
        check_choice(m, "methods", METHODS, note="each entry")
    backend = backend_for(run.get("backend", SIMULATED), BACKENDS, "`mpcdp decentralized`")
    nodes = check_integer(run.get("nodes", 10), "nodes")
    if backend == "processes" and nodes < 2:
        raise ConfigError(f"the processes backend needs `nodes` >= 2. Found {nodes}.")
    budget = check_choice(run.get("budget", "model"), "budget", ("model", "per-classifier"))
    delta = run.get("delta")
    if delta is not None:
        check_number(delta, "delta", low=0, high=1, note="leave it out for 1/n²")
    per_node = run.get("per_node")
    calibration = check_choice(run.get("calibration", "paper"), "calibration", dec.CALIBRATIONS)
    plan = DecentralizedPlan(
        name=protocol.get("name", path), dataset=dataset, nodes=nodes,
        batch_size=check_integer(run.get("batch_size", 50), "batch_size"),
        eta=check_number(run.get("eta", 0.1), "eta", low=0),
        lam=check_number(run.get("lam", 0.0), "lam", low=0, low_open=False), budget=budget,
        epsilon=check_number(run.get("epsilon", 1.0), "epsilon", low=0), delta=delta,
        visits=check_integer(run.get("visits", dec.DEFAULT_VISITS), "visits"), methods=methods,
        seed=check_integer(run.get("seed", 0), "seed", minimum=0), backend=backend,
        per_node=None if per_node is None else check_integer(per_node, "per_node"), calibration=calibration, deepq=dict(protocol.get("deepq", {})),
        mpc=settings, sweep=dict(protocol.get("sweep", {})))
    plan.settings()  # checks [deepq]
    return plan


@functools.lru_cache(maxsize=4)
def features(dataset: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, str]:
    """(x_train, y_train, x_test, y_test, name): §VI's PCA-50 unit-norm features (PCA fitted on the test images)."""
    from mpcdp.data.registry import load

    data = load(dataset)
    x_train, x_test = dec.prepare_features(data.x_train, data.x_test)
    return x_train, np.asarray(data.y_train), x_test, np.asarray(data.y_test), data.name


def _delta(plan: DecentralizedPlan, n: int) -> float:
    return plan.delta if plan.delta is not None else 1.0 / n ** 2


def _nodes(plan: DecentralizedPlan, x, y, seed: int, batch_size: int | None = None) -> list[dec.NodeState]:
    return dec.make_nodes(x, y, num_nodes=plan.nodes, batch_size=batch_size or plan.batch_size,
                          per_node=plan.per_node, seed=seed)


def _deepq_seeds(seed: int, nodes: int) -> list[int]:
    return [int(s) for s in np.random.SeedSequence([seed, 4]).generate_state(nodes)]


def _walk_rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([seed, 5]))


def turn_order(method: str, batches_per_pass: Sequence[int], *, visits: int, seed: int) -> list[int]:
    """The public sequence of nodes that hold the global model: round robin over the nodes that still have
    mini-batches (Algorithms 1–2), or DP-SGD-5's walk from the public seed."""
    if method == "dpsgd5":
        return dec.walk_schedule(batches_per_pass, visits=visits, rng=_walk_rng(seed))
    left, order = list(batches_per_pass), []
    while any(left):
        for m, k in enumerate(left):
            if k > 0:
                order.append(m)
                left[m] -= 1
    return order


def _method_hyper(plan: DecentralizedPlan, method: str, epsilon: float, delta: float, nodes: list[dec.NodeState],
                  classes: int) -> tuple[float, Any]:
    """(grad noise std, certificate) of ``method`` (the certificate covers the sampler's residual over every
    noise value the run's nodes open)."""
    if method == "noiseless":
        return 0.0, None
    batch_size = nodes[0].batch_size
    uses = plan.visits if method == "dpsgd5" else 1
    coordinates = dec.run_coordinates(nodes, visits=uses, classes=classes)
    if method == "algorithm2":
        return dec.algorithm2_noise(epsilon, delta, eta=plan.eta, lam=plan.lam, radius=None, batch_size=batch_size,
                                    classes=classes, budget=plan.budget, calibration=plan.calibration,
                                    coordinates=coordinates)
    return dec.noise_and_certificate(epsilon, delta, uses=uses, lipschitz=dec.lipschitz_constant(plan.lam),
                                     batch_size=batch_size, classes=classes, budget=plan.budget,
                                     calibration=plan.calibration, coordinates=coordinates)


def _eta(plan: DecentralizedPlan, method: str, t: int) -> float:
    return 1.0 / math.sqrt(t) if method == "dpsgd5" else plan.eta


def run_method(plan: DecentralizedPlan, method: str, *, epsilon: float | None = None, seed: int | None = None,
               backend: str | None = None, batch_size: int | None = None) -> dict[str, Any]:
    """Train with one method; report test accuracy, the certificate and the run's shape."""
    check_choice(method, "method", METHODS)
    epsilon = plan.epsilon if epsilon is None else epsilon
    seed = plan.seed if seed is None else seed
    backend = backend_for(backend or plan.backend, BACKENDS, "`mpcdp decentralized`")
    batch_size = batch_size or plan.batch_size
    x_train, y_train, x_test, y_test, data_name = features(plan.dataset)
    classes = int(max(y_train.max(), y_test.max())) + 1
    delta = _delta(plan, len(x_train))
    nodes = _nodes(plan, x_train, y_train, seed, batch_size)
    std, cert = _method_hyper(plan, method, epsilon, delta, nodes, classes)
    start = time.perf_counter()
    if backend == "simulated":
        out = _simulate(plan, method, nodes, classes, seed, epsilon, delta)
    else:
        out = _in_processes(plan, method, nodes, std, None if cert is None else cert.noise_multiplier, classes, seed)
    report = {
        "protocol": plan.name, "dataset": data_name, "method": method, "backend": backend, "seed": seed,
        "nodes": plan.nodes, "per_node": nodes[0].size, "batch_size": batch_size, "budget": plan.budget,
        "calibration": plan.calibration,
        "epsilon": None if method == "noiseless" else epsilon, "delta": delta, "grad_noise_std": std,
        **_epsilon_fields(method, cert),
        **({} if cert is None else {"epsilon_accountant": cert.epsilon, "epsilon_residual": cert.epsilon_residual,
                                    "delta_gaussian": cert.delta, "delta_truncation": cert.delta_truncation,
                                    "delta_residual": cert.delta_residual, "noise_coordinates": cert.noise_coordinates,
                                    "mechanism": mechanisms.lookup(NOISE).id, "accountant": ACCOUNTANT}),
        "updates": out["updates"], "accuracy": dec.accuracy(out["w"], x_test, y_test),
        "wall_s": round(time.perf_counter() - start, 4), "w": out["w"],
    }
    if method == "algorithm2":
        local = [dec.accuracy(w, x_test, y_test) for w in out["local_models"]]
        report.update(accuracy_global=report["accuracy"], accuracy_local=local,
                      accuracy=float(np.mean(local)), global_updates=out["global_updates"],
                      global_fraction=float(sum(out["global_updates"]) / out["updates"]),
                      local_models=out["local_models"])
    if "bytes_per_node" in out:
        report["bytes_per_node"] = out["bytes_per_node"]
    return report


DECISIONS_NOT_COVERED = (
    "Algorithm 2's local/global decisions are made by each node's Deep-Q controller from its private losses and are "
    "visible to every node (who touched the global model at each turn); no mechanism bounds what they reveal, so "
    "the ε of the gradient releases alone is printed, as epsilon_gradient_releases_only, and nothing is certified")


def _epsilon_fields(method: str, cert) -> dict[str, Any]:
    """The certificate's ε fields of a report: ``epsilon_certified`` (and ``epsilon_all_classes``) where the
    certificate covers everything the run reveals; for Algorithm 2, whose decisions it does not cover, the same
    numbers under names that say they exclude the decisions, and the reason."""
    if cert is None:
        return {"epsilon_certified": None, "epsilon_all_classes": None}
    released, all_classes = cert.epsilon_released, cert.epsilon_all_classes + cert.epsilon_residual
    if method == "algorithm2":
        return {"epsilon_not_certified_because": DECISIONS_NOT_COVERED,
                "epsilon_gradient_releases_only": released,
                "epsilon_all_classes_gradient_releases_only": all_classes}
    return {"epsilon_certified": released, "epsilon_all_classes": all_classes}


def _simulate(plan, method, nodes, classes, seed, epsilon, delta) -> dict[str, Any]:
    common = dict(delta=delta, classes=classes, lam=plan.lam, budget=plan.budget, calibration=plan.calibration)
    eps = None if method == "noiseless" else epsilon
    if method == "algorithm2":
        run = dec.run_algorithm2(nodes, epsilon=eps, eta=plan.eta, settings=plan.settings(),
                                 seeds=_deepq_seeds(seed, len(nodes)), **common)
        return {"w": run.w, "updates": run.updates, "local_models": run.local_models,
                "global_updates": run.global_updates}
    if method == "dpsgd5":
        run = dec.run_dpsgd5(nodes, epsilon=eps, visits=plan.visits, rng=_walk_rng(seed), **common)
    else:
        run = dec.run_algorithm1(nodes, epsilon=eps, eta=plan.eta, **common)
    return {"w": run.w, "updates": run.updates}


def _in_processes(plan, method, nodes, std, noise_multiplier, classes, seed) -> dict[str, Any]:
    from mpcdp.jobs.secure_run import Job, secure_run

    seeds = _deepq_seeds(seed, len(nodes))
    sizes = [n.batches_per_pass for n in nodes]
    job = Job("decentralized", plan_fields=dataclasses.asdict(plan),
              public={"method": method, "seed": seed, "batches_per_pass": sizes},
              reproducible_draws="every node's batch order, noise and Deep-Q exploration")
    result = secure_run(plan, node_party,
                        [(m, node, plan, method, std, noise_multiplier, classes, seed, seeds[m], sizes)
                         for m, node in enumerate(nodes)], job=job)
    final = [r["w"] for r in result.values if r["w"] is not None]
    out = {"w": final[0], "updates": result.values[0]["updates"],
           "bytes_per_node": max(r["bytes_sent"] for r in result.values)}
    if method == "algorithm2":
        out["local_models"] = [r["w_local"] for r in result.values]
        out["global_updates"] = [r["global_updates"] for r in result.values]
    return out


def node_party(ctx, me: int, node: dec.NodeState, plan: DecentralizedPlan, method: str, std: float,
               noise_multiplier: float | None, classes: int, seed: int, deepq_seed: int,
               batches_per_pass: list[int]) -> dict[str, Any]:
    """One node as a party process: wait for the global model, update it, hand it to the next holder.

    The node's batch order and gradient noise come from ChaCha20 streams under keys from the OS CSPRNG, its
    Deep-Q exploration from a generator seeded by it, unless the run is ``reproducible`` (then from the protocol's seed, as in the simulation)."""
    if not ctx.config.reproducible:
        from mpcdp.randomness import KeyedStream, batch_key, secure_key

        node.rng = KeyedStream(secure_key(), b"mpcdp/node-batches")
        node.noise_source = KeyedStream(secure_key(), b"mpcdp/node-noise")
        deepq_seed = batch_key()
    visits = plan.visits if method == "dpsgd5" else 1
    node.max_passes = visits
    order = turn_order(method, batches_per_pass, visits=visits, seed=seed)
    shape = (node.x.shape[1], classes)
    w = np.zeros(shape)
    dq = None
    if method == "algorithm2":
        dq = dec.make_deepq_nodes([node], classes=classes, settings=plan.settings(), seeds=[deepq_seed])[0]
    mine = sum(1 for m in order if m == me)
    done = 0
    for t, m in enumerate(order, start=1):
        if m != me:
            continue
        previous = order[t - 2] if t >= 2 else me
        if previous != me:
            w = ctx.receive_public(previous, shape, label=f"global model [{t - 1}]").numpy()
        if dq is not None:
            w = dec.algorithm2_turn(w, dq, eta=plan.eta, grad_noise_std=std, lam=plan.lam,
                                    noise_multiplier=noise_multiplier)
        else:
            w = dec.node_update(w, node, eta=_eta(plan, method, t), grad_noise_std=std, lam=plan.lam,
                                noise_multiplier=noise_multiplier)
        if t < len(order) and order[t] != me:
            import torch

            ctx.send_public(order[t], torch.from_numpy(w), label=f"global model [{t}]")
        done += 1
        ctx.progress(done, mine)
    last = order[-1] == me
    return {"w": w if last else None, "updates": len(order), "bytes_sent": ctx.wire.bytes_sent,
            "w_local": None if dq is None else dq.w_local, "global_updates": None if dq is None else dq.global_updates}
