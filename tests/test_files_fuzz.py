"""Bad files: a corpus of damaged and hostile files (tests/data/bad_files) and seeded byte-level fuzzing.

Every file either reads correctly or is refused with a RowTableError that names the file; the CLI
answers 0 or 2 with one line naming the file, never 4 ("please report") and never 1 ("block").
"""

from __future__ import annotations

import json
import random
import shutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import raglab
from raglab._meta import get_meta, set_meta
from raglab.cli import main

CORPUS = Path(__file__).parent / "data" / "bad_files"
CASES = json.loads((CORPUS / "cases.json").read_text())


def _read(case: dict, path: Path) -> pd.DataFrame:
    if case["reader"] == "rows":
        return raglab.read_rows(path)
    return raglab.read_trec(**{case["reader"]: path})


def _copy(name: str, tmp_path: Path) -> Path:
    """The case's file (and its sidecar) in a scratch folder: tests never touch the corpus."""
    for source in CORPUS.glob(name + "*"):
        if source.name in (name, name + ".raglab.json"):
            shutil.copy(source, tmp_path / source.name)
    return tmp_path / name


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_bad_file_reads_correctly_or_is_refused_naming_it(name, tmp_path):
    case = CASES[name]
    path = _copy(name, tmp_path)
    if case["outcome"] == "error":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(raglab.RowTableError, match=case["match"]) as info:
                _read(case, path)
        assert name in str(info.value)
        return
    if case["outcome"] == "warning":
        with pytest.warns(UserWarning, match=case["match"]):
            frame = _read(case, path)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            frame = _read(case, path)
    assert len(frame) == case["n_rows"] and list(frame.columns) == case["columns"]
    if "attrs" in case:
        assert get_meta(frame) == case["attrs"]
    if "first_id" in case:
        assert frame["question_id"].iloc[0] == case["first_id"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_cli_answers_bad_files_with_exit_2_naming_the_file(name, tmp_path, capsys):
    case = CASES[name]
    path = _copy(name, tmp_path)
    out = str(tmp_path / "out.jsonl")
    if case["reader"] == "rows":
        code = main(["score", str(path), "-o", out])
    elif case["reader"] == "run":
        (tmp_path / "qrels").write_text("q1 0 d1 1\n")
        code = main(["score", "--run", str(path), "--qrels", str(tmp_path / "qrels"), "-o", out])
    else:
        (tmp_path / "run").write_text("q1 Q0 d1 1 1.0 r\n")
        code = main(["score", "--run", str(tmp_path / "run"), "--qrels", str(path), "-o", out])
    err = capsys.readouterr().err
    assert code in (0, 2), err
    if case["outcome"] == "error":
        assert code == 2 and name in err and "Traceback" not in err
        assert [line for line in err.splitlines() if ": error: " in line] == [err.splitlines()[-1]]


# ---- seeded fuzzing: truncations and byte flips of files raglab wrote --------------------------------


def _good_rows() -> pd.DataFrame:
    rows = pd.DataFrame(
        {
            "question_id": ["007", "q2", "q-é", "10"],
            "retrieved": [["d1", "d2"], [], ["d3"], ["001", "2"]],
            "gold": [["d2"], {"d3": 2, "d4": 0}, None, []],
            "score": [0.5, np.nan, 1.0, 0.0],
            "n": [3, 0, 2, 1],
            "ok": [True, False, True, True],
            "answer": ["a, \"b\"", "", None, "line\nbreak"],
        }
    )
    set_meta(rows, {"retrieval": {"k": [5]}})
    return rows


def _mutations(data: bytes, rng: random.Random, count: int):
    for _ in range(count):
        yield "cut", data[: rng.randrange(len(data))]
    for _ in range(count):
        mutated = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            mutated[rng.randrange(len(mutated))] = rng.randrange(256)
        yield "flip", bytes(mutated)


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet", ".jsonl.gz", ".csv.gz"])
def test_damaged_files_read_or_are_refused_naming_the_file(tmp_path, suffix):
    rng = random.Random(f"raglab-fuzz{suffix}")
    path = raglab.write_rows(_good_rows(), tmp_path / f"fuzz{suffix}")
    original = path.read_bytes()
    seen = {"read": 0, "refused": 0}
    for kind, data in _mutations(original, rng, 100):
        path.write_bytes(data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                frame = raglab.read_rows(path)
            except raglab.RowTableError as exc:
                assert path.name in str(exc), (kind, str(exc))
                seen["refused"] += 1
                continue
        assert isinstance(frame, pd.DataFrame)
        # A cut file never reads as fewer rows without a word: either refused above, or all rows are there.
        if kind == "cut" and suffix in (".jsonl", ".csv"):
            assert len(frame) >= len(_good_rows()) or len(frame) == 0 and not data.strip(), (kind, data)
        seen["read"] += 1
    assert seen["refused"] > 0


def test_damaged_trec_files_read_or_are_refused_naming_the_file(tmp_path):
    rng = random.Random("raglab-fuzz-trec")
    rows = pd.DataFrame({"question_id": ["q1", "q2"], "retrieved": [["d1", "d2", "d3"], ["d4"]],
                         "gold": [{"d1": 2, "d3": 0}, ["d4"]]})
    rows.rag.write_trec(run=tmp_path / "run.txt", qrels=tmp_path / "qrels.txt")
    for name in ("run.txt", "qrels.txt"):
        path = tmp_path / name
        original = path.read_bytes()
        for _kind, data in _mutations(original, rng, 100):
            path.write_bytes(data)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    raglab.read_trec(run=tmp_path / "run.txt", qrels=tmp_path / "qrels.txt")
                except raglab.RowTableError as exc:
                    assert "run.txt" in str(exc) or "qrels.txt" in str(exc), str(exc)
        path.write_bytes(original)
