"""Retrieval metrics, defined exactly: per-question functions, a registry of specs and bulk kernels.

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

Every metric is one :class:`MetricSpec` in :data:`METRICS` (see :mod:`raglab.metrics.specs`): its
per-question definition and its bulk kernel, which a test pins equal bit for bit. The registered
metrics (``*``: computed by default; the rest on request with ``metrics=[...]``):

{table}

Layout: :mod:`~raglab.metrics.definitions` (the per-question functions), :mod:`~raglab.metrics.specs`
(the registry), ``raglab.metrics._kernel`` (:func:`retrieval_scores`: Arrow-backed id lists
matched with ``pyarrow.compute.index_in``, Python lists by looking each gold id up in its own list;
no object pointers, no pandas internals), :mod:`~raglab.metrics.spans` (gold as character spans).

Examples
--------
>>> from raglab import metrics
>>> ranked = ["d7", "d2", "d9", "d4", "d1"]
>>> grades = {{"d2": 3, "d4": 1, "d5": 2}}
>>> round(metrics.recall_at_k(ranked, grades, 5), 3), metrics.precision_at_k(ranked, grades, 5)
(0.667, 0.4)
>>> metrics.reciprocal_rank(ranked, grades), round(metrics.ndcg_at_k(ranked, grades, 5), 3)
(0.5, 0.516)
"""

from __future__ import annotations

from typing import Any

from raglab._errors import BadCellError  # noqa: F401  (raised by the kernels; caught as metrics.BadCellError)
from raglab.metrics._common import (  # noqa: F401  (internal names used by the row-table layer)
    GAINS,
    NO_RELEVANT,
    Matched,
    _check_gain,
    _check_k,
    _check_ks,
    _check_no_relevant,
    _relevant,
    match_ids,
)
from raglab.metrics._kernel import (  # noqa: F401
    _as_cells,
    _gold_table,
    _retrieval_scores,
    list_lengths,
    retrieval_scores,
)
from raglab.metrics.definitions import (
    average_precision,
    hit_at_k,
    ndcg_at_k,
    precision_at_k,
    r_precision,
    recall_at_k,
    reciprocal_rank,
)
from raglab.metrics.spans import check_min_overlap, span_metrics, span_retrieval_scores
from raglab.metrics.specs import METRICS, MetricSpec, register, score_columns

__all__ = [
    "GAINS",
    "METRICS",
    "MetricSpec",
    "NO_RELEVANT",
    "RANK_METRICS",
    "average_precision",
    "check_min_overlap",
    "hit_at_k",
    "ndcg_at_k",
    "precision_at_k",
    "r_precision",
    "recall_at_k",
    "reciprocal_rank",
    "register",
    "retrieval_scores",
    "score_columns",
    "span_metrics",
    "span_retrieval_scores",
]


def _table() -> str:
    entries = []
    for spec in METRICS.values():
        column = (f"{spec.base}@k" if spec.per_k else spec.base) + ("*" if spec.default else "")
        units = "" if spec.units == ("ids", "spans") else f" ({'/'.join(spec.units)} only)"
        entries.append((column, spec.description + units))
    width = max(len(column) for column, _ in entries)
    rule = f"    {'=' * width}  {'=' * max(len(text) for _, text in entries)}"
    lines = [rule, f"    {'column':<{width}}  meaning", rule]
    lines += [f"    {column:<{width}}  {text}" for column, text in entries]
    return "\n".join([*lines, rule])


__doc__ = __doc__.format(table=_table())


def __getattr__(name: str) -> Any:
    if name == "RANK_METRICS":  # base -> description of the metrics defined on gold ids (a live view)
        return {spec.base: spec.description for spec in METRICS.values() if "ids" in spec.units}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
