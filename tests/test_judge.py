"""raglab.judge: the judge interface, output columns, fingerprint, accessor, estimates.

The LLM judge runs with the real openai client against raglab.testing's local server over loopback.
Expected scores are hand-computed from the definitions (content words of a claim found in its source,
threshold 0.6); the LLM judge pointed at the rule-based server must reproduce LexicalJudge exactly,
which checks the whole request/parse/assemble path end to end.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai import AsyncOpenAI, OpenAI

import raglab
from raglab import JudgeMismatchWarning, MissingColumnError, RowTableError
from raglab._rowtable import pair_runs
from raglab.judge import (
    JudgeError,
    LexicalJudge,
    LLMJudge,
    judge_rows,
)
from raglab.judge import _prompts as prompts_module
from raglab.judge._base import (
    REASON_EMPTY_ANSWER,
    REASON_NO_CLAIMS,
    REASON_NO_CONTEXT,
)
from raglab.testing import LocalOpenAIServer

ALL = ["faithfulness", "relevance", "correctness", "declined"]


def make_rows() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "question_id": ["q1", "q2", "q3", "q4", "q5"],
            "question": ["When did the Golden Gate Bridge open?", "Who designed it?", "What colour is it?",
                         "How long is the main span?", "What is the capital of France?"],
            "answer": ["The Golden Gate Bridge opened in 1937. It is painted blue [2].", "I don't know.", "",
                       "The main span is 1280 metres long. Engineers love it.", "Paris is the capital of France."],
            "context": [["The Golden Gate Bridge opened to traffic in 1937.", "The bridge is painted international orange."],
                        ["Joseph Strauss led the project."], ["It is orange."], ["The main span is 1280 metres long."], None],
            "reference": ["It opened in 1937.", "Joseph Strauss.", "International orange.", "About 1280 m.", "Paris."],
            "qtype": ["fact", "fact", "fact", "number", "fact"],
        }
    )


@pytest.fixture
def rows() -> pd.DataFrame:
    return make_rows()


@pytest.fixture
def server():
    with LocalOpenAIServer() as srv:
        yield srv


def llm(server: LocalOpenAIServer, **kw) -> LLMJudge:
    kw.setdefault("cache", None)
    return LLMJudge(kw.pop("model", "local"), base_url=server.base_url, api_key="test-key", **kw)


# ---- LexicalJudge: hand-computed values ----------------------------------------------------------


def test_lexical_judge_values(rows):
    out = rows.rag.judge(LexicalJudge(), metrics=ALL, progress=False)
    # q1: claim 1 {golden gate bridge opened 1937} all in context -> supported; claim 2 {painted, blue}
    # 1/2 < 0.6 -> not. q4: {main span 1280 metres long} supported; {engineers love} not.
    assert out["faithfulness"].tolist()[0] == 0.5 and out["faithfulness"].tolist()[3] == 0.5
    assert out.loc[0, "faithfulness_claims"] == ["The Golden Gate Bridge opened in 1937.", "It is painted blue [2]."]
    assert out.loc[0, "faithfulness_verdicts"] == [True, False]
    assert len(out.loc[0, "faithfulness_reasons"]) == 2
    # Correctness against the reference: q1 {opened, 1937} covers 2/5 and 0/2; q5 {paris} 1/3 -> 0.
    assert out["correctness"].tolist()[0] == 0.0 and out["correctness"].tolist()[4] == 0.0
    # Relevance: q1 question words {golden gate bridge open}: 3 of 4 in the answer ("opened" != "open");
    # q2 {designed} absent; q4 {long main span} all present; q5 {capital france} present.
    assert out["relevance"].tolist()[:2] == [1.0, 0.0] and out["relevance"].tolist()[3:] == [1.0, 1.0]
    assert out["declined"].tolist() == [False, True, True, False, False]
    assert out["declined"].dtype == "boolean"
    # Unscored rows are NaN with a reason, never 0 or 1.
    assert np.isnan(out.loc[1, "faithfulness"]) and REASON_NO_CLAIMS in out.loc[1, "judge_error"]
    assert np.isnan(out.loc[2, "faithfulness"]) and REASON_EMPTY_ANSWER in out.loc[2, "judge_error"]
    assert np.isnan(out.loc[4, "faithfulness"]) and REASON_NO_CONTEXT in out.loc[4, "judge_error"]
    assert out["judge_prompt_tokens"].tolist() == [0] * 5


ZERO_CLAIM_ANSWERS = {
    "empty string": "",
    "None": None,
    "whitespace": "   \n ",
    "refusal": "I don't know.",
    "refusal, two sentences": "Sorry. The context does not mention it.",
}


@pytest.mark.parametrize("which", ["lexical", "llm"])
@pytest.mark.parametrize("case", list(ZERO_CLAIM_ANSWERS))
def test_zero_claim_answers_score_none_with_a_reason(case, which, server):
    answer = ZERO_CLAIM_ANSWERS[case]
    frame = pd.DataFrame({"question_id": ["q"], "question": ["Who?"], "answer": [answer],
                          "context": [["Joseph Strauss designed it."]], "reference": ["Strauss."]})
    judge = LexicalJudge() if which == "lexical" else llm(server)
    out = frame.rag.judge(judge, metrics=["faithfulness", "correctness"], progress=False)
    for metric in ("faithfulness", "correctness"):
        assert np.isnan(out.loc[0, metric]), f"{case}: {metric} must be None/NaN, never 0 or 1"
        assert out.loc[0, f"{metric}_claims"] == [] and out.loc[0, f"{metric}_verdicts"] == []
    expected = REASON_EMPTY_ANSWER if answer is None or not answer.strip() else REASON_NO_CLAIMS
    assert out.loc[0, "judge_error"] == f"faithfulness: {expected}; correctness: {expected}"


@pytest.mark.parametrize("reply", ['{"claims": []}', '{"claims": ["", "  "]}'])
def test_model_that_finds_no_claims_scores_none(reply):
    frame = pd.DataFrame({"question_id": ["q"], "answer": ["Thanks for asking!"], "context": ["x"]})
    with LocalOpenAIServer(responder=[reply]) as srv:
        out = frame.rag.judge(llm(srv), metrics=["faithfulness"], progress=False)
        assert srv.requests_received == 1  # no verification call for zero claims
    assert np.isnan(out.loc[0, "faithfulness"]) and out.loc[0, "faithfulness_claims"] == []
    assert out.loc[0, "judge_error"] == f"faithfulness: {REASON_NO_CLAIMS}"


# ---- the LLM judge reproduces the lexical rule through the real client ---------------------------

COMPARED = ["faithfulness", "faithfulness_claims", "faithfulness_verdicts", "relevance", "correctness",
            "correctness_claims", "correctness_verdicts", "declined", "judge_error"]


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("verify", ["batched", "per_claim"])
def test_llm_judge_matches_lexical_judge_through_the_rule_server(rows, server, api, verify):
    expected = rows.rag.judge(LexicalJudge(), metrics=ALL, progress=False)
    judge = llm(server, api=api, verify=verify)
    out = rows.rag.judge(judge, metrics=ALL, progress=False)
    pd.testing.assert_frame_equal(out[COMPARED], expected[COMPARED])
    assert (out["judge_prompt_tokens"] > 0).sum() == 4  # the empty answer made no call
    assert out.loc[2, "judge_prompt_tokens"] == 0
    sent = server.requests[0]
    if api == "chat":
        fmt = sent["response_format"]
        assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
        assert sent["temperature"] == 0.0 and sent["max_completion_tokens"] == 1024
    else:
        assert sent["text"]["format"]["strict"] is True and sent["max_output_tokens"] == 1024


def test_claim_split_is_shared_by_faithfulness_and_correctness(rows, server):
    judge = llm(server)
    rows.rag.judge(judge, metrics=["faithfulness", "correctness"], progress=False)
    # One split per non-empty answer (q1, q2, q4, q5), shared by both metrics; unshared it would be
    # 7 (q5 has no context, so only correctness asks for its split).
    assert server.count("raglab_claims") == 4
    assert judge.last_run.shared > 0


def test_verdict_schema_puts_evidence_and_reason_before_the_label():
    from raglab.judge._schemas import json_schema

    item = json_schema("verify_context", n_claims=3)["properties"]["claim_2"]
    assert list(item["properties"]) == ["claim", "evidence", "reason", "verdict"]
    assert item["additionalProperties"] is False and item["required"] == ["claim", "evidence", "reason", "verdict"]
    assert list(json_schema("relevance")["properties"]) == ["reason", "verdict"]


# ---- accessor == pure function; new frame; attrs -------------------------------------------------


def test_accessor_equals_pure_function(rows):
    judge = LexicalJudge()
    via_accessor = rows.rag.judge(judge, metrics=ALL, progress=False)
    direct = judge_rows(judge, answers=rows["answer"], questions=rows["question"].tolist(),
                        contexts=rows["context"].tolist(), references=rows["reference"], metrics=ALL, progress=False)
    pd.testing.assert_frame_equal(via_accessor[direct.columns], direct)
    assert via_accessor.attrs["raglab"]["judge"] == direct.attrs["raglab"]["judge"]


def test_returns_a_new_frame_and_leaves_the_input_untouched(rows, server):
    rows.attrs["raglab"] = {"evalset": {"name": "bridges", "version": "1", "hash": "abc"}}
    before = rows.copy(deep=True)
    out = rows.rag.judge(llm(server), metrics=ALL, progress=False)
    assert out is not rows
    pd.testing.assert_frame_equal(rows, before)
    assert rows.attrs == {"raglab": {"evalset": {"name": "bridges", "version": "1", "hash": "abc"}}}
    assert out.attrs["raglab"]["evalset"] == {"name": "bridges", "version": "1", "hash": "abc"}
    assert list(out.columns[: len(rows.columns)]) == list(rows.columns)


def test_attrs_record_pins_the_judge(rows, server):
    judge = llm(server, model="judge-model-2026-01", temperature=0.0)
    record = rows.rag.judge(judge, metrics=["faithfulness", "relevance"], progress=False).attrs["raglab"]["judge"]
    for key in ("fingerprint", "model", "temperature", "prompt_hashes", "schema_hash", "claim_splitting",
                "raglab_version", "metrics"):
        assert key in record, key
    assert record["fingerprint"] == judge.fingerprint and len(record["fingerprint"]) == 64
    assert record["model"] == "judge-model-2026-01" and record["temperature"] == 0.0
    assert record["metrics"] == ["faithfulness", "relevance"]
    assert record["raglab_version"] == raglab.__version__
    expected = {k: hashlib.sha256(v.encode()).hexdigest() for k, v in prompts_module.PROMPTS.items()}
    assert record["prompt_hashes"] == expected
    json.dumps(record)  # JSON-serialisable (survives files)


def test_fingerprint_changes_with_what_changes_scores(server, monkeypatch):
    base = llm(server).fingerprint
    assert llm(server).fingerprint == base
    assert llm(server, max_concurrency=3, cache=None, max_tokens=99, timeout=5.0).fingerprint == base
    for changed in (llm(server, model="other"), llm(server, temperature=0.7), llm(server, seed=1),
                    llm(server, verify="per_claim"), llm(server, api="responses")):
        assert changed.fingerprint != base
    monkeypatch.setitem(prompts_module.PROMPTS, "relevance", prompts_module.PROMPTS["relevance"] + " Be strict.")
    assert llm(server).fingerprint != base
    assert LexicalJudge().fingerprint != LexicalJudge(threshold=0.7).fingerprint


def test_pair_runs_warns_when_judges_differ(rows, server):
    a = rows.rag.judge(llm(server, model="judge-a"), metrics=["faithfulness"], progress=False)
    b = rows.rag.judge(llm(server, model="judge-b"), metrics=["faithfulness"], progress=False)
    with pytest.warns(JudgeMismatchWarning, match="DIFFERENT JUDGES"):
        pair_runs(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pair_runs(a, rows.rag.judge(llm(server, model="judge-a"), metrics=["faithfulness"], progress=False))


@pytest.mark.filterwarnings("ignore:repeats=2 at temperature 0")
@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_list_columns_survive_file_round_trips(rows, server, tmp_path, suffix):
    out = rows.rag.judge(llm(server), metrics=ALL, repeats=2, progress=False)
    path = raglab.write_rows(out, tmp_path / f"scored{suffix}")
    back = raglab.read_rows(path)
    pd.testing.assert_frame_equal(back, out)
    assert back.attrs == out.attrs
    assert back.loc[0, "faithfulness_verdicts"] == [True, False]
    assert back.loc[1, "faithfulness_claims"] == []


def test_one_frame_never_mixes_judges(rows):
    first = rows.rag.judge(LexicalJudge(), metrics=["faithfulness"], progress=False)
    with pytest.raises(RowTableError, match=r"already hold \['faithfulness'\] scored by another judge"):
        first.rag.judge(LexicalJudge(threshold=0.9), metrics=["relevance"], progress=False)
    # the same judge adds metrics, keeping the earlier ones and their reasons
    both = first.rag.judge(LexicalJudge(), metrics=["relevance"], progress=False)
    assert both.attrs["raglab"]["judge"]["metrics"] == ["faithfulness", "relevance"]
    assert both.loc[4, "judge_error"] == f"faithfulness: {REASON_NO_CONTEXT}"
    assert both.loc[2, "judge_error"] == f"faithfulness: {REASON_EMPTY_ANSWER}; relevance: {REASON_EMPTY_ANSWER}"
    # re-scoring everything with another judge is fine
    again = first.rag.judge(LexicalJudge(threshold=0.9), metrics=["faithfulness"], progress=False)
    assert again.attrs["raglab"]["judge"]["fingerprint"] == LexicalJudge(threshold=0.9).fingerprint


def test_clear_errors(rows):
    judge = LexicalJudge()
    with pytest.raises(MissingColumnError, match=r"rag.judge needs column 'context'"):
        rows.drop(columns="context").rag.judge(judge, metrics=["faithfulness"])
    with pytest.raises(MissingColumnError, match=r"needs column 'docs'"):
        rows.rag.judge(judge, metrics=["faithfulness"], context="docs")
    with pytest.raises(ValueError, match=r"The value for `metrics` must be among \['faithfulness', 'relevance', "
                                         r"'correctness', 'declined', 'context_relevance', 'context_recall'\], but 'faithful' was passed."):
        rows.rag.judge(judge, metrics=["faithful"])
    with pytest.raises(ValueError, match=r"The value for `errors` must be one of \['warn', 'raise', 'ignore'\]"):
        rows.rag.judge(judge, errors="silent")
    with pytest.raises(ValueError, match="`repeats` must be a positive integer"):
        rows.rag.judge(judge, repeats=0)
    with pytest.raises(TypeError, match="needs a judge"):
        rows.rag.judge("gpt-4.1-mini")
    with pytest.raises(ValueError, match=r"The value for `verify` must be one of \['batched', 'per_claim'\]"):
        LLMJudge(verify="each", api_key="x")
    with pytest.raises(ValueError, match="metric 'faithfulness' needs `contexts`"):
        judge_rows(judge, answers=["a"], metrics="faithfulness")


def test_column_overrides(rows):
    renamed = rows.rename(columns={"answer": "response", "context": "passages"})
    out = renamed.rag.judge(LexicalJudge(), metrics=["faithfulness"], answer="response", context="passages", progress=False)
    expected = rows.rag.judge(LexicalJudge(), metrics=["faithfulness"], progress=False)
    assert out["faithfulness"].equals(expected["faithfulness"])


# ---- estimates -----------------------------------------------------------------------------------


def test_estimate_counts_calls_and_prices_them(rows, server):
    judge = llm(server)
    est = judge.estimate(rows, metrics=["faithfulness", "relevance"], prices={"input": 2.0, "output": 8.0})
    # faithfulness: split + verification for q1, q2, q4 (q3 empty, q5 no context; q4 makes one claim,
    # verified by the single-claim call); relevance: 4 answers
    by_kind = est.to_frame().set_index("kind")
    assert by_kind.loc["claims", "calls"] == 3 and by_kind.loc["verify_context", "calls"] == 2
    assert by_kind.loc["verify_context_one", "calls"] == 1
    assert by_kind.loc["relevance", "calls"] == 4 and est.calls == 10 and est.cached == 0
    assert est.cost == pytest.approx((est.prompt_tokens * 2.0 + est.completion_tokens * 8.0) / 1e6)
    assert server.requests_received == 0  # estimating spends nothing
    rows.rag.judge(judge, metrics=["faithfulness", "relevance"], progress=False)
    # q2's refusal has no claims: its verification call never happens, so 9 calls were made
    assert server.requests_received == 9
    again = judge.estimate(rows, metrics=["faithfulness", "relevance"], prices={"local": {"input": 1, "output": 1}})
    assert again.cached == 9 and again.new_calls == 0 and again.cost == 0.0
    assert "9 already cached" in repr(again)
    assert LexicalJudge().estimate(rows, metrics=ALL).calls == 0
    with pytest.raises(ValueError, match="prices per million tokens"):
        judge.estimate(rows, prices={"cheap": 1})


# ---- clients, event loops, progress --------------------------------------------------------------


def test_runs_inside_a_running_event_loop(rows, server):
    """As in Jupyter, where the notebook's loop is already running in the calling thread."""
    judge = llm(server)

    async def notebook_cell():
        return rows.rag.judge(judge, metrics=["faithfulness"], progress=False)

    out = asyncio.run(notebook_cell())
    expected = rows.rag.judge(LexicalJudge(), metrics=["faithfulness"], progress=False)
    assert out["faithfulness"].equals(expected["faithfulness"])


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_user_supplied_clients(rows, server, kind):
    client_cls = OpenAI if kind == "sync" else AsyncOpenAI
    client = client_cls(base_url=server.base_url, api_key="k", max_retries=5)
    judge = LLMJudge("local", client=client, cache=None, backoff=0.01)
    server.fail_next(1, status=500)
    out = rows.rag.judge(judge, metrics=["faithfulness", "relevance"], progress=False)
    expected = rows.rag.judge(LexicalJudge(), metrics=["faithfulness", "relevance"], progress=False)
    assert out["faithfulness"].equals(expected["faithfulness"]) and out["relevance"].equals(expected["relevance"])
    # the client's own retries were switched off: the judge saw (and retried) the 500 itself
    assert judge.last_run.retries == 1 and judge.last_run.requests == server.requests_received
    with pytest.raises(ValueError, match="either `client=` or `base_url=`"):
        LLMJudge("m", client=client, api_key="k")


