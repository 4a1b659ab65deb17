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
    for column, expected in case.get("values", {}).items():  # "nan"/"inf"/"-inf" stand for the floats
        assert _same(frame[column].tolist(), _floats(expected)), (column, frame[column].tolist())
    for column, lengths in case.get("lengths", {}).items():
        assert frame[column].map(len).tolist() == lengths


def _floats(value):
    if isinstance(value, list):
        return [_floats(v) for v in value]
    return float(value) if value in ("nan", "inf", "-inf") else value


def _same(a, b) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float) and isinstance(b, float) and a != a:
        return b != b
    return type(a) is type(b) and a == b if isinstance(a, (bool, str)) else a == b


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


# ---- seeded fuzzing of what raglab writes: every file reads back exactly, or the write is refused --------


def _strict_json(text: str):
    def refuse(token):
        raise AssertionError(f"not JSON: {token}")

    return json.loads(text, parse_constant=refuse)


_SPECIAL = [float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1e308, 5e-324, 0.1]


def _random_cell(rng: random.Random, depth: int = 0):
    kind = rng.randrange(6 if depth < 3 else 3)
    if kind == 0:
        return rng.choice(_SPECIAL)
    if kind == 1:
        return rng.choice(["", "a", "null", "NaN", "Infinity", "é\u2028", "007"])
    if kind == 2:
        return rng.choice([None, True, 3, -1])
    if kind in (3, 4):
        return [_random_cell(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice("abc"): _random_cell(rng, depth + 1) for _ in range(rng.randrange(3))}


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet", ".jsonl.gz"])
def test_random_non_finite_floats_round_trip_and_never_reach_the_file_as_tokens(tmp_path, suffix):
    rng = random.Random(f"raglab-nonfinite{suffix}")
    for trial in range(25):
        n = rng.randrange(1, 6)
        rows = pd.DataFrame({
            "question_id": [f"q{i}" for i in range(n)],
            "score": [rng.choice(_SPECIAL) for _ in range(n)],
            "blob": pd.Series([[_random_cell(rng)] if rng.random() < 0.8 else _random_cell(rng) for _ in range(n)],
                              dtype=object),
        })
        path = raglab.write_rows(rows, tmp_path / f"t{trial}{suffix}")
        back = raglab.read_rows(path)
        for column in rows.columns:
            assert _same(back[column].tolist(), rows[column].tolist()), (trial, column, rows[column].tolist())
        if suffix.startswith(".jsonl"):
            import gzip

            raw = path.read_bytes()
            text = (gzip.decompress(raw) if suffix.endswith(".gz") else raw).decode()
            for line in text.split("\n")[:-1]:  # not splitlines(): a cell may hold U+2028
                _strict_json(line)


def test_random_rankings_write_as_trec_only_when_they_read_back_in_the_same_order(tmp_path):
    rng = random.Random("raglab-trec-order")
    written = refused = 0
    for trial in range(200):
        n = rng.randrange(1, 6)
        ids = rng.sample(["a", "b", "c", "d", "e", "f"], n)
        scores = [float(rng.choice([0, 1, 2, 3])) for _ in range(n)]
        rows = pd.DataFrame({"question_id": ["q1"], "retrieved": [ids], "retrieved_scores": [scores]})
        path = tmp_path / f"run{trial}"
        # trec_eval's order: score descending, ties by document id descending
        trec_order = [d for _, d in sorted(zip(scores, ids), key=lambda p: (-p[0], [-ord(c) for c in p[1]]))]
        try:
            raglab.write_trec(rows, run=path)
        except raglab.RowTableError as exc:
            assert trec_order != ids, (ids, scores)  # refused only when the file would reorder the list
            assert "question 'q1' gives rank" in str(exc)
            refused += 1
            continue
        assert raglab.read_trec(run=path).loc[0, "retrieved"] == ids == trec_order
        written += 1
    assert written and refused


_UNSTORABLE = [{1, 2}, b"x", __import__("decimal").Decimal("2.5"), __import__("datetime").date(2024, 5, 6),
               "lone\udc80", object()]


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_an_unstorable_cell_anywhere_is_named_by_its_column_and_row(tmp_path, suffix):
    rng = random.Random(f"raglab-unstorable{suffix}")
    for trial in range(20):
        rows = _good_rows()
        column = rng.choice(["retrieved", "gold", "answer"])
        row = rng.randrange(len(rows))
        bad = rng.choice(_UNSTORABLE)
        cell = bad if rng.random() < 0.5 else ["ok", {"deep": [bad]}]
        values = rows[column].astype(object).tolist()
        values[row] = cell
        rows[column] = pd.Series(values, dtype=object)
        path = tmp_path / f"t{trial}{suffix}"
        with pytest.raises(raglab.RowTableError) as info:
            raglab.write_rows(rows, path)
        assert info.value.column == column and info.value.rows == [row], str(info.value)
        assert f"column {column!r} row {row} (question_id " in str(info.value)
        assert not path.exists()
