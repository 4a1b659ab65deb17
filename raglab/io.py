"""Row tables in and out of files: JSONL, Parquet and CSV, plus TREC run and qrels files.

Round trips through :func:`write_rows` / :func:`read_rows` are lossless for list and dict cells,
None and NaN, unicode and ids that look like numbers ("007" stays a string). Each file carries a
small schema (column dtypes) and the run's ``df.attrs["raglab"]`` metadata:

* JSONL: a first line ``{"__raglab__": {...}}`` (omit it with ``header=False``);
* CSV: a first line ``#__raglab__ {...}``; list and dict cells are JSON text;
* Parquet: the file's key-value metadata (lists of ids stay native Arrow lists).

Files written by other tools read fine too: without a schema, the id column is read as text and
cells of the list-valued roles (``retrieved``, ``gold``, spans) are decoded from JSON.

A default RangeIndex is not stored; any other index (e.g. ``set_index("question_id")``) is written
as columns and restored on reading.

``read_rows(path, lists="arrow")`` returns columns of lists of ids as Arrow-backed columns
(``pd.ArrowDtype(pa.list_(pa.string()))``); from Parquet they are the file's own Arrow buffers, so
``rows.rag.retrieval()`` scores them without creating a Python object per id.
"""

from __future__ import annotations

import ast
import csv
import gzip
import io
import json
import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd
import pyarrow as pa

from raglab._errors import RowTableError
from raglab._meta import get_meta, set_meta
from raglab._rowtable import ROLES
from raglab._validation import check_option, is_missing, warn

__all__ = ["read_rows", "write_rows", "read_trec", "write_trec", "FORMATS"]

FORMATS = ("jsonl", "csv", "parquet")
SCHEMA_KEY = "__raglab__"
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


def _build_schema(df: pd.DataFrame) -> dict[str, Any]:
    bad = [c for c in df.columns if not isinstance(c, str)]
    if bad:
        raise TypeError(f"column names must be strings to be written; got {bad[:5]}")
    if df.columns.duplicated().any():
        raise RowTableError(f"column names must be unique; repeated: {df.columns[df.columns.duplicated()].tolist()}")
    return {
        "version": _SCHEMA_VERSION,
        "columns": {c: _column_schema(df[c]) for c in df.columns},
        "attrs": get_meta(df),
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
        if dtype in ("float64", "float32"):
            values = [np.nan if v is None else v for v in values]
        return pd.Series(values, name=name).astype(dtype)
    if kind == "str" and dtype != "object":
        return pd.Series(values, dtype=dtype, name=name)
    out = pd.Series(values, dtype=object, name=name)
    for row in schema.get("nan_rows", ()):
        out.iat[row] = np.nan
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

    Parameters
    ----------
    df : DataFrame
        The rows. List and dict cells, None/NaN and ``df.attrs["raglab"]`` are all kept.
    path : str or path-like
        ``.jsonl``/``.ndjson``, ``.csv`` (both optionally ``.gz``) or ``.parquet``.
    format : {"jsonl", "csv", "parquet"}, optional
        Overrides the suffix.
    header : bool
        JSONL/CSV only: write the raglab schema line first (default). Without it the file is plain
        JSONL/CSV for other tools, and dtypes are inferred again on reading.

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
    >>> back = raglab.read_rows(path)
    >>> back.loc[0, "question_id"], back.loc[0, "gold"]
    ('007', {'d2': 3})
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"write_rows needs a DataFrame, got {type(df).__name__}")
    path = Path(path)
    fmt = _format_of(path, format)
    df, index_names = _index_as_columns(df)
    schema = _build_schema(df)
    if index_names:
        schema["index"] = index_names
    gz = path.suffix.lower() == ".gz"
    writers = {"jsonl": lambda tmp: _write_jsonl(df, tmp, schema, header, gz=gz),
               "csv": lambda tmp: _write_csv(df, tmp, schema, header, gz=gz),
               "parquet": lambda tmp: _write_parquet(df, tmp, schema)}
    return _write_atomically(path, writers[fmt])


