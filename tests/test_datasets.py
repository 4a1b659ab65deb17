"""Bundled data: loads, validates, and is reproduced by its build script from ../shared."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import REPO, shared_path

from raglab import datasets


def test_questions_are_a_valid_eval_set():
    questions = datasets.squad_questions()
    assert len(questions) == 11873 and questions["question_id"].is_unique
    # SQuAD 2.0 dev: 5,928 answerable and 5,945 unanswerable questions (official statistics).
    assert int(questions["answerable"].sum()) == 5928
    questions.rag.validate(require=["gold_spans"])
    empty = questions["gold_spans"].map(len) == 0
    assert (empty == ~questions["answerable"]).all()
    assert set(questions["qtype"]) <= {"what", "which", "who", "when", "where", "why", "how", "other"}


@pytest.mark.parametrize("config", datasets.SQUAD_RUNS)
def test_runs_validate_and_k_is_five(config):
    run = datasets.squad_run(config)
    run.rag.validate(require=["retrieved", "retrieved_spans", "gold_spans"])
    assert run["retrieved"].map(len).eq(5).all()
    assert run["candidates"].map(len).eq(20).all()
    # what reached the model is the top of the candidates (reranked for chunk500_*)
    assert all(set(r) <= set(c) for r, c in zip(run["retrieved"], run["candidates"]))
    assert run.rag.meta["run"]["name"] == config


@pytest.mark.parametrize("model", datasets.SQUAD_READERS)
def test_readers(model):
    reader = datasets.squad_reader(model)
    assert len(reader) == 11873
    assert reader["em"].isin([0.0, 1.0]).all() and reader["f1"].between(0, 1).all()
    assert (reader["em"] <= reader["f1"]).all()


def test_bad_choice():
    with pytest.raises(ValueError, match=r"The value for `config` must be one of \['chunk1000_bm25'"):
        datasets.squad_run("chunk256")


@pytest.mark.slow
def test_build_script_reproduces_committed_files(tmp_path):
    shared = shared_path("squad2_dev_explorer").parent
    subprocess.run(
        [sys.executable, str(REPO / "scripts" / "build_data.py"), "--shared", str(shared), "--out", str(tmp_path),
         "--only", "questions", "--only", "readers", "--only", "runs"],
        check=True, capture_output=True, text=True,
    )
    expected = ["questions.parquet", *(f"readers/{m}.parquet" for m in datasets.SQUAD_READERS),
                *(f"runs/{c}.parquet" for c in datasets.SQUAD_RUNS)]  # the runs too: chunking changes must show
    for relative in expected:
        assert (tmp_path / relative).read_bytes() == (REPO / "data" / "squad2" / relative).read_bytes(), relative


# ---- where the data is found (issue 12: a package that works when installed) -----------------------------------


def test_in_a_checkout_the_data_is_read_in_place(monkeypatch):
    monkeypatch.delenv("RAGLAB_DATA", raising=False)
    assert datasets.data_dir() == REPO / "data"
    # data/ is the only copy in the repository: the wheel's raglab/datasets/data/ is made at build time
    # (setup.py), so there is nothing that could drift from it. tests/test_install.py checks the built wheel.
    assert not (REPO / "raglab" / "datasets" / "data").exists()


def test_data_dir_prefers_raglab_data_then_the_installed_copy(monkeypatch, tmp_path):
    installed, checkout, configured = tmp_path / "installed", tmp_path / "checkout", tmp_path / "configured"
    for folder in (installed, checkout, configured):
        folder.mkdir()
    monkeypatch.setattr(datasets, "_PACKAGED", installed)
    monkeypatch.setattr(datasets, "_CHECKOUT", checkout)
    monkeypatch.delenv("RAGLAB_DATA", raising=False)
    assert datasets.data_dir() == installed
    installed.rmdir()
    assert datasets.data_dir() == checkout
    monkeypatch.setenv("RAGLAB_DATA", str(configured))
    assert datasets.data_dir() == configured
    monkeypatch.setenv("RAGLAB_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="RAGLAB_DATA is .*nowhere.*not a folder"):
        datasets.handbook()
    monkeypatch.delenv("RAGLAB_DATA")
    checkout.rmdir()
    with pytest.raises(FileNotFoundError, match="neither in the installed package .* nor in a source checkout"):
        datasets.data_dir()


def test_data_readme_names_each_source_and_licence():
    readme = (REPO / "data" / "README.md").read_text()
    sections = {part.split("`", 2)[1].rstrip("/"): part for part in readme.split("\n## ")[1:]}
    folders = sorted(p.name for p in (REPO / "data").iterdir() if p.is_dir())
    assert sorted(sections) == folders
    for name, text in sections.items():
        assert "**Source**" in text and "**Licence**" in text, f"data/README.md: {name}/ lacks its source or licence"
