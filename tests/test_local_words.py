"""The local word arithmetic of the exact sampler, bit for bit against plain per-bit definitions, on arbitrary
share words (not only one-hot ones) and across the block boundaries of :func:`mpcdp.adapter.lanes.row_blocks`."""

import random
from types import SimpleNamespace

import pytest
import torch

from mpcdp.adapter import lanes
from mpcdp.mpc import bernoulli, binary, ring


def _words(rng: random.Random, *shape: int) -> torch.Tensor:
    count = 1
    for size in shape:
        count *= size
    values = [binary._signed(rng.getrandbits(64)) for _ in range(count)]
    return torch.tensor(values, dtype=torch.int64).reshape(shape)


def _bit(word: int, i: int) -> int:
    return (word >> i) & 1


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 7 words, so that every tensor below spans several blocks."""
    monkeypatch.setattr(lanes, "BLOCK_WORDS", 7)


def _moved_by_definition(word: int, moves: list[int], lane: int) -> int:
    """Bit lane·j + (x ⊕ moves[j]) of the result is bit lane·j + x of ``word``."""
    out = 0
    for j, move in enumerate(moves):
        for x in range(lane):
            out |= _bit(word, lane * j + x) << (lane * j + (x ^ move))
    return binary._signed(out)


@pytest.mark.parametrize("lane", [2, 4, 8, 16, 32, 64])
def test_xor_permute_moves_every_lane_by_its_value(lane, small_blocks):
    rng, per = random.Random(lane), 64 // lane
    words = _words(rng, 50)
    moves = torch.tensor([[rng.randrange(lane) for _ in range(per)] for _ in range(50)], dtype=torch.int64)
    out = lanes.xor_permute(words, moves, lane)
    expected = [_moved_by_definition(int(w), m.tolist(), lane) for w, m in zip(words, moves)]
    assert out.tolist() == expected


@pytest.mark.parametrize("lane, windows", [
    (64, [(0, 6)]), (64, [(3, 5), (10, 6), (40, 2), (57, 6)]),
    (16, [(4 * k, 4) for k in range(16)]), (16, [(0, 4), (4, 4), (8, 3), (20, 2), (61, 3)]),
    (16, [(16, 4), (20, 4), (24, 4), (28, 4), (52, 4), (56, 4), (60, 4)]),
    (16, [(4 * k, 4) for k in range(15)] + [(60, 2)]), (16, [(60, 2)]),
    (16, [(4 * k, 4) for k in range(2, 15)] + [(60, 2)]), (64, [(32, 5), (37, 6), (43, 6), (55, 4)]),
    (8, [(0, 3), (5, 3), (9, 2)])])
def test_moved_one_hots_moves_each_lane_by_its_window_of_the_word(lane, windows, small_blocks):
    rng, per = random.Random(len(windows) * lane), 64 // lane
    n, w = 40, -(-len(windows) // per)
    hots, word = _words(rng, n, w), _words(rng, n)
    out = lanes.moved_one_hots(hots, word, windows, lane)
    for row in range(n):
        for i in range(w):
            moves = [0] * per
            for j in range(per):
                if i * per + j < len(windows):
                    low, width = windows[i * per + j]
                    moves[j] = (int(word[row]) >> low) & ((1 << width) - 1)
            assert int(out[row, i]) == _moved_by_definition(int(hots[row, i]), moves, lane)


def _selected_by_definition(word: int, table: tuple[int, ...], bits: int) -> int:
    out = 0
    for j, entry in enumerate(table):
        if _bit(word, j):
            out ^= entry & ((1 << bits) - 1)
    return binary._signed(out)


@pytest.mark.parametrize("entries", [64, 57, 43, 16, 8, 1])
def test_select_across_blocks_is_the_xor_of_the_set_positions_entries(entries, small_blocks):
    """A table shorter than 64 entries reads only the bytes it reaches: the word's bits beyond it are ignored."""
    rng = random.Random(5 + entries)
    table = tuple(rng.getrandbits(64) for _ in range(entries))
    words = _words(rng, 30, 3)
    out = binary.select(None, words, table, 64)
    assert out.shape == words.shape
    assert out.reshape(-1).tolist() == [_selected_by_definition(int(v), table, 64) for v in words.reshape(-1)]


