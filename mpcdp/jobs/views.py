"""`mpcdp audit views`: is each role's whole view independent of the noise it must not learn? Measured.

The in-MPC sampler (:mod:`mpcdp.noise.secure_gaussian`) is run as many one-sample calls, by real party
processes (and the dealer) under the chosen provider; each process records its whole view of every call:

* a member of the noise committee: its own share of each candidate's fields, the committee's coin words
  (which it knows), every opened value (masked words, the first-factor and accept bits) and the public counts;
* a data party outside the committee: the committee's public counts (all it receives);
* the dealer: every request it serves, with its size, and every word it draws that bears on the noise (each
  rotation pair's word R, which is XORed with the coin into a factor's uniform word; under the planted leak
  the factor tables' own words).

The sample of every call is then opened — for this audit only — and each role's view is tested against it.
A statistic is a score s(view_i, x_j) that a role can compute from its own view of call i and a value x_j;
its total over the calls, Σ_i s(view_i, x_i), is compared with its distribution when the values are permuted
across calls (calls are i.i.d., so under independence every permutation is as likely). The permutation
distribution's mean and variance are exact (Hoeffding's combinatorial central limit theorem) and give z; p is
the sampled permutation distribution's (:mod:`mpcdp.jobs.permutation`: valid at every level, where the normal
tail alarmed far above its level on a count that is constant in most calls): one-sided for a score that a leak
raises, two-sided for a correlation.
The statistics:

``factor words`` (dealer, members): would candidate 0 of the call's first pass be accepted at value x, were
    the role's words (R for the dealer, the coin's S for a member) the factors' uniform words? With the first
    survivor's words for the factors after the first. Under circuit dg-mpc/5 the dealer's words *were* those
    words, and candidate 0 is the released one in about two calls of three.
``request sizes`` (dealer): the first pass's survivor count, which the size of the dealer's next request
    tells it, against x²/σ² (two-sided).
``accept bits`` (members): the index of the first accepted candidate against x²/σ² (two-sided).
``own fields`` (members): whether candidate 0, computed from the member's own field words alone, equals x
    (a rare match: p from the Poisson tail at the permutation mean, :func:`match_test`).
``counts`` (non-members): the committee's accepted count against x²/σ² (two-sided).

A role's p is the smallest of its statistics' times their number (Bonferroni); it is reported ``dependent``
when p < α. Power is stated for each role's first statistic: for ``factor words`` against a role that holds
the factors' true words (the planted leak), from a plaintext simulation of the sampler at the audit's size;
for a count (``accept bits``, ``counts``, ``request sizes``) against a correlation of 0.25 with x²/σ². Under
the planted dealer tables the members hold no factor words (there is no coin), so they have no ``factor
words`` statistic.

Then ``releases`` training releases of ``dim`` coordinates (:mod:`mpcdp.jobs.release_views`: the noise
sampled in MPC, added to every party's private input, the sum opened; each role's whole view of the
release, every share it receives in the opening included). Their statistics join each role's, named
``release: …``, in the same Bonferroni; the role's entry adds ``release_power`` (the smallest over its
release statistics), the senders whose shares a data party received (``release_received_from``) and the
requests the dealer served during the releases (``release_requests``).

``plant`` gives a role a known dependence, to show that the audit finds it: ``dealer``, the dealer's own-word
factor tables of circuit dg-mpc/5 (:func:`mpcdp.mpc.bernoulli.planted_dealer_tables`); ``party J`` for a
member J, factor words equal to the coin (:func:`mpcdp.mpc.bernoulli.planted_member_words`; the words must
agree, so every member holds them); ``release``, party 1's release share without its pairwise masks
(:func:`mpcdp.mpc.masks.planted_unmasked`). The sampler's plants cover its one-sample calls only, the
release plant the releases only. Cost: what the sampler costs for ``calls`` one-sample calls, plus one
opening per call; and the releases' (:mod:`mpcdp.jobs.release_views`).
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
if TYPE_CHECKING:
    from scipy import stats

from mpcdp.errors import ConfigError
from mpcdp.jobs.permutation import MIN_ALPHA, Statistic, match_test, permutation_statistic, role_verdict_p
from mpcdp.mpc.context import MpcContext
from mpcdp.mpc.shared import Shared
from mpcdp.noise import discrete_gaussian as dg
from mpcdp.noise.gaussian_factors import FIRST_GROUP, OTHER_GROUPS

FACTOR_FIELDS = (f"v{FIRST_GROUP}", *(f"v{g}" for g in OTHER_GROUPS), "v_low")
REST_NAMES = (*(f"v{g}" for g in OTHER_GROUPS), "v_low")  # the rest stage's words, in the order drawn
DEFAULT_CALLS, DEFAULT_SIGMA, DEFAULT_ALPHA = 400, 16.0, 1e-4
POWER_CORRELATION = 0.25  # the alternative for the count statistics' stated power


# -- the parties' side ---------------------------------------------------------------------------------------

def views_party(ctx: MpcContext, calls: int, sigma_units: float, plant: str | None, releases: int = 0,
                dim: int = 1) -> dict[str, Any]:
    """Run ``calls`` one-sample calls of the in-MPC sampler on this party, recording its view of each; open
    every sample (audit only). Then ``releases`` training releases of ``dim`` coordinates
    (:func:`mpcdp.jobs.release_views.release_party`). Returns this party's views, the opened samples, the
    releases' views and (party 0) the dealer requests made before the releases."""
    from mpcdp import adapter
    from mpcdp.jobs.release_views import PLANT, release_party
    from mpcdp.mpc import bernoulli
    from mpcdp.noise.secure_gaussian import sample_discrete_gaussian

    plan = dg.plan_for(sigma_units)
    ctx.keep_values = True
    planted = contextlib.nullcontext()
    if plant == "dealer":
        planted = bernoulli.planted_dealer_tables()
    elif plant is not None and plant != PLANT:
        planted = bernoulli.planted_member_words()
    members = ctx.committee_members()
    views, samples = [], []
    with planted:
        for call in range(calls):
            first_opening, first_draw = len(ctx.openings), len(ctx.draws)
            counts: dict[str, Any] = {}
            shares = sample_discrete_gaussian(ctx, 1, plan, stats=counts)
            views.append(_member_view(ctx, first_opening, first_draw, counts) if ctx.rank in members
                         else {"accepted": counts["accepted"], "candidates": counts["candidates"]})
            samples.append(int(ctx.reveal(Shared(shares, 0), label="view-audit sample",
                                          reason="the view audit only: the noise, to test each view against")[0]))
            ctx.progress(call + 1, calls + releases)
    sampler_requests = adapter.dealer_requests_made()
    released = release_party(ctx, releases, dim, sigma_units, plant, done=calls, total=calls + releases)
    return {"views": views, "samples": samples, "member": ctx.rank in members, "releases": released,
            "sampler_requests": sampler_requests, "requests": adapter.dealer_requests_made()}


