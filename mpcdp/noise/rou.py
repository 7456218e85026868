"""Gaussian noise sampled inside the MPC by ratio-of-uniforms (paper 002, Appendix A; Kinderman–Monahan).

No data party alone and no coalition missing one data party learns a noise value, nor does the dealer alone:
the uniforms are XOR-combined from every party's private random bits and all arithmetic happens on shares.
Only each candidate's accept bit is opened. The dealer with any one data party learns it (it knows every
Beaver mask; :func:`mpcdp.noise.who_knows.noise_known_to`).

Sampler (per coordinate, vectorized over a batch; k = ``uniform_bits``, K = k + 1):
  u₁ = U₁ / 2^K with U₁ = 2·B₁ + 1 odd in [1, 2^K) and u₂ = (2·B₂ + 1) / 2^(k+1), B₁, B₂ uniform k-bit words
  (the midpoints of a 2^k grid: no zero, symmetric). With W = 2·B₂ + 1 − 2^k and c = √(2/e):
  v = c·W/2^k, x = v/u₁ = 2c·W/U₁, and the candidate is accepted iff x² ≤ −4 ln u₁, i.e. iff

        2·W² ≤ e · U₁² · ln(2^K / U₁)                                                      (*)

Steps, all on shares, exact except where stated:
  1. B₁, B₂ XOR-shared (each party's share is its own random bits: no communication).
  2. z = leading zeros of U₁ (K bits) by a prefix-OR (5 AND rounds); Q = 2^z − 1 by a local bit reversal.
  3. B2A of B₁, B₂, Q (dealer-masked words); U₁, W, 2^z, z become additive integers.
  4. One multiplication round: M = U₁·2^z ∈ [2^(K−1), 2^K), A = W·2^z, U₁², W².
  5. L = ln(2^K/U₁) = −ln(M/2^K) + z·ln 2: −ln y on y = M/2^K ∈ [0.5, 1) is a degree-10 polynomial in
     t = y − 3/4 (Chebyshev fit, max error 2.4e-9), powers of t at 28 fractional bits (4 multiplication
     rounds, each power opened once, each product truncated exactly), coefficients at 24 bits; Λ = e·L at
     f = 62 − 2K fractional bits (28 for k = 16).
  6. (*) as the exact integer comparison 2^(f+1)·W² ≤ U₁²·Λ. Both sides are below 2^61 (e·U²·ln(2^K/U)
     peaks at 2^(2K)/2), so the ring arithmetic is exact and the comparison runs on 62 bits.
     Residual deviation: the only approximation is Λ — |Λ/2^f − e·L| < 7.6e-8, measured over every
     M with every truncation rounding the same way — which can flip the decision only for candidates that
     close to the boundary: about 1.1e-7 of candidates (a total-variation distance below 1.5e-7 per sample
     from exact ratio-of-uniforms). No large intermediate is ever truncated, so no outlier can arise.
  7. Open the accept bits; keep the accepted candidates, draw new ones for the shortfall.
  8. For accepted candidates only: 1/y by 3 Newton steps from 2.9142 − 2y (relative error < 3e-9 plus
     rounding), x·σ = 2cσ·A·(1/y)/2^K, rounded to the output's fixed-point grid.

Why opening the accept bits is safe: candidates are independent; a candidate's accept bit depends on that
candidate only, and conditioned on acceptance its value has the target distribution whatever happened to
the other candidates. So the accept pattern (and hence the number of trials) is independent of the
accepted values. The redraw flags of the truncation protocol depend only on uniformly random openings.

Support and grid: u₁ ≥ 2^-K bounds |x| ≤ 2√(K ln 2) (6.865 for k = 16); the Gaussian mass beyond is
2Φ(−6.86) = 6.9e-12 per coordinate — the sampler is a Gaussian truncated there, on a discrete grid
(x ∈ {2cW/U₁}), rounded to the output's 2^-precision grid. The δ cost of the truncation is that mass per
coordinate (:func:`support_bound`, :func:`truncated_mass`).

Declared cost (:func:`declared_cost`, checked against the counters in tests/test_costs.py): per pass of n
candidates 25 openings carrying 42n elements (each variable of a multiplication is opened once, masks
reused), 21 dealer requests; per call with s samples 16 more openings carrying 17s elements, 10 requests.
An opening is 2 rounds through party 0 for m >= 3 parties, 1 for m = 2. Measured per Gaussian at d = 123,
5 parties: see benchmarks/results/cost-*.md.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import secrets

import numpy as np
import torch

from mpcdp.mpc import ring
from mpcdp.transport import costs
from mpcdp.mpc.context import MpcContext
from mpcdp.mpc.shared import Shared

ACCEPTANCE = math.sqrt(math.pi * math.e) / 4  # 0.7306: area of the acceptance region / bounding box
_C = math.sqrt(2 / math.e)
_F_POWERS = 28  # fractional bits of t, t², ... in the ln polynomial
_F_COEFF = 24  # fractional bits of its coefficients
_F_RECIP = 24  # fractional bits of 1/y
_LN_DEGREE = 10


def support_bound(uniform_bits: int) -> float:
    """Largest |x| the sampler can output (before scaling by σ): 2·√((k+1)·ln 2)."""
    return 2 * math.sqrt((uniform_bits + 1) * math.log(2))


def truncated_mass(uniform_bits: int) -> float:
    """N(0,1) mass outside the support: the per-coordinate δ cost of the truncation."""
    return math.erfc(support_bound(uniform_bits) / math.sqrt(2))


def _lambda_bits(K: int) -> int:
    """Fractional bits of Λ = e·L such that both sides of (*) stay below 2^61.

    e·U₁²·ln(2^K/U₁) <= 2^(2K)/2 (the maximum of e·U²·ln(2^K/U) over U, at U = 2^K/√e), and
    2·W² < 2^(2K−1); so with Λ at 2^f both sides are below 2^(2K−1+f): f = 62 − 2K gives 2^61.
    """
    return 62 - 2 * K


@functools.cache
def _ln_coefficients() -> tuple[int, ...]:
    """Coefficients of e·(−ln(3/4 + t)) on t ∈ [−1/4, 1/4) in the power basis, at 2^_F_COEFF (fitted on the
    first call, not at import: about 0.13 s that every command importing the noise modes paid)."""
    t = np.linspace(-0.25, 0.25, 100_001)
    fit = np.polynomial.chebyshev.Chebyshev.fit(t, -math.e * np.log(0.75 + t), _LN_DEGREE, domain=[-0.25, 0.25])
    power = fit.convert(kind=np.polynomial.Polynomial).coef
    return tuple(int(round(a * 2**_F_COEFF)) for a in power)


@dataclasses.dataclass
class RouStats:
    """What one sampling call did (public: counts only)."""

    samples: int = 0
    candidates: int = 0
    accepted: int = 0  # accept bits that were 1 (some surplus accepted candidates are not used)
    passes: int = 0
    pass_candidates: list[int] = dataclasses.field(default_factory=list)  # candidates drawn in each pass

    @property
    def acceptance_rate(self) -> float:
        return self.accepted / self.candidates if self.candidates else float("nan")


def _party_random_words(ctx: MpcContext, n: int, bits: int, rng: np.random.Generator | None) -> torch.Tensor:
    """This party's contribution (= its XOR share) to n uniform `bits`-bit words."""
    costs.record("random_bits", n * bits)
    if rng is None:
        raw = np.frombuffer(secrets.token_bytes(8 * n), dtype="<i8")
    else:
        raw = rng.integers(-(2**63), 2**63 - 1, size=n, dtype=np.int64)
    return torch.from_numpy(raw.astype(np.int64)) & ((1 << bits) - 1)


