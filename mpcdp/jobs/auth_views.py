"""`mpcdp audit views --security malicious`: each role's view of the authenticated sampler (circuit dg-auth,
:mod:`mpcdp.noise.auth_gaussian`) tested against the released noise. Issue 44's rule: moving randomness moves
who learns what, and dg-auth moved it — the dealer deals every candidate bit R (it knows R), the parties know
the committed coin S, the bits are R ⊕ S; the dealer also knows the MAC key α and every mask it deals.

The sampler runs as ``calls`` one-sample calls by real party processes and the dealer under ``security =
"malicious"`` (every data party samples). Each process records its view of every call:

* the dealer: every request it serves (name and size) and every bit it deals (R, :class:`mpcdp.adapter.auth_bits.
  BitShares`, and the index R of every dealt one-hot, :class:`~mpcdp.adapter.auth_bits.OneHots`; per pass the
  first stage's, then the survivors' (dg-auth/9); the daBits of the crossings and the edaBits of T's bits are
  recorded under their own names);
* a data party: its own part of each dealt bit's XOR, the coin S, every value it opened (the masked T − r, the
  accept bits; the ε/δ and σ's are kept in its openings) and the public counts.

Each call's sample is then opened (MAC-checked; for this audit only) and every view is tested against it by
the permutation test of :mod:`mpcdp.jobs.permutation` (z from the exact mean and variance, p from the sampled
permutation distribution; for a match
statistic, whose score is 0 or 1, p is the Poisson tail at the permutation mean: rare events). The statistics, each
a score a role can compute from its own view of call i and a value x_j:

``dealt bits`` (dealer): the value the plaintext rule (:func:`~mpcdp.noise.discrete_gaussian.accept`) releases
    when the dealer's R are taken as the candidates' bits, equal to x (one-sided);
``request sizes`` (dealer): the number of requests it served in the call against x²/σ² (two-sided);
``coin`` (each party): the same with the coin S as the bits;
``own bit parts`` (each party): with its own parts ⊕ S;
``accept bits`` (each party): the index of the first accepted candidate against x²/σ²;
``masked T`` (each party): the opened T − r of candidate 0, read as a signed number, against x²/σ²;
``masked window`` (each party): the opened first-factor window ⊕ ρ (dg-auth/9's masked mux) of the candidate
    the call released, read as a number, against that window itself (:func:`released_windows`: a function of
    x; two-sided, a count);
``pooled bit parts`` (the coalition of every data party but the last, which the threat model lists as learning
    nothing): the XOR of its members' parts ⊕ S.

A sanity check ties the views to the run: every party's parts XORed with S must decode to the released sample
in every call (the coalition of every data party knows the noise: :func:`mpcdp.noise.who_knows.noise_known_to`).

``plant`` ``"dealer"`` plants the leak issue 44 is about, moved to dg-auth: no coin, so W = R
(:func:`mpcdp.noise.auth_dealt.planted_no_coin`); the dealer's ``dealt bits`` then decode the sample itself.
``plant`` ``"window"`` plants a party leak: every mux's mask ρ is 0, so every party's ``masked window`` is the
released candidate's first-factor window itself (:func:`mpcdp.noise.auth_dealt.planted_open_windows`).

Power: for a match statistic, against a role that knows the candidates' bits in a quarter of the calls
(q = 1/(2√π·σ), a discrete Gaussian's collision probability, the chance rate otherwise; :func:`match_power`;
low at 10 calls, about 0.9 at 40); for a count, against a
correlation of 0.25 with x²/σ². Cost: what the authenticated sampler costs for ``calls`` one-sample calls, one
MAC-checked opening per call.

Then ``releases`` MAC-checked training releases of ``dim`` coordinates (:mod:`mpcdp.jobs.auth_release_views`:
the authenticated noise added to every party's private input, the inputs authenticated as a sum, the total
opened and MAC-checked; each role's whole view of each, the dealer's requests and masks, every share a party
receives and the check's σ shares included). Their statistics join each role's, named ``release: …``, in the
same Bonferroni (the coalition's too: its pooled noise shares); the role's entry adds ``release_power``,
``release_received_from`` (a data party) and ``release_requests`` (the dealer). ``plant`` ``"release"``: party 1
sends its release input without its dealt mask (the sum unchanged), which party 0 receives; it covers the
releases only. ``bound`` (``--bound``): the releases in the bounded form training runs use under malicious, each
party's contribution checked against the bound inside the MPC with its witness input as authenticated bits
(:mod:`mpcdp.jobs.auth_bounded_views`: the bits every party receives, the check's openings and σ's, the dealer's
bit masks and request sizes join the views and the statistics; the dealer's entry adds
``release_request_kinds``); ``plant`` ``"witness"`` (implies it): party 1 sends its witness bits without its
dealt bit masks, which every other party receives.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

import numpy as np
import torch
from scipy import stats

from mpcdp.config import covers_malicious
from mpcdp.errors import ConfigError
from mpcdp.jobs.auth_release_views import DEFAULT_DIM
from mpcdp.jobs.permutation import MIN_ALPHA, Statistic, match_test, permutation_statistic, role_verdict_p
from mpcdp.jobs.release_views import PLANT
from mpcdp.mpc import bit_authenticated
from mpcdp.mpc.context import MpcContext
from mpcdp.noise import discrete_gaussian as dg

WINDOW = "window"
"""The planted party leak: every mux's mask ρ is 0, so each party opens the windows themselves
(:func:`mpcdp.noise.auth_dealt.planted_open_windows`); the parties' ``masked window`` then reads the window."""
ONE_DRAW = -1
"""A pass's survivor count in a view under dg-auth/10 (``malicious_sampler = "fewer-rounds"``): no first factor
opened, every field of every candidate in the pass's one draw."""
POWER_FRACTION = 0.25  # the match statistics' alternative: the role knows the bits in this fraction of calls
POWER_CORRELATION = 0.25


