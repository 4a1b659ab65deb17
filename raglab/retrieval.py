"""Retrieval metrics on a row table: :func:`retrieval` and :func:`depth_gap`.

``rows.rag.retrieval(...)`` is ``raglab.retrieval.retrieval(rows, ...)`` and ``rows.rag.depth_gap(...)``
is ``raglab.retrieval.depth_gap(rows, ...)``. These resolve the columns, validate them, score with
the bulk kernels of :mod:`raglab.metrics` (Arrow-backed list columns are matched natively), and
record the conventions in ``attrs["raglab"]``. Errors and warnings name the caller (``rag.retrieval``
through the accessor, see ``raglab._validation.caller``).
"""

from __future__ import annotations

import itertools
import operator
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from raglab import metrics as _metrics
from raglab._columns import guarded
from raglab._errors import RowTableError
from raglab._meta import get_meta, update_meta
from raglab._rowtable import (
    Roles,
    _grade_value,
    check_unique_ids,
    missing_column_error,
    resolve_column,
    row_label,
    span_list_lengths,
    table_roles,
)
from raglab._validation import called_as, caller, check_option, warn
from raglab.metrics._kernel import _arrow_id_kind, _arrow_lists, _as_cells, list_lengths
from raglab.metrics.spans import _span_retrieval_scores, check_span_rule, span_rule_record
from raglab.metrics.specs import select

__all__ = ["depth_gap", "retrieval"]


