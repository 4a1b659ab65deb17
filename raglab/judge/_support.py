"""LLMJudge's plumbing: the secret key holder and the scrubber, call failures, run statistics, token usage
checks, the event-loop thread, retry timing."""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import contextlib
import email.utils
import json
import math
import re
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit


class _Secret:
    """Holds the API key; prints as ``'***'``."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def get(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "'***'"

    __str__ = __repr__

    def __reduce__(self) -> Any:  # never pickled with the key
        raise TypeError("the judge's API key is not picklable")


# Header and query names whose values are credentials (matched case-insensitively, as a part of the name).
_SECRET_NAME = re.compile(r"auth|key|token|secret|passw|cookie|signature|sig$|credential", re.I)
_MIN_SECRET = 8  # shorter values are placeholders ("none", "EMPTY", "ollama"), not scrubbed; see Scrubber


class Scrubber:
    """Replaces every credential a judge sends with ``'***'`` in strings derived from a request or a reply.

    One scrubber per judge; everything that comes back from the server (reply text and parsed
    replies, error bodies, exception messages), and every message, log line, repr and cache entry
    made from it, passes through :meth:`text` or :meth:`data`. The credentials are collected from
    every route a request can carry one: the ``api_key`` argument, ``OPENAI_API_KEY``, a client's
    ``api_key``, the values of its ``default_headers`` and ``default_query`` whose names look like
    credentials (``Authorization``, ``api-key``, ``X-Api-Key``, ``token``, ...), and the user and
    password of a ``base_url`` (raw, percent-decoded, and as the Basic-auth base64 pair). Each is
    also matched in its JSON-escaped forms, so an echo inside a JSON reply is caught before parsing.
    Values shorter than 8 characters are not scrubbed: they are the placeholders local servers
    take (``api_key="none"``, ``"EMPTY"``, ``"ollama"``), and replacing them would mangle ordinary
    words in reasons ("none of the words"). URLs are redacted by structure whatever the password's
    length (:meth:`redact_url`), and a Basic header's base64 pair is always long enough.

    Examples
    --------
    >>> scrub = Scrubber(["sk-live-123", "none"], urls=["http://bob:pass%21word@host/v1"])
    >>> scrub.text("Authorization: Bearer sk-live-123 from bob:pass!word; none of it")
    'Authorization: Bearer *** from ***; none of it'
    >>> scrub.data({"reason": ["sk-live-123"]})
    {'reason': ['***']}
    >>> Scrubber.redact_url("http://bob:secret@host:8000/v1")
    'http://***@host:8000/v1'
    """

    def __init__(self, secrets: Iterable[Any] = (), *, urls: Iterable[Any] = (),
                 headers: Iterable[Mapping[str, Any]] = ()) -> None:
        found: set[str] = set()

        def add(value: Any) -> None:
            if not isinstance(value, str) or len(value) < _MIN_SECRET:
                return
            found.add(value)
            if value.lower().startswith(("bearer ", "basic ")):
                add(value.split(" ", 1)[1].strip())

        for value in secrets:
            add(value)
        for mapping in headers:
            with contextlib.suppress(Exception):
                for name, value in dict(mapping).items():
                    if isinstance(name, str) and _SECRET_NAME.search(name):
                        add(value)
        for url in urls:
            if url is None:
                continue
            with contextlib.suppress(Exception):
                parts = urlsplit(str(url))
                user = parts.username
                password = parts.password
                for value in (user, password):
                    if value:
                        add(value)
                        add(unquote(value))
                if user or password:
                    raw = parts.netloc.rsplit("@", 1)[0]
                    add(raw)
                    pair = f"{unquote(user or '')}:{unquote(password or '')}"
                    add(pair)
                    add(base64.b64encode(pair.encode("utf-8", "surrogatepass")).decode())
        variants: set[str] = set()
        for value in found:
            variants.add(value)
            for ascii_only in (True, False):
                with contextlib.suppress(Exception):
                    variants.add(json.dumps(value, ensure_ascii=ascii_only)[1:-1])
        # Longest first, so that a secret containing another is replaced whole.
        self._secrets = sorted((v for v in variants if len(v) >= _MIN_SECRET), key=len, reverse=True)

    def __bool__(self) -> bool:
        return bool(self._secrets)

    def text(self, value: Any) -> str:
        """``value`` as a string with every credential replaced by ``'***'``."""
        text = value if isinstance(value, str) else str(value)
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, "***")
        return text

    def data(self, value: Any) -> Any:
        """A parsed JSON value with every string in it (keys included) scrubbed."""
        if not self._secrets:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.data(v) for v in value]
        if isinstance(value, dict):
            return {self.text(k) if isinstance(k, str) else k: self.data(v) for k, v in value.items()}
        return value

    @staticmethod
    def redact_url(url: str | None) -> str | None:
        """``url`` with its user and password (if any) shown as ``***``."""
        if url is None:
            return None
        try:
            parts = urlsplit(url)
        except ValueError:
            return "***"
        if "@" not in parts.netloc:
            return url
        host = parts.netloc.rsplit("@", 1)[1]
        return urlunsplit((parts.scheme, f"***@{host}", parts.path, parts.query, parts.fragment))


#: Token counts above this are implausible for one call and recorded as unreported.
MAX_PLAUSIBLE_TOKENS = 10**9


def plausible_tokens(value: Any) -> int | None:
    """A server's token count as an int, or None when it is missing or implausible.

    Accepted: an integer (or an integral float) between 0 and :data:`MAX_PLAUSIBLE_TOKENS`
    (``10**9``; no context window holds more). Anything else (negative, huge, fractional,
    text, a boolean, missing) is *unreported*: counted in ``RunStats.usage_unreported``, summed as
    0 in the token columns, and never a reason to distrust the reply it came with.

    Examples
    --------
    >>> plausible_tokens(12), plausible_tokens(12.0), plausible_tokens(-3), plausible_tokens(10**20), plausible_tokens("7")
    (12, 12, None, None, None)
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and 0 <= value <= MAX_PLAUSIBLE_TOKENS:
        return int(value)
    return None


