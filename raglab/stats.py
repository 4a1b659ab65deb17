"""Intervals on one run, paired comparisons between runs, and the release gate.

Every interval states its method, level, count and (for resampling) the number of resamples and
the seed; see :class:`raglab.stats.Interval`.
"""

from __future__ import annotations

import numpy as np
from scipy import stats as _sps

from raglab._interval import Interval

__all__ = ["Interval", "proportion_interval"]

_PROPORTION_METHODS = ("wilson", "normal", "exact")


def _check_level(ci: float) -> float:
    if not 0 < ci < 1:
        raise ValueError(f"`ci` must be a confidence level strictly between 0 and 1 (e.g. 0.95), got {ci!r}")
    return float(ci)


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
    if method not in _PROPORTION_METHODS:
        raise ValueError(
            f"The value for `method` must be one of {list(_PROPORTION_METHODS)}, but {method!r} was passed."
        )
    level = _check_level(ci)
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
        denom = 1 + z**2 / n
        centre = (p + z**2 / (2 * n)) / denom
        half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / denom
        # At 0 or n successes the bound is exactly 0 or 1; rounding would leave 1e-19.
        low = 0.0 if x == 0 else max(0.0, centre - half)
        high = 1.0 if x == n else min(1.0, centre + half)
    else:
        alpha = 1 - level
        low = 0.0 if x == 0 else float(_sps.beta.ppf(alpha / 2, x, n - x + 1))
        high = 1.0 if x == n else float(_sps.beta.ppf(1 - alpha / 2, x + 1, n - x))
    return Interval(p, low, high, method=method, level=level, n=n)
