"""A local OpenAI-compatible HTTP server for tests and demos: no key, no network, no cost.

:class:`LocalOpenAIServer` serves ``POST /v1/chat/completions`` (and ``POST /v1/responses``) on
``127.0.0.1`` in a background thread, so the real ``openai`` client talks to it over loopback
exactly as it would to OpenAI, vLLM, Ollama or a llama.cpp server. Replies honour the request's
JSON-schema ``response_format`` and come from

* the rule-based responder (default): it recognises raglab's judge tasks by their schema name and
  answers them lexically (claims = sentences; a claim is supported when at least 60% of its content
  words occur in the context), so an :class:`~raglab.judge.LLMJudge` pointed at it agrees with
  :class:`~raglab.judge.LexicalJudge`;
* a list of scripted replies (returned in order, cycling), or any callable ``body -> str | Reply``.

Faults are injected for the next requests (optionally only those whose schema name contains a
given text): HTTP errors with ``Retry-After`` (429) or without (500), malformed JSON, JSON that
breaks the schema, truncated replies with ``finish_reason="length"``, replies dripped one byte at a
time (:meth:`~LocalOpenAIServer.drip_next`), replies or errors that echo the request's headers
(:meth:`~LocalOpenAIServer.echo_headers_next`, as a careless proxy does), and any ``usage`` values
(:meth:`~LocalOpenAIServer.usage_next`: huge, negative, missing or not numbers). A request whose
``max_tokens`` (or ``max_completion_tokens`` / ``max_output_tokens``) is too small for the reply
is truncated the same way. Latency is a ``time.sleep`` in the handler thread (the server is
threaded, so it is never the bottleneck). Counters say how many requests arrived.

Examples
--------
>>> from openai import OpenAI
>>> from raglab.testing import LocalOpenAIServer
>>> with LocalOpenAIServer(responder=['{"ok": true}']) as server:
...     client = OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
...     reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
...     reply.choices[0].message.content, server.requests_received
('{"ok": true}', 1)
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import re
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "LocalOpenAIServer",
    "Reply",
    "rule_based_reply",
    "lenient_reply",
    "extract_section",
    "server_process",
]


@dataclass
class Reply:
    """A scripted reply: the message content and how the server delivers it.

    ``status`` other than 200 sends an error with ``headers`` (e.g. ``{"Retry-After": "1"}``);
    ``finish_reason="length"`` marks a truncated reply.
    """

    content: str | None = None
    finish_reason: str = "stop"
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class _Fault:
    kind: str  # "status" | "malformed" | "invalid" | "truncate" | "drip" | "echo" | "usage"
    remaining: int
    match: str | None
    status: int = 500
    retry_after: float | None = None
    interval: float = 0.04  # drip: seconds between bytes
    usage: dict[str, Any] = field(default_factory=dict)  # usage: the values to report

_DROP = object()  # usage_next: leave the field out


def _echo(content: str, headers: dict[str, str]) -> str:
    """``content`` with the request's headers (credentials first) appended to every text of the JSON reply.

    Verdict labels stay as they were; reasons, evidence, claims and claim copies carry the echo, as
    a reply that quotes its request would (so a batched verification's copies no longer match).
    """
    ordered = sorted(headers.items(), key=lambda kv: (kv[0] not in ("authorization", "api-key", "x-api-key"), kv[0]))
    echo = " [request headers: " + "; ".join(f"{k}: {v}" for k, v in ordered) + "]"

    def walk(value: Any, key: str | None = None) -> Any:
        if isinstance(value, str):
            return value if key == "verdict" else value + echo
        if isinstance(value, list):
            return [walk(v, key) for v in value]
        if isinstance(value, dict):
            return {k: walk(v, k) for k, v in value.items()}
        return value

    try:
        return json.dumps(walk(json.loads(content)))
    except ValueError:
        return content + echo


def extract_section(text: str, tag: str) -> str | None:
    """The text between ``<tag>`` and ``</tag>`` in a prompt (first occurrence), or None.

    The judge writes each input as a JSON value (see ``raglab.judge._prompts.encode``): a JSON
    string is decoded; anything else (a JSON object, nested sections) comes back as written.

    Examples
    --------
    >>> extract_section('<answer>\\n"Paris."\\n</answer>', "answer")
    'Paris.'
    >>> extract_section("<answer>\\nParis.\\n</answer>", "answer")
    'Paris.'
    """
    match = re.search(rf"<{tag}(?:\s[^>]*)?>\n?(.*?)\n?</{tag}>", text, flags=re.S)
    return _decoded(match.group(1)) if match else None


def _decoded(block: str) -> str:
    try:
        value = json.loads(block)
    except ValueError:
        return block
    return value if isinstance(value, str) else block


def _passage_texts(block: str) -> list[str]:
    """The passages of a ``<context>`` block, decoded."""
    found = re.findall(r'<passage(?:\s[^>]*)?>\n?(.*?)\n?</passage>', block, flags=re.S)
    return [_decoded(p) for p in found] if found else [block]


def _user_text(messages: Sequence[dict[str, Any]]) -> str:
    parts = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "\n".join(parts)


_PASSAGE_TAG = re.compile(r'</?passage(?:\s[^>]*)?>')


def _is_refusal(text: str) -> bool:
    """Same rule as :func:`raglab.abstention.detect_declined` (its default patterns; empty = refusal)."""
    from raglab.abstention import refusal_regex

    return not text.strip() or refusal_regex().search(text) is not None


def _claims_of(answer: str) -> list[str]:
    from raglab.tripwires import content_words, split_sentences

    return [s for s in split_sentences(answer) if content_words(s) and not _is_refusal(s)]


def _parse_claims(block: str | None) -> list[str]:
    if not block:
        return []
    try:
        claims = json.loads(block)
    except json.JSONDecodeError:
        return [line.split(". ", 1)[-1] for line in block.splitlines() if line.strip()]
    if isinstance(claims, dict):  # {"claim_1": ..., "claim_2": ...}
        return [str(c) for c in claims.values()]
    return [str(c) for c in claims] if isinstance(claims, list) else []


def rule_based_reply(body: dict[str, Any], *, threshold: float = 0.6) -> str:
    """The default responder: answer raglab's judge tasks lexically, by the schema name.

    * ``raglab_claims``: the sentences of ``<answer>`` that hold a content word and are not refusals;
    * ``raglab_verdicts*`` / ``raglab_verdict*``: each claim in ``<claims>`` (or the one ``<claim>``)
      is supported when at least ``threshold`` of its content words occur in ``<context>`` (or
      ``<reference>``); the evidence lists the matched words;
    * the label calls (``raglab.judge._metrics.LABEL_CALLS``, read at each request): their own
      lexical verdict with a threshold of one half, as :class:`~raglab.judge.LexicalJudge` gives it
      (``raglab_relevance``: half of the question's content words occur in the answer;
      ``raglab_declined``: :func:`raglab.abstention.detect_declined` on the answer;
      ``raglab_passage_relevance``: per passage), so a call registered later is answered too.

    Any other schema gets ``{}``. It is a stand-in for a model in tests, not a judge.

    Examples
    --------
    >>> body = {"messages": [{"role": "user", "content": "<answer>Paris is the capital of France. I am not sure.</answer>"}],
    ...         "response_format": {"type": "json_schema", "json_schema": {"name": "raglab_claims", "schema": {}}}}
    >>> rule_based_reply(body)
    '{"claims": ["Paris is the capital of France."]}'
    """
    from raglab.judge._metrics import LABEL_CALLS
    from raglab.judge._schemas import claim_keys
    from raglab.tripwires import content_words

    name = _schema_name(body) or ""
    text = _user_text(body.get("messages") or [])
    for call in LABEL_CALLS.values():  # the judge metric registry's label calls, by their own rule
        if name == call.schema_name:
            verdict, reason = call.lexical({tag: extract_section(text, tag) or "" for tag in call.sections}, 0.5, None)
            return json.dumps({"reason": reason, "verdict": call.labels[0 if verdict else 1]})
    if name.startswith("raglab_claims"):
        return json.dumps({"claims": _claims_of(extract_section(text, "answer") or "")})
    if name.startswith("raglab_verdict"):
        source = extract_section(text, "context")
        if source is None:
            source = extract_section(text, "reference") or ""
        else:
            source = "\n".join(_passage_texts(source))
        source_words = content_words(_PASSAGE_TAG.sub(" ", source))

        def verdict(claim: str) -> dict[str, str]:
            words = content_words(claim)
            found = sorted(words & source_words)
            share = len(found) / len(words) if words else 0.0
            return {
                "claim": claim,
                "evidence": " ".join(found),
                "reason": f"{len(found)} of {len(words)} content words found",
                "verdict": "supported" if words and share >= threshold else "not_supported",
            }

        if name.startswith("raglab_verdicts"):
            claims = _parse_claims(extract_section(text, "claims"))
            if _is_keyed(body):  # one property per claim, as raglab's judge asks
                return json.dumps({key: verdict(c) for key, c in zip(claim_keys(len(claims)), claims)})
            return json.dumps({"verdicts": [verdict(c) for c in claims]})
        single = verdict(extract_section(text, "claim") or "")
        del single["claim"]
        return json.dumps(single)
    return "{}"


def lenient_reply(body: dict[str, Any], *, seed: int = 0) -> str:
    """A lenient model: schema-valid JSON whose free parts are drawn, the same for the same request.

    It starts from :func:`rule_based_reply` and then, as a small local model at temperature 0
    often does, (a) gives every array a length drawn between the schema's ``minItems`` and
    ``maxItems`` (dropping or repeating items; an unbounded array of n items gets 1 to n + 1), (b) writes
    the properties of an object in a shuffled order, (c) sometimes leaves a verdict's ``claim``
    copy empty or copies the previous claim's verdict into the next slot. The draw depends only on
    the request and ``seed``, so retrying the same request gets the same reply.

    Examples
    --------
    >>> body = {"messages": [{"role": "user", "content": '<answer>\\n"Paris is big. Rome is old."\\n</answer>'}],
    ...         "response_format": {"type": "json_schema", "json_schema": {"name": "raglab_claims", "schema": {
    ...             "type": "object", "properties": {"claims": {"type": "array", "items": {"type": "string"}}}}}}}
    >>> lenient_reply(body) == lenient_reply(body)
    True
    """
    import hashlib
    import random

    from raglab.judge._schemas import claim_keys

    data = json.loads(rule_based_reply(body))
    digest = hashlib.sha256(json.dumps([seed, body.get("messages"), body.get("input"), _schema(body)],
                                       sort_keys=True, default=str).encode()).digest()
    rng = random.Random(digest)

    def draw(value: Any, schema: dict[str, Any]) -> Any:
        if isinstance(value, list):
            low = int(schema.get("minItems", 1 if value else 0))  # something to say is never said as nothing
            high = int(schema.get("maxItems", len(value) + 1))
            n = rng.randint(low, max(low, high))
            pool = value or [None]
            items = [value[i] if i < len(value) else rng.choice(pool) for i in range(n)]
            items = [x for x in items if x is not None]
            return [draw(x, schema.get("items") or {}) for x in items]
        if isinstance(value, dict):
            props = schema.get("properties") or {}
            keys = list(value)
            rng.shuffle(keys)
            out = {k: draw(value[k], props.get(k) or {}) for k in keys}
            if "claim_1" in out:  # a keyed verification: echo or not, repeat a verdict now and then
                ordered = claim_keys(len(out))  # rule_based_reply gave one key per claim
                for prev, key in zip(ordered, ordered[1:]):
                    if rng.random() < 0.15:
                        out[key] = dict(out[prev])
                for key in ordered:
                    if rng.random() < 0.15:
                        out[key]["claim"] = ""
            return out
        return value

    return json.dumps(draw(data, _schema(body)))


def _format(body: dict[str, Any]) -> dict[str, Any]:
    """The structured-output format of a request: Chat Completions' ``response_format.json_schema``
    or the Responses API's ``text.format`` ({} when it asks for none)."""
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and isinstance(fmt.get("json_schema"), dict):
        return fmt["json_schema"]
    text = body.get("text")
    if isinstance(text, dict) and isinstance(text.get("format"), dict):
        return text["format"]
    return {}


def _schema(body: dict[str, Any]) -> dict[str, Any]:
    return _format(body).get("schema") or {}


def _is_keyed(body: dict[str, Any]) -> bool:
    return "claim_1" in (_schema(body).get("properties") or {})


def _schema_name(body: dict[str, Any]) -> str | None:
    return _format(body).get("name")


def _approx_tokens(text: str) -> int:
    return max(1, len(text) // 4)


class _QuietServer(ThreadingHTTPServer):
    """A client that hangs up (a deadline, a cancelled run) is normal here: no traceback on stderr."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class LocalOpenAIServer:
    """An OpenAI-compatible server on ``127.0.0.1`` in a background thread (a context manager).

    Parameters
    ----------
    responder : "rules", "lenient", list of str or Reply, or callable
        ``"rules"`` (default) uses :func:`rule_based_reply`; ``"lenient"`` uses :func:`lenient_reply`
        (schema-valid replies with freely drawn array lengths, shuffled or repeated verdicts); a list
        is replayed in order (cycling);
        a callable gets the JSON request body and returns a str or :class:`Reply`.
    latency : float
        Seconds every request sleeps before it is answered.
    api_key : str, optional
        When set, requests must carry ``Authorization: Bearer <api_key>`` (else 401).
    port : int
        0 (default) picks a free port.

    Attributes
    ----------
    base_url : str
        ``http://127.0.0.1:<port>/v1`` to pass to ``OpenAI(base_url=...)``.
    requests_received : int
        Every request that arrived (faults included).
    peak_in_flight : int
        The most requests being answered at the same time (how much concurrency a client achieved).
    requests : list of dict
        The JSON bodies received, in order.
    headers : list of dict
        The headers of those requests (names lower-cased), in order: tests check what was sent.
    faults_served : int
        Requests answered with an injected fault.

    Examples
    --------
    >>> with LocalOpenAIServer(latency=0.0) as server:
    ...     server.fail_next(2, status=429, retry_after=0.5)
    ...     server.base_url.startswith("http://127.0.0.1:")
    True
    """

    def __init__(
        self,
        responder: str | Sequence[str | Reply] | Callable[[dict[str, Any]], str | Reply] = "rules",
        *,
        latency: float = 0.0,
        api_key: str | None = None,
        port: int = 0,
        model: str = "raglab-local",
    ) -> None:
        if isinstance(responder, str):
            if responder not in ("rules", "lenient"):
                raise ValueError(f"The value for `responder` must be one of ['rules', 'lenient'], a list or a callable, "
                                 f"but {responder!r} was passed.")
            self._respond: Callable[[dict[str, Any]], str | Reply] = (
                rule_based_reply if responder == "rules" else lenient_reply)
        elif callable(responder):
            self._respond = responder
        else:
            script = list(responder)
            if not script:
                raise ValueError("`responder` is an empty list; give at least one scripted reply")
            cycle = itertools.cycle(script)
            script_lock = threading.Lock()

            def scripted(_body: dict[str, Any]) -> str | Reply:
                with script_lock:
                    return next(cycle)

            self._respond = scripted
        self.latency = float(latency)
        self.model = model
        self._api_key = api_key
        self._port = port
        self._lock = threading.Lock()
        self._faults: list[_Fault] = []
        self.requests_received = 0
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []  # the request headers, lower-cased names, in order
        self.faults_served = 0
        self._in_flight = 0
        self.peak_in_flight = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle ----------------------------------------------------------------------------
    def start(self) -> LocalOpenAIServer:
        """Bind to 127.0.0.1 and serve in a daemon thread; returns self."""
        if self._httpd is not None:
            return self
        server = self

        class Handler(_Handler):
            owner = server

        httpd = _QuietServer(("127.0.0.1", self._port), Handler, bind_and_activate=False)
        httpd.daemon_threads = True
        httpd.request_queue_size = 256
        httpd.allow_reuse_address = True
        httpd.server_bind()
        httpd.server_activate()
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="raglab-local-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> LocalOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the server is not running; use `with LocalOpenAIServer() as server:`")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __repr__(self) -> str:
        where = self.base_url if self._httpd is not None else "stopped"
        return f"LocalOpenAIServer({where}, latency={self.latency}, requests_received={self.requests_received})"

    # ---- faults -------------------------------------------------------------------------------
    def fail_next(self, n: int = 1, *, status: int = 500, retry_after: float | None = None, match: str | None = None) -> None:
        """Answer the next ``n`` requests (whose schema name contains ``match``) with HTTP ``status``."""
        self._add(_Fault("status", n, match, status=status, retry_after=retry_after))

    def malform_next(self, n: int = 1, *, match: str | None = None) -> None:
        """Reply to the next ``n`` requests with content that is not valid JSON."""
        self._add(_Fault("malformed", n, match))

    def invalid_next(self, n: int = 1, *, match: str | None = None) -> None:
        """Reply to the next ``n`` requests with valid JSON that does not fit the schema."""
        self._add(_Fault("invalid", n, match))

    def truncate_next(self, n: int = 1, *, match: str | None = None) -> None:
        """Reply to the next ``n`` requests with half the content and ``finish_reason="length"``."""
        self._add(_Fault("truncate", n, match))

    def drip_next(self, n: int = 1, *, interval: float = 0.04, match: str | None = None) -> None:
        """Send the next ``n`` replies one byte every ``interval`` seconds (each read is quick; the whole is slow).

        The drip stops when the client hangs up or the server stops.
        """
        if not interval > 0:
            raise ValueError(f"`interval` must be > 0 seconds, got {interval!r}")
        self._add(_Fault("drip", n, match, interval=float(interval)))

    def echo_headers_next(self, n: int = 1, *, status: int = 200, match: str | None = None) -> None:
        """Echo the request's headers (``Authorization`` included) in the next ``n`` replies.

        ``status=200``: appended to the reply's free texts (reasons, evidence, claims); another
        status: an error whose message quotes the headers.
        """
        self._add(_Fault("echo", n, match, status=status))

    def usage_next(self, n: int = 1, *, prompt_tokens: Any = _DROP, completion_tokens: Any = _DROP,
                   match: str | None = None) -> None:
        """Report these ``usage`` values (any JSON value: ``10**20``, ``-5``, ``"many"``, None) in the next ``n`` replies.

        A field not given is left out of ``usage``.
        """
        self._add(_Fault("usage", n, match, usage={"prompt_tokens": prompt_tokens,
                                                   "completion_tokens": completion_tokens}))

    def _add(self, fault: _Fault) -> None:
        if fault.remaining < 1:
            raise ValueError(f"`n` must be at least 1, got {fault.remaining}")
        with self._lock:
            self._faults.append(fault)

    def clear_faults(self) -> None:
        """Forget every pending fault."""
        with self._lock:
            self._faults.clear()

    def _take_fault(self, name: str | None) -> _Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.match is None or (name is not None and fault.match in name):
                    fault.remaining -= 1
                    if fault.remaining == 0:
                        self._faults.remove(fault)
                    self.faults_served += 1
                    return fault
        return None

    def count(self, match: str | None = None) -> int:
        """Requests received whose schema name contains ``match`` (all when None)."""
        with self._lock:
            bodies = list(self.requests)
        if match is None:
            return len(bodies)
        return sum(1 for b in bodies if match in (_schema_name(b) or ""))

    def reset_counts(self) -> None:
        """Zero the request counters and forget the recorded bodies."""
        with self._lock:
            self.requests_received = 0
            self.requests = []
            self.headers = []
            self.faults_served = 0
            self.peak_in_flight = self._in_flight

    # ---- answering ----------------------------------------------------------------------------
    def _answer(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, dict[str, str], bytes]:
        with self._lock:
            self.requests_received += 1
            self._in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self._in_flight)
        try:
            return self._reply(path, headers, raw)
        finally:
            with self._lock:
                self._in_flight -= 1

    def _reply(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, dict[str, str], bytes]:
        if self._api_key is not None and headers.get("authorization") != f"Bearer {self._api_key}":
            return _error(401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key")
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            return _error(400, "The request body is not valid JSON.", "invalid_request_error", None)
        with self._lock:
            self.requests.append(body)
            self.headers.append(dict(headers))
        if self.latency > 0:
            time.sleep(self.latency)
        name = _schema_name(body)
        fault = self._take_fault(name)
        refused = _fault_error(fault, headers)
        if refused is not None:
            return refused

        responses_api = path.rstrip("/").endswith("/responses")
        if responses_api:
            body = _responses_as_chat(body)
        reply = self._respond(body)
        if not isinstance(reply, Reply):
            reply = Reply(content=str(reply))
        if reply.status != 200:
            return _error(reply.status, reply.content or "scripted error", "server_error", None, reply.headers)
        content, finish = _faulted(fault, reply.content or "", reply.finish_reason, headers)
        limit = body.get("max_completion_tokens") or body.get("max_tokens")
        if isinstance(limit, int) and _approx_tokens(content) > limit:
            content, finish = content[: max(0, limit * 4)], "length"
        prompt_tokens: Any = _approx_tokens(_user_text(body.get("messages") or []))
        completion_tokens: Any = _approx_tokens(content)
        make = _responses_payload if responses_api else _chat_payload
        payload = make(body, content, finish, prompt_tokens, completion_tokens, self.model)
        if fault is not None and fault.kind == "usage":
            _replace_usage(payload["usage"], fault.usage, responses_api)
        encoded = json.dumps(payload).encode()
        if fault is not None and fault.kind == "drip":
            return 200, {}, encoded, fault.interval
        return 200, {}, encoded


def _fault_error(fault: Any, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes] | None:
    """The error reply of an injected error fault (``echo`` with a status, ``status``), or None."""
    if fault is not None and fault.kind == "echo" and fault.status != 200:
        quoted = "; ".join(f"{k}: {v}" for k, v in sorted(headers.items(), key=lambda kv: kv[0] != "authorization"))
        return _error(fault.status, f"Bad request (raglab.testing); you sent headers: {quoted}",
                      "invalid_request_error", None)
    if fault is not None and fault.kind == "status":
        extra = {} if fault.retry_after is None else {"Retry-After": f"{fault.retry_after:g}"}
        message = "Rate limit reached (raglab.testing)." if fault.status == 429 else "Injected server error (raglab.testing)."
        return _error(fault.status, message, "requests" if fault.status == 429 else "server_error", None, extra)
    return None


def _faulted(fault: Any, content: str, finish: str, headers: dict[str, str]) -> tuple[str, str]:
    """The reply's (content, finish reason) after a content fault (malformed, invalid, truncate, echo)."""
    kind = None if fault is None else fault.kind
    if kind == "malformed":
        return content[: max(1, len(content) // 2)] + ' ,,} "not json', finish
    if kind == "invalid":
        return json.dumps({"unexpected": True}), finish
    if kind == "truncate":
        return content[: len(content) // 2], "length"
    if kind == "echo":
        return _echo(content, headers), finish
    return content, finish


def _chat_payload(body: dict[str, Any], content: str, finish: str, prompt_tokens: Any, completion_tokens: Any,
                  model: str) -> dict[str, Any]:
    """A chat-completions response."""
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model") or model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None},
                "finish_reason": finish,
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _replace_usage(usage: dict[str, Any], replaced: dict[str, Any], responses_api: bool) -> None:
    """A ``usage`` fault: the given token counts replaced (or dropped), and no total."""
    names = ({"prompt_tokens": "input_tokens", "completion_tokens": "output_tokens"} if responses_api
             else {"prompt_tokens": "prompt_tokens", "completion_tokens": "completion_tokens"})
    for field_name, value in replaced.items():
        usage.pop(names[field_name], None)
        if value is not _DROP:
            usage[names[field_name]] = value
    usage.pop("total_tokens", None)


def _responses_as_chat(body: dict[str, Any]) -> dict[str, Any]:
    """A Responses-API request re-shaped as a chat request for the responders."""
    messages: list[dict[str, Any]] = []
    if body.get("instructions"):
        messages.append({"role": "system", "content": body["instructions"]})
    items = body.get("input")
    if isinstance(items, str):
        messages.append({"role": "user", "content": items})
    elif isinstance(items, list):
        for item in items:
            if isinstance(item, dict):
                content = item.get("content")
                if isinstance(content, list):
                    content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
                messages.append({"role": item.get("role", "user"), "content": content})
    out = dict(body)
    out["messages"] = messages
    out["max_completion_tokens"] = body.get("max_output_tokens")
    return out


def _responses_payload(body: dict[str, Any], content: str, finish: str, prompt_tokens: int,
                       completion_tokens: int, model: str) -> dict[str, Any]:
    incomplete = finish == "length"
    return {
        "id": f"resp_{uuid.uuid4().hex[:12]}",
        "object": "response",
        "created_at": time.time(),
        "model": body.get("model") or model,
        "status": "incomplete" if incomplete else "completed",
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "error": None,
        "output": [
            {
                "id": f"msg_{uuid.uuid4().hex[:12]}",
                "type": "message",
                "role": "assistant",
                "status": "incomplete" if incomplete else "completed",
                "content": [{"type": "output_text", "text": content, "annotations": []}],
            }
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": prompt_tokens,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": completion_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _error(status: int, message: str, kind: str, code: str | None,
           headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    payload = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return status, dict(headers or {}), json.dumps(payload).encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    owner: LocalOpenAIServer

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        return

    def _send(self, status: int, headers: dict[str, str], payload: bytes, drip: float | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            if drip is None:
                self.wfile.write(payload)
                return
            self.wfile.flush()
            for i in range(len(payload)):  # one byte at a time: every read is quick, the reply is not
                if self.owner._httpd is None:  # the server stopped: stop dripping
                    self.close_connection = True
                    return
                self.wfile.write(payload[i:i + 1])
                self.wfile.flush()
                time.sleep(drip)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (cancelled run): not an error here
            self.close_connection = True

    def do_POST(self) -> None:  # noqa: N802 (http.server naming)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = self.path.split("?", 1)[0]
        if not (path.endswith("/chat/completions") or path.endswith("/responses")):
            self._send(*_error(404, f"Unknown path {path}", "invalid_request_error", None))
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        self._send(*self.owner._answer(path, headers, raw))

    def do_GET(self) -> None:  # noqa: N802
        if self.path.split("?", 1)[0].endswith("/models"):
            payload = {"object": "list", "data": [{"id": self.owner.model, "object": "model", "created": 0, "owned_by": "raglab"}]}
            self._send(200, {}, json.dumps(payload).encode())
            return
        self._send(*_error(404, f"Unknown path {self.path}", "invalid_request_error", None))


@contextlib.contextmanager
def server_process(*, latency: float = 0.0, python: str | None = None) -> Iterator[str]:
    """Run a rule-based :class:`LocalOpenAIServer` in a separate process; yields its base URL.

    A separate process keeps the server's work off the client's interpreter (benchmarks use it so
    the measured concurrency is the client's alone).

    Examples
    --------
    >>> with server_process(latency=0.0) as base_url:   # doctest: +SKIP
    ...     base_url.startswith("http://127.0.0.1:")
    True
    """
    cmd = [python or sys.executable, "-m", "raglab.testing", "--latency", str(latency)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        if not line.startswith("READY "):
            raise RuntimeError(f"the local server process did not start (said {line!r})")
        yield line.split()[1]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover
            proc.kill()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m raglab.testing``: serve until stdin closes; prints ``READY <base_url>``."""
    parser = argparse.ArgumentParser(prog="python -m raglab.testing", description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0)
    args = parser.parse_args(argv)
    with LocalOpenAIServer(latency=args.latency, port=args.port) as server:
        print(f"READY {server.base_url}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            sys.stdin.read()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
