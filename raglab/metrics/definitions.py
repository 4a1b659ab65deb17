"""The per-question retrieval metrics: one ranked list of ids and its gold in, one number out.

These are the definitions (plain Python, written to be read); the bulk functions compute the same
numbers for many questions at once and a test pins them equal, bit for bit. Each function is the
registered metric's definition (:data:`raglab.metrics.METRICS`) applied to one question.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any

from raglab.metrics._common import _check_gain, _check_k, match_ids
from raglab.metrics.specs import METRICS

__all__ = [
    "average_precision",
    "hit_at_k",
    "ndcg_at_k",
    "precision_at_k",
    "r_precision",
    "recall_at_k",
    "reciprocal_rank",
]


def _one(base: str, ranked: Any, gold: Any, k: int | None, gain: str = "exponential") -> float:
    matched = match_ids(ranked, gold)
    return math.nan if matched is None else METRICS[base].definition(matched, k, gain)


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
    return _one("recall", ranked, gold, _check_k(k))


def hit_at_k(ranked: Sequence[Hashable], gold: Any, k: int) -> float:
    """1.0 if any relevant gold id is in the top ``k``, else 0.0 (NaN when unanswerable).

    Examples
    --------
    >>> hit_at_k(["d7", "d2"], ["d2"], 1), hit_at_k(["d7", "d2"], ["d2"], 2)
    (0.0, 1.0)
    """
    return _one("hit", ranked, gold, _check_k(k))


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
    return _one("precision", ranked, gold, _check_k(k))


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
    return _one("rr", ranked, gold, cut)


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
    return _one("ndcg", ranked, grades, k, gain)


def average_precision(ranked: Sequence[Hashable], gold: Any, k: int | None = None) -> float:
    """Average precision: the mean, over all relevant gold ids, of the precision at each one's rank.

    Relevant ids never retrieved (or retrieved below ``k``) contribute 0; this is trec_eval's
    ``map`` for one query (``map_cut_k`` with ``k``: the registered metric ``map@k``).

    Examples
    --------
    >>> average_precision(["d1", "d7", "d2"], ["d1", "d2", "d3"])   # (1/1 + 2/3) / 3
    0.5555555555555555
    """
    cut = None if k is None else _check_k(k)
    return _one("ap", ranked, gold, cut)


def r_precision(ranked: Sequence[Hashable], gold: Any) -> float:
    """Precision at R, where R is the number of relevant gold ids (trec_eval's ``Rprec``).

    Examples
    --------
    >>> r_precision(["d1", "d7", "d2"], ["d1", "d2"])
    0.5
    """
    return _one("r_precision", ranked, gold, None)
