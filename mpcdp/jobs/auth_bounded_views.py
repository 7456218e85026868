"""The malicious view audit's bounded releases: each role's whole view of the norm check a training release runs
under ``security = "malicious"`` (``mpcdp audit views --security malicious --bound``), tested against the
contributors' inputs and the noise.

Under ``security = "malicious"`` a training release has a clipping ``bound`` (:func:`mpcdp.mpc.release.noisy_release`
from :func:`mpcdp.learning.backends.mpc_party`): :mod:`mpcdp.mpc.bounded` authenticates every party's contribution
g (its ``dim`` coordinates and its validation flag) one by one, with its witness β (the L bits of each g_j + B and
the L_s bits of the slack S − ‖g‖²) input as authenticated bits in the same round
(:func:`mpcdp.mpc.auth_inputs.input_words_and_bits`: contributor o sends x_o − r_o and d = β ⊕ r_o to every other
party, r_o with its square and its bit masks dealt to o alone, :class:`mpcdp.adapter.square_masks.AuthMaskSquares`
and :class:`mpcdp.adapter.mac_material.AuthBitMasks`; the squares [[g²]] local, nothing opened for them); then the
check terms (0 for an honest contributor; their upper words masked by 2^64·r) opened together with the release
and its flags, as :mod:`mpcdp.jobs.auth_release_views` describes, under its one MAC check. The audit's
bound is :func:`~mpcdp.jobs.auth_release_views.audit_bound`, the largest norm of its inputs, so every honest input
passes. Each process records, for every release, beyond the unbounded form's view (its noise share, the release
opening's shares it receives and σ shares):

* a data party: its own input mask and bit masks r_o, its witness β, every other party's x_j − r_j and bits d
  (every party receives them: an exchange, not a sum), the opened check words (both words, in the release's
  opening), the shares of that opening it receives (party 0, the star's first member: every other party's) and
  the check's σ shares (the release's);
* the dealer: every request (name and size: the masks with their squares, the bit masks and the opening's 2^64·r
  masks, checks included) and the bit masks r_o it deals (:class:`~mpcdp.adapter.mac_material.AuthBitMasks`
  notes them while serving).

The statistics, each ``release: …`` and each the correlation summed over the coordinates (bits read as ±1, a bit
vector of a coordinate as its offset integer, centred; words as w / 2^63), two-sided, by the permutation test of
:mod:`mpcdp.jobs.views`, in the role's Bonferroni with power against
:data:`mpcdp.jobs.release_views.POWER_CORRELATION` per coordinate:

``party J's witness bits vs its witness`` / ``vs its input``: the d received from J against β_J and x_J;
``the bound checks' opened words for party J vs its input`` (the upper words: the low ones are 0, which the tie
    checks below require);
``party J's share of the bound checks vs its input`` (received shares, low word);
``party J's MAC-check σ vs its input``: σ_J (the release's check, which covers the bound checks) against Σ_c x_J,c;
``dealer's bit masks for party J vs its witness`` / ``vs its input`` (the dealer); ``dealer request sizes vs the
    inputs' norms``: its requests' total size against Σ_J ‖x_J‖².

Ties to the run (:func:`check_bounded`): every d a party received from J, XORed with J's r_J, is J's witness of its
input (under the planted leak, d is β itself); the dealer's bit masks are the owners'; every opened check's low word
is 0. ``plant`` ``"witness"`` (:data:`~mpcdp.jobs.auth_release_views.WITNESS`): party 1 sends β without r_1 and
every party sets [[β_1]] = d (:func:`mpcdp.mpc.auth_inputs.planted_unmasked_bits`; the checks still pass), so
parties 0 and 2 receive its witness, which gives its input away. Cost per release: the bounded release's
(:mod:`mpcdp.mpc.bounded`) instead of :func:`~mpcdp.mpc.authenticated.input_sum`'s inputs.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from mpcdp.errors import ConfigError
from mpcdp.jobs.release_views import RELEASE_BITS, signed
from mpcdp.mpc.context import MpcContext

RELEASE_LABEL = "view-audit release"  # :data:`mpcdp.jobs.auth_release_views.RELEASE_LABEL`
INPUTS = f"{RELEASE_LABEL} (bounded inputs)"


# -- the parties' side ---------------------------------------------------------------------------------------

def _bits(words: torch.Tensor, width: int) -> np.ndarray:
    return ((words.reshape(-1, 1) >> torch.arange(64)) & 1).reshape(-1)[:width].numpy().astype(np.int64)


def _received(draws: dict, label: str) -> dict[int, tuple[int, np.ndarray]]:
    return {j: (offset, share.numpy().copy()) for j, (offset, share) in draws[f"received: {label}"].items()}


def bounded_view(ctx: MpcContext, first_opening: int, first_draw: int, x: np.ndarray, norm: float) -> dict[str, Any]:
    """What this party recorded of one bounded release (module docstring), its input ``x`` and the bound ``norm``."""
    from mpcdp.mpc.bounded import unit_bound, witness

    dim, m = x.size, ctx.parties
    unit = unit_bound(norm, dim, RELEASE_BITS)
    draws = dict(ctx.draws[first_draw:])
    opened = {o.label: o.values for o in ctx.openings[first_opening:] if o.values is not None}
    others = [j for j in range(m) if j != ctx.rank]
    sent = opened[f"{INPUTS} (masked inputs)"]  # one row per other party: its n masked words, then its bits d
    rows = _received(draws, RELEASE_LABEL)
    sigmas = opened[f"{RELEASE_LABEL}: MAC-check σ"]
    return {"mask": draws[f"own input mask: {INPUTS}"].numpy()[:dim].copy(),
            "bit_mask": draws[f"own bit masks: {INPUTS}"].numpy().astype(np.int64),
            "beta": witness(torch.from_numpy(x), unit).numpy(),
            "masked": {j: (0, sent[i][:dim].numpy().copy()) for i, j in enumerate(others)},
            "witness": {j: _bits(sent[i][dim + 1:], unit.witness_words) for i, j in enumerate(others)},
            "rows": {j: (offset, share[:dim - offset]) for j, (offset, share) in rows.items() if offset < dim},
            "sigma": {j: int(sigmas[i][0]) for i, j in enumerate(others)},
            "checks": opened[RELEASE_LABEL].numpy()[dim + m:].reshape(m, dim + 1, 2).copy(),
            "check_rows": _received(draws, RELEASE_LABEL), "checks_at": dim + m,
            "coordinate_bits": unit.coordinate_bits}


# -- the statistics -----------------------------------------------------------------------------------------

def _signs(bits: np.ndarray) -> np.ndarray:
    return 2.0 * bits - 1.0


def _offsets(bits: np.ndarray, dim: int, width: int) -> np.ndarray:
    """(releases, W) witness bits -> (releases, dim) coordinate offsets Σ_i 2^i·b_i, centred on their range."""
    coordinate = bits[:, :dim * width].reshape(bits.shape[0], dim, width)
    return (coordinate * (1 << np.arange(width))).sum(-1) - ((1 << width) - 1) / 2


def _inputs(by_rank: list[list[dict]], j: int) -> np.ndarray:
    return np.stack([v["x"] for v in by_rank[j]]).astype(float)


def _block(received: tuple[int, np.ndarray], j: int, dim: int, stride: int, base: int) -> np.ndarray | None:
    """The low words of contributor ``j``'s ``dim`` coordinates in a received share of an opening laid out
    contributor by contributor ``stride`` apart from row ``base``; None where this share does not hold them whole."""
    offset, share = received
    start = base + j * stride - offset
    return share[start:start + dim, 0] if start >= 0 and start + dim <= share.shape[0] else None


def party_tests(views: list[dict], noise: np.ndarray, by_rank: list[list[dict]],
                sigma: float) -> list[tuple[str, np.ndarray, int]]:
    """(name, score matrix, coordinates) of the bounded release's statistics of one data party (module docstring)."""
    dim, width = noise.shape[1], views[0]["coordinate_bits"]
    tests: list[tuple[str, np.ndarray, int]] = []
    for j in sorted(views[0]["witness"]):
        d = np.stack([v["witness"][j] for v in views])
        beta, x = np.stack([v["beta"] for v in by_rank[j]]), _inputs(by_rank, j)
        tests += [(f"release: party {j}'s witness bits vs its witness", _signs(d) @ _signs(beta).T, d.shape[1]),
                  (f"release: party {j}'s witness bits vs its input", _offsets(d, dim, width) @ x.T, dim),
                  (f"release: the bound checks' opened words for party {j} vs its input",
                   signed(np.stack([v["checks"][j, :dim, 1] for v in views])) @ x.T, dim),
                  (f"release: party {j}'s MAC-check σ vs its input",
                   np.outer(signed(np.array([v["sigma"][j] for v in views])), x.sum(1) / math.sqrt(dim)), 1)]
    for j in sorted(views[0]["check_rows"]):
        found = [_block(v["check_rows"][j], j, dim, dim + 1, v["checks_at"]) for v in views]
        blocks = [b for b in found if b is not None]
        if len(blocks) == len(found):
            tests.append((f"release: party {j}'s share of the bound checks vs its input",
                          signed(np.stack(blocks)) @ _inputs(by_rank, j).T, dim))
    return tests


