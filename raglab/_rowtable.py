"""The row table: column roles, resolution of user overrides, validation and pairing of runs.

A row table has one row per question per run. Each *role* (question id, ranked retrieved ids, gold,
...) has a default column name. Another column plays a role when it is named once, in one of three
places, the later winning: on the table (``rows = rows.rag.with_roles(retrieved="reranked_ids")``,
kept in ``attrs["raglab"]["roles"]``), as a :class:`Roles` object (``roles=Roles(...)``), or as a
keyword of one call (``rows.rag.retrieval(retrieved="reranked_ids")``). This module is the one place
that knows the roles, checks cells and words the errors, so every method reports problems the same way.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from itertools import chain, compress, repeat
from numbers import Integral, Real
from operator import is_, itemgetter, methodcaller
from typing import Any

import numpy as np
import pandas as pd

from raglab._errors import (
    ConventionMismatchWarning,
    EvalSetMismatchError,
    JudgeMismatchWarning,
    MissingColumnError,
    RowTableError,
)
from raglab._meta import (
    ATTRS_KEY,
    EvalSetStamp,
    JudgeFingerprint,
    RetrievalConventions,
    record_of,
    update_meta,
)
from raglab._validation import (
    check_option,
    is_id_type,
    is_missing,
    unanswerable,
    warn,
)

__all__ = [
    "ROLES",
    "Roles",
    "with_roles",
    "resolve_column",
    "validate_rows",
    "pair_runs",
    "PairedRuns",
    "is_missing",
    "is_unanswerable",
]


@dataclass(frozen=True)
class Role:
    name: str
    kind: str  # id | text | id_list | gold | span_list | text_or_list
    meaning: str


ROLES: dict[str, Role] = {
    r.name: r
    for r in (
        Role("question_id", "id", "join key, unique within a run"),
        Role("question", "text", "the question text"),
        Role("retrieved", "id_list", "ranked ids of the chunks that reached the model"),
        Role("gold", "gold", "gold ids (list) or graded relevance (dict id -> grade); empty = unanswerable"),
        Role("gold_spans", "gold_span_list", "gold character spans: list of {doc_id, start, end}"),
        Role("retrieved_spans", "span_list", "character span of each retrieved chunk, same order as retrieved"),
        Role("context", "text_or_list", "the context passed to the model (str or list of passages)"),
        Role("answer", "text", "the system's answer"),
        Role("reference", "text", "a reference answer"),
    )
}



@dataclass(frozen=True)
class Roles:
    """The column that plays each role of a row table; None (the default) means the role's own name.

    Set once on a table with :func:`with_roles` (``rows.rag.with_roles(...)``), or pass as ``roles=``
    to one call; keyword overrides of one call (``retrieved="reranked_ids"``) win over both.

    Examples
    --------
    >>> roles = Roles(retrieved="reranked_ids")
    >>> roles.column("retrieved"), roles.column("gold")
    ('reranked_ids', 'gold')
    >>> roles.merged({"gold": "qrels"}).named()
    {'retrieved': 'reranked_ids', 'gold': 'qrels'}
    """

    question_id: str | None = None
    question: str | None = None
    retrieved: str | None = None
    gold: str | None = None
    gold_spans: str | None = None
    retrieved_spans: str | None = None
    context: str | None = None
    answer: str | None = None
    reference: str | None = None

    def __post_init__(self) -> None:
        for role, column in self.named().items():
            if not isinstance(column, str):
                raise TypeError(f"the {role!r} role must name a column (a str), got {column!r}")

    def column(self, role: str) -> str:
        """The column name that plays ``role`` (the role's own name unless another was named)."""
        return getattr(self, role) or role

    def named(self) -> dict[str, str]:
        """The roles given another column than their default, ``{role: column}``."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}

    def merged(self, columns: Roles | Mapping[str, str | None] | None, *, caller: str = "Roles") -> Roles:
        """These roles with ``columns`` laid over them (None values and None keep what is here)."""
        if columns is None:
            return self
        if isinstance(columns, Roles):
            columns = columns.named()
        elif not isinstance(columns, Mapping):
            raise TypeError(f"{caller}: `roles` must be a raglab Roles or a dict role -> column, got {columns!r}")
        unknown = [name for name in columns if name not in ROLES]
        if unknown:
            raise TypeError(
                f"{caller} got an unexpected keyword argument {unknown[0]!r}; the column roles are {list(ROLES)}"
            )
        return replace(self, **{role: column for role, column in columns.items() if column is not None})

    @classmethod
    def of(cls, df: pd.DataFrame) -> Roles:
        """The roles set on ``df`` by :func:`with_roles` (``attrs["raglab"]["roles"]``); defaults otherwise."""
        meta = df.attrs.get(ATTRS_KEY) if isinstance(df, pd.DataFrame) else None  # read, not copied
        recorded = meta.get("roles") if isinstance(meta, Mapping) else None
        if not isinstance(recorded, Mapping):
            return cls()
        return cls().merged({k: v for k, v in recorded.items() if k in ROLES}, caller="attrs['raglab']['roles']")


if tuple(f.name for f in fields(Roles)) != tuple(ROLES):  # pragma: no cover - one list of roles
    raise AssertionError("Roles and ROLES must name the same roles in the same order")


def table_roles(
    df: pd.DataFrame, roles: Roles | Mapping[str, str | None] | None, columns: Mapping[str, Any], *, caller: str
) -> Roles:
    """The roles one call uses: the table's (:func:`with_roles`), then ``roles=``, then keyword overrides."""
    return Roles.of(df).merged(roles, caller=caller).merged(columns, caller=caller)


def split_options(
    options: Mapping[str, Any], settings: Sequence[str], *, caller: str, roles: bool = True
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split a call's ``**options`` into column roles and the named ``settings`` (e.g. resampling ones).

    Any other keyword (a role too, with ``roles=False``: the call reads no role) is a TypeError
    naming it and the keywords the call takes.

    Examples
    --------
    >>> split_options({"retrieved": "r", "ci": 0.9}, ["ci", "seed"], caller="rag.summary")
    ({'retrieved': 'r'}, {'ci': 0.9})
    """
    columns = {k: v for k, v in options.items() if k in ROLES} if roles else {}
    chosen = {k: v for k, v in options.items() if k in settings}
    unknown = [k for k in options if k not in columns and k not in chosen]
    if unknown:
        takes = [f"the column roles {list(ROLES)}"] if roles else []
        takes += [f"the settings {list(settings)}"] if settings else []
        raise TypeError(
            f"{caller} got an unexpected keyword argument {unknown[0]!r}; it takes {' and '.join(takes)} as keywords"
        )
    return columns, chosen


def with_roles(rows: pd.DataFrame, roles: Roles | Mapping[str, str | None] | None = None, **columns: str) -> pd.DataFrame:
    """A shallow copy of ``rows`` that remembers which column plays each role, for every later call.

    The roles are kept in ``attrs["raglab"]["roles"]`` (so they travel with the copies pandas makes
    and with files written by :func:`raglab.io.write_rows`); a keyword of one call still wins.

    Parameters
    ----------
    rows : DataFrame
        The row table.
    roles : Roles or dict, optional
        Roles to set, as an object.
    **columns : str
        Roles to set as keywords, e.g. ``retrieved="reranked_ids"`` (the roles are the fields of
        :class:`raglab.Roles`; an unknown keyword is a TypeError naming the roles).

    Returns
    -------
    DataFrame
        A shallow copy of the rows (the input is not modified), with the roles merged into those
        already set.

    Examples
    --------
    >>> import pandas as pd, raglab
    >>> rows = pd.DataFrame({"question_id": ["q1"], "reranked_ids": [["d1", "d2"]], "gold": [["d2"]]})
    >>> rows = rows.rag.with_roles(retrieved="reranked_ids")
    >>> rows.rag.meta["roles"]
    {'retrieved': 'reranked_ids'}
    >>> float(rows.rag.retrieval(k=2)["recall@2"].iloc[0])
    1.0
    """
    from raglab._validation import caller

    name = caller("raglab.with_roles")
    if not isinstance(rows, pd.DataFrame):
        raise TypeError(f"{name} needs a pandas DataFrame, got {type(rows).__name__}")
    chosen = Roles.of(rows).merged(roles, caller=name).merged(columns, caller=name)
    out = rows.copy(deep=False)
    update_meta(out, "roles", chosen.named())
    return out


SPAN_KEYS = ("doc_id", "start", "end")
_SHOWN = 5  # offending rows listed in an error message


# --------------------------------------------------------------------------------------------------
# Cells
# --------------------------------------------------------------------------------------------------


def _is_id(value: Any) -> bool:
    return isinstance(value, (str, Integral)) and not isinstance(value, bool)


_LIST_LIKE = (list, tuple, np.ndarray)  # what a list cell may be


def _is_list_like(value: Any) -> bool:
    return isinstance(value, _LIST_LIKE)


def is_unanswerable(gold: Any) -> bool:
    """A question is unanswerable when its gold is missing, empty, or has no grade above 0.

    The rule is ``raglab._validation.unanswerable`` (for many questions at once, from their counts of
    relevant units); this applies it to one gold cell.

    Examples
    --------
    >>> is_unanswerable(None), is_unanswerable([]), is_unanswerable({"d1": 0}), is_unanswerable(["d1"])
    (True, True, True, False)
    """
    if is_missing(gold):
        return True
    if isinstance(gold, Mapping):
        n_relevant = sum(_grade_value(g) > 0 for g in gold.values())
    elif _is_list_like(gold):
        n_relevant = len(gold)  # a list of ids: each has grade 1
    else:
        return False
    return bool(unanswerable(n_relevant))


def _grade_value(grade: Any) -> float:
    if not isinstance(grade, Real) or isinstance(grade, bool):
        return float("nan")
    try:
        return float(grade)
    except OverflowError:  # an int beyond float range (10**400): infinite, so refused as not finite
        return math.inf if grade > 0 else -math.inf


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _check_id(value: Any) -> str | None:
    if is_missing(value):
        return "a missing value"
    if not _is_id(value):
        return f"{type(value).__name__} {_describe(value)}"
    return None


def _check_text(value: Any) -> str | None:
    if is_missing(value) or isinstance(value, str):
        return None
    return f"{type(value).__name__} {_describe(value)}"


def _check_text_or_list(value: Any) -> str | None:
    if is_missing(value) or isinstance(value, str):
        return None
    if _is_list_like(value) and all(isinstance(v, str) for v in value):
        return None
    return f"{type(value).__name__} {_describe(value)}"


def _check_id_list(value: Any) -> str | None:
    if is_missing(value):
        return "NaN/None (use [] when nothing was retrieved)"
    if isinstance(value, str):
        return f"a string {_describe(value)}{_json_hint(value)}"
    if not _is_list_like(value):
        return f"{type(value).__name__} {_describe(value)}{_cell_hint(value)}"
    for item in value:
        if not _is_id(item):
            return f"a list containing {type(item).__name__} {_describe(item)}{_cell_hint(item)}"
    return None


def _cell_hint(value: Any) -> str:
    """The usual fix for a cell type that is close to what was meant (a set, bytes)."""
    if isinstance(value, (set, frozenset)):
        return " (a set has no order: give the ranked list, or list(cell) for gold)"
    if isinstance(value, (bytes, bytearray)):
        return " (bytes: decode ids to text, e.g. cell.decode('utf-8'))"
    return ""


def _check_gold(value: Any) -> str | None:
    if is_missing(value):
        return None  # missing gold = unanswerable
    if isinstance(value, Mapping):
        for key, grade in value.items():
            if not _is_id(key):
                return f"a dict with key {_describe(key)} (ids must be str or int)"
            number = _grade_value(grade)
            if math.isnan(number):
                return f"a dict with grade {_describe(grade)} for {key!r} (grades must be numbers)"
            if not math.isfinite(number):
                return f"a dict with grade {_describe(grade)} for {key!r} (grades must be finite numbers)"
        return None
    if isinstance(value, str):
        return f"a string {_describe(value)}{_json_hint(value)}"
    if _is_list_like(value):
        for item in value:
            if not _is_id(item):
                return f"a list containing {type(item).__name__} {_describe(item)}{_cell_hint(item)}"
        return None
    return f"{type(value).__name__} {_describe(value)}{_cell_hint(value)}"


def _json_hint(value: Any) -> str:
    """A pointer to raglab.read_rows for a str cell that looks like JSON (a file read by plain pandas)."""
    if isinstance(value, str) and value.lstrip()[:1] in ("[", "{"):
        return " (JSON text? read files with raglab.read_rows, which decodes it)"
    return ""


def _check_span_list(value: Any) -> str | None:
    if is_missing(value):
        return None
    if not _is_list_like(value):
        if isinstance(value, str):
            return f"a string {_describe(value)}{_json_hint(value)}"
        return f"{type(value).__name__} {_describe(value)}"
    for span in value:
        if not isinstance(span, Mapping) or any(key not in span for key in SPAN_KEYS):
            return f"a span {_describe(span)} (each span is a dict with doc_id, start, end)"
        start, end = span["start"], span["end"]
        if not all(isinstance(x, Integral) and not isinstance(x, bool) for x in (start, end)):
            return f"a span with non-integer offsets {_describe(span)}"
        if start < 0 or start > end:
            return f"a span with start > end or start < 0: {_describe(span)}"
        if not _is_id(span["doc_id"]):
            return f"a span with doc_id {_describe(span['doc_id'])}"
    return None


def _check_gold_span_list(value: Any) -> str | None:
    problem = _check_span_list(value)
    if problem is None and not is_missing(value):
        for span in value:
            if span["start"] == span["end"]:
                return f"an empty span (start == end), which no chunk can ever cover: {_describe(span)}"
    return problem


_CHECKS: dict[str, Callable[[Any], str | None]] = {
    "id": _check_id,
    "text": _check_text,
    "text_or_list": _check_text_or_list,
    "id_list": _check_id_list,
    "gold": _check_gold,
    "span_list": _check_span_list,
    "gold_span_list": _check_gold_span_list,
}

_EXPECTED: dict[str, str] = {
    "id": "a str or int id in every row",
    "text": "a str (or None) per row",
    "text_or_list": "a str or a list of str per row",
    "id_list": "a list of str/int ids per row ([] when nothing was retrieved)",
    "gold": "a list of ids or a dict id -> grade per row (empty or missing = unanswerable)",
    "span_list": "a list of {doc_id, start, end} dicts with 0 <= start <= end per row",
    "gold_span_list": "a list of {doc_id, start, end} dicts with 0 <= start < end per row",
}


# --------------------------------------------------------------------------------------------------
# Columns
# --------------------------------------------------------------------------------------------------


def resolve_column(
    df: pd.DataFrame,
    role: str,
    override: str | None = None,
    *,
    caller: str,
    required: bool = True,
) -> str | None:
    """Return the column that plays ``role`` in ``df`` (the override or the default name).

    Raises :class:`MissingColumnError` naming the caller, the columns found and the keyword to pass
    when the column is required and absent; returns None when optional and absent.
    """
    name = override if override is not None else role
    if name in df.columns:
        return name
    if not required:
        if override is not None:  # an explicit override that is wrong is always an error
            raise missing_column_error(df, name, role=role, caller=caller)
        return None
    raise missing_column_error(df, name, role=role, caller=caller)


def missing_column_error(
    df: pd.DataFrame, name: str, *, role: str | None, caller: str, keyword: str | None = None
) -> MissingColumnError:
    """The error for an absent column: what was needed, what is there, and the keyword that fixes it."""
    found = [str(c) for c in df.columns]
    meaning = f" ({ROLES[role].meaning})" if role in ROLES else ""
    keyword = keyword or (role if role in ROLES else None)
    fix = f"Pass {keyword}='your_column' to use another name." if keyword else "Check the column name."
    if role in ROLES and Roles.of(df).named().get(role) == name:  # the name came from the table, not this call
        fix = (f"The table's roles name it (set by with_roles({role}={name!r})); pass {keyword}='your_column' "
               "to use another name.")
    return MissingColumnError(f"{caller} needs column {name!r}{meaning}; found {found}. {fix}")


def id_repr(value: Any) -> str:
    """A question id as the user wrote it in an error message: 'q7' or 7, not np.str_('q7') or np.int64(7)."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def row_label(df: pd.DataFrame, pos: int, qid: str | None) -> str:
    """One row named in an error message: ``question_id 'q7'`` (its id as written), or ``row 7`` without ids."""
    return f"{qid} {id_repr(df[qid].iloc[pos])}" if qid is not None else f"row {pos}"


def _row_labels(df: pd.DataFrame, positions: Sequence[int], id_column: str | None) -> str:
    shown = list(positions[:_SHOWN])
    labels = [str(df.index[p]) for p in shown]
    text = f"row{'s' if len(positions) > 1 else ''} {', '.join(labels)}"
    if id_column is not None and id_column in df.columns:
        ids = ", ".join(id_repr(df[id_column].iloc[p]) for p in shown)
        text += f" ({id_column} {ids})"
    if len(positions) > _SHOWN:
        text += f" and {len(positions) - _SHOWN} more"
    return text


def _ids_are_clean(series: pd.Series) -> bool:
    """Fast path: every cell a str (or every cell an int) and none missing, judged in C by pandas."""
    if series.isna().any():
        return False
    if pd.api.types.is_integer_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype):
        return True
    if pd.api.types.is_string_dtype(series.dtype):
        return pd.api.types.infer_dtype(series, skipna=False) in ("string", "integer")
    return False


# --------------------------------------------------------------------------------------------------
# Fast paths: decide "every cell is fine" without a Python call per cell
# --------------------------------------------------------------------------------------------------
#
# Each fast path answers True only when the per-cell checker in _CHECKS would accept every cell; any
# doubt (an unusual type, a bad value, an exception) answers False, and check_column then runs the
# per-cell checker, which alone decides and words the error. So the fast paths change speed, never
# the outcome. They look at the distinct *types* of the cells and of their items (map(type, ...)
# and set() run in C), so the Python-level work is per distinct type, not per row.

_DICT_VALUES = methodcaller("values")


def _all_types(values: Iterable[Any], accept: Callable[[type], bool]) -> bool:
    """True when ``accept`` holds for the type of every value (checked once per distinct type)."""
    return all(map(accept, set(map(type, values))))


def _is_str_type(kind: type) -> bool:
    return issubclass(kind, str)


def _is_list_type(kind: type) -> bool:
    return issubclass(kind, _LIST_LIKE)


def _is_offset_type(kind: type) -> bool:
    return issubclass(kind, Integral) and not issubclass(kind, bool)


def _present(cells: np.ndarray) -> np.ndarray:
    """The cells that are not missing. pd.isna is True only where is_missing is, so this drops no bad cell."""
    return cells[~pd.isna(cells)]


def _items(cells: np.ndarray) -> Iterable[Any]:
    """The items of list-like cells (or the keys of dicts), chained in C as ``for item in cell`` sees them."""
    return chain.from_iterable(cells)


def _ids_ok(items: Iterable[Any]) -> bool:
    return _all_types(items, is_id_type)


def _texts_ok(cells: np.ndarray) -> bool:
    return _all_types(_present(cells), _is_str_type)


def _texts_or_lists_ok(cells: np.ndarray) -> bool:
    present = _present(cells)
    is_str = np.fromiter(map(isinstance, present, repeat(str)), dtype=bool, count=len(present))
    lists = present[~is_str]
    return _all_types(lists, _is_list_type) and _all_types(_items(lists), _is_str_type)


def _id_lists_ok(cells: np.ndarray) -> bool:
    # Missing cells are errors here ("use []"), so no cell is dropped before the type check.
    return _all_types(cells, _is_list_type) and _ids_ok(_items(cells))


def _golds_ok(cells: np.ndarray) -> bool:
    present = _present(cells)
    is_dict = np.fromiter(map(is_, map(type, present), repeat(dict)), dtype=bool, count=len(present))
    lists, dicts = present[~is_dict], present[is_dict]
    if not (_all_types(lists, _is_list_type) and _ids_ok(_items(lists)) and _ids_ok(_items(dicts))):
        return False
    grades = list(chain.from_iterable(map(_DICT_VALUES, dicts)))
    if not _all_types(grades, lambda kind: issubclass(kind, Real) and not issubclass(kind, bool)):
        return False
    # float() per grade, as _grade_value does; it raises (-> per-cell path) where that would.
    return bool(np.isfinite(np.fromiter(map(float, grades), dtype=np.float64, count=len(grades))).all())


def _span_lists_ok(cells: np.ndarray, *, empty_ok: bool) -> bool:
    present = _present(cells)
    if not _all_types(present, _is_list_type):
        return False
    spans = list(_items(present))
    # Plain dicts only: for them itemgetter raising KeyError is exactly "a key is missing".
    if not _all_types(spans, lambda kind: kind is dict):
        return False
    # One pass per key (not zip(*records), which is slow on millions of spans); KeyError -> per-cell path.
    docs, starts, ends = (list(map(itemgetter(key), spans)) for key in SPAN_KEYS)
    if not (_all_types(starts, _is_offset_type) and _all_types(ends, _is_offset_type) and _ids_ok(docs)):
        return False
    # Python ints beyond int64 raise (-> per-cell path); a wrapped uint64 turns negative and is refused.
    start = np.fromiter(starts, dtype=np.int64, count=len(starts))
    end = np.fromiter(ends, dtype=np.int64, count=len(ends))
    bad = (start < 0) | (start > end) if empty_ok else (start < 0) | (start >= end)
    return not bad.any()


_FAST_OBJECT_CHECKS: dict[str, Callable[[np.ndarray], bool]] = {
    "text": _texts_ok,
    "text_or_list": _texts_or_lists_ok,
    "id_list": _id_lists_ok,
    "gold": _golds_ok,
    "span_list": lambda cells: _span_lists_ok(cells, empty_ok=True),
    "gold_span_list": lambda cells: _span_lists_ok(cells, empty_ok=False),
}
_MISSING_OK = {"text", "text_or_list", "gold", "span_list", "gold_span_list"}


def _arrow_column_is_clean(series: pd.Series, kind: str) -> bool:
    """Arrow-backed columns (``read_rows(lists="arrow")``): decided from the Arrow type and null counts."""
    import pyarrow as pa  # pandas' ArrowDtype already imported it
    import pyarrow.compute as pc

    arrow_type = series.dtype.pyarrow_dtype
    is_text = pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)
    if kind in ("text", "text_or_list"):
        return is_text  # str or missing in every cell
    if kind != "id_list" or not (pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type)):
        return False
    item = arrow_type.value_type
    if not (pa.types.is_string(item) or pa.types.is_large_string(item) or pa.types.is_integer(item)):
        return False
    # A missing list ("use []") or a missing id inside a list is refused: the per-cell path words it.
    cells = series.array.__arrow_array__()
    return cells.null_count == 0 and pc.list_flatten(cells).null_count == 0


