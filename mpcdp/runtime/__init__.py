"""Starting parties: one harness for local processes (:mod:`.harness`), one entry point per party process
(:mod:`.party`, on this host or a separate one), the shared status board and the endpoint from the environment.

To extend: a new way to start parties calls :func:`~mpcdp.runtime.party.run_party` in each process.
"""