def _leading_zero_mask(ctx: MpcContext, u1_word: torch.Tensor, K: int) -> torch.Tensor:
    """XOR shares of Q = 2^z − 1 (z = leading zeros of the K-bit U₁): prefix-OR, NOT, bit reversal."""
    p = u1_word
    shift = 1
    while shift < K:
        ands = ring.ShiftedAnds(ctx, p.numel(), 1, [(0, 0, -shift)], label="rou-prefix-or")
        ands.open({0: p})
        p = p ^ (p >> shift) ^ ands.product(0, 0, -shift)  # p ∨ (p >> shift)
        shift *= 2
    not_p = ring.public_xor(ctx, p, (1 << K) - 1)
    bits = (not_p.unsqueeze(1) >> torch.arange(K)) & 1
    return (bits * (1 << (K - 1 - torch.arange(K)))).sum(1)


def _accept(ctx: MpcContext, n: int, k: int, rng) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Draw n candidates; return (public accept mask, shares of A = W·2^z, shares of M = U₁·2^z)."""
    K = k + 1
    b1 = _party_random_words(ctx, n, k, rng)
    b2 = _party_random_words(ctx, n, k, rng)
    u1_word = ring.public_xor(ctx, b1 << 1, 1)  # U₁ = 2·B₁ + 1, XOR-shared
    q_word = _leading_zero_mask(ctx, u1_word, K)
    bits = ring.b2a_bits(ctx, torch.cat([b1, b2, q_word]), k, label="rou-b2a")
    b1_a, b2_a, q_bits = bits[:n], bits[n:2 * n], bits[2 * n:]
    u1 = ring.public_add(ctx, 2 * ring.bits_to_value(b1_a), 1)
    w = ring.public_add(ctx, 2 * ring.bits_to_value(b2_a), 1 - (1 << k))
    pow2z = ring.public_add(ctx, ring.bits_to_value(q_bits), 1)
    z = q_bits.sum(1)
    first = ring.Products(ctx, n, 3, [(0, 2), (1, 2), (0, 0), (1, 1)], label="rou-mul")  # U₁, W, 2^z
    first.open({0: u1, 1: w, 2: pow2z})
    m, a, u1_sq, w_sq = (first.product(*pair) for pair in [(0, 2), (1, 2), (0, 0), (1, 1)])
    # t = y − 3/4 at _F_POWERS bits, y = M / 2^K (exact: _F_POWERS >= K)
    t = ring.public_add(ctx, m << (_F_POWERS - K), -(3 << (_F_POWERS - 2)))
    powers = _powers(ctx, t, _LN_DEGREE)
    scale = _F_POWERS + _F_COEFF
    coefficients = _ln_coefficients()
    acc = sum((coef * p for coef, p in zip(coefficients[1:], powers)), torch.zeros((), dtype=torch.int64))
    acc = ring.public_add(ctx, acc, coefficients[0] << _F_POWERS)  # e·(−ln y) <= 1.89 at 2^52: |acc| < 2^53
    f_lambda = _lambda_bits(K)
    lam = ring.truncate(ctx, acc, scale - f_lambda, scale + 2, label="rou-trunc")
    lam = lam + z * int(round(math.e * math.log(2) * 2**f_lambda))
    (rhs,) = ring.mul(ctx, [(u1_sq, lam)], label="rou-mul")  # the true value is < 2^61, so exact in the ring
    diff = rhs - (w_sq << (f_lambda + 1))
    accept = ring.ge_zero(ctx, diff, 62, label="rou-accept")
    return accept, a, m


def _powers(ctx: MpcContext, t: torch.Tensor, degree: int) -> list[torch.Tensor]:
    """[t, t², ..., t^degree] at _F_POWERS fractional bits, in ⌈log2 degree⌉ rounds.

    Round r multiplies t^h (h = 2^(r−1), the highest power so far) by every lower power; each power is
    opened once (masked), so the products of a round reuse the masks of earlier rounds.
    """
    plan, have = [], 1
    while have < degree:
        plan.append([(have, j) for j in range(1, have + 1) if have + j <= degree])
        have *= 2
    pairs = [pair for round_pairs in plan for pair in round_pairs]
    products = ring.Products(ctx, t.numel(), degree + 1, pairs, label="rou-mul")  # variable i = t^i
    powers = {1: t}
    opened: set[int] = set()
    for round_pairs in plan:
        needed = {u for pair in round_pairs for u in pair} - opened
        products.open({u: powers[u] for u in sorted(needed)})
        opened |= needed
        raw = torch.stack([products.product(u, v) for u, v in round_pairs])
        truncated = ring.truncate(ctx, raw, _F_POWERS, 2 * _F_POWERS - 2, label="rou-trunc")  # |t^i·t^j| <= 1/16
        for (u, v), value in zip(round_pairs, truncated):
            powers[u + v] = value
    return [powers[i] for i in range(1, degree + 1)]


def _scaled_quotient(ctx: MpcContext, a: torch.Tensor, m: torch.Tensor, k: int, sigma: float,
                     precision_bits: int) -> torch.Tensor:
    """Shares of σ·x = σ·2c·A/M at ``precision_bits`` (accepted candidates only, so |x| <= 6.9)."""
    K = k + 1
    y = m << (_F_RECIP - K)  # y = M/2^K at _F_RECIP bits, in [0.5, 1)
    one = 1 << _F_RECIP
    g = ring.public_add(ctx, -2 * y, int(round(2.9142 * one)))
    # variables: 0 = y (opened once), 1..3 = g_i, 4..6 = h_i = 2 − y·g_i; products y·g_i and g_i·h_i
    newton = ring.Products(ctx, y.numel(), 7, [(0, 1), (1, 4), (0, 2), (2, 5), (0, 3), (3, 6)], label="rou-recip")
    newton.open({0: y})
    for i in range(3):  # Newton: g ← g·(2 − y·g)
        newton.open({1 + i: g})
        yg = ring.truncate(ctx, newton.product(0, 1 + i), _F_RECIP, 2 * _F_RECIP + 3, label="rou-trunc")
        newton.open({4 + i: ring.public_add(ctx, -yg, 2 * one)})
        g = ring.truncate(ctx, newton.product(1 + i, 4 + i), _F_RECIP, 2 * _F_RECIP + 3, label="rou-trunc")
    (prod,) = ring.mul(ctx, [(a, g)], label="rou-quotient")  # A/y at 2^24: |·| <= 4·2^(K+25)
    x_half = ring.truncate(ctx, prod, K + _F_RECIP - 20, K + _F_RECIP + 4, label="rou-trunc")  # x/(2c) at 2^20
    constant, p_c = scale_constant(sigma)
    shift = 20 + p_c - precision_bits  # >= 2 for σ <= 2^12 and precision_bits <= 24
    # truncate() rounds stochastically (floor, +1 with probability the dropped fraction): unbiased as it is
    return ring.truncate(ctx, x_half * constant, shift, 22 + 24 + 2, label="rou-trunc")


def scale_constant(sigma: float) -> tuple[int, int]:
    """(C, p) with C = ⌈2cσ·2^p⌉ in (2^23, 2^24]: the sampled standard deviation is C/(2c·2^p) >= σ."""
    scale = 2 * _C * sigma
    p = 24 - math.ceil(math.log2(scale))
    return math.ceil(scale * 2**p), p


def sampled_sigma(sigma: float) -> float:
    """The standard deviation the sampler really uses for a requested σ (never smaller, relative +< 1.2e-7)."""
    constant, p = scale_constant(sigma)
    return constant / (2 * _C * 2**p)


def declared_cost(candidates: list[int], samples: int, uniform_bits: int = 16) -> costs.DeclaredCost:
    """The declared cost of :func:`sample_rou`: one pass per entry of ``candidates`` (n candidates each),
    then the quotient for ``samples`` accepted ones. Truncation redraws (public, probability
    ≈ 2^(ℓ+1−64) per element) come on top: one more opening and dealer request per redrawn batch.

    Per pass of n candidates (k-bit uniforms): and_words 16n (prefix-OR 5n, comparison 11n), b2a_bits 3kn,
    mul 9n, square 5n, trunc 10n, comparison n, random_bits 2kn; 25 openings, in order — n ×5 (prefix-OR),
    3n (B2A), 3n (first products), then per power round the masks and the truncation: n, n; n, 2n; 2n, 4n;
    n, 2n; then n (Λ), 2n (U₁²·Λ), n (comparison mask), 2n ×6 (prefix circuit), n (accept bits);
    21 dealer requests.
    Per call with s samples: mul 7s, trunc 8s; 16 openings — s ×7 (Newton masks), s ×6 (Newton
    truncations), 2s (A·(1/y)), s, s (scaling truncations); 10 dealer requests.
    """
    k = uniform_bits
    cost = costs.DeclaredCost()
    for n in candidates:
        cost.ops.update({"and_words": 16 * n, "b2a_bits": 3 * k * n, "mul": 9 * n, "square": 5 * n,
                         "trunc": 10 * n, "comparison": n, "random_bits": 2 * k * n})
        cost.open(*[n] * 5, 3 * n, 3 * n, n, n, n, 2 * n, 2 * n, 4 * n, n, 2 * n, n, 2 * n, n, *[2 * n] * 6, n)
        cost.dealer_requests += 21
    s = samples
    cost.ops.update({"mul": 7 * s, "trunc": 8 * s})
    cost.open(*[s] * 13, 2 * s, s, s)
    cost.dealer_requests += 10
    return cost


def sample_rou(ctx: MpcContext, count: int, *, sigma: float = 1.0, uniform_bits: int = 16,
               rng: np.random.Generator | None = None, stats: RouStats | None = None) -> Shared:
    """Shares of ``count`` i.i.d. N(0, σ²) samples (truncated at σ·support_bound), drawn inside the MPC.

    Args:
        ctx: this party's context (provider ``dealer``).
        count: number of samples.
        sigma: the standard deviation (public), 2^-10 <= σ <= 2^12; the sampler uses
            :func:`sampled_sigma` (σ rounded up by less than 1.2e-7 relative).
        uniform_bits: k, the bits of each uniform (16 <= k <= 18).
        rng: a seeded generator for this party's random bits — reproducible, so *insecure*; None (default)
            draws them from the OS CSPRNG.
        stats: filled with the number of candidates and passes.
    """
    if not 16 <= uniform_bits <= 18:
        raise ValueError(f"`uniform_bits` must be in [16, 18]. Found {uniform_bits}.")
    if not (2**-10 <= sigma <= 2**12) or not math.isfinite(sigma):
        raise ValueError(f"`sigma` must be in [2^-10, 2^12]. Found {sigma!r}.")
    if count < 1:
        raise ValueError(f"`count` must be >= 1. Found {count}.")
    stats = stats if stats is not None else RouStats()
    kept_a, kept_m, have = [], [], 0
    while have < count:
        need = count - have
        n = int(need / ACCEPTANCE + 4 * math.sqrt(need) + 8)
        accept, a, m = _accept(ctx, n, uniform_bits, rng)
        stats.candidates += n
        stats.pass_candidates.append(n)
        stats.accepted += int(accept.sum())
        stats.passes += 1
        index = torch.nonzero(accept).reshape(-1)[:need]
        kept_a.append(a[index])
        kept_m.append(m[index])
        have += index.numel()
    stats.samples += count
    a, m = torch.cat(kept_a), torch.cat(kept_m)
    values = _scaled_quotient(ctx, a, m, uniform_bits, sigma, ctx.config.precision_bits)
    return Shared(values, ctx.config.precision_bits)
