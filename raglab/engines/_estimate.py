"""``estimate`` on any engine: prediction-powered estimates of a human-labelled metric on a partitioned table.

Labels are few and judge scores many. Each partition sends back its labelled rows (only the columns
the estimators need: label, judge score, inclusion probability, slice, cluster) and, for its
unlabelled judged rows, sums per metric, slice and cluster (rows, sum and sum of squares of the judge's
score, scores outside [0, 1]); the unlabelled rows never leave their worker. The driver adds the sums
(per cluster: one entry per conversation) and finishes every cell with the code
:func:`raglab.runs.estimate` uses (``raglab.stats.ppi._table_of_cells``), so the table is the one
pandas makes from the concatenated rows, whatever the partitioning or row order (to about 1e-13).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from raglab._columns import _by_columns, _missing, _resolve_units, _score_frame, _slice_labels, _unit_labels
from raglab._errors import RowTableError
from raglab._meta import get_meta, set_meta
from raglab._results import jsonable
from raglab._rowtable import Roles, split_options, table_roles
from raglab._validation import check_level
from raglab.engines._frames import Partitions, in_partition
from raglab.runs import _human_columns, _label_design
from raglab.stats.ppi import _check_lam, _merge_cells, _metric_cells, _MetricCells, _table_of_cells

__all__ = ["estimate"]


class _Sized:
    """The table as :func:`raglab.runs._label_design` sees it on the driver: its columns, ``attrs`` and length.

    With no labelled row to check (the partitions checked theirs), the design's warnings (no recorded
    draw, a population of another size, no probability column) come out as on pandas.
    """

    def __init__(self, meta: pd.DataFrame, rows: int) -> None:
        self.attrs, self.columns, self._meta, self._rows = meta.attrs, meta.columns, meta, rows

    def __len__(self) -> int:
        return self._rows

    def __getitem__(self, column: str) -> pd.Series:
        return self._meta[column]


def _partition_cells(part: pd.DataFrame, number: int, *, pairs: dict[str, str], by: list[str], units: str | None,
                     question_id: str | None, attrs: dict[str, Any], caller_name: str,
                     engine: str) -> tuple[int, list[_MetricCells]]:
    """One partition's rows and, per metric, its labelled rows and unlabelled sums (run on a worker).

    The row checks of :func:`raglab.runs.estimate` happen here (numbers in the score and label columns,
    labels on rows the recorded draw selected, their inclusion probabilities, one cluster per row), each
    error led by the partition.
    """
    try:
        judged = _score_frame(part, list(pairs), caller_name, id_column=None)
        label_scores = _score_frame(part, list(dict.fromkeys(pairs.values())), caller_name, id_column=None)
        labels = pd.DataFrame({metric: label_scores[column] for metric, column in pairs.items()})
        framed = part.copy(deep=False)
        framed.attrs = attrs  # an engine's partitions need not carry the table's attrs (the labelled design)
        with warnings.catch_warnings():  # the design's warnings are the table's, given once on the driver
            warnings.simplefilter("ignore")
            prob, _ = _label_design(framed, labels.notna().any(axis=1).to_numpy(), caller_name, question_id)
        slices = np.asarray(pd.Series(_slice_labels(part, by, caller_name, question_id)).astype(str)) if by else None
        clusters = np.asarray(pd.Series(_unit_labels(part, units, caller_name, question_id)).astype(str)) if units else None
    except (RowTableError, TypeError) as exc:
        raise in_partition(exc, number, engine) from None
    cells = [_metric_cells(metric, judged[metric].to_numpy(dtype=float), labels[metric].to_numpy(dtype=float), prob,
                           slices, clusters) for metric in pairs]
    return len(part), cells


def _combine(*parts: tuple[int, list[_MetricCells]]) -> tuple[int, list[_MetricCells]]:
    """Partitions' cells as one: rows counted, labelled rows concatenated, unlabelled sums added."""
    return sum(p[0] for p in parts), [_merge_cells(*cells) for cells in zip(*(p[1] for p in parts))]


