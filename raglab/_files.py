"""Writing files so that a reader never sees a half-written, mixed or mismatched one.

One mechanism for every file raglab writes (row files and their sidecars, TREC runs and qrels,
eval-set manifests, and the CLI's outputs): :func:`replace_files`.

* Each file is written to a temporary name in its target's folder that is unique per process and
  per thread (pid, thread id and random bytes), flushed to disk (``fsync``), then moved into place
  with ``os.replace``, which is atomic: a reader sees the old file or the new one, never a mix.
* The moves of one call (a data file and its sidecar, a run and its qrels) happen under one lock,
  so two writers of the same files never leave one writer's data next to the other's sidecar:
  a thread lock per folder, and ``fcntl.flock`` on the folder itself for other processes (on
  platforms without ``fcntl`` only threads are coordinated). Readers of a file and its sidecar
  hold the same lock, shared (:func:`reading`), so they see a consistent pair too. No lock files
  are left behind.
* :func:`user_path` is how every public function takes a path: ``~`` is expanded.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

try:  # POSIX: coordinate processes too
    import fcntl
except ImportError:  # pragma: no cover - Windows: threads only
    fcntl = None  # type: ignore[assignment]

__all__ = ["reading", "replace_files", "temporary_name", "user_path", "write_file"]

_GUARD = threading.Lock()
_FOLDER_LOCKS: dict[str, threading.Lock] = {}
_HELD = threading.local()  # folders whose lock this thread holds (a nested call does not lock again)


def user_path(path: str | os.PathLike[str]) -> Path:
    """A path given by the user, with ``~`` expanded (``"~/runs"`` is never a folder named ``~``).

    Examples
    --------
    >>> user_path("~/x") == Path.home() / "x"
    True
    """
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"expected a path (str or os.PathLike), got {type(path).__name__}: {path!r}")
    return Path(os.path.expanduser(os.fspath(path)))


def temporary_name(path: Path) -> Path:
    """A hidden name next to ``path``, unique to this process, this thread and this call."""
    stem = path.name[:80]  # the suffix below must not push a long name past the file system's limit
    return path.with_name(f".{stem}.{os.getpid()}-{threading.get_ident()}-{secrets.token_hex(4)}.tmp")


def _folder_key(path: Path) -> str:
    return os.path.abspath(path.parent)


@contextlib.contextmanager
def _locked(folder: str, *, shared: bool) -> Iterator[None]:
    held: set[str] = getattr(_HELD, "folders", None) or set()
    _HELD.folders = held
    if folder in held:  # this thread already holds it (e.g. a writer that reads): do not deadlock on itself
        yield
        return
    thread_lock = None
    if not shared:
        with _GUARD:
            thread_lock = _FOLDER_LOCKS.setdefault(folder, threading.Lock())
        thread_lock.acquire()
    fd = None
    try:
        if fcntl is not None:
            try:
                fd = os.open(folder, os.O_RDONLY)
                fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
            except OSError:  # a folder that cannot be opened or locked (some network file systems): threads only
                if fd is not None:
                    os.close(fd)
                fd = None
        held.add(folder)
        try:
            yield
        finally:
            held.discard(folder)
    finally:
        if fd is not None:
            os.close(fd)  # closing the descriptor releases the flock
        if thread_lock is not None:
            thread_lock.release()


@contextlib.contextmanager
def reading(path: Path) -> Iterator[None]:
    """Hold ``path``'s folder lock, shared, while a file and its sidecar are read: never a mixed pair."""
    with _locked(_folder_key(path), shared=True):
        yield


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_files(writes: Sequence[tuple[Path, Callable[[Path], Any] | None]]) -> None:
    """Write every ``(path, write)`` to a temporary name, then move them all into place under one lock.

    ``write(tmp)`` writes the file's content to ``tmp``; ``None`` instead of a function removes
    ``path`` (a stale sidecar) in the same locked step. If any ``write`` fails, nothing is moved
    and the temporary files are removed: the old files stay as they were. All paths must be in
    one folder (the lock is the folder's).
    """
    if not writes:
        return
    folders = {_folder_key(path) for path, _ in writes}
    if len(folders) != 1:
        raise ValueError(f"replace_files: the files must share one folder, got {sorted(folders)}")
    temporary: list[tuple[Path, Path | None]] = []
    try:
        for path, write in writes:
            if write is None:
                temporary.append((path, None))
                continue
            tmp = temporary_name(path)
            temporary.append((path, tmp))
            write(tmp)
            _fsync(tmp)
        with _locked(folders.pop(), shared=False):
            for path, tmp in temporary:
                if tmp is None:
                    path.unlink(missing_ok=True)
                else:
                    os.replace(tmp, path)
        _fsync_folder(writes[0][0].parent)
    finally:
        for _, tmp in temporary:
            if tmp is not None:
                tmp.unlink(missing_ok=True)


def _fsync_folder(folder: Path) -> None:
    """Make the renames durable (POSIX); best effort where a folder cannot be opened."""
    try:
        fd = os.open(folder if str(folder) else ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_file(path: Path, write: Callable[[Path], Any]) -> Path:
    """``write(tmp)`` to a temporary name unique to this process and thread, then move it into place.

    Examples
    --------
    >>> import tempfile
    >>> target = Path(tempfile.mkdtemp()) / "out.txt"
    >>> _ = write_file(target, lambda tmp: tmp.write_text("done"))
    >>> target.read_text(), sorted(p.name for p in target.parent.iterdir())
    ('done', ['out.txt'])
    """
    replace_files([(path, write)])
    return path