def _write_atomically(path: Path, write: Any) -> Path:
    """``write(tmp)`` to a temporary name, then move it into place: never a half-written file."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def _open_tmp(tmp: Path, gz: bool) -> IO[str]:
    if gz:
        return gzip.open(tmp, "wt", encoding="utf-8", newline="")
    return open(tmp, "w", encoding="utf-8", newline="")


def _write_jsonl(df: pd.DataFrame, tmp: Path, schema: dict[str, Any], header: bool, gz: bool) -> None:
    columns = list(df.columns)
    cells = [_column_cells(df[c], schema["columns"][c]) for c in columns]
    with _open_tmp(tmp, gz) as fh:
        if header:
            fh.write(json.dumps({SCHEMA_KEY: schema}, ensure_ascii=False, allow_nan=False) + "\n")
        for row in zip(*cells):
            fh.write(json.dumps(dict(zip(columns, row)), ensure_ascii=False, default=_json_default) + "\n")


def _write_csv(df: pd.DataFrame, tmp: Path, schema: dict[str, Any], header: bool, gz: bool) -> None:
    columns = list(df.columns)
    encoded = []
    for column in columns:
        col_schema = schema["columns"][column]
        values = _column_cells(df[column], col_schema)
        if col_schema["kind"] in ("list_str", "list_int", "json"):
            values = [json.dumps(v, ensure_ascii=False, default=_json_default) for v in values]
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
        if header:
            fh.write(_CSV_PREFIX + json.dumps(schema, ensure_ascii=False, allow_nan=False) + "\n")
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
        values = _column_cells(df[column], col_schema)
        if kind == "list_str":
            arr = pa.array(values, type=pa.list_(pa.string()))
        elif kind == "list_int":
            arr = pa.array(values, type=pa.list_(pa.int64()))
        elif kind == "json":
            arr = pa.array(
                [json.dumps(v, ensure_ascii=False, default=_json_default) for v in values], type=pa.string()
            )
        elif kind in ("str", "category"):
            arr = pa.array(values, type=pa.string())
        elif kind == "datetime":
            arr = pa.Array.from_pandas(df[column])
        elif kind == "float" and isinstance(df[column].dtype, np.dtype):
            # NaN stays NaN (not null) so a float column reads back exactly.
            arr = pa.array(df[column].to_numpy(dtype="float64"), type=pa.float64(), from_pandas=False)
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


def read_rows(path: str | os.PathLike[str], *, format: str | None = None, lists: str = "python") -> pd.DataFrame:
    """Read a row table written by :func:`write_rows` (or a plain JSONL/CSV/Parquet file).

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
    path = Path(path)
    check_option("lists", lists, ("python", "arrow"))
    if not path.exists():
        raise FileNotFoundError(f"no row file at {str(path)!r}")
    fmt = _format_of(path, format)
    if fmt == "jsonl":
        frame = _read_jsonl(path)
    elif fmt == "csv":
        frame = _read_csv(path)
    else:
        return _read_parquet(path, arrow_lists=lists == "arrow")
    return _with_arrow_lists(frame) if lists == "arrow" else frame


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


def _from_columns(columns: dict[str, Any], schema: Mapping[str, Any] | None, path: Path) -> pd.DataFrame:
    if schema is None:
        df = _infer_frame(columns)
    else:
        specs = schema["columns"]
        missing = [c for c in specs if c not in columns]
        if missing:
            raise RowTableError(f"{str(path)!r}: the schema names columns the file does not hold: {missing}")
        df = pd.DataFrame(
            {c: columns[c] if isinstance(columns[c], pd.Series) else _restore_column(columns[c], specs[c], c) for c in specs}
        )
        df = df.reset_index(drop=True)
        if schema.get("index"):
            df = df.set_index(schema["index"])
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


def _read_jsonl(path: Path) -> pd.DataFrame:
    schema = None
    records: list[dict[str, Any]] = []
    with _open_text(path, "r") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise RowTableError(f"{str(path)!r} line {number} is not valid JSON: {exc.msg}") from None
            if not isinstance(record, dict):
                raise RowTableError(f"{str(path)!r} line {number}: each line must be a JSON object")
            if number == 1 and set(record) == {SCHEMA_KEY}:
                schema = record[SCHEMA_KEY]
                continue
            records.append(record)
    names: dict[str, None] = {}
    if schema is not None:
        names.update(dict.fromkeys(schema["columns"]))
    for record in records:
        names.update(dict.fromkeys(record))
    columns = {name: [record.get(name) for record in records] for name in names}
    if schema is None:
        columns = {name: [_maybe_id_text(name, v) for v in values] for name, values in columns.items()}
    return _from_columns(columns, schema, path)


