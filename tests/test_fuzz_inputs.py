"""Bad input, fuzzed (hypothesis): every malformed protocol, field or party dataset is refused with an error that
names the field and shows the value, before any share is sent and without writing anything.

Examples are derandomized (fixed, reproducible in CI); the property tests with real party processes draw few.
"""

import json
import math
import os
import string

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpcdp.errors import ConfigError, PartyFailed
from mpcdp.learning.backends import NoiseLevels
from mpcdp.learning.dpsrm import Shard, SrmParameters
from mpcdp.runtime.harness import run_parties
from party_jobs import srm_party

FAST = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])
PROCESSES = settings(max_examples=4, deadline=None, derandomize=True, database=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture])

TRAIN = {"privacy": {"epsilon": 1.0, "delta": 1e-5},
         "training": {"parties": 3, "batch": 30, "batch0": 60, "passes": 1.0, "c1": 1.0, "c2": 0.5, "gamma": 0.5,
                      "zeta": 0.5, "seed": 0}}


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value) if ("." in repr(value) or "e" in repr(value)) else repr(value) + ".0"
    if isinstance(value, int):
        return str(value)
    return json.dumps(value)


def _train_protocol(tmp_path, tables, dataset='"breast-cancer"') -> str:
    lines = [f"dataset = {dataset}"]
    for table, fields in tables.items():
        lines.append(f"[{table}]")
        lines += [f"{key} = {_toml_value(value)}" for key, value in fields.items()]
    path = tmp_path / "fuzz.toml"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


junk = st.one_of(st.text(alphabet=string.ascii_letters, min_size=1, max_size=6), st.booleans())
non_positive = st.one_of(st.floats(max_value=0.0, allow_nan=False), st.integers(max_value=0),
                         st.sampled_from([math.nan, math.inf, -math.inf]), junk)
not_a_count = st.one_of(st.integers(max_value=0), st.floats(allow_nan=False, allow_infinity=False).filter(
    lambda v: v != int(v) if math.isfinite(v) else True), junk)
BAD_FIELDS = st.one_of(
    st.tuples(st.just(("privacy", "epsilon")), non_positive),
    st.tuples(st.just(("privacy", "delta")), st.one_of(non_positive, st.floats(min_value=1.0, allow_nan=False))),
    st.tuples(st.just(("training", "parties")), not_a_count),
    st.tuples(st.just(("training", "batch")), not_a_count),
    st.tuples(st.just(("training", "batch0")), not_a_count),
    st.tuples(st.just(("training", "passes")), non_positive),
    st.tuples(st.just(("training", "c1")), non_positive),
    st.tuples(st.just(("training", "c2")), non_positive),
    st.tuples(st.just(("training", "zeta")), non_positive),
    st.tuples(st.just(("training", "seed")), st.one_of(st.integers(max_value=-1), junk)),
)


@FAST
@given(case=BAD_FIELDS)
def test_a_bad_training_field_is_named_with_its_value(tmp_path, case):
    from mpcdp.jobs.train import plan_from

    (table, field), value = case
    tables = {name: dict(fields) for name, fields in TRAIN.items()}
    tables[table][field] = value
    path = _train_protocol(tmp_path, tables)
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(ConfigError) as info:
        plan_from(path)
    message = str(info.value)
    assert f"`{field}`" in message
    shown = {"nan": "nan", "inf": "inf", "-inf": "-inf"}.get(str(value), repr(value))
    assert shown in message or (field == "batch0" and "`batch`" in message)
    assert sorted(os.listdir(tmp_path)) == before  # nothing written


@FAST
@given(text=st.text(max_size=80))
def test_any_text_as_a_protocol_is_refused_cleanly(tmp_path, text):
    """Whatever the file holds — not TOML, TOML without the tables, tables of the wrong types — each command's
    protocol reader raises a ConfigError, never a raw KeyError/TypeError/TOMLDecodeError."""
    from mpcdp.jobs import collab, decentralized, train

    path = tmp_path / "any.toml"
    path.write_text(text)
    for reader in (train.plan_from, collab.plan_from, decentralized.plan_from):
        with pytest.raises(ConfigError):
            reader(str(path))


@FAST
@given(name=st.one_of(st.text(alphabet=string.ascii_lowercase + "-", min_size=1, max_size=12), st.integers()))
def test_an_unknown_dataset_is_named(tmp_path, name):
    from mpcdp.jobs.train import plan_from, run_plan

    if name in ("a9a", "breast-cancer", "mnist-5k", "fashion-mnist", "lending-club", "lending-club-class"):
        name = name + "-x"
    path = _train_protocol(tmp_path, TRAIN, dataset=_toml_value(name))
    with pytest.raises(ConfigError, match="dataset"):
        run_plan(plan_from(path, backend="simulated"), curve=False)


def test_a_missing_protocol_file_is_named(tmp_path):
    from mpcdp.jobs.train import plan_from

    with pytest.raises(ConfigError, match="does not exist"):
        plan_from(str(tmp_path / "nope.toml"))


