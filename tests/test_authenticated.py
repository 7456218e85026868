"""Security with abort for the secure sum and its release (``[mpc] security = "malicious"``, issue 48's first
slice): Z_2^(64+s) arithmetic on int64 limbs, the SPDZ2k batched MAC check's cheating success against its bound
at a reduced s (plaintext simulation of the parties' shares in one process), the refusal of everything the MACs
do not cover yet, and real party processes: an honest run, and a party that deviates in the authenticated sum
makes every honest process stop with the MAC failure before anything is released (mpcdp/README.md, "Threat
model")."""

import json
import os
import random
import sys

import pytest
import torch

from mpcdp.adapter.limbs import Ring, Wide
from mpcdp.config import MpcConfig
from mpcdp.errors import ConfigError, PartyFailed
from mpcdp.jobs.noise import noise_party
from mpcdp.jobs.train import plan_from
from mpcdp.mpc.authenticated import sigma_terms, sigma_total
from mpcdp.mpc.context import MpcContext
from mpcdp.mpc.release import noisy_release
from mpcdp.mpc.shared import Shared
from mpcdp.runtime.harness import free_port, run_parties
from party_commands import ROOT, run_party_commands
from party_jobs import BOUND_CASES, authenticated_products, bounded_cases, tampered_aggregate


def _wide(ring: Ring, values: list[int]) -> Wide:
    signed = [(v % (1 << 64)) - ((v % (1 << 64)) >> 63 << 64) for v in values]
    high = [((v >> 64) % (1 << 64)) - (((v >> 64) % (1 << 64)) >> 63 << 64) for v in values]
    return ring.reduce(torch.tensor(signed, dtype=torch.int64), torch.tensor(high, dtype=torch.int64))


@pytest.mark.parametrize("s", [64, 8, 1])
def test_limb_arithmetic_is_exact_in_the_ring(s):
    ring, rng = Ring(s), random.Random(s)
    big = ring.modulus
    a = [0, big - 1, (1 << 64) - 1, 1 << 63] + [rng.randrange(big) for _ in range(300)]
    b = [big - 1, big - 1, 1, 1 << 63] + [rng.randrange(big) for _ in range(300)]
    x, y = _wide(ring, a), _wide(ring, b)
    assert ring.to_ints(x) == a
    assert ring.to_ints(ring.add(x, y)) == [(u + v) % big for u, v in zip(a, b)]
    assert ring.to_ints(ring.sub(x, y)) == [(u - v) % big for u, v in zip(a, b)]
    assert ring.to_ints(ring.mul(x, y)) == [u * v % big for u, v in zip(a, b)]
    words = [v % (1 << 64) for v in b]
    assert ring.to_ints(ring.scale(y.lo, x)) == [u * w % big for u, w in zip(a, words)]
    # a broadcast factor (a scalar, a row against a matrix) is split once: the same products as the expanded one
    assert ring.to_ints(ring.scale(y.lo[5], x)) == [u * words[5] % big for u in a]
    rows = x.reshape(8, -1)
    assert ring.to_ints(ring.scale(y.lo[:38], rows)) == [u * words[i % 38] % big for i, u in enumerate(a)]
    assert ring.to_ints(ring.scale(y.lo, Wide.pair(x, y))) == ([u * w % big for u, w in zip(a, words)]
                                                               + [v * w % big for v, w in zip(b, words)])
    assert ring.to_ints(ring.shift_up(x)) == [(u << 64) % big for u in a]
    assert ring.total(x) == sum(a) % big
    assert ring.to_ints(ring.sum0(x.reshape(8, -1))) == [sum(a[i::38]) % big for i in range(38)]


