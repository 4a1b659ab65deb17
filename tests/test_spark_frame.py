"""SparkPartitions (raglab.spark) against pandas, with toy partition functions, on one local Spark session.

Every test takes the session-scoped ``spark`` fixture (tests/conftest.py): without pyspark or a Java
runtime they are skipped with the reason, unless RAGLAB_REQUIRE_SPARK=1 (CI) makes that a failure.
"""

from __future__ import annotations

import datetime as dt
import functools
import importlib.util
import sys
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import spark_unavailable

if importlib.util.find_spec("pyspark") is None:  # raglab.spark would not import: skip, or fail in CI
    spark_unavailable("needs pyspark (the spark extra, part of the test extra: `pip install -e '.[test]'`)",
                      module=True)

from pyspark import cloudpickle  # noqa: E402

from raglab._errors import BadCellError  # noqa: E402
from raglab.engines._frames import CAND, KEY, SIDE  # noqa: E402
from raglab.spark import SparkPartitions, attrs_of, with_attrs  # noqa: E402
from raglab.spark._frame import ExecutorTraceback  # noqa: E402

# The executors cannot import this test module (pytest put tests/ on the driver's sys.path only): its partition
# functions travel by value, as a notebook's do; raglab's own are imported by reference on the workers.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

RECORD = {"evalset": {"name": "handbook", "version": "v1", "clusters": "doc_id"}, "retrieval": {"k": [5, 10]}}


def _rows(n: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    return pd.DataFrame({
        "question_id": np.arange(n, dtype="int64"),
        "score": rng.random(n),
        "hits": rng.integers(0, 5, n).astype("int64"),
        "qtype": pd.Series(rng.choice(["fact", "how", "why"], n), dtype="str"),
        "flag": rng.random(n) > 0.5,
        "at": pd.Series(pd.date_range("2024-01-01", periods=n, freq="h", tz="UTC"), dtype="datetime64[us, UTC]"),
    })


@pytest.fixture(scope="module")
def rows() -> pd.DataFrame:
    return _rows()


@pytest.fixture(scope="module")
def sdf(spark: Any, rows: pd.DataFrame) -> Any:
    return spark.createDataFrame(rows).cache()


# ---- partition functions (module level: pickled by reference, as raglab's own are) -----------------------------

def _sums(part: pd.DataFrame, number: int) -> dict[str, Any]:
    return {"n": len(part), "score": float(part["score"].sum()), "hits": int(part["hits"].sum()),
            "numbers": [number], "sizes": {number: len(part)}}


def _add(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"n": sum(p["n"] for p in parts), "score": sum(p["score"] for p in parts),
            "hits": sum(p["hits"] for p in parts), "numbers": [n for p in parts for n in p["numbers"]],
            "sizes": {k: v for p in parts for k, v in p["sizes"].items()}}


def _look(part: pd.DataFrame, number: int) -> dict[int, Any]:
    """What a partition looked like: columns, dtypes, index, attrs."""
    return {number: {"columns": list(part.columns), "dtypes": part.dtypes.astype(str).tolist(),
                     "index": part.index.equals(pd.RangeIndex(len(part))), "attrs": part.attrs, "n": len(part)}}


def _merge(*parts: dict[int, Any]) -> dict[int, Any]:
    return {k: v for p in parts for k, v in p.items()}


def _keep(part: pd.DataFrame, number: int, threshold: float) -> pd.DataFrame:
    return part[part["score"] > threshold]


def _fail_in(part: pd.DataFrame, number: int, bad: int) -> int:
    if number == bad:
        raise ValueError(f"partition {number}: the score column holds 'n/a' in row 3")
    return len(part)


def _bad_cell(part: pd.DataFrame, number: int) -> int:
    raise BadCellError("retrieved must be a list of ids", 3, what="retrieved")


def _keys(part: pd.DataFrame, number: int) -> list[dict[str, Any]]:
    sides = part.groupby(KEY)[SIDE].agg(lambda s: tuple(sorted(s)))
    return [{"number": number, "keys": set(part[KEY]), "met": {k for k, s in sides.items() if s == (0, 1)},
             "dtypes": part.dtypes.astype(str).to_dict(), "rows": part.to_dict("records")}]


def _concat(*lists: list[Any]) -> list[Any]:
    return [x for one in lists for x in one]


# ---- reduce ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 3, 8])
def test_reduce_of_partition_sums_equals_pandas(sdf: Any, rows: pd.DataFrame, n: int) -> None:
    parts = SparkPartitions(sdf.repartition(n))
    total = parts.reduce(_sums, _add)
    assert total["n"] == len(rows)
    assert total["score"] == pytest.approx(rows["score"].sum(), rel=1e-12)
    assert total["hits"] == rows["hits"].sum()
    assert sorted(total["numbers"]) == list(range(n))  # every partition once, numbered 0..n-1
    assert sum(total["sizes"].values()) == len(rows) and all(total["sizes"].values())


def test_partitions_see_the_meta_columns_dtypes_index_and_attrs(sdf: Any) -> None:
    parts = SparkPartitions(with_attrs(sdf.repartition(3), {"raglab": RECORD}))
    seen = parts.reduce(_look, _merge)
    assert sorted(seen) == [0, 1, 2]
    for look in seen.values():
        assert look["columns"] == list(parts.meta.columns)
        assert look["dtypes"] == parts.meta.dtypes.astype(str).tolist()
        assert look["index"] and look["attrs"] == {"raglab": RECORD}


def test_a_partition_of_several_arrow_batches_is_one_frame(spark: Any, sdf: Any, rows: pd.DataFrame) -> None:
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "7")  # 40 rows: 6 batches
    try:
        seen = SparkPartitions(sdf.coalesce(1)).reduce(_look, _merge)
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    assert list(seen) == [0] and seen[0]["n"] == len(rows) and seen[0]["index"]


