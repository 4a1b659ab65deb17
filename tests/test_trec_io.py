"""TREC run/qrels import against trec_eval's own fixtures and expected output."""

from __future__ import annotations

import warnings
from collections import defaultdict

import pandas as pd
import pytest
from conftest import trec_eval_output

import raglab
from raglab._meta import get_meta


def precision(ranked: list[str], relevant: set[str], k: int) -> float:
    return sum(d in relevant for d in ranked[:k]) / k


def recip_rank(ranked: list[str], relevant: set[str]) -> float:
    return next((1.0 / i for i, d in enumerate(ranked, 1) if d in relevant), 0.0)


@pytest.fixture
def rows(trec_dir):
    return raglab.read_trec(run=trec_dir / "results.test", qrels=trec_dir / "qrels.test")


def test_shape_counts_match_trec_eval(rows, trec_dir):
    expected = trec_eval_output(trec_dir / "out.test.aq")
    assert rows.columns.tolist() == ["question_id", "retrieved", "retrieved_scores", "gold"]
    assert rows["question_id"].tolist() == ["301", "302", "303"]
    for qid, ranked, gold in zip(rows["question_id"], rows["retrieved"], rows["gold"]):
        relevant = {d for d, g in gold.items() if g > 0}
        assert str(len(ranked)) == expected[("num_ret", qid)]
        assert str(len(relevant)) == expected[("num_rel", qid)]
        assert str(sum(d in relevant for d in ranked)) == expected[("num_rel_ret", qid)]
    rows.rag.validate(require=["retrieved", "gold"])


def test_order_with_ties_matches_trec_eval(rows, trec_dir):
    # results.test has tied scores; trec_eval orders by score desc, then docno desc.
    expected = trec_eval_output(trec_dir / "out.test.aq")
    cutoffs = [5, 10, 15, 20, 30, 100, 200, 500, 1000]
    for qid, ranked, gold in zip(rows["question_id"], rows["retrieved"], rows["gold"]):
        relevant = {d for d, g in gold.items() if g > 0}
        for k in cutoffs:
            assert f"{precision(ranked, relevant, k):.4f}" == expected[(f"P_{k}", qid)], (qid, k)
        assert f"{recip_rank(ranked, relevant):.4f}" == expected[("recip_rank", qid)]


def test_tie_rule_matters_on_this_fixture(rows, trec_dir):
    """The check above has power: ordering ties by docno ascending changes a measured value."""
    expected = trec_eval_output(trec_dir / "out.test.aq")
    run = pd.read_csv(trec_dir / "results.test", sep=r"\s+", header=None, names=["q", "x", "d", "r", "s", "n"])
    mismatches = 0
    for qid, group in run.groupby(run["q"].astype(str)):
        ascending = group.sort_values(["s", "d"], ascending=[False, True])["d"].tolist()
        relevant = {d for d, g in rows.set_index("question_id").loc[qid, "gold"].items() if g > 0}
        values = [f"{precision(ascending, relevant, k):.4f}" for k in range(1, 501)]
        mine = [f"{precision(rows.set_index('question_id').loc[qid, 'retrieved'], relevant, k):.4f}" for k in range(1, 501)]
        mismatches += sum(a != b for a, b in zip(values, mine))
        assert expected[("num_ret", qid)] == "500"
    assert mismatches > 0


def test_truncated_run_with_junk_fields_and_missing_topic(trec_dir):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every run topic is judged: nothing to drop, nothing to warn
        rows = raglab.read_trec(run=trec_dir / "results.trunc", qrels=trec_dir / "qrels.test")
    counts = dict(zip(rows["question_id"], rows["retrieved"].map(len)))
    # results.trunc holds topics 301 and 303 only: 302 is kept with nothing retrieved (it scores 0).
    assert counts["302"] == 0
    expected = trec_eval_output(trec_dir / "out.test.aqc")
    for qid in ("301", "303"):
        assert str(counts[qid]) == expected[("num_ret", qid)]
    assert expected[("num_ret", "302")] == "0"


def test_comments_are_skipped_but_hash_inside_ids_is_kept(trec_dir):
    plain = raglab.read_trec(qrels=trec_dir / "qrels.test")
    commented = raglab.read_trec(qrels=trec_dir / "qrels.test.with-comments")
    extra = {d for g in commented["gold"] for d in g} - {d for g in plain["gold"] for d in g}
    assert extra == {"CR#93E-1860"} or all("#" in d for d in extra)