def dealt_bit_masks(windows: list[list], parties: int) -> np.ndarray:
    """(releases, m, W): the bit masks the dealer dealt in each release's window of its recorded requests."""
    found = [[d["bit_masks"].numpy() for _, _, d in w if "bit_masks" in d] for w in windows]
    if any(len(f) != 1 or f[0].shape[0] != parties for f in found):
        raise ConfigError("the dealer did not record one set of bit masks per bounded release: the record is misaligned")
    return np.stack([f[0] for f in found]).astype(np.int64)


def dealer_tests(windows: list[list], by_rank: list[list[dict]], noise: np.ndarray) -> list[tuple[str, np.ndarray, int]]:
    """The dealer's bounded-release statistics: the bit masks it dealt, and its request sizes against the inputs'
    norms. ``windows``: its recorded requests, per release."""
    dim, width = noise.shape[1], by_rank[0][0]["coordinate_bits"]
    dealt = dealt_bit_masks(windows, len(by_rank))
    size = np.array([sum(int(n) for _, args, _ in w for n in args if isinstance(n, int)) for w in windows], float)
    norms = sum((_inputs(by_rank, j) ** 2).sum(1) for j in range(len(by_rank)))
    tests = [("release: dealer request sizes vs the inputs' norms", np.outer(size - size.mean(), norms - norms.mean()),
              1)]
    for j in range(len(by_rank)):
        beta, x = np.stack([v["beta"] for v in by_rank[j]]), _inputs(by_rank, j)
        tests += [(f"release: dealer's bit masks for party {j} vs its witness",
                   _signs(dealt[:, j]) @ _signs(beta).T, beta.shape[1]),
                  (f"release: dealer's bit masks for party {j} vs its input", _offsets(dealt[:, j], dim, width) @ x.T,
                   dim)]
    return tests


def check_bounded(views_by_rank: list[list[dict]], windows: list[list], planted: int | None) -> None:
    """The bounded views are the run's: every d received from J is β_J ⊕ r_J (β_J itself for the ``planted``
    party), the dealer's bit masks are the owners', and every opened check's low word is 0."""
    dealt = dealt_bit_masks(windows, len(views_by_rank))
    for j, views in enumerate(views_by_rank):
        if not np.array_equal(dealt[:, j], np.stack([v["bit_mask"] for v in views])):
            raise ConfigError(f"the dealer's bit masks for party {j} are not its own: the record is misaligned")
        for r, others in enumerate(views_by_rank):
            for i, v in enumerate(others):
                if r == j:
                    continue
                expected = views[i]["beta"] if j == planted else views[i]["beta"] ^ views[i]["bit_mask"]
                if not np.array_equal(v["witness"][j], expected):
                    raise ConfigError(f"party {r} received bits from party {j} that are not its witness masked by "
                                      "its bit masks: the record is misaligned")
        if any(np.any(v["checks"][..., 0] != 0) for v in views):
            raise ConfigError("a bound check opened a nonzero in a clean run: the record is misaligned")
