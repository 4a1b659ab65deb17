"""monitor: alarms with a stated guarantee (issue 22). Oracles: plain loops, Ville's and the ARL bound by simulation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import raglab  # noqa: F401  (registers the accessor)
from raglab.monitor import monitor, simulate_log
from raglab.monitor._detect import cusum, gaussian_e_values, shiryaev_roberts, threshold


def _sr_loop(e, limit, restart, hold):
    """Shiryaev-Roberts written plainly: one alternative at a time, one period at a time."""
    alts, periods, series = e.shape
    stat = np.zeros((periods, series))
    alarm = np.zeros((periods, series), dtype=bool)
    for j in range(series):
        r = [0.0] * alts
        held = False
        for t in range(periods):
            if restart[t, j]:
                r, held = [0.0] * alts, False
            r = [(r[a] + 1.0) * e[a, t, j] for a in range(alts)]
            stat[t, j] = sum(r) / alts
            if stat[t, j] >= limit and not held:
                alarm[t, j] = True
                r = [0.0] * alts
                held = hold
    return stat, alarm


@pytest.mark.parametrize("hold", [False, True])
def test_shiryaev_roberts_equals_the_plain_recursion(hold):
    rng = np.random.default_rng(0)
    e = np.exp(rng.normal(0.1, 1.0, (3, 60, 4)))
    restart = rng.random((60, 4)) < 0.05
    got = shiryaev_roberts(e, 30.0, restart=restart, after_alarm="hold" if hold else "restart")
    stat, alarm = _sr_loop(e, 30.0, restart, hold)
    assert alarm.any()
    np.testing.assert_array_equal(got.alarm, alarm)
    np.testing.assert_allclose(got.statistic, stat, rtol=1e-12)


def test_the_alarm_dates_the_run_that_raised_it():
    e = np.ones((40, 1)) * 0.8
    e[25:] = 3.0  # evidence from period 25 on
    found = shiryaev_roberts(e, 100.0)
    t = int(np.argmax(found.alarm[:, 0]))
    assert found.alarm[t, 0] and found.start[t, 0] == 25


def test_cusum_equals_pages_recursion():
    rng = np.random.default_rng(3)
    x = rng.normal(-0.2, 1.0, (200, 3))
    got = cusum(x, 4.0)
    for j in range(3):
        w, alarms = 0.0, []
        for t in range(200):
            w = max(0.0, w + x[t, j])
            alarms.append(w >= 4.0)
            w = 0.0 if w >= 4.0 else w
        np.testing.assert_array_equal(got[:, j], alarms)
    assert got.any()


def test_gaussian_e_values_are_likelihood_ratios():
    from scipy.stats import norm

    x, s, m0, d = 0.85, 0.02, 0.9, 0.03
    expected = norm.pdf(x, m0 - d, s) / norm.pdf(x, m0, s)
    assert gaussian_e_values(np.array([x]), np.array([s]), m0, d)[0] == pytest.approx(expected, rel=1e-12)
    layers = gaussian_e_values(np.array([x]), np.array([s]), m0, (0.03, 0.06))
    assert layers.shape == (2, 1)


def test_horizon_guarantee_holds_at_the_reference_rate():
    """Any false alarm over 90 looks in 3 series: at most alpha (Ville), exactly normal estimates at the boundary."""
    rng = np.random.default_rng(1)
    reps, looks, series, alpha = 4000, 90, 3, 0.05
    se = rng.uniform(0.01, 0.05, (1, looks, series))
    est = 0.9 + se * rng.standard_normal((reps, looks, series))
    limit = threshold("horizon", alpha=alpha, horizon=looks, series=series)
    # replicates side by side as extra series: (looks, reps x series)
    flat = est.transpose(1, 0, 2).reshape(looks, reps * series)
    e = gaussian_e_values(flat, np.tile(se[0], (1, reps)), 0.9, (0.03, 0.06, 0.12, 0.24))
    alarm = shiryaev_roberts(e, limit).alarm.reshape(looks, reps, series)
    rate = float(alarm.any(axis=(0, 2)).mean())
    assert rate <= alpha + 3 * np.sqrt(alpha * (1 - alpha) / reps), rate


def test_arl_guarantee_holds_at_the_reference_rate():
    rng = np.random.default_rng(2)
    reps, looks, arl = 400, 600, 40.0
    est = 0.9 + 0.02 * rng.standard_normal((looks, reps))
    e = gaussian_e_values(est, np.full((looks, reps), 0.02), 0.9, (0.03, 0.06))
    alarm = shiryaev_roberts(e, threshold("arl", arl=arl)).alarm
    # run lengths cut at the horizon: their mean is below the true mean run length, so >= arl is conservative
    first = np.where(alarm.any(axis=0), alarm.argmax(axis=0) + 1, looks)
    assert first.mean() >= arl - 2 * first.std(ddof=1) / np.sqrt(reps), first.mean()


def test_threshold_values_and_errors():
    assert threshold("horizon", alpha=0.05, horizon=90, series=2) == 3600.0
    assert threshold("arl", arl=365, series=3) == 1095.0
    with pytest.raises(ValueError, match="needs alpha"):
        threshold("horizon", alpha=1.5, horizon=10)
    with pytest.raises(ValueError, match="guarantee must be one of"):
        threshold("daily", alpha=0.05, horizon=10)


@pytest.fixture(scope="module")
def drop_log() -> pd.DataFrame:
    return simulate_log(500_000, days=60, drop_day=30, seed=5)


def test_the_regression_is_found_in_its_slice_and_dated(drop_log):
    found = drop_log.rag.monitor("faithfulness", reference=0.88, by="topic", predictor="lexical_support",
                                 guarantee="arl", arl=365)
    billing = found.alarms[found.alarms["slice"] == "billing"]
    assert len(billing) == 1  # one alarm for one change: the series holds its alarm
    row = billing.iloc[0]
    day30 = pd.Timestamp("2026-10-01", tz="UTC")
    assert day30 <= row["start"] <= day30 + pd.Timedelta(days=7)
    assert row["period"] <= day30 + pd.Timedelta(days=14)
    # the rate since the estimated start covers the truth over the same requests
    since = drop_log[(drop_log["topic"] == "billing") & (drop_log["timestamp"] >= row["start"])
                     & (drop_log["timestamp"] < row["period"] + pd.Timedelta(days=1))]
    assert row["low"] <= since["truth_verdict"].mean() <= row["high"]
    assert set(found.alarms["slice"]) <= {"billing", "overall"}
    table = found.table
    assert (table.loc[(table["slice"] == "billing") & (table["period"] > row["period"]), "phase"] == "in alarm").all()
    assert "average run length" in found.guarantee and "6 series" in found.guarantee


def test_no_change_no_alarm_with_a_reference_window():
    flat = simulate_log(300_000, days=60, drop_topic=None, seed=6)
    found = flat.rag.monitor(["faithfulness", "citation_valid"], reference=14, by="topic", predictor="lexical_support")
    assert found.alarms.empty, found
    assert found.settings["looks"] == 46 and found.settings["series"] == 12
    assert len(found.references) == 12 and (found.references["how"].str.startswith("lower")).all()
    assert (found.table.loc[found.table["period"] < pd.Timestamp("2026-09-15", tz="UTC"), "phase"]
            == "reference").all()


def test_a_judge_change_restarts_and_re_establishes_the_reference():
    log = simulate_log(200_000, days=40, drop_topic=None, seed=7)
    new = log["timestamp"] >= pd.Timestamp("2026-09-21", tz="UTC")
    log["judge_fingerprint"] = np.where(new, "judge-v2", "judge-v1")
    # the new judge is stricter: 6 points fewer passes, a shift that is not a regression of the system
    rng = np.random.default_rng(0)
    stricter = new.to_numpy() & (rng.random(len(log)) < 0.06)
    log["faithfulness"] = np.where(log["selected"] & stricter, 0.0, log["faithfulness"])
    found = log.rag.monitor("faithfulness", reference=7, predictor="lexical_support")
    assert found.alarms.empty, found
    assert found.settings["restarts"] == [pd.Timestamp("2026-09-21", tz="UTC")]
    assert "restarted at judge change(s) on 2026-09-21" in found.guarantee
    assert len(found.references) == 2 and found.references["reference"].iloc[1] < found.references["reference"].iloc[0]


@pytest.mark.filterwarnings("ignore:.*the judged sample was drawn from")
def test_monitor_errors_are_named(drop_log):
    small = drop_log.iloc[:20_000]
    with pytest.raises(ValueError, match="guarantee must be one of"):
        monitor(small, "faithfulness", reference=0.9, guarantee="weekly")
    with pytest.raises(ValueError, match="more than horizon=1"):
        monitor(small, "faithfulness", reference=0.9, horizon=1)
    with pytest.raises(ValueError, match="reference gives no rate for"):
        monitor(small, ["faithfulness", "citation_valid"], reference={"faithfulness": 0.9})
    with pytest.raises(ValueError, match="must leave periods to monitor"):
        monitor(small, "faithfulness", reference=100)
    with pytest.raises(TypeError, match="reference must be"):
        monitor(small, "faithfulness", reference="last month")
    with pytest.raises(TypeError, match="one slice column"):
        monitor(small, "faithfulness", reference=0.9, by=["topic", "channel"])
