"""A Spark DataFrame seen as pandas partitions: :class:`SparkPartitions`, the Spark side of :mod:`raglab.engines`.

Each Spark partition reaches the Python worker as Arrow batches; ``mapInPandas`` hands them to
:func:`_run_partition`, which joins them into one pandas frame per partition (index ``0..n-1``, the
columns and dtypes of :attr:`SparkPartitions.meta`), calls the engine-neutral function on it and
sends back one row: the partition's number and its result, pickled. The driver unpickles the
results and combines them. Only these small results (and, for :meth:`SparkPartitions.collect`, the
rows a function keeps) leave the executors.

An error raised by the function on an executor is caught there, pickled as the result (tagged as a
failure) and raised again on the driver with its own type, message and attributes, the executor's
traceback attached as its cause: Spark would otherwise wrap it in a ``PythonException`` whose only
content is the text of the traceback.
"""

from __future__ import annotations

import copy
import functools
import pickle
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from raglab.engines._frames import CAND, KEY, SIDE, Partitions
from raglab.spark._attrs import attrs_of, column

__all__ = ["SparkPartitions"]

T = TypeVar("T")

#: How many results one ``combine`` call adds at most (as the Dask tree does).
FAN_IN = 8
#: The one row each partition sends back: its number, whether ``fn`` failed, the pickled result or error.
RESULT_SCHEMA = "number int, failed boolean, payload binary"
#: Session time zones that are UTC (``spark.sql.session.timeZone``), compared in lower case.
UTC_ZONES = frozenset({"utc", "etc/utc", "gmt", "etc/gmt", "z", "+00:00", "utc+0", "utc+00:00", "gmt+0"})