def test_empty_partitions_are_called_with_the_meta_columns(spark: Any) -> None:
    frame = pd.DataFrame({"x": [1.0, 2.0], "n": [1, 2]})
    parts = SparkPartitions(spark.createDataFrame(frame).repartition(4))
    seen = parts.reduce(_look, _merge)
    assert sorted(seen) == [0, 1, 2, 3] and sum(look["n"] for look in seen.values()) == 2
    assert all(look["dtypes"] == ["float64", "int64"] for look in seen.values())
    # a plan with no partitions at all (an empty relation): one empty partition, numbered 0
    nothing = SparkPartitions(spark.createDataFrame(frame).filter("x > 10"))
    assert nothing.reduce(_look, _merge) == {0: {"columns": ["x", "n"], "dtypes": ["float64", "int64"], "index": True,
                                                 "attrs": {}, "n": 0}}


def test_an_executor_error_arrives_with_its_type_and_message(sdf: Any) -> None:
    parts = SparkPartitions(sdf.repartition(3))
    with pytest.raises(ValueError) as caught:
        parts.reduce(functools.partial(_fail_in, bad=1), lambda *n: sum(n))
    assert type(caught.value) is ValueError
    assert str(caught.value) == "partition 1: the score column holds 'n/a' in row 3"
    assert isinstance(caught.value.__cause__, ExecutorTraceback)
    assert "_fail_in" in str(caught.value.__cause__)  # the executor's traceback, as the cause
    # an error whose constructor needs more than its message keeps its attributes too
    with pytest.raises(BadCellError, match="retrieved must be a list of ids") as bad:
        parts.collect(_bad_cell)
    assert (bad.value.row, bad.value.what) == (3, "retrieved")


# ---- collect ---------------------------------------------------------------------------------------------

def test_collect_brings_back_exactly_the_kept_rows_in_pandas_dtypes(sdf: Any, rows: pd.DataFrame) -> None:
    parts = SparkPartitions(sdf.repartition(3))
    kept = parts.collect(functools.partial(_keep, threshold=0.6))
    expected = rows[rows["score"] > 0.6].reset_index(drop=True)
    got = kept.sort_values("question_id").reset_index(drop=True)
    pd.testing.assert_frame_equal(got, expected)  # values and dtypes: int64, float64, str, bool, datetime64[us, UTC]
    assert kept.index.equals(pd.RangeIndex(len(kept)))
    none = parts.collect(functools.partial(_keep, threshold=2.0))
    assert none.empty and none.dtypes.equals(rows.dtypes)


