"""Benchmark: threads of one process writing the same row file at once (issue 19).

``--threads`` threads each write their own rows (a distinct id prefix, row count and attrs) to one
path, released together by a barrier; after each trial the file is read back with
``raglab.read_rows``. Outcomes per trial, per format:

* ``one writer``: the rows and attrs of exactly one writer, read without a warning (the only good one);
* ``sidecar of another``: one writer's rows with another writer's sidecar (a hash warning or a refusal);
* ``mixed rows``: rows of several writers in one file;
* ``unreadable``: the reader refused the file (a broken Parquet file, say);
* ``writer error``: a writer raised (e.g. FileNotFoundError when two threads shared a temporary name).

Run against any raglab on ``PYTHONPATH`` (e.g. an old checkout) to compare:
``PYTHONPATH=. .venv/bin/python benchmarks/concurrent_writes.py [--threads 8] [--trials 40]``.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

import raglab
from raglab._meta import get_meta, set_meta


def frame(writer: int, n_rows: int = 400) -> pd.DataFrame:
    n = n_rows + writer
    rows = pd.DataFrame({"question_id": [f"w{writer}-q{i}" for i in range(n)],
                         "retrieved": [[f"w{writer}-d{i}"] for i in range(n)],
                         "score": np.full(n, float(writer)), "answer": [f"writer {writer} " * 5] * n})
    set_meta(rows, {"run": {"name": f"writer-{writer}"}})
    return rows


def outcome(path: Path) -> str:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            back = raglab.read_rows(path)
        except raglab.RowTableError as exc:
            return "sidecar of another" if "metadata" in str(exc) and "records" in str(exc) else "unreadable"
        except Exception:  # noqa: BLE001 - whatever the old reader raised
            return "unreadable"
    writers = {q.split("-")[0] for q in back["question_id"]}
    if len(writers) != 1:
        return "mixed rows"
    writer = int(writers.pop()[1:])
    if caught or get_meta(back).get("run", {}).get("name") != f"writer-{writer}" or len(back) != len(frame(writer)):
        return "sidecar of another"
    return "one writer"


def trial(path: Path, frames: list[pd.DataFrame]) -> str:
    barrier = threading.Barrier(len(frames))
    errors: list[BaseException] = []

    def write(rows: pd.DataFrame) -> None:
        try:
            barrier.wait()
            raglab.write_rows(rows, path)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(rows,)) for rows in frames]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    result = outcome(path)
    return "writer error" if errors and result == "one writer" else result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--trials", type=int, default=40)
    args = parser.parse_args()
    frames = [frame(w) for w in range(args.threads)]
    kinds = ["one writer", "sidecar of another", "mixed rows", "unreadable", "writer error"]
    print(f"raglab {raglab.__version__} from {Path(raglab.__file__).parent}")
    print(f"{args.threads} threads x {args.trials} trials per format")
    print(f"{'format':<10}" + "".join(f"{k:>20}" for k in kinds) + f"{'leftover tmp files':>20}")
    with tempfile.TemporaryDirectory() as folder:
        for suffix in (".jsonl", ".csv", ".parquet", ".csv.gz"):
            sub = Path(folder) / suffix.strip(".")
            sub.mkdir()
            path = sub / f"run{suffix}"
            counts = Counter(trial(path, frames) for _ in range(args.trials))
            leftover = sum(1 for p in sub.iterdir() if p.name.startswith("."))
            print(f"{suffix:<10}" + "".join(f"{counts[k]:>20}" for k in kinds) + f"{leftover:>20}")


if __name__ == "__main__":
    main()
