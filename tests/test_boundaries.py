"""Chunk boundaries (raglab.boundaries): span geometry against a brute-force character-set oracle.

The oracle turns every span into the set of its (doc_id, character) pairs: a gold span is cut when it is
a subset of no chunk's set; gold_chunks counts the chunk sets it meets; gold_reached compares the gold
characters with the union of the retrieved chunks' characters.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raglab import RowTableError, chunks
from raglab._validation import called_as
from raglab.boundaries import BoundaryReport, boundaries, boundary_report, expand_neighbors
from raglab.retrieval import retrieval


def called(name, function, *args, **kwargs):
    """Call ``function`` as the operation ``name`` (as the accessor does), for errors that name it."""
    with called_as(name):
        return function(*args, **kwargs)

def chars(doc, start, end):
    return {(doc, c) for c in range(start, end)}


def oracle(gold_spans, table, retrieved_ids=None):
    """(boundary_cut, gold_chunks, gold_reached) of one question, from character sets."""
    gold = [g for g in gold_spans if g.get("grade", 1) > 0]
    if not gold:
        return math.nan, math.nan, None
    sets = {cid: chars(d, s, e) for cid, d, s, e in table[["chunk_id", "doc_id", "start", "end"]].itertuples(index=False)}
    cut = 0.0
    most = 0
    for g in gold:
        g_set = chars(g["doc_id"], g["start"], g["end"])
        if not any(g_set <= c for c in sets.values()):
            cut = 1.0
        most = max(most, sum(bool(g_set & c) for c in sets.values()))
    reached = None
    if retrieved_ids is not None:
        all_gold = set().union(*(chars(g["doc_id"], g["start"], g["end"]) for g in gold))
        seen = set().union(*(sets[c] for c in retrieved_ids)) if retrieved_ids else set()
        inside = len(all_gold & seen)
        reached = "complete" if inside == len(all_gold) else "partial" if inside else "missed"
    return cut, float(most), reached


@st.composite
def corpora(draw):
    """Random documents, a random chunk table over them (fixed windows or arbitrary spans), and questions."""
    n_docs = draw(st.integers(1, 3))
    lengths = {f"d{i}": draw(st.integers(1, 40)) for i in range(n_docs)}
    if draw(st.booleans()):
        size = draw(st.integers(1, 12))
        table = chunks.fixed(lengths, size, overlap=draw(st.integers(0, size - 1)))
    else:  # arbitrary chunks: gaps, overlaps, nesting
        spans = []
        for doc, n in lengths.items():
            for _ in range(draw(st.integers(1, 5))):
                s = draw(st.integers(0, n - 1))
                spans.append({"doc_id": doc, "start": s, "end": draw(st.integers(s + 1, n))})
        table = chunks.from_spans(spans)
    questions = []
    for _ in range(draw(st.integers(1, 6))):
        gold = []
        for _ in range(draw(st.integers(0, 3))):
            doc = draw(st.sampled_from(sorted(lengths)))
            s = draw(st.integers(0, lengths[doc] - 1))
            gold.append({"doc_id": doc, "start": s, "end": draw(st.integers(s + 1, lengths[doc])),
                         "grade": draw(st.sampled_from([1, 1, 2, 0]))})
        ids = table["chunk_id"].tolist()
        retrieved = draw(st.lists(st.sampled_from(ids), max_size=4, unique=True))
        questions.append((gold, retrieved))
    return table, questions


@settings(max_examples=300, deadline=None)
@given(corpus=corpora())
def test_geometry_matches_the_character_set_oracle(corpus):
    table, questions = corpus
    rows = pd.DataFrame({"question_id": [f"q{i}" for i in range(len(questions))],
                         "gold_spans": [g for g, _ in questions], "retrieved": [r for _, r in questions]})
    out = boundaries(rows, table)
    expected = [oracle(g, table, r) for g, r in questions]
    np.testing.assert_array_equal(out["boundary_cut"].to_numpy(), [e[0] for e in expected])
    np.testing.assert_array_equal(out["gold_chunks"].to_numpy(), [e[1] for e in expected])
    assert out["gold_reached"].tolist() == [e[2] for e in expected]
    # The same spans given as retrieved_spans (preferred over ids) give the same answer.
    lookup = table.set_index("chunk_id")
    rows["retrieved_spans"] = [[{"doc_id": lookup.loc[c, "doc_id"], "start": int(lookup.loc[c, "start"]),
                                 "end": int(lookup.loc[c, "end"])} for c in r] for _, r in questions]
    assert boundaries(rows.drop(columns="retrieved"), table)["gold_reached"].tolist() == [e[2] for e in expected]


def _rows(gold, retrieved=None):
    rows = pd.DataFrame({"question_id": [f"q{i}" for i in range(len(gold))], "gold_spans": gold})
    if retrieved is not None:
        rows["retrieved"] = retrieved
    return rows


def span(start, end, doc="d", **extra):
    return {"doc_id": doc, "start": start, "end": end, **extra}


def test_hand_cases_edges_overlaps_several_spans_empty_and_document_ends():
    table = chunks.fixed({"d": 300}, 100)                   # [0,100) [100,200) [200,300)
    gold = [
        [span(100, 200)],                                   # exactly a chunk: not cut, 1 chunk
        [span(99, 200)],                                    # one character over the edge: cut, 2 chunks
        [span(100, 201)],                                   # one character past the other edge: cut
        [span(10, 20), span(150, 250)],                     # several spans, one cut
        [span(290, 300)],                                   # at the document's end
        [span(0, 300)],                                     # the whole document: 3 chunks
        [],                                                 # unanswerable
        [span(10, 20, grade=0)],                            # only grade 0: unanswerable
    ]
    out = boundaries(_rows(gold), table)
    assert out["boundary_cut"].tolist()[:6] == [0.0, 1.0, 1.0, 1.0, 0.0, 1.0]
    assert out["gold_chunks"].tolist()[:6] == [1.0, 2.0, 2.0, 2.0, 1.0, 3.0]
    assert out[["boundary_cut", "gold_chunks"]].iloc[6:].isna().all().all()
    assert "gold_reached" not in out
    record = out.attrs["raglab"]["boundaries"]
    assert (record["n_unanswerable"], record["n_cut"], record["n_gold_spans"], record["n_gold_spans_cut"]) == (2, 4, 7, 4)
    # Overlapping windows: a span inside the shared region is in two chunks but cut by neither.
    overlapping = chunks.fixed({"d": 300}, 100, overlap=50)  # [0,100) [50,150) [100,200) ...
    out = boundaries(_rows([[span(60, 90)], [span(90, 140)], [span(90, 160)]]), overlapping)
    assert out["boundary_cut"].tolist() == [0.0, 0.0, 1.0]
    assert out["gold_chunks"].tolist() == [2.0, 3.0, 4.0]  # [90,140) meets [0,100) [50,150) [100,200)


def test_gold_reached_counts_characters_not_chunks():
    table = chunks.fixed({"d": 300, "e": 50}, 100)
    gold = [[span(90, 110)], [span(90, 110)], [span(90, 110)], [span(0, 10, doc="e"), span(0, 10)], [span(5, 6)]]
    retrieved = [["d#0", "d#1"], ["d#1"], ["d#2", "e#0"], ["e#0"], []]
    out = boundaries(_rows(gold, retrieved), table)
    assert out["gold_reached"].tolist() == ["complete", "partial", "missed", "partial", "missed"]
    assert out.attrs["raglab"]["boundaries"]["gold_reached_counts"] == {"complete": 1, "partial": 2, "missed": 2}


def test_boundaries_leaves_the_input_alone_and_names_columns():
    table = chunks.fixed({"d": 100}, 50)
    rows = _rows([[span(0, 10)]], [["d#0"]]).rename(columns={"gold_spans": "gs", "retrieved": "ctx"})
    before = rows.copy()
    out = called("rag.boundaries", boundaries, rows, table, gold_spans="gs", retrieved="ctx")
    pd.testing.assert_frame_equal(rows, before)
    assert out["gold_reached"].tolist() == ["complete"]
    with pytest.raises(RowTableError, match=r"rag.boundaries needs column 'gold_spans'.*gold_spans='your_column'"):
        called("rag.boundaries", boundaries, rows, table)


def test_boundaries_errors_and_warnings():
    table = chunks.fixed({"d": 100}, 50)
    with pytest.raises(RowTableError, match=r"column 'retrieved' \(question_id 'q0'\) holds chunk id\(s\) \['x#9'\]"):
        boundaries(_rows([[span(0, 10)]], [["x#9"]]), table)
    with pytest.raises(RowTableError, match=r"column 'retrieved' \(question_id 'q0'\) must hold a list.*use \[\]"):
        boundaries(_rows([[span(0, 10)]], [None]), table)
    with pytest.raises(RowTableError, match=r"column 'gold_spans' \(question_id 'q0'\).*empty"):
        boundaries(_rows([[span(10, 10)]]), table)
    with pytest.raises(RowTableError, match=r"`chunks` must be a chunk table.*lacks \['end'\].*from_spans"):
        boundaries(_rows([[span(0, 10)]]), table.drop(columns="end"))
    with pytest.raises(RowTableError, match="chunk ids must be unique"):
        boundaries(_rows([[span(0, 10)]]), pd.concat([table, table]))
    with pytest.warns(UserWarning, match=r"1 document\(s\) the chunk table does not have.*\['z'\]"):
        out = boundaries(_rows([[span(0, 10, doc="z")]]), table)
    assert out[["boundary_cut", "gold_chunks"]].values.tolist() == [[1.0, 0.0]]
    with pytest.warns(UserWarning, match=r"replaces existing column\(s\) \['boundary_cut'\]"):
        boundaries(_rows([[span(0, 10)]]).assign(boundary_cut=3), table)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = boundaries(boundaries(_rows([[span(0, 10)]]), table), table)  # its own columns: no warning
    assert again["boundary_cut"].tolist() == [0.0]


def test_rechunking_rescores_the_same_gold_without_relabelling():
    """The same gold spans against two chunkings: retrieval() and boundaries() agree with the oracle on both."""
    rng = np.random.default_rng(13)
    lengths = {f"d{i}": int(n) for i, n in enumerate(rng.integers(200, 600, size=6))}
    gold = []
    for _ in range(40):
        doc = f"d{rng.integers(6)}"
        s = int(rng.integers(0, lengths[doc] - 30))
        gold.append([span(s, s + int(rng.integers(5, 30)), doc=doc)])
    for size in (64, 256):
        table = chunks.fixed(lengths, size, overlap=size // 8)
        ids = table["chunk_id"].to_numpy()
        retrieved = [list(rng.choice(ids, size=3, replace=False)) for _ in gold]
        lookup = table.set_index("chunk_id")
        rows = _rows(gold, retrieved)
        rows["retrieved_spans"] = [[{"doc_id": lookup.loc[c, "doc_id"], "start": int(lookup.loc[c, "start"]),
                                     "end": int(lookup.loc[c, "end"])} for c in r] for r in retrieved]
        scored = boundaries(retrieval(rows, k=3), table)
        for i, (g, r) in enumerate(zip(gold, retrieved)):
            cut, most, reached = oracle(g, table, r)
            assert (scored["boundary_cut"].iloc[i], scored["gold_chunks"].iloc[i]) == (cut, most)
            assert scored["gold_reached"].iloc[i] == reached
            coverage = scored["coverage@3"].iloc[i]
            assert (coverage == 1.0) == (reached == "complete") and (coverage == 0.0) == (reached == "missed")


# --------------------------------------------------------------------------------------------------
# expand_neighbors
# --------------------------------------------------------------------------------------------------


def test_expand_order_dedup_and_document_ends():
    table = chunks.fixed({"a": 500, "b": 200}, 100)        # a#0..a#4, b#0..b#1
    rows = pd.DataFrame({"question_id": ["q1", "q2", "q3", "q4"],
                         "retrieved": [["a#2", "b#0", "a#3"], ["a#0"], ["a#4", "a#3"], []]})
    out = expand_neighbors(rows, table, window=1)
    assert out["retrieved"].tolist() == [
        ["a#2", "a#1", "a#3", "b#0", "b#1", "a#4"],         # a#3 kept at its first place (as a#2's neighbour)
        ["a#0", "a#1"],                                       # no a#-1 at the document's start
        ["a#4", "a#3", "a#2"],                                # no a#5 at the end; a#3 already in
        [],
    ]
    assert out["retrieved_spans"].iloc[1] == [{"doc_id": "a", "start": 0, "end": 100},
                                               {"doc_id": "a", "start": 100, "end": 200}]
    assert out["context_chars"].tolist() == [600, 200, 300, 0]
    wide = expand_neighbors(rows, table, window=2)
    assert wide["retrieved"].iloc[0] == ["a#2", "a#0", "a#1", "a#3", "a#4", "b#0", "b#1"]
    same = expand_neighbors(rows, table, window=0)
    assert same["retrieved"].tolist() == rows["retrieved"].tolist()
    assert same["context_chars"].tolist() == [300, 100, 200, 0]
    record = out.attrs["raglab"]["expand_neighbors"]
    assert record["window"] == 1 and record["mean_chunks_before"] == 6 / 4 and record["mean_chunks_after"] == 11 / 4
    assert record["mean_context_chars_before"] == 600 / 4 and record["mean_context_chars_after"] == 1100 / 4
    assert rows["retrieved"].iloc[0] == ["a#2", "b#0", "a#3"]  # the input is unchanged


def test_context_chars_count_overlaps_once():
    table = chunks.fixed({"a": 250}, 100, overlap=50)      # [0,100) [50,150) [100,200) [150,250)
    rows = pd.DataFrame({"retrieved": [["a#0"], ["a#1"], ["a#3", "a#0"]]})
    out = expand_neighbors(rows, table)
    assert out["retrieved"].tolist() == [["a#0", "a#1"], ["a#1", "a#0", "a#2"], ["a#3", "a#2", "a#0", "a#1"]]
    assert out["context_chars"].tolist() == [150, 200, 250]


def test_expand_from_spans_only_and_errors():
    table = chunks.fixed({"a": 300}, 100)
    rows = pd.DataFrame({"question_id": ["q1"], "retrieved_spans": [[span(100, 200, doc="a")]]})
    out = expand_neighbors(rows, table)
    assert out["retrieved"].tolist() == [["a#1", "a#0", "a#2"]] and out["context_chars"].tolist() == [300]
    with pytest.raises(RowTableError, match=r"question_id 'q1'\) holds span .*'start': 100, 'end': 150.*no chunk"):
        expand_neighbors(rows.assign(retrieved_spans=[[span(100, 150, doc="a")]]), table)
    with pytest.raises(RowTableError, match=r"rag.expand_neighbors needs column 'retrieved'.*or 'retrieved_spans'"):
        called("rag.expand_neighbors", expand_neighbors, rows.drop(columns="retrieved_spans"), table)
    with pytest.raises(ValueError, match="`window` must be an integer >= 0"):
        expand_neighbors(rows, table, window=-1)
    with pytest.raises(RowTableError, match=r"chunk id\(s\) \['b#0'\]"):
        expand_neighbors(pd.DataFrame({"retrieved": [["b#0"]]}), table)


def test_expansion_drops_a_gold_reached_that_described_the_old_lists():
    table = chunks.fixed({"a": 500}, 100)
    rows = pd.DataFrame({"question_id": ["q1"], "gold_spans": [[span(180, 230, doc="a")]], "retrieved": [["a#2"]]})
    labelled = boundaries(rows, table)
    assert labelled["gold_reached"].tolist() == ["partial"]
    with pytest.warns(UserWarning, match=r"dropped \['gold_reached'\].*before expansion"):
        expanded = expand_neighbors(labelled, table)
    assert "gold_reached" not in expanded and expanded["boundary_cut"].tolist() == [1.0]
    record = expanded.attrs["raglab"]["boundaries"]
    assert record["columns"] == ["boundary_cut", "gold_chunks"] and "gold_reached_counts" not in record
    # the oracle on the expanded lists: a#1..a#3 hold all of [180, 230)
    assert boundaries(expanded, table)["gold_reached"].tolist() == [oracle([span(180, 230, doc="a")], table,
                                                                           expanded["retrieved"].iloc[0])[2]] == ["complete"]


def test_expanded_rows_rescore_span_gold_without_relabelling():
    table = chunks.fixed({"a": 500}, 100)
    gold = [[span(180, 230, doc="a")], [span(10, 20, doc="a")], []]
    lookup = table.set_index("chunk_id")
    retrieved = [["a#2"], ["a#4"], ["a#0"]]
    rows = pd.DataFrame({"question_id": ["q1", "q2", "q3"], "gold_spans": gold, "retrieved": retrieved,
                         "retrieved_spans": [[{"doc_id": "a", "start": int(lookup.loc[c, "start"]),
                                               "end": int(lookup.loc[c, "end"])} for c in r] for r in retrieved]})
    before = retrieval(rows, k=1)
    with pytest.warns(UserWarning, match=r"dropped \[.*'coverage@1'.*\].*scored the lists before expansion"):
        expanded = expand_neighbors(before, table)
    assert "coverage@1" not in expanded and "retrieval" not in expanded.attrs["raglab"]
    after = retrieval(expanded, k=3)
    # q1: gold [180, 230) half in a#1, half in a#2; a#2 alone covers 30 of 50, a#1..a#3 all of it.
    assert before["coverage@1"].iloc[0] == 30 / 50 and after["coverage@3"].iloc[0] == 1.0
    assert before["recall@1"].iloc[1] == 0.0 and after["recall@3"].iloc[1] == 0.0   # a#3..a#5: still missed
    assert math.isnan(after["recall@3"].iloc[2])
    reached = boundaries(expanded, table)["gold_reached"].tolist()
    assert reached == ["complete", "missed", None]
    assert [oracle(g, table, r)[2] for g, r in zip(gold, expanded["retrieved"])] == reached


# --------------------------------------------------------------------------------------------------
# boundary_report
# --------------------------------------------------------------------------------------------------


def _runs():
    table = chunks.fixed({"d": 2000}, 100)
    rng = np.random.default_rng(3)
    gold, retrieved = [], []
    for i in range(20):
        cut = i % 2 == 1
        s = 100 * i + (80 if cut else 20)
        gold.append([span(s, s + 40)])
        retrieved.append([f"d#{i}"])
    base = pd.DataFrame({"question_id": [f"q{i:02d}" for i in range(20)], "gold_spans": gold, "retrieved": retrieved,
                         "faithfulness": np.where(np.arange(20) % 2 == 1, 0.0, 1.0)})
    base.loc[20] = ["q20", [], [], np.nan]
    cand = base.assign(faithfulness=np.r_[np.ones(20), np.nan]).sample(frac=1, random_state=1)
    cand.loc[cand["question_id"] == "q02", "faithfulness"] = 0.5
    return table, base, cand, rng


def test_boundary_report_splits_and_explains():
    table, base, cand, _ = _runs()
    report = boundary_report(base, cand, "faithfulness", table, n_resamples=500)
    assert isinstance(report, BoundaryReport)
    t = report.table
    assert t[["split", "slice", "n", "base", "cand"]].values.tolist() == [
        ["boundary_status", "overall", 20, 0.5, 0.975],
        ["boundary_status", "cut", 10, 0.0, 1.0],
        ["boundary_status", "not cut", 10, 1.0, 0.95],
    ]
    assert report.settings["splits"] == ["boundary_status"] and "regression to the mean" in \
        report.settings["not_split_by"]["gold_reached"]
    assert (t["low"] <= t["diff"]).all() and (t["diff"] <= t["high"]).all()
    rows = report.rows
    assert rows.columns.tolist() == ["question_id", "metric", "boundary_status", "gold_reached", "gold_chunks",
                                     "base", "cand", "diff"]
    assert len(rows) == 11 and rows["boundary_status"].iloc[:10].eq("cut").all()
    assert rows["question_id"].iloc[0] == "q01" and rows.iloc[-1].tolist() == [
        "q02", "faithfulness", "not cut", "complete", 1.0, 1.0, 0.5, -0.5]
    assert report.settings["n_cut"] == 10 and report.settings["n_unanswerable"] == 1
    assert "Boundary report: faithfulness" in repr(report) and report.to_dict()["settings"]["metrics"] == ["faithfulness"]
    assert report.to_frame() is report.table


def test_boundary_report_shows_unanswerable_questions_a_metric_scores():
    table, base, cand, _ = _runs()
    base.loc[20, "faithfulness"] = 1.0
    cand.loc[cand["question_id"] == "q20", "faithfulness"] = 0.0
    t = boundary_report(base, cand, "faithfulness", table, n_resamples=200).table
    assert t[["split", "slice", "n"]].values.tolist() == [
        ["boundary_status", "overall", 21], ["boundary_status", "cut", 10], ["boundary_status", "not cut", 10],
        ["boundary_status", "unanswerable", 1]]


def test_boundary_report_does_not_split_by_the_baselines_outcome():
    # Two runs with the SAME quality: each question's gold is reached with probability 0.5, independently per run.
    # Split by the baseline's gold_reached, the candidate looks better where the baseline missed and worse where it
    # reached (regression to the mean). The report refuses that split; boundary_status, shared, shows no effect.
    rng = np.random.default_rng(7)
    n = 400
    table = chunks.fixed({"d": 100 * n}, 100)
    gold = [[span(100 * i + 10, 100 * i + 50)] for i in range(n)]
    base_hit, cand_hit = rng.random(n) < 0.5, rng.random(n) < 0.5
    base = pd.DataFrame({"question_id": [f"q{i}" for i in range(n)], "gold_spans": gold,
                         "retrieved": [[f"d#{i}"] if hit else [f"d#{(i + 1) % n}"] for i, hit in enumerate(base_hit)],
                         "recall@1": base_hit.astype(float)})
    cand = base.assign(**{"recall@1": cand_hit.astype(float)})
    reached = base.rag.boundaries(table)["gold_reached"]
    # what the old split showed: a large "effect" in both directions from noise alone
    missed_gain = cand_hit[reached == "missed"].mean() - base_hit[reached == "missed"].mean()
    complete_gain = cand_hit[reached == "complete"].mean() - base_hit[reached == "complete"].mean()
    assert missed_gain > 0.4 and complete_gain < -0.4
    report = boundary_report(base, cand, ["recall@1"], table, n_resamples=300)
    assert set(report.table["split"]) == {"boundary_status"}
    assert report.rows["gold_reached"].isin(["complete", "missed"]).all()  # kept to read a row, not to split by


def test_boundary_report_without_retrieved_and_errors():
    table, base, cand, _ = _runs()
    report = called("rag.boundary_report", boundary_report, base.drop(columns="retrieved"), cand, ["faithfulness"],
                    table, n_resamples=200)
    assert set(report.table["split"]) == {"boundary_status"} and "gold_reached" not in report.rows
    with pytest.raises(RowTableError, match=r"rag.boundary_report: metric column\(s\) \['hit@5'\] are not in base"):
        called("rag.boundary_report", boundary_report, base, cand, ["hit@5"], table)
    with pytest.raises(ValueError, match="at least one score column"):
        boundary_report(base, cand, [], table)
    with pytest.raises(RowTableError, match="no question of base has gold spans"):
        boundary_report(base.assign(gold_spans=[[]] * len(base)), cand, ["faithfulness"], table)
    with pytest.raises(RowTableError, match="only in base"):
        boundary_report(base, cand.iloc[1:], ["faithfulness"], table)


def test_prompt_chars_counts_each_span_as_sent():
    from raglab.boundaries import prompt_chars

    # two overlapping spans of one document: 10 + 15 characters are sent (the overlap twice),
    # while the union that context_chars measures is 20
    rows = pd.DataFrame({"question_id": ["q1", "q2"], "retrieved_spans": [
        [{"doc_id": "a", "start": 0, "end": 10}, {"doc_id": "a", "start": 5, "end": 20}], []]}, index=[7, 9])
    got = prompt_chars(rows)
    assert got.tolist() == [25, 0] and got.index.tolist() == [7, 9] and got.name == "prompt_chars"
    with pytest.raises(RowTableError, match="'q2'"):
        prompt_chars(rows.assign(retrieved_spans=[[], None]))


def test_prompt_chars_on_the_bundled_expanded_run_matches_a_plain_sum():
    from raglab import datasets
    from raglab.boundaries import prompt_chars

    run = datasets.squad_run("chunk500_rerank_expand")
    oracle = [sum(int(s["end"]) - int(s["start"]) for s in spans) for spans in run["retrieved_spans"]]
    assert prompt_chars(run).tolist() == oracle
    assert prompt_chars(run).mean() / prompt_chars(datasets.squad_run("chunk1000_bm25")).mean() > 1.4  # the +48% of 03


def test_the_chunk_holding_each_span_start_matches_a_brute_force_search():
    from raglab.boundaries import _chunk_table, _geometry

    rng = np.random.default_rng(3)
    for _ in range(200):
        n_chunks = int(rng.integers(1, 8))
        starts = np.sort(rng.integers(0, 60, n_chunks))
        table = _chunk_table(pd.DataFrame({"doc_id": "d", "start": starts,
                                           "end": starts + rng.integers(1, 30, n_chunks)}), "test")
        g_start = rng.integers(0, 80, 10)
        g_end = g_start + rng.integers(1, 20, 10)
        _, _, holder = _geometry(table, np.array(["d"] * 10, dtype=object), g_start, g_end)
        s, e = table["start"].to_numpy(), table["end"].to_numpy()
        for i, first in enumerate(g_start):
            holding = np.flatnonzero((s <= first) & (first < e))
            expected = holding[np.argmax(e[holding])] if len(holding) else -1  # furthest-reaching, first of equals
            assert holder[i] == expected


def test_a_window_wider_than_the_document_stops_at_its_ends():
    # issue 19: window=10**9 on a 3-chunk document walked a billion positions (memory exhausted)
    table = chunks.fixed({"a": 300, "b": 200}, size=100)
    rows = pd.DataFrame({"question_id": ["q1", "q2"], "retrieved": [["a#1"], ["b#0", "a#2"]]})
    wide = expand_neighbors(rows, table, window=10**9)
    assert wide["retrieved"].tolist() == [["a#1", "a#0", "a#2"], ["b#0", "b#1", "a#2", "a#0", "a#1"]]
    assert wide["context_chars"].tolist() == [300, 500]
    assert wide["retrieved"].tolist() == expand_neighbors(rows, table, window=2)["retrieved"].tolist()