def _column_is_clean(series: pd.Series, kind: str) -> bool:
    """True when every cell of ``series`` passes the ``kind`` check, decided without a per-row Python loop."""
    if kind == "id":
        return _ids_are_clean(series)
    if not isinstance(series, pd.Series):  # duplicated column name: keep the per-cell path's error
        return False
    dtype = series.dtype
    if isinstance(dtype, pd.ArrowDtype):
        try:
            return _arrow_column_is_clean(series, kind)
        except Exception:  # any surprise: let the per-cell checker decide and word it
            return False
    if isinstance(dtype, pd.StringDtype):  # only str and NA can be stored
        return kind in ("text", "text_or_list")
    if dtype.kind == "f":  # a column of only NaN (e.g. an empty answer column read from a file)
        return kind in _MISSING_OK and bool(series.isna().all())
    if not (isinstance(dtype, np.dtype) and dtype.kind == "O") or kind not in _FAST_OBJECT_CHECKS:
        return False
    try:
        return _FAST_OBJECT_CHECKS[kind](series.to_numpy(dtype=object, copy=False))
    except Exception:  # any surprise: let the per-cell checker decide and word it
        return False


def check_column(
    df: pd.DataFrame,
    column: str,
    kind: str,
    *,
    caller: str,
    id_column: str | None = "question_id",
) -> None:
    """Check every cell of ``column`` against the cell kind ``kind``; raise :class:`RowTableError`."""
    if _column_is_clean(df[column], kind):
        return
    # Something is off (or unusual): the per-cell checker decides, and finds and words the bad rows.
    check = _CHECKS[kind]
    problems = [(pos, msg) for pos, msg in enumerate(map(check, df[column].array)) if msg is not None]
    if problems:
        positions = [pos for pos, _ in problems]
        raise RowTableError(
            f"{caller}: column {column!r} must hold {_EXPECTED[kind]}; "
            f"{_row_labels(df, positions, id_column)} hold{'s' if len(positions) == 1 else ''} "
            f"{problems[0][1]}."
        )


