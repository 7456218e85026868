"""Exact integer protocols on raw shares in Z_2^64 (arithmetic) and on XOR-shared 64-bit words (binary).

mpcdp's noise sampler is built from these instead of CrypTen's fixed-point operations, so that no
approximation and no probabilistic truncation error can decide a noise value. Every function is a batch
operation on flat int64 tensors; every party calls it in lockstep.

Security model: semi-honest data parties; correlated randomness from the run's provider (the dealer, CrypTen's
TTP process extended in :mod:`mpcdp.adapter`, which never sees an opened value; or the honest-majority
generators). Every value a function opens is either uniformly masked by material that no data party knows,
or public by design (the comparison result, which the caller opens on purpose).

Multiplication (:func:`Products`, :func:`ShiftedAnds`) is chosen by the provider's capability for the parties
computing now (``ctx.members``), never by its name: Beaver's protocol with the provider's material
(:class:`BeaverProducts`, :class:`BeaverShiftedAnds`), or, where the provider offers replicated arithmetic
for them — honest-majority, among exactly parties 0–2 — replicated resharing (:class:`ReplicatedProducts`,
:class:`ReplicatedShiftedAnds`): no material, each member sends its re-randomised share of each factor to
one other member. Both return ordinary shares, so callers do not know which ran. The trust differs: with
Beaver a member alone learns nothing and only the material's maker with a member learns the factors; with
resharing any two of the three members learn them (the honest-majority threshold, which two generators
already reach through the masks); so the dealer keeps Beaver.

Declared costs per call on n elements (m parties; an "opening" = one call of ``ctx.open_masked``, which is
1 round for 2 parties and 2 rounds for more — :meth:`mpcdp.transport.mesh.Mesh.open_shares`; element counts
as recorded by :mod:`mpcdp.transport.costs`, checked in tests/test_costs.py):
  mul        mul n; 1 opening of 2n elements; 1 dealer request (Products: 1 opening per variable). Replicated:
             1 resharing of 2n elements (each member sends them to one member, 1 round), no request
  and_words  and_words n; 1 opening of 2n words (XOR); 1 dealer request. Replicated: 1 resharing of 2n words
  b2a        b2a_bits n·k; 1 opening of n words (XOR); 1 dealer request (k ring elements per word)
  truncate   trunc n; 1 opening of n; 1 dealer request (+1 opening and request for the ~2^(ℓ+1-64)
             fraction redrawn, counted as trunc_redo)
  ge_zero    comparison n, and_words n·(2⌈log2 ℓ⌉ − 1); 2 + ⌈log2 ℓ⌉ openings (n, then 2n per prefix level,
             then n); 1 + ⌈log2 ℓ⌉ dealer requests
"""

from __future__ import annotations

from typing import TYPE_CHECKING


import numpy as np
import torch

if TYPE_CHECKING:
    from mpcdp import adapter
    from mpcdp.adapter.lanes import row_blocks
from mpcdp.transport import costs
from mpcdp.mpc.context import MpcContext



def _low_mask(bits: int) -> int:
    return (1 << bits) - 1


def _unsigned_shift(x: torch.Tensor, shift: int) -> torch.Tensor:
    """floor(x / 2^shift) for x read as an unsigned 64-bit integer."""
    return (x >> shift) & _low_mask(64 - shift)


def public_add(ctx: MpcContext, x: torch.Tensor, value) -> torch.Tensor:
    """Share of x + value for a public value (only party 0 adds it). Shares are never modified in place."""
    return x + value if ctx.rank == 0 else x


def public_xor(ctx: MpcContext, x: torch.Tensor, value) -> torch.Tensor:
    """XOR share of x ⊕ value for a public value (only party 0 flips)."""
    return x ^ value if ctx.rank == 0 else x


def Products(ctx: MpcContext, n: int, variables: int, pairs: list[tuple[int, int]], *,  # noqa: N802
             label: str) -> "BeaverProducts | ReplicatedProducts":
    """Products of shared ring elements: declare ``variables`` (each of n elements) and every ``pairs`` (u, v)
    needed, then ``open({u: x_u, ...})`` each variable once (any subset per call) and take
    ``product(u, v)``. By the provider's capability for the parties computing now (``ctx.members``):
    :class:`ReplicatedProducts` where it offers replicated arithmetic for them (honest-majority, among exactly
    parties 0–2), else :class:`BeaverProducts` with its material."""
    from mpcdp import adapter

    arithmetic = adapter.replicated_arithmetic(ctx.members)
    if arithmetic is not None:
        return ReplicatedProducts(ctx, n, variables, pairs, label=label, arithmetic=arithmetic)
    return BeaverProducts(ctx, n, variables, pairs, label=label)


