"""The cost ledger: operation counts for small known cases equal the hand-derived numbers, and measured
bytes, rounds and operations equal each protocol's declared cost at 2, 3 and 5 parties."""

import dataclasses
import json
import pathlib
import subprocess
import sys

import pytest

from mpcdp.errors import InsecureSettingWarning
from mpcdp.accounting.released import ACCOUNTANT
from mpcdp.jobs import cost_report
from mpcdp.learning.mechanisms import MECHANISMS
from mpcdp.mpc import release, secure_sum
from mpcdp.transport import costs
from mpcdp.noise import rou
from mpcdp.runtime.harness import run_job
import forked
from party_jobs import metered_cases

BIG = 10_000  # 80 KB: above the star threshold, so 3+ parties use reduce-scatter + all-gather


def test_opening_plans_and_their_bytes():
    assert costs.opening_plan(10, 2) == "direct" and costs.opening_plan(10**6, 2) == "direct"
    # the star while party 0 relays at most 64 KiB ((m−1)·8d), the balanced plan above
    assert costs.opening_plan(4096, 3) == "star" and costs.opening_plan(4097, 3) == "scatter"
    assert costs.opening_plan(256, 33) == "star" and costs.opening_plan(257, 33) == "scatter"
    for parties in (32, 64):  # d = 1,000: every party within 1.5× of the mean bytes
        sent = [sum(costs.opening_bytes([1000], parties, r)) for r in range(parties)]
        assert max(sent) <= 1.5 * sum(sent) / parties, (parties, max(sent), sum(sent) / parties)
    assert costs.chunk_sizes(10, 3) == [4, 3, 3]
    # star, 3 parties, 5 elements: party 0 receives two 40-byte shares and sends two sums back, each in a
    # frame with a 16-byte header
    assert costs.opening_bytes([5], 3, 0) == (2 * 56, 2 * 56)
    assert costs.opening_bytes([5], 3, 1) == (56, 56)
    assert costs.opening_bytes([5], 2, 1) == (56, 56)
    # [mpc] openings = "all-to-all": below the cap every party sends its share to every other (1 round), above
    # it the same scatter; two parties as ever
    assert [costs.opening_plan(e, 3, all_to_all=True) for e in (10, 4096, 4097)] == ["direct", "direct", "scatter"]
    assert costs.opening_plan(10, 2, all_to_all=True) == "direct"
    assert costs.opening_messages(5, 4, 2, all_to_all=True) == ([40] * 3, [40] * 3, 1)
    everyone = costs.DeclaredCost(openings=[5, 9001], all_to_all=True)
    assert everyone.bytes(3, 1) == (2 * 56 + 8 * (3001 + 3000 + 2 * 3000) + 4 * 16,
                                    2 * 56 + 8 * (2 * 3000 + 3001 + 3000) + 4 * 16)
    assert everyone.rounds(3) == 1 + 2 and costs.DeclaredCost(openings=[5, 9001]).rounds(3) == 2 + 2
    # scatter, 3 parties, 9001 elements (chunks 3001, 3000, 3000), party 1: sends chunks 0 and 2, then its
    # combined chunk to both; receives the two shares of its chunk, then chunks 0 and 2 combined
    sent, received = costs.opening_bytes([9001], 3, 1)
    assert sent == 8 * (3001 + 3000 + 2 * 3000) + 4 * 16
    assert received == 8 * (2 * 3000 + 3001 + 3000) + 4 * 16
    assert costs.LAN.time_s(hops=10, bytes_max_party=125_000) == pytest.approx(10 * 0.1e-3 + 1e-3)
    assert costs.WAN.time_s(hops=2, bytes_max_party=0, compute_s=1.0) == pytest.approx(1.04)


