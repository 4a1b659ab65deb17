"""raglab.retrieval: the functions behind df.rag.retrieval and df.rag.depth_gap, equal to the methods."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import raglab
from raglab import retrieval as rt
from raglab._errors import RowTableError
from raglab._meta import update_meta
from raglab._validation import called_as
from raglab.retrieval import retrieval


def called(name, function, *args, **kwargs):
    """Call ``function`` as the operation ``name`` (as the accessor does), for errors that name it."""
    with called_as(name):
        return function(*args, **kwargs)

def span(doc, start, end, **extra):
    return {"doc_id": doc, "start": start, "end": end, **extra}


@pytest.fixture
def rows() -> pd.DataFrame:
    frame = pd.DataFrame(
        {
            "question_id": ["q1", "q2", "q3", "q4", "q5"],
            "qtype": ["fact", "fact", "howto", "howto", "fact"],
            "retrieved": [["d7", "d2", "d9", "d4", "d1"], ["d1", "d3"], [], ["d5"], ["d8", "d6", "d2"]],
            "candidates": [["d7", "d2", "d9", "d4", "d1", "d5"], ["d1", "d3", "d2"], ["d4"], ["d5", "d6"],
                           ["d8", "d6", "d2", "d3"]],
            "gold": [{"d2": 3, "d4": 1, "d5": 2}, ["d2"], ["d4"], {"d5": 0}, {"d3": 2}],
            "retrieved_spans": [[span("a", 0, 10)] * 5, [span("a", 0, 10)] * 2, [], [span("b", 0, 5)],
                                [span("b", 0, 10)] * 3],
            "candidate_spans": [[span("a", 0, 10)] * 6, [span("a", 0, 10)] * 3, [span("a", 0, 10)],
                                [span("b", 0, 5)] * 2, [span("b", 0, 10)] * 4],
            "gold_spans": [[span("a", 2, 4)], [span("a", 5, 9, grade=2)], [], [span("b", 7, 9)], [span("b", 1, 3)]],
        }
    )
    update_meta(frame, "evalset", {"name": "demo", "version": "1", "hash": "abc"})
    return frame


RETRIEVAL_KWARGS = [
    {},
    {"k": [1, 3, 5], "gain": "linear"},
    {"k": 2, "no_relevant": "zero", "gold_by": "ids"},
    {"k": [1, 5], "retrieved": "candidates", "gold_by": "ids"},
    {"k": 3, "gold_by": "spans", "min_overlap": 0.5},
    {"k": [1, 2], "gold_by": "spans", "retrieved_spans": "candidate_spans", "no_relevant": "zero", "min_overlap": 2},
]


def same_frame(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    return a.equals(b) and list(a.columns) == list(b.columns) and a.attrs == b.attrs


@pytest.mark.parametrize("kwargs", RETRIEVAL_KWARGS)
def test_retrieval_method_equals_the_function(rows, kwargs):
    method = rows.rag.retrieval(**kwargs)
    function = rt.retrieval(rows, **kwargs)
    assert same_frame(method, function)
    assert "recall@" + str(np.atleast_1d(kwargs.get("k", 5))[0]) in function.columns


def test_retrieval_rescoring_a_scored_frame_equals_the_method(rows):
    scored = rows.rag.retrieval(k=3, gold_by="ids", gain="linear")
    assert same_frame(scored.rag.retrieval(k=5, gold_by="ids", gain="linear"),
                      rt.retrieval(scored, k=5, gold_by="ids", gain="linear"))
    with pytest.warns(UserWarning, match="dropped"):
        method = scored.rag.retrieval(k=5, gold_by="ids")
    with pytest.warns(UserWarning, match="dropped"):
        function = rt.retrieval(scored, k=5, gold_by="ids")
    assert same_frame(method, function)


DEPTH_GAP_KWARGS = [
    {"gold_by": "ids"},
    {"gold_by": "ids", "k": 1, "candidate_k": 3},
    {"gold_by": "spans", "candidate_spans": "candidate_spans"},
    {"gold_by": "spans", "candidate_spans": "candidate_spans", "min_overlap": 0.5, "k": 2},
]


@pytest.mark.parametrize("kwargs", DEPTH_GAP_KWARGS)
def test_depth_gap_method_equals_the_function(rows, kwargs):
    assert same_frame(rows.rag.depth_gap(**kwargs), rt.depth_gap(rows, **kwargs))


def test_errors_and_warnings_name_the_method_asked_for(rows):
    with pytest.raises(raglab.MissingColumnError, match=r"^raglab.retrieval.retrieval needs column 'ranked'"):
        rt.retrieval(rows, retrieved="ranked", gold_by="ids")
    with pytest.raises(raglab.MissingColumnError, match=r"^rag.retrieval needs column 'ranked'"):
        called("rag.retrieval", rt.retrieval, rows, retrieved="ranked", gold_by="ids")
    bad = rows.assign(retrieved=[["d1"], "d1 d2", [], [], []])
    with pytest.raises(raglab.RowTableError, match=r"^rag.retrieval: column 'retrieved'.*row 1 \(question_id 'q2'\)"):
        called("rag.retrieval", rt.retrieval, bad, gold_by="ids")
    with pytest.warns(UserWarning, match=r"^raglab.retrieval.retrieval: k=\[10\] is larger") as record:
        rt.retrieval(rows, k=10, gold_by="ids")
    assert record[0].filename == __file__  # the warning points at the caller's line
    with pytest.raises(raglab.MissingColumnError, match=r"^raglab.retrieval.depth_gap needs column 'raw'"):
        rt.depth_gap(rows, candidates="raw")
    # depth_gap scores through retrieval, whose errors keep their own name (rag.depth_gap -> rag.retrieval)
    bad = rows.assign(candidates=[["d1"], None, [], [], []])
    with pytest.raises(raglab.RowTableError, match=r"^rag.retrieval: column 'candidates'"):
        called("rag.depth_gap", rt.depth_gap, bad, gold_by="ids")
    with pytest.raises(raglab.RowTableError, match=r"^rag.retrieval: column 'candidates'"):
        bad.rag.depth_gap(gold_by="ids")


def test_the_function_never_modifies_the_rows(rows):
    before = rows.copy()
    rt.retrieval(rows, k=[1, 5])
    rt.depth_gap(rows, gold_by="ids")
    pd.testing.assert_frame_equal(rows, before)
    assert rows.attrs["raglab"] == before.attrs["raglab"]


# ---- Arrow-backed list columns -------------------------------------------------------------------


def test_arrow_backed_columns_score_like_python_lists(rows):
    ids = rows[["question_id", "retrieved", "candidates", "gold"]]
    arrow = ids.assign(
        retrieved=pd.Series(ids["retrieved"].tolist(), dtype=pd.ArrowDtype(pa.list_(pa.string()))),
        candidates=pd.Series(ids["candidates"].tolist(), dtype=pd.ArrowDtype(pa.list_(pa.string()))),
    )
    for kwargs in ({"k": [1, 5]}, {"k": 3, "retrieved": "candidates", "no_relevant": "zero"}):
        plain, native = rt.retrieval(ids, **kwargs), rt.retrieval(arrow, **kwargs)
        scores = [c for c in plain.columns if c not in ids.columns]
        pd.testing.assert_frame_equal(native[scores], plain[scores])
        assert native.attrs == plain.attrs
    assert same_frame(rt.depth_gap(arrow), rt.depth_gap(ids))
    numbers = arrow.assign(retrieved=pd.Series([[1], [2]] + [[]] * 3, dtype=pd.ArrowDtype(pa.list_(pa.int64()))))
    with pytest.raises(raglab.RowTableError, match=r"'retrieved' holds ids as number but 'gold' as text"):
        rt.retrieval(numbers)


@pytest.mark.parametrize("suffix", ["parquet", "jsonl"])
def test_read_rows_lists_arrow_then_retrieval(rows, tmp_path, suffix):
    path = raglab.write_rows(rows[["question_id", "qtype", "retrieved", "gold"]], tmp_path / f"rows.{suffix}")
    plain, native = raglab.read_rows(path), raglab.read_rows(path, lists="arrow")
    assert isinstance(native["retrieved"].dtype, pd.ArrowDtype) and native["gold"].dtype == object
    expected, got = rt.retrieval(plain, k=[1, 3]), rt.retrieval(native, k=[1, 3])
    scores = [c for c in expected.columns if c not in plain.columns]
    pd.testing.assert_frame_equal(got[scores], expected[scores])
    # an Arrow-backed scored frame writes and reads back like any other
    again = raglab.read_rows(raglab.write_rows(got, tmp_path / f"scored.{suffix}"))
    assert again["retrieved"].tolist() == rows["retrieved"].tolist()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pd.testing.assert_series_equal(again["ndcg@3"], expected["ndcg@3"])


# ---- checks that look at everything; k bounded -----------------------------------------------------


def test_a_huge_k_allocates_nothing_for_ranks_that_hold_nothing():
    from raglab.metrics import _common

    rows = pd.DataFrame({"question_id": ["a"], "retrieved": [["d1", "d2"]], "gold": [{"d2": 1, "d3": 1}]})
    with pytest.warns(UserWarning, match=r"larger than the longest list"):
        got = retrieval(rows, k=[2, 10**9])
    assert len(_common._DISCOUNT) < 10_000  # the discount table was not grown to 10**9 entries
    assert got["ndcg@1000000000"].iloc[0] == got["ndcg@2"].iloc[0] == pytest.approx((1 / np.log2(3)) / (1 + 1 / np.log2(3)))
    assert got["precision@1000000000"].iloc[0] == 1e-9


def test_spans_of_another_length_than_the_ids_are_refused():
    span = {"doc_id": "a", "start": 0, "end": 5}
    rows = pd.DataFrame({"question_id": ["q1", "q2"], "retrieved": [["c1", "c2"], ["c3"]],
                         "retrieved_spans": [[span], [span]], "gold_spans": [[span], [span]]})
    with pytest.raises(RowTableError, match=r"'retrieved_spans' must give one span per entry of 'retrieved'.*\['q1'\]"):
        retrieval(rows, k=1)


def test_the_id_type_check_looks_past_the_first_rows():
    n = 5000
    rows = pd.DataFrame({"question_id": [f"q{i}" for i in range(n)],
                         "retrieved": [[] for _ in range(n - 1)] + [[7]],
                         "gold": [{"7": 1} for _ in range(n)]})
    with pytest.raises(RowTableError, match=r"'retrieved' holds ids as number but 'gold' as text"):
        retrieval(rows, k=1)


def test_span_doc_ids_of_another_kind_are_refused_and_a_match_skips_the_scan(monkeypatch):
    def span(doc):
        return {"doc_id": doc, "start": 0, "end": 5}

    rows = pd.DataFrame({"question_id": ["q1", "q2"], "retrieved_spans": [[span(1)], [span(2)]],
                         "gold_spans": [[span("1")], [span("2")]]})
    with pytest.raises(RowTableError, match=r"'retrieved_spans' holds doc_id values as number but 'gold_spans' as text"):
        retrieval(rows, k=1)
    # once any gold unit is found the kinds overlap, so the type scan over every id is not run
    monkeypatch.setattr(rt, "_id_types", lambda *a, **k: pytest.fail("scanned every id although a gold id matched"))
    assert retrieval(rows.assign(gold_spans=rows["retrieved_spans"]), k=1)["hit@1"].tolist() == [1.0, 1.0]
    ids = pd.DataFrame({"question_id": ["q1"], "retrieved": [["d1", "d2"]], "gold": [["d2"]]})
    assert retrieval(ids, k=2)["rr"].tolist() == [0.5]


def test_grades_that_cannot_be_scored_are_refused():
    rows = pd.DataFrame({"question_id": ["q1"], "retrieved": [["d1"]], "gold": [{"d1": float("inf")}]})
    with pytest.raises(RowTableError, match=r"grades must be finite numbers"):
        rows.rag.validate(require=["gold"])
    big = pd.DataFrame({"question_id": ["q1"], "retrieved": [["d1"]], "gold": [{"d1": 1024}]})
    with pytest.raises(RowTableError, match=r"grade 1024.0; exponential gain .* gain='linear'"):
        retrieval(big, k=1)
    assert retrieval(big, k=1, gain="linear")["ndcg@1"].iloc[0] == 1.0


@pytest.mark.parametrize("grade", [10**400, -(10**400)])
def test_integer_grades_beyond_float_range_are_refused_with_the_column(grade):
    rows = pd.DataFrame({"question_id": [7], "retrieved": [["d1"]], "gold": [{"d1": grade}]})
    with pytest.raises(RowTableError, match=r"'gold' \(question_id 7\) has grade an integer beyond float range"):
        retrieval(rows, k=1, gain="linear")
    with pytest.raises(RowTableError, match=r"row 0 \(question_id 7\) holds a dict with grade .*grades must be finite"):
        rows.rag.validate(require=["gold"])


def test_a_bad_cell_is_reported_before_ids_of_another_kind():
    # Scoring runs first and refuses the bad cell; the id-kind scan runs only when nothing matched.
    rows = pd.DataFrame({"question_id": ["q1", "q2"], "retrieved": [[7], None], "gold": [["7"], ["8"]]})
    with pytest.raises(RowTableError, match=r"use \[\]"):
        retrieval(rows, k=1)
    with pytest.raises(RowTableError, match=r"'retrieved' holds ids as number but 'gold' as text"):
        retrieval(rows.assign(retrieved=[[7], []]), k=1)


@pytest.mark.parametrize("grade", [float("inf"), -float("inf")])
def test_non_finite_grades_are_refused_by_retrieval_too(grade):
    rows = pd.DataFrame({"question_id": ["q1"], "retrieved": [["d1", "d2"]], "gold": [{"d1": grade, "d2": 1}]})
    with pytest.raises(RowTableError, match=r"grade -?inf; grades must be finite numbers"):
        retrieval(rows, k=2, gain="linear")


def test_depth_gap_refuses_context_chunks_that_are_not_candidates():
    # issue 19: a context chunk outside the candidates made the candidates' recall lower: a negative gap
    rows = pd.DataFrame({"question_id": ["q1", "q2", "q3"], "retrieved": [["d1"], ["d9"], ["d4", "d7"]],
                         "candidates": [["d1", "d2"], ["d4", "d5"], ["d4", "d5", "d7"]],
                         "gold": [["d2"], ["d9"], ["d7"]]})
    with pytest.raises(RowTableError, match=r"1 question\(s\) have chunks in 'retrieved' \(top 2\) that are not among "
                                            r"the candidates in 'candidates' \(top 3\): question_id 'q2'; e\.g\. 'd9'"):
        rt.depth_gap(rows)
    # the depth counts too: d7 is a candidate only below candidate_k=2
    fine = rows.drop(index=1)
    with pytest.raises(RowTableError, match=r"question_id 'q3'; e\.g\. 'd7'") as caught:
        fine.rag.depth_gap(candidate_k=2)
    assert caught.value.column == "candidates" and caught.value.rows == [1]
    gap = rt.depth_gap(fine)
    assert (gap["gap"] >= 0).all() and gap["gap"].tolist() == [0.5, 0.5]


@pytest.mark.parametrize("gold_by", ["ids", "spans"])
def test_metrics_asks_for_a_metric_outside_the_defaults(rows, gold_by):
    from raglab import metrics

    scored = rows.rag.retrieval(k=[1, 3], metrics=["map", "rr"], gold_by=gold_by)
    assert [c for c in scored.columns if c not in rows.columns] == ["map@1", "map@3", "rr"]
    assert same_frame(scored, rt.retrieval(rows, k=[1, 3], metrics=["map", "rr"], gold_by=gold_by))
    full = rows.rag.retrieval(k=[1, 3], gold_by=gold_by)
    assert scored["rr"].equals(full["rr"])
    # the counts do not depend on which metrics were asked for
    assert scored.attrs["raglab"]["retrieval_counts"] == full.attrs["raglab"]["retrieval_counts"]
    assert rows.rag.retrieval(k=3, metrics="map", gold_by=gold_by).attrs["raglab"]["retrieval_counts"] == \
        full.attrs["raglab"]["retrieval_counts"]
    if gold_by == "ids":  # equal to the per-question definition of MAP@k
        expected = [metrics.METRICS["map"].score(r, g, 3) for r, g in zip(rows["retrieved"], rows["gold"])]
        assert scored["map@3"].tolist() == pytest.approx(expected, nan_ok=True)


def test_an_unknown_metric_is_refused_with_the_method_and_the_names():
    rows = pd.DataFrame({"question_id": ["q1"], "retrieved": [["d1"]], "gold": [["d1"]]})
    with pytest.raises(ValueError, match=r"^rag\.retrieval: `metrics` must name registered metrics.*'map'.*\['mapp'\]"):
        rows.rag.retrieval(metrics=["mapp"])