def retrieval(
    rows: pd.DataFrame,
    k: int | Iterable[int] = 5,
    *,
    metrics: str | Iterable[str] | None = None,
    gain: str = "exponential",
    gold_by: str = "auto",
    min_overlap: int | float | None = None,
    no_relevant: str = "exclude",
    span_rule: str = "union",
    roles: Roles | Mapping[str, str | None] | None = None,
    **columns: str,
) -> pd.DataFrame:
    """Score retrieval per question: a copy of the rows plus one column per metric and k.

    ``k`` counts the chunks that **reached the model** (after reranking and truncation): the
    ranked ids come from ``retrieved`` and never from a raw-candidates column such as
    ``candidates`` (see :func:`depth_gap` for recall at the candidate depth). Computed in bulk
    with numpy; equal to :mod:`raglab.metrics`' per-question functions exactly. An Arrow-backed
    list column (``raglab.read_rows(path, lists="arrow")``) is scored without a Python object per id.

    Columns written, for each k: ``recall@k``, ``hit@k``, ``precision@k``, ``ndcg@k`` (and
    ``coverage@k`` with span gold); then ``rr``, ``ap``, ``r_precision`` over the whole list
    (the default metrics of :data:`raglab.metrics.METRICS`). ``metrics=`` asks for others, such as
    ``map`` (``map@k``, trec_eval's ``map_cut_k``), which is computed only when asked for.

    Conventions (also recorded in ``attrs["raglab"]["retrieval"]``, with counts in
    ``attrs["raglab"]["retrieval_counts"]``):

    - relevance: grade > 0 (a list of gold ids means grade 1 each);
    - unanswerable questions (missing/empty gold, no grade > 0) get NaN and are excluded from
      means; their number is recorded (score them with ``rows.rag.abstention()``). trec_eval
      instead scores a topic judged with only non-relevant documents as 0 and averages it in: pass
      ``no_relevant="zero"`` for that convention (then a mean equals trec_eval's ``all`` line);
    - a question with nothing retrieved (``[]``) scores 0 and is kept, and is counted;
    - precision@k divides by k; an id repeated in a list counts at its first rank only;
    - nDCG gain ``"exponential"`` (2^g - 1) or ``"linear"`` (g, trec_eval's ``ndcg_cut``).

    Parameters
    ----------
    rows : DataFrame
        The row table (one row per question).
    k : int or list of int
        Cut-off(s), e.g. ``5`` or ``[1, 3, 5, 10]``. A warning says when k exceeds the longest
        retrieved list (more than reached the model).
    metrics : str or list of str, optional
        Base names of the metrics to compute, without ``@k`` (e.g. ``["recall", "map"]``; the
        names are those of :data:`raglab.metrics.METRICS`); default: its default metrics.
    gain : {"exponential", "linear"}
        nDCG gain.
    gold_by : {"auto", "ids", "spans"}
        Gold unit: ids (``gold`` vs ``retrieved``) or character spans (``gold_spans`` vs
        ``retrieved_spans``). ``"auto"`` uses spans when both span columns exist, else ids.
    min_overlap : int, float or None
        Span gold only: characters (int) or fraction of the gold span (float in (0, 1]) that must
        reach the model for a gold span to count as found; a fraction is compared exactly (0.07 of
        a 100-character span is 7 characters). None: the whole span (1.0) under
        ``span_rule="union"``, 1 character under ``"per_chunk"``.
    span_rule : {"union", "per_chunk"}
        Span gold only. ``"union"`` (default): a gold span is found at the first rank where the
        chunks so far *together* cover ``min_overlap`` of it, so a span cut by a chunk boundary
        counts only when its pieces reached the model. ``"per_chunk"``: one chunk alone must overlap
        it by ``min_overlap`` (the old rule: with its default of 1 character it rewards cutting).
        The rule, and per metric how it is decided, is recorded in
        ``attrs["raglab"]["retrieval"]["span_rule"]``. See :mod:`raglab.metrics.spans`.
    no_relevant : {"exclude", "zero"}
        A question whose gold judges ids (or spans) but none with grade > 0: ``"exclude"``
        (default) scores it NaN, left out of means and counted as unanswerable; ``"zero"``
        scores it 0 on every metric and keeps it in means, as trec_eval does. Missing or empty
        gold is NaN either way (trec_eval never evaluates a topic without judgements). The
        choice is recorded in ``attrs["raglab"]["retrieval"]["no_relevant"]``.
    roles : Roles or dict, optional
        Column roles (:class:`raglab.Roles`), over those set on the table with :func:`raglab.with_roles`.
    **columns : str
        Column names to use instead of the defaults, by role: ``question_id``, ``retrieved``,
        ``gold``, ``gold_spans``, ``retrieved_spans`` (e.g. ``retrieved="reranked_ids"``).

    Returns
    -------
    DataFrame
        A new frame (the input is not modified), carrying the input's ``attrs``.

    Examples
    --------
    >>> import pandas as pd
    >>> from raglab.retrieval import retrieval
    >>> rows = pd.DataFrame({
    ...     "question_id": ["q1", "q2", "q3"],
    ...     "retrieved": [["d7", "d2", "d9", "d4", "d1"], ["d3"], []],
    ...     "gold": [{"d2": 3, "d4": 1, "d5": 2}, [], ["d8"]],
    ... })
    >>> scored = retrieval(rows, k=5)
    >>> scored[["recall@5", "precision@5", "rr", "ndcg@5"]].round(3).values.tolist()
    [[0.667, 0.4, 0.5, 0.516], [nan, nan, nan, nan], [0.0, 0.0, 0.0, 0.0]]
    >>> counts = scored.attrs["raglab"]["retrieval_counts"]
    >>> counts["n_unanswerable"], counts["n_nothing_retrieved"]
    (1, 1)

    trec_eval's mean: a question judged with only non-relevant ids scores 0 instead of NaN.

    >>> judged = pd.DataFrame({"question_id": ["a", "b"], "retrieved": [["d1", "d2"], ["d1"]],
    ...                        "gold": [{"d2": 1}, {"d1": 0}]})
    >>> float(retrieval(judged, k=2)["ap"].mean()), float(retrieval(judged, k=2, no_relevant="zero")["ap"].mean())
    (0.5, 0.25)

    A metric outside the defaults, by name:

    >>> retrieval(rows, k=[1, 5], metrics=["map"]).filter(like="map@").round(3).values.tolist()
    [[0.0, 0.333], [nan, nan], [0.0, 0.0]]
    """
    caller_name = caller("raglab.retrieval.retrieval")
    df = rows
    cols = table_roles(df, roles, columns, caller=caller_name)
    ks = _metrics._check_ks(k)
    _metrics._check_gain(gain)
    _metrics._check_no_relevant(no_relevant)
    check_option("gold_by", gold_by, ["auto", "ids", "spans"])
    qid = resolve_column(df, "question_id", cols.question_id, caller=caller_name, required=False)
    if qid is not None:
        check_unique_ids(df, qid, caller=caller_name)
    use_spans = gold_by == "spans" or (
        gold_by == "auto" and cols.column("gold_spans") in df.columns and cols.column("retrieved_spans") in df.columns
    )
    try:
        select(metrics, "spans" if use_spans else "ids")
    except ValueError as exc:
        raise ValueError(f"{caller_name}: {exc}") from None
    conventions = _conventions(ks, gain, no_relevant)
    score = _score_spans if use_spans else _score_ids
    scores, judged_none_relevant, ranked_col, gold_col, lengths = score(
        df, cols, ks, metrics=metrics, gain=gain, no_relevant=no_relevant, span_rule=span_rule,
        min_overlap=min_overlap, conventions=conventions, caller=caller_name, qid=qid,
    )
    if "rr" not in scores or not np.nansum(scores["rr"]) > 0:
        # A gold id found anywhere proves both columns share a kind of id, so every id is scanned for its
        # type only when nothing matched (that scan cost as much as the scoring).
        _check_id_types(df, ranked_col, gold_col, caller_name, spans=use_spans)
    longest = int(lengths.max()) if len(df) else 0
    _warn_too_deep(ks, longest, ranked_col, len(df), caller_name)
    # Unanswerable (no gold grade > 0): NaN in every metric, or 0 under no_relevant="zero" for judged questions.
    unanswerable = np.logical_and.reduce([np.isnan(v) for v in scores.values()]) | judged_none_relevant
    out = _with_scores(df, scores, conventions, caller_name)
    update_meta(
        out,
        "retrieval_counts",
        {
            "n_questions": int(len(df)),
            "n_unanswerable": int(unanswerable.sum()),
            "n_judged_none_relevant": int(judged_none_relevant.sum()),
            "n_nothing_retrieved": int(((lengths == 0) & ~unanswerable).sum()),
            "max_retrieved": longest,
        },
    )
    return out


