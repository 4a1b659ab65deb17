"""Row tables in and out of files: JSONL, Parquet and CSV (TREC run and qrels files: :mod:`raglab.trec`).

Round trips through :func:`write_rows` / :func:`read_rows` are lossless for list and dict cells,
None and NaN, unicode and ids that look like numbers ("007" stays a string); whatever a format
cannot hold (a dict with non-text keys, say ``{7: 1}``, whose key JSON would turn into ``"7"``) is
refused when writing, with the fix.

Every file raglab writes is a plain file: any tool reads the rows and columns written
(``pd.read_csv``, ``pd.read_json(..., lines=True)``, ``pd.read_parquet``), but plain readers infer
the values' types themselves: ``pd.read_csv`` and ``pd.read_json`` turn an id ``"007"`` into the
number 7 unless told to keep text (``pd.read_csv(path, dtype=str, keep_default_na=False)``,
``pd.read_json(path, lines=True, dtype=False)``), and ``pd.read_json`` rounds the last digit of
some floats unless given ``precise_float=True`` (the file holds them exactly). Cells that are lists
or dicts are JSON text in CSV; in Parquet lists of text or of integers (ids) are native lists, and
every other structured cell (dict gold, spans, lists of floats: ``json`` in the schema) is JSON
text, a missing one a null. The column dtypes and the run's ``df.attrs["raglab"]`` metadata live
where plain readers do not trip over them:

* JSONL and CSV: a sidecar next to the file, ``<file>.raglab.json`` (``run.jsonl`` ->
  ``run.jsonl.raglab.json``), which also records the row count and a SHA-256 of the file's bytes.
  :func:`read_rows` finds it; a file with fewer rows than recorded is refused, one with more rows
  or other content is read with a warning. Without the sidecar only the metadata is lost: dtypes
  are inferred as for any plain file. ``header=False`` writes no sidecar (and removes a stale one).
* Parquet: the file's key-value schema metadata (lists of ids stay native Arrow lists).

Files written by older raglab versions (a first line ``{"__raglab__": ...}`` in JSONL, ``#__raglab__``
in CSV) still read. Files written by other tools read fine too: without a schema, the id column is
read as text and cells of the list-valued roles (``retrieved``, ``gold``, spans) are decoded from
JSON. Columns present in any row (or added to a Parquet file by another tool) are kept.

A default RangeIndex is not stored; any other index (e.g. ``set_index("question_id")``) is written
as columns and restored on reading.

``read_rows(path, lists="arrow")`` returns columns of lists of ids as Arrow-backed columns
(``pd.ArrowDtype(pa.list_(pa.string()))``); from Parquet they are the file's own Arrow buffers, so
``rows.rag.retrieval()`` scores them without creating a Python object per id.
"""

from __future__ import annotations

import ast
import contextlib
import csv
import gzip
import hashlib
import io
import json
import math
import os
import sys
import zlib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd
import pyarrow as pa

from raglab._errors import RowTableError
from raglab._files import reading, replace_files, user_path, write_file
from raglab._meta import get_meta, set_meta, storable_meta
from raglab._rowtable import ROLES
from raglab._validation import check_option, is_missing, warn
from raglab.trec import read_trec, write_trec

__all__ = ["read_rows", "write_rows", "read_trec", "write_trec", "sidecar_path", "FORMATS"]

FORMATS = ("jsonl", "csv", "parquet")
SCHEMA_KEY = "__raglab__"
SIDECAR_SUFFIX = ".raglab.json"
_SCHEMA_VERSION = 1
_CSV_PREFIX = "#" + SCHEMA_KEY + " "
_SUFFIXES = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}
# Roles whose cells are lists or dicts: decoded from JSON text when a file has no raglab schema.
_STRUCTURED_ROLES = tuple(name for name, role in ROLES.items() if role.kind in ("id_list", "gold", "span_list", "gold_span_list"))


def sidecar_path(path: str | os.PathLike[str]) -> Path:
    """The metadata sidecar of a JSONL or CSV row file: ``<file>.raglab.json`` next to it.

    Examples
    --------
    >>> sidecar_path("runs/base.jsonl").as_posix()
    'runs/base.jsonl.raglab.json'
    """
    path = user_path(path)
    return path.with_name(path.name + SIDECAR_SUFFIX)


def _format_of(path: Path, fmt: str | None) -> str:
    if fmt is not None:
        return check_option("format", fmt, FORMATS)
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    if suffixes and suffixes[-1] in _SUFFIXES:
        return _SUFFIXES[suffixes[-1]]
    raise ValueError(
        f"cannot tell the file format of {str(path)!r} from its suffix; use one of "
        f"{sorted(_SUFFIXES)} (optionally + '.gz') or pass format= one of {list(FORMATS)}."
    )


def _open_text(path: Path, mode: str) -> IO[str]:
    if path.suffix.lower() == ".gz":
        return gzip.open(path, mode + "t", encoding="utf-8", newline="")
    return open(path, mode, encoding="utf-8", newline="")


# --------------------------------------------------------------------------------------------------
# Column schema
# --------------------------------------------------------------------------------------------------


def _cell_kind(values: Iterable[Any]) -> str:
    """Classify an object column: 'str', 'list_str', 'list_int' or 'json' (anything else)."""
    kinds = set()
    for value in values:
        if is_missing(value):
            continue
        if isinstance(value, str):
            kinds.add("str")
        elif isinstance(value, (list, tuple, np.ndarray)):
            items = list(value)
            if all(isinstance(v, str) for v in items):
                kinds.add("list_str")
            elif all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in items):
                kinds.add("list_int" if items else "list_str")
            else:
                return "json"
        else:
            return "json"
        if len(kinds) > 1:
            return "json"
    return kinds.pop() if kinds else "json"


def _id_list_type(kind: Any) -> pa.DataType | None:
    """``list<string>`` or ``list<int64>`` for an Arrow type holding lists of ids, else None."""
    if not (pa.types.is_list(kind) or pa.types.is_large_list(kind)):
        return None
    value = kind.value_type
    if pa.types.is_string(value) or pa.types.is_large_string(value):
        return pa.list_(pa.string())
    return pa.list_(pa.int64()) if pa.types.is_integer(value) else None


