"""Statistics that need the categories' order refuse text labels without ``labels=`` (issue 19), and the
default kappa interval's coverage (issue 18) in small seeded simulations."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

import raglab  # noqa: F401  (registers df.rag)
from raglab import runs
from raglab.agreement import (
    FragileIntervalWarning,
    LabelMismatchError,
    cohen_kappa,
    cohen_kappa_interval,
    judge_vs_majority,
    krippendorff_alpha,
    majority_vote,
    report,
)

ORDER = ["low", "mid", "high"]
HUMAN = ["low", "low", "mid", "mid", "high", "high"]
JUDGE = ["low", "high", "mid", "mid", "high", "high"]


def _codes(values):
    return [ORDER.index(v) for v in values]


@pytest.mark.parametrize("weights", ["linear", "quadratic"])
def test_weighted_kappa_on_text_labels_needs_their_order(weights):
    with pytest.raises(LabelMismatchError, match=rf"cohen_kappa: weights='{weights}'.*`a` and `b` hold text labels "
                       r"\('high', 'low', 'mid'\).*alphabetical \('high' < 'low' < 'mid'\).*Pass labels=\[\.\.\.\]"):
        cohen_kappa(HUMAN, JUDGE, weights=weights)
    with pytest.raises(LabelMismatchError, match="cohen_kappa_interval: .*hold text labels"):
        cohen_kappa_interval(HUMAN, JUDGE, weights=weights)
    # with the order: scikit-learn on the integer codes 0 < 1 < 2
    expected = cohen_kappa_score(_codes(HUMAN), _codes(JUDGE), weights=weights)
    assert cohen_kappa(HUMAN, JUDGE, weights=weights, labels=ORDER) == pytest.approx(expected, abs=1e-12)
    assert cohen_kappa_interval(HUMAN, JUDGE, weights=weights, labels=ORDER).estimate == pytest.approx(expected)


def test_the_issue_example_quadratic_kappa_is_one_half_in_the_natural_order():
    natural = cohen_kappa(HUMAN, JUDGE, weights="quadratic", labels=ORDER)
    assert natural == pytest.approx(0.5, abs=1e-12)
    assert natural == pytest.approx(cohen_kappa_score(_codes(HUMAN), _codes(JUDGE), weights="quadratic"), abs=1e-12)
    # what the alphabetical order gave before: scikit-learn on the text labels sorts them
    assert cohen_kappa_score(HUMAN, JUDGE, weights="quadratic") == pytest.approx(8 / 9, abs=1e-12)
    assert cohen_kappa(HUMAN, JUDGE, weights="quadratic", labels=sorted(ORDER)) == pytest.approx(8 / 9, abs=1e-12)


def test_unweighted_kappa_and_numbers_need_no_order():
    assert cohen_kappa(HUMAN, JUDGE) == pytest.approx(cohen_kappa_score(HUMAN, JUDGE), abs=1e-12)
    assert cohen_kappa(_codes(HUMAN), _codes(JUDGE), weights="quadratic") == pytest.approx(0.5, abs=1e-12)
    assert cohen_kappa([True, False, True], [True, True, True], weights="linear") == pytest.approx(
        cohen_kappa_score([1, 0, 1], [1, 1, 1], weights="linear"), abs=1e-12)
    # distance="value" uses the values themselves: text spelling numbers is ordered by them
    assert cohen_kappa(["1", "2", "10"], ["1", "10", "10"], weights="linear", distance="value") == pytest.approx(
        cohen_kappa([1, 2, 10], [1, 10, 10], weights="linear", distance="value"), abs=1e-12)


def test_text_spelling_numbers_names_the_conversion():
    with pytest.raises(LabelMismatchError, match=r"'1' < '10' < '2'.*astype\(int\)"):
        cohen_kappa(["1", "2", "10"], ["1", "10", "2"], weights="linear")


def test_report_and_the_row_table_name_the_columns_and_pass_labels_through():
    df = pd.DataFrame({"rating": HUMAN, "verdict": JUDGE})
    with pytest.raises(LabelMismatchError, match=r"^rag.agreement: weights='quadratic'.*'rating' and 'verdict' hold "
                       r"text labels.*Pass labels="):
        df.rag.agreement("rating", "verdict", weights="quadratic", warn=False)
    with pytest.raises(LabelMismatchError, match=r"^report: weights='linear'.*`human` and `judge` hold text labels"):
        report(HUMAN, JUDGE, weights="linear", warn=False)
    expected = cohen_kappa_score(_codes(HUMAN), _codes(JUDGE), weights="quadratic")
    for rep in (df.rag.agreement("rating", "verdict", weights="quadratic", labels=ORDER, warn=False),
                runs.agreement(df, "rating", "verdict", weights="quadratic", labels=ORDER, warn=False),
                report(df["rating"], df["verdict"], weights="quadratic", labels=ORDER, warn=False)):
        assert rep.kappa == pytest.approx(expected, abs=1e-12)
        assert rep.labels == ORDER and list(rep.confusion.index) == ORDER
    # unweighted: no order needed, same kappa in any order
    assert report(HUMAN, JUDGE, warn=False).kappa == pytest.approx(cohen_kappa_score(HUMAN, JUDGE), abs=1e-12)


def test_ordinal_alpha_and_tie_rules_on_text_need_the_order():
    ratings = [["low", "mid"], ["mid", "mid"], ["high", "low"], ["high", "high"]]
    with pytest.raises(LabelMismatchError, match=r"krippendorff_alpha: level='ordinal'.*`ratings` hold text labels"):
        krippendorff_alpha(ratings, level="ordinal")
    coded = [[ORDER.index(v) for v in row] for row in ratings]
    assert krippendorff_alpha(ratings, level="ordinal", labels=ORDER) == pytest.approx(
        krippendorff_alpha(coded, level="ordinal"), abs=1e-12)
    assert krippendorff_alpha(ratings, level="nominal") == pytest.approx(krippendorff_alpha(coded, level="nominal"))
    # ties="low" on text: "supported" < "unsupported" alphabetically would count a split vote as a pass
    votes = [["supported", "unsupported"], ["supported", "supported"]]
    with pytest.raises(LabelMismatchError, match=r"majority_vote: ties='low' picks the lowest"):
        majority_vote(votes, ties="low")
    assert majority_vote(votes, ties="low", labels=["unsupported", "supported"]).tolist() == ["unsupported", "supported"]
    assert majority_vote(votes).tolist() == [None, "supported"]  # ties="drop" needs no order
    with pytest.raises(LabelMismatchError, match=r"judge_vs_majority: ties='high'"):
        judge_vs_majority(votes, ["supported", "supported"], ties="high", warn=False)
    df = pd.DataFrame({"r1": ["supported", "supported"], "r2": ["unsupported", "supported"],
                       "judge": ["supported", "supported"]})
    with pytest.raises(LabelMismatchError, match=r"rag.agreement: ties='low'.*the rater columns \['r1', 'r2'\]"):
        df.rag.agreement(["r1", "r2"], "judge", ties="low", warn=False)
    rep = df.rag.agreement(["r1", "r2"], "judge", ties="low", labels=["unsupported", "supported"],
                           positive="supported", warn=False)
    assert rep.confusion.loc["unsupported", "supported"] == 1  # the split vote counted as a fail


# ---- the default kappa interval: seeded simulations ------------------------------------------------------


def _coverage(n, kappa, base, reps, seed, method):
    q = base * (1 - base)
    cells = [base**2 + kappa * q, q * (1 - kappa), q * (1 - kappa), (1 - base) ** 2 + kappa * q]
    rng = np.random.default_rng(seed)
    hits = count = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FragileIntervalWarning)
        for table in rng.multinomial(n, cells, size=reps):
            h, j = np.repeat([1, 1, 0, 0], table), np.repeat([1, 0, 1, 0], table)
            if len(set(h) | set(j)) == 1:
                continue  # kappa undefined
            iv = cohen_kappa_interval(h, j, method=method)
            count += 1
            hits += iv.low <= kappa <= iv.high
    return hits / count


def test_default_kappa_interval_covers_near_perfect_agreement():
    """n = 30, kappa 0.9, base rate 0.5: few disagreements; the plain interval covers about 78%."""
    assert _coverage(30, 0.9, 0.5, 400, 1, "auto") >= 0.93
    assert _coverage(30, 0.9, 0.5, 400, 1, "analytic") <= 0.85


def test_default_kappa_interval_covers_at_moderate_n():
    """n = 60, kappa 0.9, base rate 0.7: 97% (default) against 92% (plain) in the benchmark."""
    assert _coverage(60, 0.9, 0.7, 400, 2, "auto") >= 0.94


def test_default_interval_stays_inside_minus_one_one_and_contains_the_estimate():
    rng = np.random.default_rng(5)
    for _ in range(50):
        n = int(rng.integers(5, 40))
        h = rng.integers(0, 3, n)
        j = np.where(rng.random(n) < 0.7, h, rng.integers(0, 3, n))
        for weights in (None, "linear", "quadratic"):
            iv = cohen_kappa_interval(h, j, weights=weights)
            if np.isnan(iv.estimate):
                continue
            assert -1.0 <= iv.low <= iv.estimate <= iv.high <= 1.0


def test_ordered_categoricals_carry_their_own_order_for_weighted_kappa():
    # An ordered pandas Categorical says low < mid < high: no labels= needed (scikit-learn on the codes agrees);
    # the same text as plain strings or as unordered categories is still refused.
    levels = pd.CategoricalDtype(["low", "mid", "high"], ordered=True)
    human = pd.Series(["low", "low", "mid", "mid", "high", "high"], dtype=levels)
    judge = pd.Series(["low", "high", "mid", "mid", "high", "high"], dtype=levels)
    expected = cohen_kappa_score(human.cat.codes, judge.cat.codes, weights="quadratic")  # 0.500
    assert cohen_kappa(human, judge, weights="quadratic") == pytest.approx(expected, abs=1e-12)
    frame = pd.DataFrame({"question_id": list("abcdef"), "human": human, "judge": judge})
    assert frame.rag.agreement("human", "judge", weights="quadratic").kappa == pytest.approx(expected, abs=1e-12)
    unordered = pd.CategoricalDtype(["low", "mid", "high"], ordered=False)
    for a, b in ((human.astype(str), judge.astype(str)), (human.astype(unordered), judge.astype(unordered))):
        with pytest.raises(LabelMismatchError):
            cohen_kappa(a, b, weights="quadratic")
