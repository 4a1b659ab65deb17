"""LLMJudge: every metric of the judge metric registry, with any OpenAI-compatible model.

The metrics (``raglab.judge._metrics``, ``raglab.judge.METRICS``): claim-level ``faithfulness``
(the answer's claims against the context), ``correctness`` (against the reference answer) and
``context_recall`` (the reference's claims found in the context); ``context_relevance`` (one
verdict per retrieved passage); ``relevance`` and ``declined`` (one label per answer); and any
metric registered since.

How a run works
---------------
* Calls go through the official ``openai`` SDK's public methods, ``chat.completions.create`` or
  ``responses.create`` (``AsyncOpenAI`` on the judge's event loop; a sync ``OpenAI`` client you
  pass runs in a thread pool, which benchmarks/judge.py measures as slower) with structured
  outputs: ``response_format={"type": "json_schema", ..., "strict": True}`` on Chat Completions
  (default) or ``text.format`` on the Responses API.
* A batched verification's schema has one required property per claim (``claim_1`` ...
  ``claim_n``) and each entry echoes its claim: the reply's structure binds every verdict to its
  claim, and :func:`check_reply` rejects missing, extra, repeated or reordered verdicts. Such a
  reply is retried once; then the row is verified one claim per call (remembered in the cache, so
  a warm re-run goes straight there).
* An asyncio event loop runs in a background thread owned by the judge, so ``rows.rag.judge(...)``
  works the same in scripts and inside Jupyter (where the notebook's own loop is already running).
* At most ``max_concurrency`` requests are in flight. The SDK's own retries are switched off
  (``max_retries=0``) so that the judge controls them: HTTP 429 waits the server's ``Retry-After``
  (and holds back every other request for that long); 5xx, timeouts and connection errors back off
  exponentially with jitter; both up to ``max_retries`` times. Replies that are not valid JSON,
  do not fit the schema, or were cut off (``finish_reason="length"``, retried with twice the
  ``max_tokens``) are retried ``max_format_retries`` times. Then the row records why in
  ``judge_error`` and the run goes on (``errors="raise"`` stops instead); at the end failures
  warn, or raise :class:`JudgeError` above ``failure_threshold`` (``errors="ignore"`` only records).
* Every completed call is committed to the SQLite cache at once; a re-run makes no calls, and a
  killed run resumes where it stopped. Entries are validated like fresh replies when read: an
  invalid one is a miss (called again, counted in ``RunStats.cache_invalid``). Token usage is
  bookkeeping, never validity: a missing, negative, huge or non-numeric count is stored as
  unreported (-1) and counted in ``RunStats.usage_unreported``.
* Limits: ``timeout`` is a wall-clock deadline per request (not the SDK's per-read timeout);
  ``max_claims`` bounds the verification calls of one row; every string that comes from the
  server passes one ``raglab.judge._support.Scrubber`` before it is parsed, logged, cached
  or put in an error, so no credential the request carried can come back.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import contextlib
import inspect
import json
import logging
import math
import os
import random
import sys
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from raglab._optional import import_optional
from raglab._validation import check_option, warn
from raglab.judge._base import (
    EMPTY_CONTEXT,
    REASON_EMPTY_ANSWER,
    REASON_EMPTY_CONTEXT,
    REASON_NO_CLAIMS,
    REASON_NO_REFERENCE_CLAIMS,
    JudgeError,
    MetricOut,
    RowInputs,
    fingerprint_of,
)
from raglab.judge._cache import CallCache, MemoryCache, open_cache
from raglab.judge._metrics import JUDGE_METRICS, JudgeMetric
from raglab.judge._prompts import PROMPT_VERSION, PROMPTS, prompt_hashes, user_message
from raglab.judge._replies import (
    UNBOUND,
    _call_key,
    _clean_claims,
    _valid_entry,
    check_reply,
    claim_plan,
    items_plan,
    label_plan,
    normalize_url,
)
from raglab.judge._schemas import BATCHED_KINDS, SCHEMAS, json_schema, schema_hash
from raglab.judge._support import (
    RunStats,
    Scrubber,
    _CallFailed,
    _Fatal,
    _LoopThread,
    _release,
    _Reply,
    _retry_after,
    _Secret,
    _Unbound,
    plausible_tokens,
)

__all__ = ["LLMJudge", "RunStats"]

log = logging.getLogger("raglab.judge")




# --------------------------------------------------------------------------------------------------
# The judge
# --------------------------------------------------------------------------------------------------


class LLMJudge:
    """An LLM judge on the ``openai`` SDK for every registered metric (``raglab.judge.METRICS``).

    ``faithfulness``, ``correctness`` and ``context_recall`` are scored claim by claim,
    ``context_relevance`` passage by passage, ``relevance`` and ``declined`` with one label each.

    Parameters
    ----------
    model : str
        The judge model (pinned in the fingerprint; use a dated snapshot for reproducible runs).
    base_url : str, optional
        Any OpenAI-compatible server (vLLM, Ollama, llama.cpp server, a proxy); default OpenAI.
        A user and password in it (``http://user:pw@host/v1``) are sent but never shown: ``repr``,
        errors and the ``base_url`` attribute show ``***@host``, and the fingerprint leaves them out
        (like the API key, credentials say who pays, not which judge answers: one model on one
        server is one judge whoever calls it).
    api_key : str, optional
        Defaults to ``OPENAI_API_KEY``. A server that needs none still wants a value: pass
        ``api_key="none"``. The key is never written to the cache, the results, attrs or reprs:
        every string derived from a request or a reply passes one scrubber
        (``raglab.judge._support.Scrubber``) that replaces the key, the client's credential
        headers and the user and password of ``base_url`` with ``***`` (so a server that echoes the
        ``Authorization`` header leaks nothing into reasons, errors, logs or the cache).
    client : openai.AsyncOpenAI or openai.OpenAI, optional
        A client you configured yourself (proxies, Azure, headers); used with ``max_retries=0``.
        The judge's ``timeout`` is the deadline of each request whatever the client's own timeout;
        its credential headers (``default_headers``) are scrubbed like the key.
    temperature : float or None
        Sampling temperature (default 0.0; None sends none, for models that refuse one).
    seed : int, optional
        Sent as ``seed`` (``seed + repeat`` for repeat ``r``) on Chat Completions.
    max_concurrency : int
        Requests in flight at most (default 16).
    cache : path, None or CallCache
        SQLite cache folder or file (default ``.raglab-cache/judge``); None keeps calls in memory
        for this session only.
    api : {"chat", "responses"}
        Chat Completions (default; the most widely served endpoint) or the Responses API.
    verify : {"batched", "per_claim"}
        Check all of an answer's claims in one call (default) or one call per claim.
    max_tokens : int
        Completion budget per call; a reply cut off at the limit is retried with twice as much,
        up to ``max_tokens_limit``.
    token_param : {"max_completion_tokens", "max_tokens"}
        Name of the budget parameter on Chat Completions (older servers only know ``max_tokens``).
    max_retries : int
        Attempts after the first for 429, 5xx, timeouts and connection errors (default 6).
    max_format_retries : int
        Attempts after the first for malformed, schema-breaking or truncated replies (default 2).
    timeout : float
        Wall-clock deadline in seconds for each request, from sending it to the last byte of the reply
        (a reply that arrives too slowly, even one byte at a time, is cut off at the deadline and
        retried as a timeout). With a sync ``OpenAI`` client the judge stops waiting at the
        deadline; the client's worker thread finishes the read on its own (its own ``timeout`` bounds
        each read, not the whole reply).
    max_claims : int
        Most claims one answer (or reference) may be split into (default 50). A claim split longer
        than this is not verified: the row keeps its claims, its score is NaN and ``judge_error``
        says so (and the run counts it as failed), instead of one call per claim without bound.
        Pass a larger value to verify it (the claim split is cached, so only the verification is
        made). :meth:`estimate` counts up to ``max_claims`` verification calls in its worst case.
    backoff, max_backoff : float
        Exponential backoff base and cap in seconds (jittered: a wait is uniform between half and
        all of ``min(max_backoff, backoff * 2**attempt)``).
    max_retry_after : float
        Longest ``Retry-After`` honoured; longer requests are waited this long.
    failure_threshold : float
        With ``errors="warn"`` (default), a run in which more than this share of the rows (default
        0.5), or every row, has a failed call raises :class:`JudgeError` with the counts and the
        first distinct errors; fewer failures warn. ``errors="ignore"`` only records them.

    Examples
    --------
    >>> import pandas as pd, raglab
    >>> from raglab.judge import LLMJudge
    >>> from raglab.testing import LocalOpenAIServer
    >>> rows = pd.DataFrame({"question_id": ["q1"], "question": ["When did it open?"],
    ...                      "answer": ["The bridge opened in 1937. It is painted blue."],
    ...                      "context": [["The bridge opened to traffic in 1937.", "It is painted orange."]]})
    >>> with LocalOpenAIServer() as server:
    ...     judge = LLMJudge("local", base_url=server.base_url, api_key="none", cache=None)
    ...     scored = rows.rag.judge(judge, metrics=["faithfulness"], progress=False)
    >>> scored.loc[0, "faithfulness"], scored.loc[0, "faithfulness_verdicts"]
    (np.float64(0.5), [True, False])
    """

    kind = "llm"

    def __init__(
        self,
        model: str = "gpt-4.1-mini",
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        client: Any = None,
        temperature: float | None = 0.0,
        seed: int | None = None,
        max_concurrency: int = 16,
        cache: Any = ".raglab-cache/judge",
        api: str = "chat",
        verify: str = "batched",
        max_tokens: int = 1024,
        max_tokens_limit: int = 16384,
        token_param: str = "max_completion_tokens",
        max_retries: int = 6,
        max_format_retries: int = 2,
        timeout: float = 60.0,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        max_retry_after: float = 120.0,
        failure_threshold: float = 0.5,
        max_claims: int = 50,
    ) -> None:
        _check_choices(model, api=api, verify=verify, token_param=token_param, temperature=temperature)
        _check_limits(
            seconds=(("timeout", timeout, True), ("backoff", backoff, False), ("max_backoff", max_backoff, False),
                     ("max_retry_after", max_retry_after, False)),
            failure_threshold=failure_threshold,
            counts=(("max_concurrency", max_concurrency, 1), ("max_tokens", max_tokens, 1),
                    ("max_tokens_limit", max_tokens_limit, 1), ("max_retries", max_retries, 0),
                    ("max_format_retries", max_format_retries, 0), ("max_claims", max_claims, 1)),
        )
        _check_connection(base_url, client=client, api_key=api_key, seed=seed)
        self.model = model
        #: The server URL as shown (a user and password in it are ``***``); the real one is kept secret.
        self.base_url = Scrubber.redact_url(base_url)
        self._base_url = _Secret(base_url) if base_url is not None else None
        self.max_claims = max_claims
        self.temperature = None if temperature is None else float(temperature)
        self.seed = seed
        self.max_concurrency = max_concurrency
        self.api = api
        self.verify = verify
        self.max_tokens = max_tokens
        self.max_tokens_limit = max(max_tokens_limit, max_tokens)
        self.token_param = token_param
        self.max_retries = max_retries
        self.max_format_retries = max_format_retries
        self.timeout = float(timeout)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.max_retry_after = float(max_retry_after)
        self.failure_threshold = float(failure_threshold)
        self._api_key = _Secret(api_key) if api_key is not None else None
        self._client_arg = client
        self._client_is_async = False
        self._cache_arg = cache
        self._lock = threading.Lock()
        # Loop, client, executor and cache live in a plain dict so that a finalizer can release them
        # when the judge is garbage-collected (or close() is called) without keeping the judge alive.
        self._resources: dict[str, Any] = {"loop": None, "client": None, "owned_client": False,
                                           "executor": None, "cache": None, "owned_cache": False}
        self._finalizer = weakref.finalize(self, _release, self._resources)
        #: Counters of the latest run (requests, calls, cached, retries, ...).
        self.last_run: RunStats | None = None

    # ---- identity -----------------------------------------------------------------------------
    def _identity(self) -> dict[str, Any]:
        """What names this judge, in the order both the fingerprint and the record list it."""
        return {
            "judge": "LLMJudge",
            "model": self.model,
            "temperature": self.temperature,
            "seed": self.seed,
            "api": self.api,
            "base_url": self.endpoint,
            "prompt_version": PROMPT_VERSION,
        }

    def _fingerprint_parts(self) -> dict[str, Any]:
        return {
            **self._identity(),
            "prompts": PROMPTS,
            "schemas": {kind: [name, json_schema(kind)] for kind, (name, _) in SCHEMAS.items()},
            "claim_splitting": "llm",
            "verification": self.verify,
        }

    @property
    def endpoint(self) -> str:
        """The normalised server URL (part of the judge's identity: one model name on two servers is two judges)."""
        url = self._base_url.get() if self._base_url is not None else None
        if url is None and self._client_arg is not None:
            url = getattr(self._client_arg, "base_url", None)
        if url is None:
            url = os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        return normalize_url(str(url))

    @property
    def fingerprint(self) -> str:
        """sha256 of model, server URL, temperature, seed, API, every prompt, every schema and the claim method."""
        memo_key = (self.model, self.temperature, self.seed, self.api, self.verify, self.endpoint,
                    tuple(PROMPTS.items()))
        memo = self.__dict__.get("_fingerprint_memo")
        if memo is None or memo[0] != memo_key:
            memo = (memo_key, fingerprint_of(self._fingerprint_parts()))
            self.__dict__["_fingerprint_memo"] = memo
        return memo[1]

    def record(self) -> dict[str, Any]:
        """The judge record stored in ``attrs["raglab"]["judge"]`` (without the metric list)."""
        from raglab._version import __version__

        return {
            "fingerprint": self.fingerprint,
            **self._identity(),
            "prompt_hashes": prompt_hashes(),
            "schema_hash": schema_hash(),
            "claim_splitting": "llm",
            "verification": self.verify,
            "max_claims": self.max_claims,
            "raglab_version": __version__,
        }

    def __repr__(self) -> str:
        where = f", base_url={self.base_url!r}" if self.base_url else ""
        cache = str(self._cache_arg) if isinstance(self._cache_arg, os.PathLike) else self._cache_arg
        return (
            f"LLMJudge(model={self.model!r}{where}, temperature={self.temperature}, "
            f"max_concurrency={self.max_concurrency}, api={self.api!r}, verify={self.verify!r}, "
            f"cache={cache!r}, fingerprint={self.fingerprint[:12]!r})"
        )

    def __getstate__(self) -> dict[str, Any]:
        raise TypeError("LLMJudge cannot be pickled (it holds a client, a cache and an event loop); build one per process")

    # ---- resources ----------------------------------------------------------------------------
    @property
    def cache(self) -> CallCache | MemoryCache:
        """The call cache (opened on first use)."""
        with self._lock:
            if self._resources["cache"] is None:
                self._resources["cache"] = open_cache(self._cache_arg)
                self._resources["owned_cache"] = not isinstance(self._cache_arg, (CallCache, MemoryCache))
            return self._resources["cache"]

    @property
    def _client(self) -> Any:
        return self._resources["client"]

    @property
    def _executor(self) -> concurrent.futures.ThreadPoolExecutor | None:
        return self._resources["executor"]

    def _loop_thread(self) -> _LoopThread:
        with self._lock:
            if not self._finalizer.alive:
                raise JudgeError("this LLMJudge was closed; create a new one")
            if self._resources["loop"] is None:
                self._resources["loop"] = _LoopThread()
            return self._resources["loop"]

    def _scrubber(self) -> Scrubber:
        """The one scrubber for every string derived from a request or reply (see :class:`Scrubber`)."""
        secrets: list[Any] = [os.environ.get("OPENAI_API_KEY")]
        if self._api_key is not None:
            secrets.append(self._api_key.get())
        urls: list[Any] = [os.environ.get("OPENAI_BASE_URL")]
        if self._base_url is not None:
            urls.append(self._base_url.get())
        headers: list[Any] = []
        for client in (self._client_arg, self._resources["client"]):
            if client is None:
                continue
            secrets.append(getattr(client, "api_key", None))
            secrets.append(getattr(client, "_azure_ad_token", None))  # AzureOpenAI's static token, when given
            urls.append(getattr(client, "base_url", None))
            for name in ("_custom_headers", "default_headers", "_custom_query", "default_query"):
                with contextlib.suppress(Exception):
                    value = getattr(client, name, None)
                    if isinstance(value, Mapping):
                        headers.append(value)
        return Scrubber(secrets, urls=urls, headers=headers)

    def _scrub(self, text: str) -> str:
        return self._scrubber().text(text)

    def _get_client(self) -> Any:
        if self._resources["client"] is not None:
            return self._resources["client"]
        openai = import_optional("openai", extra="judge", purpose="raglab.judge.LLMJudge")

        if self._client_arg is not None:
            client = self._client_arg
            with contextlib.suppress(Exception):
                client = client.with_options(max_retries=0)
            self._client_is_async = isinstance(client, openai.AsyncOpenAI) or inspect.iscoroutinefunction(
                getattr(getattr(getattr(client, "chat", None), "completions", None), "create", None)
            )
            if not self._client_is_async:
                self._resources["executor"] = concurrent.futures.ThreadPoolExecutor(
                    self.max_concurrency, thread_name_prefix="raglab-judge")
        else:
            key = self._api_key.get() if self._api_key is not None else os.environ.get("OPENAI_API_KEY")
            if not key:
                raise JudgeError(
                    "LLMJudge needs an API key: pass api_key=... or set the OPENAI_API_KEY environment variable "
                    "(for a local server that needs none, pass api_key='none'). To run without a model, use "
                    "raglab.judge.LexicalJudge()."
                )
            base_url, headers = _userinfo_as_header(self._base_url.get() if self._base_url is not None else None)
            client = openai.AsyncOpenAI(api_key=key, base_url=base_url, max_retries=0, timeout=self.timeout,
                                        default_headers=headers)
            self._client_is_async = True
            self._resources["owned_client"] = True
        self._resources["client"] = client
        return client

    def close(self) -> None:
        """Close the client this judge made, stop its background loop and close its cache.

        Also happens when the judge is garbage-collected; the judge cannot be used afterwards.
        """
        self._finalizer()

    def __enter__(self) -> LLMJudge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- keys ---------------------------------------------------------------------------------
    def call_key(self, kind: str, inputs: Mapping[str, Any], repeat: int, *, fingerprint: str | None = None) -> str:
        """Cache key: sha256 of the fingerprint, the call kind, the exact inputs and the repeat index."""
        return _call_key(fingerprint or self.fingerprint, kind, inputs, repeat)

    # ---- running ------------------------------------------------------------------------------
    def _run(
        self,
        rows: Sequence[RowInputs],
        metrics: Sequence[str],
        *,
        repeats: int,
        errors: str,
        progress: bool,
        labels: Sequence[str],
    ) -> list[list[dict[str, MetricOut]]]:
        """Judge every row ``repeats`` times; blocks the calling thread (never its event loop)."""
        tqdm = import_optional("tqdm.auto", extra="judge", purpose="raglab.judge.LLMJudge").tqdm

        if repeats > 1 and not self.temperature and self.seed is None:
            warn(
                f"repeats={repeats} at temperature 0 with no seed: the repeats differ only by the serving stack's "
                "nondeterminism, so the judge noise measured is a lower bound. Pass temperature > 0 (and seed= for "
                "reproducible repeats) to measure the judge's sampling noise.",
                UserWarning,
            )
        self._get_client()
        cache = self.cache
        stats = RunStats()
        self.last_run = stats
        loop = self._loop_thread()
        run = _Run(self, cache, stats, errors=errors, labels=labels)
        started = time.perf_counter()
        future = loop.submit(run.all(rows, metrics, repeats))
        total = len(rows) * repeats
        bar, shown_at = _open_bar(tqdm, total=total, desc=f"judging ({self.model})", unit="row",
                                  disable=not progress, dynamic_ncols=True, leave=True)
        finished = False
        try:
            while True:
                try:
                    results = future.result(timeout=0.1)
                    finished = True
                    break
                except concurrent.futures.TimeoutError:
                    pass
                finally:
                    _advance_bar(bar, total if finished else stats.rows_done, stats)
        except KeyboardInterrupt:
            future.cancel()
            with contextlib.suppress(BaseException):
                future.result(timeout=5)
            raise
        except _Fatal as exc:
            raise JudgeError(self._scrub(str(exc))) from None
        except JudgeError as exc:  # keeps its class (e.g. CacheBusyError)
            raise type(exc)(self._scrub(str(exc))) from None
        finally:
            stats.seconds = time.perf_counter() - started
            _close_bar(bar, shown_at)
        self._report_failures(results, stats, errors, labels)
        return results

    def _report_failures(self, results: list[list[dict[str, MetricOut]]], stats: RunStats, errors: str,
                         labels: Sequence[str]) -> None:
        """Make failed calls loud: JudgeError above the threshold share of rows, a warning below it."""
        if errors == "ignore" or not stats.rows_failed:
            return
        total = sum(len(row) for row in results)
        distinct: list[str] = []
        first_row = None
        for i, row in enumerate(results):
            for rep in row:
                for name, out in rep.items():
                    if out.failed and out.error:
                        first_row = labels[i] if first_row is None else first_row
                        text = f"{name}: {out.error}"
                        if text not in distinct:
                            distinct.append(text)
        shown = "; ".join(distinct[:3]) + (f"; and {len(distinct) - 3} more" if len(distinct) > 3 else "")
        counts = (f"{stats.rows_failed} of {total} rows failed ({stats.failed_calls} calls failed, "
                  f"{stats.calls} completed, {stats.cached} from the cache)")
        if stats.rows_failed >= total or stats.rows_failed > self.failure_threshold * total:
            raise JudgeError(
                f"the judge run failed: {counts}, more than failure_threshold={self.failure_threshold:g} of the rows. "
                f"First errors: {self._scrub(shown)}. Check model={self.model!r} and base_url={self.endpoint!r}; "
                "completed calls are cached, so a re-run only repeats the failed ones. Pass errors='ignore' to get "
                "the partial results."
            )
        warn(f"rag.judge: {counts}; their scores are NaN and `judge_error` says why (first: {self._scrub(shown)}). "
             "Re-run to retry them (completed calls are cached), or pass errors='ignore' to silence this.",
             UserWarning)

    def _estimate_calls(self, row: RowInputs, metrics: Sequence[str],
                        repeat: int) -> list[tuple[str, dict[str, Any], bool, int]]:
        """The calls one row needs: (kind, inputs, known, tier).

        ``known=False`` means the inputs depend on a reply not yet cached (the claim split is guessed
        from the answer's sentences). ``tier`` 0: calls the run is expected to make; 1: the per-claim
        calls a batched verification falls back to when its reply does not bind one verdict to each
        claim; 2: the further calls of the worst case, where a claim split not yet known reaches
        ``max_claims`` (placeholder claims). A claim split longer than ``max_claims`` is not verified.
        """
        from raglab.tripwires import content_words, split_sentences

        calls: list[tuple[str, dict[str, Any], bool, int]] = []
        cap = self.max_claims
        batched = self.verify == "batched"
        for name in metrics:
            spec = JUDGE_METRICS[name]
            if spec.shape == "label":
                plan = label_plan(spec, row)
                if isinstance(plan, dict):
                    calls.append((spec.call, plan, True, 0))
            elif spec.shape == "items":
                plan = items_plan(spec, row)
                if isinstance(plan, list):
                    calls.extend((spec.call, inputs, True, 0) for inputs in plan)
            else:
                plan = claim_plan(spec, row)
                if isinstance(plan, str):
                    continue
                claim_inputs, source, base = plan
                calls.append(("claims", claim_inputs, True, 0))
                hit = _valid_entry("claims", claim_inputs, self.cache.get(self.call_key("claims", claim_inputs, repeat)))
                claims = _clean_claims(hit["reply"].get("claims")) if hit is not None else None
                known = claims is not None
                guess = claims if known else [s for s in split_sentences(claim_inputs["answer"]) if content_words(s)]
                if source == "context" and base["context"] == EMPTY_CONTEXT:
                    continue
                made = 0
                if guess and len(guess) <= cap:
                    one = [(f"verify_{source}_one", {**base, "claim": c}, known) for c in guess]
                    if batched and len(guess) > 1:
                        many = (f"verify_{source}", {**base, "claims": guess}, known)
                        calls.append((*many, 0))
                        verdicts = (_valid_entry(many[0], many[1], self.cache.get(self.call_key(many[0], many[1], repeat)))
                                    if known else None)
                        unbound = verdicts is not None and UNBOUND in verdicts["reply"]
                        if verdicts is None or unbound:  # a known misbinding: the per-claim calls will be made
                            calls.extend((*c, 0 if unbound else 1) for c in one)
                        made = 1 + len(one)
                    else:
                        calls.extend((*c, 0) for c in one)
                        made = len(one)
                if not known:  # the worst case: the split reaches max_claims and every batch falls back
                    worst = (1 if batched and cap > 1 else 0) + cap
                    size = max(1, round(sum(map(len, guess)) / len(guess))) if guess else 40
                    calls.extend((f"verify_{source}_one", {**base, "claim": f"<unknown claim {k} {'x' * size}>"}, False, 2)
                                 for k in range(max(0, worst - made)))
        return calls


# --------------------------------------------------------------------------------------------------
# The judge's argument checks
# --------------------------------------------------------------------------------------------------


def _check_choices(model: Any, *, api: str, verify: str, token_param: str, temperature: Any) -> None:
    """The model name, the API, verification and token-parameter options, and the temperature."""
    if not isinstance(model, str) or not model:
        raise ValueError(f"`model` must be a non-empty string, but {model!r} was passed.")
    for name, value, options in (
        ("api", api, ["chat", "responses"]),
        ("verify", verify, ["batched", "per_claim"]),
        ("token_param", token_param, ["max_completion_tokens", "max_tokens"]),
    ):
        check_option(name, value, options)
    if temperature is not None and (isinstance(temperature, bool) or not isinstance(temperature, (int, float))
                                    or not math.isfinite(temperature) or not 0 <= temperature <= 2):
        raise ValueError(f"`temperature` must be a number between 0 and 2 or None, but {temperature!r} was passed.")


def _check_limits(*, seconds: Sequence[tuple[str, Any, bool]], failure_threshold: Any,
                  counts: Sequence[tuple[str, Any, int]]) -> None:
    """Durations in seconds ``(name, value, must be > 0)``, the failure share, integer limits ``(name, value, least)``."""
    for name, value, positive in seconds:
        bad = isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
        if bad or value < 0 or (positive and value == 0):
            bound = "> 0" if positive else ">= 0"
            raise ValueError(f"`{name}` must be a finite number of seconds {bound}, but {value!r} was passed.")
    if isinstance(failure_threshold, bool) or not isinstance(failure_threshold, (int, float)) or not (
            0 <= failure_threshold <= 1):
        raise ValueError(f"`failure_threshold` must be a share between 0 and 1, but {failure_threshold!r} was passed.")
    for name, value, low in counts:
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"`{name}` must be an integer >= {low}, but {value!r} was passed.")