def _conventions(ks: list[int], gain: str, no_relevant: str) -> dict[str, Any]:
    """The conventions every retrieval score follows, as recorded in ``attrs["raglab"]["retrieval"]``."""
    return {
        "k": ks,
        "k_counts": "chunks that reached the model",
        "gain": gain,
        "relevance": "grade > 0",
        "no_relevant": no_relevant,
        "unanswerable": (
            "NaN, excluded from means"
            if no_relevant == "exclude"
            else "missing or empty gold: NaN, excluded from means; gold judged with no grade > 0: "
            "scores 0, kept in means (trec_eval)"
        ),
        "nothing_retrieved": "scores 0, kept in means",
        "precision": "divides by k",
    }


def _score_spans(
    df: pd.DataFrame, cols: Roles, ks: list[int], *, metrics: Any, gain: str, no_relevant: str, span_rule: str,
    min_overlap: Any, conventions: dict[str, Any], caller: str, qid: str | None,
) -> tuple[dict[str, np.ndarray], np.ndarray, str, str, np.ndarray]:
    """Scores against gold character spans: (scores, judged-none-relevant mask, ranked and gold columns, lengths)."""
    span_rule, min_overlap = check_span_rule(span_rule, min_overlap)
    gold_col = resolve_column(df, "gold_spans", cols.gold_spans, caller=caller)
    ranked_col = resolve_column(df, "retrieved_spans", cols.retrieved_spans, caller=caller)
    # The ids that go with these spans: `retrieved` when given, the default pair otherwise.
    ids_col = cols.retrieved if cols.retrieved is not None else "retrieved" if cols.retrieved_spans is None else None
    if ids_col is not None and ids_col in df.columns and ids_col != ranked_col:
        _check_span_lengths(df, ids_col, ranked_col, caller, qid)
    scores, judged_none_relevant = guarded(
        df,
        lambda: _span_retrieval_scores(
            df[ranked_col], df[gold_col], ks, span_rule=span_rule, min_overlap=min_overlap, gain=gain,
            no_relevant=no_relevant, metrics=metrics,
        ),
        {"retrieved_spans": ranked_col, "gold_spans": gold_col},
        caller,
        qid,
    )
    conventions.update(
        {
            "gold_unit": "character spans",
            "retrieved_column": ranked_col,
            "span_rule": span_rule_record(span_rule, min_overlap),
        }
    )
    return scores, judged_none_relevant, ranked_col, gold_col, list_lengths(df[ranked_col])


