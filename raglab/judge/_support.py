"""LLMJudge's plumbing: the secret key holder, call failures, run statistics, the event-loop thread, retry timing."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import email.utils
import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any


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


class _CallFailed(Exception):
    """A call gave up after its retries (recorded on the row)."""


class _Unbound(_CallFailed):
    """A batched verification reply did not bind one verdict to each claim (twice): verify per claim."""

    def __init__(self, message: str, *, tokens: tuple[int, int, int] = (0, 0, 0)) -> None:
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
    waits: list[float] = field(default_factory=list)  # seconds waited before retries
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests, "calls": self.calls, "cached": self.cached,
            "cache_invalid": self.cache_invalid, "fallbacks": self.fallbacks, "shared": self.shared,
            "retries": self.retries, "failed_calls": self.failed_calls, "rows_failed": self.rows_failed,
            "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
            "seconds": round(self.seconds, 3),
        }


@dataclass
class _Reply:
    content: str | None
    finish: str | None
    refusal: str | None
    prompt_tokens: int
    completion_tokens: int


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
