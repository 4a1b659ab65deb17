"""Simulation: how often the release gate (``raglab.stats.gate``) decides wrongly, against issue 9's targets.

Three questions, each answered by simulating paired runs and calling ``raglab.stats.gate`` (margin
0.02, ``method="auto"``: Tango's score interval for pass/fail metrics, the expanded percentile
bootstrap for continuous ones; ``adjust="holm"`` unless stated):

1. **Small slices with a real drop.** A slice of 10, 20 or 30 questions whose true pass rate drops
   by 0.08 (4x the margin) must not pass: target at most 5%. Pass/fail data with base rate 0.7 and
   discordance 0.10 (9% of questions pass -> fail, 1% fail -> pass) or 0.20 (14% / 6%). The "old"
   column is the plain percentile bootstrap (``paired_bootstrap``, 10,000 resamples, seed 0) passing
   when ``low >= -margin``, with no minimum n and no zero-width rule: the gate before the rework.
   For pass/fail data the gate's decision depends only on (n, pass->fail count, fail->pass count),
   so each distinct count triple is gated once on the first replicate that has it and later
   replicates reuse that decision; the "exact" columns sum the decision over every possible count
   triple weighted by its multinomial probability (no Monte Carlo error). A continuous variant
   (reciprocal-rank-like scores, a new rank for 30% of questions, true mean drop 0.08) is simulated
   replicate by replicate.
2. **No true change, many rows.** 3 metrics x (overall + 8 slices) = 27 rows on 4,000 questions;
   base and candidate exchangeable. Target for ``adjust="holm"``: overall false-block rate at most
   5% (the nominal rate is 2.5%: one-sided tests at (1 - 0.95) / 2). ``adjust=None`` (per-row blocks)
   is shown for contrast. Pass/fail: base rate 0.7, discordance 0.10 split evenly. Continuous:
   reciprocal-rank-like scores, 30% of questions re-drawn from the same distribution.
3. **A large run that truly did not change** must pass: 2,000 questions, target at least 90%.
4. **A true drop exactly equal to the margin, spread the way regressions spread** (issue 18): a few
   questions break badly (5% lose U(0.2, 0.6), the rest unchanged), everyone moves a little and 7.3%
   break, heavy-tailed differences (0.05 t(2), clipped), each on a metric known to lie in [0, 1];
   the same "few break" data and a mirrored lognormal (skewness -6.2) on a metric with no known
   bounds; and the lognormal again with its range declared (``bounds=``: base 2, the differences cut
   at -1.9 like a time-out, re-centred to keep the mean at -margin, declared range [0, 3]), which gets
   the betting interval on that range. n = 10, 30, 120, 400, 1000. Target: P(pass) at most 2.5%
   (what the interval's low end promises). "old" is the gate before issue 18 (expanded percentile everywhere, review below 30
   questions when |skewness| > 1).
5. **The price**: a release that truly did not change (rr-like, 15% or 30% of questions re-drawn),
   n = 100 to 2,000: P(pass) with the betting interval against the old bootstrap, and the ratio of
   their mean widths.
6. **Power to block** a real drop of 4 margins (rr-like, 30% re-ranked, mean drop 0.08), n = 50 to
   400: P(block) with the betting interval against the old bootstrap.
7. **No true change, skewed differences, many slices** (review of issue 18): 95% of questions lose
   0.05/0.95, 5% gain 1 (true mean exactly 0), one metric known to lie in [0, 1], 20 slices x 100
   questions (21 rows with the overall one). Target: family false-block rate at most 2.5% (Holm over
   one-sided tests at 0.025). "now": the gate, whose betting rows take their one-sided p-value from the
   betting capital (``min(1, 1 / K(0))``); "before": the same intervals with the sign-flip p-values betting
   rows had (4,000 flips, Holm), which assume symmetric differences.

Monte Carlo standard errors are ``sqrt(p (1 - p) / replicates)``. Continuous rows use fewer
bootstrap resamples and sign flips than the defaults (printed) so the script runs in a few minutes;
pass/fail rows do not use the bootstrap at all (Tango interval, exact McNemar p-values).

``--quick`` runs every row with far fewer replicates (``QUICK_REPS``; under 20 s) and skips the
exact columns (summing every count triple is itself about 10 s): a smoke test whose rates carry
Monte Carlo errors several times larger, labelled QUICK in every table header with its replicate
counts. Use the full run for the figures quoted in the README.

Run: ``.venv/bin/python benchmarks/gate_errors.py [--quick] [--parts 1,2,3,4,5]`` (full: about 15 minutes on 2
busy cores; parts 4-5 alone about 8).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from math import comb

import numpy as np
import pandas as pd
from scipy import stats as sps

import raglab
from raglab import stats

SEED = 9
MARGIN = 0.02
SLICES = 8
TARGET_DROP_PASS = 0.05  # at most
TARGET_FALSE_BLOCK = 0.05  # at most
TARGET_EQUAL_PASS = 0.90  # at least

# Reciprocal-rank-like scores: 1/rank of the first relevant chunk in the top 5, 0 when none.
RR_LEVELS = np.array([1.0, 1 / 2, 1 / 3, 1 / 4, 1 / 5, 0.0])
RR_PROBS = np.array([0.50, 0.15, 0.10, 0.05, 0.05, 0.15])
RR_MEAN = float(RR_LEVELS @ RR_PROBS)

# Replicates per row: the full run (the default) and --quick.
FULL_REPS = {"slice_pass_fail": 20_000, "slice_rr": 600, "null_pass_fail": 1200, "null_rr": 300,
             "equal_pass_fail": 2000, "equal_rr": 1000, "margin_small": 2000, "margin_400": 1000,
             "margin_1000": 600, "power": 300, "skewed_null": 300}
QUICK_REPS = {"slice_pass_fail": 500, "slice_rr": 60, "null_pass_fail": 50, "null_rr": 15,
              "equal_pass_fail": 100, "equal_rr": 100, "margin_small": 200, "margin_400": 100,
              "margin_1000": 100, "power": 50, "skewed_null": 30}
CHUNK = 100  # replicates per compare() call in parts 4-5 (one column each)


# --------------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------------


def pass_fail_pairs(rng: np.random.Generator, shape: tuple[int, ...], down: float, up: float,
                    base_rate: float = 0.7) -> tuple[np.ndarray, np.ndarray]:
    """Paired 0/1 scores: P(1 -> 0) = down, P(0 -> 1) = up, P(base = 1) = base_rate."""
    u = rng.random(shape)
    both = (base_rate - down) / (1.0 - down - up)  # P(1 -> 1 | concordant) keeps the base rate
    concordant_one = rng.random(shape) < both
    base = np.where(u < down, 1.0, np.where(u < down + up, 0.0, concordant_one.astype(float)))
    cand = np.where(u < down, 0.0, np.where(u < down + up, 1.0, base))
    return base, cand


def rr_pairs(rng: np.random.Generator, shape: tuple[int, ...], changed: float,
             drop: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Paired rr-like scores: a share ``changed`` of questions gets a new rank; the new rank is a
    fresh draw, replaced by 'none found' (0) with the probability that makes the true mean change
    exactly ``-drop`` (0: base and candidate are exchangeable)."""
    zero_share = drop / (changed * RR_MEAN)
    base = RR_LEVELS[rng.choice(len(RR_LEVELS), size=shape, p=RR_PROBS)]
    fresh = RR_LEVELS[rng.choice(len(RR_LEVELS), size=shape, p=RR_PROBS)]
    fresh = np.where(rng.random(shape) < zero_share, 0.0, fresh)
    cand = np.where(rng.random(shape) < changed, fresh, base)
    return base, cand