def _arrow_list_kind(dtype: Any) -> str | None:
    """'list_str' or 'list_int' for an Arrow-backed column of lists of ids, else None."""
    target = _id_list_type(dtype.pyarrow_dtype) if isinstance(dtype, pd.ArrowDtype) else None
    return None if target is None else "list_str" if target.value_type == pa.string() else "list_int"


def _column_schema(series: pd.Series) -> dict[str, Any]:
    dtype = series.dtype
    name = series.name
    if isinstance(dtype, pd.CategoricalDtype):
        categories = dtype.categories.tolist()
        if not all(isinstance(c, str) for c in categories):
            raise TypeError(f"column {name!r}: only categoricals of strings can be written, got {categories[:3]}")
        return {"kind": "category", "dtype": "category", "categories": categories, "ordered": bool(dtype.ordered)}
    arrow_kind = _arrow_list_kind(dtype)
    if arrow_kind is not None:  # an Arrow-backed list column: stored like a column of Python lists
        return {"kind": arrow_kind, "dtype": "object"}
    if pd.api.types.is_bool_dtype(dtype):
        return {"kind": "bool", "dtype": str(dtype)}
    if pd.api.types.is_integer_dtype(dtype):
        return {"kind": "int", "dtype": str(dtype)}
    if pd.api.types.is_float_dtype(dtype):
        return {"kind": "float", "dtype": str(dtype)}
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return {"kind": "datetime", "dtype": str(dtype)}
    if pd.api.types.is_string_dtype(dtype) and not pd.api.types.is_object_dtype(dtype):
        return {"kind": "str", "dtype": str(dtype)}
    if pd.api.types.is_object_dtype(dtype):
        kind = _cell_kind(series.array)
        schema: dict[str, Any] = {"kind": kind, "dtype": "object"}
        if kind == "json":
            _refuse_non_text_keys(series)
        if kind == "str":
            # In an object column None and NaN are different values: keep where NaN was.
            nan_rows = [i for i, v in enumerate(series.array) if isinstance(v, float) and math.isnan(v)]
            if nan_rows:
                schema["nan_rows"] = nan_rows
        return schema
    raise TypeError(
        f"column {name!r} has dtype {dtype}, which raglab files do not store; convert it to "
        "numbers, strings or lists first."
    )


def _non_text_key(value: Any) -> Any:
    """The first dict key (at any depth) that is not a str, else None: JSON would turn it into text."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                return key
            found = _non_text_key(item)
            if found is not None:
                return found
    elif isinstance(value, (list, tuple, np.ndarray)):
        for item in value:
            found = _non_text_key(item)
            if found is not None:
                return found
    return None


def _refuse_non_text_keys(series: pd.Series) -> None:
    for row, value in enumerate(series.array):
        if isinstance(value, (Mapping, list, tuple, np.ndarray)):
            key = _non_text_key(value)
            if key is not None:
                name = series.name
                raise RowTableError(
                    f"write_rows: column {name!r} row {row} holds a dict with the {type(key).__name__} key {key!r}; "
                    f"files store dict keys as text, so it would read back as {str(key)!r}. Make the keys text "
                    f"first, e.g. df[{name!r}] = df[{name!r}].map(lambda g: {{str(k): v for k, v in g.items()}} "
                    "if isinstance(g, dict) else g)."
                )


def _build_schema(df: pd.DataFrame) -> dict[str, Any]:
    bad = [c for c in df.columns if not isinstance(c, str)]
    if bad:
        raise TypeError(f"column names must be strings to be written; got {bad[:5]}")
    if df.columns.duplicated().any():
        raise RowTableError(f"column names must be unique; repeated: {df.columns[df.columns.duplicated()].tolist()}")
    return {
        "version": _SCHEMA_VERSION,
        "columns": {c: _column_schema(df[c]) for c in df.columns},
        "attrs": storable_meta(get_meta(df)),
    }


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (pd.Timestamp,)):
        return value.isoformat()
    raise TypeError(f"cannot store a {type(value).__name__} in a JSON cell: {value!r}")


def _to_python(value: Any) -> Any:
    """A cell as plain Python (numpy scalars and arrays become numbers and lists)."""
    if isinstance(value, np.ndarray):
        return [_to_python(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_to_python(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _to_python(v) for k, v in value.items()}
    return value


_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def _finite_json(values: Iterable[Any], schema: dict[str, Any]) -> list[Any]:
    """JSON-ready cells with every NaN and infinity (at any depth) as None, recorded in ``schema["nonfinite"]``.

    ``NaN``/``Infinity`` are not JSON (jq, ``JSON.parse``, Go and Java refuse them), so files hold
    null there; ``[row, path, "nan"|"inf"|"-inf"]`` entries let :func:`read_rows` restore them exactly.
    """
    found: list[list[Any]] = []
    out = []
    for row, value in enumerate(values):
        out.append(_plain(value, row, [], found))
    if found:
        schema["nonfinite"] = found
    else:
        schema.pop("nonfinite", None)
    return out


def _plain(value: Any, row: int, path: list[Any], found: list[list[Any]]) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        found.append([row, path, "nan" if value != value else "inf" if value > 0 else "-inf"])
        return None
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(v, row, [*path, i], found) for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        return {k: _plain(v, row, [*path, k], found) for k, v in value.items()}
    return value


def _restore_non_finite(out: pd.Series, entries: Iterable[Any]) -> None:
    """Put back the NaN/infinities a JSON cell held, only where the file still holds null at that place."""
    for entry in entries:
        try:
            row, path, token = entry
            if not isinstance(row, int) or row >= len(out) or token not in _NON_FINITE:
                continue
            if not path:
                if out.iat[row] is None:
                    out.iat[row] = _NON_FINITE[token]
                continue
            parent = out.iat[row]
            for step in path[:-1]:
                parent = parent[step]
            if isinstance(parent, (list, dict)) and parent[path[-1]] is None:
                parent[path[-1]] = _NON_FINITE[token]
        except (KeyError, IndexError, TypeError, ValueError):
            continue  # the cell was edited since: it keeps what the file holds


_CELL_FIXES = {
    "set": "a list (sorted(cell))",
    "frozenset": "a list (sorted(cell))",
    "bytes": "text (cell.decode('utf-8'), or base64 for binary data)",
    "Decimal": "a float (float(cell)) or text (str(cell)) if every digit matters",
    "date": "text (cell.isoformat()), or make the column datetime64 (pd.to_datetime)",
    "datetime": "text (cell.isoformat()), or make the column datetime64 (pd.to_datetime)",
    "time": "text (cell.isoformat())",
    "timedelta": "seconds (cell.total_seconds())",
}


def _bad_value(value: Any) -> tuple[str, str] | None:
    """(what, fix) when ``value`` (at any depth) is a cell no raglab file can hold, else None."""
    if value is None or isinstance(value, (bool, int, float, np.number, np.bool_, pd.Timestamp)):
        return None
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return (f"text with the lone surrogate {value[exc.start]!r} at character {exc.start} ({value[:40]!r}; it "
                    "comes from decoding bytes with errors='surrogateescape')",
                    "valid text, e.g. cell.encode('utf-8', 'replace').decode('utf-8')")
        return None
    if isinstance(value, (list, tuple, np.ndarray)):
        for item in (value.tolist() if isinstance(value, np.ndarray) else value):
            bad = _bad_value(item)
            if bad is not None:
                return bad
        return None
    if isinstance(value, Mapping):
        for key, item in value.items():
            bad = _bad_value(key) if isinstance(key, str) else None
            bad = bad or _bad_value(item)
            if bad is not None:
                return bad
        return None
    kind = type(value).__name__
    fix = _CELL_FIXES.get(kind, "text, a number or a list")
    article = "an" if kind[:1].lower() in "aeiou" else "a"
    return f"{article} {kind} ({str(value)[:40]!r})", fix


class UnstorableCellError(RowTableError, TypeError):
    """A cell (or column name) no raglab file can hold; a TypeError too, as the encoders' errors were."""