def _score_ids(
    df: pd.DataFrame, cols: Roles, ks: list[int], *, metrics: Any, gain: str, no_relevant: str, span_rule: str,
    min_overlap: Any, conventions: dict[str, Any], caller: str, qid: str | None,
) -> tuple[dict[str, np.ndarray], np.ndarray, str, str, np.ndarray]:
    """Scores against gold ids: (scores, judged-none-relevant mask, ranked and gold columns, lengths)."""
    ranked_col = resolve_column(df, "retrieved", cols.retrieved, caller=caller)
    gold_col = resolve_column(df, "gold", cols.gold, caller=caller)
    _check_grades(df, gold_col, gain, caller, qid)
    measured: list[np.ndarray] = []  # the kernel's list lengths, saving a pass over the column
    scores, judged_none_relevant = guarded(
        df,
        lambda: _metrics._retrieval_scores(
            df[ranked_col], df[gold_col], ks, gain=gain, no_relevant=no_relevant, lengths=measured, metrics=metrics
        ),
        {"retrieved": ranked_col, "gold": gold_col},
        caller,
        qid,
    )
    conventions.update(
        {
            "gold_unit": "ids",
            "retrieved_column": ranked_col,
            "duplicates": "an id repeated in a ranked list counts at its first rank only",
        }
    )
    lengths = measured[0] if measured else list_lengths(df[ranked_col])
    return scores, judged_none_relevant, ranked_col, gold_col, lengths


def _warn_too_deep(ks: list[int], longest: int, ranked_col: str, n: int, caller: str) -> None:
    too_deep = [k_ for k_ in ks if k_ > longest]
    if too_deep and n:
        warn(
            f"{caller}: k={too_deep} is larger than the longest list in {ranked_col!r} ({longest}): k counts "
            f"the chunks that reached the model, so nothing below rank {longest} can be found and precision "
            "still divides by k. If that column holds the retriever's raw candidates, pass the column of "
            "what reached the model instead."
        )


