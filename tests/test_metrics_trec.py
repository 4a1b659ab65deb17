"""Conformance with trec_eval: its own fixtures and printed output, and pytrec_eval on random cases.

Oracles: trec_eval's expected output files (NIST, tests/data/trec_eval/out.test*, 4 decimals) and
pytrec_eval (trec_eval's C code). Mapping of names: recall_k <-> recall@k (set recall at the cut),
P_k <-> precision@k, recip_rank <-> rr, map <-> ap, Rprec <-> r_precision, ndcg_cut_k <-> ndcg@k
with gain="linear".
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import pytrec_eval
from conftest import trec_eval_output
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import raglab

CUTS = [5, 10, 15, 20, 30, 100, 200, 500, 1000]
MEASURES = {"recall", "P", "recip_rank", "map", "Rprec", "ndcg_cut"}
PER_K = {"recall": "recall_{k}", "precision": "P_{k}", "ndcg": "ndcg_cut_{k}"}
WHOLE = {"rr": "recip_rank", "ap": "map", "r_precision": "Rprec"}


def trec_dicts(run: Path | None, qrels: Path) -> tuple[dict, dict]:
    judged: dict[str, dict[str, int]] = {}
    for line in qrels.read_text().splitlines():
        qid, _, doc, rel = line.split()[:4]
        judged.setdefault(qid, {})[doc] = int(rel)
    ranked: dict[str, dict[str, float]] = {}
    if run is not None:
        for line in run.read_text().splitlines():
            qid, _, doc, _, score = line.split()[:5]
            ranked.setdefault(qid, {})[doc] = float(score)
    return judged, ranked


def score(rows: pd.DataFrame, *, gain: str = "linear", no_relevant: str = "exclude") -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*larger than the longest list")  # k=1000 > 500 retrieved
        return rows.rag.retrieval(k=CUTS, gain=gain, no_relevant=no_relevant)


def pairs(k_cuts=CUTS):
    for k in k_cuts:
        for ours, theirs in PER_K.items():
            yield f"{ours}@{k}", theirs.format(k=k)
    yield from WHOLE.items()


# --------------------------------------------------------------------------------------------------
# trec_eval's fixtures, against its printed output
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "run, qrels, output",
    [
        # trec_eval -m all_trec -q qrels.test results.test
        ("results.test", "qrels.test", "out.test.aq"),
        # trec_eval -m all_trec -q -c qrels.test results.trunc: -c averages over every judged topic,
        # scoring topics missing from the run as 0 -- raglab's rule for an empty retrieved list.
        ("results.trunc", "qrels.test", "out.test.aqc"),
    ],
)
def test_matches_trec_eval_printed_output(trec_dir, run, qrels, output):
    rows = raglab.read_trec(run=trec_dir / run, qrels=trec_dir / qrels)
    scored = score(rows)
    expected = trec_eval_output(trec_dir / output)
    checked = 0
    for ours, theirs in pairs():
        for qid, value in zip(scored["question_id"], scored[ours]):
            if (theirs, qid) in expected:
                assert f"{value:.4f}" == expected[(theirs, qid)], (ours, qid)
                checked += 1
        assert f"{scored[ours].mean():.4f}" == expected[(theirs, "all")], ours
    printed_topics = {qid for (measure, qid) in expected if measure == "num_ret" and qid != "all"}
    assert checked == len(printed_topics) * len(list(pairs()))  # every measure of every printed topic


def test_empty_run_topic_counts_as_zero_like_trec_eval_dash_c(trec_dir):
    rows = raglab.read_trec(run=trec_dir / "results.trunc", qrels=trec_dir / "qrels.test")
    scored = score(rows)
    empty = scored[scored["retrieved"].map(len) == 0]
    assert len(empty) == 1
    assert (empty[[c for c in scored.columns if "@" in c or c in WHOLE]] == 0).all(axis=None)
    assert scored.attrs["raglab"]["retrieval_counts"]["n_nothing_retrieved"] == 1
    # out.test.aqc reports num_q over all judged topics (3), not just the 2 in the run
    assert trec_eval_output(trec_dir / "out.test.aqc")[("num_q", "all")] == str(len(scored))


def test_graded_ndcg_matches_trec_eval_with_negative_grades(trec_dir):
    """qrels.rel_level has grades -1..4; trec_eval's ndcg_cut uses them as gains (negative -> 0)."""
    rows = raglab.read_trec(run=trec_dir / "results.test", qrels=trec_dir / "qrels.rel_level")
    assert min(min(g.values()) for g in rows["gold"]) == -1
    scored = score(rows)
    # trec_eval -m all_trec -mrelstring.20 -q -l2 qrels.rel_level results.test (-l2 only changes binary measures)
    expected = trec_eval_output(trec_dir / "out.test.aql")
    for k in CUTS:
        for qid, value in zip(scored["question_id"], scored[f"ndcg@{k}"]):
            assert f"{value:.4f}" == expected[(f"ndcg_cut_{k}", qid)]
        assert f"{scored[f'ndcg@{k}'].mean():.4f}" == expected[(f"ndcg_cut_{k}", "all")]