def rr_direction_probs(changed: float, drop: float) -> tuple[float, float]:
    """Exact P(cand < base) and P(cand > base) per question under :func:`rr_pairs`."""
    zero_share = drop / (changed * RR_MEAN)
    fresh = (1 - zero_share) * RR_PROBS + zero_share * (RR_LEVELS == 0.0)
    joint = np.outer(RR_PROBS, fresh)  # [base level, fresh level]
    lower = RR_LEVELS[None, :] < RR_LEVELS[:, None]
    return changed * float(joint[lower].sum()), changed * float(joint[lower.T].sum())


def counts_data(n: int, down: int, up: int) -> tuple[np.ndarray, np.ndarray]:
    """One pair of 0/1 vectors with the given discordant counts (concordant questions split ~70/30)."""
    rest = n - down - up
    ones = int(round(0.7 * rest))
    base = np.array([1.0] * down + [0.0] * up + [1.0] * ones + [0.0] * (rest - ones))
    cand = np.array([0.0] * down + [1.0] * up + [1.0] * ones + [0.0] * (rest - ones))
    return base, cand


# --------------------------------------------------------------------------------------------------
# Decisions
# --------------------------------------------------------------------------------------------------


def gate_decision(base: dict, cand: dict, *, slices=None, adjust="holm", n_resamples=1000,
                  n_permutations=0) -> tuple[str, int]:
    """Overall decision and number of blocking rows of one gate call."""
    result = stats.gate(base, cand, margin=MARGIN, higher_is_better=True, slices=slices, adjust=adjust,
                        n_resamples=n_resamples, n_permutations=n_permutations, seed=0)
    return result.decision, result.counts["block"]


