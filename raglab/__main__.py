"""``python -m raglab``: the ``raglab`` command line (see :mod:`raglab.cli`).

A failure to import raglab or its dependencies (a broken environment, a memory limit) exits 4 with
one line, never 1, which CI would read as a gate's "block".
"""

from __future__ import annotations

import sys


def _run() -> int:
    # Importing the package already ran raglab/__init__.py, which turns a broken install into exit 4
    # when started as `python -m raglab`; the console script does the same in raglab_launcher.
    from raglab.cli import entry

    return entry()


if __name__ == "__main__":
    sys.exit(_run())
