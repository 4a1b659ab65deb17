"""``DaskPartitions``: a Dask DataFrame seen as pandas partitions (:class:`raglab.engines._frames.Partitions`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np
import pandas as pd
from pandas.api.types import is_bool_dtype, is_integer_dtype

from raglab.engines._frames import CAND, KEY, SIDE, Partitions

__all__ = ["DaskPartitions"]

T = TypeVar("T")
FAN_IN = 8  # statistics added 8 at a time: one task per group, never one task over every partition
# Dask's task-based shuffle: its pieces are ordinary task results, which workers spill to disk under a
# memory limit (the peer-to-peer shuffle's buffers are not, and 1 GB workers died in it at 2x10^7 rows)
_SHUFFLE = "tasks"
BUCKET = "__raglab_bucket"  # what the runs are shuffled on: the integer id, or a hash of the id's text
_MIX = np.uint64(0x9E3779B97F4A7C15)


def _text_buckets(text: pd.Series) -> np.ndarray:
    """A 64-bit hash (as int64) of each string, computed on Arrow's buffers with numpy: no Python object per row.

    Only for partitioning (equal texts, equal hashes); the pairing itself compares the texts.
    """
    import pyarrow as pa

    array = pa.array(text.array, type=pa.large_string())
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    array = array.fill_null("")
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int64)[array.offset:array.offset + len(array) + 1]
    lengths = np.diff(offsets).astype(np.int64)
    data = np.frombuffer(array.buffers()[2], dtype=np.uint8)[offsets[0]:offsets[-1]] if lengths.sum() else \
        np.zeros(0, dtype=np.uint8)
    start = offsets[:-1] - offsets[0]
    hashed = np.zeros(len(array), dtype=np.uint64)
    with np.errstate(over="ignore"):
        live = np.arange(len(array))
        for j in range(int(lengths.max(initial=0))):  # one pass per byte position: memory stays O(rows)
            live = live[lengths[live] > j]
            hashed[live] = hashed[live] * _MIX + (data[start[live] + j].astype(np.uint64) + np.uint64(1))
        hashed ^= lengths.astype(np.uint64) * _MIX
        hashed ^= hashed >> np.uint64(31)
        hashed *= np.uint64(0xBF58476D1CE4E5B9)
        hashed ^= hashed >> np.uint64(29)
    return hashed.view(np.int64)


def _keyed(part: pd.DataFrame, on: str, columns: list[str], side: int, suffix: str, integer: bool) -> pd.DataFrame:
    """One run's ``columns`` (renamed with ``suffix``), its id in ``KEY`` and ``SIDE``.

    ``KEY`` is the id itself (int64) when both runs' ids are integers, else its text as Arrow strings
    (7 and "7" pair, as on pandas); either is compact to shuffle, and no Python string is made per row
    (millions of small objects fragment a worker's memory past its limit). ``BUCKET``, the integer the
    runs are shuffled on when the ids are texts, is a hash of the text (:func:`_text_buckets`).
    """
    out = part[columns].rename(columns={c: c + suffix for c in columns}) if suffix else part[columns].copy()
    ids = part[on]
    if integer:
        out[KEY] = ids.to_numpy(dtype=np.int64)
    elif is_integer_dtype(ids.dtype) and not is_bool_dtype(ids.dtype):  # one run's integers meet the other's texts
        import pyarrow as pa

        out[KEY] = pd.Series(pd.arrays.ArrowStringArray(pa.array(ids).cast(pa.string())), index=out.index)
    else:
        out[KEY] = ids.astype(str).astype("string[pyarrow]")
    if not integer:  # integer ids are shuffled on themselves
        out[BUCKET] = _text_buckets(out[KEY])
    out[SIDE] = np.int8(side)
    return out


def _integer(dtype: Any) -> bool:
    """Ids kept as int64: numpy integers that fit (not pandas' nullable Int64, whose missing ids have text)."""
    return isinstance(dtype, np.dtype) and (dtype.kind == "i" or (dtype.kind == "u" and dtype.itemsize < 8))


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
        n = max(self.ddf.npartitions, other.ddf.npartitions)

        integer = _integer(self.meta[on].dtype) and _integer(other.meta[other_on].dtype)

        def side(ddf: Any, id_column: str, keep: Sequence[str], number: int, suffix: str) -> Any:
            chosen = list(dict.fromkeys(keep))
            read = ddf[list(dict.fromkeys([id_column, *chosen]))]  # only these columns are read
            meta = _keyed(read._meta, id_column, chosen, number, suffix, integer)
            # only the key and the needed columns travel; each run is shuffled on its own (no rows widened
            # by the other run's columns), and equal keys land in the same numbered partition of both
            keyed = read.map_partitions(_keyed, id_column, chosen, number, suffix, integer, meta=meta)
            return keyed.shuffle(KEY if integer else BUCKET, npartitions=n, shuffle_method=_SHUFFLE)

        left = side(self.ddf, on, columns, 0, "")
        right = side(other.ddf, other_on, other_columns, 1, CAND)
        meta = _stack(left._meta, right._meta)
        both = dd.map_partitions(_stack, left, right, meta=meta, align_dataframes=False)
        result = DaskPartitions(both)
        result.meta = meta
        result.meta.attrs = dict(self.meta.attrs)
        return result


def _stack(left: pd.DataFrame, right: pd.DataFrame) -> pd.DataFrame:
    """Partition ``i`` of both shuffled runs as one frame (each side's rows miss the other's columns)."""
    return pd.concat([left.drop(columns=BUCKET, errors="ignore"), right.drop(columns=BUCKET, errors="ignore")],
                     ignore_index=True)