def ShiftedAnds(ctx: MpcContext, n: int, variables: int, pairs: list[tuple[int, int, int]], *,  # noqa: N802
                label: str, masks: list[int] | None = None) -> "BeaverShiftedAnds | ReplicatedShiftedAnds":
    """x_u AND shift(x_v, s) of XOR-shared words, the same interface as :func:`Products` (``product(u, v, s)``),
    chosen the same way: :class:`ReplicatedShiftedAnds` or :class:`BeaverShiftedAnds`. ``masks`` (one 64-bit
    pattern per pair): only ``merged_product()``, the XOR over the pairs of (x_u AND shift(x_v, s) AND mask), is
    wanted; with Beaver its material is one word per element instead of one per pair."""
    from mpcdp import adapter

    arithmetic = adapter.replicated_arithmetic(ctx.members)
    if arithmetic is not None:
        return ReplicatedShiftedAnds(ctx, n, variables, pairs, label=label, arithmetic=arithmetic, masks=masks)
    return BeaverShiftedAnds(ctx, n, variables, pairs, label=label, masks=masks)


class BeaverProducts:
    """Products of shared integers, each factor opened once (Beaver's protocol with reused masks).

    Declare the variables and every product needed up front — one dealer request supplies a uniform mask
    a_u per variable and a_u·a_v per pair. Then open variables (any subset per round, each once: ε_u =
    x_u − a_u) and take products of open ones: x_u·x_v = c_uv + ε_u·a_v + ε_v·a_u + ε_u·ε_v. Reusing a_u
    across products is as secure as fresh triples: each ε_u is opened once and is uniform.
    Cost: 1 opening per variable; dealer: 1 ring element per pair to party 0.
    """

    def __init__(self, ctx: MpcContext, n: int, variables: int, pairs: list[tuple[int, int]], *, label: str):
        from mpcdp import adapter

        self.ctx, self.label = ctx, label
        self.masks, self.mask_products = adapter.dealer_products(n, variables, pairs)
        self.column = {pair: i for i, pair in enumerate(pairs)}
        self.eps: dict[int, torch.Tensor] = {}

    def open(self, values: dict[int, torch.Tensor]) -> None:
        keys = list(values)
        opened = self.ctx.open_masked([values[u] - self.masks[:, u] for u in keys], label=self.label)
        self.eps.update(zip(keys, opened))

    def product(self, u: int, v: int) -> torch.Tensor:
        c = self.mask_products[:, self.column[(u, v)]]
        eu, ev = self.eps[u], self.eps[v]
        return public_add(self.ctx, c + eu * self.masks[:, v] + ev * self.masks[:, u], eu * ev)


