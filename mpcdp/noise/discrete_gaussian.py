"""The noise mpcdp releases: a discrete Gaussian on Z, sampled by integer rules whose output pmf is exact.

This module is the public definition of the sampler, pure integer arithmetic on public constants. Both
backends run this definition: the secure one inside the MPC (:mod:`mpcdp.noise.secure_gaussian`) and the
simulated one in plaintext (:func:`sample_plain`). Their outputs therefore have the same distribution, and
:func:`exact_log_pmf` enumerates it.

Target. ρ(n) = exp(−t(n)) with t(n) = n²·G / 2^F, G a public integer, F = 54. So the target is the discrete
Gaussian D_σ with σ² = 2^(F−1)/G: the requested σ rounded *up* to that grid, with relative step < 2^-9 for
σ <= 2^22.

Sampler, per candidate (every step an integer operation; the randomness is XOR-combined from all parties):
  1. Piece. A 6-bit uniform index picks piece j with probability Q_j/64 (public Q_j >= 1). The pieces are
     :data:`LAYOUT` in units of 2^k: P_0 = [−2^k, 2^k), then ±[1, 2), ±[2, 3), ±[3, 4), ±[4, 5), ±[5, 6),
     ±[6, 8), ±[8, 16), ±[16, 32) (times 2^k), with 2^(k+5) ∈ [9.8σ, 19.6σ). So the pieces tile
     [−2^(k+5), 2^(k+5)), which covers the support; they are narrow up to 4σ, where ρ falls fastest, so the
     envelope hugs it: acceptance 0.775–0.778 at σ = 16..2^21.5 (7 pieces: 0.68–0.77; dgauss-grid/1's five
     doubling pieces: 0.61–0.67).
  2. Point. n is uniform on its piece: a sign bit and k+4 uniform bits give its two's complement (k+6 bits):
     piece j >= 1 is +m or −m − 1 for m = start_j + (point mod width_j), each width a power of 2 dividing its
     start.
  3. Exponent. T = n²·G + Λ_j, an exact integer < 2^62. Λ_j = ⌈λ_j·2^F⌉, λ_j = ln(M·c_j), c_j = Q_j/(64|P_j|),
     M = max_j ρ(min |P_j|)/c_j. So the proposal density times e^(−λ_j) is the same constant 1/M on every piece.
  4. Accept iff T < 64·2^F and every Bernoulli factor of exp(−T/2^F) is 1; the two groups that read t's
     bits 32 and 16 have threshold 0 for t >= 48, so the support is t < 48 − λ_j, |n| below ≈ 9.8σ. The bits of T are cut into groups. Group g reads a_g = (T >> lo_g) mod 2^(w_g) and
     passes iff V_g < TH_g[a_g], TH_g[a] ≈ 2^62·exp(−a·2^(lo_g − F)/root_g) rounded to a multiple of 2^d_g
     (within 2^-42; the literal constants of :mod:`mpcdp.noise.dg_thresholds`), V_g = W_g ⊕ TH_g[a_g] with W_g
     a uniform 62-bit word (so V_g is uniform too, whatever a_g is; TH = 2^62 always passes). The two groups on
     t's bits 16 and 32 (:data:`PAIR`) are rounded together: their product is within 2^-45 of 2^124·e^(−16a).
     The first factor's group (t's bits 8..1/4, entries down to 2^39.3) has no shift within 2^-42: its entries
     are the nearest integers, within 2^-40.5. The bits below 2^-20 (T_low < 2^33) pass iff V_low >= T'_low, T'_low = T_low with its bits below 2^-42
     (:data:`LOW_DROP`) cleared, V_low = W_low ⊕ T'_low with W_low uniform on [0, 2^F). That has probability
     1 − T'_low/2^F, within a factor e^(2^-42 + 2^-41) of exp(−T_low/2^F).
     (V = W ⊕ TH lets the MPC read the comparison off the top set bit of W: :func:`below`.)

Output pmf (exact, :func:`exact_log_pmf`): P̃(n) ∝ c_j · 1[T < 48·2^F] · Π_g TH_g[a_g]/2^62 · (1 − T'_low/2^F).
Relative to D_σ on the support S it differs by a factor within e^(±η). η (:attr:`DiscreteGaussianPlan.eta_dg`,
rigorous) sums the rounding of each threshold (the pair's product per window value), of each Λ_j and the
low-bit approximation, and is about 3.8e-12 (2.2e-12 with the first factor on t's bits 2..1/16 and LOW_CUT 21;
1e-12 before the thresholds were rounded to 2^-42).
Every n in S has positive mass: no holes. Outside S the mass is 0, and the target mass there is the
truncation (:attr:`DiscreteGaussianPlan.truncated_mass`, ≈ 1e-15).

Against the rounded continuous Gaussian round(σ·Z), the reference of the accounting
(:mod:`mpcdp.accounting.grid`), the pmf ratio on S adds at most (64/σ² + 1/σ²)/24 + O(σ^-4)
(:attr:`DiscreteGaussianPlan.eta_rounded`): the rounded Gaussian's pmf is φ integrated over one cell.

Acceptance ≈ 0.78. The opened accept bits reveal nothing about accepted values: candidates are independent,
and conditioned on acceptance a value has the target distribution. The same argument as for any rejection
sampler.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import secrets

import numpy as np

from mpcdp.errors import ConfigError
from mpcdp.noise.dg_thresholds import THRESHOLDS
from mpcdp.validation import check_number

F = 53  # fractional bits of t = T / 2^F
WORD = 62  # bits of the uniform compared with a group's threshold
LOW_CUT = 20  # bits of t below 2^-LOW_CUT are accepted with probability 1 − t_low (error <= 2^-(2·LOW_CUT+1))
LAYOUT = ((0, 1), (1, 1), (2, 1), (3, 1), (4, 1), (5, 1), (6, 2), (8, 8), (16, 16))
"""The pieces as (start, size) of |n| in units of 2^k: piece 0 is [−2^k, 2^k); piece j >= 1 is
±[start_j·2^k, (start_j + size_j)·2^k), each size a power of 2 dividing its start (so a value is its piece's
start ⊕ the point's low bits). Narrow pieces where ρ falls fastest (1..8 units: about 0.5σ..4σ), wide ones
where the mass is small: acceptance 0.775–0.778 at σ = 16..2^21.5 units (7 pieces, (0, 2), (2, 1), (3, 1),
(4, 2), (6, 2), (8, 8), (16, 16): 0.68–0.77, mean 0.74; dgauss-grid/1's five doubling pieces ((0, 2), (2, 2),
(4, 4), (8, 8), (16, 16)): 0.61–0.67). Each piece past the first costs a dealt piece bit: 8 bit columns in the
B2A's opening."""
PIECES = len(LAYOUT)
RADIUS_UNITS = LAYOUT[-1][0] + LAYOUT[-1][1]  # candidates lie in [−32·2^k, 32·2^k)
POINT_EXTRA = LAYOUT[-1][1].bit_length() - 1  # the point has k + 4 bits (the widest piece's)
WORD_EXTRA = RADIUS_UNITS.bit_length()  # n's two's complement word has k + 6 bits
INDEX_BITS = 6  # the piece index is a 6-bit uniform: Q_j/64
CUT = 48  # reject t >= 48 (|n| >= 9.8σ)
# Bit groups of T as (low bit, width, root): group g passes with probability ≈ exp(−a·2^(low−F)/root). t's bits
# 32 and 16 are read twice by a pair of factors whose product is e^(−16a) (keeps every threshold above 2^-25 of
# 2^62), and their value 3 (t >= 48) gets threshold 0: the cut. Then bits 8..1/4 (the first factor,
# :data:`mpcdp.noise.gaussian_factors.FIRST_GROUP`) and three 6-bit fractional groups down to 2^-LOW_CUT. The
# plan before (LOW_CUT 21) read bits 8, 4 in a group of their own and 2..1/16 first: one factor more on the first
# factor's survivors. The thresholds are literal constants (:mod:`mpcdp.noise.dg_thresholds`).
GROUPS = ((F + 4, 2, 2), (F + 4, 2, 2), (F - 2, 6, 1), (F - 8, 6, 1), (F - 14, 6, 1), (F - LOW_CUT, 6, 1))
PAIR = (0, 1)  # the groups on t's bits 16 and 32: rounded together, only their product approximates e^(−16a)
ABOVE = 62 - (F + 6)  # T's bits from t = 64 up to bit 61: all must be 0
LOW_BITS = F - LOW_CUT  # T's bits below the last group
LOW_DROP = F - 42  # T's bits below 2^-42, which the low factor ignores (error <= 2^-42)
LOW_MASK = ((1 << LOW_BITS) - 1) ^ ((1 << LOW_DROP) - 1)  # T'_low = T & LOW_MASK
SIGMA_MIN, SIGMA_MAX = 16.0, float(2**22)
RADIUS_SIGMAS = math.sqrt(2 * CUT)  # candidates reach at least √(2·48)·σ = 9.8σ, where the cut starts


