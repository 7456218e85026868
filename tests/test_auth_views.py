"""`mpcdp audit views --security malicious` (mpcdp.jobs.auth_views): every role's view of the authenticated
sampler (dg-auth: the dealer deals every candidate bit R and knows it, the parties know the coin S) against the
released noise, with real party processes and the dealer at m = 3; the dealer's planted leak (no coin, W = R)
is found. Each run also checks that every party's parts XORed with S decode the released sample (the views
are the run's)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from mpcdp.errors import ConfigError
from mpcdp.jobs import auth_views
from mpcdp.noise import discrete_gaussian as dg
from mpcdp.noise.auth_fields import FIRST, dealt_widths
from mpcdp.noise.auth_gaussian import MASK_BITS, Domains, candidate_circuit


# Fresh randomness (the dealer's bits R, the coin S): no seed fixes these runs' verdicts. The runs report at the
# audit's α = 1e-4 (its powers are stated there), and the tests judge each role by its reported p at NULL_ALPHA
# (_verdicts): 18 roles tested for independence in this file (5 + 4 + 3 + 4 + 2), so a correct tree fails the
# file with probability <= 18 * NULL_ALPHA = 3.6e-5 (Bonferroni, at the statistics' stated tails; 1.6e-3 at the 1e-4
# used before). A planted leak is tested where it is found with probability >= 1 - 1e-5 (each test says how).
NULL_ALPHA = 2e-6


def _verdicts(report):
    """Each role's verdict at NULL_ALPHA, from its reported (Bonferroni) p."""
    return {role["role"]: "dependent" if role["p"] < NULL_ALPHA else "independent" for role in report["roles"]}


def test_decode_releases_what_the_circuit_accepts_first():
    """decode (the audit's plaintext reading of candidates' bits) gives the first candidate the authenticated
    circuit accepts, on the same bits (the circuit run on plaintext integers)."""
    plan = dg.plan_for(16.0)
    generator = torch.Generator().manual_seed(44)
    for _ in range(20):
        bits = {name: torch.randint(0, 2, (6, b), generator=generator) for name, b in dealt_widths(plan).items()}
        value, accept = candidate_circuit(Domains.plain(), plan, bits,
                                          (torch.zeros(6, MASK_BITS, dtype=torch.int64), torch.zeros(6, dtype=torch.int64)))
        first = int(np.flatnonzero(accept.numpy())[0]) if accept.any() else 0
        row = np.concatenate([bits[name].numpy() for name in dg.RANDOM_FIELDS], 1)
        assert auth_views.decode(plan, row) == int(value[first])


@pytest.fixture(scope="module")
def clean():
    """One clean audit at m = 3: 10 one-sample calls, then 10 MAC-checked releases of d = 8 with their norm check,
    the form training runs use under malicious (``bound``; shared by the tests below: one multi-process run; the
    unbounded form runs in the planted-release test)."""
    return auth_views.run_auth_views(parties=3, calls=10, sigma=16.0, alpha=1e-4, plant=None, releases=10, dim=8,
                                     bound=True)


@pytest.mark.timeout(900)  # the module's one clean run starts here: generous under a loaded machine
def test_under_malicious_at_three_parties_every_roles_view_is_independent_of_the_noise(clean):
    """The dealer (its dealt bits R and request counts), each party (the coin, its own bit parts, the accept
    bits, the masked T) and parties 0 and 1 pooling their parts: each independent at α = NULL_ALPHA = 2e-6 (5
    roles: <= 1e-5 false alarms; 10 one-sample calls, no planted leak; the recorded run,
    benchmarks/results/views.md, has more). The run's noise_known_to is the malicious sampler's: the dealer with
    any one party (R and S), or every party together."""
    report = clean
    assert _verdicts(report) == {"dealer": "independent", "party 0": "independent", "party 1": "independent",
                                 "party 2": "independent", "parties 0 and 1": "independent"}
    assert report["noise_known_to"] == "the dealer with any one data party, or every data party together"
    assert report["circuit"] == "dg-auth/9" and report["security"] == "malicious"
    names = {role["role"]: [s["name"] for s in role["statistics"]] for role in report["roles"]}
    assert names["dealer"][:2] == ["dealt bits", "request sizes"]
    assert names["party 1"][:4] == ["coin", "own bit parts", "accept bits", "masked T"]
    for role in report["roles"]:  # the power of its first statistic at its share of α (releases' included)
        stated, against = auth_views.power(role["statistics"][0]["name"], 16.0, 10, 1e-4, len(role["statistics"]))
        assert role["power"] == round(stated, 4) and role["power_against"] == against


