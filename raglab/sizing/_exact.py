"""Exact probabilities of the paired pass/fail tests compare and the gate run, by enumeration of counts.

A row of ``n`` paired pass/fail questions is summarised by its discordant counts: ``down`` (pass ->
fail) and ``up`` (fail -> pass). With cell probabilities ``p_down`` and ``p_up`` the total
``D = down + up`` is ``Binomial(n, p_down + p_up)`` and ``up | D`` is ``Binomial(D, p_up / (p_down +
p_up))``; every decision of :func:`raglab.stats.compare` and :func:`raglab.stats.gate` on a pass/fail
row (without ``units``) depends only on ``(n, down, up)``, so its probability is a sum over the
counts. Counts whose probability is below ``_TAIL`` on either side are left out (the error is at
most ``4 * _TAIL``).

* :func:`mcnemar_power`: the exact McNemar test (``compare``'s ``p_value``, ``p_decrease``,
  ``p_increase``), two-sided or one-sided; the sum runs over ``D`` only (closed-form tails of
  ``up | D``).
* :func:`tango_pass_probability`: the gate's pass rule on Tango's score interval, ``low >= -margin``,
  which holds exactly when Tango's score statistic at ``-margin`` is at least ``z`` (the interval is
  the set of deltas whose statistic lies within ``+-z``, and the statistic decreases in delta).
* :func:`tango_block_probability`: the gate's block rule, ``high < 0`` and the one-sided exact
  McNemar p-value for a drop below a level.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import special as _special
from scipy import stats as _sps

from raglab.stats._gate import GATE_TOLERANCE, MIN_QUESTIONS
from raglab.stats.intervals import _BETTING_TRUNCATION, _tango_statistic

__all__ = ["mcnemar_power", "tango_block_probability", "tango_pass_probability"]

_TAIL = 1e-12
EXACT_MAX = 1_000_000  # above this many questions in a row callers use the normal approximation: at about
# 8 x 10^5 questions the exact McNemar power at the normal approximation's n is 0.798-0.800 for 0.80 asked


def _totals(n: int, q: float) -> tuple[np.ndarray, np.ndarray]:
    """The values of ``D ~ Binomial(n, q)`` worth summing over, and their probabilities."""
    if q <= 0:
        return np.zeros(1), np.ones(1)
    if q >= 1:
        return np.full(1, float(n)), np.ones(1)
    sd = math.sqrt(n * q * (1 - q))
    if sd > 30:  # far beyond 1e-12 of either tail (9 sd, with room for the skew): no slow quantile search
        low, high = max(0.0, math.floor(n * q - 9 * sd - 10)), min(float(n), math.ceil(n * q + 9 * sd + 10))
    else:
        low = max(0.0, float(_sps.binom.ppf(_TAIL, n, q)) - 1)
        high = min(float(n), float(_sps.binom.isf(_TAIL, n, q)) + 1)
    d = np.arange(low, high + 1)
    return d, _sps.binom.pmf(d, n, q)


def _grid(n: int, p_down: float, p_up: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Flat arrays ``down``, ``up`` and their joint probability over the counts worth summing."""
    q = p_down + p_up
    totals, weights = _totals(n, q)
    if q <= 0:
        return np.zeros(1), np.zeros(1), np.ones(1)
    share = p_up / q
    lo = np.maximum(0.0, _sps.binom.ppf(_TAIL, totals, share) - 1)
    hi = np.minimum(totals, _sps.binom.isf(_TAIL, totals, share) + 1)
    lo = np.where(np.isnan(lo), 0.0, lo)
    hi = np.where(np.isnan(hi), totals, hi)
    width = (hi - lo + 1).astype(np.int64)
    row = np.repeat(np.arange(len(totals)), width)
    offset = np.arange(row.size) - np.repeat(np.cumsum(width) - width, width)
    up = lo[row] + offset
    d = totals[row]
    prob = weights[row] * _sps.binom.pmf(up, d, share)
    return d - up, up, prob


