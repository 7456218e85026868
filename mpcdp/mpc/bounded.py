"""Bounded inputs under ``security = "malicious"``: each party's contribution to an authenticated sum is checked
inside the MPC against its L2 bound (issue 48, "Bounded inputs"): in :func:`bounded_sum` before the sum is opened; in a
training release the checks are opened with the release under its one MAC check, and decided before the release is
used or output.

Security model (:mod:`mpcdp.mpc.authenticated`'s): any set of data parties may deviate arbitrarily; the dealer is
honest and colludes with nobody. Without this check a deviating party may input any ring value (an input
substitution); with it, whatever it inputs is an integer vector g (in grid units, the sum's fixed-point grid)
with ‖g‖² ≤ S, the bound in grid units², or every honest party stops with one line naming it —
"party J's contribution to release 'R' is outside its clipping bound (security = 'malicious')" — before the sum
is opened (:func:`bounded_sum`) or, in a noisy release, before the release it is opened with is used or output
(:func:`mpcdp.mpc.release.noisy_release`), and no value of the contribution is printed. A MAC failure stays the
MAC line.

The check. Every party o inputs, authenticated one by one with their squares (masks dealt with their squares:
[[g_j²]] = [[r²]] + 2d·[[r]] + d², :mod:`mpcdp.mpc.auth_inputs`), its contribution g (d checked coordinates, plus
any unchecked ones such as a release's validation flag), and as authenticated bits
(:func:`~mpcdp.mpc.auth_inputs.input_bits`, in the same round: :func:`~mpcdp.mpc.auth_inputs.input_words_and_bits`)
a witness: the L bits of every offset coordinate
u_j = g_j + B (B = ⌊√S⌋, L = bit length of 2B) and the L_s bits of the slack v = S − ‖g‖² (L_s = bit length of S).
Every party then checks, for every contributor:

  (a) every witness value β is a bit: by construction, β = d + (1 − 2d)·r for the bit d o sent and a dealt
      authenticated bit r only o knows (before, each witness was an input word and (a) one authenticated
      square per bit: m·d·L squares per release, about 10^4 in the quick start, now none);
  (b) Σ_i 2^i·β_{j,i} − B − g_j ≡ 0 for every coordinate j;
  (c) S − Σ_j g_j² − Σ_i 2^i·σ_i ≡ 0 (the d squares of the inputs; nothing opened for them);

all mod 2^64, by opening the left-hand sides of (b) and (c) (with the 2^64·r mask of
:func:`~.authenticated.open_values`, so only their low 64 bits) through the checked opening and one batched MAC
check, and requiring every one to be 0. An honest contributor's are all 0, so opening them reveals nothing; only
then is the sum opened (:func:`bounded_inputs`), or the checks are opened together with a noisy release and
decided after its one MAC check (:func:`bound_terms`, :func:`refuse_outside`). No value opened before the MAC
check depends on an unchecked opening: with dealt square pairs instead (ε = g − a opened, the squares formed
from it), an error δ a deviating party added to its share of ε made the square (g + δ)², and the opened check (c)
of an honest contributor showed 2δ·g_j + δ² — one of its coordinates — before the MAC check caught the error.

Soundness (every wrap-around excluded). β ∈ {0, 1} in Z_2^64: d is a bit as sent (it travels as one bit of a
packed word) and r one as the honest dealer dealt it, so d + (1 − 2d)·r is r or 1 − r; a wrong share of r or of
anything computed from it is a MAC failure, and a contributor that sends different parties different d fails the
view comparison. With bits, (b) makes g_j ≡ u_j − B for an integer
u_j ∈ [0, 2^L), so g_j's signed representative is that integer, |g_j| ≤ M = 2^L − 1 (B < 2^L): a coordinate that
is large mod 2^64 (e.g. 2^32, whose square wraps to 0) has no such bits. Then the integer ‖g‖² ≤ d·M² <
2^63 (the bound refuses larger d·2^(2L)), so the products of (c) compute it without wrapping, and with slack bits
v ∈ [0, 2^L_s), L_s ≤ 62, (c) says ‖g‖² ≡ S − v (mod 2^64) with both sides in (−2^63, 2^63): ‖g‖² = S − v ≤ S.
A deviation elsewhere — a wrong share, an altered opening of the checks or a zero opened where it is not
— is a MAC failure with probability ≥ 1 − 2^-57.9 (:mod:`~.authenticated`), and a party that inputs different
words to different parties fails the view comparison of the same check. What is checked is what is summed:
the sum is Σ_o [[g_o]] of the same authenticated inputs. Not checked: the coordinates after the first d (a
release's validation flag: each party's own, authenticated with its contribution and opened on its own by
:func:`~mpcdp.mpc.release.noisy_release`, so no other party can cancel it; a party that sets it only makes every
party stop).

Cost per party, m parties, n = d (+ unchecked) elements, W = d·L + L_s witness bits per contributor:
inputs (m − 1)·8·(n + ⌈W/64⌉) bytes in one round (the witness bits packed; instead of the sum's one opening of
n); the squares local; one opening of the m(d + 1) checks (128-bit, masked); one more MAC check (three rounds: its
coin was committed ahead, in the previous check's σ message; four in a run's first check); the sum is local. From
the dealer to party 0: 64·m bytes per input word (its mask and the mask's square), 32·m per witness bit, 32 per
opened check. Rounds: 1 + 2 + 3 before the sum's own opening and check (:func:`bounded_sum`); a noisy release
opens the checks with the release under its one check: 1 + 2 + 3 = 6 rounds in all with m ≥ 3 (13 with an opened
ε and a check of its own before). Local work: every contributor's inputs and checks as rows of one matrix, the
witness bits' powers of 2 folded into their scale, value and MAC shares scaled and summed as one pair; the
bound in grid units and the powers of 2 computed once per bound, not per release. Measured (before these changes):
``benchmarks/results/malicious-sum.md``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from fractions import Fraction

import torch

from mpcdp.errors import ConfigError, ProtocolViolation
from mpcdp.adapter.limbs import Wide
from mpcdp.adapter.mac_material import RING
from mpcdp.mpc import authenticated as auth
from mpcdp.mpc.auth_inputs import BitInputs, input_words_and_bits
from mpcdp.mpc.authenticated import AuthShared
from mpcdp.mpc.context import MpcContext
from mpcdp.validation import check_number

LIMIT_BITS = 63
"""d·(2^L)² must stay below 2^LIMIT_BITS and S below 2^62: then no check can wrap mod 2^64."""


class OutOfBound(ProtocolViolation):
    """A party's contribution is outside its bound (a check of :mod:`mpcdp.mpc.bounded` opened a nonzero):
    every honest party detects it itself, with the same line naming the party. The run stops before the
    sum is opened (:func:`bounded_sum`), or before a training release opened with the checks is used or output. Reported as a failed check (``evidence`` "bound", :mod:`mpcdp.transport.losses`)."""

    evidence = "bound"

    def __init__(self, label: str, party: int):
        self.label = label
        super().__init__(f"party {party}'s contribution to release {label!r} is outside its clipping bound "
                         f"(security = 'malicious')", party=party)


@dataclasses.dataclass(frozen=True)
class UnitBound:
    """A contribution's bound in grid units: ‖g‖² ≤ ``squared`` over its first ``dim`` coordinates, with the
    witness sizes of the module docstring (B = ``offset``, L = ``coordinate_bits``, L_s = ``slack_bits``)."""

    squared: int
    dim: int

    def __post_init__(self) -> None:
        if not 0 <= self.squared < 1 << 62:
            raise ConfigError(f"`input_bound` is {math.sqrt(self.squared):.4g} grid units; it must be below 2^31 "
                              f"at this precision")
        if self.dim * (1 << (2 * self.coordinate_bits)) >= 1 << LIMIT_BITS:
            raise ConfigError(f"`input_bound` is too large for {self.dim} coordinates at this precision: the "
                              f"in-MPC check needs d·(2^L)² < 2^{LIMIT_BITS} with L = {self.coordinate_bits} "
                              f"bits per coordinate (lower the bound or the precision)")

    @property
    def offset(self) -> int:
        return math.isqrt(self.squared)

    @property
    def coordinate_bits(self) -> int:
        return max(1, (2 * self.offset).bit_length())

    @property
    def slack_bits(self) -> int:
        return max(1, self.squared.bit_length())

    @property
    def witness_words(self) -> int:
        return self.dim * self.coordinate_bits + self.slack_bits


@functools.lru_cache(maxsize=64)
def unit_bound(norm: float, dim: int, precision: int) -> UnitBound:
    """The bound, in grid units², on a contribution x with ‖x‖ ≤ ``norm`` once each coordinate is rounded to
    the nearest multiple of 2^-``precision``: ⌈norm·2^p + √d/2⌉², in exact arithmetic with √d rounded up
    (|round − exact| ≤ 1/2 per coordinate, so ‖g‖ ≤ norm·2^p + √d/2: an honest contribution at the bound
    passes). Cached: a training run asks for the same few bounds at every release."""
    check_number(norm, "input_bound", low=0, low_open=False)
    root = math.isqrt(dim)
    upper = Fraction(norm) * 2 ** precision + Fraction(root if root * root == dim else root + 1, 2)
    return UnitBound(math.ceil(upper) ** 2, dim)


def _bits(values: torch.Tensor, width: int) -> torch.Tensor:
    """The ``width`` low bits of every int64 value, value by value, least significant first."""
    return ((values.reshape(-1, 1) >> torch.arange(width)) & 1).reshape(-1)


def witness(g: torch.Tensor, bound: UnitBound) -> torch.Tensor:
    """The contributor's witness words for its first ``bound.dim`` coordinates ``g`` (int64, grid units): the L
    bits of each g_j + B, then the L_s bits of S − ‖g‖² (module docstring). Each value is clamped into its
    bits' range, so a contribution outside the bound gets a witness that fails (b) or (c), never a wrong one
    that passes. The offsets are clamped in int64 (|g_j| < 2^62 keeps g_j + B exact; a larger coordinate is
    clamped first, which changes no bit of the result); the norm is exact in Python integers."""
    coordinates = g.reshape(-1).to(torch.int64)
    top, slack_top = (1 << bound.coordinate_bits) - 1, (1 << bound.slack_bits) - 1
    offsets = coordinates.clamp(-(1 << 62), 1 << 62).add(bound.offset).clamp(0, top)
    norm = sum(v * v for v in coordinates.tolist())
    slack = min(max(bound.squared - norm, 0), slack_top)
    return torch.cat([_bits(offsets, bound.coordinate_bits),
                      _bits(torch.tensor([slack], dtype=torch.int64), bound.slack_bits)])


def _as_integers(x: AuthShared) -> AuthShared:
    return AuthShared(x.value, x.mac, 0)


def check_terms(ctx: MpcContext, contributions: list[AuthShared], squares: list[AuthShared],
                witnesses: BitInputs, bound: UnitBound) -> AuthShared:
    """The left-hand sides of checks (b) and (c) for every contributor (module docstring; (a) holds by
    construction, the witnesses being bits, :func:`~mpcdp.mpc.auth_inputs.input_bits`), in one flat
    authenticated vector, contributor by contributor: (b) its d coordinate differences, (c) its slack difference.
    ``squares``: every contributor's [[g_j²]], from its dealt mask's square (no opening). Every contributor's
    terms at once, as rows of one matrix; the witness bits are never formed one by one: their powers of 2 are
    folded into the bits' scale (:func:`weighted_bits`). Local."""
    d, m = bound.dim, len(contributions)
    checked = _rows([_as_integers(g[:d]) for g in contributions])  # (m, d)
    offsets, slack = weighted_bits(witnesses, bound)  # (m, d), (m,): Σ_i 2^i·β_i, secret part and public part
    differences = auth.add_constant(ctx, offsets[0] - checked, offsets[1] - bound.offset)
    norm = _rows([_as_integers(q[:d]) for q in squares]).sum_last()  # (m,)
    rest = auth.add_constant(ctx, _neg(norm + slack[0]), _word_tensor(bound.squared) - slack[1])
    return _columns(differences, _reshape(rest, (m, 1)))


