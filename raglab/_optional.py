"""Optional dependencies: imported on first use, or an ImportError that names the extra to install.

raglab's core needs only numpy, pandas, scipy, pyarrow and threadpoolctl. The heavier parts are
extras (``pyproject.toml``): ``judge`` (openai, pydantic, tqdm), ``plots`` (matplotlib, seaborn),
``widgets`` (ipywidgets) and ``notebooks`` (all of them plus Jupyter). Modules that need one import
it through :func:`import_optional` at the point of use, so ``import raglab`` never loads them.

Examples
--------
>>> import_optional("json", extra="judge").__name__
'json'
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from types import ModuleType

__all__ = ["BROKEN_INSTALL", "EXTRAS", "cannot_start", "import_optional", "missing_extra"]

#: What a broken installation or environment raises at import: anything. A shared library that will not load
#: is an OSError, a memory limit a MemoryError or (inside an extension module's initialisation) a SystemError.
#: The console script (``raglab_launcher``, which cannot import raglab before its ``try``) keeps the same
#: tuple and line; tests/test_layering.py checks that they agree.
BROKEN_INSTALL = (Exception,)


def cannot_start_line(exc: BaseException) -> str:
    """The one line that says why raglab cannot start.

    Examples
    --------
    >>> cannot_start_line(MemoryError("no room"))[:43]
    'raglab: cannot start: MemoryError: no room.'
    """
    return (f"raglab: cannot start: {type(exc).__name__}: {exc}. The installation or environment is broken "
            "(reinstall raglab, or raise the memory limit); exit 4 is not a gate decision.")


def started_as_main(orig_argv: list[str] | None = None) -> bool:
    """Is this process ``python -m raglab`` (read from the interpreter's own arguments)?

    Examples
    --------
    >>> started_as_main(["python", "-X", "dev", "-m", "raglab", "size"]), started_as_main(["python", "-m", "raglab.cli"])
    (True, False)
    """
    args = list(getattr(sys, "orig_argv", []) if orig_argv is None else orig_argv)[1:]
    skip = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
        elif arg == "-m":
            return args[i + 1:i + 2] == ["raglab"]
        elif arg.startswith("-m"):
            return arg[2:] == "raglab"
        elif arg in ("-X", "-W"):  # options whose value is the next argument
            skip = True
        elif arg == "-c" or not arg.startswith("-"):
            return False
    return False


def exec_console_script(argv: list[str]) -> None:
    """On POSIX, replace this process with the ``raglab`` console script (``raglab_launcher``) running ``argv``.

    The console script runs the command in a supervised child process (so an exit a native library
    forces is exit 4, see ``raglab_launcher``); ``python -m raglab`` does the same by becoming it. A new
    program, not an import: the package never imports the launcher. Returns when it cannot exec (then the
    command runs in this process).
    """
    if os.name != "posix":
        return
    import subprocess

    code = f"import sys; sys.path[:] = {sys.path!r}; import raglab_launcher; sys.exit(raglab_launcher.main())"
    with contextlib.suppress(OSError):
        os.execv(sys.executable, [sys.executable, *subprocess._args_from_interpreter_flags(), "-c", code, *argv])


def cannot_start(exc: BaseException) -> int:
    """Say on stderr (if there is one) why raglab cannot start, and return its exit code, 4 (never 1, "block")."""
    try:
        sys.stderr.write(cannot_start_line(exc) + "\n")
        sys.stderr.flush()
    except (AttributeError, OSError, ValueError):
        pass
    return 4

EXTRAS: dict[str, str] = {
    "openai": "judge",
    "pydantic": "judge",
    "tqdm": "judge",
    "matplotlib": "plots",
    "seaborn": "plots",
    "ipywidgets": "widgets",
    "nbclient": "notebooks",
    "nbformat": "notebooks",
    "ipykernel": "notebooks",
    "jupyter": "notebooks",
    "dask": "dask",
    "distributed": "dask",
    "pyspark": "spark",
}
"""Top-level module name -> the raglab extra that installs it."""


def missing_extra(
    exc: ModuleNotFoundError, *, extra: str | None = None, purpose: str | None = None
) -> ModuleNotFoundError | None:
    """The error to raise instead of ``exc`` when the missing module comes with a raglab extra.

    Returns None when the missing module is not one of raglab's optional dependencies and no
    ``extra`` is given (re-raise ``exc`` then).

    Examples
    --------
    >>> err = missing_extra(ModuleNotFoundError("No module named 'seaborn'", name="seaborn"), purpose="raglab.plots")
    >>> print(err)
    raglab.plots needs seaborn, which is not installed: pip install 'raglab[plots]'
    >>> missing_extra(ModuleNotFoundError("No module named 'nope'", name="nope")) is None
    True
    """
    root = (exc.name or "").split(".")[0]
    chosen = extra or EXTRAS.get(root)
    if not root or chosen is None:
        return None
    who = purpose or "this part of raglab"
    error = ModuleNotFoundError(f"{who} needs {root}, which is not installed: pip install 'raglab[{chosen}]'",
                                name=exc.name)
    error.__cause__ = exc
    return error


def import_optional(name: str, *, extra: str | None = None, purpose: str | None = None) -> ModuleType:
    """Import ``name`` (e.g. ``"matplotlib.pyplot"``), or raise a ModuleNotFoundError naming the extra.

    Parameters
    ----------
    name : str
        The module to import.
    extra : str, optional
        The raglab extra that installs it (default: looked up in :data:`EXTRAS`).
    purpose : str, optional
        What needs it, for the message (e.g. ``"raglab.plots.forest"``).

    Examples
    --------
    >>> import_optional("no_such_module_x", extra="plots", purpose="raglab.plots.forest")
    Traceback (most recent call last):
    ...
    ModuleNotFoundError: raglab.plots.forest needs no_such_module_x, which is not installed: pip install 'raglab[plots]'
    """
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        # Only when the module itself is absent: a broken dependency of an installed module is shown as is.
        missing_itself = exc.name is not None and exc.name.split(".")[0] == name.split(".")[0]
        error = missing_extra(exc, extra=extra, purpose=purpose) if missing_itself else None
        if error is None:
            raise
        raise error from exc