def _unstorable_cell(df: pd.DataFrame, schema: Mapping[str, Any]) -> tuple[str, str, int | None] | None:
    """The message naming the first column, row and value that no raglab file can hold, if any."""
    from raglab._rowtable import row_label

    qid = "question_id" if "question_id" in df.columns else None
    for name in df.columns:
        bad = _bad_value(name)
        if bad is not None:
            return f"write_rows: the column name {name!r} is {bad[0]}; rename it to {bad[1]}.", name, None
        if schema["columns"][name]["kind"] not in ("str", "category", "json", "list_str", "list_int"):
            continue
        for row, value in enumerate(df[name].array):
            bad = _bad_value(value)
            if bad is not None:
                where = f"row {row}" + (f" ({row_label(df, row, qid)})" if qid is not None else "")
                return (f"write_rows: column {name!r} {where} holds {bad[0]}, which JSONL, CSV and "
                        f"Parquet files cannot store; convert it to {bad[1]} before writing.", name, row)
    return None


def _column_cells(series: pd.Series, schema: Mapping[str, Any]) -> list[Any]:
    """Python values for one column, missing values as None (NaN kept inside JSON cells)."""
    kind = schema["kind"]
    if kind in ("float", "int", "bool"):
        values = series.astype(object).where(series.notna(), None).tolist()
        return [v.item() if isinstance(v, np.generic) else v for v in values]
    if kind == "datetime":
        return [None if pd.isna(v) else v.isoformat() for v in series]
    if kind in ("str", "category"):
        return [None if is_missing(v) else str(v) for v in series.array]
    if _arrow_list_kind(series.dtype) is not None:
        return series.array.__arrow_array__().to_pylist()  # nulls as None
    return [_to_python(v) for v in series.array]  # list_str, list_int, json: keep None / NaN as is


def _restore_column(values: list[Any], schema: Mapping[str, Any], name: str) -> pd.Series:
    kind, dtype = schema["kind"], schema["dtype"]
    if kind == "category":
        cat = pd.CategoricalDtype(schema["categories"], ordered=schema.get("ordered", False))
        return pd.Series(values, dtype=cat, name=name)
    if kind == "datetime":
        return pd.Series(pd.to_datetime(values), name=name).astype(dtype)
    if kind in ("float", "int", "bool"):
        for row, path, token in schema.get("nonfinite", ()):  # JSONL holds null where an infinity was
            if not path and isinstance(row, int) and row < len(values) and values[row] is None \
                    and token in _NON_FINITE:
                values[row] = _NON_FINITE[token]
        if dtype in ("float64", "float32"):
            values = [np.nan if v is None else v for v in values]
        elif dtype in ("int64", "int32", "int16", "int8", "uint64", "uint32", "uint16", "uint8", "bool") \
                and any(v is None for v in values):
            dtype = "boolean" if dtype == "bool" else dtype.capitalize()  # rows added since: Int64, boolean
        return pd.Series(values, name=name).astype(dtype)
    if kind == "str" and dtype != "object":
        return pd.Series(values, dtype=dtype, name=name)
    out = pd.Series(values, dtype=object, name=name)
    for row in schema.get("nan_rows", ()):
        # only where the file still holds a missing cell: rows added or removed since would shift the positions
        if row < len(out) and out.iat[row] is None:
            out.iat[row] = np.nan
    _restore_non_finite(out, schema.get("nonfinite", ()))
    return out


# --------------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------------


