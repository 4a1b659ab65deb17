"""Declining: the lexical refusal detector, the two directed rates, and why the pooled flag is not a metric."""

import numpy as np
import pytest

from raglab.abstention import DEFAULT_REFUSAL_PATTERNS, detect_declined

REFUSALS = [
    "I don't know.",
    "I do not know the answer to that.",
    "Sorry, I cannot answer this question.",
    "The context does not mention when the bridge opened.",
    "There is not enough information in the passages to say.",
    "The opening date is not mentioned in the documents.",
    "I'm unable to determine that from the sources.",
    "It cannot be determined from the provided context.",
]
ANSWERS = [
    "The bridge opened in 1932.",
    "Paris is the capital of France [1].",
    "It knows no bounds: the river floods every spring.",
    "Information retrieval systems rank documents.",
    "I don't know why people doubt it: the answer is 42.",
]


def test_refusals_and_answers():
    assert detect_declined(REFUSALS).all()
    assert not detect_declined(ANSWERS).any()


def test_empty_and_missing():
    assert detect_declined(["", "   ", None]).tolist() == [True, True, True]
    assert detect_declined(["", None], empty_is_declined=False).tolist() == [False, False]


def test_custom_patterns_replace_the_defaults():
    out = detect_declined(["NO_ANSWER", "I don't know"], patterns=[r"^NO_ANSWER$"])
    assert out.tolist() == [True, False]


def test_bad_input():
    with pytest.raises(TypeError, match=r"answers must be str or None; position 1 holds int 3"):
        detect_declined(["a", 3])
    with pytest.raises(ValueError, match="`patterns` is empty"):
        detect_declined(["a"], patterns=[])


def test_returns_numpy_bool():
    out = detect_declined(np.array(["I don't know", "yes"], dtype=object))
    assert out.dtype == bool and out.tolist() == [True, False]


# --------------------------------------------------------------------------------------------------
# Scoring abstention: correct declines on unanswerables, false declines on answerables
# --------------------------------------------------------------------------------------------------

import math  # noqa: E402

import pandas as pd  # noqa: E402
from statsmodels.stats.proportion import proportion_confint  # noqa: E402

import raglab  # noqa: E402
from raglab.abstention import AbstentionResult, score_abstention  # noqa: E402


def test_rates_and_wilson_intervals_match_statsmodels():
    # 12 unanswerable questions, 9 declined; 30 answerable, 4 declined
    unanswerable = [True] * 12 + [False] * 30
    declined = [True] * 9 + [False] * 3 + [True] * 4 + [False] * 26
    res = score_abstention(declined, unanswerable)
    assert (res.correct_decline.estimate, res.correct_decline.n) == (9 / 12, 12)
    assert (res.false_decline.estimate, res.false_decline.n) == (4 / 30, 30)
    for interval, (x, n) in ((res.correct_decline, (9, 12)), (res.false_decline, (4, 30))):
        low, high = proportion_confint(x, n, alpha=0.05, method="wilson")  # statsmodels oracle
        assert interval.method == "wilson" and interval.level == 0.95
        assert (interval.low, interval.high) == pytest.approx((low, high), abs=1e-12)
    exact = score_abstention(declined, unanswerable, method="exact", ci=0.9).correct_decline
    assert (exact.low, exact.high) == pytest.approx(proportion_confint(9, 12, alpha=0.1, method="beta"), abs=1e-12)


def test_result_table_and_repr():
    res = score_abstention([True, False, False], [True, True, False], detector="column 'declined'")
    table = res.to_frame()
    assert table["metric"].tolist() == ["correct_decline", "false_decline"]
    assert table["n"].tolist() == [2, 1] and table["declined"].tolist() == [1, 0]
    assert table["better"].tolist() == ["higher", "lower"]
    assert table.attrs["raglab"]["abstention"]["detector"] == "column 'declined'"
    text = repr(res)
    assert "correct_decline  0.500" in text and "n=2 unanswerable" in text and "detector: column 'declined'" in text
    assert "<table" in res._repr_html_()


def test_no_questions_of_a_kind_gives_nan_with_n_zero():
    res = score_abstention([True, False], [False, False])
    assert math.isnan(res.correct_decline.estimate) and res.correct_decline.n == 0
    assert "n/a (no unanswerable questions)" in repr(res)


