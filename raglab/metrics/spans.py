"""Gold as character spans, matched to chunks at scoring time (plain lists in, no pandas needed).

Gold labels tied to chunk ids go stale when the corpus is re-chunked. Labels as character spans
(``{"doc_id", "start", "end"}``, end exclusive as in Python slicing, optional ``"grade"``, default 1)
score any chunking: each retrieved chunk carries its own span, and relevance is decided by overlap.

Rules (recorded by ``df.rag.retrieval`` in ``attrs["raglab"]["retrieval"]["span_rule"]``):

- ``span_rule="union"`` (the default): a gold span is **found at rank r** at the first r where the
  chunks at ranks 1..r of the same document *together* cover at least ``min_overlap`` of it,
  measured over the union of their spans (characters counted once). The default ``min_overlap=1.0``
  is the whole span: a gold span cut by a chunk boundary counts only when every piece reached the
  model. An ``int`` is a number of characters (capped at the span's length), a ``float`` in (0, 1]
  a fraction of the span's length. The int ``1`` is refused under this rule: it would read as the
  whole span (``1.0``) but mean one character, the old per-chunk default that rewards cutting.
  Cutting a span can never make it count earlier, and a re-chunking that leaves the same gold
  characters in the top r for every r leaves every metric equal.
- ``span_rule="per_chunk"`` (raglab's earlier default, kept as an explicit option; notebook 02
  shows it as the trap it was): each chunk is judged alone and a span is found at the first chunk
  that overlaps it by ``min_overlap`` (default 1 character). A window that clips a span's edge
  counts it as found, so cutting can score higher.
- A fraction is compared exactly, in integers: the float is read as the decimal it prints as
  (``0.07`` is 7/100, via ``fractions.Fraction(repr(x))``; a ``Fraction`` is used as given) and the
  test is ``overlap * denominator >= numerator * span_length``. So ``min_overlap=0.07`` on a
  100-character span needs exactly 7 characters (the float product ``0.07 * 100`` is
  7.000000000000001 and would need 8).
- The gold *units* are the spans. recall@k counts spans found at ranks <= k; hit@k is 1 when one
  is; rr is one over the first rank at which a span is found; nDCG credits each span once, at the
  rank where it is found, against the ideal of one span per rank (capped at 1, reached when one
  chunk completes several spans).
- A chunk is **relevant** (what precision counts) when a gold span is found at its rank: under
  ``"union"`` the chunk that completes a span, so a span cut into two retrieved pieces is one
  relevant chunk, as it would be uncut; under ``"per_chunk"`` every chunk that overlaps a span
  enough. precision@k counts relevant chunks in the top k and divides by k; AP averages, over the
  spans, the precision at the rank each span is found (0 for spans not found); R-precision is the
  precision at R = number of gold spans. Precision can rise when a re-chunking spreads spans that
  one chunk completed over several chunks (more relevant chunks, as more relevant ids would); the
  pieces of one span are one relevant chunk, never more.
- ``coverage@k``: the fraction of gold characters (the union of the gold spans) inside the union
  of the top-k chunk spans of the same document; nothing is counted twice. It does not depend on
  ``span_rule``.

When every chunk is a whole document and the gold spans are whole documents these rules give the
same numbers as gold ids. The rank metrics are the registered ones (:mod:`raglab.metrics.specs`),
applied to the spans found; ``coverage@k`` is defined here.

Examples
--------
>>> from raglab.metrics.spans import span_metrics
>>> gold = [{"doc_id": "a", "start": 100, "end": 200}]
>>> chunks = [{"doc_id": "a", "start": 150, "end": 300}, {"doc_id": "a", "start": 0, "end": 150}]
>>> out = span_metrics(chunks, gold, k=[1, 2])
>>> out["recall@1"], out["recall@2"], out["coverage@1"], out["coverage@2"]
(0.0, 1.0, 0.5, 1.0)
>>> span_metrics(chunks, gold, k=[1, 2], span_rule="per_chunk")["recall@1"]   # the old rule: half counts
1.0
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from itertools import chain, repeat
from numbers import Integral, Real
from operator import itemgetter
from typing import Any

import numpy as np
import pandas as pd

from raglab._errors import BadCellError
from raglab._validation import is_missing
from raglab.metrics._common import (
    Found,
    Matched,
    _check_gain,
    _check_ks,
    _check_no_relevant,
    _zero_no_relevant,
)
from raglab.metrics._kernel import _as_cells, _score
from raglab.metrics.specs import score_columns, select

__all__ = ["SPAN_RULES", "check_min_overlap", "check_span_rule", "span_metrics", "span_retrieval_scores"]

#: How a gold span counts as found: by the union of the chunks so far, or by one chunk alone (the old rule).
SPAN_RULES: tuple[str, ...] = ("union", "per_chunk")

#: ``min_overlap`` when none is given, per rule: the whole span (union), one character (per chunk).
DEFAULT_MIN_OVERLAP: dict[str, int | float] = {"union": 1.0, "per_chunk": 1}


def check_span_rule(span_rule: Any, min_overlap: Any = None) -> tuple[str, int | float]:
    """Validate ``span_rule`` and resolve ``min_overlap`` (None: the rule's default).

    Parameters
    ----------
    span_rule : {"union", "per_chunk"}
        ``"union"``: a span is found when the chunks so far together cover ``min_overlap`` of it;
        ``"per_chunk"``: when one chunk alone overlaps it by ``min_overlap`` (the old rule).
    min_overlap : int, float, fractions.Fraction or None
        See :func:`check_min_overlap`; None takes 1.0 (the whole span) under ``"union"`` and 1
        character under ``"per_chunk"``.

    Returns
    -------
    tuple
        ``(span_rule, min_overlap)``.

    Examples
    --------
    >>> check_span_rule("union"), check_span_rule("per_chunk"), check_span_rule("union", 0.5)
    (('union', 1.0), ('per_chunk', 1), ('union', 0.5))
    """
    if not isinstance(span_rule, str) or span_rule not in SPAN_RULES:
        raise ValueError(
            f"`span_rule` must be one of {list(SPAN_RULES)}, got {span_rule!r}: 'union' (a span counts when the "
            "chunks so far together cover min_overlap of it) or 'per_chunk' (one chunk alone must overlap it)"
        )
    if min_overlap is None:
        min_overlap = DEFAULT_MIN_OVERLAP[span_rule]
    check_min_overlap(min_overlap, span_rule=span_rule)
    return span_rule, min_overlap


def span_rule_record(span_rule: str, min_overlap: Any) -> dict[str, Any]:
    """What ``attrs["raglab"]["retrieval"]["span_rule"]`` records: the rule, the threshold, and per metric how it is decided.

    Examples
    --------
    >>> record = span_rule_record("union", 1.0)
    >>> record["rule"], record["min_overlap"], record["unit"]
    ('union', 1.0, 'fraction of the gold span')
    """
    value, unit = check_min_overlap(min_overlap)
    if span_rule == "union":
        found = ("the first rank r at which the chunks at ranks 1..r of the same doc_id together cover >= min_overlap "
                 "of the span (union of their spans, characters counted once)")
        relevant = "a chunk at whose rank a gold span is found (the chunk that completes it)"
    else:
        found = "the first rank of a chunk that alone overlaps the span (same doc_id) by >= min_overlap"
        relevant = "a chunk that overlaps a gold span of the same doc_id by >= min_overlap"
    return {
        "rule": span_rule,
        "min_overlap": value,
        "unit": unit,
        "found_at": found,
        "recall": "gold spans found at ranks <= k, over all gold spans (a span counts once)",
        "hit": "1 if a gold span is found at a rank <= k",
        "ndcg": "each gold span credited once, at the rank where it is found",
        "rr": "one over the first rank at which a gold span is found",
        "relevant_chunk": relevant,
        "precision": "relevant chunks in the top k, divided by k (ap and r_precision use the same chunks)",
        "coverage": "gold characters inside the union of the top-k chunk spans (independent of the rule)",
    }


def check_min_overlap(min_overlap: Any, *, span_rule: str | None = None) -> tuple[float, str]:
    """Validate ``min_overlap`` and return ``(value, unit)``: unit "characters" or "fraction of the gold span".

    Parameters
    ----------
    min_overlap : int, float or fractions.Fraction
        Characters (an int >= 1) or a fraction of the gold span's length (in (0, 1]).
    span_rule : {"union", "per_chunk"} or None
        The rule it is for, when known. Under ``"union"`` the int ``1`` (and ``True``) is refused:
        it reads like the float ``1.0`` (the whole span, the union default) but means one character,
        which brings back the reward for cutting a span that the union rule removes. It was the old
        per-chunk default, so a config that spelled it out would silently keep the old behaviour.

    Returns
    -------
    tuple
        ``(value, unit)``: the int, or the fraction as a float (for the record in ``attrs``; the
        comparison itself is exact, see the module notes).

    Examples
    --------
    >>> check_min_overlap(1), check_min_overlap(0.5), check_min_overlap(1.0, span_rule="union")
    ((1, 'characters'), (0.5, 'fraction of the gold span'), (1.0, 'fraction of the gold span'))
    >>> check_min_overlap(1, span_rule="union")
    Traceback (most recent call last):
    ...
    ValueError: `min_overlap=1` is ambiguous under span_rule='union': ...
    """
    if span_rule == "union" and (min_overlap is True or (isinstance(min_overlap, Integral) and min_overlap == 1)):
        raise ValueError(
            f"`min_overlap={min_overlap if min_overlap is True else int(min_overlap)!r}` is ambiguous under span_rule='union': the int 1 means one character "
            "(a chunk that clips one character of a gold span counts it as found, the old per-chunk default "
            "that rewards cutting), while 1.0 means the whole span (the union default). Pass "
            "`min_overlap=1.0` (or None) for the whole span, an explicit character count >= 2, or "
            "`span_rule='per_chunk'` for the old rule"
        )
    if isinstance(min_overlap, bool) or not isinstance(min_overlap, Real):
        raise ValueError(
            f"`min_overlap` must be a number of characters (int >= 1) or a fraction of the gold span "
            f"(float in (0, 1]), got {min_overlap!r}"
        )
    if isinstance(min_overlap, Integral):
        if min_overlap < 1:
            raise ValueError(f"`min_overlap` as characters must be >= 1, got {min_overlap!r}")
        return int(min_overlap), "characters"
    value = float(min_overlap)
    if not 0 < value <= 1:
        raise ValueError(
            f"`min_overlap` as a fraction of the gold span must be in (0, 1], got {min_overlap!r}; "
            "pass an int for a number of characters"
        )
    return value, "fraction of the gold span"


def _overlap_rule(min_overlap: Any) -> tuple[str, int, int]:
    """``("characters", n, 1)`` or ``("fraction", p, q)``: ``min_overlap`` as exact integers.

    A float fraction is the decimal it prints as (``repr``: 0.07 -> 7/100, not the binary double
    0.07000000000000000666...); a :class:`fractions.Fraction` is used as given.

    Examples
    --------
    >>> _overlap_rule(0.07), _overlap_rule(20)
    (('fraction', 7, 100), ('characters', 20, 1))
    """
    value, unit = check_min_overlap(min_overlap)
    if unit == "characters":
        return "characters", int(value), 1
    exact = min_overlap if isinstance(min_overlap, Fraction) else Fraction(repr(float(min_overlap)))
    return "fraction", exact.numerator, exact.denominator


def _relevant_overlap(overlap: int, length: int, rule: tuple[str, int, int]) -> bool:
    """One (chunk, gold span) pair, in Python integers: the definition."""
    kind, p, q = rule
    if overlap <= 0:
        return False
    if kind == "characters":
        return overlap >= min(length, p)
    return overlap * q >= p * length


_INT64_SAFE = 2**62


def _relevant_overlaps(overlap: np.ndarray, length: np.ndarray, rule: tuple[str, int, int]) -> np.ndarray:
    """:func:`_relevant_overlap` for arrays of pairs, with numpy; exact (int64, or Python ints if it could overflow)."""
    kind, p, q = rule
    overlap = np.asarray(overlap, dtype=np.int64)
    length = np.asarray(length, dtype=np.int64)
    if kind == "characters":
        return (overlap > 0) & (overlap >= np.minimum(length, p))
    largest = int(max(np.abs(overlap).max(initial=0), length.max(initial=0)))
    if largest * max(p, q) < _INT64_SAFE:
        return (overlap > 0) & (overlap * np.int64(q) >= np.int64(p) * length)
    # Huge spans or a fraction with many digits: the same comparison in exact Python integers.
    return (overlap > 0) & np.asarray(overlap.astype(object) * q >= length.astype(object) * p, dtype=bool)


# --------------------------------------------------------------------------------------------------
# One question (the definition; written with plain loops)
# --------------------------------------------------------------------------------------------------


def _span_tuple(span: Any, what: str) -> tuple[Any, int, int]:
    if not isinstance(span, Mapping) or any(key not in span for key in ("doc_id", "start", "end")):
        raise TypeError(f"each {what} span must be a dict with doc_id, start, end; got {span!r}")
    doc, start, end = span["doc_id"], span["start"], span["end"]
    if any(isinstance(x, bool) or not isinstance(x, Integral) for x in (start, end)) or not 0 <= start <= end:
        raise ValueError(f"{what} span offsets must be integers with 0 <= start <= end; got {span!r}")
    return doc, int(start), int(end)


def _relevant_gold_spans(gold_spans: Any) -> list[tuple[Any, int, int, float]]:
    """Distinct gold spans with grade > 0, in label order: (doc, start, end, grade)."""
    if gold_spans is None or is_missing(gold_spans):
        return []
    if isinstance(gold_spans, (str, Mapping)) or not isinstance(gold_spans, Iterable):
        raise TypeError(f"gold_spans must be a list of span dicts, got {type(gold_spans).__name__} {gold_spans!r}")
    units: list[tuple[Any, int, int, float]] = []
    seen = set()
    for span in gold_spans:
        doc, start, end = _span_tuple(span, "gold")
        if end == start:
            raise ValueError(f"gold span {span!r} is empty (start == end); it can never be retrieved")
        grade = span.get("grade", 1)
        if isinstance(grade, bool) or not isinstance(grade, Real) or math.isnan(grade):
            raise ValueError(f"gold span grades must be numbers, got {grade!r} in {span!r}")
        if grade > 0 and (doc, start, end) not in seen:
            seen.add((doc, start, end))
            units.append((doc, start, end, float(grade)))
    return units


def _merge(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _covered(gold: list[tuple[int, int]], chunks: list[tuple[int, int]]) -> int:
    total = 0
    for g_start, g_end in _merge(gold):
        for c_start, c_end in _merge(chunks):
            total += max(0, min(g_end, c_end) - max(g_start, c_start))
    return total


def span_metrics(
    retrieved_spans: Sequence[Mapping[str, Any]],
    gold_spans: Sequence[Mapping[str, Any]] | None,
    k: int | Iterable[int] = 5,
    *,
    span_rule: str = "union",
    min_overlap: int | float | None = None,
    gain: str = "exponential",
    metrics: str | Iterable[str] | None = None,
) -> dict[str, float]:
    """Retrieval metrics of one question whose gold is character spans.

    Parameters
    ----------
    retrieved_spans : list of dict
        The span (``doc_id``, ``start``, ``end``) of each chunk that reached the model, best first.
    gold_spans : list of dict or None
        Gold spans, optionally with ``grade`` (default 1); none with grade > 0 means unanswerable.
    k : int or iterable of int
        Cut-offs.
    span_rule : {"union", "per_chunk"}
        ``"union"`` (default): a span is found at the first rank where the chunks so far together
        cover ``min_overlap`` of it; ``"per_chunk"``: where one chunk alone overlaps it by
        ``min_overlap`` (the old rule, which rewards cutting). See the module notes.
    min_overlap : int, float or None
        Characters (int, capped at the gold span's length) or fraction of the gold span (float in
        (0, 1]); None: 1.0, the whole span, under ``"union"``, and 1 character under ``"per_chunk"``.
        The int 1 is refused under ``"union"`` (it would mean one character, not the whole span).
    gain : {"exponential", "linear"}
        nDCG gain.
    metrics : str or iterable of str, optional
        Base names of registered metrics to compute instead of the defaults (e.g. ``["map"]``).

    Returns
    -------
    dict
        ``recall@k``, ``hit@k``, ``precision@k``, ``ndcg@k``, ``coverage@k`` per k, then ``rr``,
        ``ap``, ``r_precision`` (or the ``metrics`` asked for); all NaN when unanswerable.

    Examples
    --------
    >>> gold = [{"doc_id": "a", "start": 100, "end": 200}]
    >>> chunks = [{"doc_id": "b", "start": 0, "end": 500}, {"doc_id": "a", "start": 150, "end": 400}]
    >>> out = span_metrics(chunks, gold, k=2)     # half of the span reached the model: not found
    >>> out["recall@2"], out["rr"], out["coverage@2"]
    (0.0, 0.0, 0.5)
    >>> span_metrics(chunks, gold, k=2, min_overlap=0.5)["recall@2"]
    1.0
    """
    ks = _check_ks(k)
    _check_gain(gain)
    span_rule, min_overlap = check_span_rule(span_rule, min_overlap)
    rule = _overlap_rule(min_overlap)
    specs = select(metrics, "spans")
    if isinstance(retrieved_spans, (str, Mapping)) or not isinstance(retrieved_spans, (Sequence, np.ndarray)):
        raise TypeError(f"retrieved_spans must be a list of span dicts, got {type(retrieved_spans).__name__}")
    chunks = [_span_tuple(span, "retrieved") for span in retrieved_spans]
    units = _relevant_gold_spans(gold_spans)
    names = score_columns(ks, coverage=True, metrics=metrics)
    if not units:
        return dict.fromkeys(names, math.nan)
    matched = (_match_spans_union if span_rule == "union" else _match_spans)(chunks, units, rule)
    out: dict[str, float] = {}
    for spec in specs:
        for k_ in ks if spec.per_k else [None]:
            name = spec.base if k_ is None else f"{spec.base}@{k_}"
            if spec.base == "coverage":
                out[name] = _coverage(chunks, units, k_)
            else:
                out[name] = spec.definition(matched, k_, gain)
    return {name: out[name] for name in names}


def _match_spans(chunks: list[tuple[Any, int, int]], units: list[tuple[Any, int, int, float]], rule: tuple[str, int, int]) -> Matched:
    """One question's matches: each span at the first rank of a chunk relevant to it; the relevant chunks."""
    first_rank: list[int | None] = [None] * len(units)
    relevant_ranks: list[int] = []
    for rank, (doc, start, end) in enumerate(chunks, start=1):
        relevant = False
        for u, (g_doc, g_start, g_end, _) in enumerate(units):
            if g_doc != doc:
                continue
            overlap = min(end, g_end) - max(start, g_start)
            if _relevant_overlap(overlap, g_end - g_start, rule):
                relevant = True
                if first_rank[u] is None:
                    first_rank[u] = rank
        if relevant:
            relevant_ranks.append(rank)
    found = sorted((r, u) for u, r in enumerate(first_rank) if r is not None)
    return Matched(
        found=tuple((r, units[u][3]) for r, u in found),
        relevant_ranks=tuple(relevant_ranks),
        grades=tuple(unit[3] for unit in units),
    )


def _match_spans_union(
    chunks: list[tuple[Any, int, int]], units: list[tuple[Any, int, int, float]], rule: tuple[str, int, int]
) -> Matched:
    """One question under the union rule: each span at the first rank r where chunks 1..r cover enough of it.

    The definition, by brute force: for every rank, the union of the chunks so far (same document),
    clipped to the span and merged, is measured and compared with ``min_overlap``. A relevant chunk
    is one at whose rank some span is found.
    """
    first_rank: list[int | None] = [None] * len(units)
    for u, (g_doc, g_start, g_end, _) in enumerate(units):
        pieces: list[tuple[int, int]] = []
        for rank, (doc, start, end) in enumerate(chunks, start=1):
            if doc != g_doc:
                continue
            lo, hi = max(start, g_start), min(end, g_end)
            if lo >= hi:
                continue
            pieces.append((lo, hi))
            covered = sum(b - a for a, b in _merge(pieces))
            if _relevant_overlap(covered, g_end - g_start, rule):
                first_rank[u] = rank
                break
    found = sorted((r, u) for u, r in enumerate(first_rank) if r is not None)
    return Matched(
        found=tuple((r, units[u][3]) for r, u in found),
        relevant_ranks=tuple(sorted({r for r, _ in found})),
        grades=tuple(unit[3] for unit in units),
    )


def _coverage(chunks: list[tuple[Any, int, int]], units: list[tuple[Any, int, int, float]], k: int) -> float:
    """coverage@k of one question: gold characters inside the union of the top-k chunk spans."""
    gold_chars = 0
    covered = 0
    for doc in {u[0] for u in units}:
        gold_doc = [(u[1], u[2]) for u in units if u[0] == doc]
        chunk_doc = [(c[1], c[2]) for c in chunks[:k] if c[0] == doc and c[2] > c[1]]
        gold_chars += sum(end - start for start, end in _merge(gold_doc))
        covered += _covered(gold_doc, chunk_doc)
    return covered / gold_chars


# --------------------------------------------------------------------------------------------------
# Many questions (numpy over the flattened spans)
# --------------------------------------------------------------------------------------------------


def _flatten_spans(cells: np.ndarray, what: str, *, missing_ok: bool) -> dict[str, np.ndarray]:
    """Flatten a column of span lists: row, doc, start, end (and grade) per span, in row-major order."""
    n = len(cells)
    is_list = np.fromiter(map(isinstance, cells, repeat((list, tuple, np.ndarray))), dtype=bool, count=n)
    if not is_list.all():
        for position in np.flatnonzero(~is_list).tolist():
            value = cells[position]
            if missing_ok and is_missing(value):
                continue
            hint = " (use [] when nothing was retrieved)" if is_missing(value) else ""
            raise BadCellError(f"{what}[{position}] must be a list of spans, got {type(value).__name__} {value!r}{hint}", position, what=what)
    rows_with = np.flatnonzero(is_list)
    lists = cells[rows_with]
    lengths = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    row = np.repeat(rows_with, lengths)
    spans = np.fromiter(chain.from_iterable(lists), dtype=object, count=int(lengths.sum()))
    try:
        # One pass per key: zip(*records) over millions of spans was most of this function's time.
        docs, starts, ends = (list(map(itemgetter(key), spans)) for key in ("doc_id", "start", "end"))
    except (KeyError, TypeError, IndexError):
        bad = next(i for i, s in enumerate(spans) if not isinstance(s, Mapping) or not all(k in s for k in ("doc_id", "start", "end")))
        raise BadCellError(f"{what}[{int(row[bad])}] holds {spans[bad]!r}; each span is a dict with doc_id, start, end", int(row[bad]), what=what) from None
    for name, values in (("start", starts), ("end", ends)):
        kinds = set(map(type, values))
        if any(not issubclass(kind, Integral) or issubclass(kind, bool) for kind in kinds):
            bad = next(i for i, v in enumerate(values) if not isinstance(v, Integral) or isinstance(v, bool))
            raise BadCellError(f"{what}[{int(row[bad])}] has a span with {name} {values[bad]!r}; offsets must be integers", int(row[bad]), what=what)
    start = np.array(starts, dtype=np.int64)
    end = np.array(ends, dtype=np.int64)
    wrong = (start < 0) | (start > end)
    if wrong.any():
        bad = int(np.flatnonzero(wrong)[0])
        raise BadCellError(f"{what}[{int(row[bad])}] has a span with start > end or start < 0: {spans[bad]!r}", int(row[bad]), what=what)
    doc = np.empty(len(docs), dtype=object)
    doc[:] = docs
    doc_kinds = set(map(type, docs))
    if any(not issubclass(kind, (str, Integral)) or issubclass(kind, bool) for kind in doc_kinds):
        bad = next(i for i, v in enumerate(docs) if not isinstance(v, (str, Integral)) or isinstance(v, bool))
        raise BadCellError(f"{what}[{int(row[bad])}] has a span with doc_id {docs[bad]!r}; ids must be str or int", int(row[bad]), what=what)
    out = {"row": row, "doc": doc, "start": start, "end": end, "length": lengths, "spans": spans}
    return out


def _found_by_union(
    unit: np.ndarray, rank: np.ndarray, lo: np.ndarray, hi: np.ndarray, g_start: np.ndarray, length: np.ndarray,
    rule: tuple[str, int, int],
) -> tuple[np.ndarray, np.ndarray]:
    """The union rule for many spans at once: each span's first rank at which the chunks so far cover enough of it.

    Input: one entry per (chunk, gold span) pair that overlaps, the overlap ``[lo, hi)`` clipped to
    the span, the chunk's ``rank`` and the span's index ``unit``; ``g_start`` and ``length`` are
    every span's start and length. The covered length of a span by the pieces of rank <= r is the
    length of their union: pieces sorted by start, each adds what lies beyond the furthest end
    before it (a running maximum). It only grows with r, so each span's first rank meeting ``rule``
    is found by bisection over the ranks, all spans at once: O(pairs x log(ranks)) time and
    O(pairs) memory, whatever the pieces' overlaps. Returns the spans found (ascending) and their ranks.
    """
    if unit.size == 0:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty
    order = np.lexsort((lo, unit))
    unit, rank = unit[order], rank[order]
    # Coordinates relative to each span, shifted so that spans never share one: the running maximum of
    # one span's ends then stays below the next span's starts.
    shift = np.concatenate([[0], np.cumsum(length + 1)[:-1]])
    base = shift[unit] - g_start[unit]
    a, b = lo[order] + base, hi[order] + base
    units, first = np.unique(unit, return_index=True)
    deepest = np.maximum.reduceat(rank, first)
    low, high = np.ones(units.size, dtype=np.int64), deepest + 1  # the answer is in [low, high]; high = not found
    slot = np.searchsorted(units, unit)
    while (low < high).any():
        mid = (low + high) // 2
        use = rank <= mid[slot]
        ends = np.where(use, b, -1)
        before = np.empty_like(ends)
        before[0] = -1
        np.maximum.accumulate(ends[:-1], out=before[1:])
        gain = np.where(use, np.maximum(b - np.maximum(a, before), 0), 0)
        covered = np.add.reduceat(gain, first)  # pairs are sorted by span: exact integer sums
        meets = _relevant_overlaps(covered, length[units], rule)
        high = np.where(meets & (low < high), mid, high)
        low = np.where(~meets & (low < high), mid + 1, low)
    found = low <= deepest
    return units[found], low[found]


def _gold_span_table(cells: np.ndarray) -> dict[str, np.ndarray]:
    flat = _flatten_spans(cells, "gold_spans", missing_ok=True)
    spans = flat["spans"]
    grades = [span.get("grade", 1) for span in spans] if spans.size else []
    kinds = set(map(type, grades))
    if any(not issubclass(kind, Real) or issubclass(kind, bool) for kind in kinds):
        bad = next(i for i, g in enumerate(grades) if not isinstance(g, Real) or isinstance(g, bool))
        raise BadCellError(f"gold_spans[{int(flat['row'][bad])}] has grade {grades[bad]!r}; grades must be numbers", int(flat["row"][bad]), what="gold_spans")
    grade = np.array(grades, dtype=np.float64)
    if np.isnan(grade).any():
        bad = int(np.flatnonzero(np.isnan(grade))[0])
        raise BadCellError(f"gold_spans[{int(flat['row'][bad])}] has a NaN grade", int(flat["row"][bad]), what="gold_spans")
    empty = flat["end"] == flat["start"]
    if empty.any():
        bad = int(np.flatnonzero(empty)[0])
        raise BadCellError(
            f"gold_spans[{int(flat['row'][bad])}] has an empty span {spans[bad]!r} (start == end); it can never be retrieved",
            int(flat["row"][bad]), what="gold_spans",
        )
    flat["grade"] = grade
    return flat


def span_retrieval_scores(
    retrieved_spans: Any,
    gold_spans: Any,
    k: int | Iterable[int] = 5,
    *,
    span_rule: str = "union",
    min_overlap: int | float | None = None,
    gain: str = "exponential",
    no_relevant: str = "exclude",
    metrics: str | Iterable[str] | None = None,
) -> dict[str, np.ndarray]:
    """:func:`span_metrics` for many questions at once (numpy over the flattened spans); equal to it exactly.

    Parameters
    ----------
    retrieved_spans : sequence of lists of span dicts
        One ranked list of chunk spans per question (``[]`` when nothing was retrieved).
    gold_spans : sequence of (list of span dicts | None)
        One per question; missing or empty means unanswerable (NaN everywhere).
    k, span_rule, min_overlap, gain, metrics
        As in :func:`span_metrics`.
    no_relevant : {"exclude", "zero"}
        A question whose gold spans all have grade <= 0: NaN (``"exclude"``, the default) or 0 on
        every metric (``"zero"``, trec_eval's convention); see
        :func:`raglab.metrics.retrieval_scores`. Missing or empty gold is NaN either way.

    Returns
    -------
    dict of str -> numpy.ndarray
        The columns of :func:`span_metrics`, one value per question.

    Examples
    --------
    >>> gold = [[{"doc_id": "a", "start": 100, "end": 200}], None]
    >>> chunks = [[{"doc_id": "a", "start": 0, "end": 150}], []]
    >>> out = span_retrieval_scores(chunks, gold, k=1)
    >>> out["recall@1"].tolist(), out["coverage@1"].tolist()
    ([0.0, nan], [0.5, nan])
    >>> span_retrieval_scores(chunks, gold, k=1, span_rule="per_chunk")["recall@1"].tolist()
    [1.0, nan]
    """
    return _span_retrieval_scores(
        retrieved_spans, gold_spans, k, span_rule=span_rule, min_overlap=min_overlap, gain=gain,
        no_relevant=no_relevant, metrics=metrics,
    )[0]


def _distinct_gold(gold: dict[str, np.ndarray], g_doc: np.ndarray) -> tuple[np.ndarray, ...]:
    """(row, doc code, start, end, grade) of the distinct gold spans with grade > 0, per row, in label order."""
    keep = gold["grade"] > 0
    g_row, g_doc, g_start, g_end, g_grade = (
        gold["row"][keep], g_doc[keep], gold["start"][keep], gold["end"][keep], gold["grade"][keep]
    )
    if g_row.size:
        ident = np.lexsort((np.arange(g_row.size), g_end, g_start, g_doc, g_row))
        same = np.zeros(g_row.size, dtype=bool)
        a, b = ident[1:], ident[:-1]
        same[a] = (g_row[a] == g_row[b]) & (g_doc[a] == g_doc[b]) & (g_start[a] == g_start[b]) & (g_end[a] == g_end[b])
        first = ~same
        g_row, g_doc, g_start, g_end, g_grade = g_row[first], g_doc[first], g_start[first], g_end[first], g_grade[first]
    return g_row, g_doc, g_start, g_end, g_grade


def _candidate_pairs(g_key: np.ndarray, c_key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(chunk, gold span) index pairs with the same (row, document) key, in chunk order."""
    g_order = np.argsort(g_key, kind="stable")
    g_sorted = g_key[g_order]
    lo = np.searchsorted(g_sorted, c_key, side="left")
    hi = np.searchsorted(g_sorted, c_key, side="right")
    counts = hi - lo
    pair_chunk = np.repeat(np.arange(c_key.size), counts)
    pair_start = np.repeat(np.cumsum(counts) - counts, counts)
    pair_gold = g_order[np.repeat(lo, counts) + np.arange(pair_chunk.size) - pair_start]
    return pair_chunk, pair_gold


def _found_spans(
    span_rule: str, rule: Any, chunks: dict[str, np.ndarray], chunk_rank: np.ndarray, pair_chunk: np.ndarray,
    pair_gold: np.ndarray, g_row: np.ndarray, g_start: np.ndarray, g_end: np.ndarray,
) -> tuple[np.ndarray, ...]:
    """(found spans, their row, the rank they are found at, the relevant chunks' row and rank) under ``span_rule``."""
    overlap = np.minimum(chunks["end"][pair_chunk], g_end[pair_gold]) - np.maximum(
        chunks["start"][pair_chunk], g_start[pair_gold]
    )
    if span_rule == "union":
        hit = overlap > 0
        spans_found, f_rank = _found_by_union(
            pair_gold[hit], chunk_rank[pair_chunk[hit]],
            np.maximum(chunks["start"][pair_chunk], g_start[pair_gold])[hit],
            np.minimum(chunks["end"][pair_chunk], g_end[pair_gold])[hit],
            g_start, g_end - g_start, rule,
        )
        f_row = g_row[spans_found]
        # The relevant chunks: those at whose rank a span is found (a chunk completing two spans counts once).
        width = int(chunk_rank.max(initial=0)) + 1
        relevant_keys = np.unique(f_row.astype(np.int64) * width + f_rank)
        return spans_found, f_row, f_rank, relevant_keys // width, relevant_keys % width
    match = _relevant_overlaps(overlap, g_end[pair_gold] - g_start[pair_gold], rule)
    m_chunk, m_gold = pair_chunk[match], pair_gold[match]
    # Each span is found at its first relevant chunk (pairs come in chunk order, so first = best rank).
    spans_found, at = np.unique(m_gold, return_index=True)
    relevant_chunks = np.unique(m_chunk)
    return (spans_found, g_row[spans_found], chunk_rank[m_chunk[at]], chunks["row"][relevant_chunks],
            chunk_rank[relevant_chunks])


def _coverage_groups(g_key: np.ndarray, c_key: np.ndarray, n_docs: int) -> tuple[np.ndarray, ...]:
    """The (row, document) groups that have gold: each gold span's and chunk's group, whether the chunk's has gold."""
    groups, group_of_gold = np.unique(g_key, return_inverse=True)
    c_group = np.searchsorted(groups, c_key)
    c_group[c_group == groups.size] = 0
    c_has = (groups.size > 0) & (groups[c_group] == c_key) if groups.size else np.zeros(c_key.size, dtype=bool)
    return groups // n_docs, group_of_gold, c_group, c_has


def _coverage_bulk(
    k: int, n: int, chunks: dict[str, np.ndarray], chunk_rank: np.ndarray, grouped: tuple[np.ndarray, ...],
    g_start: np.ndarray, g_end: np.ndarray,
) -> np.ndarray:
    """coverage@k per row: a sweep over the interval end points of each (row, document) that has gold."""
    group_row, group_of_gold, c_group, c_has = grouped
    use = c_has & (chunk_rank <= k) & (chunks["end"] > chunks["start"])
    group = np.concatenate([group_of_gold, group_of_gold, c_group[use], c_group[use]])
    position = np.concatenate([g_start, g_end, chunks["start"][use], chunks["end"][use]])
    gold_step = np.concatenate([np.ones(g_start.size), -np.ones(g_end.size), np.zeros(2 * int(use.sum()))])
    chunk_step = np.concatenate([np.zeros(2 * g_start.size), np.ones(int(use.sum())), -np.ones(int(use.sum()))])
    sweep = np.lexsort((position, group))
    group, position = group[sweep], position[sweep]
    gold_open = np.cumsum(gold_step[sweep].astype(np.int64)) > 0
    chunk_open = np.cumsum(chunk_step[sweep].astype(np.int64)) > 0
    length = np.zeros(position.size, dtype=np.int64)
    if position.size > 1:
        same_group = group[1:] == group[:-1]
        length[:-1] = np.where(same_group, position[1:] - position[:-1], 0)
    rows_of = group_row[group] if group.size else group
    gold_chars = np.bincount(rows_of[gold_open], weights=length[gold_open], minlength=n)
    covered = np.bincount(rows_of[gold_open & chunk_open], weights=length[gold_open & chunk_open], minlength=n)
    with np.errstate(divide="ignore", invalid="ignore"):
        return covered / gold_chars


def _span_retrieval_scores(
    retrieved_spans: Any, gold_spans: Any, k: int | Iterable[int], *, min_overlap: Any = None, gain: str,
    no_relevant: str, metrics: str | Iterable[str] | None = None, span_rule: str = "union",
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """:func:`span_retrieval_scores` and the mask of questions whose gold spans all have grade <= 0."""
    ks = _check_ks(k)
    _check_gain(gain)
    _check_no_relevant(no_relevant)
    specs = select(metrics, "spans")
    span_rule, min_overlap = check_span_rule(span_rule, min_overlap)
    rule = _overlap_rule(min_overlap)
    chunk_cells = _as_cells(retrieved_spans)
    gold_cells = _as_cells(gold_spans)
    if len(chunk_cells) != len(gold_cells):
        raise ValueError(f"retrieved_spans has {len(chunk_cells)} rows but gold_spans has {len(gold_cells)}")
    n = len(chunk_cells)
    chunks = _flatten_spans(chunk_cells, "retrieved_spans", missing_ok=False)
    gold = _gold_span_table(gold_cells)
    offsets = np.concatenate([[0], np.cumsum(np.bincount(chunks["row"], minlength=n))])
    chunk_rank = np.arange(chunks["row"].size) - offsets[chunks["row"]] + 1

    doc_codes, _ = pd.factorize(np.concatenate([gold["doc"], chunks["doc"]]), use_na_sentinel=False)
    g_row, g_doc, g_start, g_end, g_grade = _distinct_gold(gold, doc_codes[: gold["doc"].size])
    n_units = np.bincount(g_row, minlength=n).astype(np.int64)
    # Candidate (chunk, gold span) pairs: same row and document.
    n_docs = int(doc_codes.max()) + 1 if doc_codes.size else 1
    g_key = g_row * n_docs + g_doc
    c_key = chunks["row"] * n_docs + doc_codes[gold["doc"].size :]
    pair_chunk, pair_gold = _candidate_pairs(g_key, c_key)
    spans_found, f_row, f_rank, prec_row, prec_rank = _found_spans(
        span_rule, rule, chunks, chunk_rank, pair_chunk, pair_gold, g_row, g_start, g_end)
    order = np.lexsort((spans_found, f_rank, f_row))
    ideal = np.lexsort((-g_grade, g_row))
    found = Found(
        n=n,
        n_relevant=n_units,
        found_row=f_row[order].astype(np.int64),
        found_rank=f_rank[order].astype(np.int64),
        found_grade=g_grade[spans_found][order],
        prec_row=prec_row.astype(np.int64),
        prec_rank=prec_rank.astype(np.int64),
        ideal_row=g_row[ideal],
        ideal_grade=g_grade[ideal],
    )
    scores = _score(found, ks, gain, specs)
    unanswerable = n_units == 0
    coverage_ks = ks if any(spec.base == "coverage" for spec in specs) else []
    grouped = _coverage_groups(g_key, c_key, n_docs) if coverage_ks else ()
    for k_ in coverage_ks:
        coverage = _coverage_bulk(k_, n, chunks, chunk_rank, grouped, g_start, g_end)
        coverage[unanswerable] = np.nan
        scores[f"coverage@{k_}"] = coverage
    judged_none_relevant = unanswerable & (np.bincount(gold["row"], minlength=n) > 0)
    _zero_no_relevant(scores, judged_none_relevant, no_relevant)
    return {name: scores[name] for name in score_columns(ks, coverage=True, metrics=metrics)}, judged_none_relevant
