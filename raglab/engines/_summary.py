"""``summary`` on any engine: the summary table of a partitioned table from per-partition statistics.

Each partition becomes ``raglab._partition.Stats`` (a few numbers per metric and slice) on its
worker; the statistics are added in a tree (exactly: the result does not depend on the partitioning)
and ``raglab._partition.summary_table`` makes the table :func:`raglab.runs.summary` makes from the rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import pandas as pd

from raglab import _partition
from raglab._columns import _by_columns, _metric_names, _missing, _resolve_units, _score_frame, _slice_labels
from raglab._errors import RowTableError
from raglab._meta import get_meta, set_meta
from raglab._options import Resampling
from raglab._results import jsonable
from raglab._rowtable import Roles, _row_labels
from raglab._validation import check_level
from raglab.engines._frames import Partitions, in_partition
from raglab.runs import _INTERVAL, _options
from raglab.stats.estimators import SUMMARY_METHODS
from raglab.stats.tables import _check_unit_range

__all__ = ["summary"]

_RAW_ROWS = ("percentile", "bca", "betting")  # methods that need the rows themselves, not their sums


def _statistics(part: pd.DataFrame, number: int, names: list[str], by: list[str], question_id: str | None,
                caller_name: str, engine: str) -> _partition.Stats:
    """One partition's statistics (run on a worker); a bad cell names the partition and its row."""
    try:
        scores = _score_frame(part, names, caller_name, id_column=question_id)
        values = scores.to_numpy(dtype=float).reshape(len(part), len(names))

        def locate(positions: Any) -> tuple[list[str], list[int]]:
            rows = [int(p) for p in positions]
            return [_row_labels(part, [r], question_id) for r in rows], rows

        _check_unit_range(names, values, f"partition {number}", caller_name, locate)
        labels = _slice_labels(part, by, caller_name, question_id) if by else None
    except (RowTableError, TypeError) as exc:
        raise in_partition(exc, number, engine) from None
    return _partition.partition_stats(values, names, labels)


