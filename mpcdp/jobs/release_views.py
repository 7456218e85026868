"""The view audit's training releases: each role's whole view of a noisy release, tested against its noise.

A training release (:func:`mpcdp.mpc.release.noisy_release`) opens V = Σ_j enc(x_j) + u: party j sends its
contribution c_j = enc(x_j) + u_j (its input on the release grid plus its additive share of the in-MPC noise
u) masked by its pairwise zero-sum masks (:mod:`mpcdp.mpc.masks`), by the opening plan of
:meth:`~mpcdp.transport.mesh.Mesh.open_shares` (direct for 2 parties, a star through party 0 for small
vectors, reduce-scatter beyond). The audit runs ``releases`` such releases of ``dim`` coordinates, as
training runs them: u drawn by :func:`~mpcdp.noise.secure_gaussian.sample_discrete_gaussian`, then every party
adds its own input, a fresh vector it draws privately each call (uniform integers within ±4σ grid units, from
the OS entropy), and the sum is opened once. Each process records its whole view of the release:

* a data party: its input, its noise share, every share it *receives* in the opening (the star's first
  member receives every member's masked contribution; the others receive only the combination, which is
  V itself; reduce-scatter, one chunk of every share), and V;
* the dealer: every request it serves during the release, from its own recorded view (the release sends it
  nothing: no Beaver material, no request; the noise's requests are the sampler's, audited by
  :mod:`mpcdp.jobs.views`).

Then u is opened, for this audit only. The release itself reveals V, so Σ_j x_j + u; a role must learn
nothing more. The statistics use no V: each is the correlation, summed over the coordinates, of a value in
the role's view with a value it must not know, tested by the permutation test of :mod:`mpcdp.jobs.views`
(calls are i.i.d.) two-sided. A ring word w is read as the signed number w / 2^63 and u in units of σ:

``own noise share`` (every data party): the party's own share u_i against u;
``party J's share vs its contribution``: the share received from party J against c_J, what J's pairwise masks
    must hide (a share not uniformly masked equals or tracks it; with the noise share known to a coalition,
    e.g. the dealer with one member, c_J gives J's input away);
``party J's share vs the noise``: the same share against u;
``dealer requests`` (the dealer): the number of requests it served during the release against Σ_c u_c²/σ².

A received share is uniform and independent of (u, c_J, V) when J's masks are in place (one pair mask of J
that the recipient lacks suffices; :mod:`mpcdp.mpc.masks`), so every statistic is centred under a correct
release whatever the other parties' inputs. The recipient could also remove the pair mask it shares with J;
the audit does not (a leak that drops only J's other masks is not among those it looks for). Power is stated
against a correlation of :data:`POWER_CORRELATION` per coordinate with the statistic's target, z ≈ ρ·√(calls
·coordinates) (for ``dealer requests``, ρ·√calls).

``plant`` ``"release"`` plants a leak: party :data:`PLANTED_PARTY`'s pairwise masks are dropped during the
release (:func:`mpcdp.mpc.masks.planted_unmasked`; the sum is unchanged), so the first member of the opening
receives its contribution c_1 in the clear. Cost: the sampler's for ``releases·dim`` samples, one release of
``dim + 1`` elements and one audit opening of ``dim`` per call; the dealer serves nothing more.
"""

from __future__ import annotations

import contextlib
import math
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
if TYPE_CHECKING:
    from scipy import stats

from mpcdp.mpc.context import MpcContext
from mpcdp.mpc.shared import Shared
from mpcdp.noise import discrete_gaussian as dg

RELEASE_LABEL = "view-audit release"
RELEASE_BITS = 4  # the audit's release grid 2^-p (the inputs are integers in these units)
PLANT = "release"
PLANTED_PARTY = 1
POWER_CORRELATION = 0.25
DEFAULT_RELEASES, DEFAULT_DIM = 100, 8


# -- the parties' side ---------------------------------------------------------------------------------------