class BeaverShiftedAnds:
    """x_u AND shift(x_v, s) of XOR-shared words, each factor opened once (binary Beaver, reused masks).

    A shift (left for s >= 0, arithmetic right for s < 0) commutes with XOR sharing, so one opened
    e_v = x_v ⊕ a_v serves every shift of x_v. Cost: 1 word opening per variable; dealer: 1 word per pair.
    """

    def __init__(self, ctx: MpcContext, n: int, variables: int, pairs: list[tuple[int, int, int]], *, label: str,
                 masks: list[int] | None = None):
        from mpcdp import adapter

        self.ctx, self.label, self.pairs, self.merge = ctx, label, list(pairs), masks
        if masks is None:
            self.masks, self.mask_products = adapter.dealer_and_shifted(n, variables, pairs)
        else:
            self.masks, self.mask_products = adapter.dealer_and_shifted(n, variables, pairs, list(masks))
        self.column = {pair: i for i, pair in enumerate(pairs)}
        self.eps: dict[int, torch.Tensor] = {}

    def open(self, values: dict[int, torch.Tensor]) -> None:
        keys = list(values)
        opened = self.ctx.open_masked([values[u] ^ self.masks[:, u] for u in keys], label=self.label, xor=True)
        self.eps.update(zip(keys, opened))

    def product(self, u: int, v: int, s: int) -> torch.Tensor:
        if self.merge is not None:
            raise ValueError(f"`{self.label}` was declared merged: only merged_product() is dealt.")
        return self._terms(u, v, s) ^ self.mask_products[:, self.column[(u, v, s)]]

    def _terms(self, u: int, v: int, s: int) -> torch.Tensor:
        """This party's share of x_u AND shift(x_v, s) less the dealt mask_u AND shift(mask_v, s)."""
        from mpcdp import adapter

        shift = adapter.shift_word
        eu, ev = self.eps[u], shift(self.eps[v], s)
        z = (eu & shift(self.masks[:, v], s)) ^ (ev & self.masks[:, u])
        return public_xor(self.ctx, z, eu & ev)

    def merged_product(self) -> torch.Tensor:
        """The XOR over the declared pairs of (x_u AND shift(x_v, s) AND mask) (declared with ``masks``):
        the terms are XOR-linear, so one dealt word of the masks' merged products serves them all."""
        assert self.merge is not None
        out = self.mask_products[:, 0].clone()
        for (u, v, s), mask in zip(self.pairs, self.merge, strict=True):
            out ^= self._terms(u, v, s) & mask
        return out


class _Resharing:
    """The common part of a replicated multiplication among three members (the provider's replicated
    arithmetic, :class:`mpcdp.adapter.replicated.ReplicatedArithmetic`; honest-majority among parties 0–2).

    Member i holds x_i of a 3-of-3 sharing x = x_0 ∘ x_1 ∘ x_2 (∘ = + in Z_2^64, or ⊕ on words). :meth:`open`
    re-randomises every declared variable by a fresh sharing of zero (x_i ← x_i ∘ ρ_i, the value unchanged) and
    sends x_i to member i − 1 while receiving x_{i+1} from member i + 1, all variables in one message (one
    round, n words per variable each way). ρ_i = F(k_{i,i+1}) ∘ F(k_{i−1,i})⁻¹ with keys only those pairs hold,
    so what member i − 1 receives is uniform to it whatever the sharing was. Member i then holds (x_i, x_{i+1})
    of every opened variable, and the products are local (:meth:`cross`), each re-randomised by a fresh α.
    """

    xor = False

    def __init__(self, ctx: MpcContext, n: int, variables: int, *, label: str, arithmetic):
        self.ctx, self.n, self.variables, self.label, self.arithmetic = ctx, n, variables, label, arithmetic
        self.held: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}  # variable → (x_i, x_{i+1})

    def open(self, values: dict[int, torch.Tensor]) -> None:
        keys = list(values)
        for u in keys:
            if not 0 <= u < self.variables or u in self.held or values[u].numel() != self.n:
                raise ValueError(f"`{self.label}`: a variable must be one of the {self.variables} declared, opened "
                                 f"once, with {self.n} elements. Found variable {u!r} "
                                 f"({'already opened' if u in self.held else f'{values[u].numel()} elements'}).")
        combine = torch.bitwise_xor if self.xor else torch.add
        mine = [combine(values[u].reshape(-1), self.arithmetic.zero_share(self.n, xor=self.xor)) for u in keys]
        theirs = self.ctx.reshare(torch.cat(mine), to=self.arithmetic.send_to,
                                  source=self.arithmetic.receive_from, label=self.label)
        for u, x, y in zip(keys, mine, torch.split(theirs, self.n)):
            self.held[u] = (x, y)

    def fresh_zero(self) -> torch.Tensor:
        """This member's share of a fresh sharing of zero (α), one element per product element."""
        return self.arithmetic.zero_share(self.n, xor=self.xor)


