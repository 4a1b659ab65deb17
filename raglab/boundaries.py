"""Chunk boundaries on a row table: cut answers, neighbour expansion, and a metric by boundary status.

``rows.rag.boundaries(chunks)`` is :func:`boundaries`, ``rows.rag.expand_neighbors(chunks)`` is
:func:`expand_neighbors` and ``rows.rag.boundary_report(cand, ...)`` is :func:`boundary_report`
(errors and warnings name the caller: ``rag.<name>`` through the accessor, see ``raglab._validation.caller``).
:func:`prompt_chars` counts the characters a run sends to the model (a cost to gate).
``chunks`` is a chunk table (:mod:`raglab.chunks`): ``chunk_id``, ``doc_id``, ``start``, ``end``,
``position``. Gold is character spans (``gold_spans``), as in :mod:`raglab.metrics.spans`: spans with
grade > 0 count, a question without any is unanswerable.

Definitions (character sets, end exclusive):

- a gold span is **cut** when no single chunk of the table contains it (``start <= gold start`` and
  ``gold end <= end`` in the same document); ``boundary_cut`` is 1.0 when some gold span of the
  question is cut, else 0.0;
- ``gold_chunks``: the most chunks of the table that one gold span overlaps (by >= 1 character);
- ``gold_reached``: the gold characters (union of the gold spans) inside the union of the retrieved
  chunks' spans: ``"complete"`` (all), ``"partial"`` (some) or ``"missed"`` (none);
- ``context_chars``: the characters of the union of the retrieved spans (overlaps counted once).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from raglab import chunks as _chunks
from raglab._errors import RowTableError
from raglab._meta import get_meta, set_meta, update_meta
from raglab._options import RESAMPLING_SETTINGS, Resampling
from raglab._results import ResultBase, jsonable
from raglab._rowtable import Roles, check_unique_ids, resolve_column, row_label, split_options, table_roles
from raglab._validation import called_as, caller, check_int, is_missing, unanswerable, warn
from raglab.metrics.spans import _coverage, _merge, _relevant_gold_spans, _span_tuple

__all__ = ["BoundaryReport", "boundaries", "boundary_report", "expand_neighbors", "prompt_chars"]

STATUS_COLUMN = "boundary_status"

#: Why neither the boundary report nor its plot splits two runs by ``gold_reached``.
GOLD_REACHED_SPLIT = (
    "gold_reached is the baseline's own outcome (how much gold its retrieval reached): slices of it select on the "
    "baseline's luck, so questions where the baseline did badly improve under any other run and those where it did "
    "well fall back (regression to the mean), which a split would draw as an effect. Split by boundary_status, which "
    "depends on the gold and the chunk table only, the same for both runs."
)


# --------------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------------


def _chunk_table(chunks: Any, caller: str) -> pd.DataFrame:
    """The chunk table, checked and sorted (ids unique, 0 <= start < end, positions per document)."""
    if isinstance(chunks, pd.DataFrame):
        missing = [c for c in ("doc_id", "start", "end") if c not in chunks.columns]
        if missing:
            raise RowTableError(
                f"{caller}: `chunks` must be a chunk table with columns {_chunks.COLUMNS}; it lacks {missing} "
                f"(found {[str(c) for c in chunks.columns]}). Make one with raglab.chunks.fixed(...) or adopt "
                "yours with raglab.chunks.from_spans(table, doc_id=..., start=..., end=...)."
            )
    try:
        return _chunks.from_spans(chunks, name="chunks")
    except (TypeError, ValueError) as exc:
        raise RowTableError(f"{caller}: {exc}", method=caller) from None


def _rows_frame(rows: Any, caller: str) -> pd.DataFrame:
    if not isinstance(rows, pd.DataFrame):
        raise TypeError(f"{caller}: rows must be a DataFrame (the row table), got {type(rows).__name__}")
    return rows


def _gold_of(df: pd.DataFrame, col: str, caller: str, qid: str | None) -> list[list[tuple[Any, int, int, float]]]:
    out = []
    for pos, cell in enumerate(df[col].array):
        try:
            out.append(_relevant_gold_spans(cell))
        except (TypeError, ValueError) as exc:
            raise RowTableError(
                f"{caller}: column {col!r} ({row_label(df, pos, qid)}): {exc}. Gold spans are lists of "
                "{'doc_id', 'start', 'end'} with 0 <= start < end ([] for an unanswerable question).",
                column=col, rows=[pos], method=caller,
            ) from None
    return out


def _spans_of(df: pd.DataFrame, col: str, caller: str, qid: str | None) -> list[list[tuple[Any, int, int]]]:
    out = []
    for pos, cell in enumerate(df[col].array):
        if not isinstance(cell, (list, tuple, np.ndarray)):
            hint = " (use [] when nothing was retrieved)" if is_missing(cell) else ""
            raise RowTableError(
                f"{caller}: column {col!r} ({row_label(df, pos, qid)}) must hold a list of spans, got "
                f"{type(cell).__name__} {cell!r}{hint}", column=col, rows=[pos], method=caller)
        try:
            out.append([_span_tuple(span, "retrieved") for span in cell])
        except (TypeError, ValueError) as exc:
            raise RowTableError(f"{caller}: column {col!r} ({row_label(df, pos, qid)}): {exc}",
                                column=col, rows=[pos], method=caller) from None
    return out


def _ids_of(df: pd.DataFrame, col: str, known: Mapping[Any, Any], caller: str, qid: str | None) -> list[list[Any]]:
    """Each row's retrieved chunk ids, all of which must be in the chunk table."""
    out = []
    for pos, cell in enumerate(df[col].array):
        if not isinstance(cell, (list, tuple, np.ndarray)):
            hint = " (use [] when nothing was retrieved)" if is_missing(cell) else ""
            raise RowTableError(
                f"{caller}: column {col!r} ({row_label(df, pos, qid)}) must hold a list of chunk ids, got "
                f"{type(cell).__name__} {cell!r}{hint}", column=col, rows=[pos], method=caller)
        ids = list(cell)
        unknown = [i for i in ids if i not in known]
        if unknown:
            raise RowTableError(
                f"{caller}: column {col!r} ({row_label(df, pos, qid)}) holds chunk id(s) {unknown[:5]} that the chunk "
                f"table does not have (e.g. it has {list(known)[:3]}). Pass the chunk table these ids come from, "
                "or the rows' spans as retrieved_spans=... .", column=col, rows=[pos], method=caller)
        out.append(ids)
    return out


