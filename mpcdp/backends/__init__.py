"""Adapters to MPC engines. Only :mod:`mpcdp.backends.crypten_backend` imports CrypTen."""