def _index_as_columns(df: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """A named or non-default index is data (e.g. ``set_index("question_id")``): write it as columns."""
    default = isinstance(df.index, pd.RangeIndex) and df.index.start == 0 and df.index.step == 1
    if default and df.index.name is None:
        return df, []
    names = [name if name is not None else f"level_{i}" if df.index.nlevels > 1 else "index"
             for i, name in enumerate(df.index.names)]
    clash = [name for name in names if name in df.columns]
    if clash:
        raise RowTableError(f"write_rows: the index name(s) {clash} are also column names; rename one of them")
    out = df.reset_index(names=names)
    out.attrs = df.attrs
    return out, names


def write_rows(df: pd.DataFrame, path: str | os.PathLike[str], *, format: str | None = None, header: bool = True) -> Path:
    """Write a row table to JSONL, CSV or Parquet (chosen by suffix, or ``format=``).

    The file itself is plain: ``pd.read_csv``, ``pd.read_json(path, lines=True)`` and
    ``pd.read_parquet`` give the rows and columns written, with the values' types inferred as for
    any file (ids such as ``"007"`` can become 7; ``dtype=str, keep_default_na=False`` for CSV or
    ``dtype=False`` for JSONL keeps text). List and dict cells are JSON text in CSV, and in Parquet
    too except lists of text or integers (ids). :func:`~raglab.io.read_rows` restores everything. For JSONL
    and CSV the dtypes and ``df.attrs["raglab"]`` go into a sidecar, ``<file>.raglab.json`` (see
    :func:`~raglab.io.sidecar_path`), with the row count and a SHA-256 of the file; for Parquet into the
    file's schema metadata.

    Parameters
    ----------
    df : DataFrame
        The rows. List and dict cells, None/NaN and ``df.attrs["raglab"]`` are all kept. A dict
        with keys that are not text (``{7: 1}``) is refused: the file would give ``{"7": 1}``.
    path : str or path-like
        ``.jsonl``/``.ndjson``, ``.csv`` (both optionally ``.gz``) or ``.parquet``.
    format : {"jsonl", "csv", "parquet"}, optional
        Overrides the suffix.
    header : bool
        JSONL/CSV only: write the metadata sidecar (default). Without it (and with any stale
        sidecar removed) dtypes are inferred again on reading, as for any plain file.

    Returns
    -------
    Path
        The path written. The file is written to a temporary name and moved into place, so an
        existing file is never left half-written.

    Examples
    --------
    >>> import pandas as pd, raglab, tempfile, os
    >>> rows = pd.DataFrame({"question_id": ["007"], "retrieved": [["d1", "d2"]], "gold": [{"d2": 3}]})
    >>> path = os.path.join(tempfile.mkdtemp(), "run.jsonl")
    >>> _ = rows.rag.write(path)
    >>> sorted(os.listdir(os.path.dirname(path)))
    ['run.jsonl', 'run.jsonl.raglab.json']
    >>> back = raglab.read_rows(path)
    >>> back.loc[0, "question_id"], back.loc[0, "gold"]
    ('007', {'d2': 3})
    >>> len(pd.read_json(path, lines=True))   # a plain file for any other tool
    1
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"write_rows needs a DataFrame, got {type(df).__name__}")
    path = user_path(path)
    if path.name.lower().endswith(SIDECAR_SUFFIX):
        raise ValueError(
            f"write_rows: {str(path)!r} is the name of the metadata sidecar raglab keeps next to "
            f"{path.name[: -len(SIDECAR_SUFFIX)]!r}; writing rows there would replace that file's metadata. "
            "Choose another name."
        )
    fmt = _format_of(path, format)
    try:
        return _write_rows(df, path, fmt, header)
    except OSError as exc:  # name the user's file, not the temporary one
        raise type(exc)(exc.errno, f"cannot write {str(path)!r}: {exc.strerror or exc}", str(path)) from None


def _write_rows(df: pd.DataFrame, path: Path, fmt: str, header: bool) -> Path:
    df, index_names = _index_as_columns(df)
    schema = _build_schema(df)
    if index_names:
        schema["index"] = index_names
    gz = path.suffix.lower() == ".gz"
    if fmt == "parquet":
        # the row count lets read_rows refuse a file another tool cut (nan_rows/empty_rows index its rows)
        _write_cells(df, schema, lambda: write_file(path, lambda tmp: _write_parquet(df, tmp, {**schema, "n_rows": len(df)})))
        return path
    writer = _write_jsonl if fmt == "jsonl" else _write_csv
    sidecar = sidecar_path(path)
    if not header:  # and a stale sidecar, which would describe another file, goes in the same step
        _write_cells(df, schema, lambda: replace_files([(path, lambda tmp: writer(df, tmp, schema, gz=gz)),
                                                        (sidecar, None)]))
        return path
    digest: list[str] = []

    def write_data(tmp: Path) -> None:
        writer(df, tmp, schema, gz=gz)
        digest.append(hashlib.sha256(tmp.read_bytes()).hexdigest())

    def write_sidecar(tmp: Path) -> None:
        record = {SCHEMA_KEY: schema, "file": path.name, "format": fmt, "n_rows": len(df), "sha256": digest[-1]}
        tmp.write_text(json.dumps(record, ensure_ascii=False, allow_nan=False, indent=1), encoding="utf-8")

    # both files go to names unique to this process and thread, and are moved into place under one lock:
    # concurrent writers of one path leave one writer's rows with that writer's sidecar
    _write_cells(df, schema, lambda: replace_files([(path, write_data), (sidecar, write_sidecar)]))
    return path


def _write_atomically(path: Path, write: Any) -> Path:
    """``write(tmp)`` to a temporary name, then move it into place (see ``raglab._files``)."""
    return write_file(path, write)


def _write_cells(df: pd.DataFrame, schema: Mapping[str, Any], write: Any) -> None:
    """Run ``write()``; a cell no format can hold is reported by column and row, not as the encoder's error."""
    try:
        write()
    except (TypeError, ValueError, UnicodeError, OverflowError, pa.ArrowException):
        problem = _unstorable_cell(df, schema)
        if problem is None:
            raise
        message, column, row = problem
        raise UnstorableCellError(message, column=column, rows=None if row is None else [row],
                                  method="write_rows") from None


@contextlib.contextmanager
def _open_tmp(tmp: Path, gz: bool) -> Iterator[IO[str]]:
    if not gz:
        with open(tmp, "w", encoding="utf-8", newline="") as fh:
            yield fh
        return
    # filename="": the gzip header does not record the temporary name
    with open(tmp, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw) as packed, \
            io.TextIOWrapper(packed, encoding="utf-8", newline="") as fh:
        yield fh


def _write_jsonl(df: pd.DataFrame, tmp: Path, schema: dict[str, Any], gz: bool) -> None:
    columns = list(df.columns)
    cells = []
    for column in columns:
        col_schema = schema["columns"][column]
        if col_schema["kind"] == "json":  # NaN and infinities as null, recorded in the sidecar
            cells.append(_finite_json(df[column].array, col_schema))  # plain Python values in one pass
            continue
        values = _column_cells(df[column], col_schema)
        if col_schema["kind"] == "float":  # NaN is already None; infinities too, recorded in the sidecar
            numbers = df[column].to_numpy(dtype="float64", na_value=np.nan)
            rows = np.flatnonzero(np.isinf(numbers)).tolist()
            col_schema.pop("nonfinite", None)
            if rows:
                col_schema["nonfinite"] = [[r, [], "inf" if numbers[r] > 0 else "-inf"] for r in rows]
                for r in rows:
                    values[r] = None
        cells.append(values)
    with _open_tmp(tmp, gz) as fh:
        for row in zip(*cells):
            # allow_nan=False: never the NaN/Infinity tokens that other JSON readers refuse
            fh.write(json.dumps(dict(zip(columns, row)), ensure_ascii=False, default=_json_default,
                                allow_nan=False) + "\n")


def _write_csv(df: pd.DataFrame, tmp: Path, schema: dict[str, Any], gz: bool) -> None:
    columns = list(df.columns)
    encoded = []
    for column in columns:
        col_schema = schema["columns"][column]
        if col_schema["kind"] == "json":  # a JSON cell holds null for NaN/infinity (recorded in the sidecar)
            values = _finite_json(df[column].array, col_schema)
        else:
            values = _column_cells(df[column], col_schema)
        if col_schema["kind"] in ("list_str", "list_int", "json"):
            values = [json.dumps(v, ensure_ascii=False, default=_json_default, allow_nan=False) for v in values]
        elif col_schema["kind"] in ("str", "category"):
            # An empty field means missing; keep where real empty strings were.
            empties = [i for i, v in enumerate(values) if v == ""]
            if empties:
                col_schema["empty_rows"] = empties
            values = ["" if v is None else v for v in values]
        else:
            values = ["" if v is None else (repr(v) if isinstance(v, float) else str(v)) for v in values]
        encoded.append(values)
    with _open_tmp(tmp, gz) as fh:
        # The default "\r\n" terminator makes the writer quote any field holding "\r" or "\n".
        writer = csv.writer(fh)
        writer.writerow(columns)
        writer.writerows(zip(*encoded))


def _write_parquet(df: pd.DataFrame, tmp: Path, schema: dict[str, Any]) -> None:
    import pyarrow.parquet as pq

    arrays, fields = [], []
    for column in df.columns:
        col_schema = schema["columns"][column]
        kind = col_schema["kind"]
        if _arrow_list_kind(df[column].dtype) is not None:
            arrays.append(df[column].array.__arrow_array__().combine_chunks())
            arrays[-1] = arrays[-1].cast(_id_list_type(arrays[-1].type))
            fields.append(pa.field(column, arrays[-1].type))
            continue
        # json cells: plain Python with NaN/infinities as None (recorded in the schema), in one pass
        values = _finite_json(df[column].array, col_schema) if kind == "json" else _column_cells(df[column], col_schema)
        if kind == "list_str":
            arr = pa.array(values, type=pa.list_(pa.string()))
        elif kind == "list_int":
            arr = pa.array(values, type=pa.list_(pa.int64()))
        elif kind == "json":
            # a missing cell is a Parquet null, not the text "null" that plain pd.read_parquet would show
            arr = pa.array(
                [None if v is None else json.dumps(v, ensure_ascii=False, default=_json_default, allow_nan=False)
                 for v in values],
                type=pa.string(),
            )
        elif kind in ("str", "category"):
            arr = pa.array(values, type=pa.string())
        elif kind == "datetime":
            arr = pa.Array.from_pandas(df[column])
        elif kind == "float" and isinstance(df[column].dtype, np.dtype):
            # NaN stays NaN (not null) so a float column reads back exactly.
            arr = pa.array(df[column].to_numpy(dtype="float64"), type=pa.float64(), from_pandas=False)
        elif kind == "int" and isinstance(df[column].dtype, np.dtype):
            # numpy's own integer type (uint64 above 2**63 - 1 would overflow the int64 pa.array infers)
            arr = pa.array(df[column].to_numpy(), from_pandas=False)
        else:  # int, bool and the nullable extension dtypes: missing values are nulls
            arr = pa.array(values)
        arrays.append(arr)
        fields.append(pa.field(column, arr.type))
    metadata = {SCHEMA_KEY.encode(): json.dumps(schema, ensure_ascii=False, allow_nan=False).encode()}
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=metadata))
    pq.write_table(table, tmp)


