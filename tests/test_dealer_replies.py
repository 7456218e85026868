"""A reply's receiver checks every dealer reply against the request before it allocates anything: the real
dealer's replies of every kind pass (those of mpcdp's own kinds go to the member with the fewest reply elements
so far, both parties receiving some), and a dealer announcing another shape — or one of 2^28 elements — is
refused as a ProtocolViolation naming the dealer. Party 0, party 1 and the dealer are joined by real loopback
links."""

import math
import threading

import pytest
import torch

from mpcdp.adapter import dealer_link, keyed, mac_material, objects
from mpcdp.adapter.dealer import ALLOWED, Dealer
from mpcdp.adapter.material import KINDS
from mpcdp.errors import ConfigError, PeerLost, ProtocolViolation
from mpcdp.randomness import secure_key
from mpcdp.transport import public
from mpcdp.transport.mesh import Mesh

DEALER = 2
# the links are plain knowingly (see _meshes); the warning they raise is tested where links are the subject
pytestmark = pytest.mark.filterwarnings("ignore::mpcdp.errors.InsecureSettingWarning")


def _meshes(timeout_s: float) -> dict[int, Mesh]:
    """Parties 0 and 1 and the dealer (rank 2), each joined to the others by a plain loopback TCP link (plain
    knowingly: what is tested is what party 0 does with the dealer's replies, not the links)."""
    endpoints, met = {}, threading.Barrier(3)
    links: dict[int, dict] = {}

    def locate(rank, mine, peers):
        endpoints[rank] = mine
        met.wait(timeout=timeout_s)
        return {peer: endpoints[peer] for peer in peers}

    def connect(rank):
        links[rank] = Mesh.establish(rank, 3, address="127.0.0.1", timeout_s=timeout_s, locate=locate, dealer=DEALER,
                                     insecure=True)

    threads = [threading.Thread(target=connect, args=(rank,)) for rank in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout_s)
    party_links = [{DEALER: links[rank][DEALER]} for rank in (0, 1)]
    meshes = {rank: Mesh(rank, 3, party_links[rank], timeout_s=timeout_s, counted=False, dealer=DEALER)
              for rank in (0, 1)}
    meshes[DEALER] = Mesh(DEALER, 3, links[DEALER], timeout_s=timeout_s, counted=False, dealer=DEALER)
    meshes["party links"] = [links[0][1], links[1][0]]
    return meshes


def _in_thread(target, *args):
    errors: list[BaseException] = []

    def run():
        try:
            target(*args)
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, errors


def _clients(meshes):
    """Party 0's and party 1's dealer clients (each receives its key from the dealer)."""
    clients = {}
    party1, _ = _in_thread(lambda: clients.setdefault(1, dealer_link.DealerClient(meshes[1], DEALER)))
    clients[0] = dealer_link.DealerClient(meshes[0], DEALER)
    party1.join(10)
    return clients


def _dealt(clients, function, args) -> list:
    """Both parties' :meth:`~dealer_link.DealerClient.dealt` for one rotating request: the reply where a party
    receives it, else None (what it would draw itself)."""
    out: dict = {}
    party1, errors = _in_thread(lambda: out.__setitem__(1, clients[1].dealt(function, lambda: None, *args)))
    out[0] = clients[0].dealt(function, lambda: None, *args)
    party1.join(10)
    assert not errors, errors
    return [out[0], out[1]]


def _close(meshes):
    for rank in (0, 1, DEALER):
        meshes[rank].close(orderly=False)
    for link in meshes["party links"]:
        link.close()


def _rogue_dealer(mesh: Mesh, shape, send_body: bool) -> None:
    """A dealer that keys the parties as the real one does, then answers party 0's first request with
    ``shape`` (and, if ``send_body``, that many elements)."""
    mesh.exchange({j: keyed.key_tensor(secure_key()) for j in mesh.links}, {}, label=dealer_link.KEY_LABEL)
    mesh.exchange_text({}, [0], label=dealer_link.REQUEST_LABEL, limit=objects.MAX_OBJECT_BYTES, patient=True)
    mesh.exchange_text({0: public.encode(shape)}, [], label=dealer_link.SHAPE_LABEL)
    if send_body:
        mesh.exchange({0: torch.zeros(math.prod(shape), dtype=torch.int64)}, {}, label=dealer_link.REPLY_LABEL)


