"""Intervals on one run and on the paired difference of two runs.

Every function returns an :class:`~raglab.Interval` that states its method, level and count (and,
for resampling, the number of resamples and the seed):

* :func:`proportion_interval`: a pass rate (Wilson, Wald or Clopper-Pearson);
* :func:`mean_interval`: the mean of continuous scores (t, or a bootstrap);
* :func:`paired_bootstrap`: ``mean(cand - base)`` by resampling questions (or clusters);
* :func:`paired_proportion_interval`: Tango's score interval for two paired pass rates, with its
  bounds vectorised over table cells (``_tango_bounds``) for :func:`raglab.stats.compare`;
* for scores known to lie in [0, 1]: Wilson's interval at the effective n (``_bounded_t``), used by
  :func:`raglab.stats.summary`, and the betting interval of Waudby-Smith & Ramdas
  (``_betting_bounds``), valid at every n for any distribution on known bounds, which
  :func:`raglab.stats.compare` (and so the gate) uses for paired differences of such scores.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import special as _special
from scipy import stats as _sps

from raglab._interval import Interval
from raglab._validation import check_int, check_level, check_option, warn
from raglab.stats._engine import (
    _BOOT_METHODS,
    _as_vector,
    _boot_label,
    _bootstrap_cells,
    _complete_pairs,
    _resolve_seed,
    _unit_codes,
)
from raglab.stats.results import CAPITAL_TEST

__all__ = ["mean_interval", "paired_bootstrap", "paired_proportion_interval", "proportion_interval"]

_PROPORTION_METHODS = ("wilson", "normal", "exact")
_SCORE_LABEL = "paired score (Tango)"


def proportion_interval(successes: int, n: int, ci: float = 0.95, method: str = "wilson") -> Interval:
    """Confidence interval for a pass rate ``successes / n``.

    Parameters
    ----------
    successes, n : int
        Number of passes and of questions (``0 <= successes <= n``, ``n > 0``).
    ci : float
        Confidence level.
    method : {"wilson", "normal", "exact"}
        ``"wilson"`` (score interval, the default: good coverage at small n and near 0 or 1),
        ``"normal"`` (Wald, ``p +- z * sqrt(p(1-p)/n)``, clipped to [0, 1]) or ``"exact"``
        (Clopper-Pearson, conservative).

    Returns
    -------
    Interval
        ``(estimate, low, high)`` with ``method``, ``level`` and ``n``.

    Examples
    --------
    >>> from raglab.stats import proportion_interval
    >>> iv = proportion_interval(210, 300)      # p = 0.7, n = 300
    >>> round(iv.estimate, 3), round(iv.low, 3), round(iv.high, 3)
    (0.7, 0.646, 0.749)
    """
    check_option("method", method, _PROPORTION_METHODS)
    level = check_level(ci)
    if int(n) != n or n <= 0:
        raise ValueError(f"`n` must be a positive integer, got {n!r}")
    if int(successes) != successes or not 0 <= successes <= n:
        raise ValueError(f"`successes` must be an integer between 0 and n={n}, got {successes!r}")
    n = int(n)
    x = int(successes)
    p = x / n
    z = float(_sps.norm.ppf(0.5 + level / 2))
    if method == "normal":
        half = z * np.sqrt(p * (1 - p) / n)
        low, high = max(0.0, p - half), min(1.0, p + half)
    elif method == "wilson":
        low, high = _wilson_bounds(p, n, z)
    else:
        alpha = 1 - level
        low = 0.0 if x == 0 else float(_sps.beta.ppf(alpha / 2, x, n - x + 1))
        high = 1.0 if x == n else float(_sps.beta.ppf(1 - alpha / 2, x + 1, n - x))
    return Interval(p, low, high, method=method, level=level, n=n)


def mean_interval(
    values: Any,
    *,
    ci: float = 0.95,
    method: str = "t",
    n_resamples: int = 10_000,
    seed: int | None = 0,
    units: Any = None,
) -> Interval:
    """Interval on the mean of continuous per-question scores (one run).

    Parameters
    ----------
    values : array-like of float
        Per-question scores; NaN entries are dropped with a warning giving the count.
    ci : float
        Confidence level.
    method : {"t", "percentile", "bca"}
        Student t interval ``mean +- t(n-1) * sd / sqrt(n)``, or a bootstrap interval.
    n_resamples, seed : int
        For the bootstrap methods (the seed is reported with the interval).
    units : array-like, optional
        Cluster labels: resample whole clusters (bootstrap methods only).

    Returns
    -------
    Interval

    Examples
    --------
    >>> from raglab.stats import mean_interval
    >>> iv = mean_interval([0.2, 0.4, 0.6, 0.8])
    >>> round(iv.estimate, 2), round(iv.low, 3), round(iv.high, 3), iv.method
    (0.5, 0.089, 0.911, 't')
    """
    check_option("method", method, ("t", *_BOOT_METHODS))
    level = check_level(ci)
    x = _as_vector(values, "values")
    keep = ~np.isnan(x)
    if not keep.all():
        warn(f"mean_interval: dropped {int((~keep).sum())} missing value(s) of {len(x)}", UserWarning)
    if units is not None:
        if method == "t":
            raise ValueError("units= needs a bootstrap method: pass method='percentile' or 'bca'")
        units = np.asarray(list(units), dtype=object)[keep]
    x = x[keep]
    if x.size == 0:
        raise ValueError("mean_interval needs at least one value that is not missing")
    if method == "t":
        mean, _, low, high = _t_bounds(x, level)
        return Interval(mean, low, high, method="t", level=level, n=x.size)
    n_resamples = check_int(n_resamples, "n_resamples", 1)
    seed = _resolve_seed(seed)
    engine, _, low, high = _bootstrap_cells(
        x[:, None], np.zeros(x.size, dtype=np.intp), 1, grouped=False, units=_unit_codes(units, x.size),
        level=level, method=method, n_resamples=n_resamples, seed=seed,
    )
    return Interval(
        engine.theta[0, 0], low[0, 0], high[0, 0],
        method=_boot_label(method, paired=False, clustered=units is not None),
        level=level, n=x.size, n_resamples=n_resamples, seed=seed,
    )


def _t_bounds(values: np.ndarray, level: float) -> tuple[float, float, float, float]:
    """Mean, standard error and t-interval bounds of a 1-D array without NaN."""
    n = values.size
    if n == 0:
        return (np.nan,) * 4
    values = np.sort(values)  # the same bits whatever the row order
    mean = float(values.mean())
    if n == 1:
        return mean, np.nan, np.nan, np.nan
    if values.min() == values.max():
        return mean, 0.0, mean, mean
    se = float(values.std(ddof=1) / math.sqrt(n))
    half = float(_sps.t.ppf(0.5 + level / 2.0, n - 1)) * se
    return mean, se, mean - half, mean + half


def _bounded_t(values: np.ndarray, mean: float, low: float, high: float, level: float) -> tuple[float, float, float, str]:
    """An interval for the mean of a score known to lie in [0, 1], inside [0, 1].

    Near a bound (recall-like means of 0.9-0.99) the t interval under-covers: the scores pile up at
    the bound and the mean's distribution is skewed away from it. A [0, 1]-valued score has variance
    at most ``mean (1 - mean)``, and a pass/fail one exactly that; so the Wilson score interval is
    used with the *effective* number of questions ``n mean (1 - mean) / s^2`` (the questions of a
    pass/fail metric with the same mean and standard error) and the t quantile on ``n - 1`` degrees
    of freedom. It is never outside [0, 1], it is Wilson's interval (with t's quantile) on pass/fail
    data, and on recall-like scores with means 0.9-0.99 it covers 92-97% at n = 40-300 where the t
    interval covers 46-95% (``benchmarks/coverage.py``, part B). When every value is the same (the
    standard deviation is 0) Wilson's interval at ``n`` is used: never zero-width.
    """
    n = values.size
    if n >= 2 and low == high:
        z = float(_sps.norm.ppf(0.5 + level / 2.0))
        low, high = _wilson_bounds(mean, n, z)
        return mean, low, high, "wilson (bounded score, all values equal)"
    if n < 2 or not np.isfinite(low):
        return mean, low, high, "t"
    variance = float(np.var(values, ddof=1))
    effective = n * mean * (1.0 - mean) / variance  # >= n - 1 for values in [0, 1]
    z = float(_sps.t.ppf(0.5 + level / 2.0, n - 1))
    low, high = _wilson_bounds(mean, effective, z)
    return mean, low, high, "wilson (bounded score, effective n)"


def _wilson_arrays(p: Any, n: float, z: float) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score bounds for proportion(s) ``p`` of one ``n`` (scalars or arrays)."""
    p = np.asarray(p, dtype=float)
    denom = 1 + z**2 / n
    centre = (p + z**2 / (2 * n)) / denom
    half = z * np.sqrt(np.maximum(p * (1 - p), 0.0) / n + z**2 / (4 * n**2)) / denom
    # At 0 or 1 the bound is exactly 0 or 1; rounding would leave 1e-19.
    return (np.where(p <= 0, 0.0, np.maximum(0.0, centre - half)),
            np.where(p >= 1, 1.0, np.minimum(1.0, centre + half)))


