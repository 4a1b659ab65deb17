"""``ddf.rag`` on Dask DataFrames: the same methods and the same pandas tables as on pandas.

``import raglab.dask`` registers the accessor. Workers turn their partition into small statistics
(counts, sums, sums of squares and cross-products); one combine step adds them and the pandas code
finishes the tables, so no result depends on how the rows are partitioned or ordered. The functions
are written once, in :mod:`raglab.engines`; this package says how Dask runs them.
"""

from __future__ import annotations

from raglab._optional import import_optional

import_optional("dask.dataframe", extra="dask", purpose="raglab.dask")

from raglab.dask._accessor import DaskRagAccessor  # noqa: E402  (after the extra's check; registers ddf.rag)
from raglab.dask._api import compare, estimate, gate, monitor, over_time, summary  # noqa: E402
from raglab.dask._frame import DaskPartitions  # noqa: E402
from raglab.dask._retrieval import retrieval  # noqa: E402

__all__ = ["DaskPartitions", "DaskRagAccessor", "compare", "estimate", "gate", "monitor", "over_time", "retrieval",
           "summary"]