class CountCache:
    """Gate (new rule) and plain percentile (old rule) pass decisions for one pass/fail row, keyed
    by (n, pass->fail, fail->pass): for 0/1 data neither depends on anything else (the bootstrap
    uses seed 0, as a user's call would, and does not depend on row order)."""

    def __init__(self) -> None:
        self.new: dict[tuple[int, int, int], bool] = {}
        self.old: dict[tuple[int, int, int], bool] = {}

    @staticmethod
    def key(base: np.ndarray, cand: np.ndarray) -> tuple[int, int, int]:
        return len(base), int(((base == 1) & (cand == 0)).sum()), int(((base == 0) & (cand == 1)).sum())

    def decide(self, base: np.ndarray, cand: np.ndarray) -> tuple[bool, bool]:
        key = self.key(base, cand)
        if key not in self.new:
            self.new[key] = gate_decision({"hit@5": base}, {"hit@5": cand})[0] == "pass"
            low = stats.paired_bootstrap(base, cand, n_resamples=10_000, seed=0).low
            self.old[key] = bool(low >= -MARGIN)
        return self.new[key], self.old[key]

    def exact(self, n: int, down: float, up: float) -> tuple[float, float]:
        """Pass probabilities summed over every (pass->fail, fail->pass) count."""
        new = old = 0.0
        for d in range(n + 1):
            for u in range(n - d + 1):
                prob = comb(n, d) * comb(n - d, u) * down**d * up**u * (1 - down - up) ** (n - d - u)
                passed_new, passed_old = self.decide(*counts_data(n, d, u))
                new += prob * passed_new
                old += prob * passed_old
        return new, old


# --------------------------------------------------------------------------------------------------
# 4-5. A drop exactly at the margin, spread the way regressions spread; and the price in power
# --------------------------------------------------------------------------------------------------

AT_MARGIN_NS = (10, 30, 120, 400, 1000)
BASE_SCORE = 0.6  # differences d need base and cand = base + d inside [0, 1]: d in [-0.6, 0.4]
BREAK_LOW, BREAK_HIGH = 0.2, 0.6  # a broken question loses U(0.2, 0.6) (mean 0.4)


def few_break(rng: np.random.Generator, n: int, reps: int) -> np.ndarray:
    """Zero-inflated, left-skewed: 1 question in 20 breaks (loses U(0.2, 0.6)), the rest are unchanged."""
    broken = rng.random((n, reps)) < MARGIN / 0.4
    return np.where(broken, -rng.uniform(BREAK_LOW, BREAK_HIGH, (n, reps)), 0.0)


def skewed_drop(rng: np.random.Generator, n: int, reps: int) -> np.ndarray:
    """Left-skewed: every question moves a little (N(+0.01, 0.03)) and 7.3% break (lose U(0.2, 0.6))."""
    share = (MARGIN + 0.01) / (0.4 + 0.01)  # 0.01 (1 - share) - 0.4 share = -MARGIN
    small = np.clip(rng.normal(0.01, 0.03, (n, reps)), -0.19, 0.21)  # symmetric about 0.01: mean kept
    return np.where(rng.random((n, reps)) < share, -rng.uniform(BREAK_LOW, BREAK_HIGH, (n, reps)), small)


def heavy_tailed(rng: np.random.Generator, n: int, reps: int) -> np.ndarray:
    """Heavy-tailed: 0.05 x Student t(2), clipped symmetrically at +-0.38, shifted down by the margin."""
    return np.clip(0.05 * rng.standard_t(2, (n, reps)), -0.38, 0.38) - MARGIN


def lognormal_drop(rng: np.random.Generator, n: int, reps: int) -> np.ndarray:
    """Unbounded (a latency-like metric): mirrored lognormal(0, 1), sd 0.2, skewness -6.2, mean -margin."""
    z = np.exp(rng.normal(0.0, 1.0, (n, reps)))
    return -MARGIN - 0.2 * (z - np.exp(0.5)) / np.sqrt((np.e - 1) * np.e)


DECLARED_BASE, DECLARED_RANGE, CUT = 2.0, (0.0, 3.0), -1.9  # the "bounds declared" row of part 4


