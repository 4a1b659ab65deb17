"""Sizing the release gate: the questions at which an unchanged candidate passes its margin.

:func:`questions_for_gate` inverts the non-inferiority rule of one row of :func:`raglab.stats.gate`
for a candidate that truly did not change (exactly, on Tango's interval, for pass/fail metrics), from the variance of one question's paired difference
(the discordance, ``sd_diff**2``, or the discordance of a judge's labels).
"""

from __future__ import annotations

import math
from typing import Any

from scipy import stats as _sps

from raglab.sizing._checks import _N_MAX, _check_sd_diff, _is_number, _judge_rates, _rate
from raglab.sizing.outcomes import PairedOutcomes, paired_outcomes
from raglab.sizing.release import _check_spread, _declared_bounds, _Row, _search
from raglab.stats._gate import MIN_RESAMPLED

__all__ = ["questions_for_gate"]


def _gate_variance(
    *, paired: bool, discordance: Any, sd_diff: Any, p: Any, sensitivity: Any, specificity: Any,
) -> tuple[float, PairedOutcomes | None]:
    """Variance of one question's difference (cand - base) when nothing truly changed."""
    if not paired:
        raise ValueError(
            "the release gate compares paired runs (both configs answer the same questions, paired by "
            "question id): pass paired=True (the default)"
        )
    judge = _judge_rates(sensitivity, specificity)
    if sd_diff is not None:
        sd_diff = _check_sd_diff(sd_diff, discordance)
        if judge is not None or p is not None:
            raise ValueError(
                "`sd_diff` sizes a continuous metric on its own: drop `p`, `sensitivity` and `specificity` "
                "(pass/fail designs); measure `sd_diff` on the judge's scores if a judge gives them"
            )
        return float(sd_diff) ** 2, None
    if discordance is None:
        raise ValueError(
            "sizing the gate needs `discordance` (pass/fail: the share of questions whose pass/fail differs "
            "between two runs of an unchanged config) or `sd_diff` (continuous: sd of per-question differences)"
        )
    q = _rate("discordance", discordance, open_low=True)
    if judge is None:
        if p is not None:
            raise ValueError(
                f"`p` = {p!r} does not change the gate's sizing without a judge: the variance of a paired "
                "difference with no true change is the discordance. Drop `p`, or pass `sensitivity=` and "
                "`specificity=` too when a judge labels the answers (then `p` and `discordance` are the TRUE outcomes)"
            )
        return q, None
    if p is None:
        raise ValueError(
            "sizing the gate with a judge's `sensitivity` and `specificity` needs `p`, the baseline's TRUE pass "
            "rate (e.g. p=0.7)"
        )
    seen = paired_outcomes(p, discordance=q, change=0.0).through_judge(sensitivity=judge[0], specificity=judge[1])
    return seen.discordance, seen


