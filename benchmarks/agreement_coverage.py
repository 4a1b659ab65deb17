"""Simulation: coverage of the agreement module's 95% intervals (Cohen's kappa; clustered agreement and kappa).

**A. Kappa, independent items.** Two raters with the same base rate ``p`` of the pass label and
population kappa ``k``: cells ``P(1, 1) = p**2 + k q``, ``P(1, 0) = P(0, 1) = q (1 - k)``,
``P(0, 0) = (1 - p)**2 + k q`` with ``q = p (1 - p)``. n = 30, 60, 120, 300 items; k = 0.3, 0.5,
0.7, 0.9; p = 0.5, 0.7, 0.9. The intervals are raglab's own kernel
(``raglab.agreement.kappa._kappa_bounds``, what ``cohen_kappa_interval`` and ``report`` call),
applied to every simulated table at once: "adjusted" (the default, ``method="auto"``) and
"analytic" (``kappa +- z SE`` with the Fleiss-Cohen-Everitt SE, statsmodels' ``kappa_low`` /
``kappa_upp``). Tables where kappa is undefined (both raters used one label) are left out and
counted. **A2.** Three ordered categories (human category X; the judge copies it with probability
``k``, else draws independently from the same marginal, so unweighted, linear and quadratic kappa
all equal ``k``), marginals uniform or (0.6, 0.3, 0.1).

**B. Clustered items** (``report(..., units=...)``). G = 10, 15, 20, 40 clusters of 5-24 items; per
cluster a pass rate ~ Beta(3, 1.2) and a judge false-pass rate ~ Beta(1.5, 2.5), judge sensitivity
0.92 (the design of ``tests/test_agreement.py``). The targets are the population agreement and
the kappa of the population's expected table (cluster parameters are independent of cluster
size, so these are what the pooled estimates converge to). Each replicate runs raglab's own kernels
(``raglab.agreement.clusters``): the cluster bootstrap (``_cluster_tables``, ``table_statistics``,
1,000 resamples) with its percentile interval (the old default for every statistic) and its
expanded percentile interval (level widened so its normal quantile is ``sqrt(G / (G - 1)) t(G - 1)``;
the new default for kappa), and for the rates the cluster-robust Wilson interval
(``_cluster_wilson``: effective sample size, t with G - 1 df; the new default for agreement, pass
rates, sensitivity, specificity and miss rate). The first replicate of each G is checked against
``report`` itself.

Each cell: coverage, Monte Carlo SE ``sqrt(c (1 - c) / R)`` and mean width.

Run: ``nice -n 10 .venv/bin/python benchmarks/agreement_coverage.py [--reps 4000] [--cluster-reps 3000]``
(about 2 minutes on 2 cores); ``--quick`` is a labelled smoke run with few replicates.

What it showed (defaults): the adjusted kappa interval covered 93.9-97.9% on pass/fail labels (the
plain one 40.0-95.1%) and 93.0-99.3% on three categories (plain 71.7-95.2%). With clusters, the
rates' cluster-robust Wilson interval covered 94.3-96.3% (agreement) and 93.3-94.9% (miss rate), and
kappa's expanded percentile 93.7-94.6%, at 10-40 clusters, against 88.5-93.0% for the percentile
interval the report used before. About a point short of 95% remains at every cluster count
simulated, 40 included: the clusters' rates are skewed (Beta(3, 1.2) pass rates), which no interval
tried (expanded percentile, cluster-robust t, t on the logit scale, jackknife, BCa) removed with
10-40 clusters.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from raglab.agreement import report
from raglab.agreement.clusters import (
    _cluster_proportions,
    _cluster_tables,
    _cluster_wilson,
    table_statistics,
)
from raglab.agreement.kappa import _kappa_bounds, disagreement_weights
from raglab.stats._engine import _expanded_levels

SEED = 2026
LEVEL = 0.95
NS = (30, 60, 120, 300)
KAPPAS = (0.3, 0.5, 0.7, 0.9)
BASES = (0.5, 0.7, 0.9)
GS = (10, 15, 20, 40)
SIZES = (5, 25)  # cluster sizes 5-24
PREV, FALSE_PASS, SENSITIVITY = (3.0, 1.2), (1.5, 2.5), 0.92


def _fmt(hits: np.ndarray, width: np.ndarray) -> str:
    c = float(hits.mean())
    return f"{100 * c:5.1f}% ±{100 * np.sqrt(c * (1 - c) / hits.size):3.1f} w{float(np.mean(width)):.2f}"


def _tables(rng, table_probs, n, reps):
    k = table_probs.shape[0]
    return rng.multinomial(n, table_probs.ravel(), size=reps).reshape(reps, k, k).astype(float)


def _kappa_cell(tables, dis, truth):
    out = {}
    for method in ("adjusted", "analytic"):
        kappa, low, high = _kappa_bounds(tables, dis, LEVEL, method)
        ok = np.isfinite(kappa)
        hits = (low[ok] <= truth + 1e-12) & (truth <= high[ok] + 1e-12)
        out[method] = (hits, (high - low)[ok], int((~ok).sum()))
    return out


def part_a(rng, reps):
    print(f"A. Cohen's kappa, pass/fail, independent items: coverage of nominal 95% ({reps} replicates per cell)")
    print(f"{'n':>4} {'kappa':>5} {'base':>4} | {'adjusted (default)':>22} | {'analytic (plain)':>22} | undefined")
    dis = disagreement_weights([0, 1], None, "rank")
    summary: dict[tuple[str, int], list[float]] = {}
    for n in NS:
        for kappa in KAPPAS:
            for base in BASES:
                q = base * (1 - base)
                probs = np.array([[base**2 + kappa * q, q * (1 - kappa)], [q * (1 - kappa), (1 - base) ** 2 + kappa * q]])
                cell = _kappa_cell(_tables(rng, probs, n, reps), dis, kappa)
                for m, (hits, _, _) in cell.items():
                    summary.setdefault((m, n), []).append(float(hits.mean()))
                print(f"{n:4d} {kappa:5.1f} {base:4.1f} | {_fmt(*cell['adjusted'][:2]):>22} | "
                      f"{_fmt(*cell['analytic'][:2]):>22} | {cell['adjusted'][2]}")
    print("range over kappa x base rate:")
    for n in NS:
        a, b = summary[("adjusted", n)], summary[("analytic", n)]
        print(f"  n = {n:3d}: adjusted {100 * min(a):.1f}-{100 * max(a):.1f}%, analytic {100 * min(b):.1f}-{100 * max(b):.1f}%")
    return summary


def part_a2(rng, reps):
    print(f"\nA2. Three ordered categories ({reps} replicates per cell): adjusted / analytic coverage")
    print(f"{'n':>4} {'kappa':>5} {'marginal':>14} | {'unweighted':>13} | {'linear':>13} | {'quadratic':>13}")
    lows: dict[str, list[float]] = {}
    for n in NS:
        for kappa in (0.3, 0.6, 0.9):
            for pi in (np.full(3, 1 / 3), np.array([0.6, 0.3, 0.1])):
                probs = kappa * np.diag(pi) + (1 - kappa) * np.outer(pi, pi)
                tables = _tables(rng, probs, n, reps)
                parts = []
                for weights in (None, "linear", "quadratic"):
                    cell = _kappa_cell(tables, disagreement_weights([0, 1, 2], weights, "rank"), kappa)
                    a, b = (float(cell[m][0].mean()) for m in ("adjusted", "analytic"))
                    lows.setdefault("adjusted", []).append(a)
                    lows.setdefault("analytic", []).append(b)
                    parts.append(f"{100 * a:5.1f} / {100 * b:5.1f}")
                shown = "/".join(f"{v:.2f}" for v in pi)
                print(f"{n:4d} {kappa:5.1f} {shown:>14} | " + " | ".join(f"{p:>13}" for p in parts))
    print(f"range: adjusted {100 * min(lows['adjusted']):.1f}-{100 * max(lows['adjusted']):.1f}%, "
          f"analytic {100 * min(lows['analytic']):.1f}-{100 * max(lows['analytic']):.1f}%")


def _population():
    """True agreement, kappa and miss rate of the population's expected table."""
    prev = PREV[0] / sum(PREV)
    fp = FALSE_PASS[0] / sum(FALSE_PASS)
    cells = np.array([prev * SENSITIVITY, prev * (1 - SENSITIVITY), (1 - prev) * fp, (1 - prev) * (1 - fp)])
    po, ph, pj = cells[0] + cells[3], cells[0] + cells[1], cells[0] + cells[2]
    pe = ph * pj + (1 - ph) * (1 - pj)
    return po, (po - pe) / (1 - pe), fp


