"""The boundary simulator: deterministic, exact gold, and the seed's mechanism with known truth."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

import raglab  # noqa: F401  (registers the accessor)
from raglab import chunks, simulate
from raglab.judge import LexicalJudge
from raglab.tripwires import content_words


@pytest.fixture(scope="module")
def corpus() -> simulate.SimulatedCorpus:
    return simulate.boundary_corpus(n_docs=30, seed=0)


@pytest.fixture(scope="module")
def table128(corpus: simulate.SimulatedCorpus) -> pd.DataFrame:
    return chunks.fixed(corpus.docs, size=128)


@pytest.fixture(scope="module")
def run128(corpus: simulate.SimulatedCorpus, table128: pd.DataFrame) -> pd.DataFrame:
    return simulate.simulate_run(corpus, table128, k=5, seed=0)


def test_deterministic_for_a_seed() -> None:
    a = simulate.boundary_corpus(n_docs=5, seed=3)
    b = simulate.boundary_corpus(n_docs=5, seed=3)
    assert a.docs == b.docs
    pd.testing.assert_frame_equal(a.questions, b.questions)
    assert simulate.boundary_corpus(n_docs=5, seed=4).docs != a.docs
    table = chunks.fixed(a.docs, size=128)
    pd.testing.assert_frame_equal(simulate.simulate_run(a, table, seed=1), simulate.simulate_run(a, table, seed=1))


def test_gold_spans_are_exact_and_unique(corpus: simulate.SimulatedCorpus) -> None:
    q = corpus.questions
    assert len(q) == 30 * 5 and q["question_id"].is_unique and q["term"].is_unique
    assert set(q["kind"]) == {"definition", "table"}
    for ref, spans in zip(q["reference"], q["gold_spans"]):
        (span,) = spans
        assert corpus.docs[span["doc_id"]][span["start"]:span["end"]] == ref
        assert 0 < len(ref) <= simulate.MAX_GOLD_CHARS
        assert sum(text.count(ref) for text in corpus.docs.values()) == 1


def test_invented_claims_use_words_no_document_uses(corpus: simulate.SimulatedCorpus) -> None:
    corpus_words = set().union(*(content_words(t) for t in corpus.docs.values()))
    pad_words = content_words(" ".join(simulate._PAD_VERBS + simulate._PAD_OBJECTS + simulate._PAD_TIMES))
    assert pad_words and not pad_words & corpus_words


def test_truth_cut_equals_boundaries(run128: pd.DataFrame, table128: pd.DataFrame) -> None:
    out = run128.rag.boundaries(table128)
    np.testing.assert_array_equal(run128["truth_cut"].to_numpy(), out["boundary_cut"].to_numpy())
    assert out["gold_reached"].tolist() == run128["truth_reached"].tolist()
    # The known rule: rank 1 holds the gold start, so gold is never missed; it is partial exactly when cut.
    assert (run128["truth_reached"] == np.where(run128["truth_cut"] == 1.0, "partial", "complete")).all()
    assert (run128["truth_padded"] == (run128["truth_cut"] == 1.0)).all()
    assert run128["retrieved"].map(len).eq(5).all()


@pytest.mark.parametrize("make", [lambda d: chunks.fixed(d, size=128, overlap=40),
                                  lambda d: chunks.fixed(d, size=30, unit="words"),
                                  lambda d: chunks.sentences(d, max_chars=150)])
def test_truth_cut_equals_boundaries_on_other_chunkers(corpus: simulate.SimulatedCorpus, make: Any) -> None:
    table = make(corpus.docs)
    run = simulate.simulate_run(corpus, table, k=4, seed=2)
    out = run.rag.boundaries(table)
    np.testing.assert_array_equal(run["truth_cut"].to_numpy(), out["boundary_cut"].to_numpy())
    assert out["gold_reached"].tolist() == run["truth_reached"].tolist()


def test_explorer_shows_the_cut_answer(run128: pd.DataFrame) -> None:
    from raglab.widgets import render_row

    row = run128[run128["truth_cut"] == 1.0].iloc[0]
    roles = ["question_id", "question", "answer", "retrieved", "gold_spans", "retrieved_spans", "context"]
    html = render_row(row, columns={r: r for r in roles})
    assert "(partial)" in html and "✓ gold" in html


def test_smaller_chunks_cut_more(corpus: simulate.SimulatedCorpus, run128: pd.DataFrame) -> None:
    run512 = simulate.simulate_run(corpus, chunks.fixed(corpus.docs, size=512), k=5, seed=0)
    assert run128["truth_cut"].mean() > run512["truth_cut"].mean() > 0


def test_faithfulness_lower_on_cut_rows(run128: pd.DataFrame) -> None:
    scored = run128.rag.judge(LexicalJudge(), metrics=["faithfulness"], progress=False)
    cut = scored["truth_cut"] == 1.0
    assert 0 < cut.sum() < len(scored)
    assert (scored.loc[~cut, "faithfulness"] == 1.0).all()
    assert scored.loc[cut, "faithfulness"].mean() < scored.loc[~cut, "faithfulness"].mean()
    assert (scored.loc[cut, "faithfulness"] < 1.0).all()


def test_expansion_restores_every_gold_span(
    corpus: simulate.SimulatedCorpus, run128: pd.DataFrame, table128: pd.DataFrame
) -> None:
    expanded = run128.rag.expand_neighbors(table128, window=1)
    assert (expanded.rag.boundaries(table128)["gold_reached"] == "complete").all()
    answered = simulate.simulate_answers(expanded, corpus, seed=0)
    assert (answered["answer"] == answered["reference"]).all() and not answered["truth_padded"].any()
    scored = answered.rag.judge(LexicalJudge(), metrics=["faithfulness"], progress=False)
    assert (scored["faithfulness"] == 1.0).all()


def test_missed_gold_is_refused(corpus: simulate.SimulatedCorpus) -> None:
    gold = corpus.questions.loc[0, "gold_spans"]
    other = corpus.questions.loc[1, "gold_spans"]
    rows = pd.DataFrame({"gold_spans": [gold], "retrieved_spans": [other]})
    out = simulate.simulate_answers(rows, corpus)
    assert out.loc[0, "truth_reached"] == "missed" and out.loc[0, "answer"] == "The context does not say."


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="distinct terms"):
        simulate.boundary_corpus(n_docs=100)
    with pytest.raises(ValueError, match="at least one gold item"):
        simulate.boundary_corpus(n_docs=1, definitions_per_doc=0, tables_per_doc=0)
    small = simulate.boundary_corpus(n_docs=1)
    with pytest.raises(TypeError, match="boundary_corpus"):
        simulate.simulate_run(small.docs, chunks.fixed(small.docs, size=64))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="chunk table"):
        simulate.simulate_run(small, pd.DataFrame({"x": [1]}))
