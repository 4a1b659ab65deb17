"""What every retrieval metric shares: argument checks, the nDCG arithmetic, one question's matches.

Two representations of "what was found", one per question and one for many questions:

- :class:`Matched` (one question): the rank and grade of each gold unit at its first rank, the ranks
  of the relevant ranked items, and the grades of all gold units. A metric's per-question
  *definition* is a plain-Python function of it (see :mod:`raglab.metrics.specs`).
- :class:`Found` (many questions): the same facts as flat numpy arrays sorted by (row, rank), plus
  cached arrays that several metrics need. A metric's *bulk kernel* is a numpy function of it.

Gold ids and gold character spans both reduce to these, so one definition serves both.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from numbers import Integral, Real
from typing import Any

import numpy as np

from raglab._validation import check_option, is_missing

GAINS: tuple[str, ...] = ("exponential", "linear")

#: What a question whose gold judges ids but none relevant scores: NaN and left out of means
#: ("exclude", raglab's default: it is unanswerable) or 0 on every metric ("zero", trec_eval's "all").
NO_RELEVANT: tuple[str, ...] = ("exclude", "zero")


# --------------------------------------------------------------------------------------------------
# Argument checks
# --------------------------------------------------------------------------------------------------


def _check_gain(gain: str) -> str:
    return check_option("gain", gain, GAINS)


def _check_no_relevant(no_relevant: str) -> str:
    return check_option("no_relevant", no_relevant, NO_RELEVANT)


def _check_k(k: Any, name: str = "k") -> int:
    if isinstance(k, bool) or not isinstance(k, Integral) or k < 1:
        raise ValueError(f"`{name}` must be a positive integer (the number of chunks that reached the model), got {k!r}")
    return int(k)


def _check_ks(k: int | Iterable[int]) -> list[int]:
    """A sorted list of distinct positive cut-offs from ``k=5`` or ``k=[1, 3, 5, 10]``."""
    values = list(k) if isinstance(k, Iterable) and not isinstance(k, (str, bytes)) else [k]
    if not values:
        raise ValueError("`k` is empty; pass a positive integer or a list of them, e.g. k=[1, 3, 5, 10]")
    return sorted({_check_k(v) for v in values})


def _zero_no_relevant(out: dict[str, np.ndarray], judged_none_relevant: np.ndarray, no_relevant: str) -> None:
    """trec_eval's convention, in place: questions judged but with nothing relevant score 0 everywhere."""
    if no_relevant == "zero" and judged_none_relevant.any():
        for values in out.values():
            values[judged_none_relevant] = 0.0


# --------------------------------------------------------------------------------------------------
# Arithmetic shared by the definitions and the kernels (so that they agree bit for bit)
# --------------------------------------------------------------------------------------------------

_DISCOUNT = np.array([np.nan] + [math.log2(r + 1) for r in range(1, 257)])


def _discounts(max_rank: int) -> np.ndarray:
    """``table[r] = log2(r + 1)`` for ranks 1..max_rank (one table, computed with math.log2)."""
    global _DISCOUNT
    if max_rank >= len(_DISCOUNT):
        size = max(max_rank + 1, 2 * len(_DISCOUNT))
        _DISCOUNT = np.array([np.nan] + [math.log2(r + 1) for r in range(1, size)])
    return _DISCOUNT


def _gain_values(grades: np.ndarray, gain: str) -> np.ndarray:
    """Gains of positive grades: ``2**g - 1`` (exact for integer grades) or ``g``."""
    g = np.asarray(grades, dtype=np.float64)
    if gain == "linear":
        return g.copy()
    whole = np.floor(g) == g
    powers = np.exp2(g)
    if whole.any():
        powers[whole] = np.ldexp(1.0, g[whole].astype(np.int64))
    return powers - 1.0


def _row_starts(rows: np.ndarray) -> np.ndarray:
    """For a sorted row array, the index of the first entry of each entry's row."""
    if rows.size == 0:
        return np.empty(0, dtype=np.int64)
    new = np.empty(rows.size, dtype=bool)
    new[0] = True
    np.not_equal(rows[1:], rows[:-1], out=new[1:])
    firsts = np.flatnonzero(new)
    return firsts[np.cumsum(new) - 1]


# --------------------------------------------------------------------------------------------------
# One question
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Matched:
    """One answerable question after matching its ranked list against its gold.

    Attributes
    ----------
    found : tuple of (rank, grade)
        Each gold unit (id or span) found, at its first rank (1-based), best rank first.
    relevant_ranks : tuple of int
        Ranks of the relevant ranked items, what precision counts (for ids: the ranks in ``found``;
        for spans: the chunks at whose rank a span is found, or under ``span_rule="per_chunk"`` every
        chunk that overlaps a gold span enough).
    grades : tuple of float
        The grade (> 0) of every gold unit, found or not; ``len(grades)`` is R.
    """

    found: tuple[tuple[int, float], ...]
    relevant_ranks: tuple[int, ...]
    grades: tuple[float, ...]


