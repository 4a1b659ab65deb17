"""The judge's known biases measured on labelled rows (verbosity, self-preference, position), and the
agreement report's advice: prediction-powered inference for labels from the run, Rogan-Gladen for
error rates carried over from a separate validation set."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import raglab  # noqa: F401  (registers the accessor)
from raglab import agreement
from raglab._meta import update_meta

HUMAN = [1] * 150 + [0] * 50
JUDGE = [1] * 142 + [0] * 8 + [1] * 22 + [0] * 28


# ---- the report's recommendation -----------------------------------------------------------------


def test_labels_from_the_run_recommend_ppi():
    rows = pd.DataFrame({"question_id": [f"q{i}" for i in range(200)], "human": HUMAN, "judge": JUDGE})
    update_meta(rows, "sampling", {"labelled": {"kind": "labelled", "method": "uniform", "n": 200,
                                                "population": 2000, "seed": 0}})
    rep = rows.rag.agreement("human", "judge", positive=1, warn=False)
    text = rep.recommendation
    assert text.startswith("The labels are a random sample of this run's rows")
    assert "prediction-powered" in text and "raglab.stats.ppi_mean" in text and "rows.rag.estimate" in text
    assert "Rogan-Gladen only for other runs" in text
    assert "recommendation" in repr(rep) and "prediction-powered" in rep._repr_html_()
    assert rep.to_dict()["recommendation"] == text


def test_labels_from_a_validation_set_keep_rogan_gladen():
    rep = agreement.report(HUMAN, JUDGE, positive=1, labels_from="validation", warn=False)
    assert rep.recommendation.startswith("The labels come from a separate validation set: the Rogan-Gladen")
    assert "report.correct" in rep.recommendation
    # the recommended correction is the one the report carries
    assert round(rep.correct(0.70, 400).estimate, 3) == 0.513


def test_unknown_origin_gives_both_with_their_conditions():
    rep = agreement.report(HUMAN, JUDGE, positive=1, warn=False)
    text = rep.recommendation
    assert text.startswith("If the labels are a random sample of the rows")
    assert "prediction-powered" in text and "If they come from a separate validation set" in text
    assert "Rogan-Gladen" in text and "reused across systems support neither" in text
    assert agreement.report(HUMAN, JUDGE, positive=1, labels_from="run", warn=False).recommendation.startswith(
        "The labels are a random sample")
    with pytest.raises(ValueError, match="labels_from"):
        agreement.report(HUMAN, JUDGE, positive=1, labels_from="elsewhere")


def test_no_pass_label_no_rate_advice():
    rep = agreement.report(["a", "b", "a", "c"] * 10, ["a", "b", "b", "c"] * 10, warn=False)
    assert rep.recommendation == ""


# ---- the judge's biases ----------------------------------------------------------------------------


def simulate(seed: int, *, n: int = 300, verbosity: float = 0.0, binary_judge: bool = False,
             length_tracks_quality: bool = True) -> pd.DataFrame:
    """Human labels 0/1; answer lengths that (by default) are longer for good answers; a judge that
    sees the true quality and, with ``verbosity`` > 0, also rewards length itself."""
    rng = np.random.default_rng(seed)
    human = rng.integers(0, 2, n)
    words = rng.integers(10, 120, n) + (60 * human if length_tracks_quality else 0)
    latent = 1.0 * human + verbosity * (words - words.mean()) / 50 + rng.normal(0, 0.6, n)
    judge = (latent > 0.5).astype(float) if binary_judge else latent
    return pd.DataFrame({"question_id": [f"q{i}" for i in range(n)], "human": human, "judge": judge,
                         "answer": [" ".join(["w"] * int(k)) for k in words]})


def test_verbosity_numbers_match_independent_oracles():
    sm = pytest.importorskip("statsmodels.formula.api")
    from scipy import stats

    rows = simulate(1, verbosity=0.3)
    found = agreement.judge_biases(rows, human="human", judge="judge", warn=False)
    # slope per 100 words with one intercept per human label, HC1: statsmodels
    data = rows.assign(length=rows["answer"].str.split().str.len() / 100)
    fit = sm.ols("judge ~ C(human) + length", data=data).fit(cov_type="HC1", use_t=True)
    slope = found.intervals["verbosity_slope"]
    low, high = fit.conf_int(alpha=0.05).loc["length"]
    np.testing.assert_allclose([slope.estimate, slope.low, slope.high], [fit.params["length"], low, high], rtol=1e-9)
    assert slope.level == 0.95 and "HC1" in slope.method
    # pooled within-label Spearman by Fisher z: scipy's Spearman per label, pooled by hand
    z = w = 0.0
    for _, group in data.groupby("human"):
        rho = stats.spearmanr(group["length"], group["judge"]).statistic
        z += (len(group) - 3) * np.arctanh(rho)
        w += len(group) - 3
    half = stats.norm.ppf(0.975) * np.sqrt(1.06 / w)
    rank = found.intervals["verbosity"]
    np.testing.assert_allclose([rank.estimate, rank.low, rank.high], np.tanh([z / w, z / w - half, z / w + half]))
    assert rank.n == 300 and "Fisher z" in rank.method and found.flagged["verbosity"]


@pytest.mark.parametrize("binary_judge", [False, True])
def test_unbiased_judge_is_flagged_at_the_stated_rate(binary_judge):
    # length tracks quality (good answers are longer), so length and judge score correlate overall;
    # among answers people rated alike they do not: a false flag has probability 1 - ci = 5%.
    seeds = 400
    flags = sum(agreement.judge_biases(simulate(s, binary_judge=binary_judge), human="human", judge="judge",
                                       warn=False).flagged["verbosity"] for s in range(seeds))
    rate = flags / seeds
    assert rate <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / seeds), rate  # 0.083


@pytest.mark.parametrize("binary_judge", [False, True])
def test_a_judge_that_prefers_long_answers_is_flagged(binary_judge):
    seeds = 100
    flags = 0
    for s in range(seeds):
        found = agreement.judge_biases(simulate(s, verbosity=0.5, binary_judge=binary_judge), human="human",
                                       judge="judge", warn=False)
        flags += found.flagged["verbosity"]
        assert found.intervals["verbosity"].estimate > 0
        assert bool(found.warnings) == found.flagged["verbosity"]
    assert flags >= 95
    with pytest.warns(agreement.JudgeBiasWarning, match="verbosity: the judge scores longer answers higher"):
        agreement.judge_biases(simulate(0, verbosity=0.5), human="human", judge="judge")


def test_self_preference_measured_with_a_model_column():
    rng = np.random.default_rng(1)
    n = 600
    rows = simulate(1, n=n)
    rows["model"] = np.where(np.arange(n) % 2 == 0, "openai/gpt-4o", "llama-3-70b")
    own = (rows["model"] == "openai/gpt-4o").to_numpy()
    biased = rows.assign(judge=rows["judge"] + 0.3 * own + rng.normal(0, 0.01, n))
    found = agreement.judge_biases(biased, human="human", judge="judge", model="model", judge_model="gpt-4o",
                                   warn=False)
    iv = found.intervals["self_preference"]
    assert found.flagged["self_preference"] and iv.low < 0.3 < iv.high and "Welch" in iv.method
    # the oracle: scipy's Welch t interval on judge - human, own minus others
    from scipy import stats
    gap = (biased["judge"] - biased["human"]).to_numpy()
    res = stats.ttest_ind(gap[own], gap[~own], equal_var=False)
    ci = res.confidence_interval(0.95)
    np.testing.assert_allclose([iv.low, iv.high], [ci.low, ci.high], rtol=1e-9)
    fair = agreement.judge_biases(rows, human="human", judge="judge", model="model", judge_model="gpt-4o",
                                  warn=False)
    assert fair.intervals["self_preference"].low < 0 < fair.intervals["self_preference"].high
    assert not fair.flagged["self_preference"]


def test_self_preference_from_the_judge_fingerprint_and_the_run_model():
    rows = simulate(3)
    update_meta(rows, "judge", {"model": "gpt-4o-mini"})
    rows.attrs["raglab"]["run"] = {"model": "gpt-4o-mini"}
    with pytest.warns(agreement.JudgeBiasWarning, match="is the system's model"):
        found = agreement.judge_biases(rows, human="human", judge="judge")
    assert found.flagged["self_preference"] and found.intervals["self_preference"] is None
    assert found.judge_model == "gpt-4o-mini" and found.system_model == "gpt-4o-mini"
    rows.attrs["raglab"]["run"] = {"model": "llama-3-70b"}
    other = agreement.judge_biases(rows, human="human", judge="judge", warn=False)
    assert not other.flagged["self_preference"] and "not expected" in other.notes["self_preference"]
    del rows.attrs["raglab"]["run"]
    unknown = agreement.judge_biases(rows, human="human", judge="judge", warn=False)
    assert unknown.notes["self_preference"].startswith("not measured: the system's model is unknown")


def test_position_flip_share_with_a_wilson_interval():
    from statsmodels.stats.proportion import proportion_confint

    n = 200
    rng = np.random.default_rng(0)
    first = rng.choice(["A", "B"], n)
    consistent = np.where(first == "A", "B", "A")  # the same option wins in the swapped order
    flip = np.arange(n) < 60  # 30% choose slot A in both orders
    swapped = np.where(flip, "A", consistent)
    first = np.where(flip, "A", first)
    swapped = np.where(flip, "A", np.where(first == "A", "B", "A"))
    rows = simulate(0, n=n).assign(verdict=first, verdict_swapped=swapped)
    found = agreement.judge_biases(rows, human="human", judge="judge", position=("verdict", "verdict_swapped"),
                                   warn=False)
    iv = found.intervals["position"]
    low, high = proportion_confint(60, n, alpha=0.05, method="wilson")
    np.testing.assert_allclose([iv.estimate, iv.low, iv.high], [0.3, low, high])
    assert found.flagged["position"] and "'A' was chosen 60 times of 60" in found.notes["position"]
    fair = rows.assign(verdict_swapped=np.where(rows["verdict"] == "A", "B", "A"))
    calm = agreement.judge_biases(fair, human="human", judge="judge", position=("verdict", "verdict_swapped"),
                                  warn=False)
    assert calm.intervals["position"].estimate == 0 and not calm.flagged["position"]
    none = agreement.judge_biases(rows, human="human", judge="judge", warn=False)
    assert none.intervals["position"] is None and none.notes["position"].startswith("not measured")
    table = found.to_frame()
    assert table["bias"].tolist() == ["verbosity", "verbosity_slope", "self_preference", "position"]
    assert (table["level"] == 0.95).all()
    assert found.to_dict()["intervals"]["position"]["method"] == iv.method


def test_bad_inputs_name_the_column():
    rows = simulate(0)
    with pytest.raises(KeyError, match="nope"):
        agreement.judge_biases(rows, human="nope", judge="judge")
    with pytest.raises(KeyError, match="answer='<column>'"):
        agreement.judge_biases(rows.drop(columns="answer"), human="human", judge="judge")
    with pytest.raises(ValueError, match="min_group"):
        agreement.judge_biases(rows, human="human", judge="judge", min_group=2)


def clustered(seed: int, *, groups: int = 120, per: int = 3, verbosity: float = 0.0) -> pd.DataFrame:
    """``per`` answers to each of ``groups`` questions: length and judge leniency shared within a question."""
    rng = np.random.default_rng(seed)
    n = groups * per
    task = np.repeat(np.arange(groups), per)
    human = rng.integers(0, 2, n)
    words = rng.integers(10, 60, n) + rng.integers(0, 150, groups)[task] + 40 * human
    lenient = rng.normal(0, 0.5, groups)[task]
    judge = human + lenient + verbosity * (words - words.mean()) / 50 + rng.normal(0, 0.4, n)
    model = np.tile(["gpt-4o", "llama", "reference"], groups)[:n]
    return pd.DataFrame({"task_id": task, "human": human, "judge": judge, "model": model,
                         "answer": [" ".join(["w"] * int(k)) for k in words]})


def test_clustered_intervals_match_statsmodels():
    sm = pytest.importorskip("statsmodels.formula.api")
    rows = clustered(2, verbosity=0.2)
    found = agreement.judge_biases(rows, human="human", judge="judge", model="model", judge_model="gpt-4o",
                                   units="task_id", n_resamples=500, warn=False)
    data = rows.assign(length=rows["answer"].str.split().str.len() / 100, gap=rows["judge"] - rows["human"],
                       own=(rows["model"] == "gpt-4o").astype(float))
    fit = sm.ols("judge ~ C(human) + length", data=data).fit(
        cov_type="cluster", cov_kwds={"groups": data["task_id"]}, use_t=True)
    slope = found.intervals["verbosity_slope"]
    np.testing.assert_allclose([slope.estimate, *fit.conf_int().loc["length"]], [slope.estimate, slope.low,
                               slope.high], rtol=1e-9)
    np.testing.assert_allclose(slope.estimate, fit.params["length"], rtol=1e-9)
    assert "CR1" in slope.method and "119 df" in slope.method
    gap = sm.ols("gap ~ own", data=data).fit(cov_type="cluster", cov_kwds={"groups": data["task_id"]}, use_t=True)
    sp = found.intervals["self_preference"]
    np.testing.assert_allclose([sp.estimate, sp.low, sp.high], [gap.params["own"], *gap.conf_int().loc["own"]],
                               rtol=1e-9)
    rank = found.intervals["verbosity"]
    assert rank.n_resamples == 500 and rank.seed == 0 and "cluster bootstrap" in rank.method
    assert rank.low < rank.estimate < rank.high


def test_clustered_verbosity_false_flags_near_the_stated_rate():
    # length and leniency shared within a question inflate the independent-rows false-flag rate;
    # the cluster bootstrap keeps it near 1 - ci
    seeds = 60
    naive = clusters = 0
    for s in range(seeds):
        rows = clustered(100 + s)
        naive += agreement.judge_biases(rows, human="human", judge="judge", warn=False).flagged["verbosity"]
        clusters += agreement.judge_biases(rows, human="human", judge="judge", units="task_id", n_resamples=300,
                                           seed=s, warn=False).flagged["verbosity"]
    # measured over 300 seeds: 17.0% of independent-rows intervals exclude 0, 5.7% of cluster-bootstrap ones
    assert clusters / seeds <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / seeds)  # 0.13
    assert naive > clusters  # the design is clustered enough for the independent interval to mislead


def test_mtrag_judges_biases_on_real_labels():
    """MTRAG: 159 tasks x 3 answerers, human faithfulness 1-4 (median of 2-3 raters, rounded), answers'
    lengths from the raw file; clustered by task. Measured: the RAGAS faithfulness judge (rl_f) shows no
    length bias, the aggregate RADBench score and ROUGE-L score longer answers lower among answers people
    rated alike."""
    import json

    from conftest import shared_path

    from raglab.datasets.mtrag import load_responses

    raw = json.loads(shared_path("mtrag_human_eval", "reference_subset_with_human_evaluations.json").read_text())
    answers = pd.DataFrame([{"task_id": e["task_id"], "model": e["model_id"], "answer": e["model_response"]}
                            for e in raw["evaluations"]])
    rows = load_responses("faithfulness").merge(answers, on=["task_id", "model"])
    rows["human"] = rows["human_median"].round()
    rows["human01"] = (rows["human_median"] - 1) / 3
    assert len(rows) == 477
    found = {judge: agreement.judge_biases(rows, human="human", judge=judge, units="task_id", warn=False)
             for judge in ("rl_f", "rb_agg", "rouge_l")}
    assert not found["rl_f"].flagged["verbosity"]
    assert round(found["rl_f"].intervals["verbosity"].estimate, 3) == 0.030
    for judge in ("rb_agg", "rouge_l"):
        iv = found[judge].intervals["verbosity"]
        assert found[judge].flagged["verbosity"] and iv.high < 0, (judge, iv)
    own = agreement.judge_biases(rows, human="human01", judge="rl_f", model="model", judge_model="gpt-4o",
                                 units="task_id", warn=False)
    sp = own.intervals["self_preference"]
    assert not own.flagged["self_preference"] and "159 clusters" in sp.method
    assert round(sp.estimate, 3) == 0.026


def test_only_labelled_rows_count_and_booleans_are_numbers():
    rows = simulate(4, n=500, verbosity=0.5)
    rows["human_bool"] = rows["human"].astype(bool).astype(object)
    rows.loc[200:, "human_bool"] = None  # people labelled the first 200 rows only
    found = agreement.judge_biases(rows, human="human_bool", judge="judge", warn=False)
    assert found.intervals["verbosity"].n == 200 and found.intervals["verbosity_slope"].n == 200
    labelled = agreement.judge_biases(rows.iloc[:200].assign(human=rows["human"].iloc[:200]), human="human",
                                      judge="judge", warn=False)
    assert found.intervals["verbosity"] == labelled.intervals["verbosity"]


@pytest.mark.parametrize(("judge_model", "system", "same"), [
    ("gpt-4o-2024-08-06", "gpt-4o", True),
    ("openai/gpt-4o", "gpt-4o-2024-11-20", True),
    ("claude-3-5-sonnet-20241022", "anthropic/claude-3-5-sonnet-latest", True),
    ("gpt-4-0613", "gpt-4", True),
    ("gpt-4o-mini-2024-07-18", "gpt-4o", False),  # a different model, not a snapshot
    ("gpt-4o", "gpt-4o-mini", False),
])
def test_self_preference_matches_dated_snapshots_of_one_model(judge_model, system, same):
    rows = simulate(3)
    update_meta(rows, "judge", {"model": judge_model})
    rows.attrs["raglab"]["run"] = {"model": system}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", agreement.JudgeBiasWarning)
        found = agreement.judge_biases(rows, human="human", judge="judge")
    assert found.flagged["self_preference"] is same
    assert ("is the system's model" in found.notes["self_preference"]) is same
