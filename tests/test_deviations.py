"""The deviation harness (issue 48, acceptance item 3; tests/deviation_harness.py): m data parties simulated in one
process running mpcdp's own protocol code under ``security = "malicious"``, one of them deviating at one send or
one fetch of dealt material — a bit flipped, an offset added, a word replayed, a message's words permuted, an
altered message to one receiver only, other material than dealt — in the secure sum, the bounded-input checks,
the authenticated sampler (dg-auth/9) and the release. No deviation yields a release other than the honest one:
every honest party stops on its own failed check (or as another honest party stopped), or the deviation had
provably no effect (every party released the honest output); an alteration of the cheater's own masked input,
sent alike to everyone, is an input substitution (released as such, or refused by the bound check or the
validation flags). Honest simulated runs release the plaintext rule's result.

The statistical claim (mpcdp/README.md, "Threat model"): no deviation of these kinds changes an opened value
(mod 2^k) and passes the batched MAC check with probability above (s+1)·2^-s. Tested in a vectorised plaintext
model of the check (the parties' own σ function) at s = 64 (no success in 40,000 deviations) and at s = 6, where
successes occur, with a one-sided binomial test at α = 1e-6 per kind against the bound. The real multi-process
checks of one flipped bit (sum, sampler, bounded inputs) are in tests/test_authenticated.py and
tests/test_auth_gaussian.py."""

import collections
import random

import pytest
import torch
from scipy.stats import binom

import deviation_harness as H
from mpcdp.errors import InputError, ProtocolViolation


def _combos(sends: int, fetches: int) -> list[tuple[str, int]]:
    """Every (kind, event) of a job: each kind of send at each send, other material at each fetch."""
    return [(kind, event) for kind in H.KINDS if kind != "material" for event in range(sends)] + \
        [("material", event) for event in range(fetches)]


@pytest.mark.parametrize("m", [3, 5])
def test_honest_simulated_runs_release_the_plaintext_sum(m):
    """The sum and the bounded release, run by the simulated parties, release Σ_j local_j exactly, on every party."""
    for job in (H.sum_job(3, 7), H.bounded_job(3, 7)):
        outcomes = H.SimParties(m, 7).run(job)
        assert [what for what, _ in outcomes] == ["output"] * m
        for _, value in outcomes:
            assert torch.equal(value, H.plaintext_sum(m, 3, 7))


@pytest.mark.parametrize("m", [3, 5])
def test_no_deviation_in_the_sum_the_bound_checks_or_the_release_changes_what_is_released(m):
    """Every kind of deviation at every send (openings, masked inputs, both MAC checks' messages) and every fetch of
    dealt material of the sum and of the bounded release, each with a random cheater, word and receiver: each honest party stops on its own check, or as another stopped, or releases the honest output
    (an equivocation of one check message stops only its receiver), or, for the cheater's own masked input, the
    substitution. Each kind is caught by the MACs somewhere, and some substitutions occur (the harness sees them)."""
    rng, seen, trials = random.Random(m), collections.Counter(), 0
    for job in (H.sum_job(3, 11), H.bounded_job(3, 11)):
        honest, sends, fetches = H.events(m, job, 11)
        for kind, event in _combos(len(sends), len(fetches)):
            deviation = H.random_deviation(rng, m, len(sends), len(fetches), kind)
            deviation.event = event
            for outcome in H.trial(m, job, 11, deviation, honest):
                seen[kind, outcome] += 1
            trials += 1
    for kind in H.KINDS:
        assert seen[kind, "mac"] > 0, seen
    assert seen["equivocate", "same"] > 0 and seen["flip", "substituted"] + seen["offset", "substituted"] > 0, seen
    assert seen["flip", "bound"] + seen["offset", "bound"] > 0, seen
    assert trials == 53  # the sum: 5 sends (its flags an input of their own), 4 fetches; the bounded release: 4, 4
    # (its witness bits input with its words, with their own dealt bit masks; the squares from the dealt masks' own
    # squares, nothing opened for them; the checks opened with the release under its one MAC check)


