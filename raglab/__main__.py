"""``python -m raglab``: the ``raglab`` command line (see :mod:`raglab.cli`).

A failure to import raglab or its dependencies (a broken environment, a memory limit) exits 4 with
one line, never 1, which CI would read as a gate's "block". On POSIX this process becomes the
``raglab`` console script (``raglab_launcher``) as soon as the package starts to load (in
``raglab/__init__.py``, before any other import, so raglab is imported once, by the child): it runs the
command in a child process so that an exit a native library forces (OpenBLAS's ``exit(1)`` under a
memory limit) is 4 as well.
"""

from __future__ import annotations

import sys


def _run() -> int:
    # Importing the package already ran raglab/__init__.py: as `python -m raglab` on POSIX it has become
    # the console script before importing anything else; otherwise it turned a broken install into exit 4.
    # Here when it could not (another platform, exec refused, or run through runpy): try once more, then
    # run the command in this process.
    from raglab._optional import exec_console_script

    exec_console_script(sys.argv[1:])
    from raglab.cli import entry

    return entry()


if __name__ == "__main__":
    sys.exit(_run())
