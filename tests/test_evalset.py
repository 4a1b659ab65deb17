"""Frozen, versioned eval sets: freeze, verify, refuse edits, extend, stamp runs."""

from __future__ import annotations

import hashlib
import json

import pandas as pd
import pytest

import raglab
from raglab import EvalSet, EvalSetTamperedError
from raglab._errors import EvalSetMismatchError, RowTableError
from raglab._meta import get_meta
from raglab._rowtable import pair_runs


def questions() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "question_id": ["q1", "q2", "q3"],
            "question": ["Who?", "What?", "When?"],
            "gold": [["d1"], {"d2": 3, "d7": 1}, []],
            "qtype": ["who", "what", "when"],
            "retrieved": [["x"], ["y"], ["z"]],  # a run column: not frozen
        }
    )


def test_freeze_writes_rows_and_manifest(tmp_path):
    es = EvalSet.freeze(questions(), tmp_path / "golden", version="v1", columns=["qtype"])
    manifest = json.loads((tmp_path / "golden" / "v1" / "manifest.json").read_text())
    assert manifest["version"] == "v1" and manifest["n_rows"] == 3 and manifest["name"] == "golden"
    assert manifest["columns"] == ["question_id", "question", "gold", "qtype"]
    assert manifest["raglab_version"] == raglab.__version__
    assert set(manifest["row_hashes"]) == {"q1", "q2", "q3"}
    # The whole-set hash is a hash of the sorted per-row hashes (independent recomputation).
    digest = hashlib.sha256()
    for qid in sorted(manifest["row_hashes"]):
        digest.update(f"{qid}\t{manifest['row_hashes'][qid]}\n".encode())
    assert manifest["set_hash"] == digest.hexdigest() == es.hash
    loaded = EvalSet.load(tmp_path / "golden")
    assert loaded.version == "v1" and loaded.hash == es.hash
    assert loaded.rows["gold"].tolist() == questions()["gold"].tolist()
    assert "v1" in repr(loaded) and "3 questions" in repr(loaded)


def test_row_order_does_not_change_the_hash(tmp_path):
    a = EvalSet.freeze(questions(), tmp_path / "a", version="v1")
    b = EvalSet.freeze(questions().iloc[::-1], tmp_path / "b", version="v1")
    assert a.hash == b.hash


def test_content_change_changes_the_hash(tmp_path):
    edited = questions()
    edited.at[1, "gold"] = {"d2": 2, "d7": 1}
    a = EvalSet.freeze(questions(), tmp_path / "a", version="v1")
    b = EvalSet.freeze(edited, tmp_path / "b", version="v1")
    assert a.hash != b.hash
    assert a.manifest["row_hashes"]["q1"] == b.manifest["row_hashes"]["q1"]
    assert a.manifest["row_hashes"]["q2"] != b.manifest["row_hashes"]["q2"]


def test_tampered_file_is_refused_with_changed_ids(tmp_path):
    EvalSet.freeze(questions(), tmp_path / "golden", version="v1")
    path = tmp_path / "golden" / "v1" / "rows.jsonl"
    lines = path.read_text().splitlines()
    record = json.loads(lines[1])  # no schema line any more (it is in the sidecar): line 1 is q2
    record["gold"] = {"d2": 1}
    lines[1] = json.dumps(record)
    lines.append(json.dumps({"question_id": "q9", "question": "New?", "gold": ["d9"]}))
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(EvalSetTamperedError, match=r"edited after freezing: 1 changed \['q2'\]; 1 added \['q9'\]"):
        EvalSet.load(tmp_path / "golden")


def test_removed_row_is_refused(tmp_path):
    EvalSet.freeze(questions(), tmp_path / "golden", version="v1")
    path = tmp_path / "golden" / "v1" / "rows.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(EvalSetTamperedError, match=r"1 removed \['q3'\]"):
        EvalSet.load(tmp_path / "golden")


def test_edited_manifest_is_refused(tmp_path):
    EvalSet.freeze(questions(), tmp_path / "golden", version="v1")
    path = tmp_path / "golden" / "v1" / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["row_hashes"]["q1"] = "0" * 64
    path.write_text(json.dumps(manifest))
    with pytest.raises(EvalSetTamperedError, match="manifest's hashes were edited"):
        EvalSet.load(tmp_path / "golden")