# -- decoding candidates from bits, as the plaintext rule does ------------------------------------------------

def decode(plan: dg.DiscreteGaussianPlan, bits: np.ndarray) -> int:
    """The value the sampler releases from candidates with these bits ((n, width), the fields in
    :data:`~mpcdp.noise.discrete_gaussian.RANDOM_FIELDS` order, widths
    :func:`~mpcdp.noise.auth_gaussian.dealt_widths`): the first the
    plaintext rule accepts (candidate 0's value where it accepts none)."""
    from mpcdp.noise.auth_fields import READ_FROM, dealt_widths

    fields, at = {}, 0
    for name in dg.RANDOM_FIELDS:
        width, low = dealt_widths(plan)[name], READ_FROM.get(name, 0)  # a word's bits from READ_FROM up (dealt)
        chunk = bits[:, at:at + width].astype(np.int64)
        fields[name] = (chunk << np.arange(low, low + width, dtype=np.int64)).sum(1)
        at += width
    values, piece = dg.candidate_values(plan, fields)
    accepted = np.flatnonzero(dg.accept(plan, dg.exponent(plan, values, piece), fields))
    return int(values[accepted[0] if accepted.size else 0])


# -- the parties' side ---------------------------------------------------------------------------------------

@covers_malicious
def auth_views_party(ctx: MpcContext, calls: int, sigma_units: float, plant: str | None, releases: int = 0,
                     dim: int = 1, bounded: bool = False) -> dict[str, Any]:
    """Run ``calls`` one-sample calls of the authenticated sampler on this party, recording its view of each;
    open every sample (MAC-checked, audit only). Then ``releases`` MAC-checked training releases of ``dim``
    coordinates (:func:`mpcdp.jobs.auth_release_views.auth_release_party`; ``bounded``: with the norm check).
    Returns the views, the samples,
    (party 0) the dealer requests made by each call and before the releases, and the releases' views."""
    from mpcdp import adapter
    from mpcdp.adapter import auth_bits
    from mpcdp.jobs.auth_release_views import auth_release_party
    from mpcdp.mpc import authenticated
    from mpcdp.noise.auth_dealt import planted_no_coin, planted_open_windows
    from mpcdp.noise.auth_gaussian import sample_authenticated

    plan = dg.plan_for(sigma_units)
    ctx.keep_values = True
    parts = auth_bits.record_parts()
    views, samples, requests = [], [], []
    plants = {"dealer": planted_no_coin, WINDOW: planted_open_windows}
    with plants[plant]() if plant in plants else contextlib.nullcontext():
        for call in range(calls):
            first_opening, first_draw, before = len(ctx.openings), len(ctx.draws), adapter.dealer_requests_made()
            parts.clear()
            counts: dict[str, Any] = {}
            shares = sample_authenticated(ctx, 1, plan, stats=counts)
            views.append(_party_view(ctx, plan, first_opening, first_draw, list(parts)))
            opened = authenticated.open_values(ctx, shares, label="view-audit sample",
                                               reason="the view audit only: the noise, to test each view against")
            authenticated.mac_check(ctx, label="view-audit sample")
            requests.append(adapter.dealer_requests_made() - before)  # the call's, its audit opening's included
            samples.append(int(opened[0]))
            ctx.progress(call + 1, calls + releases)
    auth_bits.PARTS = None
    sampler_requests = adapter.dealer_requests_made()
    released = auth_release_party(ctx, releases, dim, sigma_units, plant, done=calls, total=calls + releases,
                                  bounded=bounded)
    return {"views": views, "samples": samples, "requests": requests, "sampler_requests": sampler_requests,
            "releases": released, "all_requests": adapter.dealer_requests_made()}


