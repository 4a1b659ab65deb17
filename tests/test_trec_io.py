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
