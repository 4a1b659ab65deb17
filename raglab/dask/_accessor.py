"""``ddf.rag``: the raglab accessor on Dask DataFrames (registered by ``import raglab.dask``)."""

from __future__ import annotations

from typing import Any

from dask.dataframe.extensions import register_dataframe_accessor

__all__ = ["DaskRagAccessor"]


@register_dataframe_accessor("rag")
class DaskRagAccessor:
    """``ddf.rag``: the methods of ``df.rag`` that run on a Dask DataFrame, returning the same pandas
    tables (``retrieval`` returns a Dask DataFrame: it is row-wise).

    Examples
    --------
    >>> import dask.dataframe as dd
    >>> import pandas as pd
    >>> import raglab.dask
    >>> ddf = dd.from_pandas(pd.DataFrame({"hit@5": [1, 0, 1]}), npartitions=2)
    >>> sorted(m for m in dir(ddf.rag) if not m.startswith("_"))
    ['compare', 'estimate', 'gate', 'monitor', 'over_time', 'retrieval', 'summary']
    """

    def __init__(self, ddf: Any) -> None:
        self._ddf = ddf

    def retrieval(self, k: Any = 5, **options: Any) -> Any:
        """Retrieval metrics per question, partition by partition; see :func:`raglab.dask.retrieval`."""
        from raglab.dask._retrieval import retrieval

        return retrieval(self._ddf, k, **options)

    def summary(self, metrics: Any = None, **options: Any) -> Any:
        """Mean and interval per metric and slice; see :func:`raglab.dask.summary`."""
        from raglab.dask._api import summary

        return summary(self._ddf, metrics, **options)

    def over_time(self, metrics: Any, **options: Any) -> Any:
        """Per-period metrics of a production log; see :func:`raglab.dask.over_time`."""
        from raglab.dask._api import over_time

        return over_time(self._ddf, metrics, **options)

    def monitor(self, metrics: Any, **options: Any) -> Any:
        """Change detection on a production log; see :func:`raglab.dask.monitor`."""
        from raglab.dask._api import monitor

        return monitor(self._ddf, metrics, **options)

    def estimate(self, metrics: Any = None, **options: Any) -> Any:
        """Prediction-powered estimate from judge scores and a few human labels; see :func:`raglab.dask.estimate`."""
        from raglab.dask._api import estimate

        return estimate(self._ddf, metrics, **options)

    def compare(self, cand: Any, metrics: Any = None, **options: Any) -> Any:
        """Paired comparison with another Dask run by question id; see :func:`raglab.dask.compare`."""
        from raglab.dask._api import compare

        return compare(self._ddf, cand, metrics, **options)

    def gate(self, cand: Any, **options: Any) -> Any:
        """Release gate against another Dask run; see :func:`raglab.dask.gate`."""
        from raglab.dask._api import gate

        return gate(self._ddf, cand, **options)
