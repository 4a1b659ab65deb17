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

import importlib
from types import ModuleType

__all__ = ["EXTRAS", "import_optional", "missing_extra"]

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