def questions_for_gate(
    margin: float,
    *,
    paired: bool = True,
    discordance: float | None = None,
    sd_diff: float | None = None,
    p: float | None = None,
    sensitivity: float | None = None,
    specificity: float | None = None,
    power: float = 0.8,
    ci: float = 0.95,
    slice_fraction: float = 1.0,
    interval: str | None = None,
    bounds: tuple[float, float] | None = None,
) -> int:
    """Questions at which a truly unchanged candidate passes ONE row of the gate with the asked power.

    This sizes one row (the overall row, or with ``slice_fraction`` one slice). A release passes
    only when every row passes, overall and every slice, for every metric: size that with
    :func:`questions_for_release` (at this function's ``slice_fraction=1/K`` an unchanged release
    with K equal slices passes about 0.63, 0.41, 0.17 of the time for K = 2, 4, 8, not 0.80; with the
    normal approximation this function used before, 0.63, 0.38, 0.15).

    The gate (:func:`raglab.stats.gate`) passes a row when the lower end of the two-sided ``ci``
    interval on ``mean(cand - base)`` is at least ``-margin``. **Pass/fail metrics**: the gate's
    interval is Tango's score interval, and the pass probability is summed exactly over the row's
    discordant counts (:mod:`raglab.sizing.release`); ``n`` is the smallest with that probability at
    least ``power`` (and for the next 20). The normal approximation below asks 2-6% fewer and
    passes 0.78-0.80. **Continuous metrics** (``sd_diff``): with no true change and a per-question
    difference of variance ``v``, the lower end is about ``N(0, v / n) - z sqrt(v / n)`` with
    ``z = z_{1 - (1 - ci) / 2}``, so the gate passes with probability ``Phi(margin sqrt(n / v) - z)`` and

    ``n = ceil((z + z_power)**2 * v / margin**2)``.

    A continuous metric the gate decides with the **betting interval** (a score in [0, 1]:
    ``interval="betting"``; or declared ``bounds=(low, high)``, as given to the gate) is sized on that
    interval instead (about ``sqrt(2 log(1/alpha))`` = 2.72 sd / sqrt(n) wide at ci 0.95 where the
    formula above has 1.96, plus a small-n excess; see :mod:`raglab.sizing.release`): 1.6 to 2 times
    the questions. This function has no metric name, so it does not guess; :func:`questions_for_release`
    takes the interval from the metric's name.

    ``v`` is the discordance for a pass/fail metric (the share of questions whose outcome differs
    between two runs of equal quality) and ``sd_diff**2`` for a continuous one. With a judge
    (``sensitivity``, ``specificity`` and the TRUE ``p`` and ``discordance``), ``v`` is the
    discordance of the judge's labels, larger than the true one (see :func:`paired_outcomes`), and
    the margin applies to the judge's pass rate, which is what the gate sees.

    Parameters
    ----------
    margin : float
        The gate's non-inferiority margin (the largest drop to ship without discussion).
    paired : bool
        The gate is paired by question id; only True is accepted.
    discordance, sd_diff, p, sensitivity, specificity : float, optional
        As in :func:`questions_needed` (``p`` is used with a judge and refused without one).
    power : float
        Probability that an unchanged candidate passes.
    ci : float
        Level of the gate's two-sided interval (its ``ci=``).
    slice_fraction : float
        Share of the questions in the slice (every slice row must pass too): the total ``ceil(n / f)``.
    interval : {"betting", "bootstrap"}, optional
        Continuous metrics: the gate's interval for it (default the formula above, the bootstrap's).
    bounds : (float, float), optional
        Continuous metrics: the bounds declared to the gate; the row is sized on the betting interval.

    Returns
    -------
    int
        Total questions; at least the gate's minimum in the slice (below it the gate reviews): 10
        questions, and 30 for a continuous row decided by the bootstrap.

    Examples
    --------
    >>> questions_for_gate(0.02, discordance=0.1)      # exact; normal: (1.96 + 0.84)^2 x 0.1 / 0.02^2 = 1963
    1994
    >>> questions_for_gate(0.02, discordance=0.1, p=0.7, sensitivity=0.943, specificity=0.635)
    4867
    >>> questions_for_gate(0.01, sd_diff=0.15)
    1766
    >>> questions_for_gate(0.01, sd_diff=0.15, interval="betting")     # e.g. recall: the gate bets
    2867
    """
    if not _is_number(margin) or not margin > 0 or not math.isfinite(margin):
        raise ValueError(f"`margin` must be a positive drop (e.g. 0.02 for 2 points), got {margin!r}")
    ci = _rate("ci", ci, open_low=True, open_high=True)
    power = _rate("power", power, open_low=True, open_high=True)
    slice_fraction = _rate("slice_fraction", slice_fraction, open_low=True)
    v, _ = _gate_variance(paired=paired, discordance=discordance, sd_diff=sd_diff, p=p,
                          sensitivity=sensitivity, specificity=specificity)
    if interval not in (None, "betting", "bootstrap"):
        raise ValueError(f"`interval` must be 'betting', 'bootstrap' or None, got {interval!r}")
    if (interval is not None or bounds is not None) and sd_diff is None:
        raise ValueError("`interval` and `bounds` choose the gate's interval for a continuous metric (sd_diff=); "
                         "pass/fail rows always use Tango's interval")
    if sd_diff is not None and (interval == "betting" or (bounds is not None and interval != "bootstrap")):
        lo, hi = (0.0, 1.0) if bounds is None else _declared_bounds("the metric", bounds)
        _check_spread("the metric", float(sd_diff), 2 * (hi - lo))
        row = _Row("metric", "overall", 1.0, "continuous", float(sd_diff), float(margin), span=2 * (hi - lo))
        return math.ceil(_search([row], power, ci) / slice_fraction - 1e-9)
    if sd_diff is None:  # pass/fail: the gate's own rule (Tango's interval), summed exactly over the counts
        n_row = _search([_Row("metric", "overall", 1.0, "pass/fail", v, float(margin))], power, ci)
        return math.ceil(n_row / slice_fraction - 1e-9)
    z = float(_sps.norm.isf((1 - ci) / 2))
    zp = float(_sps.norm.ppf(power))
    if z + zp <= 0:
        raise ValueError(f"`power` = {power:g} is below what the gate gives an unchanged candidate with one question")
    # never below the gate's own minimum for a bootstrap row: with fewer questions it reviews whatever the interval says
    n = max(MIN_RESAMPLED, math.ceil((z + zp) ** 2 * v / float(margin) ** 2 - 1e-9))
    if n > _N_MAX:
        raise ValueError(f"a margin of {margin:g} is too small to size with any practical number of questions")
    return math.ceil(n / slice_fraction - 1e-9)
