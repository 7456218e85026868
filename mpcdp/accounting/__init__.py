"""Privacy accounting: dp-accounting events for every mechanism mpcdp releases, the certifying accountant
(:mod:`.certify`), the released mechanism on its grid and its certificate (:mod:`.grid`, :mod:`.released`;
distributed noise in :mod:`.distributed_noise`, the discrete Laplace in :mod:`.laplace`), a tight PLD accountant for
fixed-size batches without replacement (:mod:`.wor_pld`, with its floor and discretisation bracket in
:mod:`.wor_bounds`; not yet the printed certificate), each paper's own
calibration and bound (paper 002: :mod:`.dpsrm`, :mod:`.paper`; paper 000: :mod:`.distributed`; paper 004:
:mod:`.decentralized`). Pure computation: nothing here touches the parties.

To extend: a new mechanism's certificate goes in its own module here, returning a
:class:`~mpcdp.accounting.certify.Certificate` whose ``pieces`` name the mechanism and accountant versions.
"""
