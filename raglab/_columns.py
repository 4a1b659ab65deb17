"""Which columns of a row table a method reads: score columns, slices, clusters, run records.

Floor 2 (beside ``raglab._rowtable``): the table-level functions in :mod:`raglab.runs` and the
accessor resolve their columns here, so every method picks metrics, slices and clusters the same
way and says so the same way when a column is missing or malformed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from raglab._errors import BadCellError, MissingColumnError, RowTableError
from raglab._meta import evalset_of, get_meta, judge_of
from raglab._registry import is_id_name, metric_info
from raglab._rowtable import ROLES, _row_labels, check_column, id_repr

__all__: list[str] = []


def _missing(df: pd.DataFrame, column: str, caller: str, what: str) -> MissingColumnError:
    return MissingColumnError(
        f"{caller} needs column {column!r} ({what}); found {[str(c) for c in df.columns]}."
    )


def _by_columns(by: str | Sequence[str] | None) -> list[str]:
    if by is None:
        return []
    columns = [by] if isinstance(by, str) else list(by)
    if not all(isinstance(c, str) for c in columns) or not columns:
        raise TypeError(f"`by` must be a column name or a list of column names, got {by!r}")
    return columns


def _is_score_dtype(series: pd.Series, *, by_default: bool = False) -> bool:
    """Can the column be read as per-question scores? With ``by_default=True``: is it a metric *by default*?

    Any boolean or real numeric column can be read as scores when it is named in ``metrics=``
    (True/False become 1/0). Without ``metrics=`` only metric columns are picked, by dtype and
    name (see ``_metric_names``): float columns always, integer columns only under a metric
    name raglab knows (``hit@5`` stored as 0/1 integers, ``em``), booleans never.
    """
    if not by_default:
        return pd.api.types.is_bool_dtype(series) or (
            pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_complex_dtype(series)
        )
    if pd.api.types.is_bool_dtype(series):
        return False  # attribute flags such as `answerable`, `unanswerable`, `declined`
    if pd.api.types.is_float_dtype(series):
        return True
    if pd.api.types.is_integer_dtype(series):
        return metric_info(str(series.name)).known  # counts and codes are not metrics unless registered
    return False


def _metric_names(
    metrics: str | Sequence[str] | None, frames: list[pd.DataFrame], exclude: set[str], caller: str
) -> list[str]:
    """The score columns to summarise or compare: ``metrics`` as given, else the default metric columns.

    Default rule (no ``metrics=``), applied to the columns present in every frame, in the first
    frame's order:

    - float columns are metrics (``recall@5``, ``faithfulness``, ``latency_ms``, ``correct_decline``);
    - integer columns are metrics only when their name is a registered metric
      (``raglab._registry.metric_info`` ``.known``: ``hit@5`` or ``em`` stored as 0/1), so counts
      and codes such as ``n_tokens`` or ``article_index`` are not;
    - boolean columns are never metrics by default (``answerable``, ``unanswerable``, the pooled
      ``declined`` flag); name them in ``metrics=`` to use them;
    - never the row-table roles (``question_id``, ``retrieved``, ...), the ``by``/``units``/id
      columns in ``exclude``, or a column whose name says it is an id
      (``raglab._registry.is_id_name``: ``id``, ``*_id``, ``questionId``, ``qid``, ...).
    """
    if metrics is not None:
        names = [metrics] if isinstance(metrics, str) else list(metrics)
        if not names or not all(isinstance(n, str) for n in names):
            raise TypeError(f"{caller}: `metrics` must be a column name or a non-empty list of names, got {metrics!r}")
        if len(set(names)) != len(names):
            raise ValueError(f"{caller}: `metrics` names a column twice: {names}")
        return names
    names = [
        str(c)
        for c in frames[0].columns
        if c not in exclude
        and c not in ROLES
        and not is_id_name(str(c))
        and all(c in f.columns and _is_score_dtype(f[c], by_default=True) for f in frames)
    ]
    if not names:

        def why(column: Any) -> str:
            if is_id_name(str(column)):
                return "an id"
            if pd.api.types.is_bool_dtype(frames[0][column]):
                return "boolean"
            if pd.api.types.is_integer_dtype(frames[0][column]):
                return "integer, not a known metric name"
            return "not a metric column in every run"

        skipped = [
            f"{c!r} ({why(c)})"
            for c in frames[0].columns
            if c not in exclude and c not in ROLES and _is_score_dtype(frames[0][c])
        ]
        raise RowTableError(
            f"{caller} found no metric columns{' (in both runs)' if len(frames) > 1 else ''} to use by default; "
            f"columns: {[str(c) for c in frames[0].columns]}. By default only float columns, and integer columns "
            "named as a known metric (hit@5, em, ...), are metrics; booleans and ids never are"
            + (f" (skipped: {', '.join(skipped)})" if skipped else "")
            + ". Pass metrics=[...] or compute scores first (e.g. rows.rag.retrieval(k=5))."
        )
    return names


def _score_frame(
    df: pd.DataFrame, names: list[str], caller: str, *, id_column: str | None, side: str | None = None
) -> pd.DataFrame:
    """The score columns as floats (NaN for missing); a clear error for absent or non-numeric ones."""
    where = f" in the {side} run" if side else ""
    out = {}
    for name in names:
        if name not in df.columns:
            raise MissingColumnError(
                f"{caller} needs score column {name!r}{where}; found {[str(c) for c in df.columns]}. "
                "Pass metrics=[...] naming per-question score columns"
                + (" present in both runs." if side else ".")
            )
        column = df[name]
        if _is_score_dtype(column):
            out[name] = column.to_numpy(dtype=float, na_value=np.nan)
            continue
        coerced = pd.to_numeric(column, errors="coerce")
        bad = np.flatnonzero((coerced.isna() & column.notna()).to_numpy())
        if bad.size:
            raise RowTableError(
                f"{caller}: score column {name!r}{where} must hold numbers (NaN or None for missing); "
                f"{_row_labels(df, bad.tolist(), id_column)} hold {column.iloc[bad[0]]!r}. "
                f"Convert it first, e.g. pd.to_numeric(df[{name!r}])."
            )
        out[name] = coerced.to_numpy(dtype=float, na_value=np.nan)
    if side is None and id_column is not None and id_column in df.columns and len(out):
        repeated = df[id_column].astype(str).value_counts()
        repeated = repeated[repeated > 1]
        if len(repeated):  # one row per question: a repeat counts twice in n and narrows the interval
            from raglab._validation import warn

            warn(f"{caller}: question ids in {id_column!r} repeat ({len(repeated)} id(s), e.g. {repeated.index[0]!r} "
                 f"{int(repeated.iloc[0])} times); each row counts as a question, so n and the intervals count them "
                 f"that many times. Drop the repeats (df.drop_duplicates({id_column!r})), or pass units={id_column!r} "
                 "to resample whole questions.")
    for name, values in out.items():  # named here, by column and row: the statistics only see positions
        infinite = np.flatnonzero(np.isinf(values))
        if infinite.size:
            raise RowTableError(
                f"{caller}: score column {name!r}{where} holds infinite values: {_row_labels(df, infinite.tolist(), id_column)} "
                f"hold {float(values[infinite[0]])!r}; scores must be finite (NaN or None for missing)."
            )
    return pd.DataFrame(out)


def _check_labels(df: pd.DataFrame, column: str, caller: str, id_column: str | None) -> pd.Series:
    values = df[column]
    bad = [i for i, v in enumerate(values.array) if isinstance(v, (list, dict, set, np.ndarray))]
    if bad:
        raise RowTableError(
            f"{caller}: column {column!r} must hold one label per row (str, number or missing) to slice or "
            f"cluster by; {_row_labels(df, bad, id_column)} hold a {type(values.iloc[bad[0]]).__name__}."
        )
    return values.reset_index(drop=True)


def _slice_labels(df: pd.DataFrame, by: list[str], caller: str, id_column: str | None = None) -> pd.Series:
    columns = [_check_labels(df, c, caller, id_column) for c in by]
    if len(columns) == 1:
        return columns[0]
    parts = [c.astype(object).where(c.notna(), "(missing)").astype(str) for c in columns]
    labels = [", ".join(f"{col}={value}" for col, value in zip(by, row)) for row in zip(*parts)]
    return pd.Series(labels, dtype=object)


def _resolve_units(df: pd.DataFrame, units: str | bool | None, caller: str) -> str | None:
    """The cluster column to use: the one given, else the eval set's (``units=False``: none).

    Questions nested in documents or conversations are not independent; an eval set frozen with
    ``units=`` records its cluster column so that intervals resample whole clusters by default.
    """
    if units is False:
        return None
    if units is None or units is True:
        recorded = (evalset_of(df) or {}).get("units")
        if units is True and recorded is None:
            raise ValueError(
                f"{caller}: units=True asks for the eval set's cluster column, but this run's eval set records none; "
                "pass units='column'"
            )
        if recorded is not None and recorded not in df.columns:
            raise _missing(df, recorded, caller, "the cluster column recorded by the eval set; pass units=False to ignore it")
        return recorded
    if not isinstance(units, str):
        raise TypeError(f"{caller}: `units` must be a column name, None (the eval set's) or False (none), got {units!r}")
    return units


def _unit_labels(df: pd.DataFrame, units: str, caller: str, id_column: str | None) -> pd.Series:
    if units not in df.columns:
        raise _missing(df, units, caller, "the cluster column given as units=")
    labels = _check_labels(df, units, caller, id_column)
    missing = np.flatnonzero(labels.isna().to_numpy())
    if missing.size:
        raise RowTableError(
            f"{caller}: cluster column {units!r} must name a cluster for every question; "
            f"{_row_labels(df, missing.tolist(), id_column)} are missing one."
        )
    return labels


def _paired_labels(pairs: Any, columns: list[str], on: str, caller: str, *, kind: str) -> pd.Series:
    """Slice or cluster labels of paired runs, from the baseline (the candidate's must agree)."""
    base, cand = pairs.base, pairs.cand
    for column in columns:
        if column not in base.columns and column not in cand.columns:
            raise _missing(base, column, caller, f"the {kind} column, in either run")
        if column in base.columns and column in cand.columns:
            a, b = base[column], cand[column]
            same = (a.astype(object) == b.astype(object)) | (a.isna() & b.isna())
            differ = np.flatnonzero(~same.to_numpy(dtype=bool))
            if differ.size:
                raise RowTableError(
                    f"{caller}: the runs disagree on the {kind} column {column!r} for "
                    f"{len(differ)} question(s), e.g. {on} {[str(base[on].iloc[i]) for i in differ[:5]]} "
                    f"({[a.iloc[i] for i in differ[:5]]} vs {[b.iloc[i] for i in differ[:5]]}). "
                    "Use the eval set's labels in both runs, or drop the column from one of them."
                )
    merged = pd.DataFrame({c: (base[c] if c in base.columns else cand[c]) for c in columns})
    merged[on] = base[on]
    if kind == "cluster":
        return _unit_labels(merged, columns[0], caller, on)
    return _slice_labels(merged, columns, caller, on)


def _run_record(df: pd.DataFrame) -> dict[str, Any]:
    meta = get_meta(df)
    return {
        "rows": len(df),
        "evalset": evalset_of(df),
        "judge": judge_of(df),
        "run": meta.get("run"),
        "retrieval": meta.get("retrieval"),
    }


def guarded(df: pd.DataFrame, compute: Any, columns: dict[str, str], caller: str, qid: str | None) -> Any:
    """Run a bulk computation; on a bad cell, raise the row table's standard error for that column.

    The kernels raise ``raglab._errors.BadCellError`` with the input (``what``) and the row;
    this turns it into the message a row-table user expects: the caller, the column, the row's id.
    """
    try:
        return compute()
    except BadCellError as exc:
        column = columns.get(exc.what)
        if column is not None:
            check_column(df, column, ROLES[exc.what].kind, caller=caller, id_column=qid)
        label = f" ({qid} {id_repr(df[qid].iloc[exc.row])})" if qid is not None and 0 <= exc.row < len(df) else ""
        raise RowTableError(f"{caller}: column {column!r}: {exc}{label}", column=column, rows=[exc.row], method=caller) from None
