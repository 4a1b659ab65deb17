"""Moved: span metrics live in :mod:`raglab.metrics.spans` (public, usable without pandas).

This module re-exports them so existing imports (``from raglab._spans import span_metrics``) keep working.
"""

from __future__ import annotations

from raglab.metrics.spans import (  # noqa: F401  (re-exported)
    _gold_span_table,
    _overlap_rule,
    _span_retrieval_scores,
    check_min_overlap,
    span_metrics,
    span_retrieval_scores,
)

__all__ = ["check_min_overlap", "span_metrics", "span_retrieval_scores"]
