"""Retrieval metrics, defined exactly: per-question functions and a vectorised bulk kernel.

Conventions (the same in every function here, and recorded by ``df.rag.retrieval``):

- ``ranked`` is what reached the model, best first; ``k`` counts those chunks (not the retriever's
  raw candidates).
- ``gold`` is a list/set of ids (grade 1 each) or a dict ``id -> grade``. Grades ``<= 0`` are
  non-relevant (gain 0), as in trec_eval. A question whose gold is missing, empty or has no grade
  above 0 is *unanswerable*: every retrieval metric is NaN for it (exclude it from means and score
  it on declining instead, see :mod:`raglab.abstention`).
- trec_eval instead scores a topic whose judgements are all non-relevant as 0 on every measure and
  averages it into its ``all`` line. The bulk functions offer that convention on request:
  ``retrieval_scores(..., no_relevant="zero")`` (and ``df.rag.retrieval(no_relevant="zero")``)
  scores 0 for a question whose gold *judges* ids but grades none above 0, so that a mean equals
  trec_eval's; a question with missing or empty gold (no judgements at all, which trec_eval never
  evaluates) stays NaN. The default, ``no_relevant="exclude"``, keeps such questions NaN.
- An id repeated in a ranked list counts at its first rank only; later repeats take a slot in the
  top k but earn nothing (trec_eval refuses such runs; this keeps every metric in [0, 1]).
- ``precision@k`` divides by k even when fewer than k ids were retrieved (trec_eval's ``P_k``); an
  empty ranked list scores 0 on every metric (it is not dropped).
- nDCG: ``gain="exponential"`` uses ``2**g - 1`` (the seed's convention, ranx's ``ndcg_burges``),
  ``gain="linear"`` uses ``g`` (trec_eval's ``ndcg_cut``); discount ``log2(rank + 1)``; the ideal
  orders the judged grades > 0 best first.

The per-question functions are the definitions. :func:`retrieval_scores` computes the same numbers
for many questions at once with numpy (ids are matched through their hashes, with equality checked
for every match) and equals the per-question functions exactly; a test pins that.

Examples
--------
>>> from raglab import metrics
>>> ranked = ["d7", "d2", "d9", "d4", "d1"]
>>> grades = {"d2": 3, "d4": 1, "d5": 2}
>>> round(metrics.recall_at_k(ranked, grades, 5), 3), metrics.precision_at_k(ranked, grades, 5)
(0.667, 0.4)
>>> metrics.reciprocal_rank(ranked, grades), round(metrics.ndcg_at_k(ranked, grades, 5), 3)
(0.5, 0.516)
"""

from __future__ import annotations

import ctypes
import math
import operator
import sys
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from numbers import Integral, Real
from typing import Any

import numpy as np
import pandas as pd

from raglab._errors import BadCellError
from raglab._validation import check_option, is_missing

__all__ = [
    "GAINS",
    "NO_RELEVANT",
    "RANK_METRICS",
    "average_precision",
    "hit_at_k",
    "ndcg_at_k",
    "precision_at_k",
    "r_precision",
    "recall_at_k",
    "reciprocal_rank",
    "retrieval_scores",
    "score_columns",
]

GAINS: tuple[str, ...] = ("exponential", "linear")

#: What a question whose gold judges ids but none relevant scores: NaN and left out of means
#: ("exclude", raglab's default: it is unanswerable) or 0 on every metric ("zero", trec_eval's "all").
NO_RELEVANT: tuple[str, ...] = ("exclude", "zero")

#: Column bases written by the bulk functions: per-k metrics, then metrics over the whole list.
RANK_METRICS: dict[str, str] = {
    "recall": "fraction of the gold ids (or gold spans) found in the top k",
    "hit": "1 if any gold id is in the top k",
    "precision": "fraction of the top k that is gold (divides by k)",
    "ndcg": "normalised discounted cumulative gain at k",
    "rr": "reciprocal rank of the first gold id in the list",
    "ap": "average precision over the list (trec_eval map)",
    "r_precision": "precision at R, R = number of gold ids (trec_eval Rprec)",
}
_PER_K = ("recall", "hit", "precision", "ndcg")
_WHOLE_LIST = ("rr", "ap", "r_precision")


# --------------------------------------------------------------------------------------------------
# Shared arithmetic (used by the scalar functions and the bulk kernel alike, so they agree bit for bit)
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


def _check_gain(gain: str) -> str:
    return check_option("gain", gain, GAINS)


def _check_no_relevant(no_relevant: str) -> str:
    return check_option("no_relevant", no_relevant, NO_RELEVANT)


def _zero_no_relevant(out: dict[str, np.ndarray], judged_none_relevant: np.ndarray, no_relevant: str) -> None:
    """trec_eval's convention, in place: questions judged but with nothing relevant score 0 everywhere."""
    if no_relevant == "zero" and judged_none_relevant.any():
        for values in out.values():
            values[judged_none_relevant] = 0.0


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


# --------------------------------------------------------------------------------------------------
# Per-question definitions
# --------------------------------------------------------------------------------------------------


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


def _first_hits(ranked: Sequence[Hashable], relevant: Mapping[Hashable, float]) -> list[tuple[int, float]]:
    """(rank, grade) of each relevant id at its first rank, in rank order."""
    seen: set[Hashable] = set()
    hits = []
    for rank, doc in enumerate(ranked, start=1):
        grade = relevant.get(doc)
        if grade is not None and doc not in seen:
            seen.add(doc)
            hits.append((rank, grade))
    return hits


