"""Authenticated arithmetic (SPDZ2k-style MACs) for security with abort: ``[mpc] security = "malicious"``.

Security model (issue 48): any set of data parties may deviate arbitrarily; the dealer is honest and colludes
with nobody. The run then either opens what honest parties would have opened, or every honest party stops with
:class:`~mpcdp.errors.ProtocolViolation` before any opened value is used or output (security with abort). Not
fairness: a cheater can always make the run abort. Not input validity here: a deviating party may input any value
of the ring (its input is whatever it commits to) unless its contribution is checked against its bound
(:mod:`mpcdp.mpc.bounded`, on the inputs of :func:`input_vectors`).

The ring (Cramer, Damgård, Escudero, Scholl, Xing, "SPDZ2k", CRYPTO 2018). Values live in Z_2^k, k = 64 (mpcdp's
ring); shares and MACs in Z_2^(k+s), s = 64, as two int64 limbs (:mod:`mpcdp.adapter.limbs`). The MAC key α is
the sum of the parties' 64-bit shares α_i, dealt by the dealer (:mod:`mpcdp.adapter.mac_material`), and an
authenticated value [[x]] is every party's (x_i, m_i) with Σ x_i ≡ x (mod 2^k) and Σ m_i ≡ α·Σ x_i
(mod 2^(k+s)). The low limb of a Z_2^(k+s) sharing is a Z_2^64 sharing of the same value. Linear operations are
local; adding a public c: party 0 adds c to its value share and every party adds α_i·c to its MAC share.

* Input (:func:`input_vectors`): the dealer deals every party o an authenticated mask [[r_o]] whose r_o only o
  knows among the parties (the dealer drew it and never sees d_o); o sends d_o = x_o − r_o mod 2^k to every
  party (uniform: r_o is), and all set [[x_o]] = [[r_o]] + d_o.
  A deviating o may send any d_o: that is its input (input substitution, as in any MPC). Each contribution is
  then authenticated on its own, as a check on each party's input (its clipping bound, :mod:`mpcdp.mpc.bounded`)
  needs.
* Bits (:func:`mpcdp.mpc.auth_inputs.input_bits`, the witness of :mod:`mpcdp.mpc.bounded`): the dealer deals o an authenticated
  [[r_o]] whose r_o is a bit only o knows among the parties (and the dealer, which never sees d); o sends the
  bit d = β ⊕ r_o (packed 64 to a word) and all set [[β]] = d + (1 − 2d)·[[r_o]], a bit by construction
  whatever o sends.
* A sum's inputs (:func:`input_sum`, what the secure sum and the release use): the parties open only
  D = Σ_o d_o, over the run's opening plan, and set [[Σ_o x_o]] = Σ_o [[r_o]] + D. Whoever combines the d_o
  sees uniform words, so whatever a deviating party adds to D (as a contributor or a combiner) is independent of
  the honest inputs: an input substitution again. A combiner that sends different parties different D fails
  the view comparison of the next check.
* Opening (:func:`open_values`): with a dealt [[r]] nobody knows, every party's share of x + 2^k·r in full
  (k + s bits: 2^k·r masks the upper bits, which could otherwise leak) is summed over the run's opening plan
  (:func:`opened_checked`: both limbs, with the carry; direct, star or
  reduce-scatter, as a semi-honest opening; a combiner that alters a sum is caught by the check, one that
  sends different parties different sums by the view comparison). The opened value goes
  into this party's pending list and its digest of everything public since the last check; the caller gets it
  only from :func:`reveal_checked`, after the check.
* The batched MAC check (:func:`mac_check`), before ANY opened value is used or output: (1) a coin every party
  committed to before any part was opened (:mod:`mpcdp.mpc.coin`; committed ahead, in the previous check's σ
  message, :class:`~mpcdp.mpc.coin.Ahead`, so before any value it checks was opened), drawn after the values
  are fixed, gives
  χ_j ∈ Z_2^s for the n values y_j opened since the last check; (2) every party commits (SHA-256 with a 256-bit
  nonce) to σ_i = Σ_j χ_j·m_ij − α_i·Σ_j χ_j·y_j (mod 2^(k+s)) and sends the commitment with the SHA-256 of its
  view (every d_o and opened value it received since the last check); a view that differs from this party's is
  a failure (some party sent different values to different parties); (3) every party opens σ_i with its nonce;
  a σ_i that does not match its commitment names its sender; Σ σ_i ≢ 0 (mod 2^(k+s)) is a failure. A failure
  raises :class:`~mpcdp.errors.MacCheckFailed`, and nothing opened since the last check is returned: the party
  stops with one line, "the MAC check of opening 'LABEL' failed: a party deviated from the protocol (why);
  nothing was released (security = 'malicious')", naming a party only for a σ that does not match its
  commitment (:mod:`mpcdp.transport.losses`; the dealer's line says which parties found the failure). Not
  unanimous: a party that sends different commitments or σ shares to different parties can make some honest
  parties stop while the others' checks pass (what those release is then correct: each check is sound alone).

* Products (:func:`multiply`): a dealt authenticated Beaver triple; ε = x − a and δ = y − b opened in full
  (uniform: a, b are uniform in Z_2^(k+s) and nobody knows them), joining the pending check. Squares
  (:func:`square`): a dealt pair [[a]], [[a²]], only ε opened. Linear combinations
  with public coefficients and constants (:meth:`AuthShared.mul_public`, :func:`add_constant`, :func:`linear`)
  are local.

Soundness (SPDZ2k's lemma for the batched check): an adversary that adds errors δ_j to opened values (δ_j ≢ 0
mod 2^k for some j) and any errors to its σ share, chosen after seeing χ, passes with probability at most
2^(−s+log2(s+1)) over α and the χ_j (s = 64: 2^-57.9), plus SHA-256's binding of the commitments.
``tests/test_authenticated.py`` measures the best single cheat at s = 4 and s = 8 in plaintext simulation
against that bound.

Cost per party, m parties, n elements, with F = 2(m−1)/m·8n the semi-honest opening's floor: a sum's inputs, one
opening of n words (F; 1 round for 2 parties, 2 for more; individual inputs, :func:`input_vectors`, (m−1)·8n in one
round; bits, :func:`~mpcdp.mpc.auth_inputs.input_bits`, (m−1)·8⌈n/64⌉); the opening, one of 2n words (2F: both limbs); the check,
independent of n: the coin's opening (64 bytes to each other party; its 32-byte commitment rides in the previous
check's σ message, or, in a run's first check, takes a round of its own), commitment and view digest (64 bytes), σ,
its nonce and the next coin's commitment (80 bytes): three rounds (four for the first check). The star plan
(openings of at most 64 KiB relayed) sends the first party (m−1)·8 per word, the others 8. From the dealer to party
0: 32·m bytes per input element or input bit (masks) and 32 per opened element (the 2^k·r masks); the key, once,
nothing. A product: one opening of 2n elements of Z_2^(k+s) (4n words), 96 bytes per product from the dealer to
party 0; a square half of that (n elements, 64 bytes). Measured: ``benchmarks/results/malicious-sum.md``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import weakref

import torch

from mpcdp.adapter.limbs import Ring, Wide
from mpcdp.adapter.mac_material import RING, AuthMasks, AuthRandoms, AuthSquares, AuthTriples, MacKey
from mpcdp.errors import MacCheckFailed
from mpcdp.mpc import coin, dealt_ahead
from mpcdp.mpc.context import MpcContext
from mpcdp.mpc.plants import planting
from mpcdp.randomness import secure_key

S_BITS = 64
"""s: the statistical security parameter of the MACs (bits), as dealt."""

_DOMAIN = b"mpcdp/mac-check/1"
_UNMASKED_INPUTS: set[int] = set()  # the view audit's planted leaks in force in this process (never in a run)


@dataclasses.dataclass(frozen=True)
class AuthShared:
    """This party's share of authenticated values: value and MAC shares in Z_2^(k+s) (fixed point with
    ``precision_bits`` fractional bits). Only :func:`open_values` and :func:`reveal_checked` open it."""

    value: Wide
    mac: Wide
    precision_bits: int

    def _same(self, other: AuthShared) -> None:
        if other.precision_bits != self.precision_bits or other.value.shape != self.value.shape:
            raise ValueError("cannot combine authenticated values of different shapes or precisions")

    def __add__(self, other: AuthShared) -> AuthShared:
        self._same(other)
        return AuthShared(RING.add(self.value, other.value), RING.add(self.mac, other.mac), self.precision_bits)

    def __sub__(self, other: AuthShared) -> AuthShared:
        self._same(other)
        return AuthShared(RING.sub(self.value, other.value), RING.sub(self.mac, other.mac), self.precision_bits)

    def mul_public(self, words: torch.Tensor, *, precision_bits: int = 0) -> AuthShared:
        """[[c·x]] for public int64 words ``c`` (broadcast against x; read as unsigned, so a negative c is
        2^64 + c: right mod 2^k, the value's ring, and MAC-consistent in Z_2^(k+s)); local, no communication.
        ``precision_bits``: c's own fractional bits, added to x's."""
        words, shape = words.to(torch.int64), self.value.shape
        if torch.broadcast_shapes(words.shape, shape) != shape:
            raise ValueError(f"public words of shape {tuple(words.shape)} do not broadcast against {tuple(shape)}")
        both = RING.scale(words, Wide.pair(self.value, self.mac))  # value and MAC shares in one scaling
        return AuthShared(both[0], both[1], self.precision_bits + precision_bits)

    def sum_last(self) -> AuthShared:
        """[[Σ x]] along the last dimension; local."""
        return sum_last_pair(Wide.pair(self.value, self.mac), self.precision_bits)

    def __getitem__(self, index) -> AuthShared:
        return AuthShared(self.value[index], self.mac[index], self.precision_bits)

    def __repr__(self) -> str:
        return f"AuthShared(shape={tuple(self.value.shape)}, precision_bits={self.precision_bits})"


def sum_last_pair(both: Wide, precision_bits: int) -> AuthShared:
    """[[Σ x]] along the last dimension for value and MAC shares given as one pair (:meth:`Wide.pair`); local."""
    summed = RING.sum0(Wide(both.lo.movedim(-1, 0), both.hi.movedim(-1, 0)))
    return AuthShared(summed[0], summed[1], precision_bits)


def concat(parts: list[AuthShared]) -> AuthShared:
    """[[x_1 ‖ x_2 ‖ ...]]: the parts flattened and joined (one precision, the first's); local."""
    values, macs = [p.value.reshape(-1) for p in parts], [p.mac.reshape(-1) for p in parts]
    return AuthShared(Wide(torch.cat([w.lo for w in values]), torch.cat([w.hi for w in values])),
                      Wide(torch.cat([w.lo for w in macs]), torch.cat([w.hi for w in macs])),
                      parts[0].precision_bits)


class _Session:
    """This party's MAC key share, the values opened since the last check and the digest of its view."""

    def __init__(self, alpha: torch.Tensor):
        self.alpha = alpha
        self.pending: list[tuple[Wide, Wide]] = []  # (opened values, their MAC shares)
        self.view = hashlib.sha256(_DOMAIN)
        self.checks = 0  # MAC checks passed
        self.ahead: coin.Ahead | None = None  # the next check's coin, committed ahead

    def note_public(self, label: str, words: torch.Tensor) -> None:
        self.view.update(label.encode() + b"\0" + words.contiguous().numpy().astype("<i8").tobytes())


_SESSIONS: weakref.WeakKeyDictionary[MpcContext, _Session] = weakref.WeakKeyDictionary()


def _session(ctx: MpcContext) -> _Session:
    """This run's MAC state; the first call fetches this party's key share from the dealer (all parties
    together)."""
    if ctx.config.security != "malicious":
        raise RuntimeError("authenticated arithmetic runs under `security` 'malicious' only")
    if ctx not in _SESSIONS:
        _SESSIONS[ctx] = _Session(MacKey.fetch())
    return _SESSIONS[ctx]


def add_public(ring: Ring, alpha: torch.Tensor, rank: int, value: Wide, mac: Wide, public: torch.Tensor):
    """(value, MAC) shares of [[x]] + c for public Z_2^k words ``public`` (party ``rank``'s, key share ``alpha``)."""
    c = ring.lift(public)
    return (ring.add(value, c) if rank == 0 else value), ring.add(mac, ring.scale(alpha, c))


def add_public_wide(ring: Ring, alpha: torch.Tensor, rank: int, value: Wide, mac: Wide, public: Wide):
    """(value, MAC) shares of [[x]] + c for a public Z_2^(k+s) element ``c``."""
    return (ring.add(value, public) if rank == 0 else value), ring.add(mac, ring.scale(alpha, public))


def add_constant(ctx: MpcContext, x: AuthShared, words: torch.Tensor) -> AuthShared:
    """[[x + c]] for public int64 words ``c`` (Z_2^k, at x's precision, broadcast against x); local."""
    state = _session(ctx)
    value, mac = add_public(RING, state.alpha, ctx.rank, x.value, x.mac,
                            words.to(torch.int64).expand(x.value.shape))
    return AuthShared(value, mac, x.precision_bits)


def linear(ctx: MpcContext, terms: list[tuple[int, AuthShared]], constant: int = 0) -> AuthShared:
    """[[Σ c_t·x_t + constant]] for public Python ints c_t (mod 2^k) and one shape and precision; local."""
    total: AuthShared | None = None
    for coefficient, x in terms:
        scaled = x.mul_public(torch.tensor(_signed_word(coefficient), dtype=torch.int64))
        total = scaled if total is None else total + scaled
    if total is None:
        raise ValueError("`terms` is empty")
    return add_constant(ctx, total, torch.tensor(_signed_word(constant), dtype=torch.int64)) if constant else total


def _signed_word(value: int) -> int:
    value %= 1 << 64
    return value - (1 << 64) if value >= 1 << 63 else value


def input_vectors(ctx: MpcContext, encoded: torch.Tensor, *, precision: int, label: str) -> list[AuthShared]:
    """Every party inputs its own int64 vector ``encoded`` (same length everywhere): each party's as an
    authenticated value, in rank order. One round: (m−1)·8n bytes per party."""
    state = _session(ctx)
    flat = encoded.reshape(-1).to(torch.int64)
    own, masks = dealt_ahead.fetch(ctx, AuthMasks.fetch, flat.numel())
    sent = ctx.members_exchange(flat - own.lo, label=f"{label} (masked inputs)", kind="masked",
                                reason="x − r for a dealt mask r only the input's owner knows: uniform")
    out = []
    for owner in range(ctx.parties):
        state.note_public(f"input {owner}", sent[owner])
        value, mac = add_public(RING, state.alpha, ctx.rank, *masks[owner], sent[owner])
        out.append(AuthShared(value, mac, precision))
    return out


def _stacked(pairs: list[tuple[Wide, Wide]]) -> tuple[Wide, Wide]:
    """Every owner's (value, MAC) shares of one length as the rows of two matrices."""
    return Wide.stack([v for v, _ in pairs]), Wide.stack([m for _, m in pairs])


def opened_checked(ctx: MpcContext, words: torch.Tensor, *, label: str, reason: str, kind: str,
                   wide: bool = False) -> torch.Tensor:
    """``words`` of every party summed by the run's opening plan (:meth:`~mpcdp.transport.mesh.Mesh.open_shares`;
    ``wide``: rows (low word, high word) summed in Z_2^128), through the context's choke point, under
    ``security = "malicious"`` too: for this module only, whose MAC check and view comparison come before any
    use of what is opened."""
    return ctx._open(words, label=label, reason=reason, xor=False, kind=kind, checked=True, wide=wide)


def _open_wide(ctx: MpcContext, value: Wide, mac: Wide, *, label: str, reason: str, kind: str) -> Wide:
    """Open the Z_2^(k+s) elements ``value`` (flat) in full to every party: pending until :func:`mac_check`."""
    state = _session(ctx)
    rows = opened_checked(ctx, torch.stack([value.lo, value.hi], dim=1), label=label, kind=kind,
                          reason=reason, wide=True)
    opened = RING.reduce(rows[:, 0].clone(), rows[:, 1].clone())
    state.pending.append((opened, mac))
    state.note_public(f"open {label}", torch.cat([opened.lo, opened.hi]))
    return opened


def open_values(ctx: MpcContext, x: AuthShared, *, label: str, reason: str, kind: str = "release") -> torch.Tensor:
    """Open ``x`` + 2^k·r in full (k + s bits; r dealt, authenticated, known to nobody) to every party and return
    its low k bits (int64 words, the value): pending until :func:`mac_check` passes."""
    value, mac = x.value.reshape(-1), x.mac.reshape(-1)
    r_value, r_mac = dealt_ahead.fetch(ctx, AuthRandoms.fetch, value.lo.numel())
    masked, masked_mac = RING.add(value, RING.shift_up(r_value)), RING.add(mac, RING.shift_up(r_mac))
    return _open_wide(ctx, masked, masked_mac, label=label, reason=reason, kind=kind).lo


def multiply(ctx: MpcContext, x: AuthShared, y: AuthShared, *, label: str) -> AuthShared:
    """[[x·y]] (elementwise, one shape; precision x's + y's, no truncation) by a dealt authenticated Beaver triple
    ([[a]], [[b]], [[c = a·b]], :class:`~mpcdp.adapter.mac_material.AuthTriples`).

    The parties open ε = x − a and δ = y − b in full, all k + s bits, as SPDZ2k prescribes: a and b are uniform
    in Z_2^(k+s) and known to no party, so ε and δ are uniform whatever x and y are, upper bits included (no
    2^k·r mask is needed, unlike :func:`open_values`, whose x may carry secret upper bits). Then
    z = c + ε·[[b]] + δ·[[a]] + ε·δ (the public term added as :func:`add_public` does) equals x·y exactly mod
    2^(k+s), so its low k bits are x·y mod 2^k, and z's MAC shares, a linear function of [[a]], [[b]], [[c]]
    with public coefficients, are MAC-consistent. ε and δ join the pending list and the view digest: a party
    that alters its ε or δ share (which would shift z by a multiple of b or a) fails the next
    :func:`mac_check`, which comes before anything computed from z is opened to anyone. Cost: one opening of 2n
    elements of Z_2^(k+s) (4n words, 2·F with F the semi-honest opening floor of 2n words; 1 round for 2
    parties, 2 for more), 96 bytes per product from the dealer to party 0, about 60 int64 operations per
    product locally."""
    x._same(y)
    state = _session(ctx)
    shape = x.value.shape
    xv, xm, yv, ym = x.value.reshape(-1), x.mac.reshape(-1), y.value.reshape(-1), y.mac.reshape(-1)
    n = xv.lo.numel()
    (a, a_mac), (b, b_mac), (c, c_mac) = AuthTriples.fetch(n)
    eps, eps_mac = RING.sub(xv, a), RING.sub(xm, a_mac)
    delta, delta_mac = RING.sub(yv, b), RING.sub(ym, b_mac)
    opened = _open_wide(ctx, Wide(torch.cat([eps.lo, delta.lo]), torch.cat([eps.hi, delta.hi])),
                        Wide(torch.cat([eps_mac.lo, delta_mac.lo]), torch.cat([eps_mac.hi, delta_mac.hi])),
                        label=f"{label} (ε, δ)", kind="masked",
                        reason="x − a and y − b for a dealt authenticated triple nobody knows: uniform")
    e, d = opened[:n], opened[n:]
    value = RING.add(c, RING.add(RING.mul(e, b), RING.mul(d, a)))
    mac = RING.add(c_mac, RING.add(RING.mul(e, b_mac), RING.mul(d, a_mac)))
    value, mac = add_public_wide(RING, state.alpha, ctx.rank, value, mac, RING.mul(e, d))
    return AuthShared(value.reshape(*shape), mac.reshape(*shape), x.precision_bits + y.precision_bits)


def square(ctx: MpcContext, x: AuthShared, *, label: str) -> AuthShared:
    """[[x²]] (elementwise; precision twice x's, no truncation) by a dealt authenticated square pair ([[a]], [[a²]],
    :class:`~mpcdp.adapter.mac_material.AuthSquares`): ε = x − a opened in full (uniform, as in :func:`multiply`),
    then x² = a² + 2ε·[[a]] + ε², exact mod 2^(k+s) and MAC-consistent; ε joins the pending check. Cost: half
    of :func:`multiply`'s — one opening of n elements of Z_2^(k+s) (2n words), 64 bytes per square from the
    dealer."""
    state = _session(ctx)
    shape = x.value.shape
    xv, xm = x.value.reshape(-1), x.mac.reshape(-1)
    (a, a_mac), (c, c_mac) = AuthSquares.fetch(xv.lo.numel())
    e = _open_wide(ctx, RING.sub(xv, a), RING.sub(xm, a_mac), label=f"{label} (ε)", kind="masked",
                   reason="x − a for a dealt authenticated square pair nobody knows: uniform")
    twice = RING.add(e, e)
    value, mac = RING.add(c, RING.mul(twice, a)), RING.add(c_mac, RING.mul(twice, a_mac))
    value, mac = add_public_wide(RING, state.alpha, ctx.rank, value, mac, RING.mul(e, e))
    return AuthShared(value.reshape(*shape), mac.reshape(*shape), 2 * x.precision_bits)


def sigma_terms(ring: Ring, alpha: torch.Tensor, chi: torch.Tensor, opened: Wide, macs: Wide) -> Wide:
    """This party's χ_j·m_j − α_i·χ_j·y_j for every opened value y_j (elementwise; pure, simulated in the tests):
    summed over the values and the parties it is 0 mod 2^(k+s) when nothing was altered."""
    return ring.sub(ring.scale(chi, macs), ring.scale(alpha, ring.scale(chi, opened)))


def sigma_total(ring: Ring, alpha: torch.Tensor, chi: torch.Tensor, opened: Wide, macs: Wide) -> int:
    """Σ_j of :func:`sigma_terms`, this party's σ_i in [0, 2^(k+s)): Σ_j χ_j·m_j − α_i·Σ_j χ_j·y_j, both sums formed
    first (one scaling of the values and MACs together) and α_i applied once, to the sum."""
    scaled = ring.scale(chi, Wide(torch.stack([macs.lo, opened.lo]), torch.stack([macs.hi, opened.hi])))
    return (ring.total(scaled[0]) - (int(alpha) % (1 << 64)) * ring.total(scaled[1])) % ring.modulus


def _commitment(label: str, rank: int, sigma_words: torch.Tensor, nonce: bytes) -> torch.Tensor:
    digest = hashlib.sha256(_DOMAIN + b"/commitment")
    for item in (label.encode(), rank.to_bytes(4, "big"), sigma_words.numpy().astype("<i8").tobytes(), nonce):
        digest.update(len(item).to_bytes(4, "big") + item)
    return _words(digest.digest())


def _words(raw: bytes) -> torch.Tensor:
    return torch.frombuffer(bytearray(raw), dtype=torch.int64).clone()


def _fail(label: str, why: str, party: int | None = None) -> MacCheckFailed:
    return MacCheckFailed(label, why, party=party)


def mac_check(ctx: MpcContext, *, label: str) -> None:
    """Check every value opened since the last check (module docstring); raise :class:`ProtocolViolation` on a
    failure, on every honest party. Three rounds, independent of how many values are checked (four for a run's
    first check, whose coin is committed in a round of its own): the coin's opening, the commitments, σ — whose
    message also carries every party's commitment to its part of the next check's coin
    (:class:`~mpcdp.mpc.coin.Ahead`), so that coin is bound long before the values it checks are opened and
    only its opening remains."""
    state = _session(ctx)
    if not state.pending:
        return
    opened = Wide(torch.cat([y.lo for y, _ in state.pending]), torch.cat([y.hi for y, _ in state.pending]))
    macs = Wide(torch.cat([m.lo for _, m in state.pending]), torch.cat([m.hi for _, m in state.pending]))
    state.pending.clear()
    digest, state.view = _words(state.view.digest()), hashlib.sha256(_DOMAIN)
    chi = _check_coin(ctx, state, label).words(opened.lo.numel())
    mine = RING.from_int(sigma_total(RING, state.alpha, chi, opened, macs))
    mine_words, nonce = torch.stack([mine.lo, mine.hi]), secure_key()
    bound = ctx.members_exchange(torch.cat([_commitment(label, ctx.rank, mine_words, nonce), digest]),
                                 label=f"{label}: MAC-check commitments", kind="public",
                                 reason="commitments to the σ shares and digests of every party's view")
    if any(not torch.equal(words[4:], digest) for words in bound.values()):
        raise _fail(label, "parties received different opened or input values")
    state.checks += 1
    ahead = coin.Ahead(ctx.rank, label=f"MAC check {state.checks + 1}: coin", domain=_DOMAIN)
    parts = ctx.members_exchange(torch.cat([mine_words, _words(nonce), ahead.words()]), label=f"{label}: MAC-check σ",
                                 kind="masked", reason="σ shares, uniform words that sum to 0, and commitments "
                                                       "to the next check's coin parts (hashes of fresh randomness)")
    total = 0
    for j, words in parts.items():
        if not torch.equal(_commitment(label, j, words[:2], words[2:6].numpy().astype("<i8").tobytes()), bound[j][:4]):
            raise _fail(label, "its σ share does not match its commitment", party=j)
        total += RING.to_ints(Wide(words[:1], words[1:2]))[0]
    if total % RING.modulus != 0:
        raise _fail(label, "a share or an opened value was altered")
    ahead.keep({j: words[6:] for j, words in parts.items()})
    state.ahead = ahead


def _check_coin(ctx: MpcContext, state: _Session, label: str):
    """The MAC check's coin: committed ahead in the previous check's σ round and opened now, or, for the first
    check, committed and opened now (:mod:`mpcdp.mpc.coin`). Either way drawn after the values are fixed."""
    if state.ahead is None:
        return ctx.common_stream(label=f"{label}: MAC-check coin", domain=_DOMAIN)
    ahead, state.ahead = state.ahead, None
    return coin.open_ahead(ctx, ahead)


def reveal_checked(ctx: MpcContext, x: AuthShared, *, label: str, reason: str) -> torch.Tensor:
    """Open ``x`` to every party and MAC-check it (with everything opened before it) before returning it
    (float64 at its precision)."""
    opened = open_values(ctx, x, label=label, reason=reason)
    mac_check(ctx, label=label)
    return opened.to(torch.float64) / (1 << x.precision_bits)


def input_sum(ctx: MpcContext, encoded: torch.Tensor, *, precision: int, label: str) -> AuthShared:
    """[[Σ_o x_o]] for every party's int64 vector ``encoded`` (same shape everywhere), authenticated as a sum: every
    party o masks its x_o with its dealt r_o, the parties open D = Σ_o (x_o − r_o) over the run's opening plan (≈
    2(m−1)/m·8n bytes per party from 3 parties; one round for 2, two for more), and set [[Σ x]] = Σ_o [[r_o]] + D. Each
    x_o − r_o is uniform (among the parties only o knows r_o), so whoever combines them learns nothing, and anything a
    deviating party adds to D, as a contribution or as a combiner, is independent of the honest inputs: an input
    substitution. D is in every party's view digest, so a combiner that sends different parties different D fails the
    next check. The contributions are not authenticated one by one: :func:`input_vectors` does that, for checks on each
    party's input, at (m−1)·8n bytes."""
    state = _session(ctx)
    flat = encoded.reshape(-1).to(torch.int64)
    own, masks = dealt_ahead.fetch(ctx, AuthMasks.fetch, flat.numel())
    ctx.note_draw(f"own input mask: {label}", own.lo)  # r_o, for the view audit (a no-op in a run)
    sent = flat if ctx.rank in _UNMASKED_INPUTS else flat - own.lo
    opened = opened_checked(ctx, sent, label=f"{label} (masked inputs)", kind="masked",
                            reason="Σ_o (x_o − r_o) for dealt masks r_o only each input's owner knows: uniform")
    state.note_public("masked inputs", opened)
    kept = [pair for owner, pair in enumerate(masks) if owner not in _UNMASKED_INPUTS]
    value, mac = kept[0]
    for other_value, other_mac in kept[1:]:
        value, mac = RING.add(value, other_value), RING.add(mac, other_mac)
    value, mac = add_public(RING, state.alpha, ctx.rank, value, mac, opened)
    return AuthShared(value.reshape(*encoded.shape), mac.reshape(*encoded.shape), precision)


def planted_unmasked_input(party: int):
    """Within the block, in this process, :func:`input_sum` leaves out ``party``'s dealt mask: that party sends
    its x in the clear and every party leaves [[r_party]] out of the sum (so the sum, and its MACs, are
    unchanged). **A planted leak**: whoever combines the masked inputs (the opening plan's first member, or a
    chunk's) then receives that party's input. Only the view audit (``mpcdp audit views --security malicious
    --plant-leak release``, :mod:`mpcdp.jobs.auth_release_views`) uses it, on every party at once, to show
    that it detects such a contribution; a run never does."""
    return planting(_UNMASKED_INPUTS, party)


def mac_key_share(ctx: MpcContext) -> torch.Tensor:
    """This party's share α_i of the MAC key (for local operations that add a public value)."""
    return _session(ctx).alpha


def note_public(ctx: MpcContext, label: str, words: torch.Tensor) -> None:
    """Add public ``words`` this party computed (e.g. a committed coin) to its view digest: a party that made
    different parties see different words fails the next :func:`mac_check`'s view comparison."""
    _session(ctx).note_public(label, words.reshape(-1).to(torch.int64))