def lognormal_cut(rng: np.random.Generator, n: int, reps: int) -> np.ndarray:
    """The mirrored lognormal cut at CUT (a time-out), shifted back so that the mean stays -margin exactly."""
    a, b = -MARGIN + 0.2 * np.exp(0.5) / np.sqrt((np.e - 1) * np.e), 0.2 / np.sqrt((np.e - 1) * np.e)
    c = (a - CUT) / b  # d = a - b z >= CUT  <=>  z <= c; E[min(z, c)] for z lognormal(0, 1):
    kept = np.exp(0.5) * sps.norm.cdf(np.log(c) - 1) + c * sps.norm.sf(np.log(c))
    return np.maximum(lognormal_drop(rng, n, reps), CUT) - (a - b * kept + MARGIN)


def _tables(d: np.ndarray, method: str, n_resamples: int, bounded: bool | str,
            base: np.ndarray | None = None) -> pd.DataFrame:
    """compare() on every replicate (one column each, cand = base + d), CHUNK columns per call; ``bounded``
    "declared" puts base at DECLARED_BASE and declares DECLARED_RANGE for every replicate's metric."""
    reps = d.shape[1]
    if base is None:
        base = np.full(d.shape, BASE_SCORE if bounded is True else DECLARED_BASE if bounded else 0.0)
    frames = []
    for start in range(0, reps, CHUNK):
        cols = range(start, min(reps, start + CHUNK))
        declared = {f"r{j}": DECLARED_RANGE for j in cols} if bounded == "declared" else None
        frames.append(stats.compare({f"r{j}": base[:, j] for j in cols}, {f"r{j}": base[:, j] + d[:, j] for j in cols},
                                    method=method, n_resamples=n_resamples, n_permutations=0, seed=start,
                                    bounds=declared))
    return pd.concat(frames, ignore_index=True)


def new_passes(d: np.ndarray, bounded: bool) -> np.ndarray:
    """The gate's decision step on each replicate's row: method 'auto' on a bounded metric is the
    betting interval (asked for by name here, as the replicate columns are not named like metrics)."""
    table = _tables(d, "betting" if bounded is True else "auto", 1000 if not bounded else 100, bounded)
    decided = stats.gate_comparison(table, MARGIN, higher_is_better=True).table
    return (decided["decision"] == "pass").to_numpy()


def old_passes(d: np.ndarray, base: np.ndarray | None = None) -> np.ndarray:
    """The gate before this change: expanded percentile bootstrap (1,000 resamples); review below 10
    questions, with fewer than 5 changed, or with |skewness| > 1 below 30 questions; else pass if
    low >= -margin."""
    t = _tables(d, "auto", 1000, bounded=False, base=base)
    screened = (t["n"] < 30) & (t["skew"].abs() > 1)
    return ((t["n"] >= 10) & (t["n_changed"] >= 5) & ~screened & (t["low"] >= -MARGIN - 1e-9)).to_numpy()


def at_margin(rng: np.random.Generator, replicates: dict[str, int], quick: bool = False) -> None:
    print(f"4. A TRUE mean drop exactly equal to the margin ({MARGIN}): share of runs the gate PASSES (target <= 2.5%,")
    print("   what a 95% interval's low end promises). new = raglab.stats.gate now (betting interval on metrics known "
          "to lie in [0, 1],")
    print("   expanded percentile bootstrap otherwise); old = the gate before (expanded percentile everywhere, skew "
          "screen below 30)")
    if quick:
        quick_note(replicates, ["margin_small", "margin_400", "margin_1000"])
    print(f"   {'differences':<62s} {'n':>5s} {'reps':>5s}  {'new: P(pass)':>13s}  {'old: P(pass)':>13s}  "
          f"{'target':>7s} {'met':>4s}")
    regimes = [
        ("bounded, a few break: 5% lose U(0.2,0.6), the rest 0", few_break, True),
        ("bounded, skewed: all +N(0.01,0.03), 7.3% lose U(0.2,0.6)", skewed_drop, True),
        ("bounded, heavy-tailed: 0.05 t(2) clipped at +-0.38", heavy_tailed, True),
        ("unbounded, a few break (same data, metric with no bounds)", few_break, False),
        ("unbounded, lognormal: skewness -6.2, sd 0.2", lognormal_drop, False),
        ("no known bounds, bounds declared [0,3]: lognormal cut -1.9", lognormal_cut, "declared"),
    ]
    for label, make, bounded in regimes:
        for n in AT_MARGIN_NS:
            reps = replicates["margin_small" if n <= 120 else f"margin_{n}"]
            d = make(rng, n, reps)
            assert abs(d.mean() + MARGIN) < 0.2, "the simulated drop is not at the margin"
            new, new_se = rate(int(new_passes(d, bounded).sum()), reps)
            old, old_se = rate(int(old_passes(d).sum()), reps)
            verdict = met(new, 0.025, True, reps if quick else None)
            if not quick:  # within Monte Carlo error of the target counts as met
                verdict = "yes" if new <= 0.025 + 2 * new_se else "NO"
            print(f"   {label:<62s} {n:>5d} {reps:>5d}  {pct(new, new_se):>13s}  {pct(old, old_se):>13s}  "
                  f"{'<= 2.5%':>7s} {verdict:>4s}")
    print("   (met: the rate is within 2 Monte Carlo SEs of 2.5% or below; betting rows hold at any n by construction, "
          "bootstrap rows have no guarantee)\n")