# --------------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------------

# Failures of the bytes themselves (truncated gzip, not UTF-8, absurd nesting, a broken Parquet
# footer...): reported as a RowTableError naming the user's file, never as a raw library error.
_UNREADABLE = (EOFError, zlib.error, gzip.BadGzipFile, UnicodeDecodeError, RecursionError, csv.Error,
               pa.ArrowException, MemoryError)


def read_rows(path: str | os.PathLike[str], *, format: str | None = None, lists: str = "python") -> pd.DataFrame:
    """Read a row table written by :func:`write_rows` (or a plain JSONL/CSV/Parquet file).

    For JSONL and CSV the sidecar ``<file>.raglab.json`` (see :func:`sidecar_path`) restores dtypes
    and ``attrs["raglab"]``, and is checked against the file: fewer rows than it records is an error
    (the file was cut), more rows or other content a warning. Without a sidecar the file reads as a
    plain file. Columns present in any row are kept; a UTF-8 byte-order mark is stripped.

    Parameters
    ----------
    path : str or path-like
        ``.jsonl``/``.ndjson``/``.csv`` (optionally ``.gz``) or ``.parquet``.
    format : {"jsonl", "csv", "parquet"}, optional
        Overrides the suffix.
    lists : {"python", "arrow"}
        Columns of lists of ids (``retrieved``, candidates, list gold, ...): Python lists in an
        object column (default), or Arrow-backed (``pd.ArrowDtype(pa.list_(pa.string()))``, or of
        ``int64``; a missing cell is null). From Parquet the Arrow columns are the file's own
        buffers: no Python object per id, and ``rows.rag.retrieval()`` scores them natively. Dict
        gold and span columns stay Python objects.

    Returns
    -------
    DataFrame
        With list/dict cells restored, ids kept as text, and ``attrs["raglab"]`` restored.

    Examples
    --------
    >>> import os, tempfile, pandas as pd, raglab
    >>> rows = pd.DataFrame({"question_id": ["q1", "q2"], "retrieved": [["d1", "d2"], []], "gold": [["d2"], ["d1"]]})
    >>> path = raglab.write_rows(rows, os.path.join(tempfile.mkdtemp(), "rows.parquet"))
    >>> back = raglab.read_rows(path, lists="arrow")
    >>> str(back["retrieved"].dtype), back.rag.retrieval(k=2)["rr"].tolist()
    ('list<item: string>[pyarrow]', [0.5, 0.0])
    """
    return _read_rows(user_path(path), format=format, lists=lists)


