"""``python -m raglab``: the ``raglab`` command line (see :mod:`raglab.cli`).

A failure to import raglab or its dependencies (a broken environment, a memory limit) exits 4 with
one line, never 1, which CI would read as a gate's "block". On POSIX this process then becomes the
``raglab`` console script (``raglab_launcher``), which runs the command in a child process so that an
exit a native library forces (OpenBLAS's ``exit(1)`` under a memory limit) is 4 as well; the memory
of the imports made so far is given back by the exec.
"""

from __future__ import annotations

import contextlib
import os
import sys


def _run() -> int:
    # Importing the package already ran raglab/__init__.py, which turns a broken install into exit 4
    # when started as `python -m raglab`; the console script does the same in raglab_launcher. On POSIX
    # this process becomes that script (a new program, not an import: the package never imports it).
    if os.name == "posix":
        import subprocess

        code = f"import sys; sys.path[:] = {sys.path!r}; import raglab_launcher; sys.exit(raglab_launcher.main())"
        with contextlib.suppress(OSError):  # when it cannot exec, the command runs here instead
            os.execv(sys.executable, [sys.executable, *subprocess._args_from_interpreter_flags(), "-c", code,
                                      *sys.argv[1:]])
    from raglab.cli import entry

    return entry()


if __name__ == "__main__":
    sys.exit(_run())