def test_collect_gives_int_columns_their_dtype_back_when_the_kept_rows_have_no_nulls(spark: Any) -> None:
    frame = pd.DataFrame({"id": np.arange(6, dtype="int64"), "score": [0.9, 0.1, 0.8, 0.2, 0.7, 0.3],
                          "n": pd.array([1, None, 3, None, 5, None], dtype="Int64")})
    parts = SparkPartitions(spark.createDataFrame(frame).coalesce(1))
    assert parts.meta.dtypes.astype(str).tolist() == ["int64", "float64", "int64"]
    kept = parts.collect(functools.partial(_keep, threshold=0.5))
    assert kept["n"].dtype == np.int64 and kept["n"].tolist() == [1, 3, 5]
    every = parts.collect(functools.partial(_keep, threshold=0.0))  # with the nulls: float64, as toPandas() gives
    assert every["n"].dtype == np.float64 and every["n"].isna().sum() == 3


# ---- paired ----------------------------------------------------------------------------------------------

def test_paired_puts_each_question_of_both_runs_in_one_partition(spark: Any) -> None:
    base = pd.DataFrame({"qid": np.arange(30, dtype="int64"), "hit": np.arange(30) % 2, "qtype": ["a", "b"] * 15})
    cand = pd.DataFrame({"question": [str(i) for i in range(5, 35)], "hit": np.arange(30) % 3 == 0,
                         "qtype": ["a", "b", "c"] * 10})
    left = SparkPartitions(with_attrs(spark.createDataFrame(base).repartition(3), {"raglab": RECORD}))
    right = SparkPartitions(spark.createDataFrame(cand).repartition(5))
    pairs = left.paired(right, "qid", ["hit", "qtype"], ["hit", "qtype"], other_on="question")
    assert pairs.engine == "Spark" and pairs.meta.attrs == {"raglab": RECORD}
    assert pairs.sdf.rdd.getNumPartitions() == 5
    assert list(pairs.meta.columns) == ["hit", "qtype", KEY, SIDE, "hit" + CAND, "qtype" + CAND]  # KEY: the ids
    # every row misses the other side's columns: ints as float64, bools as objects (as pandas.concat gives)
    assert pairs.meta.dtypes.astype(str).tolist() == ["float64", "str", "str", "int64", "object", "str"]
    seen = pairs.reduce(_keys, _concat)
    keys = [p["keys"] for p in seen]
    assert sum(len(k) for k in keys) == len(set().union(*keys)) == 35  # disjoint: a key lies in one partition
    assert set().union(*(p["met"] for p in seen)) == {str(i) for i in range(5, 30)}  # int 7 meets "7"
    assert all(p["dtypes"] == pairs.meta.dtypes.astype(str).to_dict() for p in seen)
    rows = pd.DataFrame([r for p in seen for r in p["rows"]])
    base_rows = rows[rows[SIDE] == 0].sort_values(KEY, key=lambda k: k.astype(int))
    assert base_rows[KEY].tolist() == [str(i) for i in range(30)] and base_rows["hit"].tolist() == base["hit"].tolist()
    assert base_rows["hit" + CAND].isna().all()
    cand_rows = rows[rows[SIDE] == 1].sort_values(KEY, key=lambda k: k.astype(int))
    assert cand_rows["hit" + CAND].tolist() == cand["hit"].tolist() and cand_rows["hit"].isna().all()


# ---- meta and attrs ---------------------------------------------------------------------------------------