def test_relevance_level_two_by_regrading_the_gold(trec_dir):
    """trec_eval -l2 counts grade >= 2 as relevant; raglab's rule is grade > 0, so map grade 1 to 0."""
    rows = raglab.read_trec(run=trec_dir / "results.test", qrels=trec_dir / "qrels.rel_level")
    rows["gold"] = rows["gold"].map(lambda g: {d: (v if v >= 2 else 0) for d, v in g.items()})
    scored = score(rows)
    expected = trec_eval_output(trec_dir / "out.test.aql")
    for ours, theirs in pairs():
        if ours.startswith("ndcg"):
            continue  # gains changed by the regrading; ndcg is checked on the raw grades above
        for qid, value in zip(scored["question_id"], scored[ours]):
            assert f"{value:.4f}" == expected[(theirs, qid)], (ours, qid)


# --------------------------------------------------------------------------------------------------
# pytrec_eval, per query, on the fixtures and on random cases
# --------------------------------------------------------------------------------------------------


def pytrec(judged: dict, ranked: dict, cuts=CUTS) -> dict[str, dict[str, float]]:
    spec = {f"{m}.{','.join(map(str, cuts))}" if m in ("recall", "P", "ndcg_cut") else m for m in MEASURES}
    return pytrec_eval.RelevanceEvaluator(judged, spec).evaluate(ranked)


@pytest.mark.parametrize("qrels", ["qrels.test", "qrels.rel_level"])
def test_matches_pytrec_eval_per_query_on_the_fixtures(trec_dir, qrels):
    judged, ranked = trec_dicts(trec_dir / "results.test", trec_dir / qrels)
    reference = pytrec(judged, ranked)
    scored = score(raglab.read_trec(run=trec_dir / "results.test", qrels=trec_dir / qrels)).set_index("question_id")
    for qid, measures in reference.items():
        for ours, theirs in pairs():
            assert scored.loc[qid, ours] == pytest.approx(measures[theirs], abs=1e-12), (qid, ours)


def test_pytrec_eval_drops_topics_missing_from_the_run_raglab_scores_them_zero(trec_dir):
    judged, ranked = trec_dicts(trec_dir / "results.trunc", trec_dir / "qrels.test")
    reference = pytrec(judged, ranked)
    scored = score(raglab.read_trec(run=trec_dir / "results.trunc", qrels=trec_dir / "qrels.test"))
    missing = sorted(set(judged) - set(reference))
    assert len(missing) == 1 and len(scored) == len(judged)  # pytrec_eval silently dropped one topic
    row = scored.set_index("question_id").loc[missing[0]]
    assert row["recall@10"] == 0 and row["ap"] == 0
    # so pytrec_eval's mean over its topics differs from raglab's (and trec_eval -c's) mean
    kept = scored[scored["question_id"].isin(list(reference))]
    assert kept["ap"].mean() == pytest.approx(np.mean([m["map"] for m in reference.values()]), abs=1e-12)
    assert scored["ap"].mean() < kept["ap"].mean()
    assert scored.attrs["raglab"]["retrieval_counts"]["n_nothing_retrieved"] == 1


DOCS = [f"doc{i}" for i in range(14)]
QUERY = st.tuples(
    st.lists(st.sampled_from(DOCS), max_size=14, unique=True),  # a ranked list has no repeats in TREC runs
    st.dictionaries(st.sampled_from(DOCS), st.integers(-1, 3), max_size=10),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries=st.lists(QUERY, min_size=1, max_size=12), cuts=st.lists(st.integers(1, 16), min_size=1, max_size=3, unique=True))
