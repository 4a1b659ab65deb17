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
