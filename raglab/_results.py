"""One palette and one result base class shared by every table, report and plot raglab shows.

statsmodels renders every result through one base (``ResultsBunch``); raglab's results do the same:
a subclass supplies ``to_dict()`` and ``_title()`` (and, if it has one, ``to_frame()``), and gets a
text ``__repr__`` and an HTML ``_repr_html_`` built the same way everywhere.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "DECISION_COLOURS", "NEUTRAL_COLOUR", "ResultBase", "decision_colour", "jsonable", "p_text",
]

# The gate's decisions in every table and plot (colour-blind-safe green / orange / red).
DECISION_COLOURS = {"pass": "#1a7f37", "review": "#b35900", "block": "#cf222e"}
NEUTRAL_COLOUR = "#444444"


def decision_colour(decision: Any) -> str:
    """The colour of a decision (``"pass"``, ``"review"``, ``"block"``); neutral for anything else.

    Examples
    --------
    >>> decision_colour("block")
    '#cf222e'
    """
    return DECISION_COLOURS.get(str(decision), NEUTRAL_COLOUR)


def p_text(p: float, *, bound: bool = False) -> str:
    """A p-value as raglab prints it: ``0.0123``, or for a p-value at a resampling floor
    (``bound=True``) a bound, rounded up to one significant digit: ``< 0.003`` (``\u2264 0.001`` when
    the floor is that number exactly: 1 / (999 + 1) cannot be told from smaller p-values, but is not
    below itself).

    Examples
    --------
    >>> p_text(0.01234), p_text(1 / 10_001, bound=True), p_text(27 / 10_001, bound=True)
    ('0.0123', '< 0.0001', '< 0.003')
    >>> p_text(1 / 1000, bound=True), p_text(1.0, bound=True)   # a bound is never a bare number
    ('≤ 0.001', '≤ 1')
    """
    if not np.isfinite(p):
        return "n/a"
    if bound and p >= 1:  # a Holm-adjusted bound capped at 1: it bounds nothing, but it is still a bound
        return f"{chr(0x2264)} 1"
    if not bound or not 0 < p < 1:
        return f"{p:.3g}"
    exponent = math.floor(math.log10(p))
    digit = math.ceil(p / 10.0**exponent - 1e-9)
    value = digit * 10.0**exponent
    return f"{'<' if value > p * (1 + 1e-9) else chr(0x2264)} {value:.1g}"


def frame_to_html(frame: pd.DataFrame, *, decision_column: str | None = "decision") -> str:
    """A plain HTML table, numbers to 4 significant digits, decisions in their colours."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    rows = []
    for record in frame.itertuples(index=False):
        cells = []
        for column, value in zip(frame.columns, record):
            if isinstance(value, (float, np.floating)):
                text = "" if not np.isfinite(value) else f"{value:.4g}"
            else:
                text = html.escape(str(value))
            style = ""
            if column == decision_column and str(value) in DECISION_COLOURS:
                style = f' style="color:{DECISION_COLOURS[str(value)]};font-weight:bold"'
            cells.append(f"<td{style}>{text}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def jsonable(value: Any) -> Any:
    """A JSON-ready copy: dict keys as text, numpy scalars as Python, NaN/inf/NA as None.

    Examples
    --------
    >>> jsonable({"n": np.int64(3), "low": float("nan"), 1: [np.float64(0.5)]})
    {'n': 3, 'low': None, '1': [0.5]}
    """
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return [jsonable(v) for v in value.tolist()]
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return None if not math.isfinite(value) else float(value)
    if isinstance(value, str):
        return value
    return str(value)


class ResultBase:
    """Base of raglab's result objects: ``to_dict`` (JSON-ready), ``to_frame``, text and HTML displays.

    Subclasses implement ``to_dict()`` and ``_title()``; ``to_frame()`` defaults to one row of the
    dict's scalar entries. Both displays show the title, then ``_shown()`` (default ``to_frame()``),
    and the HTML display ends with ``_footer_html()``.
    """

    def to_dict(self) -> dict[str, Any]:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def _title(self) -> str:  # pragma: no cover - every subclass defines it
        return type(self).__name__

    def _colour(self) -> str:
        return NEUTRAL_COLOUR

    def to_frame(self) -> pd.DataFrame:
        """The result as a DataFrame (by default one row of its scalar fields)."""
        scalars = {k: v for k, v in self.to_dict().items() if not isinstance(v, (dict, list, tuple))}
        return pd.DataFrame([scalars])

    def _shown(self) -> pd.DataFrame:
        """What both displays show (a subclass may show fewer columns than ``to_frame()`` keeps)."""
        return self.to_frame()

    def _footer_html(self) -> str:
        return ""

    def __repr__(self) -> str:
        with pd.option_context("display.width", 200, "display.max_columns", 30):
            body = self._shown().to_string(index=False, float_format=lambda v: f"{v:.4g}")
        return f"{self._title()}\n{body}"

    def _repr_html_(self) -> str:
        return (
            f'<div><p><b style="color:{self._colour()}">{html.escape(self._title())}</b></p>'
            f"{frame_to_html(self._shown())}{self._footer_html()}</div>"
        )