def _clustered_sample(rng, g):
    sizes = rng.integers(*SIZES, g)
    prev = rng.beta(*PREV, g)
    fp = rng.beta(*FALSE_PASS, g)
    probs = np.column_stack([prev * SENSITIVITY, prev * (1 - SENSITIVITY), (1 - prev) * fp, (1 - prev) * (1 - fp)])
    per = rng.multinomial(sizes, probs)  # G x 4 cell counts, cells 0..3 = (h, j) in (1,1), (1,0), (0,1), (0,0)
    clusters = np.repeat(np.arange(g), sizes)
    cells = np.concatenate([np.repeat(np.arange(4), row) for row in per])
    return clusters, (cells < 2).astype(int), ((cells == 0) | (cells == 2)).astype(int)


def part_b(rng, reps, resamples):
    truth_agree, truth_kappa, truth_miss = _population()
    print(f"\nB. Clustered items (report(..., units=)): {reps} replicates per G, {resamples} cluster resamples; "
          f"true agreement {truth_agree:.4f}, kappa {truth_kappa:.4f}, miss rate {truth_miss:.4f}")
    heads = ["agreement: percentile", "expanded percentile", "cluster Wilson (dflt)", "kappa: percentile",
             "expanded (default)", "miss rate: percentile", "cluster Wilson (dflt)"]
    print(f"{'G':>3} {'items':>5} | " + " | ".join(f"{h:>21}" for h in heads))
    dis = disagreement_weights([0, 1], None, "rank")
    for g in GS:
        expanded = float(_expanded_levels(np.array([g]), LEVEL)[0])
        keys = ("a_pct", "a_exp", "a_wil", "k_pct", "k_exp", "m_pct", "m_wil")
        res = {key: ([], []) for key in keys}
        items = []

        def add(key, low, high, truth, res=res):
            res[key][0].append(low <= truth <= high)
            res[key][1].append(high - low)

        for r in range(reps):
            clusters, h, j = _clustered_sample(rng, g)
            codes = h * 2 + j  # report's cell codes with labels (0, 1): human * k + judge
            boot, per = _cluster_tables(clusters, codes, 2, resamples, np.random.default_rng(r))
            stats = table_statistics(boot, dis, 1)
            rates = _cluster_proportions(per.reshape(-1, 2, 2), 1)
            for key, name, truth in (("a", "agreement", truth_agree), ("k", "kappa", truth_kappa),
                                     ("m", "miss_rate", truth_miss)):
                draws = stats[name][np.isfinite(stats[name])]
                for kind, level in (("pct", LEVEL), ("exp", expanded)):
                    if f"{key}_{kind}" in res:
                        add(f"{key}_{kind}", *np.quantile(draws, [(1 - level) / 2, (1 + level) / 2]), truth)
                if f"{key}_wil" in res:
                    add(f"{key}_wil", *_cluster_wilson(*rates[name], LEVEL), truth)
            if r == 0:  # the kernels are what report() runs
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    rep = report(h, j, positive=1, units=clusters, n_resamples=resamples, seed=r, warn=False)
                assert rep.intervals["agreement"].low == _cluster_wilson(*rates["agreement"], LEVEL)[0]
                assert abs(rep.kappa_low - np.quantile(stats["kappa"], (1 - expanded) / 2)) < 0.05
            items.append(len(h))
        shown = [_fmt(np.array(res[k][0]), np.array(res[k][1])) for k in keys]
        print(f"{g:3d} {np.mean(items):5.0f} | " + " | ".join(f"{s:>21}" for s in shown))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=4000, help="replicates per kappa cell")
    parser.add_argument("--cluster-reps", type=int, default=3000, help="replicates per cluster count")
    parser.add_argument("--resamples", type=int, default=1000, help="cluster bootstrap resamples")
    parser.add_argument("--quick", action="store_true", help="smoke run: 300 / 200 replicates (labelled)")
    args = parser.parse_args()
    if args.quick:
        args.reps, args.cluster_reps = 300, 200
        print("QUICK SMOKE RUN: too few replicates for the figures to mean anything\n")
    started = time.perf_counter()
    rng = np.random.default_rng(SEED)
    part_a(rng, args.reps)
    part_a2(rng, max(args.reps // 2, 100))
    part_b(rng, args.cluster_reps, args.resamples)
    print(f"\ntotal {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
