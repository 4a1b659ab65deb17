"""Cohen's kappa and the judge-validation report, against scikit-learn, statsmodels and seed 000."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import balanced_accuracy_score, cohen_kappa_score, confusion_matrix, recall_score
from statsmodels.stats.inter_rater import cohens_kappa as sm_cohens_kappa
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint

import raglab  # noqa: F401  (registers df.rag)
from raglab import agreement
from raglab.agreement import AgreementReport, LowAgreementWarning, cohen_kappa, cohen_kappa_interval, report
from raglab.stats import Interval, proportion_interval

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
    iv = cohen_kappa_interval(a, b, weights=weights, ci=0.95)
    assert iv.estimate == pytest.approx(sm.kappa, abs=1e-12)
    # statsmodels' kappa_low / kappa_upp are kappa -+ z * std_kappa (unclipped; no clipping needed here)
    assert iv.low == pytest.approx(sm.kappa_low, abs=1e-10)
    assert iv.high == pytest.approx(sm.kappa_upp, abs=1e-10)
    assert (iv.high - iv.estimate) / 1.959963984540054 == pytest.approx(sm.std_kappa, rel=1e-9)


def test_seed_kappa_interval_against_statsmodels():
    sm = sm_cohens_kappa(np.array([[142, 8], [22, 28]]))
    iv = report(SEED_HUMAN, SEED_JUDGE, positive=1).kappa_interval
    assert (iv.low, iv.high) == pytest.approx((sm.kappa_low, sm.kappa_upp), abs=1e-12)
    assert isinstance(iv, Interval) and iv.level == 0.95 and iv.n == 200 and "asymptotic" in iv.method


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
    iv = cohen_kappa_interval([0, 1, 1, 0], [0, 1, 1, 0])
    assert tuple(iv) == (1.0, 1.0, 1.0)


# ---- properties ------------------------------------------------------------------------------------

labels_pairs = st.integers(2, 60).flatmap(
    lambda n: st.tuples(st.lists(st.integers(0, 3), min_size=n, max_size=n),
                        st.lists(st.integers(0, 3), min_size=n, max_size=n))
)


@settings(max_examples=60, deadline=None)
@given(labels_pairs, st.sampled_from([None, "linear", "quadratic"]))
def test_kappa_symmetric_bounded_and_order_free(pair, weights):
    a, b = pair
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
    assert list(frame.columns) == ["statistic", "estimate", "low", "high", "method", "level", "n", "n_resamples", "seed"]
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
    assert rep.warnings and "WARNING" in repr(rep)


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
    assert "delta" in rep.corrected_pass_rate.method and "clipped" in rep.corrected_pass_rate.method


def test_rogan_gladen_formula_and_clipping():
    # pi = (p + Sp - 1) / (Se + Sp - 1): Rogan & Gladen (1978)
    iv = agreement.rogan_gladen(0.7, sensitivity=0.9, specificity=0.8)
    assert iv.estimate == pytest.approx((0.7 + 0.8 - 1) / (0.9 + 0.8 - 1))
    assert agreement.rogan_gladen(0.95, sensitivity=0.9, specificity=0.8).estimate == 1.0
    assert agreement.rogan_gladen(0.1, sensitivity=0.9, specificity=0.8).estimate == 0.0
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
def test_one_human_label_reports_without_crashing(human):
    frame = pd.DataFrame({"h": human, "j": [1, 0, 1, 1]})
    with pytest.warns(LowAgreementWarning, match="people gave every item the"):
        report = frame.rag.agreement("h", "j", positive=1)
    text = repr(report)
    assert "n/a" in text and "WARNING: people gave every item" in text
    assert "<table>" in report._repr_html_()