def summary(
    frame: Partitions,
    metrics: str | Sequence[str] | None = None,
    *,
    by: str | Sequence[str] | None = None,
    units: str | bool | None = None,
    bounds: Mapping[str, tuple[float, float]] | None = None,
    predictor: str | Mapping[str, str] | None = None,
    roles: Roles | Mapping[str, str | None] | None = None,
    resampling: Resampling | None = None,
    **options: Any,
) -> pd.DataFrame:
    """Mean and interval per metric and slice of a partitioned table: the table :func:`raglab.runs.summary` makes.

    Workers reduce their partition to counts, exact sums and sums of squares, min and max per metric
    and slice; only those are combined, so the table is the same whatever the partitioning or row
    order (to 1e-12 against pandas; bit for bit between partitionings).

    Parameters
    ----------
    frame : Partitions
        One row per question, with score columns, on an engine (``raglab.dask`` and ``raglab.spark``
        wrap their DataFrames).
    metrics : str or list of str, optional
        Score columns (default: the metric columns, chosen as :func:`raglab.runs.summary` does).
    by : str or list of str, optional
        Slice column(s): an ``overall`` row plus one row per slice.
    units : str or False, optional
        As on pandas, the eval set's recorded cluster column is used by default; clusters need the
        cluster bootstrap, not available on Dask and Spark yet: pass ``units=False`` to treat questions as independent.
    bounds : dict, optional
        Not available on Dask and Spark yet (the betting interval needs the rows).
    predictor : str or dict, optional
        Not available on Dask and Spark yet (a judged sample's prediction-powered interval).
    roles : Roles or dict, optional
        Column roles: the ``question_id`` column is left out of the default metrics.
    resampling : Resampling, optional
        ``ci`` and ``method`` as one :class:`raglab.Resampling` (``n_resamples`` and ``seed`` are
        not used: no interval here resamples).
    **options
        The same settings as keywords (they win): ``ci``; ``method`` in ``{"auto", "wilson", "exact",
        "normal", "t"}``, the intervals that partition statistics give (``"auto"`` is Wilson for
        pass/fail metrics, Wilson at the effective n for other scores in [0, 1], t otherwise; the
        bootstrap and ``"betting"`` need the rows and are not available on Dask and Spark yet); and column
        roles, e.g. ``question_id="qid"``.

    Returns
    -------
    pandas.DataFrame
        ``metric, slice, n, n_excluded, se, method, level, mean, low, high`` as
        :func:`raglab.runs.summary`; ``attrs["raglab"]["summary"]`` records the slices and metrics.

    Examples
    --------
    >>> import dask
    >>> import dask.dataframe as dd
    >>> import pandas as pd
    >>> from raglab.dask import DaskPartitions
    >>> from raglab.engines import summary
    >>> rows = pd.DataFrame({"question_id": ["q1", "q2", "q3", "q4"], "qtype": ["a", "a", "b", "b"],
    ...                      "hit@5": [1, 0, 1, 1]})
    >>> with dask.config.set(scheduler="sync"):
    ...     table = summary(DaskPartitions(dd.from_pandas(rows, npartitions=2)), ["hit@5"], by="qtype")
    >>> table[["slice", "n", "mean", "method"]].to_string(index=False)
    '  slice  n  mean method\\noverall  4  0.75 wilson\\n      a  2  0.50 wilson\\n      b  2  1.00 wilson'
    """
    meta, engine = frame.meta, frame.engine
    _CALLER = frame.caller("summary")
    works = f"the methods that work on {engine} are {list(_partition.ANALYTIC_METHODS)}"
    cols, res = _options(meta, roles, resampling, options, _INTERVAL, _CALLER)
    method = res.method
    if method in _RAW_ROWS:
        raise NotImplementedError(
            f"{_CALLER}: method={method!r} needs the rows themselves (resampling or betting on each score), which "
            f"raglab does not yet do on {engine}; {works}. Or bring a sample to pandas ({frame.to_pandas}) and "
            "use rows.rag.summary.")
    if method not in SUMMARY_METHODS:
        raise ValueError(f"{_CALLER}: method must be one of {list(_partition.ANALYTIC_METHODS)} on {engine}, "
                         f"got {method!r}")
    if bounds:
        raise NotImplementedError(
            f"{_CALLER}: bounds= (the betting interval) needs the rows, which raglab does not yet do on {engine}; "
            f"{works}.")
    if predictor is not None:
        raise NotImplementedError(
            f"{_CALLER}: predictor= (a prediction-powered interval on a judged sample) is not computed on {engine} "
            f"yet; {works}.")
    cluster = _resolve_units(meta, units, _CALLER)  # the eval set's cluster column by default, as on pandas
    if cluster is not None:
        raise NotImplementedError(
            f"{_CALLER}: units={cluster!r} (a cluster bootstrap{'' if units else ', the eval set records it'}) needs "
            f"the rows, which raglab does not yet do on {engine}; {works}, with units=False (questions treated as "
            "independent).")
    level = check_level(res.ci)
    question_id = cols.column("question_id")
    by_columns = _by_columns(by)
    for column in by_columns:
        if column not in meta.columns:
            raise _missing(meta, column, _CALLER, "a slice column")
    exclude = {question_id, *by_columns, "selected", "inclusion_probability"}
    names = _metric_names(metrics, [meta], exclude, _CALLER)
    design = (get_meta(meta).get("sampling") or {}).get("judged")
    judged = [m for m in names if design is not None and m in (design.get("metrics") or names)]
    if judged:  # the tripwires of a judged log are summarised; the judged metrics need the design
        raise NotImplementedError(
            f"{_CALLER}: {judged} come from a judged sample (attrs['raglab']['sampling']['judged']), whose "
            f"design-weighted or prediction-powered summary raglab does not yet compute on {engine} "
            f"({frame.caller('over_time')} does); {works}, on metrics scored on every row.")
    _score_frame(meta, names, _CALLER, id_column=None)  # a missing or non-numeric column, before any work
    stats = frame.reduce(partial(_statistics, names=names, by=by_columns, question_id=question_id,
                                 caller_name=_CALLER, engine=frame.engine), _partition.combine)
    slice_dtype = meta[by_columns[0]].dtype if len(by_columns) == 1 else None
    table = _partition.summary_table(stats, method, level, slice_dtype)
    record = get_meta(meta)
    record["summary"] = {"by": by_columns or None, "units": None, "metrics": names}
    set_meta(table, jsonable(record))
    return table
