"""A fresh adversarial pass over raglab (issue 19's kinds): bad inputs and valid edge inputs.

Each case builds its input in a temporary folder, runs it (library calls in-process; command-line
cases as ``sys.executable -m raglab`` subprocesses with a timeout) and is classified by checks in
code:

bad inputs
    ``refused clearly``: an error of the expected kind whose message names what the case says the
    user must act on (column, row, value, file or flag); ``handled``: accepted and correct (with a
    warning where something changed); ``unclear error``: an error that names none of that, or a
    dependency's raw exception; ``silent acceptance``: accepted and wrong, or changed without a word;
    ``crash``: an unexpected exception type (KeyError, IndexError, AttributeError...), a traceback on
    the command line, or an exit code outside the contract (decision 0/1/3, bad input 2, internal 4);
    ``data loss``: a user file, sidecar, cache entry or eval set destroyed or corrupted.
valid edge inputs
    ``works`` / ``fails``.

Run:  PYTHONPATH=. python benchmarks/adversarial.py          (prints the table and the non-passing list)
      PYTHONPATH=. python benchmarks/adversarial.py --area files   (one area)
Seeded. The whole pass took 96 s on the shared 2-core machine at load 2 and about 4 minutes at load 5: the
command-line cases dominate (each starts Python and imports pandas twice, ``python -m raglab`` then its
supervised child); ``--quick`` runs one command-line case in three.

Findings (589 cases: 421 bad inputs, 168 valid edge inputs). On the code before the fixes (commit
1a24aca): 282 refused clearly, 111 handled, 8 unclear errors (1.9%), 16 silent acceptances, 0
crashes, 4 data losses (write_rows onto another file's sidecar name), 1 valid edge input failing
(uint64 to Parquet). After: 303 refused clearly, 118 handled, 0 unclear, 0 silent, 0 crashes, 0
data loss; 168 valid edge inputs work.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import gzip
import hashlib
import io
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import warnings
from collections import Counter, defaultdict
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import raglab  # noqa: F401  (registers df.rag)
from raglab import EvalSet, read_rows, read_trec, write_rows, write_trec
from raglab.io import sidecar_path

BAD_CLASSES = ["refused clearly", "handled", "unclear error", "silent acceptance", "crash", "data loss"]
VALID_CLASSES = ["works", "fails"]
PASSING = {"refused clearly", "handled", "works"}
# Exception types that are never a deliberate refusal: a bug surfaced as a traceback.
CRASH_TYPES = (AttributeError, IndexError, ZeroDivisionError, AssertionError, NameError, RecursionError,
               NotImplementedError, OverflowError, StopIteration, MemoryError, UnboundLocalError)

CASES: list[tuple[str, str, str, Callable[[Path], tuple[str, str]]]] = []


def case(area: str, kind: str, name: str) -> Callable[[Callable[[Path], tuple[str, str]]], Any]:
    def register(fn: Callable[[Path], tuple[str, str]]) -> Callable[[Path], tuple[str, str]]:
        CASES.append((area, kind, name, fn))
        return fn
    return register


def add(area: str, kind: str, name: str, fn: Callable[[Path], tuple[str, str]]) -> None:
    CASES.append((area, kind, name, fn))


# ---- classification helpers -----------------------------------------------------------------------


def _names_ok(message: str, names: list[Any]) -> bool:
    low = message.lower()
    for token in names:
        options = token if isinstance(token, tuple) else (token,)
        if not any(str(o).lower() in low for o in options):
            return False
    return True


def _is_crash(exc: BaseException) -> bool:
    if isinstance(exc, CRASH_TYPES):
        return True
    return bool(isinstance(exc, KeyError) and not isinstance(exc, raglab.RowTableError))


def _from_dependency(exc: BaseException) -> bool:
    module = type(exc).__module__ or ""
    return not (module.startswith("raglab") or module == "builtins")


def classify_error(exc: BaseException, names: list[Any]) -> tuple[str, str]:
    text = f"{type(exc).__name__}: {exc}"
    short = text.replace("\n", " ")[:160]
    if _is_crash(exc):
        tb = traceback.extract_tb(exc.__traceback__)
        where = f" at {Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else ""
        return "crash", short + where
    if _from_dependency(exc):
        return "unclear error", "raw " + short
    if _names_ok(str(exc), names):
        return "refused clearly", short
    return "unclear error", f"{short} (expected to name {names})"


def bad(fn: Callable[[], Any], names: list[Any], accept: Callable[[Any, list[str]], bool] | None = None,
        why: str = "accepted") -> tuple[str, str]:
    """Run a bad input: a clear refusal naming ``names``, or ``accept(result, warnings)``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = fn()
        except Exception as exc:  # noqa: BLE001
            return classify_error(exc, names)
    messages = [str(w.message) for w in caught]
    try:
        ok = accept is not None and accept(result, messages)
    except Exception as exc:  # noqa: BLE001  (the result was not what a user could use)
        return "silent acceptance", f"{why}; result unusable: {type(exc).__name__}: {exc}"[:160]
    if ok:
        return "handled", "accepted" + (f" with warning: {messages[0][:80]}" if messages else "")
    return "silent acceptance", why + (f" (warnings: {messages[0][:60]})" if messages else " (no warning)")


