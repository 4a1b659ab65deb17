"""Post-mortem of an alarm (issue 22): the change point and its interval, the slices, the requests, a new eval-set version."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import raglab
from raglab.monitor import change_point, simulate_log


def _rss_brute_force(x, w):
    best, where = np.inf, None
    for s in range(1, x.size):
        a, b = x[:s], x[s:]
        wa, wb = w[:s], w[s:]
        rss = (wa * (a - (wa * a).sum() / wa.sum()) ** 2).sum() + (wb * (b - (wb * b).sum() / wb.sum()) ** 2).sum()
        if rss < best:
            best, where = rss, s
    return where


def test_the_split_is_the_brute_force_least_squares_one():
    rng = np.random.default_rng(4)
    for _ in range(20):
        n = int(rng.integers(5, 60))
        se = rng.uniform(0.01, 0.05, n)
        x = np.where(np.arange(n) < rng.integers(1, n), 0.9, 0.85) + se * rng.standard_normal(n)
        assert change_point(x, se, n_resamples=10).index == _rss_brute_force(x, 1 / se**2)


def test_the_interval_covers_the_true_change_in_most_seeds():
    rng = np.random.default_rng(5)
    hits = 0
    for _ in range(200):
        se = rng.uniform(0.015, 0.03, 60)
        x = np.where(np.arange(60) < 30, 0.90, 0.86) + se * rng.standard_normal(60)
        found = change_point(x, se, n_resamples=400, seed=int(rng.integers(1000)))
        hits += found.low <= 30 <= found.high
    assert hits / 200 >= 0.88  # nominal 95%, a discrete bootstrap interval: checked loosely here


def test_periods_without_an_estimate_are_skipped_and_too_few_refused():
    x = np.array([0.9, np.nan, 0.91, 0.9, 0.7, 0.71, 0.69])
    se = np.full(7, 0.01)
    assert change_point(x, se, n_resamples=50).index == 4  # an index into the full series
    with pytest.raises(ValueError, match="at least 3 periods"):
        change_point([0.9, np.nan], [0.01, 0.01])


@pytest.fixture(scope="module")
def found():
    log = simulate_log(600_000, days=60, drop_day=30, seed=8)
    return log, log.rag.monitor("faithfulness", reference=0.88, by="topic", predictor="lexical_support",
                                guarantee="arl", arl=365)


def test_the_post_mortem_dates_locates_and_lists(found):
    log, m = found
    billing = int(np.flatnonzero(m.alarms["slice"] == "billing")[0])
    pm = m.post_mortem(billing, by=["topic", "channel"])
    day30 = pd.Timestamp("2026-10-01", tz="UTC")
    assert pm.started_low <= day30 <= pm.started_high
    assert abs((pm.started - day30).days) <= 2
    top = pm.slices.iloc[0]
    assert (top["column"], top["value"]) == ("topic", "billing") and top["flagged"]
    others = pm.slices[(pm.slices["column"] == "topic") & (pm.slices["value"] != "billing")]
    assert not others["flagged"].any()
    # the slices' before/after rates: the design-weighted means over the same requests
    after = log[(log["topic"] == "billing") & (log["timestamp"] >= pm.started)]
    assert top["n_judged_after"] == after["selected"].sum()
    # the requests: judged failures of billing since the change, nothing else
    req = pm.requests
    assert len(req) and (req["topic"] == "billing").all() and (req["faithfulness"] == 0).all()
    assert (req["timestamp"] >= pm.started).all()
    assert len(req) == int(((after["faithfulness"] == 0)).sum())
    text = repr(pm)
    assert "started 2026-" in text and "topic=billing" in text and "2000 resamples, seed 0" in text


def test_the_requests_become_a_new_eval_set_version(found, tmp_path):
    _, m = found
    pm = m.post_mortem(0)
    base = raglab.EvalSet.freeze(pd.DataFrame({"question_id": ["q1", "q2"],
                                               "question": ["How do I pay?", "Where is my parcel?"],
                                               "topic": ["billing", "shipping"]}), tmp_path, version="v1")
    grown = pm.extend(base, id_column="request_id", limit=25)
    assert grown.version == "v2" and len(grown) == 27
    assert grown.added == [f"prod-{i}" for i in pm.requests["request_id"].head(25)]
    assert set(grown.rows["question"].iloc[2:]) <= set(pm.requests["question"].astype(str))
    assert raglab.EvalSet.load(base.path.parent, "v1").rows.shape[0] == 2  # v1 untouched
    with pytest.raises(KeyError, match="needs a log column"):
        pm.extend(raglab.EvalSet.freeze(pd.DataFrame({"question_id": ["a"], "reference": ["x"]}), tmp_path / "o",
                                        version="v1"), id_column="request_id")


def test_post_mortem_errors(found):
    _, m = found
    with pytest.raises(IndexError, match="not one of the"):
        m.post_mortem(99)
    flat = simulate_log(50_000, days=20, drop_topic=None, seed=1)
    quiet = flat.rag.monitor("faithfulness", reference=0.5)
    with pytest.raises(ValueError, match="raised no alarm"):
        quiet.post_mortem()
