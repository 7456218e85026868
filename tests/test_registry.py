"""The registries are the one place to extend: a toy algorithm and a toy noise mode, each one record in
tests/toy_algorithm.py, train through `mpcdp train` on both backends."""

import json

import pytest

from mpcdp import cli, plugins
from mpcdp.errors import ConfigError
from mpcdp.learning import algorithms, mechanisms

PROTOCOL = """
name = "toy"
dataset = "breast-cancer"
algorithm = "{algorithm}"
[privacy]
epsilon = 3.0
delta = 1e-3
[training]
parties = 2
{training}
[mpc]
timeout_s = 300
{noise}
"""
MOMENTUM = "steps = 6\nc1 = 1.0\nlearning_rate = 2.0\nmomentum = 0.5\nseed = 0"


@pytest.fixture
def train(tmp_path, monkeypatch, capsys):
    """Run `mpcdp --plugin toy_algorithm train PROTOCOL --backend B` in this process; return its JSON report."""
    monkeypatch.setenv(plugins.ENVIRONMENT, "")

    def run(backend: str, *, algorithm: str = "momentum-gd", training: str = MOMENTUM, noise: str = "") -> dict:
        path = tmp_path / f"{algorithm}-{backend}.toml"
        path.write_text(PROTOCOL.format(algorithm=algorithm, training=training, noise=noise))
        code = cli.main(["--plugin", "toy_algorithm", "train", str(path), "--backend", backend])
        out = capsys.readouterr()
        assert code == 0, out.err[-3000:]
        return json.loads(out.out.strip().splitlines()[-1])

    return run


@pytest.mark.parametrize("backend", ["simulated", "mpc"])
def test_a_toy_algorithm_registered_in_one_file_trains_through_mpcdp_train(train, backend):
    """The test error is on fresh noise on both backends (full-batch: no batches to draw). `tests/utility_draws.py
    toy-momentum`: 0.050 ± 0.004 over 5,000 draws, at most 0.061; < 0.2: α 6e-47 per run under a lognormal fit
    (normal 1e-245). Defect: no training (θ = 0) errs 0.412 on breast cancer's test rows: power 1."""
    report = train(backend)
    assert report["algorithm"] == "momentum-gd" and report["backend"] == backend
    assert report["releases"] == report["iterations"] == 6
    assert report["epsilon"] <= report["epsilon_target"] == 3.0 and report["delta_certified"] <= 1e-3
    assert report["mechanism"].startswith("dgauss-grid")
    assert report["test_error"] < 0.2  # breast cancer: a constant predictor errs on 37%
    if backend == "mpc":
        assert report["bytes_per_party"] > 0


@pytest.mark.parametrize("backend", ["simulated", "mpc"])
def test_a_toy_noise_mode_registered_in_one_file_trains_and_is_certified(train, backend):
    """The test error, on fresh noise: `tests/utility_draws.py toy-every`: 0.048 ± 0.005 over 5,000 draws, at most
    0.061; < 0.3: α 1e-51 per run under a lognormal fit. Defect: no training (θ = 0) errs 0.412: power 1."""
    # a shipped algorithm with the plugin's noise mode: the party processes know the mode only through
    # MPCDP_PLUGINS (nothing they unpickle imports the plugin)
    every = train(backend, algorithm="dp-gd", training="steps = 6\nc1 = 1.0\nlearning_rate = 2.0\nseed = 0",
                  noise='[noise]\nmode = "every-party"')
    assert every["noise_mode"] == "every-party" and every["colluders"] == 1
    assert every["mechanism"].startswith("ddgauss-grid")
    assert every["epsilon"] <= 3.0 and every["test_error"] < 0.3
    # every party's own noise carries the whole σ: √2 times the per-party σ of t = 0
    grid = every["release_grid"][0]
    assert grid["sigma_units_per_party"] >= grid["noise_multiplier"] * grid["sensitivity_units"] * (1 - 1e-9)


def test_registries_refuse_a_second_record_of_the_same_name_and_name_the_known_ones():
    import toy_algorithm

    assert toy_algorithm.run_momentum is algorithms.ALGORITHMS["momentum-gd"].runner

    with pytest.raises(ConfigError, match="already registered"):
        algorithms.register(algorithms.ALGORITHMS["momentum-gd"])
    with pytest.raises(ConfigError, match="already registered"):
        mechanisms.register(mechanisms.MECHANISMS["every-party"])
    with pytest.raises(ConfigError, match=r"`algorithm` must be one of .*momentum-gd.*Found 'no-such'"):
        algorithms.lookup("no-such")


