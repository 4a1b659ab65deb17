"""raglab.testing: the local OpenAI-compatible server, driven by the real openai client over loopback."""

from __future__ import annotations

import json
import threading

import openai
import pytest
from openai import OpenAI

from raglab.testing import LocalOpenAIServer, Reply, extract_section, rule_based_reply, server_process

SCHEMA = {"type": "object", "properties": {"claims": {"type": "array", "items": {"type": "string"}}},
          "required": ["claims"], "additionalProperties": False}


def _format(name: str) -> dict:
    return {"type": "json_schema", "json_schema": {"name": name, "schema": SCHEMA, "strict": True}}


def _client(server: LocalOpenAIServer, **kw) -> OpenAI:
    return OpenAI(base_url=server.base_url, api_key=kw.pop("api_key", "test-key"), max_retries=0, **kw)


def _ask(client: OpenAI, user: str, name: str = "raglab_claims", **kw):
    return client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": user}], response_format=_format(name), **kw
    )


def test_rule_based_claims_and_usage():
    with LocalOpenAIServer() as server:
        reply = _ask(_client(server), "<answer>\nParis is big. I don't know the rest. It is old [1].\n</answer>")
    choice = reply.choices[0]
    assert choice.finish_reason == "stop"
    assert json.loads(choice.message.content) == {"claims": ["Paris is big.", "It is old [1]."]}
    assert reply.usage.prompt_tokens > 0 and reply.usage.completion_tokens > 0
    assert server.requests_received == 1 and server.count("raglab_claims") == 1


def test_rule_based_verdicts_relevance_declined():
    body = {"response_format": _format("raglab_verdicts"), "messages": [{"role": "user", "content": (
        '<context>\n<passage id="1">\nThe bridge opened in 1937.\n</passage>\n</context>\n'
        '<claims>\n["The bridge opened in 1937.", "The bridge is blue."]\n</claims>')}]}
    verdicts = json.loads(rule_based_reply(body))["verdicts"]
    assert [v["verdict"] for v in verdicts] == ["supported", "not_supported"]
    assert list(verdicts[0]) == ["claim", "evidence", "reason", "verdict"]  # evidence before the label
    body = {"response_format": _format("raglab_relevance"),
            "messages": [{"role": "user", "content": "<question>\nWhen did the bridge open?\n</question>\n<answer>\nThe bridge opened in 1937.\n</answer>"}]}
    assert json.loads(rule_based_reply(body))["verdict"] == "relevant"
    body["response_format"] = _format("raglab_declined")
    body["messages"][0]["content"] = "<answer>\nI don't know.\n</answer>"
    assert json.loads(rule_based_reply(body))["verdict"] == "declined"
    assert rule_based_reply({"response_format": _format("other")}) == "{}"


def test_scripted_replies_cycle_and_callables():
    with LocalOpenAIServer(responder=["one", Reply("two", finish_reason="length")]) as server:
        client = _client(server)
        got = [(r.choices[0].message.content, r.choices[0].finish_reason) for r in (_ask(client, "x") for _ in range(3))]
    assert got == [("one", "stop"), ("two", "length"), ("one", "stop")]
    with LocalOpenAIServer(responder=lambda body: body["model"].upper()) as server:
        assert _ask(_client(server), "x").choices[0].message.content == "M"


def test_429_with_retry_after_then_success():
    with LocalOpenAIServer(responder=['{"claims": []}']) as server:
        client = _client(server)
        server.fail_next(1, status=429, retry_after=1.5)
        with pytest.raises(openai.RateLimitError) as info:
            _ask(client, "x")
        assert info.value.response.headers["retry-after"] == "1.5"
        assert _ask(client, "x").choices[0].message.content == '{"claims": []}'
    assert server.requests_received == 2


def test_500_malformed_invalid_and_truncated():
    with LocalOpenAIServer(responder=['{"claims": ["a", "b", "c"]}']) as server:
        client = _client(server)
        server.fail_next(1, status=500)
        with pytest.raises(openai.InternalServerError):
            _ask(client, "x")
        server.malform_next(1)
        with pytest.raises(json.JSONDecodeError):
            json.loads(_ask(client, "x").choices[0].message.content)
        server.invalid_next(1)
        assert json.loads(_ask(client, "x").choices[0].message.content) == {"unexpected": True}
        server.truncate_next(1)
        choice = _ask(client, "x").choices[0]
        assert choice.finish_reason == "length" and len(choice.message.content) < 27
        assert _ask(client, "x").choices[0].finish_reason == "stop"  # faults are used up


def test_faults_can_target_one_schema():
    with LocalOpenAIServer(responder=['{"claims": []}']) as server:
        client = _client(server)
        server.fail_next(1, status=503, match="verdicts")
        assert _ask(client, "x", name="raglab_claims").choices[0].finish_reason == "stop"
        with pytest.raises(openai.InternalServerError):
            _ask(client, "x", name="raglab_verdicts")