def release_party(ctx: MpcContext, releases: int, dim: int, sigma_units: float, plant: str | None, *,
                  done: int = 0, total: int | None = None) -> list[dict[str, Any]]:
    """Run ``releases`` noisy releases of ``dim`` coordinates on this party, recording its view of each (with
    ``ctx.keep_values``) and opening each noise vector (audit only). ``done``/``total``: progress offsets."""
    from mpcdp import adapter
    from mpcdp.mpc import masks
    from mpcdp.mpc.release import noisy_release
    from mpcdp.noise.secure_gaussian import sample_discrete_gaussian

    plan = dg.plan_for(sigma_units)
    reach = int(math.ceil(4 * plan.sigma))
    rng = np.random.default_rng()  # this party's private inputs: fresh OS entropy, which no other party has
    ctx.keep_values = True
    views = []
    for call in range(releases):
        noise = sample_discrete_gaussian(ctx, dim, plan)
        x = rng.integers(-reach, reach, size=dim, endpoint=True, dtype=np.int64)
        first = adapter.dealer_requests_made()
        planted = masks.planted_unmasked(PLANTED_PARTY) if plant == PLANT else contextlib.nullcontext()
        with planted:
            released = noisy_release(ctx, torch.from_numpy(x).to(torch.float64) / (1 << RELEASE_BITS),
                                     Shared(noise, RELEASE_BITS), shape=(dim,), label=RELEASE_LABEL)
        label, received = ctx.draws[-1]  # noted by the release's opening: the shares it delivered here
        if ctx.openings[-1].label != RELEASE_LABEL or label != f"received: {RELEASE_LABEL}":
            raise RuntimeError("the release's opening was not recorded")
        requests = (first, adapter.dealer_requests_made())
        u = ctx.reveal(Shared(noise, 0), label="view-audit release noise",
                       reason="the view audit only: the noise, to test each view against")
        views.append({"x": x, "noise_share": noise.numpy().copy(), "requests": requests,
                      "received": {j: (offset, share.numpy()[:dim - offset].copy())
                                   for j, (offset, share) in received.items() if offset < dim},
                      "released": torch.round(released * (1 << RELEASE_BITS)).to(torch.int64).numpy(),
                      "noise": u.to(torch.int64).numpy()})
        ctx.progress(done + call + 1, total or releases)
    return views


# -- the statistics -----------------------------------------------------------------------------------------

def signed(words: np.ndarray) -> np.ndarray:
    """Ring words (int64) as signed numbers in [-1, 1)."""
    return np.asarray(words, dtype=np.int64).astype(np.float64) / 2.0 ** 63


def contributions(views_by_rank: list[list[dict]]) -> list[np.ndarray]:
    """Each party's contributions c_j = enc(x_j) + u_j, (calls, dim) int64 in the ring."""
    return [np.stack([v["x"] + v["noise_share"] for v in views]) for views in views_by_rank]


def party_tests(views: list[dict], noise: np.ndarray, contributed: list[np.ndarray],
                sigma: float) -> list[tuple[str, np.ndarray, int]]:
    """(name, score matrix, coordinates) of every release statistic of one data party."""
    scaled = noise / sigma
    own = signed(np.stack([v["noise_share"] for v in views]))
    tests = [("release: own noise share vs the noise", own @ scaled.T, noise.shape[1])]
    for j in sorted(views[0]["received"]):
        offset, _ = views[0]["received"][j]
        share = signed(np.stack([v["received"][j][1] for v in views]))
        cols = slice(offset, offset + share.shape[1])
        tests.append((f"release: party {j}'s share vs its contribution", share @ signed(contributed[j][:, cols]).T,
                      share.shape[1]))
        tests.append((f"release: party {j}'s share vs the noise", share @ scaled[:, cols].T, share.shape[1]))
    return tests


def dealer_tests(requests: np.ndarray, noise: np.ndarray, sigma: float) -> list[tuple[str, np.ndarray, int]]:
    """The dealer's release statistic: its request count in each release against Σ_c u_c²/σ²."""
    energy = ((noise / sigma) ** 2).sum(1)
    return [("release: dealer requests", np.outer(requests - requests.mean(), energy - energy.mean()), 1)]


def power(coordinates: int, calls: int, alpha: float, tests: int) -> float:
    """Power of a two-sided statistic at level α/``tests`` against a per-coordinate correlation of
    :data:`POWER_CORRELATION` with its target."""
    from scipy import stats

    z = POWER_CORRELATION * math.sqrt(calls * coordinates)
    return float(stats.norm.cdf(z - stats.norm.isf(alpha / tests / 2)))


POWER_AGAINST = (f"a correlation of {POWER_CORRELATION} per coordinate between the role's value and the value "
                 "it must not know")
