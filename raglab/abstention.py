"""Declining to answer: detecting refusals in answer text.

Unanswerable questions (no gold) are scored on whether the system declined, and answerable ones on
whether it wrongly declined. When the run has no ``declined`` column, raglab detects refusals in the
answer text with a small, configurable set of patterns. It is a lexical detector: it misses creative
refusals and can fire on answers that merely mention not knowing something, so it states what it
matched and can be replaced by a judge (see :mod:`raglab.judge`) or by the system's own flag.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

__all__ = ["DEFAULT_REFUSAL_PATTERNS", "detect_declined"]

DEFAULT_REFUSAL_PATTERNS: tuple[str, ...] = (
    r"\bi (?:do not|don't|dont) know\b",
    r"\bi(?: am|'m)? (?:not sure|unsure)\b",
    r"\b(?:cannot|can't|can not|could not|couldn't|am unable to|unable to) (?:answer|find|determine|say|tell|provide)\b",
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
