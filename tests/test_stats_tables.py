"""summary and compare tables (pure functions and df.rag methods): per metric and slice, NaN counted,
pairing by id, jointly consistent resamples, row order."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.stats

import raglab
from raglab import stats
from raglab._meta import update_meta

statsmodels_proportion = pytest.importorskip("statsmodels.stats.proportion")

COMPARE_COLUMNS = [
    "metric", "slice", "n", "n_dropped", "n_changed", "base", "cand", "p_value", "p_decrease", "p_increase", "skew", "method", "level",
    "n_resamples", "seed", "test", "n_permutations", "diff", "low", "high",
]
SUMMARY_COLUMNS = ["metric", "slice", "n", "n_excluded", "se", "method", "level", "n_resamples", "seed",
                   "mean", "low", "high"]


def _run(n=600, seed=0):
    rng = np.random.default_rng(seed)
    qtype = rng.choice(["factoid", "howto", "multi"], n, p=[0.5, 0.3, 0.2])
    hit = (rng.random(n) < 0.7).astype(float)
    ndcg = rng.beta(2, 2, n)
    ndcg[rng.random(n) < 0.05] = np.nan
    return pd.DataFrame(
        {"question_id": [f"q{i:04d}" for i in range(n)], "qtype": qtype, "hit@5": hit, "ndcg@5": ndcg,
         "latency_ms": rng.gamma(3, 100, n)}
    )


def _candidate(base, seed=1):
    rng = np.random.default_rng(seed)
    n = len(base)
    hit = np.where(rng.random(n) < 0.9, base["hit@5"], 1 - base["hit@5"])
    ndcg = np.clip(base["ndcg@5"] + rng.normal(0.02, 0.1, n), 0, 1)
    ndcg[rng.random(n) < 0.03] = np.nan
    return base.assign(**{"hit@5": hit, "ndcg@5": ndcg, "latency_ms": base["latency_ms"] * rng.lognormal(0, 0.1, n)})


# ---- summary ----------------------------------------------------------------------------------------


def test_summary_wilson_and_t_per_slice_match_statsmodels_and_scipy():
    rows = _run()
    table = rows.rag.summary(["hit@5", "ndcg@5"], by="qtype")
    assert list(table.columns) == SUMMARY_COLUMNS
    assert table["slice"].tolist() == ["overall", "factoid", "howto", "multi"] * 2
    for _, row in table.iterrows():
        mask = np.ones(len(rows), bool) if row["slice"] == "overall" else (rows["qtype"] == row["slice"]).to_numpy()
        values = rows.loc[mask, row["metric"]].dropna().to_numpy()
        assert row["n"] == len(values) and row["n_excluded"] == mask.sum() - len(values)
        assert row["mean"] == pytest.approx(values.mean(), abs=1e-12)
        if row["metric"] == "hit@5":
            low, high = statsmodels_proportion.proportion_confint(values.sum(), len(values), method="wilson")
            assert row["method"] == "wilson"
            assert row["se"] == pytest.approx(np.sqrt(values.mean() * (1 - values.mean()) / len(values)), rel=1e-12)
        else:
            # nDCG lies in [0, 1]: Wilson's score interval at the effective n = n p (1 - p) / s^2 with the t
            # quantile, i.e. the roots of (p - mu)^2 = z^2 mu (1 - mu) / n_eff, solved here with np.roots.
            p, n_eff = values.mean(), len(values) * values.mean() * (1 - values.mean()) / values.var(ddof=1)
            k = scipy.stats.t.ppf(0.975, len(values) - 1) ** 2 / n_eff
            low, high = sorted(np.roots([1 + k, -(2 * p + k), p * p]).real)
            assert row["method"] == "wilson (bounded score, effective n)"
            assert row["se"] == pytest.approx(scipy.stats.sem(values), rel=1e-12)
        assert (row["low"], row["high"]) == pytest.approx((low, high), abs=1e-12)
        assert pd.isna(row["n_resamples"]) and pd.isna(row["seed"])
    assert table.loc[table["metric"] == "ndcg@5", "n_excluded"].iloc[0] == rows["ndcg@5"].isna().sum() > 0


@pytest.mark.parametrize("method", ["exact", "normal"])
def test_summary_other_proportion_methods(method):
    rows = _run()
    row = rows.rag.summary("hit@5", method=method).iloc[0]
    ref = statsmodels_proportion.proportion_confint(rows["hit@5"].sum(), len(rows),
                                                    method={"exact": "beta", "normal": "normal"}[method])
    assert (row["low"], row["high"]) == pytest.approx(ref, abs=1e-12)
    assert row["method"] == method


def test_summary_bootstrap_on_request_matches_scipy():
    rows = _run()
    table = rows.rag.summary(["ndcg@5"], method="percentile", seed=3)
    row = table.iloc[0]
    values = rows["ndcg@5"].dropna().to_numpy()
    ref = scipy.stats.bootstrap((values,), np.mean, n_resamples=10_000, method="percentile", rng=1)
    assert row["low"] == pytest.approx(ref.confidence_interval.low, abs=0.15 * ref.standard_error)
    assert row["high"] == pytest.approx(ref.confidence_interval.high, abs=0.15 * ref.standard_error)
    assert row["se"] == pytest.approx(ref.standard_error, rel=0.05)
    assert row["method"] == "bootstrap (percentile)" and row["n_resamples"] == 10_000 and row["seed"] == 3


def test_summary_accessor_equals_the_pure_function():
    rows = _run()
    via_accessor = rows.rag.summary(["hit@5", "ndcg@5"], by="qtype")
    direct = stats.summary({"hit@5": rows["hit@5"], "ndcg@5": rows["ndcg@5"]}, slices=rows["qtype"])
    pd.testing.assert_frame_equal(via_accessor, direct)


def test_summary_defaults_to_numeric_score_columns_and_keeps_attrs():
    rows = _run()
    update_meta(rows, "evalset", {"name": "demo", "version": "1", "hash": "abc"})
    table = rows.rag.summary(by="qtype")
    assert list(dict.fromkeys(table["metric"])) == ["hit@5", "ndcg@5", "latency_ms"]
    assert table.attrs["raglab"]["evalset"]["hash"] == "abc"
    assert "attrs" not in rows.columns and list(rows.columns) == list(_run().columns)  # not mutated


def test_summary_missing_slice_values_and_constant_columns():
    table = stats.summary({"s": [0.5, 0.5, 0.5, 0.5]}, slices=["a", None, "a", np.nan])
    assert table["slice"].tolist() == ["overall", "a", "(missing)"]
    assert (table["low"] == table["high"]).all() and (table["se"] == 0).all()


def test_summary_errors():
    with pytest.raises(ValueError, match="values other than 0 and 1"):
        stats.summary({"s": [0.5, 1]}, method="wilson")
    with pytest.raises(ValueError, match=r"must be one of \['auto', 'wilson'"):
        stats.summary({"s": [0.5, 1]}, method="bootstrap")
    with pytest.raises(ValueError, match="units= needs a bootstrap method"):
        stats.summary({"s": [0.5, 1]}, method="t", units=["a", "b"])
    with pytest.raises(ValueError, match="names the row over all questions"):
        stats.summary({"s": [0.5, 1]}, slices=["overall", "x"])
    rows = _run()
    with pytest.raises(raglab.MissingColumnError, match="needs score column 'recall@5'"):
        rows.rag.summary(["recall@5"])
    with pytest.raises(raglab.MissingColumnError, match="needs column 'kind'"):
        rows.rag.summary(["hit@5"], by="kind")
    bad = rows.assign(score=["x"] + [0.5] * (len(rows) - 1))
    with pytest.raises(raglab.RowTableError, match=r"must hold numbers.*row 0 \(question_id 'q0000'\) hold 'x'"):
        bad.rag.summary(["score"])


# ---- compare ----------------------------------------------------------------------------------------


def test_compare_columns_counts_and_means():
    base = _run()
    cand = _candidate(base)
    table = base.rag.compare(cand, metrics=["hit@5", "ndcg@5"], by="qtype")
    assert list(table.columns) == COMPARE_COLUMNS
    for _, row in table.iterrows():
        mask = np.ones(len(base), bool) if row["slice"] == "overall" else (base["qtype"] == row["slice"]).to_numpy()
        b, c = base.loc[mask, row["metric"]].to_numpy(), cand.loc[mask, row["metric"]].to_numpy()
        complete = ~(np.isnan(b) | np.isnan(c))
        assert row["n"] == complete.sum() and row["n_dropped"] == mask.sum() - complete.sum()
        assert row["base"] == pytest.approx(b[complete].mean(), abs=1e-12)
        assert row["cand"] == pytest.approx(c[complete].mean(), abs=1e-12)
        assert row["diff"] == pytest.approx((c - b)[complete].mean(), abs=1e-12)
        assert row["low"] <= row["diff"] <= row["high"]
        expected = (("paired score (Tango)", 0.95, pd.NA, pd.NA) if row["metric"] == "hit@5"
                    else ("paired betting (Waudby-Smith-Ramdas)", 0.95, pd.NA, 0))
        assert (row["method"], row["level"], row["n_resamples"], row["seed"]) == expected
    assert table.loc[table["metric"] == "ndcg@5", "n_dropped"].sum() > 0


def test_compare_slice_intervals_match_scipy_on_each_slice():
    base = _run(n=1500)
    cand = _candidate(base)
    table = base.rag.compare(cand, metrics=["ndcg@5"], by="qtype", seed=2, method="percentile")
    for _, row in table.iterrows():
        mask = np.ones(len(base), bool) if row["slice"] == "overall" else (base["qtype"] == row["slice"]).to_numpy()
        b, c = base.loc[mask, "ndcg@5"].to_numpy(), cand.loc[mask, "ndcg@5"].to_numpy()
        keep = ~(np.isnan(b) | np.isnan(c))
        ref = scipy.stats.bootstrap((b[keep], c[keep]), lambda x, y, axis=-1: np.mean(y - x, axis=axis),
                                    paired=True, vectorized=True, n_resamples=10_000, method="percentile", rng=5)
        # Monte Carlo error plus the domain estimate's random slice size (about 1/(2n) relative width).
        tol = 0.15 * ref.standard_error
        assert row["low"] == pytest.approx(ref.confidence_interval.low, abs=tol)
        assert row["high"] == pytest.approx(ref.confidence_interval.high, abs=tol)


def test_compare_overall_is_paired_bootstrap_with_the_same_seed():
    rng = np.random.default_rng(3)
    b, c = rng.random(300), rng.random(300)
    row = stats.compare({"s": b}, {"s": c}, seed=9, method="percentile").iloc[0]
    iv = stats.paired_bootstrap(b, c, seed=9)
    assert (row["diff"], row["low"], row["high"]) == tuple(iv)


def test_metrics_and_slices_share_the_resamples():
    rng = np.random.default_rng(4)
    b, c = rng.random(500), rng.random(500)
    slices = rng.choice(["x", "y"], 500)
    table = stats.compare({"a": b, "twice": 2 * b}, {"a": c, "twice": 2 * c}, slices=slices, seed=1)
    a = table[table["metric"] == "a"].reset_index(drop=True)
    twice = table[table["metric"] == "twice"].reset_index(drop=True)
    # Scaling by 2 is exact in floating point: shared resamples give exactly twice the bounds.
    np.testing.assert_array_equal(twice["low"], 2 * a["low"])
    np.testing.assert_array_equal(twice["high"], 2 * a["high"])
    one_slice = stats.compare({"a": b}, {"a": c}, slices=["all"] * 500, seed=1)
    assert one_slice.loc[0, ["low", "high"]].tolist() == one_slice.loc[1, ["low", "high"]].tolist()


def test_row_order_does_not_matter_through_compare():
    base = _run()
    cand = _candidate(base)
    one = base.rag.compare(cand, metrics=["hit@5", "ndcg@5", "latency_ms"], by="qtype")
    shuffled_base = base.sample(frac=1, random_state=1)
    shuffled_cand = cand.sample(frac=1, random_state=2)
    two = shuffled_base.rag.compare(shuffled_cand, metrics=["hit@5", "ndcg@5", "latency_ms"], by="qtype")
    pd.testing.assert_frame_equal(one, two, check_exact=True)


def test_compare_accessor_equals_the_pure_function():
    base = _run()
    cand = _candidate(base).iloc[::-1]
    via_accessor = base.rag.compare(cand, metrics=["hit@5", "ndcg@5"], by="qtype", adjust="holm")
    aligned = cand.set_index("question_id").loc[base["question_id"]].reset_index()
    direct = stats.compare(base[["hit@5", "ndcg@5"]], aligned[["hit@5", "ndcg@5"]], slices=base["qtype"],
                           adjust="holm")
    pd.testing.assert_frame_equal(via_accessor, direct)
    assert via_accessor.attrs["raglab"]["comparison"]["on"] == "question_id"


def test_compare_with_clusters():
    base = _run()
    cand = _candidate(base)
    base["doc"] = [f"d{i // 6}" for i in range(len(base))]
    table = base.rag.compare(cand, metrics=["ndcg@5"], units="doc")
    assert table["method"].iloc[0] == "paired cluster bootstrap (expanded percentile)"
    assert table["n_clusters"].iloc[0] == base["doc"].nunique()
    assert table["test"].iloc[0] == "sign-flip permutation (clusters)"
    assert table.attrs["raglab"]["comparison"]["units"] == "doc"


def test_compare_bca_per_slice_matches_scipy():
    base = _run(n=1500)
    cand = _candidate(base)
    table = base.rag.compare(cand, metrics=["ndcg@5", "latency_ms"], method="bca", by="qtype", seed=4)
    assert (table["method"] == "paired bootstrap (bca)").all()
    for _, row in table.iterrows():
        mask = np.ones(len(base), bool) if row["slice"] == "overall" else (base["qtype"] == row["slice"]).to_numpy()
        b, c = base.loc[mask, row["metric"]].to_numpy(), cand.loc[mask, row["metric"]].to_numpy()
        keep = ~(np.isnan(b) | np.isnan(c))
        ref = scipy.stats.bootstrap((b[keep], c[keep]), lambda x, y, axis=-1: np.mean(y - x, axis=axis),
                                    paired=True, vectorized=True, n_resamples=10_000, method="BCa", rng=6)
        tol = 0.15 * ref.standard_error
        assert row["low"] == pytest.approx(ref.confidence_interval.low, abs=tol)
        assert row["high"] == pytest.approx(ref.confidence_interval.high, abs=tol)


# ---- pairing by question id ---------------------------------------------------------------------------


def test_different_question_sets_raise_listing_ids_unless_inner():
    base = _run(n=50)
    cand = _candidate(base).iloc[3:]
    with pytest.raises(raglab.RowTableError, match=r"3 question\(s\) only in base \(e.g. \['q0000', 'q0001', 'q0002'\]\)"):
        base.rag.compare(cand, metrics=["hit@5"])
    with pytest.warns(UserWarning, match="shared questions only; 3 question"):
        table = base.rag.compare(cand, metrics=["hit@5"], how="inner")
    assert table["n"].iloc[0] == 47
    assert table.attrs["raglab"]["comparison"]["n_base_only"] == 3


def test_eval_set_mismatch_refused_and_judge_mismatch_warns():
    base = _run(n=50)
    cand = _candidate(base)
    update_meta(base, "evalset", {"name": "qa", "version": "1", "hash": "aaa"})
    update_meta(cand, "evalset", {"name": "qa", "version": "2", "hash": "bbb"})
    with pytest.raises(raglab.EvalSetMismatchError, match="different eval sets"):
        base.rag.compare(cand, metrics=["hit@5"])
    with pytest.warns(UserWarning, match="different eval sets"):
        base.rag.compare(cand, metrics=["hit@5"], allow_evalset_mismatch=True, n_resamples=200)
    update_meta(cand, "evalset", {"name": "qa", "version": "1", "hash": "aaa"})
    update_meta(base, "judge", {"fingerprint": "j1", "model": "a"})
    update_meta(cand, "judge", {"fingerprint": "j2", "model": "b"})
    with pytest.warns(raglab.JudgeMismatchWarning, match="DIFFERENT JUDGES"):
        table = base.rag.compare(cand, metrics=["hit@5"], n_resamples=200)
    runs = table.attrs["raglab"]["comparison"]["runs"]
    assert runs["base"]["judge"]["fingerprint"] == "j1" and runs["cand"]["judge"]["fingerprint"] == "j2"
    assert runs["base"]["evalset"]["hash"] == "aaa"


def test_slice_labels_must_agree_between_runs():
    base = _run(n=30)
    cand = _candidate(base)
    cand.loc[4, "qtype"] = "other"
    with pytest.raises(raglab.RowTableError, match=r"disagree on the slice column 'qtype' for 1 question\(s\), e.g. question_id \['q0004'\]"):
        base.rag.compare(cand, metrics=["hit@5"], by="qtype")
    only_cand = base.drop(columns="qtype").rag.compare(_candidate(base), metrics=["hit@5"], by="qtype", n_resamples=100)
    assert "overall" in only_cand["slice"].tolist() and len(only_cand) > 1


def test_several_by_columns_cross():
    base = _run(n=200)
    base["long"] = np.where(np.arange(200) % 2 == 0, "yes", "no")
    table = base.rag.compare(_candidate(base), metrics=["hit@5"], by=["qtype", "long"], n_resamples=200)
    assert "qtype=factoid, long=no" in table["slice"].tolist()
    assert len(table) == 1 + 6


def test_compare_errors_name_the_problem():
    base = _run(n=40)
    cand = _candidate(base).drop(columns="ndcg@5")
    with pytest.raises(raglab.MissingColumnError, match="needs score column 'ndcg@5' in the candidate run"):
        base.rag.compare(cand, metrics=["ndcg@5"])
    with pytest.raises(ValueError, match=r"`how` must be one of \['exact', 'inner'\], but 'outer'"):
        base.rag.compare(cand, metrics=["hit@5"], how="outer")
    with pytest.raises(ValueError, match=r"`adjust` must be one of \[None, 'holm'\]"):
        base.rag.compare(_candidate(base), metrics=["hit@5"], adjust="bonferroni")
    with pytest.raises(ValueError, match="same metrics"):
        stats.compare({"a": [1, 0]}, {"b": [1, 0]})
    with pytest.raises(ValueError, match="same questions in the same order: 2 vs 3"):
        stats.compare({"a": [1, 0]}, {"a": [1, 0, 1]})


def test_compare_default_metrics_are_shared_numeric_columns():
    base = _run(n=40)
    cand = _candidate(base).drop(columns="latency_ms")
    table = base.rag.compare(cand, n_resamples=100)
    assert list(dict.fromkeys(table["metric"])) == ["hit@5", "ndcg@5"]


def test_empty_slice_for_a_metric_gives_nan_and_counts():
    base = pd.DataFrame({"question_id": list("abcd"), "t": ["x", "x", "y", "y"], "s": [0.1, 0.2, np.nan, np.nan]})
    cand = base.assign(s=[0.3, 0.1, 0.5, 0.6])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table = base.rag.compare(cand, metrics=["s"], by="t", n_resamples=200)
    y = table[table["slice"] == "y"].iloc[0]
    assert y["n"] == 0 and y["n_dropped"] == 2 and np.isnan(y["low"]) and np.isnan(y["p_value"])


def test_too_many_slices_for_memory_is_a_clear_error():
    n = 20_000
    with pytest.raises(ValueError, match="slice by a column with fewer values"):
        # a continuous metric: pass/fail metrics take Tango's interval and need no resamples in memory
        stats.compare({"s": np.zeros(n)}, {"s": np.full(n, 0.5)}, slices=np.arange(n), n_resamples=10_000)
