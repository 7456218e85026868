"""The malicious view audit's training releases: each role's whole view of a MAC-checked noisy release, tested
against its noise and the parties' inputs (``mpcdp audit views --security malicious``, :mod:`mpcdp.jobs.auth_views`).

Under ``security = "malicious"`` a training release (:func:`mpcdp.mpc.release.noisy_release`, its
``_checked_release``; without a norm bound here, with one — the form training runs use — in
:mod:`mpcdp.jobs.auth_bounded_views`, ``bounded``) opens V = Σ_j enc(x_j) + u with u the authenticated noise of the
sampler (:func:`mpcdp.noise.auth_gaussian.sample_authenticated`), in three steps
(:mod:`mpcdp.mpc.authenticated`): the inputs as a sum (every party j sends x_j − r_j, r_j a mask the dealer
dealt to j alone, by the run's opening plan; D = Σ_j (x_j − r_j) is opened and [[Σ x]] = Σ_j [[r_j]] + D);
the noise added; the total opened in full (each party's value share plus 2^64·r, both 64-bit words, for a
dealt r nobody knows) and MAC-checked (a committed coin, commitments to the σ shares with view digests, the
σ shares and their nonces). The audit runs ``releases`` such releases of ``dim`` coordinates, as
:mod:`mpcdp.jobs.release_views` does for semi-honest (every party's input a fresh uniform integer vector within
±4σ grid units from the OS entropy), and each process records its whole view of each:

* a data party: its input, its noise share u_i, its own input mask r_i, every share it *receives* in the two
  openings (with the star through party 0: party 0 receives every other party's x_j − r_j and its value share
  of the total, both words; the others only the sums) and every opened value (D, V's words, the check's coin,
  commitments and σ shares, each party's σ with its sender);
* the dealer: every request it serves during the release, its name and sizes (the masks [[r_j]] for every
  owner and the opening's [[r]]: 4·8·(m + 1) bytes per element to party 0), and the masks r_j it generated
  (drawn from owner j's generator, which r_j's owner records; the MAC key α is fixed for the run, so it
  cannot follow any release's noise).

Then u is opened (MAC-checked, for this audit only). The release reveals V, so Σ_j x_j + u; a role must learn
nothing more about u or another party's input. Each statistic is the correlation, summed over the coordinates,
of a value in the role's view with a value it must not know, by the permutation test of :mod:`mpcdp.jobs.views`
(releases are i.i.d.), two-sided; a ring word w is read as w / 2^63, u in units of σ, x as it is:

``own noise share`` (every data party): u_i against u;
``party J's masked input vs its input`` / ``vs the noise``: the x_J − r_J received from J against x_J and u;
``party J's release share vs the noise`` / ``vs its noise share`` / ``(upper word) vs the noise``: the value
    share J sent in the opening (low word: masked by J's shares of every dealt mask; upper word: by 2^64·r)
    against u, against u_J, and its upper word against u;
``party J's MAC-check σ vs the noise``: σ_J (uniform words that sum to 0) against Σ_c u_c/σ;
``dealer requests`` / ``dealer request sizes`` (the dealer): the number of requests it served and their total
    size against Σ_c u_c²/σ²;
``dealer's mask for party J vs its input`` / ``vs the noise`` (the dealer): r_J against x_J and u;
``pooled noise shares`` (the coalition of every data party but the last, which the threat model lists as
    learning nothing): Σ of its members' u_i against u, and with the last party's release share added (party 0
    received it) against u.

Two checks tie the views to the run: every party's noise shares sum to the opened u, and the released V equals
Σ_j x_j + u, in every release. Power: against a correlation of :data:`mpcdp.jobs.release_views.POWER_CORRELATION`
per coordinate with the statistic's target (:func:`mpcdp.jobs.release_views.power`).

``plant`` ``"release"`` plants a leak: party :data:`~mpcdp.jobs.release_views.PLANTED_PARTY` sends its input
without its dealt mask and every party leaves [[r_1]] out of the sum
(:func:`mpcdp.mpc.authenticated.planted_unmasked_input`; V and its MACs are unchanged, the check passes), so the
first member of the opening receives x_1 in the clear. Cost: the authenticated sampler's for ``releases·dim``
samples, one MAC-checked release of ``dim + m`` elements (every party's validation flag its own authenticated
input, one more exchange of one word) and one MAC-checked audit opening of ``dim`` per call.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

import numpy as np
import torch

from mpcdp.errors import ConfigError
from mpcdp.jobs.release_views import PLANT, PLANTED_PARTY, RELEASE_BITS, signed
from mpcdp.mpc.context import MpcContext
from mpcdp.noise import discrete_gaussian as dg

RELEASE_LABEL = "view-audit release"
DEFAULT_RELEASES, DEFAULT_DIM = 20, 8
WITNESS = "witness"
"""``plant`` for the bounded release: party :data:`PLANTED_PARTY` sends its witness bits β without its dealt bit
masks (:func:`mpcdp.mpc.auth_inputs.planted_unmasked_bits`)."""


def audit_bound(sigma_units: float, dim: int) -> float:
    """The bounded release's L2 bound (release units): the largest norm of the audit's inputs (integers within
    ±⌈4σ⌉ grid units in each of ``dim`` coordinates), so every honest input passes."""
    return math.ceil(4 * dg.plan_for(sigma_units).sigma) * math.sqrt(dim) / (1 << RELEASE_BITS)


def _planted(plant: str | None):
    from mpcdp.mpc import auth_inputs, authenticated

    if plant == PLANT:
        return authenticated.planted_unmasked_input(PLANTED_PARTY)
    if plant == WITNESS:
        return auth_inputs.planted_unmasked_bits(PLANTED_PARTY)
    return contextlib.nullcontext()


# -- the parties' side ---------------------------------------------------------------------------------------

def auth_release_party(ctx: MpcContext, releases: int, dim: int, sigma_units: float, plant: str | None, *,
                       done: int = 0, total: int | None = None, bounded: bool = False) -> list[dict[str, Any]]:
    """Run ``releases`` MAC-checked noisy releases of ``dim`` coordinates on this party under ``security =
    "malicious"``, recording its view of each (``ctx.keep_values``) and opening each noise vector, MAC-checked
    (audit only). ``bounded``: each release with the bound :func:`audit_bound` (the bounded form training runs
    use). ``done``/``total``: progress offsets."""
    from mpcdp import adapter
    from mpcdp.jobs.auth_bounded_views import bounded_view
    from mpcdp.mpc import authenticated
    from mpcdp.mpc.authenticated import AuthShared
    from mpcdp.mpc.release import noisy_release
    from mpcdp.noise.auth_gaussian import sample_authenticated

    plan = dg.plan_for(sigma_units)
    reach = int(math.ceil(4 * plan.sigma))
    bound = audit_bound(sigma_units, dim) if bounded else None
    rng = np.random.default_rng()  # this party's private inputs: fresh OS entropy, which no other party has
    ctx.keep_values = True
    views = []
    for call in range(releases):
        noise = sample_authenticated(ctx, dim, plan)
        x = rng.integers(-reach, reach, size=dim, endpoint=True, dtype=np.int64)
        first_opening, first_draw, first = len(ctx.openings), len(ctx.draws), adapter.dealer_requests_made()
        with _planted(plant):
            released = noisy_release(ctx, torch.from_numpy(x).to(torch.float64) / (1 << RELEASE_BITS),
                                     AuthShared(noise.value, noise.mac, RELEASE_BITS), shape=(dim,), label=RELEASE_LABEL,
                                     bound=bound)
        view = _release_view(ctx, first_opening, first_draw, dim) if bound is None else \
            bounded_view(ctx, first_opening, first_draw, x, bound)
        view["requests"] = (first, adapter.dealer_requests_made())
        u = authenticated.open_values(ctx, noise, label="view-audit release noise",
                                      reason="the view audit only: the noise, to test each view against")
        authenticated.mac_check(ctx, label="view-audit release noise")
        views.append(view | {"x": x, "noise_share": noise.value.lo.numpy().copy(),
                             "released": torch.round(released * (1 << RELEASE_BITS)).to(torch.int64).numpy(),
                             "noise": u.numpy().copy()})
        ctx.progress(done + call + 1, total or releases)
    return views


def _release_view(ctx: MpcContext, first_opening: int, first_draw: int, dim: int) -> dict[str, Any]:
    """What this party recorded of one release: its input mask, the shares it received (by sender: offset and
    the part within the release's ``dim`` coordinates, the flag's slot dropped) and the σ shares it received."""
    draws = dict(ctx.draws[first_draw:])
    masked = draws.get(f"received: {RELEASE_LABEL} (masked inputs)")
    rows = draws.get(f"received: {RELEASE_LABEL}")
    if masked is None or rows is None:
        raise RuntimeError("the release's openings were not recorded")
    opened = {o.label: o.values for o in ctx.openings[first_opening:]}
    others = [j for j in range(ctx.parties) if j != ctx.rank]
    sigmas = opened[f"{RELEASE_LABEL}: MAC-check σ"]
    return {"mask": draws[f"own input mask: {RELEASE_LABEL}"].numpy()[:dim].copy(),
            "masked": {j: (offset, share.numpy()[:dim - offset].copy())
                       for j, (offset, share) in masked.items() if offset < dim},
            "rows": {j: (offset, share.numpy()[:dim - offset].copy())
                     for j, (offset, share) in rows.items() if offset < dim},
            "sigma": {j: int(sigmas[i][0]) for i, j in enumerate(others)}}


# -- the statistics -----------------------------------------------------------------------------------------

def check_views(views_by_rank: list[list[dict]], dealer_view: list | None = None, planted: int | None = None) -> None:
    """The views are the run's: every release's noise shares sum to its opened u, and V = Σ_j x_j + u; bounded
    releases also :func:`mpcdp.jobs.auth_bounded_views.check_bounded` (``dealer_view``: the dealer's recorded
    requests; ``planted``: the party whose witness is sent unmasked)."""
    if "witness" in views_by_rank[0][0]:
        from mpcdp.jobs.auth_bounded_views import check_bounded

        check_bounded(views_by_rank, windows(dealer_view or [], views_by_rank), planted)
    noise = np.stack([v["noise"] for v in views_by_rank[0]])
    shares = sum(np.stack([v["noise_share"] for v in views]) for views in views_by_rank)
    inputs = sum(np.stack([v["x"] for v in views]) for views in views_by_rank)
    if not np.array_equal(shares, noise):
        raise ConfigError("the audit's noise shares do not sum to the opened noise: the record is misaligned")
    if not np.array_equal(np.stack([v["released"] for v in views_by_rank[0]]), inputs + noise):
        raise ConfigError("a release did not open Σ x + u: the record is misaligned")


def _scalar(noise: np.ndarray, sigma: float) -> np.ndarray:
    return noise.sum(1) / sigma / math.sqrt(noise.shape[1])


def party_tests(views: list[dict], noise: np.ndarray, by_rank: list[list[dict]],
                sigma: float) -> list[tuple[str, np.ndarray, int]]:
    """(name, score matrix, coordinates) of every release statistic of one data party (module docstring)."""
    scaled = noise / sigma
    own = signed(np.stack([v["noise_share"] for v in views]))
    tests = [("release: own noise share vs the noise", own @ scaled.T, noise.shape[1])]
    for j in sorted(views[0]["masked"]):
        offset, _ = views[0]["masked"][j]
        share = signed(np.stack([v["masked"][j][1] for v in views]))
        cols = slice(offset, offset + share.shape[1])
        x = np.stack([v["x"] for v in by_rank[j]])[:, cols].astype(float)
        tests.append((f"release: party {j}'s masked input vs its input", share @ x.T, share.shape[1]))
        tests.append((f"release: party {j}'s masked input vs the noise", share @ scaled[:, cols].T, share.shape[1]))
    for j in sorted(views[0]["rows"]):
        offset, _ = views[0]["rows"][j]
        rows = np.stack([v["rows"][j][1] for v in views])
        low, high = signed(rows[..., 0]), signed(rows[..., 1])
        cols = slice(offset, offset + low.shape[1])
        theirs = signed(np.stack([v["noise_share"] for v in by_rank[j]]))[:, cols]
        tests.append((f"release: party {j}'s release share vs the noise", low @ scaled[:, cols].T, low.shape[1]))
        tests.append((f"release: party {j}'s release share vs its noise share", low @ theirs.T, low.shape[1]))
        tests.append((f"release: party {j}'s release share (upper word) vs the noise", high @ scaled[:, cols].T,
                      low.shape[1]))
    for j in sorted(views[0]["sigma"]):
        sigma_j = signed(np.array([v["sigma"][j] for v in views]))
        tests.append((f"release: party {j}'s MAC-check σ vs the noise", np.outer(sigma_j, _scalar(noise, sigma)), 1))
    if "witness" in views[0]:
        from mpcdp.jobs import auth_bounded_views

        tests += auth_bounded_views.party_tests(views, noise, by_rank, sigma)
    return tests


def windows(view: list, by_rank: list[list[dict]]) -> list[list]:
    """The dealer's recorded requests in each release (each release's window is party 0's ``requests``)."""
    return [view[a:b] for a, b in (v["requests"] for v in by_rank[0])]