def test_every_roles_view_of_a_bounded_malicious_release_is_independent_of_the_noise_and_the_inputs(clean):
    """The bounded releases' statistics join each role's: the dealer's requests (three per release: the input
    masks with their squares, the witness's bit masks, and the 2^64·r masks of the one opening of the release
    with its checks), the masks and bit masks it dealt and its request sizes against the inputs' norms; every
    party receives every other party's masked input and witness bits d (an exchange), sees every contributor's
    check words and MAC-check σ (no ε: the squares come from dealt masks); party 0, the star's first member,
    also receives parties 1 and 2's shares of the release opening (its checks included); the coalition its pooled noise shares, with party 2's release share. All independent at
    NULL_ALPHA (the test above); the run's views passed the checks that every release opened Σ x + u, the
    noise shares sum to u, every d received is the sender's witness of its input XOR its bit masks, the
    dealer's bit masks are the owners' and every check opened 0."""
    from mpcdp.jobs.auth_release_views import audit_bound

    report = clean
    assert report["releases"] == 10 and report["dim"] == 8 and report["bound"] == audit_bound(16.0, 8)
    names = {role["role"]: [s["name"] for s in role["statistics"] if s["name"].startswith("release: ")]
             for role in report["roles"]}
    roles = {role["role"]: role for role in report["roles"]}
    assert roles["dealer"]["release_requests"] == 30
    assert roles["dealer"]["release_request_kinds"] == ["mpcdp_AuthBitMasks", "mpcdp_AuthMaskSquares",
                                                        "mpcdp_AuthRandoms"]
    assert {"release: dealer requests", "release: dealer's mask for party 1 vs its input",
            "release: dealer's bit masks for party 1 vs its witness", "release: dealer's bit masks for party 2 vs its input",
            "release: dealer request sizes vs the inputs' norms"} <= set(names["dealer"])
    bounded = ["witness bits vs its witness", "witness bits vs its input", "MAC-check σ vs its input"]
    for rank in range(3):
        others = [j for j in range(3) if j != rank]
        assert roles[f"party {rank}"]["release_received_from"] == others
        assert {f"release: party {j}'s {name}" for j in others for name in bounded} | {
            f"release: the bound checks' opened words for party {j} vs its input" for j in others} \
            <= set(names[f"party {rank}"])
        assert not any("ε" in name for name in names[f"party {rank}"])
    for j in (1, 2):
        assert {f"release: party {j}'s share of the bound checks vs its input",
                f"release: party {j}'s release share vs the noise"} <= set(names["party 0"])
    assert not any("share of" in name or "release share" in name for name in names["party 1"] + names["party 2"])
    assert names["parties 0 and 1"] == ["release: pooled noise shares vs the noise",
                                        "release: pooled noise shares and party 2's release share vs the noise"]
    assert all(0 < role["release_power"] <= 1 for role in report["roles"])


