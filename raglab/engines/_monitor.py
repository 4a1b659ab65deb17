"""Production logs on any engine: ``over_time`` and ``monitor`` from per-partition cell sums.

Each partition is read by the pandas code (:func:`raglab.monitor._over_time._prepare`) into its
per-period cell sums; the sums of all partitions are combined exactly (``combine_sums``) and the
pandas code finishes the tables, so the numbers do not depend on how rows are partitioned or ordered.
Only the failing requests of a post-mortem come back as rows.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from functools import cached_property, partial
from typing import Any

import numpy as np
import pandas as pd

from raglab._columns import _by_columns, _missing
from raglab._partition import _exact, _exact_sum
from raglab._validation import warn
from raglab.engines._frames import Partitions, in_partition
from raglab.monitor._monitor import Monitor, check_monitor, watch
from raglab.monitor._over_time import CellView, _prepare, combine_sums, modal_judges, periods

__all__ = ["monitor", "over_time"]

#: the warning each partition would give about a metric with no design: said once, for the whole log
_SELF_SELECTED = "with no sampling design recorded for them"


def _cells(part: pd.DataFrame, number: int, names: list[str], time: str, freq: str, by: str | None,
           predictor: Any, ci: float, fill: dict[str, float], judge: str | None, caller_name: str,
           engine: str) -> tuple[pd.DataFrame, pd.Series | None, list]:
    """One partition's cell sums, its (period, judge) counts and the warnings it raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            view = _prepare(part, names, time=time, freq=freq, by=by, predictor=predictor, ci=ci,
                            caller_name=caller_name, fill=fill, check_population=False)
        except (ValueError, TypeError, KeyError) as error:  # RowTableError and MissingColumnError included
            raise in_partition(error, number, engine) from None
        daily = view.daily
        judges = None
        if judge is not None:
            frame = pd.DataFrame({"p": view.period.to_numpy(), "j": part[judge].astype(str).to_numpy()})
            judges = frame.groupby(["p", "j"]).size()
    return daily, judges, [(w.category, str(w.message)) for w in caught if _SELF_SELECTED not in str(w.message)]


def _add_cells(*parts: tuple[pd.DataFrame, pd.Series | None, list]) -> tuple[pd.DataFrame, pd.Series | None, list]:
    judges = [p[1] for p in parts if p[1] is not None]
    counts = pd.concat(judges).groupby(level=[0, 1]).sum() if judges else None
    return combine_sums([p[0] for p in parts]), counts, list(dict.fromkeys(m for p in parts for m in p[2]))


def _column_sums(part: pd.DataFrame, number: int, columns: list[str]) -> list[tuple[int, tuple[float, ...]]]:
    """Per column: how many scores and their exact sum (for means that do not depend on the partitioning)."""
    out = []
    for column in columns:
        values = pd.to_numeric(part[column], errors="coerce").to_numpy(dtype=float)
        values = values[np.isfinite(values)]
        out.append((int(values.size), _exact_sum(values)))
    return out


def _add_column_sums(*parts: list[tuple[int, tuple[float, ...]]]) -> list[tuple[int, tuple[float, ...]]]:
    return [(sum(p[j][0] for p in parts), _exact([t for p in parts for t in p[j][1]])) for j in range(len(parts[0]))]


class PartitionsLogView(CellView):
    """A partitioned log read partition by partition into per-period cells (the pandas view's interface)."""

    def __init__(self, logs: Partitions, metrics: str | Sequence[str], *, time: str, freq: str, by: str | None,
                 predictor: str | Mapping[str, str] | None, ci: float, caller_name: str,
                 judge: str | None = None) -> None:
        self.logs, self.time, self.freq, self.by_column = logs, time, freq, by
        self.predictor, self.ci, self.caller_name, self.judge = predictor, ci, caller_name, judge
        meta = logs.meta
        columns = [predictor] if isinstance(predictor, str) else list((predictor or {}).values())
        for column in columns:
            if column not in meta.columns:
                raise _missing(meta, column, caller_name, "the predictor (a cheap score on every row)")
        sums = logs.reduce(partial(_column_sums, columns=columns), _add_column_sums) if columns else []
        self.fill = {c: (math.fsum(terms) / n if n else float("nan")) for c, (n, terms) in zip(columns, sums)}
        for column, value in self.fill.items():
            if not np.isfinite(value):
                raise ValueError(f"{caller_name}: the predictor {column!r} has no score on any row")
        # the spec from the empty meta frame: column checks, the recorded design, which metrics are judged
        self.spec = _prepare(meta, metrics, time=time, freq=freq, by=by, predictor=predictor, ci=ci,
                             caller_name=caller_name, fill=self.fill, check_population=False).spec

    @cached_property
    def _read(self) -> tuple[pd.DataFrame, pd.Series | None]:
        daily, judges, caught = self.logs.reduce(
            partial(_cells, names=self.names, time=self.time, freq=self.freq, by=self.by_column,
                    predictor=self.predictor, ci=self.ci, fill=self.fill, judge=self.judge,
                    caller_name=self.caller_name, engine=self.logs.engine), _add_cells)
        seen: set[str] = set()
        for category, message in caught:
            if message not in seen:
                seen.add(message)
                warn(message, category)
        self._warn_self_selected(daily)
        return daily, judges

    def _warn_self_selected(self, daily: pd.DataFrame) -> None:
        overall = daily[daily["slice"] == "overall"]
        shares = []
        for metric in self.names:
            if metric in self.spec.subset:
                continue
            n, missing = overall[f"{metric}|n"].sum(), overall[f"{metric}|missing"].sum()
            if missing > 0 and n > 0:
                shares.append(f"{metric!r} on {n / (n + missing):.1%}")
        if shares:
            warn(f"{self.caller_name}: {', '.join(shares)} of requests, {_SELF_SELECTED}: each rate describes the "
                 "requests that have a value, not all requests (who answers, e.g. user feedback, is not random: "
                 "unhappy users answer more often)", UserWarning)

    @property
    def daily(self) -> pd.DataFrame:
        return self._read[0]

    def table(self, sums: pd.DataFrame | None = None, *, level: float | None = None) -> pd.DataFrame:
        table = self.spec.finish(self.daily if sums is None else sums, self.daily, level=level)
        meta = dict(self.logs.meta.attrs)
        meta.setdefault("raglab", {})
        table.attrs = {**meta, "raglab": {**meta["raglab"], **table.attrs["raglab"]}}
        return table

    def judges(self, column: str) -> pd.Series:
        counts = self._read[1]
        if counts is None:
            raise ValueError(f"{self.caller_name}: the judge column {column!r} was not read")
        return modal_judges(counts)

    def failing(self, metric: str, slice_: str, since: pd.Timestamp) -> pd.DataFrame:
        time, freq, by = self.time, self.freq, self.by

        found = self.logs.collect(partial(_failing, time=time, freq=freq, metric=metric,
                                          by=by[0] if slice_ != "overall" and by else None, slice_=slice_,
                                          since=since))
        return found.sort_values(time, kind="stable")


