"""The judge's limits against a hostile local server (real HTTP on loopback, real openai client):
a wall-clock deadline per request, rows whose text cannot be sent, implausible token usage, a cap
on claims (and an estimate that foresees it), a busy cache, and credentials that never leak.

Oracles: LexicalJudge (which the rule-based server agrees with), the server's own request counts
and recorded headers, the bytes of the files and of the SQLite cache, and hand-counted calls.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import subprocess
import sys
import time
import warnings

import numpy as np
import pandas as pd
import pytest

from raglab._errors import RowTableError
from raglab.judge import CacheBusyError, CallCache, JudgeError, LexicalJudge, LLMJudge
from raglab.testing import LocalOpenAIServer, rule_based_reply


def make_rows(n: int = 3) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "question_id": [f"q{i}" for i in range(n)],
            "question": [f"When did bridge {i} open?" for i in range(n)],
            "answer": [f"Bridge {i} opened in {1900 + i}. It is painted blue." for i in range(n)],
            "context": [[f"Bridge {i} opened to traffic in {1900 + i}.", "Some bridges are painted red."]
                        for i in range(n)],
        },
        dtype=object,
    )


def llm(server, **kw) -> LLMJudge:
    kw.setdefault("cache", None)
    kw.setdefault("backoff", 0.01)
    kw.setdefault("api_key", "test-key")
    return LLMJudge(kw.pop("model", "local"), base_url=kw.pop("base_url", server.base_url), **kw)


# ---- a deadline, not a per-read timeout ------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("sync", [False, True], ids=["async-client", "sync-client"])
def test_a_dripped_reply_is_cut_at_the_deadline(sync):
    import openai

    rows = make_rows(1)
    with LocalOpenAIServer() as server:
        server.drip_next(1, interval=0.04)  # ~400 bytes at 25 bytes/s: over 10 s, every read within 0.04 s
        if sync:
            client = openai.OpenAI(base_url=server.base_url, api_key="k", timeout=2.0)
            judge = LLMJudge("local", client=client, cache=None, timeout=2.0, max_retries=0)
        else:
            judge = llm(server, timeout=2.0, max_retries=0)
        started = time.monotonic()
        out = rows.rag.judge(judge, metrics=["relevance"], errors="ignore", progress=False)
        elapsed = time.monotonic() - started
        assert server.requests_received == 1
    assert elapsed < 8  # a generous bound on a 2 s deadline (the drip alone lasts over 10 s)
    assert out.loc[0, "judge_error"] == "relevance: relevance call failed: timed out on 1 attempts"
    assert pd.isna(out.loc[0, "relevance"])


def test_a_dripped_reply_is_retried_and_the_retry_scores():
    rows = make_rows(2)
    with LocalOpenAIServer() as server:
        server.drip_next(1, interval=0.05, match="raglab_relevance")
        judge = llm(server, timeout=1.0, max_retries=2, max_concurrency=1)
        out = rows.rag.judge(judge, metrics=["relevance"], progress=False)
        assert server.requests_received == 3  # 2 rows + 1 retry of the dripped one
    expected = rows.rag.judge(LexicalJudge(), metrics=["relevance"], progress=False)
    assert out["relevance"].tolist() == expected["relevance"].tolist()
    assert out["judge_error"].isna().all()


# ---- one place where a row's bad input becomes its judge_error -----------------------------------


def test_a_row_with_a_lone_surrogate_gets_its_judge_error_and_the_others_are_scored():
    rows = make_rows(4)
    rows.loc[1, "answer"] = "Bridge 1 opened in 1901. \ud800 It is blue."
    rows.loc[2, "context"] = ["Bridge 2 opened to traffic in 1902.", "odd \udcff passage"]
    with LocalOpenAIServer() as server:
        judge = llm(server)
        with pytest.warns(UserWarning, match=r"2 of 4 rows cannot be sent.*row 'q1': column 'answer'"):
            out = rows.rag.judge(judge, metrics=["faithfulness", "relevance"], progress=False)
        sent = server.requests_received
    good = [0, 3]
    expected = rows.iloc[good].rag.judge(LexicalJudge(), metrics=["faithfulness", "relevance"], progress=False)
    assert out.loc[good, "faithfulness"].tolist() == expected["faithfulness"].tolist() == [0.5, 0.5]
    assert out.loc[good, "judge_error"].isna().all()
    assert sent == 2 * 3  # claims + batched verification + relevance, for the two good rows only
    assert np.isnan(out.loc[1, "faithfulness"]) and pd.isna(out.loc[1, "relevance"])
    assert "column 'answer': the text is not valid Unicode at position 25 ('\\ud800', a lone surrogate)" in \
        out.loc[1, "judge_error"]
    assert "column 'context', passage 2: the text is not valid Unicode at position 4" in out.loc[2, "judge_error"]
    assert out.attrs["raglab"]["judge"]["run"]["rows_unsendable"] == 2
    est = judge.estimate(rows, metrics=["faithfulness", "relevance"])
    assert est.rows_unsendable == 2 and est.new_calls == 0  # the good rows are cached; the bad ones make none


def test_a_lone_surrogate_with_errors_raise_names_the_row_before_any_call():
    rows = make_rows(3)
    rows.loc[2, "question"] = "When \udc80?"
    with LocalOpenAIServer() as server:
        with pytest.raises(RowTableError, match=r"row 'q2': column 'question'.*position 5"):
            rows.rag.judge(llm(server), metrics=["relevance"], errors="raise", progress=False)
        assert server.requests_received == 0


def test_a_reply_holding_a_lone_surrogate_is_a_bad_reply_not_a_crash(tmp_path):
    def responder(body):
        text = rule_based_reply(body)
        if "raglab_relevance" in json.dumps(body.get("response_format")):
            data = json.loads(text)
            data["reason"] += " \ud800"
            return json.dumps(data)  # ASCII JSON: the surrogate travels as the escape \\ud800
        return text

    rows = make_rows(2)
    with LocalOpenAIServer(responder) as server:
        judge = llm(server, cache=tmp_path, max_format_retries=1)
        out = rows.rag.judge(judge, metrics=["faithfulness", "relevance"], errors="ignore", progress=False)
        assert server.count("raglab_relevance") == 4  # each row: 1 + 1 format retry
    assert out["faithfulness"].tolist() == [0.5, 0.5]
    assert out["relevance_error"].str.contains("not valid Unicode").all()


# ---- token usage: recorded when implausible, never a crash, never a reason to pay again ----------


@pytest.mark.parametrize("prompt, completion", [(10**20, 5), (-3, -1), ("many", None), (2.5, 7)])
def test_implausible_usage_neither_crashes_nor_invalidates_the_cache(tmp_path, prompt, completion):
    rows = make_rows(3)
    kw = {} if completion is None else {"completion_tokens": completion}
    with LocalOpenAIServer() as server:
        server.usage_next(100, prompt_tokens=prompt, **kw)  # every call of the first run
        judge = llm(server, cache=tmp_path)
        out = rows.rag.judge(judge, metrics=["faithfulness", "relevance"], progress=False)
        first = server.requests_received
        assert first == 9
        assert judge.last_run.usage_unreported == 9
        assert out["judge_prompt_tokens"].tolist() == [0, 0, 0]  # unreported counts as 0 (and is recorded)
        assert out.attrs["raglab"]["judge"]["run"]["usage_unreported"] == 9
        server.reset_counts()
        again = llm(server, cache=tmp_path)
        warm = rows.rag.judge(again, metrics=["faithfulness", "relevance"], progress=False)
        assert server.requests_received == 0  # a warm re-run pays nothing
    assert again.last_run.cache_invalid == 0 and again.last_run.cached == 9
    assert warm["faithfulness"].tolist() == out["faithfulness"].tolist() == [0.5, 0.5, 0.5]
    conn = sqlite3.connect(tmp_path / "judge-cache.sqlite3")
    stored = conn.execute("SELECT prompt_tokens FROM calls").fetchall()
    conn.close()
    assert sorted({p for (p,) in stored}) == [-1]  # stored as "unreported"


def test_plausible_usage_is_summed_per_row():
    rows = make_rows(2)
    with LocalOpenAIServer() as server:
        server.usage_next(100, prompt_tokens=100, completion_tokens=7)
        out = rows.rag.judge(llm(server), metrics=["faithfulness"], progress=False)
    assert out["judge_prompt_tokens"].tolist() == [200, 200]  # claims + batched verification
    assert out["judge_completion_tokens"].tolist() == [14, 14]


# ---- a cap on claims, and an estimate that foresees the fallbacks --------------------------------


def _many_claims(n_claims: int, row_text: str):
    def responder(body):
        text = rule_based_reply(body)
        fmt = json.dumps(body.get("response_format"))
        if "raglab_claims" in fmt and row_text in json.dumps(body.get("messages")):
            return json.dumps({"claims": [f"Bridge 1 has property number {k}." for k in range(n_claims)]})
        return text
    return responder


def test_a_claim_split_over_max_claims_is_not_verified_and_costs_one_call():
    rows = make_rows(3)
    with LocalOpenAIServer(_many_claims(300, "Bridge 1 opened")) as server:
        judge = llm(server, max_tokens=8192)  # room for 300 claims in one reply
        assert judge.max_claims == 50
        out = rows.rag.judge(judge, metrics=["faithfulness"], errors="ignore", progress=False)
        assert server.count("raglab_claims") == 3
        assert server.count("raglab_verdict") == 2  # one batched verification per other row; none for row 1
        assert judge.last_run.claims_over_cap == 1
    assert np.isnan(out.loc[1, "faithfulness"]) and len(out.loc[1, "faithfulness_claims"]) == 300
    assert out.loc[1, "judge_error"] == ("faithfulness: the answer was split into 300 claims, more than max_claims=50: "
                                         "not verified (pass a larger max_claims= to verify them; the claim split is "
                                         "cached)")
    assert out.loc[[0, 2], "faithfulness"].tolist() == [0.5, 0.5]
    assert out.attrs["raglab"]["judge"]["max_claims"] == 50


def test_a_larger_max_claims_verifies_with_the_cached_split(tmp_path):
    rows = make_rows(1)
    rows.loc[0, "answer"] = "Bridge 1 opened in 1901."
    with LocalOpenAIServer(_many_claims(60, "Bridge 1 opened")) as server:
        rows.rag.judge(llm(server, cache=tmp_path, max_tokens=8192), metrics=["faithfulness"], errors="ignore",
                       progress=False)
        assert server.requests_received == 1
        server.reset_counts()
        judge = llm(server, cache=tmp_path, max_claims=60, max_tokens=8192)
        out = rows.rag.judge(judge, metrics=["faithfulness"], progress=False)
        assert server.requests_received == 1 and server.count("raglab_verdicts") == 1  # the split came from the cache
    assert len(out.loc[0, "faithfulness_verdicts"]) == 60


def test_the_estimate_states_the_cap_and_counts_fallbacks_and_the_worst_case():
    rows = make_rows(3)  # two sentences each: the guess is 2 claims
    judge = LLMJudge("local", api_key="none", cache=None, max_claims=10)
    est = judge.estimate(rows, metrics=["faithfulness"])
    # by hand: per row 1 claims call + 1 batched verification; if it misbinds, 2 per-claim calls;
    # worst case: the split reaches max_claims=10, so 1 + 1 + 10 per row.
    assert (est.calls, est.fallback_calls, est.max_calls, est.max_claims) == (6, 6, 36, 10)
    assert "up to 36 new calls" in repr(est) and "max_claims=10" in repr(est)
    assert est.to_dict()["max_calls"] == 36
    per_claim = LLMJudge("local", api_key="none", cache=None, max_claims=10, verify="per_claim")
    est = per_claim.estimate(rows, metrics=["faithfulness"])
    assert (est.calls, est.fallback_calls, est.max_calls) == (9, 0, 33)


def test_after_a_fallback_the_estimate_counts_the_per_claim_calls_a_run_made():
    def misbind(body):
        data = json.loads(rule_based_reply(body))
        if "claim_1" in data and "claim_2" in data:
            data["claim_1"], data["claim_2"] = data["claim_2"], data["claim_1"]
        return json.dumps(data)

    rows = make_rows(3)
    with LocalOpenAIServer(misbind) as server:
        judge = llm(server)
        before = judge.estimate(rows, metrics=["faithfulness"])
        out = rows.rag.judge(judge, metrics=["faithfulness"], progress=False)
        made = judge.last_run.calls  # distinct calls: claims, the (unbound) batch, and one per claim
        assert made == 3 * (1 + 1 + 2) and server.requests_received == 3 * (1 + 2 + 2)
        after = judge.estimate(rows, metrics=["faithfulness"])
    assert before.calls + before.fallback_calls == made <= before.max_calls
    assert (after.calls, after.cached, after.new_calls) == (made, made, 0)  # foreseen, and all cached
    assert out["faithfulness"].tolist() == [0.5, 0.5, 0.5]


# ---- a busy cache is busy, not corrupted ---------------------------------------------------------


_HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.execute("INSERT INTO calls VALUES ('held', 'k', 'f', '{}', 0, 0, 1, 0)")
print("locked", flush=True)
sys.stdin.read()
conn.execute("ROLLBACK")
"""


