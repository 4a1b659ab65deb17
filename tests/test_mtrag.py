"""MTRAG human evaluations (data/mtrag): the loader, inter-annotator agreement (krippendorff,
statsmodels), each LLM judge against the human majority (scikit-learn), and the build script.

Stated threshold for judge validation: a rater passes an answer as faithful when they rate it 3 or 4
("Mostly Yes" / "Yes"); the human label is the majority of the 2-3 raters, ties dropped; a judge
passes an answer when its score in [0, 1] is >= 0.5.

The paired comparison of two answerers on the same tasks needs the paired bootstrap of issue 4 and
is left to that issue.
"""

from __future__ import annotations

import importlib.util
import json
import warnings
from collections import Counter

import krippendorff
import numpy as np
import pandas as pd
import pytest
from conftest import REPO, shared_path
from sklearn.metrics import balanced_accuracy_score, cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

import raglab  # noqa: F401  (registers df.rag)
from raglab._meta import evalset_of
from raglab._rowtable import pair_runs
from raglab.agreement import LowAgreementWarning, fleiss_kappa, judge_vs_majority, krippendorff_alpha
from raglab.datasets.mtrag import (
    JUDGES,
    MODELS,
    load_ratings,
    load_responses,
    load_runs,
    load_tasks,
    rater_columns,
)

RATING_PASS = 3  # "Mostly Yes" or "Yes"
JUDGE_PASS = 0.5


@pytest.fixture(scope="module")
def rows() -> pd.DataFrame:
    return load_responses("faithfulness")


def _human_majority_pass(rows: pd.DataFrame) -> pd.Series:
    """Independent majority: per answer, count raters at >= 3 and < 3; NaN on a tie."""
    ratings = load_ratings()
    ratings = ratings[ratings["faithfulness"].notna()]
    passed = (ratings["faithfulness"] >= RATING_PASS).astype(int)
    votes = passed.groupby([ratings["task_id"], ratings["model_id"]]).agg(["sum", "count"])
    fails = votes["count"] - votes["sum"]
    majority = pd.Series(np.where(votes["sum"] > fails, 1.0, np.where(votes["sum"] < fails, 0.0, np.nan)),
                         index=votes.index)
    return pd.Series(majority.reindex(pd.MultiIndex.from_arrays([rows["task_id"], rows["model"]])).to_numpy(),
                     index=rows.index)


# ---- the loader ------------------------------------------------------------------------------------


def test_loader_shapes_and_counts_match_the_source_description(rows):
    # SOURCE.txt of ../shared/data/mtrag_human_eval: 159 tasks x 3 models = 477 evaluations; faithfulness
    # ratings 4:890, 3:261, 2:159, 1:109; answerability ANSWERABLE 135, PARTIAL 15, UNANSWERABLE 7,
    # CONVERSATIONAL 2; 2-3 annotators per response
    assert len(rows) == 477 and rows["task_id"].nunique() == 159
    assert rows.groupby("model").size().to_dict() == dict.fromkeys(MODELS, 159)
    values = rows[rater_columns(rows)].stack().value_counts().to_dict()
    assert {int(k): int(v) for k, v in values.items()} == {4: 890, 3: 261, 2: 159, 1: 109}
    tasks = load_tasks()
    assert tasks["answerability"].value_counts().to_dict() == {
        "ANSWERABLE": 135, "PARTIAL": 15, "UNANSWERABLE": 7, "CONVERSATIONAL": 2}
    assert set(rows["n_raters"]) == {2, 3}
    assert len(rater_columns(rows)) == 7


def test_summary_columns_match_pandas(rows):
    ratings = load_ratings().dropna(subset=["faithfulness"])
    grouped = ratings.groupby(["task_id", "model_id"])["faithfulness"]
    key = pd.MultiIndex.from_arrays([rows["task_id"], rows["model"]])
    np.testing.assert_allclose(rows["human_mean"], grouped.mean().astype(float).reindex(key).to_numpy())
    np.testing.assert_allclose(rows["human_median"], grouped.median().astype(float).reindex(key).to_numpy())
    modes = grouped.agg(lambda s: s.mode().tolist()).reindex(key)
    expected = [m[0] if len(m) == 1 else np.nan for m in modes]
    np.testing.assert_array_equal(rows["human_majority"].to_numpy(), np.array(expected, dtype=float))