def _failing(part: pd.DataFrame, number: int, time: str, freq: str, metric: str, by: str | None, slice_: str,
             since: pd.Timestamp) -> pd.DataFrame:
    """A partition's judged requests that failed ``metric`` from ``since`` on (in slice ``slice_`` of ``by``)."""
    if part.empty:
        return part
    period = periods(part[time].reset_index(drop=True), freq, column=time)
    values = pd.to_numeric(part[metric], errors="coerce").to_numpy(dtype=float)
    mask = (period >= since).to_numpy() & (values < 0.5)
    if by is not None:
        mask &= (part[by].astype(str) == slice_).to_numpy()
    return part.loc[mask]


def over_time(
    logs: Partitions,
    metrics: str | Sequence[str],
    *,
    time: str = "timestamp",
    freq: str = "D",
    by: str | None = None,
    predictor: str | Mapping[str, str] | None = None,
    ci: float = 0.95,
) -> pd.DataFrame:
    """:func:`raglab.monitor.over_time` on a partitioned log: the same pandas table.

    Each partition reduces to its per-period cell sums; they are added and finished by the pandas
    code, so the table equals the pandas one (to rounding) however the rows are partitioned.

    Examples
    --------
    >>> import dask.dataframe as dd
    >>> import raglab
    >>> from raglab.dask import DaskPartitions
    >>> from raglab.engines import over_time
    >>> from raglab.monitor import simulate_log
    >>> log = simulate_log(20_000, days=5, seed=0)
    >>> table = over_time(DaskPartitions(dd.from_pandas(log, npartitions=4)), "faithfulness", predictor="lexical_support")
    >>> same = log.rag.over_time("faithfulness", predictor="lexical_support")
    >>> bool(abs(table["high"] - same["high"]).max() < 1e-12)
    True
    """
    caller_name = logs.caller("over_time")
    if by is not None and len(_by_columns(by)) != 1:
        raise TypeError(f"{caller_name}: by must be one slice column on {logs.engine}, got {by!r}")
    by = by if isinstance(by, str) or by is None else _by_columns(by)[0]
    view = PartitionsLogView(logs, metrics, time=time, freq=freq, by=by, predictor=predictor, ci=ci, caller_name=caller_name)
    return view.table()


def monitor(
    logs: Partitions,
    metrics: str | Sequence[str],
    *,
    reference: Any,
    time: str = "timestamp",
    freq: str = "D",
    by: str | None = None,
    predictor: str | Mapping[str, str] | None = None,
    drop: float = 0.03,
    alpha: float = 0.05,
    guarantee: str = "horizon",
    horizon: int | None = None,
    arl: float | None = None,
    judge: str | None = None,
) -> Monitor:
    """:func:`raglab.monitor.monitor` on a partitioned log: the same alarms, guarantee and tables.

    One pass reads every partition into per-period cells (and each period's judges); reference
    windows and the rates since each alarm's start regroup those cells; a post-mortem reads the log
    again for other slice columns and brings back only the failing requests.

    Examples
    --------
    >>> import dask.dataframe as dd
    >>> from raglab.dask import DaskPartitions
    >>> from raglab.engines import monitor
    >>> from raglab.monitor import simulate_log
    >>> log = simulate_log(100_000, days=30, drop_day=15, seed=0)
    >>> found = monitor(DaskPartitions(dd.from_pandas(log, npartitions=4)), "faithfulness", reference=0.88, by="topic",
    ...                 predictor="lexical_support", guarantee="arl", arl=365)
    >>> found.guarantee.startswith("average run length")
    True
    """
    caller_name = logs.caller("monitor")
    judge_column = check_monitor(logs.meta, by=by, drop=drop, alpha=alpha, guarantee=guarantee, judge=judge,
                                 caller_name=caller_name)

    def make_view(column: str | None) -> PartitionsLogView:
        return PartitionsLogView(logs, metrics, time=time, freq=freq, by=column, predictor=predictor, ci=1 - alpha,
                           caller_name=caller_name, judge=judge_column)

    return watch(make_view(by), make_view, reference=reference, drop=drop, alpha=alpha, guarantee=guarantee,
                 horizon=horizon, arl=arl, judge=judge_column, caller_name=caller_name)
