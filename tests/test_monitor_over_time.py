"""over_time: rates per period and slice of a production log (issue 22), against independent oracles."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

import raglab  # noqa: F401  (registers the accessor)
from raglab._errors import MissingColumnError, RowTableError
from raglab.monitor import over_time, periods, simulate_log
from raglab.stats import ppi_mean


@pytest.fixture(scope="module")
def log() -> pd.DataFrame:
    return simulate_log(60_000, days=12, drop_day=6, seed=11)


@pytest.fixture(scope="module")
def daily(log) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return log.rag.over_time(["faithfulness", "citation_valid", "lexical_support", "thumbs"],
                                 predictor="lexical_support", by="topic")


def _cell(table, period, slice_, metric):
    row = table[(table["period"] == period) & (table["slice"] == slice_) & (table["metric"] == metric)]
    assert len(row) == 1
    return row.iloc[0]


def test_a_judged_cell_is_ppi_mean_on_that_cells_requests(log, daily):
    day = log["timestamp"].dt.floor("D")
    for period in day.unique()[[0, 5, 11]]:
        for slice_ in ("overall", "billing"):
            rows = log[(day == period) & ((log["topic"] == slice_) if slice_ != "overall" else True)]
            lab = rows["selected"].to_numpy()
            iv = ppi_mean(rows.loc[lab, "faithfulness"], rows.loc[lab, "lexical_support"],
                          rows.loc[~lab, "lexical_support"])
            got = _cell(daily, period, slice_, "faithfulness")
            np.testing.assert_allclose([got["estimate"], got["low"], got["high"]], [iv.estimate, iv.low, iv.high],
                                       rtol=0, atol=1e-12)
            assert got["n_requests"] == len(rows) and got["n_judged"] == lab.sum()


def test_a_day_equals_summary_on_that_days_rows(log, daily):
    day = log["timestamp"].dt.floor("D")
    period = day.unique()[3]
    rows = log[day == period]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the design was drawn on the whole log
        table = rows.rag.summary(metrics=["faithfulness"], predictor="lexical_support")
    got = _cell(daily, period, "overall", "faithfulness")
    np.testing.assert_allclose([got["estimate"], got["low"], got["high"]],
                               table[["mean", "low", "high"]].iloc[0].to_numpy(float), atol=1e-12)


def test_tripwire_cells_are_wilson_intervals(log, daily):
    day = log["timestamp"].dt.floor("D")
    for period in day.unique()[:3]:
        rows = log[day == period]
        got = _cell(daily, period, "overall", "citation_valid")
        k, n = int(rows["citation_valid"].sum()), len(rows)
        low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
        np.testing.assert_allclose([got["estimate"], got["low"], got["high"]], [k / n, low, high], atol=1e-12)
        assert got["method"] == "wilson" and got["n_judged"] == n


def test_feedback_is_the_answered_requests_and_says_so(log, daily):
    with pytest.warns(UserWarning, match="who answers.*is not random"):
        log.rag.over_time(["thumbs"])
    got = daily[(daily["metric"] == "thumbs") & (daily["slice"] == "overall")]
    assert (got["method"].str.contains("not a random sample")).all()
    assert (got["n_judged"] < got["n_requests"] * 0.1).all()


def test_row_order_and_partitions_do_not_change_a_number(log, daily):
    shuffled = log.sample(frac=1.0, random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = shuffled.rag.over_time(["faithfulness", "citation_valid", "lexical_support", "thumbs"],
                                       predictor="lexical_support", by="topic")
    pd.testing.assert_frame_equal(again.drop(columns=["se", "estimate", "low", "high"]),
                                  daily.drop(columns=["se", "estimate", "low", "high"]))
    np.testing.assert_allclose(again[["estimate", "low", "high", "se"]].to_numpy(float),
                               daily[["estimate", "low", "high", "se"]].to_numpy(float), rtol=0, atol=1e-12)


def test_slices_are_complete_and_ordered(daily):
    one = daily[daily["metric"] == "faithfulness"]
    assert one["slice"].iloc[:6].tolist() == ["overall", "account", "billing", "other", "product", "shipping"]
    per_period = one.groupby("period")["n_requests"].apply(lambda s: s.iloc[0] - s.iloc[1:].sum())
    assert (per_period == 0).all()  # the slices add up to the overall row


def test_the_intervals_cover_the_known_truth(log, daily):
    day = log["timestamp"].dt.floor("D")
    truth = log.groupby([day, "topic"], observed=True)["truth_verdict"].mean()
    cells = daily[(daily["metric"] == "faithfulness") & (daily["slice"] != "overall")]
    hits = [row.low <= truth[(row.period, row.slice)] <= row.high for row in cells.itertuples()]
    assert len(hits) == 60 and np.mean(hits) >= 0.85  # 95% nominal; 60 cells


def test_without_a_predictor_the_design_weighted_mean(log):
    table = log.rag.over_time("faithfulness", freq="W")
    week = periods(log["timestamp"], "W")
    first = log[week == week.min()]
    got = table.iloc[0]
    assert got["estimate"] == pytest.approx(first.loc[first["selected"], "faithfulness"].mean(), abs=1e-12)
    assert got["method"].startswith("design-weighted mean of the judged sample")


def test_a_cell_with_too_few_judged_rows_says_why():
    tiny = simulate_log(3_000, days=30, judged=0.005, seed=1)
    table = tiny.rag.over_time("faithfulness", predictor="lexical_support")
    empty = table[table["n_judged"] < 2]
    assert len(empty) and empty["estimate"].isna().all()
    assert empty["method"].str.startswith("not estimated").all()


def test_periods_hours_weeks_months_and_time_zones():
    t = pd.Series(pd.to_datetime(["2026-09-30 23:30", "2026-10-01 00:10", "2026-10-05 12:00"]).tz_localize(
        "Europe/Paris"))
    assert periods(t, "h").dt.hour.tolist() == [23, 0, 12]
    assert periods(t, "MS").dt.month.tolist() == [9, 10, 10]
    assert str(periods(t, "D").dt.tz) == "Europe/Paris"
    assert periods(pd.Series(["2026-09-01 10:00", "2026-09-02 11:00"]), "D").dt.day.tolist() == [1, 2]


def test_bad_input_is_named(log):
    with pytest.raises(MissingColumnError, match="'when'"):
        over_time(log, "faithfulness", time="when")
    with pytest.raises(MissingColumnError, match="'region'"):
        over_time(log, "faithfulness", by="region")
    bad = log.head(50).copy()
    bad["timestamp"] = bad["timestamp"].astype(object)
    bad.loc[bad.index[7], "timestamp"] = "yesterday"
    with pytest.raises(RowTableError, match="'timestamp' must hold timestamps.*'yesterday'"):
        over_time(bad, "citation_valid")
    with pytest.raises(ValueError, match="freq='fortnightly'"):
        over_time(log, "citation_valid", freq="fortnightly")
    with pytest.raises(ValueError, match="at least one metric"):
        over_time(log, [])


def test_unequal_probabilities_take_the_design_based_estimate():
    """Billing judged at 10%, the rest at 2%: the overall cell is Horvitz-Thompson (ppi_mean_sampled), a topic's is ppi_mean."""
    from raglab.stats import ppi_mean_sampled

    log = simulate_log(40_000, days=4, seed=12)
    rng = np.random.default_rng(0)
    p = np.where(log["topic"] == "billing", 0.10, 0.02)
    chosen = rng.random(len(log)) < p
    log["selected"], log["inclusion_probability"] = chosen, p
    log["faithfulness"] = np.where(chosen, log["truth_verdict"], np.nan)
    log.attrs["raglab"]["sampling"]["judged"].update(method="stratified", strata="topic", n=int(chosen.sum()))
    table = log.rag.over_time("faithfulness", predictor="lexical_support", by="topic")
    day = log["timestamp"].dt.floor("D")
    first = day.min()
    rows = log[day == first]
    lab = rows["selected"].to_numpy()
    iv = ppi_mean_sampled(rows.loc[lab, "faithfulness"], rows.loc[lab, "lexical_support"],
                          rows.loc[~lab, "lexical_support"], rows.loc[lab, "inclusion_probability"])
    got = _cell(table, first, "overall", "faithfulness")
    np.testing.assert_allclose([got["estimate"], got["low"], got["high"]], [iv.estimate, iv.low, iv.high], atol=1e-12)
    assert "Horvitz-Thompson" in got["method"]
    billing = rows[rows["topic"] == "billing"]
    bl = billing["selected"].to_numpy()
    iv_b = ppi_mean(billing.loc[bl, "faithfulness"], billing.loc[bl, "lexical_support"],
                    billing.loc[~bl, "lexical_support"])
    got_b = _cell(table, first, "billing", "faithfulness")
    np.testing.assert_allclose([got_b["estimate"], got_b["low"], got_b["high"]], [iv_b.estimate, iv_b.low, iv_b.high],
                               atol=1e-12)