def _prepare(ranked: Any, gold: Any) -> tuple[list[tuple[int, float]], dict[Hashable, float]] | None:
    ranked = _ranked_list(ranked)
    relevant = _relevant(gold)
    if relevant is None:
        return None
    return _first_hits(ranked, relevant), relevant


def recall_at_k(ranked: Sequence[Hashable], gold: Any, k: int) -> float:
    """Fraction of the relevant gold ids that appear in the top ``k`` of ``ranked``.

    Parameters
    ----------
    ranked : sequence of ids
        Ranked ids that reached the model, best first.
    gold : list/set of ids, dict id -> grade, or None
        Grades ``<= 0`` are non-relevant; no relevant id means unanswerable (NaN).
    k : int
        Cut-off: the number of chunks that reached the model.

    Returns
    -------
    float
        In [0, 1]; NaN when the question is unanswerable. trec_eval calls this ``recall_k``.

    Examples
    --------
    >>> recall_at_k(["d7", "d2", "d9", "d4", "d1"], {"d2": 3, "d4": 1, "d5": 2}, 5)
    0.6666666666666666
    >>> recall_at_k(["d1"], [], 5)
    nan
    """
    k = _check_k(k)
    prepared = _prepare(ranked, gold)
    if prepared is None:
        return math.nan
    hits, relevant = prepared
    return sum(1 for rank, _ in hits if rank <= k) / len(relevant)


def hit_at_k(ranked: Sequence[Hashable], gold: Any, k: int) -> float:
    """1.0 if any relevant gold id is in the top ``k``, else 0.0 (NaN when unanswerable).

    Examples
    --------
    >>> hit_at_k(["d7", "d2"], ["d2"], 1), hit_at_k(["d7", "d2"], ["d2"], 2)
    (0.0, 1.0)
    """
    k = _check_k(k)
    prepared = _prepare(ranked, gold)
    if prepared is None:
        return math.nan
    hits, _ = prepared
    return 1.0 if hits and hits[0][0] <= k else 0.0


def precision_at_k(ranked: Sequence[Hashable], gold: Any, k: int) -> float:
    """Relevant ids in the top ``k`` divided by ``k`` (even when fewer than k were retrieved).

    This is trec_eval's ``P_k``: a system that retrieves 2 ids, both relevant, has precision@5 = 0.4.

    Examples
    --------
    >>> precision_at_k(["d7", "d2", "d9", "d4", "d1"], {"d2": 3, "d4": 1, "d5": 2}, 5)
    0.4
    >>> precision_at_k(["d2"], ["d2"], 5)
    0.2
    """
    k = _check_k(k)
    prepared = _prepare(ranked, gold)
    if prepared is None:
        return math.nan
    hits, _ = prepared
    return sum(1 for rank, _ in hits if rank <= k) / k


def reciprocal_rank(ranked: Sequence[Hashable], gold: Any, k: int | None = None) -> float:
    """One over the rank of the first relevant id (0.0 if none, or none within ``k``).

    Examples
    --------
    >>> reciprocal_rank(["d7", "d2", "d9"], ["d2"])
    0.5
    >>> reciprocal_rank(["d7", "d2", "d9"], ["d2"], k=1)
    0.0
    """
    cut = None if k is None else _check_k(k)
    prepared = _prepare(ranked, gold)
    if prepared is None:
        return math.nan
    hits, _ = prepared
    if not hits or (cut is not None and hits[0][0] > cut):
        return 0.0
    return 1.0 / hits[0][0]


def ndcg_at_k(ranked: Sequence[Hashable], grades: Any, k: int, *, gain: str = "exponential") -> float:
    """Normalised discounted cumulative gain of the top ``k``.

    ``DCG@k = sum(gain(g_i) / log2(i + 1))`` over ranks ``i <= k``; the ideal DCG orders the judged
    grades > 0 best first. ``gain="exponential"``: ``2**g - 1``; ``gain="linear"``: ``g``
    (trec_eval's ``ndcg_cut``). A list of ids means grade 1 each, where both gains agree.

    Examples
    --------
    >>> grades = {"d2": 3, "d4": 1, "d5": 2}
    >>> round(ndcg_at_k(["d7", "d2", "d9", "d4", "d1"], grades, 5), 3)
    0.516
    >>> round(ndcg_at_k(["d2", "d7", "d9", "d4", "d1"], grades, 5), 3)
    0.791
    >>> round(ndcg_at_k(["d7", "d2", "d9", "d4", "d1"], grades, 5, gain="linear"), 3)
    0.488
    """
    k = _check_k(k)
    _check_gain(gain)
    prepared = _prepare(ranked, grades)
    if prepared is None:
        return math.nan
    hits, relevant = prepared
    table = _discounts(max(k, len(relevant)))
    top = [(rank, grade) for rank, grade in hits if rank <= k]
    dcg = 0.0
    if top:
        terms = _gain_values(np.array([g for _, g in top]), gain) / table[np.array([r for r, _ in top])]
        for term in terms.tolist():
            dcg += term
    ideal = sorted(relevant.values(), reverse=True)[:k]
    ideal_terms = _gain_values(np.array(ideal), gain) / table[np.arange(1, len(ideal) + 1)]
    idcg = 0.0
    for term in ideal_terms.tolist():
        idcg += term
    return min(dcg / idcg, 1.0)