def _word_tensor(value: int) -> torch.Tensor:
    return torch.tensor(_word(value), dtype=torch.int64)


@functools.lru_cache(maxsize=64)
def _powers(bound: UnitBound) -> torch.Tensor:
    """The weight 2^i of every witness bit (module docstring), as int64 words: each coordinate's L, then the
    slack's L_s (up to 2^61, read mod 2^64). Cached per bound (its callers never write to it)."""
    coordinate = torch.tensor([1 << i for i in range(bound.coordinate_bits)], dtype=torch.int64).repeat(bound.dim)
    slack = torch.tensor([_word(1 << i) for i in range(bound.slack_bits)], dtype=torch.int64)
    return torch.cat([coordinate, slack])


def weighted_bits(bits: BitInputs, bound: UnitBound) -> tuple[tuple[AuthShared, torch.Tensor],
                                                                   tuple[AuthShared, torch.Tensor]]:
    """Every contributor's Σ_i 2^i·β_{j,i} for each coordinate j ((m, d)) and Σ_i 2^i·σ_i for its slack ((m,)),
    each as (its secret part, its public part): with [[β]] = d + (1 − 2d)·[[r]] (:class:`~.auth_inputs.BitInputs`),
    Σ_i 2^i·β_i = Σ_i 2^i·d_i + [[Σ_i 2^i(1 − 2d_i)·r_i]]: one scaling of the dealt masks by the folded weights
    2^i(1 − 2d_i) (mod 2^64), one sum per coordinate, the public part in int64; local. The sum's low 64 bits are
    those of forming every [[β_i]] and weighting it (only they are checked)."""
    d, width, m = bound.dim, bound.coordinate_bits, bits.d.shape[0]
    powers = _powers(bound)
    masks = Wide.pair(bits.masks.value, bits.masks.mac)  # (2, m, W): value and MAC shares, one scaling and sum
    secret = RING.scale(bits.scale * powers, masks)
    public = bits.d * powers  # int64 words: mod 2^64, as the values
    coordinates = auth.sum_last_pair(secret[:, :, : d * width].reshape(2, m, d, width), 0)
    slack = auth.sum_last_pair(secret[:, :, d * width:], 0)
    return ((coordinates, public[:, : d * width].reshape(m, d, width).sum(-1)),
            (slack, public[:, d * width:].sum(-1)))