def _member_view(ctx: MpcContext, first_opening: int, first_draw: int, counts: dict) -> dict[str, Any]:
    """What a member holds of one call's first pass: its fields, the coin words, the opened bits, counts."""
    draws = ctx.draws[first_draw:]
    fields = next(v for label, v in draws if label == "dg-fields")
    coin = {label: v for label, v in draws if label.endswith("-coin")}
    opened = [(o.label, o.values) for o in ctx.openings[first_opening:]]
    first_bits = next((v for label, v in opened if label == "dg-first-bits"), None)
    accept_bits = next((v for label, v in opened if label == "dg-accept-bits"), None)
    candidates, survivors = counts["pass_candidates"][0], counts["pass_survivors"][0]
    view = {"fields": {k: v[:1].copy() for k, v in fields.items()}, "candidates": candidates,
            "survivors": survivors, "accepted": counts["accepted"],
            "all_passes": list(zip(counts["pass_candidates"], counts["pass_survivors"]))}
    source, rank = _source(first_bits, accept_bits, candidates) if survivors else (None, 0)
    view["first_accepted"] = candidates if source is None else source
    source = source or 0
    if "dg-first-coin" in coin:
        view["first_word"] = int(coin["dg-first-coin"]["words"][source])
    if "dg-rest-coin" in coin and survivors:
        words = coin["dg-rest-coin"]["words"]
        view["rest_words"] = [int(words[i * survivors + rank]) for i in range(len(REST_NAMES))]
    return view


