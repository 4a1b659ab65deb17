"""Cohen's kappa and the judge-validation report, against scikit-learn, statsmodels and seed 000."""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.metrics import balanced_accuracy_score, cohen_kappa_score, confusion_matrix, recall_score
from statsmodels.stats.inter_rater import cohens_kappa as sm_cohens_kappa
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint

import raglab  # noqa: F401  (registers df.rag)
from raglab import agreement
from raglab.agreement import (
    AgreementReport,
    FragileIntervalWarning,
    ImpossibleRateWarning,
    LabelMismatchError,
    LowAgreementWarning,
    cohen_kappa,
    cohen_kappa_interval,
    report,
)
from raglab.stats import MIN_CLUSTERS, Interval, proportion_interval

# Seed 000, "Validate the judge against people": 200 faithfulness labels, 1 = supported.
SEED_HUMAN = [1] * 150 + [0] * 50
SEED_JUDGE = [1] * 142 + [0] * 8 + [1] * 22 + [0] * 28


def _random_labels(rng, n, k, agree=0.6):
    a = rng.integers(0, k, n)
    b = np.where(rng.random(n) < agree, a, rng.integers(0, k, n))
    return a, b


def _table(a, b, labels):
    return confusion_matrix(a, b, labels=labels)


# ---- seed numbers -----------------------------------------------------------------------------------


def test_seed_agreement_and_kappa():
    # seed 000 prints "raw agreement = 0.850, kappa = 0.559"
    rep = report(SEED_HUMAN, SEED_JUDGE, positive=1)
    assert f"{rep.agreement:.3f}" == "0.850"
    assert f"{rep.kappa:.3f}" == "0.559"
    assert f"{cohen_kappa(SEED_HUMAN, SEED_JUDGE):.3f}" == "0.559"


def test_seed_miss_rate_rates_and_attenuation():
    rep = report(SEED_HUMAN, SEED_JUDGE, positive=1)
    # seed 000: "of the 50 answers people found unsupported, the judge passed 22"
    assert rep.miss_rate == 22 / 50 == 0.44
    # "flags 18 percent of answers as unsupported against a true 25 percent"
    assert rep.judge_positive_rate == pytest.approx(1 - 0.18)
    assert rep.human_positive_rate == pytest.approx(1 - 0.25)
    # "catches only 28 of 50 hallucinations ... moves its score about half as much as it should"
    assert rep.specificity == 28 / 50
    assert rep.sensitivity == 142 / 150
    assert round(rep.attenuation, 2) == 0.51
    assert rep.attenuation == pytest.approx(142 / 150 + 28 / 50 - 1)


def test_seed_confusion_is_labelled_human_rows_judge_columns():
    rep = report(pd.Series(SEED_HUMAN, name="human"), pd.Series(SEED_JUDGE, name="judge"), positive=1)
    expected = pd.DataFrame([[142, 8], [22, 28]], index=pd.Index([1, 0], name="human"),
                            columns=pd.Index([1, 0], name="judge"))
    pd.testing.assert_frame_equal(rep.confusion, expected, check_index_type=False, check_column_type=False)
    # scikit-learn's confusion matrix (rows = true) in the same label order
    np.testing.assert_array_equal(rep.confusion.to_numpy(), confusion_matrix(SEED_HUMAN, SEED_JUDGE, labels=[1, 0]))


def test_seed_per_class_recall_matches_sklearn():
    rep = report(SEED_HUMAN, SEED_JUDGE, positive=1)
    expected = recall_score(SEED_HUMAN, SEED_JUDGE, average=None, labels=[0, 1])
    assert rep.per_class_recall[0] == pytest.approx(expected[0])
    assert rep.per_class_recall[1] == pytest.approx(expected[1])


def test_attenuation_is_sklearn_adjusted_balanced_accuracy():
    rng = np.random.default_rng(3)
    h = rng.integers(0, 2, 300)
    j = np.where(rng.random(300) < 0.8, h, 1 - h)
    rep = report(h, j, positive=1)
    assert rep.attenuation == pytest.approx(balanced_accuracy_score(h, j, adjusted=True))


# ---- kappa against scikit-learn and statsmodels ----------------------------------------------------


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
@pytest.mark.parametrize("k", [2, 3, 5])
def test_kappa_matches_sklearn(weights, k):
    rng = np.random.default_rng(k)
    a, b = _random_labels(rng, 250, k)
    assert cohen_kappa(a, b, weights=weights) == pytest.approx(cohen_kappa_score(a, b, weights=weights), abs=1e-12)


def test_kappa_with_string_labels_and_label_order_matches_sklearn():
    levels = ["none", "some", "most", "all"]
    rng = np.random.default_rng(11)
    a, b = _random_labels(rng, 200, 4)
    sa, sb = [levels[i] for i in a], [levels[i] for i in b]
    for weights in (None, "linear", "quadratic"):
        ours = cohen_kappa(sa, sb, weights=weights, labels=levels)
        assert ours == pytest.approx(cohen_kappa_score(sa, sb, weights=weights, labels=levels), abs=1e-12)
    # unweighted kappa does not depend on the label order
    assert cohen_kappa(sa, sb) == pytest.approx(cohen_kappa_score(sa, sb))


@pytest.mark.parametrize("wt", ["linear", "quadratic"])
def test_weighted_kappa_distance_value_matches_statsmodels_scores(wt):
    # labels 1, 2, 4, 8 are not equally spaced: statsmodels with weights=labels measures distance by
    # value, scikit-learn (and distance="rank") by position
    values = [1, 2, 4, 8]
    rng = np.random.default_rng(5)
    a, b = _random_labels(rng, 300, 4)
    va, vb = [values[i] for i in a], [values[i] for i in b]
    table = _table(va, vb, values)
    sm_value = sm_cohens_kappa(table, weights=np.array(values, float), wt=wt)
    sm_rank = sm_cohens_kappa(table, wt=wt)  # statsmodels' default scores 0, 1, 2, 3
    assert cohen_kappa(va, vb, weights=wt, distance="value") == pytest.approx(sm_value.kappa, abs=1e-12)
    assert cohen_kappa(va, vb, weights=wt, distance="rank") == pytest.approx(sm_rank.kappa, abs=1e-12)
    assert cohen_kappa(va, vb, weights=wt) == pytest.approx(cohen_kappa_score(va, vb, weights=wt), abs=1e-12)
    assert sm_value.kappa != pytest.approx(sm_rank.kappa)  # the convention matters here


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_analytic_interval_uses_statsmodels_std_kappa(weights):
    rng = np.random.default_rng(8)
    a, b = _random_labels(rng, 180, 4, agree=0.5)
    table = _table(a, b, [0, 1, 2, 3])
    sm = sm_cohens_kappa(table, wt=weights) if weights else sm_cohens_kappa(table)
    iv = cohen_kappa_interval(a, b, weights=weights, ci=0.95, method="analytic")
    assert iv.estimate == pytest.approx(sm.kappa, abs=1e-12)
    # statsmodels' kappa_low / kappa_upp are kappa -+ z * std_kappa (unclipped; no clipping needed here)
    assert iv.low == pytest.approx(sm.kappa_low, abs=1e-10)
    assert iv.high == pytest.approx(sm.kappa_upp, abs=1e-10)
    assert (iv.high - iv.estimate) / 1.959963984540054 == pytest.approx(sm.std_kappa, rel=1e-9)
    # The default (adjusted) interval is statsmodels' interval on the table plus 1/(m-1)^2 = 1/9
    # pseudo-items per cell (four labels in use), the estimate staying the table's own kappa.
    adjusted = sm_cohens_kappa(table + 1 / 9, wt=weights) if weights else sm_cohens_kappa(table + 1 / 9)
    default = cohen_kappa_interval(a, b, weights=weights)
    assert default.estimate == pytest.approx(sm.kappa, abs=1e-12) and "adjusted" in default.method
    assert (default.low, default.high) == pytest.approx((adjusted.kappa_low, adjusted.kappa_upp), abs=1e-10)