def test_star_kings_count_from_zero_in_each_added_sampler_cost():
    """The mesh's count of star openings (their rotating kings) restarts at each committee scope, one per
    sampler call: two rotating costs added are billed each from its own first king, not as one run of kings
    (before, the quick start's estimate billed party 2 about 2% more than it sent and party 1 about 1% less)."""
    one = costs.DeclaredCost(openings=[5, 5], kings_rotate=True)  # kings: parties 0, 1
    added = costs.DeclaredCost() + one + one
    assert added.king_resets == (0, 2) and added.kings_rotate
    assert [added.bytes(3, rank) for rank in range(3)] == [
        tuple(2 * x for x in one.bytes(3, rank)) for rank in range(3)]
    # one call of four star openings (kings 0, 1, 2, 0) is not the same as two calls of two
    assert costs.DeclaredCost(openings=[5] * 4, kings_rotate=True).bytes(3, 2) != added.bytes(3, 2)
    assert added.bytes(3, 2) == (4 * 56, 4 * 56) and added.bytes(3, 0) == (6 * 56, 6 * 56)
    # a plain cost added inside a rotating one starts no new count
    assert (one + costs.DeclaredCost(openings=[5])).king_resets == ()


def _rounds(elements: list[int], parties: int, all_to_all: bool = False) -> int:
    return sum(costs.opening_messages(e, parties, 0, all_to_all)[2] for e in elements)


def _assert_bytes(case: dict, declared: costs.DeclaredCost, parties: int, rank: int, ledger: dict) -> None:
    sent, received = declared.bytes(parties, rank)
    # counted where the bytes move, and what the kernel says went into those sockets
    assert ledger["link_sent"] == ledger["kernel_link_sent"] == sent, (case, rank)
    assert ledger["link_received"] == received, (case, rank)
    # nothing else left this party except party 0's requests to the dealer
    assert ledger["bytes_sent"] - ledger["dealer_request_bytes"] == sent, (case, rank)