def test_meta_dtypes_come_from_the_schema_without_a_job(spark: Any) -> None:
    from pyspark.sql import types as T

    schema = T.StructType([T.StructField("score", T.DoubleType()), T.StructField("n", T.LongType()),
                           T.StructField("text", T.StringType()), T.StructField("ok", T.BooleanType()),
                           T.StructField("at", T.TimestampType()), T.StructField("local", T.TimestampNTZType()),
                           T.StructField("ids", T.ArrayType(T.StringType()))])
    at = dt.datetime(2024, 3, 1, 12, 30)
    sdf = spark.createDataFrame([(0.5, 3, "x", True, at, at, ["d1", "d2"])], schema)
    parts = SparkPartitions(sdf)
    assert parts.meta.empty and parts.meta.attrs == {}
    assert {name: str(dtype) for name, dtype in parts.meta.dtypes.items()} == {
        "score": "float64", "n": "int64", "text": "str", "ok": "bool", "at": "datetime64[us, UTC]",
        "local": "datetime64[us]", "ids": "object"}  # a timestamp is an instant (UTC), a TimestampNTZ wall time
    seen = parts.reduce(_keys_of_row, _concat)  # the partition holds what pandas would: UTC instants, lists
    assert seen == [{"at": pd.Timestamp(at, tz="UTC"), "local": pd.Timestamp(at), "ids": ["d1", "d2"],
                     "dtypes": list(parts.meta.dtypes.astype(str))}]


def _keys_of_row(part: pd.DataFrame, number: int) -> list[dict[str, Any]]:
    return [{"at": r["at"], "local": r["local"], "ids": list(r["ids"]), "dtypes": list(part.dtypes.astype(str))}
            for _, r in part.iterrows()]


def test_timestamps_need_a_utc_session(spark: Any) -> None:
    sdf = spark.createDataFrame(pd.DataFrame({"at": pd.to_datetime(["2024-01-01"])}))
    spark.conf.set("spark.sql.session.timeZone", "Europe/Paris")
    try:
        with pytest.raises(ValueError, match="session time zone is 'Europe/Paris'"):
            SparkPartitions(sdf)
        SparkPartitions(spark.range(2))  # no timestamp column: any zone will do
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")


def test_attrs_survive_select_and_a_parquet_round_trip(spark: Any, sdf: Any, tmp_path: Any) -> None:
    marked = with_attrs(sdf, {"raglab": RECORD, "other": "not kept"})
    assert attrs_of(sdf) == {} and attrs_of(marked) == {"raglab": RECORD}
    assert attrs_of(marked.select("question_id", "score")) == {"raglab": RECORD}
    assert attrs_of(marked.select("score")) == {}  # the first column carries it
    marked.write.parquet(str(tmp_path / "rows.parquet"))
    back = spark.read.parquet(str(tmp_path / "rows.parquet"))
    assert attrs_of(back) == {"raglab": RECORD} and SparkPartitions(back).meta.attrs == {"raglab": RECORD}
    # after a join several columns may carry one: the first wins; with_attrs leaves only its own
    other = with_attrs(marked.select("score", "question_id"), {"raglab": {"run": {"name": "b"}}})
    assert attrs_of(other) == {"raglab": {"run": {"name": "b"}}}
    joined = marked.select("question_id").join(other, "question_id")
    assert attrs_of(joined) == {"raglab": RECORD}
    assert attrs_of(with_attrs(joined, {"raglab": {"run": {"name": "c"}}})) == {"raglab": {"run": {"name": "c"}}}
    assert attrs_of(with_attrs(joined, {})) == {}
    with pytest.raises(TypeError, match="JSON"):
        with_attrs(sdf, {"raglab": {"alpha": float("nan")}})


def test_a_dot_in_a_column_name_is_part_of_the_name(spark: Any) -> None:
    dotted = with_attrs(spark.createDataFrame(pd.DataFrame({"score.v2": [0.5], "q": [1]})), {"raglab": RECORD})
    assert dotted.columns == ["score.v2", "q"] and attrs_of(dotted) == {"raglab": RECORD}
    pairs = SparkPartitions(dotted).paired(SparkPartitions(dotted), "q", ["score.v2"], ["score.v2"])
    assert list(pairs.meta.columns) == ["score.v2", KEY, SIDE, "score.v2" + CAND]