def test_partitions_combine_to_the_whole_log(log):
    """The cells of any split of the rows, combined, are the whole log's cells (sums add, extremes min/max)."""
    from raglab.monitor._over_time import _prepare, combine_sums

    kw = {"time": "timestamp", "freq": "D", "by": "topic", "predictor": "lexical_support", "ci": 0.95,
          "caller_name": "test"}
    names = ["faithfulness", "citation_valid", "lexical_support"]
    whole = _prepare(log, names, **kw)
    fill = {"lexical_support": float(log["lexical_support"].mean())}
    shuffled = log.sample(frac=1.0, random_state=5)
    parts = [_prepare(part, names, fill=fill, check_population=False, **kw).daily
             for part in (shuffled.iloc[i::7] for i in range(7))]
    combined = combine_sums(parts[::-1]).sort_values(["period", "slice"], ignore_index=True)
    expected = whole.daily.sort_values(["period", "slice"], ignore_index=True)
    assert list(combined.columns) == list(expected.columns)
    np.testing.assert_allclose(combined.drop(columns=["period", "slice"]).to_numpy(float),
                               expected.drop(columns=["period", "slice"]).to_numpy(float), rtol=1e-12, atol=1e-9)
    pd.testing.assert_frame_equal(whole.spec.finish(combined, combined).drop(columns=["estimate", "low", "high", "se"]),
                                  whole.table().drop(columns=["estimate", "low", "high", "se"]), check_like=False)


def test_a_window_is_a_regrouping_of_the_daily_cells(log):
    """Pooling days 2-5 from the daily cells equals summing those days' rows as one period."""
    from raglab.monitor._over_time import _prepare

    kw = {"time": "timestamp", "freq": "D", "by": None, "predictor": "lexical_support", "ci": 0.95,
          "caller_name": "test"}
    view = _prepare(log, ["faithfulness"], **kw)
    days = pd.DatetimeIndex(sorted(view.daily["period"].unique()))
    lo, hi = days[2], days[6]
    from raglab.monitor._monitor import _window

    pooled = view.table(view.regroup(_window(lo, hi)))
    inside = log[(log["timestamp"] >= lo) & (log["timestamp"] < hi)].assign(timestamp=lo)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        direct = inside.rag.over_time("faithfulness", predictor="lexical_support")
    np.testing.assert_allclose(pooled[["estimate", "low", "high"]].to_numpy(float),
                               direct[["estimate", "low", "high"]].to_numpy(float), atol=1e-12)