@pytest.mark.timeout(900)  # 10 calls and 10 releases: generous under a loaded machine
def test_a_release_input_sent_without_its_dealt_mask_is_found():
    """--plant-leak release under malicious: party 1 sends x_1 in the clear and every party leaves [[r_1]] out
    of the sum, so each release still opens Σ x + u and passes its MAC check (the audit checks it); party 0,
    which combines the masked inputs, is dependent (its received share equals x_1 in all 14 releases: the audit
    runs at α = NULL_ALPHA = 2e-6, so its sampled p resolves that level over party 0's statistics, and a perfect
    match's exact permutation p, 1/14! ≈ 1.1e-11, lies below it; with 10 releases it could not, 1/10! = 2.8e-7,
    and only the normal tail's invalid 5e-10 said so); nobody else is (4 roles at 2e-6)."""
    report = auth_views.run_auth_views(parties=3, calls=10, sigma=16.0, alpha=NULL_ALPHA, plant="release", releases=14,
                                       dim=8)
    assert _verdicts(report) == {"dealer": "independent", "party 0": "dependent", "party 1": "independent",
                                 "party 2": "independent", "parties 0 and 1": "independent"}
    roles = {role["role"]: role for role in report["roles"]}
    assert roles["party 0"]["statistic"] == "release: party 1's masked input vs its input" and roles["party 0"]["z"] > 5
    assert report["bound"] is None and roles["dealer"]["release_requests"] == 3 * 14  # input, flag and opening masks
    assert roles["party 0"]["release_received_from"] == [1, 2]  # the unbounded form: a sum through party 0
    assert roles["party 1"]["release_received_from"] == [] == roles["party 2"]["release_received_from"]


@pytest.mark.timeout(900)  # 10 calls and 14 bounded releases: generous under a loaded machine
def test_witness_bits_sent_without_their_dealt_masks_are_found():
    """--plant-leak witness (the bound implied): party 1 sends its witness bits β in the clear and every party sets
    [[β_1]] to them, so every check still passes (the audit ties d to β) and every release opens Σ x + u; parties
    0 and 2, which receive the bits, are dependent on 'party 1's witness bits vs its witness' (the bits are the
    witness in all 14 releases: a sampled p at α = NULL_ALPHA = 2e-6, as in the test above); the dealer, party 1 and
    the coalition are not (3 roles at 2e-6)."""
    report = auth_views.run_auth_views(parties=3, calls=10, sigma=16.0, alpha=NULL_ALPHA, plant="witness", releases=14,
                                       dim=8)
    assert report["bound"] is not None
    assert _verdicts(report) == {"dealer": "independent", "party 0": "dependent", "party 1": "independent",
                                 "party 2": "dependent", "parties 0 and 1": "independent"}
    for role in report["roles"][1:4:2]:
        assert role["statistic"] == "release: party 1's witness bits vs its witness" and role["z"] > 5


def test_the_dealers_bits_without_the_coin_are_found_from_the_command_line(tmp_path, capsys):
    """`mpcdp audit views --security malicious --plant-leak dealer` (W = R: no coin): the dealer's dealt bits
    decode the released sample in every call, so it is dependent: 20 matches in 20 calls, p from the Poisson
    tail at the permutation mean 1 + 2·(pairs of equal samples)/20, times the dealer's 2 statistics, exceeds
    α = NULL_ALPHA = 2e-6 only with 44 or more equal pairs of the 190 (expected 3.4 at σ = 16: P ≈ 1e-34), and
    in 200,000 simulated runs it never exceeded 3e-10 (at the 10 calls used before it exceeded α = 1e-4 in 0.17%
    of them: a missed leak in one CI run in 600). Every party and the coalition are not (4 roles at 2e-6); exit
    1. The entry point runs in this process (its exit status, stdout and --out are its logic; the parties and the
    dealer are real processes, started as for every run here)."""
    from mpcdp.cli import main

    out = tmp_path / "views.json"
    code = main(["audit", "views", "--security", "malicious", "--parties", "3", "--calls", "20", "--releases", "0",
                 "--plant-leak", "dealer", "--out", str(out)])
    result = capsys.readouterr()
    assert code == 1, result.err[-2000:]
    report = json.loads(result.out.strip().splitlines()[-1])
    assert report == json.loads(out.read_text())
    assert _verdicts(report) == {"dealer": "dependent", "party 0": "independent", "party 1": "independent",
                                 "party 2": "independent", "parties 0 and 1": "independent"}
    dealer = report["roles"][0]
    assert dealer["statistic"] == "dealt bits" and dealer["z"] > 6 and 0 < dealer["power"] <= 1


