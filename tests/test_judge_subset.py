"""Judge metrics on a subset (seed 001's CI row): ``rows.rag.judge(judge, sample=..., by=..., seed=...)``.

Only the sampled rows are judged (counted at a local OpenAI-compatible server), the other rows'
judge columns stay NaN, each row carries its inclusion probability and the design is recorded.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import raglab  # noqa: F401  (registers the accessor)
from raglab._errors import RowTableError
from raglab._meta import sampling_design_of
from raglab.judge import LexicalJudge, LLMJudge
from raglab.testing import LocalOpenAIServer

pytest.importorskip("raglab.sampling", reason="raglab.sampling (helper 'sampling') is not merged yet")

N = 40


def make_rows(n: int = N) -> pd.DataFrame:
    qtypes = ["factoid", "howto", "compare", "opinion"]
    return pd.DataFrame({
        "question_id": [f"q{i:02d}" for i in range(n)],
        "question": [f"Which bridge number {i} opened in year {1900 + i}?" for i in range(n)],
        "answer": [f"Bridge {i} opened in {1900 + i}." if i % 3 else f"It is painted blue {i}." for i in range(n)],
        "context": [[f"Bridge {i} opened in {1900 + i} after years of work."] for i in range(n)],
        "qtype": [qtypes[i % 4] for i in range(n)],
    })


def test_lexical_subset_judges_only_the_sample_and_matches_full_run():
    rows = make_rows()
    full = rows.rag.judge(LexicalJudge(), metrics=["faithfulness", "relevance"], progress=False)
    out = rows.rag.judge(LexicalJudge(), metrics=["faithfulness", "relevance"], sample=12, seed=3, progress=False)
    sel = out["selected"].to_numpy(dtype=bool)
    assert sel.sum() == 12 and len(out) == N
    assert out["faithfulness"].notna().to_numpy().tolist() == sel.tolist()
    assert out["relevance"].notna().to_numpy().tolist() == sel.tolist()
    # the judged rows hold exactly what judging every row gives them
    assert out.loc[sel, "faithfulness"].tolist() == full.loc[sel, "faithfulness"].tolist()
    assert out.loc[sel, "faithfulness_claims"].tolist() == full.loc[sel, "faithfulness_claims"].tolist()
    # the others are not judged: NaN scores, no error, no tokens
    assert out.loc[~sel, "judge_error"].isna().all()
    assert (out.loc[~sel, "judge_prompt_tokens"] == 0).all()
    np.testing.assert_allclose(out["inclusion_probability"], 12 / N)
    design = sampling_design_of(out, "judged")
    assert design is not None
    assert (design.kind, design.method, design.n, design.population, design.seed) == ("judged", "uniform", 12, N, 3)
    assert design.inclusion_probability == "inclusion_probability"
    assert out.attrs["raglab"]["sampling"]["judged"]["metrics"] == ["faithfulness", "relevance"]
    assert out.attrs["raglab"]["judge"]["metrics"] == ["faithfulness", "relevance"]
    assert "selected" not in rows.columns  # the input is untouched


def test_share_and_seed():
    rows = make_rows()
    a = rows.rag.judge(LexicalJudge(), metrics="faithfulness", sample=0.25, seed=0, progress=False)
    b = rows.rag.judge(LexicalJudge(), metrics="faithfulness", sample=0.25, seed=0, progress=False)
    c = rows.rag.judge(LexicalJudge(), metrics="faithfulness", sample=0.25, seed=1, progress=False)
    assert int(a["selected"].sum()) == 10
    assert a["selected"].tolist() == b["selected"].tolist()
    assert a["selected"].tolist() != c["selected"].tolist()
    full = rows.rag.judge(LexicalJudge(), metrics="faithfulness", sample=1.0, progress=False)
    assert full["faithfulness"].notna().all() and (full["inclusion_probability"] == 1).all()


def test_stratified_sample_records_its_strata():
    rows = make_rows()
    out = rows.rag.judge(LexicalJudge(), metrics="faithfulness", sample=20, by="qtype", seed=0, progress=False)
    design = sampling_design_of(out, "judged")
    assert design.strata == "qtype" and design.kind == "judged"
    judged_per_stratum = out[out["selected"]].groupby("qtype").size()
    assert set(judged_per_stratum.index) == {"factoid", "howto", "compare", "opinion"}
    # inclusion probabilities are the stratum's judged share (10 rows per stratum)
    for _, group in out.groupby("qtype"):
        np.testing.assert_allclose(group["inclusion_probability"], group["selected"].mean())


def _user_text(body: dict) -> str:
    return "\n".join(str(m.get("content", "")) for m in body.get("messages", []) if m.get("role") == "user")


def test_llm_judge_sends_only_the_sampled_rows():
    rows = make_rows()
    with LocalOpenAIServer() as server:
        judge = LLMJudge("local", base_url=server.base_url, api_key="test-key", cache=None)
        out = rows.rag.judge(judge, metrics="relevance", sample=8, by="qtype", seed=5, progress=False)
        received = server.requests_received
        sent = [_user_text(body) for body in server.requests]
    sel = out["selected"].to_numpy(dtype=bool)
    assert sel.sum() == 8
    assert received == 8  # relevance: one call per judged row, none for the others
    for question, chosen in zip(rows["question"], sel):
        hits = sum(question in text for text in sent)
        assert hits == (1 if chosen else 0), question
    assert out["relevance"].notna().to_numpy().tolist() == sel.tolist()
    assert sampling_design_of(out, "judged").n == 8
    assert out.attrs["raglab"]["judge"]["model"] == "local"
    json.dumps(out.attrs["raglab"])  # the record survives files


@pytest.mark.parametrize("sample, error", [
    (0, ValueError), (N + 1, ValueError), (0.0, ValueError), (1.5, ValueError), (True, TypeError), ("10", TypeError),
])
def test_bad_sample_sizes_are_refused(sample, error):
    with pytest.raises(error, match="sample"):
        make_rows().rag.judge(LexicalJudge(), metrics="faithfulness", sample=sample, progress=False)


def test_by_needs_sample_and_a_column():
    rows = make_rows()
    with pytest.raises(ValueError, match="sample="):
        rows.rag.judge(LexicalJudge(), metrics="faithfulness", by="qtype", progress=False)
    with pytest.raises(RowTableError, match="nope"):
        rows.rag.judge(LexicalJudge(), metrics="faithfulness", sample=5, by="nope", progress=False)
    with pytest.raises(RowTableError, match="selected"):
        rows.assign(selected=True).rag.judge(LexicalJudge(), metrics="faithfulness", sample=5, progress=False)


def test_sample_on_a_table_already_judged_keeps_the_other_metric():
    rows = make_rows()
    first = rows.rag.judge(LexicalJudge(), metrics="relevance", progress=False)
    out = first.rag.judge(LexicalJudge(), metrics="faithfulness", sample=10, seed=2, progress=False)
    sel = out["selected"].to_numpy(dtype=bool)
    assert out["relevance"].tolist() == first["relevance"].tolist()  # every row keeps its earlier score
    assert out["faithfulness"].notna().to_numpy().tolist() == sel.tolist()
    assert out.attrs["raglab"]["judge"]["metrics"] == ["relevance", "faithfulness"]
    # the design says which metrics were judged on the sample
    assert out.attrs["raglab"]["sampling"]["judged"]["metrics"] == ["faithfulness"]


def test_duplicate_index_labels_are_handled_by_position():
    rows = make_rows().set_index(pd.Index([0, 1] * (N // 2)))
    out = rows.rag.judge(LexicalJudge(), metrics="faithfulness", sample=6, seed=0, progress=False)
    assert out["faithfulness"].notna().to_numpy().tolist() == out["selected"].to_numpy(dtype=bool).tolist()
    assert out.index.tolist() == rows.index.tolist()