def test_needs_a_key_but_estimates_without_one(rows, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    judge = LLMJudge("m", base_url="http://127.0.0.1:9/v1", cache=None)
    assert judge.estimate(rows, metrics=["relevance"]).calls == 4
    with pytest.raises(JudgeError, match="LLMJudge needs an API key"):
        rows.rag.judge(judge, metrics=["relevance"], progress=False)


def test_progress_bar_shows_calls_cached_failed(rows, server, capsys):
    judge = llm(server)
    rows.rag.judge(judge, metrics=["relevance"], progress=True)
    rows.rag.judge(judge, metrics=["relevance"], progress=True)
    err = capsys.readouterr().err
    assert "5/5" in err and "calls=4" in err and "cached=4" in err and "failed=0" in err


def test_repr_and_close(server):
    judge = llm(server)
    text = repr(judge)
    assert text.startswith("LLMJudge(model='local'") and "fingerprint=" in text
    judge.close()
    assert repr(LexicalJudge()).startswith("LexicalJudge(threshold=0.6")


# ---- properties ------------------------------------------------------------------------------------

WORDS = ["paris", "rome", "is", "the", "capital", "old", "big", "1937", "i", "don't", "know", "not"]
sentence = st.lists(st.sampled_from(WORDS), min_size=0, max_size=5).map(lambda ws: " ".join(ws))
text = st.one_of(st.none(), st.lists(sentence, max_size=3).map(lambda ss: ". ".join(ss)))
row = st.tuples(text, text, st.one_of(st.none(), st.lists(sentence, max_size=2)), text)


@settings(max_examples=20, deadline=None)
@given(st.lists(row, min_size=1, max_size=8), st.randoms(use_true_random=False))
def test_every_unscored_row_says_why_and_row_order_does_not_matter(data, rnd):
    frame = pd.DataFrame({"question_id": [f"q{i}" for i in range(len(data))],
                          "question": [d[0] for d in data], "answer": [d[1] for d in data],
                          "context": [d[2] for d in data], "reference": [d[3] for d in data]})
    out = frame.rag.judge(LexicalJudge(), metrics=ALL, progress=False)
    for metric in ("faithfulness", "relevance", "correctness"):
        values = out[metric].to_numpy()
        assert ((values >= 0) & (values <= 1) | np.isnan(values)).all()
        said = out["judge_error"].fillna("").str.contains(f"(?:^|; ){metric}:", regex=True).to_numpy()
        assert (np.isnan(values) == said).all(), metric
    for metric in ("faithfulness", "correctness"):
        claims, verdicts = out[f"{metric}_claims"], out[f"{metric}_verdicts"]
        for c, v, s in zip(claims, verdicts, out[metric]):
            if not np.isnan(s):
                assert len(c) == len(v) > 0 and s == pytest.approx(sum(v) / len(v))
    order = list(range(len(frame)))
    rnd.shuffle(order)
    shuffled = frame.iloc[order].reset_index(drop=True).rag.judge(LexicalJudge(), metrics=ALL, progress=False)
    pd.testing.assert_frame_equal(shuffled, out.iloc[order].reset_index(drop=True))


@pytest.mark.parametrize("module", ["raglab.judge", "raglab.tripwires", "raglab.testing"])
def test_public_names_have_docstrings(module):
    mod = __import__(module, fromlist=["_"])
    assert mod.__doc__ and mod.__all__
    for name in mod.__all__:
        obj = getattr(mod, name)
        if callable(obj) and not name.endswith(("Error", "Warning")):
            assert obj.__doc__, f"{module}.{name} has no docstring"


@pytest.mark.parametrize("which", ["lexical", "llm"])
@pytest.mark.parametrize("context", [[], "", "   "])
def test_answer_with_empty_context_scores_zero_not_missing(context, which, server):
    # Nothing reached the model, yet the answer makes claims: every claim is unsupported (0), which
    # must count in the mean; a missing context (None) says nothing and stays unscored.
    rows = pd.DataFrame({
        "question_id": ["q1", "q2"],
        "question": ["How much does it cost?", "How much does it cost?"],
        "answer": ["Standard storage costs 2.1 cents per gigabyte. Archive costs less."] * 2,
        "context": pd.Series([context, None], dtype=object),
    })
    judge = LexicalJudge() if which == "lexical" else llm(server)
    out = rows.rag.judge(judge, metrics=["faithfulness"], progress=False)
    assert out.loc[0, "faithfulness"] == 0.0 and pd.isna(out.loc[0, "judge_error"])
    assert len(out.loc[0, "faithfulness_claims"]) == 2 and out.loc[0, "faithfulness_verdicts"] == [False, False]
    assert pd.isna(out.loc[1, "faithfulness"]) and "no context given" in out.loc[1, "judge_error"]


def test_per_metric_error_columns_carry_why_and_merge_without_parsing():
    from raglab.judge import LexicalJudge

    rows = pd.DataFrame({"question_id": ["q1", "q2"], "question": ["Capital of France?", "Capital; of Peru?"],
                         "answer": ["Paris is the capital of France.", ""],
                         "context": [["Paris is the capital of France."], ["Lima; is the capital: of Peru."]]})
    judge = LexicalJudge()
    first = rows.rag.judge(judge, metrics=["faithfulness"], progress=False)
    assert pd.isna(first["faithfulness_error"].iloc[0]) and first["faithfulness_error"].iloc[1].startswith("faithfulness: ")
    both = first.rag.judge(judge, metrics=["relevance"], progress=False)
    # The kept faithfulness reason comes from its own column; the new relevance reason is appended.
    assert both["faithfulness_error"].iloc[1] == first["faithfulness_error"].iloc[1]
    expected = "; ".join(v for v in (both["faithfulness_error"].iloc[1], both["relevance_error"].iloc[1]) if v)
    assert both["judge_error"].iloc[1] == expected


_ESTIMATE_ROWS = pd.DataFrame({"question_id": ["q1"], "question": ["When?"], "answer": ["In 1937. It is red."],
                               "context": ["It opened in 1937."]})


def test_estimate_ignores_a_cache_entry_the_run_would_discard():
    judge = LLMJudge("gpt-4.1-mini", api_key="none", cache=None)
    fresh = judge.estimate(_ESTIMATE_ROWS, metrics=["faithfulness"])
    key = judge.call_key("claims", {"question": "When?", "answer": "In 1937. It is red."}, 0)
    judge.cache.put(key, kind="claims", fingerprint=judge.fingerprint, reply={"garbage": 1},
                    prompt_tokens=1, completion_tokens=1, attempts=1)
    again = judge.estimate(_ESTIMATE_ROWS, metrics=["faithfulness"])
    assert (again.calls, again.cached, again.new_calls) == (fresh.calls, 0, fresh.new_calls)


def test_estimate_takes_question_id():
    rows = _ESTIMATE_ROWS.rename(columns={"question_id": "qid"})
    assert LexicalJudge().estimate(rows, metrics=["faithfulness"], question_id="qid").rows == 1