def _party_view(ctx: MpcContext, plan: dg.DiscreteGaussianPlan, first_opening: int, first_draw: int,
                parts: list[torch.Tensor]) -> dict[str, Any]:
    """One call's view: per pass, this party's parts of the candidates' bits and the coin, as full rows
    (:func:`assemble`: the survivors' second-stage bits at the rows the opened first-factor bits mark); the
    opened values; per pass (candidates, survivors)."""
    from mpcdp.noise.auth_fields import COIN_LABELS

    plan_passes: list[list[np.ndarray]] = []  # per pass: [first-stage coin, survivors' coin]
    for label, v in ctx.draws[first_draw:]:
        if label == COIN_LABELS[0]:
            plan_passes.append([])
        if label in COIN_LABELS:
            plan_passes[-1].append(v.numpy().astype(np.uint8))
    flat = iter(parts)  # this party's parts in request order: per pass the index's (n, w), the first stage's
    owns = []           # other bits, then the survivors' bits
    for coins in plan_passes:
        n = coins[0].shape[0]
        first = torch.cat([next(flat).reshape(n, -1), next(flat).reshape(n, -1)], 1)
        owns.append([first.numpy().astype(np.uint8)] + [next(flat).reshape(c.shape).numpy().astype(np.uint8)
                                                          for c in coins[1:]])
    firsts = [o.values for o in ctx.openings[first_opening:] if o.label == "dg-auth-first" and o.values is not None]
    opened = {o.label: o.values for o in ctx.openings[first_opening:] if o.values is not None}
    accept = (((opened["dg-auth-accept"].reshape(-1, 1) >> torch.arange(64)) & 1).reshape(-1).numpy()
              if "dg-auth-accept" in opened else np.zeros(1))  # bits packed 64 to a word
    masked = opened["dg-auth-a2b"].reshape(-1, 2)[:, 0].numpy() if "dg-auth-a2b" in opened else np.zeros(1)
    hits = np.flatnonzero(accept == 1)
    coin_rows, own_rows, counts = [], [], []
    for k, (coins, own) in enumerate(zip(plan_passes, owns)):
        n = coins[0].shape[0]
        if not firsts:  # dg-auth/10 (malicious_sampler "fewer-rounds"): every field in the pass's one draw
            coin_rows.append(coins[0])
            own_rows.append(own[0])
            counts.append((n, ONE_DRAW))
            continue
        passed = ((firsts[k].reshape(-1, 1) >> torch.arange(64)) & 1).reshape(-1)[:n].numpy().astype(bool)
        coin_rows.append(assemble(plan, coins[0], coins[1] if len(coins) > 1 else None, passed))
        own_rows.append(assemble(plan, own[0], own[1] if len(own) > 1 else None, passed))
        counts.append((n, int(passed.sum())))
    return {"coin": np.concatenate(coin_rows), "own": np.concatenate(own_rows), "passes": len(plan_passes),
            "counts": counts, "first_accepted": int(hits[0]) if hits.size else int(accept.size),
            "masked_t": int(masked[0]), "masked_window": _masked_window(ctx, first_opening, firsts,
                                                                             len(plan_passes[0][0]))}


