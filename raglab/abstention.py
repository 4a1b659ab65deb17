"""Declining to answer: detecting refusals in answer text, and scoring them in one direction each.

Unanswerable questions (no gold) are scored on whether the system declined, and answerable ones on
whether it wrongly declined: two rates, each over its own questions and each with one direction,

- ``correct_decline``: declined / unanswerable questions, **higher is better**;
- ``false_decline``: declined / answerable questions, **lower is better**.

The pooled ``declined`` flag (declined or not, over all questions) is never a metric: a rise in it is
good on unanswerable questions and bad on answerable ones, so it has no direction, and the metric
registry gives it none (a gate on it refuses; see :mod:`raglab._registry`). Compare runs on
``correct_decline`` and ``false_decline`` (``df.rag.abstention().rows`` writes both, NaN outside
their questions, so a mean divides by the right number of questions).

When the run has no ``declined`` column, raglab detects refusals in the
answer text with a small, configurable set of patterns. It is a lexical detector: it misses creative
refusals and can fire on answers that merely mention not knowing something, so it states what it
matched and can be replaced by a judge (see :mod:`raglab.judge`) or by the system's own flag.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from raglab._interval import Interval

__all__ = ["DEFAULT_REFUSAL_PATTERNS", "AbstentionResult", "detect_declined", "score_abstention"]

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
    combined = re.compile("|".join(f"(?:{p})" for p in patterns), flags=re.IGNORECASE | re.MULTILINE)
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
class AbstentionResult:
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

    def _repr_html_(self) -> str:
        table = self.to_frame().to_html(index=False, float_format=lambda v: f"{v:.3f}")
        return f"<p><b>Abstention</b> (detector: {html.escape(self.detector)})</p>{table}"


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