def test_a_cache_locked_by_another_process_says_busy_and_never_advises_deleting(tmp_path):
    rows = make_rows(2)
    path = tmp_path / "judge-cache.sqlite3"
    CallCache(path).close()
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with LocalOpenAIServer() as server:
            cache = CallCache(path, busy_timeout=0.3)
            with pytest.raises(CacheBusyError) as info:
                rows.rag.judge(llm(server, cache=cache), metrics=["relevance"], progress=False)
            message = str(info.value)
            assert "busy" in message and "busy_timeout=0.3s" in message and "healthy" in message
            assert "delete" not in message.lower() and "corrupt" not in message.lower()
            assert isinstance(info.value, JudgeError)
            holder.stdin.close()
            holder.wait(timeout=10)
            out = rows.rag.judge(llm(server, cache=cache), metrics=["relevance"], progress=False)
            assert out["judge_error"].isna().all() and len(cache) == 2
            cache.close()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(timeout=10)


# ---- credentials never leak ------------------------------------------------------------------------


KEY = "sk-raglab-SECRET-0123456789"


def _leak_places(out, judge, tmp_path, caplog, caught) -> dict[str, str]:
    """Every place a derived string can end up, as text."""
    files = {}
    out.to_json(tmp_path / "out.json", default_handler=str)
    out.astype({c: str for c in out.columns if out[c].dtype == object}).to_parquet(tmp_path / "out.parquet")
    for f in sorted(tmp_path.rglob("*")):
        if f.is_file():
            files[f.name] = f.read_bytes().decode("latin-1")  # the raw bytes (sqlite file and its WAL included)
    return {
        "frame": out.to_string() + json.dumps(out.attrs, default=str),
        "files": "\n".join(files.values()),
        "logs": "\n".join(r.getMessage() for r in caplog.records),
        "warnings": "\n".join(str(w.message) for w in caught),
        "repr": repr(judge) + str(judge.record()) + str(judge.base_url),
    }