def test_matches_pytrec_eval_on_random_cases(queries, cuts):
    judged = {f"q{i}": gold for i, (_, gold) in enumerate(queries) if gold}
    # strictly decreasing scores: no ties, so both sides rank identically
    ranked = {f"q{i}": {d: float(len(r) - j) for j, d in enumerate(r)} for i, (r, _) in enumerate(queries) if r}
    rows = pd.DataFrame({"question_id": [f"q{i}" for i in range(len(queries))],
                         "retrieved": [r for r, _ in queries], "gold": [g for _, g in queries]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scored = rows.rag.retrieval(k=sorted(cuts), gain="linear").set_index("question_id")
    reference = pytrec(judged, ranked, sorted(cuts)) if judged and ranked else {}
    answerable = [q for q, g in judged.items() if any(v > 0 for v in g.values())]
    for qid in answerable:
        if qid not in reference:  # empty run for this topic: pytrec_eval drops it; raglab scores 0
            assert all(scored.loc[qid, ours] == 0 for ours, _ in pairs(sorted(cuts)))
            continue
        for ours, theirs in pairs(sorted(cuts)):
            assert scored.loc[qid, ours] == pytest.approx(reference[qid][theirs], abs=1e-12), (qid, ours)
    unanswerable = [q for q in scored.index if q not in answerable]
    assert scored.loc[unanswerable, "rr"].isna().all()
    # means over the answerable topics that pytrec_eval kept agree too
    both = [q for q in answerable if q in reference]
    if both:
        for ours, theirs in pairs(sorted(cuts)):
            assert math.isclose(scored.loc[both, ours].mean(), np.mean([reference[q][theirs] for q in both]), abs_tol=1e-12)


def test_exponential_gain_differs_from_trec_eval_and_says_so(trec_dir):
    rows = raglab.read_trec(run=trec_dir / "results.test", qrels=trec_dir / "qrels.rel_level")
    linear, exponential = score(rows, gain="linear"), score(rows, gain="exponential")
    assert not np.allclose(linear["ndcg@10"], exponential["ndcg@10"])
    assert linear.attrs["raglab"]["retrieval"]["gain"] == "linear"
    assert exponential.attrs["raglab"]["retrieval"]["gain"] == "exponential"


# --------------------------------------------------------------------------------------------------
# Topics judged with only non-relevant documents: trec_eval scores them 0 and averages them in;
# raglab excludes them (NaN) by default and matches trec_eval with no_relevant="zero"
# --------------------------------------------------------------------------------------------------


def without_relevant(qrels: Path, topic: str, out: Path, grade: int = 0) -> Path:
    """A copy of a qrels file where every judgement of ``topic`` is non-relevant (``grade`` <= 0)."""
    lines = []
    for line in qrels.read_text().splitlines():
        fields = line.split()
        if fields and fields[0] == topic:
            fields[3] = str(grade if int(fields[3]) > 0 else fields[3])
        lines.append(" ".join(fields))
    out.write_text("\n".join(lines) + "\n")
    return out


@pytest.mark.parametrize(
    ("qrels", "topic", "grade"), [("qrels.test", "303", 0), ("qrels.rel_level", "302", -1), ("qrels.rel_level", "301", 0)]
)
def test_no_relevant_zero_means_equal_trec_eval_all_line(trec_dir, tmp_path, qrels, topic, grade):
    modified = without_relevant(trec_dir / qrels, topic, tmp_path / "qrels", grade)
    judged, ranked = trec_dicts(trec_dir / "results.test", modified)
    assert not any(v > 0 for v in judged[topic].values()) and len(judged[topic]) > 100
    reference = pytrec(judged, ranked)
    assert set(reference) == set(judged)  # pytrec_eval (trec_eval's code) evaluates the topic ...
    assert all(reference[topic][m] == 0 for m in reference[topic])  # ... and scores it 0 everywhere
    rows = raglab.read_trec(run=trec_dir / "results.test", qrels=modified)
    zero = score(rows, no_relevant="zero")
    exclude = score(rows)
    topics = list(zero["question_id"])
    for ours, theirs in pairs():
        per_query = [reference[q][theirs] for q in topics]
        np.testing.assert_allclose(zero[ours].to_numpy(), per_query, rtol=0, atol=1e-12, err_msg=ours)
        # trec_eval's "all" line is the mean over every evaluated topic, the irrelevant one included
        assert zero[ours].mean() == pytest.approx(np.mean(per_query), abs=1e-12), ours
        # raglab's default leaves the topic out: the mean over the other topics
        others = [reference[q][theirs] for q in topics if q != topic]
        assert exclude[ours].mean() == pytest.approx(np.mean(others), abs=1e-12), ours
        assert np.isnan(exclude.set_index("question_id").loc[topic, ours])
    assert zero.rag.meta["retrieval"]["no_relevant"] == "zero"
    assert exclude.rag.meta["retrieval"]["no_relevant"] == "exclude"
    for scored in (zero, exclude):  # the topic is unanswerable either way, and counted as judged-irrelevant
        counts = scored.rag.meta["retrieval_counts"]
        assert (counts["n_unanswerable"], counts["n_judged_none_relevant"]) == (1, 1)
    # summary reports the same means: n counts the topic under "zero", n_excluded under "exclude"
    zero_summary = zero.rag.summary(["ap"], method="t").iloc[0]
    exclude_summary = exclude.rag.summary(["ap"], method="t").iloc[0]
    assert zero_summary["mean"] == pytest.approx(np.mean([reference[q]["map"] for q in topics]), abs=1e-12)
    assert (zero_summary["n"], zero_summary["n_excluded"]) == (3, 0)
    assert (exclude_summary["n"], exclude_summary["n_excluded"]) == (2, 1)


QUERY_WITH_JUDGEMENTS = st.tuples(
    st.lists(st.sampled_from(DOCS), min_size=1, max_size=14, unique=True),
    st.dictionaries(st.sampled_from(DOCS), st.integers(-1, 2), min_size=1, max_size=10),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries=st.lists(QUERY_WITH_JUDGEMENTS, min_size=1, max_size=12),
       cuts=st.lists(st.integers(1, 16), min_size=1, max_size=3, unique=True))
def test_no_relevant_zero_matches_pytrec_eval_per_query_and_in_the_mean(queries, cuts):
    """Every topic judged and retrieved (so pytrec_eval keeps it); many have only grades <= 0."""
    judged = {f"q{i}": gold for i, (_, gold) in enumerate(queries)}
    ranked = {f"q{i}": {d: float(len(r) - j) for j, d in enumerate(r)} for i, (r, _) in enumerate(queries)}
    rows = pd.DataFrame({"question_id": list(judged), "retrieved": [r for r, _ in queries], "gold": [g for _, g in queries]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zero = rows.rag.retrieval(k=sorted(cuts), gain="linear", no_relevant="zero")
        exclude = rows.rag.retrieval(k=sorted(cuts), gain="linear")
    reference = pytrec(judged, ranked, sorted(cuts))
    assert set(reference) == set(judged)
    irrelevant = [q for q, g in judged.items() if not any(v > 0 for v in g.values())]
    for ours, theirs in pairs(sorted(cuts)):
        theirs_values = np.array([reference[q][theirs] for q in judged])
        np.testing.assert_allclose(zero[ours].to_numpy(), theirs_values, rtol=0, atol=1e-12, err_msg=ours)
        assert math.isclose(zero[ours].mean(), theirs_values.mean(), abs_tol=1e-12)  # trec_eval's "all"
        kept = ~rows["question_id"].isin(irrelevant).to_numpy()
        assert exclude[ours].isna().to_numpy().tolist() == (~kept).tolist()
        if kept.any():
            assert math.isclose(exclude[ours].mean(), theirs_values[kept].mean(), abs_tol=1e-12)


# --------------------------------------------------------------------------------------------------
# Every registered metric that names its trec_eval measure, against pytrec_eval (map@k included)
# --------------------------------------------------------------------------------------------------

TREC_SPECS = [spec for spec in raglab.metrics.METRICS.values() if spec.trec_eval and "ids" in spec.units]


def pytrec_measure(spec, cuts) -> str:
    """pytrec_eval's request for a spec: "P_{k}" -> "P.1,5"; "recip_rank" as is."""
    if not spec.per_k:
        return spec.trec_eval
    return f"{spec.trec_eval.removesuffix('_{k}')}.{','.join(map(str, cuts))}"


def test_every_default_id_metric_and_map_names_a_trec_eval_measure():
    assert {spec.base for spec in TREC_SPECS} == {"recall", "hit", "precision", "ndcg", "map", "rr", "ap", "r_precision"}


@pytest.mark.parametrize("base", [spec.base for spec in TREC_SPECS])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(queries=st.lists(QUERY_WITH_JUDGEMENTS, min_size=1, max_size=12),
       cuts=st.lists(st.integers(1, 16), min_size=1, max_size=3, unique=True))
def test_registered_metric_matches_its_trec_eval_measure(base, queries, cuts):
    """trec_eval's per-query value for every topic (judged and retrieved), with its 0 for no relevant."""
    spec = raglab.metrics.METRICS[base]
    cuts = sorted(cuts)
    judged = {f"q{i}": gold for i, (_, gold) in enumerate(queries)}
    ranked = {f"q{i}": {d: float(len(r) - j) for j, d in enumerate(r)} for i, (r, _) in enumerate(queries)}
    reference = pytrec_eval.RelevanceEvaluator(judged, {pytrec_measure(spec, cuts)}).evaluate(ranked)
    ours = raglab.metrics.retrieval_scores([r for r, _ in queries], [g for _, g in queries], cuts,
                                           gain="linear", no_relevant="zero", metrics=[base])
    for name, k in zip(spec.columns(cuts), cuts if spec.per_k else [None]):
        theirs = [reference[q][spec.trec_eval.format(k=k)] for q in judged]
        np.testing.assert_allclose(ours[name], theirs, rtol=0, atol=1e-12, err_msg=name)
