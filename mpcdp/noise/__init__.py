"""Noise for differential privacy as integer rules: the exact discrete Gaussian (:mod:`.discrete_gaussian`) and
its in-MPC sampler (:mod:`.secure_gaussian`), the exact discrete Laplace, the fixed-point grid of a release
(:mod:`.fixed_point`), the comparison samplers (:mod:`.modes`: rou, boxmuller, plaintext) and the block every
draw returns, and statistical validation.

To extend: every way of making noise is one record of :data:`mpcdp.learning.mechanisms.MECHANISMS` (training
mechanisms with their certificate, comparison samplers flagged not certified for training).
"""