def test_versions_are_never_overwritten(tmp_path):
    EvalSet.freeze(questions(), tmp_path / "golden", version="v1")
    with pytest.raises(FileExistsError, match=r"version 'v1' already exists.*extend"):
        EvalSet.freeze(questions(), tmp_path / "golden", version="v1")


def test_extend_makes_next_version_and_keeps_the_old(tmp_path):
    v1 = EvalSet.freeze(questions(), tmp_path / "golden", version="v1", columns=["qtype"])
    new = pd.DataFrame({"question_id": ["q4"], "question": ["Why?"], "gold": [["d4"]], "qtype": ["why"]})
    v2 = v1.extend(new)
    assert v2.version == "v2" and v2.added == ["q4"] and len(v2) == 4
    assert v2.manifest["parent"] == {"version": "v1", "hash": v1.hash}
    assert EvalSet.versions(tmp_path / "golden") == ["v1", "v2"]
    assert EvalSet.load(tmp_path / "golden").version == "v2"
    assert EvalSet.load(tmp_path / "golden", version="v1").hash == v1.hash
    # Rows of v1 are unchanged in v2 (same per-row hashes).
    for qid, digest in v1.manifest["row_hashes"].items():
        assert v2.manifest["row_hashes"][qid] == digest
    assert "1 added to v1" in repr(v2)


def test_extend_refuses_reused_ids_and_missing_columns(tmp_path):
    v1 = EvalSet.freeze(questions(), tmp_path / "golden", version="v1")
    with pytest.raises(RowTableError, match=r"question ids already in version 'v1': \['q2'\]"):
        v1.extend(pd.DataFrame({"question_id": ["q2"], "question": ["?"], "gold": [["d"]]}))
    with pytest.raises(RowTableError, match=r"missing \['question'\]"):
        v1.extend(pd.DataFrame({"question_id": ["q5"], "gold": [["d"]]}))


def test_freeze_validates_the_table(tmp_path):
    bad = questions()
    bad.loc[2, "question_id"] = "q1"
    with pytest.raises(RowTableError, match=r"EvalSet.freeze: column 'question_id' must be unique"):
        EvalSet.freeze(bad, tmp_path / "g", version="v1")
    assert not (tmp_path / "g" / "v1").exists()


def test_stamp_adds_gold_and_version_and_comparisons_refuse_mixed_versions(tmp_path):
    v1 = EvalSet.freeze(questions(), tmp_path / "golden", version="v1")
    run = pd.DataFrame({"question_id": ["q3", "q1", "q2"], "retrieved": [[], ["d1"], ["d2"]]})
    stamped = v1.stamp(run)
    assert stamped["gold"].tolist() == [[], ["d1"], {"d2": 3, "d7": 1}]
    assert get_meta(stamped)["evalset"]["version"] == "v1"
    assert get_meta(stamped)["evalset"]["hash"] == v1.hash
    assert "evalset" not in get_meta(run)  # the input is not modified
    v2 = v1.extend(pd.DataFrame({"question_id": ["q4"], "question": ["Why?"], "gold": [["d4"]]}))
    run_v2 = v2.stamp(pd.concat([run, pd.DataFrame({"question_id": ["q4"], "retrieved": [["d4"]]})]))
    with pytest.raises(EvalSetMismatchError, match="different eval sets"):
        pair_runs(stamped, run_v2, how="inner")


def test_stamp_metadata_survives_files(tmp_path):
    v1 = EvalSet.freeze(questions(), tmp_path / "golden", version="v1")
    stamped = v1.stamp(pd.DataFrame({"question_id": ["q1", "q2", "q3"], "retrieved": [[], [], []]}))
    for suffix in (".jsonl", ".csv", ".parquet"):
        back = raglab.read_rows(stamped.rag.write(tmp_path / f"run{suffix}"))
        assert get_meta(back)["evalset"] == get_meta(stamped)["evalset"]


