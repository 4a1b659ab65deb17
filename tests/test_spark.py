"""raglab.spark: ``sdf.rag`` gives the pandas tables, equal to pandas and to Dask (issue 23).

Spark runs in local[2] mode (the ``spark`` fixture of conftest.py: skipped without pyspark or Java,
failing instead when RAGLAB_REQUIRE_SPARK=1, as in CI). Analytic intervals agree to 1e-12, the Poisson
bootstrap bit for bit, for several partitionings of shuffled rows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pyspark")
dask = pytest.importorskip("dask")
dd = pytest.importorskip("dask.dataframe")

import raglab  # noqa: E402,F401  (registers df.rag)
import raglab.dask  # noqa: E402,F401  (registers ddf.rag)
from raglab import runs  # noqa: E402
from raglab._errors import RowTableError  # noqa: E402

spark_tests = pytest.mark.usefixtures("spark")


@pytest.fixture(scope="module")
def rs(spark):
    import raglab.spark as rs

    return rs


@pytest.fixture(autouse=True)
def _synchronous():
    with dask.config.set({"scheduler": "sync", "dataframe.convert-string": False}):
        yield


def _shuffled(frame: pd.DataFrame, seed: int) -> pd.DataFrame:
    return frame.iloc[np.random.default_rng(seed).permutation(len(frame))].reset_index(drop=True)


def _sdf(spark, frame: pd.DataFrame, partitions: int, seed: int = 0):
    return spark.createDataFrame(_shuffled(frame, seed)).repartition(partitions)


def _assert_same(expected: pd.DataFrame, got: pd.DataFrame, exact: tuple[str, ...] = ()) -> None:
    """Labels and counts exactly; floats to 1e-12 (``exact``: bit for bit)."""
    assert list(got.columns) == list(expected.columns)
    for column in expected.columns:
        a, b = expected[column], got[column]
        if a.dtype.kind == "f":
            if column in exact:
                np.testing.assert_array_equal(b.to_numpy(), a.to_numpy(), err_msg=column)
            else:
                np.testing.assert_allclose(b.to_numpy(float), a.to_numpy(float), rtol=0, atol=1e-12, err_msg=column)
        else:
            assert a.astype(object).tolist() == b.astype(object).tolist(), column


def _scores(n: int = 150, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "question_id": [f"q{i}" for i in range(n)],
        "qtype": rng.choice(["how", "what", "why"], n),
        "hit@5": rng.integers(0, 2, n).astype(float),
        "recall@5": rng.beta(6, 1, n),
        "latency_s": rng.gamma(2.0, 1.5, n),
        "faithfulness": np.where(rng.random(n) < 0.2, np.nan, rng.random(n)),
    })


def _runs(n: int = 160, seed: int = 1) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    base = pd.DataFrame({
        "question_id": [f"q{i}" for i in range(n)],
        "qtype": rng.choice(["lookup", "multi-hop"], n),
        "conv": [f"c{i // 4}" for i in range(n)],
        "hit@5": rng.integers(0, 2, n).astype(float),
        "latency_s": rng.gamma(2.0, 1.0, n),
    })
    cand = base.assign(**{"hit@5": np.where(rng.random(n) < 0.25, 1 - base["hit@5"], base["hit@5"]),
                          "latency_s": base["latency_s"] + rng.normal(0.05, 0.4, n)})
    return base, cand


@pytest.mark.parametrize("partitions", [1, 3, 7])
def test_summary_equals_pandas_and_dask(spark, rs, partitions: int) -> None:
    rows = _scores()
    metrics = ["hit@5", "recall@5", "latency_s", "faithfulness"]
    expected = runs.summary(rows, metrics, by="qtype")
    got = _sdf(spark, rows, partitions, partitions).rag.summary(metrics, by="qtype")
    _assert_same(expected, got)
    on_dask = raglab.dask.summary(dd.from_pandas(_shuffled(rows, 9), npartitions=partitions), metrics, by="qtype")
    _assert_same(on_dask, got)
    assert got.attrs["raglab"]["summary"]["metrics"] == metrics


@pytest.mark.parametrize("partitions", [1, 4])
def test_compare_and_gate_equal_pandas_and_dask(spark, rs, partitions: int) -> None:
    base, cand = _runs()
    b, c = _sdf(spark, base, partitions, 1), _sdf(spark, cand, max(1, partitions - 1), 2)
    tango = dict(metrics=["hit@5"], by="qtype", method="score")
    _assert_same(runs.compare(base, cand, **tango), b.rag.compare(c, **tango))
    poisson = dict(metrics=["hit@5", "latency_s"], by="qtype", method="poisson", n_resamples=200, seed=4)
    expected = runs.compare(base, cand, **poisson)
    got = b.rag.compare(c, **poisson)
    _assert_same(expected, got, exact=("low", "high"))
    on_dask = dd.from_pandas(base, npartitions=3).rag.compare(dd.from_pandas(cand, npartitions=2), **poisson)
    _assert_same(on_dask, got, exact=("low", "high"))
    gated = b.rag.gate(c, margin=0.02, metrics=["hit@5"], method="score")
    assert gated.decision == runs.gate(base, cand, margin=0.02, metrics=["hit@5"], method="score").decision


def test_clustered_poisson_compare_equals_pandas(spark, rs) -> None:
    base, cand = _runs(200)
    kw = dict(metrics=["hit@5", "latency_s"], units="conv", method="poisson", n_resamples=150, seed=8)
    expected = runs.compare(base, cand, **kw)
    got = _sdf(spark, base, 3, 3).rag.compare(_sdf(spark, cand.drop(columns="conv"), 2, 4), **kw)
    _assert_same(expected, got, exact=("low", "high"))
    assert got["n_clusters"].tolist() == expected["n_clusters"].tolist() == [50, 50]


def test_over_time_and_monitor_equal_pandas(spark, rs) -> None:
    from raglab.monitor import simulate_log

    log = simulate_log(200_000, days=40, drop_day=20, seed=1)  # billing's drop raises an alarm
    log = log.drop(columns=["question"])
    log["timestamp"] = log["timestamp"].dt.floor("us")  # Spark keeps microseconds
    logs = rs.with_attrs(spark.createDataFrame(_shuffled(log, 1)).repartition(3), log.attrs)
    kw = dict(predictor="lexical_support", by="topic")
    _assert_same(log.rag.over_time(["faithfulness", "citation_valid"], **kw),
                 logs.rag.over_time(["faithfulness", "citation_valid"], **kw))
    mkw = dict(reference=0.88, by="topic", predictor="lexical_support", guarantee="arl", arl=365)
    expected, got = log.rag.monitor("faithfulness", **mkw), logs.rag.monitor("faithfulness", **mkw)
    assert got.guarantee == expected.guarantee and len(expected.alarms)
    pd.testing.assert_frame_equal(got.alarms, expected.alarms, check_exact=False, rtol=1e-10)
    np.testing.assert_allclose(got.table[["estimate", "statistic"]].to_numpy(float),
                               expected.table[["estimate", "statistic"]].to_numpy(float), rtol=1e-10)
    a, b = got.post_mortem(0), expected.post_mortem(0)
    assert a.change[:3] == b.change[:3] and a.change[5:] == b.change[5:]
    pd.testing.assert_frame_equal(a.slices, b.slices, check_exact=False, rtol=1e-10)
    assert a.requests["request_id"].tolist() == b.requests["request_id"].tolist()


def test_bad_cells_and_repeated_ids_name_the_spark_partition(spark, rs) -> None:
    rows = _scores(40)
    bad = rows.assign(**{"hit@5": rows["hit@5"].where(rows.index != 5, 3.0)})
    with pytest.raises(RowTableError, match=r"partition \d+ of the Spark DataFrame: .*'hit@5'.*q5"):
        spark.createDataFrame(bad).repartition(2).rag.summary(["hit@5"])
    base, cand = _runs(30)
    twice = pd.concat([base, base.iloc[:1]])
    with pytest.raises(RowTableError, match=r"partition \d+ of the Spark DataFrame: .*repeat within the baseline"):
        spark.createDataFrame(twice).rag.compare(spark.createDataFrame(cand), metrics=["hit@5"], method="score")


def test_methods_that_need_the_rows_are_refused_naming_spark(spark, rs) -> None:
    rows = spark.createDataFrame(_scores(20))
    with pytest.raises(NotImplementedError, match=r"on Spark.*sdf\.toPandas\(\)"):
        rows.rag.summary(["hit@5"], method="percentile")


def test_a_pandas_frame_is_refused_with_the_way_to_pandas(rs) -> None:
    with pytest.raises(TypeError, match=r"must be a Spark DataFrame, got DataFrame \(for pandas use rows\.rag\.summary"):
        rs.summary(_scores(10), ["hit@5"])


@pytest.mark.filterwarnings("ignore:ppi_table. . cell.s. have fewer than MIN_LABELS")
@pytest.mark.parametrize("design", ["uniform", "active"])
def test_estimate_equals_pandas_and_dask(spark, rs, design: str) -> None:
    from raglab.sampling import draw

    rng = np.random.default_rng(5)
    n = 1500
    conv = np.repeat(np.arange(n), rng.integers(1, 5, n))[:n]
    truth = (rng.random(n) < 0.7).astype(float)
    rows = pd.DataFrame({"question_id": [f"t{i}" for i in range(n)], "conv": [f"c{c}" for c in conv],
                         "topic": rng.choice(["billing", "login"], n),
                         "faithfulness": np.clip(np.where(rng.random(n) < 0.85, truth, 1 - truth)
                                                 * 0.8 + 0.2 * rng.random(n), 0, 1)})
    options = {} if design == "uniform" else {"method": "active", "score": "faithfulness", "threshold": 0.5,
                                               "floor": 0.3}
    marked = draw(rows, 200, seed=1, **options)
    marked["human_f"] = np.where(marked["selected"].to_numpy(), truth, np.nan)
    kw = dict(human={"faithfulness": "human_f"}, by="topic", units="conv")
    expected = runs.estimate(marked, **kw)
    logs = rs.with_attrs(_sdf(spark, marked, 3, 2), marked.attrs)
    got = logs.rag.estimate(**kw)
    _assert_same(expected, got)
    assert got.attrs["raglab"]["estimate"] == expected.attrs["raglab"]["estimate"]
    on_dask = dd.from_pandas(_shuffled(marked, 4), npartitions=5).rag.estimate(**kw)
    _assert_same(on_dask, got)


def test_retrieval_equals_pandas_with_ids_and_graded_gold(spark, rs) -> None:
    rng = np.random.default_rng(2)
    n = 60
    docs = [f"d{i}" for i in range(30)]
    rows = pd.DataFrame({
        "question_id": [f"q{i}" for i in range(n)],
        "retrieved": [list(rng.choice(docs, int(rng.integers(0, 8)), replace=False)) for _ in range(n)],
        "gold": [list(rng.choice(docs, int(rng.integers(1, 4)), replace=False)) for _ in range(n)],
    })
    expected = runs_retrieval(rows, k=[1, 5])
    got = spark.createDataFrame(rows).repartition(3).rag.retrieval(k=[1, 5]).toPandas()
    got = got.set_index("question_id").loc[rows["question_id"]].reset_index()
    new = [c for c in expected.columns if c not in rows.columns]
    assert [c for c in got.columns if c not in rows.columns] == new
    _assert_same(expected[new], got[new])
    graded = rows.assign(gold=[{d: int(rng.integers(1, 4)) for d in g} for g in rows["gold"]])
    expected = runs_retrieval(graded, k=5, gain="linear")
    from pyspark.sql import types as T

    schema = T.StructType([T.StructField("question_id", T.StringType()),
                           T.StructField("retrieved", T.ArrayType(T.StringType())),
                           T.StructField("gold", T.MapType(T.StringType(), T.LongType()))])  # graded: a map
    got = spark.createDataFrame(graded, schema).rag.retrieval(k=5, gain="linear").toPandas()
    got = got.set_index("question_id").loc[rows["question_id"]].reset_index()
    _assert_same(expected[["ndcg@5", "recall@5"]], got[["ndcg@5", "recall@5"]])


def test_retrieval_refuses_a_missing_column_before_any_work(spark, rs) -> None:
    from raglab._errors import MissingColumnError

    with pytest.raises(MissingColumnError, match="gold"):
        spark.createDataFrame(pd.DataFrame({"question_id": ["q1"], "retrieved": [["d1"]]})).rag.retrieval(k=1)


def runs_retrieval(rows: pd.DataFrame, **kw):
    from raglab.retrieval import retrieval

    return retrieval(rows, **kw)