def estimate(
    frame: Partitions,
    metrics: str | Sequence[str] | None = None,
    *,
    human: str | Mapping[str, str],
    by: str | Sequence[str] | None = None,
    units: str | bool | None = None,
    lam: float | None = None,
    ci: float = 0.95,
    roles: Roles | Mapping[str, str | None] | None = None,
    **options: Any,
) -> pd.DataFrame:
    """Prediction-powered estimate of a human-labelled metric on a partitioned table: :func:`raglab.runs.estimate`.

    A judge's score on every row is debiased by human labels on a random few (PPI++, with the human-only
    and judge-only intervals beside it), as on pandas. Workers return their labelled rows (a few
    columns) and sums over their unlabelled judged rows per metric, slice and cluster; the driver adds
    them and finishes each cell with the pandas code, so the table (columns, dtypes, values, warnings,
    ``attrs``) is the one :func:`raglab.runs.estimate` makes from the rows, whatever the partitioning.
    Every design of :func:`raglab.sampling.draw` works (uniform, stratified, Neyman, active), with slices
    and clusters.

    Parameters
    ----------
    frame : Partitions
        One row per question (or turn), with the judge's score and human label columns, on an engine
        (``raglab.dask`` and ``raglab.spark`` wrap their DataFrames).
    metrics : str or list of str, optional
        The judge's score columns (default: the keys of ``human`` when it is a mapping).
    human : str or dict
        The human label column for the one metric, or ``{metric: label column}`` (NaN: not labelled).
    by : str or list of str, optional
        Slice column(s): one row per slice, and the ``overall`` row is stratified over them.
    units : str or False, optional
        A cluster column (the conversation): cluster-robust variances; a cluster may span partitions. By
        default the eval set's recorded cluster column, if any.
    lam : float, optional
        The judge's weight; ``None`` tunes it (PPI++), ``1`` is plain PPI, ``0`` human only.
    ci : float
        Confidence level.
    roles : Roles or dict, optional
        Column roles (``question_id`` names rows in messages).
    **options
        Column roles as keywords, e.g. ``question_id="qid"``.

    Returns
    -------
    pandas.DataFrame
        ``metric, slice, n_labeled, n_judged, lam, effective_labels, below_min_labels, method, level,
        human_only, human_only_low, human_only_high, judge_only, judge_only_low, judge_only_high,
        estimate, low, high``, as :func:`raglab.runs.estimate`; ``attrs["raglab"]["estimate"]`` records
        the label columns, slices, cluster column and the labelled design.

    Examples
    --------
    >>> import dask
    >>> import dask.dataframe as dd
    >>> import numpy as np, pandas as pd
    >>> from raglab.dask import DaskPartitions
    >>> from raglab.engines import estimate
    >>> from raglab.sampling import draw
    >>> rng = np.random.default_rng(0)
    >>> truth = (rng.random(2000) < 0.7).astype(float)
    >>> rows = draw(pd.DataFrame({"question_id": [f"q{i}" for i in range(2000)],
    ...                           "faithfulness": np.where(rng.random(2000) < 0.85, truth, 1 - truth)}), 200)
    >>> rows["human"] = np.where(rows["selected"], truth, np.nan)
    >>> with dask.config.set(scheduler="sync"):
    ...     table = estimate(DaskPartitions(dd.from_pandas(rows, npartitions=4)), "faithfulness", human="human")
    >>> table[["metric", "slice", "n_labeled", "n_judged"]].to_string(index=False)
    '      metric   slice  n_labeled  n_judged\\nfaithfulness overall        200      2000'
    """
    meta, engine = frame.meta, frame.engine
    caller_name = frame.caller("estimate")
    columns, _ = split_options(options, (), caller=caller_name)
    cols = table_roles(meta, roles, columns, caller=caller_name)
    question_id = cols.column("question_id")
    pairs = _human_columns(metrics, human, caller_name)
    cluster = _resolve_units(meta, units, caller_name)
    by_columns = _by_columns(by)
    for column in [*by_columns, *([cluster] if cluster else [])]:
        if column not in meta.columns:
            raise _missing(meta, column, caller_name, "a slice or cluster column")
    # an absent or non-numeric column is refused before any work, as on pandas
    _score_frame(meta, list(pairs), caller_name, id_column=None)
    _score_frame(meta, list(dict.fromkeys(pairs.values())), caller_name, id_column=None)
    level = check_level(ci)
    lam = _check_lam(lam)
    rows, cells = frame.reduce(
        partial(_partition_cells, pairs=pairs, by=by_columns, units=cluster, question_id=question_id,
                attrs=dict(meta.attrs), caller_name=caller_name, engine=engine),
        _combine)
    _, design = _label_design(_Sized(meta, rows), np.zeros(0, dtype=bool), caller_name, question_id)
    table = _table_of_cells(cells, sliced=bool(by_columns), stratify=True, lam=lam, level=level)
    record = get_meta(meta)
    record["estimate"] = {"human": pairs, "by": by_columns or None, "units": cluster, "design": design}
    set_meta(table, jsonable(record))
    return table