def test_stamp_refuses_incomplete_or_foreign_runs(tmp_path):
    v1 = EvalSet.freeze(questions(), tmp_path / "golden", version="v1")
    with pytest.raises(RowTableError, match=r"lacks 1 of the 3 eval-set questions, e.g. \['q3'\]"):
        v1.stamp(pd.DataFrame({"question_id": ["q1", "q2"], "retrieved": [[], []]}))
    partial = v1.stamp(pd.DataFrame({"question_id": ["q1", "q2"], "retrieved": [[], []]}), allow_missing=True)
    assert get_meta(partial)["evalset"]["n_missing"] == 1
    with pytest.raises(RowTableError, match=r"not in eval set .*\['qX'\]"):
        v1.stamp(pd.DataFrame({"question_id": ["qX"], "retrieved": [[]]}), allow_missing=True)
    with pytest.raises(RowTableError, match=r"column 'gold' of the run differs from the eval set .*\['q1'\]"):
        v1.stamp(pd.DataFrame({"question_id": ["q1", "q2", "q3"], "gold": [["zz"], {"d2": 3, "d7": 1}, []]}))


def test_an_eval_set_records_its_cluster_column_and_runs_carry_it(tmp_path):
    rows = pd.DataFrame({"question_id": [f"q{i}" for i in range(6)], "gold": [["d"]] * 6,
                         "conversation_id": ["c1", "c1", "c2", "c2", "c3", "c3"]})
    es = EvalSet.freeze(rows, tmp_path, version="v1", units="conversation_id")
    assert es.units == "conversation_id" and "conversation_id" in es.columns
    run = es.stamp(pd.DataFrame({"question_id": [f"q{i}" for i in range(6)]}))
    assert run.attrs["raglab"]["evalset"]["units"] == "conversation_id"
    assert run["conversation_id"].tolist() == rows["conversation_id"].tolist()
    grown = EvalSet.load(tmp_path).extend(pd.DataFrame({"question_id": ["q6"], "gold": [["d"]], "conversation_id": ["c4"]}))
    assert grown.units == "conversation_id" and grown.columns.count("conversation_id") == 1
    assert EvalSet.load(tmp_path, "v2").stamp_record()["units"] == "conversation_id"
    with pytest.raises(RowTableError, match="cluster column 'conversation_id' must name a cluster for every question"):
        EvalSet.freeze(rows.assign(conversation_id=["c1", None, "c2", "c2", "c3", "c3"]), tmp_path / "x",
                       version="v1", units="conversation_id")


def test_summary_compare_and_gate_resample_the_eval_sets_clusters_by_default(tmp_path):
    import numpy as np

    rng = np.random.default_rng(4)
    n_conv, per = 30, 8
    ids = [f"q{i}" for i in range(n_conv * per)]
    conv = np.repeat([f"c{i}" for i in range(n_conv)], per)
    rows = pd.DataFrame({"question_id": ids, "gold": [["d"]] * len(ids), "conversation_id": conv})
    es = EvalSet.freeze(rows, tmp_path, version="v1", units="conversation_id")
    effect = rng.normal(0, 0.15, n_conv)[np.repeat(np.arange(n_conv), per)]  # questions of a conversation move together
    base = es.stamp(pd.DataFrame({"question_id": ids, "faithfulness": rng.uniform(0.3, 0.7, len(ids))}))
    cand = es.stamp(base[["question_id"]].assign(faithfulness=(base["faithfulness"] + effect + rng.normal(0, 0.02, len(ids))).clip(0, 1)))
    clustered = base.rag.compare(cand, metrics=["faithfulness"], n_resamples=2_000, n_permutations=200)
    independent = base.rag.compare(cand, metrics=["faithfulness"], units=False, n_resamples=2_000, n_permutations=200)
    assert clustered["method"].iloc[0] == "paired cluster bootstrap (expanded percentile)"
    assert clustered["n_clusters"].iloc[0] == n_conv
    assert clustered.attrs["raglab"]["comparison"]["units"] == "conversation_id"
    width = lambda t: float(t["high"].iloc[0] - t["low"].iloc[0])  # noqa: E731
    assert width(clustered) > 1.8 * width(independent)  # design effect about 1 + (8 - 1) x ICC
    summary = base.rag.summary(["faithfulness"])
    assert "cluster" in summary["method"].iloc[0]
    assert "cluster" not in base.rag.summary(["faithfulness"], units=False)["method"].iloc[0]
    gated = base.rag.gate(cand, metrics=["faithfulness"], margin=0.02, n_resamples=1_000, n_permutations=200)
    assert gated.table["n_clusters"].iloc[0] == n_conv
    with pytest.raises(TypeError, match="units"):
        base.rag.compare(cand, metrics=["faithfulness"], units=3)


