"""The ``df.rag`` accessor: a thin, validated layer over raglab's pure functions.

Registered when ``import raglab`` runs. The accessor stores only the frame and never raises in
``__init__`` (pandas builds it on every attribute access, and an exception there would break
``dir(df)`` for every DataFrame). Each method is one call to a public function that takes the
table (``df.rag.summary(...)`` is ``raglab.runs.summary(df, ...)``), passing its own name for
error messages; ``tests/test_accessor.py`` keeps every pair equal.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from raglab import io as _io
from raglab import runs
from raglab import stats as _stats
from raglab._meta import get_meta

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
        """Check the row table and return it unchanged (so it chains); see :func:`raglab.runs.validate`.

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
        """A copy of the run's raglab metadata (``df.attrs["raglab"]``): eval set, judge, conventions.

        Examples
        --------
        >>> import pandas as pd, raglab
        >>> rows = pd.DataFrame({"question_id": ["q1", "q2"], "retrieved": [["d1", "d2"], ["d3"]], "gold": [["d2"], []]})
        >>> meta = rows.rag.retrieval(k=2).rag.meta
        >>> meta["retrieval"]["gain"], meta["retrieval"]["k_counts"], meta["retrieval_counts"]["n_unanswerable"]
        ('exponential', 'chunks that reached the model', 1)
        """
        return get_meta(self._df)

    # ---- judging ----------------------------------------------------------------------------------
    def judge(
        self,
        judge: Any,
        *,
        metrics: list[str] | tuple[str, ...] | str = ("faithfulness", "relevance"),
        repeats: int = 1,
        errors: str = "warn",
        progress: bool = True,
        ci: float = 0.95,
        question_id: str | None = None,
        question: str | None = None,
        answer: str | None = None,
        context: str | None = None,
        reference: str | None = None,
    ) -> pd.DataFrame:
        """Score answers with a judge; returns a NEW frame with the score columns (the rows are untouched).

        The function is :func:`raglab.judge.judge_table`, which documents the metrics, the output columns
        and every parameter.

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
        """Validate a judge column against human labels (the statistics: :func:`raglab.agreement.report`).

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

    def threshold_sweep(self, human: str, judge: str, thresholds: Any = None, **options: Any) -> pd.DataFrame:
        """A judge's scores against human labels at every threshold; see :func:`raglab.runs.threshold_sweep`.

        Examples
        --------
        >>> import pandas as pd, raglab
        >>> rows = pd.DataFrame({"label": [1, 1, 0, 0], "score": [0.9, 0.6, 0.7, 0.1]})
        >>> rows.rag.threshold_sweep("label", "score")["sensitivity"].tolist()
        [1.0, 1.0, 0.5, 0.5]
        """
        return runs.threshold_sweep(self._df, human, judge, thresholds, method_name="rag.threshold_sweep", **options)

    def size(
        self,
        cand: pd.DataFrame,
        *,
        metric: str | Sequence[str],
        mde: float | None = None,
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
        units: str | None = None,
        design_effect: float | None = None,
        icc: float | None = None,
        cluster_size: float | None = None,
        margin: float | Mapping[str, float] | None = None,
        by: str | None = None,
        ci: float = 0.95,
        drop: float | None = None,
        bounds: Mapping[str, tuple[float, float]] | None = None,
    ) -> Any:
        """Questions needed to detect a change of ``mde`` in ``metric`` (or, with ``margin=``, for an
        unchanged release to pass the whole gate), sized from a pilot of two runs.

        The function is :func:`raglab.runs.size` (``df.rag.size(...)`` is ``raglab.runs.size(df, ...)``).

        Examples
        --------
        >>> import pandas as pd, raglab
        >>> base = pd.DataFrame({"question_id": list("abcdefghij"), "hit@5": [1, 1, 0, 1, 0, 1, 1, 1, 0, 1]})
        >>> cand = pd.DataFrame({"question_id": list("abcdefghij"), "hit@5": [1, 0, 0, 1, 1, 1, 1, 1, 0, 1]})
        >>> base.rag.size(cand, metric="hit@5", mde=0.05).n
        658
        """
        return runs.size(
            self._df, cand, metric=metric, mde=mde, power=power, alpha=alpha, attenuation=attenuation,
            sensitivity=sensitivity, specificity=specificity, judge=judge, pilot_labels=pilot_labels,
            slice_fraction=slice_fraction, alternative=alternative, binary=binary, question_id=question_id, how=how,
            allow_evalset_mismatch=allow_evalset_mismatch, units=units, design_effect=design_effect, icc=icc,
            cluster_size=cluster_size, margin=margin, by=by, ci=ci, drop=drop, method_name="rag.size",
            bounds=bounds,
        )

    # ---- retrieval metrics ------------------------------------------------------------------------
    def retrieval(
        self,
        k: int | Iterable[int] = 5,
        *,
        gain: str = "exponential",
        gold_by: str = "auto",
        min_overlap: int | float | None = None,
        no_relevant: str = "exclude",
        span_rule: str = "union",
        question_id: str | None = None,
        retrieved: str | None = None,
        gold: str | None = None,
        gold_spans: str | None = None,
        retrieved_spans: str | None = None,
    ) -> pd.DataFrame:
        """Score retrieval per question: a copy of the rows plus one column per metric and k.

        The function is :func:`raglab.retrieval.retrieval` (``df.rag.retrieval(...)`` is
        ``raglab.retrieval.retrieval(df, ...)``), which documents every parameter and convention.

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
        from raglab import retrieval as _retrieval

        return _retrieval.retrieval(
            self._df, k=k, gain=gain, gold_by=gold_by, min_overlap=min_overlap, no_relevant=no_relevant,
            span_rule=span_rule, question_id=question_id, retrieved=retrieved, gold=gold, gold_spans=gold_spans,
            retrieved_spans=retrieved_spans, method_name="rag.retrieval"
        )

    def depth_gap(
        self,
        candidates: str = "candidates",
        *,
        candidate_spans: str | None = None,
        k: int | None = None,
        candidate_k: int | None = None,
        gold_by: str = "auto",
        min_overlap: int | float | None = None,
        span_rule: str = "union",
        question_id: str | None = None,
        retrieved: str | None = None,
        gold: str | None = None,
        gold_spans: str | None = None,
        retrieved_spans: str | None = None,
    ) -> pd.DataFrame:
        """Recall and hit at the candidate depth next to the context depth: what reranking/truncation lost.

        The function is :func:`raglab.retrieval.depth_gap` (``df.rag.depth_gap(...)`` is
        ``raglab.retrieval.depth_gap(df, ...)``), which documents every parameter and convention.

        Examples
        --------
        >>> import pandas as pd, raglab
        >>> rows = pd.DataFrame({"retrieved": [["d1"], ["d4"]], "candidates": [["d1", "d2"], ["d4", "d5"]],
        ...                      "gold": [["d2"], ["d4"]]})
        >>> gap = rows.rag.depth_gap()
        >>> gap[["metric", "context_k", "context", "candidate_k", "candidates", "n_lost"]].values.tolist()
        [['recall', 1, 0.5, 2, 1.0, 1], ['hit', 1, 0.5, 2, 1.0, 1]]
        """
        from raglab import retrieval as _retrieval

        return _retrieval.depth_gap(
            self._df, candidates=candidates, candidate_spans=candidate_spans, k=k, candidate_k=candidate_k,
            gold_by=gold_by, min_overlap=min_overlap, span_rule=span_rule, question_id=question_id, retrieved=retrieved,
            gold=gold,
            gold_spans=gold_spans, retrieved_spans=retrieved_spans, method_name="rag.depth_gap"
        )

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

    def explore_pair(self, cand: pd.DataFrame, *, by: str | None = None, metric: str | None = None, **options: Any) -> Any:
        """This run (the baseline) and ``cand`` side by side per question; see :func:`raglab.widgets.explore_pair`.

        Examples
        --------
        >>> from raglab import datasets
        >>> rows = datasets.handbook()
        >>> type(rows.rag.explore_pair(rows.assign(human_faithful=1.0), metric="human_faithful")).__name__
        'VBox'
        """
        from raglab import widgets

        return widgets.explore_pair(self._df, cand, by=by, metric=metric, **options)

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
        bounds: Mapping[str, tuple[float, float]] | None = None,
    ) -> pd.DataFrame:
        """Mean and interval per metric and slice for this run (the statistics: :func:`raglab.stats.summary`).

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
            question_id=question_id, method_name="rag.summary", bounds=bounds,
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
        bounds: Mapping[str, tuple[float, float]] | None = None,
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
            allow_evalset_mismatch=allow_evalset_mismatch, method_name="rag.compare", bounds=bounds,
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
        bounds: Mapping[str, tuple[float, float]] | None = None,
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
            method_name="rag.gate", bounds=bounds,
        )

    # ---- chunk boundaries -------------------------------------------------------------------------
    def boundaries(
        self,
        chunks: pd.DataFrame,
        *,
        question_id: str | None = None,
        gold_spans: str | None = None,
        retrieved: str | None = None,
        retrieved_spans: str | None = None,
    ) -> pd.DataFrame:
        """Where the gold spans fall relative to chunk boundaries: ``boundary_cut``, ``gold_chunks``, ``gold_reached``.

        The function is :func:`raglab.boundaries.boundaries` (``df.rag.boundaries(chunks)`` is
        ``raglab.boundaries.boundaries(df, chunks)``), which documents every parameter and convention.

        Examples
        --------
        >>> import pandas as pd, raglab
        >>> from raglab import chunks
        >>> table = chunks.fixed({"d": 300}, size=100)          # d#0 [0, 100), d#1 [100, 200), d#2 [200, 300)
        >>> rows = pd.DataFrame({"question_id": ["q1", "q2"], "retrieved": [["d#0"], ["d#1", "d#2"]],
        ...                      "gold_spans": [[{"doc_id": "d", "start": 10, "end": 40}],
        ...                                     [{"doc_id": "d", "start": 90, "end": 210}]]})
        >>> rows.rag.boundaries(table)[["boundary_cut", "gold_chunks", "gold_reached"]].values.tolist()
        [[0.0, 1.0, 'complete'], [1.0, 3.0, 'partial']]
        """
        from raglab import boundaries as _boundaries

        return _boundaries.boundaries(
            self._df, chunks, question_id=question_id, gold_spans=gold_spans, retrieved=retrieved,
            retrieved_spans=retrieved_spans, method_name="rag.boundaries",
        )

    def expand_neighbors(
        self,
        chunks: pd.DataFrame,
        window: int = 1,
        *,
        question_id: str | None = None,
        retrieved: str | None = None,
        retrieved_spans: str | None = None,
    ) -> pd.DataFrame:
        """What if each retrieved chunk brought its neighbours: longer ``retrieved`` lists and ``context_chars``.

        The function is :func:`raglab.boundaries.expand_neighbors` (``df.rag.expand_neighbors(chunks)`` is
        ``raglab.boundaries.expand_neighbors(df, chunks)``), which documents every parameter and convention.

        Examples
        --------
        >>> import pandas as pd, raglab
        >>> from raglab import chunks
        >>> table = chunks.fixed({"a": 500}, size=100)
        >>> rows = pd.DataFrame({"question_id": ["q1"], "retrieved": [["a#2", "a#4"]]})
        >>> out = rows.rag.expand_neighbors(table, window=1)
        >>> out.loc[0, "retrieved"], int(out.loc[0, "context_chars"])
        (['a#2', 'a#1', 'a#3', 'a#4'], 400)
        """
        from raglab import boundaries as _boundaries

        return _boundaries.expand_neighbors(
            self._df, chunks, window, question_id=question_id, retrieved=retrieved,
            retrieved_spans=retrieved_spans, method_name="rag.expand_neighbors",
        )

    def boundary_report(
        self,
        cand: pd.DataFrame,
        metrics: str | Sequence[str],
        chunks: pd.DataFrame,
        *,
        on: str = "question_id",
        gold_spans: str | None = None,
        retrieved: str | None = None,
        retrieved_spans: str | None = None,
        ci: float = 0.95,
        n_resamples: int = 10_000,
        seed: int | None = 0,
        how: str = "exact",
    ) -> Any:
        """A metric split by this run's boundary status, for this run and ``cand``, and the rows that explain it.

        The function is :func:`raglab.boundaries.boundary_report` (``df.rag.boundary_report(cand, metrics,
        chunks)`` is ``raglab.boundaries.boundary_report(df, cand, metrics, chunks)``).

        Examples
        --------
        >>> import pandas as pd, raglab
        >>> from raglab import chunks
        >>> table = chunks.fixed({"d": 1000}, size=100)
        >>> gold = [[{"doc_id": "d", "start": 100 * i + (50 if i % 2 else 10), "end": 100 * i + (150 if i % 2 else 60)}]
        ...         for i in range(8)]
        >>> base = pd.DataFrame({"question_id": [f"q{i}" for i in range(8)], "gold_spans": gold,
        ...                      "faithfulness": [1.0, 0.0] * 4})
        >>> report = base.rag.boundary_report(base.assign(faithfulness=1.0), "faithfulness", table, n_resamples=200)
        >>> report.table[["slice", "n", "base", "cand"]].values.tolist()
        [['overall', 8, 0.5, 1.0], ['cut', 4, 0.0, 1.0], ['not cut', 4, 1.0, 1.0]]
        """
        from raglab import boundaries as _boundaries

        return _boundaries.boundary_report(
            self._df, cand, metrics, chunks, on=on, gold_spans=gold_spans, retrieved=retrieved,
            retrieved_spans=retrieved_spans, ci=ci, n_resamples=n_resamples, seed=seed, how=how,
            method_name="rag.boundary_report",
        )

    def forest(self, *, ax: Axes | None = None, margin: float | Mapping[str, float] | None = None, scale: str = "raw",
               sort: str | None = None, panels: Mapping[str, str] | None = None, **kwargs: Any) -> Axes:
        """The release card of a compare or gate table (one row per metric x slice); see :func:`raglab.plots.forest`.

        Raw units with one panel per unit group (``scale="margin"``: one axis in units of the margin);
        ``sort=`` orders the slices under each metric; ``ax=None`` makes a new figure sized to the rows.

        Examples
        --------
        >>> import pandas as pd, raglab
        >>> base = pd.DataFrame({"question_id": [f"q{i}" for i in range(40)], "hit@5": [1, 0] * 20})
        >>> table = base.rag.compare(base.assign(**{"hit@5": 1}), metrics=["hit@5"], n_resamples=200)
        >>> table.rag.forest(margin=0.02).get_xlabel()
        'difference (candidate - baseline)   (better →)'
        """
        from raglab import plots

        return plots.forest(self._df, ax=ax, margin=margin, scale=scale, sort=sort, panels=panels, **kwargs)