@functools.lru_cache(maxsize=None)
def group_thresholds() -> tuple[np.ndarray, ...]:
    """TH_g for every group: the public 62-bit thresholds of the Bernoulli factors (:mod:`mpcdp.noise.dg_thresholds`)."""
    return tuple(np.array([unit << shift for unit in units], dtype=np.int64) for shift, units in THRESHOLDS)


def _ideal(g: int, a: int) -> float:
    """2^62·exp(−t/root_g) at group g's window value a (float64: relative error a few 2^-53)."""
    low, _, root = GROUPS[g]
    return math.exp(-a * 2.0 ** (low - F) / root) * 2**WORD


def pair_error() -> float:
    """max_a |ln(TH_A[a]·TH_B[a] / (2^124·exp(−a·2^(lo − F))))| over the pair's nonzero entries (A, B = :data:`PAIR`):
    the two factors read the same window value, so only their product is the rule's."""
    first, second = (group_thresholds()[g].tolist() for g in PAIR)
    return max((abs(math.log(x * y / (_ideal(PAIR[0], a) * _ideal(PAIR[1], a))))
                for a, (x, y) in enumerate(zip(first, second)) if x and y), default=0.0)


@functools.lru_cache(maxsize=None)
def _threshold_error() -> float:
    """Σ_g max_a |ln(TH_g[a] / (2^62·exp(−a·2^(lo−F)/root)))| over the support's entries, the :data:`PAIR` scored
    together per window value (:func:`pair_error`), plus 2^-50 per term for float64's own error."""
    return pair_error() + 2.0**-50 + sum(
        max(abs(math.log(th / _ideal(g, a))) for a, th in enumerate(table.tolist()) if th) + 2.0**-50
        for g, table in enumerate(group_thresholds()) if g not in PAIR)