@pytest.mark.timeout(900)  # 80 calls: generous under a loaded machine
def test_windows_opened_without_their_masks_are_found():
    """--plant-leak window: every mux's mask ρ is 0 (its half triples' c = ρ·b too, so every MAC holds and the run
    releases), so every party opens the windows themselves. Each party's `masked window` (the released
    candidate's opened window against that window of x) then correlates exactly: z = √(calls − 1). The party is
    reported dependent at α = NULL_ALPHA = 2e-6 (5 statistics) when none of the N = 5·10⁶ permutations its p
    samples ties the identity; one ties with probability P = Π k_g!/calls! over the windows' tie groups (73% of
    the windows are 0 at any σ), and every window alike leaves nothing to find. Over 10⁶ simulated runs of 80
    calls (window counts drawn from the sampler's own pmf), E[1 − e^(−N·P)] plus P(all alike) is 9.8e-7 (1.2e-4
    at 60 calls). The dealer and the coalition, which see no opening, are not (2 roles at 2e-6)."""
    report = auth_views.run_auth_views(parties=3, calls=80, sigma=16.0, alpha=NULL_ALPHA, plant="window")
    assert _verdicts(report) == {"dealer": "independent", "party 0": "dependent", "party 1": "dependent",
                                 "party 2": "dependent", "parties 0 and 1": "independent"}
    for role in report["roles"][1:4]:
        assert role["statistic"] == "masked window" and role["z"] == pytest.approx(79 ** 0.5, abs=1e-3)


@pytest.mark.timeout(900)  # 100 calls in two runs: generous under a loaded machine
@pytest.mark.parametrize("plant, calls, found", [("dealer", 20, ("dealer",)),
                                                 ("window", 80, ("party 0", "party 1", "party 2"))])
def test_under_the_fewer_rounds_plan_each_planted_leak_is_found(plant, calls, found):
    """dg-auth/10 (``malicious_sampler = "fewer-rounds"``: one draw of every field per pass, one opening of every
    mux's masked window, no first-factor opening) read by the same audit: the dealer's plant (no coin: its one
    request's bits decode the sample, as the dealer test above argues at 20 calls) and the window plant (the
    first factor's window found in each candidate's row of the one opening: z = √79 exactly, as the window
    test above argues at 80 calls) are found by the role they give the leak to, and by no other (α = NULL_ALPHA)."""
    report = auth_views.run_auth_views(parties=3, calls=calls, sigma=16.0, alpha=NULL_ALPHA, plant=plant,
                                       sampler="fewer-rounds")
    assert report["circuit"] == "dg-auth/10" and report["malicious_sampler"] == "fewer-rounds"
    roles = ("dealer", "party 0", "party 1", "party 2", "parties 0 and 1")
    assert _verdicts(report) == {role: "dependent" if role in found else "independent" for role in roles}
    for role in report["roles"]:
        if role["role"] in found and plant == "window":
            assert role["statistic"] == "masked window" and role["z"] == pytest.approx(79 ** 0.5, abs=1e-3)
        if role["role"] in found and plant == "dealer":
            assert role["statistic"] == "dealt bits" and role["z"] > 6


def test_the_released_window_is_the_one_the_circuit_reads():
    """released_windows (the audit's target for `masked window`) gives, for the value each candidate would
    release, the bits first_stage's mux reads: T's bits at the first group, T from the candidate's own piece."""
    plan = dg.plan_for(16.0)
    rng = np.random.default_rng(5)
    fields = dg.draw_fields(plan, 4000, lambda k: rng.integers(-(2**63), 2**63 - 1, size=k, dtype=np.int64))
    values, piece = dg.candidate_values(plan, fields)
    low, width, _ = dg.GROUPS[FIRST]
    assert np.array_equal(auth_views.released_windows(plan, values),
                          (dg.exponent(plan, values, piece) >> low) & ((1 << width) - 1))


@pytest.mark.parametrize("plant, releases, bound, message", [
    ("party 1", 10, False, "--plant-leak under --security malicious must be 'dealer', 'window', 'release' or 'witness'"),
    ("release", 0, False, "--plant-leak release needs --releases >= 10"),
    ("witness", 0, False, "--plant-leak witness needs --releases >= 10"),
    (None, 0, True, "--bound audits the bounded releases: it needs --releases >= 10"),
    ("release", 10, True, "--plant-leak release plants its leak in the unbounded release's inputs")])