def test_the_witness_bits_weighted_sums_are_the_docstrings_formula_in_exact_integers():
    """:func:`~mpcdp.mpc.bounded.weighted_bits` (value and MAC shares scaled and summed as one pair) gives, per
    contributor and coordinate, Σ_i (2^i·(1 − 2d_i) mod 2^64)·r_i mod 2^128 for the value and the MAC shares, and
    Σ_i 2^i·d_i mod 2^64 in public: checked against Python integers on random shares."""
    from mpcdp.mpc.auth_inputs import BitInputs
    from mpcdp.mpc.authenticated import AuthShared
    from mpcdp.mpc.bounded import UnitBound, _powers, weighted_bits

    ring, rng, big = Ring(64), random.Random(7), 1 << 128
    bound = UnitBound(5000 ** 2, 3)
    m, width, total = 2, bound.coordinate_bits, bound.witness_words
    d = torch.tensor([[rng.randrange(2) for _ in range(total)] for _ in range(m)], dtype=torch.int64)
    shares = [[rng.randrange(big) for _ in range(m * total)] for _ in range(2)]
    value, mac = (_wide(ring, v).reshape(m, total) for v in shares)
    (coordinates, public), (slack, slack_public) = weighted_bits(BitInputs(d, 1 - 2 * d, AuthShared(value, mac, 0)),
                                                                 bound)
    weights = [int(w) % (1 << 64) for w in _powers(bound).tolist()]
    for o in range(m):
        factors = [weights[i] * (1 - 2 * int(d[o, i])) % (1 << 64) for i in range(total)]
        spans = [range(j * width, (j + 1) * width) for j in range(bound.dim)] + [range(bound.dim * width, total)]
        for j, span in enumerate(spans):
            got = (coordinates, slack)[j == bound.dim]
            index = (o, j) if j < bound.dim else (o,)
            for part, limbs in ((got.value, shares[0]), (got.mac, shares[1])):
                expected = sum(factors[i] * limbs[o * total + i] for i in span) % big
                assert ring.to_ints(part[index].reshape(1)) == [expected]
            plain = (public[o, j] if j < bound.dim else slack_public[o]).item() % (1 << 64)
            assert plain == sum(weights[i] * int(d[o, i]) for i in span) % (1 << 64)


def test_the_checks_sigma_total_is_the_sum_of_its_terms():
    """:func:`sigma_total` (what :func:`mac_check` sends: the sums formed first, α_i applied once) is Σ of
    :func:`sigma_terms` over the opened values, mod 2^128, on random values, MACs, keys and coins, the extremes
    included."""
    rng, ring = random.Random(11), Ring(64)
    for n in (1, 7, 741):
        opened = _wide(ring, [rng.getrandbits(128) for _ in range(n - 1)] + [2 ** 128 - 1])
        macs = _wide(ring, [rng.getrandbits(128) for _ in range(n)])
        chi = _wide(ring, [rng.getrandbits(64) for _ in range(n - 1)] + [2 ** 64 - 1]).lo
        for alpha in (torch.tensor(-1), torch.tensor(rng.getrandbits(63))):
            assert sigma_total(ring, alpha, chi, opened, macs) == ring.total(sigma_terms(ring, alpha, chi, opened, macs))


def test_a_wide_opening_combines_rows_with_the_low_words_carry():
    from mpcdp.transport.mesh import _add_wide

    rng, ring = random.Random(7), Ring(64)
    values = [[rng.getrandbits(128) for _ in range(50)] + [2 ** 64 - 1, 2 ** 128 - 1] for _ in range(5)]
    rows = [torch.stack([(w := _wide(ring, v)).lo, w.hi], dim=1) for v in values]
    total = rows[0].clone()
    for other in rows[1:]:
        _add_wide(total, other)
    assert ring.to_ints(Wide(total[:, 0], total[:, 1])) == [sum(c) % 2 ** 128 for c in zip(*values)]