def _masked_window(ctx: MpcContext, first_opening: int, firsts: list, n: int) -> int:
    """The opened first-factor window ⊕ ρ (the masked mux, 6 bits) of the candidate the call released: the first
    pass's first accepted survivor (the opened first-factor and accept bits say which), else candidate 0; under
    dg-auth/10 (no first-factor opening) the first accepted candidate, its window among every group's in its
    row of the one opening of masked windows."""
    from mpcdp.noise.auth_fields import FIRST

    def bits(words: torch.Tensor) -> np.ndarray:  # opened bits come packed 64 to a word
        return bit_authenticated.unpack(words.reshape(-1), 64 * words.numel()).numpy()

    selects, accepts = ([o.values for o in ctx.openings[first_opening:] if o.label == label and o.values is not None]
                        for label in ("dg-auth-select", "dg-auth-accept"))
    if not selects:
        return 0
    width, row, start = dg.GROUPS[FIRST][1], dg.GROUPS[FIRST][1], 0
    if firsts:
        survivors = np.flatnonzero(bits(firsts[0]))
        hits = np.flatnonzero(bits(accepts[0])[:survivors.size]) if accepts else np.zeros(0, dtype=int)
        chosen = int(survivors[hits[0]]) if hits.size else 0
    else:
        hits = np.flatnonzero(bits(accepts[0])[:n]) if accepts else np.zeros(0, dtype=int)
        chosen = int(hits[0]) if hits.size else 0
        row, start = sum(w for _, w, _ in dg.GROUPS), sum(w for _, w, _ in dg.GROUPS[:FIRST])
    window = bits(selects[0])[row * chosen + start:row * chosen + start + width]
    return int((window << np.arange(width)).sum())


def assemble(plan: dg.DiscreteGaussianPlan, first: np.ndarray, second: np.ndarray | None,
             passed: np.ndarray) -> np.ndarray:
    """Candidates' bit rows (n, width) in :data:`~mpcdp.noise.discrete_gaussian.RANDOM_FIELDS` order from a
    pass's two requests: the first stage's bits of every candidate ((n, ·), the
    :data:`~mpcdp.noise.auth_gaussian.FIRST_FIELDS`) and the survivors' ((k, ·), the
    :data:`~mpcdp.noise.auth_gaussian.SECOND_FIELDS`), placed at the first k rows ``passed`` marks (none: no survivor). A row's
    second-stage bits are 0 where none were placed: a candidate that fails the first factor is rejected whatever
    they are, so :func:`decode` reads the rows as the sampler decided them."""
    from mpcdp.noise.auth_fields import FIRST_FIELDS, SECOND_FIELDS, dealt_widths

    widths = dealt_widths(plan)
    n, columns, at = first.shape[0], {}, 0
    for name in FIRST_FIELDS:
        columns[name] = first[:, at:at + widths[name]]
        at += widths[name]
    rows = np.flatnonzero(passed)[:0 if second is None else second.shape[0]]
    at = 0
    for name in SECOND_FIELDS:
        block = np.zeros((n, widths[name]), dtype=np.uint8)
        if second is not None:
            block[rows] = second[:rows.size, at:at + widths[name]]
        columns[name] = block
        at += widths[name]
    return np.concatenate([columns[name] for name in dg.RANDOM_FIELDS], 1)


# -- the statistics -----------------------------------------------------------------------------------------

def _match(values: np.ndarray, samples: np.ndarray) -> tuple[np.ndarray, bool]:
    return (values[:, None] == samples[None, :]).astype(float), False


def _count(values: np.ndarray, samples: np.ndarray, sigma: float) -> tuple[np.ndarray, bool]:
    return np.outer(values - values.mean(), (samples / sigma) ** 2 - 1), True


def _against(values: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, bool]:
    return np.outer(values - values.mean(), targets - targets.mean()), True


def released_windows(plan: dg.DiscreteGaussianPlan, samples: np.ndarray) -> np.ndarray:
    """The first factor's window (T's bits at dg.GROUPS[FIRST]) of each released sample x: T = x²·G + Λ of x's
    piece, a function of x alone, so it is what a party's ``masked window`` must not reveal."""
    from mpcdp.noise.auth_fields import FIRST

    x = np.asarray(samples, dtype=np.int64)
    low, width, _ = dg.GROUPS[FIRST]
    return (dg.exponent(plan, x, dg.piece_of(plan, x)) >> low) & ((1 << width) - 1)


