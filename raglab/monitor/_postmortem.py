"""The post-mortem of an alarm: when the change started (with an interval), where, and which requests."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pandas as pd
from scipy import stats as _sps

if TYPE_CHECKING:  # the eval set is only passed through
    from raglab.evalset import EvalSet

__all__ = ["ChangePoint", "PostMortem", "change_point"]


class ChangePoint(NamedTuple):
    """The first changed period (an index into the series), its interval, and the levels either side."""

    index: int
    low: int
    high: int
    before: float
    after: float
    method: str
    level: float
    n_resamples: int
    seed: int


def _best_split(x: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each row of ``x`` (replicates x periods): the split minimising the weighted residual sum of squares.

    Returns (split index: first period of the second segment, mean before, mean after).
    """
    cw = np.cumsum(w, axis=-1)
    cwx = np.cumsum(w * x, axis=-1)
    cwxx = np.cumsum(w * x * x, axis=-1)
    total_w, total_wx, total_wxx = cw[..., -1:], cwx[..., -1:], cwxx[..., -1:]
    # segment [0, s) and [s, T) for s = 1..T-1
    w0, wx0, wxx0 = cw[..., :-1], cwx[..., :-1], cwxx[..., :-1]
    w1, wx1, wxx1 = total_w - w0, total_wx - wx0, total_wxx - wxx0
    rss = (wxx0 - wx0 * wx0 / w0) + (wxx1 - wx1 * wx1 / w1)
    split = np.argmin(rss, axis=-1)
    take = split[..., None]
    before = (np.take_along_axis(wx0, take, -1) / np.take_along_axis(w0, take, -1))[..., 0]
    after = (np.take_along_axis(wx1, take, -1) / np.take_along_axis(w1, take, -1))[..., 0]
    return split + 1, before, after


def change_point(estimate: Any, se: Any, *, ci: float = 0.95, n_resamples: int = 2000, seed: int = 0) -> ChangePoint:
    """The most likely single change in a series of per-period estimates, with a bootstrap interval.

    The split that minimises the residual sum of squares weighted by ``1 / se^2`` (the Gaussian
    maximum-likelihood change point); its interval is the percentile interval of the split refitted
    on ``n_resamples`` series simulated from the fitted two-level model with the same standard
    errors (parametric bootstrap).

    Examples
    --------
    >>> import numpy as np
    >>> from raglab.monitor import change_point
    >>> rng = np.random.default_rng(0)
    >>> level = np.where(np.arange(40) < 25, 0.90, 0.80)
    >>> found = change_point(level + rng.normal(0, 0.02, 40), np.full(40, 0.02))
    >>> found.index, found.low <= 25 <= found.high, round(found.before - found.after, 2)
    (25, True, 0.1)
    """
    x = np.asarray(estimate, dtype=float)
    s = np.asarray(se, dtype=float)
    ok = np.isfinite(x) & np.isfinite(s) & (s > 0)
    if ok.sum() < 3:
        raise ValueError(f"change_point needs at least 3 periods with an estimate, got {int(ok.sum())}")
    where = np.flatnonzero(ok)
    xs, w = x[ok], 1.0 / s[ok] ** 2
    split, before, after = _best_split(xs[None, :], w[None, :])
    rng = np.random.default_rng(seed)
    fitted = np.where(np.arange(xs.size) < split[0], before[0], after[0])
    sims = fitted + s[ok] * rng.standard_normal((n_resamples, xs.size))
    boot, _, _ = _best_split(sims, np.broadcast_to(w, sims.shape))
    alpha = 1 - ci
    lo, hi = np.quantile(boot, [alpha / 2, 1 - alpha / 2], method="inverted_cdf")
    return ChangePoint(
        int(where[split[0]]), int(where[int(lo)]), int(where[int(hi)]), float(before[0]), float(after[0]),
        method="weighted least-squares change point, parametric bootstrap (percentile)", level=ci,
        n_resamples=int(n_resamples), seed=int(seed),
    )


