"""``raglab.engines.estimate``: prediction-powered estimates on a partitioned table equal ``runs.estimate``.

A tiny in-memory engine (``ListPartitions``: a list of pandas frames, combined in a random tree) cuts
shuffled rows into 1, 3, 8 and 64 partitions (one of them empty); the table (columns, dtypes, values
to 1e-12, warnings, attrs) must be the one :func:`raglab.runs.estimate` makes from the rows, for every
design of :func:`raglab.sampling.draw`, with slices, clusters spread across partitions, a fixed
``lam``, two metrics and cells too small to estimate. A few checks run through Dask, and on FRANK and
MTRAG (bundled in ``data/``).
"""

from __future__ import annotations

import copy
import random
import warnings
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np
import pandas as pd
import pytest

from raglab import runs
from raglab._errors import RowTableError
from raglab._validation import called_as
from raglab.engines import Partitions, estimate
from raglab.engines._estimate import _partition_cells
from raglab.sampling import draw

T = TypeVar("T")


class ListPartitions(Partitions):
    """Partitions held as a list of pandas frames; ``reduce`` combines the results in a random tree."""

    engine, prefix, to_pandas = "list", "ldf", "pd.concat(parts)"

    def __init__(self, parts: list[pd.DataFrame], attrs: dict[str, Any], seed: int = 0) -> None:
        self.parts = parts
        self.meta = parts[0].iloc[:0].copy()
        self.meta.attrs = copy.deepcopy(attrs)
        self.seed = seed

    def reduce(self, fn: Callable[[pd.DataFrame, int], T], combine: Callable[..., T]) -> T:
        rng = random.Random(self.seed)
        items = [fn(part.copy(), number) for number, part in enumerate(self.parts)]
        while len(items) > 1:  # any grouping, any order: combine must not care
            chosen = set(rng.sample(range(len(items)), rng.randint(2, min(4, len(items)))))
            merged = combine(*[items[i] for i in sorted(chosen, key=lambda _: rng.random())])
            items = [x for i, x in enumerate(items) if i not in chosen]
            items.insert(rng.randint(0, len(items)), merged)
        return items[0]

    def collect(self, fn: Callable[[pd.DataFrame, int], pd.DataFrame]) -> pd.DataFrame:
        return pd.concat([self.meta, *(fn(p, i) for i, p in enumerate(self.parts))], ignore_index=True)

    def paired(self, other: Partitions, on: str, columns: Sequence[str], other_columns: Sequence[str],
               other_on: str | None = None) -> Partitions:
        raise NotImplementedError


def partitioned(rows: pd.DataFrame, k: int, seed: int = 0) -> ListPartitions:
    """The rows shuffled and cut into ``k`` partitions at random points, one of them empty when ``k > 1``."""
    rng = np.random.default_rng(seed)
    shuffled = rows.iloc[rng.permutation(len(rows))]
    if k == 1:
        parts = [shuffled]
    else:
        cuts = np.sort(rng.choice(np.arange(1, len(rows)), k - 2, replace=False))
        parts = np.split(np.arange(len(rows)), cuts)
        parts = [shuffled.iloc[p] for p in parts]
        parts.insert(int(rng.integers(0, k)), shuffled.iloc[:0])
    return ListPartitions(parts, rows.attrs, seed)