REQUESTS = [  # (function, args, the shape the reply must have) — every kind the dealer serves
    ("additive", ([3, 4], [4, 5], "matmul"), [3, 5]),
    ("additive", ([2, 3], [3], "mul"), [2, 3]),
    ("square", ([7],), [7]),
    ("binary", ([2, 1], [1, 6]), [2, 6]),
    ("wraps", ([3, 2],), [3, 2]),
    ("B2A", ([5],), [5]),
    ("mpcdp_WordBits", (4, 13), [4, 13]),
    ("mpcdp_WordBits", (10, 3, [64, 40, 7]), [2, 14]),  # narrowed: 8 elements' 111 bits each to 14 words
    ("mpcdp_MaskedBits", (4, 40), [4]),
    ("mpcdp_TruncPairs", (4, 16), [4]),
    ("mpcdp_Products", (4, 3, [[0, 1], [2, 2]]), [4, 2]),
    ("mpcdp_AndShifted", (4, 2, [[0, 1, 3], [1, 0, -5], [1, 1, 0]]), [4, 3]),
    ("mpcdp_AndShifted", (4, 2, [[0, 1, 3], [1, 0, -5]], [0xFF00, -256]), [4, 1]),  # merged: one column
    ("mpcdp_OneHotPairs", (4, [[0, 4], [4, 4], [8, 4], [12, 4]], 16), [4, 1]),  # every lane full: a word each
    ("mpcdp_OneHotPairs", (4, [[0, 4], [4, 4], [8, 4], [12, 4], [16, 2]], 16), [5]),  # 9 bytes each, packed
    ("mpcdp_OneHotPairs", (4, [[32, 5], [37, 6], [55, 4]], 64), [7]),  # 4 + 8 + 2 bytes each: 56 bytes
    ("mpcdp_ChunkOneHots", (4, 62), [4, 4]),
    ("mpcdp_ChunkOneHots", (4, 18), [4, 2]),
    ("mpcdp_FactorTables", (4, 62, [[32, 5], [55, 7]], [[0, 0, 5, [1 << 62] * 32], [1, 2, 2, [0, 1, 2, 3]],
                                                        [1, 4, 3, [1 << 62] + [0] * 7]], [[0, 32, 9]]), [4, 4]),
    ("mpcdp_CommitteeScope", ([0, 1],), [0]),
    ("mpcdp_BoundedMasks", (4, 21), [4]),  # the ripple B2A's bounded masks: one ring element each
    ("mpcdp_BoundedMaskSquares", (4, 21, 56), [1, 25]),  # with the carry's bit, r² and ρ·r: 197 bits each, 8 to a row
    ("mpcdp_MacKey", (), [0]),  # security = "malicious": the key first, then the authenticated material
    ("mpcdp_AuthMasks", (3, 2), [3, 8]),
    ("mpcdp_AuthBitMasks", (3, 2), [3, 8]),  # the bounded witness's bit masks, as AuthMasks' replies
    ("mpcdp_AuthRandoms", (3,), [3, 4]),
    ("mpcdp_AuthTriples", (3,), [3, 12]),
    ("mpcdp_AuthSquares", (3,), [3, 8]),
    ("mpcdp_AuthMaskSquares", (3, 2), [12, 4]),  # the bounded inputs' masks with their squares
    ("mpcdp_AuthBits", (3,), [3, 4]),
    ("mpcdp_BitKey", (), [0]),  # the bit domain's key, then its material (daBits and edaBits need both keys)
    ("mpcdp_BitRandoms", (3,), [3]),  # MAC shares mod 2^48 packed, 6 bytes each: 18 bytes in 3 words
    ("mpcdp_BitShares", (3,), [3]),
    ("mpcdp_BitShares", (2, 5, [0, 1, 3]), [8 + 9 + 1]),  # 10 MACs, then 6 half triples: 12 MACs and 6 bits
    ("mpcdp_BitTriples", (70,), [158 + 2]),  # three packed MAC shares each (1,260 bytes), c's low bits 64 to a word
    ("mpcdp_DaBits", (3,), [3 + 3 * 4]),  # packed bit-domain MACs, then four Z_2^128 words each
    ("mpcdp_EdaBits", (3, 64), [144 + 3 * 4]),
    ("mpcdp_EdaBits", (3, 64, list(range(1, 62))), [144 + 3 * 4 + 275 + 3]),  # and 183 half triples
    ("mpcdp_OneHots", (3, 6), [144 + 3]),  # 192 packed MACs, party 0's 192 low bits
    ("mpcdp_MaskBits", (2, 2, [0, 0, 1]), [3 + 9 + 1]),  # 4 MACs, then 6 half triples (column 0 twice per row)
]


