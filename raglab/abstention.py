"""Declining to answer: detecting refusals in answer text, and scoring them in one direction each.

Unanswerable questions (no gold) are scored on whether the system declined, and answerable ones on
whether it wrongly declined: two rates, each over its own questions and each with one direction,

- ``correct_decline``: declined / unanswerable questions, **higher is better**;
- ``false_decline``: declined / answerable questions, **lower is better**.

The pooled ``declined`` flag (declined or not, over all questions) is never a metric: a rise in it is
good on unanswerable questions and bad on answerable ones, so it has no direction, and the metric
registry gives it none (a gate on it refuses; see ``raglab._registry``). Compare runs on
``correct_decline`` and ``false_decline`` (``df.rag.abstention().rows`` writes both, NaN outside
their questions, so a mean divides by the right number of questions).

When the run has no ``declined`` column, raglab detects refusals in the
answer text with a small, configurable set of patterns. It is a lexical detector: it misses creative
refusals and can fire on answers that merely mention not knowing something, so it states what it
matched and can be replaced by a judge (see :mod:`raglab.judge`) or by the system's own flag.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from raglab._errors import RowTableError
from raglab._interval import Interval
from raglab._meta import update_meta
from raglab._results import ResultBase, jsonable
from raglab._rowtable import Roles, check_column, missing_column_error, resolve_column, table_roles
from raglab._validation import caller
from raglab._validation import unanswerable as _unanswerable

__all__ = [
    "DEFAULT_REFUSAL_PATTERNS", "AbstentionResult", "abstention", "detect_declined", "refusal_regex", "score_abstention",
]

DEFAULT_REFUSAL_PATTERNS: tuple[str, ...] = (
    r"\bi (?:do not|don't|dont) know\b(?!\s+(?:why|how|whether|if|what|when|where|who)\b)",
    r"\bi(?: am|'m)? (?:not sure|unsure)\b",
    r"\b(?:cannot|can't|can not|could not|couldn't|am unable to|unable to) (?:answer|find|determine|say|tell|provide)\b",
    r"\b(?:cannot|can't|can not|could not|couldn't) be (?:determined|answered|found|inferred|established)\b",
    r"\b(?:no|not enough|insufficient) (?:relevant )?information\b",
    r"\b(?:is|are) not (?:mentioned|provided|stated|specified|given|available)\b",
    r"\b(?:context|passages?|documents?|sources?) (?:does|do) not (?:contain|provide|mention|say|include|specify)\b",
    r"\bthere is no (?:answer|mention|information)\b",
    r"\b(?:unanswerable|no answer)\b",
    r"^\s*(?:i'm sorry|i am sorry|sorry)\b",
)


@functools.lru_cache(maxsize=8)
def refusal_regex(patterns: tuple[str, ...] = DEFAULT_REFUSAL_PATTERNS) -> re.Pattern[str]:
    """The refusal patterns as one case-insensitive, multi-line regex (what :func:`detect_declined` searches).

    Examples
    --------
    >>> bool(refusal_regex().search("Sorry, I don't know."))
    True
    """
    return re.compile("|".join(f"(?:{p})" for p in patterns), flags=re.IGNORECASE | re.MULTILINE)


def detect_declined(
    answers: Iterable[str | None] | pd.Series,
    *,
    patterns: Sequence[str] = DEFAULT_REFUSAL_PATTERNS,
    empty_is_declined: bool = True,
) -> np.ndarray:
    """Return a boolean array: True where an answer declines to answer.

    Parameters
    ----------
    answers : iterable of str or None
        Answer texts (a Series or list). Matching is case-insensitive.
    patterns : sequence of str
        Regular expressions; an answer that matches any of them is a refusal. Defaults to
        :data:`DEFAULT_REFUSAL_PATTERNS` ("I don't know", "cannot answer", "the context does not
        mention", ...). Pass your system's own phrasing for exact results.
    empty_is_declined : bool
        Treat empty or missing answers as declining (default True: a system that returns nothing
        did not answer).

    Examples
    --------
    >>> detect_declined(["Paris.", "I don't know.", "", "The context does not mention it."]).tolist()
    [False, True, True, True]
    """
    texts = pd.Series(list(answers) if not isinstance(answers, pd.Series) else answers.to_numpy(), dtype=object)
    not_text = ~texts.map(lambda v: isinstance(v, str))
    bad = texts[not_text & texts.notna()]
    if len(bad):
        raise TypeError(
            f"detect_declined: answers must be str or None; position {bad.index[0]} holds "
            f"{type(bad.iloc[0]).__name__} {bad.iloc[0]!r}"
        )
    if not patterns:
        raise ValueError("detect_declined: `patterns` is empty; pass at least one regular expression")
    combined = refusal_regex(tuple(patterns))
    filled = texts.where(~not_text, "").astype(str)
    matched = filled.str.contains(combined, regex=True).to_numpy(dtype=bool)
    if empty_is_declined:
        matched = matched | filled.str.strip().eq("").to_numpy(dtype=bool)
    return matched


# --------------------------------------------------------------------------------------------------
# Scoring: declining the unanswerable, answering the answerable
# --------------------------------------------------------------------------------------------------


def _as_flags(values: Any, name: str) -> np.ndarray:
    """A boolean array from booleans or 0/1 values; refuses missing values and anything else."""
    series = pd.Series(values.to_numpy() if isinstance(values, pd.Series) else list(values), dtype=object)
    ok = series.map(lambda v: isinstance(v, (bool, np.bool_)) or (isinstance(v, (int, np.integer)) and v in (0, 1)))
    if not ok.all():
        position = int(np.flatnonzero(~ok.to_numpy(dtype=bool))[0])
        value = series.iloc[position]
        raise ValueError(
            f"`{name}` must be True/False (or 1/0) for every question; position {position} holds "
            f"{type(value).__name__} {value!r}"
        )
    return series.astype(bool).to_numpy(dtype=bool)


def _rate(successes: int, n: int, ci: float, method: str) -> Interval:
    from raglab.stats import proportion_interval

    if n == 0:
        return Interval(math.nan, math.nan, math.nan, method=method, level=ci, n=0)
    return proportion_interval(successes, n, ci=ci, method=method)


@dataclass
class AbstentionResult(ResultBase):
    """How a run handles questions it should decline.

    Attributes
    ----------
    correct_decline : Interval
        Share of the unanswerable questions the system declined (higher is better), with its
        interval and ``n`` = number of unanswerable questions.
    false_decline : Interval
        Share of the answerable questions it declined (lower is better), ``n`` = answerable questions.
    detector : str
        Where the ``declined`` flags came from: a column, or the lexical detector and its patterns.
    rows : DataFrame or None
        From ``df.rag.abstention``: a copy of the rows with the metric columns ``correct_decline``
        (1/0 on unanswerables, NaN otherwise; higher is better) and ``false_decline`` (1/0 on
        answerables, NaN otherwise; lower is better), ready for ``summary``/``compare``/``gate``,
        and the boolean attribute columns ``declined`` (pooled, no direction: not a metric) and
        ``unanswerable``.
    """

    correct_decline: Interval
    false_decline: Interval
    n_unanswerable: int
    n_answerable: int
    declined_unanswerable: int
    declined_answerable: int
    detector: str
    rows: pd.DataFrame | None = field(default=None, repr=False)

    def to_frame(self) -> pd.DataFrame:
        """Tidy table: one row per rate with n, declined count, estimate, interval, method, level."""
        records = []
        for metric, interval, on, declined, better in (
            ("correct_decline", self.correct_decline, "unanswerable", self.declined_unanswerable, "higher"),
            ("false_decline", self.false_decline, "answerable", self.declined_answerable, "lower"),
        ):
            records.append(
                {
                    "metric": metric,
                    "questions": on,
                    "n": interval.n,
                    "declined": declined,
                    "rate": interval.estimate,
                    "low": interval.low,
                    "high": interval.high,
                    "method": interval.method,
                    "level": interval.level,
                    "better": better,
                }
            )
        frame = pd.DataFrame.from_records(records)
        frame.attrs["raglab"] = {"abstention": {"detector": self.detector}}
        return frame

    def __repr__(self) -> str:
        def line(name: str, iv: Interval, on: str) -> str:
            if iv.n == 0:
                return f"  {name:<16} n/a (no {on} questions)"
            return (
                f"  {name:<16} {iv.estimate:.3f}  [{iv.low:.3f}, {iv.high:.3f}]  "
                f"{iv.level:.0%} {iv.method}, n={iv.n} {on}"
            )

        return "\n".join(
            [
                "AbstentionResult",
                line("correct_decline", self.correct_decline, "unanswerable"),
                line("false_decline", self.false_decline, "answerable"),
                f"  detector: {self.detector}",
            ]
        )

    def to_dict(self) -> dict[str, Any]:
        """Both rates with their intervals, counts and the detector, JSON-ready."""
        return jsonable({
            "correct_decline": self.correct_decline.to_dict(),
            "false_decline": self.false_decline.to_dict(),
            "declined_unanswerable": self.declined_unanswerable,
            "declined_answerable": self.declined_answerable,
            "detector": self.detector,
        })

    def _title(self) -> str:
        return f"Abstention (detector: {self.detector})"


def score_abstention(
    declined: Iterable[bool] | pd.Series,
    unanswerable: Iterable[bool] | pd.Series,
    *,
    ci: float = 0.95,
    method: str = "wilson",
    detector: str = "given declined flags",
) -> AbstentionResult:
    """Correct-decline rate on unanswerable questions and false-decline rate on answerable ones.

    Parameters
    ----------
    declined : iterable of bool
        Whether the system declined each question (e.g. from :func:`detect_declined`).
    unanswerable : iterable of bool
        Whether each question has no answer in the corpus (no gold).
    ci : float
        Confidence level of the intervals.
    method : {"wilson", "normal", "exact"}
        Interval method, see :func:`raglab.stats.proportion_interval`.
    detector : str
        How ``declined`` was obtained (reported with the result).

    Returns
    -------
    AbstentionResult
        Each rate as an :class:`~raglab.stats.Interval` with its ``n``; a rate over no questions
        is NaN with ``n=0``.

    Examples
    --------
    >>> res = score_abstention([True, False, True, False], [True, True, False, False])
    >>> res.correct_decline.estimate, res.false_decline.estimate, res.correct_decline.n
    (0.5, 0.5, 2)
    """
    flags = _as_flags(declined, "declined")
    unans = _as_flags(unanswerable, "unanswerable")
    if flags.size != unans.size:
        raise ValueError(f"`declined` has {flags.size} values but `unanswerable` has {unans.size}; pass one per question")
    n_unans = int(unans.sum())
    n_ans = int((~unans).sum())
    hits, misfires = int((flags & unans).sum()), int((flags & ~unans).sum())
    correct = _rate(hits, n_unans, ci, method)
    false = _rate(misfires, n_ans, ci, method)
    return AbstentionResult(correct, false, n_unans, n_ans, hits, misfires, detector)


def abstention(
    rows: pd.DataFrame,
    declined: str | None = "declined",
    *,
    patterns: Sequence[str] | None = None,
    empty_is_declined: bool = True,
    ci: float = 0.95,
    method: str = "wilson",
    roles: Roles | Mapping[str, str | None] | None = None,
    **columns: str,
) -> AbstentionResult:
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
    patterns : sequence of str, optional
        Refusal patterns for the detector (default
        :data:`raglab.abstention.DEFAULT_REFUSAL_PATTERNS`).
    empty_is_declined : bool
        Detector only: an empty or missing answer counts as declining.
    ci, method
        Interval level and method (:func:`raglab.stats.proportion_interval`).
    roles : Roles or dict, optional
        Column roles (:class:`raglab.Roles`), over those set on the table.
    **columns : str
        Column names to use instead of the defaults, by role: ``answer`` (for the detector),
        ``gold``, ``gold_spans``, ``question_id``.

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
    >>> import pandas as pd
    >>> from raglab.abstention import abstention
    >>> rows = pd.DataFrame({"question_id": ["q1", "q2", "q3", "q4"], "gold": [["d1"], [], [], ["d2"]],
    ...                      "answer": ["Paris.", "I don't know.", "It is 42.", "I cannot answer that."]})
    >>> res = abstention(rows, )
    >>> res.correct_decline.estimate, res.false_decline.estimate, res.detector.split(" (")[0]
    (0.5, 0.5, 'raglab.abstention.detect_declined')
    >>> res.rows[["declined", "correct_decline", "false_decline"]].values.tolist()
    [[False, nan, 0.0], [True, 1.0, nan], [False, 0.0, nan], [True, nan, 1.0]]
    >>> res.rows.rag.summary(method="wilson")[["metric", "n", "n_excluded", "mean"]].values.tolist()
    [['correct_decline', 2, 2, 0.5], ['false_decline', 2, 2, 0.5]]
    """
    from raglab import metrics as _metrics
    from raglab._columns import guarded as _guarded

    name = caller("raglab.abstention.abstention")
    df = rows
    cols = table_roles(df, roles, columns, caller=name)
    gold, gold_spans = cols.gold, cols.gold_spans
    qid = resolve_column(df, "question_id", cols.question_id, caller=name, required=False)
    if gold is not None or "gold" in df.columns or (gold_spans is None and "gold_spans" not in df.columns):
        gold_col = resolve_column(df, "gold", gold, caller=name)
        table = _guarded(df, lambda: _metrics._gold_table(df[gold_col]), {"gold": gold_col}, name, qid)
        unanswerable = _unanswerable(table.n_relevant)
    else:
        from raglab.metrics.spans import _gold_span_table

        gold_col = resolve_column(df, "gold_spans", gold_spans, caller=name)
        spans = _guarded(df, lambda: _gold_span_table(_metrics._as_cells(df[gold_col])), {"gold_spans": gold_col}, name, qid)
        relevant = spans["grade"] > 0
        unanswerable = _unanswerable(np.bincount(spans["row"][relevant], minlength=len(df)))
    if declined is not None and declined in df.columns:
        try:
            flags = _as_flags(df[declined], "declined")
        except ValueError as exc:
            raise RowTableError(f"{name}: column {declined!r} {str(exc).split('`declined` ', 1)[-1]}") from None
        detector = f"column {declined!r}"
    elif declined is not None and declined != "declined":
        raise missing_column_error(df, declined, role=None, caller=name, keyword="declined")
    else:
        answer_col = resolve_column(df, "answer", cols.answer, caller=name)
        check_column(df, answer_col, "text", caller=name, id_column=qid)
        used = tuple(patterns) if patterns is not None else DEFAULT_REFUSAL_PATTERNS
        flags = detect_declined(df[answer_col], patterns=used, empty_is_declined=empty_is_declined)
        detector = (
            f"raglab.abstention.detect_declined (lexical, {len(used)} "
            f"{'default' if patterns is None else 'custom'} patterns, on column {answer_col!r}, "
            f"empty_is_declined={empty_is_declined})"
        )
    result = score_abstention(flags, unanswerable, ci=ci, method=method, detector=detector)
    out = df.copy(deep=False)
    out["declined"] = np.asarray(flags, dtype=bool)  # the pooled flag: an attribute, not a metric
    out["unanswerable"] = np.asarray(unanswerable, dtype=bool)
    out["correct_decline"] = np.where(unanswerable, flags.astype(float), np.nan)
    out["false_decline"] = np.where(unanswerable, np.nan, flags.astype(float))
    update_meta(
        out,
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
    result.rows = out
    return result