def valid(fn: Callable[[], Any], check: Callable[[Any], bool] = lambda r: True) -> tuple[str, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = fn()
        except Exception as exc:  # noqa: BLE001
            return "fails", f"{type(exc).__name__}: {exc}".replace("\n", " ")[:160]
    try:
        good = check(result)
    except Exception as exc:  # noqa: BLE001
        return "fails", f"check: {type(exc).__name__}: {exc}"[:160]
    return ("works", "") if good else ("fails", "wrong result")


def digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, (list, tuple, np.ndarray)) and isinstance(b, (list, tuple, np.ndarray)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if a is None or b is None or (isinstance(a, float) and math.isnan(a)) or (isinstance(b, float) and math.isnan(b)):
        return (a is None or (isinstance(a, float) and math.isnan(a)) or a is pd.NA) and (
            b is None or (isinstance(b, float) and math.isnan(b)) or b is pd.NA)
    try:
        eq = a == b
        if isinstance(eq, (bool, np.bool_)):
            return bool(eq) and type(a) is not bool or bool(eq) and isinstance(b, (bool, np.bool_))
        return False
    except Exception:  # noqa: BLE001
        return False


def frames_equal(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    if list(map(str, a.columns)) != list(map(str, b.columns)) or len(a) != len(b):
        return False
    for ca, cb in zip(a.columns, b.columns):
        for x, y in zip(a[ca].tolist(), b[cb].tolist()):
            if isinstance(x, np.generic):
                x = x.item()
            if isinstance(y, np.generic):
                y = y.item()
            if x is pd.NA:
                x = None
            if y is pd.NA:
                y = None
            if not _same(x, y):
                return False
    return True


def base_rows(n: int = 4) -> pd.DataFrame:
    return pd.DataFrame({
        "question_id": [f"q{i}" for i in range(n)],
        "retrieved": [[f"d{i}", f"d{i + 1}", "d9"] for i in range(n)],
        "gold": [[f"d{i}"] if i % 2 == 0 else [f"d{i + 5}"] for i in range(n)],
        "score": [0.25 * i for i in range(n)],
        "flag": [i % 2 == 0 for i in range(n)],
        "text": [f"answer {i}" for i in range(n)],
    })


FORMATS = ["jsonl", "csv", "parquet", "jsonl.gz", "csv.gz"]

# ---- files: round trips of valid edge inputs --------------------------------------------------------


def _edge_frames() -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(0)
    b = base_rows()
    return {
        "basic": b,
        "unicode text": b.assign(text=["héllo wörld", "日本語テキスト", "emoji 🎉👍🏽", "مرحبا بالعالم"]),
        "newlines and quotes": b.assign(text=['say "hi"', "a,b;c", "line1\nline2", "tab\there\r\nx"]),
        "NA-like strings": b.assign(text=["NA", "null", "None", "NaN"]),
        "empty strings": b.assign(text=["", " ", "", "  x  "]),
        "numeric-looking ids": b.assign(question_id=["001", "1e5", "0x1F", "-0"]),
        "huge ints": b.assign(score=[2**62, -(2**62), 0, 1]).astype({"score": "int64"}),
        "nan and inf floats": b.assign(score=[np.nan, np.inf, -np.inf, -0.0]),
        "empty lists": b.assign(retrieved=[[], ["d1"], [], []], gold=[[], [], ["d1"], []]),
        "graded gold dicts": b.assign(gold=[{"d0": 2}, {"d1": 1, "d2": 0}, {}, {"d3": 3}]),
        "all-NaN column": b.assign(score=[np.nan] * 4),
        "zero rows": b.iloc[:0],
        "one column": b[["question_id"]],
        "odd column names": b.rename(columns={"score": "recall@5", "text": "my col.x", "flag": "naïve 列"}),
        "long cell 300k": b.assign(text=["x" * 300_000, "y", "z" * 70_000, ""]),
        "nullable Int64": b.assign(score=pd.array([1, None, 3, 4], dtype="Int64")),
        "random floats": b.assign(score=rng.random(4)),
        "bool with missing": b.assign(flag=pd.array([True, None, False, True], dtype="boolean")),
        "leading zero text ids in lists": b.assign(retrieved=[["001", "01", "1"]] * 4),
        "uint64 max": b.assign(score=np.array([2**64 - 1, 0, 1, 2], dtype=np.uint64)),
        "int8 extremes": b.assign(score=np.array([-128, 127, 0, 1], dtype=np.int8)),
    }


def _roundtrip_case(fmt: str, frame: pd.DataFrame) -> Callable[[Path], tuple[str, str]]:
    def run(tmp: Path) -> tuple[str, str]:
        path = tmp / f"rows.{fmt}"

        def go() -> pd.DataFrame:
            write_rows(frame, path)
            return read_rows(path)
        return valid(go, lambda back: frames_equal(frame.reset_index(drop=True), back))
    return run


for _name, _frame in _edge_frames().items():
    for _fmt in FORMATS:
        add("files", "valid", f"round trip {_fmt}: {_name}", _roundtrip_case(_fmt, _frame))


# ---- files: cells and frames that cannot be stored --------------------------------------------------

_UNSTORABLE = {
    "set cell": ("gold", lambda b: b.assign(gold=[{"d1"}, {"d2"}, set(), {"d3"}])),
    "bytes cell": ("text", lambda b: b.assign(text=[b"x", b"y", b"z", b"w"])),
    "Decimal cell": ("score", lambda b: b.assign(score=[Decimal("0.1")] * 4)),
    "date cell": ("text", lambda b: b.assign(text=[pd.Timestamp("2024-01-01").date()] * 4)),
    "lone surrogate": ("text", lambda b: b.assign(text=pd.Series(["ok", "bad \ud800", "ok", "ok"], dtype=object))),
    "complex number": ("score", lambda b: b.assign(score=[1 + 2j] * 4)),
    "object() cell": ("text", lambda b: b.assign(text=[object()] * 4)),
}


def _unstorable_case(fmt: str, column: str, make: Callable[[pd.DataFrame], pd.DataFrame]) -> Callable[[Path], tuple[str, str]]:
    def run(tmp: Path) -> tuple[str, str]:
        path = tmp / f"rows.{fmt}"
        write_rows(base_rows(), path)  # an earlier good file at the same path
        before, side = digest(path), digest(sidecar_path(path))
        frame = make(base_rows())
        outcome = bad(lambda: write_rows(frame, path), [column],
                      accept=lambda r, w: frames_equal(frame, read_rows(path)) and bool(w))
        if digest(path) != before and outcome[0] != "handled":
            return "data loss", "a refused write changed the earlier file"
        if digest(sidecar_path(path)) != side and outcome[0] != "handled":
            return "data loss", "a refused write changed the earlier sidecar"
        return outcome
    return run


for _name, (_col, _make) in _UNSTORABLE.items():
    for _fmt in ["jsonl", "csv", "parquet"]:
        add("files", "bad", f"write {_fmt}: {_name}", _unstorable_case(_fmt, _col, _make))


def _frame_case(fmt: str, make: Callable[[], pd.DataFrame], names: list[Any]) -> Callable[[Path], tuple[str, str]]:
    def run(tmp: Path) -> tuple[str, str]:
        frame = make()
        path = tmp / f"rows.{fmt}"
        return bad(lambda: write_rows(frame, path), names,
                   accept=lambda r, w: frames_equal(frame.reset_index(drop=True), read_rows(path)))
    return run


_BAD_FRAMES = {
    "duplicate column names": (lambda: pd.concat([base_rows(), base_rows()[["score"]]], axis=1), ["score"]),
    "MultiIndex columns": (lambda: pd.DataFrame([[1, 2]], columns=pd.MultiIndex.from_tuples([("a", "b"), ("a", "c")])),
                           [("column", "multiindex")]),
    "non-string column name": (lambda: base_rows().rename(columns={"score": 0}), ["0"]),
    "attrs with NaN": (lambda: base_rows().pipe(lambda d: (d.attrs.update({"x": float("nan")}), d)[1]), ["x"]),
    "attrs with a set": (lambda: base_rows().pipe(lambda d: (d.attrs.update({"tags": {"a"}}), d)[1]), ["tags"]),
    "column named like the sidecar key": (lambda: base_rows().rename(columns={"text": ""}), [("column", "''", '""')]),
    "datetime column": (lambda: base_rows().assign(text=pd.date_range("2024-01-01", periods=4)), ["text"]),
    "categorical column": (lambda: base_rows().assign(text=pd.Categorical(["a", "b", "a", "c"])), ["text"]),
}
for _name, (_make, _names) in _BAD_FRAMES.items():
    for _fmt in ["jsonl", "csv", "parquet"]:
        add("files", "bad", f"write {_fmt}: {_name}", _frame_case(_fmt, _make, _names))


# ---- files: damaged, foreign and misnamed files -----------------------------------------------------


def _written(tmp: Path, fmt: str, frame: pd.DataFrame | None = None) -> Path:
    path = tmp / f"rows.{fmt}"
    write_rows(base_rows() if frame is None else frame, path)
    return path


def _read_bad(tmp: Path, path: Path, names: list[Any] | None = None,
              accept: Callable[[Any, list[str]], bool] | None = None) -> tuple[str, str]:
    return bad(lambda: read_rows(path), names if names is not None else [(path.name, "line", "row")], accept)


for _fmt in FORMATS:
    def _truncated(tmp: Path, fmt: str = _fmt) -> tuple[str, str]:
        path = _written(tmp, fmt, base_rows(50))
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
        return _read_bad(tmp, path, accept=lambda r, w: any("sidecar" in m or "changed" in m for m in w)
                         and len(r) < 50 and fmt.startswith(("jsonl", "csv")) and not fmt.endswith("gz"))
    add("files", "bad", f"read {_fmt}: truncated to half", _truncated)

    def _empty(tmp: Path, fmt: str = _fmt) -> tuple[str, str]:
        path = tmp / f"rows.{fmt}"
        path.write_bytes(b"")
        return _read_bad(tmp, path, [(path.name, "empty")], accept=lambda r, w: len(r) == 0)
    add("files", "bad", f"read {_fmt}: empty file", _empty)

    def _garbage(tmp: Path, fmt: str = _fmt) -> tuple[str, str]:
        path = tmp / f"rows.{fmt}"
        path.write_bytes(bytes(np.random.default_rng(1).integers(0, 256, 300, dtype=np.uint8)))
        return _read_bad(tmp, path)
    add("files", "bad", f"read {_fmt}: random bytes", _garbage)

    def _dir(tmp: Path, fmt: str = _fmt) -> tuple[str, str]:
        path = tmp / f"rows.{fmt}"
        path.mkdir()
        return _read_bad(tmp, path, [path.name])
    add("files", "bad", f"read {_fmt}: a directory", _dir)

    def _missing(tmp: Path, fmt: str = _fmt) -> tuple[str, str]:
        return _read_bad(tmp, tmp / f"nope.{fmt}", [f"nope.{fmt}"])
    add("files", "bad", f"read {_fmt}: missing file", _missing)

    def _write_dir(tmp: Path, fmt: str = _fmt) -> tuple[str, str]:
        path = tmp / f"out.{fmt}"
        path.mkdir()
        (path / "keep.txt").write_text("mine")
        out = bad(lambda: write_rows(base_rows(), path), [path.name])
        if not (path / "keep.txt").is_file():
            return "data loss", "writing over a directory removed its contents"
        return out
    add("files", "bad", f"write {_fmt}: path is a directory", _write_dir)

    def _bad_sidecar(tmp: Path, fmt: str = _fmt) -> tuple[str, str]:
        path = _written(tmp, fmt)
        sidecar_path(path).write_text("{not json")
        return _read_bad(tmp, path, [sidecar_path(path).name],
                         accept=lambda r, w: len(r) == 4 and any("sidecar" in m for m in w))
    if _fmt != "parquet":  # Parquet keeps its schema inside the file: no sidecar
        add("files", "bad", f"read {_fmt}: sidecar not JSON", _bad_sidecar)

    def _other_sidecar(tmp: Path, fmt: str = _fmt) -> tuple[str, str]:
        path = _written(tmp, fmt)
        other = tmp / f"other.{fmt}"
        write_rows(base_rows().assign(score=["a", "b", "c", "d"]), other)
        shutil.copy(sidecar_path(other), sidecar_path(path))
        return _read_bad(tmp, path, [sidecar_path(path).name],
                         accept=lambda r, w: len(r) == 4 and bool(w) and r["score"].tolist() == [0, 0.25, 0.5, 0.75])
    if _fmt != "parquet":
        add("files", "bad", f"read {_fmt}: another file's sidecar", _other_sidecar)

    def _no_sidecar(tmp: Path, fmt: str = _fmt) -> tuple[str, str]:
        path = _written(tmp, fmt)
        sidecar_path(path).unlink()
        return valid(lambda: read_rows(path), lambda r: r["retrieved"].tolist() == base_rows()["retrieved"].tolist()
                     and r["score"].tolist() == base_rows()["score"].tolist())
    if _fmt != "parquet":
        add("files", "valid", f"read {_fmt}: sidecar deleted", _no_sidecar)

    def _own_sidecar(tmp: Path, fmt: str = _fmt) -> tuple[str, str]:
        path = _written(tmp, fmt)
        side = sidecar_path(path)
        before = digest(side)
        out = bad(lambda: write_rows(base_rows(), side), [side.name])
        if digest(side) != before:
            return "data loss", "write_rows to a file's sidecar path replaced that sidecar"
        return out
    if _fmt != "parquet":
        add("files", "bad", f"write {_fmt}: onto another file's sidecar", _own_sidecar)


def _edit(tmp: Path, fmt: str, change: Callable[[str], str]) -> Path:
    path = _written(tmp, fmt)
    path.write_text(change(path.read_text(encoding="utf-8")), encoding="utf-8")
    return path


@case("files", "bad", "jsonl: a line appended by hand")
def _(tmp: Path) -> tuple[str, str]:
    path = _edit(tmp, "jsonl", lambda t: t + json.dumps({"question_id": "q9", "retrieved": ["d1"], "gold": [],
                                                          "score": 1.0, "flag": True, "text": "x"}) + "\n")
    return _read_bad(tmp, path, accept=lambda r, w: len(r) == 5 and r["retrieved"].iloc[4] == ["d1"])


@case("files", "bad", "jsonl: a line with a missing key")
def _(tmp: Path) -> tuple[str, str]:
    path = _edit(tmp, "jsonl", lambda t: t + json.dumps({"question_id": "q9"}) + "\n")
    return _read_bad(tmp, path, accept=lambda r, w: len(r) == 5 and bool(w))


@case("files", "bad", "jsonl: a // comment line")
def _(tmp: Path) -> tuple[str, str]:
    return _read_bad(tmp, _edit(tmp, "jsonl", lambda t: "// made by hand\n" + t), ["line 1"])


@case("files", "bad", "jsonl: a trailing comma")
def _(tmp: Path) -> tuple[str, str]:
    return _read_bad(tmp, _edit(tmp, "jsonl", lambda t: t.replace("}\n", "},\n", 1)), ["line 1"])


@case("files", "bad", "jsonl: a line that is a list")
def _(tmp: Path) -> tuple[str, str]:
    return _read_bad(tmp, _edit(tmp, "jsonl", lambda t: t + "[1, 2]\n"), ["line 5"])


@case("files", "bad", "jsonl: a line that is a number")
def _(tmp: Path) -> tuple[str, str]:
    return _read_bad(tmp, _edit(tmp, "jsonl", lambda t: t + "42\n"), ["line 5"])


@case("files", "bad", "jsonl: duplicate key in an object")
def _(tmp: Path) -> tuple[str, str]:
    path = tmp / "rows.jsonl"
    path.write_text('{"question_id": "q1", "score": 1, "score": 2}\n')
    return _read_bad(tmp, path, ["score"], accept=lambda r, w: bool(w))


@case("files", "valid", "jsonl: blank lines and CRLF")
def _(tmp: Path) -> tuple[str, str]:
    path = tmp / "rows.jsonl"
    path.write_bytes(b'{"question_id": "q1", "retrieved": ["d1"]}\r\n\r\n{"question_id": "q2", "retrieved": []}\r\n  \n')
    return valid(lambda: read_rows(path), lambda r: r["question_id"].tolist() == ["q1", "q2"])


@case("files", "valid", "jsonl: UTF-8 BOM")
def _(tmp: Path) -> tuple[str, str]:
    path = tmp / "rows.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"question_id": "q1", "retrieved": ["d1"]}\n')
    return valid(lambda: read_rows(path), lambda r: list(r.columns) == ["question_id", "retrieved"])


@case("files", "bad", "jsonl: NaN token from another tool")
def _(tmp: Path) -> tuple[str, str]:
    path = tmp / "rows.jsonl"
    path.write_text('{"question_id": "q1", "score": NaN}\n{"question_id": "q2", "score": 0.5}\n')
    return _read_bad(tmp, path, ["line 1"], accept=lambda r, w: math.isnan(r["score"].iloc[0]))


@case("files", "bad", "jsonl: latin-1 bytes")
def _(tmp: Path) -> tuple[str, str]:
    path = tmp / "rows.jsonl"
    path.write_bytes('{"question_id": "caf\u00e9"}\n'.encode("latin-1"))
    return _read_bad(tmp, path, [(path.name, "line 1"), ("utf-8", "encoding", "utf8")])


@case("files", "bad", "csv: latin-1 bytes (Excel export)")
def _(tmp: Path) -> tuple[str, str]:
    path = tmp / "rows.csv"
    path.write_bytes("question_id,text\nq1,caf\u00e9\n".encode("latin-1"))
    return _read_bad(tmp, path, [(path.name, "line", "row"), ("utf-8", "encoding", "utf8")])


@case("files", "bad", "csv: UTF-16 (Excel 'Unicode text')")
def _(tmp: Path) -> tuple[str, str]:
    path = tmp / "rows.csv"
    path.write_bytes("question_id,text\nq1,x\n".encode("utf-16"))
    return _read_bad(tmp, path, [path.name, ("utf-8", "encoding", "utf8", "utf-16")])


@case("files", "valid", "csv: Excel re-save (BOM, CRLF, TRUE/FALSE)")
def _(tmp: Path) -> tuple[str, str]:
    path = tmp / "rows.csv"
    path.write_bytes(b'\xef\xbb\xbfquestion_id,flag,score\r\nq1,TRUE,0.5\r\nq2,FALSE,1\r\n')
    return valid(lambda: read_rows(path), lambda r: r["flag"].tolist() == [True, False]
                 and r["question_id"].tolist() == ["q1", "q2"])


@case("files", "bad", "csv: semicolon-delimited (European Excel)")
def _(tmp: Path) -> tuple[str, str]:
    path = tmp / "rows.csv"
    path.write_text("question_id;score\nq1;0,5\nq2;1\n")
    return _read_bad(tmp, path, [path.name, "line"], accept=lambda r, w: "score" in r.columns and bool(w))


@case("files", "bad", "csv: duplicate header names")
def _(tmp: Path) -> tuple[str, str]:
    path = tmp / "rows.csv"
    path.write_text("question_id,score,score\nq1,1,2\n")
    return _read_bad(tmp, path, ["score"])


@case("files", "bad", "csv: ragged row (extra field)")
def _(tmp: Path) -> tuple[str, str]:
    path = tmp / "rows.csv"
    path.write_text("question_id,score\nq1,1\nq2,2,3\n")
    return _read_bad(tmp, path, [("line 3", "row 2", "row 1", "line")])


@case("files", "bad", "csv: short row (missing field)")
def _(tmp: Path) -> tuple[str, str]:
    path = tmp / "rows.csv"
    path.write_text("question_id,score\nq1,1\nq2\n")
    return _read_bad(tmp, path, [("line 3", "row 2", "row 1", "line")],
                     accept=lambda r, w: len(r) == 2 and pd.isna(r["score"].iloc[1]))


@case("files", "bad", "csv: unterminated quote")
def _(tmp: Path) -> tuple[str, str]:
    path = tmp / "rows.csv"
    path.write_text('question_id,text\nq1,"oops\nq2,x\n')
    return _read_bad(tmp, path, [("line", "row", "quote")])


@case("files", "bad", "csv: pandas to_csv of list columns (repr strings)")
def _(tmp: Path) -> tuple[str, str]:
    path = tmp / "rows.csv"
    base_rows().to_csv(path, index=False)
    return bad(lambda: read_rows(path).rag.retrieval(k=2), ["retrieved"],
               accept=lambda r, w: r["recall@2"].tolist()[0] == 1.0)


@case("files", "bad", "csv: pandas index column written")
def _(tmp: Path) -> tuple[str, str]:
    path = tmp / "rows.csv"
    base_rows()[["question_id", "score"]].to_csv(path)
    return _read_bad(tmp, path, [], accept=lambda r, w: "score" in r.columns and len(r) == 4)


@case("files", "valid", "csv: header only")
def _(tmp: Path) -> tuple[str, str]:
    path = tmp / "rows.csv"
    path.write_text("question_id,score\n")
    return valid(lambda: read_rows(path), lambda r: len(r) == 0 and list(r.columns) == ["question_id", "score"])


@case("files", "valid", "parquet: written by pandas (no sidecar) with list columns")
def _(tmp: Path) -> tuple[str, str]:
    path = tmp / "rows.parquet"
    base_rows().to_parquet(path)
    return valid(lambda: read_rows(path), lambda r: r["retrieved"].tolist() == base_rows()["retrieved"].tolist()
                 and r["gold"].tolist() == base_rows()["gold"].tolist())


@case("files", "valid", "parquet: written by pyarrow with a dictionary column")
def _(tmp: Path) -> tuple[str, str]:
    import pyarrow as pa
    import pyarrow.parquet as pq
    path = tmp / "rows.parquet"
    table = pa.table({"question_id": pa.array(["q1", "q2"]).dictionary_encode(), "score": [0.5, 1.0]})
    pq.write_table(table, path)
    return valid(lambda: read_rows(path), lambda r: r["question_id"].tolist() == ["q1", "q2"])


@case("files", "bad", "parquet bytes named .jsonl")
def _(tmp: Path) -> tuple[str, str]:
    src = _written(tmp, "parquet")
    path = tmp / "rows.jsonl"
    shutil.copy(src, path)
    return _read_bad(tmp, path, [path.name])


@case("files", "bad", "jsonl named .csv")
def _(tmp: Path) -> tuple[str, str]:
    src = _written(tmp, "jsonl")
    path = tmp / "rows.csv"
    shutil.copy(src, path)
    return _read_bad(tmp, path, [path.name], accept=lambda r, w: False)


@case("files", "bad", "plain text named .gz")
def _(tmp: Path) -> tuple[str, str]:
    path = tmp / "rows.jsonl.gz"
    path.write_text('{"question_id": "q1"}\n')
    return _read_bad(tmp, path, [path.name], accept=lambda r, w: r["question_id"].tolist() == ["q1"])


@case("files", "bad", "unknown extension .txt")
def _(tmp: Path) -> tuple[str, str]:
    path = tmp / "rows.txt"
    path.write_text('{"question_id": "q1"}\n')
    return _read_bad(tmp, path, [(".txt", "rows.txt"), ("jsonl", "format")])


@case("files", "bad", "write unknown extension .xlsx")
def _(tmp: Path) -> tuple[str, str]:
    return bad(lambda: write_rows(base_rows(), tmp / "rows.xlsx"), [(".xlsx", "rows.xlsx")])


@case("files", "valid", "upper-case extension .JSONL")
def _(tmp: Path) -> tuple[str, str]:
    path = tmp / "ROWS.JSONL"
    return valid(lambda: (write_rows(base_rows(), path), read_rows(path))[1], lambda r: frames_equal(base_rows(), r))


@case("files", "valid", "gz of a raglab jsonl made by the gzip tool")
def _(tmp: Path) -> tuple[str, str]:
    src = _written(tmp, "jsonl")
    path = tmp / "rows2.jsonl.gz"
    path.write_bytes(gzip.compress(src.read_bytes()))
    return valid(lambda: read_rows(path), lambda r: r["retrieved"].tolist() == base_rows()["retrieved"].tolist())


@case("files", "valid", "path with spaces, unicode and ~")
def _(tmp: Path) -> tuple[str, str]:
    path = tmp / "my runs ✓" / "run (1).jsonl"
    path.parent.mkdir()
    return valid(lambda: (write_rows(base_rows(), path), read_rows(path))[1], lambda r: frames_equal(base_rows(), r))


@case("files", "bad", "write into a missing folder")
def _(tmp: Path) -> tuple[str, str]:
    path = tmp / "no" / "such" / "rows.jsonl"
    return bad(lambda: write_rows(base_rows(), path), [("no/such", "such", "rows.jsonl")],
               accept=lambda r, w: frames_equal(base_rows(), read_rows(path)))


@case("files", "valid", "5 MB cell in JSONL")
def _(tmp: Path) -> tuple[str, str]:
    frame = base_rows().assign(text=["x" * 5_000_000, "a", "b", "c"])
    return _roundtrip_case("jsonl", frame)(tmp)


@case("files", "bad", "threads writing one path")
def _(tmp: Path) -> tuple[str, str]:
    path = tmp / "rows.jsonl"
    frames = [base_rows(20).assign(text=f"writer {i}") for i in range(4)]
    errors: list[BaseException] = []

    def writer(i: int) -> None:
        try:
            for _ in range(3):
                write_rows(frames[i], path)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        return classify_error(errors[0], [path.name])
    back = read_rows(path)
    if not any(frames_equal(f, back) for f in frames):
        return "data loss", "mixed file after concurrent writes"
    return "handled", "one writer's file, whole"


# ---- TREC ---------------------------------------------------------------------------------------------

RUN = "q1 Q0 d1 1 3.0 r\nq1 Q0 d2 2 2.0 r\nq2 Q0 d3 1 1.0 r\n"
QRELS = "q1 0 d1 1\nq2 0 d3 2\n"


def _trec_files(tmp: Path, run: str | bytes | None = RUN, qrels: str | bytes | None = QRELS) -> tuple[Path | None, Path | None]:
    out: list[Path | None] = []
    for name, text in (("run.txt", run), ("qrels.txt", qrels)):
        if text is None:
            out.append(None)
            continue
        p = tmp / name
        p.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
        out.append(p)
    return out[0], out[1]


def _trec_bad(name: str, run: str | bytes | None, qrels: str | bytes | None, names: list[Any],
              accept: Callable[[Any, list[str]], bool] | None = None) -> None:
    def go(tmp: Path) -> tuple[str, str]:
        r, q = _trec_files(tmp, run, qrels)
        return bad(lambda: read_trec(r, q), names, accept)
    add("trec", "bad", name, go)


def _trec_valid(name: str, run: str | bytes | None, qrels: str | bytes | None, check: Callable[[pd.DataFrame], bool]) -> None:
    def go(tmp: Path) -> tuple[str, str]:
        r, q = _trec_files(tmp, run, qrels)
        return valid(lambda: read_trec(r, q), check)
    add("trec", "valid", name, go)


def _ret(df: pd.DataFrame, qid: str) -> list[str]:
    return list(df.set_index("question_id").loc[qid, "retrieved"])


def _gold(df: pd.DataFrame, qid: str) -> Any:
    return df.set_index("question_id").loc[qid, "gold"]


_trec_bad("run: 3 fields on a line", RUN + "q3 Q0 d4\n", None, [("line 4", ":4")])
_trec_bad("run: non-numeric score", RUN + "q3 Q0 d4 1 abc r\n", None, [("line 4", ":4"), "abc"])
_trec_bad("run: score nan", RUN + "q3 Q0 d4 1 nan r\n", None, [("line 4", ":4", "q3")])
_trec_bad("run: score inf", RUN + "q3 Q0 d4 1 inf r\n", None, [("line 4", ":4", "q3")])
_trec_bad("run: duplicate document in a topic", RUN + "q1 Q0 d1 3 0.5 r\n", None, ["d1", "q1"])
_trec_bad("run: 5 fields (no run name)", "q1 Q0 d1 1 3.0\nq1 Q0 d2 2 2.0\n", None, [("line 1", ":1")],
          accept=lambda r, w: _ret(r, "q1") == ["d1", "d2"])
_trec_bad("run: scores disagree with ranks", "q1 Q0 d1 1 1.0 r\nq1 Q0 d2 2 2.0 r\n", None, [],
          accept=lambda r, w: bool(w) and _ret(r, "q1") == ["d2", "d1"])
_trec_bad("run: tied scores", "q1 Q0 a 1 1.0 r\nq1 Q0 b 2 1.0 r\nq1 Q0 c 3 1.0 r\n", None, [],
          accept=lambda r, w: _ret(r, "q1") == ["c", "b", "a"] and bool(w))
_trec_bad("run: read as qrels", None, RUN, [("run", "6 fields", "six")])
_trec_bad("qrels: read as run", QRELS, None, [("line 1", ":1", "qrels")])
_trec_bad("qrels: non-numeric grade", RUN, QRELS + "q1 0 d2 high\n", [("line 3", ":3"), "high"])
_trec_bad("qrels: fractional grade", RUN, QRELS + "q1 0 d2 1.5\n", [("line 3", ":3", "1.5")])
_trec_bad("qrels: 3 fields", RUN, "q1 d1 1\n", [("line 1", ":1")])
_trec_bad("qrels: duplicate pair, different grades", RUN, QRELS + "q1 0 d1 0\n", ["d1"],
          accept=lambda r, w: bool(w))
_trec_bad("qrels: negative grade", RUN, QRELS + "q1 0 d2 -1\n", [],
          accept=lambda r, w: "d2" not in [k for k, v in (_gold(r, "q1").items() if isinstance(_gold(r, "q1"), dict)
                                                         else [(g, 1) for g in _gold(r, "q1")]) if v > 0])
_trec_bad("run topic missing from qrels", RUN + "q7 Q0 d1 1 1.0 r\n", QRELS, [],
          accept=lambda r, w: "q7" not in r["question_id"].tolist() and any("q7" in m or "1 topic" in m for m in w))
_trec_bad("qrels topic missing from run", "q1 Q0 d1 1 3.0 r\n", QRELS, [],
          accept=lambda r, w: _ret(r, "q2") == [])
_trec_bad("run: binary file", bytes(range(256)) * 4, None, [("run.txt", "line")])
_trec_bad("run: latin-1 id", "q1 Q0 caf\xe9 1 1.0 r\n".encode("latin-1"), None,
          [("run.txt", "line 1", ":1"), ("utf-8", "encoding", "utf8")])
_trec_bad("run: empty file", "", QRELS, [("run.txt", "empty")], accept=lambda r, w: bool(w) or len(r) == 2)
_trec_bad("qrels: empty file", RUN, "", [("qrels.txt", "empty")], accept=lambda r, w: False)
_trec_bad("run: only comments", "# a\n# b\n", None, [("run.txt", "empty", "no")], accept=lambda r, w: len(r) == 0)
_trec_bad("run: rank not an integer", "q1 Q0 d1 x 1.0 r\n", None, [("line 1", ":1")],
          accept=lambda r, w: _ret(r, "q1") == ["d1"])
_trec_valid("run: tab separated", RUN.replace(" ", "\t"), None, lambda r: _ret(r, "q1") == ["d1", "d2"])
_trec_valid("run: CRLF and trailing spaces", RUN.replace("\n", "  \r\n"), None, lambda r: _ret(r, "q1") == ["d1", "d2"])
_trec_valid("run: BOM", "\ufeff" + RUN, None, lambda r: _ret(r, "q1") == ["d1", "d2"])
_trec_valid("run: ids '1' and '01' distinct", "1 Q0 a 1 2 r\n01 Q0 b 1 2 r\n", None,
            lambda r: sorted(r["question_id"].tolist()) == ["01", "1"] and _ret(r, "01") == ["b"])
_trec_valid("run: unicode ids", "問1 Q0 文書 1 2 r\n", None, lambda r: _ret(r, "問1") == ["文書"])
_trec_valid("run: '#' inside an id", "q#1 Q0 d#2 1 2 r\n", None, lambda r: _ret(r, "q#1") == ["d#2"])
_trec_valid("run: scientific-notation scores", "q1 Q0 a 1 1e-3 r\nq1 Q0 b 2 5E-4 r\n", None,
            lambda r: _ret(r, "q1") == ["a", "b"])
_trec_valid("run: 1,000-char id", f"q1 Q0 {'d' * 1000} 1 1 r\n", None, lambda r: _ret(r, "q1") == ["d" * 1000])
_trec_valid("qrels: numeric-looking doc ids kept as text", None, "1 0 007 1\n1 0 7 0\n",
            lambda r: "007" in (list(_gold(r, "1")) if not isinstance(_gold(r, "1"), dict) else _gold(r, "1")))
_trec_valid("qrels: grade 0 only", RUN, "q1 0 d1 0\n", lambda r: len(r) == 1)


def _wtrec_bad(name: str, make: Callable[[], pd.DataFrame], names: list[Any], kw: dict[str, Any] | None = None,
               accept: Callable[[Any, list[str]], bool] | None = None) -> None:
    def go(tmp: Path) -> tuple[str, str]:
        run, qrels = tmp / "run.txt", tmp / "qrels.txt"
        run.write_text("keep me\n")
        frame = make()
        out = bad(lambda: write_trec(frame, run, qrels, **(kw or {})), names, accept)
        if out[0] in ("refused clearly", "unclear error", "crash") and run.read_text() != "keep me\n":
            return "data loss", "a refused write_trec changed the earlier run file"
        return out
    add("trec", "bad", "write_trec: " + name, go)


def _trows() -> pd.DataFrame:
    return pd.DataFrame({"question_id": ["q1", "q2"], "retrieved": [["d1", "d2"], ["d3"]],
                         "gold": [["d1"], {"d3": 2}]})


_wtrec_bad("id with a space", lambda: _trows().assign(retrieved=[["d 1"], ["d3"]]), ["d 1"])
_wtrec_bad("id with a newline", lambda: _trows().assign(question_id=["q\n1", "q2"]), [("q\\n1", "q\n1", "'q")])
_wtrec_bad("empty id", lambda: _trows().assign(retrieved=[[""], ["d3"]]), [("empty", "''", '""')])
_wtrec_bad("NaN score", lambda: _trows().assign(retrieved_scores=[[np.nan, 1.0], [1.0]]), [("retrieved_scores", "nan")])
_wtrec_bad("scores that reorder the list", lambda: _trows().assign(retrieved_scores=[[1.0, 2.0], [1.0]]),
           ["q1"])
_wtrec_bad("retrieved is a string", lambda: _trows().assign(retrieved=["d1", "d3"]), ["retrieved"])
_wtrec_bad("fractional grade", lambda: _trows().assign(gold=[{"d1": 1.5}, []]), ["1.5"])
_wtrec_bad("run name with a space", _trows, [("my run", "run_name")], kw={"run_name": "my run"})
_wtrec_bad("None retrieved", lambda: _trows().assign(retrieved=[None, ["d3"]]), [("q1", "retrieved")],
           accept=lambda r, w: bool(w))
_wtrec_bad("duplicate question ids", lambda: pd.concat([_trows(), _trows()]), [("q1", "duplicate")])
_wtrec_bad("duplicate doc within a list", lambda: _trows().assign(retrieved=[["d1", "d1"], ["d3"]]), ["d1"])
_wtrec_bad("missing column", lambda: _trows().drop(columns="retrieved"), ["retrieved"])
_wtrec_bad("integer doc ids", lambda: _trows().assign(retrieved=[[1, 2], [3]], gold=[[1], [3]]), [],
           accept=lambda r, w: True)


@case("trec", "bad", "write_trec: run path == qrels path")
def _(tmp: Path) -> tuple[str, str]:
    p = tmp / "both.txt"
    return bad(lambda: write_trec(_trows(), p, p), ["both.txt"])


@case("trec", "bad", "write_trec: run path is a directory")
def _(tmp: Path) -> tuple[str, str]:
    p = tmp / "run"
    p.mkdir()
    return bad(lambda: write_trec(_trows(), p, None), ["run"])


@case("trec", "valid", "write_trec then read_trec: ties, unicode, graded")
def _(tmp: Path) -> tuple[str, str]:
    rows = pd.DataFrame({"question_id": ["問1", "q2"], "retrieved": [["z", "b", "a"], ["c"]],
                         "retrieved_scores": [[2.0, 1.0, 1.0], [0.5]], "gold": [{"b": 2}, {"c": 1}]})
    run, qrels = tmp / "r.txt", tmp / "q.txt"

    def go() -> pd.DataFrame:
        write_trec(rows, run, qrels)
        return read_trec(run, qrels)
    return valid(go, lambda r: _ret(r, "問1") == ["z", "b", "a"] and _ret(r, "q2") == ["c"])


@case("trec", "valid", "write_trec: question with an empty ranking round trip")
def _(tmp: Path) -> tuple[str, str]:
    rows = _trows().assign(retrieved=[["d1"], []])
    run, qrels = tmp / "r.txt", tmp / "q.txt"

    def go() -> pd.DataFrame:
        write_trec(rows, run, qrels)
        return read_trec(run, qrels)
    return valid(go, lambda r: _ret(r, "q2") == [] and _ret(r, "q1") == ["d1"])


# ---- eval sets --------------------------------------------------------------------------------------


def _es_rows(n: int = 6) -> pd.DataFrame:
    return pd.DataFrame({"question_id": [f"q{i}" for i in range(n)], "question": [f"Q {i}?" for i in range(n)],
                         "gold": [[f"d{i}"] for i in range(n)], "qtype": ["a", "b"] * (n // 2)})


def _frozen(tmp: Path) -> tuple[Path, EvalSet]:
    root = tmp / "es"
    return root, EvalSet.freeze(_es_rows(), root, version="v1", columns=["qtype"])


def _es_bad(name: str, action: Callable[[Path], Any], names: list[Any],
            accept: Callable[[Any, list[str]], bool] | None = None) -> None:
    def go(tmp: Path) -> tuple[str, str]:
        root, _ = _frozen(tmp)
        files = {p: digest(p) for p in root.rglob("*") if p.is_file()}
        out = bad(lambda: action(root), names, accept)
        for p, d in files.items():
            if digest(p) != d and name not in _TAMPERING:
                return "data loss", f"{p.name} changed"
        return out
    add("evalset", "bad", name, go)


_TAMPERING: set[str] = set()


def _tamper(name: str, change: Callable[[Path], None], names: list[Any]) -> None:
    _TAMPERING.add(name)

    def action(root: Path) -> Any:
        change(root)
        return EvalSet.load(root, "v1").rows
    _es_bad(name, action, names)


def _rows_file(root: Path) -> Path:
    return next(p for p in (root / "v1").iterdir() if p.name.startswith("rows") and not p.name.endswith(".raglab.json"))


def _edit_gold(root: Path) -> None:
    p = _rows_file(root)
    frame = read_rows(p)
    frame.loc[0, "gold"] = ["d99"]
    write_rows(frame, p)


def _edit_raw(root: Path) -> None:
    p = _rows_file(root)
    data = p.read_bytes()
    p.write_bytes(data.replace(b"q1", b"qX", 1))


def _edit_sidecar(root: Path) -> None:
    p = sidecar_path(_rows_file(root))
    side = json.loads(p.read_text())
    side.setdefault("attrs", {})["note"] = "edited"
    p.write_text(json.dumps(side))


def _manifest(root: Path) -> Path:
    return next(p for p in (root / "v1").iterdir() if "manifest" in p.name)


_tamper("tamper: gold edited through raglab", _edit_gold, [("v1", "rows")])
_tamper("tamper: bytes edited", _edit_raw, [("v1", "rows")])
_tamper("tamper: sidecar attrs edited", _edit_sidecar, [("v1", "sidecar", "raglab.json")])
_tamper("tamper: manifest deleted", lambda r: _manifest(r).unlink(), [("manifest", "v1")])
_tamper("tamper: rows file deleted", lambda r: _rows_file(r).unlink(), [("rows", "v1")])
_tamper("tamper: manifest not JSON", lambda r: _manifest(r).write_text("{"), [("manifest", "v1")])
_tamper("tamper: manifest hash edited", lambda r: _manifest(r).write_text(
    json.dumps({**json.loads(_manifest(r).read_text()), "set_hash": "0" * 64})), [("manifest", "v1")])
_tamper("tamper: manifest is a list", lambda r: _manifest(r).write_text("[]"), [("manifest", "v1")])
_tamper("tamper: rows file emptied", lambda r: _rows_file(r).write_bytes(b""), [("rows", "v1")])
_tamper("tamper: sidecar deleted", lambda r: sidecar_path(_rows_file(r)).unlink(), [("v1", "sidecar", "raglab.json")])

_es_bad("freeze an existing version", lambda r: EvalSet.freeze(_es_rows(4), r, version="v1"), ["v1"])
_es_bad("load a missing version", lambda r: EvalSet.load(r, "v7"), ["v7"])
_es_bad("load a missing folder", lambda r: EvalSet.load(r.parent / "nope"), ["nope"])
_es_bad("load a file as the folder", lambda r: EvalSet.load(_rows_file(r)), [("rows", "eval set")])
_es_bad("extend with an existing question id", lambda r: EvalSet.load(r).extend(_es_rows(8).iloc[5:]), ["q5"])
_es_bad("extend with a missing column", lambda r: EvalSet.load(r).extend(
    pd.DataFrame({"question_id": ["n1"], "question": ["?"], "gold": [["d1"]]})), ["qtype"])
_es_bad("extend with no rows", lambda r: EvalSet.load(r).extend(_es_rows().iloc[:0]), [("no rows", "no new rows", "empty", "0 rows")])
_es_bad("stamp a run with unknown ids", lambda r: EvalSet.load(r).stamp(
    pd.DataFrame({"question_id": ["zz"], "recall@5": [1.0]})), ["zz"])
_es_bad("stamp a run missing questions", lambda r: EvalSet.load(r).stamp(
    pd.DataFrame({"question_id": ["q0"], "recall@5": [1.0]})), [("q1", "missing", "5 question")])
_es_bad("load version '../v1'", lambda r: EvalSet.load(r, "../v1"), ["../v1"])


def _es_freeze_bad(name: str, make: Callable[[], pd.DataFrame], names: list[Any], **kw: Any) -> None:
    def go(tmp: Path) -> tuple[str, str]:
        root = tmp / "es"
        return bad(lambda: EvalSet.freeze(make(), root, **{"version": "v1", **kw}), names)
    add("evalset", "bad", "freeze: " + name, go)


_es_freeze_bad("duplicate question ids", lambda: pd.concat([_es_rows(), _es_rows().iloc[:1]]), ["q0"])
_es_freeze_bad("missing question id", lambda: _es_rows().assign(question_id=["q0", None, "q2", "q3", "q4", "q5"]),
               ["question_id"])
_es_freeze_bad("no question_id column", lambda: _es_rows().drop(columns="question_id"), ["question_id"])
_es_freeze_bad("version with a slash", _es_rows, ["a/b"], version="a/b")
_es_freeze_bad("version '..'", _es_rows, [".."], version="..")
_es_freeze_bad("empty version", _es_rows, ["version"], version="")
_es_freeze_bad("columns= not in the frame", _es_rows, ["nope"], columns=["nope"])
_es_freeze_bad("units= not in the frame", _es_rows, ["conv"], units="conv")
_es_freeze_bad("no rows", lambda: _es_rows().iloc[:0], [("no rows", "empty", "0 rows", "no questions")])
_es_freeze_bad("gold holds a set", lambda: _es_rows().assign(gold=[{"d1"}] * 6), ["gold"])


@case("evalset", "bad", "freeze into a path that is a file")
def _(tmp: Path) -> tuple[str, str]:
    p = tmp / "es"
    p.write_text("mine")
    out = bad(lambda: EvalSet.freeze(_es_rows(), p, version="v1"), ["es"])
    return ("data loss", "the file was replaced") if p.read_text() != "mine" else out


@case("evalset", "valid", "freeze, load, extend, load both versions")
def _(tmp: Path) -> tuple[str, str]:
    def go() -> tuple[EvalSet, EvalSet]:
        root, es = _frozen(tmp)
        es.extend(_es_rows(8).iloc[6:].assign(qtype="c"))
        return EvalSet.load(root, "v1"), EvalSet.load(root)
    return valid(go, lambda p: len(p[0]) == 6 and len(p[1]) == 8)


@case("evalset", "valid", "freeze unicode ids, graded gold, version int")
def _(tmp: Path) -> tuple[str, str]:
    rows = pd.DataFrame({"question_id": ["問1", "q 2"], "gold": [{"d1": 2}, {"d2": 1, "d3": 0}]})
    return valid(lambda: (EvalSet.freeze(rows, tmp / "es", version=3), EvalSet.load(tmp / "es"))[1].rows,
                 lambda r: frames_equal(rows, r[["question_id", "gold"]]))


@case("evalset", "valid", "freeze with ~ in the path")
def _(tmp: Path) -> tuple[str, str]:
    old = os.environ.get("HOME")
    os.environ["HOME"] = str(tmp)
    try:
        return valid(lambda: (EvalSet.freeze(_es_rows(), "~/es", version="v1"), EvalSet.load(tmp / "es"))[1],
                     lambda es: len(es) == 6 and not (Path.cwd() / "~").exists())
    finally:
        if old is not None:
            os.environ["HOME"] = old


@case("evalset", "bad", "concurrent freezes of one version (4 threads)")
def _(tmp: Path) -> tuple[str, str]:
    root = tmp / "es"
    frames = [_es_rows().assign(question=f"writer {i}") for i in range(4)]
    results: list[Any] = [None] * 4
    barrier = threading.Barrier(4)

    def freeze(i: int) -> None:
        barrier.wait()
        try:
            results[i] = EvalSet.freeze(frames[i], root, version="v1")
        except BaseException as exc:  # noqa: BLE001
            results[i] = exc
    threads = [threading.Thread(target=freeze, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [i for i, r in enumerate(results) if isinstance(r, EvalSet)]
    losers = [r for r in results if isinstance(r, BaseException)]
    if len(winners) != 1:
        return "data loss", f"{len(winners)} freezes succeeded"
    for exc in losers:
        cls, detail = classify_error(exc, ["v1"])
        if cls != "refused clearly":
            return cls, detail
    loaded = EvalSet.load(root, "v1").rows
    if loaded["question"].iloc[0] != f"writer {winners[0]}":
        return "data loss", "loaded rows are not the winner's"
    return "refused clearly", "one freeze won, the others named v1"


@case("evalset", "bad", "concurrent freezes of two versions")
def _(tmp: Path) -> tuple[str, str]:
    root = tmp / "es"
    errs: list[BaseException] = []

    def freeze(v: str) -> None:
        try:
            EvalSet.freeze(_es_rows(), root, version=v)
        except BaseException as exc:  # noqa: BLE001
            errs.append(exc)
    threads = [threading.Thread(target=freeze, args=(v,)) for v in ("v1", "v2")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errs:
        return classify_error(errs[0], ["v"])
    ok = len(EvalSet.load(root, "v1")) == 6 and len(EvalSet.load(root, "v2")) == 6
    return ("handled", "both versions load") if ok else ("data loss", "a version is broken")


@case("evalset", "bad", "version folder left empty by a crashed freeze")
def _(tmp: Path) -> tuple[str, str]:
    root, _ = _frozen(tmp)
    (root / "v2").mkdir()
    return bad(lambda: EvalSet.load(root), ["v2"], accept=lambda r, w: r.version == "v1")


# ---- statistics on odd inputs ------------------------------------------------------------------------


def _run(n: int = 40, seed: int = 0, **cols: Any) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"question_id": [f"q{i}" for i in range(n)], "recall@5": rng.random(n).round(2),
                       "hit@5": rng.integers(0, 2, n).astype(float), "qtype": (["a", "b"] * n)[:n]})
    for k, v in cols.items():
        df[k] = v
    return df


def _stat_bad(name: str, fn: Callable[[], Any], names: list[Any],
              accept: Callable[[Any, list[str]], bool] | None = None) -> None:
    add("stats", "bad", name, lambda tmp: bad(fn, names, accept))


def _nan_or_reason(r: Any, w: list[str]) -> bool:
    return bool(w) or bool(r["mean"].isna().all() if "mean" in r else False)


_stat_bad("summary: all-NaN metric", lambda: _run().assign(**{"recall@5": np.nan}).rag.summary("recall@5", n_resamples=200),
          ["recall@5"], accept=lambda r, w: bool(r["mean"].isna().all()))
_stat_bad("summary: one row", lambda: _run(1).rag.summary("recall@5", n_resamples=200), [("n", "one", "1 ")],
          accept=lambda r, w: len(r) == 1 and (r["low"].isna().all() or bool(w)))
_stat_bad("summary: inf", lambda: _run().assign(**{"latency": [np.inf] + [1.0] * 39}).rag.summary("latency", n_resamples=200),
          ["latency"])
_stat_bad("summary: numbers stored as text", lambda: _run().assign(
    **{"recall@5": _run()["recall@5"].astype(str)}).rag.summary("recall@5", n_resamples=200), ["recall@5"],
    accept=lambda r, w: abs(float(r["mean"].iloc[0]) - _run()["recall@5"].mean()) < 1e-12)
_stat_bad("summary: duplicate question ids", lambda: pd.concat([_run(), _run().iloc[:2]]).rag.summary(
    "recall@5", n_resamples=200), [("q0", "duplicate")], accept=lambda r, w: any("q0" in m for m in w))
_stat_bad("summary: missing metric", lambda: _run().rag.summary("recall@10"), ["recall@10"])
_stat_bad("summary: n_resamples=0", lambda: _run().rag.summary("recall@5", n_resamples=0, method="percentile"),
          ["n_resamples"])
_stat_bad("summary: ci=1", lambda: _run().rag.summary("recall@5", ci=1.0), ["ci"])
_stat_bad("summary: ci=NaN", lambda: _run().rag.summary("recall@5", ci=float("nan")), ["ci"])
_stat_bad("summary: slice column with NaN", lambda: _run().assign(qtype=[None] + ["a"] * 39).rag.summary(
    "recall@5", by="qtype", n_resamples=200), ["qtype"], accept=lambda r, w: bool(w) or r["n"].sum() >= 80)
_stat_bad("summary: empty frame", lambda: _run().iloc[:0].rag.summary("recall@5"), [("no rows", "empty", "0 rows")])
_stat_bad("summary: recall@5 of 1.7", lambda: _run().assign(**{"recall@5": [1.7] + [0.5] * 39}).rag.summary("recall@5"),
          ["recall@5", "1.7"])
_stat_bad("summary: object column of mixed numbers and text",
          lambda: _run().assign(**{"recall@5": [0.5, "n/a"] * 20}).rag.summary("recall@5"), ["recall@5"])
_stat_bad("summary: boolean metric", lambda: _run().assign(ok=[True, False] * 20).rag.summary("ok", n_resamples=200), [],
          accept=lambda r, w: abs(float(r["mean"].iloc[0]) - 0.5) < 1e-12)
_stat_bad("summary: question_id with NaN", lambda: _run().assign(question_id=[None] + [f"q{i}" for i in range(1, 40)])
          .rag.summary("recall@5"), ["question_id"],
          accept=lambda r, w: int(r["n"].iloc[0]) == 40)  # summary uses no ids: the row still counts, correctly
_stat_bad("summary: seed=-1", lambda: _run().rag.summary("recall@5", seed=-1, n_resamples=200), ["seed"],
          accept=lambda r, w: True)
_stat_bad("summary: by= the metric", lambda: _run().rag.summary("recall@5", by="recall@5", n_resamples=200), ["recall@5"],
          accept=lambda r, w: len(r) > 1)

_stat_bad("compare: mismatched ids", lambda: _run().rag.compare(_run().assign(question_id=[f"x{i}" for i in range(40)]),
                                                                  metrics="recall@5"), [("x0", "q0")])
_stat_bad("compare: one id missing in cand", lambda: _run().rag.compare(_run().iloc[1:], metrics="recall@5"), ["q0"])
_stat_bad("compare: duplicate ids in cand", lambda: _run().rag.compare(pd.concat([_run(), _run().iloc[:1]]),
                                                                         metrics="recall@5"), ["q0"])
_stat_bad("compare: int ids vs text ids", lambda: _run().assign(question_id=range(40)).rag.compare(
    _run().assign(question_id=[str(i) for i in range(40)]), metrics="recall@5"), [("question_id", "0")],
    accept=lambda r, w: int(r["n"].iloc[0]) == 40 and float(r["diff"].iloc[0]) == 0.0)
_stat_bad("compare: metric missing in cand", lambda: _run().rag.compare(_run().drop(columns="recall@5"),
                                                                          metrics="recall@5"), ["recall@5"])
_stat_bad("compare: all-NaN metric", lambda: _run().assign(**{"recall@5": np.nan}).rag.compare(
    _run().assign(**{"recall@5": np.nan}), metrics="recall@5", n_resamples=200, n_permutations=200),
    ["recall@5"], accept=lambda r, w: bool(r["diff"].isna().all()))
_stat_bad("compare: one row", lambda: _run(1).rag.compare(_run(1, seed=1), metrics="recall@5", n_resamples=200,
                                                        n_permutations=200), [("n", "one", "1")],
          accept=lambda r, w: bool(r["low"].isna().all()) or bool(w))
_stat_bad("compare: inf in cand", lambda: _run().rag.compare(_run().assign(latency=np.inf), metrics="latency"),
          ["latency"])
_stat_bad("compare: text metric", lambda: _run().assign(x="a").rag.compare(_run().assign(x="b"), metrics="x"), ["x"])
_stat_bad("compare: how='bogus'", lambda: _run().rag.compare(_run(), metrics="recall@5", how="bogus"), ["how"])
_stat_bad("compare: cand is not a DataFrame", lambda: _run().rag.compare(_run().to_dict(), metrics="recall@5"),
          [("cand", "dataframe")])
_stat_bad("compare: candidate with one extra question", lambda: _run().rag.compare(
    pd.concat([_run(), _run(1).assign(question_id="zz")]), metrics="recall@5"), ["zz"])
_stat_bad("compare: negative recall", lambda: _run().rag.compare(_run().assign(**{"recall@5": -0.2}), metrics="recall@5"),
          ["recall@5"])

_stat_bad("gate: margin NaN", lambda: _run().rag.gate(_run(), margin=float("nan"), metrics="recall@5"), ["margin"])
_stat_bad("gate: margin inf", lambda: _run().rag.gate(_run(), margin=float("inf"), metrics="recall@5"), ["margin"])
_stat_bad("gate: margin negative", lambda: _run().rag.gate(_run(), margin=-0.1, metrics="recall@5"), ["margin"])
_stat_bad("gate: margin for an unknown metric", lambda: _run().rag.gate(_run(), margin={"ndcg@5": 0.1},
                                                                          metrics="recall@5"), [("recall@5", "ndcg@5")])
_stat_bad("gate: one row", lambda: _run(1).rag.gate(_run(1), margin=0.02, metrics="recall@5", n_resamples=200,
                                                    n_permutations=200), [("n", "one", "1")],
          accept=lambda r, w: r.decision == "review")
_stat_bad("gate: identical runs of 3 rows", lambda: _run(3).rag.gate(_run(3), margin=0.02, metrics="recall@5",
                                                                     n_resamples=200, n_permutations=200), [],
          accept=lambda r, w: r.decision in ("review", "pass"))
_stat_bad("gate: metrics=[]", lambda: _run().rag.gate(_run(), margin=0.02, metrics=[]), ["metric"])
_stat_bad("gate: all-NaN candidate", lambda: _run().rag.gate(_run().assign(**{"recall@5": np.nan}), margin=0.02,
                                                            metrics="recall@5", n_resamples=200, n_permutations=200),
          ["recall@5"], accept=lambda r, w: r.decision == "review")


def _agree(h: Any, j: Any, **kw: Any) -> Callable[[], Any]:
    def go() -> Any:
        n = len(h)
        df = pd.DataFrame({"question_id": [f"q{i}" for i in range(n)], "human": h, "judge": j})
        kw.setdefault("n_resamples", 200)
        return df.rag.agreement("human", "judge", **kw)
    return go


_rng = np.random.default_rng(3)
_H = _rng.integers(0, 2, 60)
_J = np.where(_rng.random(60) < 0.8, _H, 1 - _H)
_stat_bad("agreement: all-NaN judge", _agree(_H, [np.nan] * 60), ["judge"])
_stat_bad("agreement: one row", _agree([1], [1]), [("1", "one", "n")], accept=lambda r, w: bool(w))
_stat_bad("agreement: constant labels", _agree([1] * 60, [1] * 60), [], accept=lambda r, w: bool(w))
_stat_bad("agreement: text labels, quadratic, no labels=", _agree(["low", "mid", "high"] * 20, ["low", "high", "mid"] * 20,
                                                                  weights="quadratic"), ["labels"])
_stat_bad("agreement: labels= missing a value", _agree(_H, _J, labels=[0]), [("1", "labels")])
_stat_bad("agreement: 1 vs '1'", _agree(list(_H), [str(v) for v in _J]), [("judge", "human", "type")])
_stat_bad("agreement: inf in human", _agree(np.r_[np.inf, _H[1:]].astype(float), _J.astype(float)), ["human"])
_stat_bad("agreement: judge column missing", lambda: pd.DataFrame({"question_id": ["q1"], "human": [1]}).rag.agreement(
    "human", "judge"), ["judge"])
_stat_bad("agreement: human == judge column", lambda: pd.DataFrame({"question_id": ["q1", "q2"], "human": [1, 0]})
          .rag.agreement("human", "human"), ["human"], accept=lambda r, w: True)
_stat_bad("agreement: weights='cubic'", _agree(_H, _J, weights="cubic"), ["weights"])
_stat_bad("agreement: duplicate ids", lambda: pd.DataFrame({"question_id": ["q1"] * 60, "human": _H, "judge": _J})
          .rag.agreement("human", "judge", n_resamples=200), ["q1"], accept=lambda r, w: any("'q1'" in m for m in w))
_stat_bad("agreement: bool vs int labels", _agree(_H.astype(bool), _J), [],
          accept=lambda r, w: True)

_stat_bad("retrieval: k=0", lambda: base_rows().rag.retrieval(k=0), ["k"])
_stat_bad("retrieval: k=-1", lambda: base_rows().rag.retrieval(k=-1), ["k"])
_stat_bad("retrieval: k=2.5", lambda: base_rows().rag.retrieval(k=2.5), ["k"])
_stat_bad("retrieval: retrieved None", lambda: base_rows().assign(retrieved=[None, ["d1"], ["d2"], ["d3"]]).rag.retrieval(k=2),
          [("q0", "retrieved")])
_stat_bad("retrieval: gold None", lambda: base_rows().assign(gold=[None, ["d1"], ["d2"], ["d3"]]).rag.retrieval(k=2),
          [("q0", "gold")], accept=lambda r, w: pd.isna(r["recall@2"].iloc[0]))
_stat_bad("retrieval: retrieved a plain string", lambda: base_rows().assign(retrieved="d1").rag.retrieval(k=2),
          ["retrieved"])
_stat_bad("retrieval: duplicates in a list", lambda: base_rows().assign(retrieved=[["d0", "d0"]] * 4).rag.retrieval(k=2),
          [("d0", "duplicate")], accept=lambda r, w: r["recall@2"].iloc[0] == 1 and r["precision@2"].iloc[0] == 0.5
          and "first rank" in str(r.attrs))  # the convention is stated in attrs
_stat_bad("retrieval: int gold vs text retrieved", lambda: base_rows().assign(gold=[[0], [1], [2], [3]]).rag.retrieval(k=2),
          [("gold", "type")])
_stat_bad("retrieval: NaN inside a list", lambda: base_rows().assign(retrieved=[[np.nan, "d1"]] * 4).rag.retrieval(k=2),
          [("q0", "retrieved")])
_stat_bad("retrieval: grade NaN", lambda: base_rows().assign(gold=[{"d0": np.nan}] * 4).rag.retrieval(k=2),
          [("gold", "grade")])
_stat_bad("retrieval: grade inf", lambda: base_rows().assign(gold=[{"d0": np.inf}] * 4).rag.retrieval(k=2),
          [("gold", "grade")])
_stat_bad("retrieval: retrieved numpy array cells", lambda: base_rows().assign(
    retrieved=[np.array(["d0", "d1"])] * 4).rag.retrieval(k=2), [], accept=lambda r, w: r["recall@2"].iloc[0] == 1.0)


# ---- chunk tables ----------------------------------------------------------------------------------


def _chunk_bad(name: str, fn: Callable[[], Any], names: list[Any],
               accept: Callable[[Any, list[str]], bool] | None = None) -> None:
    add("chunks", "bad", name, lambda tmp: bad(fn, names, accept))


def _chunks() -> Any:
    from raglab import chunks
    return chunks


DOCS = {"a": "One. Two three. Four five six.", "b": "Short doc."}
_chunk_bad("fixed: size=0", lambda: _chunks().fixed(DOCS, 0), ["size"])
_chunk_bad("fixed: size=-5", lambda: _chunks().fixed(DOCS, -5), ["size"])
_chunk_bad("fixed: size=2.5", lambda: _chunks().fixed(DOCS, 2.5), ["size"])
_chunk_bad("fixed: overlap >= size", lambda: _chunks().fixed(DOCS, 5, overlap=5), ["overlap"])
_chunk_bad("fixed: negative overlap", lambda: _chunks().fixed(DOCS, 5, overlap=-1), ["overlap"])
_chunk_bad("fixed: unit='bytes'", lambda: _chunks().fixed(DOCS, 5, unit="bytes"), ["unit"])
_chunk_bad("fixed: a None document", lambda: _chunks().fixed({"a": None}, 5), ["a"])
_chunk_bad("fixed: a number as document", lambda: _chunks().fixed({"a": 12345}, 5), ["a"],
           accept=lambda r, w: True)
_chunk_bad("fixed: doc ids 1 and '1'", lambda: _chunks().fixed({1: "xx", "1": "yy"}, 5), ["1"])
_chunk_bad("fixed: doc id None", lambda: _chunks().fixed(pd.Series(["xx"], index=[None]), 5), [("None", "doc")])
_chunk_bad("fixed: docs a list of strings", lambda: _chunks().fixed(["xx", "yy"], 5), ["docs"])
_chunk_bad("fixed: snap='word'", lambda: _chunks().fixed(DOCS, 5, snap="word"), ["snap"],
           accept=lambda r, w: r["end"].max() == len(DOCS["a"]))  # snap is the separator text, documented
_chunk_bad("sentences: max_chars=0", lambda: _chunks().sentences(DOCS, max_chars=0), ["max_chars"])
_chunk_bad("from_spans: end < start", lambda: _chunks().from_spans([{"doc_id": "a", "start": 5, "end": 2}]),
           [("end", "start")])
_chunk_bad("from_spans: negative start", lambda: _chunks().from_spans([{"doc_id": "a", "start": -1, "end": 2}]),
           ["start"])
_chunk_bad("from_spans: NaN end", lambda: _chunks().from_spans([{"doc_id": "a", "start": 0, "end": float("nan")}]),
           ["end"])
_chunk_bad("from_spans: duplicate chunk ids", lambda: _chunks().from_spans(
    [{"chunk_id": "c", "doc_id": "a", "start": 0, "end": 2}, {"chunk_id": "c", "doc_id": "a", "start": 2, "end": 4}]),
    ["c"])
_chunk_bad("from_spans: missing column", lambda: _chunks().from_spans([{"doc_id": "a", "start": 0}]), ["end"])
_chunk_bad("from_spans: float offsets 1.5", lambda: _chunks().from_spans([{"doc_id": "a", "start": 0, "end": 1.5}]),
           ["end"])
_chunk_bad("from_spans: text offsets", lambda: _chunks().from_spans([{"doc_id": "a", "start": "0", "end": "5"}]),
           ["start"])
_chunk_bad("from_spans: empty table", lambda: _chunks().from_spans([]), [("empty", "no ", "table")],
           accept=lambda r, w: len(r) == 0)


def _expand(window: Any, retrieved: Any = None) -> Callable[[], Any]:
    def go() -> Any:
        from raglab.boundaries import expand_neighbors
        table = _chunks().fixed(DOCS, 8)
        ids = table["chunk_id"].tolist()
        rows = pd.DataFrame({"question_id": ["q1"], "retrieved": [retrieved if retrieved is not None else [ids[1]]]})
        return expand_neighbors(rows, table, window)
    return go


_chunk_bad("expand_neighbors: window=-1", _expand(-1), ["window"])
_chunk_bad("expand_neighbors: window=1.5", _expand(1.5), ["window"])
_chunk_bad("expand_neighbors: window=True", _expand(True), ["window"], accept=lambda r, w: True)
_chunk_bad("expand_neighbors: window=10**9", _expand(10**9), [], accept=lambda r, w: len(r["retrieved"].iloc[0]) <= 6)
_chunk_bad("expand_neighbors: unknown chunk id", _expand(1, ["zz"]), ["zz"])
_chunk_bad("expand_neighbors: window=NaN", _expand(float("nan")), ["window"])


@case("chunks", "valid", "fixed: emoji and combining characters tile the text")
def _(tmp: Path) -> tuple[str, str]:
    docs = {"e": "🎉 café ña\u0301 " * 20}
    return valid(lambda: _chunks().fixed(docs, 7, overlap=2),
                 lambda t: t["start"].min() == 0 and t["end"].max() == len(docs["e"]))


@case("chunks", "valid", "fixed: empty document")
def _(tmp: Path) -> tuple[str, str]:
    return valid(lambda: _chunks().fixed({"a": "", "b": "xyz"}, 2), lambda t: "b" in set(t["doc_id"]))


@case("chunks", "bad", "depth_gap: context chunk not among candidates")
def _(tmp: Path) -> tuple[str, str]:
    rows = pd.DataFrame({"question_id": ["q1"], "retrieved": [["x"]], "candidates": [["a", "b"]], "gold": [["a"]]})
    return bad(lambda: rows.rag.depth_gap(), ["q1"]) if hasattr(rows.rag, "depth_gap") else bad(
        lambda: __import__("raglab.retrieval", fromlist=["depth_gap"]).depth_gap(rows), ["q1"])


@case("chunks", "bad", "depth_gap: candidates column missing")
def _(tmp: Path) -> tuple[str, str]:
    from raglab.retrieval import depth_gap
    rows = pd.DataFrame({"question_id": ["q1"], "retrieved": [["x"]], "gold": [["a"]]})
    return bad(lambda: depth_gap(rows), ["candidates"])


# ---- judge against the local server ------------------------------------------------------------------


def _judge_rows(n: int = 3) -> pd.DataFrame:
    return pd.DataFrame({
        "question_id": [f"q{i}" for i in range(n)],
        "question": [f"When did bridge {i} open?" for i in range(n)],
        "answer": [f"Bridge {i} opened in {1900 + i}." for i in range(n)],
        "context": [[f"Bridge {i} opened to traffic in {1900 + i}."] for i in range(n)],
    }, dtype=object)


KEY = "sk-adversarial-SECRET-1234567890"


def _judge(server: Any, **kw: Any) -> Any:
    from raglab.judge import LLMJudge
    kw.setdefault("cache", None)
    kw.setdefault("backoff", 0.01)
    kw.setdefault("max_retries", 2)
    kw.setdefault("timeout", 5.0)
    kw.setdefault("api_key", KEY)
    base_url = kw.pop("base_url", server.base_url)
    if base_url == "credentials":  # the key in the URL's userinfo, on the same loopback server
        base_url = f"http://user:{KEY}@127.0.0.1:{server.port}/v1"
    return LLMJudge("local", base_url=base_url, **kw)


def _scored(out: pd.DataFrame, rows: pd.DataFrame, metrics: list[str]) -> bool:
    return (out["question_id"].tolist() == rows["question_id"].tolist()
            and all(out[m].between(0, 1).all() for m in metrics)
            and ("judge_error" not in out or out["judge_error"].isna().all()))


def _failed_rows_named(out: pd.DataFrame, rows: pd.DataFrame, metrics: list[str]) -> bool:
    """Every row kept, in order; each unscored row has a judge_error; no score outside [0, 1]."""
    if out["question_id"].tolist() != rows["question_id"].tolist():
        return False
    for m in metrics:
        vals = out[m]
        if not (vals.isna() | vals.between(0, 1)).all():
            return False
        missing = vals.isna()
        if missing.any() and ("judge_error" not in out or out.loc[missing, "judge_error"].isna().any()):
            return False
    return True


def _no_secret(out: Any) -> bool:
    return KEY not in (str(out.to_dict()) if isinstance(out, pd.DataFrame) else str(out))


def _judge_case(name: str, kind: str, setup: Callable[[Any], None], *, responder: Any = "rules",
                metrics: list[str] | None = None, rows: Callable[[], pd.DataFrame] = _judge_rows,
                names: list[Any] | None = None, expect: str = "scored", judge_kw: dict[str, Any] | None = None,
                quiet: bool = False) -> None:
    metrics = metrics or ["relevance"]

    def go(tmp: Path) -> tuple[str, str]:
        if quiet:
            with contextlib.redirect_stderr(io.StringIO()):
                return run(tmp)
        return run(tmp)

    def run(tmp: Path) -> tuple[str, str]:
        from raglab.testing import LocalOpenAIServer
        frame = rows()
        with LocalOpenAIServer(responder) as server:
            setup(server)
            judge = _judge(server, **(judge_kw or {}))

            def call() -> pd.DataFrame:
                return frame.rag.judge(judge, metrics=metrics, errors="ignore", progress=False)
            if kind == "valid":
                return valid(call, lambda o: _scored(o, frame, metrics) and _no_secret(o))
            check = (lambda o, w: _scored(o, frame, metrics) and _no_secret(o)) if expect == "scored" else (
                lambda o, w: _failed_rows_named(o, frame, metrics) and _no_secret(o) and all(KEY not in m for m in w))
            out = bad(call, names or ["q"], accept=check)
            if out[0] in ("refused clearly", "unclear error") and KEY in out[1]:
                return "data loss", "the API key leaked into an error message"
            return out
    add("judge", kind, name, go)


_judge_case("plain run", "valid", lambda s: None, metrics=["relevance", "faithfulness"])
_judge_case("two 500s then success", "bad", lambda s: s.fail_next(2, status=500))
_judge_case("429 with Retry-After", "bad", lambda s: s.fail_next(1, status=429, retry_after=0.2))
_judge_case("500 on every call", "bad", lambda s: s.fail_next(100, status=500), expect="failed")
_judge_case("malformed JSON replies", "bad", lambda s: s.malform_next(2))
_judge_case("schema-invalid replies", "bad", lambda s: s.invalid_next(2))
_judge_case("truncated replies", "bad", lambda s: s.truncate_next(2))
_judge_case("dripped reply past the deadline", "bad", lambda s: s.drip_next(1, interval=0.05), expect="failed",
            judge_kw={"timeout": 0.6, "max_retries": 0}, rows=lambda: _judge_rows(1))
_judge_case("server echoes the Authorization header", "bad", lambda s: s.echo_headers_next(3), expect="failed")
_judge_case("usage 10**20 prompt tokens", "bad", lambda s: s.usage_next(3, prompt_tokens=10**20))
_judge_case("negative usage", "bad", lambda s: s.usage_next(3, prompt_tokens=-5, completion_tokens=-1))
_judge_case("usage as text", "bad", lambda s: s.usage_next(3, prompt_tokens="many", completion_tokens=None))
_judge_case("reply is prose", "bad", lambda s: None, responder=["I think it is relevant."], expect="failed")
_judge_case("reply is an empty string", "bad", lambda s: None, responder=[""], expect="failed")
_judge_case("reply is JSON null", "bad", lambda s: None, responder=["null"], expect="failed")
_judge_case("reply verdict out of vocabulary", "bad", lambda s: None,
            responder=['{"reason": "r", "verdict": "very relevant"}'], expect="failed")
_judge_case("reply with extra keys", "bad", lambda s: None,
            responder=['{"reason": "r", "verdict": "relevant", "score": 7}'], expect="failed")
_judge_case("401 echoing the key", "bad", lambda s: s.fail_next(5, status=401), expect="failed",
            judge_kw={"max_retries": 0})
_judge_case("401 echoing the key, faithfulness", "bad", lambda s: s.echo_headers_next(5, status=401), expect="failed",
            judge_kw={"max_retries": 0}, metrics=["faithfulness"])
_judge_case("lenient server (shuffled, repeated verdicts)", "bad", lambda s: None, responder="lenient",
            metrics=["faithfulness"], expect="failed")
_judge_case("answer with a lone surrogate", "bad", lambda s: None, expect="failed",
            rows=lambda: _judge_rows().assign(answer=pd.Series(["ok", "bad \ud800", "ok"], dtype=object)))
_judge_case("answer None", "bad", lambda s: None, expect="failed",
            rows=lambda: _judge_rows().assign(answer=[None, "x", "y"]))
_judge_case("empty context list", "bad", lambda s: None, expect="failed", metrics=["faithfulness"],
            rows=lambda: _judge_rows().assign(context=[[], ["x"], ["y"]]))
_judge_case("base_url with credentials", "bad", lambda s: s.fail_next(5, status=500), expect="failed",
            judge_kw={"max_retries": 0, "base_url": "credentials"})


def _claims_reply(body: dict[str, Any]) -> str:
    from raglab.testing import rule_based_reply
    text = rule_based_reply(body)
    try:
        data = json.loads(text)
    except ValueError:
        return text
    if isinstance(data, dict) and "claims" in data and isinstance(data["claims"], list) and data["claims"] \
            and isinstance(data["claims"][0], str):
        data["claims"] = [f"Claim number {i}." for i in range(300)]
    return json.dumps(data)


@case("judge", "bad", "300 claims in one reply (cap)")
def _(tmp: Path) -> tuple[str, str]:
    from raglab.testing import LocalOpenAIServer
    frame = _judge_rows(1)
    with LocalOpenAIServer(_claims_reply) as server:
        judge = _judge(server, max_claims=20)
        out = bad(lambda: frame.rag.judge(judge, metrics=["faithfulness"], errors="ignore", progress=False), ["claims"],
                  accept=lambda o, w: _failed_rows_named(o, frame, ["faithfulness"]))
        if server.requests_received > 30:
            return "silent acceptance", f"{server.requests_received} requests for one row"
        return out


@case("judge", "bad", "duplicate question ids")
def _(tmp: Path) -> tuple[str, str]:
    from raglab.judge import LexicalJudge
    frame = pd.concat([_judge_rows(2), _judge_rows(1)])
    return bad(lambda: frame.rag.judge(LexicalJudge(), metrics=["relevance"], progress=False), ["q0"],
               accept=lambda o, w: len(o) == 3)


@case("judge", "bad", "missing answer column")
def _(tmp: Path) -> tuple[str, str]:
    from raglab.judge import LexicalJudge
    return bad(lambda: _judge_rows().drop(columns="answer").rag.judge(LexicalJudge(), metrics=["relevance"],
                                                                      progress=False), ["answer"])


@case("judge", "bad", "unknown metric")
def _(tmp: Path) -> tuple[str, str]:
    from raglab.judge import LexicalJudge
    return bad(lambda: _judge_rows().rag.judge(LexicalJudge(), metrics=["helpfulness"], progress=False), ["helpfulness"])


@case("judge", "bad", "repeats=0")
def _(tmp: Path) -> tuple[str, str]:
    from raglab.judge import LexicalJudge
    return bad(lambda: _judge_rows().rag.judge(LexicalJudge(), metrics=["relevance"], repeats=0, progress=False),
               ["repeats"])


@case("judge", "bad", "errors='sometimes'")
def _(tmp: Path) -> tuple[str, str]:
    from raglab.judge import LexicalJudge
    return bad(lambda: _judge_rows().rag.judge(LexicalJudge(), metrics=["relevance"], errors="sometimes", progress=False),
               ["errors"])


@case("judge", "bad", "cache file is garbage")
def _(tmp: Path) -> tuple[str, str]:
    from raglab.testing import LocalOpenAIServer
    cache = tmp / "cache.sqlite3"
    cache.write_bytes(b"not a database at all" * 100)
    before = digest(cache)
    with LocalOpenAIServer() as server:
        judge = _judge(server, cache=str(cache))
        out = bad(lambda: _judge_rows().rag.judge(judge, metrics=["relevance"], progress=False), ["cache.sqlite3"])
        judge.close()
    if digest(cache) != before:
        return "data loss", "the unreadable cache file was replaced"
    return out


@case("judge", "bad", "cache path is a directory holding files")
def _(tmp: Path) -> tuple[str, str]:
    from raglab.testing import LocalOpenAIServer
    cache = tmp / "cache.db"
    cache.mkdir()
    (cache / "keep").write_text("x")
    with LocalOpenAIServer() as server:
        judge = _judge(server, cache=str(cache))
        out = bad(lambda: _judge_rows().rag.judge(judge, metrics=["relevance"], progress=False), ["cache.db"])
        judge.close()
    return ("data loss", "the folder lost its file") if not (cache / "keep").exists() else out


@case("judge", "bad", "warm re-run after negative usage costs nothing")
def _(tmp: Path) -> tuple[str, str]:
    from raglab.testing import LocalOpenAIServer
    cache = tmp / "c"
    with LocalOpenAIServer() as server:
        server.usage_next(10, prompt_tokens=-3)
        j = _judge(server, cache=str(cache))
        first = _judge_rows().rag.judge(j, metrics=["relevance"], progress=False, errors="ignore")
        j.close()
        n = server.requests_received
        j2 = _judge(server, cache=str(cache))
        second = _judge_rows().rag.judge(j2, metrics=["relevance"], progress=False, errors="ignore")
        j2.close()
        if server.requests_received != n:
            return "data loss", f"cache entries lost: {server.requests_received - n} calls paid again"
    return ("handled", "") if frames_equal(first[["relevance"]], second[["relevance"]]) else ("silent acceptance", "differs")


@case("judge", "bad", "server stops mid-run")
def _(tmp: Path) -> tuple[str, str]:
    from raglab.testing import LocalOpenAIServer
    server = LocalOpenAIServer().start()
    judge = _judge(server, max_retries=1, timeout=1.0)
    server.stop()
    frame = _judge_rows(2)
    return bad(lambda: frame.rag.judge(judge, metrics=["relevance"], errors="ignore", progress=False), ["q"],
               accept=lambda o, w: _failed_rows_named(o, frame, ["relevance"]))


@case("judge", "bad", "repr with the key in base_url userinfo")
def _(tmp: Path) -> tuple[str, str]:
    from raglab.judge import LLMJudge
    j = LLMJudge("m", base_url=f"http://user:{KEY}@127.0.0.1:9/v1", api_key="k", cache=None)
    text = repr(j) + json.dumps(j.record, default=str)
    return ("data loss", "key in repr/record") if KEY in text else ("handled", "scrubbed")


# ---- command line -------------------------------------------------------------------------------------

CLI_TIMEOUT = 60


def _cli(tmp: Path, args: list[str], stdout: Any = subprocess.PIPE, stdin: Any = subprocess.DEVNULL,
         cwd: Path | None = None, pre: Any = None) -> tuple[int, str, str]:
    env = {**os.environ, "PYTHONPATH": str(Path(raglab.__file__).resolve().parent.parent), "OPENBLAS_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "raglab", *args], stdout=stdout, stderr=subprocess.PIPE, stdin=stdin,
                          cwd=str(cwd or tmp), env=env, timeout=CLI_TIMEOUT, text=True, preexec_fn=pre)
    return proc.returncode, proc.stdout or "", proc.stderr or ""


def cli_class(rc: int, err: str, names: list[Any], ok_codes: tuple[int, ...] = (), ok: bool = False) -> tuple[str, str]:
    """Classify a bad input's exit."""
    last = (err.strip().splitlines() or [""])[-1][:150]
    if "Traceback (most recent call last)" in err or rc not in (0, 1, 2, 3, 4):
        return "crash", f"exit {rc}: {last}"
    if rc in ok_codes and ok:
        return "handled", f"exit {rc}: {last}"
    if rc == 4:
        return "crash", f"exit 4 (internal) on bad input: {last}"
    if rc == 2:
        return ("refused clearly", last) if _names_ok(err, names) else ("unclear error", f"{last} (expected {names})")
    if rc in ok_codes and ok:
        return "handled", f"exit {rc}"
    return "silent acceptance", f"exit {rc}: {last}"


def _gate_files(tmp: Path, fmt: str = "jsonl", base: pd.DataFrame | None = None, cand: pd.DataFrame | None = None,
                ) -> tuple[Path, Path]:
    b = _run(60) if base is None else base
    c = _run(60).assign(**{"recall@5": (_run(60)["recall@5"] + 0.05).clip(0, 1)}) if cand is None else cand
    bp, cp = tmp / f"base.{fmt}", tmp / f"cand.{fmt}"
    write_rows(b, bp)
    write_rows(c, cp)
    return bp, cp


GATE = ["--metric", "recall@5", "--margin", "0.05", "--n-resamples", "300", "--n-permutations", "300"]


def _cli_case(name: str, kind: str, build: Callable[[Path], list[str]], names: list[Any] | None = None,
              ok_codes: tuple[int, ...] = (), check: Callable[[Path, int, str, str], bool] | None = None,
              protect: Callable[[Path], list[Path]] | None = None, **run_kw: Any) -> None:
    def go(tmp: Path) -> tuple[str, str]:
        args = build(tmp)
        guarded = protect(tmp) if protect else []
        before = {p: digest(p) for p in guarded}
        rc, out, err = _cli(tmp, args, **run_kw)
        for p, d in before.items():
            if digest(p) != d:
                return "data loss", f"{p.name} changed or removed (exit {rc})"
        if kind == "valid":
            good = rc in ok_codes and (check is None or check(tmp, rc, out, err)) and "Traceback" not in err
            return ("works", "") if good else ("fails", f"exit {rc}: {(err.strip().splitlines() or [''])[-1][:150]}")
        ok = check is not None and check(tmp, rc, out, err)
        return cli_class(rc, err, names or [], ok_codes, ok)
    add("cli", kind, name, go)


def _score_rows(tmp: Path, frame: pd.DataFrame | None = None, name: str = "rows.jsonl") -> Path:
    p = tmp / name
    write_rows(base_rows() if frame is None else frame, p)
    return p


_cli_case("score: rows to jsonl", "valid", lambda t: ["score", str(_score_rows(t)), "-o", "out.jsonl"], ok_codes=(0,),
          check=lambda t, rc, o, e: "recall@5" in read_rows(t / "out.jsonl").columns)
_cli_case("score: TREC run + qrels to csv", "valid",
          lambda t: ["score", "--run", str(_trec_files(t)[0]), "--qrels", str(t / "qrels.txt"), "-o", "out.csv"],
          ok_codes=(0,), check=lambda t, rc, o, e: len(read_rows(t / "out.csv")) == 2)
_cli_case("score: --k 1,3 to parquet in a folder with spaces", "valid",
          lambda t: (t.joinpath("my dir").mkdir(), ["score", str(_score_rows(t)), "--k", "1,3", "-o", "my dir/o.parquet"])[1],
          ok_codes=(0,), check=lambda t, rc, o, e: "recall@3" in read_rows(t / "my dir" / "o.parquet").columns)
_cli_case("score: file named like a flag, given as ./-rows.jsonl", "valid",
          lambda t: ["score", "./" + _score_rows(t, name="-rows.jsonl").name, "-o", "out.jsonl"], ok_codes=(0,))
_cli_case("score: missing rows file", "bad", lambda t: ["score", "nope.jsonl", "-o", "out.jsonl"], ["nope.jsonl"])
_cli_case("score: rows is a directory", "bad", lambda t: (t.joinpath("d.jsonl").mkdir(), ["score", "d.jsonl", "-o", "o.jsonl"])[1],
          ["d.jsonl"])
_cli_case("score: -o is the input", "bad", lambda t: ["score", str(_score_rows(t)), "-o", "rows.jsonl"], ["rows.jsonl"],
          protect=lambda t: [t / "rows.jsonl", t / "rows.jsonl.raglab.json"])
_cli_case("score: -o is the input by another spelling", "bad",
          lambda t: ["score", str(_score_rows(t)), "-o", "./sub/../rows.jsonl"], ["rows.jsonl"],
          protect=lambda t: [t / "rows.jsonl"])
_cli_case("score: -o is the input's sidecar", "bad", lambda t: ["score", str(_score_rows(t)), "-o", "rows.jsonl.raglab.json"],
          ["rows.jsonl"], protect=lambda t: [t / "rows.jsonl.raglab.json"])
_cli_case("score: -o is the qrels file", "bad",
          lambda t: ["score", "--run", str(_trec_files(t)[0]), "--qrels", "qrels.txt", "-o", "qrels.txt"], ["qrels.txt"],
          protect=lambda t: [t / "qrels.txt"])
_cli_case("score: -o unknown extension", "bad", lambda t: ["score", str(_score_rows(t)), "-o", "out.txt"],
          [("out.txt", ".txt")])
_cli_case("score: -o in a missing folder", "bad", lambda t: ["score", str(_score_rows(t)), "-o", "no/such/out.jsonl"],
          [("no/such", "out.jsonl")], ok_codes=(0,), check=lambda t, rc, o, e: (t / "no/such/out.jsonl").is_file())
_cli_case("score: -o is a directory", "bad", lambda t: (t.joinpath("o.jsonl").mkdir(),
                                                        ["score", str(_score_rows(t)), "-o", "o.jsonl"])[1], ["o.jsonl"])
_cli_case("score: --k 0", "bad", lambda t: ["score", str(_score_rows(t)), "-o", "o.jsonl", "--k", "0"], ["--k"])
_cli_case("score: --k abc", "bad", lambda t: ["score", str(_score_rows(t)), "-o", "o.jsonl", "--k", "abc"], ["--k"])
_cli_case("score: --k 1,,5", "bad", lambda t: ["score", str(_score_rows(t)), "-o", "o.jsonl", "--k", "1,,5"], ["--k"],
          ok_codes=(0,), check=lambda t, rc, o, e: {"recall@1", "recall@5"} <= set(read_rows(t / "o.jsonl").columns))
_cli_case("score: --k 2.5", "bad", lambda t: ["score", str(_score_rows(t)), "-o", "o.jsonl", "--k", "2.5"], ["--k"])
_cli_case("score: --run without --qrels", "bad", lambda t: ["score", "--run", str(_trec_files(t)[0]), "-o", "o.jsonl"],
          ["--qrels"])
_cli_case("score: ROWS and --run together", "bad",
          lambda t: ["score", str(_score_rows(t)), "--run", str(_trec_files(t)[0]), "--qrels", "qrels.txt", "-o", "o.jsonl"],
          [("--run", "rows")])
_cli_case("score: --retrieved names a missing column", "bad",
          lambda t: ["score", str(_score_rows(t)), "-o", "o.jsonl", "--retrieved", "ranked"], ["ranked"])
_cli_case("score: retrieved holds strings", "bad",
          lambda t: ["score", str(_score_rows(t, base_rows().assign(retrieved="d1"))), "-o", "o.jsonl"], ["retrieved"])
_cli_case("score: empty rows file", "bad", lambda t: (t.joinpath("e.jsonl").write_text(""), ["score", "e.jsonl", "-o", "o.jsonl"])[1],
          [("e.jsonl", "empty", "no rows")])
_cli_case("score: rows file is a TREC run", "bad", lambda t: ["score", str(_trec_files(t)[0]), "-o", "o.jsonl"],
          [("run.txt", ".txt")])
_cli_case("score: --qrels judging no row", "bad",
          lambda t: ["score", str(_score_rows(t)), "--qrels", str(_trec_files(t, RUN, "zz 0 d1 1\n")[1]), "-o", "o.jsonl"],
          [("qrels", "zz")])
_cli_case("score: stdout closed", "bad", lambda t: ["score", str(_score_rows(t)), "-o", "o.jsonl"], [],
          ok_codes=(0, 4), check=lambda t, rc, o, e: "recall@5" in read_rows(t / "o.jsonl").columns, stdout=None,
          pre=lambda: os.close(1))
_cli_case("score: --no-relevant bogus", "bad", lambda t: ["score", str(_score_rows(t)), "-o", "o.jsonl",
                                                          "--no-relevant", "bogus"], ["--no-relevant"])

_cli_case("gate: pass", "valid", lambda t: ["gate", *map(str, _gate_files(t)), *GATE], ok_codes=(0, 3))
_cli_case("gate: block", "valid", lambda t: ["gate", *map(str, _gate_files(
    t, cand=_run(60).assign(**{"recall@5": 0.0}))), *GATE], ok_codes=(1,))
_cli_case("gate: parquet inputs, --json log", "valid", lambda t: ["gate", *map(str, _gate_files(t, "parquet")), *GATE,
                                                                  "--json", "log.json"], ok_codes=(0, 3),
          check=lambda t, rc, o, e: "decision" in (t / "log.json").read_text())
_cli_case("gate: same file twice", "valid", lambda t: ["gate", str(_gate_files(t)[0]), str(t / "base.jsonl"), *GATE],
          ok_codes=(0, 3))
_cli_case("gate: --json onto the baseline", "bad", lambda t: ["gate", *map(str, _gate_files(t)), *GATE, "--json", "base.jsonl"],
          ["base.jsonl"], protect=lambda t: [t / "base.jsonl"])
_cli_case("gate: --json onto the candidate's sidecar", "bad",
          lambda t: ["gate", *map(str, _gate_files(t)), *GATE, "--json", "cand.jsonl.raglab.json"],
          ["cand.jsonl"], protect=lambda t: [t / "cand.jsonl.raglab.json"])
_cli_case("gate: --json onto the baseline via a symlink", "bad",
          lambda t: (_gate_files(t), os.symlink(t / "base.jsonl", t / "link.json"),
                     ["gate", "base.jsonl", "cand.jsonl", *GATE, "--json", "link.json"])[2],
          [("base.jsonl", "link.json")], protect=lambda t: [t / "base.jsonl"])
_cli_case("gate: --json is a directory", "bad", lambda t: (t.joinpath("logs").mkdir(),
                                                          ["gate", *map(str, _gate_files(t)), *GATE, "--json", "logs"])[1],
          ["logs"])
_cli_case("gate: --metric missing column", "bad", lambda t: ["gate", *map(str, _gate_files(t)), "--metric", "ndcg@5",
                                                            "--margin", "0.05"], ["ndcg@5"])
_cli_case("gate: --margin nan", "bad", lambda t: ["gate", *map(str, _gate_files(t)), "--metric", "recall@5", "--margin", "nan"],
          [("--margin", "margin"), "nan"])
_cli_case("gate: --margin -0.1", "bad", lambda t: ["gate", *map(str, _gate_files(t)), "--metric", "recall@5",
                                                  "--margin", "-0.1"], [("--margin", "margin"), "-0.1"])
_cli_case("gate: --margin abc", "bad", lambda t: ["gate", *map(str, _gate_files(t)), "--metric", "recall@5", "--margin", "abc"],
          ["--margin"])
_cli_case("gate: --ci 1.5", "bad", lambda t: ["gate", *map(str, _gate_files(t)), *GATE, "--ci", "1.5"], ["--ci"])
_cli_case("gate: --n-resamples 0", "bad", lambda t: ["gate", *map(str, _gate_files(t)), "--metric", "recall@5",
                                                    "--margin", "0.05", "--n-resamples", "0", "--method", "percentile"],
          ["--n-resamples"])
_cli_case("gate: --by missing column", "bad", lambda t: ["gate", *map(str, _gate_files(t)), *GATE, "--by", "lang"], ["lang"])
_cli_case("gate: --margin-for without =", "bad", lambda t: ["gate", *map(str, _gate_files(t)), *GATE, "--margin-for",
                                                           "recall@5"], ["--margin-for"])
_cli_case("gate: --margin-for a metric not gated", "bad", lambda t: ["gate", *map(str, _gate_files(t)), *GATE,
                                                                    "--margin-for", "ndcg@5=0.1"], ["ndcg@5"])
_cli_case("gate: --lower- and --higher-is-better on one metric", "bad",
          lambda t: ["gate", *map(str, _gate_files(t)), *GATE, "--lower-is-better", "recall@5",
                     "--higher-is-better", "recall@5"], ["recall@5"])
_cli_case("gate: unknown flag", "bad", lambda t: ["gate", *map(str, _gate_files(t)), *GATE, "--fast"], ["--fast"])
_cli_case("gate: missing baseline", "bad", lambda t: ["gate", "nope.jsonl", str(_gate_files(t)[1]), *GATE], ["nope.jsonl"])
_cli_case("gate: baseline is a directory", "bad", lambda t: (t.joinpath("b.jsonl").mkdir(),
                                                            ["gate", "b.jsonl", str(_gate_files(t)[1]), *GATE])[1],
          ["b.jsonl"])
_cli_case("gate: baseline empty file", "bad", lambda t: (t.joinpath("b.jsonl").write_text(""),
                                                        ["gate", "b.jsonl", str(_gate_files(t)[1]), *GATE])[1],
          [("b.jsonl", "empty", "no rows")])
_cli_case("gate: duplicate question ids in candidate", "bad",
          lambda t: ["gate", *map(str, _gate_files(t, cand=pd.concat([_run(60), _run(60).iloc[:1]]))), *GATE], ["q0"])
_cli_case("gate: candidate missing questions", "bad",
          lambda t: ["gate", *map(str, _gate_files(t, cand=_run(60).iloc[5:])), *GATE], [("q0", "5 question", "missing")])
_cli_case("gate: inf in a metric", "bad",
          lambda t: ["gate", *map(str, _gate_files(t, base=_run(60, latency=[np.inf] + [1.0] * 59),
                                                   cand=_run(60, latency=1.0))),
                     "--metric", "latency", "--lower-is-better", "latency", "--margin", "0.1"], ["latency"])
_cli_case("gate: all-NaN candidate metric", "bad",
          lambda t: ["gate", *map(str, _gate_files(t, cand=_run(60).assign(**{"recall@5": np.nan}))), *GATE], ["recall@5"],
          ok_codes=(3,), check=lambda t, rc, o, e: rc == 3)
_cli_case("gate: recall@5 of 1.7", "bad",
          lambda t: ["gate", *map(str, _gate_files(t, cand=_run(60).assign(**{"recall@5": 1.7}))), *GATE],
          ["recall@5"])
_cli_case("gate: text metric", "bad", lambda t: ["gate", *map(str, _gate_files(t, base=_run(60, x="a"),
                                                                              cand=_run(60, x="b"))),
                                                 "--metric", "x", "--margin", "0.1"], ["x"])
_cli_case("gate: one question", "bad", lambda t: ["gate", *map(str, _gate_files(t, base=_run(2).iloc[:1],
                                                                               cand=_run(2).iloc[:1])), *GATE],
          [("question", "n")], ok_codes=(3,), check=lambda t, rc, o, e: rc == 3)
_cli_case("gate: stdout closed after a pass", "bad", lambda t: ["gate", *map(str, _gate_files(t)), *GATE], [],
          ok_codes=(4,), check=lambda t, rc, o, e: "not delivered" in e, stdout=None, pre=lambda: os.close(1))
_cli_case("gate: a TREC run as baseline", "bad", lambda t: ["gate", str(_trec_files(t)[0]), str(_gate_files(t)[1]), *GATE],
          [("run.txt", ".txt")])
_cli_case("gate: no arguments", "bad", lambda t: ["gate"], [("BASE", "--metric", "required")])
_cli_case("no subcommand", "bad", lambda t: [], [("COMMAND", "command", "usage")])
_cli_case("--version", "valid", lambda t: ["--version"], ok_codes=(0,))
_cli_case("size: --mde 0", "bad", lambda t: ["size", "--mde", "0", "--p", "0.5"], ["--mde"])
_cli_case("size: --p 1.5", "bad", lambda t: ["size", "--mde", "0.05", "--p", "1.5"], ["--p"])
_cli_case("size: --power nan", "bad", lambda t: ["size", "--mde", "0.05", "--p", "0.5", "--power", "nan"], ["--power"])


# ---- a second batch: more edits by other tools, options and odd combinations ------------------------


@case("files", "bad", "sidecar edited: a float column recorded as int")
def _(tmp: Path) -> tuple[str, str]:
    path = _written(tmp, "jsonl")
    side = json.loads(sidecar_path(path).read_text())
    side[next(iter(k for k in side if isinstance(side[k], dict) and "columns" in side[k]))]["columns"]["score"]["kind"] = "int"
    sidecar_path(path).write_text(json.dumps(side))
    return _read_bad(tmp, path, ["score"], accept=lambda r, w: r["score"].tolist() == [0, 0.25, 0.5, 0.75])


@case("files", "bad", "jsonl: a list cell edited into text")
def _(tmp: Path) -> tuple[str, str]:
    path = _edit(tmp, "jsonl", lambda t: t.replace('["d0", "d1", "d9"]', '"d0"', 1))
    return bad(lambda: read_rows(path).rag.retrieval(k=2), [("retrieved", "q0")],
               accept=lambda r, w: bool(w) and r["recall@2"].iloc[0] == 1.0)


@case("files", "bad", "csv: Excel stripped leading zeros from ids")
def _(tmp: Path) -> tuple[str, str]:
    path = _written(tmp, "csv", base_rows().assign(question_id=["007", "008", "009", "010"]))
    path.write_text(path.read_text().replace("007", "7"))
    return _read_bad(tmp, path, [], accept=lambda r, w: r["question_id"].iloc[0] == "7" and bool(w))


@case("files", "bad", "csv: a NUL byte in a cell")
def _(tmp: Path) -> tuple[str, str]:
    path = tmp / "rows.csv"
    path.write_text("question_id,text\nq1,a\x00b\n")
    return _read_bad(tmp, path, [(path.name, "line")], accept=lambda r, w: r["text"].iloc[0] == "a\x00b")


@case("files", "valid", "named index round trip")
def _(tmp: Path) -> tuple[str, str]:
    frame = base_rows().set_index("question_id")
    return valid(lambda: (write_rows(frame, tmp / "r.jsonl"), read_rows(tmp / "r.jsonl"))[1],
                 lambda r: r.index.name == "question_id" and r.index.tolist() == base_rows()["question_id"].tolist()
                 and r["retrieved"].tolist() == base_rows()["retrieved"].tolist())


@case("files", "valid", "header=False then read as a plain file")
def _(tmp: Path) -> tuple[str, str]:
    return valid(lambda: (write_rows(base_rows(), tmp / "r.jsonl", header=False), read_rows(tmp / "r.jsonl"))[1],
                 lambda r: r["retrieved"].tolist() == base_rows()["retrieved"].tolist() and not sidecar_path(
                     tmp / "r.jsonl").exists())


for _fmt in ["jsonl", "csv", "parquet"]:
    add("files", "valid", f"round trip {_fmt}: mixed list and text cells",
        _roundtrip_case(_fmt, base_rows().assign(text=[["a"], "b", None, {"k": 1}])))
    add("files", "valid", f"round trip {_fmt}: nested lists", _roundtrip_case(_fmt, base_rows().assign(text=[[[1, 2], [3]]] * 4)))
    add("files", "valid", f"round trip {_fmt}: 2,000 columns", _roundtrip_case(
        _fmt, pd.DataFrame({f"c{i}": [float(i), 1.0] for i in range(2000)})))
    add("files", "valid", f"round trip {_fmt}: pd.NA in text", _roundtrip_case(
        _fmt, base_rows().assign(text=pd.array(["a", pd.NA, "c", "d"], dtype=object))))
    add("files", "valid", f"round trip {_fmt}: float32", _roundtrip_case(
        _fmt, base_rows().assign(score=np.array([0.5, 0.25, 1.0, 0.0], dtype=np.float32))))
    add("files", "bad", f"write {_fmt}: columns 1 and '1'", _frame_case(
        _fmt, lambda: pd.DataFrame({1: [1.0], "1": [2.0]}), ["1"]))
    add("files", "bad", f"write {_fmt}: attrs holding a numpy integer", _frame_case(
        _fmt, lambda: base_rows().pipe(lambda d: (d.attrs.update({"n": np.int64(3)}), d)[1]), ["n"]))


@case("files", "bad", "read_rows lists='bogus'")
def _(tmp: Path) -> tuple[str, str]:
    return bad(lambda: read_rows(_written(tmp, "jsonl"), lists="bogus"), ["lists"])


@case("files", "bad", "write_rows format='xlsx'")
def _(tmp: Path) -> tuple[str, str]:
    return bad(lambda: write_rows(base_rows(), tmp / "r.jsonl", format="xlsx"), ["format"])


@case("files", "bad", "write_rows of a dict, not a DataFrame")
def _(tmp: Path) -> tuple[str, str]:
    return bad(lambda: write_rows(base_rows().to_dict(), tmp / "r.jsonl"), [("DataFrame", "dict")])




@case("trec", "bad", "read_trec order='bogus'")
def _(tmp: Path) -> tuple[str, str]:
    run, _ = _trec_files(tmp)
    return bad(lambda: read_trec(run, order="bogus"), ["order"])


_trec_bad("qrels: 5 fields", RUN, "q1 0 d1 1 extra\n", [("line 1", ":1")], accept=lambda r, w: _gold(r, "q1") is not None)
_trec_valid("run: a document in two topics", "q1 Q0 d1 1 2 r\nq2 Q0 d1 1 2 r\n", None,
            lambda r: _ret(r, "q1") == ["d1"] and _ret(r, "q2") == ["d1"])


@case("trec", "bad", "read_trec with neither file")
def _(tmp: Path) -> tuple[str, str]:
    return bad(lambda: read_trec(), [("run", "qrels")])


_wtrec_bad("gold holds a set", lambda: _trows().assign(gold=[{"d1"}, {"d3"}]), ["gold"],
           accept=lambda r, w: True)
_wtrec_bad("integer question ids", lambda: _trows().assign(question_id=[1, 2]), [], accept=lambda r, w: True)


def _cli_more() -> None:
    _cli_case("gate: CSV baseline, JSONL.gz candidate", "valid",
              lambda t: (write_rows(_run(60), t / "b.csv"), write_rows(_run(60), t / "c.jsonl.gz"),
                         ["gate", "b.csv", "c.jsonl.gz", *GATE])[2], ok_codes=(0, 3))
    _cli_case("gate: --on missing column", "bad", lambda t: ["gate", *map(str, _gate_files(t)), *GATE, "--on", "qid"],
              ["qid"])
    _cli_case("gate: --units missing column", "bad", lambda t: ["gate", *map(str, _gate_files(t)), *GATE, "--units", "doc"],
              ["doc"])
    _cli_case("gate: --seed abc", "bad", lambda t: ["gate", *map(str, _gate_files(t)), *GATE, "--seed", "abc"], ["--seed"])
    _cli_case("gate: --method bogus", "bad", lambda t: ["gate", *map(str, _gate_files(t)), *GATE, "--method", "bogus"],
              ["--method"])
    _cli_case("gate: --by a column with missing values", "bad",
              lambda t: ["gate", *map(str, _gate_files(t, base=_run(60).assign(qtype=[None] + ["a", "b"] * 29 + ["a"]),
                                                       cand=_run(60).assign(qtype=[None] + ["a", "b"] * 29 + ["a"]))),
                         *GATE, "--by", "qtype"], ["qtype"], ok_codes=(0, 1, 3), check=lambda t, rc, o, e: "(missing)" in o)
    _cli_case("gate: ids as numbers in one file, text in the other", "bad",
              lambda t: ["gate", *map(str, _gate_files(t, base=_run(60).assign(question_id=range(60)),
                                                       cand=_run(60).assign(question_id=[str(i) for i in range(60)]))),
                         *GATE], ["question_id"], ok_codes=(0, 3), check=lambda t, rc, o, e: True)
    _cli_case("gate: stderr closed on bad input", "bad", lambda t: ["gate", "nope.jsonl", "nope2.jsonl", *GATE], [],
              ok_codes=(2,), check=lambda t, rc, o, e: rc == 2, pre=lambda: os.close(2))
    _cli_case("score: --gain bogus", "bad", lambda t: ["score", str(_score_rows(t)), "-o", "o.jsonl", "--gain", "x"],
              ["--gain"])
    _cli_case("score: -o out.jsonl.gz", "valid", lambda t: ["score", str(_score_rows(t)), "-o", "o.jsonl.gz"],
              ok_codes=(0,), check=lambda t, rc, o, e: "recall@5" in read_rows(t / "o.jsonl.gz").columns)
    _cli_case("score: grades as text", "bad",
              lambda t: ["score", str(_score_rows(t, base_rows().assign(gold=[{"d0": "2"}] * 4))), "-o", "o.jsonl"],
              ["gold"])
    _cli_case("score: pandas CSV with list reprs", "bad",
              lambda t: (base_rows().to_csv(t / "p.csv", index=False), ["score", "p.csv", "-o", "o.jsonl"])[1],
              ["retrieved"], ok_codes=(0,), check=lambda t, rc, o, e: read_rows(t / "o.jsonl")["recall@5"].iloc[0] == 1)
    _cli_case("score: every list empty", "bad",
              lambda t: ["score", str(_score_rows(t, base_rows().assign(retrieved=[[]] * 4))), "-o", "o.jsonl"], [],
              ok_codes=(0,), check=lambda t, rc, o, e: read_rows(t / "o.jsonl")["recall@5"].fillna(0).eq(0).all())
    _cli_case("demo --help", "valid", lambda t: ["demo", "--help"], ok_codes=(0,))
    _cli_case("gate: --json - (stdout?)", "bad", lambda t: ["gate", *map(str, _gate_files(t)), *GATE, "--json", "-"],
              ["--json"], ok_codes=(0, 3), check=lambda t, rc, o, e: not (t / "-").exists() and '"decision"' in o)
    _cli_case("gate: --json ''", "bad", lambda t: ["gate", *map(str, _gate_files(t)), *GATE, "--json", ""], ["--json"])
    _cli_case("score: -o -", "bad", lambda t: ["score", str(_score_rows(t)), "-o", "-"], [("--output", "-o")])
    _cli_case("score: -o ''", "bad", lambda t: ["score", str(_score_rows(t)), "-o", ""], [("--output", "-o")])
    _cli_case("score: ROWS ''", "bad", lambda t: ["score", "", "-o", "o.jsonl"], ["ROWS"])


_cli_more()


@case("evalset", "bad", "extend onto an existing version")
def _(tmp: Path) -> tuple[str, str]:
    root, es = _frozen(tmp)
    es.extend(_es_rows(8).iloc[6:], version="v2")
    before = {p: digest(p) for p in (root / "v2").iterdir()}
    out = bad(lambda: es.extend(_es_rows(10).iloc[8:], version="v2"), ["v2"])
    return ("data loss", "v2 changed") if {p: digest(p) for p in (root / "v2").iterdir()} != before else out


@case("evalset", "bad", "versions() of a missing folder")
def _(tmp: Path) -> tuple[str, str]:
    return bad(lambda: EvalSet.versions(tmp / "nope"), ["nope"], accept=lambda r, w: r == [])


@case("evalset", "valid", "stamp with another id column name")
def _(tmp: Path) -> tuple[str, str]:
    _, es = _frozen(tmp)
    run = pd.DataFrame({"qid": [f"q{i}" for i in range(6)], "recall@5": [0.5] * 6})
    return valid(lambda: es.stamp(run, question_id="qid"), lambda r: len(r) == 6)


_stat_bad("compare: how='inner' with no shared ids", lambda: _run().rag.compare(
    _run().assign(question_id=[f"x{i}" for i in range(40)]), metrics="recall@5", how="inner"), [("no ", "0 ", "share")])
_stat_bad("gate: the id column as the metric", lambda: _run().rag.gate(_run(), margin=0.1, metrics="question_id"),
          ["question_id"])
_stat_bad("summary: method='bogus'", lambda: _run().rag.summary("recall@5", method="bogus"), ["method"])
_stat_bad("summary: units= missing column", lambda: _run().rag.summary("recall@5", units="doc"), ["doc"])
_stat_bad("agreement: positive= not a label", _agree(_H, _J, positive=7), ["7"])
_stat_bad("agreement: n_resamples=-1", _agree(_H, _J, n_resamples=-1), ["n_resamples"])
_stat_bad("agreement: human labels as text, judge as numbers", _agree([str(v) for v in _H], list(_J)),
          [("judge", "human", "type")])
_chunk_bad("sentences: duplicate doc ids in a Series", lambda: _chunks().sentences(pd.Series(["a.", "b."], index=["d", "d"])),
           ["d"])
_chunk_bad("fixed: docs as a DataFrame", lambda: _chunks().fixed(pd.DataFrame({"text": ["abc"]}), 2), ["docs"])
_chunk_bad("from_spans: doc_id None", lambda: _chunks().from_spans([{"doc_id": None, "start": 0, "end": 2}]),
           ["doc_id"])
_chunk_bad("fixed: unit='tokens' (tiktoken may be absent)", lambda: _chunks().fixed(DOCS, 4, unit="tokens"),
           ["tiktoken"], accept=lambda r, w: r["end"].max() == len(DOCS["a"]))

_judge_case("responder raises (server error)", "bad", lambda s: None, responder=lambda body: 1 / 0, expect="failed",
            judge_kw={"max_retries": 1}, quiet=True)  # the server prints the responder's traceback: kept off the table
_judge_case("relevance verdict as a number", "bad", lambda s: None, responder=['{"reason": "r", "verdict": 1}'],
            expect="failed")
_judge_case("context given as a plain string", "bad", lambda s: None, metrics=["faithfulness"],
            rows=lambda: _judge_rows().assign(context=["Bridge 0 opened in 1900.", "x", "y"]), expect="failed")


def _judge_arg(name: str, kw: dict[str, Any], names: list[Any]) -> None:
    def go(tmp: Path) -> tuple[str, str]:
        from raglab.judge import LLMJudge
        return bad(lambda: LLMJudge("m", base_url="http://127.0.0.1:9/v1", api_key="k", cache=None, **kw), names)
    add("judge", "bad", name, go)


_judge_arg("max_concurrency=0", {"max_concurrency": 0}, ["max_concurrency"])
_judge_arg("timeout=-1", {"timeout": -1}, ["timeout"])
_judge_arg("max_claims=0", {"max_claims": 0}, ["max_claims"])
_judge_arg("api='completions'", {"api": "completions"}, ["api"])
_judge_arg("max_retries=-1", {"max_retries": -1}, ["max_retries"])
_judge_arg("temperature=nan", {"temperature": float("nan")}, ["temperature"])


@case("judge", "bad", "model=''")
def _(tmp: Path) -> tuple[str, str]:
    from raglab.judge import LLMJudge
    return bad(lambda: LLMJudge("", base_url="http://127.0.0.1:9/v1", api_key="k", cache=None), ["model"])


@case("judge", "bad", "two judges sharing one cache in threads")
def _(tmp: Path) -> tuple[str, str]:
    from raglab.testing import LocalOpenAIServer
    frame = _judge_rows(4)
    outs: list[Any] = [None, None]
    with LocalOpenAIServer() as server:
        def go(i: int) -> None:
            j = _judge(server, cache=str(tmp / "c"))
            try:
                outs[i] = frame.rag.judge(j, metrics=["relevance"], progress=False)
            except BaseException as exc:  # noqa: BLE001
                outs[i] = exc
            finally:
                j.close()
        threads = [threading.Thread(target=go, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for o in outs:
            if isinstance(o, BaseException):
                return classify_error(o, ["cache"])
        j = _judge(server, cache=str(tmp / "c"))
        n = server.requests_received
        third = frame.rag.judge(j, metrics=["relevance"], progress=False)
        j.close()
        if server.requests_received != n:
            return "data loss", "a cached call was paid again"
    same = all(frames_equal(o[["relevance"]], third[["relevance"]]) for o in outs)
    return ("handled", "consistent") if same else ("silent acceptance", "runs differ")


# ---- runner -------------------------------------------------------------------------------------------


TIMES: dict[str, float] = {}


def run_case(entry: tuple[str, str, str, Callable[[Path], tuple[str, str]]]) -> tuple[str, str, str, str, str]:
    area, kind, name, fn = entry
    tmp = Path(tempfile.mkdtemp(prefix="raglab-adv-"))
    started = time.monotonic()
    old = os.getcwd()
    try:
        cls, detail = fn(tmp)
    except subprocess.TimeoutExpired:
        cls, detail = ("crash" if kind == "bad" else "fails"), f"timed out after {CLI_TIMEOUT}s"
    except Exception as exc:  # noqa: BLE001  (the case's own set-up hit something: count it against raglab)
        tb = traceback.extract_tb(exc.__traceback__)
        cls = "crash" if kind == "bad" else "fails"
        detail = f"set-up/check raised {type(exc).__name__}: {exc} at {Path(tb[-1].filename).name}:{tb[-1].lineno}"[:200]
    finally:
        os.chdir(old)
        shutil.rmtree(tmp, ignore_errors=True)
        TIMES[name] = time.monotonic() - started
    return area, kind, name, cls, detail.replace("\n", " ")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--area", action="append", help="only these areas (repeatable)")
    parser.add_argument("--jobs", type=int, default=2, help="command-line cases run this many at a time")
    parser.add_argument("--all", action="store_true", help="list passing cases too")
    parser.add_argument("--slowest", type=int, default=0, help="list the N slowest cases")
    parser.add_argument("--quick", action="store_true", help="one command-line case in three (each starts Python twice)")
    args = parser.parse_args(argv)
    selected = [c for c in CASES if not args.area or c[0] in args.area]
    started = time.monotonic()
    results = [run_case(c) for c in selected if c[0] != "cli"]
    cli = [c for c in selected if c[0] == "cli"]
    if args.quick:
        cli = cli[::3]
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        results += list(pool.map(run_case, cli))
    elapsed = time.monotonic() - started

    areas = sorted({r[0] for r in results})
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for area, _kind, _, cls, _ in results:
        counts[area][cls] += 1
    n_bad = sum(1 for r in results if r[1] == "bad")
    n_valid = len(results) - n_bad
    print(f"raglab adversarial pass: {len(results)} cases ({n_bad} bad inputs, {n_valid} valid edge inputs), "
          f"{elapsed:.0f} s\n")
    columns = BAD_CLASSES + VALID_CLASSES
    width = max(len(a) for a in areas + ["total"]) + 2
    print("area".ljust(width) + "".join(c.rjust(max(len(c), 5) + 2) for c in columns))
    for area in areas + ["total"]:
        row = counts[area] if area != "total" else sum(counts.values(), Counter())
        print(area.ljust(width) + "".join(str(row.get(c, 0)).rjust(max(len(c), 5) + 2) for c in columns))
    total = sum(counts.values(), Counter())
    unclear = total.get("unclear error", 0) / max(n_bad, 1)
    print(f"\nunclear errors: {unclear:.1%} of bad inputs (target at most 2%); data loss {total.get('data loss', 0)}, "
          f"silent acceptance {total.get('silent acceptance', 0)}, crashes {total.get('crash', 0)} (targets 0)")
    failing = [r for r in results if r[3] not in PASSING]
    print(f"\nnon-passing cases ({len(failing)}):")
    for area, _kind, name, cls, detail in sorted(failing, key=lambda r: (BAD_CLASSES + VALID_CLASSES).index(r[3])):
        print(f"  [{cls}] {area}: {name} -- {detail}")
    if args.slowest:
        print("\nslowest cases:")
        for name, sec in sorted(TIMES.items(), key=lambda kv: -kv[1])[: args.slowest]:
            print(f"  {sec:5.1f} s  {name}")
    if args.all:
        print("\nall cases:")
        for area, _kind, name, cls, detail in results:
            print(f"  [{cls}] {area}: {name} -- {detail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