def test_the_real_dealers_reply_to_every_kind_has_the_shape_party_0_expects():
    assert {f for f, _, _ in REQUESTS} == set(ALLOWED) and len(KINDS) == 9 and len(mac_material.KINDS) == 6
    meshes = _meshes(timeout_s=20.0)
    try:
        dealer, errors = _in_thread(dealer_link.serve, meshes[DEALER], Dealer(2), ALLOWED)
        clients = _clients(meshes)
        client, receivers = clients[0], []
        for function, args, shape in REQUESTS:
            if function in dealer_link.ROTATING:
                replies = _dealt(clients, function, args)
                assert [list(r.shape) for r in replies if r is not None] == [shape], function
                receivers.append(0 if replies[0] is not None else 1)
            else:
                assert list(client.ttp_request(function, None, *args).shape) == shape, function
        assert set(receivers) == {0, 1}, receivers
        with pytest.raises(ConfigError, match="exceeds the 268435456 elements a reply may have"):
            client.ttp_request("square", None, [1 << 14, 1 << 15])  # refused before it is sent
        assert list(client.ttp_request("square", None, [3]).shape) == [3]  # the link is still in step
        client.terminate()
        dealer.join(10)
        assert not errors, errors
    finally:
        _close(meshes)


@pytest.mark.parametrize("announced, send_body", [([5], True), ([4, 1], True), ([1 << 28], False), ("4", False)],
                         ids=["one-more", "another-rank", "2^28-elements", "not-a-list"])
def test_a_reply_of_another_shape_is_refused_naming_the_dealer_before_it_is_allocated(announced, send_body):
    """Party 0 asked for 4 masked bits (shape [4]). Before the check, a [5] or [4, 1] reply was taken as it
    came, and 2^28 elements were allocated (2 GiB) and waited for until the deadline (PeerTimeout)."""
    # every step of this test is expected to succeed or be refused at once, never to wait for the deadline: 3 s left
    # the links' set-up and the keying little room on a host 3-4x slower; a refusal that regressed into a wait
    # still fails (PeerTimeout, not ProtocolViolation), 20 s later
    meshes = _meshes(timeout_s=20.0)
    try:
        rogue, errors = _in_thread(_rogue_dealer, meshes[DEALER], announced, send_body)
        client = _clients(meshes)[0]
        with pytest.raises(ProtocolViolation) as info:
            client.ttp_request("mpcdp_MaskedBits", None, 4, 40)
        assert info.value.party == DEALER
        assert str(info.value).startswith(f"the dealer (rank {DEALER}) announced a reply of shape "), str(info.value)
        assert "which asks for shape [4]" in str(info.value)
        rogue.join(10)
    finally:
        _close(meshes)