def average_precision(ranked: Sequence[Hashable], gold: Any, k: int | None = None) -> float:
    """Average precision: the mean, over all relevant gold ids, of the precision at each one's rank.

    Relevant ids never retrieved (or retrieved below ``k``) contribute 0; this is trec_eval's
    ``map`` for one query (``map_cut_k`` with ``k``).

    Examples
    --------
    >>> average_precision(["d1", "d7", "d2"], ["d1", "d2", "d3"])   # (1/1 + 2/3) / 3
    0.5555555555555555
    """
    cut = None if k is None else _check_k(k)
    prepared = _prepare(ranked, gold)
    if prepared is None:
        return math.nan
    hits, relevant = prepared
    total = 0.0
    for found, (rank, _) in enumerate(hits, start=1):
        if cut is not None and rank > cut:
            break
        total += found / rank
    return total / len(relevant)


def r_precision(ranked: Sequence[Hashable], gold: Any) -> float:
    """Precision at R, where R is the number of relevant gold ids (trec_eval's ``Rprec``).

    Examples
    --------
    >>> r_precision(["d1", "d7", "d2"], ["d1", "d2"])
    0.5
    """
    prepared = _prepare(ranked, gold)
    if prepared is None:
        return math.nan
    hits, relevant = prepared
    r = len(relevant)
    return sum(1 for rank, _ in hits if rank <= r) / r


# --------------------------------------------------------------------------------------------------
# The bulk kernel: metrics from the ranks at which relevant items were found
# --------------------------------------------------------------------------------------------------