@pytest.mark.parametrize("parties, openings", [(2, "star"), (3, "star"), (5, "star"), (3, "all-to-all")])
def test_measured_equals_declared(parties, openings, config_for, monkeypatch):
    """Every case's operations, rounds, critical path and bytes as declared; ``openings = "all-to-all"``: its
    small openings in 1 round from every party to every other (:func:`costs.opening_plan`)."""
    # plain links, knowingly: what the kernel sent is compared with the frames themselves (TLS adds records)
    monkeypatch.setenv("MPCDP_INSECURE_LINKS", "1")
    a2a = openings == "all-to-all"
    with pytest.warns(InsecureSettingWarning, match="plain TCP"):
        result = run_job(metered_cases, config_for(parties, openings=openings), args=(BIG,))
    per_party = result.values
    zero = per_party[0]
    for case in zero:  # every party counts the same operations and rounds
        assert all(p[case]["ops"] == zero[case]["ops"] and p[case]["rounds"] == zero[case]["rounds"]
                   for p in per_party), case

    # one opening: no operation, 1 opening, 1 round between 2 parties, 2 through party 0
    c = zero["opening"]
    assert c["ops"]["openings"] == 1 and c["ops"]["opened_elements"] == 5
    assert sum(v for k, v in c["ops"].items() if k not in ("openings", "opened_elements")) == 0
    assert c["rounds"] == (1 if parties == 2 or a2a else 2) and c["dealer_requests"] == 0
    assert c["hops"] == c["emulated_hops"] == c["rounds"]  # the critical path (mpcdp.transport.hop_clock)
    for name, size in (("opening", 5), ("opening_big", BIG)):
        for rank, p in enumerate(per_party):
            _assert_bytes(name, costs.DeclaredCost(openings=[size], all_to_all=a2a), parties, rank, p[name])

    # one multiplication of 4 elements: 4 Beaver products, both factors opened once (8 elements), 1 request
    c = zero["mul"]
    assert c["ops"]["mul"] == 4 and c["ops"]["square"] == 0 and c["ops"]["openings"] == 1
    assert c["ops"]["opened_elements"] == 8 and c["dealer_requests"] == 1
    assert c["rounds"] == _rounds([8], parties, a2a)
    # its critical path: party 0 waits two delays for the dealer's reply; then at 2 parties party 1 has party
    # 0's share a delay later, at more the star through party 0 had the others' shares meanwhile: 3 either way
    assert c["hops"] == 3

    # one comparison of 4 elements on 62 bits: the masked value (4), 6 prefix rounds of (E, G) (2·4 each;
    # 2 ANDs per element in the first 5, 1 in the last: 11 words), the result bit (4); 1 + 6 requests
    c = zero["comparison"]
    assert c["ops"]["comparison"] == 4 and c["ops"]["and_words"] == 11 * 4
    assert c["openings_list"] == [4] + [8] * 6 + [4] and c["dealer_requests"] == 7
    assert c["rounds"] == _rounds([4] + [8] * 6 + [4], parties, a2a)
    if parties == 2:  # each request before a direct opening costs two more delays
        assert c["hops"] == c["rounds"] + 2 * c["dealer_requests"]

    # secure_sum: the handshake exchange only (16 bytes to every other party), no share moves
    c = zero["secure_sum"]
    declared = secure_sum.declared_cost()
    assert c["ops"]["openings"] == 0 and c["rounds"] == declared.rounds(parties) == 1
    assert c["hops"] == 1  # a round outside any opening reaches the critical path through the mesh's moves
    for rank, p in enumerate(per_party):
        _assert_bytes("secure_sum", declared, parties, rank, p["secure_sum"])

    # CrypTen's own multiplication is counted at its provider: 4 triples, and for > 2 parties 4 wraps
    # truncations; ε and δ are opened together by one all-reduce over mpcdp's links (an opening of 8
    # elements), the wraps gathered at party 0 (1 round; 2 parties truncate locally)
    c = zero["crypten_mul"]
    assert c["ops"]["mul"] == 4 and c["ops"]["trunc"] == (0 if parties == 2 else 4)
    assert c["rounds"] == _rounds([8], parties, a2a) + (0 if parties == 2 else 1)

    # the sampler: operations, openings (in order), rounds, dealer requests and bytes as declared
    c, stats = zero["rou"], zero["rou"]["stats"]
    declared = rou.declared_cost(stats["pass_candidates"], stats["samples"])
    declared.all_to_all = a2a
    redone = [e for e, label in zip(c["openings_list"], c["labels"]) if label.endswith("-redo")]
    assert [e for e, label in zip(c["openings_list"], c["labels"]) if not label.endswith("-redo")] \
        == declared.openings
    assert len(redone) == c["calls"]["trunc_redo"] and sum(redone) == c["ops"]["trunc_redo"]
    expected = declared.op_counts()
    expected["trunc"] += c["ops"]["trunc_redo"]
    expected["openings"] += len(redone)
    expected["opened_elements"] += sum(redone)
    assert {k: v for k, v in c["ops"].items() if k != "trunc_redo"} == \
        {k: v for k, v in expected.items() if k != "trunc_redo"}
    assert c["rounds"] == declared.rounds(parties) + _rounds(redone, parties, a2a)
    assert c["dealer_requests"] == declared.dealer_requests + len(redone)
    full = costs.DeclaredCost(openings=c["openings_list"], all_to_all=a2a)
    for rank, p in enumerate(per_party):
        _assert_bytes("rou", full, parties, rank, p["rou"])
    assert c["ops"]["random_bits"] == 2 * 16 * stats["candidates"]

    # distributed noise: each party noises its own share — nothing counted, nothing sent
    c = zero["distributed"]
    assert sum(c["ops"].values()) == 0 and c["rounds"] == 0
    assert all(p["distributed"]["bytes_sent"] == 0 for p in per_party)

    # the dealer's per-request bytes cover every request party 0 made, in order
    dealer = result.dealer["request_bytes"]
    assert len(dealer) == sum(zero[case]["dealer_requests"] for case in zero) > 0
    first, count = zero["rou"]["first_dealer_request"], zero["rou"]["dealer_requests"]
    assert all(b > 0 for b in dealer[first:first + count])


def test_release_declared_cost():
    assert release.declared_cost(123).openings == [124]
    assert release.declared_cost(123).rounds(3) == 2 and release.declared_cost(123).rounds(2) == 1


