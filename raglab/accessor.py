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
from raglab import stats as _stats
from raglab._meta import carry_meta, evalset_of, get_meta, judge_of, set_meta, update_meta
from raglab._registry import is_id_name, metric_info
from raglab._rowtable import (
    ROLES,
    MissingColumnError,
    RowTableError,
    _row_labels,
    check_column,
    check_option,
    check_unique_ids,
    missing_column_error,
    pair_runs,
    resolve_column,
    validate_rows,
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
        from raglab.judge._api import judge_frame

        return judge_frame(
            self._df,
            judge,
            metrics=metrics,
            repeats=repeats,
            errors=errors,
            progress=progress,
            ci=ci,
            columns={
                "question_id": question_id,
                "question": question,
                "answer": answer,
                "context": context,
                "reference": reference,
            },
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

        Parameters
        ----------
        human : str or list of str
            The column of human labels, or several rater columns: the judge is then compared with
            their per-row majority (tie rule ``ties``, see :func:`raglab.agreement.majority_vote`;
            ``human_threshold`` turns each rater's rating into pass/fail first).
        judge : str
            The column of judge labels (or scores, with ``judge_threshold``).
        units : str or False, optional
            A cluster column (e.g. ``conversation_id``): every interval resamples whole clusters and
            the report shows the design effect. By default the cluster column recorded by the run's
            eval set, if any; ``False`` treats items as independent. See
            :func:`raglab.agreement.report`.
        positive, labels, weights, distance, human_threshold, judge_threshold, ci, method, n_resamples, seed, warn
            As in :func:`raglab.agreement.report`.

        Returns
        -------
        raglab.agreement.AgreementReport
            ``disagreements`` holds the original rows (all columns, index kept) where they differ.

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
        from raglab import agreement as _agreement

        method_name = "rag.agreement"
        df = self._df
        raters = [human] if isinstance(human, str) else list(human)
        if not raters:
            raise ValueError("rag.agreement needs at least one human column")
        for column in [*raters, judge]:
            if column not in df.columns:
                raise missing_column_error(df, column, role=None, method=method_name)
        units = _resolve_units(df, units, method_name)
        unit_labels = _unit_labels(df, units, method_name, None) if units is not None else None
        rows = carry_meta(df, df.copy(deep=False))
        if isinstance(human, str):
            return _agreement._report(
                df[human], df[judge], positive=positive, labels=labels, weights=weights, distance=distance,
                human_threshold=human_threshold, judge_threshold=judge_threshold, ci=ci, method=method,
                n_resamples=n_resamples, seed=seed, warn=warn, rows=rows, names=(human, judge), units=unit_labels,
            )
        if weights is not None:
            raise ValueError("rag.agreement: weighted kappa against a human majority is not supported; pass weights=None")
        return _agreement._judge_vs_majority(
            df[raters], df[judge], positive=positive, ties=ties, rating_threshold=human_threshold,
            judge_threshold=judge_threshold, labels=labels, ci=ci, method=method, n_resamples=n_resamples,
            seed=seed, ids=None, warn=warn, rows=rows, names=(f"majority of {raters}", judge), units=unit_labels,
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

        This frame is the baseline pilot run and ``cand`` the candidate pilot run; they are paired by
        question id (see :func:`raglab._rowtable.pair_runs`). A pass/fail metric (values 0/1) gives the
        base and candidate pass rates and the discordance (share of questions whose pass/fail
        differs); another metric the standard deviation of per-question differences. See
        :func:`raglab.sizing.questions_needed` for the formulas.

        With a judge (``judge=`` an :class:`raglab.agreement.AgreementReport`, or
        ``sensitivity=``/``specificity=``), the pilot's pass/fail scores are taken as the TRUE
        outcomes and the test is sized on the judge's labels; pass ``pilot_labels="judge"`` when the
        pilot scores are the judge's own labels. A pilot whose discordance is below the mde is
        sized on a stated planning value.

        Returns
        -------
        raglab.sizing.SizingResult
            ``n`` (paired), ``n_unpaired`` for comparison, and the assumptions used.

        Examples
        --------
        >>> import pandas as pd, raglab
        >>> base = pd.DataFrame({"question_id": list("abcdefghij"), "hit@5": [1, 1, 0, 1, 0, 1, 1, 1, 0, 1]})
        >>> cand = pd.DataFrame({"question_id": list("abcdefghij"), "hit@5": [1, 0, 0, 1, 1, 1, 1, 1, 0, 1]})
        >>> base.rag.size(cand, metric="hit@5", mde=0.05).n
        626
        """
        from raglab import sizing as _sizing

        method_name = "rag.size"
        on = resolve_column(self._df, "question_id", question_id, method=method_name)
        paired = pair_runs(self._df, cand, on=on, how=how, method=method_name,
                           allow_evalset_mismatch=allow_evalset_mismatch)
        values = []
        for side, frame in (("base", paired.base), ("cand", paired.cand)):
            if metric not in frame.columns:
                raise missing_column_error(frame, metric, role=None, method=f"{method_name} ({side})", keyword="metric")
            column = frame[metric]
            try:
                numbers = pd.to_numeric(column.astype(object).where(column.notna(), None), errors="raise")
            except (TypeError, ValueError):
                raise RowTableError(
                    f"{method_name}: column {metric!r} ({side}) must hold numeric scores (or 0/1 pass/fail); "
                    f"found {column.dtype} values such as {column.dropna().iloc[:3].tolist()!r}"
                ) from None
            values.append(numbers.to_numpy(dtype=float, na_value=float("nan")))
        return _sizing.size_from_pilot(
            values[0], values[1], metric=metric, mde=mde, binary=binary, power=power, alpha=alpha,
            attenuation=attenuation, sensitivity=sensitivity, specificity=specificity, judge=judge,
            pilot_labels=pilot_labels, slice_fraction=slice_fraction, alternative=alternative,
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
            ``to_frame()``, and ``rows``: a copy of the rows with two metric columns, each over its
            own questions and with one direction,

            - ``correct_decline``: 1.0/0.0 on unanswerable questions, NaN on answerable ones
              (higher is better);
            - ``false_decline``: 1.0/0.0 on answerable questions, NaN on unanswerable ones (lower
              is better);

            and two boolean attribute columns, ``declined`` (the pooled flag) and
            ``unanswerable``. The pooled flag is not a metric: a higher decline rate is good on
            unanswerable questions and bad on answerable ones, so it has no direction
            (``raglab._registry.metric_info("declined").has_direction`` is False; a gate on it
            refuses), and as booleans neither flag is picked by ``summary()``/``compare()``
            without ``metrics=``. ``rows.attrs["raglab"]["abstention"]`` records the detector and
            each metric's direction.

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
            raise missing_column_error(df, declined, role=None, method=name, keyword="declined")
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
        rows["declined"] = np.asarray(flags, dtype=bool)  # the pooled flag: an attribute, not a metric
        rows["unanswerable"] = np.asarray(unanswerable, dtype=bool)
        rows["correct_decline"] = np.where(unanswerable, flags.astype(float), np.nan)
        rows["false_decline"] = np.where(unanswerable, np.nan, flags.astype(float))
        update_meta(
            rows,
            "abstention",
            {
                "detector": detector,
                "unanswerable": "gold missing, empty or no grade > 0",
                "metrics": {
                    "correct_decline": "declined, on unanswerable questions (NaN on answerable); higher is better",
                    "false_decline": "declined, on answerable questions (NaN on unanswerable); lower is better",
                },
                "flags": {
                    "declined": "pooled over all questions; not a metric (no direction)",
                    "unanswerable": "no gold grade > 0",
                },
            },
        )
        result.rows = rows
        return result

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

        Parameters
        ----------
        metrics : str or list of str, optional
            Per-question score columns (default: the metric columns: float columns, and integer
            columns named as a known metric such as ``hit@5`` or ``em``; never booleans such as
            ``answerable``/``declined``, id columns (``*_id``, ``qid``, ...), roles, or the
            ``by``/``units`` columns).
        by : str or list of str, optional
            Slice column(s): the table gets an ``overall`` row plus one row per slice value (with
            several columns, one per combination, labelled ``"col=value, col=value"``).
        ci, method, n_resamples, seed
            As in :func:`raglab.stats.summary`: Wilson for pass/fail columns and t for continuous
            ones by default; ``method="percentile"`` or ``"bca"`` for a bootstrap.
        units : str or False, optional
            A cluster column (e.g. the source document): resample whole clusters. By default the
            cluster column recorded by the run's eval set (``EvalSet.freeze(units=...)``), if any;
            ``False`` treats questions as independent.
        question_id : str
            The id column (left out of the default metrics).

        Returns
        -------
        pandas.DataFrame
            ``metric, slice, n, n_excluded, mean, se, low, high, method, level, n_resamples, seed``;
            rows with a missing score are excluded from the mean and counted in ``n_excluded``.

        Examples
        --------
        >>> import pandas as pd, raglab
        >>> rows = pd.DataFrame({"question_id": ["q1", "q2", "q3", "q4"], "qtype": ["a", "a", "b", "b"],
        ...                      "hit@5": [1, 0, 1, 1]})
        >>> rows.rag.summary(["hit@5"], by="qtype")[["slice", "n", "mean", "method"]].to_string(index=False)
        '  slice  n  mean method\\noverall  4  0.75 wilson\\n      a  2  0.50 wilson\\n      b  2  1.00 wilson'
        """
        method_name = "rag.summary"
        df = self._df
        units = _resolve_units(df, units, method_name)
        by_columns = _by_columns(by)
        for column in [*by_columns, *([units] if units else [])]:
            if column not in df.columns:
                raise _missing(df, column, method_name, "a slice or cluster column")
        exclude = {question_id, *by_columns, *([units] if units else [])}
        names = _metric_names(metrics, [df], exclude, method_name)
        scores = _score_frame(df, names, method_name, id_column=question_id)
        table = _stats.summary(
            scores,
            slices=_slice_labels(df, by_columns, method_name, question_id) if by_columns else None,
            ci=ci,
            method=method,
            n_resamples=n_resamples,
            seed=seed,
            units=_unit_labels(df, units, method_name, question_id) if units else None,
        )
        meta = get_meta(df)
        meta["summary"] = {"by": by_columns or None, "units": units, "metrics": names}
        set_meta(table, _stats._jsonable(meta))
        return table

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

        Rows are paired by ``on``. Different question sets raise an error listing the ids missing on
        each side, unless ``how="inner"`` (then a warning gives the counts). Runs stamped with
        different eval-set hashes are refused unless ``allow_evalset_mismatch=True``; runs scored by
        different judges warn loudly. Pairs with a missing score on either side are dropped for that
        metric and counted in ``n_dropped``. See :func:`raglab.stats.compare` for the intervals
        (paired bootstrap shared by all metrics and slices) and the tests (exact McNemar for
        pass/fail metrics, sign-flip permutation otherwise; ``adjust="holm"`` adds ``p_adjusted``).

        Parameters
        ----------
        cand : DataFrame
            The candidate run.
        metrics : str or list of str, optional
            Score columns present in both runs (default: the metric columns present in both runs:
            float columns, and integer columns named as a known metric such as ``hit@5`` or ``em``;
            never booleans such as ``answerable``/``declined``, id columns (``*_id``, ``qid``, ...),
            roles, or the ``by``/``units`` columns).
        by : str or list of str, optional
            Slice column(s), from the baseline (the candidate's, if it also has them, must agree).
        on : str
            The question id column.
        how : {"exact", "inner"}
            Require the same questions (default) or compare the shared ones.
        units : str or False, optional
            Cluster column: resample whole clusters. By default the cluster column recorded by the
            baseline's eval set (``EvalSet.freeze(units=...)``), if any; ``False`` treats questions
            as independent.
        ci, method, n_resamples, seed, n_permutations, adjust
            As in :func:`raglab.stats.compare`.
        allow_evalset_mismatch : bool
            Compare runs stamped with different eval sets anyway (with a warning).

        Returns
        -------
        pandas.DataFrame
            ``metric, slice, n, n_dropped, base, cand, diff, low, high, p_value, method, level,
            n_resamples, seed, test, n_permutations``. ``attrs["raglab"]["comparison"]`` keeps the
            settings and both runs' eval set and judge records.

        Examples
        --------
        >>> import pandas as pd, raglab
        >>> base = pd.DataFrame({"question_id": [f"q{i}" for i in range(100)], "hit@5": [1, 0] * 50})
        >>> cand = base.assign(**{"hit@5": [1, 1] * 50}).iloc[::-1]   # row order does not matter
        >>> t = base.rag.compare(cand, metrics=["hit@5"])
        >>> t[["metric", "slice", "n", "base", "cand", "diff"]].to_string(index=False)
        'metric   slice   n  base  cand  diff\\n hit@5 overall 100   0.5   1.0   0.5'
        """
        method_name = "rag.compare"
        units = _resolve_units(self._df, units, method_name)
        pairs = pair_runs(self._df, cand, on=on, how=how, method=method_name, allow_evalset_mismatch=allow_evalset_mismatch)
        by_columns = _by_columns(by)
        exclude = {on, *by_columns, *([units] if units else [])}
        names = _metric_names(metrics, [pairs.base, pairs.cand], exclude, method_name)
        base_scores = _score_frame(pairs.base, names, method_name, id_column=on, side="baseline")
        cand_scores = _score_frame(pairs.cand, names, method_name, id_column=on, side="candidate")
        slices = _paired_labels(pairs, by_columns, on, method_name, kind="slice") if by_columns else None
        unit_labels = _paired_labels(pairs, [units], on, method_name, kind="cluster") if units else None
        table = _stats.compare(
            base_scores,
            cand_scores,
            slices=slices,
            units=unit_labels,
            ci=ci,
            method=method,
            n_resamples=n_resamples,
            seed=seed,
            n_permutations=n_permutations,
            adjust=adjust,
        )
        comparison = dict(table.attrs["raglab"]["comparison"])
        comparison.update(
            {
                "on": on,
                "how": how,
                "by": by_columns or None,
                "units": units,
                "n_paired": pairs.n,
                "n_base_only": len(pairs.base_only),
                "n_cand_only": len(pairs.cand_only),
                "base_only": [str(i) for i in pairs.base_only[:50]],
                "cand_only": [str(i) for i in pairs.cand_only[:50]],
                "runs": {"base": _run_record(self._df), "cand": _run_record(cand)},
            }
        )
        meta = get_meta(self._df)
        meta["comparison"] = comparison
        set_meta(table, _stats._jsonable(meta))
        return table

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

        Pass if ``low >= -margin``; block if ``high < 0`` and the drop is significant after Holm's
        adjustment over every row (``adjust=None``: per row); otherwise review, always with fewer than
        10 questions or a zero-width interval (signs flipped for lower-is-better metrics). The
        overall ``decision`` is the worst row. See :func:`raglab.stats.gate`.

        Parameters
        ----------
        cand : DataFrame
            The candidate run.
        margin : float or dict
            The largest acceptable drop, for all metrics or ``{metric: margin}``.
        higher_is_better : bool or dict, optional
            Direction per metric (default from the metric name; explicit values win).
        metrics, by, on, how, units, ci, method, n_resamples, seed, n_permutations, allow_evalset_mismatch
            As in :meth:`compare`.
        adjust : {"holm", None}
            Blocks need Holm-adjusted evidence over all rows (default) or, with None, only the row's own.

        Returns
        -------
        raglab.stats.GateResult
            ``.decision``, ``.table``, ``.to_frame()``, ``.to_json(path)`` (the decision log with both
            runs' eval-set version and hash and judge fingerprint).

        Examples
        --------
        >>> import pandas as pd, raglab
        >>> base = pd.DataFrame({"question_id": [f"q{i}" for i in range(200)], "hit@5": [1, 1, 1, 0] * 50})
        >>> cand = base.assign(**{"hit@5": [1, 1, 0, 0] * 50})
        >>> base.rag.gate(cand, margin=0.02, metrics=["hit@5"]).decision
        'block'
        """
        if metrics is None or (not isinstance(metrics, str) and len(metrics) == 0):
            raise TypeError(
                "rag.gate needs metrics=[...]: a release gate is a rule decided in advance, on named metrics "
                "(e.g. metrics=['recall@5', 'faithfulness']), never on whatever numeric columns a table happens to hold."
            )
        table = self.compare(
            cand,
            metrics=metrics,
            by=by,
            on=on,
            how=how,
            units=units,
            ci=ci,
            method=method,
            n_resamples=n_resamples,
            seed=seed,
            n_permutations=n_permutations,
            allow_evalset_mismatch=allow_evalset_mismatch,
        )
        return _stats._gate_result(table, margin, higher_is_better, adjust)

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


# --------------------------------------------------------------------------------------------------
# Column helpers for the comparison methods
# --------------------------------------------------------------------------------------------------


def _missing(df: pd.DataFrame, column: str, method: str, what: str) -> MissingColumnError:
    return MissingColumnError(
        f"{method} needs column {column!r} ({what}); found {[str(c) for c in df.columns]}."
    )


def _by_columns(by: str | Sequence[str] | None) -> list[str]:
    if by is None:
        return []
    columns = [by] if isinstance(by, str) else list(by)
    if not all(isinstance(c, str) for c in columns) or not columns:
        raise TypeError(f"`by` must be a column name or a list of column names, got {by!r}")
    return columns


def _is_score_dtype(series: pd.Series, *, by_default: bool = False) -> bool:
    """Can the column be read as per-question scores? With ``by_default=True``: is it a metric *by default*?

    Any boolean or real numeric column can be read as scores when it is named in ``metrics=``
    (True/False become 1/0). Without ``metrics=`` only metric columns are picked, by dtype and
    name (see :func:`_metric_names`): float columns always, integer columns only under a metric
    name raglab knows (``hit@5`` stored as 0/1 integers, ``em``), booleans never.
    """
    if not by_default:
        return pd.api.types.is_bool_dtype(series) or (
            pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_complex_dtype(series)
        )
    if pd.api.types.is_bool_dtype(series):
        return False  # attribute flags such as `answerable`, `unanswerable`, `declined`
    if pd.api.types.is_float_dtype(series):
        return True
    if pd.api.types.is_integer_dtype(series):
        return metric_info(str(series.name)).known  # counts and codes are not metrics unless registered
    return False


def _metric_names(
    metrics: str | Sequence[str] | None, frames: list[pd.DataFrame], exclude: set[str], method: str
) -> list[str]:
    """The score columns to summarise or compare: ``metrics`` as given, else the default metric columns.

    Default rule (no ``metrics=``), applied to the columns present in every frame, in the first
    frame's order:

    - float columns are metrics (``recall@5``, ``faithfulness``, ``latency_ms``, ``correct_decline``);
    - integer columns are metrics only when their name is a registered metric
      (:func:`raglab._registry.metric_info` ``.known``: ``hit@5`` or ``em`` stored as 0/1), so counts
      and codes such as ``n_tokens`` or ``article_index`` are not;
    - boolean columns are never metrics by default (``answerable``, ``unanswerable``, the pooled
      ``declined`` flag); name them in ``metrics=`` to use them;
    - never the row-table roles (``question_id``, ``retrieved``, ...), the ``by``/``units``/id
      columns in ``exclude``, or a column whose name says it is an id
      (:func:`raglab._registry.is_id_name`: ``id``, ``*_id``, ``questionId``, ``qid``, ...).
    """
    if metrics is not None:
        names = [metrics] if isinstance(metrics, str) else list(metrics)
        if not names or not all(isinstance(n, str) for n in names):
            raise TypeError(f"{method}: `metrics` must be a column name or a non-empty list of names, got {metrics!r}")
        if len(set(names)) != len(names):
            raise ValueError(f"{method}: `metrics` names a column twice: {names}")
        return names
    names = [
        str(c)
        for c in frames[0].columns
        if c not in exclude
        and c not in ROLES
        and not is_id_name(str(c))
        and all(c in f.columns and _is_score_dtype(f[c], by_default=True) for f in frames)
    ]
    if not names:

        def why(column: Any) -> str:
            if is_id_name(str(column)):
                return "an id"
            if pd.api.types.is_bool_dtype(frames[0][column]):
                return "boolean"
            if pd.api.types.is_integer_dtype(frames[0][column]):
                return "integer, not a known metric name"
            return "not a metric column in every run"

        skipped = [
            f"{c!r} ({why(c)})"
            for c in frames[0].columns
            if c not in exclude and c not in ROLES and _is_score_dtype(frames[0][c])
        ]
        raise RowTableError(
            f"{method} found no metric columns{' (in both runs)' if len(frames) > 1 else ''} to use by default; "
            f"columns: {[str(c) for c in frames[0].columns]}. By default only float columns, and integer columns "
            "named as a known metric (hit@5, em, ...), are metrics; booleans and ids never are"
            + (f" (skipped: {', '.join(skipped)})" if skipped else "")
            + ". Pass metrics=[...] or compute scores first (e.g. rows.rag.retrieval(k=5))."
        )
    return names


def _score_frame(
    df: pd.DataFrame, names: list[str], method: str, *, id_column: str | None, side: str | None = None
) -> pd.DataFrame:
    """The score columns as floats (NaN for missing); a clear error for absent or non-numeric ones."""
    where = f" in the {side} run" if side else ""
    out = {}
    for name in names:
        if name not in df.columns:
            raise MissingColumnError(
                f"{method} needs score column {name!r}{where}; found {[str(c) for c in df.columns]}. "
                "Pass metrics=[...] naming per-question score columns"
                + (" present in both runs." if side else ".")
            )
        column = df[name]
        if _is_score_dtype(column):
            out[name] = column.to_numpy(dtype=float, na_value=np.nan)
            continue
        coerced = pd.to_numeric(column, errors="coerce")
        bad = np.flatnonzero((coerced.isna() & column.notna()).to_numpy())
        if bad.size:
            raise RowTableError(
                f"{method}: score column {name!r}{where} must hold numbers (NaN or None for missing); "
                f"{_row_labels(df, bad.tolist(), id_column)} hold {column.iloc[bad[0]]!r}. "
                f"Convert it first, e.g. pd.to_numeric(df[{name!r}])."
            )
        out[name] = coerced.to_numpy(dtype=float, na_value=np.nan)
    return pd.DataFrame(out)


def _check_labels(df: pd.DataFrame, column: str, method: str, id_column: str | None) -> pd.Series:
    values = df[column]
    bad = [i for i, v in enumerate(values.array) if isinstance(v, (list, dict, set, np.ndarray))]
    if bad:
        raise RowTableError(
            f"{method}: column {column!r} must hold one label per row (str, number or missing) to slice or "
            f"cluster by; {_row_labels(df, bad, id_column)} hold a {type(values.iloc[bad[0]]).__name__}."
        )
    return values.reset_index(drop=True)


def _slice_labels(df: pd.DataFrame, by: list[str], method: str, id_column: str | None = None) -> pd.Series:
    columns = [_check_labels(df, c, method, id_column) for c in by]
    if len(columns) == 1:
        return columns[0]
    parts = [c.astype(object).where(c.notna(), "(missing)").astype(str) for c in columns]
    labels = [", ".join(f"{col}={value}" for col, value in zip(by, row)) for row in zip(*parts)]
    return pd.Series(labels, dtype=object)


def _resolve_units(df: pd.DataFrame, units: str | bool | None, method: str) -> str | None:
    """The cluster column to use: the one given, else the eval set's (``units=False``: none).

    Questions nested in documents or conversations are not independent; an eval set frozen with
    ``units=`` records its cluster column so that intervals resample whole clusters by default.
    """
    if units is False:
        return None
    if units is None or units is True:
        recorded = (evalset_of(df) or {}).get("units")
        if units is True and recorded is None:
            raise ValueError(
                f"{method}: units=True asks for the eval set's cluster column, but this run's eval set records none; "
                "pass units='column'"
            )
        if recorded is not None and recorded not in df.columns:
            raise _missing(df, recorded, method, "the cluster column recorded by the eval set; pass units=False to ignore it")
        return recorded
    if not isinstance(units, str):
        raise TypeError(f"{method}: `units` must be a column name, None (the eval set's) or False (none), got {units!r}")
    return units


def _unit_labels(df: pd.DataFrame, units: str, method: str, id_column: str | None) -> pd.Series:
    if units not in df.columns:
        raise _missing(df, units, method, "the cluster column given as units=")
    labels = _check_labels(df, units, method, id_column)
    missing = np.flatnonzero(labels.isna().to_numpy())
    if missing.size:
        raise RowTableError(
            f"{method}: cluster column {units!r} must name a cluster for every question; "
            f"{_row_labels(df, missing.tolist(), id_column)} are missing one."
        )
    return labels


def _paired_labels(pairs: Any, columns: list[str], on: str, method: str, *, kind: str) -> pd.Series:
    """Slice or cluster labels of paired runs, from the baseline (the candidate's must agree)."""
    base, cand = pairs.base, pairs.cand
    for column in columns:
        if column not in base.columns and column not in cand.columns:
            raise _missing(base, column, method, f"the {kind} column, in either run")
        if column in base.columns and column in cand.columns:
            a, b = base[column], cand[column]
            same = (a.astype(object) == b.astype(object)) | (a.isna() & b.isna())
            differ = np.flatnonzero(~same.to_numpy(dtype=bool))
            if differ.size:
                raise RowTableError(
                    f"{method}: the runs disagree on the {kind} column {column!r} for "
                    f"{len(differ)} question(s), e.g. {on} {[str(base[on].iloc[i]) for i in differ[:5]]} "
                    f"({[a.iloc[i] for i in differ[:5]]} vs {[b.iloc[i] for i in differ[:5]]}). "
                    "Use the eval set's labels in both runs, or drop the column from one of them."
                )
    merged = pd.DataFrame({c: (base[c] if c in base.columns else cand[c]) for c in columns})
    merged[on] = base[on]
    if kind == "cluster":
        return _unit_labels(merged, columns[0], method, on)
    return _slice_labels(merged, columns, method, on)


def _run_record(df: pd.DataFrame) -> dict[str, Any]:
    meta = get_meta(df)
    return {
        "rows": len(df),
        "evalset": evalset_of(df),
        "judge": judge_of(df),
        "run": meta.get("run"),
        "retrieval": meta.get("retrieval"),
    }