def test_run_topics_without_judgments_are_dropped_with_warning(tmp_path):
    (tmp_path / "run").write_text("1 Q0 a 1 2.0 r\n2 Q0 b 1 1.0 r\n")
    (tmp_path / "qrels").write_text("1 0 a 1\n")
    with pytest.warns(UserWarning, match=r"1 run topic\(s\) have no judgments .* dropped"):
        rows = raglab.read_trec(run=tmp_path / "run", qrels=tmp_path / "qrels")
    assert rows["question_id"].tolist() == ["1"]
    assert get_meta(rows)["run"]["name"] == "r"


def test_bad_lines_are_named(tmp_path):
    (tmp_path / "run").write_text("1 Q0 a 1 high r\n")
    with pytest.raises(raglab.RowTableError, match=r"line 1: score must be a number, got 'high'"):
        raglab.read_trec(run=tmp_path / "run")
    (tmp_path / "dup").write_text("1 Q0 a 1 2.0 r\n1 Q0 a 2 1.0 r\n")
    with pytest.raises(raglab.RowTableError, match=r"document 'a' appears more than once for topic '1'"):
        raglab.read_trec(run=tmp_path / "dup")


def test_write_trec_round_trip(rows, tmp_path):
    rows.rag.write_trec(run=tmp_path / "run.txt", qrels=tmp_path / "qrels.txt")
    back = raglab.read_trec(run=tmp_path / "run.txt", qrels=tmp_path / "qrels.txt")
    for column in ("question_id", "retrieved", "retrieved_scores", "gold"):
        assert back[column].tolist() == rows[column].tolist(), column


def test_write_trec_without_scores_keeps_order(tmp_path):
    rows = pd.DataFrame({"question_id": ["q"], "retrieved": [["z", "a", "m"]], "gold": [["a"]]})
    rows.rag.write_trec(run=tmp_path / "r", qrels=tmp_path / "q", run_name="mine")
    back = raglab.read_trec(run=tmp_path / "r", qrels=tmp_path / "q")
    assert back.loc[0, "retrieved"] == ["z", "a", "m"]
    assert back.loc[0, "gold"] == {"a": 1}


def test_pytrec_eval_reads_what_we_write(rows, tmp_path):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for qid, gold in zip(rows["question_id"], rows["gold"]):
        qrels[qid].update(gold)
    run = {q: dict(zip(ids, scores)) for q, ids, scores in zip(rows["question_id"], rows["retrieved"], rows["retrieved_scores"])}
    measures = pytrec_eval.RelevanceEvaluator(dict(qrels), {"P.10", "recip_rank"}).evaluate(run)
    for qid, ranked, gold in zip(rows["question_id"], rows["retrieved"], rows["gold"]):
        relevant = {d for d, g in gold.items() if g > 0}
        assert measures[qid]["P_10"] == pytest.approx(precision(ranked, relevant, 10))
        assert measures[qid]["recip_rank"] == pytest.approx(recip_rank(ranked, relevant))


# ---- lossless or refused ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("frame", "what"),
    [
        (pd.DataFrame({"question_id": ["q1"], "retrieved": [["doc 1"]], "gold": [["doc 1"]]}), r"'doc 1' .* whitespace"),
        (pd.DataFrame({"question_id": ["q 1"], "retrieved": [["d1"]], "gold": [["d1"]]}), r"'q 1' .* whitespace"),
    ],
)
def test_ids_with_whitespace_are_refused(tmp_path, frame, what):
    with pytest.raises(raglab.RowTableError, match=what):
        frame.rag.write_trec(run=tmp_path / "run", qrels=tmp_path / "qrels")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("grade", [0.5, float("inf"), float("nan")])
def test_grades_a_qrels_file_cannot_hold_are_refused(tmp_path, grade):
    rows = pd.DataFrame({"question_id": ["q1"], "retrieved": [["d1"]], "gold": [{"d1": grade}]})
    with pytest.raises(raglab.RowTableError, match=r"grade .* qrels grades are whole numbers"):
        rows.rag.write_trec(qrels=tmp_path / "qrels")
    assert not (tmp_path / "qrels").exists()
    whole = pd.DataFrame({"question_id": ["q1"], "retrieved": [["d1"]], "gold": [{"d1": 2.0}]})
    whole.rag.write_trec(qrels=tmp_path / "qrels")
    assert raglab.read_trec(qrels=tmp_path / "qrels").loc[0, "gold"] == {"d1": 2}