def _run(fn: Callable[..., pd.DataFrame], *args: Any, **kw: Any) -> tuple[pd.DataFrame, list[str]]:
    """``fn(*args, **kw)`` and the texts of the warnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = fn(*args, **kw)
    return table, [str(w.message) for w in caught]


def assert_same(got: pd.DataFrame, want: pd.DataFrame) -> None:
    assert list(got.columns) == list(want.columns)
    assert list(got.dtypes) == list(want.dtypes)
    assert len(got) == len(want)
    for column in want.columns:
        if want[column].dtype.kind == "f":
            np.testing.assert_allclose(got[column].to_numpy(), want[column].to_numpy(), rtol=0, atol=1e-12,
                                       equal_nan=True, err_msg=column)
        else:
            assert got[column].tolist() == want[column].tolist(), column
    assert got.attrs == want.attrs


def check(rows: pd.DataFrame, ks: Sequence[int] = (1, 3, 8, 64), **kw: Any) -> pd.DataFrame:
    """``estimate`` on ``rows`` cut into each of ``ks`` partitions equals ``runs.estimate`` on the rows."""
    with called_as("ldf.rag.estimate"):  # the same name in both tables' warnings
        want, want_warnings = _run(runs.estimate, rows, **kw)
    for k in ks:
        got, got_warnings = _run(estimate, partitioned(rows, k, seed=k), **kw)
        assert_same(got, want)
        assert got_warnings == want_warnings
    return want


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    """3000 turns in conversations of 1-6 turns, three topics, a continuous and a pass/fail judge."""
    rng = np.random.default_rng(3)
    sizes = rng.integers(1, 7, 900)
    conv = np.repeat(np.arange(sizes.size), sizes)[:3000]
    n = conv.size
    topic = np.array(["billing", "login", "shipping"])[rng.choice(3, sizes.size, p=[0.5, 0.3, 0.2])][conv]
    truth = (rng.random(sizes.size)[conv] * 0.5 + rng.random(n) * 0.7 > 0.45).astype(float)
    judge = np.clip(np.where(rng.random(n) < 0.82, truth, 1 - truth) * 0.8 + 0.2 * rng.random(n), 0, 1)
    relevant = (rng.random(n) < np.where(truth > 0, 0.9, 0.4)).astype(float)
    judge_r = np.where(rng.random(n) < 0.85, relevant, 1 - relevant)
    rows = pd.DataFrame({
        "question_id": [f"t{i}" for i in range(n)], "conv": [f"c{c}" for c in conv], "topic": topic,
        "faithfulness": judge, "relevance": judge_r, "truth_f": truth, "truth_r": relevant,
    })
    rows.index = pd.RangeIndex(100, 100 + n)  # errors name index labels: not positions
    return rows


def labelled(rows: pd.DataFrame, n: int = 240, **design: Any) -> pd.DataFrame:
    """A draw of ``rows`` with both metrics' labels on the selected rows."""
    marked = draw(rows, n, seed=5, **design)
    picked = marked["selected"].to_numpy()
    marked["human_f"] = np.where(picked, marked["truth_f"], np.nan)
    marked["human_r"] = np.where(picked, marked["truth_r"], np.nan)
    return marked


HUMAN = {"faithfulness": "human_f", "relevance": "human_r"}
DESIGNS = {
    "uniform": {},
    "stratified": {"by": "topic"},
    "neyman": {"by": "topic", "method": "neyman", "score": "faithfulness"},
    "active": {"method": "active", "score": "faithfulness", "threshold": 0.5, "floor": 0.3},
}


@pytest.mark.parametrize("design", list(DESIGNS))
def test_every_design_with_slices_clusters_and_lam_equals_pandas(table, design):
    rows = labelled(table, **DESIGNS[design])
    out = check(rows, human=HUMAN)  # two metrics
    assert out["n_judged"].tolist() == [3000, 3000]
    assert ("Horvitz-Thompson" in out["method"][0]) == (design != "uniform")  # unequal p: the design-based PPI
    check(rows, human=HUMAN, by="topic", ks=(1, 8))
    out = check(rows, metrics="faithfulness", human="human_f", units="conv", ks=(1, 8))
    assert "clustered" in out["method"][0]
    check(rows, human=HUMAN, by="topic", units="conv", lam=0.6, ks=(3, 64))


def test_labels_without_a_design_too_few_labels_and_dropped_rows(table):
    rows = table.copy()
    rng = np.random.default_rng(9)
    rows["human_f"] = np.where(rng.random(len(rows)) < 0.05, rows["truth_f"], np.nan)
    rows["human_r"] = rows["human_f"].where(rows["topic"] != "login")
    rows.loc[rows.index[(rows["topic"] == "login").to_numpy()][:1], "human_r"] = 1.0  # one label in login
    rows.loc[rows.index[:40], "faithfulness"] = np.nan  # labelled rows without a judge score are left out
    rows["topic"] = rows["topic"].astype("category")
    out = check(rows, human=HUMAN, by="topic", units="conv")
    cell = out[(out["metric"] == "relevance") & (out["slice"] == "login")]
    assert cell["method"].tolist() == ["too few labels (1)"]
    assert np.isnan(cell["estimate"]).all() and cell["judge_only"].notna().all()


def test_every_judged_row_labelled_is_a_reason_not_an_error(table):
    rows = table.iloc[:300].copy()
    rows["human_f"] = rows["truth_f"]
    out = check(rows, metrics="faithfulness", human="human_f", ks=(1, 3))
    assert out["method"][0] == "every judged row is labelled (use summary on the labels)"


