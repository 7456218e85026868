"""One typed configuration path: a run's links, network and plugins are decided once (command line first, then
the user's environment) into a frozen RunSettings and handed to every process; the launcher writes no
environment variable for its children."""

import sys

import pytest

from mpcdp import plugins, providers
from mpcdp.errors import ConfigError
from mpcdp.runtime.endpoint import RunSettings, read_settings
from mpcdp.runtime.harness import run_parties
from party_jobs import run_environment


def test_the_command_line_comes_before_the_environment():
    env = {"MPCDP_CREDENTIALS": "/env/keys", "MPCDP_IFACE": "eth9", "MPCDP_NETWORK": "10.1.0.0/16",
           "MPCDP_PLUGINS": "a_plugin,b_plugin"}
    settings = read_settings(env, credentials="/flag/keys", iface="eth0")
    assert settings == RunSettings(credentials="/flag/keys", insecure_links=False, iface="eth0",
                                   network="10.1.0.0/16", plugins=(*plugins.listed({}), "a_plugin", "b_plugin"))
    from_env = read_settings(env)
    assert (from_env.credentials, from_env.iface) == ("/env/keys", "eth9")
    assert read_settings({"GLOO_SOCKET_IFNAME": "eth3"}).iface == "eth3"
    assert read_settings({"MPCDP_INSECURE_LINKS": "1"}).insecure_links
    assert not read_settings({"MPCDP_INSECURE_LINKS": "yes"}).insecure_links  # only "1" opts in
    assert read_settings({}, insecure_links=True).insecure_links


def test_a_bad_network_is_refused_naming_the_variable():
    with pytest.raises(ConfigError, match=r"`MPCDP_NETWORK` must be an IPv4 network .* Found 'not-a-net'"):
        read_settings({"MPCDP_NETWORK": "not-a-net"})


def test_settings_are_frozen():
    with pytest.raises(AttributeError):
        read_settings({}).credentials = "/elsewhere"


def test_a_local_run_hands_its_processes_the_settings_not_environment_variables(config_for, monkeypatch):
    """The parties of a local run link over TLS with the launcher's throwaway deployment and import the
    launcher's plugins, while their environment holds no MPCDP_ variable (the user set none)."""
    for name in ("MPCDP_CREDENTIALS", "MPCDP_INSECURE_LINKS", "MPCDP_IFACE", "MPCDP_PLUGINS", "MPCDP_NETWORK",
                 "MPCDP_LEDGER"):  # the suite's own privacy ledger folder (conftest) too: none set
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(plugins, "_LOADED", [])
    monkeypatch.setattr(providers, "PROVIDERS", dict(providers.PROVIDERS))  # the toy registers in a copy
    monkeypatch.delitem(sys.modules, "toy_provider", raising=False)
    plugins.load(["toy_provider"])  # as `mpcdp --plugin toy_provider` does in the launcher
    sys.modules.pop("toy_provider", None)  # monkeypatch restores what was there before
    seen = run_parties(run_environment, config_for(3))
    assert all(r == {"mpcdp_variables": [], "toy_provider_imported": True, "links": "TLSv1.3"} for r in seen), seen