def _assert_clean(places: dict[str, str], *secrets: str) -> None:
    for where, text in places.items():
        for secret in secrets:
            assert secret not in text, f"the secret leaked into {where}"


def test_an_echoed_authorization_header_never_leaks(tmp_path, caplog):
    rows = make_rows(3)
    caplog.set_level(logging.DEBUG)
    with LocalOpenAIServer(api_key=KEY) as server, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        server.echo_headers_next(100, match="raglab_claims")  # claims carry the echo
        server.echo_headers_next(2, match="raglab_verdicts")  # copies mismatch: one row falls back (logged)
        server.echo_headers_next(100, match="raglab_verdict")  # then every verification: per-claim reasons echo
        server.echo_headers_next(1, status=400, match="raglab_relevance")  # an error message quoting it
        judge = llm(server, api_key=KEY, cache=tmp_path / "cache", max_concurrency=1)
        out = rows.rag.judge(judge, metrics=["faithfulness", "relevance"], progress=False)
        assert all(h["authorization"] == f"Bearer {KEY}" for h in server.headers)  # the key was sent, and echoed
    places = _leak_places(out, judge, tmp_path, caplog, caught)
    _assert_clean(places, KEY)
    reasons = " ".join(" ".join(r) for r in out["faithfulness_reasons"])
    claims = " ".join(" ".join(c) for c in out["faithfulness_claims"])
    assert "authorization: Bearer ***" in reasons and "authorization: Bearer ***" in claims  # echoed, scrubbed
    assert "authorization: Bearer ***" in out.loc[0, "relevance_error"]
    assert "verifying claims one by one" in places["logs"] and "Bearer ***" in places["logs"]
    assert judge.last_run.fallbacks == 3 and out["faithfulness"].notna().all()