@pytest.mark.parametrize("args", [(4, 0), (4, 63), (-1, 21), (True, 21), (4, 21.0), (1 << 25, 21), ("4", 21)])
def test_a_malformed_bounded_mask_request_is_refused_before_anything_is_drawn(args):
    """The dealer reads a bounded-mask request's n and bits only as integers in range (n <= 2^24, bits in
    [1, 62]): anything else is a ProtocolViolation naming party 0, from the reply's shape, before serving."""
    message = {"function": "mpcdp_BoundedMasks", "device": None, "args": list(args), "kwargs": {}}
    with pytest.raises(ProtocolViolation) as info:
        dealer_link._elements(message)
    assert info.value.party == 0


@pytest.mark.parametrize("args", [(4, 0, 56), (4, 63, 56), (-1, 21, 56), (1 << 25, 21, 56), (4, 21, 0), (4, 21, 65),
                                  (4, 21, True), (4, 21, 56.0), (4, 21, "56"), (4, 21, None)])
def test_a_malformed_bounded_mask_square_request_is_refused_before_anything_is_drawn(args):
    """A request for bounded masks with squares: n and bits as for bounded masks, the square's width an integer in
    [1, 64]; anything else is a ProtocolViolation naming party 0, from the reply's shape, before serving."""
    message = {"function": "mpcdp_BoundedMaskSquares", "device": None, "args": list(args), "kwargs": {}}
    with pytest.raises(ProtocolViolation) as info:
        dealer_link._elements(message)
    assert info.value.party == 0


@pytest.mark.parametrize("function, args", [
    ("mpcdp_BitShares", [4, 3, [0, 3]]), ("mpcdp_BitShares", [4, 3, [-1]]), ("mpcdp_BitShares", [4, 3, [0.5]]),
    ("mpcdp_BitShares", [4, 3, [True]]), ("mpcdp_BitShares", [4, 1, [0] * 65]), ("mpcdp_BitShares", [-4, 3]),
    ("mpcdp_BitShares", [4, 3.0]), ("mpcdp_BitShares", [1 << 40, 3]), ("mpcdp_MaskBits", [4, 2, "0"]),
    ("mpcdp_EdaBits", [4, 64, [64]]), ("mpcdp_EdaBits", [4, -64]), ("mpcdp_BitTriples", [True]), ("mpcdp_BitTriples", [-3]),
    ("mpcdp_OneHots", [4, {"w": 6}]), ("mpcdp_OneHots", [1 << 30, 6])])
def test_a_malformed_authenticated_bit_request_is_refused_naming_party_0_before_anything_is_drawn(function, args):
    """The dealer reads an authenticated bit request's arguments only as integers in range (n, widths >= 0; a
    half triple's columns a list of at most 64·width of them, each below the width), its reply at most 2^28:
    anything else is a ProtocolViolation naming party 0, from the reply's shape, before serving — rotating kinds
    (BitShares, MaskBits, BitTriples) or not (EdaBits, OneHots)."""
    message = {"function": function, "device": None, "args": args, "kwargs": {}}
    with pytest.raises(ProtocolViolation) as info:
        dealer_link._elements(message)
    assert info.value.party == 0
    message["args"] = {"mpcdp_BitShares": [4, 3, [0, 0, 2]], "mpcdp_MaskBits": [4, 3, [0, 0, 2]], "mpcdp_BitTriples": [4],
                       "mpcdp_EdaBits": [4, 64, [1, 2]], "mpcdp_OneHots": [4, 6]}[function]
    assert dealer_link._elements(message) > 0  # the kind's well-formed request passes the same check