def test_a_plant_the_malicious_audit_does_not_have_is_refused_before_any_process_starts(plant, releases, bound,
                                                                                        message):
    with pytest.raises(ConfigError, match=message):
        auth_views.run_auth_views(parties=3, calls=10, sigma=16.0, alpha=1e-4, plant=plant, releases=releases,
                                  bound=bound)


def _synthetic(calls: int, dim: int, leak: bool) -> tuple[list[list[dict]], np.ndarray]:
    """Three parties' recorded release views, uniform shares; with ``leak`` party 1's masked input (which party
    0 received) is its input itself."""
    rng = np.random.default_rng(7)
    words = lambda *shape: rng.integers(-(2**63), 2**63 - 1, size=shape, dtype=np.int64)  # noqa: E731
    noise = rng.integers(-40, 41, size=(calls, dim))
    xs = [rng.integers(-64, 65, size=(calls, dim)) for _ in range(3)]
    by_rank = []
    for rank in range(3):
        views = []
        for i in range(calls):
            masked = {j: (0, xs[j][i] if leak and j == 1 else words(dim)) for j in (1, 2)} if rank == 0 else {}
            rows = {j: (0, words(dim, 2)) for j in (1, 2)} if rank == 0 else {}
            views.append({"x": xs[rank][i], "noise_share": words(dim), "mask": words(dim), "masked": masked,
                          "rows": rows, "sigma": {j: int(words(1)[0]) for j in range(3) if j != rank},
                          "noise": noise[i]})
        by_rank.append(views)
    return by_rank, noise


@pytest.mark.parametrize("leak", [False, True])
def test_the_release_statistics_find_an_unmasked_input_and_nothing_in_uniform_shares(leak):
    """On synthetic views (no processes): with uniform shares every release statistic of party 0 is centred
    (|z| < 4.5); with party 1's input received in the clear, 'party 1's masked input vs its input' is far out."""
    from mpcdp.jobs import auth_release_views as rel
    from mpcdp.jobs.permutation import permutation_test

    by_rank, noise = _synthetic(60, 8, leak)
    z = {name: permutation_test(scores, two_sided=True)[0]
         for name, scores, _ in rel.party_tests(by_rank[0], noise, by_rank, 16.0)}
    leaked = "release: party 1's masked input vs its input"
    assert (z[leaked] > 10) == leak
    assert all(abs(v) < 4.5 for name, v in z.items() if name != leaked or not leak)


def _bounded(calls: int, dim: int, leak: bool) -> tuple[list[list[dict]], np.ndarray]:
    """Three parties' recorded bounded-release views with uniform masks and shares, each witness the real one of
    its input (:func:`mpcdp.mpc.bounded.witness`); with ``leak`` party 1's bits d are its witness itself."""
    from mpcdp.jobs.auth_release_views import audit_bound
    from mpcdp.jobs.release_views import RELEASE_BITS
    from mpcdp.mpc.bounded import unit_bound, witness

    unit = unit_bound(audit_bound(16.0, dim), dim, RELEASE_BITS)
    rng = np.random.default_rng(51)
    words = lambda *shape: rng.integers(-(2**63), 2**63 - 1, size=shape, dtype=np.int64)  # noqa: E731
    noise = rng.integers(-40, 41, size=(calls, dim))
    xs = [rng.integers(-64, 65, size=(calls, dim)) for _ in range(3)]
    betas = [[witness(torch.from_numpy(x), unit).numpy() for x in party] for party in xs]
    masks = [[rng.integers(0, 2, size=b.size) for b in party] for party in betas]
    by_rank = []
    for rank in range(3):
        others = [j for j in range(3) if j != rank]
        by_rank.append([{"x": xs[rank][i], "beta": betas[rank][i], "bit_mask": masks[rank][i],
                         "witness": {j: betas[j][i] if leak and j == 1 else betas[j][i] ^ masks[j][i] for j in others},
                         "checks": np.stack([np.zeros((3, dim + 1)), words(3, dim + 1)], -1),
                         "sigma": {j: int(words(1)[0]) for j in others}, "checks_at": 0,
                         "check_rows": {j: (0, words(3 * (dim + 1), 2)) for j in others} if rank == 0 else {},
                         "coordinate_bits": unit.coordinate_bits} for i in range(calls)])
    return by_rank, noise


