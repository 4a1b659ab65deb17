"""Cheap tripwires for every request: citation validity and lexical support (no LLM).

A judge is too slow and costly to run on every production request; these two checks are not. They
are alarms, not metrics: run them on all traffic and send what they flag to a person or a judge.

* :func:`citation_validity`: every citation marker ``[n]`` in an answer must name a context passage
  that exists (``1 <= n <= number of passages``).
* :func:`lexical_support`: each sentence of the answer should share most of its content words
  (words that are not stop words) with the context. Word overlap is fooled by negation ("does
  not hold") and misses paraphrase, so a low score means "look", not "wrong".

Both take plain sequences (lists, arrays or Series) and return a tidy DataFrame with one row per
answer, so they run on logs without a row table or the ``df.rag`` accessor. The work is done on
flat numpy arrays (one token per element), not per-row Python set arithmetic.

Examples
--------
>>> from raglab.tripwires import citation_validity, lexical_support
>>> citation_validity(["Paris [1].", "Lyon [3]."], [["p1", "p2"], ["p1"]])["valid"].tolist()
[True, False]
>>> context = "A covering index contains every column the query needs."
>>> lexical_support(["A covering index holds every column the query needs."], [context])["supported_share"].tolist()
[1.0]
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from raglab._validation import check_option

__all__ = [
    "STOP_WORDS",
    "SENTENCE_SPLIT",
    "CITATION_PATTERN",
    "DEFAULT_THRESHOLD",
    "content_words",
    "split_sentences",
    "sentence_support",
    "citation_validity",
    "lexical_support",
]

#: Default share of a sentence's content words that must appear in the context.
DEFAULT_THRESHOLD = 0.6

#: English function words ignored by the support check (articles, auxiliaries, pronouns,
#: prepositions, conjunctions, common adverbs). Negations ("not", "no", "never") are deliberately
#: NOT stop words: "does not" must not overlap with "does" alone for free.
STOP_WORDS: frozenset[str] = frozenset(
    ["a", "an", "the", "this", "that", "these", "those", "there", "here", "is", "are", "was", "were", "be", "been", "being", "am", "do", "does", "did", "doing", "done", "has", "have", "had", "having", "i", "me", "my", "mine", "we", "us", "our", "ours", "you", "your", "yours", "he", "him", "his", "she", "her", "hers", "it", "its", "they", "them", "their", "theirs", "what", "which", "who", "whom", "whose", "when", "where", "why", "how", "of", "to", "in", "on", "at", "by", "for", "from", "with", "without", "into", "onto", "over", "under", "about", "above", "below", "between", "among", "through", "during", "before", "after", "since", "until", "upon", "within", "along", "across", "against", "toward", "towards", "via", "per", "and", "or", "but", "nor", "so", "yet", "if", "then", "than", "because", "while", "as", "also", "too", "very", "just", "only", "can", "could", "may", "might", "must", "shall", "should", "will", "would", "s", "t", "d", "ll", "m", "re", "ve"]
)

#: Sentence boundary: after ., ! or ? (optionally followed by a closing quote or bracket) and
#: whitespace, or at a line break.
SENTENCE_SPLIT = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\s*\n+\s*")

#: A citation marker: ``[1]``, ``[1, 2]``, ``[1-3]`` (ranges with ``-`` or an en dash).
CITATION_PATTERN = re.compile(r"\[\s*(\d+(?:\s*(?:,|-|\u2013)\s*\d+)*)\s*\]")

_WORD = re.compile(r"[a-z0-9]+")


def _as_object_array(values: Iterable[Any], name: str) -> np.ndarray:
    if isinstance(values, (str, bytes)):
        raise TypeError(f"`{name}` must be a sequence of texts (one per answer), not a single string")
    if isinstance(values, pd.Series):
        return values.to_numpy(dtype=object)
    return np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=object)


def _text(value: Any, name: str, position: int) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ""
    if not isinstance(value, str):
        raise TypeError(f"`{name}` must hold str or None; position {position} holds {type(value).__name__} {value!r:.40}")
    return value


def _strip_citations(text: str) -> str:
    return CITATION_PATTERN.sub(" ", text)


def content_words(text: str, *, stop_words: Iterable[str] = STOP_WORDS) -> set[str]:
    """The set of lower-cased content words (``[a-z0-9]+`` tokens that are not stop words).

    Citation markers such as ``[1]`` are removed first, so they never count as words.

    Examples
    --------
    >>> sorted(content_words("The GIL is not released [2]."))
    ['gil', 'not', 'released']
    """
    stop = stop_words if isinstance(stop_words, (set, frozenset)) else frozenset(stop_words)
    return {w for w in _WORD.findall(_strip_citations(text).lower()) if w not in stop}


def split_sentences(text: str | None) -> list[str]:
    """Split text into sentences at ``.``, ``!`` or ``?`` followed by whitespace, and at line breaks.

    Empty pieces are dropped; a missing text gives ``[]``.

    Examples
    --------
    >>> split_sentences("It opened in 1932. It is 503 m long!\\nSee [1].")
    ['It opened in 1932.', 'It is 503 m long!', 'See [1].']
    """
    if text is None or (isinstance(text, float) and np.isnan(text)):
        return []
    return [piece.strip() for piece in SENTENCE_SPLIT.split(text) if piece and piece.strip()]


def sentence_support(sentence: str, context: str, *, stop_words: Iterable[str] = STOP_WORDS) -> float:
    """Share of the sentence's content words that occur in the context (nan if it has none).

    Examples
    --------
    >>> sentence_support("Covering indexes compress tables.", "A covering index holds columns.")
    0.25
    """
    words = content_words(sentence, stop_words=stop_words)
    if not words:
        return float("nan")
    return len(words & content_words(context, stop_words=stop_words)) / len(words)


def _join_context(value: Any, name: str, position: int) -> str:
    if isinstance(value, (list, tuple, np.ndarray)):
        parts = []
        for item in value:
            parts.append(_text(item, name, position))
        return "\n".join(parts)
    return _text(value, name, position)


# --------------------------------------------------------------------------------------------------
# Citation validity
# --------------------------------------------------------------------------------------------------


def _passage_count(value: Any, position: int) -> int:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return 0
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"`contexts` position {position}: expected a list of passages or a count, got a bool")
    if isinstance(value, (int, np.integer)):
        if value < 0:
            raise ValueError(f"`contexts` position {position}: a passage count cannot be negative ({value})")
        return int(value)
    if isinstance(value, str):
        return 1
    if isinstance(value, (list, tuple, np.ndarray)):
        return len(value)
    raise TypeError(
        f"`contexts` position {position}: expected a list of passages (or their number), "
        f"got {type(value).__name__} {value!r:.40}"
    )


def _expand_citation(body: str) -> list[int]:
    numbers: list[int] = []
    for part in re.split(r"\s*,\s*", body):
        bounds = re.split(r"\s*(?:-|\u2013)\s*", part)
        if len(bounds) == 2:
            low, high = int(bounds[0]), int(bounds[1])
            if high < low:
                low, high = high, low
            numbers.extend(range(low, high + 1))
        else:
            numbers.extend(int(b) for b in bounds)
    return numbers


def citation_validity(
    answers: Sequence[str | None] | pd.Series,
    contexts: Sequence[Any] | pd.Series,
    *,
    base: int = 1,
) -> pd.DataFrame:
    """Check that every citation ``[n]`` in each answer names a passage that exists.

    Parameters
    ----------
    answers : sequence of str or None
        Answer texts. Markers are ``[n]``, ``[n, m]`` and ranges ``[n-m]``.
    contexts : sequence
        Per answer, the list of passages given to the model (only its length is used), or the
        number of passages as an int. A plain string counts as one passage; None as zero.
    base : {1, 0}
        Number of the first passage (default 1: ``[1]`` is the first passage).

    Returns
    -------
    DataFrame
        One row per answer, same index as ``answers`` when it is a Series: ``n_passages``,
        ``citations`` (list[int], in order of appearance), ``n_citations``, ``invalid``
        (list[int]: cited numbers with no passage), ``has_citations`` and ``valid`` (True when
        every citation names an existing passage; an answer without citations is valid, check
        ``has_citations`` to require them).

    Examples
    --------
    >>> out = citation_validity(["A [1][2].", "B [1-3].", "C."], [["x", "y"], 2, ["x"]])
    >>> out[["n_citations", "invalid", "valid"]].to_dict("list")
    {'n_citations': [2, 3, 0], 'invalid': [[], [3], []], 'valid': [True, False, True]}
    """
    check_option("base", base, [0, 1])
    texts = _as_object_array(answers, "answers")
    ctx = _as_object_array(contexts, "contexts") if not isinstance(contexts, pd.Series) else contexts.to_numpy(dtype=object)
    if len(texts) != len(ctx):
        raise ValueError(f"`answers` and `contexts` must have the same length; got {len(texts)} and {len(ctx)}")
    n = len(texts)
    counts = np.fromiter((_passage_count(v, i) for i, v in enumerate(ctx)), dtype=np.int64, count=n)
    filled = pd.Series([_text(v, "answers", i) for i, v in enumerate(texts)], dtype=object)
    bodies = filled.str.findall(CITATION_PATTERN).explode().dropna()
    owners = bodies.index.to_numpy(dtype=np.int64)
    cited_lists = [_expand_citation(b) for b in bodies.to_numpy(dtype=object)]
    lengths = np.fromiter((len(c) for c in cited_lists), dtype=np.int64, count=len(cited_lists))
    row_of = np.repeat(owners, lengths)
    numbers = np.fromiter((x for c in cited_lists for x in c), dtype=np.int64, count=int(lengths.sum()))
    bad = (numbers < base) | (numbers > counts[row_of] - 1 + base)
    n_cited = np.bincount(row_of, minlength=n)
    n_bad = np.bincount(row_of, weights=bad, minlength=n).astype(np.int64)
    splits = np.cumsum(n_cited)[:-1]
    citations = [part.tolist() for part in np.split(numbers, splits)] if n else []
    invalid = [part.tolist() for part in np.split(np.where(bad, numbers, -1), splits)] if n else []
    invalid = [[x for x in part if x != -1] for part in invalid]
    index = answers.index if isinstance(answers, pd.Series) else pd.RangeIndex(n)
    return pd.DataFrame(
        {
            "n_passages": counts,
            "citations": pd.Series(citations, dtype=object).to_numpy(),
            "n_citations": n_cited.astype(np.int64),
            "invalid": pd.Series(invalid, dtype=object).to_numpy(),
            "has_citations": n_cited > 0,
            "valid": n_bad == 0,
        },
        index=index,
    )


# --------------------------------------------------------------------------------------------------
# Lexical support
# --------------------------------------------------------------------------------------------------


def _tokens_long(texts: list[str], stop: frozenset[str]) -> tuple[np.ndarray, np.ndarray]:
    """Flat (owner, word) arrays of the unique content words of each text."""
    words = pd.Series(texts, dtype=object).str.lower().str.findall(_WORD).explode().dropna()
    if words.empty:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=object)
    words = words[~words.isin(stop)]
    frame = pd.DataFrame({"owner": words.index.to_numpy(dtype=np.int64), "word": words.to_numpy(dtype=object)})
    frame = frame.drop_duplicates()
    return frame["owner"].to_numpy(dtype=np.int64), frame["word"].to_numpy(dtype=object)


def lexical_support(
    answers: Sequence[str | None] | pd.Series,
    contexts: Sequence[Any] | pd.Series,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    stop_words: Iterable[str] = STOP_WORDS,
    strip_citations: bool = True,
) -> pd.DataFrame:
    """Content-word support of each answer sentence by its context (the lexical tripwire).

    Each answer is split into sentences (:func:`split_sentences`); citation markers are removed;
    a sentence's support is the share of its content words (``[a-z0-9]+`` tokens, lower-cased,
    minus ``stop_words``) that occur anywhere in the context. A sentence is supported when its
    support is at least ``threshold``. Sentences without any content word ("Yes.") are not
    checkable statements and are skipped.

    Parameters
    ----------
    answers : sequence of str or None
        Answer texts.
    contexts : sequence of str, list of str or None
        The context of each answer: a string or a list of passages (joined).
    threshold : float
        Minimum support for a sentence to pass (default 0.6), in ``[0, 1]``.
    stop_words : iterable of str
        Words ignored on both sides (default :data:`STOP_WORDS`).
    strip_citations : bool
        Remove citation markers such as ``[1]`` before counting words (default True; with False
        the cited number counts as a content word the context rarely contains).

    Returns
    -------
    DataFrame
        One row per answer: ``sentences`` (list[str], the checked sentences), ``support``
        (list[float]), ``n_sentences``, ``n_supported``, ``supported_share`` (n_supported /
        n_sentences; NaN when there is no checkable sentence), ``min_support`` and ``flagged``
        (True when any sentence is below the threshold).

    Examples
    --------
    >>> ctx = "A covering index contains every column the query needs. EXPLAIN shows 'Using index'."
    >>> ans = "EXPLAIN then shows 'Using index' [1]. Covering indexes also compress the table by 90 percent [1]."
    >>> out = lexical_support([ans], [ctx])
    >>> out.loc[0, "n_sentences"], out.loc[0, "n_supported"], bool(out.loc[0, "flagged"])
    (np.int64(2), np.int64(1), True)
    """
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
        raise ValueError(f"`threshold` must be a number in [0, 1], but {threshold!r} was passed.")
    stop = frozenset(stop_words)
    texts = _as_object_array(answers, "answers")
    ctx = contexts.to_numpy(dtype=object) if isinstance(contexts, pd.Series) else _as_object_array(contexts, "contexts")
    if len(texts) != len(ctx):
        raise ValueError(f"`answers` and `contexts` must have the same length; got {len(texts)} and {len(ctx)}")
    n = len(texts)
    clean = _strip_citations if strip_citations else (lambda text: text)
    context_texts = [clean(_join_context(v, "contexts", i)) for i, v in enumerate(ctx)]

    # One element per sentence: owner answer, and the sentence text.
    sentences = pd.Series(
        [split_sentences(_text(v, "answers", i)) for i, v in enumerate(texts)], dtype=object
    ).explode().dropna()
    sent_owner = sentences.index.to_numpy(dtype=np.int64)
    sent_text = sentences.to_numpy(dtype=object)
    sent_clean = [clean(s) for s in sent_text]

    # Flat (sentence, word) and (answer, word) pairs, coded to integers for a vectorised isin.
    sw_sent, sw_word = _tokens_long(sent_clean, stop)
    cw_owner, cw_word = _tokens_long(context_texts, stop)
    codes, _vocab = pd.factorize(np.concatenate([sw_word, cw_word]))
    vocab_size = max(len(_vocab), 1)
    sent_word_code = codes[: len(sw_word)].astype(np.int64)
    ctx_word_code = codes[len(sw_word):].astype(np.int64)
    sent_keys = sent_owner[sw_sent] * vocab_size + sent_word_code if len(sw_sent) else np.empty(0, np.int64)
    ctx_keys = cw_owner * vocab_size + ctx_word_code
    found = np.isin(sent_keys, ctx_keys)
    n_sent = len(sent_text)
    n_words = np.bincount(sw_sent, minlength=n_sent)
    n_found = np.bincount(sw_sent, weights=found, minlength=n_sent)
    checkable = n_words > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        support = np.where(checkable, n_found / np.maximum(n_words, 1), np.nan)
    passed = checkable & (support >= threshold)

    keep = np.flatnonzero(checkable)
    owner_k = sent_owner[keep]
    n_sentences = np.bincount(owner_k, minlength=n)
    n_supported = np.bincount(owner_k, weights=passed[keep], minlength=n).astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(n_sentences > 0, n_supported / np.maximum(n_sentences, 1), np.nan)
    min_support = np.full(n, np.nan)
    if len(keep):
        np.fmin.at(min_support, owner_k, support[keep])
    splits = np.cumsum(n_sentences)[:-1]
    sentence_lists = [part.tolist() for part in np.split(sent_text[keep], splits)] if n else []
    support_lists = [part.tolist() for part in np.split(support[keep], splits)] if n else []
    index = answers.index if isinstance(answers, pd.Series) else pd.RangeIndex(n)
    return pd.DataFrame(
        {
            "sentences": pd.Series(sentence_lists, dtype=object).to_numpy(),
            "support": pd.Series(support_lists, dtype=object).to_numpy(),
            "n_sentences": n_sentences.astype(np.int64),
            "n_supported": n_supported,
            "supported_share": share,
            "min_support": min_support,
            "flagged": n_supported < n_sentences,
        },
        index=index,
    )