@dataclass
class PostMortem:
    """An alarm taken apart: :attr:`change` (when, with an interval), :attr:`slices` (where), :attr:`requests`.

    Attributes
    ----------
    alarm : pandas.Series
        The alarm (a row of ``Monitor.alarms``).
    change : ChangePoint
        The first changed period and its interval (as periods in :attr:`periods`).
    started, started_low, started_high : pandas.Timestamp
        The same as times.
    slices : pandas.DataFrame
        Per slice column and value: the rate before and after the change, the difference with its
        interval (Bonferroni over the slices shown) and ``flagged`` when the interval lies below 0.
    requests : pandas.DataFrame
        The log's judged requests of the alarmed series after the change that failed (score below
        0.5), oldest first: the examples behind the drop.
    """

    alarm: pd.Series
    change: ChangePoint
    periods: pd.DatetimeIndex
    slices: pd.DataFrame
    requests: pd.DataFrame

    @property
    def started(self) -> pd.Timestamp:
        return self.periods[self.change.index]

    @property
    def started_low(self) -> pd.Timestamp:
        return self.periods[self.change.low]

    @property
    def started_high(self) -> pd.Timestamp:
        return self.periods[self.change.high]

    def __repr__(self) -> str:
        a = self.alarm
        lines = [f"Post-mortem of the alarm on {a['metric']} [{a['slice']}] at {_day(a['period'])}",
                 f"started {_day(self.started)} ({100 * self.change.level:.0f}% interval {_day(self.started_low)} to "
                 f"{_day(self.started_high)}; {self.change.method}, {self.change.n_resamples} resamples, seed "
                 f"{self.change.seed}): {self.change.before:.3f} -> {self.change.after:.3f}"]
        flagged = self.slices[self.slices["flagged"]]
        if len(flagged):
            lines.append("slices that fell: " + ", ".join(
                f"{r.column}={r.value} {r.before:.3f} -> {r.after:.3f} ({r.difference:+.3f} [{r.low:+.3f}, "
                f"{r.high:+.3f}])" for r in flagged.itertuples()))
        else:
            lines.append("no slice fell on its own beyond noise")
        lines.append(f"{len(self.requests)} failing judged request(s) since the change (.requests)")
        return "\n".join(lines)

    def extend(self, evalset: EvalSet, *, id_column: str, columns: Mapping[str, str] | None = None,
               prefix: str = "prod-", limit: int | None = None, version: str | None = None) -> EvalSet:
        """Grow an eval set from these requests: a new version with them as new questions.

        Parameters
        ----------
        evalset : raglab.EvalSet
            The frozen set to extend (a version is never edited: this writes the next one).
        id_column : str
            The log's request id column; question ids are ``prefix + id``.
        columns : dict, optional
            ``{eval-set column: log column}`` for the set's frozen columns (default: same names).
        prefix : str
            Prepended to request ids so they cannot clash with existing question ids.
        limit : int, optional
            Take only the first ``limit`` requests.
        version : str, optional
            The new version's name (default: the next one).
        """
        rows = self.requests if limit is None else self.requests.head(limit)
        if rows.empty:
            raise ValueError("PostMortem.extend: no failing request to add")
        if id_column not in rows.columns:
            raise KeyError(f"PostMortem.extend: id_column {id_column!r} is not a column of the log; found "
                           f"{list(rows.columns)}")
        mapping = dict(columns or {})
        qid = evalset.manifest["question_id"]
        new = pd.DataFrame({qid: prefix + rows[id_column].astype(str).to_numpy()})
        for column in evalset.columns:
            if column == qid:
                continue
            source = mapping.get(column, column)
            if source not in rows.columns:
                raise KeyError(f"PostMortem.extend: the eval set's column {column!r} needs a log column; pass "
                               f"columns={{{column!r}: '<log column>'}} (log columns: {list(rows.columns)})")
            new[column] = rows[source].astype(object).to_numpy() if isinstance(
                rows[source].dtype, pd.CategoricalDtype) else rows[source].to_numpy()
        return evalset.extend(new, version=version)


def _day(value: Any) -> str:
    stamp = pd.Timestamp(value)
    return stamp.strftime("%Y-%m-%d %H:%M") if (stamp.hour or stamp.minute) else stamp.strftime("%Y-%m-%d")


def slice_shifts(view: Any, metric: str, start: pd.Timestamp, split: pd.Timestamp, end: pd.Timestamp,
                 level: float) -> pd.DataFrame:
    """Each slice's rate before ``split`` (from ``start``) and after it (to ``end``), and the difference."""
    def label(p: pd.DatetimeIndex) -> Any:
        out = pd.Series(pd.NaT, index=range(len(p)), dtype=p.dtype)
        out[(p >= start) & (p < split)] = start
        out[(p >= split) & (p <= end)] = split
        return out.to_numpy()

    table = view.table(view.regroup(label))
    table = table[table["metric"] == metric]
    out = []
    shown = table["slice"].nunique()
    z = float(_sps.norm.ppf(1 - (1 - level) / 2 / max(shown, 1)))
    for value, part in table.groupby("slice", sort=False):
        b, a = part[part["period"] == start], part[part["period"] == split]
        if b.empty or a.empty:
            continue
        b, a = b.iloc[0], a.iloc[0]
        diff = float(a["estimate"] - b["estimate"])
        half = z * float(np.hypot(a["se"], b["se"]))
        out.append({"column": view.by[0] if (view.by and value != "overall") else "overall", "value": value,
                    "before": float(b["estimate"]), "after": float(a["estimate"]), "difference": diff,
                    "low": diff - half, "high": diff + half, "n_judged_before": int(b["n_judged"]),
                    "n_judged_after": int(a["n_judged"]), "flagged": bool(diff + half < 0)})
    frame = pd.DataFrame(out, columns=["column", "value", "before", "after", "difference", "low", "high",
                                       "n_judged_before", "n_judged_after", "flagged"])
    return frame.sort_values("difference", kind="stable").reset_index(drop=True)
