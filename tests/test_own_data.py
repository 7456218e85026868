"""Training on files each party reads itself: the same model as the shipped-data path given the same shards,
held-out metrics per party and their secure weighted mean, and a mismatched file refused on every party."""

import dataclasses
import functools
import re

import numpy as np
import pandas as pd
import pytest
import torch

from mpcdp.config import MpcConfig
from mpcdp.data.registry import load
from mpcdp.data.split import split_indices
from mpcdp.errors import PartyFailed, PartyRefused
from mpcdp.jobs.own_data import PartySource, run_own_data
from mpcdp.jobs.train import config_for, plan_from, plan_noise
from mpcdp.learning.backends import NoiseLevels, mpc_party
from mpcdp.learning.dpsrm import Shard
from mpcdp.learning.logreg import LOGISTIC
from mpcdp.runtime.harness import run_parties

import forked

PROTOCOL = "protocols/quickstart-a9a.toml"


def _write(path, x, y, columns):
    frame = pd.DataFrame(x, columns=columns)
    frame["income_over_50k"] = y
    frame.to_csv(path, index=False)
    return str(path)


@pytest.fixture(scope="module")
def party_files(tmp_path_factory):
    """a9a's training rows split as the shipped path splits them, one CSV per party, and a third of the test
    rows as each party's held-out CSV."""
    folder = tmp_path_factory.mktemp("parties")
    plan = plan_from(PROTOCOL, backend="mpc")
    data = load(plan.dataset)
    parts = split_indices(len(data.y_train), plan.parties, ratio=plan.size_ratio, seed=plan.params.seed)
    tests = np.split(np.arange(len(data.y_test)), [3000, 8000])  # uneven: the mean must weigh by count
    columns = [f"a{i}" for i in range(data.x_train.shape[1])]
    sources = [PartySource(_write(folder / f"party{j}.csv", data.x_train[idx], data.y_train[idx], columns),
                           _write(folder / f"party{j}-test.csv", data.x_test[t], data.y_test[t], columns),
                           label="income_over_50k")
               for j, (idx, t) in enumerate(zip(parts, tests))]
    return plan, data, parts, tests, sources


def test_own_files_give_the_shipped_paths_model_bit_for_bit_without_noise(party_files, capfd):
    plan, data, parts, _, sources = party_files
    plan = dataclasses.replace(plan, output="last").with_mpc(reproducible=True)
    own = run_own_data(plan, sources, LOGISTIC, noise=False)
    assert "WARNING: reproducible mode: every party's mini-batches" in capfd.readouterr().err  # honoured: warned
    x, y = torch.from_numpy(data.x_train).double(), LOGISTIC.labels(data.y_train)
    shards = [Shard(j, x[idx], y[idx]) for j, idx in enumerate(parts)]
    params = plan_noise(plan, tuple(len(p) for p in parts), x.shape[1]).params
    runner = functools.partial(plan.record.runner, model=LOGISTIC)
    shipped = run_parties(mpc_party, MpcConfig(parties=plan.parties, reproducible=True),
                          party_args=[(s, params, NoiseLevels.none(), x.shape[1], runner) for s in shards])
    assert own[0]["sizes"] == [len(p) for p in parts]
    assert torch.equal(own[0]["theta"], shipped[0]["result"].output("last"))
    assert all(torch.equal(r["theta"], own[0]["theta"]) for r in own)


def test_with_noise_each_party_reports_its_held_out_metrics_and_all_get_their_weighted_mean(party_files):
    """The quick start on the parties' own files: its error band is that of tests/test_honest_majority.py's run
    (the same secure run, the pooled test rows): 0.1 < e < 0.22 has 6e-16 per run (4e-7 under an exponential
    tail); no training errs 0.764, the "<= 50K" model 0.236 (the former bound < 0.3 passed it): power 1."""
    plan, data, _, tests, sources = party_files
    results = run_own_data(plan, sources, LOGISTIC)
    assert all(r["epsilon"] == results[0]["epsilon"] <= plan.epsilon for r in results)
    assert results[0]["certificate"]["delta"] <= plan.delta
    own = [r["held_out"]["own"] for r in results]
    assert [o["test_records"] for o in own] == [len(t) for t in tests]
    theta = results[0]["theta"]
    x_test, y_test = torch.from_numpy(data.x_test).double(), LOGISTIC.labels(data.y_test)
    whole = LOGISTIC.error_rate(theta, x_test, y_test)  # the pooled test set, which no party holds
    mean = results[0]["held_out"]["mean"]
    assert all(r["held_out"]["mean"] == mean for r in results)
    assert mean["test_error"] == pytest.approx(whole, abs=1e-4)  # fixed point: 2^-16 per sum term
    assert 0.1 < mean["test_error"] < 0.22