def test_runs_pair_by_task_id():
    runs = load_runs()
    assert list(runs) == list(MODELS)
    for run in runs.values():
        run.rag.validate()  # question_id unique within a run
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        paired = pair_runs(runs["llama-3.1-405b-instruct"], runs["gpt-4o"])
    assert paired.n == 159
    assert evalset_of(runs["gpt-4o"]) == evalset_of(runs["reference"]) is not None
    assert (paired.base["question_id"] == paired.cand["question_id"]).all()


def test_unknown_metric_and_missing_folder_are_clear(tmp_path):
    with pytest.raises(ValueError, match=r"The value for `metric` must be one of"):
        load_responses("honesty")
    with pytest.raises(FileNotFoundError, match="build_mtrag.py"):
        load_tasks(path=tmp_path)


# ---- inter-annotator agreement -----------------------------------------------------------------------


@pytest.mark.parametrize("level", ["ordinal", "nominal", "interval"])
def test_inter_annotator_alpha_matches_krippendorff(rows, level):
    matrix = rows[rater_columns(rows)].to_numpy(dtype=float)
    expected = krippendorff.alpha(reliability_data=matrix.T, level_of_measurement=level)
    assert krippendorff_alpha(rows[rater_columns(rows)], level=level) == pytest.approx(expected, abs=1e-12)


def test_fleiss_on_answers_with_three_ratings_matches_statsmodels(rows):
    three = rows[rows["n_raters"] == 3][rater_columns(rows)].to_numpy(dtype=float)
    compact = np.array([r[np.isfinite(r)] for r in three])  # the 3 ratings of each answer
    assert fleiss_kappa(three) == pytest.approx(sm_fleiss_kappa(aggregate_raters(compact)[0]), abs=1e-12)


# ---- each LLM judge against the human majority -------------------------------------------------------


@pytest.mark.parametrize("judge", JUDGES)
def test_judge_vs_human_majority_against_sklearn(rows, judge):
    human = _human_majority_pass(rows)
    keep = human.notna()
    h = human[keep].astype(int).to_numpy()
    j = (rows.loc[keep, judge] >= JUDGE_PASS).astype(int).to_numpy()
    expected_kappa = cohen_kappa_score(h, j)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rep = judge_vs_majority(rows[rater_columns(rows)], rows[judge], rating_threshold=RATING_PASS,
                                judge_threshold=JUDGE_PASS)
    assert rep.n == int(keep.sum()) and rep.n_ties == int((~keep).sum())
    assert rep.kappa == pytest.approx(expected_kappa, abs=1e-12)
    assert rep.miss_rate == pytest.approx(j[h == 0].mean())  # human fails the judge passed
    assert rep.attenuation == pytest.approx(balanced_accuracy_score(h, j, adjusted=True))
    assert rep.human_positive_rate == pytest.approx(h.mean())
    assert rep.judge_positive_rate == pytest.approx(j.mean())
    low = [w for w in caught if issubclass(w.category, LowAgreementWarning)]
    assert bool(low) == (expected_kappa < 0.4)
    # the accessor on the row table gives the same report
    via = rows.rag.agreement(rater_columns(rows), judge, human_threshold=RATING_PASS, judge_threshold=JUDGE_PASS,
                             warn=False)
    pd.testing.assert_frame_equal(via.to_frame(), rep.to_frame())
    assert set(via.disagreements["task_id"]) <= set(rows["task_id"])


# ---- the build script ------------------------------------------------------------------------------------


