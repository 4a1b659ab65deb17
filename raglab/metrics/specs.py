"""The registry of retrieval metrics: one :class:`MetricSpec` per metric, read by everything else.

A spec holds a metric's name, direction, range, description, its **per-question definition** (plain
Python on one question's ``raglab.metrics._common.Matched``) and its **bulk kernel** (numpy
on many questions' ``raglab.metrics._common.Found``). The bulk functions
(:func:`raglab.metrics.retrieval_scores`, :func:`raglab.metrics.spans.span_retrieval_scores`,
``df.rag.retrieval``) compute the registered metrics with the kernels; the tests check every kernel
against its definition exactly, and against trec_eval (via pytrec_eval) when ``trec_eval`` names
the measure; ``raglab._registry.metric_info`` (the gate's direction, the bounds of summary
intervals) and the table in :mod:`raglab.metrics`' docstring read the same specs.

Adding a metric is one :func:`register` call here (see CONTRIBUTING.md). A metric registered with
``default=False`` is computed only when asked for: ``retrieval_scores(..., metrics=["map"])``.

Examples
--------
>>> spec = METRICS["map"]
>>> spec.per_k, spec.default, spec.trec_eval, spec.higher_is_better
(True, False, 'map_cut_{k}', True)
>>> spec.score(["d1", "d7", "d2"], ["d1", "d2", "d3"], k=2)   # AP cut at 2: (1/1) / 3
0.3333333333333333
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from raglab._registry import register_metric
from raglab._registry import specs as registry_specs
from raglab.metrics._common import Found, Matched, _check_k, _discounts, _gain_values, match_ids

__all__ = ["METRICS", "MetricSpec", "register", "score_columns", "select"]

#: Gold units a metric can be computed for.
UNITS: tuple[str, ...] = ("ids", "spans")

Definition = Callable[[Matched, "int | None", str], float]
Kernel = Callable[[Found, "int | None"], np.ndarray]


@dataclass(frozen=True)
class MetricSpec:
    """A retrieval metric, declared once.

    Attributes
    ----------
    base : str
        Column name (``"recall"``); per-k metrics write ``"<base>@<k>"``.
    description : str
        One line: what the number means.
    per_k : bool
        One column per cut-off k (``recall@5``), or one over the whole ranked list (``rr``).
    definition : callable or None
        ``definition(matched, k, gain) -> float``: the metric of one answerable question, in
        plain Python (``k`` is None for whole-list metrics). The reference the kernel must equal.
    bulk : callable or None
        ``bulk(found, k) -> ndarray``: the metric of every question at once; fresh float64 array
        of length ``found.n`` (unanswerable rows are set to NaN afterwards).
    higher_is_better, binary, bounded : bool
        Direction; takes only 0 and 1; lies in [0, 1]. Read by the gate and by summary intervals.
    default : bool
        Computed by the bulk functions when ``metrics=`` is not given.
    units : tuple of str
        ``"ids"`` and/or ``"spans"``: the gold units the metric is defined for.
    trec_eval : str or None
        trec_eval's name for the same per-query number, ``{k}`` standing for the cut-off
        (``"P_{k}"``, ``"recip_rank"``); the tests compare against pytrec_eval when it is set.
    uses_gain : bool
        Depends on ``gain=`` (nDCG).
    """

    base: str
    description: str
    per_k: bool
    definition: Definition | None
    bulk: Kernel | None
    higher_is_better: bool = True
    binary: bool = False
    bounded: bool = True
    default: bool = True
    units: tuple[str, ...] = UNITS
    trec_eval: str | None = None
    uses_gain: bool = False

    def columns(self, ks: Sequence[int]) -> list[str]:
        """Column names this metric writes for the cut-offs ``ks``.

        Examples
        --------
        >>> METRICS["recall"].columns([1, 5]), METRICS["rr"].columns([1, 5])
        (['recall@1', 'recall@5'], ['rr'])
        """
        return [f"{self.base}@{k}" for k in ks] if self.per_k else [self.base]

    def score(self, ranked: Sequence[Any], gold: Any, k: int | None = None, *, gain: str = "exponential") -> float:
        """The per-question definition on one ranked list of ids and its gold (NaN when unanswerable).

        Examples
        --------
        >>> METRICS["precision"].score(["d7", "d2", "d9", "d4", "d1"], {"d2": 3, "d4": 1, "d5": 2}, k=5)
        0.4
        """
        if self.definition is None:
            raise ValueError(f"{self.base!r} has no per-question definition on ids (units: {list(self.units)})")
        if self.per_k:
            k = _check_k(k)
        elif k is not None:
            raise ValueError(f"{self.base!r} is computed over the whole list; it takes no k")
        matched = match_ids(ranked, gold)
        return math.nan if matched is None else self.definition(matched, k, gain)


#: Every registered retrieval metric, by base name, in registration (column) order: the retrieval metrics
#: of the one registry (:mod:`raglab._registry`), a live view (``del``/``pop`` unregister).
METRICS: MutableMapping[str, MetricSpec] = registry_specs("retrieval")


def register(spec: MetricSpec) -> MetricSpec:
    """Add a retrieval metric to the one registry (``raglab._registry.metric_info`` reads its direction and range).

    Examples
    --------
    >>> from raglab.metrics._common import Matched
    >>> def found_any(matched, k, gain):
    ...     return float(bool(matched.found))
    >>> spec = register(MetricSpec("found_any", "1 if any gold id was retrieved at all", per_k=False,
    ...                            definition=found_any, bulk=None, binary=True, default=False, units=("ids",)))
    >>> spec.score(["a", "b"], ["b"])
    1.0
    >>> _ = METRICS.pop("found_any")
    """
    if not spec.base or "@" in spec.base:
        raise ValueError(f"a metric's base name must be non-empty and without '@', got {spec.base!r}")
    unknown = set(spec.units) - set(UNITS)
    if unknown or not spec.units:
        raise ValueError(f"`units` of {spec.base!r} must be a non-empty subset of {list(UNITS)}, got {spec.units!r}")
    register_metric(
        spec.base, higher_is_better=spec.higher_is_better, binary=spec.binary, bounded=spec.bounded,
        description=spec.description, kind="retrieval", spec=spec,
    )
    return spec


def select(metrics: str | Iterable[str] | None, unit: str) -> list[MetricSpec]:
    """The specs to compute for gold ``unit``: the defaults, or the ``metrics`` named, in registry order.

    Examples
    --------
    >>> [spec.base for spec in select(None, "ids")]
    ['recall', 'hit', 'precision', 'ndcg', 'rr', 'ap', 'r_precision']
    >>> [spec.base for spec in select(["rr", "map"], "spans")]
    ['map', 'rr']
    """
    available = [spec for spec in METRICS.values() if unit in spec.units]
    if metrics is None:
        return [spec for spec in available if spec.default]
    names = [metrics] if isinstance(metrics, str) else list(metrics)
    known = {spec.base for spec in available}
    wrong = [name for name in names if name not in known]
    if wrong or not names:
        hint = " (coverage needs gold as character spans)" if "coverage" in wrong else ""
        raise ValueError(
            f"`metrics` must name registered metrics for gold {unit} (base names, without @k): "
            f"{sorted(known)}; got {wrong or names!r}{hint}"
        )
    return [spec for spec in available if spec.base in names]


def score_columns(
    ks: Sequence[int], *, coverage: bool = False, metrics: str | Iterable[str] | None = None
) -> list[str]:
    """Names of the columns the bulk functions write, in order: per-k metrics for each k, then the rest.

    Parameters
    ----------
    ks : sequence of int
        Cut-offs, ascending.
    coverage : bool
        Gold as character spans (adds ``coverage@k``; the span metrics' columns).
    metrics : str or iterable of str, optional
        Base names to compute instead of the defaults (e.g. ``["recall", "map"]``).

    Examples
    --------
    >>> score_columns([5])
    ['recall@5', 'hit@5', 'precision@5', 'ndcg@5', 'rr', 'ap', 'r_precision']
    >>> score_columns([1, 5], metrics=["map", "rr"])
    ['map@1', 'map@5', 'rr']
    """
    specs = select(metrics, "spans" if coverage else "ids")
    names = [f"{spec.base}@{k}" for k in ks for spec in specs if spec.per_k]
    return names + [spec.base for spec in specs if not spec.per_k]


# --------------------------------------------------------------------------------------------------
# The metrics: definition (one question, plain Python) and kernel (all questions, numpy)
# --------------------------------------------------------------------------------------------------


def _recall(q: Matched, k: int | None, gain: str) -> float:
    return sum(1 for rank, _ in q.found if rank <= k) / len(q.grades)


def _recall_bulk(found: Found, k: int | None) -> np.ndarray:
    return found.count_within(k) / found.n_relevant


def _hit(q: Matched, k: int | None, gain: str) -> float:
    return 1.0 if q.found and q.found[0][0] <= k else 0.0


def _hit_bulk(found: Found, k: int | None) -> np.ndarray:
    return (found.count_within(k) > 0).astype(np.float64)


def _precision(q: Matched, k: int | None, gain: str) -> float:
    return sum(1 for rank in q.relevant_ranks if rank <= k) / k


def _precision_bulk(found: Found, k: int | None) -> np.ndarray:
    return np.bincount(found.prec_row[found.prec_rank <= k], minlength=found.n) / k


def _ndcg(q: Matched, k: int | None, gain: str) -> float:
    # Sized by what can count (the ideal ranking and the gold found), never by k: k=10**9 allocates nothing.
    table = _discounts(max([1, len(q.grades), *(rank for rank, _ in q.found)]))
    top = [(rank, grade) for rank, grade in q.found if rank <= k]
    dcg = 0.0
    if top:
        terms = _gain_values(np.array([g for _, g in top]), gain) / table[np.array([r for r, _ in top])]
        for term in terms.tolist():
            dcg += term
    ideal = sorted(q.grades, reverse=True)[:k]
    ideal_terms = _gain_values(np.array(ideal), gain) / table[np.arange(1, len(ideal) + 1)]
    idcg = 0.0
    for term in ideal_terms.tolist():
        idcg += term
    return min(dcg / idcg, 1.0)


def _ndcg_bulk(found: Found, k: int | None) -> np.ndarray:
    within = found.found_rank <= k
    dcg = np.bincount(found.found_row[within], weights=found.found_terms[within], minlength=found.n)
    in_ideal = found.ideal_pos <= k
    idcg = np.bincount(found.ideal_row[in_ideal], weights=found.ideal_terms[in_ideal], minlength=found.n)
    return np.minimum(dcg / idcg, 1.0)


def _rr(q: Matched, k: int | None, gain: str) -> float:
    return 1.0 / q.found[0][0] if q.found and (k is None or q.found[0][0] <= k) else 0.0


def _rr_bulk(found: Found, k: int | None) -> np.ndarray:
    rr = np.zeros(found.n)
    first = found.first_found
    rr[found.found_row[first]] = 1.0 / found.found_rank[first]
    return rr


def _ap(q: Matched, k: int | None, gain: str) -> float:
    """Mean over the gold units of the precision at each one's rank (0 if not found, or found below k)."""
    total = 0.0
    for rank, _ in q.found:
        if k is not None and rank > k:
            break
        total += sum(1 for other in q.relevant_ranks if other <= rank) / rank
    return total / len(q.grades)


def _ap_bulk(found: Found, k: int | None) -> np.ndarray:
    terms = found.precision_upto / found.found_rank
    if k is None:
        return np.bincount(found.found_row, weights=terms, minlength=found.n) / found.n_relevant
    within = found.found_rank <= k
    return np.bincount(found.found_row[within], weights=terms[within], minlength=found.n) / found.n_relevant


def _r_precision(q: Matched, k: int | None, gain: str) -> float:
    r = len(q.grades)
    return sum(1 for rank in q.relevant_ranks if rank <= r) / r


def _r_precision_bulk(found: Found, k: int | None) -> np.ndarray:
    within_r = found.prec_rank <= found.n_relevant[found.prec_row]
    return np.bincount(found.prec_row[within_r], minlength=found.n) / found.n_relevant


register(MetricSpec("recall", "fraction of the gold ids (or gold spans) found in the top k", per_k=True,
                    definition=_recall, bulk=_recall_bulk, trec_eval="recall_{k}"))
register(MetricSpec("hit", "1 if any gold id is in the top k", per_k=True, definition=_hit, bulk=_hit_bulk,
                    binary=True, trec_eval="success_{k}"))
register(MetricSpec("precision", "fraction of the top k that is gold (divides by k)", per_k=True,
                    definition=_precision, bulk=_precision_bulk, trec_eval="P_{k}"))
register(MetricSpec("ndcg", "normalised discounted cumulative gain at k", per_k=True, definition=_ndcg,
                    bulk=_ndcg_bulk, trec_eval="ndcg_cut_{k}", uses_gain=True))
# coverage is computed from character offsets, not from ranks: its definition and kernel are in spans.py.
register(MetricSpec("coverage", "fraction of gold characters that reached the model", per_k=True,
                    definition=None, bulk=None, units=("spans",)))
register(MetricSpec("map", "average precision cut at k (trec_eval map_cut_k; its mean is MAP@k)", per_k=True,
                    definition=_ap, bulk=_ap_bulk, default=False, trec_eval="map_cut_{k}"))
register(MetricSpec("rr", "reciprocal rank of the first gold id in the list", per_k=False, definition=_rr,
                    bulk=_rr_bulk, trec_eval="recip_rank"))
register(MetricSpec("ap", "average precision over the list (trec_eval map)", per_k=False, definition=_ap,
                    bulk=_ap_bulk, trec_eval="map"))
register(MetricSpec("r_precision", "precision at R, R = number of gold ids (trec_eval Rprec)", per_k=False,
                    definition=_r_precision, bulk=_r_precision_bulk, trec_eval="Rprec"))