@dataclasses.dataclass(frozen=True)
class DiscreteGaussianPlan:
    """The public constants of the sampler for one σ (in grid units). Build with :func:`plan_for`."""

    sigma_requested: float
    G: int  # t = n²·G / 2^F
    k: int  # the layout's unit: piece 0 is [−2^(k+1), 2^(k+1))
    Q: tuple[int, ...]  # piece probabilities Q_j/64
    Lambda: tuple[int, ...]  # Λ_j at 2^-F
    lam: tuple[float, ...]  # λ_j (reals)

    @property
    def sigma(self) -> float:
        """The standard deviation of the target D_σ: σ² = 2^(F−1)/G (>= the requested σ)."""
        return math.sqrt(2 ** (F - 1) / self.G)

    @property
    def radius(self) -> int:
        """Candidates lie in [−radius, radius)."""
        return RADIUS_UNITS << self.k

    def piece_sizes(self) -> list[int]:
        """Values in each piece (both signs)."""
        return [(2 * size) << self.k for _, size in LAYOUT]

    def piece_starts(self) -> list[int]:
        """min |n| over each piece."""
        return [start << self.k for start, _ in LAYOUT]

    def point_masks(self) -> list[int]:
        """The point's bits each piece reads, as a mask: |P_j|/2 − 1 (|P_j|/2 is a power of 2)."""
        return [(size << self.k) - 1 for _, size in LAYOUT]

    def index_table(self) -> np.ndarray:
        """Piece of each of the 64 index values (Q_j consecutive values for piece j)."""
        return np.repeat(np.arange(PIECES), self.Q).astype(np.int64)

    @property
    def log_envelope(self) -> float:
        """ln M: the proposal density times e^(−λ_j) is 1/M on every piece."""
        return self.lam[0] - math.log(self.Q[0] / (64 * self.piece_sizes()[0]))

    @property
    def acceptance(self) -> float:
        """Probability that a candidate is accepted, ≈ √(2π)·σ/M (exact: :func:`exact_acceptance`)."""
        return math.sqrt(2 * math.pi) * self.sigma * math.exp(-self.log_envelope)

    @property
    def eta_dg(self) -> float:
        """Bound on |ln(P̃(n)/D_σ(n|S))| over the support S, D_σ(·|S) the target restricted to S.

        Sources: thresholds rounded to multiples of 2^d (each group's worst case, within 2^-42, the first
        factor's nearest integers within 2^-40.5; the pair's product per window value), Λ_j rounded to 2^-F
        (plus the float error of λ_j), and the low bits' 1 − x' for e^(−x) (x < 2^-20: relative error <= x²/2
        + x³; x − x' < 2^-42 from the dropped bits, at most 2^-42/(1 − 2^-20) more). Twice the pointwise bound
        covers the normalisation: about 3.8e-12.
        """
        lam_error = max(abs(L / 2**F - lam) for L, lam in zip(self.Lambda, self.lam)) + 64 * 2.0**-52
        low = 2.0 ** (-2 * LOW_CUT - 1) + 2.0 ** (-3 * LOW_CUT) + 2.0 ** (LOW_DROP - F) / (1 - 2.0**-LOW_CUT)
        return 2 * (_threshold_error() + lam_error + low)

    @property
    def eta_rounded(self) -> float:
        """Bound on |ln(P̃(n)/R(n|S))|, R the rounded continuous Gaussian round(σ·Z): η_dg plus the cell
        integral ∫_{−½}^{½} e^(−a·u − b·u²) du (a = n/σ², b = 1/(2σ²), |n| < 9.9σ) against 1, both ways, and
        the same again for the normalisation."""
        s = self.sigma
        a, b = (self.support_edge + 1) / (s * s), 1.0 / (2 * s * s)
        up = a * a / 24 + a**4 / 1920  # ln(sinh(a/2)/(a/2)) <= a²/24 + a⁴/1920
        down = b / 12 + b * b  # −ln(1 − b/12) <= b/12 + b² for small b
        return self.eta_dg + 2 * max(up, down)

    @property
    def support_edge(self) -> int:
        """Smallest |n| outside the support: the cut T >= 32·2^F in some piece, or the candidates' radius."""
        edge = self.radius
        for start, size, Lambda in zip(self.piece_starts(), self.piece_sizes(), self.Lambda):
            first = _smallest_cut(self.G, (CUT << F) - Lambda)  # the groups' zero threshold at t >= 48
            if first < start + size // 2:
                edge = min(edge, max(first, start))
        return edge

    @property
    def truncated_mass(self) -> float:
        """Mass of the rounded Gaussian outside the support (an upper bound): |σ·Z| >= edge − ½."""
        return math.erfc((self.support_edge - 0.5) / (self.sigma * math.sqrt(2)))


