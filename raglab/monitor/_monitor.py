"""``monitor``: alarms on a production log's rates, with the guarantee each alarm keeps."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as _sps

from raglab._columns import _by_columns, _missing
from raglab._validation import caller
from raglab.monitor._detect import GUARANTEES, gaussian_e_values, shiryaev_roberts, threshold
from raglab.monitor._over_time import _prepare
from raglab.monitor._postmortem import PostMortem, change_point, slice_shifts

__all__ = ["Monitor", "monitor"]

#: the falls the e-values are built for, as multiples of ``drop`` (their mixture detects large falls fast)
DROP_MULTIPLES = (1.0, 2.0, 4.0, 8.0)


@dataclass
class Monitor:
    """What :func:`monitor` found: the statistic per period and series, the alarms, the guarantee kept.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per period x series (metric, slice): ``period, metric, slice, n_requests, n_judged,
        estimate, low, high, se, reference, e_value, statistic, threshold, alarm, phase``
        (``phase``: ``"reference"`` for periods that set the reference, ``"monitored"``, then ``"in
        alarm"`` from a series' alarm until it restarts at a judge change).
    alarms : pandas.DataFrame
        One row per alarm: ``metric, slice, period`` (when it fired), ``start`` (the estimated first
        period of the change), ``reference``, ``estimate`` (the rate from ``start`` to the alarm,
        design-weighted), ``low, high`` (its interval), ``n_judged``, ``periods`` (looks since the
        start).
    guarantee : str
        The guarantee in words, with its numbers.
    references : pandas.DataFrame
        Per series, the reference rate and how it was set.
    """

    table: pd.DataFrame
    alarms: pd.DataFrame
    guarantee: str
    references: pd.DataFrame
    settings: dict[str, Any] = field(default_factory=dict)
    _source: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def post_mortem(self, alarm: int = 0, *, by: str | Sequence[str] | None = None, ci: float = 0.95,
                    n_resamples: int = 2000, seed: int = 0) -> PostMortem:
        """Take alarm number ``alarm`` apart: when the change started (with an interval), where, which requests.

        Parameters
        ----------
        alarm : int
            Row of :attr:`alarms`.
        by : str or list of str, optional
            Slice columns to compare before and after the change (default: the monitor's ``by``).
        ci : float
            Level of the change point's interval and of the slices' (Bonferroni over slices).
        n_resamples, seed : int
            The change point's parametric bootstrap.

        Returns
        -------
        PostMortem
        """
        if self.alarms.empty:
            raise ValueError("post_mortem: this monitor raised no alarm")
        if not 0 <= alarm < len(self.alarms):
            raise IndexError(f"post_mortem: alarm={alarm} is not one of the {len(self.alarms)} alarm(s)")
        src = self._source
        row = self.alarms.iloc[alarm]
        series = self.table[(self.table["metric"] == row["metric"]) & (self.table["slice"] == row["slice"])]
        series = series.sort_values("period")
        restarts = [p for p in self.settings.get("restarts", []) if p <= row["period"]]
        if restarts:
            series = series[series["period"] >= max(restarts)]
        grid = pd.DatetimeIndex(series["period"])
        found = change_point(series["estimate"].to_numpy(), series["se"].to_numpy(), ci=ci,
                             n_resamples=n_resamples, seed=seed)
        split = grid[found.index]
        view = src["view"]
        columns = _by_columns(by) if by is not None else list(view.by)
        parts = []
        for column in columns or [None]:
            sliced = view if column is not None and [column] == view.by else src["make_view"](column)
            part = slice_shifts(sliced, row["metric"], grid[0], split, grid[-1], ci)
            parts.append(part if not parts else part[part["column"] != "overall"])
        slices = pd.concat(parts, ignore_index=True).sort_values("difference", kind="stable").reset_index(drop=True)
        return PostMortem(row, found, grid, slices, view.failing(row["metric"], row["slice"], split))

    def __repr__(self) -> str:
        lines = [f"Monitor: {self.settings.get('series', 0)} series x {self.settings.get('looks', 0)} looks "
                 f"({self.settings.get('freq')}); {self.guarantee}"]
        if self.alarms.empty:
            lines.append("no alarm")
        for row in self.alarms.itertuples():
            lines.append(f"ALARM {row.metric} [{row.slice}] at {_day(row.period)}: from {_day(row.start)} "
                         f"{row.estimate:.3f} [{row.low:.3f}, {row.high:.3f}] vs reference {row.reference:.3f} "
                         f"({int(row.n_judged)} judged)")
        return "\n".join(lines)


def _day(value: Any) -> str:
    stamp = pd.Timestamp(value)
    return stamp.strftime("%Y-%m-%d %H:%M") if (stamp.hour or stamp.minute) else stamp.strftime("%Y-%m-%d")


def _window(start: pd.Timestamp, end: pd.Timestamp, *, closed: bool = False) -> Any:
    """A regrouping label: periods from ``start`` to ``end`` (included when ``closed``) become ``start``."""
    def label(p: pd.DatetimeIndex) -> Any:
        inside = (p >= start) & ((p <= end) if closed else (p < end))
        return pd.Series(p, dtype=p.dtype).where(inside, pd.NaT).where(~inside, start).to_numpy()
    return label


def _reference_window(reference: Any, first: pd.Series, caller_name: str) -> tuple[pd.Timestamp, pd.Timestamp]:
    """``(start, end)`` of the reference window from an int (first n periods) or a (start, end) pair."""
    starts = pd.DatetimeIndex(first.unique()).sort_values()
    if isinstance(reference, (int, np.integer)) and not isinstance(reference, bool):
        n = int(reference)
        if not 1 <= n < len(starts):
            raise ValueError(f"{caller_name}: reference={n} periods must leave periods to monitor (the log has "
                             f"{len(starts)})")
        return pd.Timestamp(starts[0]), pd.Timestamp(starts[n])
    if isinstance(reference, (tuple, list)) and len(reference) == 2:
        tz = first.dt.tz
        lo, hi = (pd.Timestamp(v) for v in reference)
        if tz is not None:
            lo = lo.tz_localize(tz) if lo.tzinfo is None else lo.tz_convert(tz)
            hi = hi.tz_localize(tz) if hi.tzinfo is None else hi.tz_convert(tz)
        if not lo < hi:
            raise ValueError(f"{caller_name}: the reference window must end after it starts, got {reference!r}")
        return lo, hi
    raise TypeError(f"{caller_name}: reference must be a rate (float), {{metric: rate}}, a number of periods (int) "
                    f"or a (start, end) window, got {reference!r}")


def monitor(
    logs: pd.DataFrame,
    metrics: str | Sequence[str],
    *,
    reference: float | Mapping[str, float] | int | tuple[Any, Any],
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
    """Alarm when a rate falls below its reference, keeping a stated false-alarm guarantee.

    Every period, each series (metric x slice) gets its design-weighted estimate from
    :func:`over_time` (prediction-powered with ``predictor``), turned into an e-value against "the
    rate is at least the reference" (a Gaussian likelihood ratio for a fall of ``drop``); a
    Shiryaev-Roberts statistic accumulates them and alarms at a threshold that gives the guarantee:

    * ``guarantee="horizon"`` (the default, anytime-valid): the chance of *any* false alarm, in any
      series, over ``horizon`` looks is at most ``alpha``, however often one looks (Ville's
      inequality; Bonferroni over series);
    * ``guarantee="arl"``: false alarms of the family come on average at most once every ``arl``
      periods (a change detector; each series' mean run length is at least ``arl x series``).

    An alarm dates the change (the start that maximises the evidence) and gives the rate since then
    with its interval; the series then stays in alarm (no repeated alarms for one change) until its
    judge changes.

    Parameters
    ----------
    logs : pandas.DataFrame
        A production log (see :func:`over_time`).
    metrics : str or list of str
        Rates to watch (judge scores on a sample, tripwires on every request).
    reference : float, dict, int or (start, end)
        What "no change" means. A rate (``0.90``; or ``{metric: rate}``) is a promise: alarms mean
        "below it". An int uses the first that many periods, a ``(start, end)`` pair that window: each
        series' reference is the window's lower confidence bound (one-sided, ``alpha / 2`` split over
        the series, so the window's own noise cannot cause false alarms), and ``alpha / 2`` is left
        for the monitored periods. Windows are re-established after a judge change.
    time, freq, by, predictor
        As for :func:`over_time` (one slice column at most).
    drop : float
        The fall worth an alarm (the e-values are most powerful against it; any larger fall is
        detected too, and faster).
    alpha : float
        Error rate of the ``"horizon"`` guarantee (and of the reference window's bound).
    guarantee : {"horizon", "arl"}
    horizon : int, optional
        Looks the horizon guarantee covers; default: the monitored periods in ``logs``. When the
        monitor runs daily on a growing log, fix it (``horizon=365``).
    arl : float, optional
        With ``guarantee="arl"``: periods between false alarms, on average (e.g. 365 daily looks).
    judge : str, optional
        Column holding each request's judge fingerprint (default: ``judge_fingerprint`` when the log
        has it). A series restarts when its judge changes.

    Returns
    -------
    Monitor

    Examples
    --------
    >>> import raglab
    >>> from raglab.monitor import simulate_log
    >>> log = simulate_log(400_000, days=60, drop_day=30, seed=0)    # billing falls 15 points on day 30
    >>> found = log.rag.monitor("faithfulness", reference=0.88, by="topic", predictor="lexical_support",
    ...                         guarantee="arl", arl=365)              # one false alarm a year, on average
    >>> print(found)  # doctest: +NORMALIZE_WHITESPACE
    Monitor: 6 series x 60 looks (D); average run length: false alarms of 6 series (1 metric(s) x 6 slice(s))
    at most once per 365 periods on average (expected false alarms in T periods <= T/365); Shiryaev-Roberts
    e-detector, threshold 2190, Gaussian e-values for falls of 0.03, 0.06, 0.12, 0.24
    ALARM faithfulness [billing] at 2026-10-07: from 2026-10-01 0.737 [0.681, 0.793] vs reference 0.880
    (170 judged)
    >>> slow = log.rag.monitor("faithfulness", reference=14, by="topic", predictor="lexical_support")
    >>> print(slow.guarantee.split(";")[0])   # any false alarm in the horizon, however often one looks
    anytime-valid: P(any false alarm in 46 looks of 6 series (1 metric(s) x 6 slice(s))) <= 0.025 (+ 0.025 for the reference windows' bounds)
    >>> slow.alarms[["slice", "start", "period"]].astype(str).values.tolist()
    [['billing', '2026-10-01 00:00:00+00:00', '2026-10-21 00:00:00+00:00']]
    """
    caller_name = caller("raglab.monitor.monitor")
    judge_column = check_monitor(logs, by=by, drop=drop, alpha=alpha, guarantee=guarantee, judge=judge,
                                 caller_name=caller_name)

    def make_view(column: str | None) -> Any:
        return _prepare(logs, metrics, time=time, freq=freq, by=column, predictor=predictor, ci=1 - alpha,
                        caller_name=caller_name)

    return watch(make_view(by), make_view, reference=reference, drop=drop, alpha=alpha, guarantee=guarantee,
                 horizon=horizon, arl=arl, judge=judge_column, caller_name=caller_name)


def check_monitor(frame: pd.DataFrame, *, by: Any, drop: float, alpha: float, guarantee: str, judge: str | None,
                  caller_name: str) -> str | None:
    """The monitor's arguments checked (``frame``: the log, or an engine's empty meta frame); returns the
    judge column (``judge_fingerprint`` when the log has one and none is named)."""
    if guarantee not in GUARANTEES:
        raise ValueError(f"{caller_name}: guarantee must be one of {GUARANTEES}, got {guarantee!r}")
    if not 0 < alpha < 1:
        raise ValueError(f"{caller_name}: alpha must be in (0, 1), got {alpha!r}")
    if not 0 < drop < 1:
        raise ValueError(f"{caller_name}: drop must be a fall of the rate in (0, 1), got {drop!r}")
    if by is not None and not isinstance(by, str):
        raise TypeError(f"{caller_name}: by must be one slice column (a str), got {by!r}")
    column = judge if judge is not None else ("judge_fingerprint" if "judge_fingerprint" in frame.columns else None)
    if column is not None and column not in frame.columns:
        raise _missing(frame, column, caller_name, "each request's judge fingerprint")
    return column


def watch(view: Any, make_view: Any, *, reference: Any, drop: float, alpha: float, guarantee: str,
          horizon: int | None, arl: float | None, judge: str | None, caller_name: str) -> Monitor:
    """:func:`monitor` on a log already read by an engine: ``view`` gives the per-period cells
    (``table``, ``regroup``), each period's most common judge (``judges``) and the failing requests
    (``failing``); ``make_view(column)`` reads the log again sliced by another column."""
    names = view.names
    freq = view.spec.freq
    judge_column = judge
    table = view.table()
    grid = pd.DatetimeIndex(table["period"].unique()).sort_values()
    series = list(dict.fromkeys(zip(table["metric"], table["slice"])))
    k = len(series)

    # judge changes: the periods from which a new fingerprint is the most common one
    restarts: list[pd.Timestamp] = []
    if judge_column is not None:
        modal = view.judges(judge_column)
        changed = (modal != modal.shift()) & modal.shift().notna()
        restarts = [pd.Timestamp(p) for p in modal.index[changed.to_numpy()]]

    # the reference of every series at every period, and which periods are monitored
    pos = {s: j for j, s in enumerate(series)}
    ref = np.full((len(grid), k), np.nan)
    monitored = np.ones((len(grid), k), dtype=bool)
    ref_rows: list[dict[str, Any]] = []
    windowed = not isinstance(reference, (float, np.floating, Mapping)) or isinstance(reference, bool)
    if not windowed:
        rates = ({m: float(reference) for m in names} if not isinstance(reference, Mapping)
                 else {m: float(reference[m]) for m in names if m in reference})
        absent = [m for m in names if m not in rates]
        if absent:
            raise ValueError(f"{caller_name}: reference gives no rate for {absent}")
        for (metric, slice_), j in pos.items():
            ref[:, j] = rates[metric]
            ref_rows.append({"metric": metric, "slice": slice_, "reference": rates[metric], "from": grid[0],
                             "how": "given"})
    else:
        lo, hi = _reference_window(reference, pd.Series(grid), caller_name)
        epochs = [(lo, hi), *((c, c + (hi - lo)) for c in restarts if c >= hi)]
        z = float(_sps.norm.ppf(1 - alpha / 2 / k))
        for start, end in epochs:
            pooled = view.table(view.regroup(_window(start, end)))
            in_grid = (grid >= start) & (grid < end)
            monitored[in_grid] = False
            for row in pooled.itertuples():
                j = pos[(row.metric, row.slice)]
                m0 = float(row.estimate - z * row.se)
                ref[grid >= start, j] = m0
                ref_rows.append({"metric": row.metric, "slice": row.slice, "reference": m0, "from": start,
                                 "how": f"lower {100 * (1 - alpha / 2 / k):.4g}% bound of {row.estimate:.4f} "
                                        f"(se {row.se:.4f}, {row.n_judged} judged) over {_day(start)} to "
                                        f"{_day(end)}, not monitored"})
        monitored[grid < lo] = False
    alpha_seq = alpha / 2 if windowed else alpha
    looks = int(monitored[:, 0].sum())
    horizon_ = looks if horizon is None else int(horizon)
    if guarantee == "horizon" and looks > horizon_:
        raise ValueError(f"{caller_name}: the log has {looks} monitored periods, more than horizon={horizon_}: the "
                         "guarantee covers only the looks it was set for (raise horizon)")
    limit = threshold(guarantee, alpha=alpha_seq, horizon=max(horizon_, 1), arl=arl, series=k)

    # e-values and the statistic on the (period x series) grid
    est, se = np.full((len(grid), k), np.nan), np.full((len(grid), k), np.nan)
    rows_at = grid.get_indexer(table["period"])
    cols_at = np.array([pos[s] for s in zip(table["metric"], table["slice"])])
    est[rows_at, cols_at] = table["estimate"].to_numpy()
    se[rows_at, cols_at] = table["se"].to_numpy()
    drops = tuple(drop * m for m in DROP_MULTIPLES)
    e = np.where(monitored, gaussian_e_values(est, se, ref, drops), 1.0)
    restart = ~monitored
    for change in restarts:
        restart[grid.get_indexer([change])[0]] = True
    found = shiryaev_roberts(e, limit, restart=restart, after_alarm="hold")
    in_alarm = np.zeros_like(monitored)
    state = np.zeros(k, dtype=bool)
    for t in range(len(grid)):  # in alarm from an alarm until the series restarts (a judge change)
        state = (state & ~restart[t]) | (found.alarm[t] & monitored[t])
        in_alarm[t] = state

    table["reference"] = ref[rows_at, cols_at]
    table["e_value"] = e.mean(axis=0)[rows_at, cols_at]  # the mixture's e-value of the period
    table["statistic"] = found.statistic[rows_at, cols_at]
    table["threshold"] = limit
    table["alarm"] = found.alarm[rows_at, cols_at] & monitored[rows_at, cols_at]
    table["phase"] = np.where(in_alarm[rows_at, cols_at], "in alarm",
                              np.where(monitored[rows_at, cols_at], "monitored", "reference"))
    order = ["period", "metric", "slice", "n_requests", "n_judged", "estimate", "low", "high", "se", "reference",
             "e_value", "statistic", "threshold", "alarm", "phase"]
    table = table[order]

    alarms = []
    for t, j in zip(*np.nonzero(found.alarm & monitored)):
        metric, slice_ = series[j]
        start = grid[found.start[t, j]]
        since = view.table(view.regroup(_window(start, grid[t], closed=True)), level=1 - alpha)
        since = since[(since["metric"] == metric) & (since["slice"] == slice_)].iloc[0]
        alarms.append({"metric": metric, "slice": slice_, "period": grid[t], "start": start,
                       "reference": float(ref[t, j]), "estimate": float(since["estimate"]),
                       "low": float(since["low"]), "high": float(since["high"]), "n_judged": int(since["n_judged"]),
                       "periods": int(t - found.start[t, j] + 1)})
    alarm_table = pd.DataFrame(alarms, columns=["metric", "slice", "period", "start", "reference", "estimate", "low",
                                                "high", "n_judged", "periods"])

    family = f"{k} series ({len(names)} metric(s) x {k // len(names)} slice(s))"
    detector = (f"Shiryaev-Roberts e-detector, threshold {limit:.4g}, Gaussian e-values for falls of "
                f"{', '.join(f'{d:g}' for d in drops)}")
    if guarantee == "horizon":
        text = (f"anytime-valid: P(any false alarm in {horizon_} looks of {family}) <= {alpha_seq:g}"
                + (f" (+ {alpha / 2:g} for the reference windows' bounds)" if windowed else "") + f"; {detector}")
    else:
        text = (f"average run length: false alarms of {family} at most once per {arl:g} periods on average "
                f"(expected false alarms in T periods <= T/{arl:g})"
                + (f" (reference windows' bounds at {alpha / 2:g})" if windowed else "") + f"; {detector}")
    if restarts:
        text += f"; restarted at judge change(s) on {', '.join(_day(p) for p in restarts)}"
    settings = {"series": k, "looks": looks, "freq": freq, "alpha": alpha, "drop": drop, "drops": drops,
                "guarantee": guarantee, "horizon": horizon_ if guarantee == "horizon" else None, "arl": arl,
                "threshold": limit, "judge": judge_column, "restarts": restarts}
    return Monitor(table, alarm_table, text, pd.DataFrame(ref_rows), settings,
                   {"view": view, "make_view": make_view})
