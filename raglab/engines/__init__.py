"""The engine-neutral core of ``raglab.dask`` and ``raglab.spark``: functions written once against
:class:`raglab.engines._frames.Partitions` (a table seen as pandas partitions on some engine)."""