def _maybe_id_text(name: str, value: Any) -> Any:
    if name == "question_id" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(int(value)) if float(value).is_integer() else str(value)
    return value


def _read_csv(path: Path) -> pd.DataFrame:
    schema = None
    with _open_text(path, "r") as fh:
        first = fh.readline()
        if first.startswith(_CSV_PREFIX):
            schema = json.loads(first[len(_CSV_PREFIX):])
        else:
            fh.seek(0)
        reader = csv.reader(fh)
        try:
            header = next(reader)
        except StopIteration:
            return pd.DataFrame()
        rows = list(reader)
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
    for name, values in raw.items():
        spec = schema["columns"].get(name)
        if spec is None:
            raise RowTableError(f"{str(path)!r}: column {name!r} is not in the file's raglab schema")
        kind = spec["kind"]
        if kind in ("list_str", "list_int", "json"):
            columns[name] = [_decode_json_cell(v, name, i, path) for i, v in enumerate(values)]
        elif kind in ("str", "category"):
            empty = set(spec.get("empty_rows", ()))
            columns[name] = ["" if i in empty else (None if v == "" else v) for i, v in enumerate(values)]
        elif kind == "float":
            columns[name] = [np.nan if v == "" else float(v) for v in values]
        elif kind == "int":
            columns[name] = [None if v == "" else int(v) for v in values]
        elif kind == "bool":
            columns[name] = [None if v == "" else v == "True" for v in values]
        else:
            columns[name] = [None if v == "" else v for v in values]
    return _from_columns(columns, schema, path)


def _decode_json_cell(text: str, column: str, row: int, path: Path) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise RowTableError(
            f"{str(path)!r}: column {column!r} row {row} should hold JSON text (a list or dict), got {text[:40]!r}"
        ) from None


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
    if stripped[:1] in ("[", "{"):
        try:
            return json.loads(stripped)
        except json.JSONDecodeError:
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
    columns: dict[str, Any] = {}
    for name in table.column_names:
        if arrow_lists:
            series = _arrow_list_series(table.column(name), name)
            if series is not None:
                columns[name] = series
                continue
        values = table.column(name).to_pylist()
        spec = schema["columns"].get(name) if schema else None
        if spec is not None and spec["kind"] == "json":
            values = [_decode_json_cell(v, name, i, path) for i, v in enumerate(values)]
        columns[name] = values
    if schema is None:
        frame = table.to_pandas()
        if frame.index.name is not None or not isinstance(frame.index, pd.RangeIndex):
            frame = frame.reset_index()  # e.g. pandas wrote question_id as the index: make it a column again
        for name in frame.columns:
            if isinstance(columns.get(name), pd.Series):
                frame[name] = columns[name].set_axis(frame.index)
            elif frame[name].dtype == object:
                frame[name] = pd.Series([_to_python(v) for v in frame[name].array], dtype=object)
        return frame
    return _from_columns(columns, schema, path)


# --------------------------------------------------------------------------------------------------
# TREC run and qrels files
# --------------------------------------------------------------------------------------------------


def _trec_lines(path: str | os.PathLike[str], what: str, min_fields: int) -> Iterable[tuple[int, list[str]]]:
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):  # trec_eval skips comment lines; '#' inside ids is data
                continue
            fields = stripped.split()
            if len(fields) < min_fields:
                raise RowTableError(
                    f"{str(path)!r} line {number}: a TREC {what} line needs at least {min_fields} "
                    f"whitespace-separated fields, got {len(fields)}: {stripped[:60]!r}"
                )
            yield number, fields


