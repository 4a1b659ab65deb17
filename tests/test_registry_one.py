"""The one metric registry: retrieval, judge and declared metrics in one place, judge calls as data.

A judge metric and its label call registered after import are seen by everything derived from them
(prompt, JSON schema, user message, ``metric_info``, ``LexicalJudge``, ``LLMJudge`` against the local
test server); ``metric_info`` knows the built-in judge metrics without importing :mod:`raglab.judge`.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pandas as pd
import pytest

from raglab._registry import (
    Declaration,
    JudgeMetric,
    declarations,
    metric_info,
    register_judge_metric,
    register_metric,
    specs,
    unregister_metric,
)

YEAR = re.compile(r"\b1[0-9]{3}\b|\b20[0-9]{2}\b")


def _mentions_year(inputs, threshold, stop_words):
    found = YEAR.findall(inputs.get("answer") or "")
    return bool(found), f"years: {found}"


@pytest.fixture
def mentions_year():
    pytest.importorskip("pydantic")
    from raglab.judge._metrics import LABEL_CALLS, LabelCall, register_label_call

    register_label_call(LabelCall("mentions_year", "raglab_mentions_year", "Does the ANSWER name a year?",
                                  ("answer",), ("yes", "no"), "One sentence on the years named.", _mentions_year))
    register_judge_metric(JudgeMetric("mentions_year", ("answer",), "label", "the answer names a year",
                                      binary=True, call="mentions_year", positive="yes"))
    yield "mentions_year"
    unregister_metric("mentions_year")
    del LABEL_CALLS["mentions_year"]


ROWS = pd.DataFrame({"question_id": ["q1", "q2", "q3"], "question": ["When?", "Who?", "When?"],
                     "answer": ["It opened in 1937.", "Shakespeare.", ""]})
EXPECTED = [1.0, 0.0, None]  # q3: an empty answer is unscored


def _scores(frame: pd.DataFrame) -> list[float | None]:
    return [None if pd.isna(v) else float(v) for v in frame["mentions_year"]]


def test_a_judge_metric_registered_after_import_reaches_prompts_schemas_and_metric_info(mentions_year):
    from raglab.judge import METRICS
    from raglab.judge._prompts import PROMPTS, prompt_hashes, user_message
    from raglab.judge._schemas import SCHEMAS, json_schema, schema_hash

    schema = json_schema(mentions_year)
    assert schema["required"] == ["reason", "verdict"] and schema["properties"]["verdict"]["enum"] == ["yes", "no"]
    assert SCHEMAS[mentions_year][0] == "raglab_mentions_year"
    assert PROMPTS[mentions_year].startswith("Does the ANSWER name a year?") and mentions_year in prompt_hashes()
    assert user_message(mentions_year, {"answer": "In <b>1937</b>"}) == '<answer>\n"In \\u003cb\\u003e1937\\u003c/b\\u003e"\n</answer>'
    assert METRICS[mentions_year] == ("answer",)
    schema_hash()  # every schema, the new one included, serialises
    info = metric_info(mentions_year)
    assert (info.kind, info.known, info.binary, info.bounded, info.higher_is_better) == ("judge", True, True, True, True)


def test_a_judge_metric_registered_after_import_is_scored_by_both_judges(mentions_year):
    from raglab.judge import LexicalJudge, LLMJudge
    from raglab.testing import LocalOpenAIServer

    lexical = ROWS.rag.judge(LexicalJudge(), metrics=[mentions_year], progress=False)
    assert _scores(lexical) == EXPECTED
    assert lexical.loc[0, "mentions_year_reason"] == "years: ['1937']"
    with LocalOpenAIServer() as server:
        judge = LLMJudge("local", base_url=server.base_url, api_key="k", cache=None)
        llm = ROWS.rag.judge(judge, metrics=[mentions_year], progress=False)
        assert server.count("raglab_mentions_year") == 2
    assert _scores(llm) == EXPECTED


def test_registering_a_label_call_changes_the_fingerprint():
    pytest.importorskip("openai")
    from raglab.judge import LLMJudge
    from raglab.judge._metrics import LABEL_CALLS, LabelCall, register_label_call

    before = LLMJudge("m", api_key="none", base_url="http://127.0.0.1:9/v1", cache=None).fingerprint
    register_label_call(LabelCall("extra", "raglab_extra", "Extra?", ("answer",), ("a", "b"), "Why.", _mentions_year))
    try:
        assert LLMJudge("m", api_key="none", base_url="http://127.0.0.1:9/v1", cache=None).fingerprint != before
    finally:
        del LABEL_CALLS["extra"]
    assert LLMJudge("m", api_key="none", base_url="http://127.0.0.1:9/v1", cache=None).fingerprint == before


def test_metric_info_knows_judge_metrics_without_importing_the_judge():
    code = ("import sys; from raglab._registry import metric_info; "
            "infos = [metric_info(n) for n in ('faithfulness', 'context_relevance', 'context_recall', 'declined')]; "
            "assert all(i.known and i.kind == 'judge' and i.bounded for i in infos), infos; "
            "assert not infos[3].has_direction; "
            "assert 'raglab.judge' not in sys.modules, sorted(m for m in sys.modules if m.startswith('raglab.judge'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_every_kind_is_in_the_one_registry():
    import raglab.metrics

    kinds = {name: found.kind for name, found in declarations().items()}
    assert kinds["recall"] == "retrieval" and kinds["faithfulness"] == "judge" and kinds["latency"] == "declared"
    assert list(specs("retrieval")) == list(raglab.metrics.METRICS)
    assert specs("retrieval")["map"] is raglab.metrics.METRICS["map"] and not raglab.metrics.METRICS["map"].default
    assert all(isinstance(d, Declaration) for d in declarations().values())
    assert set(declarations("judge")) >= {"faithfulness", "relevance", "correctness", "declined",
                                          "context_relevance", "context_recall"}


def test_bounds_and_bounded():
    assert metric_info("recall@5").bounds == (0.0, 1.0) and metric_info("recall@5").bounded
    assert metric_info("latency").bounds is None and not metric_info("latency").bounded
    register_metric("stars", higher_is_better=True, bounds=(1, 5), description="user rating")
    try:
        info = metric_info("stars")
        assert info.bounds == (1.0, 5.0) and not info.bounded and info.kind == "declared"
        register_metric("share_ok", higher_is_better=True, bounds=(0.0, 0.5))
        assert metric_info("share_ok").bounded
    finally:
        unregister_metric("stars")
        unregister_metric("share_ok")
    with pytest.raises(ValueError, match="low < high"):
        register_metric("bad", higher_is_better=True, bounds=(1, 1))


def test_a_new_direction_for_a_computed_metric_keeps_its_spec():
    import raglab.metrics

    before = declarations()["ndcg"]
    register_metric("ndcg", higher_is_better=False, description="inverted")
    try:
        assert metric_info("ndcg@5").higher_is_better is False
        assert declarations()["ndcg"].kind == "retrieval" and raglab.metrics.METRICS["ndcg"] is before.spec
    finally:
        register_metric("ndcg", higher_is_better=True, binary=before.binary, bounds=before.bounds,
                        description=before.description, kind="retrieval", spec=before.spec)
    assert declarations()["ndcg"] == before


def test_registration_errors_name_the_metric():
    with pytest.raises(ValueError, match="'wrongshape'.*|shape"):
        register_judge_metric(JudgeMetric("wrongshape", ("answer",), "table", "x"))
    with pytest.raises(ValueError, match="needs `call` and `positive` \\('nolabel'\\)"):
        register_judge_metric(JudgeMetric("nolabel", ("answer",), "label", "x"))
    with pytest.raises(ValueError, match="`kind` of 'k'"):
        register_metric("k", higher_is_better=True, kind="other")
    with pytest.raises(ValueError, match="needs its spec"):
        register_metric("k", higher_is_better=True, kind="judge")
    with pytest.raises(TypeError, match="register retrieval metrics"):
        specs("retrieval")["x"] = object()
    assert "wrongshape" not in declarations() and "nolabel" not in declarations()


def test_a_label_call_needs_two_labels_and_is_stored_hashable():
    pytest.importorskip("pydantic")
    from raglab.judge._metrics import LABEL_CALLS, LabelCall, register_label_call
    from raglab.judge._schemas import json_schema

    with pytest.raises(ValueError, match="two different labels"):
        register_label_call(LabelCall("one", "raglab_one", "?", ("answer",), ("yes", "yes"), "Why.", _mentions_year))
    call = register_label_call(LabelCall("listed", "raglab_listed", "?", ["answer"], ["a", "b"], "Why.", _mentions_year))
    try:
        assert call.sections == ("answer",) and json_schema("listed")["properties"]["verdict"]["enum"] == ["a", "b"]
    finally:
        del LABEL_CALLS["listed"]
    with pytest.raises(KeyError):
        json_schema("listed")