def power_cost(rng: np.random.Generator, replicates: dict[str, int], quick: bool = False) -> None:
    reps = replicates["power"]
    print(f"5. The price: a release that truly did NOT change, margin {MARGIN}: share of runs the gate PASSES, "
          "betting interval (new) against the expanded percentile bootstrap (old)")
    if quick:
        quick_note(replicates, ["power"])
    print(f"   {'differences':<46s} {'n':>5s} {'reps':>5s}  {'new: P(pass)':>13s}  {'old: P(pass)':>13s}  "
          f"{'mean width new/old':>18s}")
    for changed in (0.15, 0.30):
        label = f"rr-like, {changed:.0%} of questions re-drawn"
        for n in (100, 400, 1000, 2000):
            base, cand = rr_pairs(rng, (n, reps), changed=changed)
            d = cand - base
            new_t = _tables(d, "betting", 100, bounded=True, base=base)
            old_t = _tables(d, "auto", 1000, bounded=False, base=base)
            new = stats.gate_comparison(new_t, MARGIN, higher_is_better=True).table["decision"] == "pass"
            old = old_passes(d, base)
            ratio = float((new_t["high"] - new_t["low"]).mean() / (old_t["high"] - old_t["low"]).mean())
            p_new, se_new = rate(int(new.sum()), reps)
            p_old, se_old = rate(int(old.sum()), reps)
            print(f"   {label:<46s} {n:>5d} {reps:>5d}  {pct(p_new, se_new):>13s}  {pct(p_old, se_old):>13s}  "
                  f"{ratio:>18.2f}")
    print()


def block_power(rng: np.random.Generator, replicates: dict[str, int], quick: bool = False) -> None:
    reps = replicates["power"]
    print(f"6. Power to BLOCK a real drop of 4 margins ({4 * MARGIN:g}), rr-like scores, 30% re-ranked: share of runs "
          "the gate BLOCKS, betting interval (new) against the expanded percentile bootstrap (old)")
    if quick:
        quick_note(replicates, ["power"])
    print("   (one row; one-sided p-values from 1,000 bootstrap resamples, n_permutations=0)")
    print(f"   {'differences':<46s} {'n':>5s} {'reps':>5s}  {'new: P(block)':>13s}  {'old: P(block)':>13s}")
    for n in (50, 100, 200, 400):
        base, cand = rr_pairs(rng, (n, reps), changed=0.3, drop=4 * MARGIN)
        d = cand - base
        decided = {}
        for key, method in (("new", "betting"), ("old", "auto")):
            table = _tables(d, method, 1000, bounded=True, base=base)
            # adjust=None: each replicate is its own one-row gate (Holm over the chunk would mix replicates)
            decided[key] = stats.gate_comparison(table, MARGIN, higher_is_better=True, adjust=None).table["decision"] == "block"
        p_new, se_new = rate(int(decided["new"].sum()), reps)
        p_old, se_old = rate(int(decided["old"].sum()), reps)
        print(f"   {'rr-like, 30% re-ranked, mean drop 0.08':<46s} {n:>5d} {reps:>5d}  {pct(p_new, se_new):>13s}  "
              f"{pct(p_old, se_old):>13s}")
    print()


# --------------------------------------------------------------------------------------------------
# Printing
# --------------------------------------------------------------------------------------------------


def rate(hits: int | float, reps: int) -> tuple[float, float]:
    p = hits / reps
    return p, float(np.sqrt(p * (1 - p) / reps))