# ---- ids as text, plain version names, the manifest's own fields, any column dtype -----------------


def test_ids_that_are_equal_as_text_are_refused(tmp_path):
    rows = pd.DataFrame({"question_id": pd.Series([7, "7"], dtype=object), "gold": [["a"], ["b"]]})
    with pytest.raises(RowTableError, match=r"must be unique as text .* \['7'\]"):
        EvalSet.freeze(rows, tmp_path / "es", version="v1")
    assert not (tmp_path / "es" / "v1").exists()


@pytest.mark.parametrize("version", ["../x", "a/b", "", " ", ".hidden", "..", "/abs", "a\\b"])
def test_version_names_are_plain_names(tmp_path, version):
    with pytest.raises(ValueError, match=r"is not a plain name"):
        EvalSet.freeze(questions(), tmp_path / "es", version=version)
    assert not (tmp_path / "x").exists() and list(tmp_path.iterdir()) in ([], [tmp_path / "es"])


def test_the_manifest_fields_are_covered_by_its_hash(tmp_path):
    EvalSet.freeze(questions(), tmp_path / "es", version="v1")
    path = tmp_path / "es" / "v1" / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["units"] = "qtype"  # would make every interval resample clusters
    path.write_text(json.dumps(manifest))
    with pytest.raises(EvalSetTamperedError, match=r"manifest.json' was edited after freezing"):
        EvalSet.load(tmp_path / "es")


def test_a_row_count_that_disagrees_with_the_manifest_is_refused(tmp_path):
    EvalSet.freeze(questions(), tmp_path / "es", version="v1")
    path = tmp_path / "es" / "v1" / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["n_rows"] = 2
    del manifest["manifest_hash"]  # a manifest of the previous format: n_rows is still checked
    path.write_text(json.dumps(manifest))
    with pytest.raises(EvalSetTamperedError, match=r"holds 3 rows, the manifest froze 2"):
        EvalSet.load(tmp_path / "es")


def test_a_garbled_manifest_names_its_file(tmp_path):
    EvalSet.freeze(questions(), tmp_path / "es", version="v1")
    (tmp_path / "es" / "v1" / "manifest.json").write_text('{"name": ')
    with pytest.raises(EvalSetTamperedError, match=r"v1/manifest.json' is not a valid eval-set manifest"):
        EvalSet.load(tmp_path / "es")


@pytest.mark.parametrize(
    "column",
    [
        pd.array([1, None, 3], dtype="Int64"),
        pd.array(["a", None, "c"], dtype="string"),
        pd.to_datetime(["2024-01-01", None, "2024-03-01"]),
        pd.to_datetime(["2024-01-01", "2024-02-01", "2024-03-01"]).tz_localize("UTC"),
    ],
)
def test_nullable_and_datetime_columns_freeze_and_load(tmp_path, column):
    rows = questions().assign(extra=column)
    es = EvalSet.freeze(rows, tmp_path / "es", version="v1", columns=["extra"])
    back = EvalSet.load(tmp_path / "es")
    assert back.hash == es.hash
    assert back.rows["extra"].isna().tolist() == pd.Series(column).isna().tolist()


def test_an_edit_of_an_int_id_row_is_caught(tmp_path):
    rows = pd.DataFrame({"question_id": [7, 8], "gold": [["a"], ["b"]]})
    EvalSet.freeze(rows, tmp_path / "es", version="v1")
    path = tmp_path / "es" / "v1" / "rows.jsonl"
    path.write_text(path.read_text().replace('["a"]', '["z"]'))
    with pytest.raises(EvalSetTamperedError, match=r"1 changed \['7'\]"):
        EvalSet.load(tmp_path / "es")


def test_a_cut_rows_file_with_a_nan_in_a_frozen_column_is_refused_as_tampered(tmp_path):
    # the sidecar's NaN positions point past the cut file's end: a tampering error, never an IndexError
    rows = questions().assign(qtype=pd.Series(["who", "what", float("nan")], dtype=object))
    EvalSet.freeze(rows, tmp_path / "golden", version="v1", columns=["qtype"])
    path = tmp_path / "golden" / "v1" / "rows.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(EvalSetTamperedError, match=r"1 removed \['q3'\]"):
        EvalSet.load(tmp_path / "golden")


