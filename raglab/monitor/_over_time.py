"""Rates per period and slice of a production log, from sums over rows.

Every number here is a function of per-(period, slice) sums, so a table cut into partitions gives the
same result once their sums are added. Two kinds of metric:

* **scored on every request** (tripwires such as ``citation_valid``): the mean of the period's
  requests with an interval (Wilson for pass/fail, Wilson at the effective n for other scores in
  [0, 1], t otherwise), as :func:`raglab.runs.summary` gives for one period;
* **judged on a random sample** (NaN off the sample, the design recorded in
  ``attrs["raglab"]["sampling"]["judged"]`` with each row's inclusion probability): the
  design-weighted estimate for *all* the period's requests, never the plain mean of the judged ones;
  with ``predictor`` (a cheap score on every request, e.g. ``lexical_support``) a prediction-powered
  one (:func:`raglab.stats.ppi_mean`: judge verdicts as labels, the predictor as predictions). A cell
  whose judged requests were drawn with unequal probabilities (the overall row of a stratified
  judged sample) takes the design-based form (:func:`raglab.stats.ppi_mean_sampled`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from raglab._columns import _by_columns, _missing, _score_frame
from raglab._errors import RowTableError
from raglab._meta import carry_meta
from raglab._rowtable import _row_labels
from raglab._validation import caller, check_level, warn
from raglab.stats.intervals import _wilson_arrays
from raglab.stats.ppi import _HT, MIN_LABELS, _fit, _ht_from_sums, _method, _Sums, _z

__all__ = ["COLUMNS", "over_time", "periods"]

#: the columns of :func:`over_time`'s table, in order
COLUMNS = ("period", "slice", "metric", "n_requests", "n_judged", "estimate", "low", "high", "se", "method",
           "level")

#: the per-row terms whose sums make a prediction-powered fit (the fields of ``_Sums``, in order)
_LABELLED = ("n", "r", "ry", "rf", "r2", "r2y", "r2f", "r2yy", "r2ff", "r2yf")
_UNLABELLED = ("N", "u", "uf", "u2", "u2f", "u2ff")


def periods(times: Any, freq: str = "D", *, column: str = "timestamp", caller_name: str = "over_time") -> pd.Series:
    """The start of each row's period: ``times`` floored to ``freq`` (``"h"``, ``"D"``, ``"W"``, ``"MS"``...).

    Time zones are kept. Weeks start on Monday; ``"M"``/``"MS"`` periods are calendar months.

    Examples
    --------
    >>> import pandas as pd
    >>> from raglab.monitor import periods
    >>> t = pd.Series(pd.to_datetime(["2026-09-01 10:00", "2026-09-01 23:59", "2026-09-03 00:00"], utc=True))
    >>> periods(t, "D").dt.day.tolist()
    [1, 1, 3]
    >>> periods(t, "W").dt.strftime("%Y-%m-%d").tolist()
    ['2026-08-31', '2026-08-31', '2026-08-31']
    """
    series = pd.Series(times)
    if not pd.api.types.is_datetime64_any_dtype(series):
        converted = pd.to_datetime(series, errors="coerce", utc=True)
        bad = np.flatnonzero((converted.isna() & series.notna()).to_numpy())
        if bad.size:
            raise RowTableError(f"{caller_name}: time column {column!r} must hold timestamps; rows "
                                f"{bad[:5].tolist()} hold {series.iloc[bad[0]]!r}")
        series = converted
    missing = np.flatnonzero(series.isna().to_numpy())
    if missing.size:
        raise RowTableError(f"{caller_name}: time column {column!r} has {missing.size} missing timestamp(s) "
                            f"(rows {missing[:5].tolist()}); every request needs its time")
    try:
        offset = pd.tseries.frequencies.to_offset(freq)
    except ValueError as error:
        raise ValueError(f"{caller_name}: freq={freq!r} is not a pandas frequency ('h', 'D', 'W', 'MS', ...)") from error
    if isinstance(offset, pd.offsets.Tick):
        return series.dt.floor(offset)
    tz = series.dt.tz
    wall = series.dt.tz_localize(None) if tz is not None else series  # periods follow the local calendar
    rule = offset.rule_code
    code = {"MS": "M", "ME": "M", "QS": "Q", "QE": "Q", "YS": "Y", "YE": "Y"}.get(rule, rule)
    start = wall.dt.to_period("W-SUN" if code == "W" else code).dt.start_time
    if tz is None:
        return start
    return start.dt.tz_localize(tz, ambiguous=True, nonexistent="shift_forward")


def _cells(period: pd.Series, labels: dict[str, np.ndarray | None]) -> tuple[pd.DataFrame, np.ndarray]:
    """(period, slice) cells, the overall one and one per slice value; each row's cell in every grouping.

    Returns the cells (``period``, ``slice``) and an integer array of shape (groupings, rows).
    """
    pcode, puniq = pd.factorize(period, sort=True)
    names: list[str] = []
    slice_codes = []
    for name, values in labels.items():
        if values is None:
            slice_codes.append(np.full(pcode.size, len(names), dtype=np.int64))
            names.append(name)
        else:
            code, uniq = pd.factorize(values, sort=True)
            slice_codes.append(code.astype(np.int64) + len(names))
            names.extend(str(u) for u in uniq)
    width = max(len(names), 1)
    full = np.stack([pcode.astype(np.int64) * width + c for c in slice_codes])
    inside = pcode >= 0  # rows without a period (NaT) belong to no cell
    used, inverse = np.unique(full[:, inside], return_inverse=True)
    codes = np.full(full.shape, -1, dtype=np.int64)
    codes[:, inside] = inverse.reshape(full.shape[0], -1)
    cells = pd.DataFrame({"period": puniq[used // width], "slice": np.asarray(names, dtype=object)[used % width]})
    return cells, codes


def _sum_by(codes: np.ndarray, size: int, columns: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Per-cell sums of each row-level term; ``codes`` holds each row's cell in every grouping (one row of
    codes each; -1: the row is in no cell)."""
    kept = [(c >= 0) for c in codes]
    return {name: sum(np.bincount(c[k], values[k], minlength=size) for c, k in zip(codes, kept))
            for name, values in columns.items()}