def power(statistic: str, sigma: float, calls: int, alpha: float, tests: int) -> tuple[float, str]:
    """(power, the alternative) of ``statistic`` at level α/``tests``."""
    if statistic in ("dealt bits", "coin", "own bit parts", "pooled bit parts"):
        return match_power(calls, 1 / (2 * math.sqrt(math.pi) * sigma), alpha / tests), (
            f"a role that knows the candidates' bits in {POWER_FRACTION:.0%} of the calls")
    z = POWER_CORRELATION * math.sqrt(calls)
    return float(stats.norm.cdf(z - stats.norm.isf(alpha / tests / 2))), (
        f"a correlation of {POWER_CORRELATION} between the role's value and x²/σ²")


def match_power(calls: int, q: float, level: float) -> float:
    """Power of a match statistic (Poisson tail at the permutation mean, :func:`_test`) at ``level`` when a
    role's value equals x in a fraction :data:`POWER_FRACTION` of the calls and by chance (rate q) otherwise:
    P(matches >= t*), t* the fewest matches it reports (the permutation mean then about t/calls + (calls − 1)·q)."""
    for t in range(1, calls + 1):
        if stats.poisson.sf(t - 1, t / calls + (calls - 1) * q) < level:
            return float(stats.binom.sf(t - 1, calls, POWER_FRACTION + (1 - POWER_FRACTION) * q))
    return 0.0


def _dealer_bits(plan: dg.DiscreteGaussianPlan, view: list, requests: list[int], counts: list[list[tuple[int, int]]]
                 ) -> list[np.ndarray]:
    """Per call, the dealer's R for every pass's candidates as full rows (:func:`assemble`), from its recorded
    requests (``requests``: how many party 0 made in each call; the first is the MAC key's, before the first
    call) and each pass's (candidates, survivors), which its request sizes show it: a pass's one-hot indices and
    first dealt bits are every candidate's first stage, the next bits (with survivors) the survivors' (survivors
    :data:`ONE_DRAW`: dg-auth/10, the first bits are every field's). The dealer does not see which
    candidates survived; it places the survivors' rows where the first factor passes on its own R (where the
    bits are R, as under the planted leak, exactly the survivors)."""
    from mpcdp.noise.auth_fields import FIRST_FIELDS

    start = len(view) - sum(requests)
    out = []
    for made, passes in zip(requests, counts):
        served = view[start:start + made]
        start += made
        dealt = iter(d["bits"].numpy().astype(np.uint8) for _, _, d in served if "bits" in d)
        indices = iter(d["one_hot_index"].numpy() for _, _, d in served if "one_hot_index" in d)
        rows = []
        for n, survivors in passes:
            index = (next(indices).reshape(n, 1) >> np.arange(dg.INDEX_BITS)) & 1  # the one-hot's R, as bits
            first = np.concatenate([index.astype(np.uint8), next(dealt).reshape(n, -1)], 1)
            if survivors == ONE_DRAW:
                rows.append(first)
                continue
            second = next(dealt).reshape(survivors, -1) if survivors else None
            rows.append(assemble(plan, first, second, _first_passes(plan, first, FIRST_FIELDS)))
        out.append(np.concatenate(rows))
    return out


def _first_passes(plan: dg.DiscreteGaussianPlan, first: np.ndarray, names: tuple[str, ...]) -> np.ndarray:
    """Whether the first factor passes on these first-stage bit rows (the plaintext rule)."""
    from mpcdp.noise.auth_fields import READ_FROM, dealt_widths
    from mpcdp.noise.auth_gaussian_cost import first_factor_passes

    widths, fields, at = dealt_widths(plan), {}, 0
    for name in names:
        low = READ_FROM.get(name, 0)
        chunk = first[:, at:at + widths[name]].astype(np.int64)
        fields[name] = (chunk << np.arange(low, low + widths[name], dtype=np.int64)).sum(1)
        at += widths[name]
    return first_factor_passes(plan, fields)


