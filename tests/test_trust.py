"""The trust model: the dealer is the default, and under it party 0 learns nothing from a multiplication.

The same recovery attack is run under both providers: party 0 adds the opened ε = x − a to the first
ring element it generated itself while the triple was made. Under the insecure ``tfp`` provider that is
the plaintext a, so party 0 recovers party 1's private x exactly — which shows the attack (and the view
recording) works; under the dealer it is only party 0's own share of a and the result is noise.
"""

import warnings

import pytest
import torch
from scipy import stats

from mpcdp.cli import main as cli_main
from mpcdp.config import MpcConfig
from mpcdp.errors import InsecureProviderError, InsecureSettingWarning
from mpcdp.runtime.harness import run_parties
from party_jobs import product_with_view

N = 2000


def _inputs():
    g = torch.Generator().manual_seed(11)
    x = torch.randn(N, generator=g, dtype=torch.float64) * 10
    y = torch.randn(N, generator=g, dtype=torch.float64)
    return x, y


def _run(config):
    x, y = _inputs()
    args = [(None, None, N), (x, None, N), (None, y, N)]
    return x, y, run_parties(product_with_view, config, party_args=args)


def test_dealer_is_the_default_and_party0_cannot_recover_inputs(config_for):
    config = config_for(3)
    assert config.provider == "dealer" and config.processes == 4
    x, y, results = _run(config)
    # the product is right (CrypTen's truncation error is a few units of 2^-16)
    assert (results[0]["product"] - x * y).abs().max().item() < 1e-3
    recovered = results[0]["recovered_x"]
    assert (recovered - x).abs().lt(1.0).float().mean().item() < 0.01
    # α = 1e-5 (the dealer's triples are fresh every run; 1e-3 before would fail one correct CI run in 1,000):
    # the opened ε, read as ring elements in [0, 1), are uniform whatever x is. Unmasked, ε would be x's
    # encoding (|x| < 2^47 units), all within 2^-16 of 0.5: KS distance >= 0.49 on 2,000 words, p < 1e-400.
    epsilon = results[0]["epsilon"].to(torch.float64) / 2.0**64 + 0.5
    assert stats.kstest(epsilon.numpy(), "uniform").pvalue > 1e-5


def test_tfp_lets_party0_recover_inputs_so_it_needs_the_flag(config_for):
    with pytest.raises(InsecureProviderError, match="insecure_dev"):
        MpcConfig(parties=3, provider="tfp")
    with pytest.warns(InsecureSettingWarning, match="INSECURE"):
        config = config_for(3, provider="tfp", insecure_dev=True)
    assert config.processes == 3  # no dealer process: party 0 is the dealer
    x, _, results = _run(config)
    recovered = results[0]["recovered_x"]
    assert (recovered - x).abs().max().item() <= 2.0**-16  # exact recovery of party 1's input


def test_cli_refuses_tfp_without_the_flag(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        code = cli_main(["aggregate", "--parties", "2", "--dim", "3", "--provider", "tfp"])
    assert code == 2
    assert "insecure_dev" in capsys.readouterr().err
