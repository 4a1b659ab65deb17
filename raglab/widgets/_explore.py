"""The single-run explorer: one question at a time, worst first.

The HTML pieces and controls without an underscore that are not in ``__all__`` (``esc``, ``short``,
``format_value``, ``text_parts``, ``score_columns``, ``field_columns``, ``role_overrides``, ``navigation``, ``browser``,
the colours and
``ALL_SLICES``) are shared with the pair explorer (``raglab.widgets._pair``), not public API.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from raglab._optional import import_optional
from raglab._registry import is_id_name, metric_info
from raglab._results import DECISION_COLOURS
from raglab._rowtable import ROLES, Roles, missing_column_error, resolve_column, split_options, table_roles
from raglab._validation import caller, is_missing
from raglab.metrics._common import _relevant
from raglab.metrics.spans import _covered, _merge, _relevant_gold_spans, _span_tuple

__all__ = ["explore", "render_row"]

ALL_SLICES = "(all)"
_ROW_ORDER = "(row order)"
# The explorers' marks: gold found, partly, missed (one place for both explorers).
GOOD, PARTIAL, BAD = (DECISION_COLOURS[d] for d in ("pass", "review", "block"))  # as the plots colour them
MUTED = "#666"
_TEXT_LIMIT = 600
_FIELD_LIMIT = 200
# Whole words of a column name that say it holds a count or a code, not a score (judge_prompt_tokens, n_claims).
_COUNT_WORDS = frozenset("tokens token count counts n num number len length calls index idx seed".split())


def esc(value: Any) -> str:
    return html.escape(str(value))


def short(text: str, limit: int = _TEXT_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _gold_ids(gold: Any) -> set[str]:
    """The relevant gold ids (grade > 0) as the metrics read the cell; none for a cell they would refuse."""
    try:
        relevant = _relevant(gold)
    except TypeError:  # a malformed cell: the metrics refuse it with the reason; the view just marks nothing
        return set()
    return {str(doc) for doc in relevant} if relevant else set()


def _offsets(intervals: Sequence[tuple[int, int]]) -> str:
    return " ".join(f"[{a}, {b})" for a, b in intervals)


def _span_gold(cell: Any) -> tuple[list[tuple[Any, int, int, float]], str | None]:
    """The gold spans (grade > 0) of a cell, or ``([], reason)`` when they cannot be read."""
    try:
        return _relevant_gold_spans(cell), None
    except (TypeError, ValueError) as exc:
        return [], str(exc)


def _chunk_spans(cell: Any, n: int) -> list[tuple[Any, int, int] | None]:
    """The retrieved chunks' spans (None for each one that cannot be read)."""
    if is_missing(cell) or isinstance(cell, (str, dict)):
        return [None] * n
    out: list[tuple[Any, int, int] | None] = []
    for span in list(cell):
        try:
            out.append(_span_tuple(span, "retrieved"))
        except (TypeError, ValueError):
            out.append(None)
    return out + [None] * (n - len(out))


def _gold_line(gold_spans: list[tuple[Any, int, int, float]], problem: str | None,
               spans: list[tuple[Any, int, int] | None] | None) -> str:
    if problem is not None:
        return f"<p><b>Gold spans</b>: <i>cannot be read: {esc(problem)}</i></p>"
    if not gold_spans:
        return "<p><b>Gold spans</b>: <i>none: unanswerable</i> (no gold span, so nothing should be answered)</p>"
    by_doc: dict[Any, list[str]] = {}
    for doc, start, end, grade in gold_spans:
        by_doc.setdefault(doc, []).append(f"[{start}, {end})" + (f" grade {grade:g}" if grade != 1 else ""))
    where = "; ".join(f"{esc(doc)} {' '.join(items)}" for doc, items in by_doc.items())
    total = reached = 0
    for doc in by_doc:
        gold = _merge([(g[1], g[2]) for g in gold_spans if g[0] == doc])
        total += sum(b - a for a, b in gold)
        if spans is not None:
            reached += _covered(gold, [(s[1], s[2]) for s in spans if s is not None and s[0] == doc])
    text = f"<p><b>Gold spans</b>: {where} ({len(gold_spans)} span{'s' if len(gold_spans) != 1 else ''}, {total} characters)"
    if spans is not None:
        status = "complete" if reached == total else "partial" if reached else "missed"
        colour = {"complete": GOOD, "partial": PARTIAL, "missed": BAD}[status]
        text += (f"; <span style='color:{colour}'>reached the model: {reached} of {total} characters "
                 f"({status})</span>")
    return text + "</p>"


