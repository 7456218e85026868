"""``python -m mpcdp``: the ``mpcdp`` command."""

import sys

from mpcdp.cli import main

sys.exit(main())
