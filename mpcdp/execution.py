"""Where a run's sums happen: the one vocabulary of the protocol field ``backend`` (and ``--backend``), for every
job. Each job accepts the subset it implements.

``simulated``  one process holds every party's data and computes what the parties would release (the same
    mechanism, the same grids and noise distributions); protects nothing by itself; for experiments.
``processes``  one OS process per party (or node), exchanging only what the protocol makes public in the clear:
    paper 003's owners sending their noisy responses, paper 004's nodes handing on the noisy model.
    (``plain``, this backend's former name in paper 003's protocols, is still accepted.)
``mpc``  one OS process per data party, the sums computed inside the secure computation; only the noisy sum is
    opened.
"""

from __future__ import annotations

from mpcdp.errors import ConfigError

SIMULATED, PROCESSES, MPC = "simulated", "processes", "mpc"
BACKENDS = (SIMULATED, PROCESSES, MPC)
_FORMER_NAMES = {"plain": PROCESSES}


def backend_for(value, allowed: tuple[str, ...], job: str) -> str:
    """``value`` as a backend ``job`` implements (its former name mapped), or a ConfigError naming the field, the
    value and what the job takes."""
    name = _FORMER_NAMES.get(value, value) if isinstance(value, str) else value
    if name not in allowed:
        raise ConfigError(f"`backend` must be one of {list(allowed)} for {job}. Found {value!r}.")
    return name