def _wilson_bounds(p: float, n: float, z: float) -> tuple[float, float]:
    low, high = _wilson_arrays(p, n, z)
    return float(low), float(high)


def paired_bootstrap(
    base: Any,
    cand: Any,
    *,
    n_resamples: int = 10_000,
    ci: float = 0.95,
    seed: int | None = 0,
    method: str = "percentile",
    units: Any = None,
) -> Interval:
    """Bootstrap interval on the mean paired difference ``mean(cand - base)``.

    Questions are resampled with replacement (or whole clusters, with ``units=``) and the mean
    difference is recomputed ``n_resamples`` times. The draw is exact and fast: resampling ``n``
    rows is the same distribution as one multinomial draw over the *distinct* per-question
    differences (three for a pass/fail metric), which is what is drawn; see the module notes.

    Parameters
    ----------
    base, cand : array-like of float
        Per-question scores of the same questions in the same order. Pairs with NaN on either side
        are dropped with a warning that gives the count.
    n_resamples : int
        Number of bootstrap resamples.
    ci : float
        Confidence level.
    seed : int or None
        Seed of ``np.random.default_rng``; None draws a fresh seed and reports it.
    method : {"percentile", "bca"}
        Percentile interval, or bias-corrected and accelerated (jackknife acceleration, as in
        ``scipy.stats.bootstrap(method="BCa")``).
    units : array-like, optional
        A cluster label per question (document, conversation): clusters are resampled whole.

    Returns
    -------
    Interval
        ``(estimate, low, high)`` with ``method`` such as ``"paired bootstrap (percentile)"``,
        ``level``, ``n`` (pairs), ``n_resamples`` and ``seed``. With fewer than two pairs (or
        clusters) there is no interval: ``low`` and ``high`` are NaN. Differences that are all the
        same give a zero-width interval.

    Examples
    --------
    >>> from raglab.stats import paired_bootstrap
    >>> base = [1, 1, 0, 1, 0, 1, 1, 0, 1, 1] * 30
    >>> cand = [1, 0, 0, 1, 0, 1, 1, 0, 1, 1] * 30
    >>> iv = paired_bootstrap(base, cand, seed=0)
    >>> round(iv.estimate, 3), iv.low < iv.estimate < iv.high, iv.method
    (-0.1, True, 'paired bootstrap (percentile)')
    """
    check_option("method", method, _BOOT_METHODS)
    level = check_level(ci)
    n_resamples = check_int(n_resamples, "n_resamples", 1)
    seed = _resolve_seed(seed)
    b, c, units = _complete_pairs(base, cand, units, "paired_bootstrap")
    diffs = (c - b)[:, None]
    codes = np.zeros(len(b), dtype=np.intp)
    engine, _, low, high = _bootstrap_cells(
        diffs, codes, 1, grouped=False, units=_unit_codes(units, len(b)), level=level, method=method,
        n_resamples=n_resamples, seed=seed,
    )
    return Interval(
        engine.theta[0, 0], low[0, 0], high[0, 0],
        method=_boot_label(method, paired=True, clustered=units is not None),
        level=level, n=len(b), n_resamples=n_resamples, seed=seed,
    )


