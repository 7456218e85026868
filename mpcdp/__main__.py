"""``python -m mpcdp``: the ``mpcdp`` command."""

from mpcdp.cli import run

run()