def _union_chars(spans: Sequence[tuple[Any, int, int]]) -> int:
    by_doc: dict[Any, list[tuple[int, int]]] = {}
    for doc, start, end in spans:
        if end > start:
            by_doc.setdefault(doc, []).append((start, end))
    return sum(e - s for intervals in by_doc.values() for s, e in _merge(intervals))


def _reached(gold: list[tuple[Any, int, int, float]], spans: Sequence[tuple[Any, int, int]]) -> str:
    """"complete", "partial" or "missed": the gold characters inside the union of the spans."""
    share = _coverage(list(spans), gold, len(spans))
    return "complete" if share == 1 else "partial" if share > 0 else "missed"


def _gold_geometry(table: pd.DataFrame, gold: list[list[tuple[Any, int, int, float]]], caller: str, consequence: str
                   ) -> tuple[np.ndarray, ...]:
    """Every gold unit flattened (its row, doc, start, end) with its ``_geometry``; warns, saying
    ``consequence``, when gold lies in documents the chunk table does not have."""
    lengths = np.fromiter(map(len, gold), dtype=np.int64, count=len(gold))
    row_of = np.repeat(np.arange(len(gold)), lengths)
    flat = [u for units in gold for u in units]
    doc = np.array([u[0] for u in flat], dtype=object)
    start = np.array([u[1] for u in flat], dtype=np.int64)
    end = np.array([u[2] for u in flat], dtype=np.int64)
    inside, n_over, holder = _geometry(table, doc, start, end)
    unknown = sorted({str(d) for d in set(doc.tolist()) - set(table["doc_id"].tolist())})
    if unknown:
        warn(f"{caller}: gold spans lie in {len(unknown)} document(s) the chunk table does not have (e.g. "
             f"{unknown[:5]}); {consequence}. Pass the chunk table of the whole corpus.")
    return row_of, doc, start, end, inside, n_over, holder


