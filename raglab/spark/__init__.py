"""raglab on Spark DataFrames: a Spark DataFrame seen as pandas partitions, and its raglab record.

:class:`SparkPartitions` runs plain pandas code on each Spark partition (``mapInPandas``) and brings
back only small results; :func:`with_attrs` keeps a table's raglab record (``df.attrs["raglab"]`` in
pandas) in its Spark schema, where Parquet files keep it too.
"""

from __future__ import annotations

from raglab._optional import import_optional

import_optional("pyspark.sql", extra="spark", purpose="raglab.spark")

from raglab.spark._attrs import attrs_of, with_attrs  # noqa: E402  (after the extra's check)
from raglab.spark._frame import SparkPartitions  # noqa: E402

__all__ = ["SparkPartitions", "attrs_of", "with_attrs"]
