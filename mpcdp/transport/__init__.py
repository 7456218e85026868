"""The floor every secure computation stands on: the parties' direct links (:mod:`.mesh`), the record of what a
computation costs (:mod:`.costs`), the kernel's byte counters (:mod:`.wire`), the rendezvous store
(:mod:`.rendezvous`, :mod:`.store`) and agreeing on which party was lost (:mod:`.losses`) or refused its own input (:mod:`mpcdp.refusals`). It imports nothing else of mpcdp but :mod:`mpcdp.errors` and :mod:`mpcdp.refusals`; the CrypTen adapter, the
protocols and the runtime sit on it.

To extend: a new kind of link or counter goes here only if it needs nothing above this package.
"""
