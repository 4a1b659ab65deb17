"""The ``raglab`` console script: starts raglab's command line without importing raglab first.

A broken installation (a dependency that fails to import, memory exhausted) must exit 4, never 1:
CI reads 1 as a gate's "block". Importing ``raglab.cli`` inside a ``try`` here is what makes that
possible; the command itself is :func:`raglab.cli.entry`.
"""

from __future__ import annotations

import sys

#: What a broken installation or environment raises at import: anything. A shared library that will not load
#: is an OSError, a memory limit a MemoryError or (inside an extension module's initialisation) a SystemError.
BROKEN_INSTALL = (Exception,)


def cannot_start(exc: BaseException) -> int:
    """Say in one line why raglab cannot start, and return its exit code, 4 (never 1, a gate's "block")."""
    sys.stderr.write(
        f"raglab: cannot start: {type(exc).__name__}: {exc}. The installation or environment is broken "
        "(reinstall raglab, or raise the memory limit); exit 4 is not a gate decision.\n"
    )
    return 4


def main() -> int:
    """Run ``raglab``; exit 4 with one line when raglab or a dependency cannot be imported."""
    try:
        from raglab.cli import entry
    except BROKEN_INSTALL as exc:
        return cannot_start(exc)
    return entry()


if __name__ == "__main__":
    sys.exit(main())
