"""The authenticated in-MPC discrete Gaussian (``security = "malicious"``, circuit dg-auth/9,
mpcdp/noise/auth_gaussian.py): its circuit decides every candidate as the plaintext rule does on the same bits
(so its output pmf is exact_log_pmf's), and in a real 3-party run a party that flips one bit of one share it
sends inside the sampler makes every honest process stop with the MAC line before any sample is released."""

import numpy as np
import pytest
import torch

from mpcdp.errors import PartyFailed
from mpcdp.mpc.auth_circuits import Dealt, DealtHot, PlainArith, PlainBits, mux_levels, one_hot
from mpcdp.noise import discrete_gaussian as dg
from mpcdp.noise.auth_exponent import exponent
from mpcdp.noise.auth_fields import DEALT_FIELDS, FIRST_FIELDS, READ_FROM, SECOND_FIELDS, dealt_widths
from mpcdp.noise.auth_gaussian import MASK_BITS, Domains, candidate_circuit, one_decision
from mpcdp.runtime.harness import run_parties
from party_jobs import tampered_noise


def _value(bits: torch.Tensor) -> np.ndarray:
    return (bits << torch.arange(bits.shape[1])).sum(1).numpy()


@pytest.mark.parametrize("sigma, coin", [(16.0, False), (16.0, True), (1e5, True)])
def test_the_authenticated_circuit_decides_every_candidate_as_the_plaintext_rule(sigma, coin):
    """The circuit, run on plaintext integers (the same code the parties run on authenticated shares), gives
    every candidate's n and accept bit exactly as :func:`dg.candidate_values` and :func:`dg.accept` do on the
    same field bits: 4,000 candidates, the corner rows (every bit 0, every bit 1, each factor's word 0; per
    word, 64 rows whose bits the circuit reads, from :data:`READ_FROM`, are all 0 and 64 whose top set bit is the
    lowest it reads) and the others uniform; T's mask bits uniform. The circuit is given only the bits it reads
    (:func:`dealt_widths`), the rule the whole words. The bit domain's products carry random upper bits, as the k = 1 domain's
    may (only low bits are read). With ``coin`` every factor word, the point and the sign are given as the parties hold them, dealt bits R
    and a public coin S with W = R ⊕ S (its prefix ORs half products u·R turned into u·W by the coin), and the
    index as the one-hot of its R with its coin (W's one-hot by S's permutation). Both outcomes occur (the test
    can fail either way). Given the first stage's fields only and the others by ``later`` for the survivors (as
    the parties' run deals them), the circuit decides the same; so does dg-auth/10's :func:`one_decision` (every
    field given, one decision: ``malicious_sampler = "fewer-rounds"``)."""
    plan = dg.plan_for(sigma)
    widths = dg.field_bits(plan)
    generator = torch.Generator().manual_seed(48)
    n, corners = 4000, 3 + 128 * len(READ_FROM)
    fields = {name: torch.randint(0, 2, (n, b), generator=generator) for name, b in widths.items()}
    for name in fields:  # corner rows: all zeros, all ones, the factors' words zero on an accepted-looking row
        fields[name][0], fields[name][1] = 0, 1
        if name.startswith("v"):
            fields[name][2] = 0
    for j, name in enumerate(READ_FROM):  # per word, 64 rows each: its bits read all 0; its top set bit the lowest read
        low, rows = READ_FROM[name], 3 + 128 * j
        fields[name][rows:rows + 128, low:] = 0
        fields[name][rows + 64:rows + 128, low] = 1
    mask = torch.randint(0, 2, (n, MASK_BITS), generator=generator)
    r = (mask << torch.arange(MASK_BITS)).sum(1)
    given = {name: bits[:, READ_FROM.get(name, 0):] for name, bits in fields.items()}  # as dealt: the bits read
    assert {name: bits.shape[1] for name, bits in given.items()} == dealt_widths(plan)
    if coin:  # the words as dealt bits R with a public coin S, W = R ⊕ S; the index as R's dealt one-hot
        for name in DEALT_FIELDS:
            s = torch.randint(0, 2, given[name].shape, generator=generator)
            given[name] = Dealt(given[name] ^ s, s)
        s = torch.randint(0, 2, fields["index"].shape, generator=generator)
        given["index"] = DealtHot(torch.nn.functional.one_hot(torch.from_numpy(_value(fields["index"] ^ s)), 64), s)
    value, accept = candidate_circuit(Domains.plain(PlainBits(7)), plan, given, (mask, r))

    def later(survivors: torch.Tensor) -> dict:  # as the parties' run: the other words dealt for the survivors only
        return {name: given[name].take(PlainArith(), survivors) if isinstance(given[name], Dealt)
                else given[name][survivors] for name in SECOND_FIELDS}

    first = {name: given[name] for name in FIRST_FIELDS}  # the circuit drops them once used
    later_value, later_accept = candidate_circuit(Domains.plain(PlainBits(7)), plan, first, (mask, r), later)
    assert torch.equal(later_value, value) and torch.equal(later_accept & 1, accept & 1)
    one_value, one_accept = one_decision(Domains.plain(PlainBits(7)), plan, dict(given), (mask, r))
    assert torch.equal(one_value, value) and torch.equal(one_accept & 1, accept & 1)
    plain = {name: _value(bits) for name, bits in fields.items()}
    n_plain, piece = dg.candidate_values(plan, plain)
    expected = dg.accept(plan, dg.exponent(plan, n_plain, piece), plain)
    assert np.array_equal(value.numpy(), n_plain)
    assert np.array_equal((accept & 1).numpy(), expected.astype(np.int64))
    uniform = expected[corners:]  # the plan's acceptance on the uniform rows: α < 1e-6
    assert abs(uniform.mean() - plan.acceptance) < 5 * np.sqrt(0.25 / uniform.size)