def test_a_repeated_row_in_the_rows_file_is_refused_as_tampered(tmp_path):
    EvalSet.freeze(questions(), tmp_path / "golden", version="v1")
    path = tmp_path / "golden" / "v1" / "rows.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines + lines[:1]) + "\n")
    with pytest.raises(EvalSetTamperedError, match=r"must be unique as text .* \['q1'\] .* edited after freezing"):
        EvalSet.load(tmp_path / "golden")


def test_runs_pair_ids_as_text_and_refuse_ids_equal_as_text():
    base = pd.DataFrame({"question_id": pd.Series([7, "7"], dtype=object), "score": [0.1, 0.2]})
    with pytest.raises(RowTableError, match=r"\(base\): column 'question_id' must be unique as text .* \['7'\]"):
        pair_runs(base, base.copy())


# ---- issue 19: the sidecar is part of the version; the latest is never chosen by name; ~ is home --------


@pytest.mark.parametrize(
    "edit",
    [
        lambda record: record["__raglab__"].update(attrs={"retrieval": {"gain": "linear"}}),
        lambda record: record["__raglab__"]["columns"]["question"].update(dtype="category", kind="category",
                                                                          categories=["Who?", "What?", "When?"]),
    ],
    ids=["attrs", "dtype"],
)
def test_an_edit_to_the_rows_sidecar_is_refused(tmp_path, edit):
    EvalSet.freeze(questions(), tmp_path / "golden", version="v1")
    sidecar = tmp_path / "golden" / "v1" / "rows.jsonl.raglab.json"
    record = json.loads(sidecar.read_text())
    edit(record)
    sidecar.write_text(json.dumps(record))
    # the old loader handed the edited attrs (here an nDCG convention) to every run stamped with the set
    with pytest.raises(EvalSetTamperedError, match=r"rows.jsonl.raglab.json' \(the rows' dtypes and attrs\) was edited"):
        EvalSet.load(tmp_path / "golden")


def test_a_removed_rows_sidecar_is_refused(tmp_path):
    EvalSet.freeze(questions(), tmp_path / "golden", version="v1")
    (tmp_path / "golden" / "v1" / "rows.jsonl.raglab.json").unlink()
    with pytest.raises(EvalSetTamperedError, match="edited or removed after freezing"):
        EvalSet.load(tmp_path / "golden")


def test_two_versions_with_the_same_sequence_are_not_chosen_between_by_name(tmp_path):
    v1 = EvalSet.freeze(questions(), tmp_path / "golden", version="v1")
    v1.extend(pd.DataFrame({"question_id": ["q4"], "question": ["Why?"], "gold": [["d4"]]}), version="v2")
    v1.extend(pd.DataFrame({"question_id": ["q5"], "question": ["How?"], "gold": [["d5"]]}), version="v2-b")
    with pytest.raises(ValueError, match=r"versions \['v2', 'v2-b'\] .* are all number 2 in sequence .* version="):
        EvalSet.load(tmp_path / "golden")
    assert EvalSet.load(tmp_path / "golden", version="v2-b").added == ["q5"]
    assert EvalSet.versions(tmp_path / "golden") == ["v1", "v2", "v2-b"]
    # a later extension makes the latest unambiguous again
    EvalSet.load(tmp_path / "golden", version="v2").extend(
        pd.DataFrame({"question_id": ["q6"], "question": ["Where?"], "gold": [["d6"]]}))
    assert EvalSet.load(tmp_path / "golden").version == "v3"


def test_a_home_relative_eval_set_path_is_expanded(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    EvalSet.freeze(questions(), "~/golden", version="v1")
    assert (tmp_path / "home" / "golden" / "v1" / "manifest.json").is_file()
    assert not (tmp_path / "~").exists()
    assert EvalSet.load("~/golden").name == "golden" and EvalSet.versions("~/golden") == ["v1"]


def test_the_manifest_is_written_whole_and_last(tmp_path):
    es = EvalSet.freeze(questions(), tmp_path / "golden", version="v1")
    assert sorted(p.name for p in es.path.iterdir()) == ["manifest.json", "rows.jsonl", "rows.jsonl.raglab.json"]
    with pytest.raises(FileExistsError, match="already exists"):
        EvalSet.freeze(questions(), tmp_path / "golden", version="v1")