def _rows(parts: list[AuthShared]) -> AuthShared:
    """Flat authenticated vectors of one length, stacked as the rows of a matrix; local."""
    return AuthShared(Wide.stack([p.value for p in parts]), Wide.stack([p.mac for p in parts]), parts[0].precision_bits)


def _columns(left: AuthShared, right: AuthShared) -> AuthShared:
    """Two matrices of one row count joined column-wise and flattened row by row; local."""
    def join(a: Wide, b: Wide) -> Wide:
        return Wide(torch.cat([a.lo, b.lo], 1).reshape(-1), torch.cat([a.hi, b.hi], 1).reshape(-1))

    return AuthShared(join(left.value, right.value), join(left.mac, right.mac), left.precision_bits)


def _reshape(x: AuthShared, shape: tuple[int, ...]) -> AuthShared:
    return AuthShared(x.value.reshape(*shape), x.mac.reshape(*shape), x.precision_bits)


def _word(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _neg(x: AuthShared) -> AuthShared:
    return x.mul_public(torch.tensor(-1))


def bounded_sum(ctx: MpcContext, encoded: torch.Tensor, bound: UnitBound, *, precision: int,
                label: str) -> AuthShared:
    """[[Σ_o g_o]] for every party's int64 vector ``encoded`` (grid units at ``precision``; same shape everywhere),
    once every party's first ``bound.dim`` coordinates passed checks (a)–(c) (module docstring), opened and
    MAC-checked before this returns: the caller opens the sum after.

    Raises:
        OutOfBound: a check opened a nonzero (on every honest party, naming the first such contributor).
        MacCheckFailed: the MAC check of the checks failed.
    """
    contributions = bounded_inputs(ctx, encoded, bound, precision=precision, label=label)
    total = contributions[0]
    for other in contributions[1:]:
        total = total + other
    return AuthShared(total.value.reshape(*encoded.shape), total.mac.reshape(*encoded.shape), precision)


def bounded_inputs(ctx: MpcContext, encoded: torch.Tensor, bound: UnitBound, *, precision: int,
                   label: str) -> list[AuthShared]:
    """Every party's int64 vector ``encoded`` (flat, same length everywhere), authenticated one by one, in rank
    order, once every party's first ``bound.dim`` coordinates passed checks (a)–(c) (:func:`bounded_sum`'s
    errors): the checks opened and MAC-checked here, before anything else is opened; the coordinates after them
    (e.g. a release's validation flag) are each party's own, unchecked."""
    contributions, terms = bound_terms(ctx, encoded, bound, precision=precision, label=label)
    opened = auth.open_values(ctx, terms, label=f"{label} (bound checks)", kind="public",
                              reason="the bound checks' left-hand sides: 0 for an honest contributor")
    auth.mac_check(ctx, label=f"{label} (bound checks)")
    refuse_outside(opened, len(contributions), label)
    return contributions


def bound_terms(ctx: MpcContext, encoded: torch.Tensor, bound: UnitBound, *, precision: int,
                label: str) -> tuple[list[AuthShared], AuthShared]:
    """(every party's ``encoded``, authenticated one by one in rank order; the left-hand sides of checks (b) and
    (c) of every contributor, :func:`check_terms`), nothing opened: the caller opens the checks (their low 64 bits
    only, :func:`~.authenticated.open_values`) and MAC-checks them before it uses or outputs anything, then
    passes them to :func:`refuse_outside` (a noisy release opens them with the release itself,
    :func:`mpcdp.mpc.release.noisy_release`). One round (the inputs and witness bits); the squares come from the
    dealt masks' squares (:func:`~.auth_inputs.input_words_and_bits`, ``squared``)."""
    flat = encoded.reshape(-1).to(torch.int64)
    n = flat.numel()
    if n < bound.dim:
        raise ValueError(f"the bound covers {bound.dim} coordinates; the contribution has {n}")
    contributions, witnesses, squares = input_words_and_bits(ctx, flat, witness(flat[: bound.dim], bound),
                                                             precision=precision, label=f"{label} (bounded inputs)",
                                                             squared=True)
    return contributions, check_terms(ctx, contributions, squares, witnesses, bound)


def refuse_outside(opened: torch.Tensor, parties: int, label: str) -> None:
    """Raise :class:`OutOfBound` naming the first contributor one of whose opened, MAC-checked checks
    (:func:`bound_terms`' terms, their low 64 bits) is not 0."""
    per_party = opened.reshape(parties, -1)
    for o in range(parties):
        if bool(per_party[o].ne(0).any()):
            raise OutOfBound(label, o)