def role_overrides(frame: pd.DataFrame, roles: Roles | Mapping[str, str | None] | None, columns: Mapping[str, Any],
                   name: str) -> dict[str, str | None]:
    """Each role's column for an explorer (None: the role's own name, if present): the table's roles
    (``with_roles``), then ``roles=``, then the call's keywords; any other keyword is a TypeError."""
    chosen, _ = split_options(columns, (), caller=name)
    named = table_roles(frame, roles, chosen, caller=name)
    return {role: getattr(named, role) for role in ROLES}


def _is_count_name(name: Any) -> bool:
    """Does a column name say it holds a count, a code or an id (``judge_prompt_tokens``, ``n_claims``)?"""
    return is_id_name(str(name)) or bool(set(re.split(r"[^a-z0-9]+", str(name).lower())) & _COUNT_WORDS)


def _is_numeric(series: pd.Series) -> bool:
    return (pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)
            and not pd.api.types.is_complex_dtype(series))


def score_columns(df: pd.DataFrame, exclude: Sequence[str]) -> list[str]:
    """Numeric columns that are scores: not booleans, ids, token counts or other counts."""
    return [c for c in df.columns if c not in exclude and _is_numeric(df[c]) and not _is_count_name(c)]


def _is_listlike(value: Any) -> bool:
    return isinstance(value, (list, tuple, set, dict, np.ndarray))


def field_columns(df: pd.DataFrame, exclude: Sequence[str]) -> list[str]:
    """The other columns worth showing per row: text, booleans, counts (not lists such as claims)."""
    out = []
    for c in df.columns:
        if c in exclude:
            continue
        values = df[c].dropna()
        if len(values) and _is_listlike(values.iloc[0]):
            continue
        out.append(c)
    return out


def format_value(value: Any) -> str:
    if _is_listlike(value):
        return short(str(list(value) if isinstance(value, np.ndarray) else value), _FIELD_LIMIT)
    if is_missing(value):
        return "missing"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (float, np.floating)):
        return f"{value:.3f}"
    return short(str(value), _FIELD_LIMIT)


def _sort_options(scores: Sequence[str]) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """Dropdown options (label, column) for worst-first sorting, and the columns left out with why.

    Worst first is lowest first for higher-is-better scores and highest first for lower-is-better ones;
    a score with no direction (the pooled ``declined`` flag) has no worst, so it is not offered.
    """
    options, left_out = [(_ROW_ORDER, _ROW_ORDER)], {}
    for name in scores:
        info = metric_info(str(name))
        if not info.has_direction:
            left_out[name] = info.higher_is_better.reason
            continue
        order = "lowest first" if info.higher_is_better else "highest first"
        options.append((f"{name} ({order})", name))
    return options, left_out


