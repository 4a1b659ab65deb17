"""``ddf.rag.retrieval``: retrieval metrics per question, computed on each partition where it lies."""

from __future__ import annotations

from typing import Any

import pandas as pd

from raglab.engines._retrieval import score_partition

__all__ = ["retrieval"]

_CALLER = "ddf.rag.retrieval"


def _score_partition(part: pd.DataFrame, options: dict[str, Any], columns: list[str],
                     partition_info: dict[str, Any] | None = None) -> pd.DataFrame:
    """:func:`raglab.retrieval.retrieval` on one partition; an error names the partition."""
    number = (partition_info or {}).get("number", "?")
    scored = score_partition(part, number, "Dask", options)
    if list(scored.columns) != columns:
        raise RuntimeError(f"{_CALLER}: partition {number} gave columns {list(scored.columns)}, not the {columns} "
                           "the empty table gave (the gold's kind, spans or ids, could not be seen from an empty "
                           "table?); pass gold_by= explicitly.")
    return _without_counts(scored)


def _without_counts(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its conventions kept and its per-partition counts dropped (they do not describe the table)."""
    from raglab._meta import get_meta, set_meta

    record = get_meta(frame)
    record.pop("retrieval_counts", None)
    frame.attrs = {}
    return set_meta(frame, record) if record else frame


def retrieval(ddf: Any, k: int | Any = 5, **options: Any) -> Any:
    """Retrieval metrics per question on a Dask DataFrame, as :func:`raglab.retrieval.retrieval` on pandas.

    Row-wise, so each partition is scored where it lies (lazily: nothing is computed until you ask);
    the computed frame equals ``rows.rag.retrieval(...)`` (columns, values and dtypes) for any
    partitioning. The warning pandas gives when k exceeds the longest retrieved list is not given (a
    partition's longest list is not the table's). The conventions recorded in ``attrs["raglab"]["retrieval"]`` are kept; the counts
    (``retrieval_counts``) are not: a partition's counts do not describe the table.

    Parameters
    ----------
    ddf : dask.dataframe.DataFrame
        One row per question with the ``retrieved`` and ``gold`` columns.
    k : int or list of int
        Cut-offs, as :func:`raglab.retrieval.retrieval`.
    **options
        The other arguments of :func:`raglab.retrieval.retrieval` (``metrics``, ``gain``,
        ``gold_by``, ..., column roles).

    Returns
    -------
    dask.dataframe.DataFrame
        The rows plus one column per metric and k.

    Examples
    --------
    >>> import dask
    >>> import dask.dataframe as dd
    >>> import pandas as pd
    >>> from raglab.dask import retrieval
    >>> rows = pd.DataFrame({"question_id": ["q1", "q2"], "retrieved": [["d1", "d2"], ["d3"]],
    ...                      "gold": [["d2"], ["d9"]]})
    >>> with dask.config.set({"scheduler": "sync", "dataframe.convert-string": False}):  # lists stay lists
    ...     scored = retrieval(dd.from_pandas(rows, npartitions=2), k=2).compute()
    >>> scored["recall@2"].tolist()
    [1.0, 0.0]
    """
    from raglab._errors import RowTableError
    from raglab._rowtable import ROLES, table_roles
    from raglab.retrieval import retrieval as _retrieval

    options = {"k": k, **options}
    roles = table_roles(ddf._meta, options.get("roles"), {c: v for c, v in options.items() if c in ROLES},
                        caller=_CALLER)
    for role in ("retrieved", "gold"):
        column = roles.column(role)
        if column in ddf.columns and pd.api.types.is_string_dtype(ddf._meta[column].dtype) \
                and not pd.api.types.is_object_dtype(ddf._meta[column].dtype):
            raise RowTableError(
                f"{_CALLER}: column {column!r} (the {role} ids) has the text dtype {ddf._meta[column].dtype}, so its "
                "lists were turned into strings when the Dask DataFrame was made (Dask converts object columns to "
                "text by default). Make it with dask.config.set({'dataframe.convert-string': False}), or read the "
                "Parquet file, whose list columns stay lists.", column=column, method=_CALLER)
    meta = _retrieval(ddf._meta, **options)  # a missing column or a bad option fails here, before any work
    meta = _without_counts(meta)
    return ddf.map_partitions(_score_partition, options, [str(c) for c in meta.columns], meta=meta,
                              align_dataframes=False)
