"""Configuration is validated at construction with messages that name the field and echo the value."""

import pytest

from mpcdp.config import MpcConfig, fingerprint
from mpcdp.errors import ConfigError
from mpcdp.runtime.endpoint import resolve


@pytest.mark.parametrize("kwargs, text", [
    ({"parties": 1}, "`parties` must be an integer >= 2. Found 1."),
    ({"parties": 3.0}, "`parties` must be an integer >= 2. Found 3.0."),
    ({"parties": 3, "provider": "ttp"}, "`provider` must be one of ['dealer', 'honest-majority', 'tfp']. Found 'ttp'."),
    ({"parties": 3, "precision_bits": 40}, "`precision_bits` must be an integer in [8, 24]. Found 40."),
    ({"parties": 3, "timeout_s": 0}, "`timeout_s` must be a finite number > 0. Found 0."),
    ({"parties": 3, "timeout_s": float("nan")}, "`timeout_s` must be a finite number > 0. Found nan."),
])
def test_invalid_fields_are_named(kwargs, text):
    with pytest.raises(ConfigError) as info:
        MpcConfig(**kwargs)
    assert str(info.value) == text


def test_fingerprint_changes_with_any_field():
    a = MpcConfig(parties=3).to_dict()
    b = MpcConfig(parties=3, timeout_s=60).to_dict()
    assert fingerprint(a, {"dim": 1}) == fingerprint(dict(a), {"dim": 1})
    assert fingerprint(a, {"dim": 1}) != fingerprint(b, {"dim": 1})
    assert fingerprint(a, {"dim": 1}) != fingerprint(a, {"dim": 2})


def test_endpoint_from_environment():
    env = {"RANK": "2", "WORLD_SIZE": "3", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500"}
    endpoint = resolve(rank=None, parties=None, rendezvous=None, environ=env)
    assert (endpoint.rank, endpoint.parties, endpoint.rendezvous) == (2, 3, "tcp://10.0.0.1:29500")
    explicit = resolve(rank=0, parties=3, rendezvous="file:///tmp/x", environ=env)
    assert explicit.rendezvous == "file:///tmp/x" and explicit.rank == 0


def test_under_torchrun_world_size_counts_the_dealer():
    """torchrun's WORLD_SIZE counts every process it started: 4 processes are 3 data parties and the dealer
    (rank 3); the same variables without torchrun's mean 3 data parties (CrypTen's convention)."""
    env = {"RANK": "3", "WORLD_SIZE": "4", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500",
           "TORCHELASTIC_RUN_ID": "none"}
    endpoint = resolve(rank=None, parties=None, rendezvous=None, environ=env)
    assert (endpoint.rank, endpoint.parties) == (3, 3)  # the dealer
    plain = {k: v for k, v in env.items() if not k.startswith("TORCHELASTIC")}
    assert resolve(rank=None, parties=None, rendezvous=None, environ=plain).parties == 4
    assert resolve(rank=None, parties=3, rendezvous=None, environ=env).parties == 3  # --parties is m
    with pytest.raises(ConfigError, match="`WORLD_SIZE` under torchrun counts every process.*Found '1'"):
        resolve(rank=None, parties=None, rendezvous=None, environ={**env, "RANK": "0", "WORLD_SIZE": "1"})
    # without a dealer (the honest-majority provider) every process torchrun started is a data party
    free = resolve(rank=None, parties=None, rendezvous=None, environ={**env, "RANK": "2"}, dealer=False)
    assert (free.rank, free.parties) == (2, 4)
    with pytest.raises(ConfigError, match=r"`rank` must be in \[0, 3\] \(no dealer\). Found 4."):
        resolve(rank=None, parties=None, rendezvous=None, environ={**env, "RANK": "4"}, dealer=False)


@pytest.mark.parametrize("env, text", [
    ({"WORLD_SIZE": "3", "RENDEZVOUS": "tcp://h:1"}, "`--rank` is not given and the environment has no RANK."),
    ({"RANK": "x", "WORLD_SIZE": "3", "RENDEZVOUS": "tcp://h:1"}, "`RANK` must be an integer. Found 'x'."),
    ({"RANK": "0", "WORLD_SIZE": "3"}, "neither RENDEZVOUS nor MASTER_ADDR + MASTER_PORT"),
    ({"RANK": "5", "WORLD_SIZE": "3", "RENDEZVOUS": "tcp://h:1"}, "`rank` must be in [0, 3]"),
    ({"RANK": "0", "WORLD_SIZE": "3", "RENDEZVOUS": "http://h:1"}, "must start with tcp://"),
])
def test_endpoint_errors_name_the_variable(env, text):
    with pytest.raises(ConfigError, match=None) as info:
        resolve(rank=None, parties=None, rendezvous=None, environ=env)
    assert text in str(info.value)
