"""Training: the algorithms as records in one registry (:mod:`.algorithms`), the models behind one interface
(:mod:`.models`: logistic regression, the paper's CNNs), the mechanisms that make noise, one registry (:mod:`.mechanisms`; the training ones' members in :mod:`.noise_modes`), where a
run's sums happen (:mod:`.backends`: every party process through the MPC, or simulated), per-example gradients
and clipping, checkpoints, and papers 003 and 004's algorithms (:mod:`.collab`, :mod:`.decentralized`).

To extend: register an :class:`~mpcdp.learning.algorithms.Algorithm`, a model (:func:`.models.register`) or a
:class:`~mpcdp.learning.mechanisms.Mechanism` in one file; ``mpcdp --plugin MODULE train`` then runs it.
"""