def pct(p: float, se: float | None = None) -> str:
    return f"{100 * p:5.1f}%" + ("" if se is None else f" ±{100 * se:3.1f}")


def met(value: float, target: float, at_most: bool, reps: int | None = None) -> str:
    """'yes' / 'NO'; with ``reps`` (--quick), judged on the rate's 95% Wilson interval: '?' when it straddles the target."""
    if reps is None:
        ok = value <= target if at_most else value >= target
        return "yes" if ok else "NO"
    interval = stats.proportion_interval(round(value * reps), reps)
    surely_ok = interval.high <= target if at_most else interval.low >= target
    surely_not = interval.low > target if at_most else interval.high < target
    return "yes" if surely_ok else "NO" if surely_not else "?"


def quick_note(reps: dict[str, int], keys: list[str]) -> None:
    """The --quick label under a table title: its replicate counts against the full run's."""
    quick = " / ".join(f"{reps[k]:,}" for k in keys)
    full = " / ".join(f"{FULL_REPS[k]:,}" for k in keys)
    print(f"   QUICK run (--quick): {quick} replicates per row (full run: {full}); rates are 'estimate "
          "±Monte Carlo SE', the SE being sqrt(p (1 - p) / reps) (0 when no replicate hit); "
          "met is judged on the rate's 95% Wilson interval ('?' = it straddles the target)")


# --------------------------------------------------------------------------------------------------
# The three experiments
# --------------------------------------------------------------------------------------------------


def small_slices(rng: np.random.Generator, replicates: dict[str, int], quick: bool = False) -> None:
    reps, reps_cont = replicates["slice_pass_fail"], replicates["slice_rr"]
    print("1. Small slice with a TRUE drop of 0.08 (4x the margin 0.02): share of runs the gate PASSES")
    if quick:
        quick_note(replicates, ["slice_pass_fail", "slice_rr"])
        print("   (exact columns: full run only; 'met' is judged on the simulated rate)")
    print(f"   new = raglab.stats.gate (one row); old = plain percentile bootstrap, pass if low >= -{MARGIN}")
    print(f"   {'data':<45s} {'n':>3s} {'reps':>6s}  {'new: simulated':>15s} {'exact':>6s}  "
          f"{'old: simulated':>15s} {'exact':>6s}  {'target':>7s} {'met':>4s}")
    cache = CountCache()
    for down, up in [(0.09, 0.01), (0.14, 0.06)]:
        label = f"pass/fail, discordance {down + up:.2f} ({down:.0%} down, {up:.0%} up)"
        for n in (10, 20, 30):
            base, cand = pass_fail_pairs(rng, (reps, n), down, up)
            decided = [cache.decide(b, c) for b, c in zip(base, cand)]
            new, new_se = rate(sum(d[0] for d in decided), reps)
            old, old_se = rate(sum(d[1] for d in decided), reps)
            if quick:
                exact_new, exact_old, verdict = "-", "-", met(new, TARGET_DROP_PASS, True, reps)
            else:
                exact_new, exact_old = cache.exact(n, down, up)
                verdict = met(exact_new, TARGET_DROP_PASS, True)
                exact_new, exact_old = pct(exact_new), pct(exact_old)
            print(f"   {label:<45s} {n:>3d} {reps:>6,d}  {pct(new, new_se):>15s} {exact_new:>6s}  "
                  f"{pct(old, old_se):>15s} {exact_old:>6s}  {'<= 5%':>7s} {verdict:>4s}")
    label = "rr-like, 30% re-ranked, mean drop 0.08"
    worse, better = rr_direction_probs(changed=0.3, drop=0.08)
    blind = []
    for n in (10, 20, 30):
        base, cand = rr_pairs(rng, (reps_cont, n), changed=0.3, drop=0.08)
        new_hits = old_hits = unseen = 0
        for b, c in zip(base, cand):
            passed = gate_decision({"rr": b}, {"rr": c})[0] == "pass"
            new_hits += passed
            unseen += passed and not (c < b).any()
            old_hits += stats.paired_bootstrap(b, c, n_resamples=1000, seed=0).low >= -MARGIN
        new, new_se = rate(new_hits, reps_cont)
        old, old_se = rate(old_hits, reps_cont)
        blind.append(f"n={n}: {unseen} of {new_hits} passes, P = {(1 - worse) ** n - (1 - worse - better) ** n:.1%}")
        print(f"   {label:<45s} {n:>3d} {reps_cont:>6,d}  {pct(new, new_se):>15s} {'':>6s}  "
              f"{pct(old, old_se):>15s} {'':>6s}  {'<= 5%':>7s} {met(new, TARGET_DROP_PASS, True, reps_cont if quick else None):>4s}")
    print(f"   (pass/fail: {len(cache.new)} distinct count triples gated; continuous: 1,000 bootstrap "
          "resamples per interval)")
    print(f"   rr-like: a question gets worse with probability {worse:.3f} and better with {better:.3f}; passes "
          "whose sample had NO question that got worse (and P[none worse, some better]):")
    print(f"   {'; '.join(blind)}\n")