def test_bad_flags_are_refused():
    with pytest.raises(ValueError, match=r"`declined` must be True/False.*position 1 holds NoneType None"):
        score_abstention([True, None], [True, False])
    with pytest.raises(ValueError, match="has 1 values but `unanswerable` has 2"):
        score_abstention([True], [True, False])


@pytest.fixture
def run():
    return pd.DataFrame(
        {
            "question_id": ["q1", "q2", "q3", "q4", "q5"],
            "gold": [["d1"], [], None, {"d9": 0}, ["d2"]],  # q2-q4 unanswerable (empty, missing, no grade > 0)
            "answer": ["Paris.", "I don't know.", "It opened in 1932.", "", "The context does not mention it."],
        }
    )


def test_accessor_detects_refusals_when_there_is_no_declined_column(run):
    res = run.rag.abstention()
    assert isinstance(res, AbstentionResult)
    # unanswerable q2 (declined), q3 (answered), q4 (empty answer = declined): 2 of 3
    assert (res.correct_decline.estimate, res.correct_decline.n) == (2 / 3, 3)
    # answerable q1 (answered), q5 (declined): 1 of 2
    assert (res.false_decline.estimate, res.false_decline.n) == (1 / 2, 2)
    assert res.detector.startswith(f"raglab.abstention.detect_declined (lexical, {len(DEFAULT_REFUSAL_PATTERNS)} default patterns, on column 'answer'")
    rows = res.rows
    assert rows["declined"].tolist() == detect_declined(run["answer"]).tolist()
    assert rows["unanswerable"].tolist() == [False, True, True, True, False]
    assert rows["correct_decline"].isna().tolist() == [True, False, False, False, True]
    assert rows["false_decline"].tolist()[0] == 0.0 and rows["false_decline"].tolist()[4] == 1.0
    assert "declined" not in run.columns  # the input is untouched
    assert rows.attrs["raglab"]["abstention"]["detector"] == res.detector


def test_accessor_uses_a_declined_column_and_custom_patterns(run):
    flagged = run.assign(declined=[False, True, True, False, False])
    res = flagged.rag.abstention()
    assert res.detector == "column 'declined'"
    assert res.correct_decline.estimate == 2 / 3 and res.false_decline.estimate == 0.0
    forced = flagged.rag.abstention(declined=None, patterns=[r"^I don't know\.$"], empty_is_declined=False)
    assert "1 custom patterns" in forced.detector
    assert forced.correct_decline.estimate == 1 / 3
    with pytest.raises(raglab.MissingColumnError, match="needs column 'refused'"):
        run.rag.abstention(declined="refused")
    with pytest.raises(raglab.RowTableError, match=r"column 'declined' must be True/False.*position 2 holds str 'yes'"):
        run.assign(declined=[True, False, "yes", False, True]).rag.abstention()


def test_accessor_unanswerable_rule_matches_retrieval(run):
    retrieved = run.assign(retrieved=[["d1"], ["d1"], ["d1"], ["d9"], ["d2"]])
    nan_rows = retrieved.rag.retrieval(k=1)["rr"].isna().tolist()
    assert retrieved.rag.abstention().rows["unanswerable"].tolist() == nan_rows


def test_accessor_with_span_gold(run):
    spans = run.drop(columns="gold").assign(
        gold_spans=[[{"doc_id": "a", "start": 0, "end": 5}], [], None, [{"doc_id": "a", "start": 0, "end": 5, "grade": 0}], [{"doc_id": "b", "start": 1, "end": 2}]]
    )
    res = spans.rag.abstention()
    assert res.rows["unanswerable"].tolist() == [False, True, True, True, False]


# --------------------------------------------------------------------------------------------------
# The output columns: two metrics with one direction each; the pooled flag is an attribute
# --------------------------------------------------------------------------------------------------


def test_rows_hold_two_directed_metrics_and_boolean_flags(run):
    rows = run.rag.abstention().rows
    assert rows["declined"].dtype == bool and rows["unanswerable"].dtype == bool
    assert rows["correct_decline"].dtype == float and rows["false_decline"].dtype == float
    # each metric is defined on its own questions only
    assert rows["correct_decline"].notna().tolist() == rows["unanswerable"].tolist()
    assert rows["false_decline"].notna().tolist() == (~rows["unanswerable"]).tolist()
    record = rows.attrs["raglab"]["abstention"]
    assert "higher is better" in record["metrics"]["correct_decline"]
    assert "lower is better" in record["metrics"]["false_decline"]
    assert "not a metric" in record["flags"]["declined"]
    from raglab._registry import metric_info

    assert metric_info("correct_decline").higher_is_better is True
    assert metric_info("false_decline").higher_is_better is False
    assert metric_info("declined").has_direction is False


