"""What the ``mpcdp`` commands run: protocol files resolved into plans, the generic training path
(:mod:`.train`), comparisons, sweeps and scaling runs over it, papers 003 and 004's jobs, the cost harness,
and the one writer of recorded results (:mod:`.report`).

To extend: a new experiment is a protocol file first; a new kind of run is a job module here with its command in
:mod:`mpcdp.cli`. A new algorithm, model or noise mode needs no job: register it in :mod:`mpcdp.learning`.
"""
