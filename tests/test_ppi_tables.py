"""The table level of prediction-powered inference: rows.rag.estimate and raglab.stats.ppi_table."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from raglab import runs
from raglab._errors import RowTableError
from raglab._meta import update_meta
from raglab.stats import MIN_LABELS, ppi_mean, ppi_mean_clustered, ppi_mean_strata
from raglab.stats.results import PPI_TABLE, check_declared


def _rows(n: int = 3000, rate: float = 0.1, seed: int = 0, probability: np.ndarray | None = None) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    topic = np.where(rng.random(n) < 0.6, "a", "b")
    truth = (rng.random(n) < np.where(topic == "a", 0.85, 0.55)).astype(float)
    judge = np.where(rng.random(n) < 0.85, truth, 1 - truth)
    p = np.full(n, rate) if probability is None else probability
    selected = rng.random(n) < p
    rows = pd.DataFrame({
        "question_id": [f"q{i}" for i in range(n)], "topic": topic, "conv": np.arange(n) // 4,
        "faithfulness": judge, "human_faithful": np.where(selected, truth, np.nan),
        "selected": selected, "inclusion_probability": p,
    })
    method = "uniform" if probability is None else "neyman"
    update_meta(rows, "sampling", {"labelled": {"kind": "labelled", "method": method, "n": int(selected.sum()),
                                                "population": n, "inclusion_probability": "inclusion_probability",
                                                "seed": seed}})
    return rows


def _parts(rows: pd.DataFrame, mask: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    sub = rows if mask is None else rows[mask]
    lab = sub["human_faithful"].notna().to_numpy()
    return sub["human_faithful"].to_numpy()[lab], sub["faithfulness"].to_numpy()[lab], sub["faithfulness"].to_numpy()[~lab]


def test_estimate_overall_is_ppi_mean_with_human_and_judge_only_beside() -> None:
    rows = _rows()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a recorded uniform design: no warning
        table = runs.estimate(rows, "faithfulness", human="human_faithful")
    check_declared(table, PPI_TABLE)
    y, f, fu = _parts(rows)
    iv, human = ppi_mean(y, f, fu), ppi_mean(y, f, fu, lam=0)
    row = table.iloc[0]
    assert (row.metric, row.slice, row.n_labeled, row.n_judged) == ("faithfulness", "overall", y.size, len(rows))
    assert (row.estimate, row.low, row.high) == pytest.approx(tuple(iv), abs=1e-12)
    assert (row.human_only, row.human_only_low, row.human_only_high) == pytest.approx(tuple(human), abs=1e-12)
    assert row.human_only == pytest.approx(y.mean())
    judge = rows["faithfulness"].to_numpy()
    half = 1.959963984540054 * judge.std(ddof=1) / np.sqrt(judge.size)
    assert (row.judge_only, row.judge_only_low, row.judge_only_high) == pytest.approx(
        (judge.mean(), judge.mean() - half, judge.mean() + half), abs=1e-12)
    assert row.lam == pytest.approx(iv.lam) and row.effective_labels == pytest.approx(iv.effective_labels)
    assert row.method == "prediction-powered (PPI++, plus-four, t), weighted 1/p" and not row.below_min_labels
    assert row.high - row.low < row.human_only_high - row.human_only_low
    assert table.attrs["raglab"]["estimate"]["human"] == {"faithfulness": "human_faithful"}


def test_estimate_by_is_stratified_overall_and_ppi_per_slice() -> None:
    rows = _rows()
    table = runs.estimate(rows, human={"faithfulness": "human_faithful"}, by="topic")
    assert table.slice.tolist() == ["overall", "a", "b"]
    lab = rows["human_faithful"].notna().to_numpy()
    topic = rows["topic"].to_numpy()
    y, f, fu = _parts(rows)
    strat = ppi_mean_strata(y, f, fu, topic[lab], topic[~lab])
    assert tuple(table.iloc[0][["estimate", "low", "high"]]) == pytest.approx(tuple(strat), abs=1e-12)
    assert table.method[0].startswith("prediction-powered (PPI++, plus-four, t), stratified")
    for i, h in ((1, "a"), (2, "b")):
        iv = ppi_mean(*_parts(rows, topic == h))
        assert tuple(table.iloc[i][["estimate", "low", "high"]]) == pytest.approx(tuple(iv), abs=1e-12)


def test_estimate_units_is_clustered() -> None:
    rows = _rows()
    table = runs.estimate(rows, "faithfulness", human="human_faithful", units="conv")
    lab = rows["human_faithful"].notna().to_numpy()
    conv = rows["conv"].to_numpy()
    iv = ppi_mean_clustered(*_parts(rows), conv[lab], conv[~lab])
    assert tuple(table.iloc[0][["estimate", "low", "high"]]) == pytest.approx(tuple(iv), abs=1e-12)
    assert "clustered" in table.method[0]


def test_unequal_inclusion_probabilities_weight_labels_and_judge_every_row() -> None:
    """Labels drawn at unequal rates: the design-based (Horvitz-Thompson) estimator over every judged row."""
    from raglab.stats import ppi_mean_sampled

    n = 4000
    rng = np.random.default_rng(1)
    p = np.where(rng.random(n) < 0.5, 0.05, 0.3)
    rows = _rows(n, probability=p)
    table = runs.estimate(rows, "faithfulness", human="human_faithful")
    lab = rows["human_faithful"].notna().to_numpy()
    y, f = rows["human_faithful"].to_numpy()[lab], rows["faithfulness"].to_numpy()[lab]
    iv = ppi_mean_sampled(y, f, rows["faithfulness"].to_numpy()[~lab], p[lab])
    assert tuple(table.iloc[0][["estimate", "low", "high"]]) == pytest.approx(tuple(iv), abs=1e-12)
    assert "Horvitz-Thompson" in table.method[0] and "every judged row" in table.method[0]
    assert table.human_only[0] == pytest.approx(np.average(y, weights=1 / p[lab]))


def test_unequal_probabilities_coverage_on_a_simulated_law() -> None:
    """Labels drawn more often where the judge is right: the weighted estimate still covers the truth."""
    rng = np.random.default_rng(3)
    n, reps, covered = 2000, 200, 0
    for _ in range(reps):
        truth = (rng.random(n) < 0.7).astype(float)
        judge = np.where(rng.random(n) < 0.8, truth, 1 - truth)
        p = np.where(judge == truth, 0.2, 0.05)  # an informative design: unweighted labels would be biased
        lab = rng.random(n) < p
        y, f = truth[lab], judge[lab]
        iv = ppi_mean(y, f, judge, weights=1 / p[lab])
        covered += iv.low <= truth.mean() <= iv.high
    assert covered / reps >= 0.9


def test_guards_on_how_labels_were_chosen() -> None:
    rows = _rows()
    bare = rows.drop(columns=["selected", "inclusion_probability"])
    bare.attrs = {}
    with pytest.warns(UserWarning, match="not a recorded random sample"):
        runs.estimate(bare, "faithfulness", human="human_faithful")
    picked = rows.copy()
    unlabelled = np.flatnonzero(picked["human_faithful"].isna().to_numpy())[:3]
    picked.loc[unlabelled, "human_faithful"] = 1.0  # labels on rows the draw did not select
    with pytest.raises(RowTableError, match="3 labelled row\\(s\\) were not selected"):
        runs.estimate(picked, "faithfulness", human="human_faithful")
    few = _rows(rate=0.02)  # about 60 labels
    with pytest.warns(UserWarning, match=f"fewer than MIN_LABELS={MIN_LABELS}"):
        table = runs.estimate(few, "faithfulness", human="human_faithful")
    assert bool(table.below_min_labels[0])


def test_cells_that_cannot_be_estimated_say_why() -> None:
    rows = _rows(400)
    rows.loc[rows["topic"] == "b", "human_faithful"] = np.nan
    with pytest.warns(UserWarning):
        table = runs.estimate(rows, "faithfulness", human="human_faithful", by="topic")
    row_b = table[table.slice == "b"].iloc[0]
    assert np.isnan(row_b.estimate) and row_b.method.startswith("too few labels")
    assert not np.isnan(table.estimate[0])  # overall falls back to unstratified PPI


def test_stratified_neyman_design_coverage() -> None:
    """Labels drawn at different rates per stratum, estimated with by=: the stratified interval covers."""
    rng = np.random.default_rng(6)
    n, reps, covered = 3000, 120, 0
    topic = np.where(np.arange(n) < 2000, "a", "b")
    rate = np.where(topic == "a", 0.04, 0.15)
    for _ in range(reps):
        truth = (rng.random(n) < np.where(topic == "a", 0.9, 0.4)).astype(float)
        judge = np.where(rng.random(n) < np.where(topic == "a", 0.95, 0.7), truth, 1 - truth)
        selected = rng.random(n) < rate
        rows = pd.DataFrame({"topic": topic, "faithfulness": judge, "human": np.where(selected, truth, np.nan),
                             "selected": selected, "inclusion_probability": rate})
        update_meta(rows, "sampling", {"labelled": {"kind": "labelled", "method": "stratified", "n": int(selected.sum()),
                                                    "population": n, "strata": "topic",
                                                    "inclusion_probability": "inclusion_probability"}})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # stratum a has fewer than MIN_LABELS labels on some draws
            row = runs.estimate(rows, "faithfulness", human="human", by="topic").iloc[0]
        covered += row.low <= truth.mean() <= row.high
    assert covered / reps >= 0.88  # nominal 95%; Monte Carlo sd about 2 points at 120 reps


def test_compare_with_a_stratified_label_draw_is_stratified_ppi_on_the_differences() -> None:
    rows = _rows(2000)
    rng = np.random.default_rng(9)
    lab = rows["human_faithful"].notna().to_numpy()
    truth_c = np.where(rng.random(len(rows)) < 0.2, 1.0, rows["human_faithful"].fillna(0).to_numpy())
    judge_c = np.where(rng.random(len(rows)) < 0.85, truth_c, 1 - truth_c)
    cand = rows.assign(faithfulness=judge_c, human_faithful=np.where(lab, truth_c, np.nan))
    update_meta(rows, "sampling", {"labelled": {"kind": "labelled", "method": "stratified", "strata": "topic",
                                                "n": int(lab.sum()), "population": len(rows),
                                                "inclusion_probability": "inclusion_probability"}})
    table = runs.compare(rows, cand, metrics=["faithfulness"], human={"faithfulness": "human_faithful"},
                         n_permutations=0, n_resamples=100)
    dy = (cand["human_faithful"] - rows["human_faithful"]).to_numpy()[lab]
    df = (cand["faithfulness"] - rows["faithfulness"]).to_numpy()
    topic = rows["topic"].to_numpy()
    iv = ppi_mean_strata(dy, df[lab], df[~lab], topic[lab], topic[~lab])
    assert tuple(table.iloc[0][["diff", "low", "high"]]) == pytest.approx(tuple(iv), abs=1e-12)
    assert table.method[0] == "paired prediction-powered (PPI++), stratified"
