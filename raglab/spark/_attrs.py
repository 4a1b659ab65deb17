"""The raglab record of a Spark DataFrame, kept as JSON in its first column's metadata.

pandas keeps the record (an eval set's clusters, a log's sampling design, the judge's fingerprint) in
``df.attrs["raglab"]``; a Spark DataFrame has no ``attrs``, but every column of its schema carries a
metadata dict that Spark keeps through ``select`` and ``withColumn`` of that column and writes into
Parquet files. :func:`with_attrs` stores the record there, as one JSON text under the key ``"raglab"``
(Spark's own metadata holds only homogeneous arrays and no nulls, a JSON text holds any record);
:func:`attrs_of` reads it back. A table that lost its first column (a ``select`` without it) lost the
record too; after a join or a union several columns may carry one, and the first column's wins.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from raglab._meta import ATTRS_KEY, storable_meta

__all__ = ["attrs_of", "column", "with_attrs"]


def with_attrs(sdf: Any, attrs: Mapping[str, Any]) -> Any:
    """``sdf`` with the raglab record of ``attrs`` (``attrs["raglab"]``, as in pandas' ``df.attrs``) attached.

    The record is checked to be JSON (as ``raglab._meta.storable_meta`` does for files) and stored
    as JSON text in the metadata of the first column (``Column.alias(name, metadata=...)``, which is
    what ``DataFrame.withMetadata`` does, for any column name), next to any metadata the column already has.
    Other columns' records (from an earlier join or union) are removed, so :func:`attrs_of` reads
    this one. ``attrs`` without a ``"raglab"`` key removes the record. Nothing is computed: Spark
    records the metadata in the plan.

    Parameters
    ----------
    sdf : pyspark.sql.DataFrame
        A DataFrame with at least one column.
    attrs : dict
        A pandas ``attrs`` dict; only its ``"raglab"`` entry (a JSON-able dict) is kept.

    Returns
    -------
    pyspark.sql.DataFrame
        The same rows and columns, the record in the first column's metadata.

    Examples
    --------
    >>> import pandas as pd
    >>> rows = pd.DataFrame({"question_id": ["q1", "q2"], "hit@5": [1, 0]})
    >>> rows.attrs["raglab"] = {"evalset": {"name": "handbook", "version": "v1"}}
    >>> sdf = with_attrs(spark.createDataFrame(rows), rows.attrs)  # doctest: +SKIP
    >>> sdf.schema["question_id"].metadata  # doctest: +SKIP
    {'raglab': '{"evalset": {"name": "handbook", "version": "v1"}}'}
    >>> attrs_of(sdf.select("question_id"))  # doctest: +SKIP
    {'raglab': {'evalset': {'name': 'handbook', 'version': 'v1'}}}
    """
    if not isinstance(attrs, Mapping):
        raise TypeError(f"with_attrs: attrs must be a dict like pandas' df.attrs, got {type(attrs).__name__}")
    fields = sdf.schema.fields
    if not fields:
        raise ValueError("with_attrs: the Spark DataFrame has no columns to carry the raglab record")
    record = attrs.get(ATTRS_KEY)
    if record is not None and not isinstance(record, Mapping):
        raise TypeError(f"with_attrs: attrs[{ATTRS_KEY!r}] must be a dict, got {type(record).__name__}")
    text = None if record is None else json.dumps(storable_meta(record))
    columns, changed = [], False
    for position, field in enumerate(fields):
        metadata = {key: value for key, value in field.metadata.items() if key != ATTRS_KEY}
        if position == 0 and text is not None:
            metadata[ATTRS_KEY] = text
        if metadata != field.metadata:
            # Column.alias(metadata=...), not DataFrame.withMetadata: that parses a name with a dot as a field
            columns.append(column(field.name).alias(field.name, metadata=metadata))
            changed = True
        else:
            columns.append(column(field.name))
    return sdf.select(*columns) if changed else sdf


def column(name: str) -> Any:
    """The Spark column called ``name``, quoted: a dot or a backtick in it is part of the name.

    Examples
    --------
    >>> spark.createDataFrame([(0.5,)], ["score.v2"]).select(column("score.v2")).columns  # doctest: +SKIP
    ['score.v2']
    """
    from pyspark.sql import functions as F

    return F.col("`" + name.replace("`", "``") + "`")


def attrs_of(sdf: Any) -> dict[str, Any]:
    """The pandas ``attrs`` of ``sdf``: ``{"raglab": record}`` from its columns' metadata, or ``{}``.

    The first column (in schema order) whose metadata holds a record wins. Reading the schema
    computes nothing.

    Parameters
    ----------
    sdf : pyspark.sql.DataFrame
        A DataFrame, perhaps written by :func:`with_attrs` (also after a Parquet round trip).

    Returns
    -------
    dict
        ``{"raglab": record}`` or ``{}``; a fresh dict each call.

    Examples
    --------
    >>> attrs_of(spark.range(3))  # doctest: +SKIP
    {}
    >>> attrs_of(with_attrs(spark.range(3), {"raglab": {"run": {"name": "a"}}}))  # doctest: +SKIP
    {'raglab': {'run': {'name': 'a'}}}
    """
    for field in sdf.schema.fields:
        value = field.metadata.get(ATTRS_KEY)
        if value is None:
            continue
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError as exc:
                raise ValueError(f"column {field.name!r} of the Spark DataFrame holds a raglab record that is not "
                                 f"JSON ({exc}); rewrite it with raglab.spark.with_attrs") from None
        if isinstance(value, Mapping):
            return {ATTRS_KEY: dict(value)}
    return {}
