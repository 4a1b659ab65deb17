"""Change detection with a stated guarantee, on per-period estimates (arrays; no pandas).

Each period ``t`` gives an estimate ``x_t`` of a rate with standard error ``s_t``. Against the
promise "the rate is at least ``m0``", the Gaussian likelihood ratio of a drop of ``delta``,

    e_t = exp((delta (m0 - x_t) - delta^2 / 2) / s_t^2),

has expectation at most 1 whenever the rate is at least ``m0`` (exactly, for normal estimates with
known ``s_t``): an e-value. The Shiryaev-Roberts statistic ``R_t = (R_{t-1} + 1) e_t`` sums the
evidence of a drop starting at every past period. Two guarantees follow without simulation:

* **horizon** (anytime-valid over ``T`` looks): ``R_t + (T - t)`` is a nonnegative supermartingale
  starting at ``T``, so by Ville's inequality ``P(R_t >= T / alpha for some t <= T) <= alpha``:
  the chance of *any* false alarm in the horizon is at most ``alpha``, however often one looks;
* **arl** (average run length): ``R_t - t`` is a supermartingale, so with threshold ``A`` the mean
  time to a false alarm is at least ``A`` periods (Shin, Ramdas and Rinaldo, 2023: e-detectors).
  With a restart after each alarm, ``R_t + A N_t - t`` (``N_t`` alarms so far) is a supermartingale
  too, so the expected number of false alarms in any ``T`` periods is at most ``T / A``; holding the
  alarm instead of restarting only removes alarms.

Several series (metrics x slices) split ``alpha`` (horizon) or multiply ``A`` (arl) by their number
(Bonferroni). Several alternatives (falls of 3, 6, 12 and 24 points) run side by side and the
statistic is their mean: still a Shiryaev-Roberts statistic of e-values, so both guarantees hold.
At an alarm the change is dated by the start ``s`` that maximises ``prod_{i=s..t} e_i`` (the CUSUM's
last reset), and the statistic restarts (or holds the alarm).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["Detection", "cusum", "gaussian_e_values", "shiryaev_roberts", "threshold"]

GUARANTEES = ("horizon", "arl")


def gaussian_e_values(estimate: np.ndarray, se: np.ndarray, reference: np.ndarray | float,
                      drop: float | tuple[float, ...]) -> np.ndarray:
    """Per-period e-values against "rate >= reference" for a fall of ``drop``; 1 where a period has no estimate.

    Several drops: one layer of e-values per drop (shape ``(drops, *estimate.shape)``), for
    :func:`shiryaev_roberts` to mix.

    Examples
    --------
    >>> import numpy as np
    >>> from raglab.monitor._detect import gaussian_e_values
    >>> e = gaussian_e_values(np.array([0.90, 0.86, np.nan]), np.array([0.02, 0.02, np.nan]), 0.90, 0.03)
    >>> np.round(e, 3).tolist()       # at the reference: below 1; 4 points below it: evidence; no estimate: 1
    [0.325, 6.521, 1.0]
    """
    x = np.asarray(estimate, dtype=float)
    s = np.asarray(se, dtype=float)
    m0 = np.asarray(reference, dtype=float)
    ok = np.isfinite(x) & np.isfinite(s) & (s > 0) & np.isfinite(m0)
    layers = []
    for delta in np.atleast_1d(np.asarray(drop, dtype=float)):
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            log_e = (delta * (m0 - x) - delta * delta / 2) / (s * s)
        layers.append(np.where(ok, np.exp(np.minimum(np.where(ok, log_e, 0.0), 700.0)), 1.0))
    return layers[0] if np.ndim(drop) == 0 else np.stack(layers)


class Detection(NamedTuple):
    """The statistic per period, the alarms and, for each alarm, the estimated first period of the change."""

    statistic: np.ndarray  # R_t (after the e-value of period t), shape (periods, series)
    alarm: np.ndarray  # bool, shape (periods, series)
    start: np.ndarray  # at an alarm, the estimated first changed period (index); -1 elsewhere


def shiryaev_roberts(e_values: np.ndarray, threshold: float | np.ndarray, *,
                     restart: np.ndarray | None = None, after_alarm: str = "restart") -> Detection:
    """Shiryaev-Roberts statistic over periods (axis 0) for every series (axis 1); restarts after an alarm.

    ``e_values`` of shape (periods, series), or (alternatives, periods, series): then one statistic
    per alternative, and their mean is the statistic (a mixture keeps every guarantee, and is nearly
    as fast as the best alternative). ``restart`` (bool, (periods, series)): reset before that period.
    ``after_alarm``: ``"restart"`` (start afresh: the next alarm is a new change) or ``"hold"`` (the
    series stays in alarm, no new alarm, until a ``restart``).

    Examples
    --------
    >>> import numpy as np
    >>> from raglab.monitor._detect import shiryaev_roberts
    >>> d = shiryaev_roberts(np.array([[0.5], [4.0], [6.0], [0.5]]), 20.0)
    >>> d.statistic[:, 0].tolist(), d.alarm[:, 0].tolist(), int(d.start[2, 0])
    ([0.5, 6.0, 42.0, 0.5], [False, False, True, False], 1)
    """
    e = np.asarray(e_values, dtype=float)
    if e.ndim == 1:
        e = e[:, None]
    if e.ndim == 2:
        e = e[None]
    _, periods, series = e.shape
    limit = np.broadcast_to(np.asarray(threshold, dtype=float), (series,))
    stat = np.zeros((periods, series))
    alarm = np.zeros((periods, series), dtype=bool)
    start = np.full((periods, series), -1, dtype=np.int64)
    r = np.zeros(e.shape[::2])  # (alternatives, series)
    # a CUSUM on the mixture's log e-values dates the change: the best run ending now, and where it began
    best = np.zeros(series)
    begin = np.zeros(series, dtype=np.int64)
    log_e = np.log(np.maximum(e.mean(axis=0), 1e-300))
    if after_alarm not in ("restart", "hold"):
        raise ValueError(f"after_alarm must be 'restart' or 'hold', got {after_alarm!r}")
    held = np.zeros(series, dtype=bool)
    for t in range(periods):
        if restart is not None:
            reset = restart[t]
            r = np.where(reset, 0.0, r)
            best = np.where(reset, 0.0, best)
            begin = np.where(reset, t, begin)
            held &= ~reset
        r = (r + 1.0) * e[:, t]
        fresh = best <= 0
        begin = np.where(fresh, t, begin)
        best = np.where(fresh, 0.0, best) + log_e[t]
        mixed = r.mean(axis=0)
        stat[t] = mixed
        hit = (mixed >= limit) & ~held
        if after_alarm == "hold":
            held |= hit
        alarm[t] = hit
        start[t] = np.where(hit, begin, -1)
        r = np.where(hit, 0.0, r)
        best = np.where(hit, 0.0, best)
        begin = np.where(hit, t + 1, begin)
    return Detection(stat, alarm, start)


def cusum(log_e: np.ndarray, h: float) -> np.ndarray:
    """Page's CUSUM ``W_t = max(0, W_{t-1} + log e_t)``: alarm (bool per period and series) when ``W_t >= h``; restarts.

    Used as the comparator in ``benchmarks/monitor.py`` (its threshold calibrated by simulation).

    Examples
    --------
    >>> import numpy as np
    >>> from raglab.monitor._detect import cusum
    >>> cusum(np.log(np.array([[0.5], [4.0], [6.0]])), np.log(20.0))[:, 0].tolist()
    [False, False, True]
    """
    x = np.asarray(log_e, dtype=float)
    if x.ndim == 1:
        x = x[:, None]
    w = np.zeros(x.shape[1:])
    out = np.zeros(x.shape, dtype=bool)
    for t in range(x.shape[0]):
        w = np.maximum(0.0, w + x[t])
        out[t] = w >= h
        w = np.where(out[t], 0.0, w)
    return out


def threshold(guarantee: str, *, alpha: float | None = None, horizon: int | None = None, arl: float | None = None,
              series: int = 1) -> float:
    """The Shiryaev-Roberts threshold that gives the guarantee for each of ``series`` series together.

    ``"horizon"``: ``horizon * series / alpha`` (any false alarm in ``horizon`` looks of any series:
    at most ``alpha``); ``"arl"``: ``arl * series`` (each series' mean run length to a false alarm is
    at least ``arl * series`` periods and its expected false alarms in ``T`` periods at most
    ``T / (arl * series)``, so the family's expected false alarms in ``T`` periods are at most
    ``T / arl``: one per ``arl`` periods on average).

    Examples
    --------
    >>> from raglab.monitor._detect import threshold
    >>> threshold("horizon", alpha=0.05, horizon=90, series=2), threshold("arl", arl=365, series=2)
    (3600.0, 730.0)
    """
    if guarantee == "horizon":
        if alpha is None or not 0 < alpha < 1:
            raise ValueError(f"guarantee='horizon' needs alpha in (0, 1), got {alpha!r}")
        if horizon is None or horizon < 1:
            raise ValueError(f"guarantee='horizon' needs horizon >= 1 (looks), got {horizon!r}")
        return float(horizon) * series / float(alpha)
    if guarantee == "arl":
        if arl is None or not arl >= 1:
            raise ValueError(f"guarantee='arl' needs arl >= 1 (periods between false alarms), got {arl!r}")
        return float(arl) * series
    raise ValueError(f"guarantee must be one of {GUARANTEES}, got {guarantee!r}")
