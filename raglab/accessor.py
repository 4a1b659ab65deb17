"""The ``df.rag`` accessor: a thin, validated layer over raglab's pure functions.

Registered when ``import raglab`` runs. The accessor stores only the frame and never raises in
``__init__`` (pandas builds it on every attribute access, and an exception there would break
``dir(df)`` for every DataFrame); each method resolves its columns, validates, and calls a
function that can be used without pandas.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd

from raglab import io as _io
from raglab._meta import carry_meta, get_meta
from raglab._rowtable import RowTableError, missing_column_error, pair_runs, resolve_column, validate_rows

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
        ci: float = 0.95,
        method: str = "analytic",
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
        rows = carry_meta(df, df.copy(deep=False))
        if isinstance(human, str):
            return _agreement._report(
                df[human], df[judge], positive=positive, labels=labels, weights=weights, distance=distance,
                human_threshold=human_threshold, judge_threshold=judge_threshold, ci=ci, method=method,
                n_resamples=n_resamples, seed=seed, warn=warn, rows=rows, names=(human, judge),
            )
        if weights is not None:
            raise ValueError("rag.agreement: weighted kappa against a human majority is not supported; pass weights=None")
        return _agreement._judge_vs_majority(
            df[raters], df[judge], positive=positive, ties=ties, rating_threshold=human_threshold,
            judge_threshold=judge_threshold, labels=labels, ci=ci, method=method, n_resamples=n_resamples,
            seed=seed, ids=None, warn=warn, rows=rows, names=(f"majority of {raters}", judge),
        )

    def size(
        self,
        cand: pd.DataFrame,
        *,
        metric: str,
        mde: float,
        power: float = 0.8,
        alpha: float = 0.05,
        attenuation: float = 1.0,
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
                raise missing_column_error(frame, metric, role=None, method=f"{method_name} ({side})")
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
            attenuation=attenuation, slice_fraction=slice_fraction, alternative=alternative,
        )
