"""raglab's exceptions and warnings, at the bottom floor so that any module can raise them.

Exceptions carry structured fields besides their message: ``column``, ``rows`` and ``method`` on
:class:`RowTableError`, ``row`` and ``what`` on :class:`BadCellError`, so callers never parse text.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "BadCellError",
    "ConventionMismatchWarning",
    "EvalSetMismatchError",
    "JudgeMismatchWarning",
    "MissingColumnError",
    "RowTableError",
]


class RowTableError(ValueError):
    """A row table does not have the shape or cell types a raglab method needs.

    The message names the method, the column, the first offending rows and the fix; the same
    facts are fields: ``column``, ``rows`` (positions) and ``method``, each None when not known.
    """

    def __init__(
        self, message: str = "", *, column: str | None = None, rows: Sequence[int] | None = None, method: str | None = None
    ) -> None:
        super().__init__(message)
        self.column = column
        self.rows = None if rows is None else [int(r) for r in rows]
        self.method = method


class MissingColumnError(RowTableError, KeyError):
    """A column a method needs is absent (also a ``KeyError``, which is what pandas users catch)."""

    def __str__(self) -> str:  # KeyError would print the message quoted
        return str(self.args[0]) if self.args else ""


class EvalSetMismatchError(RowTableError):
    """Two runs were scored against different versions (or edits) of an eval set."""


class JudgeMismatchWarning(UserWarning):
    """Two runs were scored by judges with different fingerprints (model, prompts, temperature, ...)."""


class ConventionMismatchWarning(UserWarning):
    """Two runs record different metric conventions (k, nDCG gain, span rule, ...)."""


class BadCellError(TypeError):
    """A cell holds something the metrics cannot use; ``what`` names the input, ``row`` its position."""

    def __init__(self, message: str, row: int, *, what: str | None = None) -> None:
        super().__init__(message)
        self.row = row
        self.what = what  # every raise site names its input ("retrieved", "gold", "gold_spans", ...)
