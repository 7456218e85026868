"""The utility bands' statistics on fresh randomness, drawn many times (flake53; the numbers in tests/conftest.py's
header and in each test's docstring): `PYTHONPATH=. nice -n 19 .venv/bin/python tests/utility_draws.py CASE N
[--batches protocol] [--band 'test_error<0.2'] [--out FILE]`, from the repository root.

Why the simulated backend: the in-MPC sampler's output distribution equals the plaintext one exactly
(mpcdp/noise/discrete_gaussian.py), so a secure run's model is drawn by the simulated backend with fresh noise (the
OS CSPRNG, no ``noise_seed``) and, as each party of a secure run draws its batches, a fresh secret batch key per
run (the default; ``--batches protocol``: the protocol's seed, as the simulated backend and ``reproducible`` runs
take them). What differs from the secure run: the sum is rounded once rather than per party (at most m/2 units of
2^-precision per coordinate), far below the bands' margins.

The report: mean, sd, extremes, and the band's false-failure probability per run under three fits — normal and
lognormal (a heavier right tail), each with the sd at its upper 99.9% confidence bound, and an exponential tail
over the top 10% of the draws (peaks over threshold: its scale as fitted, then at its upper 99.9% bound; the
generalized Pareto shape fitted beside it says whether the tail is lighter, shape < 0, or as heavy, shape ≈ 0). A test error on 114 test rows takes a few values only: there the
exponential tail is meaningless (shapes near -1.5) and the lognormal is quoted."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import math
import os
import secrets
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
torch.set_num_threads(1)
SMOKE, QUICKSTART, OWN_MLP = ("protocols/smoke-breast-cancer.toml", "protocols/quickstart-a9a.toml",
                              "protocols/own-data-mlp.toml")


def _keyed(runner, fresh: bool):
    """``runner`` with a fresh secret batch key (a secure party's batches), or as it is (the protocol's seed)."""
    return functools.partial(runner, batch_key=secrets.randbits(128)) if fresh else runner


def _protocol_text(case: str) -> str:
    """The protocol file a plan case trains, as its test writes it."""
    import test_registry

    if case == "distributed":
        return open(SMOKE).read().replace("[mpc]", '[noise]\nmode = "distributed"\ncolluders = 1\n\n[mpc]')
    if case == "toy-momentum":
        return test_registry.PROTOCOL.format(algorithm="momentum-gd", training=test_registry.MOMENTUM, noise="")
    if case == "toy-every":
        return test_registry.PROTOCOL.format(algorithm="dp-gd", noise='[noise]\nmode = "every-party"',
                                             training="steps = 6\nc1 = 1.0\nlearning_rate = 2.0\nseed = 0")
    return open({"smoke": SMOKE, "quickstart": QUICKSTART, "compare-smoke": SMOKE}[case]).read()


def plan_draws(case: str, fresh: bool, seed: int | None = None):
    """One draw of a `mpcdp train` run's held-out metrics (the report's output rule and the last iterate):
    the data, split and calibration once, then training with fresh noise per call."""
    import toy_algorithm  # noqa: F401 - registers the toy records
    from mpcdp.jobs import train
    from mpcdp.learning.backends import train_simulated
    from mpcdp.learning.dpsrm import Shard

    path = os.path.join(tempfile.mkdtemp(), f"{case}.toml")
    open(path, "w").write(_protocol_text(case))
    plan = train.plan_from(path, backend="simulated", seed=seed)
    model = plan.trained_model
    data, x, y, parts = train.training_split(plan)
    x_test, y_test = train._test_rows(plan, data)
    dim = model.dimension(x)
    shards = [Shard(j, x[idx], y[idx]) for j, idx in enumerate(parts)]
    noise = train.plan_noise(plan, tuple(len(p) for p in parts), dim)
    runner = functools.partial(plan.record.runner, model=model)

    def draw() -> dict:
        result = train_simulated(shards, noise.params, noise.levels, dim=dim, runner=_keyed(runner, fresh))
        row = {}
        for suffix, theta in (("", result.output(plan.output)), ("_last", result.output("last"))):
            row["test_error" + suffix] = model.error_rate(theta, x_test, y_test)
            row["test_loss" + suffix] = model.loss(theta, x_test, y_test).item()
        return row
    return draw


def compare_draws(fresh: bool):
    """`mpcdp compare smoke --seeds 2`'s summary: the mean over seeds 0 and 1 of each backend's last-iterate
    test loss (both backends take the seeds' batches; the noise is fresh)."""
    first, second = plan_draws("compare-smoke", fresh, 0), plan_draws("compare-smoke", fresh, 1)
    return lambda: {"test_loss_last": (first()["test_loss_last"] + second()["test_loss_last"]) / 2}


class _Mlp(torch.nn.Module):
    """The tests' user module: Linear, Tanh, Linear to two classes."""

    def __init__(self, features: int, hidden: int):
        super().__init__()
        self.layers = torch.nn.Sequential(torch.nn.Linear(features, hidden), torch.nn.Tanh(),
                                          torch.nn.Linear(hidden, 2))

    def forward(self, x):
        return self.layers(x)


def _csv(folder: str, name: str, x, y, label: str, columns=None) -> str:
    import pandas as pd

    frame = pd.DataFrame(x, columns=columns or [f"f{i}" for i in range(x.shape[1])])
    frame[label] = y
    path = os.path.join(folder, name)
    frame.to_csv(path, index=False)
    return path


def _own_files(case: str, folder: str):
    """(train files, test files, label, protocol, module or None) as the case's test writes them."""
    if case in ("own-dry", "own-compare"):  # tests/test_own_data_dry_run.py's csvs
        rng, files, tests = np.random.default_rng(3), [], []
        for j, n in enumerate((300, 500, 400)):
            for names, count in ((files, n), (tests, 60 + 20 * j)):
                x = rng.normal(size=(count, 6))
                y = (x[:, 0] + 0.3 * rng.normal(size=count) > 0).astype(int)
                labels = 2 * y - 1 if case == "own-compare" else y  # compare's test writes ±1 labels
                names.append(_csv(folder, f"{case}{j}-{'train' if names is files else 'test'}.csv", x, labels, "label"))
        return files, tests, "label", OWN_MLP, None if case == "own-compare" else (_Mlp, 6, 8, 0)
    if case == "own-user":  # tests/test_user_module.py's own_files; the module under torch's default seed
        rng, files, tests = np.random.default_rng(5), [], []
        for j in range(3):
            for kind, rows, out in (("train", 400, files), ("test", 100, tests)):
                x = rng.normal(size=(rows, 3))
                out.append(_csv(folder, f"{kind}{j}.csv", x, (x[:, 0] + 0.5 * x[:, 1] > 0).astype(int), "y",
                                ["a", "b", "c"]))
        return files, tests, "y", OWN_MLP, (_Mlp, 3, 6, torch.initial_seed())
    return _a9a_files(folder)


def _a9a_files(folder: str):
    """tests/test_own_data.py's users-module run: 2,000 a9a rows per party, 1,000 held out, a tenth of a pass."""
    from mpcdp.data.registry import load
    from mpcdp.data.split import split_indices
    from mpcdp.jobs.train import plan_from

    plan = plan_from(QUICKSTART, backend="mpc")
    data = load(plan.dataset)
    parts = split_indices(len(data.y_train), plan.parties, ratio=plan.size_ratio, seed=plan.params.seed)
    held = np.split(np.arange(len(data.y_test)), [3000, 8000])
    columns = [f"a{i}" for i in range(data.x_train.shape[1])]
    files = [_csv(folder, f"p{j}.csv", data.x_train[i[:2000]], (data.y_train[i[:2000]] > 0).astype(int),
                  "income_over_50k", columns) for j, i in enumerate(parts)]
    tests = [_csv(folder, f"t{j}.csv", data.x_test[t[:1000]], (data.y_test[t[:1000]] > 0).astype(int),
                  "income_over_50k", columns) for j, t in enumerate(held)]
    short = os.path.join(folder, "quickstart-short.toml")
    open(short, "w").write(open(QUICKSTART).read().replace("passes = 0.25", "passes = 0.1"))
    return files, tests, "income_over_50k", short, (_Mlp, 123, 16, 0)


def own_draws(case: str, fresh: bool):
    """One draw of an own-data run's held-out mean error (and party 0's held-out loss, first and last iterate):
    the dry run (mpcdp.jobs.own_data_simulated), its local checks and calibration once."""
    from mpcdp.jobs import own_data_simulated as dry
    from mpcdp.jobs.own_data import ModuleRecipe, PartySource
    from mpcdp.jobs.train import plan_from

    files, tests, label, protocol, module = _own_files(case, tempfile.mkdtemp())
    plan = dataclasses.replace(plan_from(protocol, backend="simulated", parties=3), eval_every=1)
    sources = [PartySource(a, b, label=label) for a, b in zip(files, tests)]
    once: dict = {}
    for name in ("plan_noise", "_party_local", "train_simulated"):  # this case's patches over the originals
        _ORIGINALS.setdefault(name, getattr(dry, name))
    for name in ("plan_noise", "_party_local"):  # the same every draw: computed once
        setattr(dry, name, functools.partial(_memo, once, name, _ORIGINALS[name]))
    trained = _ORIGINALS["train_simulated"]
    dry.train_simulated = lambda *a, runner, **k: trained(*a, runner=_keyed(runner, fresh), **k)

    def draw() -> dict:
        model = plan.trained_model
        if module is not None:
            kind, features, hidden, seed = module
            torch.manual_seed(seed)
            model = ModuleRecipe(kind(features, hidden))
        first = dry.simulate_own_data(plan, sources, model)[0]
        own = first["curve"]["own"]["test_loss"]
        return {"test_error": first["held_out"]["mean"]["test_error"], "first": own[0], "last": own[-1]}
    return draw


_ORIGINALS: dict = {}  # mpcdp.jobs.own_data_simulated's functions before own_draws patches them


def _memo(store: dict, name: str, original, *args, **kwargs):
    """``original(*args)`` computed once per key (party j's local checks; the plan's noise) in ``store``."""
    key = (name, args[0]) if name == "_party_local" else name
    if key not in store:
        store[key] = original(*args, **kwargs)
    return store[key]


def _shards(name: str, parties: int):
    from mpcdp.data.registry import load
    from mpcdp.data.split import split_indices
    from mpcdp.learning.dpsrm import Shard

    data = load(name)
    x, y = torch.from_numpy(data.x_train).double(), torch.from_numpy(data.y_train).double()
    shards = [Shard(j, x[i], y[i]) for j, i in enumerate(split_indices(len(y), parties, seed=0))]
    return shards, torch.from_numpy(data.x_test).double(), torch.from_numpy(data.y_test).double()


def low_draws(case: str, fresh: bool):
    """The in-process tests' runs (test_dpsrm, test_baselines, test_cnn) with their own parameters."""
    from mpcdp.learning.backends import NoiseLevels, train_simulated
    from mpcdp.learning.baselines import SgdParameters, run_sgd
    from mpcdp.learning.dpsrm import SrmParameters, run_srm
    from mpcdp.learning.logreg import loss

    if case == "dpsrm":  # a short secure run beats the untrained model
        shards, x_test, y_test = _shards("a9a", 3)
        params = SrmParameters(steps=15, batch=100, batch0=200, c2=0.5, gamma=0.5, zeta=0.5, seed=1)
        noise, untrained = NoiseLevels.for_sigmas(0.02, 0.01, dim=123), math.log(2)
        return lambda: {"margin": untrained - loss(train_simulated(
            shards, params, noise, dim=123, runner=_keyed(run_srm, fresh)).theta_last, x_test, y_test).item()}
    if case in ("sgd", "sgd-full"):  # private baselines learn in simulation (seeded batches)
        shards, x_test, y_test = _shards("breast-cancer", 3)
        params = SgdParameters(steps=30, batch=10, learning_rate=1.0, full_batch=case == "sgd-full",
                               n_total=sum(len(s.y) for s in shards), seed=2)
        noise = NoiseLevels.for_sigmas(0.05, 0.05, dim=30)
        return lambda: {"loss": loss(train_simulated(shards, params, noise, dim=30, runner=run_sgd).theta_last,
                                     x_test, y_test).item()}
    return _agd_or_cnn(case)


def _agd_or_cnn(case: str):
    from mpcdp.learning.backends import NoiseLevels, train_simulated
    from mpcdp.learning.dpsrm import SrmParameters, run_srm
    from mpcdp.learning.logreg import loss

    if case == "agd":  # DP-AGD spends at most its budget and learns (CSPRNG noise and selections)
        from mpcdp.accounting.certify import zcdp_budget_for
        from mpcdp.learning.dpagd import AgdParameters, run_dpagd

        shards, x_test, y_test = _shards("breast-cancer", 3)
        rho, _ = zcdp_budget_for(3.0, 1e-3)

        def agd() -> dict:
            result = run_dpagd(shards, AgdParameters(rho_total=rho, initial_steps=20, loss_clip=0.05), dim=30)
            return {"loss": loss(result.theta_last, x_test, y_test).item(), "spent": result.rho_spent / rho,
                    "iterates": len(result.iterates), "growths": len(result.released) - len(result.iterates) + 1}
        return agd
    from mpcdp.learning.paper_networks import MNIST_CNN  # a few secure steps reduce the CNN loss
    from test_cnn import _mnist_shards

    shards, x, y = _mnist_shards(3, 64)
    params = SrmParameters(steps=4, batch=16, batch0=32, c1=1.0, c2=0.5, gamma=0.5, lipschitz=0.5, zeta=1.0)
    levels, before = NoiseLevels.for_sigmas(1e-3, 1e-3, dim=MNIST_CNN.dim), MNIST_CNN.loss(MNIST_CNN.init(0), x, y)
    runner = functools.partial(run_srm, model=MNIST_CNN)  # reproducible: the protocol's batches
    return lambda: {"fall": (before - MNIST_CNN.loss(train_simulated(
        shards, params, levels, dim=MNIST_CNN.dim, runner=runner).theta_last, x, y)).item()}


def band_report(values: np.ndarray, band: str) -> str:
    """The draws' summary and the band's false-failure probability per run under the three fits."""
    from scipy import stats

    side, level = band[0], float(band[1:])
    y, lv = (values, level) if side == "<" else (-values, -level)
    n, sd_up = y.size, y.std(ddof=1) * math.sqrt((y.size - 1) / stats.chi2.ppf(1e-3, y.size - 1))
    normal = stats.norm.sf((lv - y.mean()) / sd_up)
    text = (f"n={n} mean={values.mean():.4f} sd={values.std(ddof=1):.4f} min={values.min():.4f} "
            f"max={values.max():.4f} beyond the band: {int(np.sum(y >= lv))} | normal {normal:.1e}")
    if values.min() > 0 and side == "<":
        logs = np.log(values)
        logs_up = logs.std(ddof=1) * sd_up / y.std(ddof=1)  # the same confidence factor
        text += f" | lognormal {stats.norm.sf((math.log(level) - logs.mean()) / logs_up):.1e}"
    u = np.quantile(y, 0.9)
    excess = y[y > u] - u
    scale_up = 2 * excess.sum() / stats.chi2.ppf(1e-3, 2 * excess.size)
    shape = stats.genpareto.fit(excess, floc=0)[0]
    point, bound = (excess.size / n * math.exp(-(lv - u) / scale) for scale in (excess.mean(), scale_up))
    return text + f" | exponential tail {point:.1e}, {bound:.1e} at the bound (shape {shape:.2f})"


PLAN_CASES = ("smoke", "distributed", "toy-momentum", "toy-every", "quickstart")
OWN_CASES = ("own-dry", "own-user", "own-a9a", "own-compare")
LOW_CASES = ("dpsrm", "sgd", "sgd-full", "agd", "cnn")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case", choices=(*PLAN_CASES, "compare-smoke", *OWN_CASES, *LOW_CASES))
    parser.add_argument("n", type=int)
    parser.add_argument("--batches", choices=("fresh", "protocol"), default="fresh")
    parser.add_argument("--band", action="append", default=[], help="KEY<LEVEL or KEY>LEVEL, e.g. test_error<0.2")
    parser.add_argument("--out", help="append every draw to this JSON-lines file")
    ns = parser.parse_args(argv)
    fresh = ns.batches == "fresh"
    os.environ.setdefault("MPCDP_LEDGER", tempfile.mkdtemp())
    draw = (plan_draws(ns.case, fresh) if ns.case in PLAN_CASES else compare_draws(fresh)
            if ns.case == "compare-smoke" else own_draws(ns.case, fresh) if ns.case in OWN_CASES
            else low_draws(ns.case, fresh))
    rows = []
    for _ in range(ns.n):
        rows.append(draw())
        if ns.out:
            with open(ns.out, "a") as out:
                out.write(json.dumps(rows[-1]) + "\n")
    for band in ns.band:
        key, side = (band.split("<", 1), "<") if "<" in band else (band.split(">", 1), ">")
        if key[0] not in rows[0]:
            continue
        print(ns.case, band, band_report(np.array([r[key[0]] for r in rows], dtype=float), side + key[1]))


if __name__ == "__main__":
    main(sys.argv[1:])
