"""Scale: the same tables from pandas in one process and from Dask on a LocalCluster (issue 23).

Writes a partitioned Parquet production log (``raglab.monitor.simulate_log`` in day chunks, each with
its own seed; 2% judged; pandas writes the attrs, which Dask reads back), then, each engine in a
fresh subprocess so its peak memory is its own:

* **pandas**: ``pd.read_parquet`` of the whole log (and of a candidate system's citation checks on
  the same requests), then ``rows.rag.summary`` (the tripwires), ``compare`` and ``gate`` (the
  candidate against the log, paired by request id, Tango's interval), ``over_time`` (the judged
  metric with the tripwire as predictor, by topic) and ``monitor``;
* **dask**: ``dd.read_parquet`` on a ``distributed.LocalCluster`` (``--workers`` processes, one thread
  each, ``--memory-limit`` each), then the same calls on ``ddf.rag``.

It prints, per engine, the seconds of each step and the peak resident memory (the process's, and
for Dask its largest worker's), checks that the two engines' tables agree (to 1e-9: partition sums
are added in another order; the gate's decision the same), and extrapolates the time to 10^8 rows
linearly. On Dask, ``compare`` pairs the two runs by one task-based shuffle of each run's request id
and score (the id an integer here: a text id is shuffled as Arrow strings, which weigh more).

Run: ``.venv/bin/python benchmarks/scale.py [--rows 20000000] [--workers 2] [--memory-limit 1GB]``
(``--quick``: 400,000 rows, a 2-worker cluster; minutes for the full size on 2 cores).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
METRICS = ["citation_valid", "lexical_support"]


def write_log(folder: Path, rows: int, days: int, chunk_days: int) -> int:
    """The log as one Parquet file per ``chunk_days`` days (each chunk simulated with its own seed)."""
    import numpy as np
    import pandas as pd

    from raglab.monitor import simulate_log

    (folder / "log").mkdir(parents=True, exist_ok=True)
    (folder / "cand").mkdir(parents=True, exist_ok=True)
    chunks = max(1, days // chunk_days)
    per = rows // chunks
    start = pd.Timestamp("2026-01-01")
    written = 0
    for i in range(chunks):
        day0 = start + pd.Timedelta(days=i * chunk_days)
        part = simulate_log(per, days=chunk_days, start=str(day0.date()), drop_topic=None, seed=i)
        part["request_id"] += written
        part = part.drop(columns=["question", "truth_faithful", "truth_verdict"])
        part.to_parquet(folder / "log" / f"part-{i:04d}.parquet", index=False)
        # a candidate system on the same requests: its citation check passes on 1 point fewer of them
        rng = np.random.default_rng([i, 7])
        flipped = (part["citation_valid"] == 1) & (rng.random(len(part)) < 0.0106)
        cand = pd.DataFrame({"request_id": part["request_id"],
                             "citation_valid": np.where(flipped, 0.0, part["citation_valid"])})
        cand.to_parquet(folder / "cand" / f"part-{i:04d}.parquet", index=False)
        written += len(part)
    return written


def _steps(rows_obj, cand_obj) -> dict:
    """The timed steps on a pandas or Dask log; returns seconds and the tables (as JSON)."""
    out: dict = {"seconds": {}, "tables": {}}

    def timed(name, call):
        t0 = time.perf_counter()
        value = call()
        out["seconds"][name] = time.perf_counter() - t0
        return value

    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        summary = timed("summary", lambda: rows_obj.rag.summary(METRICS, units=False))
        kw = {"metrics": ["citation_valid"], "on": "request_id", "method": "score"}
        compared = timed("compare", lambda: rows_obj.rag.compare(cand_obj, **kw))
        gated = timed("gate", lambda: rows_obj.rag.gate(cand_obj, margin=0.02, higher_is_better=True, **kw))
        daily = timed("over_time", lambda: rows_obj.rag.over_time(["faithfulness"], predictor="lexical_support",
                                                                   by="topic"))
        found = timed("monitor", lambda: rows_obj.rag.monitor("faithfulness", reference=0.85, by="topic",
                                                               predictor="lexical_support", guarantee="arl",
                                                               arl=365))
    out["tables"] = {"summary": summary[["metric", "mean", "low", "high"]].to_json(),
                     "compare": compared[["diff", "low", "high"]].to_json(), "gate": gated.decision,
                     "over_time": daily[["estimate", "low", "high"]].to_json(),
                     "alarms": len(found.alarms)}
    return out


def run_engine(engine: str, folder: str, workers: int, memory_limit: str) -> dict:
    """One engine, in this (fresh) process."""
    import pandas as pd

    import raglab  # noqa: F401  (registers the accessor)

    t0 = time.perf_counter()
    if engine == "pandas":
        rows = pd.read_parquet(Path(folder) / "log")
        cand = pd.read_parquet(Path(folder) / "cand")
        load = time.perf_counter() - t0
        out = _steps(rows, cand)
        worker_peak = 0
    else:
        import dask.dataframe as dd
        from distributed import Client, LocalCluster

        import raglab.dask  # noqa: F401  (registers ddf.rag)

        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, memory_limit=memory_limit,
                               dashboard_address=None, silence_logs=50)
        client = Client(cluster)
        rows = dd.read_parquet(str(Path(folder) / "log"))
        cand = dd.read_parquet(str(Path(folder) / "cand"))
        load = time.perf_counter() - t0
        out = _steps(rows, cand)
        peaks = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        worker_peak = max(peaks.values()) * 1024
        client.close()
        cluster.close()
    out["seconds"]["load"] = load
    out["peak_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    out["worker_peak_bytes"] = worker_peak
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--chunk-days", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="1GB")
    parser.add_argument("--quick", action="store_true", help="400,000 rows")
    parser.add_argument("--engine", help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.engine:  # the child: one engine, its result as JSON on stdout
        print(json.dumps(run_engine(args.engine, args.folder, args.workers, args.memory_limit)))
        return
    rows = 400_000 if args.quick else args.rows
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        t0 = time.perf_counter()
        written = write_log(folder, rows, args.days, args.chunk_days)
        files = list((folder / "log").iterdir())
        size = sum(f.stat().st_size for f in files)
        print(f"log: {written:,} requests in {len(files)} Parquet files ({size / 1e6:.0f} MB), and a candidate's "
              f"citation checks on the same requests; written in {time.perf_counter() - t0:.0f} s")
        results = {}
        for engine in ("pandas", "dask"):
            env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
            done = subprocess.run([sys.executable, __file__, "--engine", engine, "--folder", str(folder),
                                   "--workers", str(args.workers), "--memory-limit", args.memory_limit],
                                  capture_output=True, text=True, env=env, check=False)
            if done.returncode:
                sys.exit(f"the {engine} run failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
            results[engine] = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"\n{'engine':>7} | {'load':>6} {'summary':>8} {'compare':>8} {'gate':>6} {'over_time':>9} {'monitor':>8} "
          f"{'total':>7} | "
          f"{'peak (process)':>14} {'peak (worker)':>13} | {'10^8 rows (extrapolated)':>24}")
    for engine, r in results.items():
        s = r["seconds"]
        total = sum(s.values())
        print(f"{engine:>7} | {s['load']:6.1f} {s['summary']:8.1f} {s['compare']:8.1f} {s['gate']:6.1f} "
              f"{s['over_time']:9.1f} {s['monitor']:8.1f} "
              f"{total:7.1f} | {r['peak_bytes'] / 1e9:11.2f} GB {r['worker_peak_bytes'] / 1e9:10.2f} GB | "
              f"{total * 1e8 / written:21.0f} s")
    import numpy as np
    import pandas as pd

    agree = True
    for name in ("summary", "over_time", "compare"):
        a = pd.read_json(io.StringIO(results["pandas"]["tables"][name])).select_dtypes("number").to_numpy(float)
        b = pd.read_json(io.StringIO(results["dask"]["tables"][name])).select_dtypes("number").to_numpy(float)
        agree &= a.shape == b.shape and bool(np.nanmax(abs(a - b)) < 1e-9)
    agree &= results["pandas"]["tables"]["alarms"] == results["dask"]["tables"]["alarms"]
    agree &= results["pandas"]["tables"]["gate"] == results["dask"]["tables"]["gate"]
    ratio = sum(results["dask"]["seconds"].values()) / sum(results["pandas"]["seconds"].values())
    print(f"\nthe engines' tables agree (1e-9): {agree}; Dask / pandas time: x{ratio:.2f} "
          f"({args.workers} workers of {args.memory_limit}, one thread each)")


if __name__ == "__main__":
    main()