def _with_scores(
    df: pd.DataFrame, scores: Mapping[str, np.ndarray], conventions: dict[str, Any], caller: str
) -> pd.DataFrame:
    """A copy of ``df`` with the score columns and their conventions; earlier scores at other depths kept if alike."""
    names = list(scores)
    out = df.copy(deep=False)
    previous = get_meta(df).get("retrieval", {})
    ours = set(previous.get("columns", [])) if isinstance(previous, dict) else set()
    replaced = [name for name in names if name in df.columns and name not in ours]
    if replaced:
        warn(
            f"{caller}: the returned copy replaces existing column(s) {replaced} with the new scores "
            "(the input frame is unchanged)."
        )
    for name in names:
        out[name] = scores[name]
    stale = [c for c in previous.get("columns", []) if c not in names and c in out.columns] if ours else []

    def rules(record: Mapping[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in record.items() if key not in ("k", "columns")}

    if stale and rules(previous) == rules(conventions):
        # Same conventions at other depths: keep those columns and record every depth.
        ks_all = sorted(set(previous.get("k", [])) | set(conventions["k"]))
        conventions["k"], names = ks_all, [*stale, *names]
    elif stale:
        out = out.drop(columns=stale)
        warn(
            f"{caller}: dropped {stale} from the returned copy: they were scored with other conventions "
            "than these (attrs describe one set of conventions per table)."
        )
    conventions["columns"] = names
    update_meta(out, "retrieval", conventions)
    return out


def depth_gap(
    rows: pd.DataFrame,
    candidates: str = "candidates",
    *,
    candidate_spans: str | None = None,
    k: int | None = None,
    candidate_k: int | None = None,
    gold_by: str = "auto",
    min_overlap: int | float | None = None,
    span_rule: str = "union",
    roles: Roles | Mapping[str, str | None] | None = None,
    **columns: str,
) -> pd.DataFrame:
    """Recall and hit at the candidate depth next to the context depth: what reranking/truncation lost.

    ``retrieved`` holds what reached the model (context depth ``k``, default: its longest
    list); ``candidates`` holds the retriever's raw candidates (default depth: their longest
    list). Metrics scored on the candidates overstate what the model saw; this shows both.
    Both columns are scored by :func:`retrieval` with the same conventions, so gold may be ids
    or character spans (then ``candidate_spans`` gives the span of each candidate).

    Parameters
    ----------
    rows : DataFrame
        The row table.
    candidates, candidate_spans : str
        Columns of the retriever's raw candidates (and their spans, for span gold).
    k, candidate_k : int, optional
        Context and candidate depths (default: the longest list of each column).
    gold_by, min_overlap, span_rule, roles, **columns
        As in :func:`retrieval` (errors of the scoring itself name the matching ``retrieval``:
        ``rag.depth_gap`` -> ``rag.retrieval``).

    Returns
    -------
    DataFrame
        One row per metric (``recall``, ``hit``): ``context_k``, ``context`` (mean over
        answerable questions), ``candidate_k``, ``candidates``, ``gap`` (candidates - context),
        ``n_lost`` (questions whose score is higher on the candidates), ``n``,
        ``n_unanswerable``.

    Examples
    --------
    >>> import pandas as pd
    >>> from raglab.retrieval import depth_gap
    >>> rows = pd.DataFrame({"retrieved": [["d1"], ["d4"]], "candidates": [["d1", "d2"], ["d4", "d5"]],
    ...                      "gold": [["d2"], ["d4"]]})
    >>> gap = depth_gap(rows)
    >>> gap[["metric", "context_k", "context", "candidate_k", "candidates", "n_lost"]].values.tolist()
    [['recall', 1, 0.5, 2, 1.0, 1], ['hit', 1, 0.5, 2, 1.0, 1]]
    """
    caller_name = caller("raglab.retrieval.depth_gap")
    df = rows
    cols = table_roles(df, roles, columns, caller=caller_name)
    ranked_col = resolve_column(df, "retrieved", cols.retrieved, caller=caller_name)
    qid_col = resolve_column(df, "question_id", cols.question_id, caller=caller_name, required=False)
    if candidates not in df.columns:
        raise missing_column_error(df, candidates, role=None, caller=caller_name, keyword="candidates")
    if candidate_spans is not None and candidate_spans not in df.columns:
        raise missing_column_error(df, candidate_spans, role=None, caller=caller_name, keyword="candidate_spans")
    span_gold = resolve_column(df, "gold_spans", cols.gold_spans, caller=caller_name, required=False)
    id_gold = resolve_column(df, "gold", cols.gold, caller=caller_name, required=False)
    # retrieval()'s "auto" rule (spans when span gold comes with retrieved spans), plus spans when span gold is the
    # only gold (ids could not be scored); resolved once so both depths score the same unit
    span_ranked = resolve_column(df, "retrieved_spans", cols.retrieved_spans, caller=caller_name, required=False)
    uses_spans = gold_by == "spans" or (
        gold_by == "auto" and span_gold is not None and (id_gold is None or span_ranked is not None)
    )
    if uses_spans and candidate_spans is None:
        raise RowTableError(
            f"{caller_name}: the gold is character spans, so the candidates' spans are needed too; "
            "pass candidate_spans='your_column' (one span per candidate id, same order)."
        )

    def depth(column: str, given: int | None, name: str) -> int:
        if given is not None:
            return _metrics._check_k(given, name)
        lengths = list_lengths(df[column])
        return max(1, int(lengths.max()) if len(lengths) else 1)

    depths = {"context": depth(ranked_col, k, "k"), "candidates": depth(candidates, candidate_k, "candidate_k")}
    common = {"gold_by": "spans" if uses_spans else "ids", "min_overlap": min_overlap, "span_rule": span_rule}
    with warnings.catch_warnings(), called_as(_scoring_name(caller_name)):
        warnings.filterwarnings("ignore", message=".*replaces existing column")
        scored = {
            "context": retrieval(df, k=depths["context"], roles=replace(cols, retrieved=ranked_col), **common),
            "candidates": retrieval(df, k=depths["candidates"], roles=replace(
                cols, retrieved=candidates, retrieved_spans=candidate_spans), **common),
        }
    # after scoring, so that a malformed cell is reported by retrieval's own checks first
    _check_context_in_candidates(df, ranked_col, candidates, depths["context"], depths["candidates"], caller_name, qid_col)
    records = []
    for metric in ("recall", "hit"):
        context = scored["context"][f"{metric}@{depths['context']}"].to_numpy(dtype=float)
        wide = scored["candidates"][f"{metric}@{depths['candidates']}"].to_numpy(dtype=float)
        answerable = ~np.isnan(context)
        records.append(
            {
                "metric": metric,
                "context_k": depths["context"],
                "context": float(context[answerable].mean()) if answerable.any() else np.nan,
                "candidate_k": depths["candidates"],
                "candidates": float(wide[answerable].mean()) if answerable.any() else np.nan,
                "gap": float((wide[answerable] - context[answerable]).mean()) if answerable.any() else np.nan,
                "n_lost": int((wide[answerable] > context[answerable]).sum()),
                "n": int(answerable.sum()),
                "n_unanswerable": int((~answerable).sum()),
            }
        )
    table = pd.DataFrame.from_records(records)
    conventions = get_meta(scored["context"]).get("retrieval", {})
    table.attrs["raglab"] = {
        "depth_gap": {
            "context_column": ranked_col,
            "candidates_column": candidates,
            "gold_unit": conventions.get("gold_unit"),
            **({"span_rule": conventions["span_rule"]} if "span_rule" in conventions else {}),
            "relevance": conventions.get("relevance", "grade > 0"),
            "unanswerable": "excluded from means",
        }
    }
    return table


def _check_context_in_candidates(
    df: pd.DataFrame, ranked_col: str, candidates: str, k: int, candidate_k: int, caller: str, qid: str | None
) -> None:
    """Refuse context chunks (top k of ``ranked_col``) that are not among the top ``candidate_k`` candidates.

    The context is chosen from the candidates, so recall on the candidates can never be lower; a
    chunk outside them means the columns or depths do not describe one pipeline, and the gap would
    be negative.
    """
    def flat(column: str, depth: int) -> tuple[np.ndarray, list[Any]]:
        cells = [c[:depth] if isinstance(c, (list, tuple, np.ndarray)) else [] for c in _as_cells(df[column])]
        lengths = np.fromiter(map(len, cells), dtype=np.int64, count=len(cells))
        return np.repeat(np.arange(len(cells)), lengths), list(itertools.chain.from_iterable(cells))

    ctx_row, ctx_ids = flat(ranked_col, k)
    cand_row, cand_ids = flat(candidates, candidate_k)
    if not ctx_row.size:
        return
    inside = pd.MultiIndex.from_arrays([ctx_row, pd.array(ctx_ids, dtype=object)]).isin(
        pd.MultiIndex.from_arrays([cand_row, pd.array(cand_ids, dtype=object)]))
    if inside.all():
        return
    outside = np.flatnonzero(~inside)
    rows = pd.unique(ctx_row[outside])
    shown = [row_label(df, int(r), qid) for r in rows[:5]]
    if "expand_neighbors" in get_meta(df):
        # expand_neighbors adds each chunk's neighbours to the context: they need not be candidates, and a
        # negative gap is then what the expansion gained, not a mismatch of columns
        warn(
            f"{caller}: {rows.size} question(s) have neighbour chunks in {ranked_col!r} (added by expand_neighbors) "
            f"that are not among the candidates in {candidates!r} (top {candidate_k}), e.g. {', '.join(shown)}: a "
            "negative gap there is recall the expansion gained beyond the candidates.",
            UserWarning,
        )
        return
    raise RowTableError(
        f"{caller}: {rows.size} question(s) have chunks in {ranked_col!r} (top {k}) that are not among the candidates "
        f"in {candidates!r} (top {candidate_k}): {', '.join(shown)}; e.g. {ctx_ids[int(outside[0])]!r}. The context is chosen "
        "from the candidates, so the candidates' recall would be lower and the gap negative. Pass the candidates the "
        "context was chosen from (or a larger candidate_k).",
        column=candidates, rows=[int(r) for r in rows[:5]], method=caller,
    )


def _scoring_name(caller: str) -> str:
    """The name retrieval's errors give for a depth_gap caller name (``rag.depth_gap`` -> ``rag.retrieval``)."""
    head, _, last = caller.rpartition(".")
    return f"{head}.retrieval" if last == "depth_gap" else caller


# --------------------------------------------------------------------------------------------------
# Id types: refuse ids that can never match
# --------------------------------------------------------------------------------------------------


def _id_types(values: Any, *, spans: bool) -> set[str]:
    """The kinds of id ('text' or 'number') anywhere in an id, gold or span column (every cell is looked at)."""
    arrow = None if spans else _arrow_lists(values)
    if arrow is not None:
        kind = _arrow_id_kind(arrow.type.value_type)
        if kind is not None:
            return {kind} if sum(len(chunk.flatten()) for chunk in arrow.chunks) else set()
        values = arrow.to_pylist()  # not ids: let the cell checks describe them
    values = _as_cells(values)  # a 1-D object array: iterated in C, not cell by cell through pandas
    if spans:
        types = {type(x.get("doc_id")) for cell in values if isinstance(cell, (list, tuple, np.ndarray))
                 for x in cell if isinstance(x, Mapping)}
    else:  # map(type, chain(...)) walks every id in C: all cells, no sample
        cells = (cell for cell in values if isinstance(cell, (list, tuple, np.ndarray, Mapping)))
        types = set(map(type, itertools.chain.from_iterable(cells)))
    kinds: set[str] = set()
    for kind in types:
        if issubclass(kind, str):
            kinds.add("text")
        elif issubclass(kind, (int, np.integer)) and not issubclass(kind, (bool, np.bool_)):
            kinds.add("number")
    return kinds


def _check_span_lengths(df: pd.DataFrame, ids_col: str, spans_col: str, caller: str, qid: str | None) -> None:
    """``retrieved_spans`` gives the span of each entry of ``retrieved``: refuse lists of other lengths."""
    span_lengths = span_list_lengths(df[spans_col].to_numpy(dtype=object))
    id_lengths = list_lengths(df[ids_col])
    bad = np.flatnonzero((span_lengths >= 0) & (span_lengths != id_lengths))
    if bad.size:
        shown = bad[:5].tolist()
        which = f"{qid} {[str(df[qid].iloc[p]) for p in shown]}" if qid is not None else f"rows {shown}"
        raise RowTableError(
            f"{caller}: column {spans_col!r} must give one span per entry of {ids_col!r} (same order), but "
            f"{bad.size} question(s) differ in length ({which}; e.g. {int(id_lengths[bad[0]])} ids, "
            f"{int(span_lengths[bad[0]])} spans). Fix the spans, or drop {ids_col!r} if the spans alone are the ranking."
        )


def _check_grades(df: pd.DataFrame, gold_col: str, gain: str, caller: str, qid: str | None) -> None:
    """Refuse grades that cannot be scored: non-finite ones, and (exponential gain 2**g - 1) g >= 1024."""
    cells = df[gold_col].to_numpy(dtype=object)
    is_dict = np.fromiter(map(operator.is_, map(type, cells), itertools.repeat(dict)), dtype=bool, count=len(cells))
    # Plain dicts (the usual gold) are read in C; other mappings, rare, through a per-cell generator.
    others = (c.values() for c in cells[~is_dict] if isinstance(c, Mapping))
    try:  # one pass over every dict grade; only a table with a grade to refuse is walked row by row
        flat = np.fromiter(itertools.chain(itertools.chain.from_iterable(map(dict.values, cells[is_dict])),
                                           itertools.chain.from_iterable(others)), dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        flat = None  # grades that are not plain numbers: the walk below words the problem
    if flat is not None and not (np.isinf(flat).any() or (gain == "exponential" and (flat >= 1024).any())):
        return
    for pos, cell in enumerate(cells):
        if not isinstance(cell, Mapping) or not cell:
            continue
        values = [g for g in cell.values()
                  if isinstance(g, (int, float, np.number)) and not isinstance(g, (bool, np.bool_))]
        grades = [_grade_value(g) for g in values]
        bad = [value for value, grade in zip(values, grades) if np.isinf(grade)]
        if bad:
            shown = repr(bad[0]) if isinstance(bad[0], (float, np.floating)) else "an integer beyond float range"
            raise RowTableError(
                f"{caller}: column {gold_col!r} ({row_label(df, pos, qid)}) has grade {shown}; grades must be finite "
                "numbers (e.g. 0-3). Fix the gold."
            )
        if gain == "exponential" and grades and max(grades) >= 1024:
            raise RowTableError(
                f"{caller}: column {gold_col!r} ({row_label(df, pos, qid)}) has grade {max(grades)!r}; exponential gain "
                "2**g - 1 overflows for grades of 1024 and more. Pass gain='linear', or rescale the grades."
            )


def _check_id_types(df: pd.DataFrame, ranked_col: str, gold_col: str, caller: str, *, spans: bool = False) -> None:
    """Refuse ids that can never match: numbers on one side, text on the other (7 != "7" in Python)."""
    ranked = _id_types(df[ranked_col], spans=spans)
    gold = _id_types(df[gold_col], spans=spans)
    if ranked and gold and not ranked & gold:
        what = "doc_id values" if spans else "ids"
        raise RowTableError(
            f"{caller}: {ranked_col!r} holds {what} as {'/'.join(sorted(ranked))} but {gold_col!r} as "
            f"{'/'.join(sorted(gold))}, so no retrieved id can ever match a gold one and every score would be 0. "
            f"Convert one side, e.g. df[{ranked_col!r}] = df[{ranked_col!r}].map(lambda ids: [str(i) for i in ids])."
        )
