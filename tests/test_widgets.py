"""The row explorer: filtering, sorting worst first, stepping, escaping."""

from __future__ import annotations

import pandas as pd
import pytest

from raglab import datasets, widgets
from raglab._rowtable import MissingColumnError


def parts(box):
    controls, navigation, view = box.children
    slice_box, sort_box = controls.children
    previous, following, position, status = navigation.children
    return slice_box, sort_box, previous, following, position, status, view


def test_explorer_filters_sorts_and_steps():
    rows = datasets.handbook()
    box = widgets.explore(rows, by="qtype", sort_by="human_faithful")
    slice_box, sort_box, previous, following, position, status, view = parts(box)
    # worst first: the first unfaithful answer in row order comes first
    first_bad = rows[rows["human_faithful"] == 0].iloc[0]
    assert first_bad["question"] in view.value
    assert status.value.startswith(f"1 of {len(rows)}")
    following.click()
    second_bad = rows[rows["human_faithful"] == 0].iloc[1]
    assert second_bad["question"] in view.value
    previous.click()
    previous.click()  # clipped at the first row
    assert position.value == 0
    slice_box.value = "yesno"
    n_yesno = int((rows["qtype"] == "yesno").sum())
    assert status.value == f"1 of {n_yesno} (qtype = yesno)"
    sort_box.value = "(row order)"
    assert rows[rows["qtype"] == "yesno"].iloc[0]["question"] in view.value


def test_gold_marks_and_unanswerable_note():
    rows = datasets.handbook()
    html = widgets.render_row(rows.iloc[0], columns={"question_id": "question_id", "retrieved": "retrieved", "gold": "gold"})
    assert "1. p01 ✓" in html and "2. p08<" in html
    unanswerable = rows[rows["gold"].map(len) == 0].iloc[0]
    html = widgets.render_row(unanswerable, columns={"question_id": "question_id", "retrieved": "retrieved", "gold": "gold"})
    assert "no gold: unanswerable" in html


def test_claims_and_verdicts_are_shown_and_text_is_escaped():
    row = pd.Series({
        "question_id": "q<1>",
        "answer": "<script>x</script>",
        "faithfulness_claims": ["A is B.", "C is D."],
        "faithfulness_verdicts": [True, False],
        "faithfulness_reasons": ["stated in [1]", "not in the context"],
    })
    html = widgets.render_row(row, columns={"question_id": "question_id", "answer": "answer"})
    assert "<script>" not in html and "&lt;script&gt;" in html and "q&lt;1&gt;" in html
    assert "✓ supported</span>: A is B." in html and "✗ unsupported</span>: C is D." in html
    assert "not in the context" in html


def test_errors_name_the_column():
    rows = datasets.handbook()
    with pytest.raises(MissingColumnError, match="rag.explore needs column 'topic'"):
        widgets.explore(rows, by="topic")
    with pytest.raises(ValueError, match=r"`sort_by` must be a numeric score column, one of \['human_faithful'\], but 'qtype'"):
        widgets.explore(rows, sort_by="qtype")


# ---- span gold: overlapping chunks, gold offsets, unanswerable --------------------------------------


SPAN_COLUMNS = {"question_id": "question_id", "retrieved": "retrieved", "retrieved_spans": "retrieved_spans",
                "gold_spans": "gold_spans"}


def _span_row(gold):
    return pd.Series({
        "question_id": "q1",
        "retrieved": ["d#2", "e#0", "d#1"],
        "retrieved_spans": [{"doc_id": "d", "start": 200, "end": 300}, {"doc_id": "e", "start": 0, "end": 100},
                            {"doc_id": "d", "start": 100, "end": 200}],
        "gold_spans": gold,
    })