def test_default_summary_of_the_rows_takes_the_two_rates_with_their_own_denominators(run):
    rows = run.rag.abstention().rows
    table = rows.rag.summary(method="wilson")
    assert table["metric"].tolist() == ["correct_decline", "false_decline"]  # never declined / unanswerable
    by_metric = table.set_index("metric")
    # unanswerable q2, q3, q4: 2 of 3 declined; answerable q1, q5: 1 of 2 declined (hand counts)
    assert (by_metric.loc["correct_decline", "mean"], by_metric.loc["correct_decline", "n"]) == (2 / 3, 3)
    assert (by_metric.loc["false_decline", "mean"], by_metric.loc["false_decline", "n"]) == (1 / 2, 2)
    assert by_metric["n_excluded"].tolist() == [2, 3]


def _declines(answerable_declined: int, unanswerable_declined: int) -> pd.DataFrame:
    """400 questions, 200 answerable (q000-q199) and 200 not; the first k of each kind declined."""
    ids = [f"q{i:03d}" for i in range(400)]
    declined = [i < answerable_declined for i in range(200)] + [i < unanswerable_declined for i in range(200)]
    return pd.DataFrame({"question_id": ids, "gold": [["d1"]] * 200 + [[]] * 200, "declined": declined})


def test_the_same_pooled_rise_is_a_regression_or_an_improvement_and_only_the_split_metrics_tell():
    base = _declines(20, 20)                # pooled decline rate 40 / 400 = 10%
    worse = _declines(100, 20)              # 30%: the new declines are on answerable questions
    better = _declines(20, 100)             # 30%: the new declines are on unanswerable questions
    assert base["declined"].mean() == 0.10 and worse["declined"].mean() == better["declined"].mean() == 0.30
    # the pooled flag cannot be gated: it has no direction (it used to pass as higher-is-better)
    with pytest.raises(ValueError, match=r"'declined' has no direction.*correct_decline.*false_decline"):
        base.rag.gate(worse, metrics=["declined"], margin=0.02, n_resamples=500)
    rows = {name: frame.rag.abstention().rows for name, frame in (("base", base), ("worse", worse), ("better", better))}
    regression = rows["base"].rag.gate(rows["worse"], metrics=["false_decline", "correct_decline"], margin=0.02, n_resamples=500)
    table = regression.table.set_index("metric")
    assert table.loc["false_decline", "diff"] == pytest.approx(0.4)  # 20/200 -> 100/200, over answerable questions
    assert table.loc["false_decline", "n"] == 200 and table.loc["correct_decline", "n"] == 200
    assert table.loc["false_decline", "decision"] == "block" and regression.decision == "block"
    improvement = rows["base"].rag.gate(rows["better"], metrics=["false_decline", "correct_decline"], margin=0.02, n_resamples=500)
    table = improvement.table.set_index("metric")
    assert table.loc["correct_decline", "diff"] == pytest.approx(0.4)  # 20/200 -> 100/200, over unanswerable questions
    assert table.loc["correct_decline", "decision"] == "pass" and improvement.decision != "block"


def test_unanswerable_is_one_rule_for_abstention_retrieval_and_a_gold_cell():
    from raglab._rowtable import is_unanswerable

    gold = [["d1"], [], None, {"d1": 0}, {"d1": 0, "d2": 2}, {}, float("nan"), ["d3", "d4"]]
    rows = pd.DataFrame({"question_id": [f"q{i}" for i in range(len(gold))], "gold": gold,
                         "retrieved": [["d1"]] * len(gold), "declined": [False] * len(gold)})
    expected = [is_unanswerable(g) for g in gold]
    assert expected == [False, True, True, True, False, True, True, False]
    assert rows.rag.abstention().rows["unanswerable"].tolist() == expected
    scored = rows.rag.retrieval(k=1)
    assert scored["recall@1"].isna().tolist() == expected
    assert scored.rag.meta["retrieval_counts"]["n_unanswerable"] == sum(expected)
