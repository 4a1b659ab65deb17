"""LLMJudge under faults and load: retries, Retry-After, bounded attempts, cache, concurrency, no key leaks.

Everything runs against raglab.testing's local server with the real openai client. No timings are
asserted: waits are read from the judge's own counters and requests are counted by the server.
"""

from __future__ import annotations

import json
import logging
import sqlite3

import numpy as np
import pandas as pd
import pytest

import raglab
from raglab.judge import CallCache, JudgeError, LexicalJudge, LLMJudge
from raglab.judge import _prompts as prompts_module
from raglab.testing import LocalOpenAIServer, Reply, rule_based_reply


def make_rows(n: int = 6) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "question_id": [f"q{i}" for i in range(n)],
            "question": [f"When did bridge {i} open?" for i in range(n)],
            "answer": [f"Bridge {i} opened in {1900 + i}. It is painted red." for i in range(n)],
            "context": [[f"Bridge {i} opened to traffic in {1900 + i}.", "Some bridges are painted red."] for i in range(n)],
        }
    )


EXPECTED = make_rows().rag.judge(LexicalJudge(), metrics=["faithfulness", "relevance"], progress=False)


@pytest.fixture
def server():
    with LocalOpenAIServer() as srv:
        yield srv


def llm(server, **kw) -> LLMJudge:
    kw.setdefault("cache", None)
    kw.setdefault("backoff", 0.01)
    return LLMJudge(kw.pop("model", "local"), base_url=server.base_url, api_key="test-key", **kw)