def _simulated_check(s: int, trials: int, delta: int, seed: int) -> torch.Tensor:
    """``trials`` independent openings of one authenticated value among 3 parties, simulated in one process, each
    followed by the batched check's σ shares (:func:`sigma_terms`, the parties' own function). Party 1 cheats: it
    adds ``delta`` to its value share (the opened value moves by delta) and, after seeing the coin χ, adds
    delta·χ·g to its σ share for a guess g = α_1 + u of the key, its own share plus a uniform u for the honest
    parties' (the check passes iff g·χ·delta ≡ α·χ·delta, mod 2^(64+s)). Returns whether each check passed."""
    ring = Ring(s)
    generator = torch.Generator().manual_seed(seed)

    def uniform(bits: int | None = None) -> torch.Tensor:
        words = torch.randint(-(1 << 63), (1 << 63) - 1, (trials,), generator=generator, dtype=torch.int64)
        return words if bits is None else words & ((1 << bits) - 1)

    def element() -> Wide:
        return ring.reduce(uniform(), uniform())

    alphas = [uniform(s) for _ in range(3)]
    alpha = ring.sum0(Wide(torch.stack(alphas), torch.zeros(3, trials, dtype=torch.int64)))
    value = element()
    shares = [element(), element()]
    shares = [ring.sub(value, ring.add(*shares))] + shares
    macs = [element(), element()]
    macs = [ring.sub(ring.mul(alpha, value), ring.add(*macs))] + macs
    error = ring.from_int(delta, (trials,))
    shares[1] = ring.add(shares[1], error)
    opened = ring.add(ring.add(shares[0], shares[1]), shares[2])
    chi, guess = uniform(s), alphas[1] + uniform(s)
    sigmas = [sigma_terms(ring, alphas[i], chi, opened, macs[i]) for i in range(3)]
    sigmas[1] = ring.add(sigmas[1], ring.scale(guess, ring.scale(chi, error)))
    total = ring.add(ring.add(sigmas[0], sigmas[1]), sigmas[2])
    return (total.lo == 0) & (total.hi == 0)


def _exact_success(s: int, delta_bits: int) -> float:
    """The simulated cheat's exact success: P[χ·(u − α_0 − α_2)·2^delta_bits ≡ 0 mod 2^(64+s)] for χ, u and the
    honest key shares α_0, α_2 uniform in [0, 2^s), by enumeration."""
    size, modulus = 1 << s, 1 << (64 + s - delta_bits)  # χ·D must vanish mod 2^(64+s-delta_bits)
    ways = {0: 1}
    for sign in (1, -1, -1):  # how many (u, α_0, α_2) give each D = u − α_0 − α_2
        counts: dict[int, int] = {}
        for d, w in ways.items():
            for v in range(size):
                counts[d + sign * v] = counts.get(d + sign * v, 0) + w
        ways = counts
    hits = sum(w for chi in range(size) for d, w in ways.items() if (chi * d) % modulus == 0)
    return hits / size ** 4


@pytest.mark.parametrize("s", [4, 8])
def test_a_cheat_on_an_opened_value_passes_no_more_often_than_the_spdz2k_bound(s):
    """α = 1e-6 per comparison (5 standard deviations): the empirical success of the best single cheat (an
    error of 2^63 on a Z_2^64 value, the one whose combination vanishes mod 2^64 most often) matches its exact
    probability, which is below SPDZ2k's bound (s+1)·2^-s; honest openings always pass."""
    trials = 20_000
    assert bool(_simulated_check(s, trials, 0, seed=1).all())
    passed = _simulated_check(s, trials, 1 << 63, seed=2).double().mean().item()
    exact, bound = _exact_success(s, 63), (s + 1) / 2 ** s
    tolerance = 5 * (exact * (1 - exact) / trials) ** 0.5
    assert abs(passed - exact) <= tolerance, (passed, exact)
    assert exact < bound and passed < bound, (passed, exact, bound)
    assert passed > 0  # at this small s the cheat succeeds at times: the test can see the check's limit