def _words_with_top_at(width: int, generator: torch.Generator) -> tuple[torch.Tensor, np.ndarray]:
    """(bits (8·(width + 1), width) lowest first, their values): 8 words with no bit set, then 8 whose top set bit
    is p for every p < width, the bits below it uniform."""
    tops = torch.arange(-1, width).repeat_interleave(8)
    bits = torch.randint(0, 2, (tops.numel(), width), generator=generator)
    column = torch.arange(width).reshape(1, -1)
    bits = torch.where(column > tops.reshape(-1, 1), 0, torch.where(column == tops.reshape(-1, 1), 1, bits))
    return bits, _value(bits)


def test_every_factor_read_from_its_lowest_bit_decides_as_the_rule_on_the_whole_word():
    """dg-auth/8 deals and reads a factor's word only from :data:`READ_FROM` up. For every group, every window
    value and a word whose top set bit is each of the 62 positions (or none), 8 words each: TH's bit at the top
    set bit of the bits read (the circuit's one-hot and entries on plaintext) is :func:`dg.below` on the whole
    word; and the low factor's terms on v_low from LOW_DROP are ``below`` on the whole v_low for uniform T."""
    from mpcdp.noise.auth_gaussian import _factor_entries, _top_one_hots

    A, generator = PlainBits(5), torch.Generator().manual_seed(8)
    bits, words = _words_with_top_at(dg.WORD, generator)
    for g, table in enumerate(dg.group_thresholds()):
        low = READ_FROM[f"v{g}"]
        (top,) = _top_one_hots(A, [bits[:, low:]])
        entries = _factor_entries(A, top, table, low) & 1
        expected = np.stack([dg.below(words, np.full(words.shape, th), dg.WORD) for th in table], 1)
        assert np.array_equal(entries.numpy(), expected.astype(np.int64)), g
    bits, words = _words_with_top_at(dg.F, generator)
    low = READ_FROM["v_low"]
    (top,) = _top_one_hots(A, [bits[:, low:]])
    T = torch.randint(0, 1 << dg.LOW_BITS, (words.size,), generator=generator) & dg.LOW_MASK
    t_bits = (T.reshape(-1, 1) >> torch.arange(dg.LOW_BITS)) & 1
    terms = (top[:, dg.LOW_DROP - low:dg.LOW_BITS - low] * t_bits[:, dg.LOW_DROP:]).sum(1) & 1
    assert np.array_equal(terms.numpy(), dg.below(words, T.numpy(), dg.F).astype(np.int64))
    assert 0 < terms.float().mean() < 1


