"""Who could learn a run's noise: one sentence per setting, the same in the run's JSON (``noise_known_to``),
``mpcdp noise``'s JSON, the CLI help and the guide's threat model.

The in-MPC sampler (:mod:`mpcdp.noise.secure_gaussian`) draws the noise on the noise committee, parties
0..c−1 with c = min(``noise_committee``, m), and every role's view is independent of the released noise
(``mpcdp audit views`` tests it). What remains is who could pool their views to *compute* the noise:

* ``dealer``: the dealer knows every Beaver mask, so with any one member it can unmask every multiplied value;
  the members together hold every share. With c < m the members 0..c−1 together are a coalition that misses
  the other data parties and still knows the noise, and so learns the exact sum of the others' gradients in a
  release. ``noise_committee = m`` makes every data party a member. Cost: every party then takes part in
  every one of the sampler's openings, so its total bytes grow with m instead of staying flat (the
  committee's point); the default keeps them flat (benchmarks/results/noise-exact.md, 3 to 16 parties).
* ``honest-majority``: parties 0–2 make the material and sample; any two of them hold every mask (two of the
  three replicated shares), with or without others; no single one, with any number of parties 3..m−1.
* ``distributed``: each party adds its own share of the noise, drawn in plaintext: all parties together know
  it; a coalition of at most ``colluders`` parties is what the certificate covers.
* the simulated backend draws the noise in the launching process, in plaintext.
"""

from __future__ import annotations

COMMITTEE = "the noise committee"
EVERY_PARTY = "every data party"
EACH_PARTY = "each data party its own share"
THIS_PROCESS = "this process, in plaintext"
DRAWN_BY = (COMMITTEE, EVERY_PARTY, EACH_PARTY, THIS_PROCESS)
"""Who draws a mechanism's noise (its record's ``drawn_by``, :mod:`mpcdp.learning.mechanisms`): the noise
committee inside the MPC (the in-MPC discrete Gaussian), every data party inside the MPC (the comparison
samplers), each party its own share in plaintext (``distributed``), or the launching process in plaintext."""


def check_drawn_by(drawn_by: str, name: str) -> None:
    """Refuse a mechanism ``name`` whose ``drawn_by`` is not one of :data:`DRAWN_BY`."""
    from mpcdp.errors import ConfigError

    if drawn_by not in DRAWN_BY:
        raise ConfigError(f"mechanism {name!r}: `drawn_by` must be one of {list(DRAWN_BY)}. Found {drawn_by!r}.")


def _parties(members: int) -> str:
    return "parties 0 and 1" if members == 2 else f"parties 0–{members - 1}"


def noise_known_to(*, drawn_by: str | None, provider: str, parties: int, committee: int = 3, colluders: int = 0,
                   backend: str = "mpc") -> str:
    """Who could learn the noise of a run whose noise is drawn by ``drawn_by`` (its mechanism's, one of
    :data:`DRAWN_BY`; None: the run adds no noise) under ``provider``, ``parties`` data parties and a noise
    committee of ``committee`` (the configuration's ``noise_committee``), on ``backend``."""
    if backend == "simulated" or drawn_by == THIS_PROCESS:
        return "this process: the noise is drawn in plaintext"
    if drawn_by is None:
        return "nobody: the run adds no noise"
    if drawn_by == EACH_PARTY:
        return (f"all {parties} data parties together (each adds its own share in plaintext; the certificate "
                f"covers any {colluders} of them)")
    if provider == "honest-majority":
        return ("any two of parties 0–2 together (with or without others); not one of them alone, with any "
                "number of the other parties")
    members = min(committee, parties) if drawn_by == COMMITTEE else parties
    whole = members >= parties
    if whole:
        return "the dealer with any one data party, or every data party together"
    group = _parties(members)
    last = "party" if members == parties - 1 else "parties"
    rest = f"{members}" if members == parties - 1 else f"{members}–{parties - 1}"
    return (f"the dealer with any one of {group} (the noise committee), or {group} together, who then know it "
            f"without {last} {rest} (noise_committee = {parties} makes every data party a member)")
