"""The row explorer: filtering, sorting worst first, stepping, escaping."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from raglab import datasets, widgets
from raglab._errors import MissingColumnError


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
    assert position.value == 1 and status.value.startswith("1 of")
    slice_box.value = "yesno"
    n_yesno = int((rows["qtype"] == "yesno").sum())
    assert status.value == f"1 of {n_yesno} (qtype = yesno)"
    sort_box.value = "(row order)"
    assert rows[rows["qtype"] == "yesno"].iloc[0]["question"] in view.value


def test_slider_is_one_based_and_agrees_with_the_status():
    rows = datasets.handbook()
    box = widgets.explore(rows)
    *_, following, position, status, view = parts(box)
    assert (position.min, position.max, position.value) == (1, len(rows), 1)
    assert status.value == f"1 of {len(rows)}" and rows.iloc[0]["question"] in view.value
    following.click()
    assert position.value == 2 and status.value == f"2 of {len(rows)}" and rows.iloc[1]["question"] in view.value
    position.value = len(rows)  # the last row is reachable and the slider shows its number
    assert status.value == f"{len(rows)} of {len(rows)}" and rows.iloc[-1]["question"] in view.value
    following.click()  # clipped at the last row
    assert position.value == len(rows)


def _scored_rows():
    return pd.DataFrame({
        "question_id": ["q1", "q2", "q3", "q4"],
        "question": ["Q one?", "Q two?", "Q three?", "Q four?"],
        "answer": ["a1", "a2", "a3", "a4"],
        "reference": ["ref one", "ref two", None, "ref four"],
        "article": ["Normans", "Oxygen", "Normans", "Oxygen"],
        "answerable": [True, False, True, True],
        "faithfulness": [0.9, 0.1, 0.5, float("nan")],
        "latency_ms": [120.0, 900.0, 40.0, 300.0],
        "declined_rate": [0.0, 1.0, 0.0, 0.5],
        "judge_prompt_tokens": [812, 640, 700, 555],
        "judge_completion_tokens": [50.0, 60.0, 70.0, 80.0],
        "n_claims": [3, 1, 2, 4],
        "article_id": [7, 8, 7, 8],
    })


def _order(box):
    """The question ids in the order the explorer steps through them."""
    *_, following, position, status, view = parts(box)
    seen = []
    for _ in range(position.max):
        seen.append(next(q for q in ["q1", "q2", "q3", "q4"] if f">{q}</h4>" in view.value))
        following.click()
    return seen


def test_worst_first_follows_the_metric_direction():
    rows = _scored_rows()
    # higher is better: lowest first, NaN last
    assert _order(widgets.explore(rows, sort_by="faithfulness")) == ["q2", "q3", "q1", "q4"]
    # lower is better: highest (slowest) first
    box = widgets.explore(rows, sort_by="latency_ms")
    assert "sorted by latency_ms, worst (highest) first" in box.children[2].value
    assert _order(box) == ["q2", "q4", "q1", "q3"]
    # the dropdown says which way each score sorts, and changing it re-sorts from the first row
    _, sort_box, *_ = parts(box)
    labels = dict((v, k) for k, v in sort_box.options)
    assert labels["faithfulness"] == "faithfulness (lowest first)" and labels["latency_ms"] == "latency_ms (highest first)"
    sort_box.value = "faithfulness"
    assert ">q2</h4>" in box.children[2].value and "worst (lowest) first" in box.children[2].value


def test_counts_ids_and_directionless_scores_are_not_offered_for_sorting():
    rows = _scored_rows()
    box = widgets.explore(rows)
    _, sort_box, *_, view = parts(box)
    assert [v for _, v in sort_box.options] == ["(row order)", "faithfulness", "latency_ms"]
    # a score with no direction is shown but not offered, and the view says why
    assert "not offered for worst first: declined_rate (no direction:" in view.value
    assert "<b>declined_rate</b> 0.000" in view.value
    with pytest.raises(ValueError, match="'declined_rate' has no worst first: declining an unanswerable"):
        widgets.explore(rows, sort_by="declined_rate")
    with pytest.raises(ValueError, match="`sort_by` must be a numeric score column"):
        widgets.explore(rows, sort_by="judge_prompt_tokens")
    # token counts, counts and ids are still shown with the row, as they are
    for text in ["<b>judge_prompt_tokens</b> 812", "<b>n_claims</b> 3", "<b>article_id</b> 7",
                 "<b>judge_completion_tokens</b> 50.000"]:
        assert text in view.value


def test_reference_text_and_boolean_columns_are_shown():
    rows = _scored_rows()
    box = widgets.explore(rows, by="article")
    *_, following, _, _, view = parts(box)
    assert "<b>Reference</b>: ref one" in view.value and "<b>Answer</b>: a1" in view.value
    assert "<b>answerable</b> yes" in view.value and "<b>article</b> Normans" in view.value  # the slice too
    following.click()
    assert "<b>answerable</b> no" in view.value
    following.click()
    assert "<b>Reference</b>: <i>none</i>" in view.value
    # the handbook's reference answer is shown
    handbook = datasets.handbook()
    box = widgets.explore(handbook)
    assert f"<b>Reference</b>: {handbook.iloc[0]['reference']}" in box.children[2].value


def test_saved_notebook_shows_the_first_row_as_html():
    from IPython.core.formatters import DisplayFormatter

    rows = _scored_rows()
    box = widgets.explore(rows, sort_by="latency_ms")
    data, _ = DisplayFormatter().format(box)
    assert "application/vnd.jupyter.widget-view+json" in data  # live front ends still get the widget
    assert "VBox(children" not in data["text/html"]
    assert ">q2</h4>" in data["text/html"] and "Q two?" in data["text/html"] and "1 of 4" in data["text/html"]
    assert "sorted by latency_ms, worst (highest) first" in data["text/html"]
    widgets.explore(datasets.handbook())  # same class for every explorer
    assert type(widgets.explore(rows)) is type(box)


def test_gold_marks_read_the_cell_as_the_metrics_do():
    # numpy grades count (they used to be dropped), grade 0 is not gold, as in raglab.metrics
    row = pd.Series({"question_id": "q1", "retrieved": ["d1", "d2", "d3"], "gold": {"d1": np.int64(2), "d2": 0, "d3": np.float32(1)}})
    html = widgets.render_row(row, columns={"question_id": "question_id", "retrieved": "retrieved", "gold": "gold"})
    assert "1. d1 ✓" in html and "2. d2<" in html and "3. d3 ✓" in html and "unanswerable" not in html
    scored = pd.DataFrame([row]).rag.retrieval(k=3)
    assert scored["recall@3"].iloc[0] == 1.0 and scored["precision@3"].iloc[0] == pytest.approx(2 / 3)


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


# ---- column roles: set on the table, as an object, or as keywords -----------------------------------


def test_explorers_use_the_roles_set_on_the_table():
    from raglab._rowtable import Roles

    plain = datasets.handbook()
    renamed = plain.rename(columns={"answer": "response", "question_id": "qid", "retrieved": "ranked"})
    tagged = renamed.rag.with_roles(answer="response", question_id="qid", retrieved="ranked")
    expected = widgets.explore(plain).static_html()
    for box in (widgets.explore(tagged), tagged.rag.explore(),
                widgets.explore(renamed, roles=Roles(answer="response", question_id="qid", retrieved="ranked")),
                widgets.explore(renamed, answer="response", question_id="qid", retrieved="ranked")):
        html = box.static_html()
        assert plain["answer"].iloc[0] in html and f"{plain['gold'].iloc[0][0]} ✓" in html
        assert html.count("<b>Answer</b>") == expected.count("<b>Answer</b>") == 1
    with pytest.raises(MissingColumnError, match=r"rag\.explore needs column 'response'.*with_roles\(answer='response'\)"):
        plain.rag.with_roles(answer="response").rag.explore()
    with pytest.raises(TypeError, match="unexpected keyword argument 'sortby'"):
        widgets.explore(plain, sortby="human_faithful")
    cand = tagged.assign(response="CANDIDATE: " + tagged["response"])
    box = tagged.rag.explore_pair(cand, metric="human_faithful")
    assert "CANDIDATE: " + plain["answer"].iloc[0] in box.static_html()
    assert box.static_html() == widgets.explore_pair(renamed, cand, metric="human_faithful",
                                                     roles={"answer": "response", "question_id": "qid",
                                                            "retrieved": "ranked"}).static_html()


def test_alarms_walks_from_an_alarm_to_its_requests():
    import raglab  # noqa: F401
    from raglab.monitor import simulate_log

    log = simulate_log(200_000, days=40, drop_day=20, seed=1)
    found = log.rag.monitor("faithfulness", reference=0.88, by="topic", predictor="lexical_support",
                            guarantee="arl", arl=365)
    box = widgets.alarms(found)
    controls, navigation, view = box.children
    (picker,) = controls.children
    previous, following, position, status = navigation.children
    billing = next(value for label, value in picker.options if "[billing]" in label)
    picker.value = billing
    pm = found.post_mortem(billing)
    assert "Post-mortem of the alarm on faithfulness [billing]" in view.value
    assert status.value.startswith(f"1 of {len(pm.requests)} failing request(s) since {pm.started:%Y-%m-%d}")
    first, second = pm.requests.iloc[0], pm.requests.iloc[1]
    assert str(first["request_id"]) in view.value and "truth_faithful" not in view.value
    following.click()
    assert str(second["request_id"]) in view.value and position.value == 2
    quiet = simulate_log(20_000, days=10, drop_topic=None, seed=2).rag.monitor("faithfulness", reference=0.5)
    assert widgets.alarms(quiet).children[2].value.startswith("<p><i>No alarm")
    with pytest.raises(TypeError, match="alarms needs what raglab.monitor.monitor returns"):
        widgets.alarms(log)
