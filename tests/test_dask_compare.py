"""ddf.rag.compare / gate on Dask from paired partition statistics equal pandas' (issue 23)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

dask = pytest.importorskip("dask")
dd = pytest.importorskip("dask.dataframe")

import raglab  # noqa: E402,F401  (registers df.rag)
import raglab.dask  # noqa: E402,F401  (registers ddf.rag)
from raglab import _partition, runs  # noqa: E402
from raglab._errors import RowTableError  # noqa: E402

PARTITIONS = [1, 3, 8, 64]
EXACT = ["n", "n_dropped", "n_changed", "method", "level", "n_resamples", "seed", "test", "n_permutations"]


@pytest.fixture(autouse=True)
def _synchronous():
    with dask.config.set({"scheduler": "sync", "dataframe.convert-string": False}):
        yield


def _runs(n: int = 180, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    base = pd.DataFrame({
        "question_id": [f"q{i}" for i in range(n)],
        "qtype": rng.choice(["lookup", "multi-hop", "yes/no"], n),
        "hit@5": rng.integers(0, 2, n).astype(float),
        "em": rng.integers(0, 2, n).astype(float),
        "latency_s": rng.gamma(2.0, 1.0, n),
    })
    cand = base.assign(**{"hit@5": np.where(rng.random(n) < 0.25, 1 - base["hit@5"], base["hit@5"]),
                          "em": np.where(rng.random(n) < 0.1, 1.0, base["em"]),
                          "latency_s": base["latency_s"] + rng.normal(0.05, 0.4, n)})
    cand.loc[7, "hit@5"] = np.nan  # a dropped pair
    base.loc[11, "latency_s"] = np.nan
    return base, cand


def _shuffled(frame: pd.DataFrame, seed: int) -> pd.DataFrame:
    return frame.iloc[np.random.default_rng(seed).permutation(len(frame))].reset_index(drop=True)


def _assert_same(pandas_table: pd.DataFrame, dask_table: pd.DataFrame, exact_interval: bool) -> None:
    assert list(pandas_table.columns) == list(dask_table.columns)
    assert pandas_table[["metric", "slice"]].equals(dask_table[["metric", "slice"]])
    for column in EXACT:
        assert pandas_table[column].astype(object).equals(dask_table[column].astype(object)), column
    for column in ("low", "high"):
        if exact_interval:
            np.testing.assert_array_equal(pandas_table[column], dask_table[column])
        else:
            np.testing.assert_allclose(pandas_table[column], dask_table[column], rtol=1e-12, atol=1e-12)
    for column in ("base", "cand", "diff", "skew", "p_value", "p_decrease", "p_increase"):
        np.testing.assert_allclose(pandas_table[column].astype(float), dask_table[column].astype(float),
                                   rtol=1e-12, atol=1e-12, err_msg=column)


@pytest.mark.parametrize("npartitions", PARTITIONS)
def test_tango_equals_pandas(npartitions: int) -> None:
    base, cand = _runs()
    expected = runs.compare(base, cand, metrics=["hit@5", "em"], by="qtype", method="score")
    ddb = dd.from_pandas(_shuffled(base, 1), npartitions=npartitions)
    ddc = dd.from_pandas(_shuffled(cand, 2), npartitions=max(1, npartitions - 1))
    got = ddb.rag.compare(ddc, metrics=["hit@5", "em"], by="qtype", method="score")
    _assert_same(expected, got, exact_interval=False)
    auto = ddb.rag.compare(ddc, metrics=["hit@5", "em"], by="qtype")  # auto: Tango for pass/fail metrics
    _assert_same(runs.compare(base, cand, metrics=["hit@5", "em"], by="qtype"), auto, exact_interval=False)


@pytest.mark.parametrize("npartitions", PARTITIONS)
def test_poisson_equals_pandas_exactly(npartitions: int) -> None:
    base, cand = _runs()
    kw = dict(metrics=["hit@5", "latency_s"], by="qtype", method="poisson", n_resamples=300, seed=9)
    expected = runs.compare(base, cand, **kw)
    ddb = dd.from_pandas(_shuffled(base, 3), npartitions=npartitions)
    ddc = dd.from_pandas(_shuffled(cand, 4), npartitions=npartitions)
    got = ddb.rag.compare(ddc, **kw)
    _assert_same(expected, got, exact_interval=True)
    assert got.attrs["raglab"]["comparison"]["n_paired"] == len(base)


@pytest.mark.parametrize("method", ["score", "poisson"])
def test_gate_equals_pandas(method: str) -> None:
    base, cand = _runs(240, seed=5)
    kw = dict(margin=0.03, metrics=["hit@5", "em"], by="qtype", method=method, n_resamples=400, seed=1)
    expected = runs.gate(base, cand, **kw)
    got = dd.from_pandas(_shuffled(base, 6), npartitions=3).rag.gate(dd.from_pandas(cand, npartitions=4), **kw)
    assert got.decision == expected.decision
    assert got.table["decision"].tolist() == expected.table["decision"].tolist()
    assert got.table["reason"].tolist() == expected.table["reason"].tolist()


def test_partition_statistics_do_not_depend_on_the_partitioning() -> None:
    base, cand = _runs(60)
    names = ["hit@5", "latency_s"]
    b, c = base[names].to_numpy(float), cand[names].to_numpy(float)

    def stats(order: np.ndarray, pieces: int) -> _partition.PairStats:
        return _partition.combine_pairs(*(_partition.pair_stats(
            b[idx], c[idx], names, base["qtype"].to_numpy()[idx], base["question_id"].to_numpy()[idx], 50, 3)
            for idx in np.array_split(order, pieces)))

    one = _partition.compare_table(stats(np.arange(60), 1), "poisson")
    many = _partition.compare_table(stats(np.random.default_rng(0).permutation(60), 7), "poisson")
    pd.testing.assert_frame_equal(one, many, check_exact=True)


def test_missing_ids_refused_with_counts() -> None:
    base, cand = _runs(40)
    ddb = dd.from_pandas(base, npartitions=3)
    ddc = dd.from_pandas(cand.iloc[3:], npartitions=2)
    with pytest.raises(RowTableError, match=r"3 question\(s\) only in base .*0 only in candidate.*how='inner'"):
        ddb.rag.compare(ddc, metrics=["hit@5"], method="score")
    with pytest.warns(UserWarning, match="shared questions only"):
        got = ddb.rag.compare(ddc, metrics=["hit@5"], method="score", how="inner")
    with pytest.warns(UserWarning, match="shared questions only"):
        expected = runs.compare(base, cand.iloc[3:], metrics=["hit@5"], method="score", how="inner")
    _assert_same(expected, got, exact_interval=False)


def test_repeated_ids_and_bad_cells_name_the_partition() -> None:
    base, cand = _runs(30)
    twice = pd.concat([base, base.iloc[:1]])
    with pytest.raises(RowTableError, match=r"partition \d+ of the Dask DataFrame: .*repeat"):
        dd.from_pandas(twice, npartitions=2).rag.compare(dd.from_pandas(cand, npartitions=2), metrics=["hit@5"],
                                                         method="score")
    bad = cand.assign(**{"hit@5": cand["hit@5"].where(cand.index != 4, 3.0)})
    with pytest.raises(RowTableError, match=r"partition \d+ of the Dask DataFrame: .*'hit@5'.*q4"):
        dd.from_pandas(base, npartitions=2).rag.compare(dd.from_pandas(bad, npartitions=2), metrics=["hit@5"],
                                                        method="score")


@pytest.mark.parametrize("method", ["betting", "percentile", "bca", "sequential", "ppi"])
def test_raw_row_methods_refused_with_the_list_that_works(method: str) -> None:
    base, cand = _runs(20)
    ddb, ddc = dd.from_pandas(base, npartitions=2), dd.from_pandas(cand, npartitions=2)
    with pytest.raises(NotImplementedError, match=r"needs the rows.*'score', 'poisson'"):
        ddb.rag.compare(ddc, metrics=["hit@5"], method=method)


def test_auto_with_continuous_metrics_and_score_on_them_refused() -> None:
    base, cand = _runs(20)
    ddb, ddc = dd.from_pandas(base, npartitions=2), dd.from_pandas(cand, npartitions=2)
    with pytest.raises(NotImplementedError, match=r"\['latency_s'\].*method='poisson'"):
        ddb.rag.compare(ddc, metrics=["hit@5", "latency_s"])
    with pytest.raises(ValueError, match="Tango's interval for pass/fail"):
        ddb.rag.compare(ddc, metrics=["latency_s"], method="score")


def test_a_judged_runs_tripwires_are_compared_and_its_judged_metric_refused() -> None:
    from raglab import runs
    from raglab.monitor import simulate_log

    log = simulate_log(6_000, days=3, seed=21)
    rng = np.random.default_rng(0)
    cand = log.assign(citation_valid=np.where(rng.random(len(log)) < 0.02, 0.0, log["citation_valid"]))
    kw = {"metrics": ["citation_valid"], "on": "request_id", "method": "score"}
    base_d, cand_d = dd.from_pandas(log, npartitions=3), dd.from_pandas(cand, npartitions=2)
    got = base_d.rag.compare(cand_d, **kw)
    expected = runs.compare(log, cand, **kw)
    np.testing.assert_allclose(got[["diff", "low", "high"]].to_numpy(float),
                               expected[["diff", "low", "high"]].to_numpy(float), rtol=0, atol=1e-12)
    with pytest.raises(NotImplementedError, match=r"\['faithfulness'\] come from a judged sample"):
        base_d.rag.compare(cand_d, metrics=["faithfulness"], on="request_id", method="score")


# ---- clusters: the Poisson bootstrap keyed by the cluster's label (no shuffle of clusters) --------------


def _clustered(n: int = 240, seed: int = 4) -> tuple[pd.DataFrame, pd.DataFrame]:
    base, cand = _runs(n, seed)
    # conversations of 1 to 7 questions, a slice label per question (conversations cross slices)
    sizes = np.random.default_rng(seed).integers(1, 8, n)
    conv = np.repeat(np.arange(n), sizes)[:n]
    base = base.assign(conv=[f"c{c}" for c in conv])
    return base, cand.assign(conv=base["conv"])


@pytest.mark.parametrize("npartitions", PARTITIONS)
def test_clustered_poisson_equals_pandas_exactly(npartitions: int) -> None:
    base, cand = _clustered()
    kw = dict(metrics=["hit@5", "latency_s"], by="qtype", units="conv", method="poisson", n_resamples=250, seed=5)
    expected = runs.compare(base, cand, **kw)
    ddb = dd.from_pandas(_shuffled(base, 5), npartitions=npartitions)
    ddc = dd.from_pandas(_shuffled(cand.drop(columns="conv"), 6), npartitions=max(1, npartitions // 2))
    got = ddb.rag.compare(ddc, **kw)
    _assert_same(expected, got, exact_interval=True)
    assert got["n_clusters"].tolist() == expected["n_clusters"].tolist()
    assert got["method"].iloc[0] == "paired cluster bootstrap (Poisson)"
    assert got.attrs["raglab"]["comparison"]["units"] == "conv"


def test_clustered_rows_on_few_clusters_get_no_interval_as_on_pandas() -> None:
    base, cand = _clustered(60)
    base["conv"] = np.where(base["qtype"] == "yes/no", "one", base["conv"])  # one slice is a single cluster
    cand["conv"] = base["conv"]
    kw = dict(metrics=["hit@5"], by="qtype", units="conv", method="poisson", n_resamples=100, seed=1)
    with pytest.warns(UserWarning, match="clusters") as expected_warnings:
        expected = runs.compare(base, cand, **kw)
    with pytest.warns(UserWarning, match="clusters") as got_warnings:
        got = dd.from_pandas(base, npartitions=3).rag.compare(dd.from_pandas(cand, npartitions=2), **kw)
    _assert_same(expected, got, exact_interval=True)
    assert [str(w.message) for w in got_warnings if "clusters" in str(w.message)] == [
        str(w.message) for w in expected_warnings if "clusters" in str(w.message)]


@pytest.mark.parametrize("method", ["score", "auto"])
def test_clusters_take_the_poisson_bootstrap(method: str) -> None:
    base, cand = _clustered(60)
    with pytest.raises(NotImplementedError, match=r"units='conv'.*method='poisson'.*no shuffle"):
        dd.from_pandas(base, npartitions=2).rag.compare(dd.from_pandas(cand, npartitions=2), metrics=["hit@5"],
                                                        units="conv", method=method)


def test_runs_disagreeing_on_clusters_name_the_questions() -> None:
    base, cand = _clustered(60)
    cand.loc[cand["question_id"] == "q5", "conv"] = "elsewhere"
    with pytest.raises(RowTableError, match=r"partition \d+ of the Dask DataFrame: .*disagree on the cluster column 'conv'.*q5"):
        dd.from_pandas(base, npartitions=2).rag.compare(dd.from_pandas(cand, npartitions=2), metrics=["hit@5"],
                                                        units="conv", method="poisson", n_resamples=50)


# ---- question ids: integers pair as integers, 7 and "7" pair, as on pandas -------------------------------


@pytest.mark.parametrize("kinds", [("int", "int"), ("int", "str"), ("str", "int")])
def test_integer_and_text_ids_pair_as_on_pandas(kinds: tuple[str, str]) -> None:
    base, cand = _runs(90)
    base["question_id"] = np.arange(90) * 7 + 1
    cand["question_id"] = base["question_id"]
    if kinds[0] == "str":
        base["question_id"] = base["question_id"].astype(str)
    if kinds[1] == "str":
        cand["question_id"] = cand["question_id"].astype(str)
    kw = dict(metrics=["hit@5", "latency_s"], method="poisson", n_resamples=120, seed=2)
    expected = runs.compare(base, cand, **kw)
    got = dd.from_pandas(_shuffled(base, 1), npartitions=4).rag.compare(
        dd.from_pandas(_shuffled(cand, 2), npartitions=3), **kw)
    _assert_same(expected, got, exact_interval=True)
    missing = cand[cand["question_id"].astype(str) != "8"]
    with pytest.raises(RowTableError, match=r"1 question\(s\) only in base \(e\.g\. \['8'\]\)"):
        dd.from_pandas(base, npartitions=2).rag.compare(dd.from_pandas(missing, npartitions=2), **kw)