def test_cost_report_end_to_end(tmp_path):
    prefix = tmp_path / "ij"
    done = forked.run([sys.executable, "-m", "mpcdp.cli", "cost", "--model", "logreg-ijcnn1", "--parties", "3",
                       "--out", str(prefix), "--timeout", "120"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "| weight | 22 | 22 |" in done.stdout and "9,579,500" in done.stdout
    record = json.loads((tmp_path / "ij.json").read_text())
    total = record["rows"][-1]
    layer = record["run"]["layers"][0]
    assert total["layer"] == "total" and total["elements"] == 22
    assert layer["noise"]["ops_agree"] and layer["release"]["ops_agree"]
    # the data parties' traffic without the dealer's: what they sent each other, they received (each party meters
    # its own link to the dealer, whose replies go to the party it picks: before a6eed9c only party 0's were taken
    # out, and a party that received replies showed them as party traffic, 88 kB of a9a's m = 2 record)
    for section in ("noise", "release"):
        assert sum(layer[section]["bytes_received"]) == sum(layer[section]["bytes_sent"]), layer[section]
        assert layer[section]["bytes_received"] == [tcp - dealer for tcp, dealer in zip(
            layer[section]["tcp_received"], layer[section]["dealer_received"])]
        assert layer[section]["dealer_bytes"] == layer[section]["dealer_to_parties"] \
            + layer[section]["parties_to_dealer"]
    assert sum(layer["noise"]["dealer_received"][1:]) > 0  # the dealer's replies reach parties other than 0
    assert sum(layer["noise"]["dealer_received"]) == layer["noise"]["dealer_to_parties"]  # and all are counted
    # totals add every party's bytes and the dealer's; the online step is one opening of d + 1 elements
    assert total["total_bytes"] == sum(layer["noise"]["bytes_sent"]) + sum(layer["release"]["bytes_sent"]) \
        + layer["noise"]["dealer_bytes"]
    assert layer["release"]["openings"] == [["release weight", 23]]
    assert total["online_bytes"] == sum(costs.opening_bytes([23], 3, r)[0] for r in range(3))
    assert total["oblivc_bytes"] == 9_579_500 * 32 and total["rebuilt_bytes_ratio"] > 100
    assert total["wan_s"] > total["lan_s"] > total["total_s"]
    assert (tmp_path / "ij.png").stat().st_size > 10_000 and (tmp_path / "ij.csv").read_text().count("\n") == 3
    # the tables and the plot can be rebuilt from the JSON record alone
    table = (tmp_path / "ij.md").read_text()
    (tmp_path / "ij.md").unlink()
    (tmp_path / "ij.png").unlink()
    again = forked.run([sys.executable, "-m", "mpcdp.cli", "cost", "--rerender", "--out", str(prefix)],
                       capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr[-2000:]
    assert (tmp_path / "ij.md").read_text() == table and (tmp_path / "ij.png").exists()
    # the record goes through the one writer: stamped with the sampler it measured and the accountant
    assert record["mechanism"] == MECHANISMS["dgauss"].id and record["accountant"] == ACCOUNTANT
    assert f"Mechanism: {MECHANISMS['dgauss'].id}.\nAccountant: {ACCOUNTANT}.\n" in table
    other = dataclasses.replace(cost_report.load(str(prefix)), noise="distributed")
    cost_report.write(other, str(tmp_path / "dist"))
    assert json.loads((tmp_path / "dist.json").read_text())["mechanism"] == MECHANISMS["distributed"].id
    assert (tmp_path / "dist.csv").read_text() == (tmp_path / "ij.csv").read_text()


def _quick_start(openings: str) -> dict:
    """The main job's training (`mpcdp train protocols/quickstart-a9a.toml`) with ``--openings``: its JSON report."""
    protocol = pathlib.Path(__file__).resolve().parents[1] / "protocols" / "quickstart-a9a.toml"
    done = forked.run([sys.executable, "-m", "mpcdp.cli", "train", str(protocol), "--openings", openings],
                      capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_quick_start_opens_all_to_all_as_its_estimate_says_and_certifies_the_same_epsilon():
    """``[mpc] openings = "all-to-all"`` end to end: the run's JSON names the setting, its certified ε is the
    star run's (what is released does not change), every party's measured bytes are within 2% of the estimate,
    which follows the setting (each party sends every small opening to both others: parties 1 and 2 over 10%
    more than with the star, where party 0 relayed), and the star run is within 2% of its own estimate."""
    star, everyone = _quick_start("star"), _quick_start("all-to-all")
    assert star["mpc"]["openings"] == "star" and everyone["mpc"]["openings"] == "all-to-all"
    assert everyone["epsilon"] == star["epsilon"] and everyone["delta_certified"] == star["delta_certified"]
    for report in (star, everyone):
        assert report["party_bytes"] == pytest.approx(report["estimate"]["party_bytes"], rel=0.02), report["mpc"]
    for rank in (1, 2):
        assert everyone["estimate"]["party_bytes"][rank] > 1.1 * star["estimate"]["party_bytes"][rank]
    assert 0 < everyone["test_loss"] < 0.7