@dataclass
class _Found:
    """Everything the metrics depend on, as flat arrays sorted by (row, rank).

    ``found_*``: one entry per relevant gold unit found (its first rank and grade);
    ``prec_*``: one entry per relevant ranked item (what precision counts); for ids both are the
    first occurrences of the relevant ids. ``ideal_*``: the grades > 0 of each row, best first.
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


def score_columns(ks: Sequence[int], *, coverage: bool = False) -> list[str]:
    """Names of the columns the bulk functions write, in order.

    Examples
    --------
    >>> score_columns([5])
    ['recall@5', 'hit@5', 'precision@5', 'ndcg@5', 'rr', 'ap', 'r_precision']
    """
    names = []
    for k in ks:
        names += [f"{base}@{k}" for base in _PER_K]
        if coverage:
            names.append(f"coverage@{k}")
    return names + list(_WHOLE_LIST)


def _sorted_unique(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values (np.sort plus a diff: faster than np.unique for int64 here)."""
    ordered = np.sort(values)
    if ordered.size < 2:
        return ordered
    keep = np.empty(ordered.size, dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def _row_starts(rows: np.ndarray) -> np.ndarray:
    """For a sorted row array, the index of the first entry of each entry's row."""
    if rows.size == 0:
        return np.empty(0, dtype=np.int64)
    new = np.empty(rows.size, dtype=bool)
    new[0] = True
    np.not_equal(rows[1:], rows[:-1], out=new[1:])
    firsts = np.flatnonzero(new)
    return firsts[np.cumsum(new) - 1]


def _score(found: _Found, ks: Sequence[int], gain: str) -> dict[str, np.ndarray]:
    n = found.n
    R = found.n_relevant
    unanswerable = R == 0
    max_rank = int(max(ks))
    for arr in (found.found_rank, found.prec_rank):
        if arr.size:
            max_rank = max(max_rank, int(arr.max()))
    ideal_pos = np.arange(found.ideal_row.size, dtype=np.int64) - _row_starts(found.ideal_row) + 1
    if ideal_pos.size:
        max_rank = max(max_rank, int(ideal_pos.max()))
    table = _discounts(max_rank)
    found_terms = _gain_values(found.found_grade, gain) / table[found.found_rank]
    ideal_terms = _gain_values(found.ideal_grade, gain) / table[ideal_pos]

    out: dict[str, np.ndarray] = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        for k in ks:
            within = found.found_rank <= k
            count = np.bincount(found.found_row[within], minlength=n)
            recall = count / R
            hit = (count > 0).astype(np.float64)
            prec_count = np.bincount(found.prec_row[found.prec_rank <= k], minlength=n)
            precision = prec_count / k
            dcg = np.bincount(found.found_row[within], weights=found_terms[within], minlength=n)
            in_ideal = ideal_pos <= k
            idcg = np.bincount(found.ideal_row[in_ideal], weights=ideal_terms[in_ideal], minlength=n)
            ndcg = np.minimum(dcg / idcg, 1.0)
            for name, values in (("recall", recall), ("hit", hit), ("precision", precision), ("ndcg", ndcg)):
                values[unanswerable] = np.nan
                out[f"{name}@{k}"] = values

        rr = np.zeros(n)
        if found.found_row.size:
            first = np.flatnonzero(_row_starts(found.found_row) == np.arange(found.found_row.size))
            rr[found.found_row[first]] = 1.0 / found.found_rank[first]
        # Precision at each found unit's rank: relevant ranked items of that row up to that rank.
        width = max_rank + 1
        prec_keys = found.prec_row * width + found.prec_rank
        found_keys = found.found_row * width + found.found_rank
        upto = np.searchsorted(prec_keys, found_keys, side="right") - np.searchsorted(
            prec_keys, found.found_row * width, side="left"
        )
        ap = np.bincount(found.found_row, weights=upto / found.found_rank, minlength=n) / R
        within_r = found.prec_rank <= R[found.prec_row]
        r_prec = np.bincount(found.prec_row[within_r], minlength=n) / R
        for name, values in (("rr", rr), ("ap", ap), ("r_precision", r_prec)):
            values[unanswerable] = np.nan
            out[name] = values
    return out


# --------------------------------------------------------------------------------------------------
# Matching ids in bulk
# --------------------------------------------------------------------------------------------------


_SEQUENCE_TYPES = (list, tuple, np.ndarray)
_BLOCK_SLOTS = 1 << 23  # ids matched per block: bounds memory at any table size
_CPYTHON = sys.implementation.name == "cpython" and ctypes.sizeof(ctypes.c_void_p) == ctypes.sizeof(ctypes.c_size_t) == 8

try:  # a fast list-of-lists -> 2-D object array conversion (pandas' own, used by the DataFrame constructor)
    from pandas._libs.lib import to_object_array as _to_object_array
except ImportError:  # pragma: no cover - depends on the pandas version
    _to_object_array = None


def _is_id_type(kind: type) -> bool:
    return (issubclass(kind, (str, Integral))) and not issubclass(kind, bool)


def _as_cells(values: Any) -> np.ndarray:
    """A 1-D object array of the cells (never broadcasting nested lists into more dimensions)."""
    if hasattr(values, "to_numpy"):
        values = values.to_numpy(dtype=object)
    if isinstance(values, np.ndarray) and values.dtype == object and values.ndim == 1:
        return values
    if not hasattr(values, "__len__"):
        values = list(values)
    return np.fromiter(values, dtype=object, count=len(values))


def _check_sequences(cells: np.ndarray, what: str, *, allow_missing: bool = False) -> np.ndarray:
    """Lengths of the list cells; raises BadCellError at the first cell that is not a list."""
    kinds = set(map(type, cells))
    if not all(issubclass(kind, _SEQUENCE_TYPES) for kind in kinds):
        ok = np.fromiter(map(isinstance, cells, repeat(_SEQUENCE_TYPES)), dtype=bool, count=len(cells))
        bad = int(np.flatnonzero(~ok)[0])
        value = cells[bad]
        hint = " (use [] when nothing was retrieved)" if is_missing(value) else ""
        raise BadCellError(
            f"{what}[{bad}] must be a list of ids, got {type(value).__name__} {value!r}{hint}", bad
        )
    return np.fromiter(map(len, cells), dtype=np.int64, count=len(cells))


def _addresses(objects: np.ndarray) -> np.ndarray | None:
    """Addresses of the objects an object array points to (CPython: the array's own pointers).

    A read-only *view* of the array's buffer: use it only while ``objects`` is alive.
    """
    if not _CPYTHON or objects.size == 0 or not objects.flags.c_contiguous:
        return None
    raw = (ctypes.c_size_t * objects.size).from_address(objects.ctypes.data)
    addresses = np.frombuffer(raw, dtype=np.uint64)
    addresses.flags.writeable = False
    # Guard the layout assumption on a few entries; fall back to hashing every id if it fails.
    probe = np.unique(np.linspace(0, objects.size - 1, num=min(objects.size, 17)).astype(np.int64))
    if any(int(addresses[i]) != id(objects[i]) for i in probe.tolist()):
        return None
    return addresses


def _distinct_objects(addresses: np.ndarray | None, count: int) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """Group elements that are the *same object*, so that each distinct object is hashed once.

    Returns ``(order, group, representative)``: element ``order[i]`` (``i`` itself when ``order`` is
    None) is an occurrence of distinct object ``group[i]``; ``representative[d]`` is one element of
    distinct object ``d``. Distinct objects are numbered in address order, so hashing them walks
    memory forwards. Two live objects start at least 16 bytes apart (every object holds a
    reference count and a type pointer), so ``address // 16`` identifies an object. When the
    occupied address range is compact (ids shared across rows), a direct table indexed by address
    does the grouping in a few numpy passes (empty 64 KiB stretches of the address space are
    squeezed out first); otherwise one sort of (address, element) packed into uint64. When the
    objects already lie in list order (e.g. each id its own string, as read from JSON), grouping
    would gain nothing and is skipped.
    """
    if addresses is None or (count > 1 and _in_list_order(addresses)):
        every = np.arange(count, dtype=np.int64)  # each element its own group, hashed as it comes
        return None, every, every
    low = addresses.min()
    offsets = np.subtract(addresses, low)
    offsets >>= np.uint64(4)
    top = int(offsets.max())
    slot = None
    if top < 2 * count:
        slot = offsets.view(np.int64)
        slots = top + 1
    elif (top >> 12) + 1 <= 4 * count:
        bucket = (offsets >> np.uint64(12)).view(np.int64)  # 4096 slots of 16 bytes: 64 KiB stretches
        used = np.zeros((top >> 12) + 1, dtype=bool)
        used[bucket] = True
        n_used = int(used.sum())
        if n_used * 4096 <= 2 * count:
            slot = np.take(np.cumsum(used) - 1, bucket)
            del bucket
            slot <<= 12
            slot |= (offsets & np.uint64(4095)).view(np.int64)
            slots = n_used * 4096
    if slot is not None:
        seen = np.zeros(slots, dtype=bool)
        seen[slot] = True
        distinct = np.flatnonzero(seen)
        del seen
        small = distinct.size < 2**31 and count < 2**31
        index = np.empty(slots, dtype=np.int32 if small else np.int64)
        index[distinct] = np.arange(distinct.size, dtype=index.dtype)
        group = index[slot]
        del index, slot
        representative = np.empty(distinct.size, dtype=np.int64)
        representative[group] = np.arange(count, dtype=np.int32 if small else np.int64)
        return None, group, representative
    index_bits = max(1, (count - 1).bit_length())
    if top.bit_length() + index_bits <= 64:
        keys = np.sort((offsets << np.uint64(index_bits)) | np.arange(count, dtype=np.uint64))
        order = (keys & np.uint64((1 << index_bits) - 1)).view(np.int64)
        grouped = keys >> np.uint64(index_bits)
    else:  # pragma: no cover - needs a heap spread over more than 2**40 addresses
        order = np.argsort(offsets, kind="stable")
        grouped = offsets[order]
    starts = np.empty(count, dtype=bool)
    starts[0] = True
    np.not_equal(grouped[1:], grouped[:-1], out=starts[1:])
    return order, np.cumsum(starts) - 1, order[starts]


def _in_list_order(addresses: np.ndarray) -> bool:
    """Do the objects mostly follow each other in memory in list order? (judged on a sample of runs)"""
    width = min(256, addresses.size)
    starts = np.linspace(0, addresses.size - width, num=min(64, addresses.size // width)).astype(np.int64)
    windows = addresses.view(np.int64)[starts[:, None] + np.arange(width)]
    steps = np.diff(windows, axis=1)
    return bool(np.count_nonzero((steps > 0) & (steps < 4096)) > 0.5 * steps.size)


def _mix(rows: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """A well-spread uint64 from (row, hash), for the per-row quick filter."""
    mixed = hashes.view(np.uint64) ^ (rows.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15))
    return mixed ^ (mixed >> np.uint64(29))


def _filter_table(values: np.ndarray, size_hint: int) -> tuple[np.ndarray, np.uint64]:
    """A boolean table with ``table[v & mask]`` set for each value: a Bloom-like quick filter."""
    size = 1 << int(min(25, max(12, (16 * max(1, size_hint)).bit_length())))
    table = np.zeros(size, dtype=bool)
    mask = np.uint64(size - 1)
    table[(values.view(np.uint64) & mask).view(np.int64)] = True
    return table, mask


@dataclass
class _Gold:
    n: int
    row: np.ndarray
    obj: np.ndarray
    grade: np.ndarray
    n_relevant: np.ndarray
    hashes: np.ndarray  # sorted unique hashes of the gold ids
    keys: np.ndarray  # sorted row * len(hashes) + hash code
    key_entry: np.ndarray  # gold entry of each sorted key
    fallback_rows: np.ndarray  # rows whose gold ids collide in hash: scored per question instead
    any_row_filter: np.ndarray  # quick filter on a hash: is it a gold hash of some question?
    any_row_mask: np.uint64
    row_filter: np.ndarray  # quick filter on (row, hash): is it a gold hash of this question?
    row_mask: np.uint64
    pad_hash: np.ndarray | None  # (n, max gold per row) hashes, when that is small
    pad_entry: np.ndarray | None  # gold entry per padded cell, -1 for padding
    n_judged: np.ndarray | None = None  # ids judged per question, any grade (before keeping grade > 0)


class _BadId(Exception):
    def __init__(self, index: int, value: Any) -> None:
        super().__init__(index, value)
        self.index = index
        self.value = value


def _id_hashes(objects: np.ndarray) -> np.ndarray:
    """Hashes of ids after checking their types (str or int, not bool); raises _BadId."""
    if pd.api.types.infer_dtype(objects, skipna=False) in ("string", "integer", "empty"):
        bad_kinds: tuple[type, ...] = ()  # all str or all int: checked in one fast pass
    else:
        bad_kinds = tuple(kind for kind in set(map(type, objects)) if not _is_id_type(kind))
    if bad_kinds:
        bad = np.fromiter(map(isinstance, objects, repeat(bad_kinds)), dtype=bool, count=len(objects))
        first = int(np.flatnonzero(bad)[0])
        raise _BadId(first, objects[first])
    return np.fromiter(map(hash, objects), dtype=np.int64, count=len(objects))


def _describe_bad_id(what: str, row: int, value: Any) -> BadCellError:
    return BadCellError(
        f"{what}[{row}] holds {type(value).__name__} {value!r} in its list; ids must be str or int", row
    )


def _gold_table(gold: Any) -> _Gold:
    cells = _as_cells(gold)
    n = len(cells)
    is_dict = np.fromiter(map(isinstance, cells, repeat(dict)), dtype=bool, count=n)
    is_seq = np.fromiter(map(isinstance, cells, repeat(_SEQUENCE_TYPES + (set, frozenset))), dtype=bool, count=n)
    unusual = np.flatnonzero(~(is_dict | is_seq))
    if unusual.size:
        cells = cells.copy()  # never write into the caller's column
    for position in unusual.tolist():  # only cells that are neither dict nor list: missing or wrong
        value = cells[position]
        if isinstance(value, Mapping):
            cells[position] = dict(value)
            is_dict[position] = True
        elif not is_missing(value):
            hint = " (JSON text? read files with raglab.read_rows)" if isinstance(value, str) else ""
            raise BadCellError(
                f"gold[{position}] must be a list of ids or a dict id -> grade, got "
                f"{type(value).__name__} {value!r}{hint}",
                position,
            )
    dict_rows = np.flatnonzero(is_dict)
    seq_rows = np.flatnonzero(is_seq)
    dict_cells, seq_cells = cells[dict_rows], cells[seq_rows]
    dict_lens = np.fromiter(map(len, dict_cells), dtype=np.int64, count=len(dict_cells))
    seq_lens = np.fromiter(map(len, seq_cells), dtype=np.int64, count=len(seq_cells))
    dict_ids = np.fromiter(chain.from_iterable(dict_cells), dtype=object, count=int(dict_lens.sum()))
    grade_objects = np.fromiter(
        chain.from_iterable(map(dict.values, dict_cells)), dtype=object, count=int(dict_lens.sum())
    )
    grade_kinds = set(map(type, grade_objects))
    if any(not issubclass(kind, Real) or issubclass(kind, bool) for kind in grade_kinds):
        bad = next(i for i, g in enumerate(grade_objects) if not isinstance(g, Real) or isinstance(g, bool))
        row = int(np.repeat(dict_rows, dict_lens)[bad])
        raise BadCellError(f"gold[{row}] has grade {grade_objects[bad]!r}; grades must be numbers", row)
    dict_grades = grade_objects.astype(np.float64)
    if np.isnan(dict_grades).any():
        row = int(np.repeat(dict_rows, dict_lens)[np.flatnonzero(np.isnan(dict_grades))[0]])
        raise BadCellError(f"gold[{row}] has a NaN grade; grades must be numbers", row)
    seq_ids = np.fromiter(chain.from_iterable(seq_cells), dtype=object, count=int(seq_lens.sum()))

    if seq_ids.size == 0:  # the usual cases need no merge (object arrays are costly to shuffle)
        row, obj, grade = np.repeat(dict_rows, dict_lens), dict_ids, dict_grades
    elif dict_ids.size == 0:
        row, obj, grade = np.repeat(seq_rows, seq_lens), seq_ids, np.ones(seq_ids.size)
    else:
        row = np.concatenate([np.repeat(dict_rows, dict_lens), np.repeat(seq_rows, seq_lens)])
        order = np.argsort(row, kind="stable")
        row = row[order]
        obj = np.concatenate([dict_ids, seq_ids])[order]
        grade = np.concatenate([dict_grades, np.ones(seq_ids.size)])[order]
    try:
        hashes_all = _id_hashes(obj)
    except _BadId as bad:
        raise _describe_bad_id("gold", int(row[bad.index]), bad.value) from None
    n_judged = np.bincount(row, minlength=n).astype(np.int64)
    keep = grade > 0
    if not keep.all():
        row, obj, grade, hashes_all = row[keep], obj[keep], grade[keep], hashes_all[keep]

    hashes = _sorted_unique(hashes_all)
    width = max(1, hashes.size)
    if n * width >= 2**62:  # pragma: no cover - beyond any realistic table
        raise ValueError("too many distinct gold ids for the bulk kernel")
    keys = row * width + np.searchsorted(hashes, hashes_all)
    key_order = np.argsort(keys, kind="stable")
    sorted_keys = keys[key_order]
    same = np.flatnonzero(sorted_keys[1:] == sorted_keys[:-1])  # pairs (same, same + 1) share row and hash
    fallback = np.empty(0, dtype=np.int64)
    if same.size:
        left, right = obj[key_order[same]], obj[key_order[same + 1]]
        equal = np.fromiter(map(operator.eq, left, right), dtype=bool, count=same.size)
        fallback = np.unique(row[key_order[same[~equal]]])
        duplicate = np.zeros(row.size, dtype=bool)
        duplicate[key_order[same[equal] + 1]] = True  # a repeated id in a gold list counts once
        kept = ~duplicate
        row, obj, grade, keys = row[kept], obj[kept], grade[kept], keys[kept]
        key_order = np.argsort(keys, kind="stable")
        sorted_keys = keys[key_order]
    n_relevant = np.bincount(row, minlength=n).astype(np.int64)
    row_hashes = hashes[keys % width] if row.size else np.empty(0, np.int64)
    any_row_filter, any_row_mask = _filter_table(row_hashes, row.size)
    row_filter, row_mask = _filter_table(_mix(row, row_hashes), row.size)
    most = int(n_relevant.max()) if n else 0
    pad_hash = pad_entry = None
    if 0 < most <= 64 and n * most <= 4 * row.size + 4096:
        column = np.arange(row.size) - _row_starts(row)
        pad_hash = np.zeros((n, most), dtype=np.int64)
        pad_entry = np.full((n, most), -1, dtype=np.int64)
        pad_hash[row, column] = row_hashes
        pad_entry[row, column] = np.arange(row.size)
    return _Gold(
        n,
        row,
        obj,
        grade,
        n_relevant,
        hashes,
        sorted_keys,
        key_order,
        fallback,
        any_row_filter,
        any_row_mask,
        row_filter,
        row_mask,
        pad_hash,
        pad_entry,
        n_judged,
    )


def _flatten_block(cells: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, int, np.ndarray | None]:
    """The ids of a block as one object array: (objects, width, slots).

    ``width > 0``: a row-major (rows x width) matrix padded with None; ``slots`` lists the positions
    holding ids, or is None when every row has ``width`` ids. ``width == 0``: the ids back to back.
    """
    total = int(lengths.sum())
    width = int(lengths.max())
    if _to_object_array is not None and cells.size * width <= 2 * total + 4096:
        try:
            matrix = _to_object_array(list(cells))
        except Exception:  # pragma: no cover - fall back to the plain flattening below
            matrix = None
        if matrix is not None and matrix.shape == (cells.size, width) and matrix.flags.c_contiguous:
            if total == cells.size * width:
                return matrix.reshape(-1), width, None
            valid = np.arange(width)[None, :] < lengths[:, None]
            return matrix.reshape(-1), width, np.flatnonzero(valid.reshape(-1))
    return np.fromiter(chain.from_iterable(cells), dtype=object, count=total), 0, None


def _match_block(cells: np.ndarray, lengths: np.ndarray, row0: int, gold: _Gold) -> tuple[np.ndarray, ...]:
    """Relevant retrieved ids of one block of rows: (row, 1-based rank, gold entry), in no particular order.

    Each distinct object is type-checked and hashed once; two quick filters (is the hash a gold
    hash of any question, then of this question) discard almost every id with numpy; the few left
    are compared with their question's gold hashes and every hash match is confirmed with ``==``.
    """
    empty = np.empty(0, dtype=np.int64)
    total = int(lengths.sum())
    if total == 0 or gold.row.size == 0:
        return empty, empty, empty
    objects, width, slots = _flatten_block(cells, lengths)
    addresses = _addresses(objects)
    if addresses is not None and slots is not None:
        addresses = addresses[slots]
    order, group, representative = _distinct_objects(addresses, total)

    def rows_and_ranks(elements: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        at = elements if slots is None else slots[elements]
        if width:
            return at // width + row0, at % width + 1
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        rows = np.searchsorted(offsets, at, side="right") - 1
        return rows + row0, at - offsets[rows] + 1

    try:
        distinct_hashes = _id_hashes(objects[representative if slots is None else slots[representative]])
    except _BadId as bad:
        row = int(rows_and_ranks(representative[bad.index : bad.index + 1])[0][0])
        raise _describe_bad_id("retrieved", row, bad.value) from None
    maybe = gold.any_row_filter[(distinct_hashes.view(np.uint64) & gold.any_row_mask).view(np.int64)]
    candidate = np.flatnonzero(maybe[group])
    elements = candidate if order is None else order[candidate]
    hashes = distinct_hashes[group[candidate]]
    rows, ranks = rows_and_ranks(elements)
    keep = gold.row_filter[(_mix(rows, hashes) & gold.row_mask).view(np.int64)]
    elements, hashes, rows, ranks = elements[keep], hashes[keep], rows[keep], ranks[keep]
    if gold.pad_hash is not None:  # few gold ids per row: compare with each of the row's gold hashes
        same = gold.pad_hash[rows] == hashes[:, None]
        hit = same.any(axis=1)
        entries = gold.pad_entry[rows[hit], same[hit].argmax(axis=1)]
        hit[hit] = entries >= 0
        entries = entries[entries >= 0]
    else:  # many gold ids in some row: look (row, hash) up in the sorted gold keys
        code = np.searchsorted(gold.hashes, hashes)
        code[code == gold.hashes.size] = 0
        keys = rows * max(1, gold.hashes.size) + code
        at = np.searchsorted(gold.keys, keys)
        at[at == gold.keys.size] = 0
        hit = (gold.keys[at] == keys) & (gold.hashes[code] == hashes)
        entries = gold.key_entry[at[hit]]
    matched = elements[hit]
    equal = np.fromiter(
        map(operator.eq, objects[matched if slots is None else slots[matched]], gold.obj[entries]),
        dtype=bool,
        count=entries.size,
    )
    return rows[hit][equal], ranks[hit][equal], entries[equal]


def _found_from_ids(retrieved: Any, gold: Any) -> tuple[_Found, _Gold, np.ndarray]:
    cells = _as_cells(retrieved)
    table = _gold_table(gold)
    if len(cells) != table.n:
        raise ValueError(f"retrieved has {len(cells)} rows but gold has {table.n}; pass one gold per ranked list")
    lengths = _check_sequences(cells, "retrieved")
    n = len(cells)
    bounds = [0]
    if n:
        cumulative = np.cumsum(lengths)
        while bounds[-1] < n:
            start = bounds[-1]
            base = cumulative[start - 1] if start else 0
            stop = int(np.searchsorted(cumulative, base + _BLOCK_SLOTS, side="right"))
            bounds.append(min(n, max(stop, start + 1)))
    parts = [
        _match_block(cells[a:b], lengths[a:b], a, table) for a, b in zip(bounds[:-1], bounds[1:])
    ]
    rows = np.concatenate([p[0] for p in parts]) if parts else np.empty(0, np.int64)
    ranks = np.concatenate([p[1] for p in parts]) if parts else np.empty(0, np.int64)
    entries = np.concatenate([p[2] for p in parts]) if parts else np.empty(0, np.int64)
    order = np.lexsort((ranks, rows))
    rows, ranks, entries = rows[order], ranks[order], entries[order]
    _, first = np.unique(entries, return_index=True)  # a repeated id counts at its first rank
    first.sort()
    rows, ranks, entries = rows[first], ranks[first], entries[first]
    ideal_order = np.lexsort((-table.grade, table.row))
    found = _Found(
        n=n,
        n_relevant=table.n_relevant,
        found_row=rows.astype(np.int64),
        found_rank=ranks.astype(np.int64),
        found_grade=table.grade[entries],
        prec_row=rows.astype(np.int64),
        prec_rank=ranks.astype(np.int64),
        ideal_row=table.row[ideal_order],
        ideal_grade=table.grade[ideal_order],
    )
    return found, table, table.fallback_rows


def retrieval_scores(
    retrieved: Sequence[Sequence[Hashable]] | Any,
    gold: Sequence[Any] | Any,
    k: int | Iterable[int] = 5,
    *,
    gain: str = "exponential",
    no_relevant: str = "exclude",
) -> dict[str, np.ndarray]:
    """Every retrieval metric for many questions at once, equal to the per-question functions.

    Parameters
    ----------
    retrieved : sequence of lists of ids
        One ranked list per question (what reached the model, best first); ``[]`` when nothing was
        retrieved (scores 0). A pandas Series works.
    gold : sequence of (list of ids | dict id -> grade | None)
        One per question; missing, empty or no grade > 0 means unanswerable (NaN everywhere).
    k : int or iterable of int
        Cut-offs for recall, hit, precision and nDCG.
    gain : {"exponential", "linear"}
        nDCG gain, ``2**g - 1`` or ``g``.
    no_relevant : {"exclude", "zero"}
        A question whose gold judges ids but grades none above 0 (e.g. ``{"d3": 0}``):
        ``"exclude"`` (default) scores it NaN like every unanswerable question, so means leave it
        out; ``"zero"`` scores it 0 on every metric, trec_eval's convention, so that a mean over
        the questions equals the ``all`` line of trec_eval (and the mean of pytrec_eval's
        per-query values). Missing or empty gold (nothing judged) is NaN either way: trec_eval
        never evaluates a topic without judgements.

    Returns
    -------
    dict of str -> numpy.ndarray
        ``recall@k``, ``hit@k``, ``precision@k``, ``ndcg@k`` for each k, then ``rr``, ``ap``,
        ``r_precision``; float64 arrays, one value per question.

    Examples
    --------
    >>> out = retrieval_scores([["d7", "d2", "d9", "d4", "d1"], ["d1"]], [{"d2": 3, "d4": 1, "d5": 2}, []], k=5)
    >>> [round(float(v), 3) for v in out["ndcg@5"]]
    [0.516, nan]

    A question judged but with nothing relevant: NaN by default, 0 as in trec_eval on request.

    >>> ranked, gold = [["d1", "d2"], ["d1"], ["d1"]], [["d2"], {"d1": 0, "d7": 0}, None]
    >>> retrieval_scores(ranked, gold, k=2)["ap"].tolist()
    [0.5, nan, nan]
    >>> retrieval_scores(ranked, gold, k=2, no_relevant="zero")["ap"].tolist()
    [0.5, 0.0, nan]
    """
    return _retrieval_scores(retrieved, gold, k, gain=gain, no_relevant=no_relevant)[0]


def _retrieval_scores(
    retrieved: Any, gold: Any, k: int | Iterable[int], *, gain: str, no_relevant: str
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """:func:`retrieval_scores` and the mask of questions judged with no grade > 0 (for the counts)."""
    ks = _check_ks(k)
    _check_gain(gain)
    _check_no_relevant(no_relevant)
    found, table, fallback = _found_from_ids(retrieved, gold)
    out = _score(found, ks, gain)
    if fallback.size:  # ids whose hashes collide within one question: score those questions one by one
        cells, gold_cells = _as_cells(retrieved), _as_cells(gold)
        for row in fallback.tolist():
            for name, value in _scalar_row(cells[row], gold_cells[row], ks, gain).items():
                out[name][row] = value
    judged_none_relevant = (table.n_relevant == 0) & (table.n_judged > 0)
    _zero_no_relevant(out, judged_none_relevant, no_relevant)
    return out, judged_none_relevant


def _scalar_row(ranked: Sequence[Hashable], gold: Any, ks: Sequence[int], gain: str) -> dict[str, float]:
    """One question's metrics through the per-question functions (the reference for the kernel)."""
    values: dict[str, float] = {}
    for k in ks:
        values[f"recall@{k}"] = recall_at_k(ranked, gold, k)
        values[f"hit@{k}"] = hit_at_k(ranked, gold, k)
        values[f"precision@{k}"] = precision_at_k(ranked, gold, k)
        values[f"ndcg@{k}"] = ndcg_at_k(ranked, gold, k, gain=gain)
    values["rr"] = reciprocal_rank(ranked, gold)
    values["ap"] = average_precision(ranked, gold)
    values["r_precision"] = r_precision(ranked, gold)
    return values