@pytest.mark.parametrize("function, args", [("mpcdp_EdaBits", [4, 64, [64]]), ("mpcdp_MaskBits", [4, 2, [2]])])
def test_the_real_dealer_refuses_a_malformed_request_naming_party_0_and_serves_nothing(function, args):
    """Through the dealer's own loop: party 0 sends (raw, past its own client's checks) a request whose half
    triples name a column past the width, for a kind whose reply rotates (MaskBits) and one whose reply is
    always party 0's (EdaBits). The dealer stops with a ProtocolViolation naming party 0 before it serves
    anything: no reply shape reaches party 0."""
    meshes = _meshes(timeout_s=20.0)
    try:
        dealer, errors = _in_thread(dealer_link.serve, meshes[DEALER], Dealer(2), ALLOWED)
        _clients(meshes)
        raw = public.encode({"function": function, "device": None, "args": args, "kwargs": {}})
        meshes[0].exchange_text({DEALER: raw}, [], label=dealer_link.REQUEST_LABEL)
        dealer.join(10)
        assert len(errors) == 1 and isinstance(errors[0], ProtocolViolation), errors
        assert errors[0].party == 0 and "malformed arguments" in str(errors[0]), str(errors[0])
        meshes[DEALER].close(orderly=False)  # as run_dealer does after the violation: party 0 gets no shape
        with pytest.raises(PeerLost):
            meshes[0].exchange_text({}, [DEALER], label=dealer_link.SHAPE_LABEL, limit=4096)
    finally:
        _close(meshes)


def test_party_0_makes_no_request_whose_reply_shape_it_cannot_predict():
    for function, args in (("additive", [[2], [2], "save"]), ("_setup_generators", []), ("mpcdp_Unknown", [3])):
        with pytest.raises(ValueError, match="dealer request"):
            objects.reply_shape({"function": function, "device": None, "args": args, "kwargs": {}}, KINDS)
    assert objects.reply_shape({"function": "additive", "device": None, "kwargs": {"stride": 2},
                                "args": [[1, 1, 9, 9], [4, 1, 3, 3], "conv2d"]}) == (1, 4, 4, 4)


def test_replies_go_to_the_member_with_the_fewest_reply_elements_in_step_and_per_scope():
    """Two copies of :class:`~dealer_link.Receivers` (the dealer's and a member's) fed the same public reply
    sizes pick the same receivers; the members' loads never differ by more than the largest reply; each
    scope (the committee, every party) keeps its own loads, as a party off the committee sees none of its
    requests."""
    import random

    sizes = [random.randrange(1, 10_000) for _ in range(200)]
    dealer, member = dealer_link.Receivers([0, 1, 2]), dealer_link.Receivers([0, 1, 2])
    picks = [dealer.next(n) for n in sizes]
    assert picks == [member.next(n) for n in sizes]
    loads = [sum(n for n, p in zip(sizes, picks) if p == r) for r in range(3)]
    assert max(loads) - min(loads) <= max(sizes), loads
    assert picks[:3] == [0, 1, 2]  # every load starts at 0: ties go to the first member in rank order
    member.members = [0, 1]
    assert member.next(5) == 0 and member.next(1) == 1 and member.next(3) == 1  # the committee's own loads
    member.members = [0, 1, 2]
    assert member.next(1) == dealer.next(1)  # and every party's again, where they were


def test_the_dealers_packed_one_hots_are_exact_one_hots_on_every_element():
    """Real party processes and the real dealer: rotation pairs whose windows leave a lane partly empty ((20, 3):
    8 of 64 positions) come packed (:func:`mpcdp.adapter.bit_words.pack_one_hots`), and still the XOR of the
    parties' shares is exactly the one-hot of each window of the XOR of their words, every other bit 0 (the
    members that draw their shares keep them 0 outside the packed bytes)."""
    from mpcdp.adapter.bit_words import packs_one_hots
    from mpcdp.config import MpcConfig
    from mpcdp.runtime.harness import run_parties
    from party_jobs import material_of_every_kind

    windows = [(0, 6), (20, 3), (58, 6)]
    assert packs_one_hots(windows, 64)
    results = run_parties(material_of_every_kind, MpcConfig(parties=3, provider="dealer", timeout_s=90.0), args=(300,))
    word, hots = torch.zeros(300, dtype=torch.int64), torch.zeros((300, 3), dtype=torch.int64)
    for r in results:
        word ^= r["one_hots"][0]
        hots ^= r["one_hots"][1]
    for i, (low, width) in enumerate(windows):
        assert torch.equal(hots[:, i], torch.ones_like(word) << ((word >> low) & ((1 << width) - 1))), i