def test_seed_kappa_interval_against_statsmodels():
    # Behaviour change (issue 18): the default interval is the adjusted one at every n, statsmodels'
    # interval on the table plus one pseudo-item per cell (pass/fail); method="analytic" is the plain one.
    sm = sm_cohens_kappa(np.array([[142, 8], [22, 28]]))
    plain = report(SEED_HUMAN, SEED_JUDGE, positive=1, method="analytic").kappa_interval
    assert (plain.low, plain.high) == pytest.approx((sm.kappa_low, sm.kappa_upp), abs=1e-12)
    assert isinstance(plain, Interval) and plain.level == 0.95 and plain.n == 200 and "asymptotic" in plain.method
    adjusted = sm_cohens_kappa(np.array([[143.0, 9.0], [23.0, 29.0]]))
    iv = report(SEED_HUMAN, SEED_JUDGE, positive=1).kappa_interval
    assert iv.estimate == pytest.approx(sm.kappa, abs=1e-12)
    assert (iv.low, iv.high) == pytest.approx((adjusted.kappa_low, adjusted.kappa_upp), abs=1e-12)
    assert "adjusted" in iv.method and iv.n == 200


def test_analytic_interval_is_clipped_to_minus_one_one():
    iv = cohen_kappa_interval([0, 1, 0, 1, 1], [0, 1, 0, 1, 0])
    assert -1 <= iv.low <= iv.estimate <= iv.high <= 1


def test_bootstrap_interval_invariants():
    a = np.r_[SEED_HUMAN]
    b = np.r_[SEED_JUDGE]
    one = cohen_kappa_interval(a, b, method="bootstrap", n_resamples=2000, seed=3)
    two = cohen_kappa_interval(a, b, method="bootstrap", n_resamples=2000, seed=3)
    other = cohen_kappa_interval(a, b, method="bootstrap", n_resamples=2000, seed=4)
    assert tuple(one) == tuple(two)
    assert tuple(one) != tuple(other)
    assert one.low <= one.estimate <= one.high
    assert one.method == "bootstrap-percentile" and one.n_resamples == 2000 and one.seed == 3
    # close to the analytic interval at n = 200
    analytic = cohen_kappa_interval(a, b)
    assert one.low == pytest.approx(analytic.low, abs=0.03)
    assert one.high == pytest.approx(analytic.high, abs=0.03)


def test_bootstrap_matches_resampling_items_by_index():
    # The counts are drawn as a multinomial; resampling items by index is the same bootstrap.
    a, b = np.array(SEED_HUMAN), np.array(SEED_JUDGE)
    rng = np.random.default_rng(0)
    idx = rng.integers(0, len(a), (4000, len(a)))
    # seed 000's two-rater formula, vectorised over the index resamples
    ra, rb = a[idx], b[idx]
    observed = (ra == rb).mean(1)
    pa, pb = ra.mean(1), rb.mean(1)
    expected = pa * pb + (1 - pa) * (1 - pb)
    by_index = (observed - expected) / (1 - expected)
    assert by_index[0] == pytest.approx(cohen_kappa_score(ra[0], rb[0]))
    ours = cohen_kappa_interval(a, b, method="bootstrap", n_resamples=4000, seed=1)
    assert ours.low == pytest.approx(np.quantile(by_index, 0.025), abs=0.015)
    assert ours.high == pytest.approx(np.quantile(by_index, 0.975), abs=0.015)


def test_perfect_and_constant_raters():
    assert cohen_kappa([0, 1, 1, 0], [0, 1, 1, 0]) == 1.0
    assert math.isnan(cohen_kappa([1, 1, 1], [1, 1, 1]))  # chance agreement is 1: undefined
    # four items in perfect agreement are not proof of perfect agreement: no zero-width interval
    iv = cohen_kappa_interval([0, 1, 1, 0], [0, 1, 1, 0])
    assert iv.estimate == 1.0 and iv.high == 1.0 and iv.low < 0.5 and "adjusted" in iv.method
    with pytest.warns(FragileIntervalWarning):
        assert tuple(cohen_kappa_interval([0, 1, 1, 0], [0, 1, 1, 0], method="analytic")) == (1.0, 1.0, 1.0)


# ---- properties ------------------------------------------------------------------------------------

labels_pairs = st.integers(2, 60).flatmap(
    lambda n: st.tuples(st.lists(st.integers(0, 3), min_size=n, max_size=n),
                        st.lists(st.integers(0, 3), min_size=n, max_size=n))
)


def _never_comparable(a, b) -> bool:
    """The stated rule: no label in common, not a 0/1 coding, and one side uses two or more labels."""
    sa, sb = set(a), set(b)
    return not sa & sb and not (sa | sb) <= {0, 1} and max(len(sa), len(sb)) >= 2