def _relevant(gold: Any) -> dict[Hashable, float] | None:
    """Gold as ``{id: grade}`` with grades > 0 only, or None when the question is unanswerable."""
    if gold is None or is_missing(gold):
        return None
    if isinstance(gold, Mapping):
        items = gold.items()
    elif isinstance(gold, (str, bytes)):
        raise TypeError(
            f"gold must be a list/set of ids or a dict id -> grade, got the string {gold!r}; "
            "wrap a single id in a list"
        )
    elif isinstance(gold, Iterable):
        items = ((doc, 1) for doc in gold)
    else:
        raise TypeError(f"gold must be a list/set of ids or a dict id -> grade, got {type(gold).__name__} {gold!r}")
    relevant: dict[Hashable, float] = {}
    for doc, grade in items:
        if isinstance(grade, bool) or not isinstance(grade, Real) or math.isnan(grade):
            raise TypeError(f"gold grades must be numbers, got {grade!r} for {doc!r}")
        if grade > 0 and doc not in relevant:
            relevant[doc] = float(grade)
    return relevant or None


def _ranked_list(ranked: Any) -> Sequence[Hashable]:
    if isinstance(ranked, (str, bytes)) or not isinstance(ranked, (Sequence, np.ndarray)):
        raise TypeError(
            f"ranked must be a list of ids (best first), got {type(ranked).__name__} {ranked!r}"
            + ("; wrap a single id in a list" if isinstance(ranked, str) else "")
        )
    return ranked


def match_ids(ranked: Any, gold: Any) -> Matched | None:
    """Match one ranked list of ids against its gold; None when the question is unanswerable.

    An id repeated in ``ranked`` counts at its first rank only.

    Examples
    --------
    >>> match_ids(["d7", "d2", "d9", "d2"], {"d2": 3, "d5": 2})
    Matched(found=((2, 3.0),), relevant_ranks=(2,), grades=(3.0, 2.0))
    >>> match_ids(["d1"], []) is None
    True
    """
    ranked = _ranked_list(ranked)
    relevant = _relevant(gold)
    if relevant is None:
        return None
    seen: set[Hashable] = set()
    hits = []
    for rank, doc in enumerate(ranked, start=1):
        grade = relevant.get(doc)
        if grade is not None and doc not in seen:
            seen.add(doc)
            hits.append((rank, grade))
    return Matched(tuple(hits), tuple(rank for rank, _ in hits), tuple(relevant.values()))


# --------------------------------------------------------------------------------------------------
# Many questions
# --------------------------------------------------------------------------------------------------


@dataclass
class Found:
    """Everything the rank metrics depend on, for many questions, as flat arrays sorted by (row, rank).

    ``found_*``: one entry per gold unit found (its first rank and its grade); ``prec_*``: one entry
    per relevant ranked item (what precision counts); for ids both are the first occurrences of the
    relevant ids. ``ideal_*``: the grades > 0 of each row, best first. ``n_relevant`` is R per row
    (0: unanswerable). The cached properties are shared by several kernels; ``ks`` and ``gain`` are
    set by the caller before any kernel runs.
    """

    n: int
    n_relevant: np.ndarray  # int64 (n,)
    found_row: np.ndarray
    found_rank: np.ndarray  # 1-based
    found_grade: np.ndarray
    prec_row: np.ndarray
    prec_rank: np.ndarray
    ideal_row: np.ndarray
    ideal_grade: np.ndarray
    ks: Sequence[int] = field(default=(1,))
    gain: str = "exponential"

    @cached_property
    def unanswerable(self) -> np.ndarray:
        return self.n_relevant == 0

    @cached_property
    def ideal_pos(self) -> np.ndarray:
        """1-based position of each ideal entry within its row."""
        return np.arange(self.ideal_row.size, dtype=np.int64) - _row_starts(self.ideal_row) + 1

    @cached_property
    def max_rank(self) -> int:
        # The deepest rank that holds something (a found unit or an ideal entry), not max(ks): the
        # discount table and the keys below need no more, so k=10**9 allocates nothing extra.
        top = 1
        for arr in (self.found_rank, self.prec_rank, self.ideal_pos):
            if arr.size:
                top = max(top, int(arr.max()))
        return top

    @cached_property
    def discounts(self) -> np.ndarray:
        return _discounts(self.max_rank)

    @cached_property
    def found_terms(self) -> np.ndarray:
        """``gain(grade) / log2(rank + 1)`` of each found unit."""
        return _gain_values(self.found_grade, self.gain) / self.discounts[self.found_rank]

    @cached_property
    def ideal_terms(self) -> np.ndarray:
        return _gain_values(self.ideal_grade, self.gain) / self.discounts[self.ideal_pos]

    @cached_property
    def precision_upto(self) -> np.ndarray:
        """For each found unit, the relevant ranked items of its row up to its rank (AP's numerator)."""
        width = self.max_rank + 1
        prec_keys = self.prec_row * width + self.prec_rank
        found_keys = self.found_row * width + self.found_rank
        return np.searchsorted(prec_keys, found_keys, side="right") - np.searchsorted(
            prec_keys, self.found_row * width, side="left"
        )

    @cached_property
    def first_found(self) -> np.ndarray:
        """Index of the best-ranked found unit of each row that has one."""
        return np.flatnonzero(_row_starts(self.found_row) == np.arange(self.found_row.size))

    def count_within(self, k: int) -> np.ndarray:
        """Gold units found in the top k, per row."""
        return np.bincount(self.found_row[self.found_rank <= k], minlength=self.n)