def _check_connection(base_url: Any, *, client: Any, api_key: Any, seed: Any) -> None:
    """An http(s) ``base_url``, an integer ``seed``, and a client or a URL and key, not both."""
    if base_url is not None and (not isinstance(base_url, str) or not base_url.startswith(("http://", "https://"))):
        raise ValueError(f"`base_url` must be an http(s) URL such as 'http://localhost:8000/v1', but {base_url!r} was passed.")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ValueError(f"`seed` must be an integer or None, but {seed!r} was passed.")
    if client is not None and (api_key is not None or base_url is not None):
        raise ValueError("pass either `client=` or `base_url=`/`api_key=`, not both (configure the client instead)")


def _open_bar(tqdm: Any, **kwargs: Any) -> tuple[Any, Any]:
    """A tqdm bar and, for a notebook widget, the display handle ``_close_bar`` refreshes.

    tqdm's notebook widget is displayed once, when it is made, so the text a saved notebook keeps for
    it (what static viewers and HTML exports show) would stay "0% 0/36" for good. Displayed here
    with a display id instead, the output is replaced by the final bar when it closes.
    """
    notebook = sys.modules.get("tqdm.notebook")
    widget = (not kwargs.get("disable") and notebook is not None and isinstance(tqdm, type)
              and issubclass(tqdm, notebook.tqdm_notebook))
    if not widget:
        return tqdm(**kwargs), None
    from IPython.display import display

    bar = tqdm(display=False, **kwargs)
    return bar, display(bar.container, display_id=True)