@pytest.mark.parametrize("sigma", [16.0, 40.0])
def test_n_and_T_of_every_index_point_and_sign_are_the_rules(sigma):
    """Steps 2–3 alone (mpcdp/noise/auth_exponent.py), exhaustively: every index (64), point (2^(k+4)) and sign,
    the point and the sign dealt bits R with a uniform public coin S and the index a dealt one-hot, the bit
    domain's products with random upper bits: n and T equal :func:`dg.candidate_values` and :func:`dg.exponent`
    on W = R ⊕ S, so every piece's two's complement word (piece 0's included) is exercised."""
    plan = dg.plan_for(sigma)
    widths, generator = dg.field_bits(plan), torch.Generator().manual_seed(44)
    index, point, sign = torch.meshgrid(torch.arange(64), torch.arange(1 << widths["point"]), torch.arange(2),
                                        indexing="ij")
    values = {"index": index.reshape(-1), "point": point.reshape(-1), "sign": sign.reshape(-1)}
    bits = {name: (v.reshape(-1, 1) >> torch.arange(widths[name])) & 1 for name, v in values.items()}
    given = {}
    for name, b in bits.items():
        s = torch.randint(0, 2, b.shape, generator=generator)
        given[name] = Dealt(b ^ s, s) if name != "index" else DealtHot(
            torch.nn.functional.one_hot(torch.from_numpy(_value(b ^ s)), 64), s)
    value, T = exponent(Domains.plain(PlainBits(3)), plan, given)
    n_plain, piece = dg.candidate_values(plan, {name: v.numpy() for name, v in values.items()})
    assert np.array_equal(value.numpy(), n_plain) and np.array_equal(T.numpy(), dg.exponent(plan, n_plain, piece))
    assert (n_plain < 0).any() and (piece == 0).any()


def test_one_hot_and_mux_select_the_entry_the_bits_spell():
    A, generator = PlainArith(), torch.Generator().manual_seed(2)
    bits = torch.randint(0, 2, (500, 6), generator=generator)
    entries = torch.randint(-(1 << 40), 1 << 40, (500, 64), generator=generator)
    spelled = torch.from_numpy(_value(bits))
    assert torch.equal(one_hot(A, bits), torch.nn.functional.one_hot(spelled, 64))
    assert torch.equal(mux_levels(A, [(bits, entries)])[0], entries[torch.arange(500), spelled])


def test_a_party_that_flips_a_bit_inside_the_sampler_stops_every_honest_party_before_any_sample(config_for, tmp_path):
    """m = 3, σ = 1 (41 grid units... one pass of ~30 candidates). Honest: every party finishes and party 0
    opened 12 MAC-checked samples, and a release with 3 authenticated noise values adds exactly those values.
    Then party 1 flips bit 62 of the first word it sends to party 0 in the
    ε/δ opening of the sampler's 40th bit product (inside T's carry chain): parties 0 and 2 exit non-zero with
    the MAC line of the check that comes before the first factor's bits, and nobody released anything."""
    honest = run_parties(tampered_noise, config_for(3, security="malicious"),
                         args=(-1, "", 0, 12, str(tmp_path)))
    assert len(honest[0]["values"]) == 12 and all(np.isfinite(honest[0]["values"]))
    assert honest[0]["accepted"] >= 12 and honest[1]["candidates"] == honest[0]["candidates"]
    for party in honest:  # the authenticated release adds the authenticated noise, exactly, on the 2^-4 grid
        released, noise = torch.tensor(party["released"]), torch.tensor(party["noise"])
        assert torch.equal(released, torch.tensor([1.5, -3.0, 6.0], dtype=torch.float64) + noise), party
        assert torch.equal(noise * 16, (noise * 16).round()) and noise.abs().max() > 0
    for path in tmp_path.glob("released-*"):
        path.unlink()

    _flipped_send_stops_every_honest_party(config_for, tmp_path, "dg-auth-bits-40 (ε, δ)")