def _roles(result, plan: dg.DiscreteGaussianPlan, alpha: float, plant: str | None) -> list[dict[str, Any]]:
    """Each role's report entry: the sampler's statistics, then (with releases) the releases'
    (:mod:`mpcdp.jobs.auth_release_views`), in one Bonferroni."""
    from mpcdp.jobs import auth_release_views as rel

    zero = result.values[0]
    samples = np.array(zero["samples"], dtype=np.int64)
    calls = samples.size
    views = [value["views"] for value in result.values]
    everyone = [decode(plan, np.bitwise_xor.reduce([v[i]["own"] for v in views]) ^ views[0][i]["coin"])
                for i in range(calls)]
    if everyone != samples.tolist():  # the views are the run's: every party together decodes the noise
        raise ConfigError("the audit's views do not decode the released noise: the record is misaligned")
    released = [value["releases"] for value in result.values]
    releases = len(released[0])
    noise = np.stack([v["noise"] for v in released[0]]) if releases else np.zeros((0, 1), dtype=np.int64)
    view = result.dealer["view"]
    if releases:
        rel.check_views(released, view, rel.PLANTED_PARTY if plant == rel.WITNESS else None)
    found: list[tuple[str, str, list, list, dict]] = []
    requests = np.array(zero["requests"], dtype=float)
    if len(view) != zero["all_requests"]:
        raise ConfigError(f"the dealer recorded {len(view)} requests where party 0 made {zero['all_requests']}")
    dealt = _dealer_bits(plan, view[:zero["sampler_requests"]], zero["requests"], [v["counts"] for v in views[0]])
    found.append(("dealer", "dealer", [
        ("dealt bits", *_match(np.array([decode(plan, d) for d in dealt]), samples)),
        ("request sizes", *_count(requests, samples, plan.sigma))],
        rel.dealer_tests(view, released, noise, plan.sigma) if releases else [],
        _dealer_extra(view, released) if releases else {}))
    for rank, mine in enumerate(views):
        found.append((f"party {rank}", "party", [
            ("coin", *_match(np.array([decode(plan, v["coin"]) for v in mine]), samples)),
            ("own bit parts", *_match(np.array([decode(plan, v["own"] ^ v["coin"]) for v in mine]), samples)),
            ("accept bits", *_count(np.array([v["first_accepted"] for v in mine], float), samples, plan.sigma)),
            ("masked T", *_count(np.array([v["masked_t"] / 2.0 ** 63 for v in mine]), samples, plan.sigma)),
            ("masked window", *_against(np.array([v["masked_window"] for v in mine], float),
                                        released_windows(plan, samples)))],
            rel.party_tests(released[rank], noise, released, plan.sigma) if releases else [],
            {"release_received_from": sorted(released[rank][0]["masked"])} if releases else {}))
    coalition = views[:-1]  # every data party but the last: a coalition the threat model says learns nothing
    if len(coalition) >= 2:
        name = "parties 0 and 1" if len(coalition) == 2 else f"parties 0–{len(coalition) - 1}"
        pooled = [decode(plan, np.bitwise_xor.reduce([v[i]["own"] for v in coalition]) ^ views[0][i]["coin"])
                  for i in range(calls)]
        found.append((name, "coalition", [("pooled bit parts", *_match(np.array(pooled), samples))],
                      rel.coalition_tests(released, noise, plan.sigma) if releases else [], {}))
    return [_entry(role, kind, tests, release_tests, extra, sigma=plan.sigma, calls=calls, releases=releases,
                   alpha=alpha) for role, kind, tests, release_tests, extra in found]


def _dealer_extra(view: list, released: list[list[dict]]) -> dict[str, Any]:
    """The dealer's entry's release counts: the requests it served in the releases, and their kinds."""
    from mpcdp.jobs.auth_release_views import windows

    served = windows(view, released)
    return {"release_requests": sum(len(w) for w in served),
            "release_request_kinds": sorted({name for w in served for name, _, _ in w})}


def _test(name: str, scores: np.ndarray, two_sided: bool):
    """A statistic's (z, p): a count's permutation test (its p sampled later, at the role's level:
    :func:`mpcdp.jobs.permutation.confirmed`); a match's p from the Poisson tail at the permutation mean (matches
    are rare: the normal tail would overstate one or two chance matches)."""
    return permutation_statistic(name, scores, two_sided=True) if two_sided else Statistic(name, *match_test(scores))


def _entry(role: str, kind: str, tests: list, release_tests: list, extra: dict[str, Any], *, sigma: float,
           calls: int, releases: int, alpha: float) -> dict[str, Any]:
    """A role's report: its verdict over all its statistics, the sampler's and the releases' (Bonferroni), the
    most significant, the power of its first statistic and (with releases) the smallest release power."""
    from mpcdp.jobs import release_views

    found = [_test(name, scores, two) for name, scores, two in tests]
    found += [_test(name, scores, True) for name, scores, _ in release_tests]
    found, p = role_verdict_p(found, alpha)
    worst = min(found, key=lambda s: s.p)
    pw, against = power(found[0].name, sigma, calls, alpha, len(found))
    entry = {"role": role, "kind": kind, "verdict": "dependent" if p < alpha else "independent",
             "statistic": worst.name, "z": round(worst.z, 3), "p": p, "power": round(pw, 4), "power_against": against,
             "statistics": [s.report() for s in found]}
    if release_tests:
        entry["release_power"] = round(min(release_views.power(coordinates, releases, alpha, len(found))
                                           for _, _, coordinates in release_tests), 4)
        entry["release_power_against"] = release_views.POWER_AGAINST
    return entry | extra