def _extreme(column: str) -> str | None:
    """How a per-cell statistic (``metric|term``) combines: ``min_*`` terms by minimum, ``max_*`` by maximum,
    the rest by adding."""
    term = column.rsplit("|", 1)[-1]
    return "min" if term.startswith("min_") else "max" if term.startswith("max_") else None


def _every_row_terms(y: np.ndarray) -> dict[str, np.ndarray]:
    """Row-level terms of a score present on (nearly) every request; their per-cell sums make its interval."""
    ok = ~np.isnan(y)
    v = np.where(ok, y, 0.0)
    return {"n": ok.astype(float), "s": v, "ss": v * v, "missing": (~ok).astype(float),
            "nonbinary": (ok & ~np.isin(y, (0.0, 1.0))).astype(float),
            "min_y": np.where(ok, y, np.inf), "max_y": np.where(ok, y, -np.inf)}


def _judged_terms(y: np.ndarray, f: np.ndarray | None, prob: np.ndarray | None) -> dict[str, np.ndarray]:
    """Row-level terms of a metric judged on a sample: the PPI sums (``_Sums``), the Horvitz-Thompson
    sums (``_ht_from_sums``), and the extremes that say whether probabilities differ within a cell and
    whether labels and predictions lie in [0, 1]."""
    labelled = ~np.isnan(y)
    w = np.ones(y.size) if prob is None else 1.0 / prob
    pred = np.zeros(y.size) if f is None else f
    yl = np.where(labelled, y, 0.0)
    wl = np.where(labelled, w, 0.0)
    w2 = wl * wl
    un = (~labelled).astype(float)
    a, b = wl * yl, pred * (1.0 - wl)
    p = np.ones(y.size) if prob is None else prob
    return {
        "n": labelled.astype(float), "r": wl, "ry": wl * yl, "rf": wl * pred, "r2": w2, "r2y": w2 * yl,
        "r2f": w2 * pred, "r2yy": w2 * yl * yl, "r2ff": w2 * pred * pred, "r2yf": w2 * yl * pred,
        "N": un, "u": un, "uf": un * pred, "u2": un, "u2f": un * pred, "u2ff": un * pred * pred,
        "a": a, "b": b, "aa": a * a, "bb": b * b, "ab": a * b,
        "min_p": np.where(labelled, p, np.inf), "max_p": np.where(labelled, p, -np.inf),
        "min_y": np.where(labelled, y, np.inf), "max_y": np.where(labelled, y, -np.inf),
        "min_f": pred, "max_f": pred,
    }