def test_a_party_whose_file_has_another_schema_is_refused_before_any_share(party_files, tmp_path):
    plan, data, parts, _, sources = party_files
    odd = pd.read_csv(sources[2].train).rename(columns={"a5": "hours"})
    odd.to_csv(tmp_path / "odd.csv", index=False)
    changed = [*sources[:2], dataclasses.replace(sources[2], train=str(tmp_path / "odd.csv"), test=None)]
    with pytest.raises(PartyFailed, match="party 2 failed.*the schema: party 2's column 6 is 'hours' where party "
                                          "0's is 'a5'") as info:
        run_own_data(plan, changed, LOGISTIC)
    assert info.value.party == 2
    assert all(r.error_type == "ConfigMismatchError" for r in info.value.reports if r.role == "party")


class _SmallMlp(torch.nn.Module):  # a user's model, not one of mpcdp's
    def __init__(self, features: int):
        super().__init__()
        self.layers = torch.nn.Sequential(torch.nn.Linear(features, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))

    def forward(self, x):
        return self.layers(x)


@pytest.mark.smoke
def test_mpcdp_train_takes_a_users_module_and_each_partys_own_csv(party_files, tmp_path):
    """The documented entry point: `mpcdp.train(module, files, protocol=...)` — secure DDP-SRM of a user's MLP,
    each party reading only its own file; the module comes back with the released parameters, ε certified."""
    import mpcdp

    plan, data, parts, tests, _ = party_files
    columns = [f"a{i}" for i in range(data.x_train.shape[1])]
    files = [_write(tmp_path / f"p{j}.csv", data.x_train[idx[:2000]], (data.y_train[idx[:2000]] > 0).astype(int),
                    columns) for j, idx in enumerate(parts)]
    held = [_write(tmp_path / f"t{j}.csv", data.x_test[t[:1000]], (data.y_test[t[:1000]] > 0).astype(int), columns)
            for j, t in enumerate(tests)]
    # the quickstart protocol cut to 4 steps (a tenth of a pass): 5 releases of the MLP's 2,018 noised coordinates
    short = tmp_path / "quickstart-short.toml"
    short.write_text(open(PROTOCOL).read().replace("passes = 0.25", "passes = 0.1"))
    torch.manual_seed(0)
    module = _SmallMlp(len(columns))
    before = [p.detach().clone() for p in module.parameters()]
    result = mpcdp.train(module, files, test=held, label="income_over_50k", protocol=str(short))
    assert result.model is module and result.parties_records == [2000, 2000, 2000]
    assert result.epsilon <= plan.epsilon and result.certificate["delta"] <= plan.delta
    after = list(module.parameters())
    assert any(not torch.equal(a.detach(), b) for a, b in zip(after, before))  # the released model is loaded
    flat = torch.cat([p.detach().reshape(-1).double() for p in after])
    assert torch.allclose(flat, result.theta, atol=1e-6)
    assert [r["held_out"]["own"]["test_records"] for r in result.reports] == [1000, 1000, 1000]
    # fresh noise and batches, yet 4 steps of this MLP at ε = 0.5 give the "<= 50K" model every time
    # (`tests/utility_draws.py own-a9a`: 0.2343 in each of 40 draws): < 0.5 fails only on no training (0.544)
    assert 0.0 < result.held_out["mean"]["test_error"] < 0.5


def test_mpcdp_train_takes_torch_datasets_and_refuses_one_of_another_width():
    import mpcdp
    from torch.utils.data import TensorDataset

    g = torch.Generator().manual_seed(7)

    def dataset(n, width=10):
        x = torch.randn(n, width, generator=g)
        return TensorDataset(x, (x[:, 0] > 0).long())

    module = _SmallMlp(10)
    result = mpcdp.train(module, [dataset(300), dataset(400), dataset(300)], protocol="protocols/own-data-mlp.toml")
    assert result.parties_records == [300, 400, 300] and result.epsilon <= 1.0
    # the party whose records the module cannot take stops before it joins (one forward pass on a record of its
    # shape), and every process says so
    with pytest.raises(PartyRefused, match=r"^party 2 refused its data: the model cannot take the records of file "
                                           r"'a torch Dataset' \(record shape '\(11,\)'\)$"):
        mpcdp.train(_SmallMlp(10), [dataset(300), dataset(300), dataset(300, width=11)],
                    protocol="protocols/own-data-mlp.toml")


class _OneWide(torch.nn.Module):  # one output: a loss over class indices cannot score class 1
    def __init__(self, features: int):
        super().__init__()
        self.layer = torch.nn.Linear(features, 1)

    def forward(self, x):
        return self.layer(x)


