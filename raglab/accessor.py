"""The ``df.rag`` accessor: a thin, validated layer over raglab's pure functions.

Registered when ``import raglab`` runs. The accessor stores only the frame and never raises in
``__init__`` (pandas builds it on every attribute access, and an exception there would break
``dir(df)`` for every DataFrame); each method resolves its columns, validates, and calls a
function that can be used without pandas.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from raglab import io as _io
from raglab import metrics as _metrics
from raglab import runs
from raglab import stats as _stats
from raglab._meta import get_meta, update_meta
from raglab._rowtable import (
    ROLES,
    RowTableError,
    check_column,
    check_option,
    check_unique_ids,
    missing_column_error,
    resolve_column,
)

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

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

        The function is :func:`raglab.runs.validate` (``df.rag.validate(...)`` is ``raglab.runs.validate(df, ...)``).

        Examples
        --------
        >>> import pandas as pd, raglab
        >>> rows = pd.DataFrame({"question_id": ["q1"], "retrieved": [["d1", "d2"]], "gold": [["d2"]]})
        >>> rows.rag.validate(require=["retrieved", "gold"]) is rows
        True
        """
        return runs.validate(
            self._df, require=require, question_id=question_id, question=question, retrieved=retrieved, gold=gold,
            gold_spans=gold_spans, retrieved_spans=retrieved_spans, context=context, answer=answer,
            reference=reference, method_name="rag.validate"
        )

    @property
    def meta(self) -> dict[str, Any]:
        """A copy of the run's raglab metadata (``df.attrs["raglab"]``): eval set, judge, conventions."""
        return get_meta(self._df)

    # ---- judging ----------------------------------------------------------------------------------
    def judge(
        self,
        judge: Any,
        *,
        metrics: list[str] | tuple[str, ...] | str = ("faithfulness", "relevance"),
        repeats: int = 1,
        errors: str = "record",
        progress: bool = True,
        ci: float = 0.95,
        question_id: str | None = None,
        question: str | None = None,
        answer: str | None = None,
        context: str | None = None,
        reference: str | None = None,
    ) -> pd.DataFrame:
        """Score answers with a judge; returns a NEW frame with the score columns (the rows are untouched).

        Parameters
        ----------
        judge : raglab.judge.LLMJudge or raglab.judge.LexicalJudge
            The judge. Its fingerprint (model, temperature, prompts, schemas, claim splitting) is
            recorded in ``attrs["raglab"]["judge"]``; comparing runs with different fingerprints warns.
        metrics : str or list of str
            ``"faithfulness"`` (needs ``answer``, ``context``), ``"relevance"`` (``question``,
            ``answer``), ``"correctness"`` (``answer``, ``reference``), ``"declined"`` (``answer``).
        repeats : int
            Judge each row this many times to measure judge noise (see
            :func:`raglab.judge.judge_noise`); the main columns hold repeat 0.
        errors : {"record", "raise"}
            Record why a row is unscored in ``judge_error`` and go on (default), or raise
            :class:`raglab.judge.JudgeError` at the first failed call.
        progress : bool
            Show a progress bar with done, cached and failed counts.
        ci : float
            Level of the sampling interval in the judge-noise report.
        question_id, question, answer, context, reference : str, optional
            Column names to use instead of the defaults.

        Returns
        -------
        DataFrame
            The rows plus ``faithfulness``, ``faithfulness_claims``, ``faithfulness_verdicts``,
            ``faithfulness_reasons``, ``relevance``, ``relevance_reason``, ``correctness`` (+ claims,
            verdicts, reasons), ``declined``, ``declined_reason``, ``judge_error``,
            ``judge_prompt_tokens`` and ``judge_completion_tokens`` (for the metrics asked).
            Unscored rows hold NaN with the reason in ``judge_error``.

        Examples
        --------
        >>> import pandas as pd, raglab
        >>> from raglab.judge import LexicalJudge
        >>> rows = pd.DataFrame({"question_id": ["q1"], "question": ["What does EXPLAIN show?"],
        ...                      "answer": ["EXPLAIN shows 'Using index'."],
        ...                      "context": ["EXPLAIN shows 'Using index' for a covering index."]})
        >>> scored = rows.rag.judge(LexicalJudge(), metrics=["faithfulness", "relevance"], progress=False)
        >>> scored[["faithfulness", "relevance"]].iloc[0].tolist()
        [1.0, 1.0]
        """
        from raglab.judge import judge_table

        return judge_table(
            self._df, judge, metrics=metrics, repeats=repeats, errors=errors, progress=progress, ci=ci,
            question_id=question_id, question=question, answer=answer, context=context, reference=reference,
            method_name="rag.judge",
        )

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

    # ---- judge validation and eval-set sizing (raglab.agreement, raglab.sizing) --------------------
    def agreement(
        self,
        human: str | list[str],
        judge: str,
        *,
        positive: Any = None,
        labels: list[Any] | None = None,
        weights: str | None = None,
        distance: str = "rank",
        human_threshold: float | None = None,
        judge_threshold: float | None = None,
        ties: str = "drop",
        units: str | bool | None = None,
        ci: float = 0.95,
        method: str = "auto",
        n_resamples: int = 10_000,
        seed: int | None = 0,
        warn: bool = True,
    ) -> Any:
        """Validate a judge column against human labels; see :func:`raglab.agreement.report`.

        The function is :func:`raglab.runs.agreement` (``df.rag.agreement(...)`` is ``raglab.runs.agreement(df, ...)``).

        Examples
        --------
        >>> import pandas as pd, raglab
        >>> rows = pd.DataFrame({"question_id": [f"q{i}" for i in range(200)],
        ...                      "human": [1] * 150 + [0] * 50,
        ...                      "judge": [1] * 142 + [0] * 8 + [1] * 22 + [0] * 28})
        >>> rep = rows.rag.agreement("human", "judge", positive=1)
        >>> round(rep.kappa, 3), rep.miss_rate, rep.disagreements["question_id"].iloc[0]
        (0.559, 0.44, 'q142')
        """
        return runs.agreement(
            self._df, human, judge, positive=positive, labels=labels, weights=weights, distance=distance,
            human_threshold=human_threshold, judge_threshold=judge_threshold, ties=ties, units=units, ci=ci,
            method=method, n_resamples=n_resamples, seed=seed, warn=warn, method_name="rag.agreement"
        )

    def size(
        self,
        cand: pd.DataFrame,
        *,
        metric: str,
        mde: float,
        power: float = 0.8,
        alpha: float = 0.05,
        attenuation: float | None = None,
        sensitivity: float | None = None,
        specificity: float | None = None,
        judge: Any = None,
        pilot_labels: str = "true",
        slice_fraction: float = 1.0,
        alternative: str = "two-sided",
        binary: bool | None = None,
        question_id: str | None = None,
        how: str = "exact",
        allow_evalset_mismatch: bool = False,
    ) -> Any:
        """Questions needed to detect a change of ``mde`` in ``metric``, sized from a pilot of two runs.

        The function is :func:`raglab.runs.size` (``df.rag.size(...)`` is ``raglab.runs.size(df, ...)``).

        Examples
        --------
        >>> import pandas as pd, raglab
        >>> base = pd.DataFrame({"question_id": list("abcdefghij"), "hit@5": [1, 1, 0, 1, 0, 1, 1, 1, 0, 1]})
        >>> cand = pd.DataFrame({"question_id": list("abcdefghij"), "hit@5": [1, 0, 0, 1, 1, 1, 1, 1, 0, 1]})
        >>> base.rag.size(cand, metric="hit@5", mde=0.05).n
        626
        """
        return runs.size(
            self._df, cand, metric=metric, mde=mde, power=power, alpha=alpha, attenuation=attenuation,
            sensitivity=sensitivity, specificity=specificity, judge=judge, pilot_labels=pilot_labels,
            slice_fraction=slice_fraction, alternative=alternative, binary=binary, question_id=question_id, how=how,
            allow_evalset_mismatch=allow_evalset_mismatch, method_name="rag.size"
        )

    # ---- retrieval metrics ------------------------------------------------------------------------
    def retrieval(
        self,
        k: int | Iterable[int] = 5,
        *,
        gain: str = "exponential",
        gold_by: str = "auto",
        min_overlap: int | float = 1,
        no_relevant: str = "exclude",
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
          means; their number is recorded (score them with :meth:`abstention`). trec_eval instead
          scores a topic judged with only non-relevant documents as 0 and averages it in: pass
          ``no_relevant="zero"`` for that convention (then a mean equals trec_eval's ``all`` line);
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
            must overlap to be relevant; a fraction is compared exactly (0.07 of a 100-character
            span is 7 characters). See :mod:`raglab._spans` for the full rules.
        no_relevant : {"exclude", "zero"}
            A question whose gold judges ids (or spans) but none with grade > 0: ``"exclude"``
            (default) scores it NaN, left out of means and counted as unanswerable; ``"zero"``
            scores it 0 on every metric and keeps it in means, as trec_eval does. Missing or empty
            gold is NaN either way (trec_eval never evaluates a topic without judgements). The
            choice is recorded in ``attrs["raglab"]["retrieval"]["no_relevant"]``.
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

        trec_eval's mean: a question judged with only non-relevant ids scores 0 instead of NaN.

        >>> judged = pd.DataFrame({"question_id": ["a", "b"], "retrieved": [["d1", "d2"], ["d1"]],
        ...                        "gold": [{"d2": 1}, {"d1": 0}]})
        >>> float(judged.rag.retrieval(k=2)["ap"].mean()), float(judged.rag.retrieval(k=2, no_relevant="zero")["ap"].mean())
        (0.5, 0.25)
        """
        method = "rag.retrieval"
        df = self._df
        ks = _metrics._check_ks(k)
        _metrics._check_gain(gain)
        _metrics._check_no_relevant(no_relevant)
        check_option("gold_by", gold_by, ["auto", "ids", "spans"])
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
        if use_spans:
            from raglab._spans import _span_retrieval_scores, check_min_overlap

            value, unit = check_min_overlap(min_overlap)
            gold_col = resolve_column(df, "gold_spans", gold_spans, method=method)
            ranked_col = resolve_column(df, "retrieved_spans", retrieved_spans, method=method)
            _check_id_types(df, ranked_col, gold_col, method, spans=True)
            scores, judged_none_relevant = self._guarded(
                lambda: _span_retrieval_scores(
                    df[ranked_col], df[gold_col], ks, min_overlap=min_overlap, gain=gain, no_relevant=no_relevant
                ),
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
            _check_id_types(df, ranked_col, gold_col, method)
            scores, judged_none_relevant = self._guarded(
                lambda: _metrics._retrieval_scores(df[ranked_col], df[gold_col], ks, gain=gain, no_relevant=no_relevant),
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
        # Unanswerable: no gold grade > 0 (NaN, or 0 under no_relevant="zero" for judged questions).
        unanswerable = np.isnan(scores["rr"]) | judged_none_relevant
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
        stale = [c for c in previous.get("columns", []) if c not in names and c in out.columns] if ours else []
        def rules(record: Mapping[str, Any]) -> dict[str, Any]:
            return {key: value for key, value in record.items() if key not in ("k", "columns")}

        if stale and rules(previous) == rules(conventions):
            # Same conventions at other depths: keep those columns and record every depth.
            ks_all = sorted(set(previous.get("k", [])) | set(ks))
            conventions["k"], names = ks_all, [*stale, *names]
        elif stale:
            out = out.drop(columns=stale)
            warnings.warn(
                f"{method}: dropped {stale} from the returned copy: they were scored with other conventions "
                "than these (attrs describe one set of conventions per table).",
                UserWarning,
                stacklevel=2,
            )
        conventions["columns"] = names
        update_meta(out, "retrieval", conventions)
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
        candidate_spans: str | None = None,
        k: int | None = None,
        candidate_k: int | None = None,
        gold_by: str = "auto",
        min_overlap: int | float = 1,
        question_id: str | None = None,
        retrieved: str | None = None,
        gold: str | None = None,
        gold_spans: str | None = None,
        retrieved_spans: str | None = None,
    ) -> pd.DataFrame:
        """Recall and hit at the candidate depth next to the context depth: what reranking/truncation lost.

        ``retrieved`` holds what reached the model (context depth ``k``, default: its longest
        list); ``candidates`` holds the retriever's raw candidates (default depth: their longest
        list). Metrics scored on the candidates overstate what the model saw; this shows both.
        Both columns are scored by :meth:`retrieval` with the same conventions, so gold may be ids
        or character spans (then ``candidate_spans`` gives the span of each candidate).

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
        ranked_col = resolve_column(df, "retrieved", retrieved, method=method)
        if candidates not in df.columns:
            raise missing_column_error(df, candidates, role=None, method=method, keyword="candidates")
        if candidate_spans is not None and candidate_spans not in df.columns:
            raise missing_column_error(df, candidate_spans, role=None, method=method, keyword="candidate_spans")
        span_gold = resolve_column(df, "gold_spans", gold_spans, method=method, required=False)
        id_gold = resolve_column(df, "gold", gold, method=method, required=False)
        uses_spans = gold_by == "spans" or (gold_by == "auto" and span_gold is not None and id_gold is None)
        if uses_spans and candidate_spans is None:
            raise RowTableError(
                f"{method}: the gold is character spans, so the candidates' spans are needed too; "
                "pass candidate_spans='your_column' (one span per candidate id, same order)."
            )

        def depth(column: str, given: int | None, name: str) -> int:
            if given is not None:
                return _metrics._check_k(given, name)
            lengths = df[column].map(lambda v: 0 if not isinstance(v, (list, tuple, np.ndarray)) else len(v))
            return max(1, int(lengths.max()) if len(lengths) else 1)

        depths = {"context": depth(ranked_col, k, "k"), "candidates": depth(candidates, candidate_k, "candidate_k")}
        common = {"gold_by": gold_by, "min_overlap": min_overlap, "question_id": question_id,
                  "gold": gold, "gold_spans": gold_spans}
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*replaces existing column")
            scored = {
                "context": self.retrieval(k=depths["context"], retrieved=ranked_col, retrieved_spans=retrieved_spans,
                                          **common),
                "candidates": self.retrieval(k=depths["candidates"], retrieved=candidates,
                                             retrieved_spans=candidate_spans, **common),
            }
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
        conventions = scored["context"].rag.meta.get("retrieval", {})
        table.attrs["raglab"] = {
            "depth_gap": {
                "context_column": ranked_col,
                "candidates_column": candidates,
                "gold_unit": conventions.get("gold_unit"),
                "relevance": conventions.get("relevance", "grade > 0"),
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

        The function is :func:`raglab.abstention.abstention` (``df.rag.abstention(...)`` is
        ``raglab.abstention.abstention(df, ...)``); it returns an :class:`raglab.abstention.AbstentionResult`.

        Examples
        --------
        >>> import pandas as pd, raglab
        >>> rows = pd.DataFrame({"question_id": ["q1", "q2", "q3", "q4"], "gold": [["d1"], [], [], ["d2"]],
        ...                      "answer": ["Paris.", "I don't know.", "It is 42.", "I cannot answer that."]})
        >>> res = rows.rag.abstention()
        >>> res.correct_decline.estimate, res.false_decline.estimate, res.detector.split(" (")[0]
        (0.5, 0.5, 'raglab.abstention.detect_declined')
        >>> res.rows[["declined", "correct_decline", "false_decline"]].values.tolist()
        [[False, nan, 0.0], [True, 1.0, nan], [False, 0.0, nan], [True, nan, 1.0]]
        >>> res.rows.rag.summary(method="wilson")[["metric", "n", "n_excluded", "mean"]].values.tolist()
        [['correct_decline', 2, 2, 0.5], ['false_decline', 2, 2, 0.5]]
        """
        from raglab.abstention import abstention

        return abstention(
            self._df, declined, answer=answer, patterns=patterns, empty_is_declined=empty_is_declined, gold=gold,
            gold_spans=gold_spans, ci=ci, method=method, method_name="rag.abstention",
        )

    # ---- looking at rows, intervals, paired comparisons and the release gate -------------------------
    def explore(self, *, by: str | None = None, sort_by: str | None = None, **columns: str | None) -> Any:
        """Browse the rows one question at a time (ipywidgets); see :func:`raglab.widgets.explore`.

        Examples
        --------
        >>> from raglab import datasets
        >>> type(datasets.handbook().rag.explore(by="qtype")).__name__
        'VBox'
        """
        from raglab import widgets

        return widgets.explore(self._df, by=by, sort_by=sort_by, **columns)

    def summary(
        self,
        metrics: str | Sequence[str] | None = None,
        *,
        by: str | Sequence[str] | None = None,
        ci: float = 0.95,
        method: str = "auto",
        n_resamples: int = 10_000,
        seed: int | None = 0,
        units: str | bool | None = None,
        question_id: str = "question_id",
    ) -> pd.DataFrame:
        """Mean and interval per metric and slice for this run; see :func:`raglab.stats.summary`.

        The function is :func:`raglab.runs.summary` (``df.rag.summary(...)`` is ``raglab.runs.summary(df, ...)``).

        Examples
        --------
        >>> import pandas as pd, raglab
        >>> rows = pd.DataFrame({"question_id": ["q1", "q2", "q3", "q4"], "qtype": ["a", "a", "b", "b"],
        ...                      "hit@5": [1, 0, 1, 1]})
        >>> rows.rag.summary(["hit@5"], by="qtype")[["slice", "n", "mean", "method"]].to_string(index=False)
        '  slice  n  mean method\\noverall  4  0.75 wilson\\n      a  2  0.50 wilson\\n      b  2  1.00 wilson'
        """
        return runs.summary(
            self._df, metrics, by=by, ci=ci, method=method, n_resamples=n_resamples, seed=seed, units=units,
            question_id=question_id, method_name="rag.summary"
        )

    def compare(
        self,
        cand: pd.DataFrame,
        *,
        metrics: str | Sequence[str] | None = None,
        by: str | Sequence[str] | None = None,
        on: str = "question_id",
        how: str = "exact",
        units: str | bool | None = None,
        ci: float = 0.95,
        method: str = "auto",
        n_resamples: int = 10_000,
        seed: int | None = 0,
        n_permutations: int = 10_000,
        adjust: str | None = None,
        allow_evalset_mismatch: bool = False,
    ) -> pd.DataFrame:
        """Paired comparison of this run (the baseline) with ``cand``, per metric and slice.

        The function is :func:`raglab.runs.compare` (``df.rag.compare(...)`` is ``raglab.runs.compare(df, ...)``).

        Examples
        --------
        >>> import pandas as pd, raglab
        >>> base = pd.DataFrame({"question_id": [f"q{i}" for i in range(100)], "hit@5": [1, 0] * 50})
        >>> cand = base.assign(**{"hit@5": [1, 1] * 50}).iloc[::-1]   # row order does not matter
        >>> t = base.rag.compare(cand, metrics=["hit@5"])
        >>> t[["metric", "slice", "n", "base", "cand", "diff"]].to_string(index=False)
        'metric   slice   n  base  cand  diff\\n hit@5 overall 100   0.5   1.0   0.5'
        """
        return runs.compare(
            self._df, cand, metrics=metrics, by=by, on=on, how=how, units=units, ci=ci, method=method,
            n_resamples=n_resamples, seed=seed, n_permutations=n_permutations, adjust=adjust,
            allow_evalset_mismatch=allow_evalset_mismatch, method_name="rag.compare"
        )

    def gate(
        self,
        cand: pd.DataFrame,
        *,
        margin: float | Mapping[str, float],
        metrics: str | Sequence[str],
        by: str | Sequence[str] | None = None,
        higher_is_better: bool | Mapping[str, bool] | None = None,
        on: str = "question_id",
        how: str = "exact",
        units: str | bool | None = None,
        ci: float = 0.95,
        method: str = "auto",
        n_resamples: int = 10_000,
        seed: int | None = 0,
        n_permutations: int = 10_000,
        adjust: str | None = "holm",
        allow_evalset_mismatch: bool = False,
    ) -> _stats.GateResult:
        """Release gate: :meth:`compare` plus a non-inferiority decision per metric and slice.

        The function is :func:`raglab.runs.gate` (``df.rag.gate(...)`` is ``raglab.runs.gate(df, ...)``).

        Examples
        --------
        >>> import pandas as pd, raglab
        >>> base = pd.DataFrame({"question_id": [f"q{i}" for i in range(200)], "hit@5": [1, 1, 1, 0] * 50})
        >>> cand = base.assign(**{"hit@5": [1, 1, 0, 0] * 50})
        >>> base.rag.gate(cand, margin=0.02, metrics=["hit@5"]).decision
        'block'
        """
        return runs.gate(
            self._df, cand, margin=margin, metrics=metrics, by=by, higher_is_better=higher_is_better, on=on,
            how=how, units=units, ci=ci, method=method, n_resamples=n_resamples, seed=seed,
            n_permutations=n_permutations, adjust=adjust, allow_evalset_mismatch=allow_evalset_mismatch,
            method_name="rag.gate"
        )

    def forest(
        self,
        *,
        ax: Axes | None = None,
        margin: float | Mapping[str, float] | None = None,
        scale: str = "auto",
        **kwargs: Any,
    ) -> Axes:
        """Interval forest of a compare or gate table (one row per metric x slice); see :func:`raglab.plots.forest`.

        ``scale="margin"`` draws improvement / margin (every margin at -1, right is better), the
        default for several metrics that all have margins; ``scale="raw"`` keeps each metric's units.

        Examples
        --------
        >>> import pandas as pd, raglab
        >>> base = pd.DataFrame({"question_id": [f"q{i}" for i in range(40)], "hit@5": [1, 0] * 20})
        >>> table = base.rag.compare(base.assign(**{"hit@5": 1}), metrics=["hit@5"], n_resamples=200)
        >>> table.rag.forest(margin=0.02).get_xlabel()
        'difference (candidate - baseline)'
        """
        from raglab import plots

        return plots.forest(self._df, ax=ax, margin=margin, scale=scale, **kwargs)


def _id_types(cells: Any, *, spans: bool, limit: int = 2000) -> set[str]:
    """The kinds of id ('text' or 'number') in the first non-empty cells of an id or span column."""
    kinds: set[str] = set()
    seen = 0
    for cell in cells:
        if isinstance(cell, Mapping):
            items = list(cell)[:5]
        elif isinstance(cell, (list, tuple, np.ndarray)):
            items = [x.get("doc_id") if spans and isinstance(x, Mapping) else x for x in list(cell)[:5]]
        else:
            continue
        for item in items:
            if isinstance(item, str):
                kinds.add("text")
            elif isinstance(item, (int, np.integer)) and not isinstance(item, bool):
                kinds.add("number")
        seen += 1
        if seen >= limit:
            break
    return kinds


def _check_id_types(df: pd.DataFrame, ranked_col: str, gold_col: str, method: str, *, spans: bool = False) -> None:
    """Refuse ids that can never match: numbers on one side, text on the other (7 != "7" in Python)."""
    ranked, gold = _id_types(df[ranked_col].array, spans=spans), _id_types(df[gold_col].array, spans=spans)
    if ranked and gold and not ranked & gold:
        what = "doc_id values" if spans else "ids"
        raise RowTableError(
            f"{method}: {ranked_col!r} holds {what} as {'/'.join(sorted(ranked))} but {gold_col!r} as "
            f"{'/'.join(sorted(gold))}, so no retrieved id can ever match a gold one and every score would be 0. "
            f"Convert one side, e.g. df[{ranked_col!r}] = df[{ranked_col!r}].map(lambda ids: [str(i) for i in ids])."
        )