class ExecutorTraceback(Exception):
    """The traceback of an error raised on a Spark executor (set as the ``__cause__`` of the re-raised error)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return f"\n\"\"\"\n{self.text}\"\"\""


def _dumps(value: Any) -> bytes:
    """``value`` pickled on an executor for the driver: by cloudpickle (Spark's own), so that a class defined in
    the driver's notebook (shipped to the executor by value) goes back by value; ``pickle.loads`` reads it."""
    from pyspark import cloudpickle

    return cloudpickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def _dumps_or_none(value: Any) -> bytes | None:
    try:
        return _dumps(value)
    except Exception:  # an attribute that does not pickle (an open file, a lock)
        return None


def _failure(exc: BaseException) -> bytes:
    """``exc`` as the pickled payload of a failed partition.

    Three ways back, tried in this order on the driver: the error pickled as it is; its class, ``args``
    and attributes (for a class whose constructor needs more than ``args``, e.g. ``BadCellError``);
    its class name and message (for an error whose class does not pickle).
    """
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    state = {key: value for key, value in vars(exc).items() if _dumps_or_none(value) is not None}
    return _dumps({"error": _dumps_or_none(exc), "parts": _dumps_or_none((type(exc), exc.args, state)),
                         "name": type(exc).__qualname__, "message": str(exc), "traceback": text})


def _rebuild(parts: bytes) -> BaseException:
    """An exception from its class, ``args`` and attributes, without calling its constructor."""
    kind, args, state = pickle.loads(parts)
    exc = kind.__new__(kind, *args)
    exc.args = args
    vars(exc).update(state)
    return exc


def _raise_failure(payload: bytes, number: int, engine: str) -> None:
    """Raise the error a partition's worker caught, as it was raised there (type, message, attributes)."""
    failure = pickle.loads(payload)
    exc: BaseException | None = None
    for key, load in (("error", pickle.loads), ("parts", _rebuild)):
        if failure[key] is None:
            continue
        try:
            exc = load(failure[key])
        except Exception:  # a constructor that needs more than args, or a class that no longer imports
            continue
        if isinstance(exc, BaseException):
            break
        exc = None
    if exc is None:
        exc = RuntimeError(f"{failure['name']} in partition {number} of the {engine} DataFrame: {failure['message']}")
    raise exc from ExecutorTraceback(failure["traceback"])


def _conform_column(column: pd.Series, want: Any) -> pd.Series:
    """``column`` in the dtype ``want`` of the meta where that loses nothing, else as pandas holds missing values.

    Arrow gives a partition's integer column with nulls as pandas' nullable ``Int64`` and a boolean one as
    objects; ``toPandas()`` gives float64 (NaN) for the first, and that is what the partitions get too,
    so that a column has one dtype whatever partition it is in: the meta's when nothing is missing.
    """
    have = column.dtype
    if isinstance(want, pd.DatetimeTZDtype) and pd.api.types.is_datetime64_dtype(have):
        return column.dt.tz_localize("UTC")  # a Spark timestamp is an instant (the session's zone is UTC)
    if have == want or not isinstance(want, np.dtype):
        return column
    missing = bool(column.isna().any())
    numeric = pd.api.types.is_numeric_dtype(have) and not pd.api.types.is_bool_dtype(have)
    if want.kind in "iu" and numeric:
        if not missing:
            try:
                cast = column.astype(want)
            except (TypeError, ValueError, OverflowError):  # not integers (fn changed them): keep the floats
                cast = None
            if cast is not None and bool((cast == column).all()):
                return cast
        return pd.Series(column.to_numpy(dtype="float64", na_value=np.nan), index=column.index, name=column.name)
    if want.kind == "f" and numeric:
        return pd.Series(column.to_numpy(dtype=want, na_value=np.nan), index=column.index, name=column.name)
    if want.kind == "b" and (pd.api.types.is_bool_dtype(have) or pd.api.types.is_object_dtype(have)):
        if not missing and all(isinstance(v, (bool, np.bool_)) for v in column):
            return column.astype(bool)
        if pd.api.types.is_bool_dtype(have):  # pandas' nullable "boolean": objects, None for missing
            return column.astype(object).where(column.notna(), None)
        return column
    if want.kind == "O" and pd.api.types.is_bool_dtype(have):
        return column.astype(object).where(column.notna(), None)
    return column


def conform(frame: pd.DataFrame, meta: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (columns as ``meta``'s, or some of them) with each column in ``meta``'s dtype where lossless.

    Examples
    --------
    >>> meta = pd.DataFrame({"n": pd.Series([], dtype="int64"), "ok": pd.Series([], dtype=bool)})
    >>> part = pd.DataFrame({"n": pd.array([1, None], dtype="Int64"), "ok": [True, False]})
    >>> conform(part, meta).dtypes.astype(str).tolist()
    ['float64', 'bool']
    >>> conform(part.iloc[:1], meta).dtypes.astype(str).tolist()
    ['int64', 'bool']
    """
    if list(frame.columns) == list(meta.columns):
        pairs = list(enumerate(meta.dtypes))
    else:
        wanted = meta.dtypes[~meta.columns.duplicated(keep=False)]
        pairs = [(i, wanted[name]) for i, name in enumerate(frame.columns)
                 if name in wanted.index and not frame.columns.duplicated(keep=False)[i]]
    out = frame
    for position, want in pairs:
        column = frame.iloc[:, position]
        fitted = _conform_column(column, want)
        if fitted is not column:
            if out is frame:
                out = frame.copy()
            out.isetitem(position, fitted)
    return out


def _empty(meta: pd.DataFrame) -> pd.DataFrame:
    """An empty partition: ``meta``'s columns and dtypes, a fresh RangeIndex."""
    return meta.iloc[0:0].reset_index(drop=True)


def _run_partition(batches: Iterator[pd.DataFrame], fn: Callable[[pd.DataFrame, int], Any], meta: pd.DataFrame,
                   rows: bool) -> Iterator[pd.DataFrame]:
    """On an executor: the partition as one frame, ``fn(part, number)``, its result (or error) as one pickled row.

    ``rows``: ``fn`` keeps rows (``collect``); an empty frame is sent as None, a result that is not a
    frame is a TypeError raised on the driver.
    """
    from pyspark import TaskContext

    context = TaskContext.get()
    number = context.partitionId() if context is not None else 0
    failed = False
    try:
        frames = [batch for batch in batches if len(batch)]
        part = pd.concat(frames, ignore_index=True) if len(frames) > 1 else (
            frames[0].reset_index(drop=True) if frames else _empty(meta))
        part = conform(part, meta)
        part.attrs = copy.deepcopy(meta.attrs)  # the record, as Dask's partitions carry it
        result = fn(part, number)
        if rows:
            if not isinstance(result, pd.DataFrame):
                raise TypeError(f"the function passed to collect must return a pandas DataFrame (the rows it keeps), "
                                f"got {type(result).__name__}")
            result = result.reset_index(drop=True) if len(result) else None
        payload = _dumps(result)
    except Exception as exc:  # sent to the driver and raised there with its type and message
        failed, payload = True, _failure(exc)
    yield pd.DataFrame({"number": [number], "failed": [failed], "payload": [payload]})


def _tree(values: list[Any], combine: Callable[..., T], width: int = FAN_IN) -> T:
    """``combine`` applied in a tree of fan-in ``width`` (at least once, also to a single value)."""
    while True:
        values = [combine(*values[i:i + width]) for i in range(0, len(values), width)]
        if len(values) == 1:
            return values[0]


def _partition_count(sdf: Any) -> int:
    """How many partitions ``sdf`` has (no job: the plan only); Spark Connect, which has no RDDs, says shuffle partitions."""
    try:
        return int(sdf.rdd.getNumPartitions())
    except Exception:  # Spark Connect: DataFrame.rdd is not implemented
        return int(sdf.sparkSession.conf.get("spark.sql.shuffle.partitions"))


class SparkPartitions(Partitions):
    """A Spark DataFrame as pandas partitions: the Spark engine of :mod:`raglab.engines`.

    ``fn`` runs on the executors through ``mapInPandas``, once per Spark partition, on the whole
    partition as one pandas frame (index ``0..n-1``; columns and dtypes as ``meta``; ``attrs`` the
    record); its result comes back pickled. Empty partitions are called too (Spark runs a task for
    each partition), so ``combine`` sees every partition; a DataFrame with no partitions at all
    (Spark's plan for a filter that keeps nothing, say) is one empty partition, numbered 0, run on
    the driver.

    Parameters
    ----------
    sdf : pyspark.sql.DataFrame
        The table. Its ``TimestampType`` columns need the session time zone
        (``spark.sql.session.timeZone``) to be UTC: partitions then hold them as naive UTC
        ``datetime64``, as pandas gives them.
    attrs : dict, optional
        The pandas ``attrs`` of the table (default: :func:`raglab.spark.attrs_of`, the record
        :func:`raglab.spark.with_attrs` stored in the schema).

    Attributes
    ----------
    engine : str
        ``"Spark"``.
    prefix, to_pandas : str
        ``"sdf"`` (errors name ``sdf.rag.summary``) and ``"sdf.toPandas()"`` (how errors tell a user to
        bring the table, or a sample of it, to pandas).
    meta : pandas.DataFrame
        An empty frame with the table's columns, the pandas dtypes Arrow gives them (float64 for
        double, int64 for long, bool, datetime64 for timestamps, str for strings, object for
        arrays, maps, structs, dates and decimals) and ``attrs``. An integer column with nulls
        reaches a partition as float64 and a boolean one as objects (as ``toPandas()`` gives them).

    Examples
    --------
    >>> parts = SparkPartitions(spark.createDataFrame(pd.DataFrame({"x": [1, 2, 3]})).repartition(2))  # doctest: +SKIP
    >>> parts.reduce(lambda part, number: int(part["x"].sum()), lambda *sums: sum(sums))  # doctest: +SKIP
    6
    """

    #: ``prefix`` and ``to_pandas``: how errors name the accessor (``sdf.rag.summary``) and the way to pandas.
    engine, prefix, to_pandas = "Spark", "sdf", "sdf.toPandas()"

    def __init__(self, sdf: Any, attrs: dict[str, Any] | None = None, *, meta: pd.DataFrame | None = None) -> None:
        self.sdf = sdf
        self._check_time_zone()
        if meta is None:
            # limit(0) is planned as an empty relation (Spark's optimizer): no job reads the data, and the
            # dtypes are exactly those of the Arrow conversion the partitions go through.
            meta = sdf.limit(0).toPandas()
        meta = meta.iloc[0:0].copy()
        from pyspark.sql.types import TimestampType

        for field in sdf.schema.fields:  # an instant (not TimestampNTZType): tz-aware in UTC, as pandas holds it
            if isinstance(field.dataType, TimestampType) and pd.api.types.is_datetime64_dtype(meta[field.name].dtype):
                meta[field.name] = meta[field.name].dt.tz_localize("UTC")
        meta.attrs = copy.deepcopy(dict(attrs_of(sdf) if attrs is None else attrs))
        self.meta = meta

    def _check_time_zone(self) -> None:
        from pyspark.sql.types import TimestampType

        if not any(isinstance(field.dataType, TimestampType) for field in self.sdf.schema.fields):
            return
        zone = str(self.sdf.sparkSession.conf.get("spark.sql.session.timeZone"))
        if zone.strip().lower() not in UTC_ZONES:
            columns = [f.name for f in self.sdf.schema.fields if isinstance(f.dataType, TimestampType)]
            raise ValueError(
                f"raglab on Spark reads timestamps as UTC, but the session time zone is {zone!r} (the Spark "
                f"DataFrame's timestamp columns {columns} would arrive as {zone} wall-clock times); set "
                "spark.conf.set('spark.sql.session.timeZone', 'UTC'), or cast them to TimestampNTZType.")

    def __repr__(self) -> str:
        return f"SparkPartitions({list(self.meta.columns)})"

    def _run(self, fn: Callable[[pd.DataFrame, int], Any], rows: bool) -> list[Any]:
        """``fn`` on every partition, on the executors: the unpickled results in partition order."""
        self._check_time_zone()
        task = functools.partial(_run_partition, fn=fn, meta=self.meta, rows=rows)
        # Spark hands mapInPandas every Arrow batch of one partition in one call (batches of
        # spark.sql.execution.arrow.maxRecordsPerBatch rows), so the worker sees the whole partition.
        results = sorted(self.sdf.mapInPandas(task, RESULT_SCHEMA).collect(), key=lambda row: row["number"])
        if not results:  # a plan with no partitions: the empty table is one empty partition
            return [fn(self._empty_with_attrs(), 0)]
        for row in results:
            if row["failed"]:
                _raise_failure(bytes(row["payload"]), int(row["number"]), self.engine)
        return [pickle.loads(row["payload"]) for row in results]

    def _empty_with_attrs(self) -> pd.DataFrame:
        part = _empty(self.meta)
        part.attrs = copy.deepcopy(self.meta.attrs)
        return part

    def reduce(self, fn: Callable[[pd.DataFrame, int], T], combine: Callable[..., T]) -> T:
        """``combine`` of ``fn(part, number)`` over all partitions; ``fn`` runs on the executors.

        The results are collected to the driver and combined there in a tree of fan-in 8. Not
        ``rdd.treeReduce``: that needs the RDD API (absent on Spark Connect), a two-argument combine,
        and ships ``combine`` and the results through more executor tasks whose failures Spark wraps;
        the results are small statistics by contract, so the driver adds them at no cost.

        Parameters
        ----------
        fn : callable
            ``fn(part, number)``: a pandas frame (the whole partition) and its Spark partition id.
            A module-level function or a ``functools.partial`` of one pickles best (Spark uses cloudpickle).
        combine : callable
            Associative and commutative, any number of arguments.

        Returns
        -------
        object
            The combined result. An exception ``fn`` raised on an executor is raised here, with its
            type and message (the lowest partition number's if several failed).

        Examples
        --------
        >>> parts = SparkPartitions(spark.range(10).repartition(3))  # doctest: +SKIP
        >>> sorted(parts.reduce(lambda part, number: [number], lambda *lists: sum(lists, [])))  # doctest: +SKIP
        [0, 1, 2]
        """
        return _tree(self._run(fn, rows=False), combine)

    def collect(self, fn: Callable[[pd.DataFrame, int], pd.DataFrame]) -> pd.DataFrame:
        """The rows ``fn(part, number)`` keeps in every partition, as one pandas frame on the driver.

        Each partition's kept rows travel pickled (so pandas dtypes come back exactly); they are
        concatenated in partition order, the index reset, and each column is given ``meta``'s dtype
        where that loses nothing (an int column that had nulls elsewhere is int64 again).

        Parameters
        ----------
        fn : callable
            ``fn(part, number)`` returning a frame with the partition's columns (e.g. ``part[mask]``).

        Returns
        -------
        pandas.DataFrame
            The kept rows; an empty frame with ``meta``'s columns when none are kept.

        Examples
        --------
        >>> parts = SparkPartitions(spark.range(10).repartition(3))  # doctest: +SKIP
        >>> parts.collect(lambda part, number: part[part["id"] % 4 == 0]).sort_values("id")["id"].tolist()  # doctest: +SKIP
        [0, 4, 8]
        """
        kept = [frame for frame in self._run(fn, rows=True) if frame is not None and len(frame)]
        if not kept:
            return _empty(self.meta)
        out = pd.concat(kept, ignore_index=True) if len(kept) > 1 else kept[0].reset_index(drop=True)
        out = conform(out, self.meta)
        out.attrs = {}
        return out

    def paired(self, other: Partitions, on: str, columns: Sequence[str], other_columns: Sequence[str],
               other_on: str | None = None) -> SparkPartitions:
        """Both tables' rows in one Spark DataFrame, repartitioned by the question id as text.

        The baseline's rows hold ``columns``, ``KEY`` (``on`` cast to a Spark string: an int
        ``7`` is ``"7"``, as pandas' ``astype(str)`` writes it; a double ``7.0`` is ``"7.0"`` on both,
        but a boolean is ``"true"`` in Spark) and ``SIDE`` 0; the candidate's hold ``other_columns``
        renamed with the suffix ``CAND``, ``KEY`` (from ``other_on``) and ``SIDE`` 1. The union is
        repartitioned by ``KEY`` into as many partitions as the larger input has. Each row has missing
        values in the other side's columns, so the meta holds them as ``pandas.concat`` of the two
        sides would: int columns as float64, bool columns as objects (the same in every partition).

        Parameters
        ----------
        other : SparkPartitions
            The candidate table.
        on : str
            The baseline's question-id column.
        columns, other_columns : list of str
            The columns to keep from each side.
        other_on : str, optional
            The candidate's question-id column (default ``on``).

        Returns
        -------
        SparkPartitions
            The paired table, with the baseline's ``attrs``.

        Examples
        --------
        >>> base = SparkPartitions(spark.createDataFrame(pd.DataFrame({"qid": [1, 2], "hit": [1, 0]})))  # doctest: +SKIP
        >>> cand = SparkPartitions(spark.createDataFrame(pd.DataFrame({"qid": ["1", "2"], "hit": [1, 1]})))  # doctest: +SKIP
        >>> pairs = base.paired(cand, "qid", ["hit"], ["hit"])  # doctest: +SKIP
        >>> pairs.reduce(lambda part, n: int(part.groupby(KEY).size().eq(2).sum()), lambda *s: sum(s))  # doctest: +SKIP
        2
        """
        from pyspark.sql import functions as F

        if not isinstance(other, SparkPartitions):
            raise TypeError(f"sdf.rag: both runs must be Spark DataFrames, got a {getattr(other, 'engine', type(other).__name__)} one")
        other_on = on if other_on is None else other_on
        base_columns = list(dict.fromkeys(columns))
        cand_columns = list(dict.fromkeys(other_columns))
        for table, names, side in ((self, [on, *base_columns], "baseline"), (other, [other_on, *cand_columns],
                                                                              "candidate")):
            absent = [name for name in names if name not in table.meta.columns]
            if absent:
                raise KeyError(f"paired: the {side} Spark DataFrame has no column(s) {absent}; it has "
                               f"{list(table.meta.columns)}")
        base = self.sdf.select(
            *[column(name) for name in base_columns],
            column(on).cast("string").alias(KEY), F.lit(0).cast("long").alias(SIDE))
        cand = other.sdf.select(
            *[column(name).alias(name + CAND) for name in cand_columns],
            column(other_on).cast("string").alias(KEY), F.lit(1).cast("long").alias(SIDE))
        count = max(_partition_count(self.sdf), _partition_count(other.sdf))
        union = base.unionByName(cand, allowMissingColumns=True).repartition(count, KEY)
        meta = union.limit(0).toPandas()  # as SparkPartitions builds it, then the missing values' widening
        widened = {name: ("float64" if dtype.kind in "iu" else object) for name, dtype in meta.dtypes.items()
                   if name not in (KEY, SIDE) and isinstance(dtype, np.dtype) and dtype.kind in "iub"}
        return SparkPartitions(union, attrs=self.meta.attrs, meta=meta.astype(widened))