def cell_sums(period: pd.Series, labels: dict[str, np.ndarray | None], terms: dict[str, np.ndarray]) -> pd.DataFrame:
    """One row per (period, slice) cell: the sums (or extremes) of every row-level term, plus ``rows``.

    Rows whose period is NaT are in no cell. This is what a partition of a log reduces to; cells of
    several partitions combine with :func:`combine_sums`.
    """
    cells, codes = _cells(period, labels)
    size = len(cells)
    out = {"rows": _sum_by(codes, size, {"rows": np.ones(len(period))})["rows"]}
    for name, values in terms.items():
        how = _extreme(name)
        if how is None:
            out[name] = _sum_by(codes, size, {name: values})[name]
            continue
        acc = np.full(size, np.inf if how == "min" else -np.inf)
        for c in codes:
            keep = c >= 0
            (np.minimum if how == "min" else np.maximum).at(acc, c[keep], values[keep])
        out[name] = acc
    return pd.concat([cells, pd.DataFrame(out)], axis=1)


def combine_sums(parts: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Cells of several partitions (or several periods' cells under one new label) as one: sums add,
    extremes take their minimum or maximum. Associative and commutative: any order, any grouping."""
    frame = pd.concat([p for p in parts if len(p)], ignore_index=True) if parts else pd.DataFrame()
    if frame.empty:
        return parts[0].iloc[:0] if parts else frame
    agg = {c: (_extreme(c) or "sum") for c in frame.columns if c not in ("period", "slice")}
    return frame.groupby(["period", "slice"], sort=True, dropna=True).agg(agg).reset_index()


def regroup(sums: pd.DataFrame, label: Any) -> pd.DataFrame:
    """The cells again under new period labels: ``label(periods)`` gives each period's new label (NaT:
    left out), and the cells sharing a label combine. A window or "since the change" is a regrouping
    of the daily cells, so it needs no second pass over the rows."""
    new = pd.Series(label(pd.DatetimeIndex(sums["period"])), index=sums.index)
    kept = sums[new.notna().to_numpy()].assign(period=new[new.notna()])
    return combine_sums([kept])


def _every_row_finish(cols: pd.DataFrame, flags: dict[str, bool], level: float) -> dict[str, np.ndarray]:
    """Mean and interval per cell from a score's sums (``flags``: binary, bounded, over the whole log)."""
    n, s, ss = (cols[k].to_numpy(dtype=float) for k in ("n", "s", "ss"))
    size = n.size
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = s / n
        var = np.maximum(ss - n * mean * mean, 0.0) / (n - 1)
    low, high = np.full(size, np.nan), np.full(size, np.nan)
    se = np.sqrt(var / n)
    method = np.empty(size, dtype=object)
    has = n >= 2
    if flags["binary"]:
        lo, hi = _wilson_arrays(np.nan_to_num(mean), np.maximum(n, 1.0), _z(level))
        low, high = np.where(n >= 1, lo, np.nan), np.where(n >= 1, hi, np.nan)
        method[:] = "wilson"
    else:
        t = np.array([_z(level, max(k - 1.0, 1.0)) for k in n])
        if flags["bounded"]:
            with np.errstate(invalid="ignore", divide="ignore"):
                eff = np.where(var > 0, n * mean * (1 - mean) / var, n)
            lo, hi = _wilson_arrays(np.nan_to_num(mean), np.maximum(eff, 1.0), t) if size else (low, high)
            low, high = np.where(has, lo, np.nan), np.where(has, hi, np.nan)
            method[:] = "wilson (bounded score, effective n)"
        else:
            low, high = np.where(has, mean - t * se, np.nan), np.where(has, mean + t * se, np.nan)
            method[:] = "t"
    partial = cols["missing"].to_numpy() > 0
    method = np.where(partial, method + ", over the requests with a value (not a random sample)", method)
    return {"n_judged": n, "estimate": mean, "low": low, "high": high, "se": se, "method": method}


def _judged_finish(cols: pd.DataFrame, adjusted: bool, level: float, predictor: str | None) -> dict[str, np.ndarray]:
    """Design-weighted (prediction-powered with a predictor) estimate per cell from a judged metric's sums."""
    size = len(cols)
    unequal = (cols["max_p"] - cols["min_p"]).to_numpy() > 1e-12
    lam = None if predictor is not None else 0.0
    out = {k: np.full(size, np.nan) for k in ("estimate", "low", "high", "se")}
    method = np.empty(size, dtype=object)
    base = _method(lam, adjusted) if predictor is not None else (
        "design-weighted mean of the judged sample (" + ("plus-four, t" if adjusted else "normal") + ")")
    suffix = f", predictor {predictor!r}" if predictor else ""
    ppi = cols[list(_LABELLED + _UNLABELLED)].to_numpy(dtype=float)
    ht = cols[["a", "b", "aa", "bb", "ab"]].to_numpy(dtype=float)
    for i in range(size):
        n_lab, n_unl = ppi[i, 0], ppi[i, len(_LABELLED)]
        if n_lab < 2 or n_unl < 1:
            method[i] = f"not estimated: {int(n_lab)} judged request(s) (at least 2 needed)" if n_lab < 2 else (
                "not estimated: every request was judged (use the plain mean)")
            continue
        if unequal[i]:  # the design-based (Horvitz-Thompson) form over every request
            estimate, var, _, df = _ht_from_sums(n_lab + n_unl, n_lab, *ht[i], lam, adjusted)
            text = (_method(lam, adjusted, _HT) if predictor is not None else
                    "Horvitz-Thompson mean of the judged sample (" + ("plus-four, t" if adjusted else "normal") + ")")
        else:
            fit = _fit(_Sums(*ppi[i]), lam, adjusted)
            estimate, var, df, text = fit.estimate, fit.var, fit.df, base
        half = _z(level, df) * math.sqrt(max(var, 0.0))
        out["estimate"][i], out["se"][i] = estimate, math.sqrt(max(var, 0.0))
        out["low"][i], out["high"][i] = estimate - half, estimate + half
        method[i] = text + suffix
    return {"n_judged": cols["n"].to_numpy(dtype=float), **out, "method": method}


def over_time(
    logs: pd.DataFrame,
    metrics: str | Sequence[str],
    *,
    time: str = "timestamp",
    freq: str = "D",
    by: str | Sequence[str] | None = None,
    predictor: str | Mapping[str, str] | None = None,
    ci: float = 0.95,
) -> pd.DataFrame:
    """Each metric's rate per period (and slice) of a production log, with its interval.

    Parameters
    ----------
    logs : pandas.DataFrame
        One row per request: a time column, slice columns, scores. A metric judged on a random
        sample holds NaN off the sample, and the table records the design
        (``attrs["raglab"]["sampling"]["judged"]`` with an inclusion-probability column, as
        :func:`raglab.sampling.draw` or ``rows.rag.judge(sample=...)`` write it).
    metrics : str or list of str
        Score columns: tripwires scored on every request, judge scores on the sample.
    time : str
        The column holding each request's time.
    freq : str
        Period length: a pandas frequency (``"h"``, ``"D"``, ``"W"``, ``"MS"``).
    by : str or list of str, optional
        Slice columns: a row per period and value of each, after the ``overall`` row.
    predictor : str or dict, optional
        A cheap score on every request (``lexical_support``), or ``{metric: column}``: judged
        metrics get a prediction-powered estimate with it (narrower when it tracks the judge).
    ci : float
        Confidence level of every interval.

    Returns
    -------
    pandas.DataFrame
        One row per period x slice x metric: ``period, slice, metric, n_requests, n_judged,
        estimate, low, high, se, method, level``. ``n_judged`` counts the judged requests (all of
        them for a tripwire). Cells that cannot be estimated (fewer than 2 judged requests) hold NaN
        with the reason in ``method``. ``attrs["raglab"]["over_time"]`` records ``freq``, the time
        column and the judged design.

    Examples
    --------
    >>> import raglab
    >>> from raglab.monitor import simulate_log
    >>> log = simulate_log(50_000, days=10, drop_day=5, seed=0)
    >>> daily = log.rag.over_time(["faithfulness", "citation_valid"], predictor="lexical_support")
    >>> daily.columns.tolist()[:6]
    ['period', 'slice', 'metric', 'n_requests', 'n_judged', 'estimate']
    >>> row = daily[daily["metric"] == "faithfulness"].iloc[0]
    >>> int(row["n_requests"]) > 4000, int(row["n_judged"]) < 200, row["method"].startswith("prediction-powered")
    (True, True, True)
    """
    caller_name = caller("raglab.monitor.over_time")
    view = _prepare(logs, metrics, time=time, freq=freq, by=by, predictor=predictor, ci=ci, caller_name=caller_name)
    return view.table()


@dataclass
class LogSpec:
    """What a log's tables are made of, read from its columns and attrs before any row is summed:
    the metrics, which of them are judged on a sample (and their predictors), the slice columns, the
    period, the level. The pandas and the Dask engines share it."""

    names: list[str]
    by: list[str]
    level: float
    subset: list[str]
    chosen: dict[str, str]
    design: dict[str, Any] | None
    time: str
    freq: str

    def predictor(self, metric: str) -> str | None:
        return self.chosen.get(metric) if metric in self.subset else None

    def finish(self, sums: pd.DataFrame, whole: pd.DataFrame, *, level: float | None = None) -> pd.DataFrame:
        """The table from cell sums; ``whole``: the log's own cells (whole-log facts: which scores are
        pass/fail, which lie in [0, 1])."""
        level = self.level if level is None else level
        overall = whole[whole["slice"] == "overall"]
        parts = []
        for metric in self.names:
            cols = sums[[c for c in sums.columns if c.startswith(metric + "|")]].rename(
                columns=lambda c: c.split("|", 1)[1])
            every = overall[[c for c in overall.columns if c.startswith(metric + "|")]].rename(
                columns=lambda c: c.split("|", 1)[1])
            if metric in self.subset:
                adjusted = bool(every["min_y"].min() >= 0 and every["max_y"].max() <= 1
                                and every["min_f"].min() >= 0 and every["max_f"].max() <= 1)
                result = _judged_finish(cols, adjusted, level, self.predictor(metric))
            else:
                flags = {"binary": bool(every["nonbinary"].sum() == 0),
                         "bounded": bool(every["min_y"].min() >= 0 and every["max_y"].max() <= 1)}
                result = _every_row_finish(cols, flags, level)
            part = sums[["period", "slice"]].copy()
            part.insert(2, "metric", metric)
            part["n_requests"] = sums["rows"].to_numpy()
            for key in ("n_judged", "estimate", "low", "high", "se", "method"):
                part[key] = result[key]
            part["level"] = level
            parts.append(part)
        table = pd.concat(parts, ignore_index=True)
        table["n_requests"] = table["n_requests"].astype("int64")
        table["n_judged"] = table["n_judged"].astype("int64")
        order = {name: i for i, name in enumerate(self.names)}
        slices = ["overall", *sorted(set(table["slice"]) - {"overall"})]
        table["_m"] = table["metric"].map(order)
        table["_s"] = table["slice"].map({s: i for i, s in enumerate(slices)})
        table = table.sort_values(["_m", "period", "_s"], kind="stable").drop(columns=["_m", "_s"])
        table = table.reset_index(drop=True)[list(COLUMNS)]
        table.attrs["raglab"] = {"over_time": {
            "time": self.time, "freq": self.freq, "by": self.by, "judged": self.subset,
            "predictor": {m: self.chosen.get(m) for m in self.subset}, "design": self.design,
            "min_judged": MIN_LABELS}}
        return table


class CellView:
    """What every engine's view of a log shares: its spec, and regroupings of its per-period cells
    (a subclass gives ``spec`` and ``daily``)."""

    spec: LogSpec

    @property
    def names(self) -> list[str]:
        return self.spec.names

    @property
    def by(self) -> list[str]:
        return self.spec.by

    def regroup(self, label: Any) -> pd.DataFrame:
        return regroup(self.daily, label)  # type: ignore[attr-defined]


@dataclass
class _LogView(CellView):
    """A pandas log read once: its spec, each row's period and slices, the row-level terms; the
    per-period cells (:attr:`daily`) are summed once, and every other grouping regroups them."""

    spec: LogSpec
    logs: pd.DataFrame
    period: pd.Series
    labels: dict[str, np.ndarray | None]
    terms: dict[str, np.ndarray]

    @cached_property
    def daily(self) -> pd.DataFrame:
        return cell_sums(self.period, self.labels, self.terms)

    def table(self, sums: pd.DataFrame | None = None, *, level: float | None = None) -> pd.DataFrame:
        """The table of ``sums`` (default: the per-period cells), with the log's attrs."""
        table = self.spec.finish(self.daily if sums is None else sums, self.daily, level=level)
        meta = table.attrs["raglab"]
        carry_meta(self.logs, table)
        table.attrs.setdefault("raglab", {}).update(meta)
        return table

    def judges(self, column: str) -> pd.Series:
        """Each period's most common judge fingerprint (ties: the first in sorted order), by period."""
        frame = pd.DataFrame({"p": self.period.to_numpy(), "j": self.logs[column].astype(str).to_numpy()})
        return modal_judges(frame.groupby(["p", "j"]).size())

    def failing(self, metric: str, slice_: str, since: pd.Timestamp) -> pd.DataFrame:
        """The log's requests of ``slice_`` from period ``since`` on whose ``metric`` failed (below 0.5)."""
        values = pd.to_numeric(self.logs[metric], errors="coerce").to_numpy(dtype=float)
        mask = (self.period >= since).to_numpy() & (values < 0.5)
        if slice_ != "overall" and self.by:
            mask &= (self.logs[self.by[0]].astype(str) == slice_).to_numpy()
        return self.logs.loc[mask]


def modal_judges(counts: pd.Series) -> pd.Series:
    """The most common judge per period from ``(period, judge) -> count`` (counts of partitions add)."""
    counts = counts.groupby(level=[0, 1]).sum().rename("n").reset_index()
    counts = counts.sort_values(["n", counts.columns[1]], ascending=[False, True], kind="stable")
    return counts.drop_duplicates(counts.columns[0]).set_index(counts.columns[0])[counts.columns[1]].sort_index()


def _prepare(logs: pd.DataFrame, metrics: str | Sequence[str], *, time: str, freq: str,
             by: str | Sequence[str] | None, predictor: str | Mapping[str, str] | None, ci: float,
             caller_name: str, fill: Mapping[str, float] | None = None, check_population: bool = True) -> _LogView:
    """Check and read a log once: scores, slice labels, the judged design and the predictors."""
    from raglab.runs import _judged_subset

    level = check_level(ci)
    if not isinstance(logs, pd.DataFrame):
        raise TypeError(f"{caller_name}: logs must be a pandas DataFrame, got {type(logs).__name__}")
    names = [metrics] if isinstance(metrics, str) else list(metrics)
    if not names:
        raise ValueError(f"{caller_name}: name at least one metric column")
    if time not in logs.columns:
        raise _missing(logs, time, caller_name, "each request's time; pass time='<column>'")
    by_columns = _by_columns(by)
    for column in by_columns:
        if column not in logs.columns:
            raise _missing(logs, column, caller_name, "a slice column named in by=")
    scores = _score_frame(logs, names, caller_name, id_column=None)
    subset, chosen, prob, design = _judged_subset(logs, names, predictor, caller_name, None, check_population)
    labels: dict[str, np.ndarray | None] = {"overall": None}
    for column in by_columns:
        values = logs[column].astype(str).to_numpy()
        missing = np.flatnonzero(logs[column].isna().to_numpy())
        if missing.size:
            raise RowTableError(f"{caller_name}: slice column {column!r} is missing on "
                                f"{_row_labels(logs, missing[:5].tolist(), None)}")
        labels[column] = values if len(by_columns) == 1 else np.char.add(f"{column}=", values.astype(str))
    self_selected = [m for m in names if m not in subset and scores[m].isna().any() and scores[m].notna().any()]
    if self_selected:
        shares = ", ".join(f"{m!r} on {scores[m].notna().mean():.1%}" for m in self_selected)
        warn(f"{caller_name}: {shares} of requests, with no sampling design recorded for them: each rate "
             "describes the requests that have a value, not all requests (who answers, e.g. user feedback, is "
             "not random: unhappy users answer more often)", UserWarning)
    terms: dict[str, np.ndarray] = {}
    for metric in names:
        y = scores[metric].to_numpy(dtype=float)
        if metric not in subset:
            found = _every_row_terms(y)
        else:
            column = chosen.get(metric)
            f = None
            if column is not None:
                f = _score_frame(logs, [column], caller_name, id_column=None)[column].to_numpy(dtype=float)
                filler = (fill or {}).get(column)
                if filler is None:
                    if np.isnan(f).all():
                        raise ValueError(f"{caller_name}: the predictor {column!r} of {metric!r} has no score")
                    filler = float(np.nanmean(f))
                f = np.where(np.isnan(f), filler, f)  # a fixed prediction keeps PPI unbiased
            found = _judged_terms(y, f, prob)
        terms.update({f"{metric}|{k}": v for k, v in found.items()})
    spec = LogSpec(names, by_columns, level, subset, dict(chosen), dict(design) if design else None, time, freq)
    period = periods(logs[time].reset_index(drop=True), freq, column=time, caller_name=caller_name)
    return _LogView(spec, logs, period, labels, terms)
