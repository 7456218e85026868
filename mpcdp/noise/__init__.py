"""Noise for differential privacy as integer rules: the exact discrete Gaussian (:mod:`.discrete_gaussian`) and
its in-MPC sampler (:mod:`.secure_gaussian`), the exact discrete Laplace, the fixed-point grid of a release
(:mod:`.fixed_point`), the samplers the cost harness compares as registry records (:mod:`.modes`: dgauss, rou,
distributed, boxmuller, plaintext), and statistical validation.

To extend: a sampler is a :class:`~mpcdp.noise.modes.Sampler` record; what training may release is decided by
:mod:`mpcdp.learning.noise_modes`, which needs a certificate for it.
"""
