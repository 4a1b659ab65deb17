"""Benchmark: retrieval metrics from a DataFrame of list columns, raglab vs ranx vs pytrec_eval.

A seeded table of N questions (default 100,000) x 100 retrieved string ids, each question with
1-5 gold ids graded 1-3 (about half of them somewhere in the retrieved list). Each tool goes from
that DataFrame to per-question recall@10, precision@10, reciprocal rank and nDCG@10 (linear gain,
trec_eval's ndcg_cut, which is what ranx's ``ndcg`` and pytrec_eval compute):

- raglab: ``rows.rag.retrieval(k=10, gain="linear")`` (validation, the copy and attrs included);
- ranx: build ``Qrels`` and ``Run`` from the same columns (``from_dict``, or ``from_df`` on the
  exploded table with ``--ranx-from df``), then ``evaluate``;
- pytrec_eval: build its dict-of-dicts, then ``RelevanceEvaluator(...).evaluate``.

All three run in one process on the same table, one after the other, after one untimed warm-up
call each on a small table (imports, ranx's numba compilation); the script checks that they agree
per question to 1e-9 and prints each time and the ratios. Run scores are strictly
decreasing (100, 99, ...), so there are no ties and every tool ranks identically.

The ids are drawn from a vocabulary of distinct strings and shared between rows (what a
categorical or interned column, or ids taken from one corpus list, looks like); with
``--distinct-objects`` every occurrence is its own string object instead (what ``json.loads``
produces). String hashes are computed once before any timing so no tool pays for them first.

Peak memory: with ``--memory`` each tool also runs in a fresh subprocess that builds the table,
resets the kernel's peak-RSS counter (Linux ``/proc/self/clear_refs``), runs the tool and reads
``VmHWM``: the peak resident size of the whole process (table included) and the increase over the
table alone.

Usage::

    python benchmarks/retrieval.py                          # 100,000 x 100, all three tools
    python benchmarks/retrieval.py --n 1000000 --tools raglab --memory
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import subprocess
import sys
import time
import warnings
from collections import deque
from itertools import chain

import numpy as np
import pandas as pd

import raglab

METRICS = ("recall@10", "precision@10", "rr", "ndcg@10")
RANX_NAMES = {"recall@10": "recall@10", "precision@10": "precision@10", "rr": "mrr", "ndcg@10": "ndcg@10"}
PYTREC_NAMES = {"recall@10": "recall_10", "precision@10": "P_10", "rr": "recip_rank", "ndcg@10": "ndcg_cut_10"}
DEPTH = 100


# --------------------------------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------------------------------


def build_table(n: int, *, seed: int = 0, vocabulary: int = 1_000_000, distinct_objects: bool = False) -> pd.DataFrame:
    """N questions x 100 unique retrieved ids and 1-5 graded gold ids each (seeded)."""
    rng = np.random.default_rng(seed)
    vocab = np.array([f"doc{i:07d}" for i in range(vocabulary)], dtype=object)
    retrieved: list[list[str]] = []
    gold: list[dict[str, int]] = []
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
        ids = vocab[idx]
        gold_ids = vocab[gold_idx]
        for i in range(size):
            row = ids[i].tolist()
            keys = gold_ids[i, : n_gold[i]].tolist()
            if distinct_objects:  # a fresh str object per occurrence, as json.loads makes
                row = [s[:1] + s[1:] for s in row]
                keys = [s[:1] + s[1:] for s in keys]
            retrieved.append(row)
            gold.append(dict(zip(keys, grades[i, : n_gold[i]].tolist())))
    rows = pd.DataFrame(
        {
            "question_id": pd.Series([f"q{i}" for i in range(n)], dtype=object),
            "retrieved": pd.Series(retrieved, dtype=object),
            "gold": pd.Series(gold, dtype=object),
        }
    )
    # Compute every string's hash once, so that no tool pays for it on behalf of the others.
    deque(map(hash, chain.from_iterable(rows["retrieved"])), maxlen=0)
    deque(map(hash, chain.from_iterable(rows["gold"])), maxlen=0)
    deque(map(hash, rows["question_id"]), maxlen=0)
    return rows


# --------------------------------------------------------------------------------------------------
# The three tools, each from the DataFrame to per-question scores {metric: array in row order}
# --------------------------------------------------------------------------------------------------


def run_raglab(rows: pd.DataFrame, **_: object) -> dict[str, np.ndarray]:
    scored = rows.rag.retrieval(k=10, gain="linear")
    return {m: scored[m].to_numpy() for m in METRICS}


def run_ranx(rows: pd.DataFrame, *, ranx_from: str = "dict", **_: object) -> dict[str, np.ndarray]:
    from ranx import Qrels, Run, evaluate

    qids = rows["question_id"].tolist()
    scores = [float(DEPTH - r) for r in range(DEPTH)]
    if ranx_from == "dict":
        qrels = Qrels.from_dict(dict(zip(qids, rows["gold"])))
        run = Run.from_dict({q: dict(zip(r, scores)) for q, r in zip(qids, rows["retrieved"])})
    else:
        lengths = rows["retrieved"].map(len).to_numpy()
        run_df = pd.DataFrame(
            {
                "q_id": pd.Series(np.repeat(np.array(qids, dtype=object), lengths), dtype=object),
                "doc_id": pd.Series(list(chain.from_iterable(rows["retrieved"])), dtype=object),
                "score": np.concatenate([np.array(scores[:n]) for n in lengths]) if len(rows) else [],
            }
        )
        g_lengths = rows["gold"].map(len).to_numpy()
        qrels_df = pd.DataFrame(
            {
                "q_id": pd.Series(np.repeat(np.array(qids, dtype=object), g_lengths), dtype=object),
                "doc_id": pd.Series(list(chain.from_iterable(rows["gold"])), dtype=object),
                "score": list(chain.from_iterable(g.values() for g in rows["gold"])),
            }
        )
        qrels = Qrels.from_df(qrels_df)
        run = Run.from_df(run_df)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba type-safety chatter
        evaluate(qrels, run, [RANX_NAMES[m] for m in METRICS], save_results_in_run=True)
    return {m: np.array([run.scores[RANX_NAMES[m]][q] for q in qids]) for m in METRICS}


def run_pytrec_eval(rows: pd.DataFrame, **_: object) -> dict[str, np.ndarray]:
    import pytrec_eval

    qids = rows["question_id"].tolist()
    scores = [float(DEPTH - r) for r in range(DEPTH)]
    qrels = dict(zip(qids, rows["gold"]))
    run = {q: dict(zip(r, scores)) for q, r in zip(qids, rows["retrieved"])}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"recall.10", "P.10", "recip_rank", "ndcg_cut.10"})
    results = evaluator.evaluate(run)
    return {m: np.array([results[q][PYTREC_NAMES[m]] if q in results else 0.0 for q in qids]) for m in METRICS}


TOOLS = {"raglab": run_raglab, "ranx": run_ranx, "pytrec_eval": run_pytrec_eval}


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


def child(tool: str, n: int, seed: int, distinct_objects: bool, ranx_from: str) -> None:
    rows = build_table(n, seed=seed, distinct_objects=distinct_objects)
    gc.collect()
    reset = False
    try:
        with open("/proc/self/clear_refs", "w") as fh:  # reset VmHWM to the current RSS (Linux >= 4.0)
            fh.write("5")
        reset = True
    except OSError:
        pass
    baseline = _status_kib("VmRSS")
    if tool == "ranx":  # compile ranx's numba kernels first (their memory is not the metric's)
        TOOLS[tool](build_table(1_000, seed=seed + 1), ranx_from=ranx_from)
        gc.collect()
        if reset:
            with open("/proc/self/clear_refs", "w") as fh:
                fh.write("5")
        baseline = _status_kib("VmRSS")
    start = time.perf_counter()
    TOOLS[tool](rows, ranx_from=ranx_from)
    seconds = time.perf_counter() - start
    peak = _status_kib("VmHWM")
    print(json.dumps({"tool": tool, "seconds": seconds, "baseline_kib": baseline, "peak_kib": peak, "reset": reset}))


def measure_memory(tool: str, args: argparse.Namespace) -> dict:
    command = [sys.executable, __file__, "--child", tool, "--n", str(args.n), "--seed", str(args.seed),
               "--ranx-from", args.ranx_from] + (["--distinct-objects"] if args.distinct_objects else [])
    out = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="questions (default 100,000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tools", default="raglab,ranx,pytrec_eval", help="comma-separated subset")
    parser.add_argument("--repeat", type=int, default=None,
                        help="time each tool this many times and compare the best (default 3; 1 above 200,000 questions)")
    parser.add_argument("--memory", action="store_true", help="also measure peak memory per tool in a subprocess")
    parser.add_argument("--distinct-objects", action="store_true", help="a fresh str object per id occurrence")
    parser.add_argument("--ranx-from", choices=["dict", "df"], default="dict", help="how ranx builds Qrels/Run")
    parser.add_argument("--child", choices=list(TOOLS), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.n, args.seed, args.distinct_objects, args.ranx_from)
        return 0
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    unknown = sorted(set(tools) - set(TOOLS))
    if unknown:
        parser.error(f"unknown tool(s) {unknown}; choose from {list(TOOLS)}")

    print(f"raglab {raglab.__version__}, numpy {np.__version__}, pandas {pd.__version__}, "
          f"Python {platform.python_version()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} "
          "(a shared machine: times vary between runs)")
    start = time.perf_counter()
    rows = build_table(args.n, seed=args.seed, distinct_objects=args.distinct_objects)
    print(f"table: {len(rows):,} questions x {DEPTH} retrieved ids, "
          f"{int(rows['gold'].map(len).sum()):,} gold ids, "
          f"{'distinct str objects' if args.distinct_objects else 'ids shared from a vocabulary'} "
          f"(built in {time.perf_counter() - start:.1f} s)")

    warm = build_table(1_000, seed=args.seed + 1)
    for tool in tools:  # imports, numba compilation (ranx), first calls: not timed
        TOOLS[tool](warm, ranx_from=args.ranx_from)
    del warm

    repeat = args.repeat if args.repeat is not None else (3 if args.n <= 200_000 else 1)
    times: dict[str, float] = {}
    results: dict[str, dict[str, np.ndarray]] = {}
    print(f"time from the DataFrame to the four per-question metrics, best of {repeat} (every run listed):")
    for tool in tools:
        runs = []
        for _ in range(max(1, repeat)):
            gc.collect()
            t0 = time.perf_counter()
            results[tool] = TOOLS[tool](rows, ranx_from=args.ranx_from)
            runs.append(time.perf_counter() - t0)
        times[tool] = min(runs)
        listed = ", ".join(f"{t:.2f}" for t in runs)
        print(f"  {tool:<12} {times[tool]:8.2f} s   ({listed})", flush=True)

    status = 0
    if "raglab" in results:
        for tool in tools:
            if tool == "raglab":
                continue
            worst = max(float(np.max(np.abs(results[tool][m] - results["raglab"][m]))) for m in METRICS)
            ok = worst <= 1e-9
            status |= 0 if ok else 1
            print(f"agreement raglab vs {tool}: max |difference| over {len(rows):,} questions x {len(METRICS)} "
                  f"metrics = {worst:.2e} ({'OK' if ok else 'FAILED'}, tolerance 1e-9)")
        means = {m: float(np.mean(results["raglab"][m])) for m in METRICS}
        print("means: " + ", ".join(f"{m} {v:.4f}" for m, v in means.items()))
        for tool in tools:
            if tool != "raglab":
                print(f"ratio {tool} / raglab: {times[tool] / times['raglab']:.1f}x")

    if args.memory:
        print("peak memory per tool (fresh process each; RSS includes the table):")
        for tool in tools:
            m = measure_memory(tool, args)
            if m["peak_kib"] is None:
                print(f"  {tool:<12} not available on this platform")
                continue
            delta = (m["peak_kib"] - m["baseline_kib"]) / 1024 if m["reset"] else float("nan")
            print(f"  {tool:<12} peak {m['peak_kib'] / 1024:8.0f} MiB   table alone {m['baseline_kib'] / 1024:8.0f} MiB   "
                  f"added by the tool {delta:8.0f} MiB   ({m['seconds']:.2f} s in that process)")
    return status


if __name__ == "__main__":
    sys.exit(main())