def no_change(rng: np.random.Generator, replicates: dict[str, int], quick: bool = False) -> None:
    n, reps_pf, reps_cont = 4000, replicates["null_pass_fail"], replicates["null_rr"]
    perms = 2000
    rows = 3 * (1 + SLICES)
    print(f"2. NO true change, 3 metrics x (overall + {SLICES} slices) = {rows} rows, {n:,} questions: "
          "share of runs with ANY block")
    if quick:
        quick_note(replicates, ["null_pass_fail", "null_rr"])
    print(f"   {'data':<52s} {'adjust':>7s} {'reps':>5s}  {'false-block rate':>16s}  "
          f"{'blocked rows/run':>16s}  {'target':>7s} {'met':>4s}")
    cases = [
        ("pass/fail, base 0.7, discordance 0.10 (5% each way)", reps_pf, {}),
        (f"rr-like [0, 1], betting, 30% re-drawn ({perms:,} flips)", reps_cont,
         {"n_resamples": 1000, "n_permutations": perms}),
    ]
    for label, reps, options in cases:
        blocked = {"holm": [], None: []}
        for _ in range(reps):
            slices = rng.integers(0, SLICES, n)
            if "n_permutations" in options:
                pairs = [rr_pairs(rng, (n,), changed=0.3) for _ in range(3)]
            else:
                pairs = [pass_fail_pairs(rng, (n,), 0.05, 0.05) for _ in range(3)]
            # rr-like rows named as [0, 1] metrics get the gate's default for them (the betting interval)
            names = ["rr", "ndcg@5", "recall@5"] if "n_permutations" in options else ["m0", "m1", "m2"]
            base = {name: b for name, (b, _) in zip(names, pairs)}
            cand = {name: c for name, (_, c) in zip(names, pairs)}
            for adjust in blocked:
                blocked[adjust].append(gate_decision(base, cand, slices=slices, adjust=adjust,
                                                     **({"n_resamples": 100} | options))[1])
        for adjust, counts in blocked.items():
            counts = np.array(counts)
            p, se = rate(int((counts > 0).sum()), reps)
            target = "<= 5%" if adjust == "holm" else "(none)"
            verdict = met(p, TARGET_FALSE_BLOCK, True, reps if quick else None) if adjust == "holm" else ""
            print(f"   {label:<52s} {str(adjust):>7s} {reps:>5d}  {pct(p, se):>16s}  "
                  f"{counts.mean():>16.3f}  {target:>7s} {verdict:>4s}")
    print(f"   Holm needs its smallest one-sided p below 0.025/{rows} = {0.025 / rows:.5f}: a sign-flip p is at "
          f"least 1/(n_permutations + 1), so n_permutations below {round(rows / 0.025)} can never block "
          "(nor can n_permutations=0 with fewer n_resamples: its p comes from the bootstrap, at least 1/(n_resamples + 1))\n")


def equal_runs(rng: np.random.Generator, replicates: dict[str, int], quick: bool = False) -> None:
    n, reps = 2000, replicates["equal_pass_fail"]
    print(f"3. A large run that truly did NOT change ({n:,} questions, margin {MARGIN}): share of runs the gate PASSES")
    if quick:
        quick_note(replicates, ["equal_pass_fail", "equal_rr"])
    print(f"   {'data':<52s} {'reps':>5s}  {'pass rate':>13s}  {'not pass':>8s}  {'target':>7s} {'met':>4s}")
    cache = CountCache()
    base, cand = pass_fail_pairs(rng, (reps, n), 0.025, 0.025)
    passes = sum(cache.decide(b, c)[0] for b, c in zip(base, cand))
    p, se = rate(passes, reps)
    label = "pass/fail, base 0.7, discordance 0.05 (2.5% each way)"
    print(f"   {label:<52s} {reps:>5d}  {pct(p, se):>13s}  {pct(1 - p):>8s}  {'>= 90%':>7s} "
          f"{met(p, TARGET_EQUAL_PASS, False, reps if quick else None):>4s}")
    reps_cont = replicates["equal_rr"]
    base, cand = rr_pairs(rng, (reps_cont, n), changed=0.15)
    decisions = [gate_decision({"rr": b}, {"rr": c}, n_resamples=2000)[0] for b, c in zip(base, cand)]
    p, se = rate(decisions.count("pass"), reps_cont)
    not_passed = 1 - decisions.count("pass") / reps_cont
    label = "rr-like, 15% re-drawn (2,000 resamples)"
    print(f"   {label:<52s} {reps_cont:>5d}  {pct(p, se):>13s}  {pct(not_passed):>8s}  {'>= 90%':>7s} "
          f"{met(p, TARGET_EQUAL_PASS, False, reps_cont if quick else None):>4s}")
    print()


