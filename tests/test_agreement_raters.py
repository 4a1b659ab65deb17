"""Several raters: Fleiss' kappa (statsmodels), Krippendorff's alpha (the krippendorff package),
majority votes and the judge against the human majority (scikit-learn)."""

from __future__ import annotations

import warnings

import krippendorff
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

import raglab  # noqa: F401
from raglab.agreement import fleiss_kappa, judge_vs_majority, krippendorff_alpha, majority_vote


def _ratings(rng, items, raters, k, agree=0.6):
    truth = rng.integers(0, k, items)
    noise = rng.integers(0, k, (items, raters))
    return np.where(rng.random((items, raters)) < agree, truth[:, None], noise)


# ---- Fleiss -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("raters,k", [(2, 2), (3, 4), (5, 3)])
def test_fleiss_matches_statsmodels(raters, k):
    rng = np.random.default_rng(raters * 10 + k)
    data = _ratings(rng, 120, raters, k)
    table, _ = aggregate_raters(data)
    assert fleiss_kappa(data) == pytest.approx(sm_fleiss_kappa(table), abs=1e-12)
    assert fleiss_kappa(table, counts=True) == pytest.approx(sm_fleiss_kappa(table), abs=1e-12)


def test_fleiss_wikipedia_example():
    # Wikipedia "Fleiss' kappa" worked example (10 items, 14 raters, 5 categories): kappa = 0.210
    table = np.array([
        [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
    ])
    assert round(fleiss_kappa(table, counts=True), 3) == 0.210


def test_fleiss_allows_different_raters_with_equal_counts_but_not_unequal_counts():
    data = np.array([[1, 1, np.nan], [np.nan, 0, 0], [1, np.nan, 0], [0, 1, np.nan]], dtype=object)
    compact = np.array([[1, 1], [0, 0], [1, 0], [0, 1]])
    assert fleiss_kappa(data) == pytest.approx(sm_fleiss_kappa(aggregate_raters(compact)[0]))
    with pytest.raises(ValueError, match=r"same number .* found \[2, 3\].*krippendorff_alpha"):
        fleiss_kappa([[1, 1, 1], [1, 0, None]])


# ---- Krippendorff ------------------------------------------------------------------------------------


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_krippendorff_matches_package_with_missing(level, seed):
    rng = np.random.default_rng(seed)
    data = _ratings(rng, 80, 5, 5, agree=0.5).astype(float) + 1  # values 1..5
    data[rng.random(data.shape) < 0.3] = np.nan
    expected = krippendorff.alpha(reliability_data=data.T, level_of_measurement=level)  # raters x items
    assert krippendorff_alpha(data, level=level) == pytest.approx(expected, abs=1e-10)
    frame = pd.DataFrame(data, columns=[f"r{i}" for i in range(5)])
    assert krippendorff_alpha(frame, level=level) == pytest.approx(expected, abs=1e-10)


def test_krippendorff_unequally_spaced_values():
    rng = np.random.default_rng(7)
    values = np.array([0.0, 1.0, 5.0, 6.0])
    data = values[_ratings(rng, 60, 3, 4)]
    data[rng.random(data.shape) < 0.2] = np.nan
    for level in ("ordinal", "interval"):
        expected = krippendorff.alpha(reliability_data=data.T, level_of_measurement=level)
        assert krippendorff_alpha(data, level=level) == pytest.approx(expected, abs=1e-10)


def test_krippendorff_wikipedia_example():
    # Krippendorff (2011) "Computing Krippendorff's alpha-reliability", the 4 coders x 12 units
    # example with missing values: nominal alpha = 0.743, interval 0.849
    coders = np.array([
        [1, 2, 3, 3, 2, 1, 4, 1, 2, np.nan, np.nan, np.nan],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, np.nan, 3],
        [np.nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, np.nan],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, np.nan],
    ])
    assert round(krippendorff_alpha(coders.T, level="nominal"), 3) == 0.743
    assert round(krippendorff_alpha(coders.T, level="interval"), 3) == 0.849


def test_krippendorff_string_labels_nominal():
    rng = np.random.default_rng(4)
    codes = _ratings(rng, 50, 3, 3).astype(float)
    codes[rng.random(codes.shape) < 0.2] = np.nan
    names = np.array(["bad", "ok", "good"], dtype=object)
    labelled = np.where(np.isnan(codes), None, names[np.nan_to_num(codes).astype(int)])
    expected = krippendorff.alpha(reliability_data=codes.T, level_of_measurement="nominal")
    assert krippendorff_alpha(labelled, level="nominal") == pytest.approx(expected, abs=1e-10)


def test_krippendorff_errors():
    with pytest.raises(ValueError, match="must be one of"):
        krippendorff_alpha([[1, 2]], level="ordinal-ish")
    with pytest.raises(ValueError, match="two or more raters"):
        krippendorff_alpha([[1, None], [None, 2]])
    with pytest.raises(ValueError, match="one value"):
        krippendorff_alpha([[1, 1], [1, 1]])
    with pytest.raises(TypeError, match="numeric"):
        krippendorff_alpha([["a", "b"], ["a", "a"]], level="interval")


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000))
def test_krippendorff_property_matches_package(seed):
    rng = np.random.default_rng(seed)
    items, raters = int(rng.integers(3, 30)), int(rng.integers(2, 6))
    data = rng.integers(1, 5, (items, raters)).astype(float)
    data[rng.random(data.shape) < 0.25] = np.nan
    try:
        with warnings.catch_warnings():
            # the package divides 0/0 when all pairable ratings share one value and returns nan (skipped below)
            warnings.filterwarnings("ignore", "invalid value encountered in scalar divide", RuntimeWarning)
            expected = krippendorff.alpha(reliability_data=data.T, level_of_measurement="ordinal")
    except ValueError:  # the package refuses a single value or no pairable units
        return
    if not np.isfinite(expected):
        return
    assert krippendorff_alpha(data, level="ordinal") == pytest.approx(expected, abs=1e-9)