def test_scores_outside_zero_one_take_the_wald_interval(table):
    rows = labelled(table)
    rows["faithfulness"] = rows["faithfulness"] * 4 - 1  # a score on another scale: no plus-four adjustment
    out = check(rows, metrics="faithfulness", human="human_f", by="topic", ks=(1, 8))
    assert "plus-four" not in out["method"][0]


def test_the_design_s_table_level_warnings_come_once_as_on_pandas(table):
    rows = labelled(table)
    subset = rows[rows["topic"] != "login"]  # drawn from 3000 rows, estimated on fewer
    check(subset, metrics="faithfulness", human="human_f", ks=(1, 8))
    check(rows.drop(columns="inclusion_probability"), metrics="faithfulness", human="human_f", ks=(3,))


def test_workers_send_labelled_rows_and_sums_only(table):
    rows = labelled(table)
    n_rows, cells = _partition_cells(rows, 0, pairs=HUMAN, by=["topic"], units="conv", question_id="question_id",
                                     attrs=rows.attrs, caller_name="ldf.rag.estimate", engine="list")
    assert n_rows == len(rows)
    for cell in cells:
        assert cell.y.size == int(rows["selected"].sum())  # the unlabelled rows stay on the worker as sums
        assert cell.unl.sums[:, 0].sum() == len(rows) - cell.y.size


def test_row_errors_name_the_partition_and_the_row(table):
    rows = labelled(table)
    outside = rows.index[~rows["selected"].to_numpy()][7]
    rows.loc[outside, "human_f"] = 1.0  # a label on a row the draw did not select
    frame = partitioned(rows, 3)
    number = next(i for i, p in enumerate(frame.parts) if outside in p.index)
    qid = rows.loc[outside, "question_id"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RowTableError, match=rf"^partition {number} of the list DataFrame: ldf.rag.estimate: 1 "
                                                rf"labelled row\(s\) were not selected.*row {outside} \(question_id "
                                                rf"'{qid}'\)"):
            estimate(frame, "faithfulness", human="human_f")
        rows = labelled(table).astype({"relevance": object})
        rows.loc[rows.index[5], "relevance"] = "high"
        with pytest.raises(RowTableError, match=r"^partition \d+ of the list DataFrame: ldf.rag.estimate: score "
                                                r"column 'relevance' must hold numbers"):
            estimate(partitioned(rows, 3), human=HUMAN)


def test_missing_columns_are_refused_before_any_work(table):
    rows = labelled(table)
    with pytest.raises(KeyError, match="topics"):
        estimate(partitioned(rows, 3), "faithfulness", human="human_f", by="topics")
    with pytest.raises(KeyError, match="human_x"):
        estimate(partitioned(rows, 3), "faithfulness", human="human_x")


def test_through_dask(table):
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    from raglab.dask import DaskPartitions

    for design in ("uniform", "active"):
        rows = labelled(table, **DESIGNS[design])
        for kw in ({"human": HUMAN, "by": "topic"}, {"metrics": "faithfulness", "human": "human_f", "units": "conv"}):
            with called_as("ddf.rag.estimate"):
                want, want_warnings = _run(runs.estimate, rows, **kw)
            for k in (1, 8):
                ddf = dd.from_pandas(rows.sample(frac=1, random_state=k), npartitions=k)
                with dask.config.set(scheduler="sync"):
                    got, got_warnings = _run(estimate, DaskPartitions(ddf), **kw)
                assert_same(got, want)
                assert got_warnings == want_warnings


def test_frank_by_system_clustered_by_article():
    from raglab.datasets.frank import load_summaries

    rows = load_summaries()
    for design in ({}, {"method": "active", "score": "qags", "threshold": 0.5}):
        marked = draw(rows, 250, seed=1, **design)
        marked["human"] = marked["human_faithful"].where(marked["selected"])
        check(marked, metrics="qags", human="human", by="system", units="article_id", ks=(1, 8, 64))


def test_mtrag_human_scale_clustered_by_conversation():
    from raglab.datasets.mtrag import load_responses

    rows = load_responses()
    marked = draw(rows, 120, by="domain", seed=2)
    marked["human"] = marked["human_mean"].where(marked["selected"])  # a 1-4 scale: the Wald interval
    out = check(marked, metrics="rb_llm", human="human", by="domain", units="conversation_id", ks=(1, 3, 8))
    assert "plus-four" not in out["method"][0]
