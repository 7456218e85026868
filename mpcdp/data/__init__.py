"""Datasets that ship inside packages (no downloads at run time) and splitting them among parties."""
