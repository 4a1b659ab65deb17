"""ipywidgets explorers for the row table: look at the questions behind a number.

A mean hides which questions moved; these widgets show them one at a time, worst first, with the
retrieved ids (gold marked), the context, the answer, and the judge's claims and verdicts.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from raglab._optional import import_optional
from raglab._rowtable import is_missing, missing_column_error, resolve_column

__all__ = ["explore", "render_row"]

_ALL = "(all)"
_ROW_ORDER = "(row order)"
_TEXT_LIMIT = 600


def _esc(value: Any) -> str:
    return html.escape(str(value))


def _short(text: str, limit: int = _TEXT_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _gold_ids(gold: Any) -> set[str]:
    if is_missing(gold):
        return set()
    if isinstance(gold, dict):
        return {str(k) for k, v in gold.items() if isinstance(v, (int, float)) and v > 0}
    return {str(g) for g in gold}


def _score_columns(df: pd.DataFrame, exclude: Sequence[str]) -> list[str]:
    return [c for c in df.columns if c not in exclude and pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])]


def render_row(row: pd.Series, *, columns: dict[str, str | None], scores: Sequence[str] = ()) -> str:
    """HTML for one row of a row table: question, answer, retrieved ids with gold marked, claims.

    ``columns`` maps roles (question_id, question, answer, retrieved, gold, context) to column
    names (None when absent). Text is HTML-escaped.

    Examples
    --------
    >>> import pandas as pd
    >>> row = pd.Series({"question_id": "q1", "question": "Who?", "retrieved": ["d1", "d2"], "gold": ["d2"]})
    >>> html = render_row(row, columns={"question_id": "question_id", "question": "question",
    ...                                 "retrieved": "retrieved", "gold": "gold"})
    >>> "d2 ✓" in html
    True
    """
    parts = []
    qid = row[columns["question_id"]] if columns.get("question_id") else row.name
    parts.append(f"<h4 style='margin:4px 0'>{_esc(qid)}</h4>")
    if columns.get("question"):
        parts.append(f"<p><b>Question</b>: {_esc(row[columns['question']])}</p>")
    if columns.get("answer"):
        answer = row[columns["answer"]]
        parts.append(f"<p><b>Answer</b>: {_esc('' if is_missing(answer) else _short(str(answer)))}</p>")
    if scores:
        cells = []
        for name in scores:
            value = row[name]
            shown = "NaN" if is_missing(value) else (f"{value:.3f}" if isinstance(value, (float, np.floating)) else value)
            cells.append(f"<td style='padding:0 8px'><b>{_esc(name)}</b> {_esc(shown)}</td>")
        parts.append(f"<table><tr>{''.join(cells)}</tr></table>")
    if columns.get("retrieved"):
        gold = _gold_ids(row[columns["gold"]]) if columns.get("gold") else set()
        retrieved = row[columns["retrieved"]]
        items = []
        for rank, doc in enumerate([] if is_missing(retrieved) else list(retrieved), start=1):
            mark = " ✓" if str(doc) in gold else ""
            style = "color:#1a7f37;font-weight:bold" if mark else ""
            items.append(f"<span style='{style}'>{rank}. {_esc(doc)}{mark}</span>")
        missed = sorted(gold - {str(d) for d in ([] if is_missing(retrieved) else retrieved)})
        line = " &nbsp; ".join(items) or "<i>nothing retrieved</i>"
        if columns.get("gold"):
            line += f" &nbsp; <span style='color:#b42318'>gold not retrieved: {_esc(missed)}</span>" if missed else ""
            if not gold:
                line += " &nbsp; <i>(no gold: unanswerable)</i>"
        parts.append(f"<p><b>Retrieved</b>: {line}</p>")
    if columns.get("context"):
        context = row[columns["context"]]
        if not is_missing(context):
            passages = [context] if isinstance(context, str) else list(context)
            body = "".join(f"<li>{_esc(_short(str(p)))}</li>" for p in passages)
            parts.append(f"<details><summary><b>Context</b> ({len(passages)} passages)</summary><ol>{body}</ol></details>")
    claims_column = next((c for c in row.index if str(c).endswith("_claims")), None)
    if claims_column is not None and not is_missing(row[claims_column]):
        stem = str(claims_column)[: -len("_claims")]
        verdicts = row.get(f"{stem}_verdicts")
        reasons = row.get(f"{stem}_reasons")
        claims = list(row[claims_column])
        verdicts = [] if is_missing(verdicts) else list(verdicts)
        reasons = [] if is_missing(reasons) else list(reasons)
        body = []
        for i, claim in enumerate(claims):
            verdict = verdicts[i] if i < len(verdicts) else None
            mark = {True: "✓ supported", False: "✗ unsupported"}.get(verdict, "?")
            colour = {True: "#1a7f37", False: "#b42318"}.get(verdict, "#666")
            reason = f" <i>{_esc(reasons[i])}</i>" if i < len(reasons) and reasons[i] else ""
            body.append(f"<li><span style='color:{colour}'>{mark}</span>: {_esc(claim)}{reason}</li>")
        parts.append(f"<p><b>{_esc(stem)} claims</b></p><ul>{''.join(body)}</ul>")
    return "\n".join(parts)


def explore(
    rows: pd.DataFrame,
    *,
    by: str | None = None,
    sort_by: str | None = None,
    question_id: str | None = None,
    question: str | None = None,
    answer: str | None = None,
    retrieved: str | None = None,
    gold: str | None = None,
    context: str | None = None,
) -> Any:
    """An interactive browser over the rows: filter by slice, sort worst-first, step through.

    Parameters
    ----------
    rows : DataFrame
        A row table (any of the default column roles may be present).
    by : str, optional
        A slice column to filter on (e.g. ``"qtype"``).
    sort_by : str, optional
        A score column to sort ascending (worst first); the widget lets the user change it.
    question_id, question, answer, retrieved, gold, context : str, optional
        Column-name overrides.

    Returns
    -------
    ipywidgets.VBox
        With ``.children`` (controls and the HTML view); display it in a notebook.

    Examples
    --------
    >>> from raglab import datasets, widgets
    >>> box = widgets.explore(datasets.handbook(), by="qtype", sort_by="human_faithful")
    >>> type(box).__name__
    'VBox'
    """
    w = import_optional("ipywidgets", extra="widgets", purpose="raglab.widgets.explore")

    method = "rag.explore"
    overrides = {
        "question_id": question_id, "question": question, "answer": answer,
        "retrieved": retrieved, "gold": gold, "context": context,
    }
    columns = {role: resolve_column(rows, role, name, method=method, required=False) for role, name in overrides.items()}
    if by is not None and by not in rows.columns:
        raise missing_column_error(rows, by, role=None, method=method, keyword="by")
    scores = _score_columns(rows, [c for c in columns.values() if c] + ([by] if by else []))
    if sort_by is not None and sort_by not in scores:
        raise ValueError(f"{method}: `sort_by` must be a numeric score column, one of {scores}, but {sort_by!r} was passed.")

    slice_box = w.Dropdown(options=[_ALL, *sorted(map(str, rows[by].dropna().unique()))] if by else [_ALL],
                           description=by or "slice", disabled=by is None)
    sort_box = w.Dropdown(options=[_ROW_ORDER, *scores], value=sort_by or _ROW_ORDER, description="worst first")
    position = w.IntSlider(min=0, max=max(0, len(rows) - 1), value=0, description="row", continuous_update=False)
    previous, following = w.Button(description="◀ previous"), w.Button(description="next ▶")
    status = w.HTML()
    view = w.HTML()

    def current() -> pd.DataFrame:
        frame = rows
        if by is not None and slice_box.value != _ALL:
            frame = frame[frame[by].astype(str) == slice_box.value]
        if sort_box.value != _ROW_ORDER:
            frame = frame.sort_values(sort_box.value, kind="stable", na_position="last")
        return frame

    def refresh(*_: Any) -> None:
        frame = current()
        position.max = max(0, len(frame) - 1)
        if len(frame) == 0:
            status.value, view.value = "no rows", ""
            return
        index = min(position.value, len(frame) - 1)
        status.value = f"{index + 1} of {len(frame)}" + (f" ({by} = {slice_box.value})" if by and slice_box.value != _ALL else "")
        view.value = render_row(frame.iloc[index], columns=columns, scores=scores)

    def step(delta: int) -> None:
        position.value = int(np.clip(position.value + delta, 0, position.max))
        refresh()

    def reset(*_: Any) -> None:
        position.value = 0
        refresh()

    slice_box.observe(reset, names="value")
    sort_box.observe(reset, names="value")
    position.observe(refresh, names="value")
    previous.on_click(lambda _: step(-1))
    following.on_click(lambda _: step(1))
    refresh()
    return w.VBox([w.HBox([slice_box, sort_box]), w.HBox([previous, following, position, status]), view])