@settings(max_examples=60, deadline=None)
@given(labels_pairs, st.sampled_from([None, "linear", "quadratic"]))
def test_kappa_symmetric_bounded_and_order_free(pair, weights):
    a, b = pair
    if _never_comparable(a, b):
        with pytest.raises(LabelMismatchError, match="no label in common"):
            cohen_kappa(a, b, weights=weights)
        return
    k = cohen_kappa(a, b, weights=weights)
    if math.isnan(k):
        return
    assert cohen_kappa(b, a, weights=weights) == pytest.approx(k, abs=1e-12)
    assert -1 - 1e-12 <= k <= 1 + 1e-12
    order = np.random.default_rng(len(a)).permutation(len(a))
    assert cohen_kappa(np.array(a)[order], np.array(b)[order], weights=weights) == pytest.approx(k, abs=1e-12)
    assert k == pytest.approx(cohen_kappa_score(a, b, weights=weights), abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(labels_pairs)
def test_unweighted_kappa_ignores_label_names(pair):
    a, b = pair
    names = {0: "zero", 1: "one", 2: "two", 3: "three"}
    if not set(a) & set(b):  # every item disagrees: kappa is 0 or undefined, if the labels are comparable
        return
    k = cohen_kappa(a, b)
    renamed = cohen_kappa([names[x] for x in a], [names[x] for x in b])
    assert (math.isnan(k) and math.isnan(renamed)) or renamed == pytest.approx(k, abs=1e-12)


# ---- the report ------------------------------------------------------------------------------------


def test_report_intervals_are_wilson_from_raglab_stats():
    rep = report(SEED_HUMAN, SEED_JUDGE, positive=1)
    assert rep.intervals["miss_rate"] == proportion_interval(22, 50)
    assert rep.intervals["agreement"] == proportion_interval(170, 200)
    low, high = proportion_confint(22, 50, method="wilson")  # statsmodels as the oracle
    assert (rep.intervals["miss_rate"].low, rep.intervals["miss_rate"].high) == pytest.approx((low, high), abs=1e-12)


def test_attenuation_interval_is_newcombe_against_statsmodels():
    rep = report(SEED_HUMAN, SEED_JUDGE, positive=1)
    low, high = confint_proportions_2indep(142, 150, 22, 50, method="newcomb", compare="diff")
    iv = rep.intervals["attenuation"]
    assert (iv.low, iv.high) == pytest.approx((low, high), abs=1e-12)
    assert iv.estimate == pytest.approx(rep.attenuation)


def test_kappa_low_high_and_bootstrap_option():
    rep = report(SEED_HUMAN, SEED_JUDGE, positive=1, method="bootstrap", n_resamples=1000, seed=9)
    assert (rep.kappa_low, rep.kappa_high) == (rep.kappa_interval.low, rep.kappa_interval.high)
    assert rep.kappa_interval.seed == 9 and rep.kappa_interval.n_resamples == 1000


def test_to_frame_is_tidy():
    frame = report(SEED_HUMAN, SEED_JUDGE, positive=1).to_frame()
    assert list(frame.columns) == ["statistic", "estimate", "low", "high", "method", "level", "n", "n_resamples", "seed",
                                   "design_effect"]
    assert frame["design_effect"].isna().all()  # no units: no design effect
    stats = frame.set_index("statistic")
    assert stats.loc["miss_rate", "estimate"] == 0.44
    assert stats.loc["kappa", "estimate"] == pytest.approx(cohen_kappa_score(SEED_HUMAN, SEED_JUDGE))
    assert {"attenuation", "sensitivity", "specificity", "judge_positive_rate", "human_positive_rate",
            "corrected_pass_rate", "agreement"} <= set(stats.index)
    assert (frame["low"] <= frame["estimate"] + 1e-12).all() and (frame["estimate"] <= frame["high"] + 1e-12).all()


def test_repr_is_short_and_states_the_numbers():
    text = repr(report(SEED_HUMAN, SEED_JUDGE, positive=1))
    assert "0.850" in text and "0.559" in text and "22 of the 50" in text and "0.51" in text
    assert "moderate" in text
    assert len(text.splitlines()) <= 14
    html = report(SEED_HUMAN, SEED_JUDGE, positive=1)._repr_html_()
    assert "<table" in html and "0.559" in html


def test_low_kappa_warns_with_the_thresholds():
    human = [1] * 60 + [0] * 40
    judge = [1] * 45 + [0] * 15 + [1] * 25 + [0] * 15
    expected = cohen_kappa_score(human, judge)
    assert expected < 0.4
    with pytest.warns(LowAgreementWarning, match=r"0\.6.*substantial.*0\.4.*should not be trusted"):
        rep = report(human, judge, positive=1)
    assert rep.interpretation == "should not be trusted"
    # Issued as a Python warning, so the display counts it instead of printing it a second time.
    assert rep.warnings and "WARNINGS" in repr(rep) and rep.warnings[0] not in repr(rep)


def test_no_warning_above_the_threshold():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rep = report(SEED_HUMAN, SEED_JUDGE, positive=1)
    assert rep.warnings == []
    assert rep.interpretation == "moderate"


def test_disagreements_keep_series_index_and_ids():
    ids = [f"q{i:03d}" for i in range(200)]
    human = pd.Series(SEED_HUMAN, index=ids, name="human")
    judge = pd.Series(SEED_JUDGE, index=ids, name="judge")
    rep = report(human, judge, positive=1)
    assert len(rep.disagreements) == 30
    assert rep.disagreements.index[0] == "q142"
    assert (rep.disagreements["human"] != rep.disagreements["judge"]).all()
    rep2 = report(SEED_HUMAN, SEED_JUDGE, positive=1, ids=ids)
    assert list(rep2.disagreements.index) == list(rep.disagreements.index)


def test_missing_labels_are_excluded_and_counted():
    human = list(SEED_HUMAN) + [None, 1, np.nan]
    judge = list(SEED_JUDGE) + [1, None, 0]
    rep = report(human, judge, positive=1)
    assert rep.n == 200 and rep.n_excluded == 3
    assert rep.kappa == pytest.approx(cohen_kappa_score(SEED_HUMAN, SEED_JUDGE))
    assert "3 excluded" in repr(rep)
    with pytest.raises(ValueError, match="missing label"):
        cohen_kappa(human, judge)


def test_string_labels_need_positive_and_thresholds_binarise():
    human = ["supported" if h else "unsupported" for h in SEED_HUMAN]
    judge = ["supported" if j else "unsupported" for j in SEED_JUDGE]
    rep = report(human, judge, positive="supported")
    assert rep.miss_rate == 0.44
    plain = report(human, judge)
    assert plain.miss_rate is None and plain.positive is None
    assert plain.kappa == pytest.approx(rep.kappa)
    scores = np.where(np.array(SEED_JUDGE) == 1, 0.9, 0.2)
    rep3 = report(SEED_HUMAN, scores, judge_threshold=0.5, human_threshold=0.5)
    assert rep3.positive is True and rep3.miss_rate == 0.44


def test_report_errors_are_clear():
    with pytest.raises(ValueError, match=r"The value for `weights` must be one of \[None, 'linear', 'quadratic'\]"):
        cohen_kappa([1, 0], [1, 0], weights="lin")
    with pytest.raises(ValueError, match="must label the same items: got 3 and 2"):
        report([1, 0, 1], [1, 0])
    with pytest.raises(ValueError, match="positive label 'yes' does not occur"):
        report([1, 0], [1, 0], positive="yes")
    with pytest.raises(ValueError, match="not in `labels`"):
        cohen_kappa([1, 2], [1, 3], labels=[1, 2])
    with pytest.raises(TypeError, match="numeric labels"):
        cohen_kappa(["a", "b"], ["a", "a"], weights="linear", distance="value")


# ---- Rogan-Gladen ----------------------------------------------------------------------------------


def test_rogan_gladen_on_the_validation_items_gives_the_human_rate():
    rep = report(SEED_HUMAN, SEED_JUDGE, positive=1)
    assert rep.corrected_pass_rate.estimate == pytest.approx(rep.human_positive_rate)
    # the formula on the same items is an identity: Rogan & Gladen's estimate from the judge's rate
    assert agreement.rogan_gladen(0.82, sensitivity=142 / 150, specificity=28 / 50).estimate == pytest.approx(0.75)
    iv = rep.corrected_pass_rate
    assert "bootstrap over the 200 items" in iv.method and "together in each resample" in iv.method
    assert (iv.n_resamples, iv.seed, iv.level, iv.n) == (10_000, 0, 0.95, 200)


def test_rogan_gladen_formula_and_clipping():
    # pi = (p + Sp - 1) / (Se + Sp - 1): Rogan & Gladen (1978)
    iv = agreement.rogan_gladen(0.7, sensitivity=0.9, specificity=0.8)
    assert iv.estimate == pytest.approx((0.7 + 0.8 - 1) / (0.9 + 0.8 - 1))
    with pytest.warns(ImpossibleRateWarning):
        assert agreement.rogan_gladen(0.95, sensitivity=0.9, specificity=0.8).estimate == 1.0
    with pytest.warns(ImpossibleRateWarning):
        assert agreement.rogan_gladen(0.1, sensitivity=0.9, specificity=0.8).estimate == 0.0
    assert math.isnan(iv.low) and math.isnan(iv.high) and "no interval: counts not given" in iv.method
    with pytest.raises(ValueError, match="no better than chance"):
        agreement.rogan_gladen(0.5, sensitivity=0.5, specificity=0.4)


@pytest.mark.parametrize("method", ["delta", "bootstrap"])
def test_rogan_gladen_interval_coverage_by_simulation(method):
    # True pass rate 0.7; a judge with Se 0.9, Sp 0.7 validated on 150 + 50 labelled items; a new run
    # of 400 questions. The corrected interval should cover 0.7 about 95% of the time.
    rng = np.random.default_rng(2024)
    true_pi, se, sp, n, n_pos, n_neg = 0.7, 0.9, 0.7, 400, 150, 50
    reps = 400 if method == "delta" else 150
    covered = 0
    for _ in range(reps):
        se_hat = rng.binomial(n_pos, se) / n_pos
        sp_hat = rng.binomial(n_neg, sp) / n_neg
        p_judge = true_pi * se + (1 - true_pi) * (1 - sp)
        p_hat = rng.binomial(n, p_judge) / n
        iv = agreement.rogan_gladen(p_hat, sensitivity=se_hat, specificity=sp_hat, n=n, n_positive=n_pos,
                                    n_negative=n_neg, method=method, n_resamples=1000, seed=0)
        covered += iv.low <= true_pi <= iv.high
    assert 0.90 <= covered / reps <= 0.99


def test_correct_applies_the_report_error_rates_to_a_new_run():
    rep = report(SEED_HUMAN, SEED_JUDGE, positive=1)
    iv = rep.correct(0.70, 400)
    assert iv.estimate == pytest.approx((0.70 + 28 / 50 - 1) / (142 / 150 + 28 / 50 - 1))
    assert iv.n == 400 and iv.low < iv.estimate < iv.high


# ---- accessor ----------------------------------------------------------------------------------------


def test_accessor_equals_the_pure_function_and_returns_rows():
    rows = pd.DataFrame({
        "question_id": [f"q{i}" for i in range(200)],
        "human": SEED_HUMAN,
        "judge": SEED_JUDGE,
        "qtype": ["a", "b"] * 100,
    })
    rows.attrs["raglab"] = {"judge": {"fingerprint": "abc"}}
    before = rows.copy()
    rep = rows.rag.agreement("human", "judge", positive=1)
    pure = report(rows["human"], rows["judge"], positive=1)
    assert isinstance(rep, AgreementReport)
    pd.testing.assert_frame_equal(rep.to_frame(), pure.to_frame())
    pd.testing.assert_frame_equal(rep.confusion, pure.confusion)
    assert list(rep.disagreements.columns) == ["question_id", "human", "judge", "qtype"]
    assert rep.disagreements["question_id"].iloc[0] == "q142"
    assert rep.disagreements.attrs["raglab"]["judge"]["fingerprint"] == "abc"
    pd.testing.assert_frame_equal(rows, before)  # the user's frame is untouched


def test_accessor_names_a_missing_column():
    rows = pd.DataFrame({"human": [1, 0], "judge": [1, 1]})
    with pytest.raises(raglab.MissingColumnError, match=r"rag.agreement needs column 'label'.*found \['human', 'judge'\]"):
        rows.rag.agreement("label", "judge")


def test_scores_without_a_threshold_are_refused():
    frame = pd.DataFrame({"h": [1, 0, 1, 1], "j": [0.9, 0.2, 0.7, 0.4]})
    with pytest.raises(ValueError, match=r"the judge column holds scores \(e.g. 0.9\).*judge_threshold="):
        frame.rag.agreement("h", "j", positive=1)
    report = frame.rag.agreement("h", "j", positive=True, judge_threshold=0.5, warn=False)
    assert report.agreement == pytest.approx(0.75)  # pass at >= 0.5: 1, 0, 1, 0 against 1, 0, 1, 1


@pytest.mark.parametrize("human", [[1, 1, 1, 1], [0, 0, 0, 0]])
@pytest.mark.filterwarnings("ignore:kappa = 0.000 is below:raglab.agreement.LowAgreementWarning")
def test_one_human_label_reports_without_crashing(human):
    frame = pd.DataFrame({"h": human, "j": [1, 0, 1, 1]})
    with pytest.warns(LowAgreementWarning, match="people gave every item the"):
        report = frame.rag.agreement("h", "j", positive=1)
    text = repr(report)
    assert "n/a" in text and "2 issued as Python warnings" in text
    assert report.warnings[0].startswith("people gave every item")
    shown = repr(frame.rag.agreement("h", "j", positive=1, warn=False))
    assert "WARNING: people gave every item" in shown
    assert "<table>" in report._repr_html_()


# ---- labels that cannot be compared ------------------------------------------------------------------


def test_text_labels_against_a_boolean_judge_are_refused_naming_both_columns():
    # Before: kappa 0 and a LowAgreementWarning blaming the judge.
    rows = pd.DataFrame({"label": ["yes" if h else "no" for h in SEED_HUMAN], "judge": np.array(SEED_JUDGE, bool)})
    expected = (
        "rag.agreement: 'label' holds text labels ('no', 'yes') but 'judge' holds booleans (False, True); text never "
        "equals True or False, so no item could ever count as agreeing and kappa would measure the encoding, not the "
        "judge. Turn the text into booleans, e.g. df['label'] = df['label'] == 'yes' (with the label that means "
        "pass), and pass positive=True."
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an error, not a low-kappa warning
        with pytest.raises(LabelMismatchError) as caught:
            rows.rag.agreement("label", "judge")
    assert str(caught.value) == expected
    assert isinstance(caught.value, raglab.RowTableError) and isinstance(caught.value, ValueError)
    # the suggested fix works and gives scikit-learn's kappa
    rows["label"] = rows["label"] == "yes"
    assert rows.rag.agreement("label", "judge").kappa == pytest.approx(cohen_kappa_score(SEED_HUMAN, SEED_JUDGE))


def test_numbers_against_numbers_written_as_text_are_refused_with_the_conversion():
    rows = pd.DataFrame({"human": SEED_HUMAN, "judge": [str(j) for j in SEED_JUDGE]})
    expected = (
        "rag.agreement: 'judge' holds text labels ('0', '1') but 'human' holds numbers (0, 1); text never equals a "
        "number ('1' != 1), so no item could ever count as agreeing and kappa would measure the encoding, not the "
        "judge. Convert the text to numbers, e.g. df['judge'] = df['judge'].astype(int)."
    )
    with pytest.raises(LabelMismatchError) as caught:
        rows.rag.agreement("human", "judge", positive=1)
    assert str(caught.value) == expected
    rows["judge"] = rows["judge"].astype(int)
    assert rows.rag.agreement("human", "judge").miss_rate == 0.44
    # the pure function names its arguments (and a Series' name)
    with pytest.raises(LabelMismatchError, match=r"^report: `human` \('h'\) holds text labels \('0', '1'\) but `judge` "
                       r"holds numbers \(0, 1\).*human = pd.Series\(human\).astype\(int\)\.$"):
        report(pd.Series([str(h) for h in SEED_HUMAN], name="h"), SEED_JUDGE)
    with pytest.raises(LabelMismatchError, match=r"^cohen_kappa: `a` holds text labels \('a', 'b'\) but `b` holds "
                       r"numbers \(1, 2\)"):
        cohen_kappa(["a", "b"], [1, 2])


def test_no_label_in_common_is_refused_unless_labels_are_given():
    human = ["supported" if h else "unsupported" for h in SEED_HUMAN]
    judge = ["pass" if j else "fail" for j in SEED_JUDGE]
    rows = pd.DataFrame({"human": human, "verdict": judge})
    expected = (
        "rag.agreement: 'human' uses the labels ('supported', 'unsupported') and 'verdict' uses ('fail', 'pass'): no "
        "label in common, so no item could ever count as agreeing and kappa would measure the encoding, not the "
        "judge. Map one side onto the other's labels, e.g. df['verdict'] = df['verdict'].map({'fail': ..., 'pass': "
        "...}) (each to one of the labels of 'human'), or pass labels=[...] listing every category if the two really "
        "never agree."
    )
    with pytest.raises(LabelMismatchError) as caught:
        rows.rag.agreement("human", "verdict")
    assert str(caught.value) == expected
    # declared categories are the user's statement that these are comparable: kappa as scikit-learn has it
    labels = ["supported", "unsupported", "pass", "fail"]
    ours = report(human, judge, labels=labels, warn=False).kappa
    assert ours == pytest.approx(cohen_kappa_score(human, judge, labels=labels))
    # one label on each side on a handful of items can be real disagreement: allowed
    assert cohen_kappa(["pass", "pass"], ["fail", "fail"]) == 0.0


def test_booleans_against_ratings_need_a_threshold():
    rows = pd.DataFrame({"rating": [4, 1, 3, 2, 4, 4], "judge": [True, False, True, True, True, False]})
    with pytest.raises(LabelMismatchError, match=re.escape(
            "rag.agreement: 'rating' holds numbers other than 0 and 1 (2, 3, 4) but 'judge' holds booleans; True only "
            "equals 1 and False 0, so no item could ever count as agreeing and kappa would measure the encoding, not "
            "the judge. Turn the numbers into pass/fail first: pass human_threshold= (a value >= the threshold is a "
            "pass), e.g. human_threshold=3.")):
        rows.rag.agreement("rating", "judge")
    rep = rows.rag.agreement("rating", "judge", human_threshold=3, warn=False)
    assert rep.agreement == pytest.approx(4 / 6)


def test_rater_columns_and_judge_are_named_for_a_majority():
    rows = pd.DataFrame({"r1": [1, 0, 1, 1], "r2": [1, 0, 0, 1], "r3": [1, 1, 0, 1], "judge": ["1", "0", "1", "1"]})
    with pytest.raises(LabelMismatchError, match=re.escape(
            "rag.agreement: 'judge' holds text labels ('0', '1') but the majority of ['r1', 'r2', 'r3'] holds numbers "
            "(0, 1)")):
        rows.rag.agreement(["r1", "r2", "r3"], "judge")
    with pytest.raises(LabelMismatchError, match=re.escape("judge_vs_majority: `judge` holds text labels")):
        agreement.judge_vs_majority(rows[["r1", "r2", "r3"]], rows["judge"])


def test_comparable_mixed_encodings_give_scikit_learns_kappa():
    """Stated rule: 1 == 1.0, and booleans compare with 0/1 numbers (True is 1); the report shows 0/1."""
    expected = cohen_kappa_score(SEED_HUMAN, SEED_JUDGE)
    as_float = [float(j) for j in SEED_JUDGE]
    as_bool = np.array(SEED_JUDGE, dtype=bool)
    nullable = pd.Series(SEED_HUMAN + [None], dtype="Int64")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert report(SEED_HUMAN, as_float).kappa == pytest.approx(expected)
        rep = report(SEED_HUMAN, as_bool)
        assert rep.kappa == pytest.approx(expected) and rep.labels == [0, 1] and rep.miss_rate == 0.44
        assert report(nullable, pd.Series(as_float + [1.0])).kappa == pytest.approx(expected)
        assert report(list(as_bool), SEED_HUMAN, positive=True).sensitivity == pytest.approx(142 / 164)
        assert cohen_kappa(np.array(SEED_HUMAN, bool), SEED_JUDGE) == pytest.approx(expected)


def test_one_side_mixing_text_and_numbers_is_refused():
    with pytest.raises(LabelMismatchError, match=r"`human` mixes text labels \('1'\) with numbers or booleans \(0, 1\)"):
        report(["1", 0, 1, 0], [1, 0, 1, 0])


# ---- Rogan-Gladen outside [0, 1] ---------------------------------------------------------------------


def test_an_impossible_judge_rate_warns_and_never_gives_a_zero_width_interval():
    # issue 9: rogan_gladen(0.9, sensitivity=.6, specificity=.77, ...) returned Interval(1, 1, 1) silently.
    # A judge with Se 0.6 passes at most 60% of a run, so 90% contradicts the error rates even allowing for
    # their sampling error (delta interval [1.57, 2.05]): no interval, and the method says why.
    with pytest.warns(ImpossibleRateWarning, match=r"pass rate 0\.900 is impossible under its error rates.*between "
                      r"0\.230 \(no answer truly passes\) and 0\.600 \(every answer does\)"):
        iv = agreement.rogan_gladen(0.9, sensitivity=0.6, specificity=0.77, n=200, n_positive=150, n_negative=50)
    assert iv.estimate == 1.0 and math.isnan(iv.low) and math.isnan(iv.high)
    assert "from 1.811" in iv.method and "lies outside [0, 1]" in iv.method
    # Slightly impossible: the part of the honest interval inside [0, 1] is kept. Oracle: the delta
    # interval written out, SE**2 = [p(1-p)/n + pi**2 Se(1-Se)/n_pos + (1-pi)**2 Sp(1-Sp)/n_neg] / J**2 at pi = 1.
    p, se, sp, n, n_pos = 0.97, 0.95, 0.8, 300, 150
    raw = (p + sp - 1) / (se + sp - 1)
    half = 1.959963984540054 * math.sqrt((p * (1 - p) / n + se * (1 - se) / n_pos) / (se + sp - 1) ** 2)
    with pytest.warns(ImpossibleRateWarning) as record:
        iv = agreement.rogan_gladen(p, sensitivity=se, specificity=sp, n=n, n_positive=n_pos, n_negative=50)
    assert record[0].filename == __file__  # the warning points at the caller's line
    assert (iv.estimate, iv.high) == (1.0, 1.0)
    assert iv.low == pytest.approx(raw - half, abs=1e-12) and iv.width > 0.02
    with pytest.warns(ImpossibleRateWarning):
        boot = agreement.rogan_gladen(p, sensitivity=se, specificity=sp, n=n, n_positive=n_pos, n_negative=50,
                                      method="bootstrap", n_resamples=4000)
    assert boot.high == 1.0 and 0.9 < boot.low < 1.0


def test_rogan_gladen_coverage_near_the_bound_by_simulation():
    # True pass rate 0.96: many runs' corrected estimates fall above 1. Clipping both bounds used to give
    # [1, 1], which never covers 0.96; keeping the interval's part inside [0, 1] covers about 95%.
    rng = np.random.default_rng(77)
    true_pi, se, sp, n, n_pos, n_neg = 0.96, 0.9, 0.8, 300, 150, 50
    p_judge = true_pi * se + (1 - true_pi) * (1 - sp)
    covered = clipped = zero_width = 0
    reps = 400
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ImpossibleRateWarning)
        for _ in range(reps):
            se_hat, sp_hat = rng.binomial(n_pos, se) / n_pos, rng.binomial(n_neg, sp) / n_neg
            iv = agreement.rogan_gladen(rng.binomial(n, p_judge) / n, sensitivity=se_hat, specificity=sp_hat, n=n,
                                        n_positive=n_pos, n_negative=n_neg)
            clipped += "clipped" in iv.method
            zero_width += iv.width == 0
            covered += iv.low <= true_pi <= iv.high
    assert clipped / reps > 0.1 and zero_width == 0
    assert 0.90 <= covered / reps <= 0.99


def test_corrected_pass_rate_resamples_the_validation_items_jointly():
    """Oracle: resample the 200 items by index (a plain loop), re-estimate Se, Sp and the judge's rate on
    each resample and apply Rogan-Gladen: the percentile interval must match within Monte Carlo error."""
    h, j = np.array(SEED_HUMAN), np.array(SEED_JUDGE)
    rng = np.random.default_rng(5)
    values = []
    for _ in range(3000):
        idx = rng.integers(0, len(h), len(h))
        hh, jj = h[idx], j[idx]
        se, sp, p = jj[hh == 1].mean(), 1 - jj[hh == 0].mean(), jj.mean()
        values.append((p + sp - 1) / (se + sp - 1))
    low, high = np.quantile(values, [0.025, 0.975])
    iv = report(h, j, positive=1).corrected_pass_rate
    assert iv.low == pytest.approx(low, abs=0.011) and iv.high == pytest.approx(high, abs=0.011)
    # Treating the three rates as independent binomials (rogan_gladen with the counts) ignores that they
    # come from the same items and more than doubles the width here.
    independent = agreement.rogan_gladen(0.82, sensitivity=142 / 150, specificity=28 / 50, n=200, n_positive=150,
                                         n_negative=50)
    assert iv.width < 0.6 * independent.width


def test_corrected_pass_rate_covers_the_true_rate_by_simulation():
    rng = np.random.default_rng(31)
    true_pi, se, sp, n, reps = 0.75, 0.9, 0.7, 200, 300
    covered = 0
    for rep_seed in range(reps):  # seeded bootstraps: the test gives the same count on every run
        h = (rng.random(n) < true_pi).astype(int)
        j = np.where(h == 1, rng.random(n) < se, rng.random(n) < 1 - sp).astype(int)
        iv = report(h, j, positive=1, n_resamples=1000, seed=rep_seed, warn=False).corrected_pass_rate
        covered += iv.low <= true_pi <= iv.high
    assert 0.91 <= covered / reps <= 0.99


# ---- clusters: units= --------------------------------------------------------------------------------


def _clustered_labels(rng, n_clusters=40, sizes=(5, 16), shared=True):
    """Human and judge 0/1 labels in clusters that share their pass rate and the judge's error rate."""
    human, judge, units = [], [], []
    for c in range(n_clusters):
        m = int(rng.integers(*sizes))
        prev = rng.beta(3, 1.2) if shared else 0.72
        false_pass = rng.beta(1.5, 2.5) if shared else 0.35
        h = (rng.random(m) < prev).astype(int)
        j = np.where(h == 1, rng.random(m) < 0.92, rng.random(m) < false_pass).astype(int)
        human += h.tolist()
        judge += j.tolist()
        units += [f"conv{c}"] * m
    return np.array(human), np.array(judge), np.array(units)


def _two_rater_kappa(h, j):
    observed = (h == j).mean()
    ph, pj = h.mean(), j.mean()
    expected = ph * pj + (1 - ph) * (1 - pj)
    return (observed - expected) / (1 - expected)


def test_cluster_bootstrap_matches_a_brute_force_loop_over_clusters():
    rng = np.random.default_rng(42)
    h, j, units = _clustered_labels(rng)
    rep = report(h, j, positive=1, units=pd.Series(units, name="conversation"), n_resamples=10_000, seed=3)
    assert rep.n_clusters == 40 and rep.units_name == "conversation"
    assert rep.kappa == pytest.approx(cohen_kappa_score(h, j), abs=1e-12)
    # brute force: draw 40 cluster ids with replacement, stack their items, compute the statistics
    groups = [np.flatnonzero(units == u) for u in np.unique(units)]
    kappas, agreements, items_kappa = [], [], []
    oracle_rng = np.random.default_rng(123)
    for _ in range(3000):
        idx = np.concatenate([groups[g] for g in oracle_rng.integers(0, len(groups), len(groups))])
        kappas.append(_two_rater_kappa(h[idx], j[idx]))
        agreements.append((h[idx] == j[idx]).mean())
        flat = oracle_rng.integers(0, len(h), len(h))  # items as if independent
        items_kappa.append(_two_rater_kappa(h[flat], j[flat]))
    # kappa: the expanded percentile, the level whose normal quantile is sqrt(G / (G - 1)) * t(G - 1)
    expanded = 2 * stats.norm.cdf(np.sqrt(40 / 39) * stats.t.ppf(0.975, 39)) - 1
    low, high = np.quantile(kappas, [(1 - expanded) / 2, (1 + expanded) / 2])
    iv = rep.kappa_interval
    assert iv.method == "cluster bootstrap expanded-percentile over 40 clusters"
    assert (iv.n_resamples, iv.seed) == (10_000, 3)
    assert iv.low == pytest.approx(low, abs=0.015) and iv.high == pytest.approx(high, abs=0.015)
    assert rep.design_effects["kappa"] == pytest.approx(np.var(kappas) / np.var(items_kappa), rel=0.12)
    # Kish's design effect of a proportion, written out (ratio estimator over clusters):
    # sum_g (a_g - p m_g)**2 / (n p (1 - p)), a_g = agreeing items in cluster g, m_g its size
    a = np.array([(h[g] == j[g]).sum() for g in groups])
    m = np.array([len(g) for g in groups])
    p = a.sum() / m.sum()
    kish = ((a - p * m) ** 2).sum() / (m.sum() * p * (1 - p))
    assert rep.design_effects["agreement"] == pytest.approx(kish, rel=0.1)
    assert rep.design_effects["agreement"] > 1.3  # clusters that share their rates: wider than independent items
    assert rep.intervals["agreement"].width > report(h, j, positive=1).intervals["agreement"].width
    # agreement: Wilson at the effective sample size n / deff (Kish's deff written out above, with the
    # G / (G - 1) small-sample factor), t(G - 1) for z: statsmodels' Wilson at the level where z = t.
    n_eff = m.sum() / (kish * 40 / 39)
    t = stats.t.ppf(0.975, 39)
    low, high = proportion_confint(p * n_eff, n_eff, alpha=2 * stats.norm.sf(t), method="wilson")
    iv = rep.intervals["agreement"]
    assert (iv.low, iv.high) == pytest.approx((low, high), abs=1e-9)
    assert iv.method == "cluster-robust Wilson (effective n, t with 39 df) over 40 clusters"
    # close to the brute-force cluster bootstrap's percentile interval (same spread, skew-aware)
    assert iv.low == pytest.approx(np.quantile(agreements, 0.025), abs=0.02)


def test_each_item_its_own_cluster_has_design_effect_one():
    rng = np.random.default_rng(8)
    h, j, _ = _clustered_labels(rng, shared=False)
    rep = report(h, j, positive=1, units=np.arange(len(h)), n_resamples=20_000)
    for name, deff in rep.design_effects.items():
        assert deff == pytest.approx(1.0, abs=0.08), name
    plain = report(h, j, positive=1, method="bootstrap", n_resamples=20_000)
    assert rep.kappa_low == pytest.approx(plain.kappa_low, abs=0.015)
    assert rep.kappa_high == pytest.approx(plain.kappa_high, abs=0.015)


def test_clustered_intervals_cover_by_simulation_where_independent_ones_do_not():
    # Population: clusters with their own pass rate and judge error; the judge's true agreement is the
    # population mean over clusters (estimated from a very large draw).
    # Clusters of 15-24 items give a design effect large enough that the gap between the two coverages
    # (about 0.1 over seeds) is not within simulation noise, as it was with clusters of 8-13.
    def draw(rng):
        return _clustered_labels(rng, n_clusters=30, sizes=(15, 25))

    big_h, big_j, _ = _clustered_labels(np.random.default_rng(0), n_clusters=40_000, sizes=(15, 25))
    truth = (big_h == big_j).mean()
    rng = np.random.default_rng(99)
    clustered = independent = 0
    reps = 200
    for rep_seed in range(reps):  # seeded bootstraps: the test gives the same count on every run
        h, j, units = draw(rng)
        rep = report(h, j, positive=1, units=units, n_resamples=1000, seed=rep_seed, warn=False)
        iv = rep.intervals["agreement"]
        clustered += iv.low <= truth <= iv.high
        wilson = proportion_interval(int((h == j).sum()), len(h))
        independent += wilson.low <= truth <= wilson.high
    assert clustered / reps >= 0.88
    assert independent / reps <= clustered / reps - 0.05


def test_fewer_than_min_clusters_gives_no_interval_and_warns():
    rng = np.random.default_rng(4)
    h, j, units = _clustered_labels(rng, n_clusters=MIN_CLUSTERS - 1)
    with pytest.warns(FragileIntervalWarning, match=rf"at least {MIN_CLUSTERS} clusters.*kappa \(9\)") as record:
        rep = report(h, j, positive=1, units=units)
    assert record[0].filename == __file__
    assert rep.kappa == pytest.approx(cohen_kappa_score(h, j))
    for name, iv in rep.intervals.items():
        assert math.isnan(iv.low) and math.isnan(iv.high), name
        assert "no interval: rests on" in iv.method
    assert rep.intervals["kappa"].method == f"no interval: rests on 9 clusters (< {MIN_CLUSTERS})"
    assert all(math.isnan(d) for d in rep.design_effects.values())
    text = repr(rep)
    assert "no interval" in text and "WARNING" in text


@pytest.mark.filterwarnings("ignore::raglab.agreement.LowAgreementWarning")
def test_a_statistic_resting_on_few_clusters_alone_gets_no_interval():
    rng = np.random.default_rng(6)
    h, j, units = _clustered_labels(rng, n_clusters=30, shared=False)
    negatives_in = sorted(set(units[h == 0]))
    keep_negatives = set(negatives_in[:5])  # people marked items negative in only 5 conversations
    h = np.where((h == 0) & ~np.isin(units, list(keep_negatives)), 1, h)
    with pytest.warns(FragileIntervalWarning, match=r"specificity \(5\), miss_rate \(5\)"):
        rep = report(h, j, positive=1, units=units)
    assert math.isnan(rep.intervals["miss_rate"].low) and math.isnan(rep.design_effects["miss_rate"])
    assert np.isfinite(rep.kappa_low) and np.isfinite(rep.intervals["sensitivity"].low)


def test_units_refuses_methods_that_assume_independence_and_bad_labels():
    with pytest.raises(ValueError, match="units= resamples whole clusters.*method='analytic'"):
        report(SEED_HUMAN, SEED_JUDGE, units=[i % 20 for i in range(200)], method="analytic")
    with pytest.raises(ValueError, match="one cluster label per question: 3 labels for 200 questions"):
        report(SEED_HUMAN, SEED_JUDGE, units=["a", "b", "c"])
    with pytest.raises(ValueError, match=r"missing cluster labels at positions \[1\]"):
        report(SEED_HUMAN, SEED_JUDGE, units=["a", None] + ["b"] * 198)


def test_clustered_report_shows_the_design_effect():
    units = [f"c{i % 25}" for i in range(200)]
    rep = report(pd.Series(SEED_HUMAN, name="human"), SEED_JUDGE, positive=1, units=pd.Series(units, name="doc"))
    text = repr(rep)
    assert ("clusters             25 ('doc'): intervals resample whole clusters (rates: cluster-robust Wilson over "
            "them); design effect") in text
    assert f"kappa {rep.design_effects['kappa']:.2f}" in text
    frame = rep.to_frame().set_index("statistic")
    assert frame["design_effect"].notna().all()
    assert frame.loc["kappa", "design_effect"] == rep.design_effects["kappa"]
    rates = {"agreement", "human_positive_rate", "judge_positive_rate", "sensitivity", "specificity", "miss_rate"}
    for name, how in frame["method"].items():
        expected = ("cluster-robust Wilson (effective n, t with 24 df) over 25 clusters" if name in rates
                    else "cluster bootstrap expanded-percentile over 25 clusters")
        assert how == expected, name
    assert "design effect" in rep._repr_html_()


def test_correct_from_a_clustered_report_carries_the_clusters():
    rng = np.random.default_rng(12)
    h, j, units = _clustered_labels(rng, n_clusters=60, shared=False)
    solo = report(h, j, positive=1, units=np.arange(len(h)), n_resamples=20_000, warn=False)
    plain = report(h, j, positive=1, warn=False)
    a, b = solo.correct(0.7, 400), plain.correct(0.7, 400)
    assert "cluster bootstrap over" in a.method and a.estimate == pytest.approx(b.estimate)
    assert a.low == pytest.approx(b.low, abs=0.01) and a.high == pytest.approx(b.high, abs=0.01)
    boot = solo.correct(0.7, 400, method="bootstrap", n_resamples=20_000)
    assert boot.low == pytest.approx(b.low, abs=0.02) and boot.high == pytest.approx(b.high, abs=0.02)


# ---- analytic kappa at small n ---------------------------------------------------------------------------


def test_small_counts_switch_to_the_adjusted_interval_and_explicit_analytic_warns():
    human = [1] * 17 + [0] * 3
    judge = [1] * 16 + [0] + [1, 0, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        auto = cohen_kappa_interval(human, judge)
        rep = report(human, judge, positive=1)
    assert "adjusted" in auto.method
    assert tuple(rep.kappa_interval) == tuple(auto)
    with pytest.warns(FragileIntervalWarning, match=r"analytic kappa interval under-covers.*rarest has 3 < 10") as record:
        analytic = cohen_kappa_interval(human, judge, method="analytic")
    assert record[0].filename == __file__
    # the adjusted interval is statsmodels' on the table plus one pseudo-item per cell; the plain one
    # runs into 1 on the high side and stays higher on the low side
    adjusted = sm_cohens_kappa(np.array([[2.0, 1.0], [1.0, 16.0]]) + 1.0)
    assert (auto.low, auto.high) == pytest.approx((adjusted.kappa_low, adjusted.kappa_upp), abs=1e-12)
    assert analytic.high == 1.0 and analytic.low > auto.low
    with pytest.warns(FragileIntervalWarning, match="bootstrap kappa interval under-covers"):
        report(human, judge, positive=1, method="bootstrap", n_resamples=500)
    assert "asymptotic-normal" in cohen_kappa_interval(SEED_HUMAN, SEED_JUDGE).method  # counts of 36 and more


def test_small_n_kappa_coverage_by_simulation():
    """n = 20 answers, 90% pass: the analytic interval covers about 62%, the default about 92%."""
    prev, se, sp, n = 0.9, 0.95, 0.7, 20
    cells = np.array([prev * se, prev * (1 - se), (1 - prev) * (1 - sp), (1 - prev) * sp])
    po, ph, pj = cells[0] + cells[3], cells[0] + cells[1], cells[0] + cells[2]
    pe = ph * pj + (1 - ph) * (1 - pj)
    true_kappa = (po - pe) / (1 - pe)
    rng = np.random.default_rng(2)
    hits = {"auto": 0, "analytic": 0}
    count = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FragileIntervalWarning)
        for table in rng.multinomial(n, cells, size=400):
            h, j = np.repeat([1, 1, 0, 0], table), np.repeat([1, 0, 1, 0], table)
            if len(set(h)) == len(set(j)) == 1 and h[0] == j[0]:
                continue  # kappa undefined
            count += 1
            for method in hits:
                iv = cohen_kappa_interval(h, j, method=method)
                hits[method] += iv.low <= true_kappa <= iv.high
    assert hits["auto"] / count >= 0.88
    assert hits["analytic"] / count <= 0.75


# --------------------------------------------------------------------------------------------------
# A weak judge's warning is shown once: as a Python warning (warn=True) or in the display (warn=False)
# --------------------------------------------------------------------------------------------------

WEAK_HUMAN = [1] * 60 + [0] * 40
WEAK_JUDGE = [1] * 45 + [0] * 15 + [1] * 25 + [0] * 15


def test_warned_report_counts_its_warnings_instead_of_repeating_them():
    frame = pd.DataFrame({"h": WEAK_HUMAN, "j": WEAK_JUDGE})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rep = frame.rag.agreement("h", "j", positive=1)
    low = [w for w in caught if issubclass(w.category, LowAgreementWarning)]
    assert len(low) == 1 and str(low[0].message) == rep.warnings[0]
    text, page = repr(rep), rep._repr_html_()
    assert "this judge should not be trusted" not in text and "this judge should not be trusted" not in page
    assert "1 issued as Python warning when this report was made; their text is in report.warnings" in text
    assert "1 issued as Python warning" in page
    assert "should not be trusted" in text  # the kappa line still says it, so a later display is not silent
    assert rep.to_dict()["warnings"] == rep.warnings


def test_unwarned_report_prints_its_warnings_in_full():
    frame = pd.DataFrame({"h": WEAK_HUMAN, "j": WEAK_JUDGE})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rep = frame.rag.agreement("h", "j", positive=1, warn=False)
    assert f"WARNING: {rep.warnings[0]}" in repr(rep)
    assert "this judge should not be trusted" in rep._repr_html_()
    assert "issued as Python warning" not in repr(rep)


def test_low_agreement_warning_can_stop_a_script():
    with warnings.catch_warnings():
        warnings.simplefilter("error", LowAgreementWarning)
        with pytest.raises(LowAgreementWarning, match="should not be trusted"):
            report(WEAK_HUMAN, WEAK_JUDGE, positive=1)


NOTEBOOK_CELL = """
import pandas as pd
import raglab
rows = pd.DataFrame({"h": [1] * 60 + [0] * 40, "j": [1] * 45 + [0] * 15 + [1] * 25 + [0] * 15})
rows.rag.agreement("h", "j", positive=1)
"""


@pytest.mark.slow
@pytest.mark.parametrize("warn", [True, False])
def test_a_notebook_shows_the_low_agreement_warning_once(warn):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    source = NOTEBOOK_CELL if warn else NOTEBOOK_CELL.replace("positive=1)", "positive=1, warn=False)")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3").execute()
    outputs = notebook.cells[0].outputs
    assert not [o for o in outputs if o.output_type == "error"]
    warned = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    result = next(o for o in outputs if o.output_type == "execute_result")["data"]
    assert ("LowAgreementWarning" in warned) is warn
    for shown in (warned + result["text/plain"], warned + result["text/html"]):
        assert shown.count("this judge should not be trusted") == 1