def _check_cells(n: int, p_down: float, p_up: float) -> None:
    if n != int(n) or n < 0:
        raise ValueError(f"`n` must be a whole number of questions, got {n!r}")
    if not (0 <= p_down <= 1 and 0 <= p_up <= 1 and p_down + p_up <= 1 + 1e-12):
        raise ValueError(f"cell probabilities must be in [0, 1] and sum to at most 1, got {p_down!r}, {p_up!r}")


def mcnemar_power(n: int, p_down: float, p_up: float, *, alpha: float = 0.05, alternative: str = "two-sided") -> float:
    """Probability that the exact McNemar test rejects at ``alpha`` (``p < alpha``) on ``n`` paired questions.

    ``alternative="two-sided"``: ``compare``'s ``p_value = min(1, 2 P[Bin(D, 1/2) <= min(down, up)])``;
    ``"decrease"``: ``p_decrease = P[Bin(D, 1/2) >= down]``; ``"increase"``: ``p_increase``.
    """
    _check_cells(n, p_down, p_up)
    n = int(n)
    q = p_down + p_up
    if n == 0 or q <= 0:
        return 0.0
    totals, weights = _totals(n, min(q, 1.0))
    share = p_up / q
    if alternative == "two-sided":
        # reject when P[Bin(D, 1/2) <= min] < alpha / 2: min <= c, c the largest such count
        c = _critical_count(totals, alpha / 2)
        lower = np.where(c >= 0, _sps.binom.cdf(c, totals, share), 0.0)
        upper = np.where(c >= 0, _sps.binom.sf(totals - c - 1, totals, share), 0.0)
        reject = lower + upper  # the tails never overlap: c < D / 2
    elif alternative in ("decrease", "increase"):
        # p_decrease < alpha  <=>  P[Bin(D, 1/2) <= up] < alpha  <=>  up <= c
        c = _critical_count(totals, alpha)
        against = share if alternative == "decrease" else 1 - share
        reject = np.where(c >= 0, _sps.binom.cdf(c, totals, against), 0.0)
    else:
        raise ValueError(f"unknown alternative {alternative!r}")
    return float(min(1.0, np.sum(weights * reject)))


def _critical_count(totals: np.ndarray, level: float) -> np.ndarray:
    """Per ``D``, the largest count ``c`` with ``P[Bin(D, 1/2) <= c] < level`` (-1 when there is none).

    Starts below the normal approximation and steps up while the exact cdf stays below ``level``
    (a quantile search per ``D`` is far slower).
    """
    z = float(_special.ndtri(1 - level))
    c = np.maximum(-1.0, np.floor(totals / 2 - z * np.sqrt(totals) / 2 - 4))
    too_far = (c >= 0) & (_sps.binom.cdf(c, totals, 0.5) >= level)
    while too_far.any():  # never for realistic levels; kept so the answer does not rest on the guess
        c = np.where(too_far, c - 1, c)
        too_far = (c >= 0) & (_sps.binom.cdf(c, totals, 0.5) >= level)
    while True:
        step = (c + 1 <= totals) & (_sps.binom.cdf(c + 1, totals, 0.5) < level)
        if not step.any():
            return c
        c = np.where(step, c + 1, c)


def _z(level: float) -> float:
    return float(_special.ndtri(0.5 + level / 2.0))


def _first_up(totals: np.ndarray, holds: Any) -> np.ndarray:
    """Per total ``D``, the smallest ``up`` in ``[0, D]`` where ``holds(down, up)`` is true (``D + 1`` if never).

    ``holds`` must be monotone in ``up`` at fixed ``D`` (false, then true): integer bisection,
    vectorised over the totals.
    """
    low = np.full(totals.shape, -1.0)  # holds is false at low (virtually at -1)
    high = totals + 1.0  # and true at high (virtually at D + 1)
    while True:
        open_ = high - low > 1
        if not open_.any():
            return high
        mid = np.floor((low + high) / 2)
        mid = np.where(open_, mid, low)
        ok = holds(totals - mid, mid) & open_
        high = np.where(ok, mid, high)
        low = np.where(open_ & ~ok, mid, low)