def _read_qrels(path: str | os.PathLike[str]) -> pd.DataFrame:
    records = []
    for number, fields in _trec_lines(path, "qrels", 4):
        try:
            grade = int(fields[3])
        except ValueError:
            raise RowTableError(
                f"{str(path)!r} line {number}: relevance must be an integer, got {fields[3]!r}"
            ) from None
        records.append((fields[0], fields[2], grade))
    return pd.DataFrame(records, columns=["qid", "docno", "grade"])


def _read_run(path: str | os.PathLike[str]) -> tuple[pd.DataFrame, str | None]:
    records = []
    names = set()
    for number, fields in _trec_lines(path, "run", 6):
        try:
            score = float(fields[4])
        except ValueError:
            raise RowTableError(f"{str(path)!r} line {number}: score must be a number, got {fields[4]!r}") from None
        records.append((fields[0], fields[2], score))
        names.add(fields[5])
    run = pd.DataFrame(records, columns=["qid", "docno", "score"])
    return run, (sorted(names)[0] if len(names) == 1 else None)


def read_trec(
    run: str | os.PathLike[str] | None = None,
    qrels: str | os.PathLike[str] | None = None,
) -> pd.DataFrame:
    """Build a row table from a TREC run file and/or a qrels file.

    The run is ordered as trec_eval orders it: by score, highest first, ties broken by document id
    in *descending* byte order (the rank column is ignored, as trec_eval ignores it). Duplicate
    documents within a topic are refused. With qrels, there is one row per judged topic: topics
    missing from the run get an empty ``retrieved`` list (they score 0, not dropped), and run topics
    without judgments are dropped with a warning (trec_eval ignores them too).

    Parameters
    ----------
    run : path, optional
        ``qid Q0 docno rank score runid`` lines; extra trailing fields are ignored.
    qrels : path, optional
        ``qid iter docno rel`` lines; every judged grade is kept (grades <= 0 are non-relevant).

    Returns
    -------
    DataFrame
        ``question_id``; with a run ``retrieved`` (list[str]) and ``retrieved_scores``
        (list[float]); with qrels ``gold`` (dict docno -> grade). ``attrs["raglab"]["run"]`` records
        the run name and the tie rule.

    Examples
    --------
    >>> import raglab
    >>> rows = raglab.read_trec(run="results.test", qrels="qrels.test")   # doctest: +SKIP
    >>> rows.columns.tolist()                                             # doctest: +SKIP
    ['question_id', 'retrieved', 'retrieved_scores', 'gold']
    """
    if run is None and qrels is None:
        raise TypeError("read_trec needs run=..., qrels=... or both")
    frames: dict[str, pd.Series] = {}
    run_name = None
    if run is not None:
        run_df, run_name = _read_run(run)
        dupes = run_df.duplicated(["qid", "docno"])
        if dupes.any():
            first = run_df[dupes].iloc[0]
            raise RowTableError(
                f"{str(run)!r}: document {first.docno!r} appears more than once for topic {first.qid!r} "
                f"({int(dupes.sum())} duplicates in all); a ranked list holds each document once."
            )
        # trec_eval: score descending, then docno descending (strcmp order = code-point order).
        run_df = run_df.sort_values(["qid", "score", "docno"], ascending=[True, False, False], kind="stable")
        grouped = run_df.groupby("qid", sort=True)
        frames["retrieved"] = grouped["docno"].agg(list)
        frames["retrieved_scores"] = grouped["score"].agg(list)
    if qrels is not None:
        qrels_df = _read_qrels(qrels)
        dupes = qrels_df.duplicated(["qid", "docno"], keep=False)
        if dupes.any():
            first = qrels_df[dupes].iloc[0]
            warn(f"{str(qrels)!r}: document {first.docno!r} is judged more than once for topic {first.qid!r}; "
                 "the last judgment is kept (as trec_eval does).")
            qrels_df = qrels_df.drop_duplicates(["qid", "docno"], keep="last")
        frames["gold"] = qrels_df.groupby("qid", sort=True).apply(
            lambda g: dict(zip(g["docno"], g["grade"].astype(int).tolist())), include_groups=False
        )
    if qrels is not None and run is not None:
        topics = frames["gold"].index
        unjudged = frames["retrieved"].index.difference(topics)
        if len(unjudged):
            warn(f"read_trec: {len(unjudged)} run topic(s) have no judgments in the qrels and were dropped, "
                 f"as trec_eval drops them (e.g. {unjudged[:5].tolist()}).")
        for key in ("retrieved", "retrieved_scores"):
            frames[key] = frames[key].reindex(topics)
            frames[key] = frames[key].where(frames[key].notna(), pd.Series([[] for _ in topics], index=topics))
    index = next(iter(frames.values())).index
    rows = pd.DataFrame({"question_id": pd.Series(index.astype(str), dtype=object)})
    for key, series in frames.items():
        rows[key] = pd.Series(series.reindex(index).tolist(), dtype=object)
    set_meta(rows, {"run": {"name": run_name, "source": "trec", "ties": "score desc, then docno desc (trec_eval)"}})
    return rows