# --------------------------------------------------------------------------------------------------
# Paired pass/fail: a score interval that stays honest at small n
# --------------------------------------------------------------------------------------------------


def _tango_statistic(delta: np.ndarray, down: np.ndarray, up: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Tango's score statistic for ``H0: P(up) - P(down) = delta`` (decreasing in ``delta``).

    ``down`` counts pairs that went 1 -> 0, ``up`` pairs that went 0 -> 1, of ``n`` pairs. The
    variance uses the restricted maximum-likelihood estimate of P(down) under ``delta``: the
    feasible root of ``2n q^2 - q (down + up - delta (2n + down - up)) - down delta (1 - delta) = 0``.
    """
    b = down + up - delta * (2 * n + down - up)
    q = (b + np.sqrt(np.maximum(b * b + 8 * n * down * delta * (1 - delta), 0.0))) / (4 * n)
    variance = n * (2 * q + delta * (1 - delta))
    with np.errstate(invalid="ignore", divide="ignore"):
        return (up - down - n * delta) / np.sqrt(variance)


def _tango_bounds(down: Any, up: Any, n: Any, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Tango's score interval ``{delta : |T(delta)| <= z}`` by bisection, vectorised over cells.

    Never zero-width for n >= 1 (with no discordant pair at all it is about +-z^2/(n+z^2) wide) and
    always inside [-1, 1].
    """
    down, up, n = (np.asarray(x, dtype=float) for x in (down, up, n))
    z = float(_special.ndtri(0.5 + level / 2.0))
    estimate = np.where(n > 0, (up - down) / np.where(n > 0, n, 1), np.nan)
    bounds = []
    for side in (-1.0, 1.0):  # lower bound: T(delta) = z below the estimate; upper: T = -z above it
        inside, outside = estimate.copy(), np.full(estimate.shape, side)
        for _ in range(64):  # 2^-64 of the starting gap: exact to float precision
            mid = (inside + outside) / 2.0
            t = _tango_statistic(mid, down, up, n)
            beyond = (t > z) if side < 0 else (t < -z)
            outside = np.where(beyond, mid, outside)
            inside = np.where(beyond, inside, mid)
        # At delta = +-1 the statistic is infinite unless every pair moved that way: then the bound is +-1.
        edge = _tango_statistic(np.full(estimate.shape, side), down, up, n)
        at_edge = ~((edge > z) if side < 0 else (edge < -z))
        bounds.append(np.where(np.isnan(estimate), np.nan, np.where(at_edge, side, inside)))
    return bounds[0], bounds[1]


def paired_proportion_interval(base: Any, cand: Any, *, ci: float = 0.95) -> Interval:
    """Score interval for the difference of two paired pass rates (Tango, 1998).

    The interval inverts Tango's score test for ``P(cand passes) - P(base passes)``, using only the
    discordant counts (``down``: pass -> fail, ``up``: fail -> pass) and the number of pairs. Unlike
    the percentile bootstrap, it keeps its coverage when few pairs differ and is never zero-width:
    with no discordant pair among ``n`` it still spans about ``+-z^2 / (n + z^2)``. It is the
    interval the release gate uses for pass/fail metrics.

    Parameters
    ----------
    base, cand : array-like of 0/1
        Paired pass/fail scores of the same questions in the same order; pairs with NaN on either
        side are dropped with a warning.
    ci : float
        Confidence level.

    Returns
    -------
    Interval
        ``(estimate, low, high)`` with ``method="paired score (Tango)"``, ``level`` and ``n`` pairs.

    References
    ----------
    Tango T. (1998) Equivalence test and confidence interval for the difference in proportions for
    the paired-sample design. Statistics in Medicine 17:891-908.

    Examples
    --------
    >>> from raglab.stats import paired_proportion_interval
    >>> iv = paired_proportion_interval([1, 1, 1], [1, 1, 1])      # three questions: no evidence
    >>> round(iv.estimate, 3), round(iv.low, 3), round(iv.high, 3)
    (0.0, -0.561, 0.561)
    """
    level = check_level(ci)
    b, c, _ = _complete_pairs(base, cand, None, "paired_proportion_interval")
    if not (np.isin(b, (0.0, 1.0)).all() and np.isin(c, (0.0, 1.0)).all()):
        raise ValueError(
            "paired_proportion_interval needs pass/fail scores (0 or 1) on both sides; use paired_bootstrap for others"
        )
    down, up = int(((b == 1) & (c == 0)).sum()), int(((b == 0) & (c == 1)).sum())
    low, high = _tango_bounds(down, up, b.size, level)
    return Interval((up - down) / b.size, float(low), float(high), method=_SCORE_LABEL, level=level, n=b.size)


# --------------------------------------------------------------------------------------------------
# Bounded scores: the betting confidence bound (valid at every n, for any distribution on known bounds)
# --------------------------------------------------------------------------------------------------

_BETTING_LABEL = "paired betting (Waudby-Smith-Ramdas)"
_CAPITAL_TEST = CAPITAL_TEST  # the `test` of betting rows: p = min(1, 1 / capital at 0)
_BETTING_ORDERS = 8  # random orders of the sample whose capitals are averaged (order-free, steadier)
_BETTING_TRUNCATION = 0.75  # a bet never stakes more than this share of the capital (WSR's c)
_BETTING_GRID = 24  # candidate means per refinement round
_BETTING_ROUNDS = 5  # rounds of refinement: the bound is exact to 25**-5 of its bracket (1e-7)


def _betting_lambdas(ordered: np.ndarray, alpha: float) -> np.ndarray:
    """Predictable bet sizes (before truncation) for each order: WSR's fixed-n rule
    ``sqrt(2 log(1/alpha) / (n sigma^2_{t-1}))`` with their shrunk running mean and variance."""
    n = ordered.shape[-1]
    t = np.arange(1, n + 1)
    mu = (0.5 + np.cumsum(ordered, axis=-1)) / (t + 1)  # mu_t uses x_1..x_t
    var = (0.25 + np.cumsum((ordered - mu) ** 2, axis=-1)) / (t + 1)
    previous = np.concatenate([np.full(ordered.shape[:-1] + (1,), 0.25), var[..., :-1]], axis=-1)
    return np.sqrt(2.0 * np.log(1.0 / alpha) / (n * previous))


def _betting_sequences(x: np.ndarray, alpha: float, seed: Any, orders: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``orders`` random orders of the sorted sample and their bet sizes, drawn from a generator of
    its own seeded with ``seed``: each side of an interval (and its p-value) gets the same orders,
    so the two sides are mirror images (symmetric data gives equal tails) and a p-value uses the
    very capitals its bound was read from."""
    ordered = np.sort(x)
    perms = np.argsort(np.random.default_rng(seed).random((orders, x.size)), axis=1)
    seq = ordered[perms]  # (orders, n)
    return seq, _betting_lambdas(seq, alpha)


def _betting_lower(x: np.ndarray, alpha: float, seed: Any, orders: int) -> float:
    """One-sided (1 - alpha) lower confidence bound on the mean of ``x`` in [0, 1] by betting.

    The capital of a gambler who bets that the mean exceeds ``m``, ``K(m) = prod (1 + lambda_t (x_t - m))``,
    is a nonnegative martingale with expectation 1 when the mean is ``m`` (any distribution on
    [0, 1]), so ``K(m) >= 1 / alpha`` happens with probability at most ``alpha`` (Ville / Markov).
    The capital is averaged over ``orders`` random orders of the sorted sample (an average of such
    capitals keeps expectation 1, and sorting first makes the bound independent of row order).
    Every factor of ``K`` falls as ``m`` rises, so the bound is the smallest ``m`` not rejected,
    found on a grid refined in rounds inside a bracket that is checked first.
    """
    seq, lam = _betting_sequences(x, alpha, seed, orders)
    threshold = np.log(1.0 / alpha) + np.log(orders)  # mean capital >= 1/alpha  <=>  logsumexp >= this
    ordered = np.sort(x)  # row order must not move the bracket (float sums)
    mean = float(ordered.mean())
    spread = 4.0 * (float(ordered.std()) + 0.1) * math.sqrt(math.log(1.0 / alpha) / x.size)
    # Bracket: low rejected (or 0, which bounds the mean anyway), high not rejected.
    probes = np.array([0.0, max(0.0, mean - spread), mean, 1.0])
    return _first_not_rejected(lambda grid: _log_capital(seq, lam, grid) >= threshold, probes)


def _first_not_rejected(rejects: Any, probes: np.ndarray) -> float:
    """The smallest mean in [0, 1] a bettor does not reject, when the rejected means are a prefix (the
    capital falls as the mean rises): checked at ``probes`` (0 first), then refined on a grid in rounds."""
    rejected = rejects(probes)
    if not rejected[0]:
        return 0.0
    k = int(rejected.sum())
    low, high = probes[k - 1], probes[k] if k < probes.size else 1.0
    for _ in range(_BETTING_ROUNDS):
        grid = np.linspace(low, high, _BETTING_GRID + 2)[1:-1]
        k = int(rejects(grid).sum())
        low, high = (grid[k - 1] if k else low), (grid[k] if k < grid.size else high)
    return float(low)


def _log_capital(seq: np.ndarray, lam: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """log of the summed capital over orders, per candidate mean in ``grid`` (chunked over the grid)."""
    out = np.empty(grid.size)
    per = max(1, int(2**22 // max(seq.size, 1)))
    for start in range(0, grid.size, per):
        m = grid[start : start + per, None, None]
        with np.errstate(divide="ignore"):
            cap = np.where(m > 0, np.minimum(lam[None], _BETTING_TRUNCATION / np.where(m > 0, m, 1.0)), lam[None])
        logs = np.log1p(cap * (seq[None] - m)).sum(axis=-1)  # (grid, orders)
        top = logs.max(axis=-1)
        out[start : start + per] = top + np.log(np.exp(logs - top[:, None]).sum(axis=-1))  # logsumexp
    return out


def _unit_scaled(values: Any, lower: float, upper: float, null: float = 0.0) -> tuple[np.ndarray, float] | None:
    """``values`` and ``null`` mapped from [lower, upper] onto [0, 1] for a bettor; None below two values."""
    values = np.asarray(values, dtype=float)
    if values.size < 2:
        return None
    span = upper - lower
    return np.clip((values - lower) / span, 0.0, 1.0), min(max((null - lower) / span, 0.0), 1.0)


def _betting_bounds(
    values: np.ndarray, lower: float, upper: float, level: float, seed: Any, orders: int = _BETTING_ORDERS
) -> tuple[float, float]:
    """Two-sided betting interval at ``level`` for the mean of ``values`` known to lie in [lower, upper].

    Each side holds at ``(1 - level) / 2`` for any distribution on [lower, upper] and any n (no
    normal approximation, no resampling): a wrong "within the margin" has probability at most that.
    NaN bounds below two values. The same multiset of values and seed give the same bounds.
    """
    scaled = _unit_scaled(values, lower, upper)
    if scaled is None:
        return float("nan"), float("nan")
    x, span, alpha = scaled[0], upper - lower, (1.0 - level) / 2.0
    # One seed for both sides (not one stream read twice): the high side is the low side's mirror image.
    low = _betting_lower(x, alpha, seed, orders)
    high = 1.0 - _betting_lower(1.0 - x, alpha, seed, orders)
    return lower + span * low, lower + span * high


def _betting_p_values(
    values: np.ndarray, lower: float, upper: float, level: float, seed: Any, null: float = 0.0,
    orders: int = _BETTING_ORDERS,
) -> tuple[float, float]:
    """One-sided p-values ``(p_below, p_above)`` for the mean of ``values`` (in [lower, upper]) being
    below / above ``null``, read off the betting capital: ``p = min(1, 1 / K(null))``.

    ``K`` is the capital (averaged over the same random orders, with the same bets) from which
    :func:`_betting_bounds` at ``level`` and ``seed`` reads its bounds, so ``p_above < (1 - level) / 2``
    exactly when the gambler betting that the mean exceeds ``null`` ends with more than
    ``2 / (1 - level)``: the low bound is then at or above ``null`` (to the bound's grid, 1e-7), and a low
    bound above ``null`` means ``p_above <= (1 - level) / 2``. When the mean is ``null`` (or on the
    other side), ``K(null)`` has expectation at most 1 for any distribution on [lower, upper] and any
    n, so ``P(p <= a) <= a`` for every ``a`` (Markov): a valid p-value, which Holm may adjust.
    Unlike a sign-flip p-value it needs no symmetry. (As for the bounds, the expectation is over the
    random orders too; with one seed fixed, exact enumeration in ``tests/test_gate_tails.py`` finds
    ``P(p < 0.025)`` at most 0.0063 on every mean-0 law it tries.) NaN below two values.
    """
    scaled = _unit_scaled(values, lower, upper, null)
    if scaled is None:
        return float("nan"), float("nan")
    x, m = scaled
    alpha = (1.0 - level) / 2.0
    out = []
    for side, at in ((1.0 - x, 1.0 - m), (x, m)):  # betting on a mean below null, then above it
        seq, lam = _betting_sequences(side, alpha, seed, orders)
        log_mean_capital = float(_log_capital(seq, lam, np.array([at]))[0]) - math.log(orders)
        out.append(math.exp(-max(log_mean_capital, 0.0)))  # min(1, 1 / K), without overflow
    return out[0], out[1]


# --------------------------------------------------------------------------------------------------
# Looked at every hour: the betting confidence sequence (valid at every look, in arrival order)
# --------------------------------------------------------------------------------------------------

_SEQUENTIAL_LABEL = "paired betting confidence sequence (arrival order; valid at every look)"


def _sequence_lambdas(x: np.ndarray, alpha: float) -> np.ndarray:
    """WSR's predictable plug-in bets for a confidence *sequence* (their eq. 27, one-sided):
    ``sqrt(2 log(1/alpha) / (sigma^2_{t-1} t log(1 + t)))`` with the shrunk running mean and variance;
    unlike the fixed-n rule they do not know n, so the bound holds at every t at once."""
    t = np.arange(1, x.size + 1)
    mu = (0.5 + np.cumsum(x)) / (t + 1)
    var = (0.25 + np.cumsum((x - mu) ** 2)) / (t + 1)
    previous = np.concatenate([[0.25], var[:-1]])
    return np.sqrt(2.0 * np.log(1.0 / alpha) / (previous * t * np.log1p(t)))


def _sequence_max_log_capital(x: np.ndarray, lam: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """``max_{s <= n} log K_s(m)`` per candidate ``m``: the capital's running maximum (a CS rejects ``m``
    once the capital has ever reached ``1 / alpha``, so a look never un-rejects it)."""
    out = np.empty(grid.size)
    per = max(1, int(2**22 // max(x.size, 1)))
    for start in range(0, grid.size, per):
        m = grid[start : start + per, None]
        with np.errstate(divide="ignore"):
            cap = np.where(m > 0, np.minimum(lam[None], _BETTING_TRUNCATION / np.where(m > 0, m, 1.0)), lam[None])
        path = np.cumsum(np.log1p(cap * (x[None] - m)), axis=-1)
        out[start : start + per] = np.maximum(path.max(axis=-1), 0.0)
    return out


def _sequence_lower(x: np.ndarray, alpha: float) -> float:
    """Lower (1 - alpha) bound of the betting confidence sequence on the mean of ``x`` in [0, 1], in the
    given (arrival) order. Every factor falls as ``m`` rises, so the rejected means are a prefix."""
    lam = _sequence_lambdas(x, alpha)
    threshold = math.log(1.0 / alpha)
    probes = np.array([0.0, float(x.mean()), 1.0])
    return _first_not_rejected(lambda grid: _sequence_max_log_capital(x, lam, grid) >= threshold, probes)


def _sequence_bounds(values: np.ndarray, lower: float, upper: float, level: float) -> tuple[float, float]:
    """Two-sided betting confidence sequence at ``level`` for the mean of ``values`` (in arrival order, in
    [lower, upper]): each side holds at ``(1 - level) / 2`` at every look at once, for any distribution
    on the bounds (Waudby-Smith and Ramdas 2023, predictable plug-in). NaN below two values."""
    scaled = _unit_scaled(values, lower, upper)
    if scaled is None:
        return float("nan"), float("nan")
    x, span, alpha = scaled[0], upper - lower, (1.0 - level) / 2.0
    return lower + span * _sequence_lower(x, alpha), lower + span * (1.0 - _sequence_lower(1.0 - x, alpha))


def _sequence_p_values(values: np.ndarray, lower: float, upper: float, level: float,
                       null: float = 0.0) -> tuple[float, float]:
    """Anytime-valid one-sided p-values ``(p_below, p_above)``: ``min(1, 1 / max_s K_s(null))`` with the
    bets of :func:`_sequence_bounds`; ``P(p_t <= a for some t) <= a`` when the mean is ``null``."""
    scaled = _unit_scaled(values, lower, upper, null)
    if scaled is None:
        return float("nan"), float("nan")
    x, m = scaled
    alpha = (1.0 - level) / 2.0
    out = []
    for side, at in ((1.0 - x, 1.0 - m), (x, m)):
        lam = _sequence_lambdas(side, alpha)
        out.append(math.exp(-float(_sequence_max_log_capital(side, lam, np.array([at]))[0])))
    return out[0], out[1]