def test_authenticated_products_are_exact_mod_2_64_and_a_flipped_epsilon_share_fails_the_mac_check(config_for):
    """A real 3-party run (plus the dealer): uniform 64-bit x (party 0's) and y (party 1's), authenticated one by
    one; x·y by a dealt authenticated triple, y² by a dealt square pair, 3x − y + 5 and 2^40·x locally, all opened and MAC-checked, equal the
    int64 (mod 2^64) results. A second product whose ε share party 1 alters (bit 62 of its first word, consistently
    to every party) fails the MAC check on every party."""
    n, seed = 64, 5
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(-(2 ** 63), 2 ** 63 - 1, (n,), generator=g, dtype=torch.int64)
    y = torch.randint(-(2 ** 63), 2 ** 63 - 1, (n,), generator=g, dtype=torch.int64)
    expected = [(x * y).tolist(), (3 * x - y + 5).tolist(), (x * (1 << 40)).tolist(), (y * y).tolist()]  # int64 wraps
    results = run_parties(authenticated_products, config_for(3, security="malicious"), args=(n, seed, 1))
    for opened, failure in results:
        assert opened == expected
        assert failure == ("the MAC check of opening 'flipped' failed: a party deviated from the protocol (a share "
                           "or an opened value was altered); nothing was released (security = 'malicious')"), failure


def test_every_opening_a_job_does_not_authenticate_is_refused_in_one_line():
    config = MpcConfig(parties=3, security="malicious")
    with pytest.raises(ConfigError, match=r"^`security` 'malicious' does not cover noise mode 'rou' yet"):
        run_parties(noise_party, config, args=(10, "rou", 1.0, None, 10))  # before any process starts
    with pytest.raises(ConfigError, match="does not cover the simulated backend yet"):
        plan_from("protocols/quickstart-a9a.toml", backend="simulated", mpc={"security": "malicious"})
    assert plan_from("protocols/quickstart-a9a.toml", mpc={"security": "malicious"}).mpc.security == "malicious"
    ctx = MpcContext(rank=0, config=config, job={}, masks=None)  # a semi-honest opening never reaches the links
    with pytest.raises(ConfigError, match="does not cover the opening 'v_p' yet"):
        ctx.reveal(Shared(torch.zeros(3, dtype=torch.int64), 16), label="v_p", reason="test")
    with pytest.raises(ConfigError, match="does not cover a release with in-MPC noise"):  # the sampler's shares
        noisy_release(ctx, torch.zeros(3), Shared(torch.zeros(3, dtype=torch.int64), 20), shape=(3,), label="v_p")


def test_mpcdp_train_refuses_malicious_training_with_unauthenticated_noise_in_one_line_from_its_keyword_or_the_protocols_mpc_table(tmp_path):
    """Training under `malicious` needs the authenticated sampler (dgauss): the distributed mode's noise is each
    party's own, added to its share unchecked, so it is refused before any file is read."""
    import mpcdp

    source = open("protocols/quickstart-a9a.toml").read() + '\n[noise]\nmode = "distributed"\n'
    semi, malicious = tmp_path / "semi.toml", tmp_path / "malicious.toml"
    semi.write_text(source)
    malicious.write_text(source + '\n[mpc]\nsecurity = "malicious"\n' if "[mpc]" not in source
                         else source.replace("[mpc]", '[mpc]\nsecurity = "malicious"', 1))
    files = [str(tmp_path / f"party-{j}.csv") for j in range(3)]  # never read: the refusal comes first
    for protocol, security in ((malicious, None), (semi, "malicious")):
        with pytest.raises(ConfigError) as refused:
            mpcdp.train("logreg", files, protocol=str(protocol), label="y", security=security)
        line = str(refused.value)
        assert "\n" not in line and "`security` 'malicious' does not cover training with noise mode 'distributed'" \
            in line, line
    with pytest.raises(ConfigError, match=r"`security` must be one of \['semi-honest', 'malicious'\]"):
        mpcdp.train("logreg", files, protocol=str(semi), label="y", security="byzantine")


def test_an_honest_run_opens_the_exact_sum(config_for, tmp_path):
    values = run_parties(tampered_aggregate, config_for(3, security="malicious"),
                         args=(-1, "", "", "", str(tmp_path)))
    assert values == [([6.0] * 8, [[0.75] * 3] * 2)] * 3


