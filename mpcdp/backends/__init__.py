"""Adapters to MPC engines. Only :mod:`mpcdp.backends.crypten_backend` (in its ``compat`` module) imports CrypTen."""
