"""The engine-neutral core of ``raglab.dask`` and ``raglab.spark``.

Each function here is written once against :class:`Partitions` (a table seen as pandas partitions
on some engine): workers turn their partition into small statistics (counts, exact sums, sums of
squares and cross-products, discordant pairs, Poisson bootstrap replicate sums keyed by a hash of the
question id, per-period cell sums), one associative combine adds them, and the pandas code finishes
the same tables the pandas functions make. ``raglab.dask`` and ``raglab.spark`` only say how their
engine runs a function on every partition, brings back the results and puts a question's two rows
(baseline and candidate) in one partition.
"""

from raglab.engines._compare import compare, gate
from raglab.engines._estimate import estimate
from raglab.engines._frames import Partitions
from raglab.engines._monitor import monitor, over_time
from raglab.engines._summary import summary

__all__ = ["Partitions", "compare", "estimate", "gate", "monitor", "over_time", "summary"]
