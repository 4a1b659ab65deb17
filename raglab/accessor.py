"""The ``df.rag`` accessor: a thin, validated layer over raglab's pure functions.

Registered when ``import raglab`` runs. The accessor stores only the frame and never raises in
``__init__`` (pandas builds it on every attribute access, and an exception there would break
``dir(df)`` for every DataFrame); each method resolves its columns, validates, and calls a
function that can be used without pandas.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from raglab import io as _io
from raglab import metrics as _metrics
from raglab._meta import get_meta, update_meta
from raglab._rowtable import (
    ROLES,
    RowTableError,
    check_column,
    check_unique_ids,
    missing_column_error,
    resolve_column,
    validate_rows,
)

__all__ = ["RagAccessor"]


@pd.api.extensions.register_dataframe_accessor("rag")
class RagAccessor:
    """RAG evaluation methods on a row table (one row per question per run).

    Default column roles: ``question_id``, ``question``, ``retrieved``, ``gold``, ``gold_spans``,
    ``retrieved_spans``, ``context``, ``answer``, ``reference``. Every method takes keyword
    overrides, e.g. ``rows.rag.validate(retrieved="reranked_ids")``.
    """

    def __init__(self, pandas_obj: pd.DataFrame) -> None:
        self._df = pandas_obj

    # ---- the table itself -------------------------------------------------------------------------
    def validate(
        self,
        *,
        require: tuple[str, ...] | list[str] = ("question_id",),
        question_id: str | None = None,
        question: str | None = None,
        retrieved: str | None = None,
        gold: str | None = None,
        gold_spans: str | None = None,
        retrieved_spans: str | None = None,
        context: str | None = None,
        answer: str | None = None,
        reference: str | None = None,
    ) -> pd.DataFrame:
        """Check the row table and return it unchanged (so it chains).

        Every known column role that is present is checked: ``question_id`` unique and not missing;
        ``retrieved`` a list of ids per row; ``gold`` a list of ids or a dict id -> grade (missing or
        empty = unanswerable); spans lists of ``{doc_id, start, end}`` with ``0 <= start <= end``;
        ``retrieved_spans`` one per retrieved id; text columns str or None.

        Parameters
        ----------
        require : sequence of str
            Roles that must be present (default: just ``question_id``).
        question_id, question, retrieved, gold, gold_spans, retrieved_spans, context, answer, reference : str, optional
            Column names to use instead of the defaults.

        Raises
        ------
        raglab.RowTableError
            Naming the method, the column, the first offending rows and the fix (a
            ``raglab.MissingColumnError``, also a ``KeyError``, when a column is absent).

        Examples
        --------
        >>> import pandas as pd, raglab
        >>> rows = pd.DataFrame({"question_id": ["q1"], "retrieved": [["d1", "d2"]], "gold": [["d2"]]})
        >>> rows.rag.validate(require=["retrieved", "gold"]) is rows
        True
        """
        validate_rows(
            self._df,
            method="rag.validate",
            require=require,
            columns={
                "question_id": question_id,
                "question": question,
                "retrieved": retrieved,
                "gold": gold,
                "gold_spans": gold_spans,
                "retrieved_spans": retrieved_spans,
                "context": context,
                "answer": answer,
                "reference": reference,
            },
        )
        return self._df

    @property
    def meta(self) -> dict[str, Any]:
        """A copy of the run's raglab metadata (``df.attrs["raglab"]``): eval set, judge, conventions."""
        return get_meta(self._df)

    # ---- files ------------------------------------------------------------------------------------
    def write(self, path: str | os.PathLike[str], *, format: str | None = None, header: bool = True) -> Path:
        """Write the rows to JSONL, CSV or Parquet; see :func:`raglab.io.write_rows`.

        Examples
        --------
        >>> import pandas as pd, raglab, tempfile, os
        >>> rows = pd.DataFrame({"question_id": ["q1"], "retrieved": [["d1"]]})
        >>> rows.rag.write(os.path.join(tempfile.mkdtemp(), "run.parquet")).suffix
        '.parquet'
        """
        return _io.write_rows(self._df, path, format=format, header=header)

    def write_trec(
        self,
        run: str | os.PathLike[str] | None = None,
        qrels: str | os.PathLike[str] | None = None,
        *,
        run_name: str | None = None,
        question_id: str = "question_id",
        retrieved: str = "retrieved",
        scores: str | None = "retrieved_scores",
        gold: str = "gold",
    ) -> None:
        """Write a TREC run file and/or qrels file; see :func:`raglab.io.write_trec`.

        Examples
        --------
        >>> import pandas as pd, raglab, tempfile, os
        >>> rows = pd.DataFrame({"question_id": ["q1"], "retrieved": [["d1", "d2"]], "gold": [{"d2": 2}]})
        >>> folder = tempfile.mkdtemp()
        >>> rows.rag.write_trec(run=os.path.join(folder, "run.txt"), qrels=os.path.join(folder, "qrels.txt"))
        >>> open(os.path.join(folder, "qrels.txt")).read()
        'q1 0 d2 2\\n'
        """
        _io.write_trec(
            self._df,
            run,
            qrels,
            run_name=run_name,
            question_id=question_id,
            retrieved=retrieved,
            scores=scores,
            gold=gold,
        )

    # ---- retrieval metrics ------------------------------------------------------------------------
    def retrieval(
        self,
        k: int | Iterable[int] = 5,
        *,
        gain: str = "exponential",
        gold_by: str = "auto",
        min_overlap: int | float = 1,
        question_id: str | None = None,
        retrieved: str | None = None,
        gold: str | None = None,
        gold_spans: str | None = None,
        retrieved_spans: str | None = None,
    ) -> pd.DataFrame:
        """Score retrieval per question: a copy of the rows plus one column per metric and k.

        ``k`` counts the chunks that **reached the model** (after reranking and truncation): the
        ranked ids come from ``retrieved`` and never from a raw-candidates column such as
        ``candidates`` (see :meth:`depth_gap` for recall at the candidate depth). Computed in bulk
        with numpy; equal to :mod:`raglab.metrics`' per-question functions exactly.

        Columns written, for each k: ``recall@k``, ``hit@k``, ``precision@k``, ``ndcg@k`` (and
        ``coverage@k`` with span gold); then ``rr``, ``ap``, ``r_precision`` over the whole list.

        Conventions (also recorded in ``attrs["raglab"]["retrieval"]``, with counts in
        ``attrs["raglab"]["retrieval_counts"]``):

        - relevance: grade > 0 (a list of gold ids means grade 1 each);
        - unanswerable questions (missing/empty gold, no grade > 0) get NaN and are excluded from
          means; their number is recorded (score them with :meth:`abstention`);
        - a question with nothing retrieved (``[]``) scores 0 and is kept, and is counted;
        - precision@k divides by k; an id repeated in a list counts at its first rank only;
        - nDCG gain ``"exponential"`` (2^g - 1) or ``"linear"`` (g, trec_eval's ``ndcg_cut``).

        Parameters
        ----------
        k : int or list of int
            Cut-off(s), e.g. ``5`` or ``[1, 3, 5, 10]``. A warning says when k exceeds the longest
            retrieved list (more than reached the model).
        gain : {"exponential", "linear"}
            nDCG gain.
        gold_by : {"auto", "ids", "spans"}
            Gold unit: ids (``gold`` vs ``retrieved``) or character spans (``gold_spans`` vs
            ``retrieved_spans``). ``"auto"`` uses spans when both span columns exist, else ids.
        min_overlap : int or float
            Span gold only: characters (int) or fraction of the gold span (float in (0, 1]) a chunk
            must overlap to be relevant. See :mod:`raglab._spans` for the full rules.
        question_id, retrieved, gold, gold_spans, retrieved_spans : str, optional
            Column names to use instead of the defaults.

        Returns
        -------
        DataFrame
            A new frame (the input is not modified), carrying the input's ``attrs``.

        Examples
        --------
        >>> import pandas as pd, raglab
        >>> rows = pd.DataFrame({
        ...     "question_id": ["q1", "q2", "q3"],
        ...     "retrieved": [["d7", "d2", "d9", "d4", "d1"], ["d3"], []],
        ...     "gold": [{"d2": 3, "d4": 1, "d5": 2}, [], ["d8"]],
        ... })
        >>> scored = rows.rag.retrieval(k=5)
        >>> scored[["recall@5", "precision@5", "rr", "ndcg@5"]].round(3).values.tolist()
        [[0.667, 0.4, 0.5, 0.516], [nan, nan, nan, nan], [0.0, 0.0, 0.0, 0.0]]
        >>> counts = scored.rag.meta["retrieval_counts"]
        >>> counts["n_unanswerable"], counts["n_nothing_retrieved"]
        (1, 1)
        """
        method = "rag.retrieval"
        df = self._df
        ks = _metrics._check_ks(k)
        _metrics._check_gain(gain)
        if gold_by not in ("auto", "ids", "spans"):
            raise ValueError(f"The value for `gold_by` must be one of ['auto', 'ids', 'spans'], but {gold_by!r} was passed.")
        qid = resolve_column(df, "question_id", question_id, method=method, required=False)
        if qid is not None:
            check_unique_ids(df, qid, method=method)
        use_spans = gold_by == "spans" or (
            gold_by == "auto"
            and (gold_spans or "gold_spans") in df.columns
            and (retrieved_spans or "retrieved_spans") in df.columns
        )
        conventions: dict[str, Any] = {
            "k": ks,
            "k_counts": "chunks that reached the model",
            "gain": gain,
            "relevance": "grade > 0",
            "unanswerable": "NaN, excluded from means",
            "nothing_retrieved": "scores 0, kept in means",
            "precision": "divides by k",
        }
        if use_spans:
            from raglab._spans import check_min_overlap, span_retrieval_scores

            value, unit = check_min_overlap(min_overlap)
            gold_col = resolve_column(df, "gold_spans", gold_spans, method=method)
            ranked_col = resolve_column(df, "retrieved_spans", retrieved_spans, method=method)
            scores = self._guarded(
                lambda: span_retrieval_scores(df[ranked_col], df[gold_col], ks, min_overlap=min_overlap, gain=gain),
                {"retrieved_spans": ranked_col, "gold_spans": gold_col},
                method,
                qid,
            )
            conventions.update(
                {
                    "gold_unit": "character spans",
                    "retrieved_column": ranked_col,
                    "span_rule": {
                        "min_overlap": value,
                        "unit": unit,
                        "relevant_chunk": "overlaps a gold span of the same doc_id by >= min_overlap",
                        "recall": "gold spans found (a span split over two chunks counts once)",
                        "coverage": "gold characters inside the union of the top-k chunk spans",
                    },
                }
            )
        else:
            ranked_col = resolve_column(df, "retrieved", retrieved, method=method)
            gold_col = resolve_column(df, "gold", gold, method=method)
            scores = self._guarded(
                lambda: _metrics.retrieval_scores(df[ranked_col], df[gold_col], ks, gain=gain),
                {"retrieved": ranked_col, "gold": gold_col},
                method,
                qid,
            )
            conventions.update(
                {
                    "gold_unit": "ids",
                    "retrieved_column": ranked_col,
                    "duplicates": "an id repeated in a ranked list counts at its first rank only",
                }
            )
        lengths = np.fromiter(map(len, df[ranked_col].to_numpy(dtype=object)), dtype=np.int64, count=len(df))
        longest = int(lengths.max()) if len(df) else 0
        too_deep = [k_ for k_ in ks if k_ > longest]
        if too_deep and len(df):
            warnings.warn(
                f"{method}: k={too_deep} is larger than the longest list in {ranked_col!r} ({longest}): k counts "
                f"the chunks that reached the model, so nothing below rank {longest} can be found and precision "
                "still divides by k. If that column holds the retriever's raw candidates, pass the column of "
                "what reached the model instead.",
                UserWarning,
                stacklevel=2,
            )
        unanswerable = np.isnan(scores["rr"])
        names = list(scores)
        out = df.copy(deep=False)
        previous = get_meta(df).get("retrieval", {})
        ours = set(previous.get("columns", [])) if isinstance(previous, dict) else set()
        replaced = [name for name in names if name in df.columns and name not in ours]
        if replaced:
            warnings.warn(
                f"{method}: the returned copy replaces existing column(s) {replaced} with the new scores "
                "(the input frame is unchanged).",
                UserWarning,
                stacklevel=2,
            )
        for name in names:
            out[name] = scores[name]
        conventions["columns"] = names
        update_meta(out, "retrieval", conventions)
        update_meta(
            out,
            "retrieval_counts",
            {
                "n_questions": int(len(df)),
                "n_unanswerable": int(unanswerable.sum()),
                "n_nothing_retrieved": int(((lengths == 0) & ~unanswerable).sum()),
                "max_retrieved": longest,
            },
        )
        return out

    def _guarded(self, compute: Any, columns: dict[str, str], method: str, qid: str | None) -> Any:
        """Run a bulk computation; on a bad cell, raise the row table's standard error for that column."""
        try:
            return compute()
        except _metrics.BadCellError as exc:
            column = columns.get(exc.what)
            if column is not None:
                check_column(self._df, column, ROLES[exc.what].kind, method=method, id_column=qid)
            label = f" ({qid} {self._df[qid].iloc[exc.row]!r})" if qid is not None and 0 <= exc.row < len(self._df) else ""
            raise RowTableError(f"{method}: column {column!r}: {exc}{label}") from None

    def depth_gap(
        self,
        candidates: str = "candidates",
        *,
        k: int | None = None,
        candidate_k: int | None = None,
        question_id: str | None = None,
        retrieved: str | None = None,
        gold: str | None = None,
    ) -> pd.DataFrame:
        """Recall and hit at the candidate depth next to the context depth: what reranking/truncation lost.

        ``retrieved`` holds what reached the model (context depth ``k``, default: its longest
        list); ``candidates`` holds the retriever's raw candidates (default depth: their longest
        list). Metrics scored on the candidates overstate what the model saw; this shows both.
        Gold ids only (for span gold, score each column with :meth:`retrieval`).

        Returns
        -------
        DataFrame
            One row per metric (``recall``, ``hit``): ``context_k``, ``context`` (mean over
            answerable questions), ``candidate_k``, ``candidates``, ``gap`` (candidates - context),
            ``n_lost`` (questions whose score is higher on the candidates), ``n``,
            ``n_unanswerable``.

        Examples
        --------
        >>> import pandas as pd, raglab
        >>> rows = pd.DataFrame({"retrieved": [["d1"], ["d4"]], "candidates": [["d1", "d2"], ["d4", "d5"]],
        ...                      "gold": [["d2"], ["d4"]]})
        >>> gap = rows.rag.depth_gap()
        >>> gap[["metric", "context_k", "context", "candidate_k", "candidates", "n_lost"]].values.tolist()
        [['recall', 1, 0.5, 2, 1.0, 1], ['hit', 1, 0.5, 2, 1.0, 1]]
        """
        method = "rag.depth_gap"
        df = self._df
        qid = resolve_column(df, "question_id", question_id, method=method, required=False)
        ranked_col = resolve_column(df, "retrieved", retrieved, method=method)
        gold_col = resolve_column(df, "gold", gold, method=method)
        if candidates not in df.columns:
            raise missing_column_error(df, candidates, role=None, method=method)
        depths = {}
        for name, column, given in (("context", ranked_col, k), ("candidates", candidates, candidate_k)):
            if given is None:
                lengths = self._guarded(
                    lambda column=column: _metrics._check_sequences(_metrics._as_cells(df[column]), "retrieved"),
                    {"retrieved": column},
                    method,
                    qid,
                )
                given = max(1, int(lengths.max()) if lengths.size else 1)
            depths[name] = _metrics._check_k(given, "k" if name == "context" else "candidate_k")
        scores = {
            name: self._guarded(
                lambda column=column, name=name: _metrics.retrieval_scores(df[column], df[gold_col], depths[name]),
                {"retrieved": column, "gold": gold_col},
                method,
                qid,
            )
            for name, column in (("context", ranked_col), ("candidates", candidates))
        }
        records = []
        for metric in ("recall", "hit"):
            context = scores["context"][f"{metric}@{depths['context']}"]
            wide = scores["candidates"][f"{metric}@{depths['candidates']}"]
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
        table.attrs["raglab"] = {
            "depth_gap": {
                "context_column": ranked_col,
                "candidates_column": candidates,
                "relevance": "grade > 0",
                "unanswerable": "excluded from means",
            }
        }
        return table

    # ---- declining to answer ----------------------------------------------------------------------
    def abstention(
        self,
        declined: str | None = "declined",
        *,
        answer: str | None = None,
        patterns: Sequence[str] | None = None,
        empty_is_declined: bool = True,
        gold: str | None = None,
        gold_spans: str | None = None,
        ci: float = 0.95,
        method: str = "wilson",
    ) -> Any:
        """Score declining: correct-decline rate on unanswerable questions, false-decline rate on answerable ones.

        A question is unanswerable when its gold (``gold``, else ``gold_spans``) is missing, empty
        or has no grade > 0 — the same rule that makes its retrieval metrics NaN. Whether the
        system declined comes from the ``declined`` column (bool) when present; otherwise (or with
        ``declined=None``) from the answer text via :func:`raglab.abstention.detect_declined`, a
        lexical detector; the result states which was used.

        Parameters
        ----------
        declined : str or None
            Column of True/False flags. The default ``"declined"`` falls back to the detector when
            the column is absent; ``None`` always uses the detector.
        answer : str, optional
            Answer column for the detector (default ``"answer"``).
        patterns : sequence of str, optional
            Refusal patterns for the detector (default
            :data:`raglab.abstention.DEFAULT_REFUSAL_PATTERNS`).
        empty_is_declined : bool
            Detector only: an empty or missing answer counts as declining.
        gold, gold_spans : str, optional
            Gold column names.
        ci, method
            Interval level and method (:func:`raglab.stats.proportion_interval`).

        Returns
        -------
        raglab.abstention.AbstentionResult
            ``correct_decline`` and ``false_decline`` intervals with their n, the detector used,
            ``to_frame()``, and ``rows``: a copy of the rows with ``declined``, ``unanswerable``,
            ``correct_decline`` and ``false_decline`` columns.

        Examples
        --------
        >>> import pandas as pd, raglab
        >>> rows = pd.DataFrame({"gold": [["d1"], [], [], ["d2"]],
        ...                      "answer": ["Paris.", "I don't know.", "It is 42.", "I cannot answer that."]})
        >>> res = rows.rag.abstention()
        >>> res.correct_decline.estimate, res.false_decline.estimate, res.detector.split(" (")[0]
        (0.5, 0.5, 'raglab.abstention.detect_declined')
        """
        from raglab import abstention as _abstention

        name = "rag.abstention"
        df = self._df
        qid = resolve_column(df, "question_id", None, method=name, required=False)
        if gold is not None or "gold" in df.columns or (gold_spans is None and "gold_spans" not in df.columns):
            gold_col = resolve_column(df, "gold", gold, method=name)
            table = self._guarded(lambda: _metrics._gold_table(df[gold_col]), {"gold": gold_col}, name, qid)
            unanswerable = table.n_relevant == 0
        else:
            from raglab._spans import _gold_span_table

            gold_col = resolve_column(df, "gold_spans", gold_spans, method=name)
            spans = self._guarded(lambda: _gold_span_table(_metrics._as_cells(df[gold_col])), {"gold_spans": gold_col}, name, qid)
            relevant = spans["grade"] > 0
            unanswerable = np.bincount(spans["row"][relevant], minlength=len(df)) == 0
        if declined is not None and declined in df.columns:
            try:
                flags = _abstention._as_flags(df[declined], "declined")
            except ValueError as exc:
                raise RowTableError(f"{name}: column {declined!r} {str(exc).split('`declined` ', 1)[-1]}") from None
            detector = f"column {declined!r}"
        elif declined is not None and declined != "declined":
            raise missing_column_error(df, declined, role=None, method=name)
        else:
            answer_col = resolve_column(df, "answer", answer, method=name)
            check_column(df, answer_col, "text", method=name, id_column=qid)
            used = tuple(patterns) if patterns is not None else _abstention.DEFAULT_REFUSAL_PATTERNS
            flags = _abstention.detect_declined(df[answer_col], patterns=used, empty_is_declined=empty_is_declined)
            detector = (
                f"raglab.abstention.detect_declined (lexical, {len(used)} "
                f"{'default' if patterns is None else 'custom'} patterns, on column {answer_col!r}, "
                f"empty_is_declined={empty_is_declined})"
            )
        result = _abstention.score_abstention(flags, unanswerable, ci=ci, method=method, detector=detector)
        rows = df.copy(deep=False)
        rows["declined"] = flags
        rows["unanswerable"] = unanswerable
        rows["correct_decline"] = np.where(unanswerable, flags.astype(float), np.nan)
        rows["false_decline"] = np.where(unanswerable, np.nan, flags.astype(float))
        update_meta(rows, "abstention", {"detector": detector, "unanswerable": "gold missing, empty or no grade > 0"})
        result.rows = rows
        return result