# (the rogue, the message it alters, how, the line every honest process stops with)
DEVIATIONS = {
    "a share, consistently": (1, "aggregate", "share", "flip",
                              "a party deviated from the protocol (a share or an opened value was altered)"),
    "the opening to one party": (0, "aggregate (sum)", "wire:1", "offset", "a party deviated from the protocol "
                                 "(parties received different opened or input values)"),
    "the σ it committed to": (2, "aggregate: MAC-check σ", "share", "offset",
                              "party 2 deviated from the protocol (its σ share does not match its commitment)"),
}


@pytest.mark.parametrize("case", list(DEVIATIONS))
def test_a_party_that_deviates_in_the_authenticated_sum_stops_every_honest_party_before_any_release(
        case, config_for, tmp_path):
    rogue, label, where, how, line = DEVIATIONS[case]
    with pytest.raises(PartyFailed) as info:
        run_parties(tampered_aggregate, config_for(3, security="malicious"),
                    args=(rogue, label, where, how, str(tmp_path)))
    reports = {r.rank: r for r in info.value.reports if r.role == "party"}
    for rank in (r for r in range(3) if r != rogue):
        message = reports[rank].message
        assert reports[rank].status == "error" and reports[rank].exitcode != 0, reports[rank]
        assert message == (f"party {rank} stopped: the MAC check of opening 'aggregate' failed: {line}; nothing was "
                           f"released (security = 'malicious')"), message
    assert not list(tmp_path.glob("released-*"))  # nobody released anything


def test_separate_party_processes_with_credentials_sum_or_all_stop_on_one_flipped_bit(deployment):
    """`mpcdp party --job aggregate --security malicious` as 3 data parties + the dealer, each its own OS
    process with its certificate (as on separate hosts); d = 3000: the masked inputs travel by the star, the
    opening (6000 words) by reduce-scatter. Honest: every party prints the sum. Party 1 flipping bit 62 of
    the first word of its share's chunk to party 0 (the reduce-scatter's send): every other process, the
    dealer included, exits non-zero with the MAC line and prints nothing on stdout."""
    env = dict(os.environ, WORLD_SIZE="3", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               MPCDP_CREDENTIALS=str(deployment))
    arguments = [["--job", "aggregate", "--security", "malicious", "--dim", "3000", "--timeout", "120"]] * 4
    done = run_party_commands(arguments, env, 600)
    for rank, (code, _, err) in enumerate(done):
        assert code == 0, (rank, err[-2000:])
    results = [json.loads(out.strip().splitlines()[-1]) for _, out, _ in done[:3]]
    expected = torch.tensor([r["local"] for r in results]).sum(0)
    for result in results:
        assert torch.allclose(torch.tensor(result["aggregate"]), expected, atol=3 * 2.0 ** -16), result["rank"]

    env["MASTER_PORT"] = str(free_port())
    rogue = [sys.executable, str(ROOT / "tests" / "rogue_party.py"), "aggregate", "0", "--"]
    done = run_party_commands(arguments, env, 600, commands={1: rogue})
    line = ("the MAC check of opening 'aggregate' failed: a party deviated from the protocol (a share or an opened "
            "value was altered); nothing was released (security = 'malicious')")
    for rank in (0, 2):
        code, out, err = done[rank]
        assert code != 0 and out == "", (rank, code, out)
        assert f"party {rank} stopped: {line}" in err.splitlines()[-1], (rank, err[-2000:])
    code, out, err = done[3]
    assert code != 0 and out == "", (code, out)
    assert err.splitlines()[-1].startswith("mpcdp: the dealer stopped: a MAC check failed (party 0") \
        and err.splitlines()[-1].endswith("nothing was released (security = 'malicious')"), err[-2000:]