def _source(first_bits, accept_bits, candidates: int) -> tuple[int | None, int]:
    """(the first pass's first accepted candidate, its rank among the first factor's survivors), read from
    the opened bits as every member reads them; (None, 0) where the pass accepted none."""
    passed = [i for i in range(candidates) if (int(first_bits[i // 64]) >> (i % 64)) & 1]
    for rank, i in enumerate(passed):
        if (int(accept_bits[rank // 64]) >> (rank % 64)) & 1:
            return i, rank
    return None, 0


# -- the dealer's view, aligned with the calls --------------------------------------------------------------

def _is_factor_request(function: str, args: list) -> bool:
    """A request whose rows are factors' words: the circuit's rotation pairs of 62-bit words' 4-bit chunks (from
    a factor's first chunk to the top one, :func:`mpcdp.mpc.bernoulli.coin_uniform`), or (planted leak) the
    factor tables."""
    if function == "mpcdp_FactorTables":
        return True
    top = 4 * ((dg.WORD - 1) // 4)
    return (function == "mpcdp_OneHotPairs" and len(args) >= 3 and args[2] == 16 and len(args[1]) > 0
            and [list(w) for w in args[1]] == [[low, min(4, dg.WORD - low)] for low in range(args[1][0][0], top + 1, 4)])


@functools.lru_cache(maxsize=2)
def _stage_requests(first: bool, tables: bool) -> int:
    """Factor requests a stage makes: with tables one; as a circuit one per run of its factors with the same
    first chunk (:func:`mpcdp.mpc.bernoulli.coin_runs`)."""
    from mpcdp.mpc.bernoulli import coin_runs
    from mpcdp.noise.gaussian_factors import factor_forms

    if tables:
        return 1
    firsts = [form.first_chunk for form in factor_forms((FIRST_GROUP,) if first else OTHER_GROUPS, low=not first)]
    return sum(1 for start, _ in coin_runs(firsts, len(firsts)) if start < -(-dg.WORD // 4))


def dealer_views(dealer_view: list, calls: list[dict]) -> list[dict[str, Any]]:
    """The dealer's view of each call's first pass, from its recorded requests: the words it drew for
    candidate 0's first factor and the first survivor's other factors, and the survivor count its next
    request's size tells it. ``calls``: party 0's views (their passes, public counts)."""
    requests = [(f, a, d) for f, a, d in dealer_view if _is_factor_request(f, a)]
    tables = bool(requests) and requests[0][0] == "mpcdp_FactorTables"
    out, at = [], 0

    def stage(first: bool) -> tuple[str, dict]:
        nonlocal at
        taken, at = requests[at:at + _stage_requests(first, tables)], at + _stage_requests(first, tables)
        if taken[0][0] == "mpcdp_FactorTables":
            return taken[0][0], taken[0][2]
        return taken[0][0], {"r": torch.cat([d["r"].reshape(-1) for _, _, d in taken])}

    for call in calls:
        view: dict[str, Any] = {}
        for p, (n, s) in enumerate(call["passes"]):
            function, draws = stage(True)
            if p == 0:
                view["first_word"] = _word(function, draws, 0, 0, n)
                view["survivors"] = s
            if s:
                function, draws = stage(False)
                if p == 0:
                    view["rest_words"] = [_word(function, draws, 0, i, s) for i in range(len(REST_NAMES))]
        out.append(view)
    if at != len(requests):
        raise ConfigError(f"the dealer served {len(requests)} factor requests where the calls made {at}")
    return out


def _word(function: str, draws: dict, row: int, factor: int, rows: int) -> int:
    """The dealer's word for ``factor`` of ``row``: a table's own word, or the rotation pair's R (the rest
    stage draws its factors' words one block of ``rows`` after another)."""
    mask = (1 << dg.WORD) - 1
    if function == "mpcdp_FactorTables":
        w = draws["w"]
        # the rest tables: the five groups, the cut's factor, then the low bits' bit factor
        column = factor if factor < len(OTHER_GROUPS) or w.shape[1] == 1 else w.shape[1] - 1
        return int(w[row, column]) & mask
    return int(draws["r"][factor * rows + row]) & mask


# -- the statistics -----------------------------------------------------------------------------------------

def would_accept(plan: dg.DiscreteGaussianPlan, views: list[dict], samples: np.ndarray) -> np.ndarray:
    """(calls, calls): whether call i's candidate (the source where the role knows it, else candidate 0)
    would be accepted at value x_j under view i's words (the first factor's alone where the pass had no
    survivor)."""
    first = np.array([v["first_word"] for v in views], dtype=np.int64)
    has_rest = np.array(["rest_words" in v for v in views])
    rest = np.array([v.get("rest_words", [0] * len(REST_NAMES)) for v in views], dtype=np.int64)
    return accept_with(plan, first[:, None], rest[:, None, :], has_rest[:, None], samples[None, :])


def first_factor_passes(word: np.ndarray, T: np.ndarray) -> np.ndarray:
    """The first factor's decision (group :data:`FIRST_GROUP` of the plaintext rule) for uniform words
    ``word`` at exponents ``T``."""
    low, width, _ = dg.GROUPS[FIRST_GROUP]
    return dg.below(word, dg.group_thresholds()[FIRST_GROUP][(T >> low) & ((1 << width) - 1)], dg.WORD)


def accept_with(plan: dg.DiscreteGaussianPlan, first: np.ndarray, rest: np.ndarray, has_rest: np.ndarray,
                x: np.ndarray) -> np.ndarray:
    """The plaintext rule's decision at values ``x`` with the first factor's word ``first`` and the other
    factors' words ``rest`` (last axis in :data:`REST_NAMES` order; 62-bit, v_low's top F bits read), only
    the first factor where ``has_rest`` is False; every argument broadcast together."""
    x = np.asarray(x, dtype=np.int64)
    T = dg.exponent(plan, x, dg.piece_of(plan, x))
    shape = np.broadcast_shapes(first.shape, rest.shape[:-1], has_rest.shape, T.shape)
    T = np.broadcast_to(T, shape)
    passed = first_factor_passes(np.broadcast_to(first, shape), T)
    fields = {f"v{FIRST_GROUP}": np.broadcast_to(first, shape)}
    for i, name in enumerate(REST_NAMES):
        word = np.broadcast_to(rest[..., i], shape)
        fields[name] = word >> (dg.WORD - dg.F) if name == "v_low" else word
    return np.where(np.broadcast_to(has_rest, shape), dg.accept(plan, T, fields), passed).astype(float)


def _correlation(values: np.ndarray, samples: np.ndarray, sigma: float) -> np.ndarray:
    return np.outer(values - values.mean(), (samples / sigma) ** 2 - 1)


def role_statistics(role: str, views: list[dict], samples: np.ndarray, plan: dg.DiscreteGaussianPlan) -> list[Statistic]:
    """Every statistic of ``role`` (``dealer``, ``member`` or ``non-member``), in the order listed above."""
    tests: list[tuple[str, np.ndarray, bool]] = []
    if role in ("dealer", "member") and all("first_word" in v for v in views):  # members hold no factor words
        tests.append(("factor words", would_accept(plan, views, samples), False))  # under the planted tables
    if role == "dealer":
        tests.append(("request sizes", _correlation(np.array([v["survivors"] for v in views], float), samples,
                                                    plan.sigma), True))
    if role == "member":
        tests.append(("accept bits", _correlation(np.array([v["first_accepted"] for v in views], float), samples,
                                                  plan.sigma), True))
        own = np.array([dg.candidate_values(plan, v["fields"])[0][0] for v in views])
        matches = (own[:, None] == samples[None, :]).astype(float)
    if role == "non-member":
        tests.append(("counts", _correlation(np.array([v["accepted"] for v in views], float), samples, plan.sigma),
                      True))
    found = [permutation_statistic(name, scores, two_sided=two) for name, scores, two in tests]
    return found + ([Statistic("own fields", *match_test(matches))] if role == "member" else [])


# -- power ----------------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=8)
def factor_word_effect(sigma_units: float, calls: int = 20_000, seed: int = 2026) -> tuple[float, float, float]:
    """(null mean, null standard deviation, mean with the leak) of the ``factor words`` score for a role that
    holds candidate 0's words (the dealer) and of one whose words are independent, and the mean for a role
    that also knows the source candidate (a member), from a plaintext simulation of ``calls`` one-sample
    calls of the sampler (seeded: a property of the test, not of a run). Returns (shift for candidate 0,
    null standard deviation, shift for the source)."""
    from mpcdp.noise.secure_gaussian import candidates_wanted

    plan = dg.plan_for(sigma_units)
    rng = np.random.default_rng(seed)
    n = int(candidates_wanted(plan, 1))
    fields = dg.draw_fields(plan, calls * n, lambda k: rng.integers(-(2**63), 2**63 - 1, size=k, dtype=np.int64,
                                                                     endpoint=True))
    values, piece = dg.candidate_values(plan, fields)
    T = dg.exponent(plan, values, piece)
    ok = dg.accept(plan, T, fields).reshape(calls, n)
    first = first_factor_passes(fields[f"v{FIRST_GROUP}"], T).reshape(calls, n)
    kept = ok.any(1)
    rows = np.arange(calls)[kept]
    source, survivor = ok[kept].argmax(1), first[kept].argmax(1)
    x = values.reshape(calls, n)[rows, source]
    words = {name: fields[name].reshape(calls, n) for name in FACTOR_FIELDS}

    def words_of(candidate_first, candidate_rest):
        rest = np.stack([words[name][rows, candidate_rest] << (dg.WORD - dg.F) if name == "v_low"
                         else words[name][rows, candidate_rest] for name in REST_NAMES], 1)
        return words[f"v{FIRST_GROUP}"][rows, candidate_first], rest

    yes = np.ones(rows.size, dtype=bool)
    dealer_first, dealer_rest = words_of(np.zeros_like(source), survivor)
    member_first, member_rest = words_of(source, survivor)  # the source is the first survivor accepted
    shuffled = np.roll(np.arange(rows.size), 1)
    null = accept_with(plan, dealer_first, dealer_rest, yes, x[shuffled])
    dealer = accept_with(plan, dealer_first, dealer_rest, yes, x)
    member = accept_with(plan, member_first, member_rest, yes, x)
    return float(dealer.mean() - null.mean()), float(null.std()), float(member.mean() - null.mean())


def power(statistic: str, kind: str, sigma_units: float, calls: int, alpha: float, tests: int) -> tuple[float, str]:
    """(power, the alternative it is against) of a role's first ``statistic`` (a role of ``kind``) at level
    α/``tests`` (its share of the role's Bonferroni level)."""
    from scipy import stats

    if statistic == "factor words":
        dealer_shift, spread, member_shift = factor_word_effect(sigma_units)
        z = (dealer_shift if kind == "dealer" else member_shift) * math.sqrt(calls) / spread
        return float(stats.norm.cdf(z - stats.norm.isf(alpha / tests))), (
            "a role holding the factors' true words (dg-mpc/5's dealer), simulated in plaintext")
    z = POWER_CORRELATION * math.sqrt(calls)
    return float(stats.norm.cdf(z - stats.norm.isf(alpha / tests / 2))), (
        f"a correlation of {POWER_CORRELATION} between the role's count and x²/σ²")


# -- the audit ------------------------------------------------------------------------------------------------

def check_plant(plant: str | None, provider_has_dealer: bool, members: int, releases: int = 0) -> None:
    from mpcdp.jobs.release_views import PLANT

    if plant is None:
        return
    if plant == "dealer":
        if not provider_has_dealer:
            raise ConfigError("--plant-leak dealer needs a provider with a dealer")
        return
    if plant == PLANT:
        if releases < 1:
            raise ConfigError("--plant-leak release needs --releases >= 1")
        return
    if plant.startswith("party "):
        try:
            rank = int(plant.split()[1])
        except ValueError:
            rank = -1
        if 0 <= rank < members:
            return
    raise ConfigError(f"--plant-leak must be 'dealer', 'release' or 'party J' for a member J of the noise "
                      f"committee (0..{members - 1}). Found {plant!r}.")


def run_views(*, parties: int, provider: str, calls: int = DEFAULT_CALLS, sigma: float = DEFAULT_SIGMA,
              alpha: float = DEFAULT_ALPHA, plant: str | None = None, committee: int = 3,
              releases: int | None = None, dim: int | None = None, progress=None,
              openings: str = "star") -> dict[str, Any]:
    """Run the audit (module docstring; the releases, :mod:`mpcdp.jobs.release_views`; ``openings``: ``[mpc]
    openings``, what each member receives of an opening) and return its report: one entry per role."""
    from mpcdp import providers
    from mpcdp.config import MpcConfig
    from mpcdp.jobs import release_views
    from mpcdp.noise.secure_gaussian import CIRCUIT
    from mpcdp.noise.who_knows import COMMITTEE, noise_known_to
    from mpcdp.runtime.harness import run_job
    from mpcdp.runtime.party import RECORD_DEALER_VIEW
    from mpcdp.validation import check_integer, check_number

    releases = release_views.DEFAULT_RELEASES if releases is None else releases
    dim = release_views.DEFAULT_DIM if dim is None else dim
    check_integer(calls, "--calls", minimum=20)
    check_integer(releases, "--releases", minimum=0)
    if releases:
        check_integer(releases, "--releases", minimum=20)
    check_integer(dim, "--dim", minimum=1)
    check_number(alpha, "--alpha", low=MIN_ALPHA, high=0.5, low_open=False,
                 note="each role's p is sampled from its permutation distribution down to α")
    check_number(sigma, "--sigma", low=dg.SIGMA_MIN, high=dg.SIGMA_MAX, low_open=False)
    record = providers.lookup(provider)
    config = MpcConfig(parties=parties, provider=provider, noise_committee=committee, timeout_s=600.0,
                       openings=openings)
    members = min(parties, committee)
    check_plant(plant, record.has_dealer, members, releases)
    plan = dg.plan_for(sigma)
    saved = os.environ.get(RECORD_DEALER_VIEW)
    os.environ[RECORD_DEALER_VIEW] = "1"
    try:
        result = run_job(views_party, config, args=(calls, sigma, plant, releases, dim), progress=progress,
                         job={"name": "audit views", "calls": calls, "sigma": sigma, "plant": plant,
                              "releases": releases, "dim": dim, "openings": openings})
    finally:
        if saved is None:
            os.environ.pop(RECORD_DEALER_VIEW, None)
        else:
            os.environ[RECORD_DEALER_VIEW] = saved
    report = [_entry(*role, sigma=sigma, calls=calls, releases=releases, alpha=alpha)
              for role in _roles(result, record.has_dealer, plan, releases)]
    return {"provider": provider, "parties": parties, "noise_committee": members, "calls": calls,
            "releases": releases, "dim": dim, "sigma_units": plan.sigma, "alpha": alpha, "plant_leak": plant,
            "circuit": CIRCUIT.split(":")[0], "openings": openings,
            "noise_known_to": noise_known_to(drawn_by=COMMITTEE, provider=provider, parties=parties,
                                             committee=committee),
            "roles": report}


def _roles(result, has_dealer: bool, plan: dg.DiscreteGaussianPlan, releases: int) -> list[tuple]:
    """Each role's (name, kind, sampler statistics, release tests, extra report fields), from the run."""
    from mpcdp.jobs import release_views

    zero = result.values[0]
    samples = np.array(zero["samples"], dtype=np.int64)
    released = [value["releases"] for value in result.values]
    noise = np.stack([v["noise"] for v in released[0]]) if releases else np.zeros((0, 1), dtype=np.int64)
    contributed = release_views.contributions(released) if releases else []
    roles: list[tuple] = []
    if has_dealer:
        assert result.dealer is not None  # (the run had a dealer process)
        view = result.dealer["view"]
        if len(view) != zero["requests"]:
            raise ConfigError(f"the dealer recorded {len(view)} requests where party 0 made {zero['requests']}")
        calls_passes = [{"passes": v["all_passes"]} for v in zero["views"]]
        found = role_statistics("dealer", dealer_views(view[:zero["sampler_requests"]], calls_passes), samples, plan)
        served = np.array([len(view[a:b]) for a, b in (v["requests"] for v in released[0])], dtype=float)
        roles.append(("dealer", "dealer", found,
                      release_views.dealer_tests(served, noise, plan.sigma) if releases else [],
                      {"release_requests": int(served.sum())} if releases else {}))
    for rank, value in enumerate(result.values):
        kind = "member" if value["member"] else "non-member"
        roles.append((f"party {rank}", kind, role_statistics(kind, value["views"], samples, plan),
                      release_views.party_tests(value["releases"], noise, contributed, plan.sigma) if releases else [],
                      {"release_received_from": sorted(value["releases"][0]["received"])} if releases else {}))
    return roles


def _entry(name: str, kind: str, found: list[Statistic], tests: list, extra: dict[str, Any], *, sigma: float,
           calls: int, releases: int, alpha: float) -> dict[str, Any]:
    """A role's report: its verdict over all its statistics (Bonferroni), the most significant, the power."""
    from mpcdp.jobs import release_views

    found = found + [permutation_statistic(test, scores, two_sided=True) for test, scores, _ in tests]
    found, p = role_verdict_p(found, alpha)
    pw, against = power(found[0].name, kind, sigma, calls, alpha, len(found))
    worst = min(found, key=lambda s: s.p)
    entry = {"role": name, "kind": kind, "verdict": "dependent" if p < alpha else "independent",
             "statistic": worst.name, "z": round(worst.z, 3), "p": p, "power": round(pw, 4), "power_against": against,
             "statistics": [s.report() for s in found]}
    if tests:
        entry["release_power"] = round(min(release_views.power(coordinates, releases, alpha, len(found))
                                           for _, _, coordinates in tests), 4)
        entry["release_power_against"] = release_views.POWER_AGAINST
    return entry | extra