def test_a_module_that_cannot_score_every_class_is_refused_in_one_line_before_any_noise(capfd):
    """Forward, loss and one backward pass with the agreed classes run on every party before it joins: a 1-wide
    module under the default cross-entropy stops there, not after the noise pool was sampled."""
    import mpcdp
    from torch.utils.data import TensorDataset

    g = torch.Generator().manual_seed(8)
    parts = []
    for n in (200, 200, 200):
        x = torch.randn(n, 10, generator=g)
        parts.append(TensorDataset(x, (x[:, 0] > 0).long()))
    with pytest.raises(PartyRefused) as refused:
        mpcdp.train(_OneWide(10), parts, protocol="protocols/own-data-mlp.toml")
    assert re.fullmatch(r"party \d refused its data: the model cannot train with '2 classes, output width 1' "
                        r"\(forward, loss and one backward pass on a record of zeros failed before any noise; give "
                        r"it one output per class, or a loss that takes its output\)", str(refused.value))
    assert "sampling noise" not in capfd.readouterr().err


def test_mpcdp_party_with_data_runs_each_partys_own_file_as_separate_commands(party_files, deployment):
    """`mpcdp party --job train --data FILE` on each of three processes (and the dealer), as on separate hosts:
    every party prints the same released model and the certified ε."""
    import json
    import os
    import pathlib
    import subprocess

    from mpcdp.runtime.harness import free_port

    plan, _, parts, tests, sources = party_files
    mpcdp = str(pathlib.Path(__file__).resolve().parents[1] / ".venv" / "bin" / "mpcdp")
    env = dict(os.environ, WORLD_SIZE="3", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               MPCDP_CREDENTIALS=str(deployment))
    procs = []
    for rank in range(4):
        own = (["--data", sources[rank].train, "--test", sources[rank].test, "--label", "income_over_50k"]
               if rank < 3 else [])
        command = [mpcdp, "party", "--job", "train", "--protocol", PROTOCOL, "--timeout", "120", *own]
        procs.append(forked.Popen(command, env=dict(env, RANK=str(rank)), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True))
    try:
        done = [proc.communicate(timeout=180) for proc in procs]
    finally:
        for proc in procs:
            proc.kill()
    assert all(proc.returncode == 0 for proc in procs), [err[-2000:] for _, err in done]
    reports = [json.loads(out.strip().splitlines()[-1]) for out, _ in done[:3]]
    assert [r["rank"] for r in reports] == [0, 1, 2]
    assert all(r["theta"] == reports[0]["theta"] and r["parties_records"] == [len(p) for p in parts] for r in reports)
    assert all(r["epsilon"] <= plan.epsilon and r["delta_certified"] <= plan.delta for r in reports)
    assert [r["held_out"]["own"]["test_records"] for r in reports] == [len(t) for t in tests]
    assert not [line for _, err in done for line in err.splitlines() if "Warning" in line]  # a clean run is quiet


def test_a_party_started_with_another_epsilon_or_clipping_constant_is_refused_naming_the_field(party_files):
    """The resolved protocol is in every party's handshake: a host given another ε and clipping constant is
    refused, naming each field and every party's value, before any data is compared (one run: the refusal
    lists every field that differs)."""
    from mpcdp.jobs import own_data
    from mpcdp.runtime.harness import run_job

    plan, _, _, _, sources = party_files
    odd = dataclasses.replace(plan, epsilon=0.6, params=dataclasses.replace(plan.params, c1=0.6))
    plans = [plan, plan, odd]
    with pytest.raises(PartyFailed) as info:
        run_job(own_data.own_data_party, config_for(plan),
                party_args=[(p, s, LOGISTIC) for p, s in zip(plans, sources)],
                party_jobs=[own_data._job(p, True).describe(p) for p in plans])
    for field, was in (("epsilon", plan.epsilon), ("params.c1", plan.params.c1)):
        assert f"`{field}`: party 0 = {was!r}, party 1 = {was!r}, party 2 = 0.6" in str(info.value), field
    assert "checked before any share was sent" in str(info.value)


def test_parties_whose_noise_calibration_differs_are_refused_naming_the_first_that_differs():
    from mpcdp.errors import ConfigMismatchError
    from mpcdp.jobs.own_data import check_noise_agreement

    same = {"epsilon": 0.99, "sigma0": 1.5, "sigma": 2.0, "steps": 40}
    check_noise_agreement([same, dict(same), dict(same)])
    with pytest.raises(ConfigMismatchError, match=r"party 2 calibrated other noise than party 0 \(.*'sigma': 2.5") as info:
        check_noise_agreement([same, dict(same), {**same, "sigma": 2.5}, {**same, "steps": 41}])
    assert info.value.party == 2
