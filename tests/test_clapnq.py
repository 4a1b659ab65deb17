"""ClapNQ dev (data/clapnq): span gold over passages, BM25 runs at 256 and 512 characters, the build script."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pandas as pd
import pytest
from conftest import REPO, shared_path

from raglab.datasets import clapnq


@pytest.fixture(scope="module")
def questions():
    return clapnq.load_questions()


@pytest.fixture(scope="module")
def runs():
    return clapnq.load_runs()


def test_counts_and_gold(questions):
    assert len(questions) == 600 and questions["question_id"].is_unique
    assert int(questions["answerable"].sum()) == 300
    questions.rag.validate(require=["gold_spans"])
    empty = questions["gold_spans"].map(len).eq(0)
    assert empty[~questions["answerable"]].all()
    # one answerable question has answers written but no selected sentence (ClapNQ id 4371964269871290494)
    assert questions.loc[questions["answerable"] & empty, "question_id"].tolist() == ["4371964269871290494"]
    assert int(questions["n_gold"].sum()) == 893 == int(questions["gold_spans"].map(len).sum())


def test_gold_spans_lie_in_their_passage(questions):
    lengths = dict(zip(*clapnq.load_documents()[["doc_id", "n_chars"]].T.values))
    for doc_id, n_chars, spans in zip(questions["doc_id"], questions["passage_chars"], questions["gold_spans"]):
        assert lengths[doc_id] == n_chars
        previous_end = 0
        for span in spans:
            assert span["doc_id"] == doc_id
            assert previous_end <= span["start"] < span["end"] <= n_chars  # sorted, disjoint, inside
            previous_end = span["end"]


@pytest.mark.parametrize("size", clapnq.SIZES)
def test_chunk_tables_tile_every_passage(size):
    chunks = clapnq.load_chunks(size)
    docs = clapnq.load_documents()
    assert list(chunks.columns) == ["chunk_id", "doc_id", "start", "end", "position"] and chunks["chunk_id"].is_unique
    assert ((chunks["end"] - chunks["start"]).between(1, size)).all()
    for _, group in chunks.groupby("doc_id", sort=False):
        assert group["position"].tolist() == list(range(len(group)))
        assert group["start"].iloc[0] == 0 and (group["start"].iloc[1:].to_numpy() == group["end"].iloc[:-1].to_numpy()).all()
    assert dict(chunks.groupby("doc_id")["end"].max()) == dict(zip(docs["doc_id"], docs["n_chars"]))


@pytest.mark.parametrize("size", clapnq.SIZES)
def test_chunk_tables_are_raglab_chunks_fixed(size):
    from raglab import chunks as chunks_module
    docs = clapnq.load_documents()
    expected = chunks_module.fixed(dict(zip(docs["doc_id"], docs["n_chars"])), size)
    pd.testing.assert_frame_equal(clapnq.load_chunks(size), expected[list(clapnq.load_chunks(size).columns)], check_dtype=False)


@pytest.mark.parametrize("size", clapnq.SIZES)
def test_runs_are_valid_row_tables(runs, size):
    run = runs[f"chunk{size}_bm25"]
    run.rag.validate(require=["retrieved", "retrieved_spans", "gold_spans"])
    assert len(run) == 600 and run["retrieved"].map(len).eq(5).all() and run["candidates"].map(len).eq(20).all()
    assert all(r == c[:5] for r, c in zip(run["retrieved"], run["candidates"]))
    assert all(list(s) == sorted(s, reverse=True) for s in run["scores"])
    spans = clapnq.load_chunks(size).set_index("chunk_id")
    for ids, got in zip(run["candidates"].head(50), run["candidate_spans"].head(50)):
        assert got == [{"doc_id": spans.at[c, "doc_id"], "start": int(spans.at[c, "start"]), "end": int(spans.at[c, "end"])} for c in ids]
    assert run["retrieved_spans"].tolist() == run["candidate_spans"].map(lambda s: s[:5]).tolist()
    meta = run.rag.meta
    assert meta["evalset"]["name"] == "clapnq-dev" and meta["run"]["name"] == f"chunk{size}_bm25"
    assert meta["dataset"]["licence"].startswith("Apache-2.0")


def test_both_runs_share_one_eval_set_stamp(runs):
    a, b = runs["chunk256_bm25"], runs["chunk512_bm25"]
    assert a.rag.meta["evalset"] == b.rag.meta["evalset"]
    assert (a["question_id"] == b["question_id"]).all()


def test_span_retrieval_scores_and_the_manifest_agree(runs):
    summary = json.loads((clapnq.data_dir() / "manifest.json").read_text())["summary"]
    for name, run in runs.items():
        scores = run.rag.retrieval(k=5)
        has_gold = run["gold_spans"].map(len).gt(0)
        assert scores.loc[~has_gold, "recall@5"].isna().all()
        assert scores.loc[has_gold, ["recall@5", "coverage@5"]].notna().all().all()
        assert round(float(scores["recall@5"].mean()), 4) == summary[name]["recall@5"]
        assert round(float(scores["coverage@5"].mean()), 4) == summary[name]["coverage@5"]
        old = run.rag.retrieval(k=5, span_rule="per_chunk")
        assert round(float(old["recall@5"].mean()), 4) == summary[name]["recall@5_per_chunk"]
        # a sentence wholly in the top 5 is also touched by one of its chunks: the old rule only adds cut sentences
        assert (old["recall@5"] >= scores["recall@5"])[has_gold].all()
    assert summary["chunk512_bm25"]["recall@5"] > summary["chunk256_bm25"]["recall@5"]


def test_straddling_counts_against_a_character_set_oracle(questions):
    summary = json.loads((clapnq.data_dir() / "manifest.json").read_text())["summary"]
    for size in clapnq.SIZES:
        chunks = clapnq.load_chunks(size)
        sets = {}
        for d, s, e in zip(chunks["doc_id"], chunks["start"], chunks["end"]):
            sets.setdefault(d, []).append(set(range(s, e)))
        cut = sum(
            not any(set(range(g["start"], g["end"])) <= window for window in sets[g["doc_id"]])
            for spans in questions["gold_spans"] for g in spans
        )
        assert cut == summary[f"chunk{size}_bm25"]["gold_sentences_straddling"]
        assert 0 < cut < 893


def test_support_is_a_number_for_answerable_questions_only(runs):
    for run in runs.values():
        assert run.loc[~run["answerable"], "support"].isna().all()
        answered = run.loc[run["answerable"], "support"]
        assert answered.between(0, 1).all() and answered.notna().all()
        assert (run.loc[run["answerable"], "support_claims"] > 0).all()


def test_bad_size_and_missing_folder(tmp_path):
    with pytest.raises(ValueError, match=r"`size` must be one of \[256, 512\]"):
        clapnq.load_run(300)
    with pytest.raises(FileNotFoundError, match=r"ClapNQ files \['manifest.json'.*build_clapnq.py"):
        clapnq.load_questions(path=tmp_path)


@pytest.mark.slow
@pytest.mark.shared
def test_build_script_reproduces_the_committed_files(tmp_path):
    shared = shared_path("clapnq_dev", "annotated_data", "dev", "clapnq_dev_answerable.jsonl").parents[3]
    pytest.importorskip("rank_bm25", reason="the build ranks with rank_bm25: pip install 'raglab[test]'")
    spec = importlib.util.spec_from_file_location("build_clapnq", REPO / "scripts" / "build_clapnq.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.build(shared, tmp_path)
    committed = REPO / "data" / "clapnq"
    names = sorted(str(p.relative_to(committed)) for p in committed.rglob("*") if p.is_file())
    assert names == sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    for name in names:
        assert (tmp_path / name).read_bytes() == (committed / name).read_bytes(), f"data/clapnq/{name} is stale: rerun the build"
    assert np.isfinite(json.loads((tmp_path / "manifest.json").read_text())["summary"]["chunk256_bm25"]["recall@5"])