def test_the_fewer_rounds_plan_samples_and_a_flipped_bit_stops_every_honest_party(config_for, tmp_path):
    """dg-auth/10 (``malicious_sampler = "fewer-rounds"``), m = 3, σ = 1: honest, every party finishes, party 0
    opened 12 MAC-checked samples, the same candidates at every party, and a release adds its authenticated noise
    exactly. Then party 1 flips bit 62 of the first word it sends to party 0 in the sampler's 40th bit product
    (the carry chain, beside every word's prefix chain) and, in a second run, in the opening of every mux's
    masked window: parties 0 and 2 exit non-zero with the MAC line of the check before the accept bits (the
    pass's one decision), and nobody released anything."""
    config = config_for(3, security="malicious", malicious_sampler="fewer-rounds")
    honest = run_parties(tampered_noise, config, args=(-1, "", 0, 12, str(tmp_path)))
    assert len(honest[0]["values"]) == 12 and all(np.isfinite(honest[0]["values"]))
    assert honest[0]["accepted"] >= 12 and honest[1]["candidates"] == honest[0]["candidates"]
    for party in honest:
        released, noise = torch.tensor(party["released"]), torch.tensor(party["noise"])
        assert torch.equal(released, torch.tensor([1.5, -3.0, 6.0], dtype=torch.float64) + noise), party
    for path in tmp_path.glob("released-*"):
        path.unlink()
    for label in ("dg-auth-bits-40 (ε, δ)", "dg-auth-select"):
        _flipped_send_stops_every_honest_party(config_for, tmp_path, label, sampler="fewer-rounds",
                                               check="accept")


def _flipped_send_stops_every_honest_party(config_for, tmp_path, label: str, *, sampler: str = "fewer-bytes",
                                           check: str = "first-factor") -> None:
    """Party 1 flips bit 62 of the first word of its sends to party 0 tagged ``label`` (m = 3, σ = 1, 12
    samples, the ``sampler`` plan): parties 0 and 2 exit non-zero with the MAC line of the check before the
    ``check`` bits, and nobody released anything."""
    config = config_for(3, security="malicious", malicious_sampler=sampler)
    with pytest.raises(PartyFailed) as info:
        run_parties(tampered_noise, config, args=(1, label, 0, 12, str(tmp_path)))
    reports = {r.rank: r for r in info.value.reports if r.role == "party"}
    for rank in (0, 2):
        message = reports[rank].message
        assert reports[rank].status == "error" and reports[rank].exitcode != 0, reports[rank]
        assert message.startswith(f"party {rank} stopped: the MAC check of opening 'dg-auth (before the "
                                  f"{check} bits)' failed: a party deviated from the protocol ("), message
        assert message.endswith("nothing was released (security = 'malicious')"), message
    assert not list(tmp_path.glob("released-*"))


def test_a_party_that_flips_a_bit_of_a_masked_window_stops_every_honest_party_before_any_sample(config_for,
                                                                                                 tmp_path):
    """dg-auth/9's new opening: party 1 flips bit 62 of the first word it sends to party 0 in every opening of the
    muxes' masked windows (window ⊕ ρ, label ``dg-auth-select``; m = 3, σ = 1, 12 samples): parties 0 and 2 exit
    non-zero with the MAC line of the check before the first-factor bits, and nobody released anything."""
    _flipped_send_stops_every_honest_party(config_for, tmp_path, "dg-auth-select")

