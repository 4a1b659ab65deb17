"""``sdf.rag`` on Spark DataFrames: the same methods and the same pandas tables as on pandas.

``import raglab.spark`` registers the accessor. The functions are written once, in
:mod:`raglab.engines`; this package says how Spark runs them.

:class:`SparkPartitions` runs plain pandas code on each Spark partition (``mapInPandas``) and brings
back only small results; :func:`with_attrs` keeps a table's raglab record (``df.attrs["raglab"]`` in
pandas) in its Spark schema, where Parquet files keep it too.
"""

from __future__ import annotations

from raglab._optional import import_optional

import_optional("pyspark.sql", extra="spark", purpose="raglab.spark")

from raglab.spark._api import (  # noqa: E402  (after the extra's check)
    SparkRagAccessor,
    compare,
    estimate,
    gate,
    monitor,
    over_time,
    register,
    summary,
)
from raglab.spark._attrs import attrs_of, with_attrs  # noqa: E402
from raglab.spark._frame import SparkPartitions  # noqa: E402
from raglab.spark._retrieval import retrieval  # noqa: E402

register()  # sdf.rag

__all__ = ["SparkPartitions", "SparkRagAccessor", "attrs_of", "compare", "estimate", "gate", "monitor", "over_time",
           "retrieval", "summary", "with_attrs"]
