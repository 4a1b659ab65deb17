"""Regression tests for what a review of the issue-18 work found: comparing runs scored under different
span rules, and depth_gap on context built by raglab's own neighbour expansion."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pandas as pd
import pytest

import raglab  # noqa: F401  (registers df.rag)
from raglab import ConventionMismatchWarning, RowTableError, chunks
from raglab.boundaries import expand_neighbors


def _span_rows(n: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    gold = [[{"doc_id": "d", "start": 100, "end": 200}] for _ in range(n)]
    ret = [[{"doc_id": "d", "start": int(s), "end": int(s) + 150}] for s in rng.integers(0, 120, n)]
    return pd.DataFrame({"question_id": [f"q{i}" for i in range(n)], "gold_spans": gold, "retrieved_spans": ret,
                         "retrieved": [["x"]] * n})


def _warnings_of(call) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [w for w in caught if issubclass(w.category, ConventionMismatchWarning)]


def test_runs_under_different_span_rules_warn_briefly_naming_the_rule():
    rows = _span_rows()
    old = rows.rag.retrieval(k=1, span_rule="per_chunk")
    new = rows.rag.retrieval(k=1)
    caught = _warnings_of(lambda: old.rag.compare(new, metrics=["recall@1"]))
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "per_chunk" in message and "union" in message and "Re-score both runs" in message
    assert len(message) < 600  # was 1,614 characters: every description of both records


def test_a_record_that_differs_only_in_its_descriptions_does_not_warn():
    new = _span_rows().rag.retrieval(k=1)
    reworded = new.copy()
    reworded.attrs = copy.deepcopy(new.attrs)
    reworded.attrs["raglab"]["retrieval"]["span_rule"]["recall"] += " (reworded)"
    assert _warnings_of(lambda: new.rag.compare(reworded, metrics=["recall@1"])) == []


def _expanded_rows() -> pd.DataFrame:
    table = chunks.fixed({"a": 1000}, size=100)
    rows = pd.DataFrame({"question_id": ["q1"], "retrieved": [["a#2"]], "candidates": [["a#2", "a#7", "a#8"]],
                         "gold_spans": [[{"doc_id": "a", "start": 150, "end": 250}]]})
    expanded = expand_neighbors(rows, table, window=1)
    spans = {c: {"doc_id": d, "start": int(s), "end": int(e)}
             for c, d, s, e in table[["chunk_id", "doc_id", "start", "end"]].itertuples(index=False)}
    expanded["candidate_spans"] = expanded["candidates"].map(lambda ids: [spans[i] for i in ids])
    return expanded


def test_depth_gap_takes_context_from_raglabs_own_neighbour_expansion():
    expanded = _expanded_rows()
    assert "a#1" in expanded.loc[0, "retrieved"]  # a neighbour that is not a candidate
    with pytest.warns(UserWarning, match="added by expand_neighbors"):
        gap = expanded.rag.depth_gap(candidate_spans="candidate_spans")
    assert len(gap)


def test_depth_gap_still_refuses_context_outside_the_candidates_without_an_expansion():
    expanded = _expanded_rows()
    expanded.attrs = copy.deepcopy(expanded.attrs)
    del expanded.attrs["raglab"]["expand_neighbors"]
    with pytest.raises(RowTableError, match="not among the candidates"):
        expanded.rag.depth_gap(candidate_spans="candidate_spans")


def test_clustered_sizing_never_takes_the_exact_unclustered_rule_even_at_design_effect_1():
    # The gate resamples whole clusters whenever units are given; a pilot's design effect of 1 (it is floored
    # there) must not switch the row to Tango's unclustered interval, which the gate would not run.
    from raglab import sizing

    plain = sizing.questions_for_release(0.02, discordance=0.1)
    clustered = sizing.questions_for_release(0.02, discordance=0.1, design_effect=1.0, cluster_size=10)
    assert plain.assumptions["method"].startswith("exact")
    assert not clustered.assumptions["method"].startswith("exact")
    assert all("cluster" in how for how in clustered.assumptions["interval"].values())
