"""Regression tests for what the fresh adversarial pass (benchmarks/adversarial.py) found.

Each test pins one failure of the first pass: data loss, silent acceptance or an error that named
nothing the user could act on. Oracles: the bytes of the files involved, plain-Python parsers
(``csv``, ``json``), hand-built expectations, and the messages' content.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sqlite3
import warnings

import numpy as np
import pandas as pd
import pytest

import raglab
from raglab import EvalSet, read_rows, read_trec, write_rows, write_trec
from raglab._errors import RowTableError
from raglab.cli import main
from raglab.io import sidecar_path


def _rows(n: int = 4) -> pd.DataFrame:
    return pd.DataFrame({"question_id": [f"q{i}" for i in range(n)], "retrieved": [[f"d{i}", "d9"] for i in range(n)],
                         "gold": [[f"d{i}"] for i in range(n)], "score": [0.25 * i for i in range(n)]})


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---- files --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["jsonl", "csv", "jsonl.gz"])
def test_writing_rows_onto_a_files_sidecar_is_refused_and_the_sidecar_kept(tmp_path, suffix):
    path = tmp_path / f"run.{suffix}"
    write_rows(_rows(), path)
    side = sidecar_path(path)
    before = _sha(side)
    with pytest.raises(ValueError, match=re.escape(f"run.{suffix}.raglab.json") + ".*sidecar"):
        write_rows(_rows(2), side)
    assert _sha(side) == before
    assert read_rows(path)["score"].tolist() == [0.0, 0.25, 0.5, 0.75]


def test_another_files_sidecar_is_ignored_with_a_warning(tmp_path):
    path, other = tmp_path / "run.jsonl", tmp_path / "other.jsonl"
    write_rows(_rows(), path)
    write_rows(_rows().assign(score=list("abcd")), other)  # records score as text
    shutil.copy(sidecar_path(other), sidecar_path(path))
    with pytest.warns(UserWarning, match="describes 'other.jsonl', not 'run.jsonl'"):
        back = read_rows(path)
    plain = [json.loads(line)["score"] for line in path.read_text().splitlines()]  # oracle: the file itself
    assert back["score"].tolist() == plain == [0.0, 0.25, 0.5, 0.75]


def test_a_renamed_file_with_its_sidecar_still_uses_it(tmp_path):
    path = tmp_path / "run.jsonl"
    write_rows(_rows().assign(question_id=["007", "1", "2", "3"]), path)
    moved = tmp_path / "renamed.jsonl"
    path.rename(moved)
    sidecar_path(path).rename(sidecar_path(moved))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_rows(moved)["question_id"].tolist() == ["007", "1", "2", "3"]  # the hash matches: text ids kept


def test_a_csv_with_an_unclosed_quote_is_refused_naming_the_line(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text('question_id,text\nq1,"oops\nq2,x\n')
    with pytest.raises(RowTableError, match=r"rows\.csv' line \d+: not valid CSV"):
        read_rows(path)


def test_a_well_quoted_csv_still_reads(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text('question_id,text\nq1,"a ""quoted"", multi\nline"\n')
    assert read_rows(path)["text"].tolist() == ['a "quoted", multi\nline']


def test_json_lines_named_csv_are_refused(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text('{"question_id": "q1", "score": 1}\n{"question_id": "q2", "score": 0}\n')
    with pytest.raises(RowTableError, match="holds JSON objects, not CSV"):
        read_rows(path)


def test_a_jsonl_key_given_twice_is_refused_naming_line_and_key(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"question_id": "q1", "score": 1}\n{"question_id": "q2", "score": 1, "score": 2}\n')
    with pytest.raises(RowTableError, match=r"line 2: key 'score' appears twice"):
        read_rows(path)
    nested = tmp_path / "nested.jsonl"
    nested.write_text('{"question_id": "q1", "gold": {"d1": 1, "d1": 2}}\n')
    with pytest.raises(RowTableError, match="key 'd1' appears twice"):
        read_rows(nested)


# ---- TREC ---------------------------------------------------------------------------------------------


def _trec_rows() -> pd.DataFrame:
    return pd.DataFrame({"question_id": ["q1", "q2"], "retrieved": [["d1", "d2"], ["d3"]], "gold": [["d1"], ["d3"]]})


def test_write_trec_refuses_a_text_cell_for_a_ranking_and_keeps_the_old_file(tmp_path):
    run = tmp_path / "run.txt"
    run.write_text("keep\n")
    with pytest.raises(RowTableError, match=r"'retrieved' question 'q1' holds the text 'd1'"):
        write_trec(_trec_rows().assign(retrieved=["d1", "d3"]), run)
    assert run.read_text() == "keep\n"


def test_write_trec_refuses_repeated_question_ids(tmp_path):
    with pytest.raises(RowTableError, match=r"repeats question id\(s\) \['q1', 'q2'\]"):
        write_trec(pd.concat([_trec_rows(), _trec_rows()]), tmp_path / "run.txt", tmp_path / "qrels.txt")
    assert not (tmp_path / "run.txt").exists() and not (tmp_path / "qrels.txt").exists()


def test_write_trec_says_a_missing_ranking_becomes_an_empty_one(tmp_path):
    rows = _trec_rows().assign(retrieved=[None, ["d3"]])
    with pytest.warns(UserWarning, match=r"missing \(None/NaN\) for 1 question\(s\) \(e.g. \['q1'\]\)"):
        write_trec(rows, tmp_path / "run.txt", tmp_path / "qrels.txt")
    back = read_trec(tmp_path / "run.txt", tmp_path / "qrels.txt").set_index("question_id")
    assert list(back.loc["q1", "retrieved"]) == [] and list(back.loc["q2", "retrieved"]) == ["d3"]


# ---- eval sets ----------------------------------------------------------------------------------------


def test_freezing_no_rows_is_refused_and_writes_nothing(tmp_path):
    with pytest.raises(RowTableError, match="no rows.*'v1' was not written"):
        EvalSet.freeze(_rows().iloc[:0], tmp_path / "es", version="v1")
    assert not (tmp_path / "es" / "v1").exists()


# ---- judge cache --------------------------------------------------------------------------------------


def test_a_cache_path_that_is_a_folder_is_named_and_left_alone(tmp_path):
    from raglab.judge import CallCache

    folder = tmp_path / "cache.db"
    folder.mkdir()
    (folder / "keep").write_text("x")
    with pytest.raises(ValueError, match=r"cache\.db' is a folder, not a SQLite file"):
        CallCache(folder)
    assert (folder / "keep").read_text() == "x"


def test_a_cache_sqlite_cannot_open_is_named(tmp_path, monkeypatch):
    from raglab.judge import CallCache

    def refuse(*args, **kwargs):
        raise sqlite3.OperationalError("unable to open database file")

    monkeypatch.setattr(sqlite3, "connect", refuse)
    with pytest.raises(ValueError, match=r"cannot open the judge cache '.*c\.sqlite3' \(unable to open"):
        CallCache(tmp_path / "c.sqlite3")


# ---- statistics ---------------------------------------------------------------------------------------


def _run(n: int = 30, **cols) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"question_id": [f"q{i}" for i in range(n)], "latency": rng.random(n) + 1, **cols})


def test_summary_and_compare_name_the_column_and_question_holding_inf():
    bad = _run().assign(latency=[1.0, np.inf] + [1.0] * 28)
    with pytest.raises(RowTableError, match=r"score column 'latency' holds infinite values: .*q1.* inf"):
        bad.rag.summary("latency")
    with pytest.raises(RowTableError, match=r"'latency' in the candidate run holds infinite values"):
        _run().rag.compare(bad, metrics="latency")


def test_summary_warns_of_repeated_question_ids():
    rows = pd.concat([_run(), _run().iloc[:3]])
    with pytest.warns(UserWarning, match=r"question ids in 'question_id' repeat \(3 id\(s\), e.g. 'q0' 2 times\)"):
        table = rows.rag.summary("latency")
    assert int(table["n"].iloc[0]) == 33  # still every row, as before; the warning says so
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _run().rag.summary("latency")  # unique ids: no warning


def test_agreement_refuses_infinite_labels_naming_the_column():
    rows = pd.DataFrame({"question_id": [f"q{i}" for i in range(40)], "human": [np.inf] + [1.0, 0.0] * 19 + [1.0],
                         "judge": [1.0, 0.0] * 20})
    with pytest.raises(ValueError, match=r"`human` holds infinite values at positions \[0\]"):
        rows.rag.agreement("human", "judge")


def test_agreement_warns_when_question_ids_repeat():
    rng = np.random.default_rng(1)
    human = rng.integers(0, 2, 60)
    rows = pd.DataFrame({"question_id": ["q1", "q2"] * 30, "human": human, "judge": human})
    with pytest.warns(UserWarning, match=r"question ids repeat \(2 id\(s\), e.g. '\w+' 30 times\)"):
        rows.rag.agreement("human", "judge", n_resamples=200)


# ---- command line -------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["score", "gate"])
def test_an_empty_input_file_is_named_as_empty(tmp_path, monkeypatch, capsys, command):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty.jsonl").write_text("")
    write_rows(_rows().assign(**{"recall@5": 0.5}), tmp_path / "ok.jsonl")
    args = (["score", "empty.jsonl", "-o", "out.jsonl"] if command == "score"
            else ["gate", "empty.jsonl", "ok.jsonl", "--metric", "recall@5", "--margin", "0.1"])
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "'empty.jsonl' holds no rows (the file is empty)" in err
    assert raglab.__name__ == "raglab"


# ---- the local test server ----------------------------------------------------------------------------


def test_a_client_hanging_up_prints_no_traceback_from_the_local_server(capfd):
    import socket
    import struct
    import time

    from raglab.testing import LocalOpenAIServer

    with LocalOpenAIServer() as server:
        for _ in range(3):
            sock = socket.create_connection(("127.0.0.1", server.port))
            sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 500\r\n\r\n{")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # reset, not FIN
            sock.close()
        time.sleep(0.3)  # the handler threads read, meet the reset and end
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.parametrize("dtype", [np.uint64, np.int8, np.uint32, np.int64])
def test_numpy_integer_extremes_round_trip_through_parquet(tmp_path, dtype):
    info = np.iinfo(dtype)
    rows = pd.DataFrame({"question_id": ["a", "b", "c"], "n": np.array([info.max, info.min, 1], dtype=dtype)})
    path = tmp_path / "rows.parquet"
    write_rows(rows, path)  # uint64 above 2**63 - 1 raised a raw OverflowError
    back = read_rows(path)
    assert back["n"].dtype == dtype and back["n"].tolist() == [int(info.max), int(info.min), 1]
    assert pd.read_parquet(path)["n"].tolist() == [int(info.max), int(info.min), 1]  # oracle: pandas' own reader


@pytest.mark.parametrize("flag_args", [["--json", "-"], ["--json", ""]])
def test_gate_refuses_a_json_path_it_would_skip_or_misread(tmp_path, monkeypatch, capsys, flag_args):
    monkeypatch.chdir(tmp_path)
    for name in ("b.jsonl", "c.jsonl"):
        write_rows(_rows(40).assign(**{"recall@5": 0.5}), tmp_path / name)
    code = main(["gate", "b.jsonl", "c.jsonl", "--metric", "recall@5", "--margin", "0.1", *flag_args])
    assert code == 2 and "--json" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.jsonl", "b.jsonl.raglab.json", "c.jsonl",
                                                            "c.jsonl.raglab.json"]  # no file named '-'


@pytest.mark.parametrize(("args", "named"), [(["rows.jsonl", "-o", "-"], "--output '-'"),
                                             (["rows.jsonl", "-o", ""], "--output is an empty path"),
                                             (["", "-o", "o.jsonl"], "ROWS is an empty path")])
def test_score_refuses_empty_and_dash_paths_naming_them(tmp_path, monkeypatch, capsys, args, named):
    monkeypatch.chdir(tmp_path)
    write_rows(_rows(), tmp_path / "rows.jsonl")
    assert main(["score", *args]) == 2
    assert named in capsys.readouterr().err
