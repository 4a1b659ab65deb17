"""Concurrent writers of one path (threads and processes): every read gives exactly one writer's rows,
with that writer's sidecar, and no temporary file is left behind (raglab._files)."""

from __future__ import annotations

import multiprocessing
import threading
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import raglab
from raglab._meta import get_meta, set_meta

N_THREADS = 6
N_TRIALS = 6


def _frame(writer: int, n_rows: int = 400) -> pd.DataFrame:
    """Writer ``writer``'s rows: its number in every cell, a row count of its own, and its attrs."""
    rows = pd.DataFrame(
        {
            "question_id": [f"w{writer}-q{i}" for i in range(n_rows + writer)],
            "retrieved": [[f"w{writer}-d{i}", f"d{i}"] for i in range(n_rows + writer)],
            "score": np.full(n_rows + writer, float(writer)),
            "answer": [f"writer {writer} " * 5] * (n_rows + writer),
        }
    )
    set_meta(rows, {"run": {"name": f"writer-{writer}"}})
    return rows


def _which_writer(frame: pd.DataFrame) -> int:
    """The one writer whose rows ``frame`` holds (asserts the rows are not a mix)."""
    writers = {qid.split("-")[0] for qid in frame["question_id"]}
    assert len(writers) == 1, f"rows of several writers in one file: {sorted(writers)}"
    writer = int(writers.pop()[1:])
    expected = _frame(writer)
    assert len(frame) == len(expected)
    assert frame["question_id"].tolist() == expected["question_id"].tolist()
    assert frame["retrieved"].tolist() == expected["retrieved"].tolist()
    assert (frame["score"] == writer).all()
    assert get_meta(frame)["run"]["name"] == f"writer-{writer}"  # the attrs come from the same writer's sidecar
    return writer


def _read_clean(path: Path) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a sidecar of another writer would warn (hash) or refuse (rows)
        return raglab.read_rows(path)


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet", ".csv.gz"])
def test_threads_writing_one_path_leave_one_writers_rows_and_sidecar(tmp_path, suffix):
    path = tmp_path / f"run{suffix}"
    frames = [_frame(w) for w in range(N_THREADS)]
    errors: list[BaseException] = []
    winners = set()
    for _ in range(N_TRIALS):
        barrier = threading.Barrier(N_THREADS)

        def write(w: int, barrier: threading.Barrier = barrier) -> None:
            try:
                barrier.wait()
                raglab.write_rows(frames[w], path)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=write, args=(w,)) for w in range(N_THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors  # e.g. a FileNotFoundError when two threads shared one temporary name
        winners.add(_which_writer(_read_clean(path)))
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
            [path.name] + ([] if suffix == ".parquet" else [path.name + ".raglab.json"])
        )
    assert winners  # at least one trial read back


def test_a_reader_never_sees_a_file_with_another_writers_sidecar(tmp_path):
    path = tmp_path / "run.jsonl"
    raglab.write_rows(_frame(0), path)
    stop = threading.Event()
    errors: list[BaseException] = []
    reads = []

    def writer(w: int) -> None:
        try:
            while not stop.is_set():
                raglab.write_rows(_frame(w), path)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    def reader() -> None:
        try:
            for _ in range(40):
                reads.append(_which_writer(_read_clean(path)))
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            stop.set()

    threads = [threading.Thread(target=writer, args=(w,)) for w in (1, 2, 3)] + [threading.Thread(target=reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    assert len(reads) == 40


def _process_writer(args: tuple[str, int, int]) -> None:
    path, writer, times = args
    for _ in range(times):
        raglab.write_rows(_frame(writer), path)


@pytest.mark.slow
@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")
def test_processes_writing_one_path_leave_one_writers_rows_and_sidecar(tmp_path):
    path = tmp_path / "run.jsonl"
    context = multiprocessing.get_context("fork")
    with context.Pool(3) as pool:
        pool.map(_process_writer, [(str(path), w, 8) for w in range(3)])
    _which_writer(_read_clean(path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.jsonl", "run.jsonl.raglab.json"]


def test_trec_files_and_eval_set_manifests_use_the_same_writer(tmp_path):
    rows = pd.DataFrame({"question_id": ["q1"], "retrieved": [["d1"]], "gold": [["d1"]]})
    errors: list[BaseException] = []

    def write() -> None:
        try:
            for _ in range(10):
                raglab.write_trec(rows, run=tmp_path / "run.txt", qrels=tmp_path / "qrels.txt")
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=write) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["qrels.txt", "run.txt"]
    assert raglab.read_trec(run=tmp_path / "run.txt", qrels=tmp_path / "qrels.txt")["retrieved"].tolist() == [["d1"]]


def test_a_failed_write_leaves_the_old_pair_and_no_temporary_file(tmp_path):
    path = tmp_path / "run.csv"
    raglab.write_rows(_frame(1), path)
    before = (path.read_bytes(), (tmp_path / "run.csv.raglab.json").read_bytes())
    bad = pd.DataFrame({"question_id": ["b"], "blob": [{1, 2}]})
    with pytest.raises(raglab.RowTableError, match=r"column 'blob' row 0 \(question_id 'b'\) holds a set"):
        raglab.write_rows(bad, path)
    assert (path.read_bytes(), (tmp_path / "run.csv.raglab.json").read_bytes()) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.csv", "run.csv.raglab.json"]
