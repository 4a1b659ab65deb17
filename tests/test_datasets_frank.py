"""FRANK (data/frank): the build script reproduces the bundled files byte for byte, the counts match
../shared/data/frank/SOURCE.txt, the loaded values equal the source JSON read here independently, and
the loaders' columns, dtypes and records.
"""

from __future__ import annotations

import importlib.util
import json
import math
import shutil
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from conftest import REPO, shared_path

import raglab  # noqa: F401  (registers df.rag)
from raglab._meta import evalset_of, get_meta
from raglab._rowtable import pair_runs
from raglab.datasets import frank_summaries
from raglab.datasets.frank import ERROR_TYPES, JUDGES, METRICS, SYSTEMS, data_dir, load_runs, load_summaries

# The source's metric names, written out here rather than taken from the build script.
SOURCE_METRICS = {
    "factcc": "FactCC", "qags": "QAGS", "feqa": "FEQA", "dae": "Dep Entail",
    "bertscore_p_article": "BertScore P Art", "bertscore_r_article": "BertScore R Art",
    "bertscore_f1_article": "BertScore F1 Art", "bertscore_p": "BertScore P", "bertscore_r": "BertScore R",
    "bertscore_f1": "BertScore F1", "rouge_1": "Rouge 1", "rouge_2": "Rouge 2", "rouge_l": "Rouge L",
    "meteor": "Meteor", "bleu": "Bleu",
}
SOURCE_ERRORS = {
    "semantic_frame": "Semantic_Frame_Errors", "discourse": "Discourse_Errors",
    "content_verifiability": "Content_Verifiability_Errors", "relation": "RelE", "entity": "EntE",
    "circumstance": "CircE", "coreference": "CorefE", "discourse_link": "LinkE", "out_of_article": "OutE",
    "grammar": "GramE", "other": "Other",
}


@pytest.fixture(scope="module")
def rows() -> pd.DataFrame:
    return load_summaries()


def _source(name: str) -> list[dict]:
    return json.loads(shared_path("frank", name).read_text(encoding="utf-8"))


# ---- the loader ------------------------------------------------------------------------------------


def test_counts_match_the_source_description(rows):
    # ../shared/data/frank/SOURCE.txt: 2,246 rows; 9 systems (bart, bert_sum, bus, pgn, s2s: 250 each;
    # BERTS2S, PtGen, TConvS2S, TranS2S: 249 each); 499 articles, each summarised by 4 or 5 systems;
    # split test 1575, valid 671; FactCC 884 zeros and 810 ones
    assert len(rows) == 2246 and rows["question_id"].is_unique
    assert rows["article_id"].nunique() == 499
    assert rows["system"].value_counts().to_dict() == {
        **dict.fromkeys(["bart", "bert_sum", "bus", "pgn", "s2s"], 250),
        **dict.fromkeys(["BERTS2S", "PtGen", "TConvS2S", "TranS2S"], 249)}
    assert set(rows.groupby("article_id").size()) == {4, 5}
    assert rows["split"].value_counts().to_dict() == {"test": 1575, "valid": 671}
    assert int((rows["factcc"] == 0).sum()) == 884 and int((rows["factcc"] == 1).sum()) == 810
    # FRANK's README: 149 validation articles (671 summaries), 350 test articles (1,575 summaries)
    assert rows.groupby("split")["article_id"].nunique().to_dict() == {"test": 350, "valid": 149}
    # paired within a corpus: every system of a corpus summarised every one of its articles
    for dataset, systems in SYSTEMS.items():
        part = rows[rows["dataset"] == dataset]
        assert set(part["system"]) == set(systems)
        assert (part.groupby("article_id")["system"].nunique() == len(systems)).all()


def test_columns_and_dtypes(rows):
    assert list(rows.columns[:7]) == ["question_id", "article_id", "system", "dataset", "split",
                                      "human_factuality", "human_faithful"]
    assert set(METRICS) <= set(rows.columns) and set(JUDGES) <= set(METRICS)
    assert [f"human_free_{t}" for t in ERROR_TYPES] == [c for c in rows.columns if c.startswith("human_free_")]
    for column in ("question_id", "article_id", "system", "dataset", "split"):
        assert pd.api.types.is_string_dtype(rows[column]), column
    # BBC ids are digits: they must stay strings (no int parsing, no lost leading zeros)
    assert rows["article_id"].map(type).eq(str).all()
    assert rows["human_faithful"].dtype == np.int64
    for column in ["human_factuality", *(f"human_free_{t}" for t in ERROR_TYPES), *METRICS]:
        assert rows[column].dtype == np.float64, column
    assert rows["human_factuality"].between(0, 1).all()
    assert ((rows["human_faithful"] == 1) == (rows["human_factuality"] == 1.0)).all()
    assert int(rows["human_faithful"].sum()) == 810
    assert (rows["question_id"] == rows["article_id"] + ":" + rows["system"]).all()
    assert rows[list(METRICS)].isna().sum()[lambda s: s > 0].to_dict() == {"feqa": 4, "dae": 83}