def render_row(row: pd.Series, *, columns: dict[str, str | None], scores: Sequence[str] = (),
               fields: Sequence[str] = ()) -> str:
    """HTML for one row of a row table: question, answer, reference, retrieved ids with gold marked, claims.

    ``columns`` maps roles (question_id, question, answer, reference, retrieved, gold, gold_spans,
    retrieved_spans, context) to column names (None when absent). ``scores`` are shown as numbers and
    ``fields`` (text, booleans, counts) as they are, booleans as yes/no. Text is HTML-escaped.

    With ``gold_spans`` the view lists the gold offsets (``doc [start, end)``) or says the question
    is unanswerable; with ``retrieved_spans`` too, each retrieved chunk shows its offsets and, when it
    overlaps gold, a ✓ and the gold characters it holds, and the gold line counts the gold
    characters that reached the model (complete, partial or missed).

    Examples
    --------
    >>> import pandas as pd
    >>> row = pd.Series({"question_id": "q1", "question": "Who?", "retrieved": ["d1", "d2"], "gold": ["d2"]})
    >>> html = render_row(row, columns={"question_id": "question_id", "question": "question",
    ...                                 "retrieved": "retrieved", "gold": "gold"})
    >>> "d2 ✓" in html
    True
    >>> row = pd.Series({"question_id": "q2", "retrieved": ["d#0", "d#1"],
    ...                  "retrieved_spans": [{"doc_id": "d", "start": 0, "end": 100},
    ...                                      {"doc_id": "d", "start": 100, "end": 200}],
    ...                  "gold_spans": [{"doc_id": "d", "start": 150, "end": 260}]})
    >>> html = render_row(row, columns={"retrieved": "retrieved", "retrieved_spans": "retrieved_spans",
    ...                                 "gold_spans": "gold_spans"})
    >>> "2. d#1 [100, 200) ✓ gold [150, 200)" in html, "50 of 110 characters (partial)" in html
    (True, True)
    """
    parts = text_parts(row, columns)
    if scores:
        parts.append(_cells_table(row, scores, _score_text))
    if fields:
        parts.append(_cells_table(row, fields, format_value))
    span_gold, problem = (_span_gold(row[columns["gold_spans"]]) if columns.get("gold_spans") else ([], None))
    chunk_spans = None
    if columns.get("retrieved") or columns.get("retrieved_spans"):
        line, chunk_spans = _retrieved_line(row, columns, span_gold)
        parts.append(f"<p><b>Retrieved</b>: {line}</p>")
    if columns.get("gold_spans"):
        parts.append(_gold_line(span_gold, problem, chunk_spans))
    if columns.get("context"):
        parts += _context_block(row[columns["context"]])
    parts += _claims_block(row)
    return "\n".join(parts)


def text_parts(row: pd.Series, columns: dict[str, str | None]) -> list[str]:
    """The row's heading (its question id) and its question, answer and reference."""
    qid = row[columns["question_id"]] if columns.get("question_id") else row.name
    parts = [f"<h4 style='margin:4px 0'>{esc(qid)}</h4>"]
    if columns.get("question"):
        parts.append(f"<p><b>Question</b>: {esc(row[columns['question']])}</p>")
    if columns.get("answer"):
        answer = row[columns["answer"]]
        parts.append(f"<p><b>Answer</b>: {esc('' if is_missing(answer) else short(str(answer)))}</p>")
    if columns.get("reference"):
        reference = row[columns["reference"]]
        shown = "<i>none</i>" if is_missing(reference) else esc(short(str(reference)))
        parts.append(f"<p><b>Reference</b>: {shown}</p>")
    return parts


def _score_text(value: Any) -> Any:
    return "NaN" if is_missing(value) else (f"{value:.3f}" if isinstance(value, (float, np.floating)) else value)


def _cells_table(row: pd.Series, names: Sequence[str], shown: Any) -> str:
    """One table row of ``name value`` cells, each value as ``shown`` writes it."""
    cells = [f"<td style='padding:0 8px'><b>{esc(name)}</b> {esc(shown(row[name]))}</td>" for name in names]
    return f"<table><tr>{''.join(cells)}</tr></table>"