def test_chunks_overlapping_gold_are_marked_with_the_gold_they_hold():
    gold = [{"doc_id": "d", "start": 150, "end": 260}, {"doc_id": "d", "start": 280, "end": 420},
            {"doc_id": "f", "start": 5, "end": 9, "grade": 2}]
    html = widgets.render_row(_span_row(gold), columns=SPAN_COLUMNS)
    assert "1. d#2 [200, 300) ✓ gold [200, 260) [280, 300)</span>" in html
    assert "2. e#0 [0, 100)</span>" in html and "style=''>2. e#0" in html  # no overlap: not marked
    assert "3. d#1 [100, 200) ✓ gold [150, 200)</span>" in html
    assert "<b>Gold spans</b>: d [150, 260) [280, 420); f [5, 9) grade 2 (3 spans, 254 characters)" in html
    assert "reached the model: 130 of 254 characters (partial)" in html  # 50 + 60 + 20


def test_gold_reached_complete_and_missed_and_unanswerable():
    html = widgets.render_row(_span_row([{"doc_id": "d", "start": 120, "end": 240}]), columns=SPAN_COLUMNS)
    assert "reached the model: 120 of 120 characters (complete)" in html
    html = widgets.render_row(_span_row([{"doc_id": "z", "start": 0, "end": 10}]), columns=SPAN_COLUMNS)
    assert "reached the model: 0 of 10 characters (missed)" in html and "✓" not in html
    html = widgets.render_row(_span_row([]), columns=SPAN_COLUMNS)
    assert "<b>Gold spans</b>: <i>none: unanswerable</i>" in html and "✓" not in html
    # gold spans with grade 0 do not count: still unanswerable
    html = widgets.render_row(_span_row([{"doc_id": "d", "start": 0, "end": 5, "grade": 0}]), columns=SPAN_COLUMNS)
    assert "none: unanswerable" in html
    # without retrieved spans the gold offsets are still shown, without the reached count
    html = widgets.render_row(_span_row([{"doc_id": "d", "start": 120, "end": 240}]),
                              columns={"retrieved": "retrieved", "gold_spans": "gold_spans"})
    assert "d [120, 240) (1 span, 120 characters)</p>" in html and "reached" not in html and "1. d#2</span>" in html
    # unreadable gold is said, not raised
    html = widgets.render_row(_span_row("oops"), columns=SPAN_COLUMNS)
    assert "cannot be read" in html


def test_spans_without_ids_are_labelled_by_document():
    row = _span_row([{"doc_id": "d", "start": 120, "end": 240}]).drop("retrieved")
    html = widgets.render_row(row, columns={"retrieved_spans": "retrieved_spans", "gold_spans": "gold_spans"})
    assert "1. d [200, 300) ✓ gold [200, 240)" in html and "3. d [100, 200) ✓ gold [120, 200)" in html


def test_explorer_on_clapnq_finds_the_span_columns():
    from raglab.boundaries import boundaries
    from raglab.datasets import clapnq

    run = clapnq.load_run(256).rag.retrieval(k=5)
    box = widgets.explore(run, sort_by="coverage@5")
    *_, status, view = parts(box)
    first = run.sort_values("coverage@5", kind="stable").iloc[0]
    assert str(first["question_id"]) in view.value and "<b>Gold spans</b>" in view.value
    # the view's reached count agrees with boundaries' gold_reached for every answerable question shown
    reached = boundaries(run, clapnq.load_chunks(256)).set_index("question_id")["gold_reached"]
    columns = dict(SPAN_COLUMNS)
    for _, row in run.iloc[:40].iterrows():
        html = widgets.render_row(row, columns=columns)
        expected = reached[row["question_id"]]
        if expected is None:
            assert "none: unanswerable" in html
        else:
            assert f"characters ({expected})" in html
    # a row whose retrieved chunk overlaps gold is marked; the accessor passes the span columns on
    partial = run[reached.reindex(run["question_id"]).eq("partial").to_numpy()].iloc[0]
    assert "✓ gold [" in widgets.render_row(partial, columns=columns)
    box = run.rag.explore(gold_spans="gold_spans", retrieved_spans="retrieved_spans")
    assert "<b>Gold spans</b>" in box.children[2].value