def skewed_null_family(rng: np.random.Generator, replicates: dict[str, int], quick: bool = False) -> None:
    k, m, reps, flips = 20, 100, replicates["skewed_null"], 4000
    loss = 0.05 / 0.95
    print(f"7. NO true change, skewed differences (95% lose {loss:.4f}, 5% gain 1; mean 0), {k} slices x {m} questions "
          f"= {k + 1} rows of one [0, 1] metric: share of releases BLOCKED (Holm)")
    if quick:
        quick_note(replicates, ["skewed_null"])
    print(f"   {'p-value of betting rows':<44s} {'reps':>5s}  {'false-block rate':>16s}  {'blocked rows/run':>16s}  "
          f"{'target':>7s} {'met':>4s}")
    labels = np.repeat([f"s{i}" for i in range(k)], m)
    now, before = [], []
    for _ in range(reps):
        d = np.where(rng.random(k * m) < 0.05, 1.0, -loss)
        base = np.where(d > 0, 0.0, 0.5)
        seed = int(rng.integers(2**31))
        table = stats.gate({"ndcg@5": base}, {"ndcg@5": base + d}, margin=MARGIN, higher_is_better=True,
                           slices=labels, seed=seed).table
        now.append(int((table["decision"] == "block").sum()))
        # before: the same betting intervals, sign-flip p-values (a metric with no known bounds gets them)
        flipped = stats.compare({"score": base}, {"score": base + d}, slices=labels, method="percentile",
                                n_resamples=100, n_permutations=flips, seed=seed)
        bad_side = table["high"].to_numpy() < 0
        adjusted = stats.holm(flipped["p_decrease"].to_numpy())
        before.append(int((bad_side & (adjusted < 0.025)).sum()))
    for label, counts in ((f"sign flips ({flips:,}), before", before), ("betting capital min(1, 1/K(0)), now", now)):
        counts = np.array(counts)
        p, se = rate(int((counts > 0).sum()), reps)
        print(f"   {label:<44s} {reps:>5d}  {pct(p, se):>16s}  {counts.mean():>16.3f}  {'<= 2.5%':>7s} "
              f"{met(p, 0.025, True, reps if quick else None):>4s}")
    print()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true",
                        help="far fewer replicates per row, no exact columns (under 20 s; full run about 2.5 min)")
    parser.add_argument("--parts", default="1,2,3,4,5,6,7", help="which experiments to run (default 1,2,3,4,5,6,7)")
    args = parser.parse_args(argv)
    replicates = QUICK_REPS if args.quick else FULL_REPS
    warnings.simplefilter("ignore", UserWarning)  # dropped pairs / guessed directions: none expected
    if args.quick:
        print("QUICK run (--quick): far fewer replicates than the full run, so Monte Carlo SEs are several times "
              "larger; a smoke test, not the figures to quote")
    print("Gate error rates by simulation: paired runs with a known true change, gated by raglab.stats.gate "
          f"(margin {MARGIN}, 95% intervals, method='auto', seed {SEED})")
    print(f"raglab {raglab.__version__}, numpy {np.__version__}; {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.2f} at start. Rates are 'estimate ±Monte Carlo SE'.\n")
    rng = np.random.default_rng(SEED)
    started = time.perf_counter()
    parts = {"1": small_slices, "2": no_change, "3": equal_runs, "4": at_margin, "5": power_cost, "6": block_power,
             "7": skewed_null_family}
    for part in (parts[key] for key in args.parts.split(",")):
        start = time.perf_counter()
        part(rng, replicates, quick=args.quick)
        print(f"   ({time.perf_counter() - start:.0f} s)\n")
    if args.quick:
        print(f"Total {time.perf_counter() - started:.0f} s (QUICK run)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
