"""Datasets that ship inside packages (no downloads at run time) and splitting them among parties.

To extend: a loader in its own module, registered by name in :mod:`.registry`.
"""
