"""raglab: evaluate retrieval-augmented generation one question at a time.

``import raglab`` registers the ``df.rag`` accessor on pandas DataFrames. The pure functions live
in :mod:`raglab.metrics`, :mod:`raglab.stats`, :mod:`raglab.agreement` and :mod:`raglab.sizing`;
files in :mod:`raglab.io`; frozen eval sets in :mod:`raglab.evalset`.

Examples
--------
>>> import pandas as pd, raglab
>>> rows = pd.DataFrame({"question_id": ["q1", "q2"], "retrieved": [["d1", "d2"], ["d3"]],
...                      "gold": [["d2"], []]})
>>> rows.rag.validate(require=["retrieved", "gold"]).shape
(2, 3)
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from raglab import _optional  # standard library only: safe before the try

# `python -m raglab`: become the console script before importing anything, so that raglab is imported
# once, by its supervised child (returns when it cannot; raglab/__main__.py then runs the command here).
if _optional.started_as_main():
    import sys as _sys

    _optional.exec_console_script(_sys.argv[1:])

try:
    from raglab import accessor as _accessor  # noqa: F401  (registers df.rag)
    from raglab import agreement, io, metrics, sizing, stats
    from raglab._errors import (
        ConventionMismatchWarning,
        EvalSetMismatchError,
        JudgeMismatchWarning,
        MissingColumnError,
        RowTableError,
    )
    from raglab._interval import Interval
    from raglab._options import Resampling
    from raglab._rowtable import Roles, with_roles
    from raglab._version import __version__
    from raglab.evalset import EvalSet, EvalSetTamperedError
    from raglab.io import read_rows, read_trec, write_rows, write_trec
except _optional.BROKEN_INSTALL as _exc:
    import sys as _sys

    if _sys.argv[:1] == ["-m"]:  # `python -m raglab`: a broken install is exit 4, never 1 ("block")
        raise SystemExit(_optional.cannot_start(_exc)) from None
    raise

__all__ = [
    "__version__",
    "agreement",
    "ConventionMismatchWarning",
    "EvalSet",
    "EvalSetMismatchError",
    "EvalSetTamperedError",
    "Interval",
    "JudgeMismatchWarning",
    "MissingColumnError",
    "RowTableError",
    "datasets",
    "io",
    "judge",
    "metrics",
    "plots",
    "read_rows",
    "read_trec",
    "Resampling",
    "Roles",
    "sizing",
    "stats",
    "testing",
    "tripwires",
    "write_rows",
    "widgets",
    "with_roles",
    "write_trec",
]

# Every other public module and subpackage (``raglab.judge``, ``raglab.plots``, ``raglab.chunks``...) loads on
# first use: ``import raglab`` never loads the optional dependencies (openai, matplotlib, ipywidgets...; see
# raglab._optional), and ``raglab.<name>`` works without importing it first.
def _public_modules() -> frozenset[str]:
    return frozenset(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def __getattr__(name: str) -> Any:
    if not name.startswith("_") and name in _public_modules():
        try:
            return importlib.import_module(f"raglab.{name}")
        except ModuleNotFoundError as exc:
            from raglab._optional import missing_extra

            error = missing_extra(exc, purpose=f"raglab.{name}")
            if error is None:
                raise
            raise error from exc
    raise AttributeError(f"module 'raglab' has no attribute {name!r}")


def __dir__() -> list[str]:
    # what a user can reach: the exported names, every public module, and the dunders (no helper imports)
    dunders = {name for name in globals() if name.startswith("__")}
    return sorted(set(__all__) | _public_modules() | dunders)
