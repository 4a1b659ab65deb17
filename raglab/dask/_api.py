"""The functions of ``raglab.dask``: the engine-neutral ones of :mod:`raglab.engines` on Dask DataFrames."""

from __future__ import annotations

from typing import Any

import pandas as pd

from raglab import engines
from raglab.dask._frame import DaskPartitions

__all__ = ["compare", "gate", "monitor", "over_time", "summary"]


def _frame(ddf: Any, name: str, what: str = "the table") -> DaskPartitions:
    import dask.dataframe as dd

    if not isinstance(ddf, dd.DataFrame):
        raise TypeError(f"raglab.dask.{name}: {what} must be a Dask DataFrame, got {type(ddf).__name__} (for pandas "
                        f"use rows.rag.{name}; for Spark, raglab.spark)")
    return DaskPartitions(ddf)


def summary(ddf: Any, metrics: Any = None, **options: Any) -> pd.DataFrame:
    """Mean and interval per metric and slice of a Dask DataFrame (``ddf.rag.summary``): the table
    :func:`raglab.runs.summary` makes, from per-partition statistics. Keywords as :func:`raglab.engines.summary`.

    Examples
    --------
    >>> import dask
    >>> import dask.dataframe as dd
    >>> import pandas as pd
    >>> import raglab.dask
    >>> rows = pd.DataFrame({"question_id": ["q1", "q2", "q3", "q4"], "hit@5": [1, 0, 1, 1]})
    >>> with dask.config.set(scheduler="sync"):
    ...     table = dd.from_pandas(rows, npartitions=2).rag.summary(["hit@5"])
    >>> table[["n", "mean", "method"]].values.tolist()
    [[4, 0.75, 'wilson']]
    """
    return engines.summary(_frame(ddf, "summary"), metrics, **options)


def compare(ddf_base: Any, ddf_cand: Any, metrics: Any = None, **options: Any) -> pd.DataFrame:
    """Paired comparison of two Dask runs by question id (``ddf.rag.compare``): the table
    :func:`raglab.runs.compare` makes. Keywords as :func:`raglab.engines.compare`.

    Both runs' rows are shuffled once by a hash of the question id, so each question's two rows
    meet in one partition; no result depends on the partitioning or the row order.
    """
    return engines.compare(_frame(ddf_base, "compare", "the baseline"), _frame(ddf_cand, "compare", "the candidate"),
                           metrics, **options)


def gate(ddf_base: Any, ddf_cand: Any, **options: Any) -> Any:
    """Release gate on two Dask runs (``ddf.rag.gate``), as :func:`raglab.runs.gate`; keywords as
    :func:`raglab.engines.gate` (``margin=`` and ``metrics=`` are required)."""
    return engines.gate(_frame(ddf_base, "gate", "the baseline"), _frame(ddf_cand, "gate", "the candidate"),
                        **options)


def over_time(logs: Any, metrics: Any, **options: Any) -> pd.DataFrame:
    """Per-period metrics of a Dask production log (``ddf.rag.over_time``), as
    :func:`raglab.monitor.over_time`; keywords as :func:`raglab.engines.over_time`."""
    return engines.over_time(_frame(logs, "over_time", "logs"), metrics, **options)


def monitor(logs: Any, metrics: Any, **options: Any) -> Any:
    """Change detection on a Dask production log (``ddf.rag.monitor``), as :func:`raglab.monitor.monitor`;
    keywords as :func:`raglab.engines.monitor` (``reference=`` is required)."""
    return engines.monitor(_frame(logs, "monitor", "logs"), metrics, **options)
