"""``python -m raglab``: the ``raglab`` command line (see :mod:`raglab.cli`).

A failure to import raglab or its dependencies (a broken environment, a memory limit) exits 4 with
one line, never 1, which CI would read as a gate's "block".
"""

from __future__ import annotations

import sys


def _run() -> int:
    try:
        from raglab.cli import entry
    except (ImportError, MemoryError, SyntaxError) as exc:
        sys.stderr.write(
            f"raglab: cannot start: {type(exc).__name__}: {exc}. The installation or environment is broken "
            "(reinstall raglab, or raise the memory limit); exit 4 is not a gate decision.\n"
        )
        return 4
    return entry()


if __name__ == "__main__":
    sys.exit(_run())