class ReplicatedProducts(_Resharing):
    """Products of additively shared ring elements among three members by replicated resharing: the interface
    of :class:`BeaverProducts`, no material. After :meth:`open`, member i's share of x_u·x_v is
    z_i = x_{u,i}·x_{v,i} + x_{u,i}·x_{v,i+1} + x_{u,i+1}·x_{v,i} + α_i — the nine cross terms split among the
    members — and α, a fresh sharing of zero, makes z_i uniform to the others.

    Security (semi-honest, honest majority among the three): one member's view — the shares it receives,
    each masked by ρ from a key it lacks — is uniform words, independent of the secrets; any two members hold
    all three shares of every factor and learn it. Cost: per variable n ring elements to one member, one round
    for every variable opened together; no material, no dealer request.
    """

    def __init__(self, ctx: MpcContext, n: int, variables: int, pairs: list[tuple[int, int]], *, label: str,
                 arithmetic):
        super().__init__(ctx, n, variables, label=label, arithmetic=arithmetic)
        squares = sum(1 for u, v in pairs if u == v)
        costs.record("square", n * squares, calls=int(squares > 0))
        costs.record("mul", n * (len(pairs) - squares), calls=int(len(pairs) > squares))

    def product(self, u: int, v: int) -> torch.Tensor:
        (xu, xu_next), (xv, xv_next) = self.held[u], self.held[v]
        return xu * xv + xu * xv_next + xu_next * xv + self.fresh_zero()


class ReplicatedShiftedAnds(_Resharing):
    """x_u AND shift(x_v, s) of XOR-shared words among three members by replicated resharing: the interface of
    :class:`BeaverShiftedAnds`, no material. A shift commutes with XOR sharing, so member i's share is
    z_i = (x_{u,i} ∧ sh(x_{v,i})) ⊕ (x_{u,i} ∧ sh(x_{v,i+1})) ⊕ (x_{u,i+1} ∧ sh(x_{v,i})) ⊕ α_i.
    Security and cost as :class:`ReplicatedProducts` (n words per variable to one member, one round)."""

    xor = True

    def __init__(self, ctx: MpcContext, n: int, variables: int, pairs: list[tuple[int, int, int]], *, label: str,
                 arithmetic, masks: list[int] | None = None):
        super().__init__(ctx, n, variables, label=label, arithmetic=arithmetic)
        self.pairs, self.merge = list(pairs), masks
        costs.record("and_words", n * (len(pairs) if masks is None else 1))

    def merged_product(self) -> torch.Tensor:
        """As :meth:`BeaverShiftedAnds.merged_product` (no material either way)."""
        assert self.merge is not None
        out = torch.zeros(self.n, dtype=torch.int64)
        for (u, v, s), mask in zip(self.pairs, self.merge, strict=True):
            out ^= self.product(u, v, s) & mask
        return out

    def product(self, u: int, v: int, s: int) -> torch.Tensor:
        from mpcdp import adapter

        shift = adapter.shift_word
        (xu, xu_next), (xv, xv_next) = self.held[u], self.held[v]
        xv, xv_next = shift(xv, s), shift(xv_next, s)
        return (xu & xv) ^ (xu & xv_next) ^ (xu_next & xv) ^ self.fresh_zero()


def mul(ctx: MpcContext, pairs: list[tuple[torch.Tensor, torch.Tensor]], *, label: str = "mul") -> list[torch.Tensor]:
    """Exact products x·y in Z_2^64 for every pair (Beaver, one round for the whole batch)."""
    sizes = [x.numel() for x, _ in pairs]
    x = torch.cat([x.reshape(-1) for x, _ in pairs])
    y = torch.cat([y.reshape(-1) for _, y in pairs])
    products = Products(ctx, x.numel(), 2, [(0, 1)], label=label)
    products.open({0: x, 1: y})
    z = products.product(0, 1)
    return [part.reshape(p[0].shape) for part, p in zip(torch.split(z, sizes), pairs)]


def and_words(ctx: MpcContext, pairs: list[tuple[torch.Tensor, torch.Tensor]], *,
              label: str = "and") -> list[torch.Tensor]:
    """Bitwise AND of XOR-shared 64-bit words for every pair (binary Beaver, one round)."""
    sizes = [x.numel() for x, _ in pairs]
    x = torch.cat([x.reshape(-1) for x, _ in pairs])
    y = torch.cat([y.reshape(-1) for _, y in pairs])
    ands = ShiftedAnds(ctx, x.numel(), 2, [(0, 1, 0)], label=label)
    ands.open({0: x, 1: y})
    z = ands.product(0, 1, 0)
    return [part.reshape(p[0].shape) for part, p in zip(torch.split(z, sizes), pairs)]


