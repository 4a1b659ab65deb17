"""Metrics judged on a random sample: whole-set intervals in summary, compare and gate (issue 21).

Oracles: ppi_py (test-only) for the prediction-powered rows, a hand-computed stratified /
Horvitz-Thompson mean for the design-weighted rows, and a seeded coverage simulation.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

import raglab  # noqa: F401  (registers df.rag)
from raglab import runs
from raglab._errors import RowTableError
from raglab.sampling import draw
from raglab.stats import MIN_LABELS, ppi_mean, ppi_mean_strata

Z95 = float(sps.norm.ppf(0.975))


def _world(n_rows=3000, seed=1, flip=0.0):
    rng = np.random.default_rng(seed)
    topic = np.where(rng.random(n_rows) < 0.3, "a", "b")
    truth = (rng.random(n_rows) < np.where(topic == "a", 0.9, 0.6)).astype(float)
    lexical = np.clip(truth * 0.6 + rng.normal(0.2, 0.2, n_rows), 0, 1)
    rows = pd.DataFrame({"question_id": [f"q{i}" for i in range(n_rows)], "topic": topic,
                         "lexical_support": lexical})
    return rows, truth, rng


def _judged(rows, truth, n, *, by=None, seed=0, method="uniform", score=None, threshold=None):
    """A table judged on a sample, as rows.rag.judge(sample=...) leaves it (scores NaN off the sample)."""
    out = draw(rows, n, by=by, seed=seed, method=method, score=score, threshold=threshold, kind="judged")
    out["faithfulness"] = np.where(out["selected"], truth, np.nan)
    out.attrs["raglab"]["sampling"]["judged"]["metrics"] = ["faithfulness"]
    return out


def _bounds(interval):
    return float(interval.low), float(interval.high)


def _quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return function(*args, **kwargs)


def test_uniform_sample_with_a_predictor_equals_ppi_py():
    ppi_py = pytest.importorskip("ppi_py")
    rows, truth, _ = _world()
    judged = _judged(rows, truth, 400)
    row = judged.rag.summary(metrics=["faithfulness"], predictor="lexical_support").iloc[0]
    sel = judged["selected"].to_numpy()
    lex = judged["lexical_support"].to_numpy()
    w = 1 / judged["inclusion_probability"].to_numpy()[sel]
    low, high = ppi_py.ppi_mean_ci(truth[sel], lex[sel], lex[~sel], alpha=0.05)
    point = ppi_py.ppi_mean_pointestimate(truth[sel], lex[sel], lex[~sel])
    assert row["mean"] == pytest.approx(float(np.ravel(point)[0]), abs=1e-9)
    # the table's interval is raglab's default (adjusted) one on these arrays, whose Wald form is ppi_py's
    adjusted = ppi_mean(truth[sel], lex[sel], lex[~sel], weights=w)
    wald = ppi_mean(truth[sel], lex[sel], lex[~sel], weights=w, interval="wald")
    assert (row["low"], row["high"]) == pytest.approx(_bounds(adjusted), abs=1e-12)
    assert _bounds(wald) == pytest.approx((float(np.ravel(low)[0]), float(np.ravel(high)[0])), abs=1e-9)
    assert _bounds(adjusted) != pytest.approx(_bounds(wald), abs=1e-6)  # the table does not give the Wald one
    assert row["n"] == 400 and row["method"].startswith("prediction-powered (PPI++, plus-four, t)")
    assert "predictor 'lexical_support' on 3000 rows" in row["method"]
    # the cheap score helps: narrower than the design-weighted interval without it
    plain = judged.rag.summary(metrics=["faithfulness"]).iloc[0]
    assert row["high"] - row["low"] < plain["high"] - plain["low"]


def test_predictor_mapping_equals_the_string_form():
    rows, truth, _ = _world()
    judged = _judged(rows, truth, 400)
    a = judged.rag.summary(metrics=["faithfulness"], predictor="lexical_support")
    b = judged.rag.summary(metrics=["faithfulness"], predictor={"faithfulness": "lexical_support"})
    pd.testing.assert_frame_equal(a, b)
    assert a.attrs["raglab"]["summary"]["judged_subset"]["predictor"] == {"faithfulness": "lexical_support"}


def test_stratified_sample_without_predictor_is_the_horvitz_thompson_mean_not_the_naive_one():
    rows, truth, _ = _world()
    # oversample the small stratum: the naive mean of judged rows is biased towards it
    out = draw(rows, 300, by="topic", method="neyman", score="lexical_support", seed=4, kind="judged")
    out["faithfulness"] = np.where(out["selected"], truth, np.nan)
    row = out.rag.summary(metrics=["faithfulness"]).iloc[0]
    sel = out["selected"].to_numpy()
    p = out["inclusion_probability"].to_numpy()
    ht = float((truth[sel] / p[sel]).sum() / len(out))  # Horvitz-Thompson, by hand
    assert row["mean"] == pytest.approx(ht, abs=1e-12)
    # its Wald standard error by hand: sum_h W_h^2 var_h / n_h (population variance within the stratum) is
    # the stratified estimator's at lam = 0 with interval="wald"
    topic = out["topic"].to_numpy()
    var = sum((np.mean(topic == h)) ** 2 * truth[sel & (topic == h)].var() / (sel & (topic == h)).sum()
              for h in ("a", "b"))
    args = (truth[sel], np.zeros(sel.sum()), np.zeros((~sel).sum()), topic[sel], topic[~sel])
    w = 1 / p[sel]
    wald = ppi_mean_strata(*args, lam=0.0, weights=w, interval="wald")
    assert wald.estimate == pytest.approx(ht, abs=1e-12)
    assert wald.se == pytest.approx(np.sqrt(var), rel=1e-9)
    assert _bounds(wald) == pytest.approx((ht - Z95 * np.sqrt(var), ht + Z95 * np.sqrt(var)), rel=1e-9)
    # the table's interval is the same estimator's default (adjusted) one, a little wider
    adjusted = ppi_mean_strata(*args, lam=0.0, weights=w)
    assert row["se"] == pytest.approx(adjusted.se, rel=1e-12)
    assert (row["low"], row["high"]) == pytest.approx(_bounds(adjusted), abs=1e-12)
    assert row["high"] - row["low"] > wald.high - wald.low
    assert row["method"].startswith("design-weighted mean of the judged sample (plus-four, t), stratified")
    assert row["n"] == int(sel.sum())
    naive = float(np.nanmean(out["faithfulness"]))
    assert abs(naive - ht) > 0.005  # the silent naive mean would differ


def test_poisson_sample_without_predictor_is_the_weighted_mean():
    rows, truth, _ = _world()
    out = draw(rows, 300, method="active", score="lexical_support", threshold=0.5, seed=2, kind="judged")
    out["faithfulness"] = np.where(out["selected"], truth, np.nan)
    row = out.rag.summary(metrics=["faithfulness"]).iloc[0]
    sel = out["selected"].to_numpy()
    w = 1 / out["inclusion_probability"].to_numpy()[sel]
    mean = float((w * truth[sel]).sum() / w.sum())  # Hajek, by hand
    assert row["mean"] == pytest.approx(mean, abs=1e-12)
    # its interval is raglab's default (adjusted) one with the weights and lam = 0 (labels only), whose Wald
    # form is ppi_py's; the Wald one is conservative here: the linearised Hajek variance
    # sum w^2 (y - mean)^2 / (sum w)^2 covered 92.0% in 400 active draws, this one 96.5%
    ppi_py = pytest.importorskip("ppi_py")
    args = (truth[sel], np.zeros(sel.sum()), np.zeros(len(out)))
    adjusted = ppi_mean(*args, lam=0.0, weights=w)
    wald = ppi_mean(*args, lam=0.0, weights=w, interval="wald")
    assert (row["low"], row["high"]) == pytest.approx(_bounds(adjusted), abs=1e-12)
    low, high = ppi_py.ppi_mean_ci(*args, alpha=0.05, lam=0.0, w=w)
    assert _bounds(wald) == pytest.approx((float(np.ravel(low)[0]), float(np.ravel(high)[0])), abs=1e-9)
    assert wald.estimate == pytest.approx(mean, abs=1e-12)
    assert row["method"] == ("design-weighted mean of the judged sample (plus-four, t), weighted 1/p, over 3000 rows")


def test_slices_and_other_metrics_keep_their_rows():
    rows, truth, _ = _world()
    judged = _judged(rows, truth, 400, by="topic")
    table = judged.rag.summary(metrics=["faithfulness", "lexical_support"], by="topic",
                               predictor={"faithfulness": "lexical_support"})
    assert table[["metric", "slice"]].values.tolist() == [
        ["faithfulness", "overall"], ["faithfulness", "a"], ["faithfulness", "b"],
        ["lexical_support", "overall"], ["lexical_support", "a"], ["lexical_support", "b"]]
    assert table["method"].iloc[0].startswith("prediction-powered (PPI++, plus-four, t), stratified")
    assert table["n"].tolist()[:3] == [400, int(judged.selected[judged.topic == "a"].sum()),
                                      int(judged.selected[judged.topic == "b"].sum())]
    assert table["n"].tolist()[3:] == [3000, int((judged.topic == "a").sum()), int((judged.topic == "b").sum())]
    expected = runs.summary(judged, ["lexical_support"], by="topic")
    pd.testing.assert_frame_equal(table.iloc[3:].reset_index(drop=True), expected.reset_index(drop=True),
                                  check_like=False)


def test_coverage_of_the_whole_set_mean_in_a_small_simulation():
    rows, truth, _ = _world(n_rows=2000, seed=7)
    target = truth.mean()
    hits = {"predictor": 0, "design": 0}
    reps = 200
    for seed in range(reps):
        judged = _judged(rows, truth, 200, by="topic", seed=seed)
        for key, kwargs in (("predictor", {"predictor": "lexical_support"}), ("design", {})):
            row = judged.rag.summary(metrics=["faithfulness"], **kwargs).iloc[0]
            hits[key] += row["low"] <= target <= row["high"]
    for key, hit in hits.items():
        assert 0.90 <= hit / reps <= 0.99, (key, hit / reps)


def test_a_predictor_without_a_recorded_design_warns():
    rows, truth, rng = _world()
    table = rows.assign(faithfulness=np.where(rng.random(len(rows)) < 0.15, truth, np.nan))
    with pytest.warns(UserWarning, match="no sampling"):
        row = table.rag.summary(metrics=["faithfulness"], predictor="lexical_support").iloc[0]
    assert row["method"].startswith("prediction-powered")


def test_a_judged_table_with_scores_on_some_rows_and_no_design_warns():
    rows, truth, rng = _world(n_rows=300)
    table = rows.assign(faithfulness=np.where(rng.random(len(rows)) < 0.3, truth, np.nan), judge_error=None)
    table.attrs = {"raglab": {"judge": {"model": "m"}}}
    with pytest.warns(UserWarning, match="judged on some rows only"):
        runs.summary(table, ["faithfulness"])


def test_scores_on_rows_the_draw_did_not_select_are_refused():
    rows, truth, _ = _world(n_rows=500)
    judged = _judged(rows, truth, 150)
    judged.loc[~judged["selected"], "faithfulness"] = 1.0
    with pytest.raises(RowTableError, match="not selected by the recorded draw"):
        judged.rag.summary(metrics=["faithfulness"], predictor="lexical_support")


def test_few_judged_rows_warn():
    rows, truth, _ = _world(n_rows=1000)
    judged = _judged(rows, truth, MIN_LABELS - 40)
    with pytest.warns(UserWarning, match="fewer than MIN_LABELS"):
        judged.rag.summary(metrics=["faithfulness"], predictor="lexical_support")


def _two_runs(n_judged, seed=0, n_rows=3000):
    rows, truth, rng = _world(n_rows=n_rows)
    truth2 = np.where(rng.random(len(rows)) < 0.05, 1 - truth, truth)
    lex2 = np.clip(truth2 * 0.6 + rng.normal(0.2, 0.2, len(rows)), 0, 1)
    base = _judged(rows, truth, n_judged, seed=seed)
    cand = _judged(rows.assign(lexical_support=lex2), truth2, n_judged, seed=seed)
    return base, cand, truth, truth2


def test_paired_comparison_equals_ppi_py_on_the_differences():
    ppi_py = pytest.importorskip("ppi_py")
    base, cand, truth, truth2 = _two_runs(400)
    table = base.rag.compare(cand, metrics=["faithfulness"], predictor="lexical_support")
    row = table.iloc[0]
    sel = base["selected"].to_numpy()
    d_label = truth2 - truth
    d_pred = cand["lexical_support"].to_numpy() - base["lexical_support"].to_numpy()
    low, high = ppi_py.ppi_mean_ci(d_label[sel], d_pred[sel], d_pred[~sel], alpha=0.05)
    assert (row["low"], row["high"]) == pytest.approx((float(np.ravel(low)[0]), float(np.ravel(high)[0])), abs=1e-9)
    assert row["method"].startswith("paired prediction-powered")
    comparison = table.attrs["raglab"]["comparison"]
    assert comparison["n_labeled"]["faithfulness"]["overall"] == 400
    assert comparison["judged_subset"]["predictor"] == {"faithfulness": "lexical_support"}
    # base and cand are each run's whole-set estimate, as summary gives it
    for side, frame in (("base", base), ("cand", cand)):
        one = frame.rag.summary(metrics=["faithfulness"], predictor="lexical_support").iloc[0]
        assert row[side] == pytest.approx(one["mean"], abs=1e-12)


def test_gate_reviews_below_min_labels_and_decides_above():
    base, cand, *_ = _two_runs(60)
    result = _quiet(base.rag.gate, cand, metrics=["faithfulness"], margin=0.1, predictor="lexical_support")
    assert result.decision == "review"
    assert "labelled" in result.table["reason"].iloc[0]
    base, cand, *_ = _two_runs(400)
    result = base.rag.gate(cand, metrics=["faithfulness"], margin=0.1, predictor="lexical_support")
    assert result.decision == "pass"


def test_paired_without_predictor_uses_the_design_not_the_naive_pairs():
    base, cand, truth, truth2 = _two_runs(400)
    row = base.rag.compare(cand, metrics=["faithfulness"]).iloc[0]
    sel = base["selected"].to_numpy()
    d = (truth2 - truth)[sel]
    assert row["diff"] == pytest.approx(float(d.mean()), abs=1e-12)  # uniform design: the sample mean
    assert row["high"] - row["low"] == pytest.approx(2 * Z95 * d.std() / np.sqrt(d.size), rel=1e-9)


def test_human_and_predictor_together_are_refused():
    base, cand, *_ = _two_runs(200, n_rows=600)
    base["human"] = cand["human"] = np.nan
    with pytest.raises(ValueError, match="not both"):
        _quiet(base.rag.compare, cand, metrics=["faithfulness"], predictor="lexical_support",
               human={"faithfulness": "human"})


def test_rows_without_a_predictor_score_stay_in_the_whole_set_with_its_mean():
    ppi_py = pytest.importorskip("ppi_py")
    rows, truth, rng = _world()
    judged = _judged(rows, truth, 400)
    judged.loc[rng.random(len(judged)) < 0.1, "lexical_support"] = np.nan  # no checkable sentence
    row = judged.rag.summary(metrics=["faithfulness"], predictor="lexical_support").iloc[0]
    lex = judged["lexical_support"].to_numpy()
    lex = np.where(np.isnan(lex), np.nanmean(lex), lex)
    sel = judged["selected"].to_numpy()
    point = ppi_py.ppi_mean_pointestimate(truth[sel], lex[sel], lex[~sel])
    assert row["mean"] == pytest.approx(float(np.ravel(point)[0]), abs=1e-9)
    adjusted = ppi_mean(truth[sel], lex[sel], lex[~sel])
    assert (row["low"], row["high"]) == pytest.approx(_bounds(adjusted), abs=1e-9)
    low, high = ppi_py.ppi_mean_ci(truth[sel], lex[sel], lex[~sel], alpha=0.05)
    wald = ppi_mean(truth[sel], lex[sel], lex[~sel], interval="wald")
    assert _bounds(wald) == pytest.approx((float(np.ravel(low)[0]), float(np.ravel(high)[0])), abs=1e-9)
    assert row["n_excluded"] == 0 and "without a score given its mean" in row["method"]


def test_bad_predictors_are_refused():
    rows, truth, _ = _world(n_rows=400)
    judged = _judged(rows, truth, 120)
    with pytest.raises(KeyError, match="predictor"):
        judged.rag.summary(metrics=["faithfulness"], predictor="no_such_column")
    with pytest.raises(ValueError, match="not among the metrics"):
        judged.rag.summary(metrics=["faithfulness"], predictor={"recall@5": "lexical_support"})
    with pytest.raises(TypeError, match="predictor must be"):
        judged.rag.summary(metrics=["faithfulness"], predictor=["lexical_support"])


def test_questions_judged_in_one_run_only_warn():
    base, cand, *_ = _two_runs(300, n_rows=1000)
    cand = cand.copy()
    cand.loc[cand.index[cand["selected"]][:5], "faithfulness"] = np.nan
    with pytest.warns(UserWarning, match="in only one run"):
        table = base.rag.compare(cand, metrics=["faithfulness"], predictor="lexical_support")
    assert table.attrs["raglab"]["comparison"]["n_labeled"]["faithfulness"]["overall"] == 295


def test_end_to_end_with_rows_rag_judge_sample_and_the_lexical_tripwire():
    from raglab.judge import LexicalJudge
    from raglab.tripwires import lexical_support

    n = 200
    qtypes = ["factoid", "howto", "compare", "opinion"]
    rows = pd.DataFrame({
        "question_id": [f"q{i:03d}" for i in range(n)],
        "question": [f"Which bridge number {i} opened in year {1900 + i}?" for i in range(n)],
        "answer": [f"Bridge {i} opened in {1900 + i}." if i % 3 else f"It is painted blue {i}." for i in range(n)],
        "context": [[f"Bridge {i} opened in {1900 + i} after years of work."] for i in range(n)],
        "qtype": [qtypes[i % 4] for i in range(n)],
    })
    rows["lexical_support"] = lexical_support(rows["answer"], rows["context"])["supported_share"].to_numpy()
    out = rows.rag.judge(LexicalJudge(), metrics=["faithfulness"], sample=80, by="qtype", seed=5, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fewer than MIN_LABELS judged rows
        plain = out.rag.summary(metrics=["faithfulness"]).iloc[0]
        powered = out.rag.summary(metrics=["faithfulness"], predictor="lexical_support").iloc[0]
    sel = out["selected"].to_numpy(dtype=bool)
    y = out["faithfulness"].to_numpy(dtype=float)
    strata = out["qtype"].to_numpy()
    by_hand = sum(np.mean(strata == h) * y[sel & (strata == h)].mean() for h in qtypes)  # stratified mean
    assert plain["mean"] == pytest.approx(by_hand, abs=1e-12)
    assert plain["method"].startswith("design-weighted mean of the judged sample (plus-four, t), stratified")
    assert plain["n"] == powered["n"] == 80
    assert powered["method"].startswith("prediction-powered (PPI++, plus-four, t), stratified")
    full = rows.rag.judge(LexicalJudge(), metrics=["faithfulness"], progress=False)["faithfulness"].mean()
    assert powered["low"] <= full <= powered["high"]


def test_paired_poisson_sample_takes_the_predictor_mean_over_every_question():
    rows, truth, rng = _world()
    truth2 = np.where(rng.random(len(rows)) < 0.05, 1 - truth, truth)
    lex2 = np.clip(truth2 * 0.6 + rng.normal(0.2, 0.2, len(rows)), 0, 1)
    kw = {"method": "active", "score": "lexical_support", "threshold": 0.5, "seed": 3}
    base = _judged(rows, truth, 400, **kw)
    cand = base.assign(lexical_support=lex2, faithfulness=np.where(base["selected"], truth2, np.nan))
    row = base.rag.compare(cand, metrics=["faithfulness"], predictor="lexical_support").iloc[0]
    sel = base["selected"].to_numpy()
    w = np.where(sel, 1 / base["inclusion_probability"].to_numpy(), 0.0)  # 1 / pi on the drawn questions
    d_label = truth2 - truth
    d_pred = lex2 - base["lexical_support"].to_numpy()
    # the design-based (Horvitz-Thompson) PPI over every question, by hand: z = lam f + (y - lam f) xi / pi
    a = d_label * w
    b = d_pred * (1 - w)
    lam = float(np.clip(-np.cov(a, b)[0, 1] / np.var(b, ddof=1), 0, 1))
    z = a + lam * b
    half = 1.959963984540054 * z.std(ddof=1) / np.sqrt(z.size)
    assert (row["low"], row["high"]) == pytest.approx((z.mean() - half, z.mean() + half), abs=1e-9)


def test_clusters_give_a_clustered_interval():
    rows, truth, _ = _world(n_rows=2000)
    judged = _judged(rows, truth, 400).assign(conversation=[f"c{i // 4}" for i in range(2000)])
    plain = judged.rag.summary(metrics=["faithfulness"], predictor="lexical_support").iloc[0]
    clustered = judged.rag.summary(metrics=["faithfulness"], predictor="lexical_support", units="conversation").iloc[0]
    assert "clustered" in clustered["method"] and "clustered" not in plain["method"]
    assert clustered["n"] == plain["n"] == 400


BEGIN = __import__("pathlib").Path(__file__).resolve().parents[1].parent / "shared" / "data" / "begin_wow"


@pytest.mark.skipif(not (BEGIN / "wow_begin_test_wow.tsv").exists(),
                    reason="the BEGIN (WoW) data is not in ../shared/data/begin_wow")
def test_begin_human_attribution_on_a_sample_with_the_lexical_tripwire():
    """Real data: BEGIN's human attribution label as the expensive score, the lexical tripwire on every row."""
    from raglab.tripwires import lexical_support

    df = pd.concat([pd.read_csv(BEGIN / f"wow_begin_{s}_wow.tsv", sep="\t", quoting=3) for s in ("dev", "test")],
                   ignore_index=True).dropna(subset=["response", "knowledge", "begin_label"]).reset_index(drop=True)
    y = (df["begin_label"].str.strip() == "Fully attributable").astype(float).to_numpy()
    lex = lexical_support(df["response"].astype(str), df["knowledge"].astype(str))["supported_share"].to_numpy()
    rows = pd.DataFrame({"question_id": [f"r{i}" for i in range(len(df))], "model": df["model_name"],
                         "lexical_support": lex})
    width = {"ppi": [], "design": []}
    hits = {"ppi": 0, "design": 0}
    for seed in range(100):
        judged = draw(rows, 300, by="model", seed=seed, kind="judged")
        judged["attributable"] = np.where(judged["selected"], y, np.nan)
        for key, kwargs in (("ppi", {"predictor": "lexical_support"}), ("design", {})):
            row = judged.rag.summary(metrics=["attributable"], **kwargs).iloc[0]
            hits[key] += row["low"] <= y.mean() <= row["high"]
            width[key].append(row["high"] - row["low"])
    assert hits["ppi"] >= 88 and hits["design"] >= 88, hits
    assert np.mean(width["ppi"]) < 0.95 * np.mean(width["design"])  # the tripwire is worth labels