def run_auth_views(*, parties: int, calls: int, sigma: float, alpha: float, plant: str | None,
                   releases: int = 0, dim: int | None = None, bound: bool = False, progress=None,
                   sampler: str = "fewer-bytes", openings: str = "star") -> dict[str, Any]:
    """Run the audit under ``security = "malicious"`` (module docstring; the releases,
    :mod:`mpcdp.jobs.auth_release_views`; ``bound``, implied by ``plant`` "witness": the releases bounded, as
    training runs them, :mod:`mpcdp.jobs.auth_bounded_views`; ``sampler``: the ``malicious_sampler`` plan;
    ``openings``: ``[mpc] openings``) and return its report."""
    from mpcdp.jobs.auth_release_views import WITNESS, audit_bound
    import os

    from mpcdp.config import MpcConfig
    from mpcdp.noise.auth_gaussian import CIRCUITS
    from mpcdp.noise.who_knows import EVERY_PARTY, noise_known_to
    from mpcdp.runtime.harness import run_job
    from mpcdp.runtime.party import RECORD_DEALER_VIEW

    from mpcdp.validation import check_integer, check_number

    check_integer(parties, "--parties", minimum=2)
    dim = DEFAULT_DIM if dim is None else dim
    check_integer(calls, "--calls", minimum=10)
    check_integer(releases, "--releases", minimum=0)
    if releases:
        check_integer(releases, "--releases", minimum=10)
    check_integer(dim, "--dim", minimum=1)
    check_number(alpha, "--alpha", low=MIN_ALPHA, high=0.5, low_open=False,
                 note="each role's p is sampled from its permutation distribution down to α")
    check_number(sigma, "--sigma", low=dg.SIGMA_MIN, high=dg.SIGMA_MAX, low_open=False)
    if plant not in (None, "dealer", WINDOW, PLANT, WITNESS):
        raise ConfigError("--plant-leak under --security malicious must be 'dealer', 'window', 'release' or "
                          f"'witness'. Found {plant!r}.")
    if plant in (PLANT, WITNESS) and releases < 1:
        raise ConfigError(f"--plant-leak {plant} needs --releases >= 10")
    bound = bound or plant == WITNESS
    if bound and releases < 1:
        raise ConfigError("--bound audits the bounded releases: it needs --releases >= 10")
    if plant == PLANT and bound:
        raise ConfigError("--plant-leak release plants its leak in the unbounded release's inputs: drop --bound")
    plan = dg.plan_for(sigma)
    config = MpcConfig(parties=parties, provider="dealer", security="malicious", malicious_sampler=sampler,
                       timeout_s=600.0, openings=openings)
    saved = os.environ.get(RECORD_DEALER_VIEW)
    os.environ[RECORD_DEALER_VIEW] = "1"
    try:
        result = run_job(auth_views_party, config, args=(calls, sigma, plant, releases, dim, bound),
                         progress=progress, job={"name": "audit views", "security": "malicious", "calls": calls,
                                                 "sigma": sigma, "plant": plant, "releases": releases, "dim": dim,
                                                 "bound": bound, "malicious_sampler": sampler, "openings": openings})
    finally:
        if saved is None:
            os.environ.pop(RECORD_DEALER_VIEW, None)
        else:
            os.environ[RECORD_DEALER_VIEW] = saved
    return {"provider": "dealer", "security": "malicious", "parties": parties, "noise_committee": parties,
            "calls": calls, "releases": releases, "dim": dim, "sigma_units": plan.sigma, "alpha": alpha, "plant_leak": plant,
            "bound": audit_bound(sigma, dim) if bound and releases else None, "circuit": CIRCUITS[sampler].split(":")[0], "malicious_sampler": sampler,
            "openings": openings,
            "noise_known_to": noise_known_to(drawn_by=EVERY_PARTY, provider="dealer", parties=parties),
            "roles": _roles(result, plan, alpha, plant)}