def test_small_max_tokens_truncates_with_length():
    with LocalOpenAIServer(responder=['{"claims": ["' + "x" * 200 + '"]}']) as server:
        client = _client(server)
        assert _ask(client, "x", max_completion_tokens=10).choices[0].finish_reason == "length"
        assert _ask(client, "x", max_tokens=10).choices[0].finish_reason == "length"
        assert _ask(client, "x", max_completion_tokens=1000).choices[0].finish_reason == "stop"
        assert [b.get("max_completion_tokens", b.get("max_tokens")) for b in server.requests] == [10, 10, 1000]


def test_api_key_is_required_when_set_and_not_recorded():
    with LocalOpenAIServer(responder=["{}"], api_key="sk-right") as server:
        with pytest.raises(openai.AuthenticationError):
            _ask(_client(server, api_key="sk-wrong"), "x")
        assert _ask(_client(server, api_key="sk-right"), "x").choices[0].message.content == "{}"
    assert "sk-right" not in json.dumps(server.requests)


def test_responses_endpoint():
    with LocalOpenAIServer() as server:
        client = _client(server)
        response = client.responses.create(
            model="m", instructions="split", input=[{"role": "user", "content": "<answer>\nParis is big.\n</answer>"}],
            text={"format": {"type": "json_schema", "name": "raglab_claims", "schema": SCHEMA, "strict": True}},
        )
        assert json.loads(response.output_text) == {"claims": ["Paris is big."]}
        assert response.status == "completed" and response.usage.output_tokens > 0
        response = client.responses.create(
            model="m", input="<answer>\nParis is big and old and famous.\n</answer>", max_output_tokens=2,
            text={"format": {"type": "json_schema", "name": "raglab_claims", "schema": SCHEMA, "strict": True}},
        )
        assert response.status == "incomplete" and response.incomplete_details.reason == "max_output_tokens"


def test_models_and_unknown_paths():
    with LocalOpenAIServer(model="local-judge") as server:
        client = _client(server)
        assert [m.id for m in client.models.list()] == ["local-judge"]
        with pytest.raises(openai.NotFoundError):
            client.post("/nowhere", cast_to=object, body={})


def test_latency_is_served_concurrently():
    """A threaded server: eight requests overlap (counted by the server, not timed).

    Each reply waits until all eight requests are being answered, which only a server that answers
    them concurrently can do (a barrier, so a busy machine cannot make the count flaky).
    """
    barrier = threading.Barrier(8)

    def responder(body):
        barrier.wait(timeout=30)
        return "{}"

    with LocalOpenAIServer(responder=responder, latency=0.01) as server:
        client = _client(server)
        threads = [threading.Thread(target=_ask, args=(client, "x")) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    peak = server.peak_in_flight
    assert server.requests_received == 8 and peak == 8


def test_server_process_and_repr_and_errors():
    with server_process(latency=0.0) as base_url:
        client = OpenAI(base_url=base_url, api_key="x", max_retries=0)
        reply = _ask(client, "<answer>\nRome is old.\n</answer>")
        assert json.loads(reply.choices[0].message.content) == {"claims": ["Rome is old."]}
    server = LocalOpenAIServer()
    assert "stopped" in repr(server)
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.base_url
    with pytest.raises(ValueError, match="responder"):
        LocalOpenAIServer(responder="magic")
    with pytest.raises(ValueError, match="empty list"):
        LocalOpenAIServer(responder=[])
    with pytest.raises(ValueError, match="at least 1"):
        server.fail_next(0)
    assert extract_section("<x>\na\n</x>", "y") is None


def test_hostile_faults_echo_headers_report_any_usage_and_drip():
    with LocalOpenAIServer() as server:
        client = _client(server, api_key="sk-echo-me-123")
        server.echo_headers_next(1)
        server.usage_next(1, prompt_tokens=10**20, completion_tokens=-4)
        server.usage_next(1, prompt_tokens="many")
        server.echo_headers_next(1, status=400)
        echoed = json.loads(_ask(client, "<answer>\nParis is big.\n</answer>").choices[0].message.content)
        raw = client.chat.completions.with_raw_response.create(
            model="m", messages=[{"role": "user", "content": "<answer>\nParis is big.\n</answer>"}],
            response_format=_format("raglab_claims"))
        huge = json.loads(raw.text)["usage"]
        missing = json.loads(client.chat.completions.with_raw_response.create(
            model="m", messages=[{"role": "user", "content": "hi"}], response_format=_format("raglab_claims")).text)["usage"]
        with pytest.raises(openai.BadRequestError, match="authorization: Bearer sk-echo-me-123"):
            _ask(client, "hi")
        assert server.faults_served == 4 and server.headers[0]["authorization"] == "Bearer sk-echo-me-123"
        server.drip_next(1, interval=0.002)
        slow = _ask(client, "<answer>\nParis is big.\n</answer>")  # arrives whole, a byte at a time
    assert echoed["claims"][0].startswith("Paris is big. [request headers: authorization: Bearer sk-echo-me-123;")
    assert huge == {"prompt_tokens": 10**20, "completion_tokens": -4}
    assert missing == {"prompt_tokens": "many"}
    assert json.loads(slow.choices[0].message.content) == {"claims": ["Paris is big."]}
