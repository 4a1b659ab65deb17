"""The judge's persistent call cache: SQLite in WAL mode, one row per completed call.

Keys are ``sha256(fingerprint, call kind, exact inputs, repeat index)`` computed by the judge, so
a change of model, prompt, schema, temperature or seed misses the cache and a re-run of the same
judge on the same rows makes no calls. Each completed call is committed on its own (autocommit),
so a run killed half way (even with SIGKILL) keeps every call that finished. Only the parsed reply
(scrubbed of credentials by the judge) and its token usage are stored: never a request header,
never the API key.

Several processes may share one cache. A read or write waits up to ``busy_timeout`` seconds
(default 30) for another process's write to finish; if the cache is still held then,
:class:`CacheBusyError` says so. A busy cache is healthy: its stored calls are never at risk, and
nothing advises deleting it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from raglab.judge._base import JudgeError

__all__ = ["CallCache", "CacheBusyError", "MemoryCache", "open_cache"]


class CacheBusyError(JudgeError):
    """The judge cache stayed locked by another process (or connection) for longer than ``busy_timeout``.

    The cache is healthy: its stored calls are kept. Wait for the other run to finish and re-run.
    """


def _is_busy(exc: Exception) -> bool:
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


_SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
_FILE_NAME = "judge-cache.sqlite3"
_COLUMNS = ["key", "kind", "fingerprint", "reply", "prompt_tokens", "completion_tokens", "attempts", "created"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    reply TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    attempts INTEGER NOT NULL,
    created REAL NOT NULL
)
"""


class MemoryCache:
    """A cache that lives for one Python session (``cache=None``)."""

    path: Path | None = None

    def __init__(self) -> None:
        self._data: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            entry = self._data.get(key)
        return dict(entry) if entry is not None else None

    def put(self, key: str, *, kind: str, fingerprint: str, reply: dict[str, Any], prompt_tokens: int,
            completion_tokens: int, attempts: int) -> None:
        with self._lock:
            self._data[key] = {"reply": reply, "prompt_tokens": prompt_tokens,
                               "completion_tokens": completion_tokens, "attempts": attempts}

    def __len__(self) -> int:
        return len(self._data)

    def close(self) -> None:
        return

    def __repr__(self) -> str:
        return f"MemoryCache({len(self)} calls)"