def _geometry(table: pd.DataFrame, doc: np.ndarray, start: np.ndarray, end: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each span (doc, start, end): is it inside one chunk, how many chunks it overlaps, and the
    chunk holding its first character that reaches furthest (a position in ``table``; -1 for none)."""
    inside = np.zeros(len(doc), dtype=bool)
    n_over = np.zeros(len(doc), dtype=np.int64)
    holder = np.full(len(doc), -1, dtype=np.int64)
    if not len(doc):
        return inside, n_over, holder
    groups = table.groupby("doc_id", sort=False).indices
    all_starts = table["start"].to_numpy()
    all_ends = table["end"].to_numpy()
    span_docs = pd.Series(doc, dtype=object)
    for d, where in span_docs.groupby(span_docs, sort=False).indices.items():
        rows = groups.get(d)
        if rows is None:
            continue
        c_start = all_starts[rows]  # the table is sorted by start within a document
        c_end = all_ends[rows]
        reach = np.maximum.accumulate(c_end)  # the furthest end among chunks starting at or before
        # which chunk first reached that far (the first of equals, as argmax picks)
        reacher = np.maximum.accumulate(np.where(np.r_[True, c_end[1:] > reach[:-1]], np.arange(len(c_end)), 0))
        g_start, g_end = start[where], end[where]
        last = np.searchsorted(c_start, g_start, side="right") - 1
        at = np.maximum(last, 0)
        inside[where] = (last >= 0) & (reach[at] >= g_end)
        holds = (last >= 0) & (reach[at] > g_start)
        holder[where[holds]] = rows[reacher[at[holds]]]
        # Chunks overlapping [g_start, g_end): start < g_end, minus those ending at or before g_start.
        n_over[where] = np.searchsorted(c_start, g_end, side="left") - np.searchsorted(
            np.sort(c_end), g_start, side="right")
    return inside, n_over, holder


def _retrieved_spans(df: pd.DataFrame, table: pd.DataFrame, caller: str, qid: str | None,
                     retrieved: str | None, retrieved_spans: str | None) -> tuple[list[list[tuple[Any, int, int]]] | None, str | None]:
    """The spans that reached the model per row: from ``retrieved_spans``, else ``retrieved`` ids via the table."""
    span_col = resolve_column(df, "retrieved_spans", retrieved_spans, caller=caller, required=False)
    if span_col is not None:
        return _spans_of(df, span_col, caller, qid), span_col
    id_col = resolve_column(df, "retrieved", retrieved, caller=caller, required=False)
    if id_col is None:
        return None, None
    lookup = dict(zip(table["chunk_id"].tolist(),
                      zip(table["doc_id"].tolist(), table["start"].tolist(), table["end"].tolist())))
    ids = _ids_of(df, id_col, lookup, caller, qid)
    return [[lookup[i] for i in row] for row in ids], id_col


def _warn_replaced(df: pd.DataFrame, names: Sequence[str], section: str, caller: str) -> None:
    ours = get_meta(df).get(section, {}).get("columns", [])
    replaced = [n for n in names if n in df.columns and n not in ours]
    if replaced:
        warn(f"{caller}: the returned copy replaces existing column(s) {replaced} (the input frame is unchanged).")


# --------------------------------------------------------------------------------------------------
# boundaries
# --------------------------------------------------------------------------------------------------


def boundaries(
    rows: pd.DataFrame,
    chunks: pd.DataFrame,
    *,
    roles: Roles | Mapping[str, str | None] | None = None,
    **columns: str,
) -> pd.DataFrame:
    """Where each question's gold spans fall relative to the chunk boundaries: a copy of the rows plus columns.

    Columns added (see :mod:`raglab.boundaries` for the definitions):

    - ``boundary_cut``: 1.0 when some gold span lies inside no single chunk of ``chunks``, else 0.0;
    - ``gold_chunks``: the most chunks one gold span overlaps (1 for an uncut span; 0 for a span in a
      document the table does not have, which is also cut);
    - ``gold_reached`` (when the rows have ``retrieved_spans``, or ``retrieved`` ids of ``chunks``):
      ``"complete"``, ``"partial"`` or ``"missed"``: all, some or none of the gold characters
      reached the model (the whole list counts; nothing retrieved is ``"missed"``).

    Unanswerable questions (no gold span with grade > 0) get NaN (``None`` for ``gold_reached``).
    Counts are recorded in ``attrs["raglab"]["boundaries"]``.

    Parameters
    ----------
    rows : DataFrame
        The row table, with ``gold_spans``.
    chunks : DataFrame
        The chunk table (:mod:`raglab.chunks`) the question is asked against.
    roles : Roles or dict, optional
        Column roles (:class:`raglab.Roles`), over those set on the table.
    **columns : str
        Column names to use instead of the defaults, by role: ``question_id``, ``gold_spans``,
        ``retrieved``, ``retrieved_spans``. ``retrieved_spans`` is used when present, else
        ``retrieved`` (ids of ``chunks``).

    Returns
    -------
    DataFrame
        A new frame (the input is not modified).

    Examples
    --------
    >>> import pandas as pd
    >>> from raglab import chunks
    >>> from raglab.boundaries import boundaries
    >>> table = chunks.fixed({"d": 300}, size=100)          # d#0 [0, 100), d#1 [100, 200), d#2 [200, 300)
    >>> rows = pd.DataFrame({
    ...     "question_id": ["q1", "q2", "q3"],
    ...     "gold_spans": [[{"doc_id": "d", "start": 10, "end": 40}],
    ...                    [{"doc_id": "d", "start": 90, "end": 210}], []],
    ...     "retrieved": [["d#0"], ["d#1", "d#0"], ["d#2"]],
    ... })
    >>> out = boundaries(rows, table)
    >>> out[["boundary_cut", "gold_chunks", "gold_reached"]].values.tolist()
    [[0.0, 1.0, 'complete'], [1.0, 3.0, 'partial'], [nan, nan, None]]
    """
    caller_name = caller("raglab.boundaries.boundaries")
    df = _rows_frame(rows, caller_name)
    cols = table_roles(df, roles, columns, caller=caller_name)
    table = _chunk_table(chunks, caller_name)
    qid = resolve_column(df, "question_id", cols.question_id, caller=caller_name, required=False)
    if qid is not None:
        check_unique_ids(df, qid, caller=caller_name)
    gold_col = resolve_column(df, "gold_spans", cols.gold_spans, caller=caller_name)
    gold = _gold_of(df, gold_col, caller_name, qid)
    reached_spans, reached_col = _retrieved_spans(df, table, caller_name, qid, cols.retrieved, cols.retrieved_spans)

    lengths = np.fromiter(map(len, gold), dtype=np.int64, count=len(gold))
    row_of, doc, start, end, inside, n_over, _ = _gold_geometry(
        table, gold, caller_name, "they count as cut (inside no chunk, gold_chunks 0)")
    answerable = ~unanswerable(lengths)  # lengths: the gold spans with grade > 0 per question
    cut = np.full(len(df), np.nan)
    cut[answerable] = 0.0
    np.maximum.at(cut, row_of[~inside], 1.0)
    most = np.full(len(df), np.nan)
    most[answerable] = 0.0
    np.maximum.at(most, row_of, n_over.astype(float))

    names = ["boundary_cut", "gold_chunks"] + (["gold_reached"] if reached_spans is not None else [])
    _warn_replaced(df, names, "boundaries", caller_name)
    out = df.copy(deep=False)
    out["boundary_cut"] = cut
    out["gold_chunks"] = most
    record: dict[str, Any] = {
        "columns": names,
        "gold_spans_column": gold_col,
        "n_chunks": int(len(table)),
        "n_questions": int(len(df)),
        "n_unanswerable": int((~answerable).sum()),
        "n_cut": int(np.nansum(cut)),
        "n_gold_spans": int(len(doc)),
        "n_gold_spans_cut": int((~inside).sum()),
        "cut": "some gold span (grade > 0) lies inside no single chunk",
    }
    if reached_spans is not None:
        reached = pd.Series(
            [_reached(units, spans) if units else None for units, spans in zip(gold, reached_spans)],
            index=df.index, dtype=object)
        out["gold_reached"] = reached
        record["retrieved_column"] = reached_col
        record["gold_reached_counts"] = {k: int((reached == k).sum()) for k in ("complete", "partial", "missed")}
    update_meta(out, "boundaries", record)
    return out


# --------------------------------------------------------------------------------------------------
# expand_neighbors
# --------------------------------------------------------------------------------------------------


def expand_neighbors(
    rows: pd.DataFrame,
    chunks: pd.DataFrame,
    window: int = 1,
    *,
    roles: Roles | Mapping[str, str | None] | None = None,
    **columns: str,
) -> pd.DataFrame:
    """What if each retrieved chunk brought its neighbours: rows with longer ``retrieved`` lists.

    For each retrieved chunk, in rank order, the list gets the chunk, then the chunks within
    ``window`` positions of it in the same document, in document order (``p - window`` ...
    ``p - 1``, ``p + 1`` ... ``p + window``; none beyond a document's ends). A chunk already in the
    list keeps its first place. ``retrieved_spans`` is rewritten to match (the span of each id, from
    ``chunks``) and ``context_chars`` counts the characters that reach the model (the union of the
    spans, overlaps counted once). Span gold then re-scores the expanded rows without relabelling
    (``raglab.retrieval.retrieval(expanded, k=...)``; k counts chunks, so pass the new list length).

    Score columns recorded by an earlier ``retrieval`` call described the old lists: they are dropped
    from the copy (with a warning). The expansion is recorded in ``attrs["raglab"]["expand_neighbors"]``.

    Parameters
    ----------
    rows : DataFrame
        The row table, with ``retrieved`` (ids of ``chunks``) or, without it, ``retrieved_spans``
        (each span must be exactly a chunk of ``chunks``).
    chunks : DataFrame
        The chunk table (:mod:`raglab.chunks`) the retrieved ids come from.
    window : int
        Neighbours on each side (>= 0; 0 keeps the lists and adds ``retrieved_spans`` and
        ``context_chars``, the baseline's cost).
    roles : Roles or dict, optional
        Column roles (:class:`raglab.Roles`), over those set on the table.
    **columns : str
        Column names to use instead of the defaults, by role: ``question_id``, ``retrieved``,
        ``retrieved_spans`` (the output uses the same names).

    Returns
    -------
    DataFrame
        A new frame (the input is not modified).

    Examples
    --------
    >>> import pandas as pd
    >>> from raglab import chunks
    >>> from raglab.boundaries import expand_neighbors
    >>> table = chunks.fixed({"a": 500, "b": 200}, size=100)
    >>> rows = pd.DataFrame({"question_id": ["q1"], "retrieved": [["a#2", "b#0", "a#3"]]})
    >>> out = expand_neighbors(rows, table, window=1)
    >>> out.loc[0, "retrieved"], int(out.loc[0, "context_chars"])
    (['a#2', 'a#1', 'a#3', 'b#0', 'b#1', 'a#4'], 600)
    """
    caller_name = caller("raglab.boundaries.expand_neighbors")
    df = _rows_frame(rows, caller_name)
    cols = table_roles(df, roles, columns, caller=caller_name)
    window = check_int(window, "window", 0)
    table = _chunk_table(chunks, caller_name)
    qid = resolve_column(df, "question_id", cols.question_id, caller=caller_name, required=False)
    id_col = resolve_column(df, "retrieved", cols.retrieved, caller=caller_name, required=False)
    span_col = resolve_column(df, "retrieved_spans", cols.retrieved_spans, caller=caller_name, required=False)
    chunk = _ChunkLookup(table)
    given = _given_chunks(df, chunk, id_col, span_col, caller_name, qid)
    expanded, spans_out, chars, before_chars = _expand(given, chunk, window)
    out = _without_stale_columns(df, caller_name)
    out_id_col = id_col or "retrieved"
    out_span_col = span_col or cols.retrieved_spans or "retrieved_spans"
    out[out_id_col] = pd.Series(expanded, index=df.index, dtype=object)
    out[out_span_col] = pd.Series(spans_out, index=df.index, dtype=object)
    out["context_chars"] = np.array(chars, dtype=np.int64)
    n_before = sum(map(len, given))
    n_after = sum(map(len, expanded))
    update_meta(out, "expand_neighbors", {
        "window": window,
        "n_chunks_in_table": int(len(table)),
        "retrieved_column": out_id_col,
        "retrieved_spans_column": out_span_col,
        "order": "each chunk, then its neighbours in document order; first occurrence kept",
        "context_chars": "characters of the union of the retrieved spans (overlaps counted once)",
        "mean_chunks_before": n_before / len(df) if len(df) else None,
        "mean_chunks_after": n_after / len(df) if len(df) else None,
        "mean_context_chars_before": before_chars / len(df) if len(df) else None,
        "mean_context_chars_after": sum(chars) / len(df) if len(df) else None,
    })
    return out


class _ChunkLookup:
    """The chunk table as plain lists, with the lookups the expansion needs (Python objects: read per id)."""

    def __init__(self, table: pd.DataFrame) -> None:
        self.ids = table["chunk_id"].tolist()
        self.docs = table["doc_id"].tolist()
        self.starts = table["start"].tolist()
        self.ends = table["end"].tolist()
        self.positions = table["position"].tolist()
        self.index = {cid: i for i, cid in enumerate(self.ids)}
        # (doc, position) -> row of the table; the table's positions are 0.. per document.
        self.at = {(d, p): i for i, (d, p) in enumerate(zip(self.docs, self.positions))}
        self.last: dict[Any, int] = {}  # each document's last position: a window stops at the document's ends
        for d, p in zip(self.docs, self.positions):
            self.last[d] = max(self.last.get(d, p), p)

    def span(self, i: int) -> tuple[Any, int, int]:
        return self.docs[i], self.starts[i], self.ends[i]


def _given_chunks(df: pd.DataFrame, chunk: _ChunkLookup, id_col: str | None, span_col: str | None, caller: str,
                  qid: str | None) -> list[list[Any]]:
    """Each row's retrieved chunk ids: from the id column, else from spans that are exactly chunks of the table."""
    if id_col is not None:
        return _ids_of(df, id_col, chunk.index, caller, qid)
    if span_col is None:
        raise RowTableError(
            f"{caller} needs column 'retrieved' (ids of the chunk table) or 'retrieved_spans'; found "
            f"{[str(c) for c in df.columns]}. Pass retrieved='your_column' to use another name.", method=caller)
    by_span: dict[tuple[Any, int, int], Any] = {}
    for i, cid in enumerate(chunk.ids):
        by_span.setdefault(chunk.span(i), cid)
    given = []
    for pos, spans in enumerate(_spans_of(df, span_col, caller, qid)):
        unknown = [s for s in spans if s not in by_span]
        if unknown:
            d, s, e = unknown[0]
            raise RowTableError(
                f"{caller}: column {span_col!r} ({row_label(df, pos, qid)}) holds span {{'doc_id': {d!r}, 'start': {s}, "
                f"'end': {e}}} that is no chunk of the chunk table. Pass the table the spans come from, or the "
                "rows' chunk ids as retrieved=... .", column=span_col, rows=[pos], method=caller)
        given.append([by_span[s] for s in spans])
    return given


def _expand(given: list[list[Any]], chunk: _ChunkLookup, window: int
            ) -> tuple[list[list[Any]], list[list[dict[str, Any]]], list[int], int]:
    """The expanded id lists, their spans, their union characters, and the union characters before."""
    expanded: list[list[Any]] = []
    spans_out: list[list[dict[str, Any]]] = []
    chars: list[int] = []
    before_chars = 0
    for ids in given:
        seen: set[Any] = set()
        out_ids: list[Any] = []
        for cid in ids:
            i = chunk.index[cid]
            d, p = chunk.docs[i], chunk.positions[i]
            for q in [p, *range(max(0, p - window), p), *range(p + 1, min(chunk.last[d], p + window) + 1)]:
                j = chunk.at.get((d, q))
                if j is not None and chunk.ids[j] not in seen:
                    seen.add(chunk.ids[j])
                    out_ids.append(chunk.ids[j])
        expanded.append(out_ids)
        rows_of = [chunk.index[c] for c in out_ids]
        spans_out.append([{"doc_id": chunk.docs[j], "start": chunk.starts[j], "end": chunk.ends[j]} for j in rows_of])
        chars.append(_union_chars([chunk.span(j) for j in rows_of]))
        before_chars += _union_chars([chunk.span(chunk.index[c]) for c in ids])
    return expanded, spans_out, chars, before_chars


def _without_stale_columns(df: pd.DataFrame, caller: str) -> pd.DataFrame:
    """A copy of ``df`` without the columns and records that described the lists before expansion."""
    out = df.copy(deep=False)
    meta = get_meta(df)
    stale = [c for c in meta.get("retrieval", {}).get("columns", []) if c in out.columns]
    if stale:
        out = out.drop(columns=stale)
        warn(f"{caller}: dropped {stale} from the returned copy: they scored the lists before expansion. Re-score "
             "with rag.retrieval(k=...) (span gold needs no relabelling).")
    # gold_reached described the lists before expansion too; boundary_cut and gold_chunks do not depend on them.
    boundary_record = meta.get("boundaries", {})
    if "gold_reached" in boundary_record.get("columns", []) and "gold_reached" in out.columns:
        out = out.drop(columns="gold_reached")
        warn(f"{caller}: dropped ['gold_reached'] from the returned copy: it described the lists before expansion. "
             "Re-run rag.boundaries(chunks) on the expanded rows.")
        meta["boundaries"] = {key: value for key, value in boundary_record.items()
                              if key not in ("retrieved_column", "gold_reached_counts")}
        meta["boundaries"]["columns"] = [c for c in boundary_record["columns"] if c != "gold_reached"]
    for section in ("retrieval", "retrieval_counts"):
        meta.pop(section, None)
    set_meta(out, meta)
    return out


# --------------------------------------------------------------------------------------------------
# boundary_report
# --------------------------------------------------------------------------------------------------


@dataclass(repr=False)
class BoundaryReport(ResultBase):
    """A metric by boundary status for two runs (``table``) and the questions that explain it (``rows``).

    ``table`` is :func:`raglab.runs.compare`'s table with a ``split`` column (``"boundary_status"``);
    ``rows`` has one row per question and metric whose score changed, largest change first, with its
    boundary status (and the baseline's ``gold_reached``, to read a row, never to split by).
    """

    table: pd.DataFrame
    rows: pd.DataFrame
    settings: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"table": jsonable(self.table.to_dict(orient="records")),
                "rows": jsonable(self.rows.to_dict(orient="records")), "settings": jsonable(self.settings)}

    def _title(self) -> str:
        return (f"Boundary report: {', '.join(self.settings.get('metrics', []))} by boundary status "
                f"({len(self.rows)} changed question-metric pairs; see .rows)")

    def to_frame(self) -> pd.DataFrame:
        """The comparison table."""
        return self.table


def boundary_report(
    base: pd.DataFrame,
    cand: pd.DataFrame,
    metrics: str | Sequence[str],
    chunks: pd.DataFrame,
    *,
    on: str | None = None,
    how: str = "exact",
    roles: Roles | Mapping[str, str | None] | None = None,
    resampling: Resampling | None = None,
    **options: Any,
) -> BoundaryReport:
    """Any metric split by the baseline's boundary status, for both runs, with paired intervals per status.

    The status comes from :func:`boundaries` on the baseline (``base``) against ``chunks``:
    ``boundary_status`` is ``"cut"``, ``"not cut"`` or ``"unanswerable"`` (the ``unanswerable`` slice
    is shown only when a metric scores those questions, and ``overall`` counts every paired
    question). It depends on the gold and the chunk table only, never on what either run retrieved,
    so both runs are compared on the same questions. The table is :func:`raglab.runs.compare` with
    the status as the slice (paired bootstrap intervals; pairs with a missing score are dropped per
    metric). ``rows`` lists the questions whose score changed, largest change first, with their
    status: the per-question rows that explain the difference.

    The table is **not** split by ``gold_reached``: that is the baseline's own outcome (how much
    gold its retrieval reached), so its slices select on the baseline's luck. Questions where the
    baseline happened to do badly improve under any other run, and those where it did well fall
    back (regression to the mean), which such a split would show as an effect. When the baseline
    has retrieved spans, ``rows`` still says each question's ``gold_reached`` (the baseline's).

    Parameters
    ----------
    base, cand : DataFrame
        The baseline run (its ``gold_spans`` decide the status) and the candidate run.
    metrics : str or list of str
        Score columns present in both runs (retrieval or judged, e.g. ``["recall@5", "faithfulness"]``).
    chunks : DataFrame
        The baseline's chunk table (:mod:`raglab.chunks`).
    on : str, optional
        The question id column (default: the baseline's ``question_id`` role).
    how : {"exact", "inner"}
        As in :func:`raglab.runs.compare`.
    roles : Roles or dict, optional
        Column roles of ``base`` (``gold_spans``, ``retrieved``, ``retrieved_spans``, ``question_id``).
    resampling : Resampling, optional
        The comparison's resampling settings, as in :func:`raglab.runs.compare`.
    **options
        The same settings as keywords (``ci``, ``n_resamples``, ``seed``, ...; they win), and column
        roles of ``base`` as keywords (e.g. ``gold_spans="gs"``).

    Returns
    -------
    BoundaryReport
        ``.table`` (``split``, ``metric``, ``slice``, ``n``, ``base``, ``cand``, ``diff``, ``low``,
        ``high``, ... from ``compare``), ``.rows`` (``on``, ``metric``, ``boundary_status``,
        ``gold_reached`` (the baseline's) when known, ``gold_chunks``, ``base``, ``cand``, ``diff``).

    Examples
    --------
    >>> import pandas as pd
    >>> from raglab import chunks
    >>> from raglab.boundaries import boundary_report
    >>> table = chunks.fixed({"d": 1000}, size=100)
    >>> gold = [[{"doc_id": "d", "start": 100 * i + (50 if i % 2 else 10), "end": 100 * i + (150 if i % 2 else 60)}]
    ...         for i in range(8)]
    >>> base = pd.DataFrame({"question_id": [f"q{i}" for i in range(8)], "gold_spans": gold,
    ...                      "faithfulness": [1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0]})
    >>> cand = base.assign(faithfulness=1.0)
    >>> report = boundary_report(base, cand, ["faithfulness"], table, n_resamples=200)
    >>> report.table[["split", "slice", "n", "base", "cand"]].values.tolist()
    [['boundary_status', 'overall', 8, 0.5, 1.0], ['boundary_status', 'cut', 4, 0.0, 1.0], ['boundary_status', 'not cut', 4, 1.0, 1.0]]
    >>> report.rows[["question_id", "boundary_status", "diff"]].values.tolist()[:2]
    [['q1', 'cut', 1.0], ['q3', 'cut', 1.0]]
    """
    from raglab import runs  # same floor; imported when used

    caller_name = caller("raglab.boundaries.boundary_report")
    base = _rows_frame(base, caller_name)
    cand = _rows_frame(cand, caller_name)
    columns, settings = split_options(options, RESAMPLING_SETTINGS, caller=caller_name)
    cols = table_roles(base, roles, columns, caller=caller_name)
    res = Resampling.resolve(resampling, settings, caller=caller_name)
    on = on if on is not None else cols.column("question_id")
    names = [metrics] if isinstance(metrics, str) else list(metrics)
    if not names:
        raise ValueError(f"{caller_name}: `metrics` must name at least one score column present in both runs")
    for side, frame in (("base", base), ("cand", cand)):
        missing = [m for m in names if m not in frame.columns]
        if missing:
            raise RowTableError(
                f"{caller_name}: metric column(s) {missing} are not in {side} (found {[str(c) for c in frame.columns]}). "
                "Score both runs first (e.g. rag.retrieval(k=5)), or pass metrics that both have.", method=caller_name)
    if on not in base.columns:
        raise RowTableError(f"{caller_name} needs column {on!r} in base to pair the runs; pass on='your_id_column'.",
                            column=on, method=caller_name)
    with called_as(caller_name):
        status = boundaries(base, chunks, roles=cols.merged({"question_id": on}))
    cut = status["boundary_cut"].to_numpy(dtype=float)
    labels = np.where(np.isnan(cut), "unanswerable", np.where(cut == 1.0, "cut", "not cut"))
    frame = base[[on, *names]].copy()
    frame.attrs = dict(base.attrs)
    frame[STATUS_COLUMN] = labels
    splits = [STATUS_COLUMN]  # never the baseline's gold_reached: see the docstring (regression to the mean)
    described = [STATUS_COLUMN]
    if "gold_reached" in status.columns:
        frame["gold_reached"] = status["gold_reached"].fillna("unanswerable").to_numpy(dtype=object)
        described.append("gold_reached")
    cand_frame = cand[[on, *names]].copy()
    cand_frame.attrs = dict(cand.attrs)
    answerable = labels != "unanswerable"
    if not answerable.any():
        raise RowTableError(f"{caller_name}: no question of base has gold spans with grade > 0, so there is no boundary "
                            "status to split by. Check the gold_spans column.", method=caller_name)
    tables = []
    for split in splits:
        with called_as(caller_name):
            t = runs.compare(frame.drop(columns=[c for c in described if c != split]), cand_frame, metrics=names,
                             by=split, on=on, how=how, resampling=res)
        t = t[(t["slice"] != "unanswerable") | (t["n"] > 0)]  # kept when a metric scores them (e.g. judged)
        tables.append(t.assign(split=split))
    table = pd.concat(tables, ignore_index=True)
    if len(splits) > 1:  # the overall rows are the same in every split: keep the first
        table = table[~((table["slice"] == "overall") & (table["split"] != STATUS_COLUMN))]
    table = table[["split", *[c for c in table.columns if c != "split"]]].reset_index(drop=True)

    changed = _changed_rows(frame, cand_frame, base, status, names, described, on)
    settings = {"metrics": names, "on": on, "splits": splits, "n_questions": int(len(frame)),
                "not_split_by": {"gold_reached": GOLD_REACHED_SPLIT},
                "n_cut": int((labels == "cut").sum()), "n_unanswerable": int((~answerable).sum()),
                "status_from": "baseline", **res.settings(["ci", "n_resamples", "seed"])}
    table.attrs["raglab"] = {"boundary_report": jsonable(settings)}
    return BoundaryReport(table=table, rows=changed, settings=settings)


def _changed_rows(frame: pd.DataFrame, cand_frame: pd.DataFrame, base: pd.DataFrame, status: pd.DataFrame,
                  names: list[str], described: list[str], on: str) -> pd.DataFrame:
    """The question-metric pairs whose score changed, largest change first, with their boundary status."""
    merged = frame.merge(cand_frame, on=on, suffixes=("_base", "_cand"), how="inner", validate="one_to_one")
    merged["gold_chunks"] = status["gold_chunks"].to_numpy(dtype=float)[
        pd.Index(base[on]).get_indexer(merged[on])]
    parts = []
    for m in names:
        b = pd.to_numeric(merged[f"{m}_base"], errors="coerce").to_numpy(dtype=float)
        c = pd.to_numeric(merged[f"{m}_cand"], errors="coerce").to_numpy(dtype=float)
        diff = c - b
        keep = ~np.isnan(diff) & (diff != 0)
        part = merged.loc[keep, [on, *described, "gold_chunks"]].assign(metric=m, base=b[keep], cand=c[keep], diff=diff[keep])
        parts.append(part)
    changed = pd.concat(parts, ignore_index=True)
    order = np.lexsort((changed[on].astype(str).to_numpy(), -changed["diff"].abs().to_numpy()))
    changed = changed.iloc[order].reset_index(drop=True)
    return changed[[on, "metric", *described, "gold_chunks", "base", "cand", "diff"]]


def prompt_chars(
    rows: pd.DataFrame,
    *,
    roles: Roles | Mapping[str, str | None] | None = None,
    **columns: str,
) -> pd.Series:
    """Characters sent to the model per question: the summed lengths of its retrieved spans, as sent.

    A span shared by two retrieved units (a neighbour added twice by expansion) counts twice, because
    it is in the prompt twice; ``expand_neighbors``' ``context_chars`` counts the union instead. Use it
    as a cost metric in a gate (lower is better), with its margin stated.

    Parameters
    ----------
    rows : DataFrame
        The row table with ``retrieved_spans`` (per question, a list of ``{doc_id, start, end}``).
    roles : Roles or dict, optional
        Column roles (:class:`raglab.Roles`), over those set on the table.
    **columns : str
        Other names for those columns, by role: ``retrieved_spans``, ``question_id``.

    Returns
    -------
    Series
        Integer characters per row, named ``prompt_chars``, on the rows' index.

    Examples
    --------
    >>> import pandas as pd
    >>> rows = pd.DataFrame({"retrieved_spans": [[{"doc_id": "a", "start": 0, "end": 10},
    ...                                           {"doc_id": "a", "start": 5, "end": 20}], []]})
    >>> prompt_chars(rows).tolist()
    [25, 0]
    """
    caller_name = caller("raglab.boundaries.prompt_chars")
    df = _rows_frame(rows, caller_name)
    cols = table_roles(df, roles, columns, caller=caller_name)
    qid = resolve_column(df, "question_id", cols.question_id, caller=caller_name, required=False)
    column = resolve_column(df, "retrieved_spans", cols.retrieved_spans, caller=caller_name)
    spans = _spans_of(df, column, caller_name, qid)
    lengths = np.fromiter((sum(end - start for _, start, end in row) for row in spans), dtype=np.int64, count=len(spans))
    return pd.Series(lengths, index=df.index, name="prompt_chars")
