"""The dealer's view, recorded for the view audit (``mpcdp audit views``, :mod:`mpcdp.jobs.views`) only.

While recording, the dealer keeps one entry per request it serves: the request's name and arguments (their
sizes are what it can count) and the draws that bear on the noise, which the serving code notes as it draws
them: every rotation pair's word R (XORed with the committee's coin into a Bernoulli factor's uniform word),
and under the view audit's planted leak the factor tables' own words W. A run that does not record keeps
nothing: the notes are no-ops.
"""

from __future__ import annotations

import torch

RECORDED: list | None = None  # the entries, while recording (None: not recording)
_PENDING: dict[str, torch.Tensor] = {}


def start() -> None:
    """Start recording in this process (the dealer of ``mpcdp audit views``)."""
    global RECORDED
    RECORDED = []


def note_draw(**draws: torch.Tensor) -> None:
    """Serving a request: keep these draws for the view, when recording."""
    if RECORDED is not None:
        _PENDING.update({k: v.clone() for k, v in draws.items()})


def note_request(function: str, args: list) -> None:
    """A request served: record it (name, arguments, the draws noted while serving), when recording."""
    if RECORDED is not None:
        RECORDED.append((function, list(args), dict(_PENDING)))
    _PENDING.clear()