def scores(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[["faithfulness", "relevance"]]


# ---- cache ---------------------------------------------------------------------------------------


def test_rerun_makes_zero_calls_and_gives_the_same_frame(server, tmp_path):
    rows = make_rows()
    first = rows.rag.judge(llm(server, cache=tmp_path / "cache"), metrics=["faithfulness", "relevance"], progress=False)
    made = server.requests_received
    assert made == 3 * len(rows)  # split + verification + relevance per row
    fresh = llm(server, cache=tmp_path / "cache")  # a new judge object, same settings
    second = rows.rag.judge(fresh, metrics=["faithfulness", "relevance"], progress=False)
    assert server.requests_received == made
    assert fresh.last_run.requests == 0 and fresh.last_run.cached == made
    pd.testing.assert_frame_equal(first.drop(columns=[]), second)
    assert (tmp_path / "cache" / "judge-cache.sqlite3").exists()
    with sqlite3.connect(tmp_path / "cache" / "judge-cache.sqlite3") as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.execute("SELECT COUNT(*) FROM calls").fetchone()[0] == made


@pytest.mark.parametrize("change", ["model", "temperature", "prompt", "seed"])
def test_a_judge_change_misses_the_cache(server, tmp_path, monkeypatch, change):
    rows = make_rows(3)
    rows.rag.judge(llm(server, cache=tmp_path), metrics=["relevance"], progress=False)
    assert server.requests_received == 3
    settings = {"model": {"model": "other"}, "temperature": {"temperature": 0.3}, "seed": {"seed": 7}, "prompt": {}}[change]
    if change == "prompt":
        monkeypatch.setitem(prompts_module.PROMPTS, "relevance", prompts_module.PROMPTS["relevance"] + " Be brief.")
    rows.rag.judge(llm(server, cache=tmp_path, **settings), metrics=["relevance"], progress=False)
    assert server.requests_received == 6


def test_cache_file_argument_forms(tmp_path):
    assert CallCache(tmp_path / "my.sqlite3").path == tmp_path / "my.sqlite3"
    assert CallCache(tmp_path / "folder").path == tmp_path / "folder" / "judge-cache.sqlite3"
    (tmp_path / "bad.db").write_text("not a database" * 100)
    with pytest.raises(ValueError, match="not a usable SQLite database"):
        CallCache(tmp_path / "bad.db")
    with pytest.raises(TypeError, match="`cache` must be a path"):
        LLMJudge("m", api_key="k", cache=3).cache  # noqa: B018


# ---- transport faults ----------------------------------------------------------------------------


def test_429_waits_retry_after_then_scores_every_row(server):
    rows = make_rows()
    server.fail_next(2, status=429, retry_after=0.05)
    judge = llm(server)
    out = rows.rag.judge(judge, metrics=["faithfulness", "relevance"], progress=False)
    pd.testing.assert_frame_equal(scores(out), scores(EXPECTED))
    assert judge.last_run.waits.count(0.05) == 2  # the server's Retry-After, not the backoff
    assert judge.last_run.requests == 3 * len(rows) + 2 == server.requests_received
    assert out["judge_error"].isna().all()


def test_retry_after_as_http_date_and_milliseconds():
    from email.utils import formatdate

    from raglab.judge._llm import _retry_after

    assert _retry_after({"retry-after-ms": "250"}) == 0.25
    assert _retry_after({"retry-after": "2"}) == 2.0
    assert 0 <= _retry_after({"retry-after": formatdate(timeval=None, usegmt=True)}) <= 1.0
    assert _retry_after({"retry-after": "soon"}) is None and _retry_after({}) is None


def test_5xx_is_retried_with_backoff_then_recorded_on_the_row(server):
    rows = make_rows(3)
    server.fail_next(1, status=502, match="raglab_claims")  # one faithfulness call, whichever row comes first
    server.fail_next(100, status=500, match="relevance")
    judge = llm(server, max_retries=2)
    out = rows.rag.judge(judge, metrics=["faithfulness", "relevance"], errors="ignore", progress=False)
    # faithfulness recovered from the 502; relevance failed after 1 + 2 attempts on every row
    pd.testing.assert_frame_equal(out[["faithfulness"]], EXPECTED[["faithfulness"]].head(3))
    assert out["relevance"].isna().all()
    assert out["judge_error"].tolist() == ["relevance: relevance call failed: HTTP 500 on 3 attempts"] * 3
    assert server.count("raglab_relevance") == 9
    backoffs = judge.last_run.waits
    assert len(backoffs) == 1 + 3 * 2 and all(0 < w <= 0.04 for w in backoffs)  # 0.01 * 2**k, jittered
    assert judge.last_run.rows_failed == 3


def test_timeouts_are_retried_then_recorded():
    rows = make_rows(1)
    with LocalOpenAIServer(latency=0.5) as slow:
        judge = LLMJudge("local", base_url=slow.base_url, api_key="k", cache=None, timeout=0.1, max_retries=1, backoff=0.01)
        out = rows.rag.judge(judge, metrics=["relevance"], errors="ignore", progress=False)
    assert out.loc[0, "judge_error"] == "relevance: relevance call failed: timed out on 2 attempts"


def test_connection_errors_are_retried_then_recorded():
    judge = LLMJudge("local", base_url="http://127.0.0.1:9/v1", api_key="k", cache=None, max_retries=2, backoff=0.01)
    out = make_rows(2).rag.judge(judge, metrics=["relevance"], errors="ignore", progress=False)
    assert out["judge_error"].tolist() == ["relevance: relevance call failed: connection error on 3 attempts"] * 2


def test_bad_request_is_not_retried():
    def responder(body):
        if "raglab_relevance" in json.dumps(body.get("response_format")) and "bridge 1" in json.dumps(body):
            return Reply("context length exceeded", status=400)
        return rule_based_reply(body)

    with LocalOpenAIServer(responder=responder) as srv, pytest.warns(UserWarning, match=r"1 of 3 rows failed"):
        out = make_rows(3).rag.judge(llm(srv), metrics=["relevance"], progress=False)
        assert srv.requests_received == 3
    assert out.loc[1, "judge_error"] == "relevance: relevance call rejected with HTTP 400: context length exceeded"
    assert out["relevance"].notna().tolist() == [True, False, True]


@pytest.mark.parametrize("status, message", [(401, "refused the request"), (403, "refused the request"),
                                             (404, "check model='local'")])
def test_auth_and_unknown_model_stop_the_run(status, message):
    with LocalOpenAIServer(responder=[Reply("nope", status=status)]) as srv:
        with pytest.raises(JudgeError, match=message):
            make_rows(4).rag.judge(llm(srv), metrics=["relevance"], progress=False)
        assert srv.requests_received <= 4  # no retries of a fatal error


# ---- content faults -------------------------------------------------------------------------------


def test_malformed_invalid_and_truncated_replies_are_retried(server):
    rows = make_rows(4)
    server.malform_next(1, match="verdicts")
    server.invalid_next(1, match="claims")
    server.truncate_next(1, match="relevance")
    judge = llm(server)
    out = rows.rag.judge(judge, metrics=["faithfulness", "relevance"], progress=False)
    pd.testing.assert_frame_equal(scores(out), scores(EXPECTED.head(4)))
    assert server.requests_received == 3 * 4 + 3 and judge.last_run.retries == 3
    assert out["judge_error"].isna().all()


def test_bounded_format_retries_then_the_reason_is_recorded(server):
    rows = make_rows(3)
    server.malform_next(100, match="raglab_verdicts")
    out = rows.rag.judge(llm(server, max_format_retries=1), metrics=["faithfulness", "relevance"], errors="ignore",
                         progress=False)
    assert out["faithfulness"].isna().all() and out["relevance"].notna().all()  # one bad call never stops the run
    for error in out["judge_error"]:
        assert error.startswith("faithfulness: verify_context call failed: the reply is not valid JSON")
        assert error.endswith("(after 2 attempts)")
    assert server.count("raglab_verdicts") == 6
    assert out.loc[0, "faithfulness_claims"] == EXPECTED.loc[0, "faithfulness_claims"]  # the split is kept


def test_a_missing_verdict_is_retried_once_then_verified_per_claim():
    def responder(body):
        reply = json.loads(rule_based_reply(body))
        reply.pop("claim_2", None)  # always drops claim 2's verdict (same request, same wrong reply)
        return json.dumps(reply)

    with LocalOpenAIServer(responder=responder) as srv:
        judge = llm(srv)
        out = make_rows(1).rag.judge(judge, metrics=["faithfulness"], progress=False)
        # split, the batched call and its one retry, then one call per claim
        assert srv.count("raglab_verdicts") == 2 and srv.count("raglab_verdict_") == 0
        assert srv.count("raglab_verdict") == 2 + len(EXPECTED.loc[0, "faithfulness_claims"])
    assert out.loc[0, "judge_error"] is None and judge.last_run.fallbacks == 1
    assert out.loc[0, "faithfulness"] == EXPECTED.loc[0, "faithfulness"]
    assert out.loc[0, "faithfulness_verdicts"] == EXPECTED.loc[0, "faithfulness_verdicts"]


def test_truncated_replies_are_retried_with_a_larger_budget(server):
    rows = make_rows(1)
    judge = llm(server, max_tokens=20, max_format_retries=4)
    out = rows.rag.judge(judge, metrics=["faithfulness"], progress=False)
    assert out.loc[0, "faithfulness"] == EXPECTED.loc[0, "faithfulness"]
    budgets = [body["max_completion_tokens"] for body in server.requests]
    # The server cuts a reply longer than the budget (len // 4 tokens); each retry doubles it.
    expected = []
    for body in (server.requests[0], server.requests[-1]):  # the split, and the verification that succeeded
        need, budget = max(1, len(rule_based_reply(body)) // 4), 20
        expected.append(budget)
        while budget < need:
            budget *= 2
            expected.append(budget)
    assert budgets == expected and len(budgets) > 2


def test_length_failure_is_recorded_when_the_budget_never_suffices(server):
    out = make_rows(1).rag.judge(llm(server, max_tokens=2, max_tokens_limit=4, max_format_retries=2),
                                 metrics=["relevance"], errors="ignore", progress=False)
    assert out.loc[0, "judge_error"] == ("relevance: relevance call failed: the reply was cut off at max_tokens=4 "
                                         "(finish_reason 'length') (after 3 attempts)")


def test_errors_raise_stops_and_keeps_completed_calls(tmp_path):
    rows = make_rows(6)

    def responder(body):
        # Row q3's relevance call is always malformed: the run stops there, after earlier rows finished.
        text = json.dumps(body)
        if "raglab_relevance" in text and "bridge 3 open" in text:
            return "{not json"
        return rule_based_reply(body)

    with LocalOpenAIServer(responder=responder) as server:
        port = server.port
        judge = llm(server, cache=tmp_path, max_format_retries=0, max_concurrency=1)
        with pytest.raises(JudgeError, match=r"rag.judge: row 'q3' failed: relevance: relevance call failed") as info:
            rows.rag.judge(judge, metrics=["relevance", "faithfulness"], errors="raise", progress=False)
        assert "errors='warn'" in str(info.value)
        kept = CallCache(tmp_path).count()
        assert kept >= 1  # calls that finished before the run stopped are in the cache
    # The same server URL (the URL is part of the judge's identity), now healthy: the resumed run
    # makes only the missing calls.
    with LocalOpenAIServer(port=port) as server:
        out = rows.rag.judge(llm(server, cache=tmp_path), metrics=["relevance", "faithfulness"], progress=False)
        assert server.requests_received == 3 * 6 - kept
    pd.testing.assert_frame_equal(scores(out), scores(EXPECTED))


# ---- concurrency ----------------------------------------------------------------------------------


@pytest.mark.parametrize("limit", [1, 4])
def test_max_concurrency_is_honoured(limit):
    with LocalOpenAIServer(latency=0.03) as srv:
        out = make_rows(12).rag.judge(llm(srv, max_concurrency=limit), metrics=["faithfulness", "relevance"],
                                      progress=False)
    peak = srv.peak_in_flight
    assert peak == limit  # reached, never exceeded
    pd.testing.assert_frame_equal(scores(out), scores(make_rows(12).rag.judge(
        LexicalJudge(), metrics=["faithfulness", "relevance"], progress=False)))


# ---- the API key never leaks ----------------------------------------------------------------------

KEY = "sk-raglab-LEAKCHECK-7f3a9c1e5b2d4086"


@pytest.mark.filterwarnings("ignore:repeats=2 at temperature 0")
def test_the_api_key_is_never_written_anywhere(tmp_path, caplog, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    caplog.set_level(logging.DEBUG)
    rows = make_rows(4)
    with LocalOpenAIServer(api_key=KEY) as srv:
        srv.malform_next(100, match="raglab_relevance")  # a recorded error, to check error texts too
        srv.fail_next(1, status=429, retry_after=0.01)
        judge = LLMJudge("local", base_url=srv.base_url, api_key=KEY, cache=tmp_path / "cache", max_format_retries=0)
        out = rows.rag.judge(judge, metrics=["faithfulness", "relevance"], repeats=2, errors="ignore", progress=False)
        with pytest.raises(JudgeError) as raised:
            rows.rag.judge(judge, metrics=["relevance"], errors="raise", progress=False)
        estimate = judge.estimate(rows, metrics=["faithfulness"])
    assert out["faithfulness"].notna().all()  # the key was sent: the server accepted it
    assert out["judge_error"].notna().all()
    live_state = str(judge.__dict__) + repr(judge._resources)
    raglab.write_rows(out, tmp_path / "scored.jsonl")
    raglab.write_rows(out, tmp_path / "scored.parquet")
    raglab.write_rows(out, tmp_path / "scored.csv")
    judge.close()  # flush the cache's WAL
    texts = [live_state, repr(judge), str(judge.__dict__), repr(out), out.to_json(), json.dumps(out.attrs), str(raised.value),
             repr(raised.value), repr(estimate), caplog.text, repr(judge.last_run)]
    for text in texts:
        assert KEY not in text
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".sqlite3" for p in files) and len(files) >= 4
    for path in files:
        assert KEY.encode() not in path.read_bytes(), path
    with pytest.raises(TypeError, match="cannot be pickled"):
        import pickle

        pickle.dumps(judge)


def test_key_from_the_environment_is_not_echoed_by_errors(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)

    def responder(body):
        return Reply(f"bad key {KEY}", status=401)  # a server that echoes the key back

    with LocalOpenAIServer(responder=responder) as srv, pytest.raises(JudgeError) as info:
        make_rows(1).rag.judge(LLMJudge("local", base_url=srv.base_url, cache=None), metrics=["relevance"],
                               progress=False)
    assert KEY not in str(info.value) and "***" in str(info.value)


def test_rows_failed_and_cached_counts_in_attrs(server):
    server.fail_next(100, status=500, match="relevance")
    out = make_rows(2).rag.judge(llm(server, max_retries=0), metrics=["relevance"], errors="ignore", progress=False)
    run = out.attrs["raglab"]["judge"]["run"]
    assert run["rows_failed"] == 2 and run["failed_calls"] == 2 and run["calls"] == 0
    assert np.isnan(out["relevance"]).all()