def test_a_byte_order_mark_is_not_part_of_the_first_topic(tmp_path):
    (tmp_path / "run").write_bytes(b"\xef\xbb\xbfq1 Q0 d1 1 1.0 r\n")
    (tmp_path / "qrels").write_bytes(b"\xef\xbb\xbfq1 0 d1 1\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rows = raglab.read_trec(run=tmp_path / "run", qrels=tmp_path / "qrels")
    assert rows["question_id"].tolist() == ["q1"] and rows.loc[0, "retrieved"] == ["d1"]


@pytest.mark.parametrize("score", ["nan", "NaN", "inf", "-inf"])
def test_non_finite_run_scores_are_refused(tmp_path, score):
    (tmp_path / "run").write_text(f"q1 Q0 d1 1 {score} r\n")
    with pytest.raises(raglab.RowTableError, match=r"run' line 1: score must be a finite number"):
        raglab.read_trec(run=tmp_path / "run")
    rows = pd.DataFrame({"question_id": ["q1"], "retrieved": [["d1"]], "retrieved_scores": [[float(score)]]})
    with pytest.raises(raglab.RowTableError, match="finite numbers"):
        rows.rag.write_trec(run=tmp_path / "out")


def test_trec_names_stay_importable_from_raglab_io():
    from raglab import io, trec

    assert io.read_trec is trec.read_trec and io.write_trec is trec.write_trec


def test_write_trec_checks_both_files_before_writing_either(tmp_path):
    rows = pd.DataFrame({"question_id": ["q1"], "retrieved": [["d1"]], "gold": [{"d1": 0.5}]})
    with pytest.raises(raglab.RowTableError, match="grade"):
        raglab.write_trec(rows, run=tmp_path / "run", qrels=tmp_path / "qrels")
    assert not (tmp_path / "run").exists()


def test_a_ranked_list_repeating_an_id_is_refused_before_writing(tmp_path):
    # read_trec refuses a run listing a document twice for a topic, so write_trec must not write one
    (tmp_path / "run").write_text("old run\n")
    (tmp_path / "qrels").write_text("old qrels\n")
    rows = pd.DataFrame({"question_id": ["q1"], "retrieved": [["d1", "d2", "d1"]], "gold": [{"d1": 1}]})
    with pytest.raises(raglab.RowTableError, match=r"'retrieved' question 'q1' lists 'd1' more than once .* first "
                                                   r"rank.*dict\.fromkeys"):
        raglab.write_trec(rows, run=tmp_path / "run", qrels=tmp_path / "qrels")
    assert (tmp_path / "run").read_text() == "old run\n" and (tmp_path / "qrels").read_text() == "old qrels\n"
    rows["retrieved"] = rows["retrieved"].map(lambda ids: list(dict.fromkeys(ids)))
    raglab.write_trec(rows, run=tmp_path / "run", qrels=tmp_path / "qrels")
    assert raglab.read_trec(run=tmp_path / "run", qrels=tmp_path / "qrels").loc[0, "retrieved"] == ["d1", "d2"]


# ---- issue 19: what write_trec writes reads back in the same order, or is refused ----------------------


@pytest.mark.parametrize(
    ("ids", "scores", "message"),
    [
        (["d1", "d2"], [0.1, 0.9], r"rank 2 \('d2'\) a higher score than rank 1 \('d1'\)"),
        (["a", "b"], [0.5, 0.5], r"rank 2 \('b'\) the same score as rank 1 \('a'\)"),
        (["d1", "d2", "d3"], [3.0, 1.0, 2.0], r"rank 3 \('d3'\) a higher score than rank 2"),
    ],
)
def test_scores_that_would_reorder_the_list_are_refused(tmp_path, ids, scores, message):
    rows = pd.DataFrame({"question_id": ["q1"], "retrieved": [ids], "retrieved_scores": [scores]})
    with pytest.raises(raglab.RowTableError, match=message + r".*scores=None"):
        raglab.write_trec(rows, run=tmp_path / "run")
    assert not (tmp_path / "run").exists()
    # the old writer wrote them, and the file read back re-ranked: pytrec_eval (trec_eval) sees the same order
    raglab.write_trec(rows, run=tmp_path / "run", scores=None)
    assert raglab.read_trec(run=tmp_path / "run").loc[0, "retrieved"] == ids


def test_ties_already_in_trec_eval_order_are_written(tmp_path):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rows = pd.DataFrame({"question_id": ["q1"], "retrieved": [["z", "m", "a", "b"]],
                         "retrieved_scores": [[0.5, 0.5, 0.5, 0.1]], "gold": [{"m": 1}]})
    raglab.write_trec(rows, run=tmp_path / "run", qrels=tmp_path / "qrels")
    back = raglab.read_trec(run=tmp_path / "run", qrels=tmp_path / "qrels")
    assert back.loc[0, "retrieved"] == ["z", "m", "a", "b"]
    # trec_eval's own order for this run puts m second: reciprocal rank 1/2
    with open(tmp_path / "run") as fh:
        run = pytrec_eval.parse_run(fh)
    measure = pytrec_eval.RelevanceEvaluator({"q1": {"m": 1}}, {"recip_rank"}).evaluate(run)
    assert measure["q1"]["recip_rank"] == pytest.approx(0.5)


def test_write_trec_refuses_one_path_for_run_and_qrels(tmp_path):
    rows = pd.DataFrame({"question_id": ["q1"], "retrieved": [["d1"]], "gold": [["d1"]]})
    (tmp_path / "both.txt").write_text("keep\n")
    with pytest.raises(ValueError, match=r"run= and qrels= are the same file .* the qrels would overwrite the run"):
        raglab.write_trec(rows, run=tmp_path / "both.txt", qrels=tmp_path / "sub" / ".." / "both.txt")
    assert (tmp_path / "both.txt").read_text() == "keep\n"


def test_a_question_id_starting_with_hash_is_refused(tmp_path):
    rows = pd.DataFrame({"question_id": ["#12", "q2"], "retrieved": [["d1"], ["d2"]], "gold": [["d1"], ["d2"]]})
    for what in ("run", "qrels"):
        with pytest.raises(raglab.RowTableError, match=r"'#12' starts with '#'.*comments"):
            raglab.write_trec(rows, **{what: tmp_path / what})
        assert not (tmp_path / what).exists()
    # '#' inside an id is data, and round trips (trec_eval's fixture qrels.test.with-comments has such a docno)
    rows = pd.DataFrame({"question_id": ["q#1"], "retrieved": [["#d1", "d#2"]], "gold": [["#d1"]]})
    raglab.write_trec(rows, run=tmp_path / "run", qrels=tmp_path / "qrels")
    back = raglab.read_trec(run=tmp_path / "run", qrels=tmp_path / "qrels")
    assert back.loc[0, "question_id"] == "q#1" and back.loc[0, "retrieved"] == ["#d1", "d#2"]


def test_an_empty_ranking_is_named_unless_the_qrels_bring_it_back(tmp_path):
    rows = pd.DataFrame({"question_id": ["q1", "q2", "q3"], "retrieved": [["d1"], [], []],
                         "gold": [["d1"], ["d2"], []]})
    with pytest.warns(UserWarning, match=r"1 question\(s\) retrieved nothing and have no gold.*\['q3'\]"):
        raglab.write_trec(rows, run=tmp_path / "run", qrels=tmp_path / "qrels")
    back = raglab.read_trec(run=tmp_path / "run", qrels=tmp_path / "qrels")
    assert back["question_id"].tolist() == ["q1", "q2"] and back.loc[1, "retrieved"] == []
    with pytest.warns(UserWarning, match=r"2 question\(s\) retrieved nothing \(e.g. \['q2', 'q3'\]\)"):
        raglab.write_trec(rows, run=tmp_path / "run")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        raglab.write_trec(rows.iloc[:2], run=tmp_path / "run", qrels=tmp_path / "qrels")  # q2 comes back


def test_a_run_file_read_as_qrels_is_refused(tmp_path, trec_dir):
    with pytest.raises(raglab.RowTableError, match=r"results.test' line 1: a qrels line has 4 fields .* has 6.*"
                                                   r"Pass it as run="):
        raglab.read_trec(qrels=trec_dir / "results.test")


def test_the_rank_column_disagreeing_with_scores_is_said_and_can_be_followed(tmp_path):
    (tmp_path / "run").write_text("q1 Q0 a 1 0.5 r\nq1 Q0 b 2 0.5 r\nq1 Q0 c 3 0.9 r\nq2 Q0 x 1 1.0 r\n")
    with pytest.warns(UserWarning, match=r"in 1 of 2 topic\(s\) .* rank column orders the documents differently"):
        rows = raglab.read_trec(run=tmp_path / "run")
    assert rows.loc[0, "retrieved"] == ["c", "b", "a"]  # trec_eval: score desc, then docno desc
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ranked = raglab.read_trec(run=tmp_path / "run", order="rank")
    assert ranked.loc[0, "retrieved"] == ["a", "b", "c"] and ranked.loc[0, "retrieved_scores"] == [0.5, 0.5, 0.9]
    assert get_meta(ranked)["run"]["ties"].startswith("rank column")
    (tmp_path / "bad").write_text("q1 Q0 a first 0.5 r\n")
    with pytest.raises(raglab.RowTableError, match=r"bad' line 1: order='rank' needs an integer rank"):
        raglab.read_trec(run=tmp_path / "bad", order="rank")


def test_the_fixture_runs_read_without_a_rank_warning(trec_dir):
    # results.test's ranks agree with trec_eval's order, so reading it says nothing
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        raglab.read_trec(run=trec_dir / "results.test")


def test_a_lone_surrogate_in_an_id_is_named(tmp_path):
    rows = pd.DataFrame({"question_id": ["q1"], "retrieved": [["d\udc80"]]})
    with pytest.raises(raglab.RowTableError, match=r"'retrieved' id of question 'q1'.*lone surrogate '\\udc80'"):
        raglab.write_trec(rows, run=tmp_path / "run")


def test_means_follow_trec_eval_dash_c_not_its_default_line(trec_dir):
    """results.trunc lacks judged topic 302: the rows' mean is trec_eval -c; the default `all` line is the mean
    over the run's topics, which pytrec_eval (per query) reproduces and read_trec's docstring tells how to get."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = raglab.read_trec(run=trec_dir / "results.trunc", qrels=trec_dir / "qrels.test")
    scored = rows.rag.retrieval(k=[10], no_relevant="zero")
    dash_c = trec_eval_output(trec_dir / "out.test.aqc")
    assert f"{scored['recall@10'].mean():.4f}" == dash_c[("recall_10", "all")]
    with open(trec_dir / "qrels.test") as fh:
        qrels = pytrec_eval.parse_qrel(fh)
    run: dict[str, dict[str, float]] = defaultdict(dict)
    for line in (trec_dir / "results.trunc").read_text().splitlines():  # trailing junk fields: pytrec_eval's
        fields = line.split()                                               # parse_run refuses them
        run[fields[0]][fields[2]] = float(fields[4])
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"recall.10"}).evaluate(run)
    default_all = sum(m["recall_10"] for m in per_query.values()) / len(per_query)  # trec_eval without -c
    ranked = scored[rows["retrieved"].map(len) > 0]
    assert ranked["recall@10"].mean() == pytest.approx(default_all)
    assert scored["recall@10"].mean() != pytest.approx(default_all)


def test_write_trec_reads_the_roles_set_on_the_table(tmp_path):
    rows = pd.DataFrame({"qid": ["q1"], "reranked": [["d3", "d1"]], "judged": [["d1"]]})
    named = raglab.with_roles(rows, question_id="qid", retrieved="reranked", gold="judged")
    named.rag.write_trec(run=tmp_path / "run.txt", qrels=tmp_path / "qrels.txt", run_name="x")
    assert (tmp_path / "run.txt").read_text().splitlines() == ["q1 Q0 d3 1 2.0 x", "q1 Q0 d1 2 1.0 x"]
    assert (tmp_path / "qrels.txt").read_text().splitlines() == ["q1 0 d1 1"]
    rows.rag.write_trec(run=tmp_path / "kw.txt", run_name="x", question_id="qid", retrieved="reranked")  # keywords
    assert (tmp_path / "kw.txt").read_text() == (tmp_path / "run.txt").read_text()
    with pytest.raises(TypeError, match="unexpected keyword argument 'retreived'"):
        rows.rag.write_trec(run=tmp_path / "bad.txt", retreived="reranked")
