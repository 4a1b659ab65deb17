"""The functions of ``raglab.spark`` and the ``sdf.rag`` accessor: :mod:`raglab.engines` on Spark DataFrames."""

from __future__ import annotations

import sys
from typing import Any

import pandas as pd

from raglab import engines
from raglab.spark._frame import SparkPartitions

__all__ = ["SparkRagAccessor", "compare", "estimate", "gate", "monitor", "over_time", "register", "summary"]


def _connect_classes() -> tuple[type, ...]:
    """Spark Connect's DataFrame class when a Connect session has loaded it (importing it here would
    load Connect's dependencies, and their warnings, for every classic user)."""
    module = sys.modules.get("pyspark.sql.connect.dataframe")
    return (module.DataFrame,) if module is not None and hasattr(module, "DataFrame") else ()


def _frame(sdf: Any, name: str, what: str = "the table") -> SparkPartitions:
    from pyspark.sql import DataFrame

    if not isinstance(sdf, (DataFrame, *_connect_classes())):
        raise TypeError(f"raglab.spark.{name}: {what} must be a Spark DataFrame, got {type(sdf).__name__} (for pandas "
                        f"use rows.rag.{name}; for Dask, raglab.dask)")
    return SparkPartitions(sdf)


def summary(sdf: Any, metrics: Any = None, **options: Any) -> pd.DataFrame:
    """Mean and interval per metric and slice of a Spark DataFrame (``sdf.rag.summary``): the table
    :func:`raglab.runs.summary` makes, from per-partition statistics. Keywords as :func:`raglab.engines.summary`.

    Examples
    --------
    >>> import pandas as pd
    >>> import raglab.spark
    >>> rows = pd.DataFrame({"question_id": ["q1", "q2", "q3", "q4"], "hit@5": [1, 0, 1, 1]})
    >>> table = spark.createDataFrame(rows).rag.summary(["hit@5"])  # doctest: +SKIP
    >>> table[["n", "mean", "method"]].values.tolist()  # doctest: +SKIP
    [[4, 0.75, 'wilson']]
    """
    return engines.summary(_frame(sdf, "summary"), metrics, **options)


def compare(sdf_base: Any, sdf_cand: Any, metrics: Any = None, **options: Any) -> pd.DataFrame:
    """Paired comparison of two Spark runs by question id (``sdf.rag.compare``): the table
    :func:`raglab.runs.compare` makes. Keywords as :func:`raglab.engines.compare`.

    Both runs' rows are repartitioned once by the question id's text, so each question's two rows
    meet in one partition; no result depends on the partitioning or the row order.

    Examples
    --------
    >>> import pandas as pd
    >>> import raglab.spark
    >>> base = pd.DataFrame({"question_id": [f"q{i}" for i in range(40)], "hit@5": [1, 0] * 20})
    >>> cand = base.assign(**{"hit@5": [1, 1] * 20})
    >>> t = spark.createDataFrame(base).rag.compare(spark.createDataFrame(cand), ["hit@5"], method="score")  # doctest: +SKIP
    >>> t[["metric", "n", "diff", "method"]].values.tolist()  # doctest: +SKIP
    [['hit@5', 40, 0.5, 'paired score (Tango)']]
    """
    return engines.compare(_frame(sdf_base, "compare", "the baseline"), _frame(sdf_cand, "compare", "the candidate"),
                           metrics, **options)


def estimate(sdf: Any, metrics: Any = None, **options: Any) -> pd.DataFrame:
    """Prediction-powered estimate of a human-labelled metric on a Spark DataFrame (``sdf.rag.estimate``):
    the table :func:`raglab.runs.estimate` makes. Keywords as :func:`raglab.engines.estimate` (``human=``
    is required); a recorded label draw is read from the table's raglab record (:func:`raglab.spark.with_attrs`).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> import raglab.spark
    >>> rng = np.random.default_rng(0)
    >>> truth = (rng.random(2000) < 0.7).astype(float)
    >>> rows = pd.DataFrame({"question_id": [f"q{i}" for i in range(2000)],
    ...                      "faithfulness": np.where(rng.random(2000) < 0.85, truth, 1 - truth),
    ...                      "human_faithful": np.where(rng.random(2000) < 0.1, truth, np.nan)})
    >>> table = spark.createDataFrame(rows).rag.estimate("faithfulness", human="human_faithful")  # doctest: +SKIP
    >>> table[["metric", "slice", "n_labeled", "n_judged"]].values.tolist()  # doctest: +SKIP
    [['faithfulness', 'overall', 212, 2000]]
    """
    return engines.estimate(_frame(sdf, "estimate"), metrics, **options)