def _advance_bar(bar: Any, done: int, stats: RunStats) -> None:
    """Move the bar to ``done`` rows (cached rows count: they are done too) and show the run's counts."""
    if done > bar.n:
        bar.update(done - bar.n)
    bar.set_postfix({"calls": stats.calls, "cached": stats.cached, "failed": stats.rows_failed,
                     "retries": stats.retries}, refresh=False)


def _close_bar(bar: Any, shown_at: Any) -> None:
    """Close the bar; in a notebook, replace its displayed output with the final state."""
    bar.close()
    if shown_at is not None:
        with contextlib.suppress(Exception):  # the kernel may be gone; the bar is closed either way
            shown_at.update(bar.container)


class _Run:
    """State of one run on the judge's loop: cache, semaphore, in-flight calls, counters."""

    def __init__(self, judge: LLMJudge, cache: CallCache | MemoryCache, stats: RunStats, *, errors: str,
                 labels: Sequence[str]) -> None:
        self.judge = judge
        self.cache = cache
        self.stats = stats
        self.errors = errors
        self.labels = labels
        self.fingerprint = judge.fingerprint
        self.inflight: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.semaphore: asyncio.Semaphore | None = None
        self.resume_at = 0.0
        self.rng = random.Random(judge.seed)
        self.scrub = judge._scrubber()  # every string from the server passes it before any use

    # ---- the whole run ------------------------------------------------------------------------
    async def all(self, rows: Sequence[RowInputs], metrics: Sequence[str], repeats: int) -> list[list[dict[str, MetricOut]]]:
        self.semaphore = asyncio.Semaphore(self.judge.max_concurrency)
        results: list[list[dict[str, MetricOut]]] = [[{} for _ in range(repeats)] for _ in rows]
        work = iter([(i, r) for r in range(repeats) for i in range(len(rows))])  # (row, repeat), shared by the workers

        async def worker() -> None:
            for i, r in work:
                out = await self.row(rows[i], metrics, r)
                results[i][r] = out
                self.stats.rows_done += 1
                if any(m.failed for m in out.values()):
                    self.stats.rows_failed += 1
                    if self.errors == "raise":
                        first = next(f"{name}: {m.error}" for name, m in out.items() if m.failed)
                        raise JudgeError(
                            f"rag.judge: row {self.labels[i]} failed: {first}. Completed calls are cached: fix the "
                            "cause and re-run, or pass errors='warn' to record failures in `judge_error`."
                        )

        n_workers = max(1, min(len(rows) * repeats, 2 * self.judge.max_concurrency))
        tasks = [asyncio.ensure_future(worker()) for _ in range(n_workers)]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        return results

    # ---- one row ------------------------------------------------------------------------------
    async def row(self, row: RowInputs, metrics: Sequence[str], repeat: int) -> dict[str, MetricOut]:
        jobs = {name: self.metric(name, row, repeat) for name in metrics}
        outs = await asyncio.gather(*jobs.values())
        return dict(zip(jobs, outs))

    async def metric(self, name: str, row: RowInputs, repeat: int) -> MetricOut:
        out = MetricOut()
        spec = JUDGE_METRICS[name]
        try:
            if spec.shape == "claims":
                await self.claim_metric(spec, row, repeat, out)
            elif spec.shape == "items":
                await self.items_metric(spec, row, repeat, out)
            else:
                await self.label_metric(spec, row, repeat, out)
        except _CallFailed as exc:
            out.score = None
            out.error = self.scrub.text(str(exc))
            out.failed = True
        return out

    async def claim_metric(self, spec: JudgeMetric, row: RowInputs, repeat: int, out: MetricOut) -> None:
        plan = claim_plan(spec, row)
        if isinstance(plan, str):
            out.error = plan
            if plan == REASON_EMPTY_ANSWER:
                out.claims, out.verdicts, out.reasons = [], [], []
            return
        claim_inputs, source_kind, base = plan
        reply = await self.call("claims", claim_inputs, repeat, out)
        claims = _clean_claims(reply.get("claims"))
        out.claims = claims
        if not claims:
            out.verdicts, out.reasons = [], []
            out.error = REASON_NO_CLAIMS if spec.claims_of == "answer" else REASON_NO_REFERENCE_CLAIMS
            return
        if len(claims) > self.judge.max_claims:  # bounded work per row: never one call per claim without limit
            self.stats.claims_over_cap += 1
            what = "answer" if spec.claims_of == "answer" else "reference answer"
            out.error = (f"the {what} was split into {len(claims)} claims, more than max_claims={self.judge.max_claims}: "
                         "not verified (pass a larger max_claims= to verify them; the claim split is cached)")
            out.failed = True
            return
        if source_kind == "context" and base["context"] == EMPTY_CONTEXT:
            self._unsupported(out)
            return
        items: list[dict[str, Any]] | None = None
        if self.judge.verify == "batched" and len(claims) > 1:
            try:
                reply = await self.call(f"verify_{source_kind}", {**base, "claims": claims}, repeat, out)
                items = reply["verdicts"]
            except _Unbound as exc:  # the model does not bind verdicts to claims here: one call per claim
                self.stats.fallbacks += 1
                log.info("verifying claims one by one: %s", self.scrub.text(str(exc)))
        if items is None:
            items = await asyncio.gather(
                *(self.call(f"verify_{source_kind}_one", {**base, "claim": c}, repeat, out) for c in claims)
            )
        out.verdicts = [item["verdict"] == "supported" for item in items]
        out.reasons = [_reason_text(item) for item in items]
        out.score = sum(out.verdicts) / len(out.verdicts)

    @staticmethod
    def _unsupported(out: MetricOut) -> None:
        """Nothing reached the model: every claim is unsupported (no verification call needed)."""
        out.verdicts = [False] * len(out.claims)
        out.reasons = [REASON_EMPTY_CONTEXT] * len(out.claims)
        out.score = 0.0

    async def items_metric(self, spec: JudgeMetric, row: RowInputs, repeat: int, out: MetricOut) -> None:
        plan = items_plan(spec, row)
        if isinstance(plan, str):
            out.error = plan
            return
        replies = await asyncio.gather(*(self.call(spec.call, inputs, repeat, out) for inputs in plan))
        out.claims = [inputs["passage"] for inputs in plan]  # the verdicts judge noise compares
        out.verdicts = [reply["verdict"] == spec.positive for reply in replies]
        out.reasons = [str(reply.get("reason", "")) for reply in replies]
        out.score = sum(out.verdicts) / len(out.verdicts)

    async def label_metric(self, spec: JudgeMetric, row: RowInputs, repeat: int, out: MetricOut) -> None:
        plan = label_plan(spec, row)
        if isinstance(plan, tuple):  # decided without a call (an empty answer declines)
            out.score, out.reason = plan
            return
        if isinstance(plan, str):
            out.error = plan
            return
        reply = await self.call(spec.call, plan, repeat, out)
        out.score = 1.0 if reply["verdict"] == spec.positive else 0.0
        out.reason = str(reply.get("reason", ""))

    # ---- one call -----------------------------------------------------------------------------
    async def call(self, kind: str, inputs: dict[str, Any], repeat: int, out: MetricOut) -> dict[str, Any]:
        key = _call_key(self.fingerprint, kind, inputs, repeat)
        pending = self.inflight.get(key)
        if pending is not None:
            self.stats.shared += 1
            entry = await asyncio.shield(pending)
        else:
            future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
            future.add_done_callback(lambda f: f.cancelled() or f.exception())  # never "never retrieved"
            self.inflight[key] = future
            try:
                entry = self.cache.get(key)
                if entry is not None:
                    entry = _valid_entry(kind, inputs, entry)
                    if entry is None:
                        self.stats.cache_invalid += 1
                        log.info("cache entry %s for a %s call is invalid: calling again", key[:12], kind)
                if entry is not None:
                    self.stats.cached += 1
                else:
                    try:
                        entry = await self.request(kind, inputs, repeat)
                    except _Unbound as exc:
                        # Remember it: a warm re-run goes straight to the per-claim calls.
                        entry = {"reply": {UNBOUND: self.scrub.text(str(exc))}, "prompt_tokens": exc.tokens[0],
                                 "completion_tokens": exc.tokens[1], "attempts": exc.tokens[2]}
                    # Unreported usage is stored as -1 (the columns are NOT NULL); read back as unreported.
                    self.cache.put(key, kind=kind, fingerprint=self.fingerprint,
                                   **{**entry, "prompt_tokens": _stored(entry["prompt_tokens"]),
                                      "completion_tokens": _stored(entry["completion_tokens"])})
                    self.stats.calls += 1
            except asyncio.CancelledError:
                future.cancel()
                raise
            except Exception as exc:
                if isinstance(exc, _CallFailed) and not isinstance(exc, _Unbound):
                    self.stats.failed_calls += 1
                future.set_exception(exc)
                raise
            future.set_result(entry)
        prompt, completion = plausible_tokens(entry["prompt_tokens"]), plausible_tokens(entry["completion_tokens"])
        if prompt is None or completion is None:
            self.stats.usage_unreported += 1
        out.calls[key] = (prompt or 0, completion or 0)
        if UNBOUND in entry["reply"]:
            raise _Unbound(entry["reply"][UNBOUND])
        return entry["reply"]

    def _wait_for(self, attempt: int) -> float:
        ceiling = min(self.judge.max_backoff, self.judge.backoff * (2 ** attempt))
        return ceiling / 2 + self.rng.uniform(0, ceiling / 2)

    async def request(self, kind: str, inputs: dict[str, Any], repeat: int) -> dict[str, Any]:
        """One call with its retries: transport failures back off, bad replies are asked again."""
        openai = import_optional("openai", extra="judge", purpose="raglab.judge.LLMJudge")

        judge = self.judge
        name = SCHEMAS[kind][0]
        system, user = PROMPTS[kind], user_message(kind, inputs)
        max_tokens = judge.max_tokens
        transport_failures = format_failures = unbound_failures = 0
        tokens: tuple[int | None, int | None] = (0, 0)  # (prompt, completion); None once an attempt's is unreported
        attempts = 0
        while True:
            delay = self.resume_at - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            attempts += 1
            semaphore = self.semaphore or asyncio.Semaphore(judge.max_concurrency)
            try:
                async with semaphore:
                    self.stats.requests += 1
                    reply = await self.send(name, kind, system, user, max_tokens, repeat,
                                            n_claims=len(inputs["claims"]) if kind in BATCHED_KINDS else None)
            except (openai.OpenAIError, _Deadline) as exc:
                transport_failures += 1
                wait, why = self._transport_wait(openai, exc, kind, attempts, transport_failures)
                await self._pause(wait, why)
                continue
            tokens = _add_usage(tokens, reply)
            self.stats.prompt_tokens += reply.prompt_tokens or 0
            self.stats.completion_tokens += reply.completion_tokens or 0
            problem, parsed, unbound = self._check(kind, inputs, reply, max_tokens, self.scrub)
            if problem is None:
                return {"reply": parsed, "prompt_tokens": tokens[0], "completion_tokens": tokens[1],
                        "attempts": attempts}
            if unbound:
                unbound_failures += 1
                if unbound_failures > min(1, judge.max_format_retries):
                    raise _Unbound(f"{kind} call failed: {problem} (after {attempts} attempts)",
                                   tokens=(*tokens, attempts))
            format_failures += 1
            if format_failures > judge.max_format_retries:
                raise _CallFailed(f"{kind} call failed: {problem} (after {attempts} attempts)")
            if reply.finish == "length":
                max_tokens = min(max_tokens * 2, judge.max_tokens_limit)
            self.stats.retries += 1
            log.info("retrying %s call: %s", kind, self.scrub.text(problem))

    def _transport_wait(self, openai: Any, exc: Exception, kind: str, attempts: int,
                        failures: int) -> tuple[float, str]:
        """How long to wait before retrying a request that failed on the way, and why; raises when it is final.

        ``failures`` counts this request's transport failures so far, this one included.
        """
        if isinstance(exc, openai.APIStatusError):
            return self._status_wait(exc, kind, attempts, failures)
        if isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError, _Deadline)):
            # timed out: the SDK's per-read timeout, or the judge's wall-clock deadline (_Deadline)
            what = "connection error" if isinstance(exc, openai.APIConnectionError) and not isinstance(
                exc, openai.APITimeoutError) else "timed out"
            if failures > self.judge.max_retries:
                raise _CallFailed(f"{kind} call failed: {what} on {attempts} attempts") from None
            return self._wait_for(failures - 1), f"{kind}: {what}"
        # anything else the SDK raises (e.g. an unparseable response)
        raise _CallFailed(f"{kind} call failed: {type(exc).__name__}: {self.scrub.text(exc)[:300]}") from None

    def _status_wait(self, exc: Any, kind: str, attempts: int, failures: int) -> tuple[float, str]:
        """``_transport_wait`` for an HTTP error status: fatal (401, 403, quota, 404), final, or a wait."""
        judge = self.judge
        status = exc.status_code
        code = getattr(exc, "code", None)
        if status in (401, 403) or (status == 429 and code == "insufficient_quota"):
            raise _Fatal(
                f"the judge server refused the request (HTTP {status}: {_message(exc, self.scrub)}). Check the API key, "
                "its permissions and quota; completed calls are cached."
            ) from None
        if status == 404:
            raise _Fatal(
                f"the judge server answered HTTP 404 ({_message(exc, self.scrub)}): check model={judge.model!r} and "
                f"base_url={judge.base_url!r}."
            ) from None
        retryable = status in (408, 409, 429) or status >= 500
        if not retryable:
            raise _CallFailed(f"{kind} call rejected with HTTP {status}: {_message(exc, self.scrub)}") from None
        if failures > judge.max_retries:
            what = "rate limited (HTTP 429)" if status == 429 else f"HTTP {status}"
            raise _CallFailed(f"{kind} call failed: {what} on {attempts} attempts") from None
        wait = _retry_after(getattr(exc.response, "headers", None))
        if wait is None:
            return self._wait_for(failures - 1), f"{kind}: HTTP {status}"
        wait = min(wait, judge.max_retry_after)
        if status == 429:  # hold back every request, not just this one
            self.resume_at = max(self.resume_at, time.monotonic() + wait)
        return wait, f"{kind}: HTTP {status}"

    async def _pause(self, seconds: float, why: str) -> None:
        self.stats.retries += 1
        self.stats.waits.append(seconds)
        log.info("waiting %.2fs before retrying (%s)", seconds, why)
        await asyncio.sleep(seconds)

    @staticmethod
    def _check(kind: str, inputs: Mapping[str, Any], reply: _Reply, max_tokens: int,
               scrub: Scrubber) -> tuple[str | None, dict[str, Any] | None, bool]:
        """Parse and check a reply; the parsed reply is scrubbed (credentials an echo put in it are ``***``)."""
        if reply.finish == "length":
            return f"the reply was cut off at max_tokens={max_tokens} (finish_reason 'length')", None, False
        if reply.refusal:
            return f"the model refused: {scrub.text(reply.refusal)[:200]}", None, False
        if reply.finish == "content_filter":
            return "the reply was withheld by a content filter (finish_reason 'content_filter')", None, False
        if not reply.content:
            return "the reply was empty", None, False
        try:
            data = json.loads(reply.content)
        except json.JSONDecodeError as exc:
            return f"the reply is not valid JSON ({exc.msg} at char {exc.pos})", None, False
        data = scrub.data(data)
        try:  # JSON may escape a lone surrogate ("\ud800"): such text cannot be stored or sent on
            json.dumps(data, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            return f"the reply holds text that is not valid Unicode ({exc.reason} at char {exc.start})", None, False
        return check_reply(kind, inputs, data, wire=True)

    async def send(self, name: str, kind: str, system: str, user: str, max_tokens: int, repeat: int, *,
                   n_claims: int | None = None) -> _Reply:
        """One HTTP request; returns the reply text, finish reason, refusal and token usage."""
        judge = self.judge
        schema = json_schema(kind, copy_=False, n_claims=n_claims)
        if judge.api == "responses":
            body: dict[str, Any] = {
                "model": judge.model,
                "instructions": system,
                "input": [{"role": "user", "content": user}],
                "text": {"format": {"type": "json_schema", "name": name, "schema": schema, "strict": True}},
                "max_output_tokens": max_tokens,
            }
            if judge.temperature is not None:
                body["temperature"] = judge.temperature
            response = await self._invoke(body, "responses")
            details = getattr(response, "incomplete_details", None)
            reason = getattr(details, "reason", None)
            finish = "stop"
            if getattr(response, "status", None) == "incomplete":
                finish = {"max_output_tokens": "length", "content_filter": "content_filter"}.get(reason or "", "incomplete")
            usage = getattr(response, "usage", None)
            return _Reply(
                content=response.output_text,
                finish=finish,
                refusal=None,
                prompt_tokens=plausible_tokens(getattr(usage, "input_tokens", None)),
                completion_tokens=plausible_tokens(getattr(usage, "output_tokens", None)),
            )
        body = {
            "model": judge.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "response_format": {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}},
            judge.token_param: max_tokens,
        }
        if judge.temperature is not None:
            body["temperature"] = judge.temperature
        if judge.seed is not None:
            body["seed"] = judge.seed + repeat
        completion = await self._invoke(body, "chat")
        usage = getattr(completion, "usage", None)
        prompt_tokens = plausible_tokens(getattr(usage, "prompt_tokens", None))
        completion_tokens = plausible_tokens(getattr(usage, "completion_tokens", None))
        choices = getattr(completion, "choices", None) or []
        if not choices:
            return _Reply(None, "no choices", None, prompt_tokens, completion_tokens)
        message = choices[0].message
        return _Reply(
            content=message.content,
            finish=choices[0].finish_reason,
            refusal=getattr(message, "refusal", None),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
        )

    async def _invoke(self, body: dict[str, Any], api: str) -> Any:
        """Send ``body`` with the SDK's public ``chat.completions.create`` or ``responses.create``.

        An async client is awaited on the judge's loop; a sync client runs in the judge's thread pool.
        Either way the whole exchange has a wall-clock deadline of ``timeout`` seconds: the SDK's own
        ``timeout`` bounds each read, so a reply dripped a byte at a time would otherwise hold a call
        without bound. At the deadline an async request is cancelled (its connection closed).
        """
        judge = self.judge
        client = judge._client
        create = client.responses.create if api == "responses" else client.chat.completions.create
        if judge._client_is_async:
            pending = create(**body)
        else:
            pending = asyncio.get_running_loop().run_in_executor(judge._executor, lambda: create(**body))
        try:
            return await asyncio.wait_for(pending, judge.timeout)
        except asyncio.TimeoutError:
            raise _Deadline() from None


