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
from raglab._meta import get_meta
from raglab._rowtable import validate_rows

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