def _build_module():
    spec = importlib.util.spec_from_file_location("build_mtrag", REPO / "scripts" / "build_mtrag.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.shared
def test_build_script_reproduces_the_committed_files():
    source = shared_path("mtrag_human_eval", "reference_subset_with_human_evaluations.json").parent
    files = _build_module().build(source)
    for name, blob in files.items():
        assert (REPO / "data" / "mtrag" / name).read_bytes() == blob, f"data/mtrag/{name} is stale: rerun the build"


@pytest.mark.shared
def test_loaded_figures_equal_the_source_json(rows):
    path = shared_path("mtrag_human_eval", "reference_subset_with_human_evaluations.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    by_key = {(e["task_id"], e["model_id"]): e["annotations"] for e in data["evaluations"]}
    for row in rows.itertuples(index=False):
        ann = by_key[(row.task_id, row.model)]
        assert row.rl_f == float(ann["rl_f"]["composite"]["value"])
        assert row.rb_llm == float(ann["rb_llm"]["composite"]["value"])
        source = Counter(int(v["value"]) for v in ann["faithfulness"].values())
        ours = Counter(int(getattr(row, c)) for c in rater_columns(rows) if np.isfinite(getattr(row, c)))
        assert ours == source
    tasks = {t["task_id"]: t for t in data["tasks"]}
    loaded = load_tasks().set_index("task_id")
    for task_id, t in tasks.items():
        assert loaded.loc[task_id, "answerability"] == t["Answerability"][0]
        assert loaded.loc[task_id, "question_type"] == t["Question Type"]
        assert loaded.loc[task_id, "turn"] == int(t["Turn"])


# ---- a paired comparison of two answerers on the same tasks ------------------------------------------


@pytest.mark.parametrize("metric", ["human_mean", "rl_f", "human_pass"])
def test_paired_comparison_of_two_models_against_scipy(metric):
    """gpt-4o vs llama-3.1-405b on the same 159 tasks: raglab's paired interval vs scipy's bootstrap."""
    from scipy.stats import bootstrap
    from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

    from raglab.datasets.mtrag import load_runs

    runs = load_runs("faithfulness")
    base, cand = runs["llama-3.1-405b-instruct"].copy(), runs["gpt-4o"].copy()
    for run in (base, cand):  # pass = the human majority rates the answer 3 or 4 (ties are NaN)
        run["human_pass"] = (run["human_majority"] >= 3).astype(float).where(run["human_majority"].notna())
    # The oracle resamples tasks independently; by default raglab resamples the 20 conversations.
    table = base.rag.compare(cand, metrics=[metric], n_resamples=20_000, seed=1, units=False,
                             method="auto" if metric == "human_pass" else "percentile")
    row = table.iloc[0]
    clustered = base.rag.compare(cand, metrics=[metric], n_resamples=5_000, seed=1, n_permutations=500).iloc[0]
    assert clustered["n_clusters"] == 20 and "cluster" in clustered["method"]
    assert clustered["diff"] == pytest.approx(row["diff"], abs=1e-12)
    both = base[metric].notna() & cand.set_index("question_id").loc[base["question_id"], metric].notna().to_numpy()
    diffs = (cand.set_index("question_id").loc[base["question_id"], metric].to_numpy() - base[metric].to_numpy())[both]
    assert row["n"] == both.sum() and row["n_dropped"] == (~both).sum()
    assert row["diff"] == pytest.approx(diffs.mean(), abs=1e-12)
    if "Tango" in row["method"]:  # pass/fail: Tango's score interval, by brute-force inversion of the score test
        low, high = _tango_interval(int((diffs == -1).sum()), int((diffs == 1).sum()), len(diffs))
        assert (row["low"], row["high"]) == pytest.approx((low, high), abs=1e-6)
    else:
        oracle = bootstrap((diffs,), np.mean, n_resamples=20_000, method="percentile", random_state=0).confidence_interval
        width = oracle.high - oracle.low
        assert row["low"] == pytest.approx(oracle.low, abs=0.06 * width)   # Monte Carlo error of two bootstraps
        assert row["high"] == pytest.approx(oracle.high, abs=0.06 * width)
    if metric == "human_pass":  # pass/fail: the exact McNemar test
        b = int(((diffs == -1)).sum())
        c = int(((diffs == 1)).sum())
        expected = sm_mcnemar([[0, b], [c, 0]], exact=True).pvalue
        assert row["p_value"] == pytest.approx(expected, rel=1e-9)


def _tango_interval(b: int, c: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Tango (1998): the deltas that the score test of p(c) - p(b) = delta does not reject, with the
    restricted maximum-likelihood discordant probabilities found numerically (no closed form used)."""
    from scipy.optimize import brentq, minimize_scalar
    from scipy.stats import norm

    z, observed = norm.ppf(0.5 + level / 2), (c - b) / n

    def score(delta: float) -> float:
        def nll(pb: float) -> float:
            cells = ((b, pb), (c, pb + delta), (n - b - c, 1 - 2 * pb - delta))
            return -sum(k * np.log(p) for k, p in cells if k)

        lo, hi = max(0.0, -delta), (1 - delta) / 2
        pb = minimize_scalar(nll, bounds=(lo + 1e-12, hi - 1e-12), method="bounded", options={"xatol": 1e-13}).x
        return (observed - delta) / np.sqrt((2 * pb + delta - delta**2) / n)

    return brentq(lambda d: score(d) - z, -1 + 1e-9, observed), brentq(lambda d: score(d) + z, observed, 1 - 1e-9)


# ---- conversations as clusters (units=) --------------------------------------------------------------------


@pytest.fixture(scope="module")
def clustered_rl_f(rows):
    return judge_vs_majority(rows[rater_columns(rows)], rows["rl_f"], rating_threshold=RATING_PASS,
                             judge_threshold=JUDGE_PASS, units=rows["conversation_id"], warn=False)


def test_mtrag_answers_sit_in_20_conversations(rows, clustered_rl_f):
    assert rows["conversation_id"].nunique() == 20
    assert clustered_rl_f.n_clusters == 20 and clustered_rl_f.units_name == "conversation_id"
    assert "20 ('conversation_id'): intervals resample whole clusters" in repr(clustered_rl_f)


def test_mtrag_design_effect_of_agreement_matches_kish(rows, clustered_rl_f):
    """Kish's design effect of the agreement rate, from per-conversation counts computed with pandas:
    sum_g (a_g - p m_g)**2 / (n p (1 - p)) over conversations g (a_g agreeing answers of m_g)."""
    human = _human_majority_pass(rows)
    keep = human.notna()
    agree = (human[keep] == (rows.loc[keep, "rl_f"] >= JUDGE_PASS).astype(float)).astype(float)
    per = agree.groupby(rows.loc[keep, "conversation_id"]).agg(["sum", "count"])
    p = per["sum"].sum() / per["count"].sum()
    kish = ((per["sum"] - p * per["count"]) ** 2).sum() / (per["count"].sum() * p * (1 - p))
    assert clustered_rl_f.agreement == pytest.approx(p)
    assert clustered_rl_f.design_effects["agreement"] == pytest.approx(kish, rel=0.12)
    assert kish > 1.8  # answers of one conversation agree or disagree together


def test_mtrag_clustered_intervals_are_wider(rows, clustered_rl_f):
    independent = judge_vs_majority(rows[rater_columns(rows)], rows["rl_f"], rating_threshold=RATING_PASS,
                                    judge_threshold=JUDGE_PASS, warn=False)
    assert clustered_rl_f.kappa == pytest.approx(independent.kappa, abs=1e-12)
    for name in ("kappa", "agreement", "miss_rate"):
        assert clustered_rl_f.intervals[name].width > independent.intervals[name].width, name
        assert clustered_rl_f.design_effects[name] > 1.2, name
    frame = clustered_rl_f.to_frame().set_index("statistic")
    assert frame.loc["kappa", "design_effect"] == clustered_rl_f.design_effects["kappa"]