def _discordant(n: int, p_down: float, p_up: float) -> tuple[np.ndarray, np.ndarray, float]:
    """The possible discordant counts ``D`` of ``n`` pairs with their probabilities, and the share of ``D``
    that moved up (each of the ``D`` pairs moved up with that chance, given ``D``)."""
    _check_cells(n, p_down, p_up)
    q = p_down + p_up
    totals, weights = _totals(n, min(q, 1.0))
    return totals, weights, (p_up / q if q > 0 else 0.5)


def tango_pass_probability(n: int, p_down: float, p_up: float, *, margin: float, level: float = 0.95) -> float:
    """Probability that a pass/fail gate row of ``n`` questions passes: Tango's ``low >= -margin``.

    The row reviews (never passes) below :data:`raglab.gate.MIN_QUESTIONS` questions. Bounds within
    the gate's tolerance of the margin count as on it, as in the gate. At a fixed number of
    discordant pairs ``D`` the rule holds from some ``up`` count on (the statistic increases with
    ``up`` and decreases with ``down``), so the sum over ``up`` is one binomial tail per ``D``.
    """
    n = int(n)
    if n < max(2, MIN_QUESTIONS):
        _check_cells(n, p_down, p_up)
        return 0.0
    totals, weights, share = _discordant(n, p_down, p_up)
    z, delta = _z(level), -margin - GATE_TOLERANCE * max(1.0, margin)

    def passes(down: np.ndarray, up: np.ndarray) -> np.ndarray:
        return _tango_statistic(np.full(down.shape, delta), down, up, np.full(down.shape, float(n))) >= z

    first = _first_up(totals, passes)
    tail = _sps.binom.sf(first - 1, totals, share)
    return float(min(1.0, np.sum(weights * tail)))


def tango_block_probability(
    n: int, p_down: float, p_up: float, *, level: float = 0.95, family: int = 1
) -> float:
    """Probability that a pass/fail row blocks: Tango's ``high < 0`` and ``family x p_decrease < (1 - level) / 2``.

    ``family`` multiplies the one-sided exact McNemar p-value (Bonferroni): Holm's adjusted p-value
    of a row is at most that, so over a Holm family of ``family`` rows this is a lower bound on the
    row's chance to block (exact when ``family == 1``). Both conditions fail from some ``up`` count
    on at a fixed ``D``, so the sum is one binomial tail per ``D``.
    """
    n = int(n)
    if n < max(2, MIN_QUESTIONS):
        _check_cells(n, p_down, p_up)
        return 0.0
    totals, weights, share = _discordant(n, p_down, p_up)
    z = _z(level)

    def spared(down: np.ndarray, up: np.ndarray) -> np.ndarray:
        t = _tango_statistic(np.full(down.shape, -GATE_TOLERANCE), down, up, np.full(down.shape, float(n)))
        p_decrease = np.where(down + up == 0, 1.0, _sps.binom.sf(down - 1, down + up, 0.5))
        return ~((t < -z) & (family * p_decrease < (1 - level) / 2))

    first = _first_up(totals, spared)
    blocked = _sps.binom.cdf(first - 1, totals, share)
    return float(min(1.0, np.sum(weights * blocked)))


def normal_pass_probability(n_eff: float, sd: float, *, margin: float, level: float, shift: float = 0.0,
                            df: float | None = None) -> float:
    """Normal approximation of ``P(mean - c sd / sqrt(n) >= -margin)`` with a true mean change ``shift``.

    ``c`` is the gate's expanded-percentile critical value ``t_{df} sqrt(m / (m - 1))`` with ``m`` the
    rows' questions or clusters (``df = m - 1``; plain ``z`` when ``df`` is None).
    """
    if n_eff <= 0 or sd <= 0:
        return 0.0
    c = _critical(level, df)
    return float(_sps.norm.cdf((margin + shift) * math.sqrt(n_eff) / sd - c))


def _critical(level: float, df: float | None) -> float:
    if df is None or not math.isfinite(df):
        return _z(level)
    df = max(df, 1.0)
    return float(_sps.t.isf((1 - level) / 2, df) * math.sqrt((df + 1) / df))