def test_bounded_inputs_pass_at_the_bound_and_every_party_refuses_a_contribution_outside_it(config_for):
    """One real 3-party run, ‖g‖² <= 100 grid units²: contributions at exactly the bound are summed; party 1 one
    unit² over it (check (c) refuses it), party 2 with a coordinate 2^32 whose square wraps to 0 mod 2^64 and the
    slack of the wrapped norm (check (b): the coordinate has no bits), and party 1 with that coordinate and a
    witness of "non-bits" that would satisfy (b) and (c) (only their low bits can be input,
    :func:`~mpcdp.mpc.auth_inputs.input_bits`, so (b) refuses it) are each refused on every party with the line
    naming the contributor, before the sum is opened; party 2 altering its share of the checks' opening gets the
    MAC line, not a bound refusal, and no ε is ever opened (the squares come from the dealt masks' squares). Then the aggregation job's and the release's own paths with every party's vector
    at exactly the bound given (in the vector's units)."""
    cases = list(BOUND_CASES)
    results = run_parties(bounded_cases, config_for(3, security="malicious"), args=(cases,))
    for per_case, summed, released in results:  # the jobs' own paths, every party's vector at the bound
        assert summed == [0.75, -0.25, -0.25, -1.0] and released == [[0.75, -0.25], [-0.25, -1.0]]
        outcome = dict(zip(cases, per_case))
        assert outcome["honest at the bound"][:2] == ([-4.0, 8.0, -6.0, 8.0], None)
        for case, rogue in (("party 1 just over", 1), ("party 2 wraps", 2), ("party 1 wraps with non-bits", 1)):
            opened, refusal, labels = outcome[case]
            assert opened is None and case not in labels, (case, labels)  # the sum was never opened
            assert refusal == (f"party {rogue}'s contribution to release {case!r} is outside its clipping bound "
                               f"(security = 'malicious')"), (case, refusal)
        opened, refusal, labels = outcome["party 2 flips its check share"]  # a MAC failure stays the MAC line
        assert opened is None and "party 2 flips its check share" not in labels
        assert not any("(ε)" in label for label in labels)  # the squares come from dealt masks: nothing opened
        assert refusal == ("the MAC check of opening 'party 2 flips its check share (bound checks)' failed: a party "
                           "deviated from the protocol (a share or an opened value was altered); nothing was "
                           "released (security = 'malicious')"), refusal


def test_bits_input_as_bits_open_as_each_owners_bits_and_a_word_can_only_be_input_as_its_low_bit(config_for):
    """One real 3-party run: every party inputs 70 values by ``input_bits`` (one packed word and a bit more each,
    every party's own pattern, its first value the word 12345): every party opens, MAC-checked, every owner's
    values as exactly its bits (12345 as 1), so the witness of :mod:`mpcdp.mpc.bounded` is bits by construction."""
    from party_jobs import input_bits_job

    n = 70
    results = run_parties(input_bits_job, config_for(3, security="malicious"), args=(n,))
    expected = [[1.0] + [float((owner + i * i) % 3 % 2) for i in range(1, n)] for owner in range(3)]
    assert len({tuple(map(tuple, r)) for r in results}) == 1 and results[0] == expected, results[0]
    assert {v for row in expected for v in row[1:]} == {0.0, 1.0}


def test_a_bound_in_grid_units_admits_an_honest_vector_at_its_norm_and_refuses_what_could_wrap():
    from mpcdp.mpc.bounded import UnitBound, unit_bound, witness

    bound = unit_bound(1.0, 4, 16)  # (2^16 + 1)²: rounding moves each coordinate by <= 1/2
    assert bound.squared == (2 ** 16 + 1) ** 2 and bound.offset == 2 ** 16 + 1 and bound.coordinate_bits == 18
    words = witness(torch.tensor([2 ** 16 + 1, 0, 0, 0]), bound)
    assert words.numel() == bound.witness_words and set(words.tolist()) <= {0, 1}
    assert sum(int(b) << i for i, b in enumerate(words[-bound.slack_bits:].tolist())) == 0  # no slack at the bound
    with pytest.raises(ConfigError, match=r"`input_bound` is too large for 4096 coordinates"):
        UnitBound(1 << 60, 4096)
    with pytest.raises(ConfigError, match=r"`input_bound` must be a finite number >= 0"):
        unit_bound(float("nan"), 4, 16)