# ---- majority and judge vs majority -----------------------------------------------------------------


def test_majority_vote_tie_rules():
    ratings = [[1, 1, 0], [1, 0, None], [0, 0, 0], [None, None, None], [2, 3, 4]]
    assert majority_vote(ratings).tolist() == [1, None, 0, None, None]
    assert majority_vote(ratings, ties="low").tolist() == [1, 0, 0, None, 2]
    assert majority_vote(ratings, ties="high").tolist() == [1, 1, 0, None, 4]
    with pytest.raises(ValueError, match=r"The value for `ties` must be one of \['drop', 'low', 'high'\]"):
        majority_vote(ratings, ties="random")


def test_majority_vote_against_pandas_mode():
    rng = np.random.default_rng(5)
    data = _ratings(rng, 200, 5, 3)  # odd number of raters, 3 labels: ties are still possible
    ours = majority_vote(data)
    for row, label in zip(data, ours):
        modes = pd.Series(row).mode().tolist()
        assert (label is None) == (len(modes) > 1)
        if label is not None:
            assert label == modes[0]


def test_judge_vs_majority_matches_sklearn_on_the_majority():
    rng = np.random.default_rng(12)
    truth = rng.integers(0, 2, 300)
    ratings = np.where(rng.random((300, 3)) < 0.85, truth[:, None], 1 - truth[:, None])
    judge = np.where(rng.random(300) < 0.8, truth, 1 - truth)
    majority = (ratings.sum(1) >= 2).astype(int)  # 3 raters, binary: no ties
    rep = judge_vs_majority(ratings, judge, positive=1)
    assert rep.n == 300 and rep.n_ties == 0
    assert rep.kappa == pytest.approx(cohen_kappa_score(majority, judge))
    negatives = majority == 0
    assert rep.miss_rate == pytest.approx(judge[negatives].mean())


def test_judge_vs_majority_drops_ties_and_says_so():
    ratings = pd.DataFrame({"a": [4, 1, 4, 3, 2], "b": [4, 2, 2, 4, 1], "c": [3, None, None, 4, 1]},
                           index=["q1", "q2", "q3", "q4", "q5"])
    judge = pd.Series([0.9, 0.8, 0.2, 1.0, 0.1], index=ratings.index, name="rl_f")
    rep = judge_vs_majority(ratings, judge, rating_threshold=3, judge_threshold=0.5, warn=False)
    # per rater pass = rating >= 3; q3 is split 1-1 (tie, dropped)
    assert rep.n == 4 and rep.n_ties == 1 and rep.n_excluded == 1
    assert "tied human vote" in repr(rep)
    assert rep.miss_rate == 1 / 2  # q2 and q5 are human fails; the judge passed q2
    low = judge_vs_majority(ratings, judge, rating_threshold=3, judge_threshold=0.5, ties="low", warn=False)
    assert low.n == 5 and low.n_ties == 0


def test_accessor_with_several_rater_columns():
    rng = np.random.default_rng(1)
    ratings = rng.integers(1, 5, (60, 3)).astype(float)
    ratings[rng.random(ratings.shape) < 0.2] = np.nan
    rows = pd.DataFrame(ratings, columns=["r1", "r2", "r3"])
    rows["question_id"] = [f"q{i}" for i in range(60)]
    rows["judge"] = rng.random(60)
    rep = rows.rag.agreement(["r1", "r2", "r3"], "judge", human_threshold=3, judge_threshold=0.5, warn=False)
    pure = judge_vs_majority(rows[["r1", "r2", "r3"]], rows["judge"], rating_threshold=3, judge_threshold=0.5,
                             warn=False)
    pd.testing.assert_frame_equal(rep.to_frame(), pure.to_frame())
    assert rep.n_ties == pure.n_ties
    assert "question_id" in rep.disagreements.columns
    assert set(rep.disagreements.index) == set(pure.disagreements.index)


def test_judge_vs_majority_with_units_resamples_the_clusters_of_the_kept_items():
    rng = np.random.default_rng(21)
    n = 240
    units = np.repeat([f"conv{i}" for i in range(24)], 10)
    truth = rng.integers(0, 2, n)
    ratings = np.where(rng.random((n, 2)) < 0.85, truth[:, None], 1 - truth[:, None]).astype(float)
    ratings[units == "conv0"] = [1, 0]  # every answer of one conversation has a split vote: dropped
    judge = np.where(rng.random(n) < 0.8, truth, 1 - truth)
    rep = judge_vs_majority(ratings, judge, positive=1, units=units, n_resamples=2000, warn=False)
    agree = ratings[:, 0] == ratings[:, 1]
    assert rep.n_ties == int((~agree).sum()) and rep.n_clusters == 23
    # the same as report() on the kept items and their clusters
    from raglab.agreement import report

    direct = report(ratings[agree, 0].astype(int), judge[agree], positive=1, units=units[agree], n_resamples=2000,
                    warn=False)
    assert tuple(rep.kappa_interval) == tuple(direct.kappa_interval)
    assert rep.design_effects == direct.design_effects
    assert rep.kappa == pytest.approx(cohen_kappa_score(ratings[agree, 0].astype(int), judge[agree]))
