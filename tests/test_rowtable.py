"""The row table: validation errors name the method, the column, the rows and the fix."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest

import raglab
from raglab._errors import EvalSetMismatchError, JudgeMismatchWarning, MissingColumnError, RowTableError
from raglab._meta import set_meta, update_meta
from raglab._rowtable import is_unanswerable, pair_runs


def good_rows() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "question_id": ["q1", "q2", "q3"],
            "retrieved": [["d1", "d2"], ["d3"], []],
            "gold": [["d2"], {"d3": 2, "d9": 0}, []],
            "gold_spans": [[{"doc_id": "d2", "start": 0, "end": 10}], None, []],
            "retrieved_spans": [
                [{"doc_id": "d1", "start": 0, "end": 5}, {"doc_id": "d2", "start": 5, "end": 9}],
                [{"doc_id": "d3", "start": 0, "end": 4}],
                [],
            ],
            "answer": ["a", None, "c"],
            "qtype": ["who", "what", "who"],
        }
    )


def test_valid_table_passes_and_chains():
    rows = good_rows()
    assert rows.rag.validate(require=["retrieved", "gold"]) is rows


def test_accessor_init_never_raises_and_dir_works():
    # pandas builds the accessor on every access; an exception in __init__ breaks dir(df) everywhere.
    frame = pd.DataFrame({"x": [1]})
    names = dir(frame)
    assert "rag" in names
    assert "rag" in dir(pd.DataFrame())
    assert pd.DataFrame({"x": [1]}).rag is not None  # no validation at construction


def test_missing_column_lists_found_columns_and_fix():
    rows = good_rows().drop(columns=["retrieved"])
    with pytest.raises(MissingColumnError) as info:
        rows.rag.validate(require=["retrieved"])
    message = str(info.value)
    assert "rag.validate needs column 'retrieved'" in message
    assert "found ['question_id', 'gold'" in message
    assert "Pass retrieved='your_column'" in message
    assert isinstance(info.value, KeyError) and isinstance(info.value, ValueError)


def test_override_column_name_is_used_and_checked():
    rows = good_rows().rename(columns={"retrieved": "ctx_ids"})
    rows.rag.validate(require=["retrieved"], retrieved="ctx_ids")
    with pytest.raises(MissingColumnError, match="needs column 'nope'"):
        rows.rag.validate(retrieved="nope")


def test_duplicate_question_id_names_the_ids():
    rows = pd.concat([good_rows(), good_rows().iloc[[1]]], ignore_index=True)
    with pytest.raises(RowTableError, match=r"column 'question_id' must be unique.*\['q2'\].*rows 1, 3"):
        rows.rag.validate()


def test_missing_question_id_value():
    rows = good_rows()
    rows.loc[1, "question_id"] = None
    with pytest.raises(RowTableError, match=r"'question_id' must hold a str or int id in every row; row 1"):
        rows.rag.validate()


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("d1,d2", "a string 'd1,d2'"),
        ('["d1"]', r"JSON text\? read files with raglab.read_rows"),
        (np.nan, r"NaN/None \(use \[\] when nothing was retrieved\)"),
        (None, r"NaN/None"),
        (["d1", None], "a list containing NoneType"),
        ([1.5], "a list containing float"),
        (7, "int 7"),
    ],
)
def test_retrieved_not_a_list_of_ids(cell, expected):
    rows = good_rows()
    rows["retrieved"] = pd.Series([["d1"], cell, ["d3"]], dtype=object)
    rows = rows.drop(columns=["retrieved_spans"])
    with pytest.raises(RowTableError) as info:
        rows.rag.validate()
    message = str(info.value)
    assert "rag.validate: column 'retrieved' must hold a list of str/int ids per row" in message
    assert "row 1 (question_id 'q2')" in message
    assert re.search(expected, message), message


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("d3", "a string 'd3'"),
        (3.0, "float 3.0"),
        ({"d3": "high"}, "grade 'high'"),
        ({("a", "b"): 1}, "key"),
        ([["d1"]], "a list containing list"),
    ],
)
def test_gold_of_wrong_type(cell, expected):
    rows = good_rows()
    rows["gold"] = pd.Series([["d2"], cell, []], dtype=object)
    with pytest.raises(RowTableError) as info:
        rows.rag.validate()
    message = str(info.value)
    assert "column 'gold' must hold a list of ids or a dict id -> grade" in message
    assert "row 1" in message and expected in message


def test_missing_gold_is_allowed_and_means_unanswerable():
    rows = good_rows()
    rows["gold"] = pd.Series([["d2"], None, np.nan], dtype=object)
    rows.rag.validate()
    assert [is_unanswerable(g) for g in rows["gold"]] == [False, True, True]
    assert is_unanswerable({"d1": 0, "d2": -1})  # grades <= 0 are non-relevant
    assert not is_unanswerable({"d1": 0, "d2": 1})


@pytest.mark.parametrize(
    ("span", "expected"),
    [
        ({"doc_id": "d2", "start": 9, "end": 3}, "start > end"),
        ({"doc_id": "d2", "start": -1, "end": 3}, "start < 0"),
        ({"doc_id": "d2", "start": 0}, "each span is a dict with doc_id, start, end"),
        ({"doc_id": "d2", "start": 0.5, "end": 3}, "non-integer offsets"),
    ],
)
def test_bad_spans(span, expected):
    rows = good_rows()
    rows["gold_spans"] = pd.Series([[span], None, []], dtype=object)
    with pytest.raises(RowTableError) as info:
        rows.rag.validate()
    message = str(info.value)
    assert "column 'gold_spans'" in message and "row 0 (question_id 'q1')" in message
    assert expected in message


def test_retrieved_spans_must_match_retrieved_length():
    rows = good_rows()
    rows.at[1, "retrieved_spans"] = []
    with pytest.raises(RowTableError, match=r"'retrieved_spans' must give one span per entry of 'retrieved'.*row 1"):
        rows.rag.validate()


def test_text_column_of_wrong_type():
    rows = good_rows()
    rows["answer"] = pd.Series(["a", 3, "c"], dtype=object)
    with pytest.raises(RowTableError, match=r"column 'answer' must hold a str \(or None\) per row; row 1"):
        rows.rag.validate()


def test_error_lists_first_rows_and_count_of_more():
    rows = pd.DataFrame({"question_id": [f"q{i}" for i in range(9)], "retrieved": ["x"] * 9})
    with pytest.raises(RowTableError, match=r"rows 0, 1, 2, 3, 4 \(question_id .*\) and 4 more"):
        rows.rag.validate()


# ---- pairing runs ---------------------------------------------------------------------------------


def test_pair_runs_aligns_by_question_id_regardless_of_order():
    base = pd.DataFrame({"question_id": ["a", "b", "c"], "s": [1.0, 2.0, 3.0]})
    cand = pd.DataFrame({"question_id": ["c", "a", "b"], "s": [30.0, 10.0, 20.0]})
    paired = pair_runs(base, cand)
    assert paired.base["question_id"].tolist() == paired.cand["question_id"].tolist() == ["a", "b", "c"]
    assert (paired.cand["s"] / paired.base["s"]).eq(10).all()


def test_pair_runs_refuses_different_question_sets_unless_inner():
    base = pd.DataFrame({"question_id": ["a", "b", "c"], "s": [1, 2, 3]})
    cand = pd.DataFrame({"question_id": ["b", "c", "d"], "s": [1, 2, 3]})
    with pytest.raises(RowTableError, match=r"1 question\(s\) only in base \(e.g. \['a'\]\), 1 only in candidate \(e.g. \['d'\]\).*how='inner'"):
        pair_runs(base, cand)
    with pytest.warns(UserWarning, match="shared questions only"):
        paired = pair_runs(base, cand, how="inner")
    assert paired.n == 2 and paired.base_only == ["a"] and paired.cand_only == ["d"]


def test_pair_runs_refuses_different_evalset_versions():
    base = pd.DataFrame({"question_id": ["a"], "s": [1]})
    cand = pd.DataFrame({"question_id": ["a"], "s": [1]})
    update_meta(base, "evalset", {"name": "set", "version": "v1", "hash": "aaa"})
    update_meta(cand, "evalset", {"name": "set", "version": "v2", "hash": "bbb"})
    with pytest.raises(EvalSetMismatchError, match=r"different eval sets.*'v1'.*'v2'.*allow_evalset_mismatch=True"):
        pair_runs(base, cand)
    with pytest.warns(UserWarning, match="different eval sets"):
        pair_runs(base, cand, allow_evalset_mismatch=True)


def test_pair_runs_warns_loudly_on_judge_change():
    base = pd.DataFrame({"question_id": ["a"], "s": [1]})
    cand = base.copy()
    set_meta(base, {"judge": {"fingerprint": "f1", "model": "m-1"}})
    set_meta(cand, {"judge": {"fingerprint": "f2", "model": "m-2"}})
    with pytest.warns(JudgeMismatchWarning, match=r"DIFFERENT JUDGES.*\['model'\]"):
        pair_runs(base, cand)
    set_meta(cand, {"judge": {"fingerprint": "f1", "model": "m-1"}})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pair_runs(base, cand)


def test_public_names_are_exported():
    for name in ("RowTableError", "MissingColumnError", "EvalSet", "read_rows", "read_trec", "Interval"):
        assert name in raglab.__all__ and hasattr(raglab, name)


def test_require_accepts_one_role_as_a_string_and_refuses_unknown_roles():
    rows = good_rows().drop(columns=["gold"])
    with pytest.raises(MissingColumnError, match="needs column 'gold'"):
        rows.rag.validate(require="gold")
    with pytest.raises(ValueError, match=r"unknown role\(s\) \['retreived'\]"):
        rows.rag.validate(require=["retreived"])


def test_empty_gold_span_is_refused_as_retrieval_would():
    rows = good_rows()
    rows["gold_spans"] = pd.Series([[{"doc_id": "d2", "start": 4, "end": 4}], None, []], dtype=object)
    with pytest.raises(RowTableError, match=r"'gold_spans'.*0 <= start < end.*empty span"):
        rows.rag.validate()
    with pytest.raises(RowTableError, match="empty span"):
        rows.rag.retrieval(k=1)


def test_inner_pairing_with_nothing_in_common_says_so():
    base = pd.DataFrame({"question_id": ["a"], "s": [1.0]})
    cand = pd.DataFrame({"question_id": ["b"], "s": [1.0]})
    with pytest.raises(RowTableError, match="share no question ids"):
        pair_runs(base, cand, how="inner")


def test_json_text_read_by_plain_pandas_points_to_read_rows(tmp_path):
    rows = pd.DataFrame({"question_id": ["q1"], "retrieved": [["c1"]], "gold": [["c1"]],
                         "retrieved_spans": [[{"doc_id": "a", "start": 0, "end": 5}]]})
    path = raglab.write_rows(rows, tmp_path / "rows.csv")
    plain = pd.read_csv(path)
    for column in ("retrieved", "gold", "retrieved_spans"):
        with pytest.raises(raglab.RowTableError, match=rf"{column}.*JSON text\? read files with raglab.read_rows"):
            plain[["question_id", column]].rag.validate(require=[column])
    assert raglab.read_rows(path).rag.validate(require=["retrieved", "gold", "retrieved_spans"]).shape == (1, 4)


@pytest.mark.parametrize(
    ("column", "cell", "hint"),
    [
        ("retrieved", {"d1", "d2"}, r"holds set .* \(a set has no order: give the ranked list"),
        ("gold", {"d1"}, r"holds set .*list\(cell\) for gold"),
        ("retrieved", [b"d1"], r"holds a list containing bytes b'd1' \(bytes: decode ids to text"),
    ],
)
def test_a_set_or_bytes_cell_is_named_with_its_fix(column, cell, hint):
    rows = pd.DataFrame({"question_id": ["q1", "q2"], "retrieved": [["d1"], ["d1"]], "gold": [["d1"], ["d1"]]})
    rows[column] = pd.Series([rows[column][0], cell], dtype=object)
    with pytest.raises(RowTableError, match=rf"column '{column}' .* row 1 \(question_id 'q2'\) " + hint):
        rows.rag.validate(require=["retrieved", "gold"])