def test_tops_are_the_top_bit_one_hots_and_zero_flags_of_every_lane(small_blocks):
    rng = random.Random(6)
    words = _words(rng, 20, 4)
    tops, zeros = bernoulli._tops(None, words)
    for row in range(20):
        expected_tops = expected_zeros = 0
        for i in range(4):
            image = _selected_by_definition(int(words[row, i]), bernoulli.TOP_TABLE, 20) & ((1 << 20) - 1)
            expected_tops |= (image & 0xFFFF) << (16 * i)
            expected_zeros |= (image >> 16) << (4 * i)
        assert int(tops[row]) == binary._signed(expected_tops)
        assert int(zeros[row]) == expected_zeros


@pytest.mark.parametrize("first, chunks", [(0, 16), (1, 16), (2, 16), (5, 16), (0, 3), (2, 7), (15, 16)])
def test_chunk_lanes_put_window_i_in_the_lane_of_chunk_first_plus_i_and_zero_below(first, chunks):
    rng, rows = random.Random(first * 17 + chunks), 9
    width = -(-chunks // 4)
    moved = _words(rng, rows, -(-(chunks - first) // 4))
    moved.view(torch.int16).view(rows, -1)[:, chunks - first:] = 0  # lanes past the windows: none dealt, 0
    out = torch.zeros((rows + 2, width), dtype=torch.int64)
    bernoulli._put_chunk_lanes(out[1:1 + rows], moved, first, chunks)
    assert out[0].tolist() == [0] * width and out[-1].tolist() == [0] * width  # rows outside left as they were
    for row in range(rows):
        got = sum((int(out[1 + row, k // 4]) >> (16 * (k % 4)) & 0xFFFF) << (16 * k) for k in range(4 * width))
        window = sum((int(moved[row, i // 4]) >> (16 * (i % 4)) & 0xFFFF) << (16 * i) for i in range(chunks - first))
        assert got == window << (16 * first)

@pytest.mark.parametrize("stride, count", [(4, 16), (4, 4), (4, 3), (2, 32), (1, 64), (8, 5), (16, 4)])
def test_gather_bits_packs_every_stride_th_bit(stride, count, small_blocks):
    rng = random.Random(stride * 100 + count)
    words = _words(rng, 200)
    expected = [sum(_bit(int(v), i * stride) << i for i in range(count)) for v in words]
    assert binary.gather_bits(words, stride, count).tolist() == [binary._signed(v) for v in expected]


@pytest.mark.parametrize("lane", [2, 4, 16, 64])
def test_lane_parity_puts_each_lanes_parity_in_its_bit_0(lane, small_blocks):
    rng = random.Random(lane)
    words = _words(rng, 50, 2)[:, 1]  # not contiguous
    out = binary.lane_parity(words, lane)
    for v, o in zip(words.tolist(), out.tolist()):
        for j in range(64 // lane):
            assert _bit(o, lane * j) == sum(_bit(v, lane * j + x) for x in range(lane)) % 2


@pytest.mark.parametrize("lane, count", [(1, 130), (1, 64), (2, 70), (4, 33), (16, 9), (21, 7), (27, 10), (32, 5),
                                         (64, 3)])
def test_pack_lanes_places_value_i_in_lane_i_of_its_word_and_unpacks_back(lane, count):
    rng = random.Random(lane * 1000 + count)
    values = _words(rng, count)
    packed = binary.pack_lanes(values, lane)
    per, low = 64 // lane, (1 << lane) - 1
    expected = [0] * -(-count // per)
    for i, v in enumerate(values.tolist()):
        expected[i // per] |= (v & low) << (lane * (i % per))
    assert packed.tolist() == [binary._signed(v) for v in expected]
    assert binary.unpack_lanes(packed, lane, count).tolist() == [binary._signed(v & low) for v in values.tolist()]


@pytest.mark.parametrize("rank", [0, 1])
def test_b2a_bits_from_the_opened_word_are_c_plus_one_minus_2c_times_r(rank, small_blocks):
    rng = random.Random(rank)
    opened, r_bits = _words(rng, 25), _words(rng, 25, 11)
    out = ring._bits_from_opened(SimpleNamespace(rank=rank), opened, r_bits)
    c_bits = (opened.unsqueeze(1) >> torch.arange(11)) & 1
    expected = (1 - 2 * c_bits) * r_bits + (c_bits if rank == 0 else 0)
    assert torch.equal(out, expected)


@pytest.mark.parametrize("widths", [[64 - i for i in range(26)] + [62] * 4, [2, 7, 1, 3, 12, 58, 53, 32, 64, 1, 63],
                                    [5] * 12])
def test_pack_fields_writes_the_fields_one_after_another_and_unpacks_them(widths):
    """Field i (mod 2^widths[i]) at bit Σ_{j<i} widths[j] of the element's bit string, words of 64 bits from the
    low end (a field across a word boundary split between them); unpacking gives every field back."""
    rng = random.Random(sum(widths))
    values = _words(rng, len(widths), 7).T  # columns contiguous, as the packed runs of the Bernoulli AND pass them
    before = values.clone()
    packed = lanes.pack_fields(values, widths)
    assert torch.equal(values, before)  # the input is left as it was
    for row in range(7):
        string, offset = 0, 0
        for v, w in zip(values[row].tolist(), widths):
            string |= (v & ((1 << w) - 1)) << offset
            offset += w
        assert packed[row].tolist() == [binary._signed(string >> (64 * j)) for j in range(-(-offset // 64))]
    assert torch.equal(lanes.unpack_fields(packed, widths),
                       torch.stack([values[:, i] & binary.low_mask(w) for i, w in enumerate(widths)], 1))


@pytest.mark.parametrize("widths", [[64 - i for i in range(26)] + [62] * 4, [2, 7, 1, 3, 12, 58, 53, 32, 64, 1, 63] * 64])
def test_packing_all_fields_at_once_and_field_by_field_agree(widths):
    """:func:`~mpcdp.adapter.lanes.pack_columns` packs every field at once below
    :data:`~mpcdp.adapter.lanes.LONG_COLUMNS` elements and field by field from there: the same words either way,
    and both unpack to the fields."""
    rng = random.Random(len(widths))
    columns = _words(rng, len(widths), 9)
    at_once = lanes.pack_columns(columns, widths)
    assert torch.equal(at_once, lanes._pack_long_columns(columns, widths))
    fields = torch.stack([columns[i] & binary.low_mask(w) for i, w in enumerate(widths)])
    assert torch.equal(lanes.unpack_columns(at_once, widths), fields)
    assert torch.equal(lanes._unpack_long_columns(at_once, widths), fields)


@pytest.mark.parametrize("n", [1, 8, 13])
def test_b2a_shares_are_packed_eight_elements_at_a_time_with_no_word_boundary_between_them(n):
    """The dealer's narrowed B2A reply (:class:`mpcdp.adapter.material.WordBits` with widths): the fields of
    8 elements one after another, ⌈8·Σ widths/64⌉ words per 8 elements (not ⌈Σ widths/64⌉ per element), and
    unpacking gives every element's fields back mod their widths."""
    from mpcdp.adapter.material import WordBits

    widths = [64 - i for i in range(21)] + [54, 54, 57, 54]  # the sampler's at k = 16: 1,353 bits per element
    values = _words(random.Random(n), n, len(widths))
    packed = lanes.pack_bit_shares(values, widths)
    assert tuple(packed.shape) == WordBits.reply_shape(n, len(widths), widths) == (-(-n // 8), 170)
    assert torch.equal(lanes.unpack_bit_shares(packed, n, widths),
                       torch.stack([values[:, i] & binary.low_mask(w) for i, w in enumerate(widths)], 1))


@pytest.mark.parametrize("lane, windows", [(16, [(4 * k, min(4, 62 - 4 * k)) for k in range(16)]),
                                           (16, [(57, 2), (3, 4), (0, 1), (60, 4), (9, 3)]),
                                           (64, [(0, 6)]), (64, [(57, 2), (55, 2), (43, 6), (37, 6), (32, 5)])])
def test_packed_one_hots_set_bit_v_of_each_windows_lane(lane, windows):
    """Window i's value v sets bit lane·(i mod per) + v of word i // per, per = 64/lane; a lane past the last
    window holds the one-hot of 0."""
    rng = random.Random(lane + len(windows))
    r = _words(rng, 30)
    per = 64 // lane
    out = lanes.packed_one_hots(r, windows, lane)
    assert out.shape == (30, -(-len(windows) // per))
    for row, word in enumerate(r.tolist()):
        expected = [0] * out.shape[1]
        for i in range(out.shape[1] * per):
            low, width = windows[i] if i < len(windows) else (0, 0)
            expected[i // per] |= 1 << (lane * (i % per) + ((word >> low) & ((1 << width) - 1)))
        assert out[row].tolist() == [binary._signed(v) for v in expected]


@pytest.mark.parametrize("widths, g, groups", [((18, 18, 29, 38, 30, 16, 25), 64, 3), ((4, 4, 4, 4, 4, 4, 3), 64, 2),
                                               ((43,), 64, 2), ((13, 0, 64, 1, 63), 5, 1), ((7, 9), 11, 1),
                                               ((0, 64), 3, 2)])
def test_run_streams_lay_each_groups_fields_one_after_another(widths, g, groups):
    """:func:`~mpcdp.mpc.run_streams.pack_stream`: element e's field b of a group at bit e·W + Σ_{c<b} widths[c]
    of the group's ⌈g·W/64⌉ words (per bit, by definition), the same words as
    :func:`~mpcdp.adapter.lanes.pack_columns` on the fields in that order, and unpacking gives the fields back."""
    from mpcdp.mpc import run_streams

    rng = random.Random(sum(widths) + g)
    blocks, total = len(widths), sum(widths)
    fields = torch.stack([_words(rng, groups * g) & binary.low_mask(w) if w else torch.zeros(groups * g,
                                                                                            dtype=torch.int64)
                          for w in widths])  # (blocks, groups·g), below 2^width as gather_runs leaves them
    layout = run_streams.stream_layout(widths, g)
    words = run_streams.pack_stream(fields.numpy().view("uint64"), layout).view("int64")
    assert words.shape == (groups, -(-g * total // 64))
    for c in range(groups):
        string = sum(int(fields[b, c * g + e]) % (1 << 64) << (e * total + sum(widths[:b]))
                     for e in range(g) for b in range(blocks))
        assert words[c].tolist() == [binary._signed(string >> (64 * j) & ((1 << 64) - 1))
                                     for j in range(words.shape[1])]
        columns = fields[:, c * g:(c + 1) * g].T.reshape(-1, 1)  # field (e, b) in row e·blocks + b
        if all(widths):
            assert words[c].tolist() == lanes.pack_columns(columns, list(widths) * g).reshape(-1).tolist()
    back = torch.full_like(fields, 0)
    run_streams.unpack_stream(words.view("uint64"), layout, back.numpy().view("uint64"))
    assert torch.equal(back, fields)


def test_packed_bit_shares_unpack_block_by_block_as_at_once(small_blocks):
    """:meth:`~mpcdp.adapter.lanes.PackedBitShares.unpacked_blocks` (blocks of a few rows) gives every element's
    fields as :func:`~mpcdp.adapter.lanes.unpack_bit_shares` does, each mod its width."""
    widths = [64, 63, 1, 57, 54, 2]
    values = _words(random.Random(5), 21, len(widths))
    packed = lanes.PackedBitShares(lanes.pack_bit_shares(values, widths), 21, widths)
    out = torch.empty((24, len(widths)), dtype=torch.int64)
    seen = []
    for elements, rows in packed.unpacked_blocks(out):
        seen.extend(range(21)[elements])
        assert torch.equal(rows, torch.stack([values[elements, i] & binary.low_mask(w) for i, w in enumerate(widths)], 1))
    assert seen == list(range(21))
    assert torch.equal(packed.unpack(), out[:21])


@pytest.mark.parametrize("lane, windows", [
    (16, [(4 * k, 4) for k in range(2, 15)] + [(60, 2)]), (16, [(4 * k, 4) for k in range(15)] + [(60, 2)]),
    (64, [(32, 5), (37, 6), (43, 6), (55, 4)]), (16, [(0, 4), (4, 4), (8, 3)]),
    (16, [(0, 2), (3, 1), (7, 3), (20, 4), (30, 4)]), (64, [(3, 5), (10, 6), (40, 2)]), (8, [(0, 3), (5, 3), (9, 2)])])
def test_unpacked_one_hots_are_the_packed_bytes_in_place_and_bit_0_of_each_empty_lane(lane, windows):
    from mpcdp.adapter import bit_words

    rng, per = random.Random(len(windows) * lane + 1), 64 // lane
    n, width = 23, -(-len(windows) // per)
    hots = _words(rng, n, width)
    out = bit_words.unpack_one_hots(bit_words.pack_one_hots(hots, windows, lane), n, windows, lane)
    kept = set(bit_words._one_hot_bytes(tuple(windows), lane).tolist())
    for row in range(n):
        for i in range(width):
            expected = sum(((int(hots[row, i]) >> (8 * b)) & 0xFF) << (8 * b) for b in range(8) if 8 * i + b in kept)
            expected |= sum(1 << (lane * j) for j in range(per) if i * per + j >= len(windows))
            assert int(out[row, i]) == binary._signed(expected)