@pytest.mark.parametrize("leak", [False, True])
def test_the_bounded_statistics_find_unmasked_witness_bits_and_nothing_in_masked_ones(leak):
    """On synthetic views (no processes): with bits masked by uniform bits and uniform words every bounded
    statistic of party 0 is centred (|z| < 4.5); with party 1's witness received as it is, 'party 1's witness
    bits vs its witness' and 'vs its input' are far out."""
    from mpcdp.jobs import auth_bounded_views
    from mpcdp.jobs.permutation import permutation_test

    by_rank, noise = _bounded(60, 8, leak)
    z = {name: permutation_test(scores, two_sided=True)[0]
         for name, scores, _ in auth_bounded_views.party_tests(by_rank[0], noise, by_rank, 16.0)}
    leaked = {"release: party 1's witness bits vs its witness", "release: party 1's witness bits vs its input"}
    assert len(z) == 2 * 4 + 2 * 1
    assert all((z[name] > 10) == leak for name in leaked)
    assert all(abs(v) < 4.5 for name, v in z.items() if name not in leaked or not leak)


def test_bounded_views_whose_bits_are_not_the_witness_are_refused():
    """check_bounded ties the record to the run: the bits a party received from J must be J's witness XOR its
    bit masks (its witness itself for the planted party), the dealer's bit masks the owners'."""
    from mpcdp.jobs.auth_bounded_views import check_bounded

    by_rank, _ = _bounded(5, 4, False)
    windows = [[("mpcdp_AuthBitMasks", [4], {"bit_masks": torch.from_numpy(np.stack([v[i]["bit_mask"]
                                                                                      for v in by_rank]))})]
               for i in range(5)]
    check_bounded(by_rank, windows, None)
    with pytest.raises(ConfigError, match="not its witness masked by its bit masks"):
        check_bounded(by_rank, windows, 1)
    by_rank[2][3]["witness"][0] = by_rank[2][3]["witness"][0] ^ 1
    with pytest.raises(ConfigError, match="party 2 received bits from party 0"):
        check_bounded(by_rank, windows, None)


def test_views_that_do_not_open_the_sum_are_refused():
    """check_views ties the record to the run: a release whose V is not Σ x + u is a misaligned record."""
    from mpcdp.jobs import auth_release_views as rel

    by_rank, noise = _synthetic(5, 4, False)
    for views in by_rank:
        for v in views:
            v["noise_share"] = np.zeros(4, dtype=np.int64)
    for i, v in enumerate(by_rank[0]):
        v["noise_share"] = noise[i].copy()
        v["released"] = sum(views[i]["x"] for views in by_rank) + noise[i]
    rel.check_views(by_rank)
    by_rank[0][3]["released"] = by_rank[0][3]["released"] + 1
    with pytest.raises(ConfigError, match="did not open Σ x \\+ u"):
        rel.check_views(by_rank)


def test_a_malicious_training_run_says_every_data_party_is_the_committee_whatever_noise_committee_says():
    """Under `malicious` every data party samples (the committee setting is ignored): at m = 5 with
    noise_committee = 3 the run's noise_known_to is the whole-committee sentence; semi-honest, the committee's."""
    from mpcdp.jobs.train import plan_from, plan_noise_known_to

    settings = {"noise_committee": 3}
    malicious = plan_from("protocols/quickstart-a9a.toml", parties=5, mpc={**settings, "security": "malicious"})
    semi = plan_from("protocols/quickstart-a9a.toml", parties=5, mpc=settings)
    assert plan_noise_known_to(malicious) == "the dealer with any one data party, or every data party together"
    assert plan_noise_known_to(semi).startswith("the dealer with any one of parties 0–2 (the noise committee)")