class _Deadline(Exception):
    """A request's reply was not complete within the judge's ``timeout`` (wall clock)."""


def _userinfo_as_header(url: str | None) -> tuple[str | None, dict[str, str] | None]:
    """``url`` without its user and password, and the Basic ``Authorization`` header they stand for.

    httpx turns a URL's user and password into exactly this header (it replaces the SDK's Bearer
    key), so the request is unchanged; but the URL it logs at INFO and puts in errors then holds no
    password.
    """
    if url is None:
        return None, None
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
    host = parts.netloc.rsplit("@", 1)[1]
    bare = urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    return bare, {"Authorization": "Basic " + base64.b64encode(pair.encode()).decode()}


def _add_usage(tokens: tuple[int | None, int | None], reply: _Reply) -> tuple[int | None, int | None]:
    """The request's (prompt, completion) token sums after one more reply; None once any reply left usage out."""
    if reply.prompt_tokens is None or reply.completion_tokens is None:
        return None, None
    prompt, completion = tokens
    return (None if prompt is None else prompt + reply.prompt_tokens,
            None if completion is None else completion + reply.completion_tokens)


def _stored(tokens: int | None) -> int:
    """A call's token count as the cache stores it: -1 when unreported (see ``plausible_tokens``)."""
    return -1 if tokens is None else int(tokens)


def _message(exc: Exception, scrub: Scrubber) -> str:
    """The server's error message, scrubbed, then shortened (a cut never leaves part of a key)."""
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping) and inner.get("message"):
            return scrub.text(str(inner["message"]))[:300]
        if body.get("message"):
            return scrub.text(str(body["message"]))[:300]
    return scrub.text(str(getattr(exc, "message", exc)))[:300]


def _reason_text(item: Mapping[str, Any]) -> str:
    reason = str(item.get("reason", "")).strip()
    evidence = str(item.get("evidence", "")).strip()
    return f"{reason} Evidence: \"{evidence}\"" if evidence else reason
