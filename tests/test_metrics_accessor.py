"""df.rag.retrieval and df.rag.depth_gap: a thin validated layer over raglab.metrics."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import raglab
from raglab import metrics
from raglab._meta import get_meta, update_meta


@pytest.fixture
def rows() -> pd.DataFrame:
    frame = pd.DataFrame(
        {
            "question_id": ["q1", "q2", "q3", "q4", "q5"],
            "qtype": ["fact", "fact", "howto", "howto", "fact"],
            "retrieved": [["d7", "d2", "d9", "d4", "d1"], ["d1", "d3"], [], ["d5"], ["d8", "d6", "d2"]],
            "candidates": [["d7", "d2", "d9", "d4", "d1", "d5"], ["d1", "d3", "d2"], ["d4"], ["d5", "d6"], ["d8", "d6", "d2", "d3"]],
            "gold": [{"d2": 3, "d4": 1, "d5": 2}, ["d2"], ["d4"], [], {"d3": 2}],
        }
    )
    update_meta(frame, "evalset", {"name": "demo", "version": "1", "hash": "abc"})
    return frame


def test_retrieval_equals_the_pure_function_and_keeps_the_rows(rows):
    before = rows.copy()
    scored = rows.rag.retrieval(k=[1, 3, 5], gain="linear")
    expected = metrics.retrieval_scores(rows["retrieved"], rows["gold"], [1, 3, 5], gain="linear")
    assert list(scored.columns) == list(rows.columns) + list(expected)
    for name, values in expected.items():
        np.testing.assert_array_equal(scored[name].to_numpy(), values)
    pd.testing.assert_frame_equal(rows, before)  # the user's frame is untouched
    assert "recall@5" not in rows.columns
    assert scored["qtype"].tolist() == rows["qtype"].tolist()


def test_conventions_and_counts_are_recorded_and_attrs_carried(rows):
    scored = rows.rag.retrieval(k=[5, 1, 5])
    meta = get_meta(scored)
    assert meta["evalset"] == {"name": "demo", "version": "1", "hash": "abc"}
    conventions = meta["retrieval"]
    assert conventions["k"] == [1, 5]
    assert conventions["gain"] == "exponential"
    assert conventions["relevance"] == "grade > 0"
    assert conventions["unanswerable"] == "NaN, excluded from means"
    assert conventions["no_relevant"] == "exclude"
    assert conventions["retrieved_column"] == "retrieved"
    assert conventions["gold_unit"] == "ids"
    assert meta["retrieval_counts"] == {
        "n_questions": 5, "n_unanswerable": 1, "n_judged_none_relevant": 0, "n_nothing_retrieved": 1, "max_retrieved": 5
    }
    # q4 (no gold) is NaN and excluded; q3 (nothing retrieved) scores 0 and stays in the mean
    assert np.isnan(scored.loc[3, "recall@5"]) and scored.loc[2, "recall@5"] == 0.0
    assert scored["recall@5"].mean() == pytest.approx(np.mean([2 / 3, 0.0, 0.0, 0.0]))


def test_counts_are_kept_apart_from_conventions_so_runs_pair_cleanly(rows):
    base = rows.rag.retrieval(k=5)
    with pytest.warns(UserWarning, match="larger than the longest list"):
        cand = rows.assign(retrieved=[["d2"], [], [], ["d5"], ["d3"]]).rag.retrieval(k=5)
    assert get_meta(base)["retrieval_counts"] != get_meta(cand)["retrieval_counts"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # same conventions: no ConventionMismatchWarning
        raglab._rowtable.pair_runs(base, cand)
    other_gain = rows.rag.retrieval(k=5, gain="linear")
    with pytest.warns(raglab.ConventionMismatchWarning, match="gain"):
        raglab._rowtable.pair_runs(base, other_gain)


def test_k_is_what_reached_the_model_and_candidates_are_never_used(rows):
    scored = rows.rag.retrieval(k=5)
    # q2's gold d2 is only among the candidates, not in what reached the model
    assert scored.loc[1, "recall@5"] == 0.0
    with pytest.warns(UserWarning, match=r"k=\[10\] is larger than the longest list in 'retrieved' \(5\).*reached the model"):
        rows.rag.retrieval(k=[5, 10])
    asked = rows.rag.retrieval(k=5, retrieved="candidates")
    assert asked.loc[1, "recall@5"] == 1.0
    assert asked.attrs["raglab"]["retrieval"]["retrieved_column"] == "candidates"
    assert "candidates" in (raglab.retrieval.retrieval.__doc__ or "")  # the function documents the convention


def test_depth_gap_shows_what_truncation_lost(rows):
    gap = rows.rag.depth_gap()
    assert gap["metric"].tolist() == ["recall", "hit"]
    recall = gap.set_index("metric").loc["recall"]
    assert (recall["context_k"], recall["candidate_k"]) == (5, 6)
    context = rows.rag.retrieval(k=5)["recall@5"]
    wide = rows.rag.retrieval(k=6, retrieved="candidates")["recall@6"]
    assert recall["context"] == pytest.approx(context.mean())
    assert recall["candidates"] == pytest.approx(wide.mean())
    assert recall["gap"] == pytest.approx(wide.mean() - context.mean())
    assert recall["n_lost"] == int((wide > context).sum()) == 4  # q1 (d5), q2 (d2), q3 (d4), q5 (d3)
    assert (recall["n"], recall["n_unanswerable"]) == (4, 1)
    hit = gap.set_index("metric").loc["hit"]
    assert hit["n_lost"] == 3  # q2, q3 and q5 had no gold in context but one among the candidates


def test_depth_gap_needs_the_candidates_column(rows):
    with pytest.raises(raglab.MissingColumnError, match=r"rag.depth_gap needs column 'raw'.*found \["):
        rows.rag.depth_gap("raw")
    gap = rows.rag.depth_gap(k=1, candidate_k=3)
    assert gap["context_k"].tolist() == [1, 1] and gap["candidate_k"].tolist() == [3, 3]


def test_replacing_columns_the_user_made_warns_but_rescoring_does_not(rows):
    scored = rows.rag.retrieval(k=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = scored.rag.retrieval(k=5, gain="linear")
    assert again.attrs["raglab"]["retrieval"]["gain"] == "linear"
    own = rows.assign(rr=1.0)
    with pytest.warns(UserWarning, match=r"replaces existing column\(s\) \['rr'\]"):
        own.rag.retrieval(k=5)


def test_clear_errors(rows):
    with pytest.raises(raglab.MissingColumnError, match=r"needs column 'ranked'.*Pass retrieved='your_column'"):
        rows.rag.retrieval(retrieved="ranked")
    with pytest.raises(raglab.RowTableError, match=r"'question_id' must be unique"):
        rows.assign(question_id=["q1", "q1", "q3", "q4", "q5"]).rag.retrieval()
    bad = rows.assign(retrieved=[["d1"], "d1 d2", [], [], []])
    with pytest.raises(raglab.RowTableError, match=r"column 'retrieved'.*row 1 \(question_id 'q2'\) holds a string 'd1 d2'"):
        bad.rag.retrieval()
    bad = rows.assign(gold=[["d1"], ["d1"], [], 3, []])
    with pytest.raises(raglab.RowTableError, match=r"column 'gold'.*row 3 \(question_id 'q4'\) holds int 3"):
        bad.rag.retrieval()
    with pytest.raises(ValueError, match=r"The value for `gain` must be one of \['exponential', 'linear'\]"):
        rows.rag.retrieval(gain="exp")


def test_results_survive_a_file_round_trip(rows, tmp_path):
    scored = rows.rag.retrieval(k=[1, 5])
    back = raglab.read_rows(raglab.write_rows(scored, tmp_path / "scored.jsonl"))
    assert get_meta(back)["retrieval"] == get_meta(scored)["retrieval"]
    pd.testing.assert_series_equal(back["ndcg@5"], scored["ndcg@5"])


def test_works_without_question_ids_and_on_an_empty_frame():
    frame = pd.DataFrame({"retrieved": [["a", "b"]], "gold": [["b"]]})
    assert frame.rag.retrieval(k=2)["rr"].tolist() == [0.5]
    empty = pd.DataFrame({"retrieved": pd.Series([], dtype=object), "gold": pd.Series([], dtype=object)})
    out = empty.rag.retrieval(k=3)
    assert len(out) == 0 and "recall@3" in out.columns


# ---- depth_gap with span gold ----------------------------------------------------------------------


def test_depth_gap_with_span_gold_matches_hand_worked_case():
    # q1: the gold span lies in candidate 2, which did not reach the model (k=1): lost by truncation.
    # q2: found at rank 1 in both. q3: unanswerable (no gold spans): excluded and counted.
    span = lambda doc, start, end: {"doc_id": doc, "start": start, "end": end}  # noqa: E731
    rows = pd.DataFrame({
        "question_id": ["q1", "q2", "q3"],
        "retrieved": [["a#0"], ["b#1"], ["c#0"]],
        "retrieved_spans": [[span("a", 0, 100)], [span("b", 100, 200)], [span("c", 0, 100)]],
        "candidates": [["a#0", "a#1"], ["b#1", "b#0"], ["c#0", "c#1"]],
        "candidate_spans": [[span("a", 0, 100), span("a", 100, 200)], [span("b", 100, 200), span("b", 0, 100)],
                            [span("c", 0, 100), span("c", 100, 200)]],
        "gold_spans": [[span("a", 150, 160)], [span("b", 120, 130)], []],
    })
    gap = rows.rag.depth_gap(candidate_spans="candidate_spans")
    assert gap[["metric", "context_k", "context", "candidate_k", "candidates", "n_lost", "n", "n_unanswerable"]
               ].values.tolist() == [["recall", 1, 0.5, 2, 1.0, 1, 2, 1], ["hit", 1, 0.5, 2, 1.0, 1, 2, 1]]
    assert gap.attrs["raglab"]["depth_gap"]["gold_unit"] == "character spans"


def test_depth_gap_span_gold_needs_candidate_spans():
    rows = pd.DataFrame({"retrieved": [["a"]], "retrieved_spans": [[{"doc_id": "a", "start": 0, "end": 5}]],
                         "candidates": [["a"]], "gold_spans": [[{"doc_id": "a", "start": 0, "end": 2}]]})
    with pytest.raises(raglab.RowTableError, match="pass candidate_spans="):
        rows.rag.depth_gap()


def test_depth_gap_scores_both_depths_on_the_same_gold():
    # gold as ids AND spans, context spans given, no candidate spans: retrieval() would score the context by
    # spans, so depth_gap must not score the candidates' ids against a different gold (it did: 0.0, n_lost 0)
    span = {"doc_id": "a", "start": 0, "end": 5}
    rows = pd.DataFrame({"question_id": ["q1", "q2"], "retrieved": [["x"], ["y"]],
                         "retrieved_spans": [[span], [span]], "candidates": [["x", "g1"], ["y", "g2"]],
                         "gold": [["g1"], ["g2"]], "gold_spans": [[span], [span]]})
    with pytest.raises(raglab.RowTableError, match="pass candidate_spans="):
        rows.rag.depth_gap()
    by_ids = rows.rag.depth_gap(gold_by="ids").set_index("metric")
    assert by_ids.loc["recall", ["context", "candidates", "n_lost"]].tolist() == [0.0, 1.0, 2]


def test_depth_gap_equals_retrieval_on_each_column_for_bundled_run():
    from raglab import datasets

    run = datasets.squad_run("chunk500_rerank")
    gap = run.rag.depth_gap(candidate_spans="candidate_spans").set_index("metric")
    context = run.rag.retrieval(k=5)["recall@5"].mean()
    wide = run.rag.retrieval(k=20, retrieved="candidates", retrieved_spans="candidate_spans")["recall@20"].mean()
    assert gap.loc["recall", "context"] == pytest.approx(context, abs=1e-12)
    assert gap.loc["recall", "candidates"] == pytest.approx(wide, abs=1e-12)
    assert gap.loc["recall", "candidates"] > gap.loc["recall", "context"]


def test_ids_that_can_never_match_are_refused():
    rows = pd.DataFrame({"question_id": ["q1"], "retrieved": [[101, 202]], "gold": [["101"]]})
    with pytest.raises(raglab.RowTableError, match=r"'retrieved' holds ids as number but 'gold' as text"):
        rows.rag.retrieval(k=2)
    fixed = rows.assign(retrieved=[["101", "202"]])
    assert fixed.rag.retrieval(k=2)["recall@2"].tolist() == [1.0]


def test_rescoring_keeps_same_convention_columns_and_drops_stale_ones():
    rows = pd.DataFrame({"question_id": ["q1"], "retrieved": [["d7", "d2", "d9"]], "gold": [{"d2": 3, "d9": 1}]})
    linear = rows.rag.retrieval(k=3, gain="linear")
    with pytest.warns(UserWarning, match=r"dropped \['recall@3', .*'ndcg@3'.*other conventions"):
        again = linear.rag.retrieval(k=2)  # exponential gain: the linear ndcg@3 must not stay labelled exponential
    assert "ndcg@3" not in again.columns and again.rag.meta["retrieval"]["gain"] == "exponential"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        both = linear.rag.retrieval(k=2, gain="linear")  # same conventions: both depths kept
    assert {"ndcg@2", "ndcg@3"} <= set(both.columns) and both.rag.meta["retrieval"]["k"] == [2, 3]
    assert both["ndcg@3"].iloc[0] == pytest.approx(metrics.ndcg_at_k(["d7", "d2", "d9"], {"d2": 3, "d9": 1}, 3, gain="linear"))


# ---- no_relevant: trec_eval's convention on request -------------------------------------------------


def test_no_relevant_zero_is_recorded_counted_and_changes_only_judged_irrelevant_questions(rows):
    judged = rows.assign(gold=[{"d2": 3, "d4": 1, "d5": 2}, ["d2"], ["d4"], {"d5": 0, "d9": -1}, {"d3": 2}])
    exclude, zero = judged.rag.retrieval(k=5), judged.rag.retrieval(k=5, no_relevant="zero")
    assert np.isnan(exclude.loc[3, "recall@5"]) and (zero.loc[3, metrics.score_columns([5])] == 0).all()
    others = [0, 1, 2, 4]
    pd.testing.assert_frame_equal(zero.loc[others, metrics.score_columns([5])], exclude.loc[others, metrics.score_columns([5])])
    assert zero["ap"].mean() == pytest.approx(exclude["ap"].sum() / 5) and exclude["ap"].mean() == pytest.approx(exclude["ap"].sum() / 4)
    conventions = zero.rag.meta["retrieval"]
    assert conventions["no_relevant"] == "zero" and "trec_eval" in conventions["unanswerable"]
    for scored in (exclude, zero):
        counts = scored.rag.meta["retrieval_counts"]
        assert (counts["n_unanswerable"], counts["n_judged_none_relevant"], counts["n_nothing_retrieved"]) == (1, 1, 1)
    with pytest.warns(raglab.ConventionMismatchWarning, match="no_relevant: 'exclude' vs 'zero'"):
        raglab._rowtable.pair_runs(exclude, zero)
    with pytest.raises(ValueError, match=r"The value for `no_relevant` must be one of \['exclude', 'zero'\], but 'trec'"):
        rows.rag.retrieval(no_relevant="trec")


def test_no_relevant_zero_with_span_gold():
    span = lambda doc, start, end, grade=1: {"doc_id": doc, "start": start, "end": end, "grade": grade}  # noqa: E731
    rows = pd.DataFrame({
        "question_id": ["q1", "q2", "q3"],
        "retrieved_spans": [[span("a", 0, 100)], [span("b", 0, 100)], [span("c", 0, 100)]],
        "gold_spans": [[span("a", 10, 20)], [span("b", 10, 20, 0)], []],
    })
    exclude, zero = rows.rag.retrieval(k=1), rows.rag.retrieval(k=1, no_relevant="zero")
    columns = metrics.score_columns([1]) + ["coverage@1"]
    assert exclude[columns].isna().sum().tolist() == [2] * len(columns)
    assert zero.loc[1, columns].tolist() == [0.0] * len(columns) and zero.loc[2, columns].isna().all()
    assert zero.loc[0, columns].tolist() == exclude.loc[0, columns].tolist()
    assert zero.rag.meta["retrieval_counts"]["n_judged_none_relevant"] == 1


# ---- default metric selection (summary / compare without metrics=) ------------------------------------


def _mixed_columns(seed: int = 0, n: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "question_id": [f"q{i}" for i in range(n)],
        "qtype": rng.choice(["a", "b"], n),
        "recall@5": rng.random(n),                               # float: a metric
        "hit@5": rng.integers(0, 2, n),                          # int under a registered name: a metric
        "em": pd.array(rng.integers(0, 2, n), dtype="Int64"),    # nullable int, registered: a metric
        "latency_ms": rng.gamma(2, 50, n),                       # float: a metric
        "answerable": rng.random(n) < 0.7,                       # boolean attribute: never by default
        "unanswerable": rng.random(n) < 0.3,
        "declined": pd.array(rng.random(n) < 0.2, dtype="boolean"),  # nullable boolean (judge output)
        "n_answers": rng.integers(1, 6, n),                      # int count, not a known metric
        "article_index": rng.integers(0, 40, n),
        "doc_id": rng.integers(0, 9, n).astype(float),           # ids read back as floats: never
        "passageId": rng.random(n),
        "qid": rng.random(n),
        "valid": rng.random(n),                                  # ends in "id" but is not an id
    })


EXPECTED_DEFAULT = ["recall@5", "hit@5", "em", "latency_ms", "valid"]


def test_default_metrics_are_floats_and_known_integers_never_booleans_or_ids():
    rows = _mixed_columns()
    table = rows.rag.summary(by="qtype")
    assert list(dict.fromkeys(table["metric"])) == EXPECTED_DEFAULT
    assert table.attrs["raglab"]["summary"]["metrics"] == EXPECTED_DEFAULT
    compared = rows.rag.compare(_mixed_columns(seed=1).assign(question_id=rows["question_id"]), n_resamples=200)
    assert list(dict.fromkeys(compared["metric"])) == EXPECTED_DEFAULT
    # named explicitly, booleans and counts are still read as scores (True/False -> 1/0)
    named = rows.rag.summary(["answerable", "n_answers"], method="t")
    assert named["mean"].tolist() == pytest.approx([rows["answerable"].mean(), rows["n_answers"].mean()])


def test_default_metrics_of_the_bundled_reader_runs_are_em_and_f1():
    from raglab import datasets

    before, after = datasets.squad_reader("bert"), datasets.squad_reader("nlnet")
    # the frames also hold booleans (declined, answerable, span_ambiguous) and an int count (n_answers)
    assert {"declined", "answerable", "span_ambiguous", "n_answers"} <= set(before.columns)
    table = before.rag.compare(after, n_resamples=200)
    assert list(dict.fromkeys(table["metric"])) == ["em", "f1"]


def test_default_metrics_only_where_every_frame_has_a_metric_column():
    base = pd.DataFrame({"question_id": ["q1", "q2"], "score": [0.5, 1.0], "tokens": [0.1, 0.2]})
    cand = base.assign(tokens=[3, 4])  # an int count in the candidate: not a metric there
    assert base.rag.compare(cand, n_resamples=50)["metric"].unique().tolist() == ["score"]


def test_no_default_metric_names_the_rule_and_what_was_skipped():
    rows = pd.DataFrame({"question_id": ["q1", "q2"], "answerable": [True, False], "n_tokens": [3, 4], "doc_id": [1.0, 2.0]})
    with pytest.raises(raglab.RowTableError, match=(
        r"rag.summary found no metric columns to use by default.*only float columns, and integer columns named as a "
        r"known metric.*booleans and ids never are \(skipped: 'answerable' \(boolean\), 'n_tokens' \(integer, not a "
        r"known metric name\), 'doc_id' \(an id\)\)"
    )):
        rows.rag.summary()
    assert rows.rag.summary(["answerable"], method="wilson")["mean"].tolist() == [0.5]