@pytest.mark.parametrize("sampler, seed", [("fewer-bytes", 13), ("fewer-rounds", 15)])
def test_the_sampler_and_the_release_stop_every_honest_party_on_a_deviation_in_any_stage(sampler, seed):
    """Every stage at m = 3: 1 sample of dg-auth/9 (dg-auth/10 under the "fewer-rounds" plan; σ = 16 grid units),
    the bounded inputs, the sum, the noise added,
    the release. Honest: every party releases Σ_j local_j plus the noise its shares rebuild. One deviation of a
    random kind: at a random sampler opening (a product's ε and δ in either domain, a daBit crossing, the a2b mask, the
    bit check's parities, the accept bits) or, for other
    material, at a random fetch of the sampler's triples or bits: every honest party stops on the MAC check.
    (One deviation per run of the suite, the seed choosing it, one whose flipped bit is live: seed 14 under
    "fewer-rounds" flips a pad bit past an opening's last packed bit, and every party releases the honest output,
    the harness's outcome 'same'; the benchmark benchmarks/deviations.py sweeps every stage at m = 3 and 5.)"""
    m, rng = 3, random.Random(seed)
    job = H.full_job(1, seed, sampler=sampler)
    sim = H.SimParties(m, seed)
    outcomes = sim.run(job)
    assert [what for what, _ in outcomes] == ["output"] * m
    noise = sum(value[1] for _, value in outcomes).to(torch.float64) / (1 << H.PRECISION)
    for _, (released, _) in outcomes:
        assert torch.equal(released, H.plaintext_sum(m, 1, seed) + noise)
    sampler_sends = [i for i, label in enumerate(sim.labels[0]) if label.startswith("dg-auth")]
    sampler_fetches = [i for i, kind in enumerate(sim.fetch_labels[0]) if kind in ("AuthTriples", "BitTriples", "BitShares",
                                                                                    "DaBits", "EdaBits", "OneHots")]
    deviation = H.random_deviation(rng, m, 1, 1)
    deviation.event = rng.choice(sampler_fetches if deviation.kind == "material" else sampler_sends)
    assert H.trial(m, job, seed, deviation, outcomes[0][1]) == ["mac", "mac"], deviation


def test_a_flipped_decision_bit_whose_parities_are_kept_even_is_caught_by_the_bit_checks_mac_comparison():
    """The bit check's MAC comparison, on its own: at m = 3 (1 sample, σ = 16 grid units) party 1 flips the first
    accept bit it sends (a decision: which candidate is released) and, at the bit check right after, adds to its
    shares of the parities exactly what keeps every row even (:class:`deviation_harness.ParityFixedFlip`). The
    honest parties see only even parities, so the parity test passes; they stop on the MAC comparison of that
    check, before the bit steers anything. (With that comparison disabled the run releases another sample.)"""
    m, seed = 3, 13
    job = H.full_job(1, seed)
    sim = H.SimParties(m, seed)
    honest = sim.run(job)[0][1]
    deviation = H.ParityFixedFlip(cheater=1, kind="flip", event=sim.labels[0].index("dg-auth-accept"), seed=0,
                                  column=0)
    cheated = H.SimParties(m, seed, deviation)
    outcomes = cheated.run(job)
    assert deviation.applied and deviation.changed and deviation.fixed
    assert H.verdict(outcomes, honest, deviation) == ["mac", "mac"]
    for rank in (0, 2):
        parities = [y for label, y in cheated.contexts[rank].opened if label == "dg-auth-accept: bit-check parities"]
        assert len(parities) == 1 and not bool((parities[0] & 1).any())  # every row even: parity passed
        assert "'dg-auth-accept'" in str(outcomes[rank][1]), outcomes[rank][1]


def _send_of(label: str, job, seed: int) -> int:
    """The index of the send labelled ``label`` in a run without deviation (every party sends the same
    sequence)."""
    sim = H.SimParties(3, seed)
    sim.run(job)
    return sim.labels[0].index(label)


def test_a_validation_flag_set_with_no_problem_named_stops_every_party_in_one_line_naming_its_party():
    """A cheater that adds to its own validation flag (an authenticated input of its own) while naming no
    problem makes every party stop with one line naming it, not StopIteration."""
    event = _send_of("sum (validation flags) (masked inputs)", H.sum_job(3, 5), 5)
    deviation = H.Deviation(cheater=1, kind="offset", event=event, seed=1, word=0)
    outcomes = H.SimParties(3, 5, deviation).run(H.sum_job(3, 5))
    for _, error in outcomes:
        assert isinstance(error, ProtocolViolation) and error.party == 1, error
        assert str(error) == ("release 'sum': party 1's validation flag is set but it names no problem: it "
                              "deviated from the protocol; nothing was released")


def _flagged_job(bound: float | None):
    """Party 0's term has a NaN (its flag is set, honestly); the others' are fine."""
    from mpcdp.mpc.release import noisy_release

    def job(ctx):
        ctx.config.precision_bits = H.PRECISION
        local = H.local_vector(ctx.rank, 3, 5).clone()
        if ctx.rank == 0:
            local[0] = float("nan")
        return noisy_release(ctx, local, None, shape=(3,), label="flagged", bound=bound)

    return job


