"""``python -m mpcdp.cli``: the ``mpcdp`` command."""

from mpcdp.cli import run

run()
