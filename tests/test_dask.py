"""raglab.dask: ``ddf.rag`` on Dask DataFrames gives the pandas tables (issue 23, first slice)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

dask = pytest.importorskip("dask")
dd = pytest.importorskip("dask.dataframe")

import raglab  # noqa: E402,F401  (registers df.rag)
import raglab.dask  # noqa: E402  (registers ddf.rag)
from raglab import runs  # noqa: E402
from raglab._errors import MissingColumnError, RowTableError  # noqa: E402
from raglab.stats.results import SUMMARY, check_declared  # noqa: E402

PARTITIONS = [1, 3, 8]
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _synchronous():
    # the synchronous scheduler (no cluster: fast, and errors surface as they are); list columns stay lists
    with dask.config.set({"scheduler": "sync", "dataframe.convert-string": False}):
        yield


def _scores(n: int = 120, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = pd.DataFrame({
        "question_id": [f"q{i}" for i in range(n)],
        "qtype": rng.choice(np.array(["how", "what", "why", None], dtype=object), n),
        "lang": rng.choice(["en", "fr"], n),
        "hit@5": rng.integers(0, 2, n),  # pass/fail (integers): Wilson
        "recall@5": rng.beta(6, 1, n),  # a [0, 1] score: Wilson at the effective n
        "latency_s": rng.gamma(2.0, 1.5, n),  # unbounded: t
        "ndcg@5": np.full(n, 0.25),  # every value equal
        "faithfulness": np.where(rng.random(n) < 0.2, np.nan, rng.random(n)),  # missing scores
    })
    rows.loc[rows["qtype"] == "why", "faithfulness"] = np.nan  # a slice with no score at all
    return rows


def _assert_same(expected: pd.DataFrame, got: pd.DataFrame) -> None:
    """Counts, labels and dtypes exactly; the floats to 1e-12 (rtol 0)."""
    assert list(got.columns) == list(expected.columns)
    assert got.dtypes.equals(expected.dtypes)
    for column in expected.columns:
        a, b = expected[column], got[column]
        if a.dtype.kind == "f":
            assert (a.isna() == b.isna()).all(), column
            np.testing.assert_allclose(b.to_numpy(), a.to_numpy(), rtol=0, atol=1e-12, err_msg=column)
        else:
            pd.testing.assert_series_equal(b, a, check_names=False)


# ---- summary -----------------------------------------------------------------------------------


@pytest.mark.parametrize("npartitions", PARTITIONS)
@pytest.mark.parametrize("by", [None, "qtype", ["qtype", "lang"]])
def test_summary_equals_pandas(npartitions: int, by: str | list[str] | None) -> None:
    rows = _scores()
    expected = runs.summary(rows, by=by)
    got = dd.from_pandas(rows, npartitions=npartitions).rag.summary(by=by)
    check_declared(got, SUMMARY)
    _assert_same(expected, got)
    assert set(got["method"]) == {"wilson", "wilson (bounded score, effective n)", "t",
                                  "wilson (bounded score, all values equal)"}
    assert got.attrs["raglab"]["summary"] == expected.attrs["raglab"]["summary"]


@pytest.mark.parametrize("npartitions", PARTITIONS)
def test_summary_does_not_depend_on_row_order_or_partitioning(npartitions: int) -> None:
    rows = _scores(n=150, seed=4)
    expected = runs.summary(rows, by="qtype", ci=0.9)
    shuffled = rows.sample(frac=1.0, random_state=npartitions)
    got = dd.from_pandas(shuffled, npartitions=npartitions, sort=False).rag.summary(by="qtype", ci=0.9)
    _assert_same(expected, got)
    again = dd.from_pandas(rows, npartitions=5).rag.summary(by="qtype", ci=0.9)
    pd.testing.assert_frame_equal(got, again)  # between partitionings: the same bits


def test_summary_on_64_partitions_and_an_empty_one() -> None:
    rows = _scores(n=400, seed=9)
    expected = runs.summary(rows, by="qtype")
    ddf = dd.from_pandas(rows, npartitions=64)
    assert ddf.npartitions == 64
    _assert_same(expected, ddf.rag.summary(by="qtype"))
    with_empty = dd.concat([dd.from_pandas(rows.iloc[:0], npartitions=1), ddf])
    _assert_same(expected, with_empty.rag.summary(by="qtype"))
    with pytest.raises(ValueError, match="at least one question"):
        dd.from_pandas(rows.iloc[:0], npartitions=1).rag.summary(["hit@5"])


@pytest.mark.parametrize("kind", ["int", "category", "float with missing"])
def test_slices_come_in_the_pandas_order(kind: str) -> None:
    rows = _scores(n=90, seed=6)
    codes = np.random.default_rng(1).integers(0, 3, len(rows))
    if kind == "int":
        rows["group"] = np.array([10, 9, 100])[codes]
    elif kind == "category":
        rows["group"] = pd.Categorical(np.array(["z", "a", "m"])[codes], categories=["z", "m", "a"])
    else:
        rows["group"] = np.array([2.5, np.nan, 0.5])[codes]
    expected = runs.summary(rows, ["hit@5", "latency_s"], by="group")
    got = dd.from_pandas(rows, npartitions=4).rag.summary(["hit@5", "latency_s"], by="group")
    _assert_same(expected, got)


def test_recorded_clusters_and_judged_samples_are_not_silently_ignored() -> None:
    # data of its own: Dask caches a frame's meta (attrs included) by its data's token, across tests
    rows = _scores(seed=12)
    rows.attrs["raglab"] = {"evalset": {"name": "demo", "units": "lang"}}
    ddf = dd.from_pandas(rows, npartitions=2)
    with pytest.raises(NotImplementedError, match="units='lang'.*eval set records it.*units=False"):
        ddf.rag.summary(["hit@5"])
    expected = runs.summary(rows, ["hit@5"], units=False)
    _assert_same(expected, ddf.rag.summary(["hit@5"], units=False))
    judged = _scores(seed=13)
    judged.attrs["raglab"] = {"sampling": {"judged": {"metrics": ["faithfulness"]}}}
    with pytest.raises(NotImplementedError, match="judged sample"):
        dd.from_pandas(judged, npartitions=2).rag.summary(["faithfulness"])
    # the metrics scored on every row of a judged table are summarised as on pandas
    _assert_same(runs.summary(judged, ["hit@5"], units=False),
                 dd.from_pandas(judged, npartitions=2).rag.summary(["hit@5"], units=False))


@pytest.mark.parametrize("method", ["wilson", "exact", "normal", "t"])
def test_named_methods_equal_pandas(method: str) -> None:
    rows = _scores(seed=2)
    metrics = ["hit@5"] if method != "t" else ["hit@5", "recall@5", "latency_s"]
    expected = runs.summary(rows, metrics, by="lang", method=method)
    got = raglab.dask.summary(dd.from_pandas(rows, npartitions=3), metrics, by="lang", method=method)
    _assert_same(expected, got)


def test_summary_with_a_question_id_role_and_metrics_named() -> None:
    rows = _scores().rename(columns={"question_id": "qid"})
    expected = runs.summary(rows, ["latency_s", "hit@5"], question_id="qid")
    got = dd.from_pandas(rows, npartitions=3).rag.summary(["latency_s", "hit@5"], question_id="qid")
    _assert_same(expected, got)


@pytest.mark.parametrize("method", ["percentile", "bca", "betting"])
def test_methods_that_need_the_rows_say_which_work(method: str) -> None:
    ddf = dd.from_pandas(_scores(), npartitions=2)
    with pytest.raises(NotImplementedError, match=f"method='{method}'.*'wilson'.*'t'"):
        ddf.rag.summary(method=method)


def test_units_and_bounds_say_which_methods_work() -> None:
    ddf = dd.from_pandas(_scores(), npartitions=2)
    with pytest.raises(NotImplementedError, match="units=.*'auto', 'wilson'"):
        ddf.rag.summary(units="lang")
    with pytest.raises(NotImplementedError, match="bounds=.*'t'"):
        ddf.rag.summary(["latency_s"], bounds={"latency_s": (0, 30)})
    with pytest.raises(ValueError, match="method must be one of"):
        ddf.rag.summary(method="nope")
    with pytest.raises(NotImplementedError, match="predictor="):
        ddf.rag.summary(["faithfulness"], predictor="recall@5")


def test_settings_come_as_on_pandas() -> None:
    from raglab import Resampling

    rows = _scores(seed=15)
    ddf = dd.from_pandas(rows, npartitions=3)
    expected = runs.summary(rows, resampling=Resampling(ci=0.8, method="t"), seed=3, n_resamples=50)
    _assert_same(expected, ddf.rag.summary(resampling=Resampling(ci=0.8, method="t"), seed=3, n_resamples=50))
    with pytest.raises(TypeError):
        ddf.rag.summary(nonsense=1)


# ---- bad input: clear errors -------------------------------------------------------------------


def _never_computed(rows: pd.DataFrame, npartitions: int = 3) -> dd.DataFrame:
    """A Dask DataFrame whose partitions fail if computed: an error must come from the meta alone."""

    def boom(part: pd.DataFrame) -> pd.DataFrame:
        raise AssertionError("a partition was computed")

    return dd.from_pandas(rows, npartitions=npartitions).map_partitions(boom, meta=rows.iloc[:0])


def test_a_missing_column_is_named_before_anything_is_computed() -> None:
    ddf = _never_computed(_scores())
    with pytest.raises(MissingColumnError, match="'nope'"):
        ddf.rag.summary(["hit@5", "nope"])
    with pytest.raises(MissingColumnError, match="'topic'.*slice"):
        ddf.rag.summary(by="topic")
    with pytest.raises(MissingColumnError, match="'retrieved'"):
        ddf.rag.retrieval(k=5)


def test_a_non_numeric_cell_names_its_partition_and_row() -> None:
    rows = _scores(n=30)
    rows["latency_s"] = rows["latency_s"].astype(object)
    rows.loc[25, "latency_s"] = "slow"
    ddf = dd.from_pandas(rows, npartitions=3)  # rows 0-9, 10-19, 20-29
    with pytest.raises(RowTableError, match=r"partition 2 .*'latency_s'.*row 25 \(question_id 'q25'\).*'slow'"):
        ddf.rag.summary(["latency_s"])
    rows = _scores(n=30, seed=21)
    rows.loc[14, "latency_s"] = np.inf
    with pytest.raises(RowTableError, match=r"partition 1 .*'latency_s'.*infinite.*row 14 \(question_id 'q14'\)"):
        dd.from_pandas(rows, npartitions=3).rag.summary(["latency_s"])


def test_a_score_out_of_its_range_names_its_partition_and_row() -> None:
    rows = _scores(n=30)
    rows.loc[12, "recall@5"] = 1.7
    with pytest.raises(RowTableError, match=r"'recall@5'.*partition 1.*1\.7 at row 12 \(question_id 'q12'\)") as info:
        dd.from_pandas(rows, npartitions=3).rag.summary(["recall@5"])
    assert info.value.rows == [2]  # the position in its partition, as the message's row label names the row


# ---- retrieval ---------------------------------------------------------------------------------


def _retrieval_rows(n: int = 40, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    docs = [f"d{i}" for i in range(12)]
    retrieved = [list(rng.choice(docs, int(rng.integers(0, 7)), replace=False)) for _ in range(n)]
    gold: list[object] = []
    for i in range(n):
        kind = i % 4
        picked = list(rng.choice(docs, int(rng.integers(1, 4)), replace=False))
        gold.append(picked if kind < 2 else {d: int(rng.integers(0, 4)) for d in picked} if kind == 2 else None)
    return pd.DataFrame({"question_id": [f"q{i}" for i in range(n)], "retrieved": retrieved, "gold": gold})


@pytest.mark.parametrize("npartitions", PARTITIONS)
def test_retrieval_equals_pandas(npartitions: int) -> None:
    rows = _retrieval_rows()
    expected = rows.rag.retrieval(k=[1, 3, 5])
    lazy = dd.from_pandas(rows, npartitions=npartitions).rag.retrieval(k=[1, 3, 5])
    assert list(lazy.columns) == list(expected.columns)
    got = lazy.compute()
    pd.testing.assert_frame_equal(got, expected)  # columns, values and dtypes
    assert got.attrs["raglab"]["retrieval"] == expected.attrs["raglab"]["retrieval"]


def _span(doc: str, start: int, end: int, **extra: object) -> dict[str, object]:
    return {"doc_id": doc, "start": start, "end": end, **extra}


SPAN_ROWS = pd.DataFrame({  # as tests/test_retrieval.py's rows: graded ids, spans, candidates
    "question_id": ["q1", "q2", "q3", "q4", "q5"],
    "retrieved": [["d7", "d2", "d9", "d4", "d1"], ["d1", "d3"], [], ["d5"], ["d8", "d6", "d2"]],
    "candidates": [["d7", "d2", "d9", "d4", "d1", "d5"], ["d1", "d3", "d2"], ["d4"], ["d5", "d6"],
                   ["d8", "d6", "d2", "d3"]],
    "gold": [{"d2": 3, "d4": 1, "d5": 2}, ["d2"], ["d4"], {"d5": 0}, {"d3": 2}],
    "retrieved_spans": [[_span("a", 0, 10)] * 5, [_span("a", 0, 10)] * 2, [], [_span("b", 0, 5)],
                        [_span("b", 0, 10)] * 3],
    "candidate_spans": [[_span("a", 0, 10)] * 6, [_span("a", 0, 10)] * 3, [_span("a", 0, 10)],
                        [_span("b", 0, 5)] * 2, [_span("b", 0, 10)] * 4],
    "gold_spans": [[_span("a", 2, 4)], [_span("a", 5, 9, grade=2)], [], [_span("b", 7, 9)], [_span("b", 1, 3)]],
})


@pytest.mark.filterwarnings("ignore:raglab.retrieval.retrieval. k=")
@pytest.mark.parametrize("options", [
    {},
    {"k": [1, 3, 5], "gain": "linear"},
    {"k": 2, "no_relevant": "zero", "gold_by": "ids"},
    {"k": [1, 5], "retrieved": "candidates", "gold_by": "ids"},
    {"k": 3, "gold_by": "spans", "min_overlap": 0.5},
    {"k": [1, 2], "gold_by": "spans", "retrieved_spans": "candidate_spans", "no_relevant": "zero", "min_overlap": 2},
    {"k": 5, "metrics": ["recall", "map"]},
])
def test_retrieval_options_and_span_gold_equal_pandas(options: dict[str, object]) -> None:
    expected = SPAN_ROWS.rag.retrieval(**options)
    got = dd.from_pandas(SPAN_ROWS, npartitions=3).rag.retrieval(**options).compute()
    pd.testing.assert_frame_equal(got, expected)


def test_retrieval_then_summary_equal_pandas_on_shuffled_rows() -> None:
    rows = _retrieval_rows(n=60, seed=3)
    expected = runs.summary(rows.rag.retrieval(k=[1, 5], gain="linear"))
    shuffled = rows.sample(frac=1.0, random_state=1)
    scored = dd.from_pandas(shuffled, npartitions=8, sort=False).rag.retrieval(k=[1, 5], gain="linear")
    _assert_same(expected, scored.rag.summary())


def test_retrieval_bad_cell_names_its_partition() -> None:
    rows = _retrieval_rows(n=30)
    rows.loc[24, "gold"] = 7
    with pytest.raises(RowTableError, match=r"partition 2 of the Dask DataFrame: .*'gold'.*row 24"):
        dd.from_pandas(rows, npartitions=3).rag.retrieval(k=5).compute()


def test_retrieval_lists_made_into_text_are_refused_with_the_fix() -> None:
    with dask.config.set({"dataframe.convert-string": True}):
        ddf = dd.from_pandas(_retrieval_rows(), npartitions=2)
    with pytest.raises(RowTableError, match="convert-string"):
        ddf.rag.retrieval(k=5)


# ---- the accessor ------------------------------------------------------------------------------


def test_over_time_and_monitor_go_to_the_dask_monitor(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    monkeypatch.setattr(raglab.dask._api, "over_time", lambda ddf, metrics, **kw: calls.append(("o", metrics, kw)) or 1)
    monkeypatch.setattr(raglab.dask._api, "monitor", lambda ddf, metrics, **kw: calls.append(("m", metrics, kw)) or 2)
    ddf = dd.from_pandas(_scores(), npartitions=2)
    assert ddf.rag.over_time("hit@5", time="ts") == 1
    assert ddf.rag.monitor(["hit@5"], period="D") == 2
    assert calls == [("o", "hit@5", {"time": "ts"}), ("m", ["hit@5"], {"period": "D"})]


def test_without_dask_the_import_names_the_extra() -> None:
    code = textwrap.dedent("""
        import sys
        sys.modules["dask"] = None
        try:
            import raglab.dask
        except ModuleNotFoundError as exc:
            print("MISSING:", exc)
        else:
            print("IMPORTED")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120,
                         env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert "MISSING:" in out.stdout and "raglab[dask]" in out.stdout, out.stdout + out.stderr
