"""Training: the algorithms as records in one registry (:mod:`.algorithms`), the models behind one interface
(:mod:`.models`: logistic regression, the paper's CNNs), the mechanisms that make noise, one registry (:mod:`.mechanisms`; the training ones' members in :mod:`.noise_modes`), where a
run's sums happen (:mod:`.backends`: every party process through the MPC, or simulated), per-example gradients
and clipping, checkpoints, and papers 003 and 004's algorithms (:mod:`.collab`, :mod:`.decentralized`).

How to extend (each one file and one registration, loaded with ``mpcdp --plugin MODULE``, which every party
process imports too; each registry checks a record against its written interface, a ``typing.Protocol``, when it
is registered, and a refusal names the missing member):

* an algorithm: an :class:`~mpcdp.learning.algorithms.Algorithm` record whose ``runner`` has the interface of
  :class:`~mpcdp.learning.algorithms.Runner`, :func:`.algorithms.register` (tests/toy_algorithm.py,
  ``momentum-gd``);
* a model: an object with every member of :class:`~mpcdp.learning.models.Model`, :func:`.models.register` (or
  any ``nn.Module`` through :func:`~mpcdp.learning.modules.from_module`);
* a mechanism (a way to make noise): an object with every member of
  :class:`~mpcdp.learning.mechanisms.Mechanism` — usually a :class:`~mpcdp.learning.mechanisms.MechanismRecord`
  — and :func:`.mechanisms.register`; its ``id`` stamps every certificate and report of a run that uses it. A
  training mechanism states its plan, residual, calibration and certificate (tests/toy_algorithm.py,
  ``every-party``); a comparison-only sampler needs only ``draw`` and ``training=False`` (tests/toy_sampler.py).
  The steps are in :mod:`.mechanisms`. ``mpcdp train``, ``mpcdp noise`` and ``mpcdp cost`` then take its name.

Every new record states, in its docstring, its security model and its declared cost, as the shipped ones do. A
new correlated-randomness provider is added the same way, in :mod:`mpcdp.providers`.
"""