def dealer_tests(view: list, by_rank: list[list[dict]], noise: np.ndarray,
                 sigma: float) -> list[tuple[str, np.ndarray, int]]:
    """The dealer's release statistics: its requests (count, total size) and the masks it generated. ``view``:
    its recorded requests; each release's window is party 0's ``requests``."""
    served = windows(view, by_rank)
    count = np.array([len(w) for w in served], dtype=float)
    size = np.array([sum(int(n) for _, args, _ in w for n in args if isinstance(n, int)) for w in served], float)
    energy = ((noise / sigma) ** 2).sum(1)
    tests = [("release: dealer requests", np.outer(count - count.mean(), energy - energy.mean()), 1),
             ("release: dealer request sizes", np.outer(size - size.mean(), energy - energy.mean()), 1)]
    scaled = noise / sigma
    for j, views in enumerate(by_rank):
        mask = signed(np.stack([v["mask"] for v in views]))
        x = np.stack([v["x"] for v in views]).astype(float)
        tests.append((f"release: dealer's mask for party {j} vs its input", mask @ x.T, noise.shape[1]))
        tests.append((f"release: dealer's mask for party {j} vs the noise", mask @ scaled.T, noise.shape[1]))
    if "witness" in by_rank[0][0]:
        from mpcdp.jobs import auth_bounded_views

        tests += auth_bounded_views.dealer_tests(served, by_rank, noise)
    return tests


def coalition_tests(by_rank: list[list[dict]], noise: np.ndarray, sigma: float) -> list[tuple[str, np.ndarray, int]]:
    """The coalition of every data party but the last: its pooled noise shares against u, and with the last
    party's release share (where party 0 received it whole) added."""
    last = len(by_rank) - 1
    scaled = noise / sigma
    pooled = np.stack([np.stack([v["noise_share"] for v in views]) for views in by_rank[:-1]]).sum(0)
    tests = [("release: pooled noise shares vs the noise", signed(pooled) @ scaled.T, noise.shape[1])]
    received = by_rank[0][0]["rows"].get(last)
    if received is not None and received[0] == 0 and received[1].shape[0] == noise.shape[1]:
        share = np.stack([v["rows"][last][1][:, 0] for v in by_rank[0]])
        tests.append((f"release: pooled noise shares and party {last}'s release share vs the noise",
                      signed(pooled + share) @ scaled.T, noise.shape[1]))
    return tests
