"""Simulation: coverage of raglab's 95% intervals, method x regime (n, skew, rare events, clusters).

Two targets. **Paired difference**: the true mean of ``cand - base`` per question, with the
intervals of ``raglab.stats.compare`` (``n_permutations=0``): Tango's score interval (``method="auto"``
on pass/fail data), the plain percentile bootstrap (``method="percentile"``), the expanded
percentile bootstrap (``method="auto"`` on continuous data or with ``units=``; for pass/fail data it
is obtained with ``units=`` one label per question, which resamples exactly as the question
bootstrap does), BCa (``method="bca"``) and the t interval on the differences
(``summary(method="t")``, as ``mean_interval``). **One run's mean**: ``raglab.stats.summary`` with
Wilson (pass/fail), percentile, BCa and t.

Regimes: n = 10, 20, 30, 100, 300 questions with symmetric (normal), skewed (lognormal, skewness
6.2) and zero-inflated (reciprocal-rank-like: 30% of questions re-ranked) differences; rare
events (paired pass/fail with discordance 0.05 = 2% pass -> fail and 3% fail -> pass, or 0.02 =
0.5% and 1.5%, true difference +0.01 in both; one run's pass rate 0.05 or 0.02); and clustered
questions (20 clusters of 5 or of 24 questions, about MTRAG's 477 answers in 20 conversations;
intra-cluster correlation 0.3; for pass/fail, discordance and direction vary by cluster) with and
without ``units=``. True means: normal and lognormal differences 0.03, rr-like -0.03, clustered
0.03 (pass/fail 0.02); one run: Beta(4, 4) 0.5, lognormal latency exp(0.5), clustered 0.5.

The betting interval (``method="betting"``, the default for metrics known to lie in [0, 1]) is
shown where the differences are bounded (rr-like, pass/fail). Part C (issue 18): drops spread the
way regressions spread (``gate_errors.py`` part 4's data), n = 10, 30, 120, 400, 1000, reporting how
often the LOW end is above the truth (the gate's false passes at a margin equal to the drop).
Part B adds recall-like means near 1 (0.9-0.99; values in {0, 1/3, 1/2, 2/3, 1}) with the summary's
default for bounded metrics (Wilson at the effective n), the betting interval and plain t; part A
adds cluster counts 12-40.

Each cell reports the empirical coverage of the true mean (an interval that is missing or
zero-width and misses the truth counts as not covering), its Monte Carlo standard error
``sqrt(c (1 - c) / replicates)`` and the mean width. To run in a few minutes the script uses
1,500 bootstrap resamples (the default is 10,000) and 800 replicates per cell (Monte Carlo SE about
0.8 points at 95%), and computes the intervals of 100 replicates in one call, one replicate per
metric column: every column's interval is its own bootstrap of its own data, and columns share the
resampled question indices (as all metrics of one call do), which leaves each replicate's coverage
unbiased.

Run: ``.venv/bin/python benchmarks/coverage.py [--reps 800] [--resamples 1500] [--parts ABC]`` (about 10 minutes
on 2 busy cores).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np

import raglab
from raglab import stats

SEED = 95
LEVEL = 0.95
CHUNK = 100  # replicates per call (one metric column each)
NS = (10, 20, 30, 100, 300)
SD = 0.2  # standard deviation of continuous differences
ICC = 0.3

RR_LEVELS = np.array([1.0, 1 / 2, 1 / 3, 1 / 4, 1 / 5, 0.0])
RR_PROBS = np.array([0.50, 0.15, 0.10, 0.05, 0.05, 0.15])

PAIRED_METHODS = ["Tango", "betting", "percentile", "expanded", "BCa", "t"]
SINGLE_METHODS = ["Wilson", "Wilson eff. n", "betting", "percentile", "BCa", "t"]
TAIL_NS = (10, 30, 120, 400, 1000)  # part C
NEAR_BOUND = (0.9, 0.95, 0.98, 0.99)  # part B: recall-like means near 1
RECALL_LEVELS = np.array([0.0, 1 / 3, 1 / 2, 2 / 3])  # recall@k of a question that misses some gold


# --------------------------------------------------------------------------------------------------
# Data: (n, reps) arrays, one replicate per column, and the true mean
# --------------------------------------------------------------------------------------------------


def symmetric(rng, n, reps, mean=0.03):
    return rng.normal(mean, SD, (n, reps)), mean


def skewed(rng, n, reps, mean=0.03):
    """Lognormal(0, 1) shifted and scaled to mean ``mean`` and sd SD (skewness 6.18)."""
    z = np.exp(rng.normal(0.0, 1.0, (n, reps)))
    return mean + SD * (z - np.exp(0.5)) / np.sqrt((np.e - 1) * np.e), mean


def rr_like(rng, n, reps, changed=0.3, drop=0.03):
    """Reciprocal-rank-like differences: 30% of questions get a new rank, 'none found' often
    enough that the true mean difference is exactly ``-drop``; most differences are 0."""
    zero_share = drop / (changed * float(RR_LEVELS @ RR_PROBS))
    base = RR_LEVELS[rng.choice(6, size=(n, reps), p=RR_PROBS)]
    fresh = np.where(rng.random((n, reps)) < zero_share, 0.0, RR_LEVELS[rng.choice(6, size=(n, reps), p=RR_PROBS)])
    return np.where(rng.random((n, reps)) < changed, fresh, base) - base, -drop


def pass_fail(rng, n, reps, down, up, base_rate=0.7):
    """Paired 0/1 scores: P(1 -> 0) = down, P(0 -> 1) = up; true difference up - down."""
    u = rng.random((n, reps))
    concordant_one = rng.random((n, reps)) < (base_rate - down) / (1 - down - up)
    base = np.where(u < down, 1.0, np.where(u < down + up, 0.0, concordant_one.astype(float)))
    cand = np.where(u < down, 0.0, np.where(u < down + up, 1.0, base))
    return base, cand, up - down


def clustered(rng, clusters, size, reps, mean):
    """Normal scores with a cluster effect: intra-cluster correlation ICC, total sd SD."""
    effect = rng.normal(0.0, SD * np.sqrt(ICC), (clusters, reps))
    noise = rng.normal(0.0, SD * np.sqrt(1 - ICC), (clusters * size, reps))
    return mean + np.repeat(effect, size, axis=0) + noise, mean


def clustered_pass_fail(rng, clusters, size, reps):
    """0/1 pairs whose discordance (Beta(1, 9), mean 0.1) and share of improvements (Beta(3, 2),
    mean 0.6) vary by cluster: true difference 0.1 x (2 x 0.6 - 1) = 0.02."""
    discordance = np.repeat(rng.beta(1, 9, (clusters, reps)), size, axis=0)
    up_share = np.repeat(rng.beta(3, 2, (clusters, reps)), size, axis=0)
    down, up = discordance * (1 - up_share), discordance * up_share
    base, cand, _ = pass_fail(rng, clusters * size, reps, 0.0, 0.0)  # concordant background, base rate 0.7
    u = rng.random(base.shape)
    base = np.where(u < down, 1.0, np.where(u < down + up, 0.0, base))
    cand = np.where(u < down, 0.0, np.where(u < down + up, 1.0, base))
    return base, cand, 0.02


# --------------------------------------------------------------------------------------------------
# Intervals through raglab, CHUNK replicates per call
# --------------------------------------------------------------------------------------------------


def _columns(values: np.ndarray, cols: range) -> dict[str, np.ndarray]:
    return {f"r{j}": values[:, j] for j in cols}


def paired(base, cand, method, *, units=None, resamples):
    """(low, high) per replicate from ``stats.compare`` (or ``summary(method='t')`` for "t")."""
    reps = base.shape[1]
    low, high = np.empty(reps), np.empty(reps)
    if method == "t":
        table = stats.summary(_columns(cand - base, range(reps)), method="t", ci=LEVEL)
        return table["low"].to_numpy(float), table["high"].to_numpy(float)
    for start in range(0, reps, CHUNK):
        cols = range(start, min(reps, start + CHUNK))
        table = stats.compare(_columns(base, cols), _columns(cand, cols), method=method, units=units, ci=LEVEL,
                              n_resamples=resamples, n_permutations=0, seed=start)
        low[cols.start:cols.stop], high[cols.start:cols.stop] = table["low"], table["high"]
    return low, high


def single(values, method, *, units=None, resamples):
    """(low, high) per replicate from ``stats.summary``."""
    reps = values.shape[1]
    if method in ("t", "wilson", "betting", "auto"):  # no resampling: one call (auto on recall@k-named columns)
        names = {f"recall@{j}": values[:, j] for j in range(reps)} if method == "auto" else _columns(values, range(reps))
        table = stats.summary(names, method=method, ci=LEVEL)
        return table["low"].to_numpy(float), table["high"].to_numpy(float)
    low, high = np.empty(reps), np.empty(reps)
    for start in range(0, reps, CHUNK):
        cols = range(start, min(reps, start + CHUNK))
        table = stats.summary(_columns(values, cols), method=method, units=units, ci=LEVEL, n_resamples=resamples,
                              seed=start)
        low[cols.start:cols.stop], high[cols.start:cols.stop] = table["low"], table["high"]
    return low, high


# --------------------------------------------------------------------------------------------------
# Table
# --------------------------------------------------------------------------------------------------


class Table:
    def __init__(self, title: str, methods: list[str]) -> None:
        self.methods = methods
        print(title)
        print(f"   {'regime':<40s} {'n':>4s}  " + "  ".join(f"{m:<16s}" for m in methods) + "  zero-width")

    def row(self, regime: str, n: int, results: dict[str, tuple[np.ndarray, np.ndarray]], truth: float) -> None:
        cells, worst = [], 0.0
        for method in self.methods:
            if method not in results:
                cells.append(f"{'-':<16s}")
                continue
            low, high = results[method]
            reps = len(low)
            covered = (low <= truth + 1e-12) & (truth - 1e-12 <= high)  # NaN compares False: not covered
            c = covered.mean()
            se = np.sqrt(c * (1 - c) / reps)
            width = np.nanmean(high - low) if np.isfinite(high - low).any() else np.nan
            degenerate = np.mean(~np.isfinite(low) | ~np.isfinite(high) | (high - low <= 1e-12))
            worst = max(worst, degenerate)
            cells.append(f"{100 * c:5.1f}±{100 * se:3.1f} {width:5.3f}{'*' if degenerate >= 0.01 else ' '}")
        print(f"   {regime:<40s} {n:>4d}  " + "  ".join(cells) + (f"  {worst:>9.0%}" if worst else ""))

    def close(self) -> None:
        print("   * at least 1% of this method's intervals are zero-width or missing; 'zero-width' gives the largest "
              "share in the row\n     (such an interval counts as covering only if the truth is exactly on it)\n")


TAIL_METHODS = {"betting": "betting", "expanded": "auto", "BCa": "bca", "t": "t"}


def tails(rng: np.random.Generator, reps: int, res: int) -> None:
    """Part C: drops spread the way regressions spread, true mean exactly -0.02 (gate_errors.py part 4).

    The gate passes when the interval's low end is above -margin, so what matters is how often the
    low end is above the truth: at most 2.5% for a 95% interval."""
    from gate_errors import MARGIN, few_break, heavy_tailed, lognormal_drop, skewed_drop

    print(f"C. A drop spread the way regressions spread (true mean -{MARGIN}): share of intervals whose LOW end is "
          "above the truth (target <= 2.5%; the gate's false passes at a margin equal to the drop), and coverage")
    print(f"   {'regime':<52s} {'n':>5s} {'reps':>5s}  " + "  ".join(f"{m + ': low / cov':<20s}" for m in TAIL_METHODS))
    regimes = [("bounded, a few break: 5% lose U(0.2,0.6), rest 0", few_break, True),
               ("bounded, skewed: +N(0.01,0.03), 7.3% lose U(0.2,0.6)", skewed_drop, True),
               ("bounded, heavy-tailed: 0.05 t(2) clipped, -0.02", heavy_tailed, True),
               ("unbounded, mirrored lognormal, skew -6.2", lognormal_drop, False)]
    for label, make, bounded in regimes:
        for n in TAIL_NS:
            r = reps if n <= 120 else max(100, reps // 2)
            d = make(rng, n, r)
            base = np.full(d.shape, 0.6) if bounded else np.zeros(d.shape)
            cells = []
            for method in TAIL_METHODS.values():
                if method == "betting" and not bounded:
                    cells.append(f"{'-':<20s}")
                    continue
                low, high = paired(base, base + d, method, resamples=res)
                above = np.mean(low > -MARGIN + 1e-12)
                covered = np.mean((low <= -MARGIN + 1e-12) & (high >= -MARGIN - 1e-12))
                cells.append(f"{100 * above:5.1f}% / {100 * covered:5.1f}%     ")
            print(f"   {label:<52s} {n:>5d} {r:>5d}  " + "  ".join(cells))
    print("   (Monte Carlo SE of a 2.5% rate: 0.6 points at 800 replicates, 0.8 at 400)\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=800, help="replicates per cell (default 800)")
    parser.add_argument("--resamples", type=int, default=1500, help="bootstrap resamples (default 1500)")
    parser.add_argument("--parts", default="ABC", help="which tables to print (default ABC)")
    args = parser.parse_args()
    reps, res = args.reps, args.resamples
    warnings.simplefilter("ignore")  # BCa on degenerate samples warns; those cells are flagged instead
    rng = np.random.default_rng(SEED)
    started = time.perf_counter()
    print(f"Coverage of raglab's 95% intervals by simulation: {reps} replicates per cell, {res:,} bootstrap resamples "
          f"(the default is 10,000), seed {SEED}")
    print(f"raglab {raglab.__version__}, numpy {np.__version__}; {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.2f} at start")
    print("Each cell: coverage % ±Monte Carlo SE, mean width. Nominal 95%; '-' = method not applicable.\n")

    if "A" in args.parts:
        table = Table("A. Paired difference mean(cand - base), stats.compare(n_permutations=0) / summary(method='t')",
                      PAIRED_METHODS)
        continuous = [("symmetric: normal, sd 0.2", symmetric), ("skewed: lognormal, sd 0.2, skew 6.2", skewed),
                      ("zero-inflated: rr-like, 30% re-ranked", rr_like)]
        for label, make in continuous:
            for n in NS:
                d, truth = make(rng, n, reps)
                zeros = np.zeros_like(d)
                results = {"percentile": paired(zeros, d, "percentile", resamples=res),
                           # base and cand in [0, 1] with the same differences
                           **({"betting": paired(np.maximum(0, -d), np.maximum(0, d), "betting", resamples=res)}
                              if make is rr_like else {}),
                           "expanded": paired(zeros, d, "auto", resamples=res),
                           "BCa": paired(zeros, d, "bca", resamples=res),
                           "t": paired(zeros, d, "t", resamples=res)}
                table.row(label, n, results, truth)
        for down, up in [(0.02, 0.03), (0.005, 0.015)]:
            label = f"rare pass/fail, discordance {down + up:.2f}"
            for n in NS:
                base, cand, truth = pass_fail(rng, n, reps, down, up)
                results = {"Tango": paired(base, cand, "auto", resamples=res),
                           "betting": paired(base, cand, "betting", resamples=res),
                           "percentile": paired(base, cand, "percentile", resamples=res),
                           "expanded": paired(base, cand, "auto", units=np.arange(n), resamples=res),
                           "BCa": paired(base, cand, "bca", resamples=res),
                           "t": paired(base, cand, "t", resamples=res)}
                table.row(label, n, results, truth)
        for clusters, size in [(20, 5), (20, 24)]:
            d, truth = clustered(rng, clusters, size, reps, 0.03)
            zeros, units = np.zeros_like(d), np.repeat(np.arange(clusters), size)
            label = f"clustered {clusters}x{size}, ICC {ICC}"
            table.row(label + ", no units=", clusters * size, {
                "percentile": paired(zeros, d, "percentile", resamples=res),
                "expanded": paired(zeros, d, "auto", resamples=res),
                "BCa": paired(zeros, d, "bca", resamples=res),
                "t": paired(zeros, d, "t", resamples=res)}, truth)
            table.row(label + ", units=", clusters * size, {
                "percentile": paired(zeros, d, "percentile", units=units, resamples=res),
                "expanded": paired(zeros, d, "auto", units=units, resamples=res),
                "BCa": paired(zeros, d, "bca", units=units, resamples=res)}, truth)
        for clusters in (12, 16, 20, 30, 40):
            d, truth = clustered(rng, clusters, 24, reps, 0.03)
            units = np.repeat(np.arange(clusters), 24)
            table.row(f"clustered {clusters}x24, ICC {ICC}, units=", clusters * 24, {
                "expanded": paired(np.zeros_like(d), d, "auto", units=units, resamples=res),
                "BCa": paired(np.zeros_like(d), d, "bca", units=units, resamples=res)}, truth)
        base, cand, truth = clustered_pass_fail(rng, 20, 24, reps)
        units = np.repeat(np.arange(20), 24)
        label = "clustered pass/fail 20x24"
        table.row(label + ", no units=", 480, {
            "Tango": paired(base, cand, "auto", resamples=res),
            "percentile": paired(base, cand, "percentile", resamples=res),
            "BCa": paired(base, cand, "bca", resamples=res),
            "t": paired(base, cand, "t", resamples=res)}, truth)
        table.row(label + ", units=", 480, {
            "percentile": paired(base, cand, "percentile", units=units, resamples=res),
            "expanded": paired(base, cand, "auto", units=units, resamples=res),
            "BCa": paired(base, cand, "bca", units=units, resamples=res)}, truth)
        table.close()
        print(f"   ({time.perf_counter() - started:.0f} s so far)\n")

    if "C" in args.parts:
        tails(rng, reps, res)
        print(f"   ({time.perf_counter() - started:.0f} s so far)\n")

    if "B" in args.parts:
        table = Table("B. One run's mean, stats.summary (its default: Wilson for pass/fail, t otherwise, "
                      "percentile with units=)", SINGLE_METHODS)
        for label, make, truth in [("symmetric: Beta(4, 4) scores", lambda n: rng.beta(4, 4, (n, reps)), 0.5),
                                   ("skewed: lognormal latency, skew 6.2",
                                    lambda n: np.exp(rng.normal(0, 1, (n, reps))), float(np.exp(0.5)))]:
            for n in NS:
                x = make(n)
                table.row(label, n, {"percentile": single(x, "percentile", resamples=res),
                                     "BCa": single(x, "bca", resamples=res), "t": single(x, "t", resamples=res)}, truth)
        for p in (0.05, 0.02):
            for n in NS:
                x = (rng.random((n, reps)) < p).astype(float)
                table.row(f"rare: pass rate {p}", n, {"Wilson": single(x, "wilson", resamples=res),
                                                      "percentile": single(x, "percentile", resamples=res),
                                                      "BCa": single(x, "bca", resamples=res),
                                                      "t": single(x, "t", resamples=res)}, p)
        for mean in NEAR_BOUND:
            share = (mean - RECALL_LEVELS.mean()) / (1 - RECALL_LEVELS.mean())  # questions with every gold unit found
            for n in (10, 40, 100, 300):
                x = np.where(rng.random((n, reps)) < share, 1.0, RECALL_LEVELS[rng.integers(0, 4, (n, reps))])
                table.row(f"near a bound: recall-like, mean {mean}", n, {
                    "Wilson eff. n": single(x, "auto", resamples=res), "betting": single(x, "betting", resamples=res),
                    "t": single(x, "t", resamples=res)}, mean)
        x, truth = clustered(rng, 20, 24, reps, 0.5)
        units = np.repeat(np.arange(20), 24)
        table.row(f"clustered 20x24, ICC {ICC}, no units=", 480, {
            "percentile": single(x, "percentile", resamples=res), "BCa": single(x, "bca", resamples=res),
            "t": single(x, "t", resamples=res)}, truth)
        table.row(f"clustered 20x24, ICC {ICC}, units=", 480, {
            "percentile": single(x, "percentile", units=units, resamples=res),
            "BCa": single(x, "bca", units=units, resamples=res)}, truth)
        table.close()
    print(f"total {time.perf_counter() - started:.0f} s; load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
