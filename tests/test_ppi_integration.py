"""Prediction-powered rows inside compare, gate and estimate: counts and guards found in review."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

import raglab  # noqa: F401  (registers df.rag)


def _runs(n: int = 160, clusters: int = 20, labelled: float = 0.75, seed: int = 0):
    rng = np.random.default_rng(seed)
    conv = np.repeat([f"c{i}" for i in range(clusters)], n // clusters)

    def run(rate: float) -> pd.DataFrame:
        truth = (rng.random(n) < rate).astype(float)
        judge = np.where(rng.random(n) < 0.85, truth, 1 - truth)
        return pd.DataFrame({"question_id": [f"q{i}" for i in range(n)], "conv": conv,
                             "faithfulness": judge, "human_faithful": truth, "also": judge})

    base, cand = run(0.7), run(0.75)
    unlabelled = rng.random(n) >= labelled
    base.loc[unlabelled, "human_faithful"] = np.nan
    cand.loc[unlabelled, "human_faithful"] = np.nan
    return base, cand


def test_clustered_prediction_powered_rows_count_clusters_not_questions():
    base, cand = _runs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no recorded label design here
        plain = base.rag.compare(cand, metrics=["faithfulness"], units="conv")
        powered = base.rag.compare(cand, metrics=["faithfulness"], units="conv",
                                   human={"faithfulness": "human_faithful"})
        gated = base.rag.gate(cand, metrics=["faithfulness"], margin=0.5, units="conv",
                              human={"faithfulness": "human_faithful"})
    assert plain["n_clusters"].iloc[0] == powered["n_clusters"].iloc[0] == 20
    # 20 clusters are below the gate's cluster minimum: review, whatever the interval says
    assert gated.table["decision"].iloc[0] == "review"


def test_estimate_with_one_label_column_for_two_metrics():
    base, _ = _runs(n=400, clusters=40, labelled=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        both = base.rag.estimate(["faithfulness", "also"], human={"faithfulness": "human_faithful",
                                                                  "also": "human_faithful"})
        one = base.rag.estimate("faithfulness", human="human_faithful")
    assert list(both["metric"]) == ["faithfulness", "also"]
    assert both["n_labeled"].tolist() == [one["n_labeled"].iloc[0]] * 2
    np.testing.assert_allclose(both[["estimate", "low", "high"]].iloc[0], one[["estimate", "low", "high"]].iloc[0])


def _gate_on_draw(n_labels: int, method: str, margin: float = 0.5):
    """The gate's row on a 2,000-question comparison whose labels were drawn by ``draw(method=...)``."""
    from raglab.sampling import draw

    base, cand = _runs(n=2000, clusters=2000, labelled=1.0, seed=3)
    base["uncertain"] = (np.arange(2000) % 2).astype(float)  # half the questions: drawn far more often when active
    drawn = draw(base, n_labels, method=method, seed=5, **({"score": "uncertain"} if method == "active" else {}))
    unlabelled = ~drawn["selected"].to_numpy()
    b, c = drawn.copy(), cand.copy()
    b.loc[unlabelled, "human_faithful"] = np.nan
    c.loc[unlabelled, "human_faithful"] = np.nan
    c["selected"], c["inclusion_probability"] = drawn["selected"], drawn["inclusion_probability"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gated = b.rag.gate(c, metrics=["faithfulness"], margin=margin, units=False,
                           human={"faithfulness": "human_faithful"})
    w = 1 / drawn["inclusion_probability"].to_numpy()[drawn["selected"].to_numpy()]
    return gated.table.iloc[0], float(w.sum() ** 2 / (w @ w)), int(drawn["selected"].sum())


def test_gate_decides_on_paired_ppi_from_an_active_draw_with_enough_effective_labels():
    # 1,000 expected labels, about 50 of them at the floor (weight 20): Kish's effective labels well above MIN_LABELS
    row, effective, n_lab = _gate_on_draw(1000, "active")
    assert effective >= 100 and n_lab >= 100
    assert "Horvitz-Thompson" in row["method"]  # the design-based interval (ppi_mean_sampled)
    assert row["decision"] == "pass", row["reason"]  # a true effect of +0.05 against a margin of 0.5
    uniform, _, _ = _gate_on_draw(1000, "uniform")
    assert uniform["decision"] == "pass" and "Horvitz-Thompson" not in uniform["method"]


def test_gate_reviews_paired_ppi_from_an_active_draw_below_min_labels():
    # 250 expected labels, about 12 of them at the floor with weight 80: about 50 effective labels
    row, effective, n_lab = _gate_on_draw(250, "active")
    assert n_lab >= 100 > effective
    assert row["decision"] == "review"
    assert "effective labels" in row["reason"] and f"{effective:.0f} effective" in row["reason"]
    # and fewer than MIN_LABELS labelled questions at all: the label count's review
    few, _, n_few = _gate_on_draw(60, "active")
    assert n_few < 100 and few["decision"] == "review" and "questions labelled by people" in few["reason"]


def test_estimate_warns_when_few_conversations_are_labelled():
    base, _ = _runs(n=400, clusters=20, labelled=0.6, seed=7)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        base.rag.estimate("faithfulness", human="human_faithful", units="conv")
    texts = [str(w.message) for w in caught]
    assert any("fewer than MIN_LABELED_CLUSTERS=30 labelled clusters" in t and "(20)" in t for t in texts)
    many, _ = _runs(n=400, clusters=100, labelled=0.6, seed=7)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        many.rag.estimate("faithfulness", human="human_faithful", units="conv")
    assert not any("MIN_LABELED_CLUSTERS" in str(w.message) for w in caught)
