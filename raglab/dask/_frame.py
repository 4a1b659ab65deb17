"""``DaskPartitions``: a Dask DataFrame seen as pandas partitions (:class:`raglab.engines._frames.Partitions`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import pandas as pd

from raglab.engines._frames import CAND, KEY, SIDE, Partitions

__all__ = ["DaskPartitions"]

T = TypeVar("T")
FAN_IN = 8  # statistics added 8 at a time: one task per group, never one task over every partition


def _text_key(part: pd.DataFrame, on: str) -> pd.Series:
    """The question id as text (7 and "7" pair, as on pandas), as Arrow-backed strings (compact to shuffle)."""
    return part[on].astype(str).astype("string[pyarrow]").rename(KEY)


def _tree(parts: list[Any], combine: Any, width: int = FAN_IN) -> Any:
    """Combine delayed statistics in a tree of fan-in ``width``."""
    while len(parts) > 1:
        parts = [combine(*parts[i:i + width]) for i in range(0, len(parts), width)]
    return parts[0]


class DaskPartitions(Partitions):
    """A Dask DataFrame as partitions: each partition's function runs as one task where the partition
    lies; results are combined in a tree of delayed tasks (fan-in 8), and only the result is computed.

    Examples
    --------
    >>> import dask
    >>> import dask.dataframe as dd
    >>> frame = DaskPartitions(dd.from_pandas(pd.DataFrame({"x": range(10)}), npartitions=3))
    >>> with dask.config.set(scheduler="sync"):
    ...     frame.reduce(lambda part, number: int(part["x"].sum()), lambda *sums: sum(sums))
    45
    """

    engine, prefix, to_pandas = "Dask", "ddf", "ddf.compute()"

    def __init__(self, ddf: Any) -> None:
        self.ddf = ddf
        self.meta = ddf._meta

    def reduce(self, fn: Callable[[pd.DataFrame, int], T], combine: Callable[..., T]) -> T:
        import dask

        parts = [dask.delayed(fn, pure=True)(part, i) for i, part in enumerate(self.ddf.to_delayed())]
        return _tree(parts, dask.delayed(combine, pure=True)).compute()

    def collect(self, fn: Callable[[pd.DataFrame, int], pd.DataFrame]) -> pd.DataFrame:
        import dask

        kept = dask.compute(*(dask.delayed(fn, pure=True)(part, i) for i, part in enumerate(self.ddf.to_delayed())))
        return pd.concat([self.meta, *kept], ignore_index=True) if kept else self.meta.copy()

    def paired(self, other: Partitions, on: str, columns: Sequence[str], other_columns: Sequence[str],
               other_on: str | None = None) -> DaskPartitions:
        import dask.dataframe as dd

        if not isinstance(other, DaskPartitions):
            raise TypeError(f"ddf.rag: both runs must be Dask DataFrames, got a {other.engine} one")
        other_on = on if other_on is None else other_on

        def side(ddf: Any, id_column: str, keep: Sequence[str], number: int, suffix: str) -> Any:
            chosen = list(dict.fromkeys([id_column, *keep]))
            frame = ddf[chosen]
            key = frame.map_partitions(_text_key, id_column, meta=pd.Series([], dtype="string[pyarrow]", name=KEY))
            frame = frame.rename(columns={c: c + suffix for c in chosen}) if suffix else frame
            return frame.assign(**{KEY: key, SIDE: number})

        left = side(self.ddf, on, columns, 0, "")
        right = side(other.ddf, other_on, other_columns, 1, CAND)
        n = max(self.ddf.npartitions, other.ddf.npartitions)
        # one hash shuffle of both runs' rows on the key (not a merge of two tables): a question's rows meet
        both = dd.concat([left, right], ignore_index=True).shuffle(KEY, npartitions=n)
        result = DaskPartitions(both)
        result.meta = result.meta.copy()
        result.meta.attrs = dict(self.meta.attrs)
        return result