def test_the_key_of_an_error_that_echoes_it_is_scrubbed_from_the_judge_error_raised():
    rows = make_rows(2)
    with LocalOpenAIServer(api_key=KEY) as server:
        server.echo_headers_next(1, status=401)
        with pytest.raises(JudgeError) as info:
            rows.rag.judge(llm(server, api_key=KEY), metrics=["relevance"], progress=False)
    assert "HTTP 401" in str(info.value) and "Bearer ***" in str(info.value) and KEY not in str(info.value)


def test_credentials_in_base_url_never_leak(tmp_path, caplog):
    rows = make_rows(2)
    password = "Pa55-word-SECRET"
    caplog.set_level(logging.DEBUG)
    with LocalOpenAIServer() as server, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        url = server.base_url.replace("http://", f"http://alice:{password}@")
        server.echo_headers_next(100)
        judge = llm(server, base_url=url, cache=tmp_path / "cache")
        assert judge.base_url == server.base_url.replace("http://", "http://***@")
        out = rows.rag.judge(judge, metrics=["faithfulness", "relevance"], progress=False)
        sent = server.headers[0]["authorization"]
        assert sent.startswith("Basic ")  # what httpx makes of a URL's user and password
        server.clear_faults()
        server.fail_next(1, status=404)
        with pytest.raises(JudgeError) as info:
            make_rows(3).iloc[2:].rag.judge(judge, metrics=["relevance"], progress=False)
        same_server = llm(server, base_url=server.base_url)
        assert judge.fingerprint == same_server.fingerprint  # credentials say who pays, not which judge
    places = _leak_places(out, judge, tmp_path, caplog, caught)
    places["error"] = str(info.value)
    _assert_clean(places, password, sent.split()[1], f"alice:{password}")
    assert "***@127.0.0.1" in places["error"] and "***@127.0.0.1" in repr(judge)
    assert "authorization: ***;" in " ".join(out["relevance_reason"])


def test_a_clients_default_headers_never_leak(tmp_path, caplog):
    import openai

    rows = make_rows(2)
    header_key = "azure-SECRET-key-987654"
    caplog.set_level(logging.DEBUG)
    with LocalOpenAIServer() as server, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="placeholder",
                                    default_headers={"api-key": header_key, "Authorization": f"Bearer {KEY}"})
        server.echo_headers_next(100)
        judge = LLMJudge("local", client=client, cache=tmp_path / "cache", backoff=0.01)
        out = rows.rag.judge(judge, metrics=["faithfulness", "relevance"], progress=False)
        assert server.headers[0]["api-key"] == header_key and server.headers[0]["authorization"] == f"Bearer {KEY}"
    places = _leak_places(out, judge, tmp_path, caplog, caught)
    _assert_clean(places, KEY, header_key)
    assert "api-key: ***" in " ".join(out["relevance_reason"])