def check_unique_ids(df: pd.DataFrame, column: str, *, caller: str) -> None:
    """Raise when ``column`` has duplicates, listing the duplicated ids and their rows."""
    duplicated = df[column].duplicated(keep=False).to_numpy()
    if duplicated.any():
        positions = np.flatnonzero(duplicated).tolist()
        ids = pd.unique(df[column].iloc[positions])[:_SHOWN]
        raise RowTableError(
            f"{caller}: column {column!r} must be unique within a run (one row per question); "
            f"{len(pd.unique(df[column].iloc[positions]))} ids repeat, e.g. {[str(i) for i in ids]} "
            f"at {_row_labels(df, positions, None)}. Drop or aggregate the repeated rows "
            f"(e.g. df.drop_duplicates({column!r}))."
        )


def check_unique_as_text(df: pd.DataFrame, column: str, *, caller: str) -> None:
    """Raise when two ids of ``column`` are the same text (``7`` and ``"7"``): ids are stored,
    compared and paired as text, so they would stand for one question."""
    as_text = df[column].astype(str)
    repeated = as_text.duplicated(keep=False).to_numpy()
    if repeated.any():
        clashes = sorted(set(as_text[repeated]))[:_SHOWN]
        values = df[column][repeated].tolist()[:2 * _SHOWN]
        raise RowTableError(
            f"{caller}: column {column!r} must be unique as text (question ids are stored, compared and paired "
            f"as text), and {clashes} stand for more than one id ({values}); use one type for ids "
            f"(e.g. df[{column!r}].astype(str)) and drop the repeats.",
            column=column, rows=np.flatnonzero(repeated)[:_SHOWN].tolist(), method=caller,
        )


