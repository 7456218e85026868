"""A noisy sum released in one round: Σ_j x_j + u opened, with u a secret-shared noise vector.

The per-step path of DDP-SRM (paper 002, Algorithm 2: the parties' local gradient terms are summed and
noised inside the MPC and only v_p leaves) and of every other algorithm that releases a noisy aggregate each
step. :func:`~mpcdp.mpc.secure_sum.secure_sum` followed by :meth:`~mpcdp.mpc.context.MpcContext.reveal`
gives the same value in two rounds (a validation handshake, then the opening); here the validation rides
along in the opening.

Security model: semi-honest data parties, private authenticated links; the noise is a sharing no party
knows (e.g. sampled inside the MPC, :mod:`mpcdp.noise`). Party j sends enc(x_j) + pairwise zero-sum mask +
its noise share, so the opening reveals Σ_j x_j + u and nothing else — never a party's x_j, never the
noiseless sum. A party whose input is bad (NaN/Inf, out of range, wrong shape) contributes zeros and a
flag; the flags travel as one more element of the same opening. If any flag is set, every party discards
the released vector (it carries the full noise, so it is as private as any release) and raises the same
:class:`~mpcdp.errors.InputError` naming the party and the field, after one more exchange of the problem
texts on this error path only.

The grid. With noise, the sum is formed on the noise's grid: each party rounds its term to the nearest
multiple of 2^-p, p = the noise's ``precision_bits`` (:mod:`mpcdp.accounting.grid` picks p per release kind
and accounts for this rounding in the integer sensitivity Δ_int). So the opening is exactly
Σ_j round(2^p·x_j) + N in grid units, the mechanism the accountant certifies. Without noise (tests comparing
backends exactly), the run's precision.

Declared cost: 1 round, one opening of d + 1 ring elements (see secure_sum for the bytes); no dealer
material. Under ``security = "malicious"`` (noise None, or authenticated noise from :mod:`mpcdp.noise.auth_gaussian`;
any other noise is refused) the parties' terms are authenticated as a sum on input, the noise added, and the
opening is MAC-checked before it is returned (:mod:`mpcdp.mpc.authenticated`:
one more opening for the masked inputs, the opening of both limbs, the check's three rounds (its coin committed
ahead, in the previous check's σ message; four, with the coin's commitment, in a run's first check),
authenticated masks from the dealer). There the validation flags do not share one slot: each party's flag is its
own authenticated input (one more round, (m − 1)·8 bytes per party; with a ``bound``, the unchecked last word of
its bound-checked contribution, no extra round) and the m flags are opened beside the release (d + m elements)
under the same MAC check, so a party cannot cancel another's set flag by inputting −1; a set flag whose party
names no problem names that party. Error: at most m·2^-(p+1) per element from encoding, plus the noise's own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from mpcdp.mpc import authenticated
from mpcdp.errors import InputError, ProtocolViolation
from mpcdp.transport import costs
from mpcdp.mpc.context import MpcContext
from mpcdp.mpc.secure_sum import local_problem
from mpcdp.mpc.shared import Shared, share_of


def declared_cost(d: int) -> costs.DeclaredCost:
    """1 opening of d + 1 elements (the validation flag rides along); no operations, no dealer."""
    cost = costs.DeclaredCost()
    cost.open(d + 1)
    return cost


def noisy_release(ctx: MpcContext, local: torch.Tensor, noise: Shared | authenticated.AuthShared | None, *,
                  shape: tuple[int, ...], label: str, field: str = "local", bound: float | None = None,
                  ahead: int = 1) -> torch.Tensor:
    """Open Σ_j local_j + noise (float64) in one round; ``shape`` is the public shape every party agreed on.
    ``bound``: under ``security = "malicious"``, every party's ``local`` is checked inside the MPC against this L2
    norm (:mod:`mpcdp.mpc.bounded`, on the release grid; the checks opened with the release under its one MAC check,
    decided before the release is used or output); semi-honest parties clip
    their own terms, so it is not used there. ``ahead``: the releases of this shape still to come, this one
    included (public, the same on every party): under ``security = "malicious"`` the dealt masks of that many
    releases are asked for at once (:func:`mpcdp.mpc.dealt_ahead.ahead`: one dealer request per kind, not one per
    release and kind); 1 asks for this release's only.

    Raises:
        InputError: some party's ``local`` is empty, non-finite, out of range or not of ``shape`` (raised on
            every party, naming the first such party whose flag is set).
        ProtocolViolation: a validation flag is set but its party names no problem (a party deviated), on every
            party: under ``security = "malicious"`` naming that party (its flag is its own authenticated input),
            semi-honest naming nobody (the flags are summed).
    """
    from mpcdp.mpc import authenticated

    shape = tuple(shape)
    if noise is not None and tuple(_shape(noise)) != shape:
        raise ValueError(f"noise shape {tuple(_shape(noise))} differs from the public shape {shape}")
    bits = ctx.config.precision_bits if noise is None else noise.precision_bits
    problem = local_problem(local, 1.0, field)
    if problem is None and tuple(local.shape) != shape:
        problem = f"`{field}` has shape {tuple(local.shape)}; every party agreed on {shape}"
    if problem is None and local.abs().max().item() > ctx.max_abs_at(bits):
        problem = (f"`{field}` has entries beyond the fixed-point limit |value| <= {ctx.max_abs_at(bits):.4g} "
                   f"of the release grid 2^-{bits}")
    values = torch.zeros(shape, dtype=torch.float64) if problem is not None else local.to(torch.float64)
    flagged = torch.cat([values.reshape(-1), torch.tensor([float(problem is not None)], dtype=torch.float64)])
    encoded = ctx.encode(flagged, field=field, precision=bits)
    if ctx.config.security == "malicious":
        from mpcdp.mpc import dealt_ahead

        with dealt_ahead.ahead(ctx, ahead):
            opened, flags = _checked_release(ctx, encoded, noise, bits, label, bound)
    else:
        if isinstance(noise, authenticated.AuthShared):
            raise TypeError("authenticated noise is released under `security` 'malicious' only")
        shared = ctx.masked_input(encoded, precision=bits)
        if noise is not None:
            padded = torch.cat([share_of(noise).reshape(-1), torch.zeros(1, dtype=torch.int64)])
            shared = shared + Shared(padded, bits)
        both = ctx.reveal(shared, label=label, reason="noisy aggregate release")
        opened, flags = both[:-1], both[-1:]
    if bool(flags.ne(0).any()):
        _stop(ctx, problem, flags, label)
    return opened.reshape(shape)


def _stop(ctx: MpcContext, problem: str | None, flags: torch.Tensor, label: str) -> None:
    """Raise the error of a release whose validation flags are set (nothing is returned from it): the first
    party whose flag is set and that names its problem (one exchange of the problem texts, on this error path
    only). ``flags``: every party's own flag (``security = "malicious"``), or their sum (one element)."""
    everyone = ctx.exchange_public(problem, label="input problems (error path)")
    own_flags = flags.numel() == len(everyone) and ctx.config.security == "malicious"
    set_by = [r for r, f in enumerate(flags.tolist()) if f != 0] if own_flags else list(range(len(everyone)))
    rank = next((r for r in set_by if everyone[r] is not None), None)
    if rank is not None:
        raise InputError(f"party {rank}: {everyone[rank]}", party=rank)
    if own_flags:  # an authenticated flag is its party's own input: setting it with no problem named is a deviation
        raise ProtocolViolation(f"release {label!r}: party {set_by[0]}'s validation flag is set but it names no "
                                "problem: it deviated from the protocol; nothing was released", party=set_by[0])
    raise ProtocolViolation(f"release {label!r}: the parties' validation flags are set but no party names "
                            "a problem: a party deviated from the protocol; nothing was released")