class _CallFailed(Exception):
    """A call gave up after its retries (recorded on the row)."""


class _Unbound(_CallFailed):
    """A batched verification reply did not bind one verdict to each claim (twice): verify per claim."""

    def __init__(self, message: str, *, tokens: tuple[int | None, int | None, int] = (0, 0, 0)) -> None:
        super().__init__(message)
        self.tokens = tokens


class _Fatal(Exception):
    """The run cannot succeed (bad key, unknown model, no quota)."""


@dataclass
class RunStats:
    """Counters of one judge run (also stored in ``attrs["raglab"]["judge"]["run"]``)."""

    requests: int = 0  # HTTP requests sent, retries included
    calls: int = 0  # calls completed by the model in this run
    cached: int = 0  # calls answered from the cache
    cache_invalid: int = 0  # cache entries that failed validation on read (re-called)
    fallbacks: int = 0  # batched verifications redone one claim per call
    shared: int = 0  # calls reused within the run (same inputs)
    retries: int = 0
    failed_calls: int = 0
    rows_done: int = 0
    rows_failed: int = 0
    prompt_tokens: int = 0  # spent in this run (failed attempts included)
    completion_tokens: int = 0
    usage_unreported: int = 0  # calls whose token usage was missing or implausible (counted as 0)
    claims_over_cap: int = 0  # claim lists longer than max_claims (those rows are not verified)
    waits: list[float] = field(default_factory=list)  # seconds waited before retries
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests, "calls": self.calls, "cached": self.cached,
            "cache_invalid": self.cache_invalid, "fallbacks": self.fallbacks, "shared": self.shared,
            "retries": self.retries, "failed_calls": self.failed_calls, "rows_failed": self.rows_failed,
            "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
            "usage_unreported": self.usage_unreported, "claims_over_cap": self.claims_over_cap,
            "seconds": round(self.seconds, 3),
        }


@dataclass
class _Reply:
    content: str | None
    finish: str | None
    refusal: str | None
    prompt_tokens: int | None  # None: the server reported no plausible count (see plausible_tokens)
    completion_tokens: int | None


# --------------------------------------------------------------------------------------------------
# The background event loop
# --------------------------------------------------------------------------------------------------


class _LoopThread:
    """An asyncio loop running forever in a daemon thread (one per judge)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="raglab-judge-loop", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, coro: Any) -> concurrent.futures.Future[Any]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def close(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self.loop.close()


def _release(resources: dict[str, Any]) -> None:
    """Free what a judge holds (its finalizer; safe to call once from any thread)."""
    loop: _LoopThread | None = resources.get("loop")
    client = resources.get("client")
    if loop is not None and not loop.loop.is_closed():
        in_loop_thread = threading.current_thread() is loop._thread
        if client is not None and resources.get("owned_client") and not in_loop_thread:
            with contextlib.suppress(Exception):
                loop.submit(client.close()).result(timeout=5)
        if in_loop_thread:
            loop.loop.call_soon(loop.loop.stop)
        else:
            loop.close()
    executor = resources.get("executor")
    if executor is not None:
        executor.shutdown(wait=False)
    cache = resources.get("cache")
    if cache is not None and resources.get("owned_cache"):
        with contextlib.suppress(Exception):
            cache.close()
    resources.update(loop=None, client=None, executor=None, cache=None)


def _retry_after(headers: Any) -> float | None:
    """Seconds from ``retry-after-ms`` / ``retry-after`` (number or HTTP date), or None."""
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            parsed = email.utils.parsedate_tz(value)
            if parsed is None:
                continue
            seconds = float(email.utils.mktime_tz(parsed) - time.time())
        if math.isfinite(seconds):
            return max(0.0, seconds)
    return None