def b2a_bits(ctx: MpcContext, words: torch.Tensor, k: int, *, label: str = "b2a", packed: bool = False,
             widths: list[int] | None = None) -> torch.Tensor:
    """Additive shares (n, k) of the k low bits of XOR-shared words (one round, one opening of n words, or with
    ``packed`` of ⌈n/⌊64/k⌋⌉ words: the masked k-bit values ⌊64/k⌋ to a word). ``widths``: bit i's shares are
    needed only mod 2^widths[i] (and are right only mod that): the dealer sends party 0 fewer bytes
    (:class:`mpcdp.adapter.material.WordBits`).

    The dealer's random word R masks the opened C = X ⊕ R; then x_i = c_i + (1 − 2c_i)·r_i is linear.
    """
    from mpcdp import adapter
    from mpcdp.adapter.lanes import pack_fields, unpack_fields

    r_word, r_bits = adapter.dealer_word_bits(words.numel(), k, widths)
    masked = ((words ^ r_word) & _low_mask(k)).reshape(-1)
    per = 64 // k if packed else 1
    if per == 1:
        (opened,) = ctx.open_masked([masked], label=label, xor=True)
    else:  # ⌊64/k⌋ masked values to a word, as fields of k bits
        n = masked.numel()
        rows = torch.zeros(-(-n // per) * per, dtype=torch.int64)
        rows[:n] = masked
        (words_opened,) = ctx.open_masked([pack_fields(rows.reshape(-1, per), [k] * per).reshape(-1)], label=label,
                                          xor=True)
        opened = unpack_fields(words_opened.reshape(-1, 1), [k] * per).reshape(-1)[:n]
    return _bits_from_opened(ctx, opened, r_bits)


def _bits_from_opened(ctx: MpcContext, opened: torch.Tensor, r_bits) -> torch.Tensor:
    """c_i + (1 − 2c_i)·r_i for the opened words' bits c_i (c_i added by party 0 only, as :func:`public_add`),
    computed as (r_i ⊕ m) − m, m = −c_i (so −r_i where c_i = 1), block by block. Local. ``r_bits``: an (n, k)
    tensor, or party 0's shares as the dealer packed them (:class:`~mpcdp.adapter.lanes.PackedBitShares`),
    each block converted in place as it is unpacked."""
    from mpcdp.adapter.lanes import WORD_BITS_GROUP, PackedBitShares, row_blocks

    if isinstance(r_bits, PackedBitShares):
        out = torch.empty((-(-r_bits.n // WORD_BITS_GROUP) * WORD_BITS_GROUP, r_bits.shape[1]), dtype=torch.int64)
        for rows, block in r_bits.unpacked_blocks(out):
            _convert_bits(ctx, opened[rows], block, block)
        return out[:r_bits.n]
    out = torch.empty_like(r_bits)
    for rows in row_blocks(r_bits.shape[0], r_bits.shape[1]):
        _convert_bits(ctx, opened[rows], r_bits[rows], out[rows])
    return out


def _convert_bits(ctx: MpcContext, opened: torch.Tensor, r_bits: torch.Tensor, out: torch.Tensor) -> None:
    """One block of :func:`_bits_from_opened` into ``out`` (which may be ``r_bits`` itself), on NumPy views
    (torch's integer subtraction takes a slow path); c's bits a column at a time by a constant shift (a
    broadcast shift by the bit places runs element by element on so few columns)."""
    source, minus_c = opened.numpy(), np.empty(tuple(r_bits.shape), dtype=np.int64)
    for i in range(minus_c.shape[1]):
        np.right_shift(source, i, out=minus_c[:, i])
    minus_c &= 1
    np.negative(minus_c, out=minus_c)
    block = np.bitwise_xor(r_bits.numpy(), minus_c, out=out.numpy())
    block -= minus_c
    if ctx.rank == 0:
        block -= minus_c


def bits_to_value(bits: torch.Tensor) -> torch.Tensor:
    """Σ_i 2^i · bit_i of additive bit shares (n, k) — local."""
    return (bits * (1 << torch.arange(bits.shape[1]))).sum(1)


def truncate(ctx: MpcContext, x: torch.Tensor, shift: int, bound_bits: int, *, label: str = "trunc") -> torch.Tensor:
    """floor(x / 2^shift) up to +1 in the last place, for |x| < 2^bound_bits; never a large error.

    Opens c = x + 2^ℓ + r with r uniform on the ring (perfect mask). If x + 2^ℓ + r did not wrap around
    2^64, floor(c/2^shift) − floor(r/2^shift) is the answer up to a carry. A wrap is only possible when
    c < 2^(ℓ+1) — an event independent of x, since c is uniform — and those elements are redone with a
    fresh mask (probability ≈ 2^(ℓ+1−64) each).
    """
    from mpcdp import adapter

    if not 0 < shift < bound_bits <= 61:
        raise ValueError(f"`truncate` needs 0 < shift < bound_bits <= 61. Found shift={shift}, "
                         f"bound_bits={bound_bits}.")
    flat = x.reshape(-1)
    offset = 1 << bound_bits
    r, r_high = adapter.dealer_trunc_pairs(flat.numel(), shift)
    (c,) = ctx.open_masked([public_add(ctx, flat, offset) + r], label=label)
    value = public_add(ctx, -r_high, _unsigned_shift(c, shift) - (offset >> shift))
    unsafe = torch.nonzero((c >= 0) & (c < 2 * offset)).reshape(-1)  # c read as unsigned is below 2^(ℓ+1)
    if unsafe.numel():  # the same public decision on every party
        costs.record("trunc_redo", unsafe.numel())
        value[unsafe] = truncate(ctx, flat[unsafe], shift, bound_bits,
                                 label=label if label.endswith("-redo") else f"{label}-redo")
    return value.reshape(x.shape)


def ge_zero(ctx: MpcContext, d: torch.Tensor, bound_bits: int, *, label: str = "cmp") -> torch.Tensor:
    """Public [d >= 0] for a shared integer |d| < 2^ℓ (ℓ = bound_bits <= 62); exact.

    D' = d + 2^ℓ is opened masked by a uniform ring element r: c = D' + r. Since 2^(ℓ+1) divides 2^64,
    bit ℓ of D' = c_ℓ ⊕ r_ℓ ⊕ [c mod 2^ℓ < r mod 2^ℓ]; the last term is a comparison of a public value
    with XOR-shared bits of r, evaluated with a log-depth prefix circuit on packed words. Only the final
    bit is opened.
    """
    from mpcdp import adapter

    if not 1 <= bound_bits <= 62:
        raise ValueError(f"`bound_bits` must be in [1, 62]. Found {bound_bits}.")
    ell = bound_bits
    r, r_low = adapter.dealer_masked_bits(d.numel(), ell + 1)
    (c,) = ctx.open_masked([public_add(ctx, d.reshape(-1), 1 << ell) + r], label=f"{label}-mask")
    low = _low_mask(ell)
    c_low = c & low
    rl = r_low & low
    # per bit i < ℓ: g_i = r_i AND NOT c_i (r larger here), e_i = NOT (r_i XOR c_i) (equal here)
    g = rl & (~c_low & low)
    e = public_xor(ctx, rl, ~c_low & low)  # r_i XOR NOT c_i = NOT(r_i XOR c_i)
    # Position i holds the summary (G, E) of the block of `span` bits ending at i: G = "r > c, decided
    # inside the block", E = "all equal". Combining with the block just below (moved up by `span`):
    # G ← G ⊕ (E ∧ G_below), E ← E ∧ E_below. Blocks reaching below bit 0 get G_below = 0, so only the
    # top position's G — the summary of all ℓ bits — is used at the end.
    span = 1
    while span < ell:
        last = 2 * span >= ell
        pairs = [(0, 1, span)] if last else [(0, 1, span), (0, 0, span)]
        ands = ShiftedAnds(ctx, g.numel(), 2, pairs, label=f"{label}-prefix")  # variables: 0 = E, 1 = G
        ands.open({0: e, 1: g})
        g = g ^ (ands.product(0, 1, span) & low)
        if not last:
            e = ands.product(0, 0, span) & low
        span *= 2
    lt = (g >> (ell - 1)) & 1
    bit = public_xor(ctx, ((r_low >> ell) & 1) ^ lt, (c >> ell) & 1)
    (opened,) = ctx.open_masked([bit], label=f"{label}-result", xor=True, kind="comparison")
    return opened.reshape(d.shape) == 1