def validate_rows(
    df: pd.DataFrame,
    *,
    caller: str = "rag.validate",
    require: Iterable[str] = ("question_id",),
    columns: Mapping[str, str | None] | None = None,
) -> dict[str, str]:
    """Validate the row table and return the resolved ``{role: column}`` for the roles present.

    ``require`` lists the roles that must be present; other known roles are checked when present.
    ``columns`` maps roles to user column names (None keeps the default).
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"{caller} needs a pandas DataFrame, got {type(df).__name__}")
    overrides = dict(columns or {})
    unknown = set(overrides) - set(ROLES)
    if unknown:
        raise TypeError(f"{caller}: unknown column role(s) {sorted(unknown)}; roles are {list(ROLES)}")
    required = {require} if isinstance(require, str) else set(require)
    unknown = required - set(ROLES)
    if unknown:
        raise ValueError(
            f"{caller}: `require` names unknown role(s) {sorted(unknown)}; roles are {list(ROLES)} "
            "(to use another column name for a role, pass e.g. retrieved='my_column')"
        )
    resolved: dict[str, str] = {}
    for role in ROLES:
        column = resolve_column(df, role, overrides.get(role), caller=caller, required=role in required)
        if column is not None:
            resolved[role] = column
    id_column = resolved.get("question_id")
    if id_column is not None:
        check_column(df, id_column, "id", caller=caller, id_column=None)
        check_unique_ids(df, id_column, caller=caller)
    for role, column in resolved.items():
        if role != "question_id":
            check_column(df, column, ROLES[role].kind, caller=caller, id_column=id_column)
    if "retrieved" in resolved and "retrieved_spans" in resolved:
        _check_same_lengths(df, resolved["retrieved"], resolved["retrieved_spans"], caller, id_column)
    return resolved


def span_list_lengths(cells: Any) -> np.ndarray:
    """The length of each list-like cell, -1 for any other cell (a missing span list); len() mapped in C."""
    if not isinstance(cells, np.ndarray):  # np.asarray would make equal-length lists a 2-D array
        cells = pd.Series(list(cells), dtype=object).to_numpy()
    is_list = np.fromiter(map(isinstance, cells, repeat(_LIST_LIKE)), dtype=bool, count=len(cells))
    lengths = np.full(len(cells), -1, dtype=np.int64)
    lengths[is_list] = np.fromiter(map(len, compress(cells, is_list)), dtype=np.int64, count=int(is_list.sum()))
    return lengths


def _check_same_lengths(df: pd.DataFrame, ids: str, spans: str, caller: str, id_column: str | None) -> None:
    # Both columns passed check_column: ids are all list-like, and a span cell is missing exactly when
    # it is not list-like.
    id_lengths = np.fromiter(map(len, df[ids].array), dtype=np.int64, count=len(df))
    span_lengths = span_list_lengths(df[spans].to_numpy(dtype=object))
    bad = np.flatnonzero((span_lengths >= 0) & (span_lengths != id_lengths)).tolist()
    if bad:
        raise RowTableError(
            f"{caller}: column {spans!r} must give one span per entry of {ids!r} (same order); "
            f"{_row_labels(df, bad, id_column)} differ in length."
        )


# --------------------------------------------------------------------------------------------------
# Pairing two runs by question id
# --------------------------------------------------------------------------------------------------


@dataclass
class PairedRuns:
    """Two runs aligned row by row on the question id (same order, index reset)."""

    base: pd.DataFrame
    cand: pd.DataFrame
    on: str
    base_only: list[Any] = field(default_factory=list)
    cand_only: list[Any] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.base)


def pair_runs(
    base: pd.DataFrame,
    cand: pd.DataFrame,
    *,
    on: str = "question_id",
    how: str = "exact",
    caller: str = "rag.compare",
    allow_evalset_mismatch: bool = False,
) -> PairedRuns:
    """Align two runs by question id for a paired comparison.

    ``how="exact"`` (default) requires the same question set on both sides and raises otherwise,
    listing the ids missing on each side; ``how="inner"`` keeps the shared questions and warns with
    the counts. Runs stamped with different eval-set hashes are refused unless
    ``allow_evalset_mismatch=True``; different judge fingerprints or metric conventions warn.
    """
    check_option("how", how, ["exact", "inner"])
    for side, frame in (("base", base), ("cand", cand)):
        if not isinstance(frame, pd.DataFrame):
            raise TypeError(f"{caller}: {side} must be a DataFrame, got {type(frame).__name__}")
        if on not in frame.columns:
            raise missing_column_error(frame, on, role="question_id" if on == "question_id" else None, caller=caller)
        check_column(frame, on, "id", caller=f"{caller} ({side})", id_column=None)
        check_unique_ids(frame, on, caller=f"{caller} ({side})")
        check_unique_as_text(frame, on, caller=f"{caller} ({side})")

    _check_evalsets(base, cand, caller=caller, allow=allow_evalset_mismatch)
    _warn_on_judge_or_convention_change(base, cand, caller=caller)

    # Ids are compared as text, so 7 and "7" pair; hashing through pd.Index keeps this vectorised.
    base_ids = pd.Index(base[on].astype(str).to_numpy(dtype=object))
    cand_ids = pd.Index(cand[on].astype(str).to_numpy(dtype=object))
    order = cand_ids.get_indexer(base_ids)
    in_base = base_ids.get_indexer(cand_ids) >= 0
    base_only = base[on][order < 0].tolist()
    cand_only = cand[on][~in_base].tolist()
    if base_only or cand_only:
        summary = (
            f"{len(base_only)} question(s) only in base (e.g. {[str(i) for i in base_only[:_SHOWN]]}), "
            f"{len(cand_only)} only in candidate (e.g. {[str(i) for i in cand_only[:_SHOWN]]})"
        )
        if how == "exact":
            raise RowTableError(
                f"{caller}: the runs must answer the same questions to be paired by {on!r}; {summary}. "
                f"Pass how='inner' to compare the {int((order >= 0).sum())} shared questions."
            )
        if not (order >= 0).any():
            raise RowTableError(f"{caller}: the runs share no question ids ({summary}); check the `on` column.")
        warn(f"{caller}: comparing shared questions only; {summary}.", UserWarning)

    keep = order >= 0
    paired_base = base.iloc[np.flatnonzero(keep)].reset_index(drop=True)
    paired_cand = cand.iloc[order[keep]].reset_index(drop=True)
    return PairedRuns(paired_base, paired_cand, on, base_only, cand_only)


def _check_evalsets(base: pd.DataFrame, cand: pd.DataFrame, *, caller: str, allow: bool) -> None:
    a, b = record_of(base, EvalSetStamp), record_of(cand, EvalSetStamp)
    if a and b and a.differences(b):  # only the content hash decides (EvalSetStamp.NEUTRAL)
        message = (
            f"{caller}: the runs were scored against different eval sets: base "
            f"{a.name!r} version {a.version!r} (hash {str(a.hash)[:12]}), candidate "
            f"{b.name!r} version {b.version!r} (hash {str(b.hash)[:12]}). "
            "Re-score both on one version, or pass allow_evalset_mismatch=True to compare anyway."
        )
        if not allow:
            raise EvalSetMismatchError(message)
        warn(message, UserWarning)


def _warn_on_judge_or_convention_change(base: pd.DataFrame, cand: pd.DataFrame, *, caller: str) -> None:
    a, b = record_of(base, JudgeFingerprint), record_of(cand, JudgeFingerprint)
    differences = a.differences(b) if a and b else []
    if any(d.field == "fingerprint" for d in differences):  # an IDENTITY field: one side only differs too
        changed = [d.field for d in differences if d.field != "fingerprint"]
        warn(
            f"{caller}: THE RUNS WERE SCORED BY DIFFERENT JUDGES (fingerprint {str(a.fingerprint)[:12]} vs "
            f"{str(b.fingerprint)[:12]}; differs in {changed or 'fingerprint'}). A judge change shifts "
            "scores by itself: re-score the baseline with the candidate's judge before comparing.",
            JudgeMismatchWarning,
        )
    changed = retrieval_convention_changes(base, cand)
    if changed:
        warn(
            f"{caller}: the runs were scored under different retrieval conventions ({'; '.join(changed)}): their "
            "retrieval metrics do not mean the same thing, so differences between them are not changes of the system. "
            "Re-score both runs under one convention (rows.rag.retrieval(...) on each) before comparing.",
            ConventionMismatchWarning,
        )


def retrieval_convention_changes(base: pd.DataFrame, cand: pd.DataFrame) -> list[str]:
    """The recorded retrieval conventions that differ between two runs, one ``"key: base vs cand"`` each.

    The rule is ``raglab._meta.RetrievalConventions.differences``: which depths were scored (k,
    columns) does not change what recall@5 means; the rest does. A span rule is compared by what
    decides its numbers (rule, min_overlap, unit), not by its descriptions, which may be reworded
    between releases.

    Examples
    --------
    >>> a, b = pd.DataFrame({"x": [1]}), pd.DataFrame({"x": [1]})
    >>> a.attrs["raglab"] = {"retrieval": {"gain": "exponential", "k": [5]}}
    >>> b.attrs["raglab"] = {"retrieval": {"gain": "linear", "k": [1, 5]}}
    >>> retrieval_convention_changes(a, b)
    ["gain: 'exponential' vs 'linear'"]
    """
    a, b = record_of(base, RetrievalConventions), record_of(cand, RetrievalConventions)
    return [str(d) for d in a.differences(b)] if a and b else []
