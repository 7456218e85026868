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

IN_MPC_MODES = ("dgauss", "rou")


def _parties(members: int) -> str:
    return "parties 0 and 1" if members == 2 else f"parties 0–{members - 1}"


def noise_known_to(*, mode: str, provider: str, parties: int, committee: int = 3, colluders: int = 0,
                   backend: str = "mpc") -> str:
    """Who could learn the noise of a run with noise ``mode`` under ``provider``, ``parties`` data parties and
    a noise committee of ``committee`` (the configuration's ``noise_committee``), on ``backend``."""
    if backend == "simulated" or mode == "plaintext":
        return "this process: the noise is drawn in plaintext"
    if mode == "none":
        return "nobody: the run adds no noise"
    if mode == "distributed":
        return (f"all {parties} data parties together (each adds its own share in plaintext; the certificate "
                f"covers any {colluders} of them)")
    if provider == "honest-majority":
        return ("any two of parties 0–2 together (with or without others); not one of them alone, with any "
                "number of the other parties")
    members = min(committee, parties) if mode == "dgauss" else parties
    whole = members >= parties
    if whole:
        return "the dealer with any one data party, or every data party together"
    group = _parties(members)
    last = "party" if members == parties - 1 else "parties"
    rest = f"{members}" if members == parties - 1 else f"{members}–{parties - 1}"
    return (f"the dealer with any one of {group} (the noise committee), or {group} together, who then know it "
            f"without {last} {rest} (noise_committee = {parties} makes every data party a member)")
