"""``python -m raglab``: the ``raglab`` command line (see :mod:`raglab.cli`)."""

from __future__ import annotations

import sys

from raglab.cli import main

if __name__ == "__main__":
    sys.exit(main())