def normal_block_probability(n_eff: float, sd: float, *, drop: float, level: float, family: int = 1,
                             df: float | None = None) -> float:
    """Normal approximation of a continuous row blocking a true drop: the high end below 0 and the
    one-sided test below ``(1 - level) / (2 family)`` (the larger of the two critical values)."""
    if n_eff <= 0 or sd <= 0:
        return 0.0
    c = max(_critical(level, df), float(_sps.norm.isf((1 - level) / 2 / family)))
    return float(_sps.norm.cdf(drop * math.sqrt(n_eff) / sd - c))


def _betting_capital_rates(n: int, s2: float, m0: float, level: float) -> tuple[float, float, float]:
    """``(sum lambda_t, sum lambda_t^2, log(1 / alpha))`` of the gate's betting bound on ``n`` values of variance ``s2``.

    The bet sizes are :func:`raglab.stats.intervals._betting_lambdas`' fixed-n rule with its running
    variance replaced by its expectation (prior 1/4 with weight 1, then ``s2``) and the truncation of
    the bet at the candidate mean ``m0`` (``_BETTING_TRUNCATION / m0``), all on the [0, 1] scale.
    """
    log_inv = math.log(2.0 / (1.0 - level))
    t = np.arange(1, n, dtype=float)
    previous = np.concatenate([[0.25], (0.25 + t * s2) / (t + 1)])
    lam = np.minimum(np.sqrt(2.0 * log_inv / (n * previous)), _BETTING_TRUNCATION / max(m0, 1e-12))
    return float(lam.sum()), float(np.sum(lam**2)), log_inv


def betting_pass_probability(n: int, sd: float, *, margin: float, level: float, span: float = 2.0,
                             shift: float = 0.0) -> float:
    """``P(low >= -margin)`` for the gate's betting interval on ``n`` paired differences of sd ``sd``.

    The differences lie in ``[-span / 2, span / 2]`` (``span = 2`` for a metric in [0, 1]); the gate
    maps them to [0, 1] and bets (:func:`raglab.stats.intervals._betting_bounds`). The row passes when
    the candidate mean ``m0`` (``-margin`` on the [0, 1] scale) is rejected: the log capital, about
    ``L1 D - L2 (s^2 + D^2) / 2`` with ``D`` the sample mean minus ``m0``, ``L1 = sum lambda_t``,
    ``L2 = sum lambda_t^2`` (:func:`_betting_capital_rates`), reaches ``log(1 / alpha)``,
    ``alpha = (1 - level) / 2``. That happens when ``D >= D*``, the smaller root, and the sample mean
    is normal: ``P = Phi((mu - m0 - D*) sqrt(n) / s)``. For large ``n`` the bets are constant and
    ``D* -> sqrt(2 log(1/alpha)) s / sqrt(n)`` (``c = 2.72`` at ``level = 0.95`` where the bootstrap has
    1.96); at small ``n`` the prior variance and the truncated bets add the excess. ``shift`` is a
    true mean change in the differences' units. Measured against the real interval
    (``benchmarks/release_sizing.py``): within simulation error at 0.8, slightly low (safe) below 100.
    """
    if n < 2 or sd <= 0:
        return 0.0
    s = sd / span
    m0 = 0.5 - margin / span
    if m0 <= 0:
        return 1.0
    l1, l2, log_inv = _betting_capital_rates(int(n), s * s, m0, level)
    disc = l1 * l1 - 2.0 * l2 * (log_inv + l2 * s * s / 2.0)
    if disc < 0:  # the capital cannot reach 1 / alpha at any sample mean this model allows
        return 0.0
    d_star = (l1 - math.sqrt(disc)) / l2
    return float(_sps.norm.cdf((margin / span + shift / span - d_star) * math.sqrt(n) / s))


def betting_block_probability(n: int, sd: float, *, drop: float, level: float, family: int = 1,
                              span: float = 2.0) -> float:
    """A betting row blocking a true drop: the high end below 0 (the mirror of a pass at margin 0) and the
    one-sided sign-flip test below ``(1 - level) / (2 family)`` (normal), the smaller of the two."""
    if n < 2 or sd <= 0:
        return 0.0
    high_below = betting_pass_probability(n, sd, margin=0.0, level=level, span=span, shift=drop)
    test = float(_sps.norm.cdf(drop * math.sqrt(n) / sd - float(_sps.norm.isf((1 - level) / 2 / family))))
    return min(high_below, test)