def _retrieved_line(row: pd.Series, columns: dict[str, str | None],
                    span_gold: list[tuple[Any, int, int, float]]) -> tuple[str, list[tuple[Any, int, int] | None] | None]:
    """The retrieved ids (or chunk spans) with gold marked, and the chunks' spans (None without them)."""
    ids_column, spans_column = columns.get("retrieved"), columns.get("retrieved_spans")
    gold = _gold_ids(row[columns["gold"]]) if columns.get("gold") else set()
    retrieved = row[ids_column] if ids_column else None
    ids = [] if is_missing(retrieved) else list(retrieved)
    chunk_spans = None
    if spans_column:
        cell = row[spans_column]
        if not ids_column:
            ids = [] if is_missing(cell) else list(cell)
        chunk_spans = _chunk_spans(cell, len(ids))
    items = []
    for rank, doc in enumerate(ids, start=1):
        span = chunk_spans[rank - 1] if chunk_spans is not None else None
        label = str(doc) if ids_column else (f"{span[0]}" if span else "?")
        if span is not None:
            label += f" [{span[1]}, {span[2]})"
        overlap = [] if span is None else _gold_overlap(span, span_gold)
        mark = " ✓" if (ids_column and str(doc) in gold) or overlap else ""
        if overlap:
            mark += f" gold {_offsets(overlap)}"
        style = f"color:{GOOD};font-weight:bold" if mark else ""
        items.append(f"<span style='{style}'>{rank}. {esc(label)}{esc(mark)}</span>")
    missed = sorted(gold - {str(d) for d in ids}) if ids_column else []
    line = " &nbsp; ".join(items) or "<i>nothing retrieved</i>"
    if columns.get("gold") and ids_column:
        line += f" &nbsp; <span style='color:{BAD}'>gold not retrieved: {esc(missed)}</span>" if missed else ""
        if not gold:
            line += " &nbsp; <i>(no gold: unanswerable)</i>"
    return line, chunk_spans


def _gold_overlap(span: tuple[Any, int, int], span_gold: list[tuple[Any, int, int, float]]) -> list[tuple[int, int]]:
    """The gold character ranges a retrieved chunk holds (merged)."""
    return _merge([(max(span[1], g[1]), min(span[2], g[2])) for g in span_gold
                   if g[0] == span[0] and max(span[1], g[1]) < min(span[2], g[2])])


def _context_block(context: Any) -> list[str]:
    """The context passages, folded (nothing for a missing context)."""
    if is_missing(context):
        return []
    passages = [context] if isinstance(context, str) else list(context)
    body = "".join(f"<li>{esc(short(str(p)))}</li>" for p in passages)
    return [f"<details><summary><b>Context</b> ({len(passages)} passages)</summary><ol>{body}</ol></details>"]


def _claims_block(row: pd.Series) -> list[str]:
    """The judge's claims of the first ``*_claims`` list column, with verdicts and reasons."""
    claims_column = next((c for c in row.index if str(c).endswith("_claims")
                          and isinstance(row[c], (list, tuple, np.ndarray))), None)  # not a count of claims
    if claims_column is None or is_missing(row[claims_column]):
        return []
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
        colour = {True: GOOD, False: BAD}.get(verdict, MUTED)
        reason = f" <i>{esc(reasons[i])}</i>" if i < len(reasons) and reasons[i] else ""
        body.append(f"<li><span style='color:{colour}'>{mark}</span>: {esc(claim)}{reason}</li>")
    return [f"<p><b>{esc(stem)} claims</b></p><ul>{''.join(body)}</ul>"]


_EXPLORER_CLASS: list[type] = []


