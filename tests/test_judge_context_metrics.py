"""context_relevance and context_recall: added through the judge metric registry, scored by LexicalJudge and by
LLMJudge against the local server, compared with hand-worked oracles."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from raglab._registry import metric_info
from raglab.judge import METRICS, LexicalJudge, LLMJudge
from raglab.judge._base import REASON_NO_CONTEXT, REASON_NO_PASSAGES, REASON_NO_QUESTION, REASON_NO_REFERENCE
from raglab.judge._metrics import JUDGE_METRICS
from raglab.testing import LocalOpenAIServer

METRIC_NAMES = ["context_relevance", "context_recall"]


@pytest.fixture
def rows() -> pd.DataFrame:
    return pd.DataFrame({
        "question_id": ["q1", "q2", "q3", "q4", "q5"],
        "question": ["When did the Golden Gate Bridge open?", "What colour is the Eiffel Tower?",
                     "How tall is Mount Everest?", "Who wrote Hamlet?", None],
        "answer": ["It opened in 1937.", "It is brown.", "About 8849 metres.", "Shakespeare.", "Yes."],
        "context": [
            ["The Golden Gate Bridge opened in 1937.", "Bananas are yellow tropical fruit."],
            ["The Eiffel Tower is painted brown; its colour changes every few decades.", "Eiffel Tower colour brown."],
            [],
            None,
            ["Something."],
        ],
        "reference": ["The Golden Gate Bridge opened in 1937. Its towers are painted international orange.",
                      "The Eiffel Tower is painted brown.", "Mount Everest is 8849 metres tall.", None, "I don't know."],
    })


# Hand-worked: q1 passage 1 holds golden, gate, bridge (3 of the 4 question words) -> relevant,
# passage 2 none -> irrelevant; q2 both passages hold eiffel, tower, colour (3 of 3); q3 retrieved
# nothing; q4 has no context; q5 has no question.
# context_recall: q1's reference makes two claims, the context supports the opening date only;
# q2's one claim is in the context; q3's claim meets an empty context (unsupported: 0.0); q4 has no
# reference (nor context); q5's reference "I don't know." makes no claim.
ORACLE = {
    "context_relevance": [0.5, 1.0, math.nan, math.nan, math.nan],
    "context_relevance_verdicts": [[True, False], [True, True], None, None, None],
    "context_relevance_error": [None, None, f"context_relevance: {REASON_NO_PASSAGES}",
                                f"context_relevance: {REASON_NO_CONTEXT}", f"context_relevance: {REASON_NO_QUESTION}"],
    "context_recall": [0.5, 1.0, 0.0, math.nan, math.nan],
    "context_recall_verdicts": [[True, False], [True], [False], None, []],
}


def check_oracle(out: pd.DataFrame) -> None:
    for column, expected in ORACLE.items():
        got = out[column].tolist()
        if column in ("context_relevance", "context_recall"):
            assert [None if math.isnan(v) else v for v in got] == [None if math.isnan(v) else v for v in expected], column
        else:
            assert [None if not isinstance(v, (str, list)) and pd.isna(v) else v for v in got] == expected, column
    assert out.loc[3, "context_recall_error"] == f"context_recall: {REASON_NO_REFERENCE}"
    assert out.loc[4, "context_recall_error"].startswith("context_recall: the reference answer makes no factual claim")
    assert out.loc[0, "context_recall_claims"] == ["The Golden Gate Bridge opened in 1937.",
                                                   "Its towers are painted international orange."]


def test_registered_with_inputs_columns_and_direction():
    assert METRICS["context_relevance"] == ("question", "context") and METRICS["context_recall"] == ("reference", "context")
    assert JUDGE_METRICS["context_relevance"].columns == [
        "context_relevance", "context_relevance_verdicts", "context_relevance_reasons", "context_relevance_error"]
    for name in METRIC_NAMES:
        info = metric_info(name)
        assert info.known and info.higher_is_better is True and info.bounded


def test_lexical_judge_matches_the_oracle(rows):
    out = rows.rag.judge(LexicalJudge(), metrics=METRIC_NAMES, progress=False)
    check_oracle(out)


def test_llm_judge_on_the_local_server_matches_the_oracle(rows):
    with LocalOpenAIServer() as server:
        judge = LLMJudge("local", base_url=server.base_url, api_key="k", cache=None)
        out = rows.rag.judge(judge, metrics=METRIC_NAMES, progress=False)
        # one relevance call per passage (q1: 2, q2: 2); claims of q1, q2, q3, q5's references;
        # verification of q1 (batched) and q2 (one claim); q3's empty context needs no call
        assert server.count("raglab_passage_relevance") == 4
        assert server.count("raglab_claims") == 4
        assert server.count("raglab_verdicts") == 1 and server.count("raglab_verdict\"") == 0
        made = server.requests_received
    check_oracle(out)
    assert judge.estimate(rows, metrics=METRIC_NAMES).calls == made


def test_they_score_alongside_the_answer_metrics(rows):
    lexical = rows.rag.judge(LexicalJudge(), metrics=["faithfulness", *METRIC_NAMES], progress=False)
    with LocalOpenAIServer() as server:
        judge = LLMJudge("local", base_url=server.base_url, api_key="k", cache=None)
        llm = rows.rag.judge(judge, metrics=["faithfulness", *METRIC_NAMES], progress=False)
    pd.testing.assert_frame_equal(llm[["faithfulness", *METRIC_NAMES]], lexical[["faithfulness", *METRIC_NAMES]])
    assert llm["judge_error"].tolist() == lexical["judge_error"].tolist()


def test_a_missing_reference_column_is_named(rows):
    from raglab._errors import MissingColumnError

    with pytest.raises(MissingColumnError, match="reference"):
        rows.drop(columns="reference").rag.judge(LexicalJudge(), metrics=["context_recall"], progress=False)


def test_context_metrics_need_no_answer_column(rows):
    # judging retrieval alone: a table with questions, contexts and references but no answers yet
    no_answers = rows.drop(columns="answer")
    check_oracle(no_answers.rag.judge(LexicalJudge(), metrics=METRIC_NAMES, progress=False))
    with LocalOpenAIServer() as server:
        judge = LLMJudge("local", base_url=server.base_url, api_key="k", cache=None)
        check_oracle(no_answers.rag.judge(judge, metrics=METRIC_NAMES, progress=False))
        assert judge.estimate(no_answers, metrics=METRIC_NAMES).calls == server.requests_received
    from raglab._errors import MissingColumnError

    with pytest.raises(MissingColumnError, match="'answer'"):
        no_answers.rag.judge(LexicalJudge(), metrics=["faithfulness", *METRIC_NAMES], progress=False)


def test_judge_rows_takes_the_inputs_its_metrics_read():
    from raglab.judge import judge_rows

    out = judge_rows(LexicalJudge(), questions=["Who wrote Hamlet?"], contexts=[["Hamlet was written by Shakespeare."]],
                     metrics="context_relevance", progress=False)
    assert out["context_relevance"].tolist() == [1.0]
    with pytest.raises(ValueError, match="needs `answers`"):
        judge_rows(LexicalJudge(), contexts=[["x"]], metrics="faithfulness", progress=False)
    with pytest.raises(TypeError, match="needs the inputs"):
        judge_rows(LexicalJudge(), metrics="faithfulness", progress=False)