def test_an_unknown_plugin_is_a_clear_error(capsys):
    assert cli.main(["--plugin", "no_such_module_here", "train", "x.toml"]) == 2
    assert "`--plugin` 'no_such_module_here' cannot be imported" in capsys.readouterr().err


def test_a_plugins_sampler_is_a_choice_of_the_command_line_and_train_still_starts_its_parties_early(monkeypatch):
    """Plugins load before the parser is built: `--mode` and `--noise` take a sampler a plugin registers, and
    `mpcdp --plugin M train P` is still recognised as a secure training run (its parties start early)."""
    monkeypatch.setenv(plugins.ENVIRONMENT, "")
    ns = cli.parse_arguments(["--plugin", "toy_sampler", "noise", "--mode", "toy-dgauss", "--samples", "10"])
    assert ns.mode == "toy-dgauss" and ns.plugin == ["toy_sampler"]
    assert cli.parse_arguments(["--plugin", "toy_sampler", "cost", "--noise", "toy-dgauss"]).noise == "toy-dgauss"
    from mpcdp.cli.training import wants_warm_parties

    protocol = "protocols/quickstart-a9a.toml"
    assert wants_warm_parties(["--plugin", "toy_algorithm", "train", protocol])
    assert not wants_warm_parties(["--plugin", "toy_algorithm", "train", protocol, "--backend", "simulated"])


def _logistic_without(member: str, **changed):
    """An object with every member of the shipped logistic model except ``member``, and the ``changed`` ones."""
    import types

    from mpcdp.learning.logreg import LOGISTIC
    from mpcdp.learning.models import Model
    from mpcdp.registry import members

    return types.SimpleNamespace(**{m: getattr(LOGISTIC, m) for m in members(Model) if m != member}, **changed)


@pytest.mark.parametrize("missing", ["clipped_gradient_sum", "feature_rows", "optimum"])
def test_a_model_lacking_a_member_of_the_interface_is_refused_when_registered_naming_it(missing):
    from mpcdp.learning import models

    with pytest.raises(ConfigError, match=f"mpcdp.learning.models.Model: .* lacks `{missing}`$"):
        models.register("half-a-model", _logistic_without(missing))
    assert "half-a-model" not in models.MODELS
    with pytest.raises(ConfigError, match=r"a model's `feature_rows` must be a bool: .* has 'yes'"):
        models.register("half-a-model", _logistic_without("feature_rows", feature_rows="yes"))


def test_the_shipped_models_and_a_users_wrapped_module_have_every_member_of_the_model_interface():
    import torch

    from mpcdp.learning import models
    from mpcdp.learning.modules import from_module

    assert set(models.MODELS) >= {"logreg", "mnist-cnn", "cifar-cnn5"}
    for model in models.MODELS.values():
        assert models.check(model) is model and isinstance(model, models.Model)
    users = from_module(torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)), (4,))
    assert models.check(users) is users and users.kind == "cnn" and users.feature_rows is False


def test_an_algorithm_whose_runner_lacks_an_argument_of_the_interface_is_refused_naming_it():
    import dataclasses

    import toy_algorithm

    record = algorithms.ALGORITHMS["momentum-gd"]
    for registered in algorithms.ALGORITHMS.values():  # the shipped runners and the toy's take every argument
        if registered.runner is not None:
            algorithms.check_runner(registered.runner, registered.name, checkpointable=registered.checkpointable)

    def no_model(shards, params, aggregate, *, dim, batch_sizes, batch0_sizes, batch_key=None):
        return toy_algorithm.run_momentum(shards, params, aggregate, dim=dim, model=None)

    with pytest.raises(ConfigError, match=r"algorithms.Runner: algorithm 'no-model''s runner lacks `model`$"):
        algorithms.register(dataclasses.replace(record, name="no-model", runner=no_model))
    def plain(shards, params, aggregate, *, dim, model, batch_sizes, batch0_sizes, batch_key=None):
        return toy_algorithm.run_momentum(shards, params, aggregate, dim=dim, model=model)

    algorithms.check_runner(plain, "plain")
    with pytest.raises(ConfigError, match=r"'resumable''s runner lacks `resume`, `on_release`$"):
        algorithms.register(dataclasses.replace(record, name="resumable", runner=plain, checkpointable=True))

    def odd(shards, params, aggregate, *, dim, model, batch_sizes, batch0_sizes, batch_key=None, momentum2):
        return None

    with pytest.raises(ConfigError, match=r"'odd''s runner requires `momentum2`, which the training paths do not"):
        algorithms.register(dataclasses.replace(record, name="odd", runner=odd))
    assert not {"no-model", "resumable", "odd"} & set(algorithms.ALGORITHMS)