def write_trec(
    df: pd.DataFrame,
    run: str | os.PathLike[str] | None = None,
    qrels: str | os.PathLike[str] | None = None,
    *,
    run_name: str | None = None,
    question_id: str = "question_id",
    retrieved: str = "retrieved",
    scores: str | None = "retrieved_scores",
    gold: str = "gold",
) -> None:
    """Write the ranked lists as a TREC run file and/or the gold as a qrels file.

    Run scores come from ``scores`` when that column exists, otherwise they are ``n - rank + 1``
    so that trec_eval reproduces the list order exactly. List gold is written with grade 1.

    Examples
    --------
    >>> import pandas as pd, tempfile, os
    >>> rows = pd.DataFrame({"question_id": ["q1"], "retrieved": [["d3", "d1"]], "gold": [["d1"]]})
    >>> folder = tempfile.mkdtemp()
    >>> write_trec(rows, run=os.path.join(folder, "run.txt"), run_name="bm25")
    >>> open(os.path.join(folder, "run.txt")).read().splitlines()
    ['q1 Q0 d3 1 2.0 bm25', 'q1 Q0 d1 2 1.0 bm25']
    """
    from raglab._rowtable import resolve_column

    if run is None and qrels is None:
        raise TypeError("write_trec needs run=..., qrels=... or both")
    method = "rag.write_trec"
    qid_col = resolve_column(df, "question_id", question_id, method=method)
    if run is not None:
        ret_col = resolve_column(df, "retrieved", retrieved, method=method)
        score_col = scores if scores is not None and scores in df.columns else None
        name = run_name or (get_meta(df).get("run") or {}).get("name") or "raglab"
        _write_lines(run, _run_lines(df, qid_col, ret_col, score_col, name))
    if qrels is not None:
        gold_col = resolve_column(df, "gold", gold, method=method)
        _write_lines(qrels, _qrels_lines(df, qid_col, gold_col))


def _run_lines(df: pd.DataFrame, qid_col: str, ret_col: str, score_col: str | None, name: str) -> Iterable[str]:
    scores_iter = df[score_col].array if score_col else [None] * len(df)
    for qid, ids, scores in zip(df[qid_col].array, df[ret_col].array, scores_iter):
        ids = [] if is_missing(ids) else list(ids)
        values = list(scores) if scores is not None and not is_missing(scores) else None
        if values is not None and len(values) != len(ids):
            raise RowTableError(f"rag.write_trec: question {qid!r} has {len(ids)} ids but {len(values)} scores")
        for rank, doc in enumerate(ids, start=1):
            score = values[rank - 1] if values is not None else float(len(ids) - rank + 1)
            yield f"{qid} Q0 {doc} {rank} {score!r} {name}\n"


def _qrels_lines(df: pd.DataFrame, qid_col: str, gold_col: str) -> Iterable[str]:
    for qid, gold in zip(df[qid_col].array, df[gold_col].array):
        if is_missing(gold):
            continue
        items = gold.items() if isinstance(gold, Mapping) else ((g, 1) for g in gold)
        for doc, grade in items:
            yield f"{qid} 0 {doc} {int(grade)}\n"


def _write_lines(path: str | os.PathLike[str], lines: Iterable[str]) -> None:
    def write(tmp: Path) -> None:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.writelines(lines)

    _write_atomically(Path(path), write)