def _shape(noise: Shared | authenticated.AuthShared) -> tuple[int, ...]:
    from mpcdp.mpc import authenticated

    return tuple(noise.value.shape) if isinstance(noise, authenticated.AuthShared) else tuple(noise.shape)


def _checked_release(ctx: MpcContext, encoded: torch.Tensor, noise: Shared | authenticated.AuthShared | None,
                     bits: int, label: str, bound: float | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Under ``security = "malicious"``: (the release, every party's validation flag), opened together and
    MAC-checked before they are returned (:mod:`mpcdp.mpc.authenticated`). ``encoded``: this party's term and,
    last, its flag. The terms are summed, authenticated as a sum on input (or, with ``bound``, one by one, with
    every contributor's bound checks: :func:`mpcdp.mpc.bounded.bound_terms`), plus the authenticated noise
    (:mod:`mpcdp.noise.auth_gaussian`). Each flag is its party's own authenticated input (with ``bound``, the
    unchecked last coordinate of its contribution; without, one word of :func:`~.authenticated.input_vectors`)
    and is opened on its own: no other party can add to it, so none can cancel a set flag. Noise that is not
    authenticated (a semi-honest sampler's :class:`Shared`) is refused.

    Timing, with ``bound``: the release, the flags and the bound checks are opened together, then ONE MAC check
    covers them all (and the inputs' view digest); only then is anything decided: the bound checks first
    (:class:`~mpcdp.mpc.bounded.OutOfBound` naming the contributor), then the flags; the release is returned
    only if both pass. Every party sees the opened release before the bound verdict, as before a flag's: it
    carries the full noise and every honest term (each within its bound), and what a contributor outside its
    bound put in is its own (known to it), so it shows a deviating party nothing that an honest run's release
    would not; an honest party discards it and stops. No value opened before the check depends on an unchecked
    opening (the squares come from dealt masks, not from an opened ε). One MAC check per release instead of two
    (the checks opened and checked before the release, until this change): 6 rounds, not 13."""
    from mpcdp.mpc import authenticated
    from mpcdp.mpc.bounded import bound_terms, refuse_outside, unit_bound

    if isinstance(noise, Shared):
        ctx.config.refuse_uncovered("a release with in-MPC noise that is not authenticated")
    flat = encoded.reshape(-1)
    d = flat.numel() - 1
    checks: list[authenticated.AuthShared] = []
    if bound is None:
        total = authenticated.input_sum(ctx, flat[:d], precision=bits, label=label)
        flags = authenticated.input_vectors(ctx, flat[d:], precision=bits, label=f"{label} (validation flags)")
    else:
        contributions, terms = bound_terms(ctx, flat, unit_bound(bound, d, bits), precision=bits, label=label)
        total = contributions[0][:d]
        for other in contributions[1:]:
            total = total + other[:d]
        flags, checks = [c[d:] for c in contributions], [terms]
    if isinstance(noise, authenticated.AuthShared):
        total = total + authenticated.AuthShared(noise.value.reshape(-1), noise.mac.reshape(-1), bits)
    opened = authenticated.open_values(ctx, authenticated.concat([total, *flags, *checks]), label=label,
                                       reason="aggregate release, every party's validation flag and (bounded) "
                                              "every contributor's bound checks, MAC-checked")
    authenticated.mac_check(ctx, label=label)
    if checks:
        refuse_outside(opened[d + len(flags):], len(flags), label)
    values = opened[:d + len(flags)].to(torch.float64) / (1 << bits)
    return values[:d], values[d:]
