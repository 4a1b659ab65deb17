"""Benchmark: one paired comparison of two runs on 100,000 questions against scipy.stats.bootstrap.

Two synthetic runs score the same 100,000 questions on 8 metrics: 4 pass/fail (hit@1, hit@3, hit@5,
hit@10, from the rank of the first relevant chunk) and 4 continuous (rr, recall@10 over 1-3 gold
chunks, nDCG@10 with graded relevance, and a judge's faithfulness score that changes on every
question), with 6 question-type slices. The candidate changes the ranking of a quarter of the
questions. raglab answers with ONE ``rows.rag.compare(cand, metrics=8, by="qtype")`` call: 56
paired percentile-bootstrap intervals (8 metrics x (overall + 6 slices); ``method="percentile"``, the
method scipy runs; the gate's default intervals, Tango's score and the betting interval, are timed on
one extra line, and the pass/fail lines time Tango's interval, which needs no resampling), 10,000
resamples, plus the paired
tests (the same numbers come from ``raglab.stats.compare`` on the aligned scores, which is what is
timed against scipy). The peer is ``scipy.stats.bootstrap(paired=True, method="percentile", n_resamples=10_000)``,
one call per interval, run in the same process.

scipy needs about half a minute per 100,000-question interval here, so by default it runs on a
subset (the overall row and one slice, for one pass/fail and one continuous metric) and its time
for the other intervals is extrapolated from its measured time per question (its cost is linear in
the number of questions and does not depend on the metric); ``--full`` runs all 56. The intervals
scipy computed are checked against raglab's: they must agree within Monte Carlo error (0.15
bootstrap standard deviations, plus one lattice step for pass/fail data).

Reported: raglab's time (median of ``--repeat`` runs) for the whole comparison with and without
the permutation tests and for the 4 pass/fail metrics alone, all on the aligned scores that scipy
gets too (``raglab.stats.compare``); the end-to-end ``rows.rag.compare`` time, which adds pairing
the runs by question id; scipy's (measured or extrapolated) time for the same intervals; and the
ratios. Targets: at least 20x on the whole comparison, at least 1000x on the pass/fail metrics.

Run: ``.venv/bin/python benchmarks/bootstrap.py [--full] [--n 100000] [--resamples 10000]``.
The machine may be shared: the load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pandas as pd
import scipy
import scipy.stats

import raglab

PASS_FAIL = ["hit@1", "hit@3", "hit@5", "hit@10"]
CONTINUOUS = ["rr", "recall@10", "ndcg@10", "faithfulness"]
SLICES = ["factoid", "howto", "comparison", "multi_hop", "numeric", "unanswerable_like"]


def _first_rank(rng: np.random.Generator, n: int, better: float = 0.0) -> np.ndarray:
    """Rank (1-10) of the first relevant chunk, 11 when none is in the top 10."""
    p = np.array([0.45, 0.12, 0.08, 0.04, 0.03, 0.02, 0.02, 0.02, 0.01, 0.01, 0.20])
    p[0] += better
    p[-1] -= better
    return rng.choice(np.arange(1, 12), size=n, p=p / p.sum())


def _scores(rank: np.ndarray, gold: np.ndarray, found_extra: np.ndarray, grades: np.ndarray) -> dict[str, np.ndarray]:
    hit = rank <= 10
    rr = np.where(hit, 1.0 / rank, 0.0)
    recall = np.where(hit, (1 + np.minimum(found_extra, gold - 1)) / gold, 0.0)
    # nDCG@10: the first relevant chunk at `rank` with grade grades[:, 0], a second one 2 ranks lower.
    gain = 2.0 ** grades - 1
    dcg = np.where(hit, gain[:, 0] / np.log2(rank + 1) + (gold > 1) * gain[:, 1] / np.log2(rank + 3), 0.0)
    ideal_gains = -np.sort(-gain, axis=1)
    idcg = ideal_gains[:, 0] + (gold > 1) * ideal_gains[:, 1] / np.log2(3)
    out = {f"hit@{k}": (rank <= k).astype(float) for k in (1, 3, 5, 10)}
    out.update({"rr": rr, "recall@10": recall, "ndcg@10": dcg / idcg})
    return out


def make_runs(n: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    qtype = rng.choice(SLICES, size=n, p=[0.3, 0.2, 0.15, 0.15, 0.1, 0.1])
    gold = rng.integers(1, 4, n)
    grades = rng.integers(1, 4, (n, 2))
    base_rank = _first_rank(rng, n)
    changed = rng.random(n) < 0.25
    cand_rank = np.where(changed, _first_rank(rng, n, better=0.03), base_rank)
    base_extra = rng.binomial(gold - 1, 0.5)
    cand_extra = np.where(changed, rng.binomial(gold - 1, 0.55), base_extra)
    faith = rng.beta(5, 2, n)
    ids = np.char.add("q", np.arange(n).astype(str))
    base = pd.DataFrame({"question_id": ids, "qtype": qtype, **_scores(base_rank, gold, base_extra, grades),
                         "faithfulness": faith})
    cand = pd.DataFrame({"question_id": ids, "qtype": qtype, **_scores(cand_rank, gold, cand_extra, grades),
                         "faithfulness": np.clip(faith + rng.normal(0.002, 0.08, n), 0, 1)})
    return base, cand.sample(frac=1.0, random_state=1).reset_index(drop=True)  # row order differs


def _mean_diff(x, y, axis=-1):
    return np.mean(y - x, axis=axis)


def scipy_interval(base: np.ndarray, cand: np.ndarray, n_resamples: int, seed: int) -> tuple[float, float, float, float]:
    start = time.perf_counter()
    res = scipy.stats.bootstrap((base, cand), _mean_diff, paired=True, vectorized=True, n_resamples=n_resamples,
                                method="percentile", rng=seed, batch=250)
    elapsed = time.perf_counter() - start
    return res.confidence_interval.low, res.confidence_interval.high, res.standard_error, elapsed


def timed(label: str, fn, repeat: int):
    """Median (and min) wall time of ``repeat`` runs; returns the last output and the median."""
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    median = float(np.median(times))
    print(f"  {label:<52s} median {median:8.3f} s   min {min(times):8.3f} s   ({repeat} runs)")
    return out, median


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="questions (default 100000)")
    parser.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples (default 10000)")
    parser.add_argument("--repeat", type=int, default=3, help="raglab runs per figure (median reported)")
    parser.add_argument("--full", action="store_true", help="run scipy on all 56 intervals (about 15-30 min)")
    args = parser.parse_args()
    n, resamples, repeat = args.n, args.resamples, args.repeat

    print(f"raglab {raglab.__version__}, numpy {np.__version__}, scipy {scipy.__version__}, pandas {pd.__version__}")
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start (the machine may be shared)")
    base, cand = make_runs(n)
    metrics = PASS_FAIL + CONTINUOUS
    print(f"{n:,} questions x {len(metrics)} metrics x (overall + {len(SLICES)} slices) = "
          f"{len(metrics) * (1 + len(SLICES))} intervals, {resamples:,} resamples each\n")

    # The engine gets what scipy gets: the two runs' scores aligned question by question.
    aligned = cand.set_index("question_id").loc[base["question_id"]].reset_index()
    qtype = base["qtype"]

    # method="percentile": the method scipy runs. The gate's default ("auto") decides pass/fail metrics with
    # Tango's score interval and [0, 1] continuous ones with the betting interval; timed separately below.
    def engine(columns, n_permutations, method="percentile"):
        return raglab.stats.compare(base[columns], aligned[columns], slices=qtype, n_resamples=resamples,
                                    n_permutations=n_permutations, method=method)

    print("raglab.stats.compare on the aligned scores (one call per line):")
    table, t_all = timed("8 metrics, intervals + paired tests", lambda: engine(metrics, 10_000), repeat)
    _, t_all_iv = timed("8 metrics, intervals only (n_permutations=0)", lambda: engine(metrics, 0), repeat)
    # pass/fail metrics as the gate runs them: Tango's score interval, no resampling (the 1000x target)
    _, t_pf = timed("4 pass/fail metrics, Tango + exact McNemar", lambda: engine(PASS_FAIL, 10_000, "auto"), repeat)
    _, t_pf_iv = timed("4 pass/fail metrics, Tango only", lambda: engine(PASS_FAIL, 0, "auto"), repeat)
    _, t_one = timed("hit@5, overall row only (one interval)",
                     lambda: raglab.stats.compare(base[["hit@5"]], aligned[["hit@5"]], n_resamples=resamples,
                                                  n_permutations=0), repeat)
    timed("8 metrics, the gate's default intervals (Tango's score, betting)", lambda: engine(metrics, 10_000, "auto"),
          repeat)
    print(f"end to end, pairing the runs by question id (pair_runs validates and matches {n:,} string ids):")
    accessor_table, t_accessor = timed(
        "base.rag.compare(cand, metrics=8, by='qtype')",
        lambda: base.rag.compare(cand, metrics=metrics, by="qtype", n_resamples=resamples, method="percentile"), 1)
    pd.testing.assert_frame_equal(accessor_table, table, check_like=False)  # same numbers as the engine call

    # scipy, on the same aligned arrays.
    slice_of = base["qtype"].to_numpy()
    rows = [(m, s) for m in metrics for s in ["overall", *SLICES]]
    if args.full:
        subset = rows
    else:
        subset = [("hit@5", "overall"), ("hit@5", SLICES[0]), ("ndcg@10", "overall"), ("ndcg@10", SLICES[0])]
    print(f"\nscipy.stats.bootstrap(paired=True, percentile), {len(subset)} of {len(rows)} intervals:")
    results, timings = {}, {}
    scipy_seconds, scipy_questions = 0.0, 0
    for metric, label in subset:
        mask = np.ones(n, bool) if label == "overall" else slice_of == label
        b = base.loc[mask, metric].to_numpy()
        c = aligned.loc[mask, metric].to_numpy()
        low, high, se, elapsed = scipy_interval(b, c, resamples, seed=len(results))
        results[(metric, label)] = (low, high, se, int(mask.sum()))
        timings[(metric, label)] = elapsed
        scipy_seconds += elapsed
        scipy_questions += int(mask.sum())
        print(f"  {metric:>8s} {label:<18s} n={mask.sum():>7,}  {elapsed:8.2f} s")
    per_question = scipy_seconds / scipy_questions
    sizes = {label: (n if label == "overall" else int((slice_of == label).sum())) for label in ["overall", *SLICES]}

    def scipy_time(selected: list[tuple[str, str]]) -> float:
        """Measured time where scipy ran, else its time per question times the interval's questions."""
        return sum(timings[r] if r in timings else sizes[r[1]] * per_question for r in selected)

    measured = " (measured)" if args.full else (
        f" ({len(subset)} measured, the rest extrapolated at {per_question * 1e6:.1f} us per question and interval)")
    t_scipy_all = scipy_time(rows)
    t_scipy_pf = scipy_time([r for r in rows if r[0] in PASS_FAIL])
    t_scipy_one = scipy_time([("hit@5", "overall")])

    print("\nagreement with scipy (same data, independent resamples):")
    worst = 0.0
    allowed = 0.15 * np.sqrt(10_000 / resamples)  # Monte Carlo error shrinks as 1/sqrt(resamples)
    indexed = table.set_index(["metric", "slice"])
    for (metric, label), (low, high, se, size) in results.items():
        ours = indexed.loc[(metric, label)]
        lattice = 1.0 / size if metric in PASS_FAIL else 0.0
        err = max(abs(ours["low"] - low), abs(ours["high"] - high))
        ratio = (err - lattice) / se if se > 0 else 0.0
        worst = max(worst, ratio)
        status = "ok" if err <= allowed * se + lattice else "DIFFERENT"
        print(f"  {metric:>8s} {label:<18s} raglab [{ours['low']:+.5f}, {ours['high']:+.5f}]  "
              f"scipy [{low:+.5f}, {high:+.5f}]  |diff| {err:.5f} = {err / se:.2f} bootstrap s.d.  {status}")
    print(f"  largest difference: {worst:.3f} bootstrap standard deviations beyond the lattice step "
          f"(allowed {allowed:.2f})")

    print(f"\nscipy time{measured}:")
    print(f"  all {len(rows)} intervals: {t_scipy_all:9.1f} s;  28 pass/fail intervals: {t_scipy_pf:8.1f} s;  "
          f"one 100,000-question interval: {t_scipy_one:6.1f} s")
    print("\nratios (scipy time / raglab engine time):")
    print(f"  whole comparison, intervals + tests : {t_scipy_all / t_all:8.0f}x   (target >= 20x)")
    print(f"  whole comparison, intervals only    : {t_scipy_all / t_all_iv:8.0f}x")
    print(f"  pass/fail metrics, intervals + tests: {t_scipy_pf / t_pf:8.0f}x   (target >= 1000x)")
    print(f"  pass/fail metrics, intervals only   : {t_scipy_pf / t_pf_iv:8.0f}x")
    print(f"  one pass/fail interval (hit@5)      : {t_scipy_one / t_one:8.0f}x")
    print(f"  end to end with pairing (accessor)  : {t_scipy_all / t_accessor:8.0f}x")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
