"""Correcting a judge's pass rate for its errors: the Rogan-Gladen estimator and its interval.

:func:`rogan_gladen` turns a judge's pass rate into the true pass rate its sensitivity and
specificity imply, with a delta-method or parametric-bootstrap interval kept inside [0, 1]; an
impossible rate (outside what the error rates allow) warns with :class:`ImpossibleRateWarning`.
:meth:`raglab.agreement.AgreementReport.correct` uses the same estimator with the report's counts
or cluster-bootstrap replicates.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from raglab._interval import Interval
from raglab._validation import check_level, check_option, warn
from raglab.agreement._common import (
    RG_METHODS,
    ImpossibleRateWarning,
    check_resamples,
    normal_quantile,
    percentile,
)

__all__ = ["rogan_gladen"]


def rogan_gladen(
    judge_rate: float,
    *,
    sensitivity: float,
    specificity: float,
    n: int | None = None,
    n_positive: int | None = None,
    n_negative: int | None = None,
    ci: float = 0.95,
    method: str = "delta",
    n_resamples: int = 10_000,
    seed: int | None = 0,
) -> Interval:
    """The true pass rate implied by a judge's pass rate and its error rates (Rogan & Gladen 1978).

    ``pi = (judge_rate + specificity - 1) / (sensitivity + specificity - 1)``. A judge with these
    error rates passes between ``1 - specificity`` (no answer truly passes) and ``sensitivity``
    (every answer does) of a run; a rate outside that range is impossible under the error rates, so
    ``pi`` falls outside [0, 1]. Then an :class:`ImpossibleRateWarning` says so, the estimate is
    clipped to the nearer bound, and the interval is the part of the unclipped interval inside
    [0, 1] -- never a zero-width interval at the bound. When the whole interval lies outside [0, 1]
    the inputs contradict each other beyond their sampling error (the judge behaves differently on
    this run than on the validation items): the bounds are NaN and the method says why.

    Parameters
    ----------
    judge_rate : float
        The judge's pass rate on the run to correct.
    sensitivity, specificity : float
        The judge's rates measured against people (e.g. :class:`AgreementReport`).
    n : int, optional
        Items behind ``judge_rate``; with ``n_positive`` and ``n_negative`` (the human-positive and
        human-negative items behind the sensitivity and specificity) it gives the interval. Without
        them there is no interval (NaN bounds).
    ci : float
        Confidence level.
    method : {"delta", "bootstrap"}
        "delta": ``pi +- z * SE`` with ``SE**2 = [p(1-p)/n + pi**2 Se(1-Se)/n_pos + (1-pi)**2
        Sp(1-Sp)/n_neg] / J**2`` (the three rates treated as independent binomials; ``pi`` clipped
        to [0, 1] inside the variance). "bootstrap": parametric, redrawing the three rates from their
        binomials ``n_resamples`` times (seeded); percentile interval of the unclipped estimates.
        Either way the bounds are then kept inside [0, 1].

    Returns
    -------
    Interval

    Raises
    ------
    ValueError
        When ``sensitivity + specificity <= 1``: the judge is no better than chance and its rate
        cannot be corrected.

    Examples
    --------
    >>> iv = rogan_gladen(0.82, sensitivity=142 / 150, specificity=28 / 50, n=200, n_positive=150,
    ...                   n_negative=50)
    >>> round(iv.estimate, 3)
    0.75
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     iv = rogan_gladen(0.97, sensitivity=0.95, specificity=0.8, n=300, n_positive=150, n_negative=50)
    >>> caught[0].category.__name__, iv.estimate, round(iv.low, 3), iv.high    # above 0.95: impossible
    ('ImpossibleRateWarning', 1.0, 0.974, 1.0)
    """
    check_option("method", method, RG_METHODS)
    level = check_level(ci)
    for name, value in (("judge_rate", judge_rate), ("sensitivity", sensitivity), ("specificity", specificity)):
        if not 0 <= value <= 1:
            raise ValueError(f"`{name}` must be a rate between 0 and 1, got {value!r}")
    counts = (n, n_positive, n_negative)
    if any(c is None for c in counts) and any(c is not None for c in counts):
        raise ValueError("pass all of n, n_positive and n_negative for an interval, or none of them")
    if n is not None:
        for name, c in zip(("n", "n_positive", "n_negative"), counts):
            if int(c) != c or c <= 0:
                raise ValueError(f"`{name}` must be a positive integer, got {c!r}")
        check_resamples(n_resamples)
    return rogan_gladen_interval(
        judge_rate, sensitivity, specificity, n=n, level=level, method=method, n_resamples=n_resamples, seed=seed,
        counts=None if n is None else (int(n_positive), int(n_negative)),
    )


def rogan_gladen_interval(
    judge_rate: float,
    sensitivity: float,
    specificity: float,
    *,
    n: int | None,
    level: float,
    method: str,
    n_resamples: int,
    seed: int | None,
    counts: tuple[int, int] | None = None,
    draws: np.ndarray | None = None,
    source: str = "",
) -> Interval:
    """Rogan-Gladen with Se/Sp uncertainty from binomial ``counts`` or from joint ``draws`` (B x 2).

    ``draws`` are bootstrap replicates of (sensitivity, specificity), e.g. from a cluster bootstrap
    of the validation items: the delta method uses their variances and covariance, the bootstrap
    pairs them with binomial redraws of the judge's rate.
    """
    youden = sensitivity + specificity - 1
    if youden <= 0:
        raise ValueError(
            f"the judge is no better than chance (sensitivity + specificity - 1 = {youden:.3f} <= 0), so its "
            "pass rate cannot be corrected; fix the judge first"
        )
    raw = (judge_rate + specificity - 1) / youden
    estimate = min(1.0, max(0.0, raw))
    clipped = ""
    if raw != estimate:
        clipped = f"; estimate clipped to [0, 1] from {raw:.3f}"
        warn(
            f"rogan_gladen: the judge's pass rate {judge_rate:.3f} is impossible under its error rates: with "
            f"sensitivity {sensitivity:.3f} and specificity {specificity:.3f} it passes between "
            f"{1 - specificity:.3f} (no answer truly passes) and {sensitivity:.3f} (every answer does). The "
            f"corrected rate {raw:.3f} is clipped to {estimate:g} and the interval keeps only its part inside "
            "[0, 1]. The judge's errors on this run differ from those measured (re-validate it on answers "
            "like these), or its rates were measured on too few items.",
            ImpossibleRateWarning,
        )
    if n is None:
        return Interval(estimate, math.nan, math.nan, method=f"rogan-gladen{clipped}; no interval: counts not given",
                        level=level)
    if method == "delta":
        pi = estimate  # the true rate lies in [0, 1]: weight the Se and Sp variances there
        if draws is not None:
            cov = np.cov(draws[np.isfinite(draws).all(1)].T)
            var_se, var_sp, cov_se_sp = float(cov[0, 0]), float(cov[1, 1]), float(cov[0, 1])
        else:
            var_se = sensitivity * (1 - sensitivity) / counts[0]
            var_sp = specificity * (1 - specificity) / counts[1]
            cov_se_sp = 0.0
        var = (
            judge_rate * (1 - judge_rate) / n + pi**2 * var_se + (1 - pi) ** 2 * var_sp - 2 * pi * (1 - pi) * cov_se_sp
        ) / youden**2
        half = normal_quantile(level) * math.sqrt(max(var, 0.0))
        low, high, label = raw - half, raw + half, "rogan-gladen delta method"
        extra: dict[str, Any] = {}
    else:
        rng = np.random.default_rng(seed)
        p = rng.binomial(int(n), judge_rate, n_resamples) / n
        if draws is not None:
            pick = draws[rng.integers(0, len(draws), n_resamples)]
            se, sp = pick[:, 0], pick[:, 1]
        else:
            se = rng.binomial(counts[0], sensitivity, n_resamples) / counts[0]
            sp = rng.binomial(counts[1], specificity, n_resamples) / counts[1]
        j = se + sp - 1
        with np.errstate(divide="ignore", invalid="ignore"):
            boot = np.where(j > 0, (p + sp - 1) / j, np.nan)
        low, high = percentile(boot, level)
        label = "rogan-gladen parametric bootstrap-percentile"
        extra = {"n_resamples": n_resamples, "seed": seed}
    return _bounded_interval(estimate, low, high, label + source + clipped, level=level, n=n, **extra)


def _bounded_interval(estimate: float, low: float, high: float, label: str, **meta: Any) -> Interval:
    """The part of [low, high] inside [0, 1]; no interval (NaN) when none of it is."""
    if math.isnan(low) or math.isnan(high):
        return Interval(estimate, math.nan, math.nan, method=f"{label}; no interval", **meta)
    if high < 0 or low > 1:
        return Interval(
            estimate, math.nan, math.nan,
            method=f"{label}; no interval: all of [{low:.3f}, {high:.3f}] lies outside [0, 1], so the inputs "
            "contradict each other beyond their sampling error", **meta,
        )
    return Interval(estimate, max(0.0, low), min(1.0, high), method=f"{label}, bounds kept in [0, 1]", **meta)
