"""gate(sequential=True): the betting confidence sequence a canary can look at every hour (issue 22)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from raglab import runs
from raglab.stats.intervals import _sequence_bounds, _sequence_lambdas, _sequence_p_values


def _max_log_capital_loop(x, m, alpha):
    """The bettor's capital on 'the mean exceeds m', written plainly: one row at a time, its running maximum."""
    n = len(x)
    mu, ss, best, log_k = 0.5, 0.25, 0.0, 0.0
    total = 0.0
    for t in range(1, n + 1):
        var_prev = ss / t  # (0.25 + sum of squares of x_1..x_{t-1}) / t
        lam = math.sqrt(2 * math.log(1 / alpha) / (var_prev * t * math.log(1 + t)))
        if m > 0:
            lam = min(lam, 0.75 / m)
        log_k += math.log1p(lam * (x[t - 1] - m))
        best = max(best, log_k)
        total += x[t - 1]
        mu = (0.5 + total) / (t + 1)
        ss += (x[t - 1] - mu) ** 2
    return best


def test_the_bets_and_capital_match_a_plain_loop():
    rng = np.random.default_rng(0)
    x = rng.random(300)
    alpha = 0.025
    lam = _sequence_lambdas(x, alpha)
    assert lam[0] == pytest.approx(math.sqrt(2 * math.log(1 / alpha) / (0.25 * math.log(2))))
    for m in (0.3, 0.45, 0.5):
        p_below, p_above = _sequence_p_values(x, 0.0, 1.0, 0.95, null=m)
        assert p_above == pytest.approx(math.exp(-_max_log_capital_loop(list(x), m, alpha)), rel=1e-9)


def test_the_bound_is_where_the_capital_first_fails_to_reach_one_over_alpha():
    rng = np.random.default_rng(1)
    x = (rng.random(800) < 0.7).astype(float)
    low, high = _sequence_bounds(x, 0.0, 1.0, 0.95)
    threshold = math.log(1 / 0.025)
    assert _max_log_capital_loop(list(x), low - 1e-6, 0.025) >= threshold
    assert _max_log_capital_loop(list(x), low + 1e-6, 0.025) < threshold
    assert low < x.mean() < high


def test_every_look_at_once_keeps_the_level():
    """The truth is outside the sequence at *some* look in at most 5% of runs (each look alone: far less)."""
    rng = np.random.default_rng(2)
    runs_, n = 400, 600
    missed = 0
    for _ in range(runs_):
        d = (rng.random(n) < 0.3).astype(float) - (rng.random(n) < 0.3).astype(float)  # mean difference 0
        p_below, p_above = _sequence_p_values(d, -1.0, 1.0, 0.95, null=0.0)
        missed += min(p_below, p_above) <= 0.025  # some look's sequence excluded 0
    assert missed / runs_ <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / runs_)


def _traffic(n, p_base, p_cand, seed):
    rng = np.random.default_rng(seed)
    base = pd.DataFrame({"question_id": [f"r{i}" for i in range(n)],
                         "timestamp": pd.Timestamp("2026-11-01", tz="UTC") + pd.to_timedelta(np.arange(n) * 30, "s"),
                         "faithful": (rng.random(n) < p_base).astype(float)})
    return base, base.assign(faithful=(rng.random(n) < p_cand).astype(float))


def test_hourly_looks_never_take_back_a_pass():
    base, cand = _traffic(2400, 0.85, 0.86, 3)
    decisions = []
    for hour in range(1, 21):  # 120 requests an hour
        seen = base["timestamp"] < base["timestamp"].iloc[0] + pd.Timedelta(hours=hour)
        result = runs.gate(base[seen], cand[seen], metrics=["faithful"], margin=0.05, sequential=True,
                           higher_is_better=True)
        decisions.append(result.decision)
        assert result.table["method"].iloc[0].startswith("paired betting confidence sequence")
    first = decisions.index("pass")
    assert set(decisions[first:]) == {"pass"}  # the sequence only shrinks: a pass stays a pass


def test_row_order_comes_from_time_not_from_the_table():
    base, cand = _traffic(1500, 0.8, 0.8, 4)
    a = runs.gate(base, cand, metrics=["faithful"], margin=0.05, sequential=True, higher_is_better=True).table
    b = runs.gate(base.sample(frac=1.0, random_state=1), cand.sample(frac=1.0, random_state=2), metrics=["faithful"],
                  margin=0.05, sequential=True, higher_is_better=True).table
    pd.testing.assert_frame_equal(a, b)


def test_sequential_errors_are_named():
    base, cand = _traffic(200, 0.8, 0.8, 5)
    with pytest.raises(ValueError, match="method='percentile' is a fixed-n interval"):
        runs.gate(base, cand, metrics=["faithful"], margin=0.05, sequential=True, method="percentile")
    with pytest.raises(ValueError, match="no clustered confidence sequence"):
        runs.gate(base.assign(u=1), cand.assign(u=1), metrics=["faithful"], margin=0.05, sequential=True, units="u")
    with pytest.raises(Exception, match="'sent_at'"):
        runs.gate(base, cand, metrics=["faithful"], margin=0.05, sequential=True, time="sent_at")
    bad = base.assign(timestamp=base["timestamp"].astype(object))
    bad.loc[3, "timestamp"] = "soon"
    with pytest.raises(Exception, match="rows \\[3\\]"):
        runs.gate(bad, cand, metrics=["faithful"], margin=0.05, sequential=True)
