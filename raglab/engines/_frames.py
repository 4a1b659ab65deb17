"""What the engine-neutral functions need from a table cut into partitions, on any engine.

``raglab.dask`` and ``raglab.spark`` each wrap their DataFrame in a :class:`Partitions`; the
functions of :mod:`raglab.engines` (summary, compare, gate, over_time, monitor) are written once
against this interface. Workers run plain pandas code on their partition and return small
statistics; only those (and, for a post-mortem, a few failing rows) come back to the driver.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TypeVar

import pandas as pd

__all__ = ["CAND", "KEY", "SIDE", "Partitions", "in_partition"]

T = TypeVar("T")

#: Columns of a paired table (see :meth:`Partitions.paired`): the question id as text, 0 (baseline) or
#: 1 (candidate), and the suffix of the candidate's columns.
KEY, SIDE, CAND = "__raglab_key", "__raglab_side", "__raglab_cand__"


def in_partition(exc: Exception, number: int, engine: str) -> Exception:
    """The same error, its message led by the partition it happened in (attributes such as ``rows`` kept)."""
    if exc.args and isinstance(exc.args[0], str):
        exc.args = (f"partition {number} of the {engine} DataFrame: {exc.args[0]}", *exc.args[1:])
    return exc


class Partitions(ABC):
    """A table on an engine, seen as pandas partitions.

    Attributes
    ----------
    engine : str
        ``"Dask"`` or ``"Spark"``: named in errors ("partition 3 of the Spark DataFrame: ...").
    prefix : str
        The accessor's variable in messages: ``"ddf"`` (``ddf.rag.summary``) or ``"sdf"``.
    to_pandas : str
        How a user brings the table (or a sample of it) to pandas, said in errors: ``"ddf.compute()"``.
    meta : pandas.DataFrame
        An empty frame with the table's columns, their pandas dtypes and ``attrs`` (the raglab record:
        an eval set's clusters, a log's sampling design).
    """

    engine: str
    prefix: str
    to_pandas: str
    meta: pd.DataFrame

    def caller(self, method: str) -> str:
        """The name errors give a method: ``ddf.rag.summary``, or the name set by ``called_as``."""
        from raglab._validation import caller

        return caller(f"{self.prefix}.rag.{method}")

    @abstractmethod
    def reduce(self, fn: Callable[[pd.DataFrame, int], T], combine: Callable[..., T]) -> T:
        """``combine(*[fn(part, number) for each partition])``: ``fn`` runs where the partition lies
        (``number`` counts from 0 in the engine's partition order) and ``combine`` (associative and
        commutative, any number of arguments) may be applied in a tree, in any grouping."""

    @abstractmethod
    def collect(self, fn: Callable[[pd.DataFrame, int], pd.DataFrame]) -> pd.DataFrame:
        """The rows ``fn(part, number)`` keeps (a frame with the partition's columns), brought to the driver
        and concatenated (index reset)."""

    @abstractmethod
    def paired(self, other: Partitions, on: str, columns: Sequence[str], other_columns: Sequence[str],
               other_on: str | None = None) -> Partitions:
        """Both tables' rows in one, partitioned so that rows with the same question id share a partition.

        The result's partitions have the columns ``KEY`` (the id: its text, so ``7`` and ``"7"`` meet, or
        the integer itself when both runs' ids are integers; the id columns themselves are not carried,
        ``KEY`` stands for them, and ``str`` of it is the id's text), ``SIDE`` (0 for this table's rows,
        1 for ``other``'s), this table's ``columns`` under their names and ``other``'s ``other_columns``
        (``other_on``, default ``on``, names its id) under their names
        plus ``CAND``; a row has missing values in the other side's columns.
        """