def _explorer_class(w: Any) -> type:
    """An ``ipywidgets.VBox`` that also carries a static ``text/html`` rendering of the row it shows.

    Live front ends draw the widget; static viewers of a saved notebook (GitHub, nbviewer) show the
    HTML instead of ``VBox(children=...)``. Named ``VBox`` because it is one (a subclass), built once.
    """
    if not _EXPLORER_CLASS:

        def _repr_mimebundle_(self: Any, **kwargs: Any) -> Any:
            data = w.VBox._repr_mimebundle_(self, **kwargs) or {"text/plain": repr(self)}
            data["text/html"] = self.static_html()
            return data

        def static_html(self: Any) -> str:
            """The row the explorer shows now (the first one until it is moved), as plain HTML."""
            return (f"<div class='raglab-explore'><p><i>raglab explorer ({esc(self._raglab_status.value)}); "
                    "a static copy of the row shown, run the notebook to browse.</i></p>"
                    f"{self._raglab_view.value}</div>")

        _EXPLORER_CLASS.append(type("VBox", (w.VBox,), {
            "__module__": "raglab.widgets", "__doc__": _explorer_class.__doc__,
            "_repr_mimebundle_": _repr_mimebundle_, "static_html": static_html,
        }))
    return _EXPLORER_CLASS[0]


def navigation(w: Any, n: int, noun: str) -> tuple[Any, Any, Any, Any, Any]:
    """The controls every explorer shares: a 1-based slider, previous/next, a status line and the view."""
    position = w.IntSlider(min=1, max=max(1, n), value=1, description=noun, continuous_update=False)
    previous, following = w.Button(description="◀ previous"), w.Button(description="next ▶")
    return position, previous, following, w.HTML(), w.HTML()


def browser(w: Any, filters: Sequence[Any], position: Any, previous: Any, following: Any, status: Any, view: Any,
             refresh: Any) -> Any:
    """Wire the shared controls (a filter change goes back to the first row) and lay the explorer out."""
    def step(delta: int) -> None:
        position.value = int(np.clip(position.value + delta, 1, position.max))
        refresh()

    def reset(*_: Any) -> None:
        position.value = 1
        refresh()

    for control in filters:
        control.observe(reset, names="value")
    position.observe(refresh, names="value")
    previous.on_click(lambda _: step(-1))
    following.on_click(lambda _: step(1))
    refresh()
    box = _explorer_class(w)([w.HBox(list(filters)), w.HBox([previous, following, position, status]), view])
    box._raglab_status, box._raglab_view = status, view
    return box