def test_separate_party_processes_all_stop_naming_a_party_whose_contribution_wraps_past_its_bound(deployment):
    """`mpcdp party --job aggregate --security malicious --input-bound 10` as 3 data parties + the dealer, each its
    own OS process with its certificate; party 1 contributes a first coordinate of 65536 = 2^32 grid units (its
    square wraps to 0 mod 2^64) past every check of its own: parties 0 and 2 exit non-zero with the line naming
    party 1, the dealer exits non-zero citing their reports, and nobody prints a result."""
    env = dict(os.environ, WORLD_SIZE="3", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               MPCDP_CREDENTIALS=str(deployment))
    arguments = [["--job", "aggregate", "--security", "malicious", "--dim", "8", "--input-bound", "10",
                  "--timeout", "120"]] * 4
    rogue = [sys.executable, str(ROOT / "tests" / "rogue_party.py"), "--contribute", "65536", "--"]
    done = run_party_commands(arguments, env, 600, commands={1: rogue})
    line = "party 1's contribution to release 'aggregate' is outside its clipping bound (security = 'malicious')"
    for rank in (0, 2):
        code, out, err = done[rank]
        assert code != 0 and out == "", (rank, code, out)
        assert err.splitlines()[-1].endswith(f"party {rank} stopped: {line}"), (rank, err[-2000:])
    for rank in (1, 3):  # the rogue and the dealer stop too, printing no result
        assert done[rank][0] != 0 and done[rank][1] == "", (rank, done[rank][:2])
    assert done[3][2].splitlines()[-1].startswith(  # the dealer: from the parties' reports
        "mpcdp: the dealer stopped: party 1 contributed outside its clipping bound (party 0 and party 2"), \
        done[3][2][-2000:]


def test_an_input_bound_without_malicious_security_is_refused_in_one_line_before_any_process_starts(capsys):
    from mpcdp.cli import main

    for command in (["aggregate", "--input-bound", "1"],
                    ["party", "--job", "train", "--security", "malicious", "--input-bound", "1", "--rank", "0",
                     "--parties", "2"]):
        assert main(command) == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and "`--input-bound` is" in lines[0], lines


def test_a_training_party_is_refused_per_its_arguments_before_any_process_starts():
    """`mpc_party` under `malicious` is covered with the authenticated sampler's noise and no checkpoints; each
    party's arguments are checked (the train job passes per-party arguments), in one line."""
    from mpcdp.config import check_covered
    from mpcdp.learning.backends import NoiseLevels, mpc_party
    from mpcdp.learning.mechanisms import NoiseChoice

    from mpcdp.learning.dpsrm import SrmParameters

    config = MpcConfig(parties=3, security="malicious")
    params = SrmParameters(steps=1, batch=1, batch0=1)
    covered = [(None, params, NoiseLevels(), 3, None, None)] * 3
    check_covered(config, mpc_party, party_args=covered)  # dgauss, no checkpoints, a term bound: covered
    check_covered(MpcConfig(parties=3), mpc_party, party_args=[(None, None, NoiseLevels(choice=NoiseChoice(
        "distributed", 1)), 3, None, {"dir": "x"})] * 3)  # semi-honest: nothing is refused
    for last, line in ((NoiseLevels(choice=NoiseChoice("distributed", 1)), None), (NoiseLevels(), {"dir": "x"})):
        with pytest.raises(ConfigError, match="does not cover (training with noise mode 'distributed'|checkpoints) yet"):
            check_covered(config, mpc_party, party_args=covered[:2] + [(None, params, last, 3, None, line)])
    with pytest.raises(ConfigError, match="does not cover training with dict, which states no bound for its terms"):
        check_covered(config, mpc_party, party_args=covered[:2] + [(None, {}, NoiseLevels(), 3, None, None)])
