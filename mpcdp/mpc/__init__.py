"""Secret-shared values (:class:`~mpcdp.mpc.shared.Shared`, which refuses plaintext use) and the protocols
mpcdp runs on them, each a function of a per-party context (:mod:`.context`, the one choke point for every
opening): pairwise masks, secure sum, the noisy release, exact ring and binary protocols, multiplication.
Built on :mod:`mpcdp.adapter` (dealer material) and :mod:`mpcdp.transport` (links, costs).

To extend: a protocol is a function of ``ctx``; it opens values only through the context, records its dealer
material through :mod:`mpcdp.adapter.material`, and declares its cost in its docstring (tested in
tests/test_costs.py).
"""
