"""The simulated production log (issue 22's bundled data): seeded, its design recorded, its truth as stated."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import raglab  # noqa: F401  (registers the accessor)
from raglab._meta import SamplingDesign
from raglab.monitor import TOPICS, simulate_log


@pytest.fixture(scope="module")
def log() -> pd.DataFrame:
    return simulate_log(200_000, days=60, drop_day=30, seed=3)


def test_the_same_seed_gives_the_same_log_and_another_seed_another():
    a, b = simulate_log(5_000, days=7, seed=1), simulate_log(5_000, days=7, seed=1)
    pd.testing.assert_frame_equal(a, b)
    assert a.attrs == b.attrs
    assert not simulate_log(5_000, days=7, seed=2)["truth_faithful"].equals(a["truth_faithful"])


def test_columns_order_and_times(log):
    assert list(log.columns) == ["request_id", "timestamp", "topic", "channel", "question", "citation_valid",
                                 "lexical_support",
                                 "faithfulness", "selected", "inclusion_probability", "thumbs", "truth_faithful",
                                 "truth_verdict"]
    assert log["request_id"].is_unique and log["timestamp"].is_monotonic_increasing
    days = log["timestamp"].dt.floor("D")
    assert days.min() == pd.Timestamp("2026-09-01", tz="UTC") and days.nunique() == 60
    # weekends carry about 60% of a weekday's traffic
    per_day = log.groupby(days).size()
    weekend = per_day.index.day_of_week >= 5
    assert 0.5 < per_day[weekend].mean() / per_day[~weekend].mean() < 0.7


def test_the_judged_sample_is_the_recorded_design(log):
    design = SamplingDesign.from_dict(log.attrs["raglab"]["sampling"]["judged"])
    assert design.kind == "judged" and design.method == "uniform" and design.population == len(log)
    assert design.n == int(log["selected"].sum())
    assert log["faithfulness"].notna().equals(log["selected"])  # verdicts exactly on the judged rows
    judged = log["selected"].mean()
    assert abs(judged - 0.02) < 4 * np.sqrt(0.02 * 0.98 / len(log))  # Poisson sampling at 2%
    sel = log["selected"]
    np.testing.assert_array_equal(log.loc[sel, "faithfulness"], log.loc[sel, "truth_verdict"])


def test_the_drop_is_in_the_named_topic_from_the_named_day_only(log):
    after = log["timestamp"] >= pd.Timestamp("2026-10-01", tz="UTC")  # day 30
    rates = log.groupby([after, "topic"], observed=True)["truth_faithful"].mean().unstack()
    change = rates.loc[True] - rates.loc[False]
    assert -0.18 < change["billing"] < -0.12  # the 0.15 drop, within sampling error
    others = change.drop("billing")
    assert (others.abs() < 0.01).all(), others
    # the stated rates before the drop (app answers are 1 point worse; 45% of requests)
    expected = pd.Series({t: rate - 0.01 * 0.45 for t, (_, rate) in TOPICS.items()})
    assert (rates.loc[False] - expected).abs().max() < 0.01


def test_no_change_when_asked(log):
    flat = simulate_log(100_000, days=20, drop_topic=None, seed=4)
    after = flat["timestamp"] >= pd.Timestamp("2026-09-11", tz="UTC")
    rates = flat.groupby(after)["truth_faithful"].mean()
    assert abs(rates[True] - rates[False]) < 0.006


def test_feedback_is_a_biased_sample(log):
    answered = log["thumbs"].notna()
    # unhappy users answer more often: the thumbs-up rate understates the faithful rate
    assert log.loc[answered, "truth_faithful"].mean() < log["truth_faithful"].mean() - 0.1
    assert log.loc[answered, "thumbs"].mean() < log["truth_faithful"].mean()


def test_tripwires_track_faithfulness(log):
    good = log["truth_faithful"] == 1
    assert log.loc[good, "lexical_support"].mean() > log.loc[~good, "lexical_support"].mean() + 0.3
    assert log.loc[good, "citation_valid"].mean() > log.loc[~good, "citation_valid"].mean() + 0.15
    assert log["lexical_support"].between(0, 1).all()


def test_the_whole_log_estimate_from_the_judged_sample_covers_the_truth(log):
    table = log.rag.summary(metrics=["faithfulness"], predictor="lexical_support")
    row = table.iloc[0]
    assert row["low"] <= log["truth_verdict"].mean() <= row["high"]
    assert "prediction-powered" in row["method"]


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"judged": 0.0}, "judged must be a probability"),
    ({"drop": 1.5}, "drop must be in"),
    ({"drop_topic": "refunds"}, "drop_topic must be one of"),
    ({"requests": 0}, "requests"),
])
def test_bad_arguments_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        simulate_log(**{"requests": 100, "days": 3, **kwargs})


def test_questions_belong_to_their_topic(log):
    billing = log.loc[log["topic"] == "billing", "question"].astype(str)
    assert billing.str.contains("charged|card|invoice|refund").all()
    assert log["question"].nunique() == 5 * 4 * 8