def _read_rows(path: Path, *, format: str | None = None, lists: str = "python", check: bool = True) -> pd.DataFrame:
    """:func:`read_rows`; ``check=False`` skips the sidecar's row-count and hash checks (a caller that
    verifies the rows itself, such as :class:`raglab.EvalSet`, reports changes more precisely)."""
    check_option("lists", lists, ("python", "arrow"))
    if not path.exists():
        raise FileNotFoundError(f"no row file at {str(path)!r}")
    if path.is_dir():
        raise RowTableError(f"{str(path)!r} is a directory; give the path of a JSONL, CSV or Parquet row file")
    fmt = _format_of(path, format)
    try:
        if fmt == "parquet":
            try:
                return _read_parquet(path, arrow_lists=lists == "arrow")
            except (PermissionError, FileNotFoundError):
                raise
            except (OSError, json.JSONDecodeError) as exc:  # pyarrow reports a damaged file as an OSError
                raise RowTableError(f"{str(path)!r} cannot be read as a parquet file: {exc}") from None
            except (KeyError, TypeError, AttributeError) as exc:  # the schema metadata itself is damaged
                raise RowTableError(
                    f"{str(path)!r}: raglab's schema metadata in the file is damaged ({type(exc).__name__}: {exc}); "
                    "restore the file, or rewrite it without metadata (pyarrow.parquet.write_table)."
                ) from None
        with reading(path):  # a writer replaces the file and its sidecar together: read them as a pair
            data = path.read_bytes()
            sidecar = _load_sidecar(path)
        digest = hashlib.sha256(data).hexdigest()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        text = data.decode("utf-8-sig")
        if sidecar is not None and not check:
            digest = sidecar.get("sha256")  # trusted: the caller checks the content itself
            sidecar = {**sidecar, "n_rows": None}
        frame = _read_jsonl(path, text, sidecar, digest) if fmt == "jsonl" else _read_csv(path, text, sidecar, digest)
    except UnicodeDecodeError as exc:
        raise RowTableError(
            f"{str(path)!r} is not UTF-8 text: byte {exc.object[exc.start]:#04x} at offset {exc.start}. Save the "
            f"file as UTF-8 (or check that it is a {fmt.upper()} file at all)."
        ) from None
    except RecursionError:
        raise RowTableError(f"{str(path)!r}: a cell is nested too deeply to decode (thousands of levels)") from None
    except _UNREADABLE as exc:
        what = "a complete gzip file" if isinstance(exc, (EOFError, zlib.error, gzip.BadGzipFile)) else f"a {fmt} file"
        raise RowTableError(f"{str(path)!r} cannot be read as {what}: {exc}") from None
    return _with_arrow_lists(frame) if lists == "arrow" else frame


def _load_sidecar(path: Path) -> dict[str, Any] | None:
    sidecar = sidecar_path(path)
    if not sidecar.is_file():
        return None
    try:
        record = json.loads(sidecar.read_text(encoding="utf-8-sig"))
        if not isinstance(record, dict) or not isinstance(record.get(SCHEMA_KEY), dict):
            raise ValueError("no schema")
        record[SCHEMA_KEY]["columns"].items()
        return record
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
        raise RowTableError(
            f"{str(sidecar)!r} (raglab's metadata for {path.name!r}) is not a raglab sidecar; delete it to read "
            f"{path.name!r} as a plain file (its dtypes and attrs are then inferred)."
        ) from None


def _checked_schema(path: Path, sidecar: dict[str, Any] | None, n_rows: int, digest: str) -> dict[str, Any] | None:
    """The sidecar's schema after checking the file against it (rows cut: error; other changes: warning)."""
    if sidecar is None:
        return None
    expected = sidecar.get("n_rows")
    side = sidecar_path(path).name
    recorded = sidecar.get("file")
    if sidecar.get("sha256") != digest and isinstance(recorded, str) and recorded != path.name:
        warn(f"read_rows: {side!r} describes {recorded!r}, not {path.name!r}, and does not match its content "
             f"(copied from another file?): it is ignored and {path.name!r} is read as a plain file (dtypes "
             "inferred); delete or replace the sidecar.")
        return None
    if isinstance(expected, int) and n_rows < expected:
        raise RowTableError(
            f"{str(path)!r} holds {n_rows} rows but its metadata {side!r} records {expected}: the file was cut or "
            f"rows were removed after raglab wrote it. Restore the file, or delete {side!r} to read the "
            f"{n_rows} rows as a plain file."
        )
    if sidecar.get("sha256") != digest:
        more = f" ({n_rows} rows, {expected} recorded)" if isinstance(expected, int) and n_rows != expected else ""
        warn(
            f"read_rows: {str(path)!r} was changed after raglab wrote it{more}: its content no longer matches "
            f"{side!r}. Read with the recorded dtypes where the columns match; write it again with "
            "raglab.write_rows to refresh the metadata."
        )
        return {**sidecar[SCHEMA_KEY], "modified": True}
    return sidecar[SCHEMA_KEY]