class CallCache:
    """SQLite call cache (WAL mode, one commit per call); safe to share between processes.

    Parameters
    ----------
    path : str or path-like
        A ``.db``/``.sqlite``/``.sqlite3`` file, or a folder that will hold ``judge-cache.sqlite3``.
    busy_timeout : float
        Seconds a read or write waits for another process that holds the cache's lock (default 30);
        then :class:`CacheBusyError` (the cache is busy, not broken: nothing stored is lost).

    A judge opens one from its ``cache=`` path; pass a ``CallCache`` (``LLMJudge(..., cache=cache)``)
    to share one between judges, or to count and clear stored calls.

    Examples
    --------
    >>> import os, tempfile
    >>> from raglab.judge import CallCache
    >>> cache = CallCache(os.path.join(tempfile.mkdtemp(), "judge"))   # a folder: judge-cache.sqlite3 in it
    >>> cache.path.name
    'judge-cache.sqlite3'
    >>> cache.put("k1", kind="relevance", fingerprint="f", reply={"reason": "r", "verdict": "relevant"},
    ...           prompt_tokens=12, completion_tokens=3, attempts=1)
    >>> cache.get("k1")["reply"], cache.count("f"), cache.get("nope")
    ({'reason': 'r', 'verdict': 'relevant'}, 1, None)
    >>> cache.clear(), len(cache)
    (1, 0)
    >>> cache.close()
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 30.0) -> None:
        if isinstance(busy_timeout, bool) or not isinstance(busy_timeout, (int, float)) or not 0 <= busy_timeout < 1e6:
            raise ValueError(f"`busy_timeout` must be a number of seconds >= 0, but {busy_timeout!r} was passed.")
        self.busy_timeout = float(busy_timeout)
        path = Path(path).expanduser()
        if path.suffix.lower() not in _SQLITE_SUFFIXES:
            path = path / _FILE_NAME
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        # One wait, stated once: sqlite's busy handler (the connect timeout sets the same handler).
        if path.is_dir():
            raise ValueError(f"the judge cache {str(path)!r} is a folder, not a SQLite file; pass the folder's parent "
                             f"(the cache is then {_FILE_NAME!r} in it) or another cache= file name")
        try:
            self._conn = sqlite3.connect(str(path), timeout=self.busy_timeout, isolation_level=None,
                                         check_same_thread=False)
        except sqlite3.Error as exc:
            raise ValueError(f"cannot open the judge cache {str(path)!r} ({exc}); pass another cache= path") from None
        try:
            self._conn.execute(f"PRAGMA busy_timeout={int(self.busy_timeout * 1000)}")
            self._conn.execute("PRAGMA journal_mode=WAL")
            # NORMAL in WAL mode: a committed call survives the process being killed (it may be
            # lost only on power failure), at a fraction of FULL's cost.
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(_SCHEMA)
            columns = [row[1] for row in self._conn.execute("PRAGMA table_info(calls)")]
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            if _is_busy(exc):
                raise self._busy(exc) from None
            raise ValueError(
                f"the judge cache {str(path)!r} is not a usable SQLite database ({exc}); "
                "delete it or pass another cache= path"
            ) from None
        if columns != _COLUMNS:
            self._conn.close()
            raise ValueError(
                f"the judge cache {str(path)!r} holds a `calls` table that raglab did not write (columns {columns}, "
                f"expected {_COLUMNS}); pass another cache= path, or delete the file if it is a stale judge cache"
            )

    def _busy(self, exc: Exception) -> CacheBusyError:
        return CacheBusyError(
            f"the judge cache {str(self.path)!r} is busy: another process (or connection) held its lock for more than "
            f"busy_timeout={self.busy_timeout:g}s ({exc}). The cache is healthy and keeps every stored call; wait for "
            "the other run to finish and re-run (completed calls are not made again), or open it with "
            "CallCache(path, busy_timeout=...) to wait longer."
        )

    def _error(self, exc: Exception) -> Exception:
        if _is_busy(exc):
            return self._busy(exc)
        return ValueError(
            f"the judge cache {str(self.path)!r} cannot be read or written ({type(exc).__name__}: {exc}). Its stored "
            "calls are kept in the file: check the disk (space, permissions), or pass another cache= path to go on "
            "without it"
        )

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored entry for ``key``; an entry that is not JSON comes back with ``reply=None``.

        The judge validates every entry against the call's schema before use; an invalid one is a miss.
        """
        try:
            with self._lock:
                row = self._conn.execute(
                    "SELECT reply, prompt_tokens, completion_tokens, attempts FROM calls WHERE key = ?", (key,)
                ).fetchone()
        except sqlite3.DatabaseError as exc:
            raise self._error(exc) from None
        if row is None:
            return None
        try:
            reply = json.loads(row[0]) if isinstance(row[0], (str, bytes)) else None
        except ValueError:
            reply = None
        return {"reply": reply, "prompt_tokens": row[1], "completion_tokens": row[2], "attempts": row[3]}

    def put(self, key: str, *, kind: str, fingerprint: str, reply: dict[str, Any], prompt_tokens: int,
            completion_tokens: int, attempts: int) -> None:
        text = json.dumps(reply, ensure_ascii=False, sort_keys=True)
        try:
            with self._lock:
                self._conn.execute(
                    "INSERT OR REPLACE INTO calls VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (key, kind, fingerprint, text, int(prompt_tokens), int(completion_tokens), int(attempts), time.time()),
                )
        except sqlite3.DatabaseError as exc:
            raise self._error(exc) from None

    def _execute(self, sql: str, params: tuple[Any, ...] = ()) -> tuple[Any, int]:
        """Run one statement: (its first row, its row count)."""
        try:
            with self._lock:
                cur = self._conn.execute(sql, params)
                return cur.fetchone(), int(cur.rowcount)
        except sqlite3.DatabaseError as exc:
            raise self._error(exc) from None

    def __len__(self) -> int:
        return int(self._execute("SELECT COUNT(*) FROM calls")[0][0])

    def count(self, fingerprint: str | None = None) -> int:
        """Stored calls (of one judge fingerprint when given)."""
        if fingerprint is None:
            return len(self)
        return int(self._execute("SELECT COUNT(*) FROM calls WHERE fingerprint = ?", (fingerprint,))[0][0])

    def clear(self, fingerprint: str | None = None) -> int:
        """Delete stored calls (of one fingerprint, or all); returns how many were deleted."""
        if fingerprint is None:
            return self._execute("DELETE FROM calls")[1]
        return self._execute("DELETE FROM calls WHERE fingerprint = ?", (fingerprint,))[1]

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __repr__(self) -> str:
        return f"CallCache({str(self.path)!r})"


def open_cache(cache: str | os.PathLike[str] | CallCache | MemoryCache | None | bool) -> CallCache | MemoryCache:
    """A cache object from the ``cache=`` argument of a judge."""
    if isinstance(cache, (CallCache, MemoryCache)):
        return cache
    if cache is None or cache is False:
        return MemoryCache()
    if cache is True:
        return CallCache(".raglab-cache/judge")
    if isinstance(cache, (str, os.PathLike)):
        return CallCache(cache)
    raise TypeError(
        f"`cache` must be a path (a folder or a .sqlite3 file), None for an in-memory cache, or a CallCache; "
        f"got {type(cache).__name__}"
    )