def explore(
    rows: pd.DataFrame,
    *,
    by: str | None = None,
    sort_by: str | None = None,
    roles: Roles | Mapping[str, str | None] | None = None,
    **columns: str,
) -> Any:
    """An interactive browser over the rows: filter by slice, sort worst-first, step through.

    Parameters
    ----------
    rows : DataFrame
        A row table (any of the default column roles may be present).
    by : str, optional
        A slice column to filter on (e.g. ``"qtype"``).
    sort_by : str, optional
        A score column to sort worst first: lowest first when higher is better, highest first when
        lower is better (``raglab._registry.metric_info``); the widget lets the user change it.
        Scores with no direction (the pooled ``declined`` flag) have no worst and are not offered.
        Ids and counts (``judge_prompt_tokens``, ``n_claims``) are shown but are not scores.
    roles : Roles or dict, optional
        Column roles (:class:`raglab.Roles`), over those set on the table with
        ``rows.rag.with_roles(...)``.
    **columns : str
        Column names to use instead of the defaults, by role: ``question_id``, ``question``,
        ``answer``, ``reference``, ``retrieved``, ``gold``, ``context``, ``gold_spans``,
        ``retrieved_spans`` (they win over ``roles`` and the table's roles). With ``gold_spans``
        the view shows the gold offsets (or says the question is unanswerable); with
        ``retrieved_spans`` too it marks the retrieved chunks that overlap gold (see
        :func:`raglab.widgets.render_row`). Every other column (text, booleans, counts) is shown with each row.

    Returns
    -------
    ipywidgets.VBox
        With ``.children`` (controls, navigation with a 1-based row slider, and the HTML view);
        display it in a notebook. A saved notebook shows the first row as static HTML.

    Examples
    --------
    >>> from raglab import datasets, widgets
    >>> box = widgets.explore(datasets.handbook(), by="qtype", sort_by="human_faithful")
    >>> type(box).__name__
    'VBox'
    """
    w = import_optional("ipywidgets", extra="widgets", purpose="raglab.widgets.explore")

    name = caller("rag.explore")
    overrides = role_overrides(rows, roles, columns, name)
    columns, scores, fields, (options, left_out) = _explore_columns(rows, overrides, by=by, sort_by=sort_by, name=name)
    slice_box = w.Dropdown(options=[ALL_SLICES, *sorted(map(str, rows[by].dropna().unique()))] if by else [ALL_SLICES],
                           description=by or "slice", disabled=by is None)
    sort_box = w.Dropdown(options=options, value=sort_by or _ROW_ORDER, description="worst first")
    position, previous, following, status, view = navigation(w, len(rows), "row")

    def current() -> pd.DataFrame:
        frame = rows
        if by is not None and slice_box.value != ALL_SLICES:
            frame = frame[frame[by].astype(str) == slice_box.value]
        if sort_box.value != _ROW_ORDER:
            ascending = bool(metric_info(str(sort_box.value)).higher_is_better)
            frame = frame.sort_values(sort_box.value, ascending=ascending, kind="stable", na_position="last")
        return frame

    def refresh(*_: Any) -> None:
        frame = current()
        position.max = max(1, len(frame))
        position.disabled = len(frame) <= 1
        note = _sort_note(sort_box.value, left_out)
        if len(frame) == 0:
            status.value, view.value = "no rows", note
            return
        index = min(position.value, len(frame)) - 1
        status.value = f"{index + 1} of {len(frame)}" + (f" ({by} = {slice_box.value})" if by and slice_box.value != ALL_SLICES else "")
        view.value = note + render_row(frame.iloc[index], columns=columns, scores=scores, fields=fields)

    return browser(w, [slice_box, sort_box], position, previous, following, status, view, refresh)


def _explore_columns(
    rows: pd.DataFrame, overrides: dict[str, str | None], *, by: str | None, sort_by: str | None, name: str
) -> tuple[dict[str, str | None], list[str], list[str], tuple[list[tuple[str, str]], dict[str, str]]]:
    """The explorer's column roles, score columns, other fields and sort options (``by``, ``sort_by`` checked)."""
    columns = {role: resolve_column(rows, role, column, caller=name, required=False) for role, column in overrides.items()}
    if by is not None and by not in rows.columns:
        raise missing_column_error(rows, by, role=None, caller=name, keyword="by")
    used = [c for c in columns.values() if c]
    scores = score_columns(rows, used + ([by] if by else []))
    options, left_out = _sort_options(scores)
    if sort_by is not None:
        if sort_by in left_out:
            raise ValueError(f"{name}: {sort_by!r} has no worst first: {left_out[sort_by]} "
                             "Sort by a score with a direction, or leave sort_by out.")
        if sort_by not in scores:
            raise ValueError(f"{name}: `sort_by` must be a numeric score column, one of {scores}, but {sort_by!r} was passed.")
    return columns, scores, field_columns(rows, used + scores), (options, left_out)


def _sort_note(sort_value: str, left_out: dict[str, str]) -> str:
    """The line above the row: the order shown, and the scores not offered for worst first."""
    if sort_value == _ROW_ORDER:
        text = "in row order"
    else:
        info = metric_info(str(sort_value))
        worst = "lowest" if info.higher_is_better else "highest"
        guessed = "" if info.known else ", direction guessed from the name"
        text = f"sorted by {esc(sort_value)}, worst ({worst}) first{guessed}"
    if left_out:
        text += "; not offered for worst first: " + "; ".join(
            f"{esc(name)} (no direction: {esc(why)})" for name, why in left_out.items())
    return f"<p style='color:{MUTED};margin:2px 0'><i>{text}</i></p>"