def _with_arrow_lists(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with every object column of lists of str (or of int) as an Arrow-backed list column."""
    for name in frame.columns:
        cells = frame[name].array
        if frame[name].dtype == object and any(isinstance(v, (list, tuple, np.ndarray)) for v in cells):
            kind = _cell_kind(cells)
            if kind in ("list_str", "list_int"):
                values = pa.array([None if is_missing(v) else _to_python(v) for v in cells],
                                  type=pa.list_(pa.string() if kind == "list_str" else pa.int64()))
                frame[name] = pd.Series(pd.arrays.ArrowExtensionArray(values), index=frame.index, name=name)
    return frame


def _arrow_list_series(column: pa.ChunkedArray, name: str) -> pd.Series | None:
    """A Parquet column of lists of str/int as an Arrow-backed Series (the file's buffers), else None."""
    target = _id_list_type(column.type)
    return None if target is None else pd.Series(pd.arrays.ArrowExtensionArray(column.cast(target)), name=name)


def _from_columns(
    columns: dict[str, Any],
    schema: Mapping[str, Any] | None,
    path: Path,
    infer: Any = None,
) -> pd.DataFrame:
    """A frame from decoded columns: typed by the schema, and columns it does not know inferred (kept)."""
    if schema is None:
        return _infer_frame(columns)
    specs = schema["columns"]
    missing = [c for c in specs if c not in columns]
    if missing and not schema.get("modified"):
        raise RowTableError(f"{str(path)!r}: the schema names columns the file does not hold: {missing}")
    infer = infer or _infer_frame
    data: dict[str, pd.Series] = {}
    for name, values in columns.items():
        if name in specs:
            try:
                data[name] = values if isinstance(values, pd.Series) else _restore_column(values, specs[name], name)
            except (ValueError, TypeError, OverflowError) as exc:
                raise RowTableError(
                    f"{str(path)!r}: column {name!r} no longer holds the {specs[name]['kind']} values raglab wrote "
                    f"({exc}); restore the file, or delete its sidecar {sidecar_path(path).name!r} to read it as a "
                    "plain file."
                ) from None
        else:  # a column another tool added: keep it, typed as for a plain file
            data[name] = infer({name: values})[name]
    df = pd.DataFrame({name: series.reset_index(drop=True) for name, series in data.items()})
    index = [c for c in schema.get("index") or [] if c in df.columns]
    if index:
        df = df.set_index(index)
    attrs = schema.get("attrs") or {}
    if attrs:
        set_meta(df, attrs)
    return df


def _infer_frame(columns: dict[str, list[Any]]) -> pd.DataFrame:
    data = {}
    for name, values in columns.items():
        if name in _STRUCTURED_ROLES or name == "question_id":
            data[name] = pd.Series(values, dtype=object, name=name)
        else:
            data[name] = pd.Series(values, name=name)
    return pd.DataFrame(data)


class _RepeatedKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        raise _RepeatedKey(next(k for k, _ in pairs if k in seen or seen.add(k)))  # type: ignore[func-returns-value]
    return out


_JSON_LINE = json.JSONDecoder(object_pairs_hook=_unique_keys)


def _read_jsonl(path: Path, text: str, sidecar: dict[str, Any] | None, digest: str) -> pd.DataFrame:
    schema = None
    legacy = False
    records: list[dict[str, Any]] = []
    # Split on "\n" only: str.splitlines() would also split inside strings holding U+2028 and friends.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = _JSON_LINE.decode(line.strip())
        except _RepeatedKey as exc:
            raise RowTableError(f"{str(path)!r} line {number}: key {exc.args[0]!r} appears twice in one object; "
                                "JSON readers disagree on which value wins, so raglab reads neither") from None
        except json.JSONDecodeError as exc:
            _refuse_json_document(path, text, number)
            raise RowTableError(f"{str(path)!r} line {number} is not valid JSON: {exc.msg}") from None
        if not isinstance(record, dict):
            _refuse_json_document(path, text, number)
            raise RowTableError(f"{str(path)!r} line {number}: each line must be a JSON object")
        if number == 1 and set(record) == {SCHEMA_KEY}:  # the in-file header of raglab <= 0.1 files
            schema, legacy = record[SCHEMA_KEY], True
            continue
        records.append(record)
    if not legacy:
        schema = _checked_schema(path, sidecar, len(records), digest)
    names: dict[str, None] = {}
    if schema is not None:
        names.update(dict.fromkeys(c for c in schema["columns"] if not schema.get("modified")))
    for record in records:
        names.update(dict.fromkeys(record))
    columns = {name: [record.get(name) for record in records] for name in names}
    if schema is None:
        columns = {name: [_maybe_id_text(name, v) for v in values] for name, values in columns.items()}
    return _from_columns(columns, schema, path)


def _refuse_json_document(path: Path, text: str, number: int) -> None:
    """A JSON array of rows (or one object over several lines) given where JSON Lines were expected: say so."""
    stripped = text.strip()
    if stripped[:1] not in ("[", "{") or (number != 1 and stripped[:1] == "{"):
        return
    try:
        whole = json.loads(stripped)
    except (json.JSONDecodeError, RecursionError):
        return
    if isinstance(whole, list) and ("\n" in stripped or any(isinstance(item, dict) for item in whole)):
        raise RowTableError(
            f"{str(path)!r} holds a JSON array, not JSON Lines (one JSON object per line), which row files are. "
            "Convert it once, e.g. raglab.write_rows(pd.read_json(path, dtype=False), 'rows.jsonl'), or "
            "jq -c '.[]' file.json > rows.jsonl."
        )
    if isinstance(whole, dict):
        raise RowTableError(
            f"{str(path)!r} holds one JSON object spread over several lines, not JSON Lines (one JSON object per "
            "line, each a row). Write each row on its own line, e.g. jq -c . file.json > rows.jsonl."
        )


def _maybe_id_text(name: str, value: Any) -> Any:
    if name == "question_id" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(int(value)) if float(value).is_integer() else str(value)
    return value


def _read_csv(path: Path, text: str, sidecar: dict[str, Any] | None, digest: str) -> pd.DataFrame:
    schema = None
    fh = io.StringIO(text, newline="")
    first = fh.readline()
    if first.startswith(_CSV_PREFIX):  # the in-file header of raglab <= 0.1 files
        try:
            schema = json.loads(first[len(_CSV_PREFIX):])
        except json.JSONDecodeError:
            raise RowTableError(f"{str(path)!r} line 1: the raglab header line is not valid JSON") from None
    else:
        fh.seek(0)
    _allow_fields_of(len(text))
    reader = csv.reader(fh, strict=True)  # strict: an unclosed quote is an error, not one cell to the end
    try:
        header = next(reader)
        rows = list(reader)
    except StopIteration:
        header, rows = None, []
    except csv.Error as exc:
        raise RowTableError(f"{str(path)!r} line {reader.line_num}: not valid CSV ({exc}); a quoted field must "
                            "end with a closing quote, and a quote inside it is written twice") from None
    if header and header[0].lstrip().startswith("{") and text.lstrip().startswith("{"):
        raise RowTableError(f"{str(path)!r} holds JSON objects, not CSV (JSON Lines?): name it .jsonl or pass "
                            "format='jsonl'")
    if schema is None:
        schema = _checked_schema(path, sidecar, len(rows), digest)
    if header is None:
        return pd.DataFrame()
    width = len(header)
    repeated = sorted({name for name in header if header.count(name) > 1})
    if repeated:
        raise RowTableError(
            f"{str(path)!r}: the header repeats column name(s) {repeated}; each column needs its own name "
            "(reading would silently keep only one of them)."
        )
    bad = [i for i, row in enumerate(rows) if len(row) != width]
    if bad:
        raise RowTableError(
            f"{str(path)!r}: data line(s) {[b + 2 for b in bad[:5]]} have a different number of fields than "
            f"the header ({width})."
        )
    raw = {name: [row[i] for row in rows] for i, name in enumerate(header)}
    if schema is None:
        return _infer_csv(raw)
    columns: dict[str, list[Any]] = {}
    specs = schema["columns"]
    for name, values in raw.items():
        spec = specs.get(name)
        if spec is None:
            columns[name] = values  # inferred by _from_columns
            continue
        kind = spec["kind"]
        try:
            if kind in ("list_str", "list_int", "json"):
                columns[name] = [_decode_json_cell(v, name, i, path) for i, v in enumerate(values)]
            elif kind in ("str", "category"):
                # An empty field is missing unless the sidecar lists it as "": test the field itself, so
                # a file edited since (rows shifted) never has its text overwritten.
                empty = set(spec.get("empty_rows", ()))
                columns[name] = [None if v == "" and i not in empty else v for i, v in enumerate(values)]
            elif kind == "float":
                columns[name] = [np.nan if v == "" else float(v) for v in values]
            elif kind == "int":
                columns[name] = [None if v == "" else int(v) for v in values]
            elif kind == "bool":
                columns[name] = [_csv_bool(v, name, i, path) for i, v in enumerate(values)]
            else:
                columns[name] = [None if v == "" else v for v in values]
        except RowTableError:
            raise
        except ValueError as exc:
            raise RowTableError(
                f"{str(path)!r}: column {name!r} should hold {kind} values as raglab wrote it, but {exc}"
            ) from None
    return _from_columns(columns, schema, path, infer=_infer_csv)


_BOOLS = {"true": True, "false": False, "1": True, "0": False}


def _csv_bool(text: str, column: str, row: int, path: Path) -> bool | None:
    """A boolean field: raglab writes True/False; spreadsheets save TRUE/FALSE (or 1/0), all read back as booleans."""
    if text == "":
        return None
    value = _BOOLS.get(text.strip().lower())
    if value is None:
        raise RowTableError(
            f"{str(path)!r}: column {column!r} row {row} should hold a boolean (True/False) as raglab wrote it, got "
            f"{text[:40]!r}; restore the file, or delete its sidecar {sidecar_path(path).name!r} to read it as a "
            "plain file."
        )
    return value


def _allow_fields_of(size: int) -> None:
    """Let the csv module read fields up to ``size`` characters (its default limit, 131,072, refused long
    answers and contexts that raglab itself wrote). The limit is process-wide; it is only ever raised."""
    if csv.field_size_limit() < size:
        csv.field_size_limit(min(size, sys.maxsize, 2**31 - 1))


def _decode_json_cell(text: str, column: str, row: int, path: Path) -> Any:
    if text is None or text == "":  # an empty field (e.g. the file was saved again by pandas): missing
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise RowTableError(
            f"{str(path)!r}: column {column!r} row {row} should hold JSON text (a list or dict), got {text[:40]!r}"
        ) from None
    except RecursionError:
        raise RowTableError(f"{str(path)!r}: column {column!r} row {row} is nested too deeply to decode") from None


def _infer_csv(raw: dict[str, list[str]]) -> pd.DataFrame:
    """A CSV without a raglab schema: ids stay text, list roles are decoded, the rest as pandas would."""
    frame = pd.read_csv(
        io.StringIO(_rows_to_csv(raw)),
        dtype={name: str for name in raw if name == "question_id" or name in _STRUCTURED_ROLES},
        # Only an empty field is missing: answers such as "None", "null" or "N/A" are text.
        keep_default_na=False,
        na_values=[""],
    )
    for name in _STRUCTURED_ROLES:
        if name in frame.columns:
            frame[name] = pd.Series(
                [None if is_missing(v) else _json_or_text(v) for v in frame[name].array], dtype=object
            )
    return frame


def _json_or_text(text: str) -> Any:
    """A list or dict cell of a plain CSV: JSON, or the Python repr that ``DataFrame.to_csv`` writes."""
    stripped = text.strip()
    if stripped == "null":  # how raglab's CSV writes a missing list or dict
        return None
    if stripped[:1] in ("[", "{"):
        try:
            return json.loads(stripped)
        except (json.JSONDecodeError, RecursionError):
            try:
                value = ast.literal_eval(stripped)  # literals only: never runs code
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                return text
            return value if isinstance(value, (list, dict, tuple)) else text
    return text


def _rows_to_csv(raw: dict[str, list[str]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(list(raw))
    writer.writerows(zip(*raw.values()))
    return buffer.getvalue()


def _read_parquet(path: Path, *, arrow_lists: bool = False) -> pd.DataFrame:
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    metadata = table.schema.metadata or {}
    raw_schema = metadata.get(SCHEMA_KEY.encode())
    schema = json.loads(raw_schema) if raw_schema else None
    if schema is None:  # another tool's file: pandas types it; only lists and nested cells are touched up
        frame = table.to_pandas()
        if frame.index.name is not None or not isinstance(frame.index, pd.RangeIndex):
            frame = frame.reset_index()  # e.g. pandas wrote question_id as the index: make it a column again
        for name in frame.columns:
            series = _arrow_list_series(table.column(name), name) \
                if arrow_lists and name in table.column_names else None
            if series is not None:
                frame[name] = series.set_axis(frame.index)
            elif frame[name].dtype == object:
                frame[name] = pd.Series([_to_python(v) for v in frame[name].array], dtype=object)
        return frame
    expected = schema.get("n_rows")
    if isinstance(expected, int) and table.num_rows != expected:
        message = (f"{str(path)!r} holds {table.num_rows} rows but its raglab metadata records {expected}: "
                   "it was changed after raglab wrote it.")
        if table.num_rows < expected:
            raise RowTableError(message + " Restore the file, or write it again with raglab.write_rows.")
        warn("read_rows: " + message + " All rows are read.")
    columns: dict[str, Any] = {}
    for name in table.column_names:
        if arrow_lists:
            series = _arrow_list_series(table.column(name), name)
            if series is not None:
                columns[name] = series
                continue
        spec = schema["columns"].get(name)
        if spec is None:  # a column another tool added
            columns[name] = table.select([name]).to_pandas()[name]
            if columns[name].dtype == object:
                columns[name] = pd.Series([_to_python(v) for v in columns[name].array], dtype=object, name=name)
            continue
        values = table.column(name).to_pylist()
        if spec["kind"] == "json":
            values = [_decode_json_cell(v, name, i, path) for i, v in enumerate(values)]
        columns[name] = values
    return _from_columns(columns, schema, path)
