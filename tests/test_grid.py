"""The release grid: the integer sensitivity covers what rounding does to neighbouring inputs, and the limits."""

import math

import pytest
import torch

from mpcdp.accounting import grid
from mpcdp.errors import ConfigError


@pytest.mark.parametrize("dim, precision", [(123, 30), (26010, 27), (1, 16), (1000, 44)])
def test_neighbours_on_rounding_boundaries_stay_within_the_integer_sensitivity(dim, precision):
    delta = 3e-4 if precision < 40 else 2e-6
    g = torch.Generator().manual_seed(dim)
    unit = 2.0**-precision
    # every coordinate of a sits just below a half-unit boundary, and b = a + a step of L2 norm Δ pushes every
    # coordinate across the next boundary up: the encoded difference gains almost one unit per coordinate
    k = torch.randint(-1000, 1000, (dim,), generator=g).to(torch.float64)
    a = (k + 0.5 - 1e-6) * unit
    # a whole number of units plus 2e-6: a rounds down, b rounds up, and ‖b − a‖ stays inside Δ
    units = math.floor(delta * 2.0**precision / math.sqrt(dim) * (1 - 1e-6)) + 2e-6
    step = torch.full((dim,), units * unit, dtype=torch.float64)
    b = a + step
    assert float((b - a).norm()) <= delta * (1 + 1e-12)
    others = torch.randn(2, dim, generator=g, dtype=torch.float64)  # the other parties' terms, unchanged
    sum_a = grid.encode(a, precision) + grid.encode(others, precision).sum(0)
    sum_b = grid.encode(b, precision) + grid.encode(others, precision).sum(0)
    moved = float((sum_b - sum_a).to(torch.float64).norm())
    bound = grid.integer_sensitivity(delta, dim, precision)
    assert moved <= bound
    real = float((b - a).norm()) * 2.0**precision
    assert moved >= real + 0.99 * math.sqrt(dim)  # the encoding adds almost √d units: the √d term is tight


def test_release_precision_aims_at_two_to_the_21_units_and_refuses_out_of_range():
    for sigma in (8.2e-4, 0.0068, 0.0217, 1.0, 3.7e3):
        p = grid.release_precision(sigma)
        assert 2**20.5 <= sigma * 2**p <= 2**21.5
    for bad in (1e-12, 1e7, 0.0, -1.0, float("inf")):
        with pytest.raises(ConfigError, match="`sigma`"):
            grid.release_precision(bad)


def test_a_release_never_gets_less_noise_than_calibrated():
    for dim, delta, z in [(123, 4e-4, 2.0), (26010, 1.2e-3, 0.8), (123, 6e-5, 40.0)]:
        release = grid.GridRelease(sensitivity=delta, dim=dim, noise_multiplier=z)
        assert release.released_noise_multiplier >= z
        assert release.sigma_equivalent >= z * delta
        assert release.rounding_overhead < 1e-2
        assert release.sensitivity_units >= delta * 2**release.precision + math.sqrt(dim)


def test_the_reserve_leaves_room_for_the_residual():
    coordinates = 26010 * 80
    eps, dlt = grid.reserve(3.0, 1e-5, coordinates)
    release = grid.GridRelease(sensitivity=1e-3, dim=26010, noise_multiplier=1.0)
    res = grid.residual([(release, 80)])
    assert eps + res.epsilon <= 3.0
    pieces = res.delta_pieces(eps, dlt)
    assert dlt + sum(pieces.values()) <= 1e-5
    assert 0 < 3.0 - eps < 1e-3


def test_a_release_takes_its_sampler_from_the_mechanism_and_refuses_one_without_the_interface():
    """The default sampler is the discrete Gaussian's (every shipped mechanism's); a sampler must be a dataclass
    with `name` and `plan_for`, since the run's handshake compares its fields with the rest of the release."""
    from mpcdp.noise import discrete_gaussian as dg

    release = grid.GridRelease(1e-3, 100, 1.0)
    assert release.sampler is dg.DISCRETE_GAUSSIAN and dg.plan_of(release) == dg.plan_for(release.sigma_units)

    class NotADataclass:
        name = "x"

        def plan_for(self, sigma_units):
            return dg.plan_for(sigma_units)

    for bad in (object(), NotADataclass()):
        with pytest.raises(ConfigError, match="`sampler` must be a dataclass with a `name` and `plan_for"):
            grid.GridRelease(1e-3, 100, 1.0, bad)