def test_a_batch_larger_than_a_party_is_refused_before_training(tmp_path):
    from mpcdp.jobs.train import plan_from, run_plan

    tables = {name: dict(fields) for name, fields in TRAIN.items()}
    tables["training"]["batch"] = 3000
    with pytest.raises(ConfigError, match="`batch` .*must be an integer in \\[1, n = 1\\d\\d\\]. Found 1000"):
        run_plan(plan_from(_train_protocol(tmp_path, tables), backend="simulated"), curve=False)


# -- party data, with real party processes --------------------------------------------------------------------

DEFECTS = st.sampled_from(["nan", "inf", "empty", "columns", "labels"])


def _shards(victim: int, defect: str, position: int) -> list[Shard]:
    g = torch.Generator().manual_seed(3)
    shards = [Shard(j, torch.randn(12, 5, generator=g, dtype=torch.float64),
                    torch.sign(torch.randn(12, generator=g, dtype=torch.float64))) for j in range(3)]
    bad = shards[victim]
    if defect in ("nan", "inf"):
        bad.x.view(-1)[position % bad.x.numel()] = math.nan if defect == "nan" else -math.inf
    elif defect == "empty":
        shards[victim] = Shard(victim, torch.zeros(0, 5, dtype=torch.float64), torch.zeros(0, dtype=torch.float64))
    elif defect == "columns":
        shards[victim] = Shard(victim, torch.randn(12, 4, generator=g, dtype=torch.float64), bad.y)
    else:
        shards[victim] = Shard(victim, bad.x, bad.y[:7])
    return shards


EXPECTED = {"nan": "`features` contain NaN/Inf values", "inf": "`features` contain NaN/Inf values",
            "empty": "`features` are empty (0 records)", "labels": "`labels` has 7 entries for 12 feature rows",
            "columns": "`features` shapes differ between parties"}


@PROCESSES
@given(victim=st.integers(0, 2), defect=DEFECTS, position=st.integers(0, 59))
def test_a_bad_party_dataset_is_refused_on_every_party_before_any_share(config_for, victim, defect, position):
    shards = _shards(victim, defect, position)
    params = SrmParameters(steps=2, batch=2, batch0=4, seed=0)
    with pytest.raises(PartyFailed) as info:
        run_parties(srm_party, config_for(3, timeout_s=60.0),
                    party_args=[(s, params, NoiseLevels.for_sigmas(1.0, 1.0, dim=5), 5) for s in shards])
    err = info.value
    assert err.party == victim, str(err)[:500]
    assert EXPECTED[defect] in str(err)
    if defect != "columns":
        assert f"party {victim}: " in str(err)
    # every party stopped with the same InputError at the data check, before the noise or any share
    assert all(r.error_type == "InputError" for r in err.reports if r.role == "party")
    assert all(r.step <= 2 for r in err.reports if r.role == "party")


# -- configuration objects and calibration -----------------------------------------------------------------

wrong_type = st.one_of(st.text(max_size=5), st.lists(st.integers(), max_size=3), st.none(),
                       st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


@FAST
@given(field=st.sampled_from(["parties", "precision_bits", "timeout_s", "link_delay_ms", "insecure_dev",
                              "provider", "reproducible"]), value=wrong_type)
def test_mpc_config_wrong_types_name_the_field(field, value):
    from mpcdp.config import MpcConfig

    with pytest.raises(ConfigError, match=f"`{field}`") as info:
        MpcConfig(**{"parties": 2, field: value})
    assert repr(value) in str(info.value)


@FAST
@given(epsilon=st.one_of(st.floats(max_value=0.0), st.sampled_from([math.nan, math.inf, -math.inf])),
       delta=st.one_of(st.floats(min_value=1.0), st.floats(max_value=0.0), st.sampled_from([math.nan, math.inf])))
def test_calibration_refuses_bad_budgets(epsilon, delta):
    from mpcdp.accounting.distributed import full_batch_noise_for

    with pytest.raises(ConfigError, match="`epsilon`"):
        full_batch_noise_for(1.0, 5, epsilon, 1e-5)
    with pytest.raises(ConfigError, match="`delta`"):
        full_batch_noise_for(1.0, 5, 1.0, delta)


@FAST
@given(table=st.sampled_from(["training", "privacy", "mpc"]),
       value=st.sampled_from(["3", "[1, 2]", '"x"', "true", "1.5"]))
def test_a_section_that_is_not_a_table_is_named(tmp_path, table, value):
    from mpcdp.jobs import collab, decentralized, train

    path = tmp_path / "t.toml"
    path.write_text(f'dataset = "a9a"\n{table} = {value}\n')
    with pytest.raises(ConfigError, match=f"`{table}` in .* must be a table"):
        train.plan_from(str(path))
    path.write_text(f"owners = {value}\n[training]\n")
    with pytest.raises(ConfigError, match="`owners` in .* must be a table"):
        collab.plan_from(str(path))
    path.write_text(f'dataset = "mnist-5k"\nrun = {value}\n')
    with pytest.raises(ConfigError, match="`run` in .* must be a table"):
        decentralized.plan_from(str(path))