def gate(sdf_base: Any, sdf_cand: Any, **options: Any) -> Any:
    """Release gate on two Spark runs (``sdf.rag.gate``), as :func:`raglab.runs.gate`; keywords as
    :func:`raglab.engines.gate` (``margin=`` and ``metrics=`` are required).

    Examples
    --------
    >>> import pandas as pd
    >>> import raglab.spark
    >>> base = pd.DataFrame({"question_id": [f"q{i}" for i in range(200)], "hit@5": [1, 1, 1, 0] * 50})
    >>> cand = base.assign(**{"hit@5": [1, 1, 0, 0] * 50})
    >>> result = spark.createDataFrame(base).rag.gate(spark.createDataFrame(cand), margin=0.02,  # doctest: +SKIP
    ...                                               metrics=["hit@5"], method="score")
    >>> result.decision  # doctest: +SKIP
    'block'
    """
    return engines.gate(_frame(sdf_base, "gate", "the baseline"), _frame(sdf_cand, "gate", "the candidate"),
                        **options)


def over_time(logs: Any, metrics: Any, **options: Any) -> pd.DataFrame:
    """Per-period metrics of a Spark production log (``sdf.rag.over_time``), as
    :func:`raglab.monitor.over_time`; keywords as :func:`raglab.engines.over_time`. A judged sample's
    design is read from the table's raglab record (:func:`raglab.spark.with_attrs`).

    Examples
    --------
    >>> import raglab.spark
    >>> from raglab.monitor import simulate_log
    >>> log = simulate_log(20_000, days=5, seed=0)
    >>> logs = raglab.spark.with_attrs(spark.createDataFrame(log), log.attrs)  # doctest: +SKIP
    >>> table = logs.rag.over_time("faithfulness", predictor="lexical_support")  # doctest: +SKIP
    >>> same = log.rag.over_time("faithfulness", predictor="lexical_support")  # doctest: +SKIP
    >>> bool(abs(table["high"] - same["high"]).max() < 1e-12)  # doctest: +SKIP
    True
    """
    return engines.over_time(_frame(logs, "over_time", "logs"), metrics, **options)


def monitor(logs: Any, metrics: Any, **options: Any) -> Any:
    """Change detection on a Spark production log (``sdf.rag.monitor``), as :func:`raglab.monitor.monitor`;
    keywords as :func:`raglab.engines.monitor` (``reference=`` is required).

    Examples
    --------
    >>> import raglab.spark
    >>> from raglab.monitor import simulate_log
    >>> log = simulate_log(100_000, days=30, drop_day=15, seed=0)
    >>> logs = raglab.spark.with_attrs(spark.createDataFrame(log), log.attrs)  # doctest: +SKIP
    >>> found = logs.rag.monitor("faithfulness", reference=0.88, by="topic", predictor="lexical_support",  # doctest: +SKIP
    ...                          guarantee="arl", arl=365)
    >>> found.guarantee.startswith("average run length")  # doctest: +SKIP
    True
    """
    return engines.monitor(_frame(logs, "monitor", "logs"), metrics, **options)


class SparkRagAccessor:
    """``sdf.rag``: the methods of ``df.rag`` that run on a Spark DataFrame, returning the same pandas
    tables (registered on ``pyspark.sql.DataFrame`` by ``import raglab.spark``; a column named ``rag``
    is then reached as ``sdf["rag"]``).

    Examples
    --------
    >>> import raglab.spark
    >>> sorted(m for m in dir(raglab.spark.SparkRagAccessor) if not m.startswith("_"))
    ['compare', 'estimate', 'gate', 'monitor', 'over_time', 'retrieval', 'summary']
    """

    def __init__(self, sdf: Any) -> None:
        self._sdf = sdf

    def retrieval(self, k: Any = 5, **options: Any) -> Any:
        """Retrieval metrics per question, partition by partition; see :func:`raglab.spark.retrieval`."""
        from raglab.spark._retrieval import retrieval

        return retrieval(self._sdf, k, **options)

    def summary(self, metrics: Any = None, **options: Any) -> pd.DataFrame:
        """Mean and interval per metric and slice; see :func:`raglab.spark.summary`."""
        return summary(self._sdf, metrics, **options)

    def estimate(self, metrics: Any = None, **options: Any) -> pd.DataFrame:
        """Prediction-powered estimate from judge scores and a few human labels; see :func:`raglab.spark.estimate`."""
        return estimate(self._sdf, metrics, **options)

    def compare(self, cand: Any, metrics: Any = None, **options: Any) -> pd.DataFrame:
        """Paired comparison with another Spark run by question id; see :func:`raglab.spark.compare`."""
        return compare(self._sdf, cand, metrics, **options)

    def gate(self, cand: Any, **options: Any) -> Any:
        """Release gate against another Spark run; see :func:`raglab.spark.gate`."""
        return gate(self._sdf, cand, **options)

    def over_time(self, metrics: Any, **options: Any) -> pd.DataFrame:
        """Per-period metrics of a production log; see :func:`raglab.spark.over_time`."""
        return over_time(self._sdf, metrics, **options)

    def monitor(self, metrics: Any, **options: Any) -> Any:
        """Change detection on a production log; see :func:`raglab.spark.monitor`."""
        return monitor(self._sdf, metrics, **options)


def register() -> None:
    """Put ``rag`` on Spark's DataFrame classes (classic and, when installed, Spark Connect's)."""
    from pyspark.sql import DataFrame

    for cls in (DataFrame, *_connect_classes()):
        cls.rag = property(SparkRagAccessor, doc="raglab on this Spark DataFrame (see raglab.spark)")  # type: ignore[attr-defined]