@pytest.mark.parametrize("bound", [None, 1.0])
def test_a_party_inputting_minus_one_as_its_flag_cannot_cancel_an_honest_partys_flag(bound):
    """Party 0's flag is set (a NaN in its term); party 1 adds −1 (in grid units) to the word that carries its own
    flag — under one summed slot that cancelled party 0's flag and released the sum without it. Each flag is its
    party's own authenticated input, opened on its own: every party stops with party 0's problem, nothing is
    released. (Without a bound the flags are inputs of their own; with one, the last, unchecked word of each
    bound-checked contribution.)"""
    job = _flagged_job(bound)
    if bound is None:
        event, word = _send_of("flagged (validation flags) (masked inputs)", job, 5), 0
    else:
        event, word = _send_of("flagged (bounded inputs) (masked inputs)", job, 5), 3
    deviation = H.Deviation(cheater=1, kind="offset", event=event, seed=1, word=word, amount=-(1 << H.PRECISION))
    outcomes = H.SimParties(3, 5, deviation).run(job)
    assert deviation.applied and deviation.changed
    for what, error in outcomes:
        assert what == "raised" and isinstance(error, InputError) and error.party == 0, (what, error)
        assert str(error) == "party 0: `local` contains 1 NaN/Inf entries", error


@pytest.mark.parametrize("m", [3, 5])
def test_no_deviation_passes_the_mac_check_more_often_than_the_spdz2k_bound(m):
    """The vectorised model (:func:`deviation_harness.model_check`), 8,000 checks per kind: at s = 64 no deviation
    that changes an opened value passes; at s = 6 such deviations pass at times (the model can see the check's
    limit), and for each kind a one-sided binomial test at α = 1e-6 does not reject success ≤ (s+1)·2^-s = 7/64."""
    trials = 8000
    for kind in H.MODEL_KINDS:
        passed, changed = H.model_check(64, m, kind, trials, seed=m)
        assert int(changed.sum()) > trials // 4  # a flip above bit 64 changes no opened value
        assert not bool((passed & changed).any()), kind
    successes = 0
    for kind in H.MODEL_KINDS:
        passed, changed = H.model_check(6, m, kind, trials, seed=m)
        wins = int((passed & changed).sum())
        assert binom.sf(wins - 1, trials, 7 / 64) >= 1e-6, (kind, wins)
        successes += wins
    assert successes > 0


@pytest.mark.parametrize("case", ["equivocated bit", "flipped bit", "flipped padding"])
def test_a_witness_bit_sent_differently_is_caught_before_the_bound_decision_and_padding_bits_are_never_used(case):
    """The bounded release at m = 3 (d = 3, bound 1): party 1 alters one bit d of its packed witness bits
    (:func:`mpcdp.mpc.auth_inputs.input_words_and_bits`, the last word after its d + 1 masked words). Sent to
    party 2 only (a used bit): both honest parties stop on the release's MAC check (which covers the bound checks
    opened with it, before the bound is decided), at its view comparison (their
    digests differ; break-checked: with d left out of the digest the MACs catch it, with the other line), never
    on a bound decision the bit could steer. Sent alike to everyone (a used bit): an input substitution of a
    witness bit, so check (b) refuses party 1's contribution, named. A bit above the W used ones of the last word,
    sent alike: ignored (everyone releases the honest sum)."""
    from mpcdp.mpc.bounded import unit_bound

    d, seed = 3, 11
    job = H.bounded_job(d, seed)
    event = _send_of("bounded (bounded inputs) (masked inputs)", job, seed)
    used = unit_bound(1.0, d, H.PRECISION).witness_words
    words = -(-used // 64)
    assert used % 64, used  # the last word has padding
    honest = H.SimParties(3, seed).run(job)[0][1]
    padding = case == "flipped padding"  # the seed whose flipped bit is above the last word's used ones, or below
    flip_seed = next(s for s in range(1000) if (random.Random(s).randrange(64) >= used % 64) == padding)
    deviation = H.Deviation(cheater=1, kind="equivocate" if case == "equivocated bit" else "flip", event=event,
                            seed=flip_seed, to=2 if case == "equivocated bit" else None, word=d + words)
    outcomes = H.SimParties(3, seed, deviation).run(job)
    assert deviation.applied and deviation.changed
    found = H.verdict(outcomes, honest, deviation)
    expected = {"equivocated bit": ["mac", "mac"], "flipped bit": ["bound", "bound"], "flipped padding": ["same", "same"]}
    assert found == expected[case], (found, outcomes)
    if case == "equivocated bit":
        for rank in (0, 2):
            assert "'bounded' failed" in str(outcomes[rank][1]), outcomes[rank][1]
            assert "parties received different opened or input values" in str(outcomes[rank][1])
