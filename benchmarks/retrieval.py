"""Benchmark: retrieval metrics from a row table, raglab vs pytrec_eval (and ranx when installed).

``python benchmarks/retrieval.py`` prints the three figures the retrieval kernel is held to:

1. **Python lists.** A seeded table of 50,000 questions x 100 retrieved ids, each id its own ``str``
   object (what ``json.loads`` and a Parquet-to-Python read give), 1-5 gold ids graded 1-3 per
   question (about half of them somewhere in the list). Each tool goes from that DataFrame to
   per-question recall@10, precision@10, reciprocal rank and nDCG@10 (linear gain: trec_eval's
   ``ndcg_cut``): raglab with ``raglab.retrieval.retrieval(rows, k=10, gain="linear")`` (what
   ``rows.rag.retrieval`` runs: validation, the copy and the attrs included); pytrec_eval by building
   its dict-of-dicts and ``RelevanceEvaluator(...).evaluate``; ranx (``--tools ...,ranx``) by
   ``Qrels``/``Run.from_dict`` and ``evaluate``. Target: pytrec_eval / raglab >= 3.
2. **Rows from Parquet.** The same table written with ``raglab.write_rows`` and read back with
   ``raglab.read_rows(path, lists="arrow")``: the id lists are Arrow-backed, no Python object per id.
   raglab scores that frame; pytrec_eval's time is the one from 1 (it needs the rows as Python
   objects, which a Parquet read to Python gives). Target: pytrec_eval / raglab >= 10. The read
   times are printed too, with the ratio when each tool's read of the file is counted.
3. **Peak memory at 1,000,000 questions.** A fresh subprocess builds the 1,000,000-question table
   (ids shared from a vocabulary of 1,000,000 strings: the table the previous figure was measured
   on), resets the kernel's peak-RSS counter (Linux ``/proc/self/clear_refs``), scores it with raglab
   and reads ``VmHWM``: the peak resident size of the whole process, table included (without
   ``clear_refs``: ``resource.getrusage`` after the build, which then includes the build's peak).
   Before the Arrow/pandas id kernel this was 2,216 MiB (VmHWM 2,268,992 kB, table alone 1,396 MiB,
   measured the same way with the previous ctypes kernel). With ``--memory-arrow`` the same
   questions with Arrow-backed id lists are measured too.

All tools run in one process on the same table, after one untimed warm-up call each on a small
table; each time is the best of ``--repeat`` runs. The script checks that the tools agree per question
to 1e-9. Run scores are strictly decreasing (100, 99, ...), so there are no ties.

Usage::

    python benchmarks/retrieval.py                       # the three figures (a few minutes)
    python benchmarks/retrieval.py --memory-n 0          # the two ratios only
    python benchmarks/retrieval.py --n 100000 --tools pytrec_eval,ranx --memory-n 0
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from collections import deque
from collections.abc import Iterator
from itertools import chain
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

import raglab
from raglab.retrieval import retrieval

METRICS = ("recall@10", "precision@10", "rr", "ndcg@10")
RANX_NAMES = {"recall@10": "recall@10", "precision@10": "precision@10", "rr": "mrr", "ndcg@10": "ndcg@10"}
PYTREC_NAMES = {"recall@10": "recall_10", "precision@10": "P_10", "rr": "recip_rank", "ndcg@10": "ndcg_cut_10"}
DEPTH = 100
BEFORE_MIB = 2_268_992 / 1024  # VmHWM at 1,000,000 questions with the previous (ctypes) kernel


# --------------------------------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------------------------------


def _blocks(n: int, seed: int, vocabulary: int) -> Iterator[tuple[np.ndarray, ...]]:
    """Per block of questions: retrieved vocabulary indices (rows x 100), gold indices, grades, gold counts."""
    rng = np.random.default_rng(seed)
    block = 50_000
    for start in range(0, n, block):
        size = min(block, n - start)
        idx = rng.integers(0, vocabulary, size=(size, DEPTH))
        ordered = np.sort(idx, axis=1)
        for row in np.flatnonzero((ordered[:, 1:] == ordered[:, :-1]).any(axis=1)):
            idx[row] = rng.choice(vocabulary, size=DEPTH, replace=False)  # a ranked list has no repeats
        n_gold = rng.integers(1, 6, size=size)
        from_list = rng.random((size, 5)) < 0.5
        positions = np.minimum(rng.geometric(0.08, size=(size, 5)) - 1, DEPTH - 1)
        elsewhere = rng.integers(0, vocabulary, size=(size, 5))
        gold_idx = np.where(from_list, np.take_along_axis(idx, positions, axis=1), elsewhere)
        grades = rng.integers(1, 4, size=(size, 5))
        yield idx, gold_idx, grades, n_gold


def _vocabulary(size: int) -> np.ndarray:
    return np.array([f"doc{i:07d}" for i in range(size)], dtype=object)


def build_table(
    n: int, *, seed: int = 0, vocabulary: int = 1_000_000, distinct_objects: bool = False, arrow: bool = False
) -> pd.DataFrame:
    """N questions x 100 unique retrieved ids and 1-5 graded gold ids each (seeded).

    ``distinct_objects``: a fresh ``str`` per id occurrence (as ``json.loads`` makes), else ids shared
    from the vocabulary. ``arrow``: the retrieved lists as an Arrow-backed column (built in Arrow).
    """
    vocab = _vocabulary(vocabulary)
    vocab_arrow = pa.array(vocab.tolist(), type=pa.string()) if arrow else None
    retrieved: list = []
    gold: list[dict[str, int]] = []
    for idx, gold_idx, grades, n_gold in _blocks(n, seed, vocabulary):
        size = len(idx)
        gold_ids = vocab[gold_idx]
        if arrow:
            offsets = pa.array(np.arange(0, size * DEPTH + 1, DEPTH, dtype=np.int32))
            retrieved.append(pa.ListArray.from_arrays(offsets, vocab_arrow.take(pa.array(idx.reshape(-1)))))
        ids = None if arrow else vocab[idx]
        for i in range(size):
            keys = gold_ids[i, : n_gold[i]].tolist()
            if not arrow:
                row = ids[i].tolist()
                if distinct_objects:
                    row = [s[:1] + s[1:] for s in row]
                retrieved.append(row)
            if distinct_objects:
                keys = [s[:1] + s[1:] for s in keys]
            gold.append(dict(zip(keys, grades[i, : n_gold[i]].tolist())))
    if arrow:
        column = pd.Series(pd.arrays.ArrowExtensionArray(pa.chunked_array(retrieved, type=pa.list_(pa.string()))))
    else:
        column = pd.Series(retrieved, dtype=object)
    rows = pd.DataFrame({
        "question_id": pd.Series([f"q{i}" for i in range(n)], dtype=object),
        "retrieved": column,
        "gold": pd.Series(gold, dtype=object),
    })
    # Compute every string's hash once, so that no tool pays for it on behalf of the others.
    if not arrow:
        deque(map(hash, chain.from_iterable(rows["retrieved"])), maxlen=0)
    deque(map(hash, chain.from_iterable(rows["gold"])), maxlen=0)
    deque(map(hash, rows["question_id"]), maxlen=0)
    return rows


# --------------------------------------------------------------------------------------------------
# The tools, each from the DataFrame to per-question scores {metric: array in row order}
# --------------------------------------------------------------------------------------------------


def run_raglab(rows: pd.DataFrame) -> dict[str, np.ndarray]:
    scored = retrieval(rows, k=10, gain="linear")
    return {m: scored[m].to_numpy() for m in METRICS}


def run_ranx(rows: pd.DataFrame) -> dict[str, np.ndarray]:
    from ranx import Qrels, Run, evaluate

    qids = rows["question_id"].tolist()
    scores = [float(DEPTH - r) for r in range(DEPTH)]
    qrels = Qrels.from_dict(dict(zip(qids, rows["gold"])))
    run = Run.from_dict({q: dict(zip(r, scores)) for q, r in zip(qids, rows["retrieved"])})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba type-safety chatter
        evaluate(qrels, run, [RANX_NAMES[m] for m in METRICS], save_results_in_run=True)
    return {m: np.array([run.scores[RANX_NAMES[m]][q] for q in qids]) for m in METRICS}


def run_pytrec_eval(rows: pd.DataFrame) -> dict[str, np.ndarray]:
    import pytrec_eval

    qids = rows["question_id"].tolist()
    scores = [float(DEPTH - r) for r in range(DEPTH)]
    qrels = dict(zip(qids, rows["gold"]))
    run = {q: dict(zip(r, scores)) for q, r in zip(qids, rows["retrieved"])}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"recall.10", "P.10", "recip_rank", "ndcg_cut.10"})
    results = evaluator.evaluate(run)
    return {m: np.array([results[q][PYTREC_NAMES[m]] if q in results else 0.0 for q in qids]) for m in METRICS}


TOOLS = {"raglab": run_raglab, "pytrec_eval": run_pytrec_eval, "ranx": run_ranx}


def best_of(repeat: int, work) -> tuple[float, list[float], object]:
    runs, result = [], None
    for _ in range(max(1, repeat)):
        gc.collect()
        start = time.perf_counter()
        result = work()
        runs.append(time.perf_counter() - start)
    return min(runs), runs, result


def agree(ours: dict[str, np.ndarray], theirs: dict[str, np.ndarray]) -> float:
    return max(float(np.max(np.abs(ours[m] - theirs[m]))) if len(ours[m]) else 0.0 for m in METRICS)


# --------------------------------------------------------------------------------------------------
# Memory in a fresh process
# --------------------------------------------------------------------------------------------------


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def child(n: int, seed: int, arrow: bool) -> None:
    rows = build_table(n, seed=seed, arrow=arrow)
    gc.collect()
    reset = False
    try:
        with open("/proc/self/clear_refs", "w") as fh:  # reset VmHWM to the current RSS (Linux >= 4.0)
            fh.write("5")
        reset = True
    except OSError:
        pass
    baseline = _status_kib("VmRSS")
    start = time.perf_counter()
    run_raglab(rows)
    seconds = time.perf_counter() - start
    peak = _status_kib("VmHWM")
    if peak is None:  # not Linux: the process's peak since it started (the table's build included)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // (1024 if sys.platform == "darwin" else 1)
    print(json.dumps({"seconds": seconds, "baseline_kib": baseline, "peak_kib": peak, "reset": reset}))


def measure_memory(n: int, seed: int, arrow: bool) -> dict:
    command = [sys.executable, __file__, "--child", "--memory-n", str(n), "--seed", str(seed)]
    out = subprocess.run(command + (["--memory-arrow"] if arrow else []), capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=50_000, help="questions for the two ratios (default 50,000)")
    parser.add_argument("--memory-n", type=int, default=1_000_000,
                        help="questions for the peak-memory figure (default 1,000,000; 0 skips it)")
    parser.add_argument("--memory-arrow", action="store_true", help="also measure memory with Arrow-backed lists")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tools", default="pytrec_eval", help="peers, comma-separated: pytrec_eval, ranx")
    parser.add_argument("--repeat", type=int, default=3, help="time each run this many times, keep the best")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.memory_n, args.seed, args.memory_arrow)
        return 0
    peers = [t.strip() for t in args.tools.split(",") if t.strip()]
    unknown = sorted(set(peers) - {"pytrec_eval", "ranx"})
    if unknown or "pytrec_eval" not in peers:
        parser.error(f"--tools must include pytrec_eval and may add ranx; got {peers}")

    print(f"raglab {raglab.__version__}, numpy {np.__version__}, pandas {pd.__version__}, pyarrow {pa.__version__}, "
          f"Python {platform.python_version()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} "
          "(a shared machine: times vary between runs)")
    start = time.perf_counter()
    rows = build_table(args.n, seed=args.seed, distinct_objects=True)
    print(f"table: {len(rows):,} questions x {DEPTH} retrieved ids, each id its own str object, "
          f"{int(rows['gold'].map(len).sum()):,} gold ids (built in {time.perf_counter() - start:.1f} s)")
    warm = build_table(1_000, seed=args.seed + 1)
    for tool in ["raglab", *peers]:  # imports, numba compilation (ranx), first calls: not timed
        TOOLS[tool](warm)
    del warm
    status = 0

    # 1. Python lists
    print(f"1. from the DataFrame of Python lists to the four per-question metrics, best of {args.repeat}:")
    times, results = {}, {}
    for tool in ["raglab", *peers]:
        times[tool], runs, results[tool] = best_of(args.repeat, lambda tool=tool: TOOLS[tool](rows))
        print(f"   {tool:<12} {times[tool]:7.3f} s   ({', '.join(f'{t:.3f}' for t in runs)})", flush=True)
    for tool in peers:
        worst = agree(results["raglab"], results[tool])
        status |= worst > 1e-9
        print(f"   agreement raglab vs {tool}: max |difference| = {worst:.1e} ({'OK' if worst <= 1e-9 else 'FAILED'})")
    ratio_lists = times["pytrec_eval"] / times["raglab"]
    print(f"ratio pytrec_eval / raglab, Python lists (each id its own str): {ratio_lists:.1f}x (target >= 3x)")

    # 2. Rows from Parquet
    with tempfile.TemporaryDirectory() as tmp:
        path = raglab.write_rows(rows, Path(tmp) / "rows.parquet")
        read_arrow, _, native = best_of(args.repeat, lambda: raglab.read_rows(path, lists="arrow"))
        read_python, _, _ = best_of(args.repeat, lambda: raglab.read_rows(path))
        size = path.stat().st_size / 2**20
    TOOLS["raglab"](native.iloc[:1000])
    score_arrow, runs, from_parquet = best_of(args.repeat, lambda: run_raglab(native))
    print(f"2. rows from Parquet ({size:.0f} MiB; read_rows(lists='arrow'): {read_arrow:.3f} s, "
          f"'retrieved' is {native['retrieved'].dtype}; read_rows to Python lists: {read_python:.3f} s):")
    print(f"   raglab       {score_arrow:7.3f} s   ({', '.join(f'{t:.3f}' for t in runs)})   on the Arrow-backed frame")
    print(f"   pytrec_eval  {times['pytrec_eval']:7.3f} s   (from 1: the rows as Python objects)")
    worst = agree(from_parquet, results["pytrec_eval"])
    status |= worst > 1e-9
    print(f"   agreement raglab (Arrow) vs pytrec_eval: max |difference| = {worst:.1e} "
          f"({'OK' if worst <= 1e-9 else 'FAILED'})")
    ratio_parquet = times["pytrec_eval"] / score_arrow
    with_reads = (read_python + times["pytrec_eval"]) / (read_arrow + score_arrow)
    print(f"ratio pytrec_eval / raglab, rows from Parquet (Arrow-backed): {ratio_parquet:.1f}x (target >= 10x); "
          f"counting each tool's read of the file: {with_reads:.1f}x")

    # 3. Memory
    for arrow in ([False, True] if args.memory_arrow else [False]) if args.memory_n else []:
        m = measure_memory(args.memory_n, args.seed, arrow)
        peak, base = m["peak_kib"] / 1024, (m["baseline_kib"] or 0) / 1024
        what = "Arrow-backed lists" if arrow else "Python lists, ids shared from a vocabulary"
        how = "VmHWM after resetting it once the table was built" if m["reset"] else "ru_maxrss, table build included"
        print(f"peak memory at {args.memory_n:,} questions ({what}): {peak:,.0f} MiB "
              f"(whole process, table alone {base:,.0f} MiB; {how}; scoring took {m['seconds']:.1f} s)"
              + ("" if arrow else f"; before: {BEFORE_MIB:,.0f} MiB"))
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