def _smallest_cut(G: int, bound: int) -> int:
    """Smallest m >= 0 with m²·G >= bound (exact integers)."""
    if bound <= 0:
        return 0
    m = math.isqrt((bound - 1) // G)
    while m * m * G < bound:
        m += 1
    while m > 0 and (m - 1) ** 2 * G >= bound:
        m -= 1
    return m


@functools.lru_cache(maxsize=64)
def plan_for(sigma: float) -> DiscreteGaussianPlan:
    """The sampler's public constants for a standard deviation of ``sigma`` grid units (a frozen plan, derived
    once per σ: a draw asks for it several times).

    Raises:
        ConfigError: σ outside [16, 2^22] (fewer than 16 units cannot keep the rounded-Gaussian deviation small;
            above 2^22 the exponent T would leave the 62 bits its exact arithmetic has).
    """
    check_number(sigma, "sigma", low=SIGMA_MIN, high=SIGMA_MAX, low_open=False, high_open=False,
                 where=" of the discrete Gaussian sampler", note="grid units; 2^22 at most")
    G = int(2.0 ** (F - 1) / (sigma * sigma))
    while 2.0 ** (F - 1) / G < sigma * sigma:  # σ must not come out below the request
        G -= 1
    s = math.sqrt(2 ** (F - 1) / G)
    k = math.ceil(math.log2(s * RADIUS_SIGMAS / RADIUS_UNITS))
    sizes = [(2 * size) << k for _, size in LAYOUT]
    starts = [start << k for start, _ in LAYOUT]
    log_rho = [-(a * a * G) / 2**F for a in starts]
    # Greedy: each of the 64 units of probability to the piece whose envelope would otherwise be highest.
    Q = [1] * PIECES
    for _ in range(64 - PIECES):
        j = max(range(PIECES), key=lambda i: log_rho[i] + math.log(sizes[i] / Q[i]))
        Q[j] += 1
    log_c = [math.log(Q[j] / (64 * sizes[j])) for j in range(PIECES)]
    log_m = max(log_rho[j] - log_c[j] for j in range(PIECES))
    lam = tuple(log_m + log_c[j] for j in range(PIECES))
    Lambda = tuple(max(math.ceil(lam[j] * 2**F), -(starts[j] ** 2) * G) for j in range(PIECES))
    top = (RADIUS_UNITS << k) ** 2 * G + max(Lambda)
    if top >= 1 << 62:
        raise ConfigError(f"`sigma` {sigma!r}: the exponent would need {top.bit_length()} bits (limit 62)")
    plan = DiscreteGaussianPlan(float(sigma), int(G), int(k), tuple(Q), Lambda, lam)
    if plan.support_edge < RADIUS_SIGMAS * plan.sigma - 1:  # every support reaches the cut (≈ 9.8σ)
        raise AssertionError(f"sigma {sigma!r}: the support ends at {plan.support_edge}, before the cut")
    return plan


@dataclasses.dataclass(frozen=True)
class DiscreteGaussianSampler:
    """This sampler as a release grid's integer sampler (:class:`~mpcdp.accounting.grid.GridSampler`): one
    :class:`DiscreteGaussianPlan` per noise scale. Every shipped grid mechanism draws with it."""

    name: str = "discrete Gaussian (9 pieces, 6 bit groups, cut t >= 48, thresholds within 2^-42 (the first factor's 2^-40.5))"

    def plan_for(self, sigma_units: float) -> DiscreteGaussianPlan:
        return plan_for(sigma_units)


DISCRETE_GAUSSIAN = DiscreteGaussianSampler()


def plan_of(release) -> DiscreteGaussianPlan:
    """The plan of ``release`` (a :class:`~mpcdp.accounting.grid.GridRelease`) for code that runs this sampler
    (its circuit, its plaintext draws, its residual).

    Raises:
        ConfigError: the release's sampler is another mechanism's, whose plan this code cannot run.
    """
    plan = release.plan
    if not isinstance(plan, DiscreteGaussianPlan):
        raise ConfigError(f"this step runs the discrete Gaussian sampler; the release's sampler is "
                          f"{release.sampler.name!r} (a {type(plan).__name__}): ask its mechanism's record instead")
    return plan


# -- the decision rule, on combined randomness (plaintext) ----------------------------------------------------

RANDOM_FIELDS = ("index", "point", "sign", *(f"v{g}" for g in range(len(GROUPS))), "v_low")


def field_bits(plan: DiscreteGaussianPlan) -> dict[str, int]:
    """Bits of each random field of a candidate."""
    bits = {"index": INDEX_BITS, "point": plan.k + POINT_EXTRA, "sign": 1, "v_low": F}
    bits.update({f"v{g}": WORD for g in range(len(GROUPS))})
    return bits


def draw_fields(plan: DiscreteGaussianPlan, n: int, words, names: tuple[str, ...] = RANDOM_FIELDS) -> dict[str, np.ndarray]:
    """One party's random fields ``names`` for n candidates, drawn from ``words(count) -> int64 array`` in
    :data:`RANDOM_FIELDS` order.

    XOR-combining every party's fields gives the candidates' randomness; the secure sampler uses this party's
    fields as its XOR shares, and a test can recombine them from the same streams.
    """
    bits = field_bits(plan)
    return {name: np.asarray(words(n), dtype=np.int64) & ((1 << bits[name]) - 1)
            for name in RANDOM_FIELDS if name in names}


def candidate_values(plan: DiscreteGaussianPlan, fields: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(n, piece) of each candidate from its combined random fields."""
    piece = plan.index_table()[fields["index"]]
    point, negative = fields["point"], fields["sign"] == 1
    starts = np.asarray(plan.piece_starts(), dtype=np.int64)
    masks = np.asarray(plan.point_masks(), dtype=np.int64)
    magnitude = starts[piece] + (point & masks[piece])
    half0 = plan.piece_sizes()[0] // 2
    # piece 0: two's complement of (sign, its low bits): [−half0, half0); pieces >= 1: +m or −m − 1
    n = np.where(piece == 0, np.where(negative, magnitude - half0, magnitude), np.where(negative, -magnitude - 1, magnitude))
    return n.astype(np.int64), piece


def exponent(plan: DiscreteGaussianPlan, n: np.ndarray, piece: np.ndarray) -> np.ndarray:
    """T = n²·G + Λ_j (exact int64; < 2^62)."""
    return n * n * plan.G + np.asarray(plan.Lambda, dtype=np.int64)[piece]


def accept(plan: DiscreteGaussianPlan, T: np.ndarray, fields: dict[str, np.ndarray]) -> np.ndarray:
    """The accept decision of every candidate (exact integer comparisons)."""
    ok = T < (1 << (F + 6))
    for g, ((low, width, _), table) in enumerate(zip(GROUPS, group_thresholds())):
        ok &= below(fields[f"v{g}"], table[(T >> low) & ((1 << width) - 1)], WORD)
    ok &= ~below(fields["v_low"], T & LOW_MASK, F)
    return ok


def below(uniform: np.ndarray, threshold: np.ndarray, bits: int) -> np.ndarray:
    """[V < TH] with V = uniform ⊕ TH: probability TH/2^bits for a uniform ``bits``-bit word and TH <= 2^bits
    (TH = 2^bits: always true). The form the MPC evaluates (:func:`mpcdp.mpc.bernoulli.bernoulli_bits`)."""
    return (threshold == (1 << bits)) | ((uniform ^ threshold) < threshold)


def _stream_words(seed: int | None, stream: int):
    if seed is None:
        return lambda n: np.frombuffer(secrets.token_bytes(8 * n), dtype="<i8").astype(np.int64)
    generator = np.random.default_rng([seed, stream])
    return lambda n: generator.integers(-(2**63), 2**63 - 1, size=n, dtype=np.int64, endpoint=True)


def sample_plain(plan: DiscreteGaussianPlan, count: int, *, words=None, seed: int | None = None,
                 stream: int = 0) -> tuple[np.ndarray, dict]:
    """``count`` draws of the sampler in plaintext (int64 grid units) and public counts.

    ``words(n)`` supplies uniform int64 words (default: the OS CSPRNG; ``seed``: a seeded, insecure generator
    for tests and reproducible simulation).
    """
    words = words or _stream_words(seed, stream)
    out, have, candidates, passes = [], 0, 0, 0
    while have < count:
        need = count - have
        n_cand = int(need / max(plan.acceptance, 0.05) + 4 * math.sqrt(need) + 8)
        fields = draw_fields(plan, n_cand, words)
        values, piece = candidate_values(plan, fields)
        ok = accept(plan, exponent(plan, values, piece), fields)
        kept = values[ok][:need]
        out.append(kept)
        have += kept.size
        candidates += n_cand
        passes += 1
    return np.concatenate(out), {"candidates": candidates, "passes": passes}


# -- the exact output distribution ----------------------------------------------------------------------------

def piece_of(plan: DiscreteGaussianPlan, n: np.ndarray) -> np.ndarray:
    """The piece each candidate value n ∈ [−radius, radius) belongs to."""
    m = np.where(n < 0, -n - 1, n)  # magnitude in the piece layout (the negative side shifted by one)
    outer = np.searchsorted(np.asarray(plan.piece_starts(), dtype=np.int64), m, side="right") - 1
    half0 = plan.piece_sizes()[0] // 2
    return np.where((n >= -half0) & (n < half0), 0, outer)


def exact_acceptance(plan: DiscreteGaussianPlan) -> float:
    """The exact probability that a candidate is accepted (enumerates every candidate value)."""
    return float(np.exp(_log_sum(plan)))


def _log_sum(plan: DiscreteGaussianPlan, chunk: int = 1 << 22) -> float:
    """ln Σ_n proposal(n)·P(accept | n) over the support, each |n| computed once for both signs.

    On piece j the negative side n = −m − 1 (m in [begin, end)) has |n| in (begin, end], the positive side |n| in
    [begin, end), and T depends on |n| and j only. So |n| = a in [begin, min(end + 1, cut)) counts
    [a < end] + [a > begin] times: half the cells of a pass over n. Equal to that pass's sum up to float64
    summation order (tests/test_discrete_gaussian.py: within 1e-13).
    """
    log_c, tables = _log_tables(plan)
    total = -math.inf
    for j, begin, end, cut in _piece_bounds(plan):
        top = min(end + 1, cut)
        for lo in range(begin, top, chunk):
            a = np.arange(lo, min(lo + chunk, top), dtype=np.int64)
            log_w = _piece_log_weights(plan, a, j, log_c[j], tables)
            peak = log_w.max()
            times = (a < end).astype(np.float64) + (a > begin)
            total = np.logaddexp(total, peak + math.log((times * np.exp(log_w - peak)).sum()))
    return float(total)


def _log_tables(plan: DiscreteGaussianPlan) -> tuple[np.ndarray, list[np.ndarray]]:
    """(ln c_j per piece, ln(TH_g/2^62) per group): the terms of a cell's log-weight."""
    log_c = np.log(np.array(plan.Q, dtype=np.float64) / (64 * np.array(plan.piece_sizes(), dtype=np.float64)))
    with np.errstate(divide="ignore"):
        tables = [np.log(t.astype(np.float64) / 2.0**WORD) for t in group_thresholds()]
    return log_c, tables


def _log_weights(plan: DiscreteGaussianPlan, chunk: int = 1 << 22):
    """(n, ln(proposal(n)·P(accept | n))) over every candidate value, in chunks (−inf outside the support).

    Only the support's cells are computed, a piece's stretch at a time (its proposal term and Λ_j one number):
    outside it some factor's threshold is 0, so the weight is −inf. Same operations, in the same order, on each
    cell as the per-cell rule, so the same float64 numbers (tests/test_discrete_gaussian.py checks it, bit for bit).
    """
    log_c, tables = _log_tables(plan)
    spans = support_spans(plan)
    r = plan.radius
    for start in range(-r, r, chunk):
        stop = min(start + chunk, r)
        n = np.arange(start, stop, dtype=np.int64)
        log_w = np.full(n.size, -np.inf)
        for lo, hi, j in spans:
            a, b = max(lo, start), min(hi, stop)
            if a < b:
                log_w[a - start:b - start] = _piece_log_weights(plan, n[a - start:b - start], j, log_c[j], tables)
        yield n, log_w


def support_spans(plan: DiscreteGaussianPlan) -> list[tuple[int, int, int]]:
    """The support as ascending, disjoint [lo, hi) stretches of n inside one piece j: (lo, hi, j), every n with
    T = n²·G + Λ_j below the cut CUT·2^F (exact integers, :func:`_smallest_cut`)."""
    spans = []
    for j, begin, end, cut in _piece_bounds(plan):
        negative = (max(-end, 1 - cut), -begin) if j else (max(-end, 1 - cut), 0)
        spans += [(lo, hi, j) for lo, hi in (negative, (begin, min(end, cut))) if lo < hi]
    return sorted(spans)


def _piece_bounds(plan: DiscreteGaussianPlan) -> list[tuple[int, int, int, int]]:
    """(j, begin, end, cut) per piece j: |n| in [begin, end) on the positive side (n = −m − 1, m in that range, on
    the negative), and cut the first |n| whose T = n²·G + Λ_j reaches CUT·2^F (exact integers)."""
    return [(j, begin, begin + size // 2, _smallest_cut(plan.G, (CUT << F) - Lambda))
            for j, (begin, size, Lambda) in enumerate(zip(plan.piece_starts(), plan.piece_sizes(), plan.Lambda))]


def _piece_log_weights(plan: DiscreteGaussianPlan, n: np.ndarray, j: int, log_c: float, tables) -> np.ndarray:
    T = n * n * plan.G + plan.Lambda[j]
    log_w = np.full(n.size, log_c)
    for (low, width, _), table in zip(GROUPS, tables):
        log_w += table[(T >> low) & ((1 << width) - 1)]
    log_w += np.log1p(-(T & LOW_MASK).astype(np.float64) / 2.0**F)
    return log_w


def exact_log_pmf(plan: DiscreteGaussianPlan, chunk: int = 1 << 22):
    """The sampler's exact output log-pmf, in chunks (n, ln P̃(n)); −inf where no candidate is ever accepted."""
    log_z = _log_sum(plan)
    for n, log_w in _log_weights(plan, chunk):
        yield n, log_w - log_z


def log_rounded_gaussian(n: np.ndarray, sigma: float) -> np.ndarray:
    """ln of the pmf of round(σ·Z) at integers n, to float64 accuracy, without cancelling normal-CDF differences.

    pmf(n) = φ(n/σ)/σ · I with I = ∫_{−½}^{½} e^(−a·u − b·u²) du, a = n/σ², b = 1/(2σ²). ln I comes from a
    20-point Gauss–Legendre rule for σ < 1024. For larger σ it comes from the cumulant series of u uniform on
    the cell, −b/12 + a²/24 + b²/360 − a²b/360 − a⁴/2880, whose next terms are below 1e-16 there.
    """
    n = np.asarray(n, dtype=np.float64)
    a, b = n / sigma**2, 1.0 / (2 * sigma**2)
    if sigma >= 1024:
        log_i = -b / 12 + a * a / 24 + b * b / 360 - a * a * b / 360 - a**4 / 2880
    else:
        nodes, weights = np.polynomial.legendre.leggauss(20)
        u = nodes / 2  # [−½, ½]
        log_i = np.log((weights / 2 * np.exp(-a[..., None] * u - b * u * u)).sum(-1))
    return -(n * n) / (2 * sigma**2) - math.log(math.sqrt(2 * math.pi) * sigma) + log_i


def log_discrete_gaussian(n: np.ndarray, sigma: float) -> np.ndarray:
    """ln D_σ(n) (the normaliser is √(2π)σ to float64 accuracy for σ >= 1)."""
    n = np.asarray(n, dtype=np.float64)
    return -(n * n) / (2 * sigma**2) - math.log(math.sqrt(2 * math.pi) * sigma)