def test_records_and_split(rows):
    meta = get_meta(rows)
    assert meta["dataset"] == {"name": "frank", "source": "https://github.com/artidoro/frank",
                               "commit": "80a88fb12cc0bfc17ff6ee2c5ebb0c4f4dd8a5f4", "licence": "MIT", "split": "all"}
    stamp = evalset_of(rows)
    assert stamp["name"] == "frank" and stamp["version"] == "80a88fb12cc0" and stamp["units"] == "article_id"
    valid = load_summaries("valid")
    assert len(valid) == 671 and set(valid["split"]) == {"valid"} and evalset_of(valid)["hash"] != stamp["hash"]
    pd.testing.assert_frame_equal(valid, rows[rows["split"] == "valid"].reset_index(drop=True), check_like=False)
    pd.testing.assert_frame_equal(frank_summaries(), rows)
    with pytest.raises(ValueError, match="`split` must be one of"):
        load_summaries("validation")


def test_runs_are_paired_by_article(rows):
    runs = load_runs("cnndm")
    assert list(runs) == list(SYSTEMS["cnndm"])
    stamps = {json.dumps(evalset_of(run), sort_keys=True) for run in runs.values()}
    assert len(stamps) == 1
    first = runs["bart"]
    for system, run in runs.items():
        assert len(run) == 250 and run["question_id"].tolist() == first["question_id"].tolist()
        assert get_meta(run)["run"] == {"name": system}
        assert (run["summary_id"] == run["article_id"] + ":" + system).all()
        expected = rows.set_index("question_id").loc[run["summary_id"], "qags"].to_numpy()
        np.testing.assert_array_equal(run["qags"].to_numpy(), expected)
    paired = pair_runs(runs["bart"], runs["pgn"])
    assert paired is not None
    with pytest.raises(ValueError, match="`dataset` must be one of"):
        load_runs("xsum")
    bbc_test = rows.query("dataset == 'bbc' and split == 'test'")["article_id"].nunique()
    assert {len(r) for r in load_runs("bbc", "test").values()} == {bbc_test}


def test_missing_folder_is_clear(tmp_path):
    with pytest.raises(FileNotFoundError, match="build_frank.py"):
        load_summaries(path=tmp_path)


# ---- against the source ------------------------------------------------------------------------------


def _build_module():
    spec = importlib.util.spec_from_file_location("build_frank", REPO / "scripts" / "build_frank.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.shared
def test_build_script_reproduces_the_committed_files():
    source = shared_path("frank", "human_annotations.json").parent
    files = _build_module().build(source)
    assert sorted(files) == sorted(p.name for p in (REPO / "data" / "frank").iterdir())
    for name, blob in files.items():
        assert (REPO / "data" / "frank" / name).read_bytes() == blob, f"data/frank/{name} is stale: rerun the build"


@pytest.mark.shared
def test_loaded_figures_equal_the_source_json(rows):
    human = {(h["hash"], h["model_name"]): h for h in _source("human_annotations.json")}
    scores = {(m["hash"], m["model_name"]): m for m in _source("baseline_factuality_metrics_outputs.json")}
    assert len(human) == len(scores) == len(rows)
    for row in rows.to_dict("records"):
        h, m = human[(row["article_id"], row["system"])], scores[(row["article_id"], row["system"])]
        assert (row["dataset"], row["split"]) == (h["dataset"], h["split"]) == (m["dataset"], m["split"])
        assert row["human_factuality"] == h["Factuality"]
        assert row["human_faithful"] == int(h["Factuality"] == 1)
        for ours, theirs in SOURCE_ERRORS.items():
            assert row[f"human_free_{ours}"] == h[theirs]
        for ours, theirs in SOURCE_METRICS.items():
            value = m[theirs]
            assert math.isnan(row[ours]) if value is None else row[ours] == value, (row["question_id"], ours)
    # the order is the source's
    order = [f"{h['hash']}:{h['model_name']}" for h in _source("human_annotations.json")]
    assert rows["question_id"].tolist() == order


def test_worked_values_of_the_first_summary(rows):
    # read off ../shared/data/frank/*.json by eye: the first record, bart on a CNN/DM article
    first = rows.iloc[0]
    assert (first["article_id"], first["system"], first["dataset"], first["split"]) == (
        "b71b7737562c6aa7c3ceefcbb2073a35c9854e54", "bart", "cnndm", "test")
    assert (first["human_factuality"], first["factcc"], first["qags"], first["feqa"], first["dae"]) == (
        1.0, 1.0, 0.9, 0.3948604422, 0.9433920383)
    assert (first["bertscore_p_article"], first["bleu"]) == (0.9082671403884888, 14.5031074737)
    assert Counter(rows["dataset"]) == {"cnndm": 1250, "bbc": 996}


@pytest.mark.shared
def test_splits_equal_frank_split_files(rows):
    for split, name in (("valid", "validation_split.txt"), ("test", "test_split.txt")):
        ids = {line.strip() for line in shared_path("frank", name).read_text().splitlines() if line.strip()}
        assert set(rows.loc[rows["split"] == split, "article_id"]) == ids, split

def test_raglab_data_points_the_loaders_elsewhere(tmp_path, monkeypatch, rows):
    # an installed wheel reads raglab/datasets/data/frank the same way: data_dir() is the one switch
    shutil.copytree(REPO / "data" / "frank", tmp_path / "frank")
    monkeypatch.setenv("RAGLAB_DATA", str(tmp_path))
    assert data_dir() == tmp_path / "frank"
    pd.testing.assert_frame_equal(load_summaries(), rows)
    (tmp_path / "frank" / "summaries.csv").unlink()
    with pytest.raises(FileNotFoundError, match=r"FRANK files \['summaries.csv'\]"):
        load_summaries()
