"""``sdf.rag.retrieval``: retrieval metrics per question, computed on each Spark partition where it lies."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from raglab.engines._retrieval import score_partition
from raglab.spark._frame import SparkPartitions, conform

__all__ = ["retrieval"]

_CALLER = "sdf.rag.retrieval"


def _score_batches(batches: Iterator[pd.DataFrame], options: dict[str, Any], new: list[str], meta: pd.DataFrame,
                   maps: list[str]) -> Iterator[pd.DataFrame]:
    """On an executor: each Arrow batch's rows scored by :func:`raglab.retrieval.retrieval` (row-wise)."""
    from pyspark import TaskContext

    context = TaskContext.get()
    number = context.partitionId() if context is not None else 0
    for batch in batches:
        if not len(batch):
            continue
        part = conform(batch.reset_index(drop=True), meta)
        for column in maps:  # Arrow gives a map as (key, value) pairs; graded gold is a dict id -> grade
            part[column] = [dict(cell) if cell is not None else None for cell in part[column]]
        scored = score_partition(part, number, "Spark", options)
        out = batch.reset_index(drop=True)
        for column in new:
            out[column] = scored[column].to_numpy(dtype=float)
        yield out


def retrieval(sdf: Any, k: int | Any = 5, **options: Any) -> Any:
    """Retrieval metrics per question on a Spark DataFrame, as :func:`raglab.retrieval.retrieval` on pandas.

    Row-wise, so each partition is scored where it lies (lazily, through ``mapInPandas``: nothing is
    computed until an action); the result is the Spark DataFrame plus one double column per metric
    and k, equal to ``rows.rag.retrieval(...)``'s values. ``retrieved`` and ``gold`` are arrays of ids
    (``gold`` may be a map id -> grade for graded relevance). The warning pandas gives when k exceeds
    the longest retrieved list is not given (a batch's longest list is not the table's).

    Parameters
    ----------
    sdf : pyspark.sql.DataFrame
        One row per question with the ``retrieved`` and ``gold`` columns.
    k : int or list of int
        Cut-offs, as :func:`raglab.retrieval.retrieval`.
    **options
        The other arguments of :func:`raglab.retrieval.retrieval` (``metrics``, ``gain``, ...,
        column roles).

    Returns
    -------
    pyspark.sql.DataFrame
        The rows plus one column per metric and k.

    Examples
    --------
    >>> import pandas as pd
    >>> import raglab.spark
    >>> rows = pd.DataFrame({"question_id": ["q1", "q2"], "retrieved": [["d1", "d2"], ["d3"]],
    ...                      "gold": [["d2"], ["d9"]]})
    >>> scored = raglab.spark.retrieval(spark.createDataFrame(rows), k=2)  # doctest: +SKIP
    >>> scored.toPandas()["recall@2"].tolist()  # doctest: +SKIP
    [1.0, 0.0]
    """
    from pyspark.sql.types import DoubleType, MapType, StructField, StructType

    from raglab.retrieval import retrieval as _retrieval

    frame = SparkPartitions(sdf)
    options = {"k": k, **options}
    maps = [f.name for f in sdf.schema.fields if isinstance(f.dataType, MapType)]
    empty = frame.meta.copy()
    for column in maps:
        empty[column] = pd.Series([], dtype=object)
    scored = _retrieval(empty, **options)  # a missing column or a bad option fails here, before any work
    new = [str(c) for c in scored.columns if c not in frame.meta.columns]
    odd = [c for c in new if not np.issubdtype(scored[c].dtype, np.number)]
    if odd:  # pragma: no cover  (every retrieval metric is a number)
        raise RuntimeError(f"{_CALLER}: columns {odd} are not numbers; cannot declare their Spark type")
    schema = StructType([*sdf.schema.fields, *(StructField(c, DoubleType(), True) for c in new)])
    return sdf.mapInPandas(partial(_score_batches, options=options, new=new, meta=frame.meta, maps=maps), schema)
